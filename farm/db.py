"""The storage layer under `farm.store` and `farm.tuning_db`: one SQLAlchemy Core schema and one set of
statements for both back ends, a SQLite file (the embedded default) or a PostgreSQL server (a fleet's history).

A store is named by a path (SQLite) or a URL: `postgresql://user:password@host:5432/dbname` (the psycopg
driver is used; `postgresql+psycopg://` and `sqlite:///path` are accepted as written).

Schema versions: `STEPS` is the schema's history, oldest first; a store at version N has had the first N applied.
SQLite keeps N in `PRAGMA user_version` (where stores from before this layer kept it, so an older farm still
refuses a newer store), PostgreSQL in the one-row table `farm_schema`. A new store is created whole at the
newest version (`metadata.create_all`), an older one is brought up step by step, each step and its version bump in
one transaction that holds the store's write lock (SQLite `BEGIN IMMEDIATE`, PostgreSQL an advisory lock), so
several processes opening an old store at once migrate it once.

Why not Alembic: the history is short and linear, every step is additive (new columns, an index), and stores are
opened by every `farm` command on machines that never run a migration tool by hand; Alembic would add a
dependency, an environment folder and a revision graph to carry, for steps that are each one or two statements
here. Should a step ever need to rewrite data or drop columns, its `Operations` API is the place to move to.
"""
from __future__ import annotations

import os

import sqlalchemy as sa
from sqlalchemy import event

metadata = sa.MetaData()
_ID = sa.BigInteger().with_variant(sa.Integer, "sqlite")  # SQLite: INTEGER PRIMARY KEY is the rowid
_F = sa.Double  # double precision on PostgreSQL (its REAL is 4 bytes: timestamps would lose minutes)

runs = sa.Table(
    "runs", metadata,
    sa.Column("id", _ID, primary_key=True, autoincrement=True),
    *(sa.Column(c, sa.Text) for c in ("name", "label")), sa.Column("created", _F), sa.Column("finished", _F),
    *(sa.Column(c, sa.Text) for c in ("status", "target", "config_text", "config_path", "options", "git_commit",
                                      "host", "gpus", "compiler_version", "farm_version")),
    sa.Column("n_jobs", sa.Integer), sa.Column("n_reused", sa.Integer), sa.Column("pid", sa.Integer),
    # (schema step 6) which machine and process namespace the driver runs in, and when it last said it lives,
    # by the database's clock: how a fleet's shared store tells a dead driver's run from another host's live one
    sa.Column("host_id", sa.Text), sa.Column("heartbeat", _F),
    sqlite_autoincrement=True,
)
run_jobs = sa.Table(
    "run_jobs", metadata,
    sa.Column("run_id", _ID, sa.ForeignKey("runs.id"), nullable=False, primary_key=True),
    sa.Column("key", sa.Text, nullable=False, primary_key=True),
    sa.Column("idx", sa.Integer, nullable=False), sa.Column("job", sa.Text, nullable=False),
    sa.Column("reused_from", _ID),
    sa.Index("run_jobs_order", "run_id", "idx"),
)
# Provenance of the compiled kernel (schema step 5): what ptxas made of it. Integers, so they can be queried.
PROVENANCE_COLS = ("regs", "spill_stores", "spill_loads", "shared_bytes", "local_bytes", "blocks_per_sm")
results = sa.Table(
    "results", metadata,
    sa.Column("id", _ID, primary_key=True, autoincrement=True),
    sa.Column("run_id", _ID, sa.ForeignKey("runs.id"), nullable=False),
    sa.Column("key", sa.Text, nullable=False), sa.Column("status", sa.Text, nullable=False),
    *(sa.Column(c, _F) for c in ("median_ms", "p10_ms", "p90_ms")), sa.Column("n_reps", sa.Integer),
    *(sa.Column(c, _F) for c in ("baseline_ms", "flops", "bytes", "max_abs_err", "max_rel_err", "compile_s",
                                 "validate_s", "bench_s", "wall_s")),
    *(sa.Column(c, sa.Text) for c in ("gpu", "worker", "error", "detail", "notes", "artifacts")),
    sa.Column("created", _F), sa.Column("samples", sa.Text), sa.Column("launch", sa.Text),
    *(sa.Column(c, sa.Integer) for c in PROVENANCE_COLS), sa.Column("ptxas_version", sa.Text),
    sa.UniqueConstraint("run_id", "key"),
    sa.Index("results_key", "key"),
    sqlite_autoincrement=True,
)
schema_table = sa.Table("farm_schema", metadata, sa.Column("version", sa.Integer, nullable=False))

# The tuning database's table (`farm.tuning_db`): in the store's database or a file of its own; versioned apart
# from the results (`compiler.autotune` reads it from SQLite files directly, so its columns only ever grow).
tuning_metadata = sa.MetaData()
tuning = sa.Table(
    "tuning", tuning_metadata,
    sa.Column("id", _ID, primary_key=True, autoincrement=True),
    sa.Column("kernel", sa.Text, nullable=False), sa.Column("kernel_name", sa.Text),
    sa.Column("key", sa.Text, nullable=False), sa.Column("config", sa.Text, nullable=False),
    sa.Column("gpu", sa.Text, nullable=False), sa.Column("compiler_version", sa.Text, nullable=False),
    *(sa.Column(c, _F) for c in ("median_ms", "p10_ms", "p90_ms")), sa.Column("n", sa.Integer),
    sa.Column("rep_ms", _F), sa.Column("created", _F), sa.Column("source", sa.Text),
    sa.UniqueConstraint("kernel", "key", "config", "gpu", "compiler_version"),
    sa.Index("tuning_lookup", "kernel", "key", "gpu"),
    sqlite_autoincrement=True,
)


# ------------------------------------------------------------------------------------------------- migrations

def _sqlite_only(fn):
    """Steps 1-4 predate PostgreSQL support: only SQLite stores can be at versions below 4."""
    def step(conn):
        if conn.dialect.name != "sqlite":
            raise RuntimeError("a PostgreSQL store below schema version 4 cannot exist")
        fn(conn)
    return step


def _add_columns(table: sa.Table, names):
    """A step adding columns (as declared in `table`) where they are missing: safe on stores that have some."""
    def step(conn):
        have = {c["name"] for c in sa.inspect(conn).get_columns(table.name)}
        for name in names:
            if name not in have:
                col = table.c[name]
                typ = col.type.compile(dialect=conn.dialect)
                conn.exec_driver_sql(f"ALTER TABLE {table.name} ADD COLUMN {name} {typ}")
    return step


def _first_schema(conn):
    # Today's tables hold every column the first schema had; the steps after this one find theirs present.
    metadata.create_all(conn, tables=[runs, run_jobs, results], checkfirst=True)


# Append only; never edit a released step. A step gets a connection inside the migration's transaction.
STEPS = [
    _sqlite_only(_first_schema),                                                   # 1: the first schema
    _sqlite_only(_add_columns(results, ["samples", "launch"])),                    # 2: timing samples, launch cost
    _sqlite_only(_add_columns(runs, ["pid"])),                                     # 3: the driver's pid (stale runs)
    _sqlite_only(lambda c: c.exec_driver_sql(                                      # 4: paging through a plan
        "CREATE INDEX IF NOT EXISTS run_jobs_order ON run_jobs(run_id, idx)")),
    _add_columns(results, [*PROVENANCE_COLS, "ptxas_version"]),                    # 5: compiled-kernel provenance
    _add_columns(runs, ["host_id", "heartbeat"]),                                  # 6: drivers' liveness (fleets)
]
HEAD = len(STEPS)
_PG_LOCK = 0x7469_6C65_6661_726D & 0x7FFF_FFFF_FFFF_FFFF  # "tilefarm": the advisory lock key migrations hold


def get_version(conn) -> int | None:
    """The store's schema version; None for an empty database (nothing of the farm's in it yet)."""
    if conn.dialect.name == "sqlite":
        v = conn.exec_driver_sql("PRAGMA user_version").scalar()
        if v:
            return int(v)
        return 0 if _has_farm_tables(conn) else None
    if sa.inspect(conn).has_table("farm_schema"):
        v = conn.execute(sa.select(schema_table.c.version)).scalar()
        return int(v or 0)
    return 0 if _has_farm_tables(conn) else None


def _has_farm_tables(conn) -> bool:
    insp = sa.inspect(conn)
    return any(insp.has_table(t) for t in ("runs", "run_jobs", "results"))


def _set_version(conn, n: int) -> None:
    if conn.dialect.name == "sqlite":
        conn.exec_driver_sql(f"PRAGMA user_version={int(n)}")
    else:
        conn.execute(schema_table.delete())
        conn.execute(schema_table.insert().values(version=n))


def _lock(conn) -> None:
    """Take the store's write lock for the rest of this transaction (SQLite took it at BEGIN IMMEDIATE)."""
    if conn.dialect.name == "postgresql":
        conn.execute(sa.text("SELECT pg_advisory_xact_lock(:k)"), {"k": _PG_LOCK})


def upgrade(engine: sa.Engine, create: bool = True) -> int:
    """Create the schema or bring it to HEAD; returns the version found before. Raises NewerSchema when the store
    was written by a newer farm (nothing is changed then)."""
    with engine.connect() as conn:
        found = get_version(conn)
    if found is not None and found > HEAD:
        raise NewerSchema(found)
    if found == HEAD:
        return found
    with writing(engine).begin() as conn:
        _lock(conn)
        now = get_version(conn)  # another process may have migrated meanwhile
        if now is None:
            if not create:
                raise LookupError("no farm store in this database")
            metadata.create_all(conn, checkfirst=True)
            _set_version(conn, HEAD)
            return 0
        if now > HEAD:
            raise NewerSchema(now)
        for n in range(now, HEAD):
            STEPS[n](conn)
        _set_version(conn, HEAD)
    return found if found is not None else 0


class NewerSchema(Exception):
    def __init__(self, version: int):
        super().__init__(f"schema {version}, this farm knows {HEAD}")
        self.version = version


# ------------------------------------------------------------------------------------------------- engines

def is_url(target: str | os.PathLike) -> bool:
    return isinstance(target, str) and "://" in target


def url_of(target: str) -> sa.URL:
    """A SQLAlchemy URL for a store URL: `postgresql://` means the psycopg (3) driver."""
    u = sa.make_url(target)
    if u.drivername in ("postgresql", "postgres"):
        u = u.set(drivername="postgresql+psycopg")
    return u


def display(target) -> str:
    """How a store is named in messages: its path, or its URL with the password hidden."""
    if is_url(target):
        return url_of(target).render_as_string(hide_password=True).replace("postgresql+psycopg://",
                                                                           "postgresql://")
    return str(target)


def results_engine(engine: sa.Engine) -> sa.Engine:
    """The engine `Store.add_result` writes through. PostgreSQL: a pool of its own whose sessions commit each
    statement by itself (one INSERT ... ON CONFLICT is atomic alone: no BEGIN/COMMIT round trips) and
    asynchronously (synchronous_commit=off: the commit returns before the server's disk flush, which follows within
    ~0.2 s, in order; a server crash can drop only the newest results, which then show as pending for `farm run
    --resume`, while runs and plans go through `engine` and are flushed before their commit returns). SQLite:
    `engine` itself."""
    if engine.dialect.name != "postgresql":
        return engine
    return sa.create_engine(engine.url, pool_pre_ping=True, pool_size=1, max_overflow=4,
                            isolation_level="AUTOCOMMIT",
                            connect_args={"connect_timeout": 10, "application_name": "tilefarm",
                                          "options": "-c synchronous_commit=off"})


def engine_for(target, *, busy_timeout_s: float = 30.0, wal: bool = True) -> sa.Engine:
    """An engine for a store path or URL. SQLite: every transaction is one BEGIN (BEGIN IMMEDIATE through
    `writing(engine)`: a writer takes the lock up front and waits on the busy timeout instead of failing on a
    lock upgrade), WAL with synchronous=NORMAL (durable across process crashes). PostgreSQL: a small pool
    checked before use (a fleet's server may restart between two results)."""
    if is_url(target):
        u = url_of(target)
        if u.get_backend_name() == "sqlite":
            return engine_for(u.database, busy_timeout_s=busy_timeout_s, wal=wal)
        if u.get_backend_name() != "postgresql":
            raise ValueError(f"{display(target)}: a store is a SQLite file or a postgresql:// URL, "
                             f"not {u.get_backend_name()}")
        return sa.create_engine(u, pool_pre_ping=True, pool_size=2, max_overflow=4,
                                connect_args={"connect_timeout": 10, "application_name": "tilefarm"})
    import sqlite3

    path = os.fspath(target)  # opened by sqlite3 itself: a file name is never parsed as a URL (`?`, `#`, `%`)
    eng = sa.create_engine("sqlite://", creator=lambda: sqlite3.connect(path, timeout=busy_timeout_s,
                                                                       check_same_thread=False),
                           poolclass=sa.pool.QueuePool)

    @event.listens_for(eng, "connect")
    def _connect(dbapi_conn, _rec):
        dbapi_conn.isolation_level = None  # the driver's own BEGIN handling off: ours below
        dbapi_conn.execute(f"PRAGMA busy_timeout={int(busy_timeout_s * 1000)}")
        if wal:
            try:
                if dbapi_conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                    dbapi_conn.execute("PRAGMA journal_mode=WAL")
            except Exception:  # a read-only store on a read-only medium keeps its mode
                pass
        dbapi_conn.execute("PRAGMA synchronous=NORMAL")

    @event.listens_for(eng, "begin")
    def _begin(conn):
        conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get("farm_write") else "BEGIN")

    return eng


def writing(engine: sa.Engine) -> sa.Engine:
    """The engine for write transactions (on SQLite they take the write lock at BEGIN)."""
    return engine.execution_options(farm_write=True)


def insert_ignore(table: sa.Table, dialect_name: str):
    """INSERT ... ON CONFLICT DO NOTHING, in the dialect's spelling."""
    if dialect_name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    return insert(table)


def now(dialect_name: str):
    """The database's clock, in seconds since the epoch: one clock for every host writing a shared store."""
    if dialect_name == "postgresql":
        return sa.cast(sa.func.extract("epoch", sa.func.clock_timestamp()), _F)
    return sa.literal_column("((julianday('now') - 2440587.5) * 86400.0)", _F)


def json_field(dialect_name: str, column, field: str):
    """`column` (JSON text) -> its top-level `field` as text."""
    if dialect_name == "postgresql":
        return sa.cast(column, sa.dialects.postgresql.JSONB)[field].astext
    return sa.func.json_extract(column, f"$.{field}")
