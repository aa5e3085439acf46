import sqlite3
import threading

from farm import runner
from farm.executor.local import LocalExecutor
from farm.jobs import ERROR, VALIDATED, Job, Result

from farm_testing import fake_config


def _job(i):
    return Job(key=f"{i:064x}", idx=i, workload="w", name="w", params={"N": i, "dtype": "float32"}, meta={})


def _run(store, n=5):
    rid = store.create_run(name="t", label="lbl", config_text="x", config_path="c.yaml", options={}, target="interpreter",
                           gpus=[], compiler_version="c", farm_version="f")
    store.add_jobs(rid, [_job(i) for i in range(n)], {})
    return rid


def test_wal_and_unique(store):
    if store.dialect == "sqlite":
        assert sqlite3.connect(store.path).execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    rid = _run(store)
    assert store.add_result(rid, Result(key=_job(0).key, status=VALIDATED))
    assert not store.add_result(rid, Result(key=_job(0).key, status=ERROR))  # no duplicate, first result kept
    assert store.sql("SELECT COUNT(*), MAX(status) FROM results") == [(1, VALIDATED)]


def test_pending_and_rows_and_resolve(store):
    rid = _run(store)
    store.add_result(rid, Result(key=_job(2).key, status=VALIDATED, notes=["n"], gpu={"name": "g"}))
    assert [j.idx for j in store.pending_jobs(rid)] == [0, 1, 3, 4]
    rows = store.rows(rid)
    assert [r["status"] for r in rows] == ["pending", "pending", "validated", "pending", "pending"]
    assert rows[2]["notes"] == ["n"] and rows[2]["gpu"] == {"name": "g"}
    assert store.resolve("latest") == rid == store.resolve("lbl") == store.resolve(str(rid))
    info = store.run(rid)
    assert info["n_jobs"] == 5 and info["n_done"] == 1 and info["host"]


def test_results_visible_to_other_connections_as_they_arrive(store, store_target):
    from farm.store import Store
    rid = _run(store)
    other = Store(store_target, write=False)
    store.add_result(rid, Result(key=_job(1).key, status=VALIDATED))
    assert other.sql("SELECT COUNT(*) FROM results") == [(1,)]
    other.close()


class _Interrupting(LocalExecutor):
    """Runs k jobs then behaves like Ctrl-C."""

    def __init__(self, k):
        self.k = k

    def run(self, jobs, opts, on_event):
        for n, job in enumerate(jobs):
            if n == self.k:
                raise KeyboardInterrupt
            super().run([job], opts, on_event)


def test_interrupted_run_resumes_with_nothing_lost_or_duplicated(tmp_path, store):
    from farm import config
    cfg, text = config.load(fake_config(tmp_path, modes=("ok", "wrong", "raise"), ns=(10, 20, 30)))
    prep = runner.prepare(cfg, text, "c.yaml", store, {"gpus": 0})
    assert len(prep.jobs) == 9
    try:
        runner.execute(store, prep, _Interrupting(4))
    except KeyboardInterrupt:
        pass
    assert store.run(prep.run_id)["status"] == "interrupted"
    again = runner.resume(store, str(prep.run_id))
    assert len(again.jobs) == 5 and again.resumed
    runner.execute(store, again, LocalExecutor())
    rows = store.rows(prep.run_id)
    assert len(rows) == 9 and all(r["status"] != "pending" for r in rows)
    [(n, distinct)] = store.sql("SELECT COUNT(*), COUNT(DISTINCT key) FROM results WHERE run_id=:r", r=prep.run_id)
    assert n == distinct == 9
    assert store.run(prep.run_id)["status"] == "done"


def test_concurrent_writers_do_not_lose_rows(store_target):
    from farm.store import Store
    path = store_target
    s = Store(path)
    rid = _run(s, 200)

    def write(part):
        st = Store(path)
        for i in range(part, 200, 4):
            st.add_result(rid, Result(key=_job(i).key, status=VALIDATED))
        st.close()

    threads = [threading.Thread(target=write, args=(p,)) for p in range(4)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert s.sql("SELECT COUNT(*) FROM results") == [(200,)]
