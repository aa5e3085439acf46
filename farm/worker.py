"""What happens to one job on a worker: compile, validate (hard to fool) and time. Executor-independent.

Everything the farm needs from the compiler goes through the thin adapters at the top of this file, so the
farm can be tested with fake workloads whose "kernels" are plain NumPy and runs wherever the compiler runs.

Validation, in order: fresh inputs seeded from the job's key; outputs poisoned (NaN for floats, a sentinel for
integers) before every run so unwritten elements show; the float64 reference compared with the workload's
(rtol, atol) for the output dtype, NaN never passing where the reference is finite; inputs compared bit for bit
with their pristine copies unless an output aliases them (declared in-place); and on a GPU the output of the
timed runs is checked again, so a kernel cannot be right once and wrong while timed.
"""
from __future__ import annotations

import functools
import hashlib
import inspect
import os
import pathlib
import socket
import time
import traceback

import numpy as np

from farm.jobs import (COMPILE_ERROR, COMPILED, ERROR, MAX_SAMPLES, MISMATCH, OK, VALIDATED, Job, Result,
                       RunOptions)

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
    # 200 launches in batches of 50: a few milliseconds for launch-bound kernels, which is where the host cost
    # matters (the caller skips it for long kernels, whose repeated runs would dominate the job's time).
    return launch_overhead_us(fn, n=200, batch=50)


def _sync():
    try:
        from compiler.runtime import cuda
        if hasattr(cuda, "synchronize"):
            cuda.synchronize()
    except ImportError:
        pass


# ---------------------------------------------------------------- workloads


def load_workload(ref: str):
    """A Workload from a registry name, a path to a kernel file, or path::NAME (cached per process)."""
    return _load_workload(ref)


@functools.lru_cache(maxsize=None)
def _load_workload(ref: str):
    import workloads
    from farm import FarmError
    path, _, name = ref.partition("::")
    if path.endswith(".py"):
        try:
            wls = workloads.load_file(path)
        except (FileNotFoundError, ValueError, TypeError) as e:
            raise FarmError(str(e)) from None
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


def _rng(job: Job) -> np.random.Generator:
    return np.random.default_rng([job.seed, int(job.key[:15], 16)])


# ---------------------------------------------------------------- checks


def compare(name: str, got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> tuple[bool, dict, str]:
    """Compare one output with its reference: (ok, {max_abs_err, max_rel_err, n_bad}, message when not ok)."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return False, {}, f"{name}: shape {got.shape} but the reference has {want.shape}"
    exact = got.dtype.kind in "iub" and want.dtype.kind in "iub"
    if exact:
        bad = got != want
        sentinel = poison_value(got.dtype)
        unwritten = (got == sentinel) & (want != sentinel)
        err = np.abs(got.astype(np.float64) - want.astype(np.float64))
        rel = err / np.maximum(np.abs(want.astype(np.float64)), 1e-300)
    else:
        g, w = got.astype(np.float64), want.astype(np.float64)
        gnan, wnan = np.isnan(g), np.isnan(w)
        with np.errstate(invalid="ignore", over="ignore"):
            err = np.abs(g - w)
            close = (err <= atol + rtol * np.abs(w)) | (gnan & wnan) | (g == w)
            rel = err / np.maximum(np.abs(w), 1e-300)
        unwritten = gnan & ~wnan  # NaN where a number belongs: never written, or computed NaN; never passes
        bad = ~close | unwritten
    fin = np.isfinite(err)
    stats = {
        "max_abs_err": float(err[fin].max()) if fin.any() else (float("inf") if err.size else 0.0),
        "max_rel_err": float(rel[fin].max()) if fin.any() else (float("inf") if err.size else 0.0),
        "n_bad": int(bad.sum()),
    }
    if not bad.any():
        return True, stats, ""
    first = tuple(int(i) for i in np.argwhere(bad)[0])
    msg = (f"{name}: {stats['n_bad']}/{bad.size} elements wrong"
           + (f" ({int(unwritten.sum())} NaN or unwritten)" if unwritten.any() else "")
           + f"; first at {first}: got {_show(got[first])}, want {_show(want[first])}"
           + ("" if exact else f"; max abs err {stats['max_abs_err']:.3g}, rtol={rtol:g} atol={atol:g}"))
    return False, stats, msg


def _check_outputs(wl, specs, outputs: dict, ref: dict) -> tuple[bool, dict, list[str]]:
    ok, msgs = True, []
    agg = {"max_abs_err": 0.0, "max_rel_err": 0.0}
    for spec in specs:
        if spec.name not in ref:
            return False, agg, [f"the reference returned no {spec.name!r} (it has {sorted(ref)})"]
        rtol, atol = wl.tol(spec.dtype)
        good, stats, msg = compare(spec.name, outputs[spec.name], ref[spec.name], rtol, atol)
        for k in agg:
            agg[k] = max(agg[k], stats.get(k, 0.0))
        if not good:
            ok = False
            msgs.append(msg)
    return ok, agg, msgs


def _check_inputs(pristine: dict, current: dict, aliased: set) -> list[str]:
    msgs = []
    for name, before in pristine.items():
        if name in aliased:
            continue
        after = np.asarray(current[name])
        if after.tobytes() != before.tobytes():
            n = int((after.view(np.uint8) != before.view(np.uint8)).sum()) if after.shape == before.shape else -1
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
    wl = load_workload(job.workload)
    t0 = time.perf_counter()
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
        wl = load_workload(job.workload)
        params, meta = dict(job.params), dict(job.meta)
        res.flops, res.bytes = float(wl.flops(params)), float(wl.bytes(params))
        if compiled is None:
            compile_job(job, res)
        if res.status != COMPILED or opts.compile_only:
            return res
        on_gpu = gpu_available()[0] and opts.target != "interpreter"
        _validate_and_time(wl, job, opts, res, params, meta, on_gpu)
    except Exception as e:  # a bug in the workload's helpers, a CUDA error, ...
        _fail(res, COMPILE_ERROR if is_compilation_error(e) else ERROR, e)
        res.replace_worker = is_cuda_error(e)  # e.g. illegal address: the context is poisoned
    finally:
        res.wall_s = time.perf_counter() - t_start
        if res.gpu is not None:  # memory after the job's arrays are gone: flat over a sweep, or a leak
            res.gpu = dict(res.gpu, **_memory_snapshot())
    return res


def _memory_snapshot() -> dict:
    """This worker's resident host memory and the GPU's used memory, in MiB."""
    out = {}
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
    arrays, pristine, specs, aliased = _host_arrays(wl, job, _rng(job))
    ref = wl.reference({k: pristine[k] for k in pristine}, params)
    poison = [s for s in specs if not s.inplace]
    if on_gpu:
        res.gpu = gpu_info()
        dev = {k: _to_device(v) for k, v in arrays.items() if isinstance(v, np.ndarray) and k not in
               {s.name for s in poison}}
        for s in specs:
            dev[s.name] = dev[s.inplace] if s.inplace else _device_empty(s.shape, np_dtype(s.dtype))
        arrays_run = {**arrays, **dev}
        for s in poison:
            dev[s.name].fill(poison_value(np_dtype(s.dtype)))
    else:
        arrays_run = arrays
        for s in poison:
            arrays[s.name].fill(poison_value(np_dtype(s.dtype)))

    def host(name):
        v = arrays_run[name]
        return v if isinstance(v, np.ndarray) else v.numpy()

    wl.launch(arrays_run, params, meta)
    if on_gpu:
        _sync()
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
        arrays_run[s.name].fill(poison_value(np_dtype(s.dtype)))
    bench = _do_bench(lambda: wl.launch(arrays_run, params, meta), opts)
    if opts.cuda_graphs and not bench.get("cuda_graphs"):
        res.notes.append("cuda_graphs asked for, but compiler.runtime.do_bench does not replay graphs yet")
    _sync()
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


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _show(x) -> str:
    try:
        return repr(x.item())
    except (AttributeError, ValueError):
        return repr(x)
