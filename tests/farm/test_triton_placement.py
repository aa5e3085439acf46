"""Triton jobs go to nodes that have Triton (issue 23): a Ray cluster of several nodes on one machine
(ray.cluster_utils), where some nodes lack Triton.

"Lacks Triton" is the test hook TILEFARM_NO_TRITON=1 in a node's environment (farm.compilers.triton_version then
answers None in every process of that node, as on a node without the package). The "GPU" nodes declare `GPU` and
`accelerator_type:H200` resources and, finding no device, validate in the interpreters (as in test_fleet.py).
"""
import pathlib
import shutil

import pytest

from farm_testing import ray_cluster

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not (__import__("importlib").util.find_spec("triton") and
                                      __import__("importlib").util.find_spec("torch")),
                                 reason="Triton and torch not installed (pip install -e '.[interpret]')")]

KERNELS = pathlib.Path(__file__).resolve().parent / "compilers_kernels.py"
SWEEP = """name: triton-placement
compilers: [tilefarm, triton]
workloads:
  - workload: kernels/axpy.py::axpy_triton
    params: {N: [1000, 4099], dtype: [float32]}
"""


@pytest.fixture(scope="module")
def fleet():
    """A head with 2 CPUs and no Triton, a 1-CPU node with Triton, two H200 nodes (no CPUs), one without Triton."""
    gpu = dict(num_cpus=0, num_gpus=1, resources={"accelerator_type:H200": 1})
    with ray_cluster("tf-tri-", head=dict(triton=False, num_cpus=2), nodes={
            "tri": dict(triton=True, num_cpus=1), "gpu-bare": dict(triton=False, **gpu),
            "gpu-tri": dict(triton=True, **gpu)}) as c:
        yield c


@pytest.fixture
def store(tmp_path):
    from farm.store import Store
    s = Store(tmp_path / "farm.db")
    yield s
    s.close()


def _run(store, tmp_path, gpu: bool, monkeypatch, sweep: str = SWEEP, n: int = 4):
    """The sweep on the cluster (CPU workers in the interpreters, or the H200 pool): result rows."""
    from farm import config, runner
    from farm.executor.ray import RayExecutor
    if gpu:
        monkeypatch.delenv("FARM_FORCE_NO_GPU", raising=False)  # the driver sees the declared GPUs
    d = tmp_path / "work"
    (d / "kernels").mkdir(parents=True)
    shutil.copy(KERNELS, d / "kernels" / "axpy.py")
    (d / "sweep.yaml").write_text(sweep)
    ex = RayExecutor(wait_s=60, notice_s=5.0)
    try:
        cfg, text = config.load(d / "sweep.yaml")
        prep = runner.prepare(cfg, text, str(d / "sweep.yaml"), store, ex.resources())
        ex.ship(str(d))
        runner.execute(store, prep, ex, lambda *a: None)
    finally:
        ex.close()
    rows = store.rows(prep.run_id)
    assert len(rows) == n, rows
    return rows


def test_triton_jobs_validate_on_the_one_cpu_node_that_has_triton(fleet, store, tmp_path, monkeypatch):
    rows = _run(store, tmp_path, False, monkeypatch)
    assert all(r["status"] == "validated" for r in rows), [(r["compiler"], r["status"], r["error"]) for r in rows]
    tri = fleet["nodes"]["tri"].node_id
    assert {r["artifacts"]["node"] for r in rows if r["compiler"] == "triton"} == {tri}


def test_a_lone_triton_job_gets_a_worker_on_the_node_that_has_triton(fleet, store, tmp_path, monkeypatch):
    """One job: the pool starts one worker, which Ray places on the driver's node (the head, without Triton);
    the job must not be recorded as not runnable there while another node has Triton."""
    sweep = SWEEP.replace("[tilefarm, triton]", "[triton]").replace("N: [1000, 4099]", "N: [1000]")
    rows = _run(store, tmp_path, False, monkeypatch, sweep, n=1)
    assert [r["status"] for r in rows] == ["validated"], [r["error"] for r in rows]
    assert rows[0]["artifacts"]["node"] == fleet["nodes"]["tri"].node_id


def test_triton_jobs_validate_on_the_gpu_node_that_has_triton(fleet, store, tmp_path, monkeypatch):
    rows = _run(store, tmp_path, True, monkeypatch)
    assert all(r["status"] == "validated" for r in rows), [(r["compiler"], r["status"], r["error"]) for r in rows]
    assert {r["gpu_kind"] for r in rows} == {"H200"}
    gpu_tri = fleet["nodes"]["gpu-tri"].node_id
    assert {r["artifacts"]["node"] for r in rows if r["compiler"] == "triton"} == {gpu_tri}


def test_farm_cluster_shows_which_nodes_have_triton(fleet):
    import json

    from typer.testing import CliRunner

    import triton
    from farm.cli.main import app
    r = CliRunner().invoke(app, ["cluster", "--format", "json"])  # the cluster this process joined
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output[r.output.index("{"):])
    got = {n["node_id"]: n["triton"] for n in doc["nodes"]}
    want = {node.node_id: (triton.__version__ if name in ("tri", "gpu-tri") else None)
            for name, node in fleet["nodes"].items()}
    assert got == want
    t = CliRunner().invoke(app, ["cluster"])
    assert t.exit_code == 0 and "Triton" in t.output and triton.__version__ in t.output, t.output


def test_where_no_node_has_triton_its_jobs_are_not_runnable_saying_why(fleet, store, tmp_path, monkeypatch):
    for name in ("tri", "gpu-tri"):  # last in this module: the cluster keeps only nodes without Triton
        fleet["cluster"].remove_node(fleet["nodes"].pop(name))
    rows = _run(store, tmp_path, False, monkeypatch)
    ours = [r for r in rows if r["compiler"] == "tilefarm"]
    theirs = [r for r in rows if r["compiler"] == "triton"]
    assert all(r["status"] == "validated" for r in ours), [r["error"] for r in ours]
    assert all(r["status"] == "not_runnable" for r in theirs), [(r["status"], r["error"]) for r in theirs]
    for r in theirs:
        assert "Triton is not installed on" in r["error"], r["error"]
        assert "none of the 1 live node(s) that can run it has Triton" in r["error"], r["error"]
