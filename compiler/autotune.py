"""`@compiler.autotune` and `@compiler.heuristics`, with Triton's meaning, plus the tuning-database reader.

    @compiler.autotune(configs=[compiler.Config({"BLOCK": 256}, num_warps=2),
                                compiler.Config({"BLOCK": 1024}, num_warps=4)], key=["N"])
    @compiler.jit
    def kernel(X, Y, N, BLOCK: tl.constexpr): ...

    kernel[lambda meta: (compiler.cdiv(N, meta["BLOCK"]),)](x, y, N)   # first call for N=...: tunes
    kernel.best_config                                                   # the winner for the last key

What happens on a call (`Autotuner.run`):
1. The key: the values of the `key` arguments plus the dtype of every argument that has one (as Triton).
2. Known key (in memory): launch with its config straight away. The generated launcher (`_make_fast_launch`)
   looks the key up in a dict and calls the JITFunction's own generated launch path with the config's
   keyword arguments: a few hundred nanoseconds on top of a plain launch.
3. New key: the tuning database is asked first (`set_database(path)` or env TILEFARM_TUNING_DB, a SQLite file
   written by `farm tune`, a JSON export of it, or a database URL, `postgresql://user@host/db`, where a fleet
   keeps one history; several separated by os.pathsep). A hit launches
   with no tuning at all. The database matches on the kernel's source hash (`JITFunction.cache_key`), the key
   and the GPU kind; among matching records it prefers this compiler version, then the longest-timed
   measurements, then the fastest median.
4. Otherwise the configs are pruned (`prune_configs_by`: `early_config_prune(configs, named_args, **kwargs)`
   with every argument of the call in both, or, when it takes no **kwargs, the names it declares; then
   `perf_model(**named_args, **kwargs, **config.all_kwargs())` keeping `top_k`), compiled in parallel
   (`compile_mode`: "process" forks workers that fill the disk cache, "thread" a thread pool, "serial"), and
   each is timed with `do_bench`; the fastest wins. Before every timed call the `reset_to_zero` arguments are
   zeroed and after it the `restore_value` arguments get their values from before tuning back; after tuning
   the `reset_to_zero` arguments are zeroed once more and the call the user made runs with the winner.
   A config that fails to compile or run gets an infinite time (it can never win, unless all fail: error).

Timing rule in the interpreter (NumPy arrays or CPU torch tensors as arguments, or TILEFARM_INTERPRET=1; the
GPU driver is never touched), where nothing can be timed: every surviving config is still run once, in order,
through the same trial path (so reset_to_zero, restore_value, pre_hooks and failures behave as on a GPU), and
its "time" is its position in the pruned list, so the first config that compiles and runs wins. A `do_bench` given to `autotune` (or `set_default_timer`) replaces that
rule: it is called as `do_bench(fn)` with a zero-argument callable running one trial and returns milliseconds
(a float, a sequence whose first item is the median, or a dict with "median_ms"). Tests inject timers that way.

The compiler never imports the farm: this module only reads the database (sqlite3 or JSON; a URL through
SQLAlchemy, imported only when one is named); `farm.tuning_db` writes it.
"""
from __future__ import annotations

import contextlib
import functools
import inspect
import json
import math
import os
import pathlib
import re
import sqlite3
import threading
import time

from .errors import CompilationError
from .jit import JITFunction, _interpret_forced

__all__ = ["Config", "Autotuner", "Heuristics", "autotune", "heuristics", "set_database", "get_database",
           "set_default_timer", "TuningDatabase", "key_json", "config_json", "compiler_version", "gpu_kind",
           "capture_call", "select_best"]

DB_ENV = "TILEFARM_TUNING_DB"
COMPILE_ENV = "TILEFARM_AUTOTUNE_COMPILE"
_LAUNCH_OPTS = ("num_warps", "num_stages", "num_ctas", "maxnreg")


# ----------------------------------------------------------------------------------------------------- Config
class Config:
    """One point to try: constexpr keyword arguments plus launch options.

    `Config({"BLOCK": 128}, num_warps=4, num_stages=2)`; `pre_hook(named_args)` runs before each trial and each
    launch with this config (as in Triton). Equal configs (same kwargs and options) hash alike.
    """

    def __init__(self, kwargs=None, num_warps=4, num_stages=3, num_ctas=1, maxnreg=None, pre_hook=None):
        self.kwargs = dict(kwargs or {})
        self.num_warps = num_warps
        self.num_stages = num_stages
        self.num_ctas = num_ctas
        self.maxnreg = maxnreg
        self.pre_hook = pre_hook

    def all_kwargs(self) -> dict:
        """The kwargs and the launch options, as one dict (what a launch with this config passes)."""
        out = dict(self.kwargs)
        out["num_warps"] = self.num_warps
        out["num_stages"] = self.num_stages
        # num_ctas/maxnreg only when set (num_ctas is taken and ignored: one block per program)
        if self.num_ctas != 1:
            out["num_ctas"] = self.num_ctas
        if self.maxnreg is not None:
            out["maxnreg"] = self.maxnreg
        return out

    def to_dict(self) -> dict:
        d = {"kwargs": dict(self.kwargs), "num_warps": self.num_warps, "num_stages": self.num_stages}
        if self.num_ctas != 1:
            d["num_ctas"] = self.num_ctas
        if self.maxnreg is not None:
            d["maxnreg"] = self.maxnreg
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Config":
        return cls(d.get("kwargs", {}), num_warps=d.get("num_warps", 4), num_stages=d.get("num_stages", 3),
                   num_ctas=d.get("num_ctas", 1), maxnreg=d.get("maxnreg"))

    @classmethod
    def from_meta(cls, meta: dict) -> "Config":
        """From a flat meta dict as `farm run` sweeps use ({"BLOCK": 128, "num_warps": 4, ...})."""
        kw = {k: v for k, v in meta.items() if k not in _LAUNCH_OPTS}
        return cls(kw, num_warps=meta.get("num_warps", 4), num_stages=meta.get("num_stages", 3),
                   num_ctas=meta.get("num_ctas", 1), maxnreg=meta.get("maxnreg"))

    def _ident(self):
        return (tuple(sorted(self.kwargs.items())), self.num_warps, self.num_stages, self.num_ctas, self.maxnreg)

    def __eq__(self, other):
        return isinstance(other, Config) and self._ident() == other._ident()

    def __hash__(self):
        return hash(self._ident())

    def __repr__(self):
        parts = [f"{k}: {v}" for k, v in self.kwargs.items()]
        parts += [f"num_warps: {self.num_warps}", f"num_stages: {self.num_stages}"]
        if self.num_ctas != 1:
            parts.append(f"num_ctas: {self.num_ctas}")
        if self.maxnreg is not None:
            parts.append(f"maxnreg: {self.maxnreg}")
        return ", ".join(parts)


def config_json(cfg: Config) -> str:
    """Canonical JSON of a config (what the database stores and compares)."""
    return json.dumps(cfg.to_dict(), sort_keys=True, separators=(",", ":"), default=str)


# ------------------------------------------------------------------------------------------------------ keys
def _dtype_name(v):
    """The dtype of an array-like argument as a plain name ("float32" for torch, NumPy and DeviceArray), else
    None."""
    t = type(v)
    if t is int or t is float or t is bool or v is None:
        return None
    dt = getattr(v, "dtype", None)
    if dt is None:
        return None
    s = getattr(dt, "name", None) if not t.__module__.startswith("torch") else None
    return (s or str(dt)).removeprefix("torch.")


def _jsonable(v):
    if isinstance(v, (bool, int, float, str)) or v is None:
        return v
    return repr(v)


def key_json(named: dict, key_names) -> str:
    """The database's key text for one call: the key arguments' values and every argument's dtype.

    `named` maps parameter names to the call's values (defaults filled in). The same function serves the
    autotuner at launch time and `farm tune` when it writes records, so the two always agree.
    """
    args = {k: _jsonable(named[k]) for k in key_names if k in named}
    dtypes = {}
    for k, v in named.items():
        d = _dtype_name(v)
        if d is not None:
            dtypes[k] = d
    return json.dumps({"args": args, "dtypes": dtypes}, sort_keys=True, separators=(",", ":"))


# ------------------------------------------------------------------------------------------ environment facts
def compiler_version() -> str:
    """`__version__` plus a hash of the compiler's sources (the compile cache's and the farm's job keys use it)."""
    from .compile import source_fingerprint

    return source_fingerprint()


def normalize_kind(name: str) -> str:
    """"NVIDIA H200" -> "H200" (farm.worker.normalize_kind's spelling)."""
    words = name.replace("NVIDIA", "").replace("Tesla", "").split()
    return words[0] if words else name


_gpu_kind = None


def gpu_kind(interpreted: bool = False) -> str:
    """The GPU kind records are matched on: "H200", or "interpreter"."""
    global _gpu_kind
    if interpreted:
        return "interpreter"
    if _gpu_kind is None:
        try:
            from .runtime import cuda

            _gpu_kind = normalize_kind(cuda.device_properties().name)
        except Exception:
            _gpu_kind = "unknown"
    return _gpu_kind


# ----------------------------------------------------------------------------------------- database reader
def select_best(rows: list[dict], compiler: str | None = None) -> dict | None:
    """The record to use among measurements of one (kernel, key, GPU kind): this compiler version first, then
    the longest timing budget (successive halving's last round), then the fastest median."""
    rows = [r for r in rows if r.get("median_ms") is not None and math.isfinite(r["median_ms"])]
    if not rows:
        return None
    return min(rows, key=lambda r: (r.get("compiler_version") != compiler, -(r.get("rep_ms") or 0.0),
                                    r["median_ms"]))


class TuningDatabase:
    """Read-only view of a tuning database: the `tuning` table of a SQLite file, its JSON export, or the `tuning`
    table of a database named by URL (`postgresql://user:password@host:5432/db`, `sqlite:///path`), read through
    SQLAlchemy with the psycopg driver for PostgreSQL. A server that cannot be reached answers nothing (the
    kernels tune as they would without a database) and says so once, as a warning naming it."""

    def __init__(self, path):
        self.path = str(path)
        self._json = None
        self._db = None
        self._engine = None
        self._lock = threading.Lock()
        if is_url(self.path):
            self.kind = "url"
            self._warned = False
            return
        with open(self.path, "rb") as f:
            head = f.read(16)
        self.kind = "sqlite" if head.startswith(b"SQLite format 3") else "json"
        if self.kind == "json":
            with open(self.path, encoding="utf-8") as f:
                data = json.load(f)
            index: dict = {}
            for r in data.get("records", []):
                index.setdefault((r["kernel"], r["key"], r["gpu"]), []).append(r)
            self._json = index

    def __repr__(self):
        return f"TuningDatabase({self.display()!r})"

    def display(self) -> str:
        """The database's name for messages (a URL's password hidden)."""
        if self.kind != "url":
            return self.path
        try:
            import sqlalchemy as sa
            return sa.make_url(self.path).render_as_string(hide_password=True)
        except Exception:
            return self.path.split("@")[-1]

    def _conn(self):
        if self._db is None:
            uri = pathlib.Path(self.path).resolve().as_uri()
            try:
                db = sqlite3.connect(f"{uri}?mode=ro", uri=True, check_same_thread=False, timeout=30)
                db.execute("SELECT 1 FROM tuning LIMIT 1")
            except sqlite3.Error:  # read-only directory (no -shm possible), or no table yet
                db = sqlite3.connect(f"{uri}?immutable=1", uri=True, check_same_thread=False)
            db.row_factory = sqlite3.Row
            self._db = db
        return self._db

    def _url_rows(self, kernel: str, key: str, gpu: str) -> list[dict]:
        import sqlalchemy as sa  # only here: a compiler that is never given a URL never imports it

        try:
            if self._engine is None:
                url = sa.make_url(self.path)
                if url.drivername in ("postgresql", "postgres"):
                    url = url.set(drivername="postgresql+psycopg")
                args = {"connect_timeout": 10, "application_name": "tilefarm-autotune"} \
                    if url.get_backend_name() == "postgresql" else {}
                self._engine = sa.create_engine(url, pool_pre_ping=True, pool_size=1, max_overflow=2,
                                                connect_args=args)
            with self._engine.connect() as c:
                if not sa.inspect(c).has_table("tuning"):
                    return []
                res = c.execute(sa.text("SELECT * FROM tuning WHERE kernel = :kernel AND key = :key AND "
                                        "gpu = :gpu AND median_ms IS NOT NULL"),
                                {"kernel": kernel, "key": key, "gpu": gpu})
                return [dict(r._mapping) for r in res]
        except Exception as e:  # the server is down, refuses us, the driver is missing, ...
            if not self._warned:
                self._warned = True
                import warnings
                warnings.warn(f"tuning database {self.display()} could not be read ({type(e).__name__}: "
                              f"{str(e).strip().splitlines()[0] if str(e).strip() else ''}); autotuning without it",
                              RuntimeWarning, stacklevel=4)
            return []

    def rows(self, kernel: str, key: str, gpu: str) -> list[dict]:
        """Every measured record for (kernel source hash, key text, GPU kind)."""
        if self._json is not None:
            return list(self._json.get((kernel, key, gpu), []))
        with self._lock:
            if self.kind == "url":
                return self._url_rows(kernel, key, gpu)
            try:
                cur = self._conn().execute(
                    "SELECT * FROM tuning WHERE kernel=? AND key=? AND gpu=? AND median_ms IS NOT NULL",
                    (kernel, key, gpu))
                return [dict(r) for r in cur]
            except sqlite3.OperationalError:  # no tuning table in this file
                return []

    def best(self, kernel: str, key: str, gpu: str, compiler: str | None = None) -> Config | None:
        """The config to launch with for this (kernel, key, GPU), or None when the database has none."""
        rec = select_best(self.rows(kernel, key, gpu), compiler)
        if rec is None:
            return None
        cfg = rec["config"]
        return Config.from_dict(json.loads(cfg) if isinstance(cfg, str) else cfg)

    def close(self):
        if self._db is not None:
            self._db.close()
            self._db = None
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None


def is_url(text: str) -> bool:
    """Whether a tuning-database name is a URL (`scheme://...`) rather than a path."""
    return bool(_URL.match(str(text)))


def split_names(text: str) -> list[str]:
    """TILEFARM_TUNING_DB's names: separated by os.pathsep, where a URL's own colons (after its scheme, in
    `user:password@host:port`) do not separate: a URL runs to its first `/` after the `//`, then to the next
    separator."""
    out, i = [], 0
    while i < len(text):
        m = _URL.match(text, i)
        start = m.end() if m else i
        if m:
            slash = text.find("/", start)
            start = len(text) if slash < 0 else slash
        j = text.find(os.pathsep, start)
        j = len(text) if j < 0 else j
        if text[i:j]:
            out.append(text[i:j])
        i = j + 1
    return out


_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://")


_databases: list | None = None  # None: not resolved yet (env read on first need)


def set_database(path) -> None:
    """Use the tuning database(s) at `path` (a path, a list of paths, or None to use none) from now on.

    Overrides env TILEFARM_TUNING_DB. Autotuners ask it for every key they have not seen in this process.
    """
    global _databases
    if path is None:
        _databases = []
        return
    paths = [path] if isinstance(path, (str, os.PathLike)) else list(path)
    _databases = [TuningDatabase(p) for p in paths]


def get_database() -> list:
    """The databases in use (resolved from TILEFARM_TUNING_DB on first use; missing files are skipped, URLs are
    kept: a server is asked when a key is looked up)."""
    global _databases
    if _databases is None:
        env = os.environ.get(DB_ENV, "")
        _databases = [TuningDatabase(p) for p in split_names(env) if is_url(p) or os.path.isfile(p)]
    return _databases


def _lookup(kernel: str, key: str, gpu: str) -> Config | None:
    dbs = get_database()
    if not dbs:
        return None
    cver = compiler_version()
    rows = []
    for db in dbs:
        for r in db.rows(kernel, key, gpu):
            rows.append(r)
    rec = select_best(rows, cver)
    if rec is None:
        return None
    cfg = rec["config"]
    return Config.from_dict(json.loads(cfg) if isinstance(cfg, str) else cfg)


_default_timer = None


def set_default_timer(fn) -> None:
    """A `do_bench(fn) -> ms` used by autotuners that were given none (None: the built-in rules)."""
    global _default_timer
    _default_timer = fn


# ----------------------------------------------------------------------------------------- kernel wrappers
def _base_fn(fn) -> JITFunction:
    while not isinstance(fn, JITFunction):
        fn = fn.fn
    return fn


class KernelInterface:
    """What autotune/heuristics wrappers share with JITFunction: `kernel[grid](...)`, `run`, `warmup`."""

    fn = None

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.run(*args, grid=grid, **kwargs)

    @property
    def base_fn(self) -> JITFunction:
        return _base_fn(self.fn)

    @property
    def cache_key(self) -> str:
        return self.base_fn.cache_key

    @property
    def arg_names(self):
        return self.base_fn.arg_names

    def _named(self, args, kwargs) -> dict:
        base = self.base_fn
        named = dict(zip(base.arg_names, args))
        for k, v in kwargs.items():
            if k in base.arg_names:
                named[k] = v
        for k, v in base.defaults.items():
            named.setdefault(k, v)
        return named

    def _final_kwargs(self, args, kwargs) -> dict:
        """The keyword arguments the base JITFunction gets for this call (heuristics applied)."""
        return dict(kwargs)


class Heuristics(KernelInterface):
    """`@compiler.heuristics({"BLOCK": lambda args: ...})`: each value is computed from the call's arguments
    (by name, configs' meta included when under an autotuner) and passed as a keyword argument."""

    def __init__(self, fn, values: dict):
        self.fn = fn
        self.values = dict(values)
        self.__name__ = getattr(fn, "__name__", "kernel")
        self.__doc__ = getattr(fn, "__doc__", None)

    def _final_kwargs(self, args, kwargs):
        kw = dict(kwargs)
        for name, heur in self.values.items():
            kw[name] = heur({**dict(zip(self.arg_names, args)), **kw})
        return self.fn._final_kwargs(args, kw) if isinstance(self.fn, KernelInterface) else kw

    def run(self, *args, grid, **kwargs):
        kw = dict(kwargs)
        for name, heur in self.values.items():
            kw[name] = heur({**dict(zip(self.arg_names, args)), **kw})
        if callable(grid):
            # evaluated below, with the kernel's bound arguments (the values computed here among them); the launch
            # options a config gave (num_warps, num_stages) stay visible to it too
            outer, extra = grid, {k: v for k, v in kw.items() if k not in self.arg_names}
            grid = lambda meta: outer({**extra, **meta})  # noqa: E731
        return self.fn.run(*args, grid=grid, **kw)

    def warmup(self, *args, **kwargs):
        kw = dict(kwargs)
        for name, heur in self.values.items():
            kw[name] = heur({**dict(zip(self.arg_names, args)), **kw})
        return self.fn.warmup(*args, **kw)

    def __repr__(self):
        return f"Heuristics({self.fn!r})"


def heuristics(values: dict):
    """Decorator: compute meta-parameters from the arguments (see Heuristics)."""
    def deco(fn):
        return Heuristics(fn, values)

    return deco


# ---------------------------------------------------------------------------------------- array helpers
def _zero(a):
    if hasattr(a, "zero_"):
        a.zero_()
    elif hasattr(a, "fill"):
        a.fill(0)
    else:
        raise TypeError(f"reset_to_zero: cannot zero an argument of type {type(a).__name__}")


def _clone(a):
    if hasattr(a, "clone"):
        return a.clone()
    if hasattr(a, "copy_") and hasattr(a, "nbytes"):  # compiler.runtime.DeviceArray
        return type(a).empty(a.shape, a.dtype).copy_(a)
    if hasattr(a, "copy"):
        return a.copy()
    raise TypeError(f"restore_value: cannot copy an argument of type {type(a).__name__}")


def _restore(a, saved):
    if hasattr(a, "copy_"):
        a.copy_(saved)
    else:
        a[...] = saved


def _prune_kwargs(fn, call: dict) -> dict:
    """The keyword arguments `early_config_prune(configs, named_args, **kwargs)` gets. Triton passes the call's
    keyword arguments; the generated launchers here bind every argument by name, so a function that takes
    **kwargs gets all of the call's arguments (a superset: a shape read from kwargs is there however it was
    passed) and one without gets just the names it declares after its first two."""
    try:
        ps = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return call
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in ps):
        return call
    names = {p.name for p in ps[2:] if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                                  inspect.Parameter.KEYWORD_ONLY)}
    return {k: v for k, v in call.items() if k in names}


def _is_host(v) -> bool:
    """A host array: the launch runs in the interpreter (NumPy arrays, CPU torch tensors, interp_array types)."""
    import numpy as np

    from .jit import _is_cpu_torch_tensor

    return (isinstance(v, np.ndarray) or _is_cpu_torch_tensor(v)
            or (hasattr(v, "interp_array") and not hasattr(v, "__cuda_array_interface__")))


def _as_ms(r) -> float:
    if isinstance(r, dict):
        return float(r["median_ms"])
    if isinstance(r, (list, tuple)):
        return float(r[0])
    return float(r)


# ------------------------------------------------------------------------------------------ parallel compile
_FORK_JOBS: list = []


def _fork_compile(i: int):
    from .compile import compile_kernel

    jf, params, nw, ns, debug, arch = _FORK_JOBS[i]
    try:
        compile_kernel(jf, params, num_warps=nw, num_stages=ns, debug=debug, arch=arch)
        return None
    except Exception as e:  # reported back; the parent retries in-process and gets the real exception
        return f"{type(e).__name__}: {e}"


def _compile_all(jobs: list, mode: str) -> list:
    """Compile (jf, params, num_warps, num_stages, debug, arch) jobs; returns per job None or the exception."""
    from .compile import _disk_cache, compile_kernel

    def one(job):
        jf, params, nw, ns, debug, arch = job
        try:
            compile_kernel(jf, params, num_warps=nw, num_stages=ns, debug=debug, arch=arch)
            return None
        except Exception as e:
            return e

    n = len(jobs)
    workers = min(n, os.cpu_count() or 1)
    if n <= 1 or workers <= 1 or mode == "serial":
        return [one(j) for j in jobs]
    if mode == "process" and _disk_cache() is not None:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        global _FORK_JOBS
        _FORK_JOBS = jobs
        try:
            ctx = multiprocessing.get_context("fork")
            with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
                list(pool.map(_fork_compile, range(n)))
        except Exception:  # no fork here, a broken pool: compile in this process below
            pass
        finally:
            _FORK_JOBS = []
        return [one(j) for j in jobs]  # disk-cache hits now (or the real error, raised here)
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(one, jobs))


# ------------------------------------------------------------------------------------------------ Autotuner
class Autotuner(KernelInterface):
    """A kernel that picks its config per key on first use (see the module docstring).

    Attributes: `configs` (as given), `key` (argument names), `best_config` (the winner for the last call's
    key), `cache` (key tuple -> Config), `configs_timings` (config -> ms for the last tuning), `timings`
    (key tuple -> {config: ms}), `bench_calls` (timed trials run in this process), `tune_count` (keys tuned by
    benchmarking), `db_hits` (keys answered by the database), `tuning_s` (wall time of the last tuning).
    """

    def __init__(self, fn, configs, key, reset_to_zero=None, restore_value=None, prune_configs_by=None,
                 warmup=25, rep=100, do_bench=None, compile_mode=None, use_database=True):
        self.fn = fn
        self.configs = list(configs) if configs else [Config({})]
        self.key = list(key or [])
        base = self.base_fn
        for k in self.key:
            if k not in base.arg_names:
                raise ValueError(f"autotune key {k!r} is not a parameter of {base.__name__} "
                                 f"({', '.join(base.arg_names)})")
        self.reset_to_zero = list(reset_to_zero or [])
        self.restore_value = list(restore_value or [])
        for n in self.reset_to_zero + self.restore_value:
            if n not in base.arg_names:
                raise ValueError(f"{n!r} (reset_to_zero/restore_value) is not a parameter of {base.__name__}")
        prune = prune_configs_by or {}
        self.early_config_prune = prune.get("early_config_prune")
        self.perf_model = prune.get("perf_model")
        self.top_k = prune.get("top_k", 1.0)
        self.num_warmups = warmup  # do_bench's budgets in ms (Triton's names; `warmup` is the method)
        self.num_reps = rep
        self.user_do_bench = do_bench
        self.compile_mode = compile_mode
        self.use_database = use_database
        self.cache: dict = {}
        self.timings: dict = {}
        self.configs_timings: dict | None = None
        self.best_config: Config | None = None
        self.bench_calls = 0
        self.tune_count = 0
        self.db_hits = 0
        self.tuning_s = 0.0
        self.last_key_json: str | None = None
        self.key_jsons: dict = {}  # key tuple -> database key text (for keys tuned or looked up here)
        self.stats: dict = {}  # key tuple -> {config: do_bench's dict (median_ms, p10_ms, ...)}
        self.configs_errors: dict = {}
        self.key_gpus: dict = {}  # key tuple -> GPU kind it was tuned for ("interpreter" in the interpreter)
        self.__name__ = getattr(fn, "__name__", "kernel")
        self.__doc__ = getattr(fn, "__doc__", None)
        self.__wrapped__ = fn
        # tuned names: what a config supplies (the user must not pass them)
        self.tuned_names = set()
        for c in self.configs:
            self.tuned_names |= set(c.kwargs)
        supplied = set(self.tuned_names)
        inner = fn
        while isinstance(inner, KernelInterface):  # heuristics below supply their values too
            supplied |= set(getattr(inner, "values", {}))
            inner = inner.fn
        self._user_params = [n for n in base.arg_names if n not in supplied]
        self._fast = None

    def __repr__(self):
        return f"Autotuner({self.base_fn!r}, {len(self.configs)} configs, key={self.key})"

    # --- keys ---------------------------------------------------------------------------------------
    def _key_tuple(self, named: dict):
        dt = _dt
        return tuple(named.get(k) for k in self.key) + tuple(dt(named.get(p)) for p in self._user_params)

    def key_json(self, named: dict) -> str:
        """The database key text for a call's named arguments."""
        return key_json(named, self.key)

    # --- launching ----------------------------------------------------------------------------------
    def __getitem__(self, grid):
        fast = self._fast
        if fast is None:
            fast = self._fast = _make_fast_launch(self)
        return functools.partial(fast, grid)

    def run(self, *args, grid, **kwargs):
        """Launch: tune first when this call's key is new (see the module docstring)."""
        conflicts = self.tuned_names & set(kwargs)
        if conflicts:
            raise ValueError(f"Conflicting meta-parameters: {', '.join(sorted(conflicts))}. Make sure that you "
                             "don't re-define auto-tuned symbols.")
        named = self._named(args, kwargs)
        key = self._key_tuple(named)
        cfg = self.cache.get(key)
        if cfg is None:
            cfg = self._choose(key, named, args, kwargs, grid)
        self.best_config = cfg
        return self._launch(cfg, grid, args, kwargs, named)

    def _launch(self, cfg: Config, grid, args, kwargs, named):
        cfgkw = cfg.all_kwargs()
        full = {**named, **cfgkw}
        if cfg.pre_hook is not None:
            cfg.pre_hook(full)
        if callable(grid) and not self._grid_below:
            grid = grid(full)
        return self.fn.run(*args, grid=grid, **kwargs, **cfgkw)

    @property
    def _grid_below(self) -> bool:
        """Whether a callable grid goes down to the wrapped function unevaluated: an @heuristics below this
        autotuner adds values a grid reads (META["BLOCK"] computed by a heuristic), as Triton's JITFunction.run
        evaluates the grid after every wrapper has added its own."""
        return isinstance(self.fn, Heuristics)

    def warmup(self, *args, **kwargs):
        """Compile every config for these arguments (no launch); returns the list of compiled kernels."""
        out = []
        for cfg in self.prune_configs(self._named(args, kwargs), kwargs):
            out.append(self.fn.warmup(*args, **kwargs, **cfg.all_kwargs()))
        return out

    # --- tuning -------------------------------------------------------------------------------------
    def prune_configs(self, named: dict, kwargs: dict | None = None) -> list:
        """The configs left after `prune_configs_by` for a call's named arguments."""
        call_kwargs = dict(kwargs or {})
        kwargs = {k: v for k, v in call_kwargs.items() if k not in named}
        configs = list(self.configs)
        if self.early_config_prune is not None:
            configs = list(self.early_config_prune(configs, named, **_prune_kwargs(self.early_config_prune,
                                                                                    {**named, **call_kwargs})))
        if self.perf_model is not None and len(configs) > 1:
            top_k = self.top_k
            if isinstance(top_k, float) and top_k <= 1.0:
                top_k = max(1, int(len(configs) * top_k))
            est = {c: self.perf_model(**named, **kwargs, **c.all_kwargs()) for c in configs}
            configs = sorted(configs, key=est.get)[:int(top_k)]
        if not configs:
            raise ValueError(f"{self.__name__}: every config was pruned for this call")
        return configs

    def _choose(self, key, named, args, kwargs, grid) -> Config:
        interp = _interpret_forced() or any(_is_host(v) for v in named.values())
        kjson = self.last_key_json = self.key_jsons[key] = self.key_json(named)
        self.key_gpus[key] = gpu_kind(interp)
        if self.use_database:
            cfg = _lookup(self.cache_key, kjson, self.key_gpus[key])
            if cfg is not None:
                self.db_hits += 1
                self.cache[key] = cfg
                return cfg
        t0 = time.perf_counter()
        configs = self.prune_configs(named, kwargs)
        if len(configs) == 1:  # nothing to choose between: nothing is run or measured
            self.cache[key] = configs[0]
            self.tuning_s = time.perf_counter() - t0
            return configs[0]
        timings = self._bench_all(configs, named, args, kwargs, grid, interp)
        best = min(timings, key=timings.get)
        if not math.isfinite(timings[best]):
            raise RuntimeError(f"{self.__name__}: no config compiled and ran for key {kjson} "
                               f"(tried {len(configs)}); see configs_errors")
        self.cache[key] = best
        self.timings[key] = timings
        self.stats[key] = self._last_stats
        self.configs_timings = timings
        self.tune_count += 1
        for n in self.reset_to_zero:  # the user's call starts from zeros, as each trial did (Triton does too)
            _zero(named[n])
        self.tuning_s = time.perf_counter() - t0
        return best

    def _bench_all(self, configs, named, args, kwargs, grid, interp) -> dict:
        self.configs_errors = {}
        failed = {}
        if not interp:
            failed = self._compile_configs(configs, args, kwargs)
        saved = {n: _clone(named[n]) for n in self.restore_value}
        timer = self.user_do_bench or _default_timer
        timings = {}
        self._last_stats = stats = {}
        for i, cfg in enumerate(configs):
            if cfg in failed:
                timings[cfg] = math.inf
                continue
            cfgkw = cfg.all_kwargs()
            full = {**named, **cfgkw}
            g = grid(full) if callable(grid) and not self._grid_below else grid

            def trial(cfg=cfg, cfgkw=cfgkw, full=full, g=g):
                self.bench_calls += 1
                for n in self.reset_to_zero:
                    _zero(named[n])
                if cfg.pre_hook is not None:
                    cfg.pre_hook(full)
                try:
                    self.fn[g](*args, **kwargs, **cfgkw)  # the inner kernel's own launch path (fast for jit)
                finally:
                    for n in self.restore_value:
                        _restore(named[n], saved[n])

            try:
                if timer is not None:
                    timings[cfg] = _as_ms(timer(trial))
                elif interp:
                    trial()
                    timings[cfg] = float(i)  # the documented interpreter rule: first config that runs wins
                else:
                    from .runtime import do_bench

                    st = stats[cfg] = do_bench(trial, warmup_ms=self.num_warmups, rep_ms=self.num_reps)
                    timings[cfg] = st["median_ms"]
            except (CompilationError, RuntimeError, ValueError, TypeError, IndexError) as e:
                self.configs_errors[cfg] = e
                timings[cfg] = math.inf
                if type(e).__name__ == "CudaError" and getattr(e, "name", "") not in (
                        "CUDA_ERROR_OUT_OF_RESOURCES", "CUDA_ERROR_INVALID_VALUE"):
                    raise  # a poisoned context: later configs cannot be trusted
        return timings

    def tuned_records(self) -> list[dict]:
        """What this process measured, as tuning-database records (farm.tuning_db.TuningDB.add stores them)."""
        import socket

        out = []
        for key, timings in self.timings.items():
            gpu = self.key_gpus[key]
            for cfg, ms in timings.items():
                if not math.isfinite(ms):
                    continue
                st = self.stats.get(key, {}).get(cfg, {})
                out.append({"kernel": self.cache_key, "kernel_name": self.base_fn.__name__,
                            "key": self.key_jsons[key], "config": config_json(cfg), "gpu": gpu,
                            "compiler_version": compiler_version(), "median_ms": ms, "p10_ms": st.get("p10_ms"),
                            "p90_ms": st.get("p90_ms"), "n": st.get("n"), "rep_ms": float(self.num_reps),
                            "created": time.time(), "source": f"{socket.gethostname()}:{os.getpid()}:autotune"})
        return out

    def _compile_configs(self, configs, args, kwargs) -> dict:
        """Compile every config in parallel before timing; returns {config: exception} for those that fail."""
        from .compile import default_arch

        base = self.base_fn
        arch = default_arch()
        jobs, owners = [], []
        for cfg in configs:
            try:
                kw = self.fn._final_kwargs(args, {**kwargs, **cfg.all_kwargs()}) \
                    if isinstance(self.fn, KernelInterface) else {**kwargs, **cfg.all_kwargs()}
                vals, opts = base._bind(args, kw)
                keys, _, kinds, _ = base._specialize(vals)
                kinds = ["ptr" if k == "host" else k for k in kinds]
                params = base._params(vals, keys, kinds)
            except Exception:  # binding trouble shows, with its real message, when the trial runs
                continue
            jobs.append((base, params, opts.get("num_warps", 4), opts.get("num_stages", 3),
                         bool(opts.get("debug", base.debug)), arch))
            owners.append(cfg)
        mode = self.compile_mode or os.environ.get(COMPILE_ENV) or "process"
        errs = _compile_all(jobs, mode)
        failed = {}
        for cfg, e in zip(owners, errs):
            if e is not None:
                failed[cfg] = e
                self.configs_errors[cfg] = e
        return failed


_ARR: set = set()  # argument types seen with a dtype (the generated launcher's inline test)
_SCALAR: set = {int, float, bool, str, type(None)}


def _dt_learn(v):
    """`_dt`, remembering the argument's type in _ARR or _SCALAR for the generated launcher."""
    d = _dt(v)
    (_ARR if d is not None else _SCALAR).add(type(v))
    return d


def _dt(v):
    """Per-argument dtype part of the in-memory key (dtype objects; None for scalars)."""
    t = type(v)
    if t is int or t is float or v is None or t is bool:
        return None
    return getattr(v, "dtype", None)


def autotune(configs, key, prune_configs_by=None, reset_to_zero=None, restore_value=None, warmup=25, rep=100,
             do_bench=None, compile_mode=None, use_database=True):
    """Decorator: pick the fastest of `configs` per value of the `key` arguments (see the module docstring).

    `warmup`/`rep` are do_bench's budgets in ms; `do_bench(fn) -> ms` replaces the timer (and the interpreter
    rule); `compile_mode` is "process", "thread" or "serial" (env TILEFARM_AUTOTUNE_COMPILE, default "process");
    `use_database=False` never asks the tuning database.
    """
    def deco(fn):
        return Autotuner(fn, configs, key, reset_to_zero=reset_to_zero, restore_value=restore_value,
                         prune_configs_by=prune_configs_by, warmup=warmup, rep=rep, do_bench=do_bench,
                         compile_mode=compile_mode, use_database=use_database)

    return deco


# ------------------------------------------------------------------------------------------- fast launch
def _make_fast_launch(at: Autotuner):
    """Generate `launch(grid, <user params>)` for an autotuner: build the key tuple inline, find the config,
    call the JITFunction's generated launcher with the config's kwargs. Anything unusual takes `at.run`."""
    base = at.base_fn
    params = at._user_params
    from .jit import _LAUNCH_OPTIONS

    # a parameter named like a launch option must reach the kernel by keyword (it is the option too)
    if any(n.startswith("_") for n in params) or {"grid", *_LAUNCH_OPTIONS} & set(params):
        return lambda grid, *args, **kwargs: at.run(*args, grid=grid, **kwargs)
    sig = [f"{n}=_d{i}" if n in base.defaults else n for i, n in enumerate(params)]
    allargs = f"({', '.join(params)},)"
    keyparts = [k for k in at.key] + [f"({p}.dtype if type({p}) in _ARR else None if type({p}) in _SCALAR "
                                      f"else _dtl({p}))" for p in params]
    # user params keep their positions up to the first name a config or heuristic supplies; later ones are
    # passed by keyword (a tuned BLOCK between them would otherwise shift them)
    npos = 0
    while npos < len(params) and params[npos] == base.arg_names[npos]:
        npos += 1
    call = ", ".join(params[:npos] + [f"{n}={n}" for n in params[npos:]])

    direct = isinstance(at.fn, JITFunction)
    lines = [
        f"def launch(grid, {', '.join(sig + ['**_kw'])}):",
        "    if _kw:",
        f"        return _at.run({call}, grid=grid, **_kw)",
        f"    _c = _cache.get(({', '.join(keyparts)},))",
        "    if _c is None or _c.pre_hook is not None:",
        f"        return _at.run({call}, grid=grid)",
        "    _kw = _kwargs.get(_c)",
        "    if _kw is None:",
        "        _kw = _kwargs[_c] = _c.all_kwargs()",
        "    _at.best_config = _c",
    ]
    if direct:  # below an @heuristics the grid is evaluated by the JITFunction, after the heuristics (_grid_below)
        lines += [
            "    if type(grid) is not tuple:",
            f"        grid = grid({{**dict(zip(_names, {allargs})), **_kw}}) if callable(grid) else grid",
        ]
    if direct:
        lines += [
            "    _f = _jf._fast",
            "    if _f is None:",
            "        _f = _jf._fast = _mk(_jf)",
            f"    return _f(grid, {call}, **_kw)",
        ]
    else:
        lines.append(f"    return _inner.run({call}, grid=grid, **_kw)")
    from .jit import _make_fast_launch as mk

    env = {"_at": at, "_cache": at.cache, "_kwargs": {}, "_dt": _dt, "_ARR": _ARR, "_SCALAR": _SCALAR, "_dtl": _dt_learn, "_names": params, "_jf": base, "_mk": mk,
           "_inner": at.fn}
    for i, n in enumerate(params):
        if n in base.defaults:
            env[f"_d{i}"] = base.defaults[n]
    exec(compile("\n".join(lines), f"<tilefarm autotune launcher for {at.__name__}>", "exec"), env)
    return env["launch"]


# -------------------------------------------------------------------------------------- capturing a call
class _Captured(Exception):
    pass


@contextlib.contextmanager
def capture_call(kernel):
    """Record the named arguments of the next launch or warmup of `kernel` without running or compiling it.

    Yields a dict filled with the call's named arguments (defaults included). Used by `farm tune` to compute
    the database key of a workload's launch exactly as an autotuner would.
    """
    jf = _base_fn(kernel)
    got: dict = {}

    def rec(*args, grid=None, target=None, **kwargs):
        named = dict(zip(jf.arg_names, args))
        named.update({k: v for k, v in kwargs.items() if k in jf.arg_names})
        for k, v in jf.defaults.items():
            named.setdefault(k, v)
        got.update(named)
        raise _Captured

    saved_fast = jf._fast
    jf.warmup = rec
    jf._fast = lambda grid, *args, **kwargs: rec(*args, grid=grid, **kwargs)
    try:
        yield got
    except _Captured:
        pass
    finally:
        del jf.warmup
        jf._fast = saved_fast


# `compiler.autotune` is this decorator (the package attribute shadows the module, as `triton.autotune` does):
# give it the module's database and timer functions so `compiler.autotune.set_database(path)` works.
for _f in (set_database, get_database, set_default_timer, compiler_version, gpu_kind, key_json, capture_call):
    setattr(autotune, _f.__name__, _f)
autotune.Config = Config
autotune.TuningDatabase = TuningDatabase
del _f
