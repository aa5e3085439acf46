"""Where results live: SQLite (WAL mode), one row per job result, written as each result arrives.

Tables: `runs` (one per `farm run`, with provenance: git commit, host, GPUs, compiler version, config text,
label), `run_jobs` (the plan of each run: every job's spec, or the earlier run whose result it reuses) and
`results` (one row per (run, job key), enforced by a unique constraint: a resumed run cannot duplicate a row).
A run's rows are its own results plus the reused ones, so `farm report` shows the whole sweep.
"""
from __future__ import annotations

import json
import os
import pathlib
import socket
import sqlite3
import subprocess
import tempfile
import time

from farm import FarmError
from farm.jobs import TRANSIENT, Job, Result

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT, label TEXT, created REAL, finished REAL, status TEXT, target TEXT,
    config_text TEXT, config_path TEXT, options TEXT,
    git_commit TEXT, host TEXT, gpus TEXT, compiler_version TEXT, farm_version TEXT,
    n_jobs INTEGER, n_reused INTEGER
);
CREATE TABLE IF NOT EXISTS run_jobs (
    run_id INTEGER NOT NULL REFERENCES runs(id), key TEXT NOT NULL, idx INTEGER NOT NULL,
    job TEXT NOT NULL, reused_from INTEGER,
    PRIMARY KEY (run_id, key)
);
CREATE TABLE IF NOT EXISTS results (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id INTEGER NOT NULL REFERENCES runs(id), key TEXT NOT NULL, status TEXT NOT NULL,
    median_ms REAL, p10_ms REAL, p90_ms REAL, n_reps INTEGER, baseline_ms REAL, flops REAL, bytes REAL,
    max_abs_err REAL, max_rel_err REAL, compile_s REAL, validate_s REAL, bench_s REAL, wall_s REAL,
    gpu TEXT, worker TEXT, error TEXT, detail TEXT, notes TEXT, artifacts TEXT, created REAL,
    samples TEXT, launch TEXT,
    UNIQUE (run_id, key)
);
CREATE INDEX IF NOT EXISTS results_key ON results(key);
"""


def _add_missing(table: str, cols: list[tuple[str, str]]):
    """A migration adding columns that stores from before the version table may or may not have."""
    def migrate(db):
        have = {r[1] for r in db.execute(f"PRAGMA table_info({table})")}
        for name, typ in cols:
            if name not in have:
                db.execute(f"ALTER TABLE {table} ADD COLUMN {name} {typ}")
    return migrate


# The schema's history, oldest first: a store at `PRAGMA user_version` N has had the first N applied (stores from
# before the version table read 0; every step is safe on them). Append only; never edit a released step.
MIGRATIONS = [
    lambda db: [db.execute(stmt) for stmt in SCHEMA.split(";") if stmt.strip()],  # 1: the first schema
    _add_missing("results", [("samples", "TEXT"), ("launch", "TEXT")]),      # 2: timing samples, launch cost
    _add_missing("runs", [("pid", "INTEGER")]),                              # 3: the driver's pid (stale runs)
    lambda db: db.execute("CREATE INDEX IF NOT EXISTS run_jobs_order ON run_jobs(run_id, idx)"),  # 4: paging
]
SQLITE_MAGIC = b"SQLite format 3\x00"
_JSON_COLS = ("gpu", "notes", "artifacts", "samples", "launch")
_RESULT_COLS = ("status", "median_ms", "p10_ms", "p90_ms", "n_reps", "baseline_ms", "flops", "bytes", "max_abs_err",
                "max_rel_err", "compile_s", "validate_s", "bench_s", "wall_s", "gpu", "worker", "error", "detail",
                "notes", "artifacts", "samples", "launch")


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
    """Create a new store atomically: built whole beside `path`, then linked into place, so no process ever sees
    the empty file sqlite would leave there (an empty file is refused as a store: it may be a truncated one)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}-new-", dir=path.parent)
    os.close(fd)
    try:
        db = sqlite3.connect(tmp, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        for n, step in enumerate(MIGRATIONS):
            step(db)
            db.execute(f"PRAGMA user_version={n + 1}")
        db.close()  # the last connection: the WAL is checkpointed into the file and removed
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


class Store:
    """A farm results database (created on first use). One writer (the driver); readers may come and go."""

    def __init__(self, path: str | os.PathLike, write: bool = True):
        """Open (or create) the store. A file that is not a store (empty, not SQLite, damaged, from a newer farm)
        is a FarmError before anything is written to it; with `write`, so is a store or folder this process
        cannot write (checked now, before any job runs, rather than when the first result arrives)."""
        self.path = pathlib.Path(path)
        _check_path(self.path, write)
        try:
            if not self.path.exists():
                _create(self.path)
            self.db = sqlite3.connect(self.path, timeout=30, isolation_level=None)  # autocommit: each write lands
            self.db.row_factory = sqlite3.Row
            version = self.db.execute("PRAGMA user_version").fetchone()[0]
            if version > len(MIGRATIONS):
                raise FarmError(f"{self.path} was written by a newer farm (schema {version}, this one knows "
                                f"{len(MIGRATIONS)}): upgrade tilefarm to use it")
            if self.db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: durable across process crashes
            for n in range(version, len(MIGRATIONS)):
                with self.db:
                    self.db.execute("BEGIN IMMEDIATE")
                    if self.db.execute("PRAGMA user_version").fetchone()[0] == n:  # another process may be ahead
                        MIGRATIONS[n](self.db)
                        self.db.execute(f"PRAGMA user_version={n + 1}")
        except sqlite3.DatabaseError as e:
            raise FarmError(f"{self.path} is not a usable results store ({e}); nothing was written to it. "
                            "Move it aside to start a new one, or restore it from a copy") from None
        except sqlite3.Error as e:
            raise FarmError(f"cannot open the results store {self.path}: {e}") from None

    def stale_runs(self) -> list[int]:
        """Mark interrupted the runs still "running" whose driver (on this host) no longer exists: it was killed
        (SIGKILL, out of memory, power) before it could say so. Returns their ids (`farm run --resume ID`)."""
        me = socket.gethostname()
        rows = [(r["id"], r["status"]) for r in self.db.execute(
            "SELECT id, pid, status, created FROM runs WHERE status IN ('running', 'planning') AND host=? "
            "AND pid IS NOT NULL", (me,)) if not _alive(r["pid"], r["created"])]
        for rid, status in rows:  # killed while planning: its plan is partial, it cannot be resumed
            self.set_status(rid, "interrupted" if status == "running" else "abandoned")
        return [rid for rid, status in rows if status == "running"]

    def delete_run(self, run_id: int):
        """Remove a run that has no results (one stopped while its plan was being recorded)."""
        with self.db:
            self.db.execute("BEGIN")
            if self.db.execute("SELECT COUNT(*) FROM results WHERE run_id=?", (run_id,)).fetchone()[0]:
                raise FarmError(f"run {run_id} has results: not deleted")
            self.db.execute("DELETE FROM run_jobs WHERE run_id=?", (run_id,))
            self.db.execute("DELETE FROM runs WHERE id=?", (run_id,))

    def close(self):
        self.db.close()

    # ------------------------------------------------------------ runs

    def create_run(self, *, name: str, label: str | None, config_text: str, config_path: str, options: dict,
                   target: str, gpus: list, compiler_version: str, farm_version: str, status: str = "running") -> int:
        cur = self.db.execute(
            "INSERT INTO runs (name, label, created, status, target, config_text, config_path, options, git_commit,"
            " host, gpus, compiler_version, farm_version, n_jobs, n_reused, pid)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,0,0,?)",
            (name, label, time.time(), status, target, config_text, config_path, json.dumps(options),
             git_commit(), socket.gethostname(), json.dumps(gpus), compiler_version, farm_version, os.getpid()))
        return int(cur.lastrowid)

    def add_jobs(self, run_id: int, jobs: list[Job], reused: dict[str, int]):
        """Record the run's plan; `reused` maps job keys to the earlier run whose result stands for them."""
        with self.db:  # one transaction: these jobs are recorded whole or not at all (a plan may come in parts)
            self.db.execute("BEGIN")
            added = self.db.executemany(
                "INSERT OR IGNORE INTO run_jobs (run_id, key, idx, job, reused_from) VALUES (?,?,?,?,?)",
                [(run_id, j.key, j.idx, json.dumps(j.to_dict()), reused.get(j.key)) for j in jobs]).rowcount
            n_reused = len({j.key for j in jobs if j.key in reused})
            self.db.execute("UPDATE runs SET n_jobs=n_jobs+?, n_reused=n_reused+? WHERE id=?",
                            (added, n_reused, run_id))

    def rekey_jobs(self, run_id: int, changed: dict[str, Job]):
        """Give planned jobs of a run new keys ({old key: job with its new key}), in one transaction."""
        with self.db:
            self.db.execute("BEGIN")
            for old, job in changed.items():
                self.db.execute("UPDATE run_jobs SET key=?, job=? WHERE run_id=? AND key=?",
                                (job.key, json.dumps(job.to_dict()), run_id, old))

    def finish_run(self, run_id: int, status: str):
        self.db.execute("UPDATE runs SET status=?, finished=? WHERE id=?", (status, time.time(), run_id))

    def set_status(self, run_id: int, status: str):
        self.db.execute("UPDATE runs SET status=? WHERE id=?", (status, run_id))

    def resolve(self, ref: str | int) -> int:
        """A run id from "12", "latest", "latest~1" or a label; FarmError when there is none."""
        ref = str(ref)
        if ref.isdigit():
            row = self.db.execute("SELECT id FROM runs WHERE id=?", (int(ref),)).fetchone()
        elif ref.startswith("latest"):
            back = ref.partition("~")[2] or "0"
            if ref not in ("latest", f"latest~{back}") or not back.isdigit():
                raise FarmError(f"run {ref!r}: `latest` or `latest~N` (N runs before the latest), N a number")
            back = int(back)
            row = self.db.execute("SELECT id FROM runs ORDER BY id DESC LIMIT 1 OFFSET ?", (back,)).fetchone()
        else:
            row = self.db.execute("SELECT id FROM runs WHERE label=? ORDER BY id DESC LIMIT 1", (ref,)).fetchone()
        if row is None:
            raise FarmError(f"no run {ref!r} in {self.path} (see `farm runs`)")
        return int(row["id"])

    def run(self, run_id: int) -> dict:
        row = self.db.execute("SELECT * FROM runs WHERE id=?", (run_id,)).fetchone()
        if row is None:
            raise FarmError(f"no run {run_id} in {self.path}")
        d = dict(row)
        d["gpus"], d["options"] = json.loads(d["gpus"] or "[]"), json.loads(d["options"] or "{}")
        d["n_done"] = self.db.execute("SELECT COUNT(*) FROM results WHERE run_id=?", (run_id,)).fetchone()[0]
        d["n_failed"] = self.db.execute("SELECT COUNT(*) FROM results WHERE run_id=? AND status NOT IN "
                                        "('ok','validated','compiled')", (run_id,)).fetchone()[0]
        return d

    def runs(self, limit: int = 20) -> list[dict]:
        ids = [r[0] for r in self.db.execute("SELECT id FROM runs ORDER BY id DESC LIMIT ?", (limit,))]
        return [self.run(i) for i in ids]

    # ------------------------------------------------------------ results

    def add_result(self, run_id: int, res: Result) -> bool:
        """Store one result; False when the run already has one for that key (nothing is duplicated)."""
        d = res.to_dict()
        vals = [json.dumps(d[c]) if c in _JSON_COLS else d[c] for c in _RESULT_COLS]
        cur = self.db.execute(
            f"INSERT OR IGNORE INTO results (run_id, key, {', '.join(_RESULT_COLS)}, created) "
            f"VALUES (?, ?, {', '.join('?' * len(_RESULT_COLS))}, ?)", (run_id, res.key, *vals, time.time()))
        return cur.rowcount == 1

    def done_keys(self, keys: list[str]) -> dict[str, int]:
        """Key -> latest run holding a final (not transient) result for it, for keys the store has done."""
        out: dict[str, int] = {}
        q = ",".join("?" * len(TRANSIENT))
        for i in range(0, len(keys), 500):
            chunk = keys[i:i + 500]
            rows = self.db.execute(
                f"SELECT key, MAX(run_id) FROM results WHERE key IN ({','.join('?' * len(chunk))}) "
                f"AND status NOT IN ({q}) GROUP BY key", (*chunk, *TRANSIENT))
            out.update({k: r for k, r in rows})
        return out

    def pending_jobs(self, run_id: int) -> list[Job]:
        """The run's planned jobs that have no result yet (what `--resume` runs), in plan order."""
        rows = self.db.execute(
            "SELECT j.job FROM run_jobs j LEFT JOIN results r ON r.run_id=j.run_id AND r.key=j.key "
            "WHERE j.run_id=? AND j.reused_from IS NULL AND r.id IS NULL ORDER BY j.idx", (run_id,))
        return [Job.from_dict(json.loads(r[0])) for r in rows]

    def pending(self, run_id: int) -> "Pending":
        """The run's planned jobs without a result (what `--resume` runs), in plan order, read lazily page by page:
        a sized iterable, so a million-job run is never all in memory."""
        return Pending(self, run_id)

    def rows(self, run_id: int, samples: bool = False) -> list[dict]:
        """Every job of a run with its result (its own, or the reused one), in plan order; None result if pending.

        With `samples`, each row also has the per-repetition `samples` (None in stores older than that column)
        and the planned `job` (workload reference, seed); without, rows stay small for reports.
        """
        rows = self.db.execute(
            "SELECT j.job, j.reused_from, r.* FROM run_jobs j LEFT JOIN results r "
            "ON r.key=j.key AND r.run_id=COALESCE(j.reused_from, j.run_id) WHERE j.run_id=? ORDER BY j.idx",
            (run_id,))
        out = []
        for row in rows:
            d = dict(row)
            job = json.loads(d.pop("job"))
            d["result_id"] = d.pop("id", None)  # the stored result's id (`farm repro ID`)
            for c in _JSON_COLS:
                d[c] = json.loads(d[c]) if d.get(c) else None
            d.update(workload=job["name"], params=job["params"], meta=job["meta"], key=job["key"], idx=job["idx"],
                     compiler=job.get("compiler") or "tilefarm")  # plans from before compilers were an axis
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
        row = self.db.execute("SELECT run_id, key FROM results WHERE id=?", (int(result_id),)).fetchone()
        if row is None:
            raise FarmError(f"no result {result_id} in {self.path} (result ids are in `farm report RUN --format json`)")
        return int(row["run_id"]), row["key"]

    def latest_with_label(self, label: str, target: str | None = None, before: int | None = None) -> int:
        """The newest run labelled `label` (on GPU kind `target` when given, older than run `before` when given)."""
        q, args = "SELECT id FROM runs WHERE label=?", [label]
        if target is not None:
            q, args = q + " AND target=?", args + [target]
        if before is not None:
            q, args = q + " AND id<?", args + [before]
        row = self.db.execute(q + " ORDER BY id DESC LIMIT 1", args).fetchone()
        if row is None:
            raise FarmError(f"no run labelled {label!r}" + (f" on {target}" if target else "") + f" in {self.path}")
        return int(row["id"])

    def all_run_ids(self) -> list[int]:
        return [int(r[0]) for r in self.db.execute("SELECT id FROM runs ORDER BY id")]


class Pending:
    """`Store.pending`: len() is the count when it was made; iterating reads pages of jobs in plan order (a job
    that got a result meanwhile is still skipped, so a page read late never runs a job twice)."""

    PAGE = 1000

    def __init__(self, store: Store, run_id: int):
        self.store, self.run_id = store, run_id
        self._n = store.db.execute(
            "SELECT COUNT(*) FROM run_jobs j LEFT JOIN results r ON r.run_id=j.run_id AND r.key=j.key "
            "WHERE j.run_id=? AND j.reused_from IS NULL AND r.id IS NULL", (run_id,)).fetchone()[0]

    def __len__(self) -> int:
        return self._n

    def pages(self):
        last = -1
        while True:
            rows = self.store.db.execute(
                "SELECT j.idx, j.job FROM run_jobs j LEFT JOIN results r ON r.run_id=j.run_id AND r.key=j.key "
                "WHERE j.run_id=? AND j.reused_from IS NULL AND r.id IS NULL AND j.idx>? ORDER BY j.idx LIMIT ?",
                (self.run_id, last, self.PAGE)).fetchall()
            if not rows:
                return
            last = rows[-1][0]
            yield [Job.from_dict(json.loads(r[1])) for r in rows]

    def __iter__(self):
        for page in self.pages():
            yield from page

    def workloads(self) -> list[str]:
        """The workload references of the pending jobs (for saying which files a run imports)."""
        rows = self.store.db.execute(
            "SELECT DISTINCT json_extract(job, '$.workload') FROM run_jobs WHERE run_id=?", (self.run_id,))
        return sorted(r[0] for r in rows if r[0])
