"""Fake workloads for testing the farm without the compiler: "kernels" are NumPy, misbehaving on request.

`fake_vec` computes out = x + 2*y; meta["mode"] picks its behaviour:
ok, wrong (off by a little), unwritten (leaves the tail), nan (one NaN), modify (scribbles on an input),
raise (an exception), compile_error (warmup raises a CompilationError), hang (sleeps), die (os._exit),
cuda_error (a CudaError: the worker's context is poisoned and it must be replaced),
flaky_after_timing (right once, wrong on later runs); meta["sleep"] = seconds to sleep first.
Compiling (warmup, what compile tasks run) misbehaves too: compile_raise (a RuntimeError), compile_die
(os._exit), compile_hang (sleeps); the kernel itself is then as `ok`.
"""
import os
import time

import numpy as np

from workloads.base import OutputSpec, Workload


class CompilationError(Exception):
    """Stands in for compiler.CompilationError (the farm recognises it by name)."""


class CudaError(Exception):
    """Stands in for the runtime's CudaError (the farm recognises it by name: the worker is replaced)."""


class Compiled:
    def __init__(self, n):
        self.asm = {"tile": "tile ir", "llir": "define void @k()", "ptx": ".version 8.0\n" * n}
        self.metadata = {"name": "fake_vec", "num_warps": 4}


def kernel(x, y, out):
    out[:] = x + 2 * y


_calls = {"n": 0}


def launch(arrays, params, meta):
    mode = meta.get("mode", "ok")
    x, y, out = arrays["x"], arrays["y"], arrays["out"]
    if meta.get("sleep"):
        time.sleep(meta["sleep"])
    if mode == "raise":
        raise RuntimeError("kernel exploded")
    if mode == "hang":
        time.sleep(3600)
    if mode == "die":
        os._exit(3)
    if mode == "cuda_error":
        raise CudaError("CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered (fake)")
    if mode == "compile_error":
        raise CompilationError("fake.py:3:5: no such op\n    tl.nope()\n    ^")
    kernel(x, y, out)
    if mode == "wrong":
        out[0] += 1.0
    elif mode == "unwritten":
        out[len(out) // 2:] = np.nan if out.dtype.kind == "f" else out[len(out) // 2:]
    elif mode == "nan":
        out[1] = np.nan
    elif mode == "modify":
        x[0] = 42
    elif mode == "flaky_after_timing":
        _calls["n"] += 1
        if _calls["n"] > 1:
            out[-1] += 10


def warmup(arrays, params, meta):
    mode = meta.get("mode")
    if mode == "compile_raise":
        raise RuntimeError("the compiler fell over (fake)")
    if mode == "compile_die":
        os._exit(4)
    if mode == "compile_hang":
        time.sleep(3600)
    if mode == "compile_error":
        raise CompilationError("fake.py:3:5: no such op\n    tl.nope()\n    ^")
    return Compiled(params["N"] // 64 + 1)


def make_inputs(params, rng):
    dt = np.dtype(params["dtype"])
    n = params["N"]
    return {"x": rng.standard_normal(n).astype(dt), "y": rng.standard_normal(n).astype(dt)}


def reference(inputs, params):
    return {"out": inputs["x"].astype(np.float64) + 2 * inputs["y"].astype(np.float64)}


WORKLOAD = Workload(
    name="fake_vec",
    description="out = x + 2*y in NumPy, misbehaving as meta['mode'] asks",
    kernel=kernel,
    make_inputs=make_inputs,
    output_specs=lambda p: [OutputSpec("out", (p["N"],), p["dtype"])],
    launch=launch,
    reference=reference,
    flops=lambda p: 2 * p["N"],
    bytes=lambda p: 3 * p["N"] * np.dtype(p["dtype"]).itemsize,
    default_sweep=[{"N": 1024, "dtype": "float32"}],
    default_meta={"mode": "ok", "BLOCK": 128},
    warmup=warmup,
)


def _inc_launch(arrays, params, meta):
    arrays["x"] += 1


INPLACE = Workload(
    name="fake_inplace",
    description="x += 1 in place",
    kernel=_inc_launch,
    make_inputs=lambda p, rng: {"x": rng.standard_normal(p["N"]).astype(p["dtype"])},
    output_specs=lambda p: [OutputSpec("x", (p["N"],), p["dtype"], inplace="x")],
    launch=_inc_launch,
    reference=lambda inputs, p: {"x": inputs["x"].astype(np.float64) + 1},
    flops=lambda p: p["N"],
    bytes=lambda p: 2 * p["N"] * 4,
    default_sweep=[{"N": 256, "dtype": "float32"}],
)

WORKLOADS = [INPLACE]
