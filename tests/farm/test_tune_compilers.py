"""`farm tune` with compilers as an axis (issue 23): each compiler's space searched on its own, stored on its own.

The search runs `farm tune` in a subprocess: Triton's jobs run in Triton's interpreter in the process that runs
them (--local: the farm's process), and this test process must not hold a Triton set up for one mode while
other tests need another. Candidates are compiled and validated for real by each compiler; a synthetic timer
that knows the compiler times them, favouring different configs per compiler.
"""
import importlib.util
import json
import os
import pathlib
import subprocess
import sys

import pytest

from farm_testing import REPO

HERE = pathlib.Path(__file__).resolve().parent
HAVE_TRITON = importlib.util.find_spec("triton") is not None and importlib.util.find_spec("torch") is not None
needs_triton = pytest.mark.skipif(not HAVE_TRITON, reason="Triton and torch not installed (pip install -e '.[interpret]')")

TIMER = '''
def timer(params, meta, rep_ms, compiler="tilefarm"):
    """ms: tilefarm is fastest at BLOCK=1024 num_warps=4, Triton at BLOCK=256 num_warps=1."""
    best = (1024, 4) if compiler == "tilefarm" else (256, 1)
    far = abs(meta["BLOCK"] - best[0]) / 256 + abs(meta["num_warps"] - best[1])
    return (1.0 + 0.1 * far) * params["N"] / 1000
'''


def _config(tmp_path, compilers="") -> pathlib.Path:
    (tmp_path / "timer.py").write_text(TIMER)
    p = tmp_path / "tune.yaml"
    p.write_text(f"""name: tune-both
store: {tmp_path / 'farm.db'}
search: {{eta: 2, min_rep_ms: 1, max_rep_ms: 4, warmup_ms: 1, timer: timer.py::timer}}
timing: {{timeout_s: 120}}
{compilers}
workloads:
  - workload: {HERE / 'compilers_kernels.py'}::axpy_triton
    key: [N]
    params: {{N: [1000, 3000], dtype: [float32]}}
    space: {{BLOCK: [256, 1024], num_warps: [1, 4]}}
""")
    return p


def _farm(*args, timeout=600):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p),
               FARM_FORCE_NO_GPU="1")
    env.pop("TRITON_INTERPRET", None)  # the farm decides, per worker process
    return subprocess.run([sys.executable, "-m", "farm", *map(str, args)], capture_output=True, text=True, env=env,
                          timeout=timeout, cwd=REPO)


@needs_triton
def test_tune_searches_and_stores_each_compiler_apart(tmp_path):
    from farm.machine import compiler_version
    from farm.tuning_db import TuningDB

    cfg = _config(tmp_path)
    p = _farm("tune", cfg, "--local", "--compilers", "tilefarm,triton", "--json", tmp_path / "out.json")
    assert p.returncode == 0, (p.stdout[-3000:], p.stderr[-3000:])
    out = json.loads((tmp_path / "out.json").read_text())
    # 2 shapes x 2 compilers, 4 candidates each, eta 2: 4 -> 2 -> 1
    assert [r["jobs"] for r in out["rounds"]] == [16, 8]
    winners = {(w["params"]["N"], w["compiler"]): w for w in out["winners"]}
    assert set(winners) == {(1000, "tilefarm"), (3000, "tilefarm"), (1000, "triton"), (3000, "triton")}
    for (n, comp), w in winners.items():
        assert w["failures"] == 0 and w["measured"] == 4, w
        want = {"BLOCK": 1024, "num_warps": 4} if comp == "tilefarm" else {"BLOCK": 256, "num_warps": 1}
        assert w["best"] == want, (n, comp, w["best"])
    assert "compiler" in p.stdout and "triton" in p.stdout  # the table has a compiler column

    db = TuningDB(tmp_path / "farm.db")
    try:
        recs = db.records()
        assert len(recs) == 2 * 2 * 4  # every measured config, per compiler
        by = {}
        for r in recs:
            by.setdefault(r["compiler_version"], []).append(r)
        import triton
        assert set(by) == {compiler_version(), f"triton=={triton.__version__}"}
        ours, theirs = by[compiler_version()], by[f"triton=={triton.__version__}"]
        kernel = ours[0]["kernel"]
        assert {r["kernel"] for r in ours} == {kernel} and not kernel.startswith("triton:")
        assert {r["kernel"] for r in theirs} == {f"triton:{kernel}"}
        assert {r["key"] for r in ours} == {r["key"] for r in theirs}  # the same launch key
        # tilefarm's autotuner looks its kernel up by hash: it gets tilefarm's best, never a config Triton was
        # timed with, even for another tilefarm version (whose fallback takes the longest-timed records)
        for key in {r["key"] for r in ours}:
            for ver in (compiler_version(), "another-tilefarm"):
                best = db.best(kernel, key, "interpreter", ver)
                assert best["compiler_version"] == compiler_version()
                assert json.loads(best["config"])["kwargs"] == {"BLOCK": 1024}
        groups = {(s["kernel"], s["key"]) for s in db.summary()}
        assert len(groups) == 4  # 2 shapes x 2 compilers: each compiler's best on its own line
    finally:
        db.close()


@needs_triton
def test_tune_reads_compilers_from_the_config_and_refuses_bad_ones(tmp_path):
    cfg = _config(tmp_path, "compilers: [triton]")
    p = _farm("tune", cfg, "--local", "--json", tmp_path / "out.json")
    assert p.returncode == 0, (p.stdout[-3000:], p.stderr[-3000:])
    out = json.loads((tmp_path / "out.json").read_text())
    assert {w["compiler"] for w in out["winners"]} == {"triton"}
    assert all(w["best"] == {"BLOCK": 256, "num_warps": 1} for w in out["winners"])

    bad = _config(tmp_path, "compilers: [tilefarm, nvcc]")
    p = _farm("tune", bad, "--local")
    assert p.returncode == 2 and "compilers.1: Input should be 'tilefarm' or 'triton'" in p.stderr, p.stderr
    p = _farm("tune", _config(tmp_path), "--local", "--compilers", "triton,triton")
    assert p.returncode == 2 and "names a compiler twice" in p.stderr + p.stdout


def test_tune_under_triton_where_triton_is_absent_is_refused_saying_so(tmp_path, monkeypatch):
    from farm import FarmError, compilers
    from farm.tune import load_config, plan_shapes

    monkeypatch.setattr(compilers, "triton_version", lambda: None)
    cfg, _ = load_config(_config(tmp_path, "compilers: [tilefarm, triton]"))
    with pytest.raises(FarmError, match="Triton is not installed where farm tune plans"):
        plan_shapes(cfg)


@pytest.mark.gpu
@needs_triton
def test_gpu_tune_times_each_compiler_on_the_gpu_and_stores_them_apart(tmp_path):
    """On the GPU node: both compilers' candidates timed for real (no synthetic timer), each its own winner."""
    from farm.tuning_db import TuningDB

    p = tmp_path / "tune.yaml"
    p.write_text(f"""name: tune-gpu
store: {tmp_path / 'farm.db'}
search: {{eta: 2, min_rep_ms: 5, max_rep_ms: 20, warmup_ms: 5}}
timing: {{timeout_s: 300}}
compilers: [tilefarm, triton]
workloads:
  - workload: {HERE / 'compilers_kernels.py'}::axpy_triton
    key: [N]
    params: {{N: [4194304], dtype: [float32]}}
    space: {{BLOCK: [256, 1024], num_warps: [4]}}
""")
    env_gpu = os.environ.pop("FARM_FORCE_NO_GPU", None)
    try:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(q for q in (str(REPO), os.environ.get("PYTHONPATH")) if q))
        env.pop("TRITON_INTERPRET", None)
        r = subprocess.run([sys.executable, "-m", "farm", "tune", str(p), "--json", str(tmp_path / "out.json")],
                           capture_output=True, text=True, env=env, timeout=600, cwd=REPO)
    finally:
        if env_gpu is not None:
            os.environ["FARM_FORCE_NO_GPU"] = env_gpu
    assert r.returncode == 0, (r.stdout[-3000:], r.stderr[-3000:])
    out = json.loads((tmp_path / "out.json").read_text())
    assert out["target"] != "interpreter"
    winners = {w["compiler"]: w for w in out["winners"]}
    assert set(winners) == {"tilefarm", "triton"}
    assert all(w["failures"] == 0 and w["best_ms"] > 0 for w in winners.values()), winners
    db = TuningDB(tmp_path / "farm.db")
    try:
        recs = db.records()
        assert len(recs) == 4 and "interpreter" not in {x["gpu"] for x in recs}
        assert len({x["compiler_version"] for x in recs}) == 2
        assert {x["kernel"].startswith("triton:") for x in recs} == {True, False}
    finally:
        db.close()
