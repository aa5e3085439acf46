"""`farm store migrate SRC DST`: copy a store's history (runs, plans, results, tuning records) into another
store, typically a machine's SQLite file into a fleet's PostgreSQL database.

- Into an empty destination, everything keeps its id: `run 12` and result ids (`farm repro ID`) mean the same
  there, and the destination's id sequences continue after the largest copied id.
- Into a destination that already has runs, nothing is copied unless `append` is given. Then every copied run
  gets a new id (the mapping is returned and printed), its plan and results follow it, and a run that is already
  there (same host, pid, start time and name: a migration done before) is skipped, so migrating again adds
  nothing twice. Tuning records already present (same kernel, key, config, GPU kind, compiler version) are kept.
- One transaction on the destination: a migration that fails part way leaves it as it was. Nothing of the
  source changes (a source from an older farm is brought to the current schema when opened, as by any command).
"""
from __future__ import annotations

import sqlalchemy as sa

from farm import FarmError
from farm import db as D

BATCH = 2000


def _batches(conn, query):
    res = conn.execution_options(yield_per=BATCH).execute(query).mappings()
    while True:
        rows = res.fetchmany(BATCH)
        if not rows:
            return
        yield [dict(r) for r in rows]


def migrate(src, dst, append: bool = False) -> dict:
    """Copy store `src` into store `dst` (paths or URLs). Returns {"runs", "skipped", "run_jobs", "results",
    "tuning", "renumbered": {old id: new id}}."""
    from farm.store import Store

    if str(src) == str(dst):
        raise FarmError("store migrate: the source and the destination are the same store")
    a = Store(src, write=False)
    b = Store(dst, write=True)
    try:
        with a.engine.connect() as ac:
            has_tuning = sa.inspect(ac).has_table("tuning")
        with D.writing(b.engine).begin() as bc:
            D.tuning_metadata.create_all(bc, checkfirst=True)
            existing = {(r.host, r.pid, r.created, r.name): r.id for r in bc.execute(
                sa.select(D.runs.c.id, D.runs.c.host, D.runs.c.pid, D.runs.c.created, D.runs.c.name))}
            if existing and not append:
                raise FarmError(f"store migrate: {b.path} already has {len(existing)} run(s); nothing was copied. "
                                "Pass --append to add the source's runs under new ids (runs copied before are "
                                "skipped)")
            out = {"runs": 0, "skipped": 0, "run_jobs": 0, "results": 0, "tuning": 0, "renumbered": {}}
            keep_ids = not existing
            ids: dict[int, int] = {}
            with a.engine.connect() as ac:
                for rows in _batches(ac, sa.select(D.runs).order_by(D.runs.c.id)):
                    for r in rows:
                        ident = (r["host"], r["pid"], r["created"], r["name"])
                        if ident in existing:
                            out["skipped"] += 1
                            continue
                        old = r.pop("id")
                        if keep_ids:
                            r["id"] = old
                        new = bc.execute(D.runs.insert().values(**r)).inserted_primary_key[0]
                        ids[old] = int(new)
                        out["runs"] += 1
                        if new != old:
                            out["renumbered"][old] = int(new)
                for rows in _batches(ac, sa.select(D.run_jobs).order_by(D.run_jobs.c.run_id, D.run_jobs.c.idx)):
                    rows = [r for r in rows if r["run_id"] in ids]
                    for r in rows:
                        r["run_id"] = ids[r["run_id"]]
                        if r["reused_from"] is not None:  # a run reusing one that was not copied keeps the old id
                            r["reused_from"] = ids.get(r["reused_from"], r["reused_from"])
                    if rows:
                        bc.execute(D.run_jobs.insert(), rows)
                        out["run_jobs"] += len(rows)
                src_cols = set(_columns(ac, "results"))
                for rows in _batches(ac, sa.select(*(c for c in D.results.c if c.name in src_cols))
                                     .order_by(D.results.c.id)):
                    rows = [r for r in rows if r["run_id"] in ids]
                    for r in rows:
                        r["run_id"] = ids[r["run_id"]]
                        if not keep_ids:
                            r.pop("id")
                    if rows:
                        bc.execute(D.results.insert(), rows)
                        out["results"] += len(rows)
                if has_tuning:
                    cols = [c for c in D.tuning.c if c.name != "id"]
                    for rows in _batches(ac, sa.select(*cols).order_by(D.tuning.c.id)):
                        stmt = D.insert_ignore(D.tuning, b.dialect).on_conflict_do_nothing()
                        bc.execute(stmt, rows)
                        out["tuning"] += len(rows)
            if keep_ids and b.dialect == "postgresql":  # the sequences continue after the copied ids
                for t in ("runs", "results"):
                    bc.execute(sa.text(f"SELECT setval(pg_get_serial_sequence('{t}', 'id'), "
                                       f"GREATEST((SELECT MAX(id) FROM {t}), 1), (SELECT MAX(id) FROM {t}) IS NOT NULL)"))
        return out
    finally:
        a.close()
        b.close()


def _columns(conn, table: str) -> list[str]:
    """The columns `table` has in this database (an old source may lack the newer ones)."""
    return [c["name"] for c in sa.inspect(conn).get_columns(table)]
