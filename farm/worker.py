"""What happens to one job on a worker: compile, validate (hard to fool) and time. Executor-independent.

Everything the farm needs from the compiler goes through the thin adapters at the top of this file, so the
farm can be tested with fake workloads whose "kernels" are plain NumPy and runs wherever the compiler runs.

Validation, in order: inputs seeded from the run's seed, the workload's name and the shape params (not the
meta-parameters, options or target: every candidate of a shape sees the same data), handed to the kernel as
fresh copies (or fresh device uploads); outputs poisoned (NaN for floats, a sentinel for integers) before every
run so unwritten elements show; the float64 reference compared with the workload's (rtol, atol) for the output
dtype, NaN never passing where the reference is finite; inputs compared bit for bit with their pristine copies
unless an output aliases them (declared in-place); and on a GPU the output of the timed runs is checked again,
so a kernel cannot be right once and wrong while timed.

The compiler is the job's (farm.compilers: tilefarm, or the real Triton): whichever it is, the inputs, poisoned
outputs, reference, tolerances and timing below are the same; only the arrays the kernel is handed differ
(NumPy / DeviceArray for tilefarm, torch tensors for Triton).

Inputs and reference are cached per process (`InputCache`): the pristine inputs and the reference outputs of a
(workload, params, seed) are made once and reused by every later job of that shape (a float64 4096^3 matmul
reference takes about a second; a tuning sweep times dozens of candidates per shape). Cached arrays are
read-only and never reach a kernel: the interpreter gets copies, a GPU gets device uploads. The cache is bounded
in bytes (TILEFARM_WORKER_CACHE_MB, default 2048; 0 turns it off) and evicts the least recently used entries.
A result's `validate_s` still covers everything from making (or finding) the inputs to the checks; in its
artifacts, `inputs_s` is how long this job spent getting the inputs and reference, `inputs_cached` whether the
cache had them and `inputs_make_s` what making them cost (on a hit: the job that made them).
"""
from __future__ import annotations

import collections
import functools
import hashlib
import inspect
import json
import os
import pathlib
import socket
import threading
import time
import traceback
from dataclasses import dataclass

import numpy as np

from farm import FarmError, compilers
from farm.jobs import (COMPILE_ERROR, COMPILED, ERROR, MAX_SAMPLES, MISMATCH, NOT_RUNNABLE, OK, VALIDATED, Job,
                       Result, RunOptions)

# ---------------------------------------------------------------- compiler adapters (the only compiler use)


def _compiler():
    try:
        import compiler
        return compiler
    except ImportError:
        return None


@functools.lru_cache(maxsize=None)
def compiler_version() -> str:
    """The compiler's version plus a hash of its sources: any change to the compiler changes every job key."""
    try:
        from compiler.compile import source_fingerprint
    except ImportError:
        return "none"
    return source_fingerprint()


def is_compilation_error(e: BaseException) -> bool:
    """A user-facing compile failure (CompilationError, including ptxas/resource failures it reports)."""
    c = _compiler()
    cls = getattr(c, "CompilationError", None) if c else None
    if cls is not None and isinstance(e, cls):
        return True
    return type(e).__name__ == "CompilationError"


def is_cuda_error(e: BaseException) -> bool:
    return type(e).__name__ == "CudaError"


@functools.lru_cache(maxsize=None)
def gpu_available() -> tuple[bool, str]:
    """(True, "") when this process can launch on a GPU, else (False, why)."""
    if os.environ.get("FARM_FORCE_NO_GPU"):
        return False, "FARM_FORCE_NO_GPU is set"
    try:
        from compiler import runtime
        return tuple(runtime.gpu_available())
    except Exception as e:  # no compiler runtime yet, no driver, ...
        return False, f"compiler.runtime unavailable ({type(e).__name__}: {e})"


@functools.lru_cache(maxsize=None)
def gpu_info() -> dict | None:
    """Name, UUID, driver, CUDA version and clocks of this process's GPU (recorded with every result)."""
    if not gpu_available()[0]:
        return None
    info: dict = {}
    try:
        from compiler.runtime import cuda
        for fn in ("device_info", "device_properties", "get_device_properties"):
            if hasattr(cuda, fn):
                got = getattr(cuda, fn)()
                info.update(got if isinstance(got, dict) else vars(got))
                break
    except Exception as e:
        info["error"] = f"{type(e).__name__}: {e}"
    info.setdefault("name", "unknown GPU")
    return {k: (v if isinstance(v, (int, float, str, bool, type(None))) else str(v)) for k, v in info.items()}


def normalize_kind(name: str) -> str:
    """"NVIDIA H200" -> "H200" (the same spelling as Ray's accelerator_type resource)."""
    words = name.replace("NVIDIA", "").replace("Tesla", "").split()
    return words[0] if words else name


def gpu_kind() -> str:
    """The key's GPU kind for this machine (e.g. "H200"), or "interpreter" without a GPU."""
    return normalize_kind(gpu_info()["name"]) if gpu_available()[0] else "interpreter"


def _to_device(a: np.ndarray):
    from compiler.runtime import DeviceArray
    return DeviceArray.from_numpy(a)


def _device_empty(shape, dtype):
    from compiler.runtime import DeviceArray
    return DeviceArray.empty(tuple(shape), np.dtype(dtype))


def _do_bench(fn, opts: RunOptions) -> dict:
    from compiler.runtime import do_bench
    kwargs = dict(warmup_ms=opts.warmup_ms, rep_ms=opts.rep_ms, flush_l2=opts.flush_l2, return_samples=True)
    if opts.cuda_graphs and "cuda_graphs" in inspect.signature(do_bench).parameters:
        kwargs["cuda_graphs"] = True
    return do_bench(fn, **kwargs)


def thin(samples, n: int = MAX_SAMPLES) -> list[float] | None:
    """At most `n` samples, evenly spaced in time order (drift within the run stays visible), rounded to 6
    significant digits: what the store keeps for `farm gate`."""
    if not samples:
        return None
    idx = np.linspace(0, len(samples) - 1, min(n, len(samples))).round().astype(int)
    return [float(f"{samples[i]:.6g}") for i in idx]


def _launch_cost(fn) -> dict | None:
    """Host cost of one launch (`compiler.runtime.launch_overhead_us`), a short measurement; None if unavailable."""
    try:
        from compiler.runtime import launch_overhead_us
    except ImportError:
        return None
    # 1000 launches in batches of 50 (20 batch means, so p10/p90 mean something): ~10 ms for launch-bound kernels,
    # which is where the host cost matters (the caller skips it for long kernels, whose repeated runs would
    # dominate the job's time).
    return launch_overhead_us(fn, n=1000, batch=50)


def _sync():
    try:
        from compiler.runtime import cuda
        if hasattr(cuda, "synchronize"):
            cuda.synchronize()
    except ImportError:
        pass


# ---------------------------------------------------------------- workloads


def load_workload(ref: str, compiler: str = "tilefarm"):
    """A Workload from a registry name, a path to a kernel file, or path::NAME (cached per process), its kernel
    file loaded for `compiler` (farm.compilers: a file with `import triton` resolves it per compiler)."""
    return _load_workload(ref, compiler)


@functools.lru_cache(maxsize=None)
def _load_workload(ref: str, compiler: str = "tilefarm"):
    import workloads
    from farm import FarmError
    path, _, name = ref.partition("::")
    if path.endswith(".py"):
        wls = load_file(path, compiler)
        if name:
            by_name = {w.name: w for w in wls}
            if name not in by_name:
                raise FarmError(f"{path} declares no workload named {name!r} (it has {', '.join(by_name)})")
            return by_name[name]
        if len(wls) > 1:
            raise FarmError(f"{path} declares {len(wls)} workloads ({', '.join(w.name for w in wls)}): "
                            f"pick one with {path}::NAME")
        return wls[0]
    reg = workloads.registry()
    if ref not in reg:
        raise FarmError(f"unknown workload {ref!r}; known: {', '.join(reg) or '(none)'} "
                        "(or give a path to your own kernel file)")
    return reg[ref]


def load_for_plan(ref: str):
    """The workload `ref` loaded against the real Triton in its interpreter, for planning only (its name, sweeps,
    counts and source): what the planner uses when a Triton-style file does not load under tilefarm (it uses a
    name the compatibility layer lacks at import), so that only its tilefarm jobs fail, each naming the name.
    Never cached where jobs look: workers load their own copy for their own mode. FarmError when it fails."""
    import workloads
    from compiler.triton_compat import load_kernel_file
    from farm import FarmError
    path, _, name = ref.partition("::")
    if not path.endswith(".py") or compilers.triton_version() is None:
        raise FarmError(f"{ref}: cannot be planned without tilefarm (Triton is not installed here)")
    saved = os.environ.get("TRITON_INTERPRET")
    os.environ["TRITON_INTERPRET"] = "1"  # decorated, never launched here
    try:
        stem = hashlib.sha256(os.path.abspath(path).encode()).hexdigest()[:10]
        module = load_kernel_file(path, compiler="triton", module_name=f"_tilefarm_plan_{stem}")
        wls = workloads._declared(module, path)
    except Exception as e:
        raise FarmError(describe_import_error(e, path)) from None
    finally:
        if saved is None:
            os.environ.pop("TRITON_INTERPRET", None)
        else:
            os.environ["TRITON_INTERPRET"] = saved
    by_name = {w.name: w for w in wls}
    wl = by_name.get(name) if name else (wls[0] if len(wls) == 1 else None)
    if wl is None:
        raise FarmError(f"{path}: no single workload {name!r} among {', '.join(by_name) or 'none'}")
    if not wl.source_file:
        wl.source_file = os.path.abspath(path)
    return wl


def load_file(path: str, compiler: str = "tilefarm"):
    """workloads.load_file, with any failure (no such file, a Python error while importing it or a kernel file it
    imports) as one FarmError naming the file and line where it happened, never a traceback into the farm."""
    import workloads
    from farm import FarmError
    if not str(path).endswith(".py"):
        raise FarmError(f"{path} is not a Python file: a kernel file is a .py that declares WORKLOAD or WORKLOADS")
    try:
        return workloads.load_file(path, compiler)
    except (FileNotFoundError, ValueError, TypeError) as e:
        if e.__traceback__ is not None and _user_frame(e) is None:
            raise FarmError(str(e)) from None  # raised by load_file itself: its message names the file
        raise FarmError(describe_import_error(e, path)) from None
    except RecursionError as e:
        raise FarmError(describe_import_error(e, path)) from None
    except Exception as e:
        raise FarmError(describe_import_error(e, path)) from None
    except SystemExit as e:
        raise FarmError(f"{path}: called exit({e.code}) while being imported") from None


def _user_frame(e: BaseException):
    """The innermost traceback frame in a file outside the farm, the standard library and installed packages."""
    import sys
    import traceback
    registry = str(pathlib.Path(__file__).resolve().parents[1] / "workloads" / "__init__.py")
    farm_dir = str(pathlib.Path(__file__).resolve().parent) + os.sep
    lib = tuple({sys.base_prefix, sys.prefix, sys.exec_prefix})
    frames = [f for f in traceback.extract_tb(e.__traceback__)
              if not f.filename.startswith(("<", farm_dir, *lib)) and f.filename != registry]
    return frames[-1] if frames else None


def describe_import_error(e: BaseException, path: str) -> str:
    """"file:line:col: SyntaxError: msg" with the line and a caret, or "file:line: Error: msg" and the line."""
    if isinstance(e, SyntaxError) and e.filename:
        where = f"{e.filename}:{e.lineno}" + (f":{e.offset}" if e.offset else "")
        text = (e.text or "").rstrip("\n")
        caret = ""
        if text and e.offset:
            stripped = text.lstrip()
            caret = "\n    " + " " * max(0, e.offset - 1 - (len(text) - len(stripped))) + "^"
            text = stripped
        return f"{where}: {type(e).__name__}: {e.msg}" + (f"\n    {text}{caret}" if text else "")
    if type(e).__name__ == "TritonCompatImportError":  # already file:line:col, the line and a caret
        return f"{e}\n  (while importing {path} with `triton` resolved to tilefarm's compatibility layer)"
    frame = _user_frame(e)
    msg = f"{type(e).__name__}: {e}"
    if frame is None:
        return f"{path}: error while importing it: {msg}"
    return f"{frame.filename}:{frame.lineno}: {msg} (while importing {path})" + (
        f"\n    {frame.line}" if frame.line else "")


def source_hash(wl) -> str:
    """sha256 of the workload's file and the kernel's source file (the kernel and what the workload checks)."""
    files = {wl.source_file} if wl.source_file else set()
    fn = getattr(wl.kernel, "fn", None) or getattr(wl.kernel, "__wrapped__", None) or wl.kernel
    try:
        f = inspect.getsourcefile(fn)
        if f:
            files.add(f)
    except TypeError:
        pass
    h = hashlib.sha256()
    for f in sorted(files):
        h.update(pathlib.Path(f).read_bytes() if os.path.isfile(f) else f.encode())
    return h.hexdigest()


def np_dtype(name: str) -> np.dtype:
    if name == "bfloat16":
        import ml_dtypes
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def poison_value(dtype: np.dtype):
    """NaN for floats, the most negative value for signed ints, the largest for unsigned, True for bool."""
    if dtype.kind == "f" or dtype.name == "bfloat16" or dtype.kind == "V":
        return np.nan
    if dtype.kind == "i":
        return np.iinfo(dtype).min
    if dtype.kind == "u":
        return np.iinfo(dtype).max
    return True


def _canonical(obj) -> str:
    """Stable JSON (sorted keys, no spaces), as farm.planner.canonical."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


def input_seed(job: Job) -> list[int]:
    """The seed of a job's inputs: the run's seed, the workload's name and the canonical shape params.

    Not the job's key: meta-parameters, run options and the target stay out, so every candidate (and every
    tuning round) of one shape is validated, and timed, on the same data, and the worker can reuse it.
    """
    ident = _canonical({"workload": job.name or job.workload, "params": job.params})
    return [int(job.seed), int(hashlib.sha256(ident.encode()).hexdigest()[:15], 16)]


def _rng(job: Job) -> np.random.Generator:
    return np.random.default_rng(input_seed(job))


# ---------------------------------------------------------------- inputs and reference, cached per process

CACHE_ENV = "TILEFARM_WORKER_CACHE_MB"
DEFAULT_CACHE_MB = 2048.0


def cache_limit_bytes() -> int:
    """The input cache's bound: TILEFARM_WORKER_CACHE_MB (MiB, may be fractional; 0 turns the cache off)."""
    text = os.environ.get(CACHE_ENV, "").strip()
    if not text:
        return int(DEFAULT_CACHE_MB * 2**20)
    try:
        mb = float(text)
    except ValueError:
        raise ValueError(f"{CACHE_ENV}={text!r} is not a number of MiB (0 turns the input cache off)") from None
    return max(0, int(mb * 2**20))


@dataclass
class _Entry:
    wl: object      # keeps the workload alive, so its id() in the key cannot be reused by another object
    inputs: dict    # name -> pristine input (read-only arrays; other values as make_inputs gave them)
    ref: dict       # output name -> reference (read-only arrays)
    nbytes: int
    make_s: float   # seconds make_inputs + reference took


def _frozen(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


def _nbytes(*dicts) -> int:
    seen, n = set(), 0
    for d in dicts:
        for v in d.values():
            if isinstance(v, np.ndarray) and id(v) not in seen:
                seen.add(id(v))
                n += v.nbytes
    return n


class InputCache:
    """LRU of (pristine inputs, reference outputs) by (workload object and file, canonical params, seed),
    bounded by the bytes of its arrays. One per worker process (`_CACHE`); jobs of a shape share an entry."""

    def __init__(self, limit_bytes: int | None = None):
        self._limit = limit_bytes  # None: read TILEFARM_WORKER_CACHE_MB at every use
        self._entries: collections.OrderedDict[tuple, _Entry] = collections.OrderedDict()
        self._lock = threading.Lock()
        self.nbytes = 0
        self.hits = self.misses = self.evictions = 0

    def limit(self) -> int:
        return cache_limit_bytes() if self._limit is None else self._limit

    def get(self, key: tuple) -> _Entry | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return entry

    def put(self, key: tuple, entry: _Entry) -> bool:
        """Keep `entry`, evicting the least recently used ones to stay within the bound; False when it does
        not fit at all (or the cache is off)."""
        limit = self.limit()
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self.nbytes -= old.nbytes
            if entry.nbytes > limit:  # used by its job, not kept (and nothing evicted for it)
                return False
            while self._entries and self.nbytes + entry.nbytes > limit:
                _, gone = self._entries.popitem(last=False)
                self.nbytes -= gone.nbytes
                self.evictions += 1
            self._entries[key] = entry
            self.nbytes += entry.nbytes
            return True

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.nbytes = 0
            self.hits = self.misses = self.evictions = 0

    def __len__(self) -> int:
        return len(self._entries)

    def stats(self) -> dict:
        with self._lock:
            return {"entries": len(self._entries), "bytes": self.nbytes, "limit_bytes": self.limit(),
                    "hits": self.hits, "misses": self.misses, "evictions": self.evictions}


_CACHE = InputCache()


def input_cache_stats() -> dict:
    """This process's input cache: entries, bytes, limit_bytes, hits, misses, evictions."""
    return _CACHE.stats()


def clear_input_cache() -> None:
    _CACHE.clear()


def _cache_key(wl, job: Job, params: dict) -> tuple:
    return (id(wl), getattr(wl, "source_file", ""), getattr(wl, "name", ""), _canonical(params),
            tuple(input_seed(job)))


def _inputs_and_reference(wl, job: Job, params: dict) -> tuple[dict, dict, dict | None, bool, float]:
    """(pristine inputs, reference, fresh inputs or None, cache hit, seconds make_inputs + reference took) for
    a job (on a hit, the seconds of the job that made them).

    The pristine inputs and the reference are read-only and may be shared with later jobs: never hand them to
    a kernel. `fresh` is what make_inputs returned on a miss (nobody else holds it: the kernel may have it);
    on a hit it is None and the caller copies what the kernel may write.
    """
    if cache_limit_bytes() > 0:  # also reports a bad TILEFARM_WORKER_CACHE_MB before any work
        key = _cache_key(wl, job, params)
        entry = _CACHE.get(key)
        if entry is not None:
            return entry.inputs, entry.ref, None, True, entry.make_s
    else:
        key = None
    t0 = time.perf_counter()
    fresh = wl.make_inputs(params, _rng(job))
    pristine = {k: _frozen(np.array(v, copy=True)) if isinstance(v, np.ndarray) else v for k, v in fresh.items()}
    ref = wl.reference({k: v for k, v in pristine.items() if isinstance(v, np.ndarray)}, params)
    ref = {k: _frozen(np.asarray(v)) for k, v in ref.items()}
    make_s = time.perf_counter() - t0
    if key is not None:
        _CACHE.put(key, _Entry(wl, pristine, ref, _nbytes(pristine, ref), make_s))
    return pristine, ref, fresh, False, make_s


# ---------------------------------------------------------------- checks


# Elements per chunk of compare(): its float64 scratch buffers (about 5 of them) stay in a core's L2 cache.
_CHUNK = 1 << 15


def compare(name: str, got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> tuple[bool, dict, str]:
    """Compare one output with its reference: (ok, {max_abs_err, max_rel_err, n_bad}, message when not ok).

    Floats (and bfloat16) pass where |got - want| <= atol + rtol * |want|, where both are NaN, or where they are
    equal (equal infinities); NaN where the reference is not NaN never passes (counted as NaN or unwritten).
    Integers and bools must be equal; the poison value where the reference has another is counted as
    unwritten. max_abs_err and max_rel_err (|got - want| / max(|want|, 1e-300)) are over the elements whose
    error is finite, computed in float64.

    Works through the flattened arrays in chunks of _CHUNK elements with reused scratch buffers, so a 4096x4096
    output costs no full-size float64 temporaries; chunks where every element is within tolerance take a short
    path, the others the full rules.
    """
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return False, {}, f"{name}: shape {got.shape} but the reference has {want.shape}"
    exact = got.dtype.kind in "iub" and want.dtype.kind in "iub"
    g_flat, w_flat = got.reshape(-1), want.reshape(-1)  # views when contiguous
    n = g_flat.size
    n_bad = n_unwritten = 0
    first = -1  # flat index of the first wrong element
    any_fin = exact and n > 0  # integer errors are always finite
    max_abs = max_rel = 0.0
    if exact:
        sentinel = poison_value(got.dtype)
        for lo in range(0, n, _CHUNK):
            gc, wc = g_flat[lo:lo + _CHUNK], w_flat[lo:lo + _CHUNK]
            bad = gc != wc
            if not bad.any():
                continue  # equal: zero error
            # got == sentinel != want implies got != want: unwritten elements are among the bad ones
            unwritten = (gc == sentinel) & (wc != sentinel)
            nb = int(np.count_nonzero(bad))
            if first < 0:
                first = lo + int(np.argmax(bad))
            n_bad += nb
            n_unwritten += int(np.count_nonzero(unwritten))
            wb = wc[bad].astype(np.float64)
            err = np.abs(gc[bad].astype(np.float64) - wb)
            with np.errstate(over="ignore"):  # |w| = 0: the relative error may overflow to inf
                rel = err / np.maximum(np.abs(wb), 1e-300)
            max_abs, max_rel = max(max_abs, float(err.max())), max(max_rel, float(rel.max()))
    else:
        m = min(n, _CHUNK)
        gbuf, err, aw, thr = (np.empty(m, np.float64) for _ in range(4))
        le = np.empty(m, bool)
        with np.errstate(invalid="ignore", over="ignore"):
            for lo in range(0, n, _CHUNK):
                k = min(_CHUNK, n - lo)
                gc, wc = g_flat[lo:lo + k], w_flat[lo:lo + k]
                g, e, a, t, l = gbuf[:k], err[:k], aw[:k], thr[:k], le[:k]
                np.copyto(g, gc, casting="unsafe")  # as got.astype(np.float64)
                w = wc.astype(np.float64, copy=False)
                np.subtract(g, w, out=e)
                np.abs(e, out=e)
                np.abs(w, out=a)
                np.multiply(a, rtol, out=t)  # atol + rtol * |w|
                np.add(t, atol, out=t)
                np.less_equal(e, t, out=l)
                emax = e.max()
                if l.all() and np.isfinite(emax):
                    # all within tolerance (so no NaN in got where want is a number) and every error finite
                    np.maximum(a, 1e-300, out=a)
                    np.divide(e, a, out=a)
                    max_abs, max_rel, any_fin = max(max_abs, float(emax)), max(max_rel, float(a.max())), True
                    continue
                # the full rules on this chunk
                gnan, wnan = np.isnan(g), np.isnan(w)
                close = l | (gnan & wnan) | (g == w)
                unwritten = gnan & ~wnan  # NaN where a number belongs: never written, or computed NaN
                bad = ~close | unwritten
                fin = np.isfinite(e)
                if fin.any():
                    np.maximum(a, 1e-300, out=a)
                    np.divide(e, a, out=a)
                    max_abs = max(max_abs, float(e[fin].max()))
                    max_rel = max(max_rel, float(a[fin].max()))
                    any_fin = True
                nb = int(np.count_nonzero(bad))
                if nb:
                    if first < 0:
                        first = lo + int(np.argmax(bad))
                    n_bad += nb
                    n_unwritten += int(np.count_nonzero(unwritten))
    if not any_fin:
        max_abs = max_rel = float("inf") if n else 0.0
    stats = {"max_abs_err": max_abs, "max_rel_err": max_rel, "n_bad": n_bad}
    if not n_bad:
        return True, stats, ""
    idx = tuple(int(i) for i in np.unravel_index(first, got.shape))
    msg = (f"{name}: {n_bad}/{got.size} elements wrong"
           + (f" ({n_unwritten} NaN or unwritten)" if n_unwritten else "")
           + f"; first at {idx}: got {_show(got[idx])}, want {_show(want[idx])}"
           + ("" if exact else f"; max abs err {max_abs:.3g}, rtol={rtol:g} atol={atol:g}"))
    return False, stats, msg


def _check_outputs(wl, specs, outputs: dict, ref: dict) -> tuple[bool, dict, list[str]]:
    ok, msgs = True, []
    agg = {"max_abs_err": 0.0, "max_rel_err": 0.0}
    for spec in specs:
        if spec.name not in ref:
            return False, agg, [f"the reference returned no {spec.name!r} (it has {sorted(ref)})"]
        rtol, atol = wl.tol(spec.dtype)
        if getattr(wl, "atol_relative", False):  # atol given as a fraction of the reference's largest magnitude
            r = np.asarray(ref[spec.name])
            atol *= float(np.max(np.abs(r))) if r.size and np.isfinite(r).all() else 1.0
        good, stats, msg = compare(spec.name, outputs[spec.name], ref[spec.name], rtol, atol)
        for k in agg:
            agg[k] = max(agg[k], stats.get(k, 0.0))
        if not good:
            ok = False
            msgs.append(msg)
    return ok, agg, msgs


_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _same_bytes(a: np.ndarray, b: np.ndarray) -> bool:
    """a.tobytes() == b.tobytes(), without the copies when a and b have one shape and dtype (any layout): then
    the C-order bytes are equal when every element is bitwise equal (NaN payloads and -0.0 included)."""
    u = _UINT.get(a.dtype.itemsize)
    if a.shape == b.shape and a.dtype == b.dtype and not a.dtype.hasobject and u is not None:
        return bool(np.array_equal(a.view(u), b.view(u)))
    return a.tobytes() == b.tobytes()


def _bytes_of(a: np.ndarray) -> np.ndarray:
    """a's C-order bytes as a uint8 array (a.view(np.uint8) needs a contiguous last axis)."""
    return np.ascontiguousarray(a).reshape(-1).view(np.uint8)


def _check_inputs(pristine: dict, current: dict, aliased: set) -> list[str]:
    msgs = []
    for name, before in pristine.items():
        if name in aliased:
            continue
        after = np.asarray(current[name])
        if not _same_bytes(after, np.asarray(before)):
            n = int((_bytes_of(after) != _bytes_of(before)).sum()) if after.shape == before.shape else -1
            msgs.append(f"input {name!r} was modified by the kernel ({n} bytes differ) but no output declares "
                        f"it in-place")
    return msgs


# ---------------------------------------------------------------- the job


def _fail(res: Result, status: str, e: BaseException | None = None, msg: str | None = None) -> Result:
    res.status = status
    if e is not None:
        if is_compilation_error(e):
            res.error = str(e)  # already file:line:col with a caret; compiler internals stay out
        else:
            res.error = f"{type(e).__name__}: {e}"
            res.detail = "".join(traceback.format_exception(e))[-4000:]
    if msg:
        res.error = msg
    return res


def compile_job(job: Job, res: Result | None = None) -> Result:
    """Compile one job without a GPU (the workload's `warmup`): PTX and, when ptxas is present, cubin.

    Returns a Result with status "compiled" or "compile_error"; the compiled artifacts land in the compiler's
    content-addressed cache, so a GPU worker running the job afterwards only loads them.
    """
    res = res or Result(key=job.key, status=COMPILED, worker=worker_name())
    if job.compiler != "tilefarm":
        # Triton compiles on the worker that runs the job, for its device: this process never imports it (a
        # pooled compile process must not hold a Triton set up for the wrong mode; farm.compilers)
        res.status = COMPILED
        return res
    wl = load_workload(job.workload)
    t0, t0_wall = time.perf_counter(), time.time()
    try:
        # Stand-in arrays when the workload names its inputs: compiling needs only dtypes and alignment, and
        # generating a large job's inputs here would take CPU and memory from the GPU workers.
        standin = getattr(wl, "standin_arrays", None)
        arrays = standin(dict(job.params)) if standin is not None else None
        if arrays is None:
            arrays = _host_arrays(wl, job, _rng(job))[0]
        compiled = wl.compile(arrays, dict(job.params), dict(job.meta))
    except Exception as e:
        res.compile_s = time.perf_counter() - t0
        return _fail(res, COMPILE_ERROR if is_compilation_error(e) else ERROR, e)
    res.compile_s = time.perf_counter() - t0
    if compiled is None:
        res.notes.append("not compiled ahead: the workload declares no warmup")
    else:
        asm = getattr(compiled, "asm", {}) or {}
        res.artifacts = {f"{k}_bytes": len(v) for k, v in asm.items() if isinstance(v, (str, bytes))}
        meta = getattr(compiled, "metadata", None)
        if isinstance(meta, dict):
            res.artifacts.update({k: v for k, v in meta.items() if isinstance(v, (int, float, str))})
        res.artifacts["cubin"] = "cubin" in asm  # False: no ptxas here, the GPU worker loads PTX
        state = compilers.tilefarm_cache_state(compiled, t0_wall)
        if state:  # compile_s of a cold compile, or of a load from the kernel cache
            res.artifacts["compile_cache"] = state
    res.status = COMPILED
    return res


def _host_arrays(wl, job: Job, rng) -> tuple[dict, dict, list, set]:
    """(arrays for launch, pristine input copies, output specs, names of inputs aliased by in-place outputs)."""
    params = dict(job.params)
    inputs = wl.make_inputs(params, rng)
    specs = list(wl.output_specs(params))
    pristine = {k: np.array(v, copy=True) for k, v in inputs.items() if isinstance(v, np.ndarray)}
    arrays = dict(inputs)
    aliased = set()
    for spec in specs:
        if spec.inplace:
            aliased.add(spec.inplace)
            arrays[spec.name] = arrays[spec.inplace]
        else:
            arrays[spec.name] = np.empty(spec.shape, np_dtype(spec.dtype))
    return arrays, pristine, specs, aliased


def run_job(job: Job, opts: RunOptions, compiled: Result | None = None) -> Result:
    """Compile (unless `compiled` says it was), validate and, on a GPU, time one job. Never raises."""
    t_start = time.perf_counter()
    res = compiled or Result(key=job.key, status=COMPILED)
    res.worker = worker_name()
    try:
        on_gpu = gpu_available()[0] and opts.target != "interpreter"
        why = compilers.not_runnable(job.compiler, job.compiler_version)
        if why is None:
            compilers.prepare_process(job.compiler, on_gpu and not opts.compile_only)
        params, meta = dict(job.params), dict(job.meta)
        try:
            comp = job.compiler if why is None else "tilefarm"
            wl = load_workload(job.workload) if comp == "tilefarm" else load_workload(job.workload, comp)
        except FarmError as e:  # e.g. a Triton-style file using a name tilefarm's compatibility layer lacks
            if why is None:
                res.status, res.error = COMPILE_ERROR if job.compiler == "tilefarm" else ERROR, str(e)
                return res
            wl = None
        if wl is not None:
            why = why or compilers.foreign_kernel(job.compiler, wl.kernel)
            res.flops, res.bytes = float(wl.flops(params)), float(wl.bytes(params))
        if why is None and opts.compile_only and job.compiler != "tilefarm":
            why = "a compile-only run compiles ahead of the GPU, and Triton compiles on the GPU it runs on"
        if why is not None:
            res.status, res.error = NOT_RUNNABLE, f"not runnable under {job.compiler}: {why}"
            return res
        if compiled is None:
            compile_job(job, res)
        if res.status != COMPILED or opts.compile_only:
            return res
        _validate_and_time(wl, job, opts, res, params, meta, on_gpu)
    except Exception as e:  # a bug in the workload's helpers, a CUDA error, ...
        _fail(res, COMPILE_ERROR if is_compilation_error(e) else ERROR, e)
        res.replace_worker = is_cuda_error(e)  # e.g. illegal address: the context is poisoned
    finally:
        res.wall_s = time.perf_counter() - t_start
        if res.gpu is not None:
            compilers.release(job.compiler)  # torch's cached blocks of a Triton job back to the driver
        if res.gpu is not None:  # memory after the job's arrays are gone: flat over a sweep, or a leak
            res.gpu = dict(res.gpu, **_memory_snapshot())
    return res


def _memory_snapshot() -> dict:
    """This worker's resident host memory and the GPU's used memory, in MiB."""
    out = {"input_cache_mb": _CACHE.nbytes / 2**20}  # part of the RSS: grows up to its bound, then flat
    try:
        with open("/proc/self/statm") as f:
            out["worker_rss_mb"] = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except Exception:
        pass
    try:
        from compiler.runtime.cuda import driver

        err, free, total = driver().cuMemGetInfo()
        if int(err) == 0:
            out["gpu_mem_used_mb"] = (int(total) - int(free)) / 2**20
    except Exception:
        pass
    return out


def _validate_and_time(wl, job, opts, res, params, meta, on_gpu):
    t0 = time.perf_counter()
    inputs, ref, fresh, cached, make_s = _inputs_and_reference(wl, job, params)
    # How long this job spent on inputs + reference (made, or found in the cache), and what making them cost.
    res.artifacts.update(inputs_s=time.perf_counter() - t0, inputs_cached=cached, inputs_make_s=make_s)
    pristine = {k: v for k, v in inputs.items() if isinstance(v, np.ndarray)}
    specs = list(wl.output_specs(params))
    aliased = {s.inplace for s in specs if s.inplace}
    poison = [s for s in specs if not s.inplace]
    # The compiler's own arrays (farm.compilers): NumPy / DeviceArray for tilefarm, torch tensors for Triton
    arr = compilers.arrays_for(job.compiler)
    to_device = getattr(arr, "to_device", _to_device)
    device_empty = getattr(arr, "empty", _device_empty)
    sync = getattr(arr, "sync", _sync)
    if on_gpu:
        # The kernel gets device uploads only: the host arrays (cached or not) are read, never written.
        res.gpu = gpu_info()
        dev = {k: to_device(v) for k, v in pristine.items()}
        for s in specs:
            dev[s.name] = dev[s.inplace] if s.inplace else device_empty(s.shape, np_dtype(s.dtype))
        arrays_run = {**{k: v for k, v in inputs.items() if k not in pristine}, **dev}
        for s in poison:
            _fill(dev[s.name], poison_value(np_dtype(s.dtype)))
    else:
        # The interpreter writes host arrays: the kernel gets make_inputs' own arrays (a miss) or copies of the
        # pristine ones (a hit), fresh outputs, and in-place outputs aliasing those inputs.
        arrays_run = dict(fresh) if fresh is not None else {
            k: np.array(v, copy=True) if isinstance(v, np.ndarray) else v for k, v in inputs.items()}
        for s in specs:
            arrays_run[s.name] = arrays_run[s.inplace] if s.inplace else np.empty(s.shape, np_dtype(s.dtype))
        for s in poison:
            arrays_run[s.name].fill(poison_value(np_dtype(s.dtype)))
    del fresh
    host_of = getattr(arr, "host", None)

    def host(name):
        v = arrays_run[name]
        if isinstance(v, np.ndarray):
            return v
        return host_of(v) if host_of is not None else v.numpy()

    # What the kernel is handed: the arrays above, or (Triton's interpreter) torch views of the same memory
    launch_arrays = arrays_run if on_gpu else {k: arr.wrap(v) for k, v in arrays_run.items()}
    if on_gpu and job.compiler != "tilefarm":
        # Triton compiles here, for this device: the compile (cold, or a load from Triton's cache) timed apart
        # from the first run when the workload can compile without running
        t_c = time.perf_counter()
        with compilers.triton_compile_state() as cstate:
            done = wl.compile(launch_arrays, params, meta)
        if done is not None:
            res.compile_s = time.perf_counter() - t_c
            res.artifacts["compile_cache"] = cstate.state
        else:
            res.notes.append("compile time not measured: the workload declares no warmup")
    elif job.compiler != "tilefarm":
        res.notes.append("Triton's interpreter: no compile step")
    wl.launch(launch_arrays, params, meta)
    if on_gpu:
        sync()
    ok, stats, msgs = _check_outputs(wl, specs, {s.name: host(s.name) for s in specs}, ref)
    msgs += _check_inputs(pristine, {k: host(k) for k in pristine}, aliased)
    res.max_abs_err, res.max_rel_err = stats["max_abs_err"], stats["max_rel_err"]
    res.validate_s = time.perf_counter() - t0
    if msgs:
        res.status, res.error = MISMATCH, "; ".join(msgs)
        return
    if not on_gpu:
        res.status = VALIDATED
        res.notes.append("timing needs a GPU: validated in the interpreter")
        return
    # Timed runs, then check what they left behind.
    t1 = time.perf_counter()
    for s in poison:
        _fill(arrays_run[s.name], poison_value(np_dtype(s.dtype)))
    bench = _do_bench(lambda: wl.launch(arrays_run, params, meta), opts)
    if opts.cuda_graphs and not bench.get("cuda_graphs"):
        res.notes.append("cuda_graphs asked for, but compiler.runtime.do_bench does not replay graphs yet")
    sync()
    res.median_ms, res.p10_ms, res.p90_ms = bench["median_ms"], bench.get("p10_ms"), bench.get("p90_ms")
    res.n_reps = bench.get("n")
    res.samples = thin(bench.get("samples"))
    if aliased:
        res.notes.append("in-place kernel: the timed runs' output is not re-checked")
    else:
        ok, _, msgs = _check_outputs(wl, specs, {s.name: host(s.name) for s in specs}, ref)
        if not ok:
            res.status, res.error = MISMATCH, "wrong output after the timed runs: " + "; ".join(msgs)
            return
    try:  # after the output check: these launches' results are not looked at
        if res.median_ms is not None and res.median_ms < 0.1:
            res.launch = _launch_cost(lambda: wl.launch(arrays_run, params, meta))
    except Exception as e:
        res.notes.append(f"launch cost not measured: {type(e).__name__}: {e}")
    if opts.baseline:
        try:
            base = wl.make_baseline(pristine, params)
            if base is not None:
                res.baseline_ms = _do_bench(base, opts)["median_ms"]
        except Exception as e:
            res.notes.append(f"baseline not timed: {type(e).__name__}: {e}")
    res.bench_s = time.perf_counter() - t1
    res.status = OK


def _fill(a, value):
    """Poison an array: DeviceArray.fill / ndarray.fill, or a torch tensor's fill_."""
    f = getattr(a, "fill_", None)
    if f is not None:
        f(value)
    else:
        a.fill(value)


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _show(x) -> str:
    try:
        return repr(x.item())
    except (AttributeError, ValueError):
        return repr(x)
