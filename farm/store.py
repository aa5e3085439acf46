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
# Columns added after the first release: older stores get them (NULL) on open, so they stay readable.
_ADDED_COLS = {"results": [("samples", "TEXT"), ("launch", "TEXT")]}
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


class Store:
    """A farm results database (created on first use). One writer (the driver); readers may come and go."""

    def __init__(self, path: str | os.PathLike):
        self.path = pathlib.Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(self.path, timeout=30, isolation_level=None)  # autocommit: each write lands
        self.db.row_factory = sqlite3.Row
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: durable across process crashes
        self.db.executescript(SCHEMA)
        for table, cols in _ADDED_COLS.items():
            have = {r[1] for r in self.db.execute(f"PRAGMA table_info({table})")}
            for name, typ in cols:
                if name not in have:
                    self.db.execute(f"ALTER TABLE {table} ADD COLUMN {name} {typ}")

    def close(self):
        self.db.close()

    # ------------------------------------------------------------ runs

    def create_run(self, *, name: str, label: str | None, config_text: str, config_path: str, options: dict,
                   target: str, gpus: list, compiler_version: str, farm_version: str) -> int:
        cur = self.db.execute(
            "INSERT INTO runs (name, label, created, status, target, config_text, config_path, options, git_commit,"
            " host, gpus, compiler_version, farm_version, n_jobs, n_reused) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,0,0)",
            (name, label, time.time(), "running", target, config_text, config_path, json.dumps(options),
             git_commit(), socket.gethostname(), json.dumps(gpus), compiler_version, farm_version))
        return int(cur.lastrowid)

    def add_jobs(self, run_id: int, jobs: list[Job], reused: dict[str, int]):
        """Record the run's plan; `reused` maps job keys to the earlier run whose result stands for them."""
        with self.db:  # one transaction: a plan is recorded whole or not at all
            self.db.execute("BEGIN")
            self.db.executemany(
                "INSERT OR IGNORE INTO run_jobs (run_id, key, idx, job, reused_from) VALUES (?,?,?,?,?)",
                [(run_id, j.key, j.idx, json.dumps(j.to_dict()), reused.get(j.key)) for j in jobs])
            self.db.execute("UPDATE runs SET n_jobs=?, n_reused=? WHERE id=?", (len(jobs), len(reused), run_id))

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
            back = int(ref.partition("~")[2] or 0)
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
            d.update(workload=job["name"], params=job["params"], meta=job["meta"], key=job["key"], idx=job["idx"])
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
