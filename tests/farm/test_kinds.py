"""GPU kinds in planning: one job per point and kind, each keyed for its kind; which kinds a run times on."""
import pytest

from farm import FarmError, config, planner, runner

from farm_testing import FAKES

TEXT = f"""
workloads:
  - workload: {FAKES}::fake_vec
    params: {{N: [100, 200], dtype: [float32]}}
    meta: {{mode: [ok]}}
"""


def test_one_job_per_point_and_kind_keyed_like_a_single_kind_run():
    cfg = config.parse_text(TEXT)
    both = list(planner.iter_jobs(cfg, "H100,H200", kinds=["H100", "H200"]))
    assert [(j.params["N"], j.gpu_kind) for j in both] == [(100, "H100"), (100, "H200"), (200, "H100"), (200, "H200")]
    assert [j.idx for j in both] == [0, 1, 2, 3] and len({j.key for j in both}) == 4
    # a job's key is its kind's: what a run on that kind alone plans (so results are reused across such runs)
    alone = {j.params["N"]: j.key for j in planner.iter_jobs(cfg, "H200")}
    assert {j.params["N"]: j.key for j in both if j.gpu_kind == "H200"} == alone
    assert all(j.gpu_kind == "" for j in planner.iter_jobs(cfg, "H200"))
    assert planner.Job.from_dict(both[1].to_dict()).gpu_kind == "H200"  # stored with the plan, for --resume


def test_the_job_limit_counts_every_kind():
    cfg = config.parse_text(TEXT)
    with pytest.raises(config.ConfigError, match=r"up to 6 jobs \(2 params x 1 meta x 3 GPU kinds\)"):
        list(planner.iter_jobs(cfg, "x", kinds=["A", "B", "C"], max_jobs=5))


RES = {"gpus": 3, "gpu_kind": "H100", "gpu_kinds": {"H100": 1, "H200": 2}}


@pytest.mark.parametrize("want,kinds", [("H200", ["H200"]), ("H100,H200", ["H100", "H200"]), ("each", ["H100", "H200"]),
                                        (["B200"], ["B200"]), (" H200 , H200", ["H200"])])
def test_kinds_named(want, kinds):
    assert runner.kinds_for(config.parse_text(TEXT), RES, want) == kinds


def test_several_kinds_and_none_named_is_refused():
    with pytest.raises(FarmError, match=r"GPUs of 2 kinds \(H100, H200\).*--gpu-kind each"):
        runner.kinds_for(config.parse_text(TEXT), RES)
    assert runner.kinds_for(config.parse_text(TEXT), {"gpus": 2, "gpu_kinds": {"H200": 2}}) == ["H200"]
    cfg = config.parse_text(TEXT + "cluster: {gpu_kind: each}\n")
    assert runner.kinds_for(cfg, RES) == ["H100", "H200"]


def test_no_kinds_without_gpus_or_when_compiling_only():
    assert runner.kinds_for(config.parse_text(TEXT), {"gpus": 0}, "H200") is None
    cfg = config.parse_text(TEXT + "compile_only: true\n")
    assert runner.kinds_for(cfg, RES, "each") is None
    with pytest.raises(FarmError, match="`each` stands alone"):
        runner.kinds_for(config.parse_text(TEXT), RES, "each,H100")


def test_reports_keep_kinds_apart():
    from farm import report

    def row(kind, ms):
        return report.derive({"workload": "w", "params": {"N": 1, "dtype": "float32"}, "meta": {}, "status": "ok",
                              "median_ms": ms, "gpu_kind": kind}, None)
    rows = [row("H100", 2.0), row("H200", 1.0)]
    md = report.to_markdown(rows)
    assert md.splitlines()[0].startswith("| gpu | workload") and "| H100 |" in md and "| H200 |" in md
    assert report.table(rows).columns[0].header == "gpu"
    # --vs pairs a row with the other run's row of the same kind only
    other = [row("H200", 3.0)]
    got = report.attach_vs(rows, other)
    assert [r["vs_ms"] for r in got] == [None, 3.0]
    one = [row("", 1.0)]
    assert not report.to_markdown(one).startswith("| gpu")


def test_the_local_executor_refuses_another_kind_s_jobs():
    from farm.executor.local import LocalExecutor
    from farm.jobs import RunOptions
    job = next(planner.iter_jobs(config.parse_text(TEXT), "H100", kinds=["H100"]))
    got = []
    LocalExecutor().run([job], RunOptions(target="H100"), lambda kind, j, payload: got.append((kind, payload)))
    res = got[-1][1]
    assert res.status == "error" and "this job is for GPU kind H100; this machine's GPU is none" in res.error


def test_the_gate_re_measures_a_kind_only_on_that_kind():
    from farm.gate import ABRemeasure
    ab = ABRemeasure.__new__(ABRemeasure)  # the kind check comes before any server or store is used
    ab.log, ab.why = [], None
    assert ab._load({"job": {"gpu_kind": "H100"}}, {"job": {"gpu_kind": "H100"}}) is None
    assert "timed on H100; this machine's GPU is interpreter: not re-measured here" in ab.why


def test_compilers_and_kinds_together_one_job_each_keyed_like_either_axis_alone(monkeypatch):
    from farm import compilers
    monkeypatch.setattr(compilers, "triton_version", lambda: "9.9.9")
    cfg = config.parse_text(TEXT + "compilers: [tilefarm, triton]\n")
    jobs = list(planner.iter_jobs(cfg, "H100,H200", kinds=["H100", "H200"]))
    assert [(j.params["N"], j.compiler, j.gpu_kind) for j in jobs] == [
        (n, c, k) for n in (100, 200) for c in ("tilefarm", "triton") for k in ("H100", "H200")]
    assert len({j.key for j in jobs}) == 8
    # each (compiler, kind) job is keyed as a run of that kind alone plans that compiler's job
    alone = {(j.params["N"], j.compiler): j.key for j in planner.iter_jobs(cfg, "H200")}
    assert {(j.params["N"], j.compiler): j.key for j in jobs if j.gpu_kind == "H200"} == alone
    back = planner.Job.from_dict(jobs[3].to_dict())
    assert (back.compiler, back.compiler_version, back.gpu_kind) == ("triton", "9.9.9", "H200")
    with pytest.raises(config.ConfigError, match=r"up to 12 jobs \(2 params x 1 meta x 2 compilers x 3 GPU kinds\)"):
        list(planner.iter_jobs(cfg, "x", kinds=["A", "B", "C"], max_jobs=5))


def test_reports_keep_compilers_and_kinds_apart():
    from farm import report

    def row(comp, kind, ms):
        return report.derive({"workload": "w", "params": {"N": 1, "dtype": "float32"}, "meta": {}, "status": "ok",
                              "median_ms": ms, "compiler": comp, "gpu_kind": kind}, None)
    rows = [row(c, k, 1.0) for c in ("tilefarm", "triton") for k in ("H100", "H200")]
    other = [row("triton", "H100", 5.0), row("tilefarm", "H200", 7.0)]
    assert [r["vs_ms"] for r in report.attach_vs(rows, other)] == [None, 7.0, 5.0, None]
    assert {"compiler", "gpu_kind"} <= set(report.EXPORT)


def test_triton_jobs_go_to_a_worker_with_triton_while_a_node_of_the_kind_has_it():
    import collections
    from farm.executor.affinity import pick, suits
    from farm.jobs import Job
    jobs = collections.deque((Job(key=c, idx=0, workload="w", name="w", params={"N": 1}, meta={}, seed=0,
                                  compiler=c, gpu_kind="H200"), None) for c in ("triton", "tilefarm"))
    with_t, without = {"triton": "3.6.0"}, {"triton": None}
    nodes = {"h200-a": "3.6.0", "h200-b": None}  # the kind's live nodes and the Triton each has
    assert pick(jobs, None, set(), suits(without, nodes)) == 1
    assert pick(jobs, None, set(), suits(with_t, nodes)) == 0
    assert pick(jobs, None, set(), suits(without, {"h200-b": None})) == 0  # nowhere has it: any worker, not_runnable


def test_the_gate_matches_compiler_and_kind_like_with_like(store):
    from farm import gate as G
    from synthetic import add_run, sweep

    def run(slow_triton_h100=1.0):  # triton twice as fast as tilefarm, H100 1.5x slower than H200
        return [{**j, "compiler": c, "gpu_kind": k,
                 "median_ms": j["median_ms"] * (0.5 if c == "triton" else 1.0) * (1.5 if k == "H100" else 1.0)
                 * (slow_triton_h100 if (c, k) == ("triton", "H100") else 1.0)}
                for j in sweep(noise=0.1) for c in ("tilefarm", "triton") for k in ("H100", "H200")]
    a = add_run(store, run(), label="main", target="H100,H200", seed=1)
    b = add_run(store, run(), target="H100,H200", seed=2)
    res = G.compare(store, b, a)
    assert res.passed, res.summary()
    assert len(res.jobs) == 24 and all(0.7 < j.new_ms / j.base_ms < 1.4 for j in res.jobs)
    c = add_run(store, run(slow_triton_h100=1.3), target="H100,H200", seed=3)
    res = G.compare(store, c, a)
    assert not res.passed and len(res.failures) == 6 and all("[triton]" in j.name for j in res.failures)
    # a single-kind run whose jobs name their kind matches a baseline on that target whose jobs name none
    old = add_run(store, sweep(noise=0.1), target="H200", seed=4)
    new = add_run(store, [{**j, "gpu_kind": "H200"} for j in sweep(noise=0.1)], target="H200", seed=5)
    res = G.compare(store, new, old)
    assert res.passed and len(res.jobs) == 6 and not any(j.verdict in (G.NEW, G.MISSING) for j in res.jobs)
