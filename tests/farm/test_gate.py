"""`farm gate` on synthetic runs: noise passes, real slowdowns and broken kernels fail, suspects get re-measured."""
import json
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from typer.testing import CliRunner

from farm import gate as G
from farm.cli.main import app
from farm.config import GateConfig, load_gate
from farm.store import Store

from synthetic import add_run, samples, sweep

runner = CliRunner()


def fake_remeasure(slow: dict | None = None, noise=0.2, n=300):
    """A/B on 'the same GPU': both sides from the same distribution, unless `slow` gives a true factor by workload."""
    calls = []

    def remeasure(base_row, new_row):
        calls.append((base_row["workload"], new_row["workload"]))
        rng = np.random.default_rng(len(calls))
        true = base_row["median_ms"]
        f = (slow or {}).get(new_row["workload"], 1.0)
        return samples(true, noise, n, rng), samples(true * f, noise, n, rng)
    remeasure.calls = calls
    return remeasure


@pytest.mark.parametrize("noise", [0.1, 0.2, 0.3])
def test_no_change_with_noise_passes(store, noise):
    a = add_run(store, sweep(noise=noise), label="main", seed=1)
    b = add_run(store, sweep(noise=noise), seed=2)
    res = G.compare(store, b, a, remeasure=fake_remeasure())
    assert res.passed, res.summary()
    assert all(j.verdict in (G.SAME, G.NOISE) for j in res.jobs)


def test_slowdown_of_15_percent_fails(store):
    a = add_run(store, sweep(noise=0.3), seed=1)
    jobs = sweep(noise=0.3)
    jobs[4]["slow"] = 1.15  # softmax N=4096
    b = add_run(store, jobs, seed=2)
    rem = fake_remeasure(slow={"softmax": 1.15})
    res = G.compare(store, b, a, remeasure=rem)
    assert not res.passed
    [bad] = res.failures
    assert (bad.workload, bad.shape, bad.verdict) == ("softmax", "N=65536", G.SLOWER)
    assert 1.05 < bad.ab_ratio < 1.3 and "confirmed" in " ".join(bad.notes)
    # without a way to re-measure, the suspect fails as it stands
    res = G.compare(store, b, a)
    assert [j.shape for j in res.failures] == ["N=65536"] and "not re-measured" in res.failures[0].notes[0]


def test_improvement_passes(store):
    a = add_run(store, sweep(noise=0.2), seed=1)
    b = add_run(store, sweep(noise=0.2, slow=0.7), seed=2)
    res = G.compare(store, b, a)
    assert res.passed and res.counts() == {G.FASTER: 6}


def test_correctness_failure_fails(store):
    a = add_run(store, sweep(), seed=1)
    jobs = sweep()
    jobs[0]["status"] = "mismatch"
    b = add_run(store, jobs, seed=2)
    res = G.compare(store, b, a, remeasure=fake_remeasure())
    [bad] = res.failures
    assert bad.verdict == G.BROKEN and "ok in the baseline, mismatch now" in bad.notes[0]
    # the other way round is a fix, not a failure
    assert G.compare(store, a, b).passed


def test_noisy_unchanged_suspect_is_remeasured_and_passes(store):
    a = add_run(store, sweep(noise=0.15), seed=1)
    # the whole run landed on a slow machine state: +12% everywhere, though no kernel changed
    b = add_run(store, sweep(noise=0.15, drift=0.12), seed=2)
    assert not G.compare(store, b, a).passed  # the samples alone cannot tell drift from a regression
    rem = fake_remeasure()
    res = G.compare(store, b, a, remeasure=rem)
    assert res.passed, res.summary()
    assert rem.calls and res.remeasured == len(rem.calls)
    assert {j.verdict for j in res.jobs} <= {G.NOISE, G.SAME} and G.NOISE in res.counts()


def test_compile_time_and_launch_cost(store):
    a = add_run(store, sweep(compile_s=0.4, launch_us=8.0), seed=1)
    jobs = sweep(compile_s=0.4, launch_us=8.0)
    jobs[1]["compile_s"] = 1.2   # 3x slower compile
    jobs[2]["launch_us"] = 12.0  # +50% host launch cost
    jobs[3]["compile_s"] = 0.01  # a disk-cache hit: not compared
    b = add_run(store, jobs, seed=2)
    res = G.compare(store, b, a, remeasure=fake_remeasure())
    assert sorted((j.shape, j.verdict) for j in res.failures) == [("N=1048576", G.LAUNCH_SLOWER),
                                                                   ("N=65536", G.COMPILE_SLOWER)]


def test_per_workload_threshold_and_old_store(store, tmp_path):
    a = add_run(store, sweep(noise=0.1, with_samples=False), seed=1)
    jobs = sweep(noise=0.1, with_samples=False)
    for j in jobs:
        j["slow"] = 1.5
    b = add_run(store, jobs, seed=2)
    cfg_file = tmp_path / "gates.yaml"
    cfg_file.write_text("threshold: 5%\nworkloads:\n  softmax: {threshold: 60%}\n")
    cfg = load_gate(cfg_file)
    res = G.compare(store, b, a, cfg)
    assert {j.workload for j in res.failures} == {"vector_add"}
    assert all(j.method == "p10/p90" for j in res.jobs)


def test_missing_new_and_gpu_kind(store):
    a = add_run(store, sweep(), seed=1, label="main")
    b = add_run(store, sweep()[:4] + [{"workload": "layernorm", "params": {"N": 1, "dtype": "float32"},
                                       "meta": {}, "median_ms": 0.01}], seed=2)
    res = G.compare(store, b, a)
    assert res.passed and res.counts()[G.MISSING] == 2 and res.counts()[G.NEW] == 1
    c = add_run(store, sweep(), seed=3, target="A100", label="main")
    with pytest.raises(G.GateInputError, match="same GPU kind"):
        G.compare(store, c, a)
    assert G.resolve_baseline(store, b, "main") == a  # the latest main on the same GPU kind (not run c)
    assert G.resolve_baseline(store, b, "latest") == a


def test_false_alarm_rate_is_low(tmp_path):
    """30 identical runs with 20% noise and run-level drift up to +-10%: no false alarm after A/B. (Statistics,
    not storage: on SQLite only; the other gate tests run on both back ends.)"""
    store = Store(tmp_path / "farm.db")
    rng = np.random.default_rng(0)
    a = add_run(store, sweep(noise=0.2), seed=100)
    fails = 0
    for i in range(30):
        b = add_run(store, sweep(noise=0.2, drift=float(rng.uniform(-0.1, 0.1))), seed=200 + i)
        fails += not G.compare(store, b, a, remeasure=fake_remeasure()).passed
    assert fails == 0


def test_cli_outputs(tmp_path):
    db = tmp_path / "farm.db"
    st = Store(db)
    add_run(st, sweep(), seed=1, label="main")
    jobs = sweep()
    jobs[0]["slow"] = 1.4
    jobs[0]["workload"] = jobs[0]["workload"]
    add_run(st, jobs, seed=2, label="pr")
    add_run(st, sweep(), seed=3, label="pr2")
    st.close()
    md, xml = tmp_path / "gate.md", tmp_path / "gate.xml"
    r = runner.invoke(app, ["gate", "pr", "--baseline", "main", "--store", str(db), "--markdown", str(md),
                            "--junit", str(xml), "--no-remeasure"])
    assert r.exit_code == 1, r.output
    assert "FAIL" in r.output and "slower" in r.output
    text = md.read_text()
    assert "| workload |" in text and "**slower**" in text and "vector_add" in text
    root = ET.parse(xml).getroot()
    suite = root.find("testsuite")
    assert suite.get("tests") == "6" and suite.get("failures") == "1"
    assert len(root.findall(".//failure")) == 1
    r = runner.invoke(app, ["gate", "pr2", "--baseline", "main", "--store", str(db), "--threshold", "5%"])
    assert r.exit_code == 0, r.output
    assert "PASS" in r.output
    r = runner.invoke(app, ["gate", "pr2", "--baseline", "nightly", "--store", str(db)])
    assert r.exit_code == 2 and "no run labelled 'nightly'" in r.output
    r = runner.invoke(app, ["gate", "pr2", "--baseline", "main", "--store", str(db), "--threshold", "lots"])
    assert r.exit_code == 2 and "--threshold" in r.output


def test_user_text_is_escaped_in_markdown(store):
    evil = "<script>alert(1)</script>|x"
    a = add_run(store, [{"workload": evil, "params": {"N": 1, "dtype": "float32"}, "meta": {}, "median_ms": 1}],
                seed=1)
    b = add_run(store, [{"workload": evil, "params": {"N": 1, "dtype": "float32"}, "meta": {}, "median_ms": 1,
                         "status": "mismatch"}], seed=2)
    res = G.compare(store, b, a)
    md = G.to_markdown(res)
    assert "<script>" not in md and "&lt;script&gt;" in md and "\\|x" in md
    ET.fromstring(G.to_junit(res).split("?>", 1)[1])  # still well-formed XML


def test_store_samples_roundtrip_and_old_store(tmp_path):
    import sqlite3
    db = tmp_path / "old.db"
    con = sqlite3.connect(db)  # a store made before the samples/launch columns
    con.executescript("""CREATE TABLE results (id INTEGER PRIMARY KEY AUTOINCREMENT, run_id INTEGER NOT NULL,
        key TEXT NOT NULL, status TEXT NOT NULL, median_ms REAL, p10_ms REAL, p90_ms REAL, n_reps INTEGER,
        baseline_ms REAL, flops REAL, bytes REAL, max_abs_err REAL, max_rel_err REAL, compile_s REAL,
        validate_s REAL, bench_s REAL, wall_s REAL, gpu TEXT, worker TEXT, error TEXT, detail TEXT, notes TEXT,
        artifacts TEXT, created REAL, UNIQUE (run_id, key));""")
    con.close()
    st = Store(db)
    rid = add_run(st, sweep()[:1], seed=1)
    [row] = st.rows(rid, samples=True)
    assert len(row["samples"]) == 300 and row["job"]["workload"] == "vector_add" and row["result_id"]
    assert "samples" not in st.rows(rid)[0]


def test_worker_thins_samples():
    from farm.timing import thin
    s = list(np.linspace(1, 2, 10_000))
    t = thin(s, 2000)
    assert len(t) == 2000 and t[0] == 1 and t[-1] == 2
    assert thin([]) is None


def test_ab_remeasure_plumbing(store, fakes, tmp_path, monkeypatch):
    """The real A/B path without a GPU: two sides from this checkout, timed by the A/B server on the CPU."""
    from farm import config, planner, runner as farm_runner
    from farm.executor.local import LocalExecutor
    text = (f"name: ab\nworkloads:\n  - workload: {fakes}::fake_vec\n    params: {{N: [64], dtype: [float32]}}\n"
            f"    meta: {{mode: [ok]}}\n")
    cfg = config.parse_text(text)
    ids = []
    for _ in range(2):
        prep = farm_runner.prepare(cfg, text, "ab.yaml", store, {"cpus": 1, "gpus": 0}, force=True)
        farm_runner.execute(store, prep, LocalExecutor())
        ids.append(prep.run_id)
    rows = [store.rows(i, samples=True)[0] for i in ids]
    ab = G.ABRemeasure(store, GateConfig(ab_rounds=2, ab_rep_ms=5), workdir=str(tmp_path / "ab"))
    try:
        got = ab(rows[0], rows[1])
        launch = ab.launch(rows[0], rows[1])
    finally:
        ab.close()
    assert got is not None and len(got[0]) >= 6 and len(got[1]) >= 6 and min(got[0]) > 0
    assert launch is not None and len(launch[0]) == len(launch[1]) == 2 and min(launch[0] + launch[1]) > 0


def test_regression_hidden_by_a_faster_run_is_still_caught(store):
    a = add_run(store, sweep(noise=0.2), seed=1)
    jobs = sweep(noise=0.2, drift=-0.1)  # the machine was 10% faster this time ...
    jobs[4]["slow"] = 1.15               # ... which hides most of a real 15% slowdown
    b = add_run(store, jobs, seed=2)
    res = G.compare(store, b, a, remeasure=fake_remeasure(slow={"softmax": 1.15}))
    assert [(j.workload, j.shape) for j in res.failures] == [("softmax", "N=65536")]
    assert res.shift < 0.95


def _with_launch_ab(rem, factor_by_shape: dict):
    """Give a fake remeasure an A/B launch-cost measurement: the true host cost is the baseline's, times the
    factor for the shapes given (others unchanged), with 3% noise."""
    calls = []

    def launch(base_row, new_row):
        calls.append(new_row["shape"] if "shape" in new_row else new_row["params"])
        rng = np.random.default_rng(len(calls))
        true = base_row["launch"]["median_us"]
        f = factor_by_shape.get(json.dumps(new_row["params"], sort_keys=True), 1.0)
        return list(true * (1 + 0.03 * rng.standard_normal(8))), list(true * f * (1 + 0.03 * rng.standard_normal(8)))
    rem.launch = launch
    rem.launch_calls = calls
    return rem


def test_launch_cost_suspect_from_host_noise_passes_after_ab(store):
    """One run's launch cost measured high (the host was busy then): the A/B re-measurement of the launch cost
    on this machine shows no change, so the gate passes and says why."""
    a = add_run(store, sweep(launch_us=6.5), seed=1)
    jobs = sweep(launch_us=6.5)
    jobs[2]["launch_us"] = 9.5  # +46% in the stored run, but only noise
    b = add_run(store, jobs, seed=2)
    rem = _with_launch_ab(fake_remeasure(), {})
    res = G.compare(store, b, a, remeasure=rem)
    assert res.passed, res.summary()
    assert len(rem.launch_calls) == 1
    noted = [n for j in res.jobs for n in j.notes if "host noise" in n]
    assert len(noted) == 1 and "A/B re-measurement" in noted[0]


def test_launch_cost_regression_confirmed_by_ab_fails(store):
    a = add_run(store, sweep(launch_us=6.5), seed=1)
    jobs = sweep(launch_us=6.5)
    jobs[2]["launch_us"] = 9.5
    b = add_run(store, jobs, seed=2)
    key = json.dumps(store.rows(b)[2]["params"], sort_keys=True)
    res = G.compare(store, b, a, remeasure=_with_launch_ab(fake_remeasure(), {key: 1.45}))
    assert [j.verdict for j in res.failures] == [G.LAUNCH_SLOWER]
    assert "confirmed by A/B re-measurement" in res.failures[0].notes[-1]


def test_regression_names_the_spills_registers_and_shared_memory_that_changed(store, store_target):
    prov = {"regs": 40, "spill_stores": 0, "spill_loads": 0, "shared_bytes": 4096, "local_bytes": 0,
            "blocks_per_sm": 12, "ptxas_version": "13.5.37"}
    a = add_run(store, sweep(noise=0.1, provenance=prov), seed=1, label="main")
    jobs = sweep(noise=0.1, provenance=prov)
    jobs[4]["slow"] = 1.3
    jobs[4]["provenance"] = {**prov, "regs": 32, "spill_stores": 96, "spill_loads": 64, "shared_bytes": 8192,
                             "local_bytes": 96, "blocks_per_sm": 16}
    jobs[1]["provenance"] = {**prov, "regs": 48}  # changed but not slower: not a failure, nothing said
    b = add_run(store, jobs, seed=2)
    res = G.compare(store, b, a)
    [bad] = res.failures
    assert bad.resource_changes[0] == "spills 0/0 -> 96/64 B stored/loaded per thread"
    assert "registers per thread 40 -> 32" in bad.resource_changes
    assert "shared memory 4.0 KiB -> 8.0 KiB" in bad.resource_changes
    assert any(n.startswith("the kernel changed: spills 0/0 -> 96/64") for n in bad.notes)
    assert all(not j.resource_changes for j in res.jobs if not j.failed)
    # through the CLI, in JSON and in the table
    r = runner.invoke(app, ["gate", str(b), "--baseline", "main", "--store", store_target, "--format", "json",
                            "--no-remeasure"])
    assert r.exit_code == 1, r.output
    [row] = [j for j in json.loads(r.stdout)["jobs"] if j["failed"]]
    assert row["resource_changes"][0].startswith("spills 0/0 -> 96/64")
    r = runner.invoke(app, ["gate", str(b), "--baseline", "main", "--store", store_target, "--no-remeasure"])
    assert "the kernel changed: spills 0/0 -> 96/64" in " ".join(r.output.split())
