"""The tuning database: one row per measured config, in the farm's SQLite store (table `tuning`).

A record: the kernel's source hash (`JITFunction.cache_key`) and name, the key text (`compiler.autotune.key_json`:
key argument values and argument dtypes), the config (canonical JSON: kwargs, num_warps, num_stages), the GPU
kind ("H200", or "interpreter"), the compiler version, median/p10/p90 in ms, the number of timed repetitions,
the timing budget (rep_ms) the measurement had, when and where it was made. Measuring the same config again
(same kernel, key, config, GPU kind and compiler version) replaces its row; everything else adds a row.

Where: a SQLite file (usually the farm's store file) or a PostgreSQL database (`postgresql://...`, the same
database as a fleet's results store), through the one storage layer of `farm.db`.

Writers: any number of processes at once (SQLite: WAL, `BEGIN IMMEDIATE` transactions, a long busy timeout;
PostgreSQL: INSERT ... ON CONFLICT DO UPDATE), nothing lost. Readers: `compiler.autotune` reads SQLite files
directly with sqlite3 (the compiler never imports farm), a PostgreSQL tuning table by its URL (SQLAlchemy's text
queries on this table's columns, imported only then), or the JSON file `export_json` writes (`{"format":
"tilefarm-tuning", "version": 1, "records": [...]}`), which can ship inside a package and be loaded back with
`import_json`.
"""
from __future__ import annotations

import json
import os
import pathlib
import socket
import time

import sqlalchemy as sa

from farm import db as D

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


_T = D.tuning
_UNIQUE = ("kernel", "key", "config", "gpu", "compiler_version")


class TuningDB:
    """Read-write access to the `tuning` table of a SQLite file or a PostgreSQL database (created on first use)."""

    def __init__(self, path: str | os.PathLike):
        if D.is_url(path):
            self.path = D.display(path)
        else:
            self.path = pathlib.Path(path)
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self.engine = D.engine_for(path if D.is_url(path) else self.path, busy_timeout_s=120)
        with D.writing(self.engine).begin() as c:
            D.tuning_metadata.create_all(c, checkfirst=True)

    def close(self):
        self.engine.dispose()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def add(self, records: list[dict]) -> int:
        """Insert records in one transaction (a re-measured config replaces its row); returns how many."""
        rows = [{c: (_canonical_config(r["config"]) if c == "config" else r.get(c)) for c in COLUMNS} for r in records]
        if not rows:
            return 0
        stmt = D.insert_ignore(_T, self.engine.dialect.name)
        stmt = stmt.on_conflict_do_update(index_elements=list(_UNIQUE), set_={
            c: stmt.excluded[c] for c in COLUMNS if c not in _UNIQUE})
        with D.writing(self.engine).begin() as c:  # SQLite: BEGIN IMMEDIATE, writers queue on the busy timeout
            c.execute(stmt, rows)
        return len(rows)

    def records(self, kernel: str | None = None, key: str | None = None, gpu: str | None = None,
                kernel_name: str | None = None) -> list[dict]:
        """Records matching every filter given, oldest first."""
        q = sa.select(*(_T.c[c] for c in COLUMNS))
        for col, val in (("kernel", kernel), ("key", key), ("gpu", gpu), ("kernel_name", kernel_name)):
            if val is not None:
                q = q.where(_T.c[col] == val)
        with self.engine.connect() as c:
            return [dict(r) for r in c.execute(q.order_by(_T.c.id)).mappings()]

    def count(self) -> int:
        with self.engine.connect() as c:
            return c.execute(sa.select(sa.func.count()).select_from(_T)).scalar()

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
