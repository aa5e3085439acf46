"""Where results live: one row per job result, written as each result arrives, in a SQLite file (WAL mode, the
embedded default) or a PostgreSQL database (one history for a fleet: `store: postgresql://user@host/db`).

Tables (`farm.db` declares them, for both back ends): `runs` (one per `farm run`, with provenance: git commit,
host, GPUs, compiler version, config text, label), `run_jobs` (the plan of each run: every job's spec, or the
earlier run whose result it reuses) and `results` (one row per (run, job key), enforced by a unique constraint
and written with INSERT ... ON CONFLICT DO NOTHING: a resumed run, or two processes finishing the same job,
cannot duplicate a row; each result also carries the compiled kernel's registers, spills, shared memory,
occupancy and ptxas version). A run's rows are its own results plus the reused ones, so `farm report` shows the
whole sweep. Run ids come from the database (AUTOINCREMENT / an identity sequence), so any number of `farm run`
processes on any number of machines can write to one PostgreSQL store at once.
"""
from __future__ import annotations

import json
import os
import pathlib
import socket
import subprocess
import tempfile
import threading
import time

import sqlalchemy as sa

from farm import FarmError
from farm import db as D
from farm.jobs import GOOD, TRANSIENT, Job, Result

SQLITE_MAGIC = b"SQLite format 3\x00"
_JSON_COLS = ("gpu", "notes", "artifacts", "samples", "launch")
_RESULT_COLS = ("status", "median_ms", "p10_ms", "p90_ms", "n_reps", "baseline_ms", "flops", "bytes", "max_abs_err",
                "max_rel_err", "compile_s", "validate_s", "bench_s", "wall_s", "gpu", "worker", "error", "detail",
                "notes", "artifacts", "samples", "launch", *D.PROVENANCE_COLS, "ptxas_version")
MIGRATIONS = D.STEPS  # the schema's history (farm.db)


def git_commit(cwd: str | None = None) -> str:
    """HEAD's commit (with "-dirty" when the tree has changes), or "" outside git."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=cwd, timeout=5)
        if head.returncode:
            return ""
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                               text=True, cwd=cwd, timeout=5).stdout.strip()
        return head.stdout.strip() + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return ""


# A driver says it lives every HEARTBEAT_S while its runs are open; another host's run whose last word is older than
# STALE_S (by the database's clock) is taken for dead. Its own host tells sooner: by its pid.
HEARTBEAT_S = float(os.environ.get("FARM_HEARTBEAT_S", "30"))
STALE_S = float(os.environ.get("FARM_STALE_S", "300"))


def host_id() -> str:
    """Which machine and process namespace this driver runs in: where its pid means something. The host name
    alone is not that (containers and CI runners share names); with the kernel's boot id and the pid namespace,
    a run with this id whose pid is gone is surely dead, and one with another id is left to its heartbeat.
    FARM_HOST_ID overrides it (tests, or a host whose /proc says nothing)."""
    forced = os.environ.get("FARM_HOST_ID")
    if forced:
        return forced
    parts = [socket.gethostname()]
    try:
        parts.append(pathlib.Path("/proc/sys/kernel/random/boot_id").read_text().strip())
    except OSError:
        parts.append("?")
    try:
        parts.append(str(os.stat("/proc/self/ns/pid").st_ino))
    except OSError:
        parts.append("?")
    return "/".join(parts)


def _alive(pid: int, since: float | None = None) -> bool:
    """Whether process `pid` exists and (where /proc tells) started no later than `since`: a pid reused by a
    process started after the run was created is not the run's driver."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        pass
    started = _process_start(pid)
    return started is None or since is None or started <= since + 1.0


def _process_start(pid: int) -> float | None:
    """Wall-clock start time of a process from /proc (Linux), or None where it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            ticks = int(f.read().rsplit(")", 1)[1].split()[19])  # field 22, counted after the command name
        with open("/proc/stat") as f:
            btime = next(int(line.split()[1]) for line in f if line.startswith("btime "))
        return btime + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return None


def _check_path(path: pathlib.Path, write: bool) -> None:
    """Refuse, before touching it, a store path that is not a store file, or (with `write`) cannot be written."""
    if path.is_dir():
        raise FarmError(f"{path} is a folder, not a results store file")
    if path.exists():
        try:
            with open(path, "rb") as f:
                head = f.read(len(SQLITE_MAGIC))
        except OSError as e:
            raise FarmError(f"cannot read the results store {path}: {e.strerror}") from None
        if not head:
            raise FarmError(f"{path} is empty (0 bytes), so it holds no history: a store farm wrote is never "
                            "empty. Remove it to start a new store, or restore it from a copy")
        if head != SQLITE_MAGIC:
            raise FarmError(f"{path} is not a results store (not an SQLite database); nothing was written to it")
    if not write:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # A real probe: os.access says yes to root on a read-only mount, and the WAL files go in this folder.
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=".farm-probe-"):
            pass
        if path.exists():
            with open(path, "r+b"):
                pass
    except OSError as e:
        raise FarmError(f"cannot write the results store {path}: {e.strerror or e} (pass --store PATH, or set "
                        "`store:` in the config, to put it somewhere writable)") from None


def _create(path: pathlib.Path) -> None:
    """Create a new SQLite store atomically: built whole beside `path`, then linked into place, so no process ever
    sees the empty file sqlite would leave there (an empty file is refused as a store: it may be a truncated one)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}-new-", dir=path.parent)
    os.close(fd)
    try:
        eng = D.engine_for(tmp)
        D.upgrade(eng)
        eng.dispose()  # the last connection: the WAL is checkpointed into the file and removed
        try:
            os.link(tmp, path)  # fails when another process created the store first: theirs is used
        except FileExistsError:
            pass
        except OSError:  # a file system without hard links: a rename (the race above is the only thing lost)
            if not path.exists():
                os.replace(tmp, path)
    finally:
        for suffix in ("", "-wal", "-shm"):
            try:
                os.unlink(tmp + suffix)
            except FileNotFoundError:
                pass


def _db_reason(e: BaseException) -> str:
    """The database's own words for an error, without SQLAlchemy's statement dump."""
    orig = getattr(e, "orig", None) or e
    return " ".join(str(orig).split())[:400]


_R, _J, _RUNS = D.results, D.run_jobs, D.runs
_WRITE_COLS = frozenset(_R.c.keys()) - {"id", "run_id", "key", "created"}  # what add_result writes of a Result


_DONE_KEYS = (sa.select(_R.c.key, sa.func.max(_R.c.run_id))
              .where(_R.c.key.in_(sa.bindparam("keys", expanding=True)), _R.c.status.not_in(TRANSIENT))
              .group_by(_R.c.key))


class Store:
    """A farm results database (created on first use): a SQLite path or a PostgreSQL URL. Any number of writers
    (each `farm run` process) and readers at once."""

    def __init__(self, path: str | os.PathLike, write: bool = True):
        """Open (or create) the store. A file that is not a store (empty, not SQLite, damaged, from a newer farm)
        is a FarmError before anything is written to it; with `write`, so is a store or folder this process
        cannot write (checked now, before any job runs, rather than when the first result arrives). A PostgreSQL
        server that cannot be reached, or (with `write`) where this user may not write, is a FarmError too."""
        self.url = D.is_url(path) and not str(path).startswith("sqlite:")
        if not self.url and D.is_url(path):
            path = sa.make_url(str(path)).database
        self.path = D.display(path) if self.url else pathlib.Path(path)
        self.engine = self._results = self._rconn = None
        self._results_lock = threading.Lock()
        self._insert_sql: dict = {}
        self._beat_lock = threading.Lock()
        self._beating: set[int] = set()
        self._beater: threading.Thread | None = None
        try:
            if self.url:
                self._open_server(str(path), write)
            else:
                self._open_file(write)
        except FarmError:
            self.close()
            raise

    def _open_file(self, write: bool) -> None:
        _check_path(self.path, write)
        try:
            if not self.path.exists():
                _create(self.path)
            self.engine = D.engine_for(self.path)
            D.upgrade(self.engine)
        except D.NewerSchema as e:
            raise FarmError(f"{self.path} was written by a newer farm (schema {e.version}, this one knows "
                            f"{D.HEAD}): upgrade tilefarm to use it") from None
        except sa.exc.DatabaseError as e:
            if "locked" in str(e) or "busy" in str(e):
                raise FarmError(f"cannot open the results store {self.path}: {_db_reason(e)}") from None
            raise FarmError(f"{self.path} is not a usable results store ({_db_reason(e)}); nothing was written "
                            "to it. Move it aside to start a new one, or restore it from a copy") from None
        except sa.exc.SQLAlchemyError as e:
            raise FarmError(f"cannot open the results store {self.path}: {_db_reason(e)}") from None

    def _open_server(self, url: str, write: bool) -> None:
        try:
            self.engine = D.engine_for(url)
        except ModuleNotFoundError as e:
            raise FarmError(f"a PostgreSQL store needs the {e.name} package: pip install 'tilefarm[postgres]'"
                            ) from None
        except (ValueError, sa.exc.ArgumentError) as e:
            raise FarmError(f"store {self.path}: {e}") from None
        try:
            D.upgrade(self.engine, create=write)
            if write:
                with self.engine.connect() as c:
                    denied = [t for t in ("runs", "run_jobs", "results") if not c.execute(
                        sa.text("SELECT has_table_privilege(:t, 'INSERT') AND has_table_privilege(:t, 'UPDATE')"),
                        {"t": t}).scalar()]
                if denied:
                    raise FarmError(f"cannot write the results store {self.path}: this user may not insert into or "
                                    f"update {', '.join(denied)}")
        except LookupError:
            raise FarmError(f"no results store in {self.path} (run `farm run CONFIG --store URL` first)") from None
        except D.NewerSchema as e:
            raise FarmError(f"{self.path} was written by a newer farm (schema {e.version}, this one knows "
                            f"{D.HEAD}): upgrade tilefarm to use it") from None
        except sa.exc.OperationalError as e:
            raise FarmError(f"cannot reach the results store {self.path}: {_db_reason(e)}") from None
        except sa.exc.SQLAlchemyError as e:
            raise FarmError(f"cannot use the results store {self.path}: {_db_reason(e)}") from None

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    def _read(self):
        return self.engine.connect()

    def _write(self):
        return D.writing(self.engine).begin()

    def sql(self, statement: str, **params) -> list[tuple]:
        """Rows of a raw SQL statement with :named parameters (for tests and one-off queries)."""
        with self._write() as c:
            res = c.execute(sa.text(statement), params)
            return [tuple(r) for r in res] if res.returns_rows else []

    def stale_runs(self) -> list[int]:
        """Mark interrupted the runs still "running" whose driver no longer exists: it was killed (SIGKILL, out
        of memory, power, a lost machine) before it could say so. Returns their ids (`farm run --resume ID`).

        A run of this host (`host_id`: machine, boot and pid namespace) is dead when its pid is; a run of another
        host when its heartbeat is older than STALE_S by the database's clock (its pid means nothing here: a
        live run of another host is never taken for dead because some pid is free on this one). A run from
        before heartbeats (no host_id) is judged by pid only on a host of its name, as it was."""
        me, name = host_id(), socket.gethostname()
        now = D.now(self.dialect)
        with self._read() as c:
            found = c.execute(sa.select(_RUNS.c.id, _RUNS.c.pid, _RUNS.c.status, _RUNS.c.created, _RUNS.c.host,
                                        _RUNS.c.host_id, (now - _RUNS.c.heartbeat).label("silent")).where(
                _RUNS.c.status.in_(("running", "planning")))).all()

        def dead(r) -> bool:
            if r.host_id == me or (r.host_id is None and r.host == name):
                return r.pid is not None and not _alive(r.pid, r.created)
            return r.host_id is not None and r.silent is not None and r.silent > STALE_S

        rows = [(r.id, r.status) for r in found if dead(r)]
        marked = []
        for rid, status in rows:  # killed while planning: its plan is partial, it cannot be resumed
            try:
                with self._write() as c:  # only if still in that state (another process may have seen it first)
                    c.execute(_RUNS.update().where(_RUNS.c.id == rid, _RUNS.c.status == status).values(
                        status="interrupted" if status == "running" else "abandoned"))
                marked.append((rid, status))
            except (sa.exc.ProgrammingError, sa.exc.OperationalError):
                pass  # a reader that may not write (a read-only user, a read-only file) leaves it to a writer
        rows = marked
        return [rid for rid, status in rows if status == "running"]

    def delete_run(self, run_id: int):
        """Remove a run that has no results (one stopped while its plan was being recorded)."""
        self._beat(run_id, on=False)
        with self._write() as c:
            if c.execute(sa.select(sa.func.count()).select_from(_R).where(_R.c.run_id == run_id)).scalar():
                raise FarmError(f"run {run_id} has results: not deleted")
            c.execute(_J.delete().where(_J.c.run_id == run_id))
            c.execute(_RUNS.delete().where(_RUNS.c.id == run_id))

    # ------------------------------------------------------------ liveness

    def _beat(self, run_id: int, on: bool = True) -> None:
        """Keep (or stop) saying that this process is `run_id`'s driver: a thread updates its heartbeat every
        HEARTBEAT_S while this store is open and the run is not finished."""
        with self._beat_lock:
            if on:
                self._beating.add(run_id)
            else:
                self._beating.discard(run_id)
            if on and self._beater is None:
                self._beat_stop = threading.Event()
                self._beater = threading.Thread(target=self._beat_loop, args=(self._beat_stop,),
                                                name="farm-heartbeat", daemon=True)
                self._beater.start()

    def _beat_loop(self, stop: threading.Event) -> None:
        while not stop.wait(HEARTBEAT_S):
            with self._beat_lock:
                ids = sorted(self._beating)
            if not ids or self.engine is None:
                continue
            try:
                with self._write() as c:
                    c.execute(_RUNS.update().where(_RUNS.c.id.in_(ids)).values(heartbeat=D.now(self.dialect)))
            except Exception:  # the server restarting, the file busy past its timeout: the next beat tries again
                pass

    def claim(self, run_id: int) -> None:
        """This process runs `run_id` now (a resumed run: its first driver is gone): its status, host, pid and
        heartbeat become this process's, and the heartbeat goes on."""
        self.update_run(run_id, status="running", host=socket.gethostname(), host_id=host_id(), pid=os.getpid(),
                        heartbeat=D.now(self.dialect))
        self._beat(run_id)

    def close(self):
        if self._beater is not None:
            self._beat_stop.set()
            self._beater.join(timeout=5)
            self._beater = None
        if self._rconn is not None:
            self._rconn.close()
            self._rconn = None
        if self._results is not None and self._results is not self.engine:
            self._results.dispose()
        self._results = None
        if self.engine is not None:
            self.engine.dispose()
            self.engine = None

    # ------------------------------------------------------------ runs

    def create_run(self, *, name: str, label: str | None, config_text: str, config_path: str, options: dict,
                   target: str, gpus: list, compiler_version: str, farm_version: str, status: str = "running") -> int:
        with self._write() as c:
            res = c.execute(_RUNS.insert().values(
                name=name, label=label, created=time.time(), status=status, target=target, config_text=config_text,
                config_path=config_path, options=json.dumps(options), git_commit=git_commit(),
                host=socket.gethostname(), gpus=json.dumps(gpus), compiler_version=compiler_version,
                farm_version=farm_version, n_jobs=0, n_reused=0, pid=os.getpid(), host_id=host_id(),
                heartbeat=D.now(self.dialect)))
            rid = int(res.inserted_primary_key[0])
        self._beat(rid)
        return rid

    def add_jobs(self, run_id: int, jobs: list[Job], reused: dict[str, int]):
        """Record the run's plan; `reused` maps job keys to the earlier run whose result stands for them."""
        if not jobs:
            return
        stmt = D.insert_ignore(_J, self.dialect).on_conflict_do_nothing()
        rows = [{"run_id": run_id, "key": j.key, "idx": j.idx, "job": json.dumps(j.to_dict()),
                 "reused_from": reused.get(j.key)} for j in jobs]
        with self._write() as c:  # one transaction: these jobs are recorded whole or not at all (plans come in parts)
            if self.dialect == "sqlite":  # sqlite3's executemany counts what it inserted (RETURNING: 2x the CPU)
                added = c.execute(stmt, rows).rowcount
            else:  # psycopg's batched executemany has no total count: the keys inserted say it
                added = len(c.execute(stmt.returning(_J.c.key), rows).all())
            n_reused = len({j.key for j in jobs if j.key in reused})
            c.execute(_RUNS.update().where(_RUNS.c.id == run_id).values(n_jobs=_RUNS.c.n_jobs + added,
                                                                         n_reused=_RUNS.c.n_reused + n_reused))

    def rekey_jobs(self, run_id: int, changed: dict[str, Job]):
        """Give planned jobs of a run new keys ({old key: job with its new key}), in one transaction."""
        with self._write() as c:
            for old, job in changed.items():
                c.execute(_J.update().where(_J.c.run_id == run_id, _J.c.key == old).values(
                    key=job.key, job=json.dumps(job.to_dict())))

    def update_run(self, run_id: int, **cols):
        """Set columns of a run's row (status, finished, git_commit, ...)."""
        with self._write() as c:
            c.execute(_RUNS.update().where(_RUNS.c.id == run_id).values(**cols))

    def finish_run(self, run_id: int, status: str):
        self._beat(run_id, on=False)
        self.update_run(run_id, status=status, finished=time.time())

    def set_status(self, run_id: int, status: str):
        self.update_run(run_id, status=status)

    def resolve(self, ref: str | int) -> int:
        """A run id from "12", "latest", "latest~1" or a label; FarmError when there is none."""
        ref = str(ref)
        q = sa.select(_RUNS.c.id)
        if ref.isdigit():
            q = q.where(_RUNS.c.id == int(ref))
        elif ref.startswith("latest"):
            back = ref.partition("~")[2] or "0"
            if ref not in ("latest", f"latest~{back}") or not back.isdigit():
                raise FarmError(f"run {ref!r}: `latest` or `latest~N` (N runs before the latest), N a number")
            q = q.order_by(_RUNS.c.id.desc()).limit(1).offset(int(back))
        else:
            q = q.where(_RUNS.c.label == ref).order_by(_RUNS.c.id.desc()).limit(1)
        with self._read() as c:
            rid = c.execute(q).scalar()
        if rid is None:
            raise FarmError(f"no run {ref!r} in {self.path} (see `farm runs`)")
        return int(rid)

    def run(self, run_id: int) -> dict:
        with self._read() as c:
            row = c.execute(sa.select(_RUNS).where(_RUNS.c.id == run_id)).mappings().first()
            if row is None:
                raise FarmError(f"no run {run_id} in {self.path}")
            d = dict(row)
            count = sa.select(sa.func.count()).select_from(_R).where(_R.c.run_id == run_id)
            d["n_done"] = c.execute(count).scalar()
            d["n_failed"] = c.execute(count.where(_R.c.status.not_in(GOOD))).scalar()
        d["gpus"], d["options"] = json.loads(d["gpus"] or "[]"), json.loads(d["options"] or "{}")
        return d

    def runs(self, limit: int = 20) -> list[dict]:
        with self._read() as c:
            ids = c.execute(sa.select(_RUNS.c.id).order_by(_RUNS.c.id.desc()).limit(limit)).scalars().all()
        return [self.run(i) for i in ids]

    def find_run(self, *, label: str | None = None, target: str | None = None, before: int | None = None,
                 other_than: int | None = None) -> int | None:
        """The newest run matching every filter given (None: none)."""
        q = sa.select(_RUNS.c.id)
        if label is not None:
            q = q.where(_RUNS.c.label == label)
        if target is not None:
            q = q.where(_RUNS.c.target == target)
        if before is not None:
            q = q.where(_RUNS.c.id < before)
        if other_than is not None:
            q = q.where(_RUNS.c.id != other_than)
        with self._read() as c:
            rid = c.execute(q.order_by(_RUNS.c.id.desc()).limit(1)).scalar()
        return None if rid is None else int(rid)

    # ------------------------------------------------------------ results

    def add_result(self, run_id: int, res: Result) -> bool:
        """Store one result; False when the run already has one for that key (nothing is duplicated).

        Every field of the result that names a column is written (JSON text for dicts and lists); the kernel's
        `provenance` dict fills the provenance columns."""
        d = res.to_dict()
        d.update({k: v for k, v in (d.pop("provenance", None) or {}).items() if k in _R.c})
        vals = {c: (json.dumps(d[c]) if c in _JSON_COLS else d[c]) for c in d if c in _WRITE_COLS}
        params = {"run_id": run_id, "key": res.key, "created": time.time(), **vals}
        # The hot path of a run (one call per job): the INSERT that SQLAlchemy compiled for this dialect, executed
        # on the DB-API connection held for the store's life. Measured: 96 us of CPU per result, against 242 us
        # through a SQLAlchemy Connection and 74 us for the hand-written sqlite3 code this layer replaced.
        with self._results_lock:
            for attempt in (0, 1):
                raw, sql, order = self._results_conn(tuple(params))
                args = [params[k] for k in order] if order else params
                dbapi = self.engine.dialect.loaded_dbapi
                try:
                    cur = raw.cursor()
                    if self.dialect == "sqlite":
                        cur.execute("BEGIN IMMEDIATE")  # the write lock up front: writers queue on the busy timeout
                        try:
                            cur.execute(sql, args)
                            added = cur.fetchone() is not None
                        except BaseException:
                            cur.execute("ROLLBACK")
                            raise
                        cur.execute("COMMIT")
                        return added
                    cur.execute(sql, args)  # PostgreSQL: autocommit, asynchronous commit (D.results_engine)
                    return cur.fetchone() is not None
                except (dbapi.OperationalError, dbapi.InterfaceError):
                    # A connection the server dropped (restart, failover, idle timeout): once more on a new one.
                    # Safe: the insert is idempotent (a row that did land makes the retry a no-op, False).
                    self._drop_results_conn()
                    if attempt or self.dialect == "sqlite":
                        raise
        raise AssertionError("unreachable")

    def _results_conn(self, cols: tuple):
        """(DB-API connection, SQL, parameter order or None) for inserting a result with columns `cols`. The
        connection is held for the store's life (a pool checkout, ping and reset per result cost more than the
        insert). PostgreSQL: from `D.results_engine` (autocommit, asynchronous commit); SQLite: the store's."""
        if self._rconn is None:
            if self._results is None:
                self._results = D.results_engine(self.engine)
            self._rconn = self._results.connect()
        got = self._insert_sql.get(cols)
        if got is None:
            stmt = (D.insert_ignore(_R, self.dialect).on_conflict_do_nothing(index_elements=["run_id", "key"])
                    .returning(_R.c.id))
            comp = stmt.compile(dialect=self.engine.dialect, column_keys=list(cols))
            got = self._insert_sql[cols] = (comp.string, list(comp.positiontup) if comp.positional else None)
        return (self._rconn.connection.dbapi_connection, *got)

    def _drop_results_conn(self):
        if self._rconn is not None:
            try:
                self._rconn.invalidate()
                self._rconn.close()
            except Exception:
                pass
            self._rconn = None

    def done_keys(self, keys: list[str]) -> dict[str, int]:
        """Key -> latest run holding a final (not transient) result for it, for keys the store has done."""
        out: dict[str, int] = {}
        q = _DONE_KEYS  # one statement, the keys bound as an expanding parameter (no statement built per chunk)
        with self._read() as c:
            for i in range(0, len(keys), 500):
                out.update({k: int(r) for k, r in c.execute(q, {"keys": keys[i:i + 500]})})
        return out

    def _pending_query(self, run_id: int, *cols):
        return (sa.select(*cols).select_from(_J.outerjoin(_R, sa.and_(_R.c.run_id == _J.c.run_id, _R.c.key == _J.c.key)))
                .where(_J.c.run_id == run_id, _J.c.reused_from.is_(None), _R.c.id.is_(None)))

    def pending_jobs(self, run_id: int) -> list[Job]:
        """The run's planned jobs that have no result yet (what `--resume` runs), in plan order."""
        with self._read() as c:
            rows = c.execute(self._pending_query(run_id, _J.c.job).order_by(_J.c.idx)).scalars().all()
        return [Job.from_dict(json.loads(r)) for r in rows]

    def pending(self, run_id: int) -> "Pending":
        """The run's planned jobs without a result (what `--resume` runs), in plan order, read lazily page by page:
        a sized iterable, so a million-job run is never all in memory."""
        return Pending(self, run_id)

    def rows(self, run_id: int, samples: bool = False) -> list[dict]:
        """Every job of a run with its result (its own, or the reused one), in plan order; None result if pending.

        With `samples`, each row also has the per-repetition `samples` (None in stores older than that column)
        and the planned `job` (workload reference, seed); without, rows stay small for reports. Each row's
        `provenance` holds the compiled kernel's resources where they were recorded.
        """
        cols = [c for c in _R.c if samples or c.name != "samples"]
        q = (sa.select(_J.c.job, _J.c.reused_from, *cols)
             .select_from(_J.outerjoin(_R, sa.and_(_R.c.key == _J.c.key,
                                                   _R.c.run_id == sa.func.coalesce(_J.c.reused_from, _J.c.run_id))))
             .where(_J.c.run_id == run_id).order_by(_J.c.idx))
        with self._read() as c:
            fetched = c.execute(q).mappings().all()
        out = []
        for row in fetched:
            d = dict(row)
            job = json.loads(d.pop("job"))
            d["result_id"] = d.pop("id", None)  # the stored result's id (`farm repro ID`)
            for col in _JSON_COLS:
                d[col] = json.loads(d[col]) if d.get(col) else None
            d.update(workload=job["name"], params=job["params"], meta=job["meta"], key=job["key"], idx=job["idx"],
                     compiler=job.get("compiler") or "tilefarm",  # plans from before compilers were an axis
                     gpu_kind=job.get("gpu_kind", ""))
            prov = {k: d[k] for k in (*D.PROVENANCE_COLS, "ptxas_version") if d.get(k) is not None}
            d["provenance"] = prov or None
            if samples:
                d["job"] = job
            else:
                d.pop("samples", None)
            if d.get("status") is None:
                d["status"] = "pending"
            out.append(d)
        return out

    def locate(self, result_id: int) -> tuple[int, str]:
        """(run id, job key) of a stored result; FarmError when there is none."""
        with self._read() as c:
            row = c.execute(sa.select(_R.c.run_id, _R.c.key).where(_R.c.id == int(result_id))).first()
        if row is None:
            raise FarmError(f"no result {result_id} in {self.path} (result ids are in `farm report RUN --format json`)")
        return int(row.run_id), row.key

    def latest_with_label(self, label: str, target: str | None = None, before: int | None = None) -> int:
        """The newest run labelled `label` (on GPU kind `target` when given, older than run `before` when given)."""
        rid = self.find_run(label=label, target=target, before=before)
        if rid is None:
            raise FarmError(f"no run labelled {label!r}" + (f" on {target}" if target else "") + f" in {self.path}")
        return rid

    def all_run_ids(self) -> list[int]:
        with self._read() as c:
            return [int(r) for r in c.execute(sa.select(_RUNS.c.id).order_by(_RUNS.c.id)).scalars()]


class Pending:
    """`Store.pending`: len() is the count when it was made; iterating reads pages of jobs in plan order (a job
    that got a result meanwhile is still skipped, so a page read late never runs a job twice)."""

    PAGE = 1000

    def __init__(self, store: Store, run_id: int):
        self.store, self.run_id = store, run_id
        with store._read() as c:
            self._n = c.execute(store._pending_query(run_id, sa.func.count())).scalar()

    def __len__(self) -> int:
        return self._n

    def pages(self):
        last = -1
        while True:
            q = self.store._pending_query(self.run_id, _J.c.idx, _J.c.job).where(_J.c.idx > last)
            with self.store._read() as c:
                rows = c.execute(q.order_by(_J.c.idx).limit(self.PAGE)).all()
            if not rows:
                return
            last = rows[-1][0]
            yield [Job.from_dict(json.loads(r[1])) for r in rows]

    def __iter__(self):
        for page in self.pages():
            yield from page

    def workloads(self) -> list[str]:
        """The workload references of the pending jobs (for saying which files a run imports)."""
        field = D.json_field(self.store.dialect, _J.c.job, "workload")
        with self.store._read() as c:
            rows = c.execute(sa.select(field).distinct().where(_J.c.run_id == self.run_id)).scalars().all()
        return sorted(r for r in rows if r)
