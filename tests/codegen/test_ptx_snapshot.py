"""The generated PTX of the benchmark and test kernels is what tests/codegen/ptx_snapshot.json records.

A change in code generation (a pass, an emitter, the frontend, an option's default) shows here at once, naming the
kernels whose PTX changed. A commit that changes the generated code on purpose regenerates the snapshot in the same
commit: `python scripts/ptx_snapshot.py --update`. The cases compile in a subprocess with the code-changing
environment switches cleared and the kernel caches off (scripts/ptx_snapshot.py), so neither this process's
environment nor a warm cache can hide a change.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "ptx_snapshot.py")
SNAPSHOT = os.path.join(ROOT, "tests", "codegen", "ptx_snapshot.json")


def _run(*args):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TILEFARM_")}
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=300)


def test_ptx_matches_snapshot():
    p = _run()
    assert p.returncode == 0, f"\n{p.stdout}{p.stderr}"
    assert "as in the snapshot" in p.stdout


def test_snapshot_covers_the_benchmarks():
    """Every benchmarked matmul and attention config, every memory target, the idioms and the corpus's timed table are cases (a config added to a
    benchmark without regenerating the snapshot fails the test above as a 'new case')."""
    with open(SNAPSHOT) as f:
        keys = set(json.load(f)["ptx_sha256"])
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    try:
        import bench_matmul as BM
        import bench_memory as BMm
    finally:
        sys.path.pop(0)
    for dt in ("float16", "bfloat16"):
        for (bm, bn, bk, gm, nw, ns) in BM.MATMUL_CONFIGS:
            assert f"matmul/{dt}/{bm}x{bn}x{bk}-g{gm}-w{nw}-s{ns}/sm_90a" in keys
    for D, cfgs in BM.ATTN_WIDE.items():
        for (bm, bn, nw, ns) in cfgs:
            assert f"attention/D{D}/{bm}x{bn}-w{nw}-s{ns}/sm_90a" in keys
    for t in BMm.TARGETS:
        assert sum(k.startswith(t["workload"] + "/") for k in keys) >= len(t["metas"])
    assert sum(k.startswith("idioms/") for k in keys) == 7  # scripts/bench_idioms.py's kernels
    assert sum(k.startswith("corpus/") for k in keys) >= 18  # the corpus's timed table
    assert len(keys) >= 110


def test_a_changed_kernel_is_named(tmp_path):
    """The comparison names the case whose PTX differs (a check that cannot fail would hide every change)."""
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    try:
        import ptx_snapshot as P
    finally:
        sys.path.pop(0)
    want = {"a": "1", "b": "2", "c": "3"}
    got = {"a": "1", "b": "9", "d": "4"}
    assert P.compare(want, got) == ["  PTX changed: b", "  missing now: c", "  new case:    d"]
    assert P.compare(want, dict(want)) == []
