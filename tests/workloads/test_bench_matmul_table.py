"""scripts/bench_matmul.py's report without a GPU: `--table` re-renders a stored run, and the per-round ratio (ours and
Triton timed side by side in each round) is computed from the rounds, not from the medians."""
from __future__ import annotations

import importlib.util
import json
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _bench():
    spec = importlib.util.spec_from_file_location("bench_matmul", ROOT / "scripts" / "bench_matmul.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_paired_spread_pairs_rounds():
    B = _bench()
    # medians 100 vs 100 (ratio of medians 1.0), yet ours is slower in every round but one
    ours = {"rounds": [99.0, 100.0, 98.0, 120.0, 97.0]}
    triton = {"rounds": [100.0, 101.0, 99.0, 100.0, 98.0]}
    lo, med, hi = B.paired_spread(ours, triton)
    assert round(med, 4) == round(99.0 / 100.0, 4) and lo < med < 1.0 < hi
    assert B.paired_spread(ours, {"rounds": [1.0]}) is None and B.paired_spread(None, triton) is None


def test_table_from_a_stored_run(tmp_path, capsys):
    B = _bench()
    row = {"op": "matmul", "dtype": "float16", "M": 64, "N": 64, "K": 64,
           "best_ours": {"config": "a", "tflops": 10.0, "rounds": [10.0, 9.0, 11.0]},
           "best_triton": {"config": "b", "tflops": 10.0, "rounds": [9.0, 10.0, 10.0]},
           "torch": {"ok": True, "tflops": 20.0}}
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"env": {}, "rows": [row]}))
    rows = B.main(["--table", str(path)])
    out = capsys.readouterr().out
    assert "| matmul float16 64^3 | 10.0 (a) | 10.0 (b) | 20.0 | 1.000 | 1.100 [0.900, 1.111] | 0.500 |" in out
    assert round(rows[0]["ours_vs_triton_rounds"][1], 6) == 1.1
