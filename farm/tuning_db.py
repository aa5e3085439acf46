"""The tuning database: one row per measured config, in the farm's SQLite store (table `tuning`).

A record: the kernel's source hash (`JITFunction.cache_key`) and name, the key text (`compiler.autotune.key_json`:
key argument values and argument dtypes), the config (canonical JSON: kwargs, num_warps, num_stages), the GPU
kind ("H200", or "interpreter"), the compiler version, median/p10/p90 in ms, the number of timed repetitions,
the timing budget (rep_ms) the measurement had, when and where it was made. Measuring the same config again
(same kernel, key, config, GPU kind and compiler version) replaces its row; everything else adds a row.

Writers: any number of processes at once (WAL, `BEGIN IMMEDIATE` transactions, a long busy timeout), nothing
lost. Readers: `compiler.autotune` reads this table directly with sqlite3 (the compiler never imports farm),
or the JSON file `export_json` writes (`{"format": "tilefarm-tuning", "version": 1, "records": [...]}`), which
can ship inside a package and be loaded back with `import_json`.

This module needs only the standard library and the compiler (no pydantic, no ray): the GPU node's
benchmark scripts use it as is.
"""
from __future__ import annotations

import json
import os
import pathlib
import socket
import sqlite3
import time

SCHEMA = """
CREATE TABLE IF NOT EXISTS tuning (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    kernel TEXT NOT NULL, kernel_name TEXT, key TEXT NOT NULL, config TEXT NOT NULL, gpu TEXT NOT NULL,
    compiler_version TEXT NOT NULL, median_ms REAL, p10_ms REAL, p90_ms REAL, n INTEGER, rep_ms REAL,
    created REAL, source TEXT,
    UNIQUE (kernel, key, config, gpu, compiler_version)
);
CREATE INDEX IF NOT EXISTS tuning_lookup ON tuning(kernel, key, gpu);
"""
COLUMNS = ("kernel", "kernel_name", "key", "config", "gpu", "compiler_version", "median_ms", "p10_ms", "p90_ms",
           "n", "rep_ms", "created", "source")
FORMAT = "tilefarm-tuning"


def _canonical_config(cfg) -> str:
    if isinstance(cfg, str):
        cfg = json.loads(cfg)
    if hasattr(cfg, "to_dict"):
        cfg = cfg.to_dict()
    return json.dumps(cfg, sort_keys=True, separators=(",", ":"), default=str)


def make_record(*, kernel: str, key: str, config, gpu: str, compiler_version: str, median_ms: float,
                p10_ms: float | None = None, p90_ms: float | None = None, n: int | None = None,
                rep_ms: float | None = None, kernel_name: str | None = None, source: str | None = None,
                created: float | None = None) -> dict:
    """A record dict with the database's columns (config given as a Config, dict or JSON text)."""
    return {"kernel": kernel, "kernel_name": kernel_name, "key": key, "config": _canonical_config(config),
            "gpu": gpu, "compiler_version": compiler_version, "median_ms": median_ms, "p10_ms": p10_ms,
            "p90_ms": p90_ms, "n": n, "rep_ms": rep_ms, "created": created if created is not None else time.time(),
            "source": source if source is not None else f"{socket.gethostname()}:{os.getpid()}"}


class TuningDB:
    """Read-write access to the `tuning` table of a SQLite file (created on first use)."""

    def __init__(self, path: str | os.PathLike):
        self.path = pathlib.Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(self.path, timeout=120, isolation_level=None)
        self.db.row_factory = sqlite3.Row
        self.db.execute("PRAGMA busy_timeout=120000")
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self._write("executescript", SCHEMA)

    def close(self):
        self.db.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _write(self, how: str, sql: str, rows=None):
        # One IMMEDIATE transaction per write: takes the write lock up front, so concurrent writers queue on
        # the busy timeout instead of failing on a read->write lock upgrade.
        for attempt in range(50):
            try:
                if how == "executescript":
                    self.db.executescript(sql)
                    return
                self.db.execute("BEGIN IMMEDIATE")
                try:
                    self.db.executemany(sql, rows) if how == "many" else self.db.execute(sql, rows or ())
                except BaseException:
                    self.db.execute("ROLLBACK")
                    raise
                self.db.execute("COMMIT")
                return
            except sqlite3.OperationalError as e:
                if "locked" not in str(e) and "busy" not in str(e):
                    raise
                time.sleep(0.05 * (attempt + 1))
        raise sqlite3.OperationalError(f"{self.path}: database stayed locked")

    def add(self, records: list[dict]) -> int:
        """Insert records in one transaction (a re-measured config replaces its row); returns how many."""
        rows = []
        for r in records:
            r = {**r, "config": _canonical_config(r["config"])}
            rows.append(tuple(r.get(c) for c in COLUMNS))
        if not rows:
            return 0
        sets = ", ".join(f"{c}=excluded.{c}" for c in COLUMNS if c not in ("kernel", "key", "config", "gpu",
                                                                           "compiler_version"))
        self._write("many", f"INSERT INTO tuning ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))}) "
                            f"ON CONFLICT (kernel, key, config, gpu, compiler_version) DO UPDATE SET {sets}", rows)
        return len(rows)

    def records(self, kernel: str | None = None, key: str | None = None, gpu: str | None = None,
                kernel_name: str | None = None) -> list[dict]:
        """Records matching every filter given, oldest first."""
        where, args = [], []
        for col, val in (("kernel", kernel), ("key", key), ("gpu", gpu), ("kernel_name", kernel_name)):
            if val is not None:
                where.append(f"{col}=?")
                args.append(val)
        sql = "SELECT * FROM tuning" + (f" WHERE {' AND '.join(where)}" if where else "") + " ORDER BY id"
        out = []
        for row in self.db.execute(sql, args):
            d = dict(row)
            d.pop("id", None)
            out.append(d)
        return out

    def count(self) -> int:
        return self.db.execute("SELECT COUNT(*) FROM tuning").fetchone()[0]

    def best(self, kernel: str, key: str, gpu: str, compiler_version: str | None = None) -> dict | None:
        """The record an autotuner would launch with (compiler.autotune.select_best's rule)."""
        from compiler.autotune import select_best

        return select_best(self.records(kernel=kernel, key=key, gpu=gpu), compiler_version)

    def summary(self) -> list[dict]:
        """One row per (kernel, key, gpu): how many configs were measured and the best one."""
        from compiler.autotune import select_best

        groups: dict = {}
        for r in self.records():
            groups.setdefault((r["kernel"], r["key"], r["gpu"]), []).append(r)
        out = []
        for (kernel, key, gpu), rows in groups.items():
            best = select_best(rows)
            out.append({"kernel": kernel, "kernel_name": rows[0].get("kernel_name"), "key": key, "gpu": gpu,
                        "n_configs": len(rows), "best": best})
        return out

    # ---------------------------------------------------------------- files

    def export_json(self, path: str | os.PathLike, **filters) -> int:
        """Write the records (optionally filtered like `records`) to a JSON file, atomically; returns the count."""
        recs = self.records(**filters)
        data = {"format": FORMAT, "version": 1, "exported": time.time(), "records": recs}
        p = pathlib.Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
        os.replace(tmp, p)
        return len(recs)

    def import_json(self, path: str | os.PathLike) -> int:
        """Add the records of an exported JSON file; returns how many."""
        data = json.loads(pathlib.Path(path).read_text())
        if data.get("format") != FORMAT:
            raise ValueError(f"{path}: not a tilefarm tuning export (format {data.get('format')!r})")
        return self.add([{c: r.get(c) for c in COLUMNS} for r in data.get("records", [])])

    # ---------------------------------------------------------------- in-process tunings

    def save_autotuner(self, kernel) -> int:
        """Store what an in-process `compiler.autotune` kernel measured (its `tuned_records()`)."""
        return self.add(kernel.tuned_records())
