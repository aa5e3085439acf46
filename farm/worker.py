"""What happens to one job in a worker process: compile, validate (hard to fool) and time. Executor-independent:
the executors (farm.executor) call `run_job` and `compile_job`, and ask this module about the worker's GPU.

The parts live in their own modules: `farm.loader` loads the workload, `farm.compiling` compiles,
`farm.inputs` makes (or finds in the per-process cache) the seeded inputs and the float64 reference,
`farm.validate` compares, `farm.timing` times, `farm.machine` knows the compiler's version and the GPU,
`farm.compilers` what differs per compiler (tilefarm, or the real Triton: how its file loads, its arrays, its
interpreter). This module runs them in order and is the only one that puts arrays on the device; the checks and
the timing are the same whichever compiler built the kernel.

Validation, in order: inputs seeded from the run's seed, the workload's name and the shape params (not the
meta-parameters, options or target: every candidate of a shape sees the same data), handed to the kernel as
fresh copies (or fresh device uploads); outputs poisoned (NaN for floats, a sentinel for integers) before every
run so unwritten elements show; the float64 reference compared with the workload's (rtol, atol) for the output
dtype, NaN never passing where the reference is finite; inputs compared bit for bit with their pristine copies
unless an output aliases them (declared in-place); and on a GPU the output of the timed runs is checked again,
so a kernel cannot be right once and wrong while timed.

A result's `validate_s` covers everything from making (or finding) the inputs to the checks; in its
artifacts, `inputs_s` is how long this job spent getting the inputs and reference, `inputs_cached` whether the
cache had them and `inputs_make_s` what making them cost (on a hit: the job that made them).
"""
from __future__ import annotations

import os
import time

import numpy as np

from farm import FarmError, compilers, timing
from farm import artifacts
from farm.compiling import compile_and_export, compile_arrays, compile_job, record_failure
from farm.inputs import INPUT_CACHE, inputs_and_reference, np_dtype
from farm.jobs import COMPILE_ERROR, COMPILED, ERROR, MISMATCH, NOT_RUNNABLE, OK, VALIDATED, Job, Result, RunOptions
from farm.loader import load_workload
from farm.machine import gpu_available, gpu_info, gpu_kind, is_compilation_error, is_cuda_error, worker_name
from farm.validate import check_inputs, check_outputs, poison_value

__all__ = ["run_job", "compile_job", "compile_and_export", "worker_name", "gpu_available", "gpu_info", "gpu_kind"]

# ---------------------------------------------------------------- the device (the compiler's runtime)


def _to_device(a: np.ndarray):
    from compiler.runtime import DeviceArray
    return DeviceArray.from_numpy(a)


def _device_empty(shape, dtype):
    from compiler.runtime import DeviceArray
    return DeviceArray.empty(tuple(shape), np.dtype(dtype))


def _do_bench(fn, opts: RunOptions) -> dict:
    return timing.bench(fn, opts)


def _sync():
    try:
        from compiler.runtime import cuda
        if hasattr(cuda, "synchronize"):
            cuda.synchronize()
    except ImportError:
        pass


# ---------------------------------------------------------------- the job

def run_job(job: Job, opts: RunOptions, compiled: Result | None = None, bundle: dict | None = None) -> Result:
    """Compile (unless `compiled` says it was), validate and, on a GPU, time one job. Never raises.

    `bundle`: the kernel compiled elsewhere (farm.artifacts), installed before the launch so this worker loads it;
    `artifacts["node_compiles"]` then counts what this process still compiled or assembled for the job (0 when
    the shipped kernel served it)."""
    t_start = time.perf_counter()
    res = compiled or Result(key=job.key, status=COMPILED)
    res.worker = worker_name()
    before = artifacts.counts()
    try:
        on_gpu = gpu_available()[0] and opts.target != "interpreter"
        # The job's compiler (farm.compilers): can it run here, and what must be set before it is imported
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
            compile_job(job, res, wl)
        if res.status != COMPILED or opts.compile_only:
            return res
        if bundle is not None:
            artifacts.install(bundle)
        if compiled is not None and res.artifacts.get("kernel_key") and not on_gpu:
            # No GPU here, so the launch below runs in the interpreter and never asks for the kernel: look up the
            # specialization the GPU launch would load, so a kernel that did not arrive shows as compiled here.
            wl.compile(compile_arrays(wl, job), params, meta)
        _validate_and_time(wl, job, opts, res, params, meta, on_gpu)
    except Exception as e:  # a bug in the workload's helpers, a CUDA error, ...
        record_failure(res, COMPILE_ERROR if is_compilation_error(e) else ERROR, e)
        res.replace_worker = is_cuda_error(e)  # e.g. illegal address: the context is poisoned
    finally:
        res.wall_s = time.perf_counter() - t_start
        if res.gpu is not None:
            compilers.release(job.compiler)  # torch's cached blocks of a Triton job back to the driver
        if compiled is not None and before:
            after = artifacts.counts()
            res.artifacts["node_compiles"] = sum(after[k] - before[k] for k in ("compiled", "assembled"))
            res.artifacts["node_installed"] = after["installed"] - before["installed"]
        if res.gpu is not None:  # memory after the job's arrays are gone: flat over a sweep, or a leak
            res.gpu = dict(res.gpu, **_memory_snapshot())
    return res


def _memory_snapshot() -> dict:
    """This worker's resident host memory and the GPU's used memory, in MiB."""
    out = {"input_cache_mb": INPUT_CACHE.nbytes / 2**20}  # part of the RSS: grows up to its bound, then flat
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
    inputs, ref, fresh, cached, make_s = inputs_and_reference(wl, job, params)
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
    ok, stats, msgs = check_outputs(wl, specs, {s.name: host(s.name) for s in specs}, ref)
    msgs += check_inputs(pristine, {k: host(k) for k in pristine}, aliased)
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
    res.samples = timing.thin(bench.get("samples"))
    if aliased:
        res.notes.append("in-place kernel: the timed runs' output is not re-checked")
    else:
        ok, _, msgs = check_outputs(wl, specs, {s.name: host(s.name) for s in specs}, ref)
        if not ok:
            res.status, res.error = MISMATCH, "wrong output after the timed runs: " + "; ".join(msgs)
            return
    try:  # after the output check: these launches' results are not looked at
        if res.median_ms is not None and res.median_ms < 0.1:
            res.launch = timing.launch_cost(lambda: wl.launch(arrays_run, params, meta))
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
