"""The farm as users and CI meet it (issue 17): exit codes, data-only machine output, width and progress without a
terminal, --version, paths against the config's folder, Ctrl-C, stale runs, resume after an edit, the store."""
import json
import os
import pathlib
import shutil
import signal
import sqlite3
import subprocess
import sys
import time

import pytest
from typer.testing import CliRunner

from farm.cli.main import app

from farm_testing import FAKES, REPO, child_env, fake_config

runner = CliRunner()


def invoke(*args, **kw):
    return runner.invoke(app, [str(a) for a in args], **kw)


# ---------------------------------------------------------------- exit codes


def test_exit_0_only_when_every_job_succeeded(tmp_path):
    ok = fake_config(tmp_path, modes=("ok",), ns=(64,), name="good")
    assert invoke("run", ok, "--local").exit_code == 0
    bad = fake_config(tmp_path, modes=("wrong", "raise"), ns=(64,), name="bad")
    r = invoke("run", bad, "--local")
    assert r.exit_code == 1 and "2 of 2 jobs failed" in r.output, r.output
    # a rerun that reuses the failures still says the sweep is not good
    assert invoke("run", bad, "--local").exit_code == 1


def test_exit_codes_are_documented():
    r = invoke("--help")
    assert "Exit codes: 0" in r.output and "130 interrupted" in r.output
    r = invoke("run", "--help")
    assert "Exit codes" in r.output and "1 some jobs failed" in r.output
    readme = (REPO / "README.md").read_text()
    assert "| 130 |" in readme and "--format json" in readme


def test_version():
    r = invoke("--version")
    assert r.exit_code == 0
    lines = r.stdout.splitlines()
    assert lines[0].startswith("farm 0.") and lines[1].startswith("compiler ") and "+" in lines[1]
    assert lines[2].startswith("commit ")


def test_compile_without_target_says_what_to_do():
    r = invoke("compile")
    assert r.exit_code == 2 and "farm compile vector_add" in r.output and "FILE::NAME" in r.output


# ---------------------------------------------------------------- machine output


def test_json_and_csv_print_only_data_on_stdout(tmp_path):
    cfg = fake_config(tmp_path, modes=("ok", "wrong"), ns=(64, 128))
    db = tmp_path / "farm.db"
    r = invoke("run", cfg, "--local", "--format", "json")
    assert r.exit_code == 1
    data = json.loads(r.stdout)  # nothing but the JSON document
    assert len(data["results"]) == 4 and "run 1" in r.stderr
    r = invoke("run", cfg, "--local", "--format", "csv", "--force")
    assert r.stdout.splitlines()[0].startswith("idx,workload") and len(r.stdout.splitlines()) == 5
    for args in (["report", "latest"], ["runs"], ["workloads"], ["workloads", FAKES]):
        r = invoke(*args, "--store", db, "--format", "json") if args[0] in ("report", "runs") else \
            invoke(*args, "--format", "json")
        assert r.exit_code == 0, (args, r.output)
        json.loads(r.stdout)
    runs = json.loads(invoke("runs", "--store", db, "--format", "json").stdout)
    assert [x["id"] for x in runs] == [2, 1] and runs[0]["n_failed"] == 2
    r = invoke("runs", "--store", db, "--format", "csv")
    assert r.stdout.splitlines()[0].startswith("id,created,name")
    r = invoke("gate", "2", "--baseline", "1", "--store", db, "--format", "json", "--no-remeasure")
    gate = json.loads(r.stdout)
    assert gate["run"] == 2 and gate["baseline"] == 1 and "passed" in gate


def test_report_json_pipes_into_json_tool(tmp_path):
    cfg = fake_config(tmp_path, modes=("ok", "nan"), ns=(64,))
    invoke("run", cfg, "--local")
    out = subprocess.run([sys.executable, "-m", "farm", "report", "latest", "--store", tmp_path / "farm.db",
                          "--format", "json"], capture_output=True, text=True, cwd=tmp_path, env=child_env())
    assert out.returncode == 0, out.stderr
    tool = subprocess.run([sys.executable, "-m", "json.tool", "--no-ensure-ascii"], input=out.stdout,
                          capture_output=True, text=True)
    assert tool.returncode == 0, tool.stderr
    def refuse(token):
        raise AssertionError(f"{token} is not JSON (jq refuses it)")
    json.loads(out.stdout, parse_constant=refuse)


def test_no_terminal_no_width_limit_and_progress_lines(tmp_path, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.setenv("FARM_PROGRESS_S", "0")
    long = "x" * 150
    cfg = fake_config(tmp_path, modes=("ok",), ns=(64, 128), extra=f"label: {long}")
    r = invoke("run", cfg, "--local")
    assert r.exit_code == 0, r.output
    assert "jobs 1/2, 0 failed" in r.output and "jobs 2/2, 0 failed" in r.output
    r = invoke("runs", "--store", tmp_path / "farm.db")
    assert long in r.output and "…" not in r.output  # nothing cut to 80 columns


# ---------------------------------------------------------------- paths


def test_store_and_workloads_resolve_against_the_config_folder(tmp_path):
    (tmp_path / "proj").mkdir()
    shutil.copy(FAKES, tmp_path / "proj" / "kern.py")
    (tmp_path / "proj" / "c.yaml").write_text(
        "store: out/farm.db\nworkloads: [{workload: kern.py::fake_vec, params: {N: [64], dtype: [float32]}}]\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    r = subprocess.run([sys.executable, "-m", "farm", "run", str(tmp_path / "proj" / "c.yaml"), "--local"],
                       capture_output=True, text=True, cwd=elsewhere, env=child_env())
    assert r.returncode == 0, r.stdout + r.stderr
    assert (tmp_path / "proj" / "out" / "farm.db").is_file() and not list(elsewhere.iterdir())
    assert f"workload file: {tmp_path / 'proj' / 'kern.py'}" in r.stdout


def test_workload_outside_the_config_folder_needs_the_flag(tmp_path):
    (tmp_path / "sub").mkdir()
    shutil.copy(FAKES, tmp_path / "kern.py")
    cfg = tmp_path / "sub" / "c.yaml"
    cfg.write_text(f"store: {tmp_path / 'farm.db'}\n"
                   "workloads: [{workload: ../kern.py::fake_vec, params: {N: [64], dtype: [float32]}}]\n")
    r = invoke("run", cfg, "--local")
    assert r.exit_code == 2 and "workloads.0.workload: ../kern.py leaves the config's folder" in r.output
    assert not (tmp_path / "farm.db").exists()
    assert invoke("run", cfg, "--local", "--allow-outside").exit_code == 0


# ---------------------------------------------------------------- Ctrl-C


def test_ctrl_c_during_planning_exits_130_without_unbound_local(tmp_path, monkeypatch):
    from farm import runner as farm_runner

    def interrupted(*a, **k):
        raise KeyboardInterrupt
    monkeypatch.setattr(farm_runner, "prepare", interrupted)
    r = invoke("run", fake_config(tmp_path), "--local")
    assert r.exit_code == 130 and "nothing was stored" in r.output
    assert "UnboundLocalError" not in r.output and r.exception is None or isinstance(r.exception, SystemExit)


def test_ctrl_c_while_the_plan_is_recorded_leaves_no_half_run(tmp_path, monkeypatch):
    from farm import runner as farm_runner
    monkeypatch.setattr(farm_runner, "PLAN_CHUNK", 2)
    real = farm_runner.Store.add_jobs if hasattr(farm_runner, "Store") else None
    calls = []

    def add_jobs(self, run_id, jobs, reused):
        calls.append(len(jobs))
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(self, run_id, jobs, reused)
    monkeypatch.setattr(farm_runner.Store, "add_jobs", add_jobs)
    cfg = fake_config(tmp_path, ns=(64, 128, 256, 512))
    r = invoke("run", cfg, "--local")
    assert r.exit_code == 130 and "nothing was stored" in r.output, r.output
    db = sqlite3.connect(tmp_path / "farm.db")
    assert db.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 0
    assert db.execute("SELECT COUNT(*) FROM run_jobs").fetchone()[0] == 0


def test_ctrl_c_while_running_keeps_results_and_prints_resume(tmp_path):
    """A real SIGINT to a real `farm run` (in this process's executor: --local), partway through. The child gets
    SIGINT's default disposition: a test run started in the background of a shell (`cmd &`) inherits SIGINT
    ignored, and a Python started so keeps ignoring it, as it should (that run of the suite failed here)."""
    cfg = fake_config(tmp_path, modes=("ok",), ns=tuple(range(64, 64 + 40)), sleep=0.2)
    p = subprocess.Popen([sys.executable, "-m", "farm", "run", str(cfg), "--local"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, cwd=tmp_path, env=child_env(FARM_PROGRESS_S="0"),
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    db = tmp_path / "farm.db"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        time.sleep(0.2)
        if db.exists():
            try:
                if sqlite3.connect(db).execute("SELECT COUNT(*) FROM results").fetchone()[0] >= 3:
                    break
            except sqlite3.Error:
                pass
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130, out + err
    assert "farm run --resume 1" in err and "Traceback" not in err
    st = sqlite3.connect(db)
    assert st.execute("SELECT status FROM runs").fetchone()[0] == "interrupted"
    n = st.execute("SELECT COUNT(*) FROM results").fetchone()[0]
    assert 3 <= n < 40
    r = invoke("run", "--resume", "1", "--store", db, "--local")
    assert r.exit_code == 0, r.output
    assert st.execute("SELECT COUNT(*), COUNT(DISTINCT key) FROM results").fetchone() == (40, 40)


def test_sigkilled_run_is_shown_interrupted_with_the_resume_hint(tmp_path):
    cfg = fake_config(tmp_path, modes=("ok",), ns=tuple(range(64, 64 + 40)), sleep=0.5)
    p = subprocess.Popen([sys.executable, "-m", "farm", "run", str(cfg), "--local"], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, cwd=tmp_path, env=child_env())
    db = tmp_path / "farm.db"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        time.sleep(0.2)
        try:
            if db.exists() and sqlite3.connect(db).execute("SELECT COUNT(*) FROM results").fetchone()[0] >= 1:
                break
        except sqlite3.Error:
            pass
    p.kill()
    p.wait()
    assert sqlite3.connect(db).execute("SELECT status FROM runs").fetchone()[0] == "running"
    r = invoke("runs", "--store", db)
    assert "run 1 was left running by a process that no longer exists" in r.output
    assert "farm run --resume 1" in r.output and "interrupted" in r.output
    assert sqlite3.connect(db).execute("SELECT status FROM runs").fetchone()[0] == "interrupted"


# ---------------------------------------------------------------- resume after an edit


def test_resume_after_the_kernel_changed_replans_the_changed_keys(tmp_path):
    from farm import runner as farm_runner
    from farm import config, loader
    from farm.executor.local import LocalExecutor
    from farm.store import Store
    kern = tmp_path / "kern.py"
    shutil.copy(FAKES, kern)
    cfg_path = tmp_path / "c.yaml"
    cfg_path.write_text("workloads: [{workload: kern.py::fake_vec, params: {N: [64, 128, 256], dtype: [float32]}}]\n")
    cfg, text = config.load(cfg_path)
    st = Store(tmp_path / "farm.db")
    prep = farm_runner.prepare(cfg, text, str(cfg_path), st, {"gpus": 0})
    old_keys = [j.key for j in prep.jobs]
    prep.jobs = list(prep.jobs)[:1]
    farm_runner.execute(st, prep, LocalExecutor())
    kern.write_text(kern.read_text() + "\n# edited: a different kernel now\n")
    loader.load_workload.cache_clear()
    import workloads
    workloads._FILES.clear()
    again = farm_runner.resume(st, str(prep.run_id))
    new_keys = [j.key for j in again.jobs]
    assert again.rekeyed == 2 and len(again.jobs) == 2 == len(new_keys)
    assert not set(new_keys) & set(old_keys)
    farm_runner.execute(st, again, LocalExecutor())
    # the new source's results are under new keys; the old keys hold only what the old source produced
    assert st.done_keys(old_keys) == {old_keys[0]: prep.run_id}
    assert len(st.done_keys(new_keys)) == 2


# ---------------------------------------------------------------- the store


def test_store_migrations_set_user_version_and_upgrade_old_stores(tmp_path):
    from farm.store import MIGRATIONS, Store
    path = tmp_path / "old.db"
    db = sqlite3.connect(path)  # a store as the first release wrote it: no version, no samples/launch/pid
    db.executescript("CREATE TABLE runs (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT, label TEXT, created REAL,"
                     " finished REAL, status TEXT, target TEXT, config_text TEXT, config_path TEXT, options TEXT,"
                     " git_commit TEXT, host TEXT, gpus TEXT, compiler_version TEXT, farm_version TEXT,"
                     " n_jobs INTEGER, n_reused INTEGER);"
                     "INSERT INTO runs (name, status) VALUES ('old', 'done');")
    db.close()
    st = Store(path)
    assert st.sql("PRAGMA user_version") == [(len(MIGRATIONS),)]
    cols = {r[1] for r in st.sql("PRAGMA table_info(runs)")}
    assert "pid" in cols and st.sql("SELECT name FROM runs") == [("old",)]
    assert "regs" in {r[1] for r in st.sql("PRAGMA table_info(results)")}  # the tables it lacked, created whole
    st.sql(f"PRAGMA user_version={len(MIGRATIONS) + 1}")
    st.close()
    r = invoke("runs", "--store", path)
    assert r.exit_code == 2 and "newer farm" in r.output


@pytest.mark.slow
def test_ray_listens_on_loopback_only_and_removes_its_session(tmp_path):
    """`farm cluster` in a fresh process: a local Ray started and stopped by the farm. Its listening sockets are read
    from /proc (the GPU node has no `ss`)."""
    probe = tmp_path / "probe.py"
    probe.write_text("""
import json, subprocess, sys, pathlib
from farm.executor.ray import RayExecutor
ex = RayExecutor(num_cpus=1)
import ray
gcs = ray.get_runtime_context().gcs_address
session = ex._session_dir
node = ray._private.worker._global_node
pids = [p.process.pid for procs in node.all_processes.values() for p in procs]
def listening(pids):  # (pid, local address) of every listening TCP socket of these processes, from /proc
    inodes = {}
    for pid in pids:
        try:
            for fd in pathlib.Path(f"/proc/{pid}/fd").iterdir():
                link = str(fd.readlink()) if fd.is_symlink() else ""
                if link.startswith("socket:["):
                    inodes[link[8:-1]] = pid
        except OSError:
            pass
    out = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for row in pathlib.Path(table).read_text().splitlines()[1:]:
            f = row.split()
            if f[3] == "0A" and f[9] in inodes:  # state LISTEN
                out.append((inodes[f[9]], f[1].split(":")[0]))
    return out
ss = listening(pids)
ex.close()
print(json.dumps({"gcs": gcs, "session": session, "exists": pathlib.Path(session).exists(), "ss": ss, "pids": pids}))
""")
    r = subprocess.run([sys.executable, str(probe)], capture_output=True, text=True, timeout=300,
                       env=child_env())
    assert r.returncode == 0, r.stderr[-2000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got["gcs"].startswith("127.0.0.1:") and not got["exists"]
    # this Ray's own servers (the machine may run other Rays)
    # 127.0.0.1, ::1 and ::ffff:127.0.0.1 as /proc/net/tcp{,6} spell them
    loopback = {"0100007F", "00000000000000000000000001000000", "0000000000000000FFFF00000100007F"}
    ours = got["ss"]
    assert ours and all(addr in loopback for _, addr in ours), ours


def test_joining_a_cluster_without_auth_is_refused(monkeypatch):
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    r = invoke("cluster", "--address", "127.0.0.1:1")
    assert r.exit_code == 2 and "without authentication" in r.output and "--insecure-cluster" in r.output


def test_job_to_dict_is_every_field():
    import dataclasses
    from farm.jobs import Job
    job = Job(key="k" * 64, idx=3, workload="w.py::x", name="x", params={"N": 1, "dtype": "float32"},
              meta={"BLOCK": 2}, seed=5, data_bytes=7)
    assert job.to_dict() == dataclasses.asdict(job) and Job.from_dict(job.to_dict()) == job


@pytest.mark.slow
def test_a_large_plan_streams_in_bounded_memory(tmp_path, monkeypatch):
    """Recording a plan 10x larger must not take 10x the memory: jobs go to the store in chunks and are read back
    page by page (before: every Job of the plan, twice, in lists: ~900 MB for a million)."""
    import tracemalloc

    from farm import config, planner
    from farm import runner as farm_runner
    from farm.store import Pending, Store
    monkeypatch.setattr(farm_runner, "PLAN_CHUNK", 100)  # the sizes scaled down with the plans
    monkeypatch.setattr(Pending, "PAGE", 50)

    def peak(n):
        text = (f"workloads: [{{workload: '{FAKES}::fake_vec', params: {{N: {list(range(1, n // 4 + 1))}, "
                "dtype: [float32]}, meta: {BLOCK: [1, 2, 3, 4]}}]\n")
        cfg = config.parse_text(text)
        st = Store(tmp_path / f"{n}.db")
        tracemalloc.start()
        prep = farm_runner.prepare(cfg, text, "c.yaml", st, {"gpus": 0}, max_jobs=n)
        count = sum(1 for _ in prep.jobs)
        got = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        st.close()
        assert count == n == prep.n_planned
        return got

    small, large = peak(600), peak(6000)
    # what grows with the plan is two sets of 16-byte digests (points, keys): ~160 bytes a job; a plan held in
    # lists of Job objects grows by over 1 KB a job
    assert (large - small) / 5400 < 400, (small, large)


def test_a_reused_pid_is_not_taken_for_the_runs_driver(tmp_path):
    """A run whose pid now belongs to a process started after the run (pid reuse) is stale too."""
    from farm.store import Store, _alive
    st = Store(tmp_path / "farm.db")
    rid = st.create_run(name="x", label=None, config_text="", config_path="", options={}, target="interpreter",
                        gpus=[], compiler_version="c", farm_version="f")
    assert st.stale_runs() == []  # this process is alive and older than the run
    st.sql("UPDATE runs SET created=created-100000, pid=:pid WHERE id=:rid", pid=os.getpid(), rid=rid)
    assert _alive(os.getpid()) and not _alive(os.getpid(), since=time.time() - 100000)
    assert st.stale_runs() == [rid] and st.run(rid)["status"] == "interrupted"
