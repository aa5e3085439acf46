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
    content-addressed cache of this machine (`compile_and_export` also returns them, to send to another). `wl` is
    the job's workload when the caller has it loaded already.
    """
    return compile_and_export(job, res, wl)[0]


def compile_and_export(job: Job, res: Result | None = None, wl=None) -> tuple[Result, dict | None]:
    """`compile_job`, plus the kernel's bundle (farm.artifacts: its PTX, cubin and metadata as bytes, to install
    on the worker that runs the job); None when the workload compiles nothing the compiler can export."""
    from farm import artifacts
    res = res or Result(key=job.key, status=COMPILED, worker=worker_name())
    if job.compiler != "tilefarm":
        # Triton compiles on the worker that runs the job, for its device: this process never imports it (a
        # pooled compile process must not hold a Triton set up for the wrong mode; farm.compilers)
        res.status = COMPILED
        return res, None
    wl = wl if wl is not None else load_workload(job.workload)
    t0, t0_wall = time.perf_counter(), time.time()
    bundle = None
    try:
        compiled = wl.compile(compile_arrays(wl, job), dict(job.params), dict(job.meta))
        bundle = artifacts.bundle_of(compiled)  # assembles the cubin here (ptxas), not on the GPU node
    except Exception as e:
        res.compile_s = time.perf_counter() - t0
        return record_failure(res, COMPILE_ERROR if is_compilation_error(e) else ERROR, e), None
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
        if bundle is not None:
            res.artifacts["kernel_key"] = bundle["key"]
    res.status = COMPILED
    return res, bundle


def compile_arrays(wl, job: Job) -> dict:
    """What a job is compiled for: stand-in arrays when the workload names its inputs (compiling needs only
    dtypes and alignment, and generating a large job's inputs here would take CPU and memory from the GPU
    workers), else its real inputs."""
    standin = getattr(wl, "standin_arrays", None)
    arrays = standin(dict(job.params)) if standin is not None else None
    return arrays if arrays is not None else host_arrays(wl, job, input_rng(job))[0]


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
