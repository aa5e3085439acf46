"""Compile tasks that carry a batch of jobs (farm.executor.ray `_compile_many` / `_Compiles`), on the GPU path of a
Ray cluster on one machine (ray.cluster_utils, as test_fleet.py): a head with the one CPU (every compile lands
there) and an "H200" node with a declared GPU and no CPU. This machine has no GPU: the H200 node's worker, finding
no device, validates each job in the interpreter instead of timing it (the only stand-in here).

Batches are made large at once (BATCH_S 60 s: any measured compile time gives COMPILE_BATCH_MAX, here 8, jobs per task), so every
test has several jobs per task; each checks what a per-job task gave: one result per job, one bundle ref per
kernel key, a fault charged to its own job, nothing duplicated in the store.
"""
import pytest

from farm_testing import FAKES, REPO, ray_cluster

pytestmark = pytest.mark.slow

EXAMPLE = REPO / "configs" / "examples" / "scaled_add.py"


@pytest.fixture(scope="module")
def fleet():
    with ray_cluster("tf-cbatch-", head=dict(num_cpus=1), nodes={
            "h200": dict(num_cpus=0, num_gpus=1, resources={"accelerator_type:H200": 1})}) as c:
        yield c


@pytest.fixture
def executor(fleet, monkeypatch):
    from farm.executor import ray as R
    monkeypatch.delenv("FARM_FORCE_NO_GPU", raising=False)  # the driver sees the declared GPU
    monkeypatch.setattr(R, "BATCH_S", 60.0)
    monkeypatch.setattr(R, "COMPILE_BATCH_MAX", 8)
    ex = R.RayExecutor(wait_s=30, notice_s=5.0)
    assert not ex.started_ray and ex.gpus == 1
    yield ex
    ex.close()


def _run(executor, tmp_path, body: str):
    from farm import config, runner
    from farm.store import Store
    (tmp_path / "sweep.yaml").write_text(body)
    st = Store(tmp_path / "farm.db")
    try:
        cfg, text = config.load(tmp_path / "sweep.yaml")
        prep = runner.prepare(cfg, text, str(tmp_path / "sweep.yaml"), st, executor.resources())
        before = dict(executor.calls)
        runner.execute(st, prep, executor)
        n = tuple(st.sql("SELECT COUNT(*), COUNT(DISTINCT key) FROM results WHERE run_id=:r", r=prep.run_id)[0])
        rows = st.rows(prep.run_id)
    finally:
        st.close()
    assert n == (len(prep.jobs), len(prep.jobs)), n  # one row per job: nothing lost, nothing duplicated
    calls = {k: executor.calls[k] - before.get(k, 0) for k in executor.calls}
    return rows, calls


def _fakes(*entries, timeout_s=20) -> str:
    """A sweep of fake_vec entries (mode, [N...]) in this order (the planner keeps it)."""
    out = f"name: cbatch\ntiming: {{timeout_s: {timeout_s}}}\nworkloads:\n"
    for mode, ns in entries:
        out += (f"  - workload: {FAKES}::fake_vec\n    params: {{N: {list(ns)}, dtype: [float32]}}\n"
                f"    meta: {{mode: [{mode}]}}\n")
    return out


def test_real_kernels_several_per_task_one_bundle_ref_per_kernel(fleet, executor, tmp_path):
    body = f"""name: cbatch-kernels
timing: {{timeout_s: 120}}
workloads:
  - workload: {EXAMPLE}
    params: {{N: [4096, 8192, 16384, 32768, 65536], dtype: [float32]}}
    meta: {{BLOCK: [256, 512, 1024], num_warps: [4]}}
"""
    rows, calls = _run(executor, tmp_path, body)
    assert [r["status"] for r in rows] == ["validated"] * 15, [r.get("error") for r in rows]
    assert calls["jobs_compiled"] == 15 and calls["compile_tasks"] <= 5, calls  # batches, not a task per job
    h200 = fleet["nodes"]["h200"].node_id
    keys = {}
    for r in rows:
        a = r["artifacts"]
        assert a["compile_node"] == fleet["nodes"]["head"].node_id and a["node"] == h200
        assert a["node_compiles"] == 0, r  # the GPU node compiled nothing itself
        keys.setdefault(a["kernel_key"], []).append(r)
    # five N divisible by 16 specialize alike: three kernels (BLOCK 256, 512, 1024), each sent once to the node
    assert len(keys) == 3
    assert sum(r["artifacts"]["kernel_fetched"] for r in rows) == 3
    assert set(executor._kernels) >= set(keys)  # one ref kept per kernel key


def test_a_compile_that_raises_is_its_job_s_result_only(fleet, executor, tmp_path):
    rows, calls = _run(executor, tmp_path, _fakes(("ok", range(100, 104)), ("compile_raise", [200]),
                                                   ("compile_error", [201]), ("ok", range(300, 304))))
    by_mode = {}
    for r in rows:
        by_mode.setdefault(r["meta"]["mode"], []).append(r)
    assert [r["status"] for r in by_mode["ok"]] == ["validated"] * 8
    [raised] = by_mode["compile_raise"]
    assert raised["status"] == "error" and "RuntimeError: the compiler fell over (fake)" in raised["error"]
    [bad] = by_mode["compile_error"]
    assert bad["status"] == "compile_error" and "fake.py:3:5: no such op" in bad["error"]
    assert calls["jobs_compiled"] == 10 and calls["compile_tasks"] <= 4, calls


def test_a_compile_process_that_dies_mid_batch_is_charged_to_its_job(fleet, executor, tmp_path):
    rows, calls = _run(executor, tmp_path, _fakes(("ok", range(100, 104)), ("compile_die", [200]),
                                                   ("ok", range(300, 304))))
    died = [r for r in rows if r["meta"]["mode"] == "compile_die"]
    assert [r["status"] for r in died] == ["worker_died"] and "worker process died" in died[0]["error"]
    assert sorted(r["status"] for r in rows if r["meta"]["mode"] == "ok") == ["validated"] * 8
    # the dying job was in a batch with others: the batch's jobs without a result were compiled again, each in
    # a task of its own (so the one that killed its process is the one charged)
    assert calls["jobs_compiled"] > 9, calls


def test_a_compile_timeout_inside_a_batch_is_that_job_s(fleet, executor, tmp_path):
    rows, calls = _run(executor, tmp_path, _fakes(("ok", range(100, 104)), ("compile_hang", [200]),
                                                   ("ok", range(300, 304)), timeout_s=8))
    [hung] = [r for r in rows if r["meta"]["mode"] == "compile_hang"]
    assert hung["status"] == "timeout", hung
    assert "compile ran past timeout_s=8" in hung["error"] and "in its compile task" in hung["error"], hung["error"]
    assert sorted(r["status"] for r in rows if r["meta"]["mode"] == "ok") == ["validated"] * 8
    assert calls["compile_tasks"] < calls["jobs_compiled"], calls


def test_batch_sizes_follow_the_measured_time_and_spread_over_the_cpu_slots(monkeypatch):
    """_Compiles.launch alone (no Ray: the executor's submission is recorded): one job per task until a compile
    time is known, then ~BATCH_S of work per task, at most COMPILE_BATCH_MAX, never more than a task's share of the
    waiting jobs over the CPU slots; with partial=False only full batches go."""
    import collections
    import types

    from farm.executor import ray as R
    from farm.jobs import Job
    monkeypatch.setattr(R, "BATCH_S", 0.25)
    monkeypatch.setattr(R, "COMPILE_BATCH_MAX", 32)
    sizes = []
    ex = types.SimpleNamespace(max_in_flight=4, _compile=lambda jobs, arch: sizes.append(len(jobs)) or object())

    def line(n, workload="w.py"):
        return collections.deque(Job(key=f"{workload}{i:060d}", idx=i, workload=workload, name="w", params={},
                                     meta={}) for i in range(n))

    def launch(todo, per=None, partial=True):
        comp = R._Compiles(ex, 10.0, done=lambda *a: None)
        if per is not None:
            comp.job_s["w.py"] = per
        sizes.clear()
        taken = comp.launch(todo, "sm_90", partial)
        assert taken == sum(sizes) and comp.n_jobs == taken and len(comp.tasks) == len(sizes)
        return list(sizes)

    assert launch(line(100)) == [1, 1, 1, 1]  # no time known yet: one job per task, every slot busy
    assert launch(line(400), per=0.001) == [32, 32, 32, 32]  # cached compiles: BATCH_MAX
    assert launch(line(40), per=0.001) == [10, 10, 10, 10]  # the waiting jobs' share: no slot left idle
    assert launch(line(6), per=0.001) == [2, 2, 2]
    assert launch(line(100), per=0.1) == [2, 2, 2, 2]  # 100 ms compiles: ~0.25 s per task
    assert launch(line(100), per=5.0) == [1, 1, 1, 1]
    assert launch(line(40), per=0.001, partial=False) == []  # the workers have enough: wait for full batches
    assert launch(line(200), per=0.001, partial=False) == [32, 32, 32, 32]
    # a workload with no measured time yet ends the batch before it (one job per task for it too)
    mixed = line(3) + line(3, workload="other.py")
    assert launch(mixed, per=0.001) == [2, 1, 1, 1]
