"""Compilers as a sweep axis (issue 23): one sweep under tilefarm and the real Triton, in both interpreters.

The sweep runs `farm` in a subprocess (on Ray, as users run it): Triton picks its interpreter from TRITON_INTERPRET
when a kernel is decorated, and this test process must not hold a Triton set up for one mode while other tests
(GPU ones on the node) need the other.
"""
import importlib.util
import json
import os
import pathlib
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from farm import compilers, config, gate as G, planner
from farm.cli.main import app
from farm.executor.affinity import pick, suits
from farm.jobs import NOT_RUNNABLE, TRANSIENT, Job, RunOptions
from farm.store import Store
from farm_testing import REPO
from synthetic import add_run, sweep

HERE = pathlib.Path(__file__).resolve().parent
KERNELS = HERE / "compilers_kernels.py"
INTERNAL = HERE / "compilers_internal.py"
HAVE_TRITON = importlib.util.find_spec("triton") is not None and importlib.util.find_spec("torch") is not None
needs_triton = pytest.mark.skipif(not HAVE_TRITON, reason="Triton and torch not installed (pip install -e '.[triton]')")


def _farm(*args, check_rc=None, timeout=600, **extra_env):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p),
               **extra_env)
    env.pop("TRITON_INTERPRET", None)  # the farm decides, per worker process
    p = subprocess.run([sys.executable, "-m", "farm", *args], capture_output=True, text=True, env=env,
                       timeout=timeout, cwd=REPO)
    if check_rc is not None:
        assert p.returncode == check_rc, (p.returncode, p.stdout[-3000:], p.stderr[-3000:])
    return p


def _config(tmp_path) -> pathlib.Path:
    text = f"""name: compilers
store: {tmp_path / 'farm.db'}
cluster: {{num_cpus: 2}}
compilers: [tilefarm, triton]
workloads:
  - workload: {KERNELS}::axpy_triton
    params: {{N: [1000, 4099], dtype: [float32, float16]}}
  - workload: {REPO / 'configs/examples/scaled_add.py'}
    params: {{N: [1000], dtype: [float32]}}
  - workload: {KERNELS}::short_triton
  - workload: {KERNELS}::unsupported_triton
  - workload: {INTERNAL}
  - workload: {REPO / 'workloads/corpus/norms.py'}::layernorm_fwd_f16
  - workload: {REPO / 'workloads/corpus/norms.py'}::rmsnorm_looped_f32
"""
    p = tmp_path / "compilers.yaml"
    p.write_text(text)
    return p


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    """The sweep, run once: (config path, store path, run's stdout JSON)."""
    if not HAVE_TRITON:
        pytest.skip("Triton and torch not installed (pip install -e '.[triton]')")
    tmp = tmp_path_factory.mktemp("compilers")
    cfg = _config(tmp)
    # some jobs fail on purpose; a kernel cache of its own, so tilefarm's first compiles are cold
    p = _farm("run", str(cfg), "--format", "json", check_rc=1, TILEFARM_CACHE_DIR=str(tmp / "kcache"))
    return cfg, tmp / "farm.db", json.loads(p.stdout)


def _by(doc):
    return {(r["workload"], json.dumps(r["params"], sort_keys=True), r["compiler"]): r for r in doc["results"]}


@needs_triton
def test_both_compilers_validate_and_store_every_job(swept):
    cfg, db, doc = swept
    rows = doc["results"]
    assert len(rows) == 20 and {r["compiler"] for r in rows} == {"tilefarm", "triton"}
    axpy = [r for r in rows if r["workload"] == "axpy_triton"]
    assert len(axpy) == 8 and all(r["status"] == "validated" for r in axpy), [(r["compiler"], r["error"]) for r in axpy]
    for r in axpy:  # the farm's own checks, whoever compiled: tight errors against the float64 reference
        assert r["max_abs_err"] is not None and r["max_abs_err"] < 2e-2
    tri = [r for r in axpy if r["compiler"] == "triton"]
    assert all("Triton's interpreter: no compile step" in r["notes"] for r in tri)
    ours = [r for r in axpy if r["compiler"] == "tilefarm"]
    assert all(r["compile_s"] and r["compile_s"] > 0 for r in ours)
    # compile time per compiler, cold or from the cache: two kernels (one per dtype), each compiled cold at least
    # once (twice where two workers raced to it), the other points loading them
    states = [(r["params"]["dtype"], r["artifacts"].get("compile_cache")) for r in ours]
    assert {d for d, st in states if st == "cold"} == {"float32", "float16"}, states
    assert {st for _, st in states} <= {"cold", "cached"}, states
    # the corpus kernel, through the farm's checks under both
    ln = {r["compiler"]: r["status"] for r in rows if r["workload"] == "layernorm_fwd_f16"}
    assert ln == {"tilefarm": "validated", "triton": "validated"}
    # a `for` loop over a runtime bound: Triton 3.6's interpreter under NumPy >= 2.4 needs the farm's repair
    # (farm.compilers.repair_interpreter_index; before it: "only 0-dimensional arrays can be converted")
    loop = {r["compiler"]: (r["status"], r["error"]) for r in rows if r["workload"] == "rmsnorm_looped_f32"}
    assert loop == {"tilefarm": ("validated", None), "triton": ("validated", None)}, loop
    # each (point, compiler) is its own job with its own key; Triton's carries its version
    keys = {r["key"] for r in rows}
    assert len(keys) == 20
    st = Store(db, write=False)
    jobs = [r["job"] for r in st.rows(st.resolve("latest"), samples=True)]
    assert {j["compiler_version"] for j in jobs if j["compiler"] == "triton"} == {compilers.triton_version()}
    assert {j["compiler_version"] for j in jobs if j["compiler"] == "tilefarm"} == {""}


@needs_triton
def test_poisoned_outputs_catch_an_unwritten_element_under_both(swept):
    rows = [r for r in swept[2]["results"] if r["workload"] == "short_triton"]
    assert {r["compiler"]: r["status"] for r in rows} == {"tilefarm": "mismatch", "triton": "mismatch"}
    assert all("1 NaN or unwritten" in r["error"] for r in rows), [r["error"] for r in rows]


@needs_triton
def test_a_name_the_compat_layer_lacks_fails_that_job_only_naming_it(swept):
    rows = swept[2]["results"]
    bad = {r["compiler"]: r for r in rows if r["workload"] == "unsupported_triton"}
    assert bad["tilefarm"]["status"] == "compile_error"
    assert "tl.float8e4b8 is not supported" in bad["tilefarm"]["error"]
    assert "compilers_kernels.py:" in bad["tilefarm"]["error"]
    internal = {r["compiler"]: r for r in rows if r["workload"] == "internal_triton"}
    assert internal["tilefarm"]["status"] == "compile_error"
    err = internal["tilefarm"]["error"]
    assert "'triton.experimental'" in err and "compilers_internal.py:6:1" in err and "^" in err
    assert internal["triton"]["status"] == "validated"  # the same file runs under Triton


@needs_triton
def test_a_file_written_for_tilefarm_is_not_runnable_under_triton_saying_why(swept):
    rows = {r["compiler"]: r for r in swept[2]["results"] if r["workload"] == "scaled_add"}
    assert rows["tilefarm"]["status"] == "validated"
    assert rows["triton"]["status"] == NOT_RUNNABLE and "import compiler" in rows["triton"]["error"]


@needs_triton
def test_report_columns_ratio_and_json(swept):
    cfg, db, _ = swept
    p = _farm("report", "latest", "--store", str(db), check_rc=0)
    head = next(line for line in p.stdout.splitlines() if "tilefarm compile" in line)
    for col in ("workload", "tilefarm", "triton", "triton compile", "tilefarm/triton"):
        assert col in head, head
    doc = json.loads(_farm("report", "latest", "--store", str(db), "--format", "json", check_rc=0).stdout)
    sbs = doc["compilers"]
    assert sbs["names"] == ["tilefarm", "triton"] and sbs["ratio_to"] == "triton"
    axpy = [q for q in sbs["points"] if q["workload"] == "axpy_triton"]
    assert len(axpy) == 4 and all(set(q["by"]) == {"tilefarm", "triton"} for q in axpy)
    assert all(e["status"] == "validated" and e["median_ms"] is None for q in axpy for e in q["by"].values())
    assert "cold" in {q["by"]["tilefarm"]["compile_cache"] for q in axpy}
    assert sbs["geomean"] == {} and sbs["overall"] == {}  # nothing timed without a GPU: no ratios invented
    doc2 = json.loads(_farm("report", "latest", "--store", str(db), "--format", "json", "--ratio-to", "tilefarm",
                            check_rc=0).stdout)
    assert doc2["compilers"]["ratio_to"] == "tilefarm"
    bad = _farm("report", "latest", "--store", str(db), "--ratio-to", "nvcc", check_rc=2)
    assert "nvcc" in bad.stderr and "tilefarm, triton" in bad.stderr
    md = _farm("report", "latest", "--store", str(db), "--format", "markdown", check_rc=0).stdout
    assert "| tilefarm | tilefarm compile | triton | triton compile | tilefarm/triton |" in md


@needs_triton
def test_dashboard_plots_each_compiler_as_its_own_line(swept):
    from farm import dashboard

    data = dashboard.collect(Store(swept[1], write=False))
    series = data["workloads"]["axpy_triton"]
    assert all(set(by) == {"interpreter", "interpreter triton"} for by in series.values())


@needs_triton
def test_a_second_run_reuses_every_final_result_and_retries_not_runnable(swept):
    cfg, db, _ = swept
    _farm("run", str(cfg), "--local", "--format", "none", check_rc=1)
    st = Store(db, write=False)
    info = st.run(st.resolve("latest"))
    assert info["n_jobs"] == 20 and info["n_reused"] == 19  # all but the not_runnable one (transient)
    assert NOT_RUNNABLE in TRANSIENT


def test_gate_compares_a_compiler_only_with_itself(store):
    def both(triton_slow=1.0):
        out = []
        for j in sweep(noise=0.1):
            out.append({**j, "compiler": "tilefarm"})
            out.append({**j, "compiler": "triton", "median_ms": j["median_ms"] * 0.5 * triton_slow})
        return out
    a = add_run(store, both(), label="main", seed=1)
    b = add_run(store, both(), seed=2)
    res = G.compare(store, b, a)
    assert res.passed, res.summary()
    assert len(res.jobs) == 12 and {j.compiler for j in res.jobs} == {"tilefarm", "triton"}
    for j in res.jobs:  # each new job against its own compiler's baseline (triton's are 2x faster)
        assert 0.7 < j.new_ms / j.base_ms < 1.4, (j.name, j.base_ms, j.new_ms)
    c = add_run(store, both(triton_slow=1.3), seed=3)
    res = G.compare(store, c, a)
    assert not res.passed
    assert {j.compiler for j in res.failures} == {"triton"} and len(res.failures) == 6
    assert all("[triton]" in j.name for j in res.failures)


def test_not_runnable_where_triton_is_absent_or_another_version(monkeypatch, tmp_path):
    from farm import worker

    monkeypatch.setattr(compilers, "triton_version", lambda: None)
    why = compilers.not_runnable("triton", "3.6.0")
    assert "Triton is not installed on" in why and "3.6.0" in why
    assert compilers.not_runnable("tilefarm", "") is None
    job = Job(key="k1", idx=0, workload=f"{KERNELS}::axpy_triton", name="axpy_triton",
              params={"N": 100, "dtype": "float32"}, meta={"BLOCK": 128}, compiler="triton", compiler_version="3.6.0")
    res = worker.run_job(job, RunOptions())
    assert res.status == NOT_RUNNABLE and "Triton is not installed" in res.error and res.bytes == 1200.0
    monkeypatch.setattr(compilers, "triton_version", lambda: "3.5.1")
    assert "Triton 3.5.1 on" in compilers.not_runnable("triton", "3.6.0")
    assert "plan the run on a machine with Triton" in compilers.not_runnable("triton", "")


def test_keys_include_the_compiler_and_tilefarm_keys_are_unchanged(monkeypatch, tmp_path):
    cfg = config.parse_text(f"""compilers: [tilefarm, triton]
workloads:
  - workload: {REPO / 'configs/examples/scaled_add.py'}
    params: {{N: [1000], dtype: [float32]}}
""")
    monkeypatch.setattr(compilers, "triton_version", lambda: "9.9.9")
    jobs = planner.plan(cfg, "H200").jobs
    assert [j.compiler for j in jobs] == ["tilefarm", "triton"] and jobs[0].key != jobs[1].key
    assert jobs[1].compiler_version == "9.9.9"
    from farm.loader import load_workload, source_hash
    from farm.machine import compiler_version
    wl = load_workload(jobs[0].workload)
    old = planner.job_key(source_hash(wl), wl.name, jobs[0].params, jobs[0].meta, compiler_version(), "H200")
    assert jobs[0].key == old  # stores made before compilers were an axis keep their results
    monkeypatch.setattr(compilers, "triton_version", lambda: "9.9.10")
    assert planner.plan(cfg, "H200").jobs[1].key != jobs[1].key  # another Triton release: another key


def test_config_and_cli_refuse_bad_compilers(tmp_path):
    for bad, msg in (("[tilefarm, tilefarm]", "twice"), ("[nvcc]", "compilers.0"), ("[]", "compilers")):
        with pytest.raises(config.ConfigError) as e:
            config.parse_text(f"compilers: {bad}\nworkloads: [{{workload: vector_add}}]\n")
        assert msg in str(e.value)
    p = tmp_path / "c.yaml"
    p.write_text(f"store: {tmp_path / 'f.db'}\nworkloads: [{{workload: vector_add}}]\n")
    r = CliRunner().invoke(app, ["run", str(p), "--compilers", "tilefarm,nvcc"])
    assert r.exit_code == 2 and "unknown compiler 'nvcc'" in r.output
    assert not (tmp_path / "f.db").exists()


def test_placement_prefers_workers_that_have_triton():
    from farm.executor.affinity import ASKING
    tri = Job(key="a", idx=0, workload="w", name="w", params={"N": 1}, meta={}, compiler="triton",
              compiler_version="3.6.0")
    ours = Job(key="b", idx=1, workload="w", name="w", params={"N": 2}, meta={})
    without, with_ = {"triton": None}, {"triton": "3.6.0"}
    nodes = {"n1": None, "n2": "3.6.0"}
    ready = [(tri, None), (ours, None)]
    assert pick(ready, None, set(), suits(without, nodes)) == 1   # no Triton here: the tilefarm job
    assert pick(ready, None, set(), suits(with_, nodes)) == 0     # Triton here: either
    assert pick([(tri, None)], None, set(), suits(without, nodes)) == -1  # it waits for a worker with Triton
    # a node that has it counts though no worker is there yet (the pool places one there), and so does one that
    # may have it: still being asked
    assert pick([(tri, None)], None, set(), suits(without, {"n1": None, "n3": ASKING})) == -1
    # another version than the plan's is not the job's Triton: where no node has 3.6.0, taken and recorded
    assert pick([(tri, None)], None, set(), suits({"triton": "3.7.0"}, {"n1": "3.7.0", "n2": None})) == 0
    assert pick([(tri, None)], None, set(), suits(without, {"n1": None, "n2": None})) == 0


def test_the_corpus_config_plans_every_kernel_under_both(monkeypatch):
    monkeypatch.setattr(compilers, "triton_version", lambda: "3.6.0")
    cfg, _ = config.load(REPO / "configs/corpus.yaml", allow_outside=True)
    jobs = planner.plan(cfg, "H200").jobs
    names = {j.name for j in jobs}
    assert len(names) >= 60 and len(jobs) == 2 * len(names)
    for a, b in zip(jobs[::2], jobs[1::2]):  # the two compilers of a point side by side, at the H200 size
        assert (a.name, a.params, a.meta, a.compiler, b.compiler) == (b.name, b.params, b.meta, "tilefarm", "triton")
    saxpy = next(j for j in jobs if j.name == "saxpy_2p26_f32")
    assert saxpy.params["N"] == 1 << 26 and saxpy.params["dtype"] == "float32"


@pytest.mark.gpu
@needs_triton
def test_gpu_both_compilers_timed_side_by_side(tmp_path):
    """On the GPU node: the Triton-style kernel and a corpus kernel validated and timed under both compilers on
    Ray GPU workers; both times, Triton's compile time, ratios and geomeans in the report."""
    p = tmp_path / "gpu.yaml"
    p.write_text(f"""name: compilers-gpu
store: {tmp_path / 'farm.db'}
compilers: [tilefarm, triton]
timing: {{warmup_ms: 5, rep_ms: 30, timeout_s: 300}}
workloads:
  - workload: {KERNELS}::axpy_triton
    params: {{N: [1048576], dtype: [float32, float16]}}
    meta: {{BLOCK: [1024], num_warps: [4]}}
  - {{workload: {REPO / 'workloads/corpus/more_idioms.py'}::softmax_rows_keepdims_f32, sizes: gpu}}
""")
    old = os.environ.pop("FARM_FORCE_NO_GPU", None)
    try:
        _farm("run", str(p), "--format", "none", check_rc=0)
        doc = json.loads(_farm("report", "latest", "--store", str(tmp_path / "farm.db"), "--format", "json",
                               check_rc=0).stdout)
    finally:
        if old is not None:
            os.environ["FARM_FORCE_NO_GPU"] = old
    rows = doc["results"]
    assert len(rows) == 6
    assert all(r["status"] == "ok" and r["median_ms"] > 0 for r in rows), [(r["workload"], r["error"]) for r in rows]
    tri = [r for r in rows if r["compiler"] == "triton"]
    assert all(r["compile_s"] and r["compile_s"] > 0 for r in tri)
    assert not any("interpreter" in " ".join(r["notes"]) for r in rows)
    sbs = doc["compilers"]
    assert all(0.2 < q["ratio"]["tilefarm"] < 5 for q in sbs["points"])
    assert set(sbs["geomean"]) == {"axpy_triton", "softmax_rows_keepdims_f32"} and sbs["overall"]["tilefarm"]["n"] == 3


@needs_triton
def test_gate_remeasures_a_triton_job_with_triton():
    """farm gate's A/B server loads a job under its own compiler: a Triton job is re-timed as Triton's kernel."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop("TRITON_INTERPRET", None)
    srv = subprocess.Popen([sys.executable, str(REPO / "farm" / "ab_server.py")], cwd=REPO, env=env, text=True,
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        assert json.loads(srv.stdout.readline())["ready"]
        # internal_triton's file only loads against the real Triton: "b" cannot quietly run under tilefarm
        for name, comp, ref in (("a", "tilefarm", f"{KERNELS}::axpy_triton"), ("b", "triton", str(INTERNAL))):
            job = Job(key=name, idx=0, workload=ref, name=ref.rpartition("::")[2] or "internal_triton",
                      params={"N": 300, "dtype": "float32"}, meta={"BLOCK": 128}, compiler=comp,
                      compiler_version=compilers.triton_version() if comp == "triton" else "")
            srv.stdin.write(json.dumps({"op": "load", "id": name, "job": job.to_dict()}) + "\n")
            srv.stdin.flush()
            assert json.loads(srv.stdout.readline()) == {"ok": True}
            srv.stdin.write(json.dumps({"op": "bench", "id": name, "rep_ms": 5, "warmup_ms": 1,
                                        "flush_l2": True}) + "\n")
            srv.stdin.flush()
            assert len(json.loads(srv.stdout.readline())["samples"]) >= 3
    finally:
        srv.stdin.close()
        srv.wait(timeout=30)


def test_resume_replans_triton_jobs_for_the_triton_installed_now(monkeypatch):
    from farm import runner

    cfg = config.parse_text(f"""compilers: [tilefarm, triton]
workloads:
  - workload: {REPO / 'configs/examples/scaled_add.py'}
    params: {{N: [1000], dtype: [float32]}}
""")
    monkeypatch.setattr(compilers, "triton_version", lambda: "3.5.0")
    jobs = planner.plan(cfg, "H200").jobs
    monkeypatch.setattr(compilers, "triton_version", lambda: "3.6.0")
    out, changed = runner.rekey(jobs, "H200")
    assert list(changed) == [jobs[1].key]  # tilefarm's key stands; Triton's is made again for 3.6.0
    assert out[1].compiler_version == "3.6.0" and compilers.not_runnable("triton", out[1].compiler_version) is None


def _readme_command() -> list[str]:
    """The README's one command for a Triton user's kernel file under both compilers (its `farm run` line)."""
    text = (REPO / "README.md").read_text()
    section = text[text.index("### A Triton kernel file under both compilers"):]
    line = next(ln for ln in section.splitlines() if ln.startswith("farm run configs/examples/scaled_add_triton"))
    return line.split("#")[0].split()[1:]


@needs_triton
def test_the_readmes_triton_kernel_file_runs_under_both_compilers_with_its_one_command(tmp_path):
    args = _readme_command()
    assert args[:2] == ["run", "configs/examples/scaled_add_triton.yaml"], args
    db = tmp_path / "farm.db"
    p = _farm(*args, "--store", str(db), check_rc=0)
    head = next(line for line in p.stdout.splitlines() if "tilefarm compile" in line)
    for col in ("tilefarm", "triton", "triton compile", "tilefarm/triton"):
        assert col in head, head
    assert "12 jobs finished (12 validated)" in p.stdout, p.stdout[-2000:]
    doc = json.loads(_farm("report", "latest", "--store", str(db), "--format", "json", check_rc=0).stdout)
    pts = doc["compilers"]["points"]
    assert len(pts) == 6 and all(set(q["by"]) == {"tilefarm", "triton"} for q in pts)
    assert all(e["status"] == "validated" for q in pts for e in q["by"].values())


@pytest.mark.gpu
def test_gpu_the_readmes_triton_kernel_file_timed_under_both_compilers(tmp_path):
    """On the GPU node, the README's one command: every point timed under both compilers, with a ratio."""
    db = tmp_path / "farm.db"
    old = os.environ.pop("FARM_FORCE_NO_GPU", None)
    try:
        p = _farm(*_readme_command(), "--store", str(db), check_rc=0)
        doc = json.loads(_farm("report", "latest", "--store", str(db), "--format", "json", check_rc=0).stdout)
    finally:
        if old is not None:
            os.environ["FARM_FORCE_NO_GPU"] = old
    assert "tilefarm/triton" in p.stdout
    rows = doc["results"]
    assert len(rows) == 12 and all(r["status"] == "ok" and r["median_ms"] > 0 for r in rows), \
        [(r["compiler"], r["status"], r["error"]) for r in rows]
    pts = doc["compilers"]["points"]
    assert len(pts) == 6 and all(0.2 < q["ratio"]["tilefarm"] < 5 for q in pts)
    assert doc["compilers"]["overall"]["tilefarm"]["n"] == 6
