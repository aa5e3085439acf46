"""`farm tune` through the interpreter path: candidates are compiled and validated for real, timed by a
synthetic timer; the records land in the store's tuning table, and an autotuner then uses them."""
import json
import os
import pathlib
import sys

import numpy as np
import pytest
from typer.testing import CliRunner

import compiler
from farm.cli.main import app
from farm.tuning_db import TuningDB

HERE = pathlib.Path(__file__).resolve().parent
TIMER = f"{HERE / 'synthetic_timer.py'}::timer"
AT = sys.modules["compiler.autotune"]
os.environ["FARM_FORCE_NO_GPU"] = "1"


def write_config(tmp_path, extra=""):
    p = tmp_path / "tune.yaml"
    p.write_text(f"""name: tiny
store: {tmp_path / 'farm.db'}
search: {{eta: 2, min_rep_ms: 1, max_rep_ms: 8, warmup_ms: 1{extra}}}
timing: {{timeout_s: 60}}
workloads:
  - workload: vector_add
    key: [N]
    params: {{N: [1000, 4096], dtype: [float32]}}
    space: {{BLOCK: [256, 512, 1024, 2048], num_warps: [1, 4]}}
    constraints: ["BLOCK <= 2 * max(N, 1024)"]
""")
    return p


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def test_farm_tune_halving_writes_records_the_autotuner_uses(tmp_path):
    cfg = write_config(tmp_path)
    r = invoke("tune", cfg, "--local", "--timer", TIMER, "--json", tmp_path / "out.json",
               "--export", tmp_path / "tuning.json")
    assert r.exit_code == 0, r.output
    out = json.loads((tmp_path / "out.json").read_text())
    assert out["target"] == "interpreter" and out["strategy"] == "halving"
    # 8 candidates per shape; eta 2: 8 -> 4 -> 2 -> 1 (rep 1, 2, 4 ms)
    assert [rd["jobs"] for rd in out["rounds"]] == [16, 8, 4]
    assert [rd["rep_ms"] for rd in out["rounds"]] == [1, 2, 4]
    for w in out["winners"]:
        assert w["best"] == {"BLOCK": 1024, "num_warps": 4} and w["failures"] == 0
    db = TuningDB(tmp_path / "farm.db")
    assert db.count() == 16  # one row per measured config: a re-measured config's row is replaced
    recs = db.records()
    assert sorted(r["rep_ms"] for r in recs) == [1] * 8 + [2] * 4 + [4] * 4
    assert {r["gpu"] for r in recs} == {"interpreter"}
    keys = {r["key"] for r in recs}
    assert len(keys) == 2 and all('"N":' in k and '"float32"' in k for k in keys)
    db.close()
    assert json.loads((tmp_path / "tuning.json").read_text())["records"]
    # an autotuner over the same kernel in the interpreter now launches from the database
    from workloads.vector_add import kernel as K

    AT.set_database(str(tmp_path / "tuning.json"))
    calls = []
    at = compiler.autotune([compiler.Config({"BLOCK": 256}, num_warps=1), compiler.Config({"BLOCK": 512})],
                           key=["N"], do_bench=lambda fn: calls.append(1) or 1.0)(K.add_kernel)
    n = 4096
    x, y, z = (np.random.rand(n).astype(np.float32) for _ in range(3))
    at[lambda m: (compiler.cdiv(n, m["BLOCK"]),)](x, y, z, n)
    assert calls == [] and at.db_hits == 1
    assert at.best_config == compiler.Config({"BLOCK": 1024}, num_warps=4, num_stages=3)
    assert np.allclose(z, x + y)


def test_farm_tune_exhaustive_and_budget(tmp_path):
    cfg = write_config(tmp_path)
    r = invoke("tune", cfg, "--local", "--timer", TIMER, "--exhaustive", "--json", tmp_path / "ex.json")
    assert r.exit_code == 0, r.output
    ex = json.loads((tmp_path / "ex.json").read_text())
    assert [rd["jobs"] for rd in ex["rounds"]] == [16] and ex["rounds"][0]["rep_ms"] == 8
    assert all(w["best"] == {"BLOCK": 1024, "num_warps": 4} for w in ex["winners"])
    # a tiny budget: stops after the first round, the best of that round wins
    r = invoke("tune", cfg, "--local", "--timer", TIMER, "--budget", "1ms", "--json", tmp_path / "b.json")
    assert r.exit_code == 0, r.output
    b = json.loads((tmp_path / "b.json").read_text())
    assert len(b["rounds"]) == 1 and b["stopped_by_budget"] and "stopped by the budget" in r.output


def test_farm_tune_compile_only_and_errors(tmp_path):
    cfg = write_config(tmp_path)
    r = invoke("tune", cfg, "--local", "--compile-only")
    assert r.exit_code == 0, r.output
    assert "compile only: 16 candidates, 0 failed" in r.output
    r = invoke("tune", cfg, "--local")
    assert r.exit_code == 2 and "nothing can be timed" in r.output
    r = invoke("tune")
    assert r.exit_code == 2 and "give a CONFIG" in r.output
    r = invoke("tune", cfg, "--local", "--timer", TIMER, "--budget", "soon")
    assert r.exit_code == 2 and "--budget" in r.output
    bad = tmp_path / "bad.yaml"
    bad.write_text("workloads: [{workload: vector_add, bogus: 1}]\n")
    r = invoke("tune", bad)
    assert r.exit_code == 2 and "bogus" in r.output


def test_farm_tune_on_ray(tmp_path):
    cfg = write_config(tmp_path)
    r = invoke("tune", cfg, "--timer", TIMER, "--json", tmp_path / "out.json", "--num-cpus", 2)
    assert r.exit_code == 0, r.output
    out = json.loads((tmp_path / "out.json").read_text())
    assert [rd["jobs"] for rd in out["rounds"]] == [16, 8, 4]
    assert all(w["best"] == {"BLOCK": 1024, "num_warps": 4} for w in out["winners"])
