"""Compiling one job without a GPU (a CPU task of the farm) and recording a failure as a Result."""
from __future__ import annotations

import time
import traceback

from farm import compilers
from farm.inputs import host_arrays, input_rng
from farm.jobs import COMPILE_ERROR, COMPILED, ERROR, Job, Result
from farm.loader import load_workload
from farm.machine import is_compilation_error, worker_name


def record_failure(res: Result, status: str, e: BaseException | None = None, msg: str | None = None) -> Result:
    """Set `res`'s status and error: a compile error as the compiler reported it (file:line:col with a caret),
    any other exception as its type and message with the traceback in `detail`."""
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


def compile_job(job: Job, res: Result | None = None, wl=None) -> Result:
    """Compile one job without a GPU (the workload's `warmup`): PTX and, when ptxas is present, cubin.

    Returns a Result with status "compiled" or "compile_error"; the compiled artifacts land in the compiler's
    content-addressed cache, so a GPU worker running the job afterwards only loads them. `wl` is the job's
    workload when the caller has it loaded already.
    """
    res = res or Result(key=job.key, status=COMPILED, worker=worker_name())
    if job.compiler != "tilefarm":
        # Triton compiles on the worker that runs the job, for its device: this process never imports it (a
        # pooled compile process must not hold a Triton set up for the wrong mode; farm.compilers)
        res.status = COMPILED
        return res
    wl = wl if wl is not None else load_workload(job.workload)
    t0, t0_wall = time.perf_counter(), time.time()
    try:
        # Stand-in arrays when the workload names its inputs: compiling needs only dtypes and alignment, and
        # generating a large job's inputs here would take CPU and memory from the GPU workers.
        standin = getattr(wl, "standin_arrays", None)
        arrays = standin(dict(job.params)) if standin is not None else None
        if arrays is None:
            arrays = host_arrays(wl, job, input_rng(job))[0]
        compiled = wl.compile(arrays, dict(job.params), dict(job.meta))
    except Exception as e:
        res.compile_s = time.perf_counter() - t0
        return record_failure(res, COMPILE_ERROR if is_compilation_error(e) else ERROR, e)
    res.compile_s = time.perf_counter() - t0
    if compiled is None:
        res.notes.append("not compiled ahead: the workload declares no warmup")
    else:
        asm = getattr(compiled, "asm", {}) or {}
        res.provenance = _provenance(compiled, res)  # first: its ptxas run makes the cubin counted below
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


def _provenance(compiled, res: Result) -> dict | None:
    """Registers, spills, shared memory, blocks per SM and ptxas release of the compiled kernel (compiler.resources),
    or None where there is no ptxas or the workload's compile result is not a compiled kernel."""
    if not (hasattr(compiled, "asm") and hasattr(compiled, "metadata")):
        return None
    from compiler.resources import kernel_resources
    try:
        return kernel_resources(compiled)
    except ValueError as e:  # ptxas printed no resource line: the run goes on without them, saying so
        res.notes.append(f"kernel resources not recorded: {e}")
        return None
