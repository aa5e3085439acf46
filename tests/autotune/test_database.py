"""The tuning database: SQLite and JSON round trips, concurrent writers, and a fresh process that launches from
the database without tuning."""
import json
import multiprocessing
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import compiler
from compiler import Config
from farm.tuning_db import TuningDB, make_record

from .kernels import add_kernel

AT = sys.modules["compiler.autotune"]
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIGS = [Config({"BLOCK": b}, num_warps=w) for b in (32, 64, 128) for w in (1, 2)]


def rec(i=0, key='{"args":{"N":1}}', ms=1.0, **kw):
    base = dict(kernel="k" * 64, key=key, config=Config({"BLOCK": 32 << (i % 4)}, num_warps=1 << (i // 4 % 3)),
                gpu="H200", compiler_version="0.1.0+abc", median_ms=ms, p10_ms=ms * 0.9, p90_ms=ms * 1.1, n=100,
                rep_ms=100.0, kernel_name="k")
    base.update(kw)
    return make_record(**base)


def test_sqlite_and_json_round_trip(tmp_path):
    db = TuningDB(tmp_path / "farm.db")
    recs = [rec(i, ms=5.0 - i * 0.5) for i in range(6)] + [rec(0, key='{"args":{"N":2}}', ms=2.0)]
    assert db.add(recs) == 7 and db.count() == 7
    got = db.records(key='{"args":{"N":1}}')
    assert len(got) == 6 and got[0]["config"] == json.dumps(recs[0]["config"] and json.loads(recs[0]["config"]),
                                                            sort_keys=True, separators=(",", ":"))
    assert {r["median_ms"] for r in got} == {5.0, 4.5, 4.0, 3.5, 3.0, 2.5}
    # re-measuring a config replaces its row, nothing is duplicated
    db.add([rec(5, ms=9.0)])
    assert db.count() == 7 and db.best("k" * 64, '{"args":{"N":1}}', "H200")["median_ms"] == 3.0
    # JSON export -> import into a fresh database: the same records
    n = db.export_json(tmp_path / "pkg" / "tuning.json")
    assert n == 7
    data = json.loads((tmp_path / "pkg" / "tuning.json").read_text())
    assert data["format"] == "tilefarm-tuning" and len(data["records"]) == 7
    db2 = TuningDB(tmp_path / "other.db")
    assert db2.import_json(tmp_path / "pkg" / "tuning.json") == 7
    strip = lambda rs: sorted((tuple(sorted(r.items())) for r in rs))  # noqa: E731
    assert strip(db2.records()) == strip(db.records())
    # the compiler's reader sees the same best config in all three forms
    for path in (tmp_path / "farm.db", tmp_path / "pkg" / "tuning.json", tmp_path / "other.db"):
        r = AT.TuningDatabase(path)
        assert r.best("k" * 64, '{"args":{"N":1}}', "H200") == Config({"BLOCK": 32}, num_warps=2)
        assert r.best("k" * 64, '{"args":{"N":1}}', "A100") is None
    with pytest.raises(ValueError, match="not a tilefarm tuning export"):
        (tmp_path / "bad.json").write_text("{}")
        db2.import_json(tmp_path / "bad.json")
    db.close()
    db2.close()


def test_selection_rule():
    rows = [dict(median_ms=1.0, rep_ms=5.0, compiler_version="a", config="x"),
            dict(median_ms=2.0, rep_ms=100.0, compiler_version="a", config="y"),
            dict(median_ms=0.5, rep_ms=100.0, compiler_version="b", config="z"),
            dict(median_ms=None, rep_ms=100.0, compiler_version="a", config="w")]
    assert AT.select_best(rows, "a")["config"] == "y"  # same compiler, longest budget, then fastest
    assert AT.select_best(rows, "b")["config"] == "z"
    assert AT.select_best([], "a") is None


def _writer(path, proc, n):
    db = TuningDB(path)
    for i in range(n):
        db.add([rec(i % 12, key=f'{{"args":{{"N":{proc * 1000 + i}}}}}', ms=1.0 + i)])
    db.close()


def test_concurrent_writers_lose_nothing(tmp_path):
    path = str(tmp_path / "farm.db")
    TuningDB(path).close()
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(path, p, 40)) for p in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    db = TuningDB(path)
    assert db.count() == 160
    assert len({r["key"] for r in db.records()}) == 160
    db.close()


def test_autotuner_reads_database_first(tmp_path):
    # tune in this process (injected timer), store what was measured, then a new autotuner finds it
    t = {"n": 0}

    def timer(fn):
        fn()
        t["n"] += 1
        return float(10 - t["n"])  # the last config tried is the fastest

    at = compiler.autotune(CONFIGS, key=["N"], do_bench=timer)(add_kernel)
    n = 300
    x, y, z = (np.random.rand(n).astype(np.float32) for _ in range(3))
    at[lambda m: (compiler.cdiv(n, m["BLOCK"]),)](x, y, z, n)
    assert at.best_config == CONFIGS[-1]
    db = TuningDB(tmp_path / "farm.db")
    assert db.save_autotuner(at) == 6
    db.close()
    AT.set_database(str(tmp_path / "farm.db"))
    calls = []
    at2 = compiler.autotune(CONFIGS, key=["N"], do_bench=lambda fn: calls.append(1) or 1.0)(add_kernel)
    z[:] = 0
    at2[lambda m: (compiler.cdiv(n, m["BLOCK"]),)](x, y, z, n)
    assert calls == [] and at2.db_hits == 1 and at2.best_config == CONFIGS[-1] and np.allclose(z, x + y)
    # a key the database lacks is tuned as usual
    at2[lambda m: (compiler.cdiv(n - 1, m["BLOCK"]),)](x, y, z, n - 1)
    assert len(calls) == 6 and at2.tune_count == 1
    # use_database=False never asks
    at3 = compiler.autotune(CONFIGS, key=["N"], do_bench=lambda fn: calls.append(1) or 1.0,
                            use_database=False)(add_kernel)
    at3[lambda m: (compiler.cdiv(n, m["BLOCK"]),)](x, y, z, n)
    assert at3.db_hits == 0 and at3.tune_count == 1


FRESH = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    t0 = time.perf_counter()
    import compiler
    from tests.autotune.kernels import add_kernel
    calls = []
    configs = [compiler.Config({"BLOCK": b}, num_warps=w) for b in (32, 64, 128) for w in (1, 2)]
    at = compiler.autotune(configs, key=["N"], do_bench=lambda fn: calls.append(1) or 1.0)(add_kernel)
    n = 300
    x, y, z = (np.random.rand(n).astype(np.float32) for _ in range(3))
    at[lambda m: (compiler.cdiv(n, m["BLOCK"]),)](x, y, z, n)
    print(json.dumps({"bench_calls": at.bench_calls, "timer_calls": len(calls), "db_hits": at.db_hits,
                      "best": at.best_config.to_dict(), "ok": bool(np.allclose(z, x + y)),
                      "cache_key": add_kernel.cache_key, "sqlalchemy": "sqlalchemy" in sys.modules}))
""")


def _pg_url():
    """A new database on the test session's PostgreSQL server (tests/farm/pg.py), or a skip saying why not."""
    farm_tests = os.path.join(REPO, "tests", "farm")
    if farm_tests not in sys.path:
        sys.path.insert(0, farm_tests)
    import pg
    if pg.server() is None:
        pytest.skip(f"PostgreSQL tuning database: {pg.why()}")
    return pg.new_database()


@pytest.mark.parametrize("form", ["sqlite", "json", "postgresql"])
def test_fresh_process_with_key_in_database_does_no_tuning(tmp_path, form):
    """A fresh process finds the tuned key in the database and launches with its best config, tuning nothing:
    from a SQLite file, its JSON export, or a PostgreSQL server named by URL in TILEFARM_TUNING_DB (a fleet's
    shared history; a missing file named before it is skipped, and only the URL makes the compiler import
    SQLAlchemy)."""
    url = _pg_url() if form == "postgresql" else None
    at = compiler.autotune(CONFIGS, key=["N"], do_bench=lambda fn: (fn(), 1.0)[1])(add_kernel)
    at.configs_timings = None
    n = 300
    x, y, z = (np.random.rand(n).astype(np.float32) for _ in range(3))
    at[lambda m: (compiler.cdiv(n, m["BLOCK"]),)](x, y, z, n)
    recs = at.tuned_records()
    recs[4]["median_ms"] = 0.1  # make a config other than the first the winner
    db = TuningDB(url or tmp_path / "farm.db")
    db.add(recs)
    path = tmp_path / "farm.db"
    if form == "json":
        db.export_json(tmp_path / "tuning.json")
        path = tmp_path / "tuning.json"
    db.close()
    if url:  # a missing file, then the server: the URL's own colons do not split it
        path = os.pathsep.join([str(tmp_path / "none.db"), url])
    env = {**os.environ, "TILEFARM_TUNING_DB": str(path), "PYTHONPATH": REPO}
    out = subprocess.run([sys.executable, "-c", FRESH], capture_output=True, text=True, env=env, cwd=REPO,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["bench_calls"] == 0 and got["timer_calls"] == 0 and got["db_hits"] == 1 and got["ok"]
    assert Config.from_dict(got["best"]) == CONFIGS[4]
    assert got["cache_key"] == add_kernel.cache_key  # the source hash is stable across processes
    assert got["sqlalchemy"] == (form == "postgresql")


def test_postgresql_names_and_an_unreachable_server(tmp_path):
    """TILEFARM_TUNING_DB splits paths from URLs (a URL's colons are its own); a server that cannot be reached
    answers nothing, says so once (its password hidden), and the kernel tunes as it would without it."""
    assert AT.split_names(os.pathsep.join(["/a/t.db", "postgresql://u:secret@h:5432/farm?sslmode=require",
                                           "/b/t.json"])) == [
        "/a/t.db", "postgresql://u:secret@h:5432/farm?sslmode=require", "/b/t.json"]
    assert AT.split_names("postgresql://h/db") == ["postgresql://h/db"]
    dead = "postgresql://farm:secret@127.0.0.1:1/none"  # port 1: nothing listens there
    AT.set_database([dead])
    calls = []
    at = compiler.autotune(CONFIGS, key=["N"], do_bench=lambda fn: calls.append(1) or 1.0)(add_kernel)
    n = 200
    x, y, z = (np.random.rand(n).astype(np.float32) for _ in range(3))
    with pytest.warns(RuntimeWarning, match=r"tuning database postgresql://farm:\*\*\*@127.0.0.1:1/none could not"):
        at[lambda m: (compiler.cdiv(n, m["BLOCK"]),)](x, y, z, n)
    assert len(calls) == len(CONFIGS) and at.db_hits == 0 and np.allclose(z, x + y)
    assert "secret" not in repr(AT.get_database())
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # said once only
        at[lambda m: (compiler.cdiv(n - 1, m["BLOCK"]),)](x, y, z, n - 1)


def test_postgresql_database_read_in_process(tmp_path):
    """The records `farm tune` writes into a fleet's PostgreSQL store are what the autotuner reads from it."""
    url = _pg_url()
    db = TuningDB(url)
    recs = [rec(i, ms=5.0 - i * 0.5) for i in range(6)]
    db.add(recs)
    db.close()
    r = AT.TuningDatabase(url)
    assert r.kind == "url"
    assert r.best("k" * 64, '{"args":{"N":1}}', "H200") == Config({"BLOCK": 64}, num_warps=2)  # rec 5: 2.5 ms
    assert r.best("k" * 64, '{"args":{"N":1}}', "A100") is None
    assert r.best("k" * 64, '{"args":{"N":9}}', "H200") is None
    r.close()
    empty = AT.TuningDatabase(_pg_url())  # a database with no tuning table yet: nothing, no error
    assert empty.rows("k" * 64, "{}", "H200") == []
    empty.close()


def test_database_path_attribute_and_env(tmp_path, monkeypatch):
    db = TuningDB(tmp_path / "a.db")
    db.close()
    monkeypatch.setenv("TILEFARM_TUNING_DB", os.pathsep.join([str(tmp_path / "a.db"), str(tmp_path / "none.db")]))
    AT._databases = None
    dbs = compiler.autotune.get_database()
    assert [d.path for d in dbs] == [str(tmp_path / "a.db")]
    compiler.autotune.set_database(str(tmp_path / "a.db"))
    assert AT.get_database()[0].kind == "sqlite"
    assert compiler.autotune.compiler_version() == __import__("farm.machine").machine.compiler_version()
