import pytest

from farm import FarmError, config, planner
from farm.jobs import COMPILED, TIMEOUT, VALIDATED, Result

from farm_testing import FAKES


def _cfg(text):
    return config.parse_text(text.replace("FAKES", str(FAKES)))


SWEEP = """
workloads:
  - workload: FAKES::fake_vec
    params: {N: [64, 128, 256], dtype: [float32, float16]}
    meta: {BLOCK: [32, 64, 128], num_warps: [2, 4]}
    constraints: ["BLOCK <= N", "num_warps * 32 <= BLOCK * 2"]
  - workload: FAKES::fake_inplace
"""


def test_deterministic_and_ordered():
    a = planner.plan(_cfg(SWEEP), "interpreter")
    b = planner.plan(_cfg(SWEEP), "interpreter")
    assert [j.key for j in a.jobs] == [j.key for j in b.jobs]
    assert [j.idx for j in a.jobs] == list(range(len(a.jobs)))
    assert len({j.key for j in a.jobs}) == len(a.jobs)
    # params outer, meta inner, in config order
    first = a.jobs[0]
    assert first.params == {"N": 64, "dtype": "float32"} and first.meta["BLOCK"] == 32
    assert a.jobs[-1].name == "fake_inplace"


def test_constraints_skip_points():
    p = planner.plan(_cfg(SWEEP), "interpreter")
    assert all(j.meta["BLOCK"] <= j.params["N"] for j in p.jobs if j.name == "fake_vec")
    assert all(j.meta["num_warps"] * 32 <= j.meta["BLOCK"] * 2 for j in p.jobs if j.name == "fake_vec")
    assert p.skipped_by_constraint > 0
    assert len(p.jobs) + p.skipped_by_constraint == 3 * 2 * 3 * 2 + 1


def test_key_covers_target_meta_params():
    base = planner.plan(_cfg(SWEEP), "interpreter").jobs
    other = planner.plan(_cfg(SWEEP), "H200").jobs
    assert not {j.key for j in base} & {j.key for j in other}
    k = planner.job_key("s", "w", {"N": 1}, {"B": 1}, "c", "t")
    assert k != planner.job_key("s", "w", {"N": 1}, {"B": 2}, "c", "t")
    assert k != planner.job_key("s", "w", {"N": 2}, {"B": 1}, "c", "t")
    assert k != planner.job_key("s", "w", {"N": 1}, {"B": 1}, "c2", "t")
    assert k != planner.job_key("s2", "w", {"N": 1}, {"B": 1}, "c", "t")
    assert k == planner.job_key("s", "w", {"N": 1}, {"B": 1}, "c", "t")


def test_defaults_come_from_workload():
    p = planner.plan(_cfg("workloads: [{workload: FAKES::fake_vec}]"), "interpreter")
    assert len(p.jobs) == 1 and p.jobs[0].params == {"N": 1024, "dtype": "float32"}
    assert p.jobs[0].meta == {"mode": "ok", "BLOCK": 128}


@pytest.mark.parametrize("text,msg", [
    ("workloads: [{workload: no_such_workload}]", "unknown workload 'no_such_workload'"),
    ("workloads: [{workload: FAKES::nope}]", "declares no workload named 'nope'"),
    ("workloads: [{workload: FAKES}]", "pick one with"),
    ("workloads: [{workload: FAKES::fake_vec, params: {N: [1]}}]", "has no dtype"),
    ("workloads: [{workload: FAKES::fake_vec, params: {N: [1], dtype: f32}}]", "unknown dtype 'f32'"),
    ("workloads: [{workload: FAKES::fake_vec, constraints: ['BLOK > 1']}]", "workloads.0.constraints.0: unknown name"),
])
def test_domain_errors(text, msg):
    with pytest.raises(FarmError, match=msg):
        planner.plan(_cfg(text), "interpreter")


def test_store_skips_done_keys_but_retries_transient(store):
    from farm import runner
    cfg = _cfg(SWEEP)
    prep = runner.prepare(cfg, SWEEP, "x.yaml", store, {"gpus": 0})
    jobs = list(prep.jobs)
    store.add_result(prep.run_id, Result(key=jobs[0].key, status=VALIDATED))
    store.add_result(prep.run_id, Result(key=jobs[1].key, status=TIMEOUT))
    again = runner.prepare(cfg, SWEEP, "x.yaml", store, {"gpus": 0})
    assert again.n_reused == 1 and jobs[0].key not in {j.key for j in again.jobs}
    assert jobs[1].key in {j.key for j in again.jobs}
    forced = runner.prepare(cfg, SWEEP, "x.yaml", store, {"gpus": 0}, force=True)
    assert forced.n_reused == 0 and len(forced.jobs) == len(jobs)
    # a compile-only result does not stand in for a validated one: different target, different key
    cfg.compile_only = True
    co = runner.prepare(cfg, SWEEP, "x.yaml", store, {"gpus": 0})
    assert co.opts.target == "compile-only" and co.n_reused == 0
    assert COMPILED
