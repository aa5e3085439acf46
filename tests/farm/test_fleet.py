"""The farm across a fleet, on one machine: a Ray cluster of several nodes (ray.cluster_utils), each with its own
Ray folder (so its own working folder for the shipped config folder) and its own kernel cache folder
(TILEFARM_CACHE_DIR), GPU kinds declared as resources on some nodes.

This machine has no GPU: the "GPU" nodes declare `GPU` and `accelerator_type:KIND` resources, and their workers,
finding no device, validate each job in the interpreter instead of timing it (the only stand-in here). Everything
else is what a real fleet does: compile tasks on CPU nodes, kernel bundles through the object store, the workload
file through the runtime_env, placement by kind, nodes leaving and joining mid-run.
"""
import json
import pathlib
import shutil
import threading
import time

import pytest

from farm_testing import FAKES, REPO, ray_cluster, ray_node_args as _node_args

pytestmark = pytest.mark.slow

EXAMPLE = REPO / "configs" / "examples" / "scaled_add.py"


@pytest.fixture(scope="module")
def fleet():
    """A head (1 CPU), a CPU node (1 CPU) and an H200 node (no CPU for compiling, 1 GPU): a dict with the
    cluster, its folder and name -> Ray node."""
    with ray_cluster("tf-fleet-", head=dict(num_cpus=1), nodes={
            "cpu": dict(num_cpus=1),
            "h200": dict(num_cpus=0, num_gpus=1, resources={"accelerator_type:H200": 1})}) as c:
        yield c


def add(fleet, name, **kw):
    node = fleet["cluster"].add_node(**_node_args(fleet["root"], name, **kw))
    fleet["nodes"][name] = node
    return node


def remove(fleet, name):
    fleet["cluster"].remove_node(fleet["nodes"].pop(name))


@pytest.fixture
def store(tmp_path):
    """One SQLite store per test (the store layer is tested on both backends elsewhere; here it is the fleet)."""
    from farm.store import Store
    s = Store(tmp_path / "farm.db")
    yield s
    s.close()


@pytest.fixture
def executor(fleet, monkeypatch):
    from farm.executor.ray import RayExecutor
    monkeypatch.delenv("FARM_FORCE_NO_GPU", raising=False)  # the driver sees the declared GPUs
    ex = RayExecutor(wait_s=30, notice_s=1.0)
    assert not ex.started_ray
    yield ex
    ex.close()


def _folder(tmp_path, body: str, files: dict) -> pathlib.Path:
    """A config folder of its own (config + kernel files), as a user's checkout would be."""
    d = tmp_path / "work"
    d.mkdir()
    for rel, src in files.items():
        (d / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(src, d / rel)
    (d / "sweep.yaml").write_text(body)
    return d


def _run(executor, folder: pathlib.Path, store, gpu_kind=None, on_event=None, gone=True):
    """Plan the folder's config on the driver, send the folder, take it off this machine's disk (no node can read
    it from where it was), run it; returns (run id, rows, notices)."""
    from farm import config, runner
    cfg, text = config.load(folder / "sweep.yaml")
    prep = runner.prepare(cfg, text, str(folder / "sweep.yaml"), store, executor.resources(), gpu_kind=gpu_kind)
    executor.ship(str(folder))
    if gone:
        folder.rename(folder.with_name("moved-away"))
    notices = []

    def events(kind, job, payload, tally):
        if kind == "notice":
            notices.append(payload)
        if on_event:
            on_event(kind, job, payload, tally)

    runner.execute(store, prep, executor, events)
    return prep.run_id, store.rows(prep.run_id), notices


def _cache_keys(path: pathlib.Path) -> set:
    return {p.name for p in path.glob("??/*") if len(p.name) == 64 and (p / "manifest.json").is_file()}


def test_kernels_travel_to_a_node_that_compiled_nothing(fleet, executor, store, tmp_path):
    body = """name: fleet-kernels
workloads:
  - workload: kernels/scaled_add.py
    params: {N: [4096, 8192, 65536], dtype: [float32]}
    meta: {BLOCK: [256, 1024], num_warps: [4]}
"""
    folder = _folder(tmp_path, body, {"kernels/scaled_add.py": EXAMPLE})
    run_id, rows, _ = _run(executor, folder, store)
    assert not folder.exists()  # the workload file was on no node's disk where the config named it
    assert [r["status"] for r in rows] == ["validated"] * 6, [r.get("error") for r in rows]
    h200 = fleet["nodes"]["h200"].node_id
    cpu_nodes = {fleet["nodes"]["head"].node_id, fleet["nodes"]["cpu"].node_id}
    for r in rows:
        a = r["artifacts"]
        assert r["gpu_kind"] == "H200" and a["node"] == h200  # placed by kind
        assert a["compile_node"] in cpu_nodes  # compiled elsewhere, its compile time measured there
        assert r["compile_s"] > 0
        assert a["node_compiles"] == 0, r  # the H200 node compiled and assembled nothing itself
        assert a["cubin"] is True
    # three N divisible by 16 specialize alike: two kernels (BLOCK 256, 1024), each sent once to the node
    keys = {r["artifacts"]["kernel_key"] for r in rows}
    assert len(keys) == 2
    assert sum(r["artifacts"]["kernel_fetched"] for r in rows) == 2
    assert sum(r["artifacts"]["node_installed"] for r in rows) == 2
    # the disk caches: the H200 node's holds what it was sent; the compile nodes' what they built
    root = fleet["root"]
    assert _cache_keys(root / "h200" / "cache") == keys
    assert keys <= _cache_keys(root / "head" / "cache") | _cache_keys(root / "cpu" / "cache")


def test_two_kinds_in_one_sweep_through_the_cli(fleet, executor, store, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from farm.cli.main import app
    from farm.store import Store
    add(fleet, "h100", num_cpus=0, num_gpus=1, resources={"accelerator_type:H100": 1})
    try:
        body = f"""name: fleet-kinds
store: {tmp_path / 'kinds.db'}
workloads:
  - workload: fakes.py::fake_vec
    params: {{N: [100, 200], dtype: [float32]}}
    meta: {{mode: [ok]}}
"""
        folder = _folder(tmp_path, body, {"fakes.py": FAKES})
        r = CliRunner().invoke(app, ["run", str(folder / "sweep.yaml"), "--address", fleet["cluster"].address,
                                     "--insecure-cluster", "--gpu-kind", "each", "--format", "json"])
        assert r.exit_code == 0, r.output
        st = Store(tmp_path / "kinds.db")
        run = st.runs()[0]
        assert run["target"] == "H100,H200"
        rows = st.rows(run["id"])
        st.close()
        node_of = {"H100": fleet["nodes"]["h100"].node_id, "H200": fleet["nodes"]["h200"].node_id}
        assert sorted((r["gpu_kind"], r["params"]["N"]) for r in rows) == [
            ("H100", 100), ("H100", 200), ("H200", 100), ("H200", 200)]
        assert len({r["key"] for r in rows}) == 4  # one key per kind: never compared across kinds
        for row in rows:
            assert row["status"] == "validated" and row["artifacts"]["node"] == node_of[row["gpu_kind"]]
        data = json.loads(r.stdout)
        assert {x["gpu_kind"] for x in data["results"]} == {"H100", "H200"}
    finally:
        remove(fleet, "h100")


def _fake_folder(tmp_path, n: int, sleep: float) -> pathlib.Path:
    body = f"""name: fleet-faults
workloads:
  - workload: fakes.py::fake_vec
    params: {{N: {list(range(100, 100 + n))}, dtype: [float32]}}
    meta: {{mode: [ok], sleep: [{sleep}]}}
"""
    return _folder(tmp_path, body, {"fakes.py": FAKES})


def test_a_node_removed_mid_run_loses_nothing_and_duplicates_nothing(fleet, executor, store, tmp_path):
    victim = add(fleet, "victim", num_cpus=0, num_gpus=1, resources={"accelerator_type:H200": 1}).node_id
    starts = []
    timer = None

    def on_event(kind, job, payload, tally):
        nonlocal timer
        if kind == "start":
            starts.append(job.key)
            # (a worker's label names its node) the victim's worker has just begun a 1.5 s job: its node goes
            if payload.endswith("@" + victim[:8]) and timer is None:
                timer = threading.Timer(0.5, remove, (fleet, "victim"))
                timer.start()

    run_id, rows, notices = _run(executor, _fake_folder(tmp_path, 6, 1.5), store, on_event=on_event)
    timer.join()
    assert [r["status"] for r in rows] == ["validated"] * 6
    n = store.sql("SELECT COUNT(*), COUNT(DISTINCT key) FROM results WHERE run_id=:r", r=run_id)[0]
    assert tuple(n) == (6, 6)
    assert any("left the cluster" in m for m in notices), notices
    assert len(starts) > 6  # the lost job started again
    survivors = [r for r in rows if r["artifacts"]["node"] != victim]
    assert survivors and all(r["artifacts"]["node"] == fleet["nodes"]["h200"].node_id for r in survivors)


def test_a_node_that_joins_mid_run_takes_work(fleet, executor, store, tmp_path):
    joined = {}

    def on_event(kind, job, payload, tally):
        if kind == "done" and not joined:  # (cluster_utils starts nodes from the main thread only: the driver's)
            joined["id"] = add(fleet, "late", num_cpus=0, num_gpus=1, resources={"accelerator_type:H200": 1}).node_id

    try:
        _, rows, _ = _run(executor, _fake_folder(tmp_path, 12, 1.0), store, on_event=on_event)
        assert [r["status"] for r in rows] == ["validated"] * 12
        assert any(r["artifacts"]["node"] == joined["id"] for r in rows), "the node that joined took no job"
    finally:
        if "late" in fleet["nodes"]:
            remove(fleet, "late")


def test_jobs_for_a_kind_no_node_has_wait_say_so_then_time_out(fleet, executor, store, tmp_path):
    executor.wait_s, executor.notice_s = 2.5, 0.5
    t0 = time.monotonic()
    _, rows, notices = _run(executor, _fake_folder(tmp_path, 2, 0), store, gpu_kind="B200", gone=False)
    assert time.monotonic() - t0 >= 2.5
    assert [r["status"] for r in rows] == ["timeout"] * 2
    assert all("no node of the cluster had GPU kind B200 within wait_s=2.5" in r["error"] for r in rows)
    assert notices and all("wait for a node with a GPU of kind B200" in m for m in notices)
    assert "H200 x1" in notices[0]  # what the cluster has, so the user sees the mismatch
