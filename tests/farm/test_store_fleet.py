"""One history for a fleet: several `farm run` processes writing to one store at once (SQLite and a real
PostgreSQL server), `farm store migrate`, and the commands reading a PostgreSQL store."""
import json
import os
import subprocess
import sys

import pytest

from farm_testing import REPO, fake_config
from farm.jobs import VALIDATED, Job, Result


def _farm(*args, **kw):
    env = {**os.environ, "PYTHONPATH": str(REPO), "FARM_FORCE_NO_GPU": "1"}
    return subprocess.Popen([sys.executable, "-m", "farm", *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, **kw)


def test_four_concurrent_farm_runs_lose_and_duplicate_nothing(tmp_path, store_target):
    """Four driver processes (each its own sweep of 6 jobs, plus 2 jobs all four plan) on one store at once."""
    n_jobs = 8
    from farm.store import Store
    procs = []
    for i in range(4):
        d = tmp_path / f"node{i}"
        d.mkdir()
        cfg = fake_config(d, ns=(*range(1000 + 10 * i, 1006 + 10 * i), 64, 128), modes=("ok",),
                          dtypes=("float32",), sleep=0.15, name=f"node{i}")
        procs.append(_farm("run", cfg, "--local", "--store", store_target, "--format", "json"))
    outs = [p.communicate(timeout=240) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err[-3000:]
    st = Store(store_target, write=False)
    ids = st.all_run_ids()
    assert len(ids) == 4 == len(set(ids))
    own = 0
    for rid in ids:
        info, rows = st.run(rid), st.rows(rid)
        assert info["status"] == "done" and info["n_jobs"] == n_jobs == len(rows)
        assert all(r["status"] == VALIDATED for r in rows), [r["status"] for r in rows]
        own += info["n_done"]
        assert info["n_done"] + info["n_reused"] == n_jobs  # every job either ran in this run or reused another's
    [(n, distinct)] = st.sql("SELECT COUNT(*), COUNT(DISTINCT run_id || ':' || key) FROM results")
    assert n == distinct == own
    # the 24 jobs only one run planned ran exactly once; the 2 shared ones ran at least once, at most 4 times
    [(keys,)] = st.sql("SELECT COUNT(DISTINCT key) FROM results")
    assert keys == 24 + 2 and 26 <= n <= 24 + 2 * 4
    spans = sorted((st.run(rid)["created"], st.run(rid)["finished"]) for rid in ids)
    assert any(b[0] < a[1] for a, b in zip(spans, spans[1:])), spans  # the writers did overlap
    st.close()
    # every reader works on the shared history, in this process (CliRunner) against the same store
    from typer.testing import CliRunner
    from farm.cli.main import app
    cli = CliRunner()
    r = cli.invoke(app, ["runs", "--store", store_target, "--format", "json"])
    assert r.exit_code == 0 and sorted(x["id"] for x in json.loads(r.stdout)) == sorted(ids), r.output
    r = cli.invoke(app, ["report", str(ids[0]), "--store", store_target, "--format", "json"])
    assert r.exit_code == 0 and len(json.loads(r.stdout)["results"]) == n_jobs, r.output
    r = cli.invoke(app, ["dashboard", "--out", str(tmp_path / "site"), "--store", store_target])
    assert r.exit_code == 0 and "wrote" in r.output and (tmp_path / "site" / "index.html").is_file(), r.output
    r = cli.invoke(app, ["gate", str(ids[1]), "--baseline", str(ids[0]), "--store", store_target, "--format", "json",
                         "--no-remeasure"])
    assert r.exit_code in (0, 1) and json.loads(r.stdout)["baseline"] == ids[0], r.output
    [(rid_res,)] = Store(store_target, write=False).sql("SELECT MIN(id) FROM results")
    r = cli.invoke(app, ["repro", str(rid_res), "--out", str(tmp_path / "repro"), "--store", store_target])
    assert r.exit_code == 0 and (tmp_path / "repro" / "job.yaml").is_file(), r.output


def _fill(st, n_runs=2, n=3):
    ids = []
    for k in range(n_runs):
        rid = st.create_run(name=f"r{k}", label="main", config_text="", config_path="", options={},
                            target="interpreter", gpus=[], compiler_version="c", farm_version="f")
        jobs = [Job(key=f"{k}-{i:060x}", idx=i, workload="w", name="w", params={"N": i}, meta={}) for i in range(n)]
        st.add_jobs(rid, jobs, {})
        for j in jobs:
            st.add_result(rid, Result(key=j.key, status=VALIDATED, median_ms=0.1 * (j.idx + 1),
                                      provenance={"regs": 32, "spill_stores": 0, "ptxas_version": "13.0"}))
        st.finish_run(rid, "done")
        ids.append(rid)
    return ids


@pytest.fixture
def pg_url():
    import pg
    if pg.server() is None:
        pytest.skip(f"PostgreSQL store tests: {pg.why()}")
    return pg.new_database()


def test_store_migrate_sqlite_into_postgresql(tmp_path, pg_url):
    from farm.store import Store
    from farm.tuning_db import TuningDB, make_record
    src = tmp_path / "farm.db"
    s = Store(src)
    ids = _fill(s)
    before = {rid: s.rows(rid, samples=True) for rid in ids}
    s.close()
    with TuningDB(src) as t:
        t.add([make_record(kernel="k", key="[1]", config={"BLOCK": 64}, gpu="H200", compiler_version="c",
                           median_ms=0.5)])
    p = _farm("store", "migrate", src, pg_url, "--format", "json")
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    got = json.loads(out)
    assert got["runs"] == 2 and got["results"] == 6 and got["run_jobs"] == 6 and got["tuning"] == 1
    d = Store(pg_url, write=False)
    assert d.all_run_ids() == ids  # an empty destination keeps every id
    for rid in ids:
        assert [{k: v for k, v in r.items()} for r in d.rows(rid, samples=True)] == before[rid]
    d.close()
    with TuningDB(pg_url) as t:
        assert [r["median_ms"] for r in t.records()] == [0.5]
    # `farm tune` reads the server's tuning table; the compiler gets it through the export
    p = _farm("tune", "--export", tmp_path / "tuning.json", "--store", pg_url)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    from compiler.autotune import TuningDatabase
    assert TuningDatabase(str(tmp_path / "tuning.json")).kind == "json"
    assert [r["config"] for r in json.loads((tmp_path / "tuning.json").read_text())["records"]] == ['{"BLOCK":64}']
    # a destination with runs: refused, nothing written
    p = _farm("store", "migrate", src, pg_url)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 2 and "already has 2 run(s); nothing was copied" in err and "--append" in err
    # --append: runs migrated before are skipped; a new one gets a new id; the sequence continues after the copy
    s = Store(src)
    [new] = _fill(s, n_runs=1)
    s.close()
    p = _farm("store", "migrate", src, pg_url, "--append", "--format", "json")
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    got = json.loads(out)
    assert got["runs"] == 1 and got["skipped"] == 2 and got["results"] == 3
    d = Store(pg_url)
    assert len(d.all_run_ids()) == 3 and d.all_run_ids()[-1] > max(ids)
    again = d.create_run(name="x", label=None, config_text="", config_path="", options={}, target="t", gpus=[],
                         compiler_version="c", farm_version="f")
    assert again > d.all_run_ids()[-2]
    d.close()


def test_postgresql_store_errors_are_clear(tmp_path, pg_url):
    import pg
    from farm import FarmError
    from farm.store import Store
    with pytest.raises(FarmError, match="no results store in"):
        Store(pg_url, write=False)  # an empty database is not a store to read
    bad = pg_url.replace("host=", "host=/nonexistent-")
    with pytest.raises(FarmError, match="cannot reach the results store postgresql://"):
        Store(bad)
    with pytest.raises(FarmError, match="a SQLite file or a postgresql:// URL"):
        Store("mysql://u@h/db")
    st = Store(pg_url)
    st.sql("UPDATE farm_schema SET version=99")
    st.close()
    with pytest.raises(FarmError, match="newer farm"):
        Store(pg_url)
    assert pg.server() is not None


def test_a_dropped_postgresql_connection_loses_no_result(pg_url):
    """The server ends the store's connections mid-run (a restart, a failover, an idle timeout): the next result
    goes through a new connection, and nothing is stored twice."""
    from farm.store import Store
    st = Store(pg_url)
    [rid] = _fill(st, n_runs=1, n=2)
    other = Store(pg_url)
    ended = other.sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'tilefarm' "
                      "AND pid <> pg_backend_pid()")
    assert len(ended) >= 2 and all(ok for (ok,) in ended)  # the results connection and the store's pool
    other.close()
    assert st.add_result(rid, Result(key="after-the-drop", status=VALIDATED))
    assert not st.add_result(rid, Result(key="after-the-drop", status=VALIDATED))
    assert st.sql("SELECT COUNT(*) FROM results WHERE run_id=:r", r=rid) == [(3,)]
    st.close()


def test_a_postgresql_user_who_may_only_read(pg_url):
    """A user with SELECT only: `farm run` refuses before any job (naming the tables), readers work, and a stale
    run it cannot mark is left to a writer instead of failing the read."""
    import sqlalchemy as sa
    from farm import FarmError
    from farm.store import Store
    st = Store(pg_url)
    [rid] = _fill(st, n_runs=1, n=2)
    st.update_run(rid, status="running", pid=2 ** 22 + 1)  # a driver that no longer exists
    db = sa.make_url(pg_url).database
    st.sql("CREATE ROLE farm_reader LOGIN")
    st.sql(f"GRANT CONNECT ON DATABASE {db} TO farm_reader")
    st.sql("GRANT SELECT ON ALL TABLES IN SCHEMA public TO farm_reader")
    st.close()
    ro = pg_url.replace("postgres:@", "farm_reader:@").replace("postgresql://postgres@", "postgresql://farm_reader@")
    assert "farm_reader" in ro
    with pytest.raises(FarmError, match="cannot write the results store .* may not insert into or update runs"):
        Store(ro)
    reader = Store(ro, write=False)
    assert reader.stale_runs() == [] and reader.run(rid)["status"] == "running" and len(reader.rows(rid)) == 2
    reader.close()
    assert Store(pg_url).stale_runs() == [rid]  # a writer marks it


def test_a_store_url_in_a_config_is_not_taken_for_a_path(tmp_path):
    from farm import config
    p = fake_config(tmp_path)
    p.write_text(p.read_text().replace(f"store: {tmp_path / 'farm.db'}", "store: postgresql://farm@db.internal/farm"))
    cfg, _ = config.load(p)
    assert cfg.store == "postgresql://farm@db.internal/farm"
    from farm.db import display
    assert display("postgresql://farm:secret@db.internal/farm") == "postgresql://farm:***@db.internal/farm"


def _new_run(st, name="x"):
    return st.create_run(name=name, label=None, config_text="", config_path="", options={}, target="interpreter",
                         gpus=[], compiler_version="c", farm_version="f")


def test_stale_runs_on_a_shared_store_are_judged_by_their_own_host(store_target):
    """A run is stale only when its own driver is gone: on this host (machine, boot, pid namespace) by its pid,
    on another host by a heartbeat older than STALE_S on the database's clock. Another host's live run is never
    marked because its pid is free here, not even when that host has the same name (containers, CI runners)."""
    import socket

    from farm import store as S
    st = S.Store(store_target)
    dead_pid = 2 ** 22 + 1
    mine = _new_run(st, "mine")  # this process: alive
    twin = _new_run(st, "twin")  # another machine with this one's host name, its driver alive and beating
    st.update_run(twin, host=socket.gethostname(), host_id="twin-host/boot/4026531836", pid=dead_pid)
    silent = _new_run(st, "silent")  # another machine whose driver stopped beating long ago
    st.update_run(silent, host="elsewhere", host_id="elsewhere/boot/1", pid=os.getpid())
    st.sql("UPDATE runs SET heartbeat = heartbeat - :d WHERE id = :r", d=S.STALE_S + 60, r=silent)
    killed = _new_run(st, "killed")  # this host, its driver gone
    st.update_run(killed, pid=dead_pid)
    legacy = _new_run(st, "legacy")  # written before heartbeats, by another host: nothing tells, left alone
    st.update_run(legacy, host="elsewhere", host_id=None, heartbeat=None, pid=dead_pid)
    assert sorted(st.stale_runs()) == sorted([silent, killed])
    status = {r: st.run(r)["status"] for r in (mine, twin, silent, killed, legacy)}
    assert status == {mine: "running", twin: "running", silent: "interrupted", killed: "interrupted",
                      legacy: "running"}
    assert S.host_id() != "twin-host/boot/4026531836" and socket.gethostname() in S.host_id()
    st.close()


def test_a_resumed_run_belongs_to_its_new_driver(store_target):
    """`farm run --resume` makes this process the run's driver (host, pid, heartbeat): a run resumed after its
    first driver died is not marked stale while it runs again."""
    from farm.store import Store
    st = Store(store_target)
    rid = _new_run(st)
    st.update_run(rid, pid=2 ** 22 + 1, status="interrupted")
    st.claim(rid)
    assert st.stale_runs() == [] and st.run(rid)["status"] == "running" and st.run(rid)["pid"] == os.getpid()
    st.close()


BEATING = """
import sys, time
from farm.store import Store
st = Store(sys.argv[1])
rid = st.create_run(name="host-b", label=None, config_text="", config_path="", options={}, target="interpreter",
                    gpus=[], compiler_version="c", farm_version="f")
print(rid, flush=True)
time.sleep(120)
"""


def test_a_live_driver_on_another_host_keeps_its_run_and_a_dead_one_loses_it(store_target, monkeypatch):
    """Two "hosts" on one store (a driver process with another host id, FARM_HOST_ID): while it beats, this host
    never marks its run, however long it runs; once it is killed, its run is marked after STALE_S of silence."""
    import time

    from farm import store as S
    monkeypatch.setattr(S, "STALE_S", 2.0)
    env = {**os.environ, "PYTHONPATH": str(REPO), "FARM_HOST_ID": "host-b/boot/1", "FARM_HEARTBEAT_S": "0.3"}
    p = subprocess.Popen([sys.executable, "-c", BEATING, store_target], stdout=subprocess.PIPE, text=True, env=env)
    try:
        rid = int(p.stdout.readline())
        st = S.Store(store_target)
        for _ in range(8):  # 4 s: twice STALE_S, while it beats
            time.sleep(0.5)
            assert st.stale_runs() == [] and st.run(rid)["status"] == "running"
        assert st.run(rid)["host_id"] == "host-b/boot/1"
    finally:
        p.kill()
        p.wait()
    deadline = time.monotonic() + 30
    while st.stale_runs() != [rid]:
        assert time.monotonic() < deadline, "a silent run of another host was never marked"
        time.sleep(0.25)
    assert st.run(rid)["status"] == "interrupted"
    st.close()
