"""A kernel lost beyond rebuilding, on a Ray cluster on one machine (ray.cluster_utils, as test_fleet.py): the one
node with CPUs compiles every kernel and is then removed, so its kernels (held in its object store) are gone and
Ray's rebuild of them (running their compile task again) can never be placed. The GPU node's worker must compile
the kernel itself, within FARM_KERNEL_WAIT_S (3 s here) rather than the job's timeout, and record that it did.

As in test_fleet.py, the "GPU" node declares a GPU of kind H200 and validates in the interpreter (no GPU here).
The head has no CPUs (so no compile can land there), and objects above 1 KiB go to the object store of the node
that made them (Ray returns smaller ones inline to the driver, which would keep them safe).
"""
import pathlib
import threading
import time

import pytest

from farm_testing import REPO, ray_cluster

pytestmark = pytest.mark.slow

EXAMPLE = REPO / "configs" / "examples" / "scaled_add.py"


@pytest.fixture(scope="module")
def cluster():
    with ray_cluster("tf-lost-", head=dict(num_cpus=0), system={"max_direct_call_object_size": 1024}, nodes={
            "compiler": dict(num_cpus=1),
            "h200": dict(num_cpus=0, num_gpus=1, resources={"accelerator_type:H200": 1})}) as c:
        yield c


def _gated(src: str) -> str:
    """The example's kernel file, whose launch first says it got there (GATE.reached: its kernel is installed) and
    waits for the test's gate file (meta["gate"]; warmup, what the compile tasks run, ignores it): the first job
    holds the GPU worker until the test opens the gate."""
    wait = ('    gate = meta.pop("gate", "")\n'
            '    if gate:\n'
            '        open(gate + ".reached", "w").close()\n'
            '    deadline = time.monotonic() + 120\n'
            '    while gate and not os.path.exists(gate) and time.monotonic() < deadline:\n'
            '        time.sleep(0.1)\n')
    launch = 'def launch(arrays, params, meta):\n    """Run the kernel'
    warmup = 'def warmup(arrays, params, meta):\n    """Compile without running'
    assert src.count(launch) == 1 and src.count(warmup) == 1 and src.count("    meta = dict(meta)\n") == 2
    head, rest = src.split(launch)
    mid, tail = rest.split(warmup)
    mid = mid.replace("    meta = dict(meta)\n", "    meta = dict(meta)\n" + wait)
    tail = tail.replace("    meta = dict(meta)\n", '    meta = dict(meta)\n    meta.pop("gate", None)\n')
    return "import os\nimport time\n" + head + launch + mid + warmup + tail


def test_a_kernel_lost_beyond_rebuilding_is_compiled_by_the_gpu_worker(cluster, tmp_path, monkeypatch):
    from farm import config, runner
    from farm.executor.ray import RayExecutor
    from farm.store import Store
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "slow_add.py").write_text(_gated(EXAMPLE.read_text()))
    gate = tmp_path / "gate"
    (tmp_path / "work" / "sweep.yaml").write_text(f"""name: lost-kernel
timing: {{timeout_s: 90}}
workloads:
  - workload: slow_add.py
    params: {{N: [4096], dtype: [float32]}}
    meta: {{BLOCK: [256], num_warps: [4], gate: ["{gate}"]}}
  - workload: slow_add.py
    params: {{N: [4096], dtype: [float32]}}
    meta: {{BLOCK: [512, 1024], num_warps: [4]}}
""")
    from farm.executor import ray as R
    monkeypatch.delenv("FARM_FORCE_NO_GPU", raising=False)  # the driver sees the declared GPU
    monkeypatch.setattr(R, "KERNEL_WAIT_S", 3.0)  # (FARM_KERNEL_WAIT_S, default 60 s)
    ex = RayExecutor(wait_s=60, notice_s=5.0)
    st = Store(tmp_path / "farm.db")
    cfg, text = config.load(tmp_path / "work" / "sweep.yaml")
    prep = runner.prepare(cfg, text, str(tmp_path / "work" / "sweep.yaml"), st, ex.resources())
    ex.ship(str(tmp_path / "work"))
    compiler_node = cluster["nodes"]["compiler"].node_id
    removed = {}

    def lose_the_compile_node():
        """Once every kernel is compiled (the first job holds the GPU worker at its gate), the node holding
        them goes; then the gate opens."""
        deadline = time.monotonic() + 180
        reached = pathlib.Path(str(gate) + ".reached")  # the first job has its kernel and waits at the gate
        while (len(ex._kernels) < 3 or not reached.exists()) and time.monotonic() < deadline:
            time.sleep(0.1)
        removed["kernels"] = len(ex._kernels)
        cluster["cluster"].remove_node(cluster["nodes"].pop("compiler"))
        import ray
        while any(n["NodeID"] == compiler_node and n["Alive"] for n in ray.nodes()):
            time.sleep(0.2)
        gate.write_text("open")

    t = threading.Thread(target=lose_the_compile_node, daemon=True)
    t.start()
    t0 = time.monotonic()
    try:
        runner.execute(st, prep, ex)
    finally:
        t.join(timeout=200)
        ex.close()
    took = time.monotonic() - t0
    rows = {r["meta"]["BLOCK"]: r for r in st.rows(prep.run_id)}
    st.close()
    assert removed["kernels"] == 3
    assert sorted(rows) == [256, 512, 1024] and {r["status"] for r in rows.values()} == {"validated"}, \
        {b: (r["status"], r.get("error")) for b, r in rows.items()}
    first = rows[256]["artifacts"]  # fetched before its node went
    assert first["compile_node"] == compiler_node and first["kernel_fetched"] and first["node_compiles"] == 0
    for b in (512, 1024):
        r = rows[b]
        a = r["artifacts"]
        assert a["compile_node"] == compiler_node  # compiled there first, then lost with it
        assert not a["kernel_fetched"] and a.get("kernel_lost") is True
        assert a["node_compiles"] >= 1, a  # the GPU node compiled (and assembled) it itself, and says so
        assert any("did not arrive" in n and "compiled on this node" in n for n in r["notes"]), r["notes"]
    assert took < 60, took  # within FARM_KERNEL_WAIT_S of each job, not the jobs' 90 s timeout (45 s each)
