"""A kernel file as a Triton user writes it (`import triton`), with the Workload the farm needs beside it.

    farm run configs/examples/scaled_add_triton.yaml --compilers tilefarm,triton

Under `tilefarm` the farm loads this file with `triton` resolved to this project's compiler (for this file only);
under `triton` the real Triton compiles it. Inputs, checks and timing are the farm's either way. `launch` computes
everything from `params` (shapes, grid): the arrays it gets are NumPy or device arrays under tilefarm and torch
tensors under Triton.
"""
import numpy as np
import triton
import triton.language as tl

from workloads.base import OutputSpec, Workload


@triton.jit
def scaled_add_kernel(X, Y, Out, alpha, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m).to(tl.float32)
    y = tl.load(Y + offs, mask=m).to(tl.float32)
    tl.store(Out + offs, (alpha * x + y).to(Out.dtype.element_ty), mask=m)


def make_inputs(params, rng):
    """Seeded random inputs, never zeros."""
    n, dt = params["N"], np.dtype(params["dtype"])
    return {"x": rng.uniform(0.5, 2.0, n).astype(dt), "y": rng.standard_normal(n).astype(dt)}


def _call(kernel_call, arrays, params, meta):
    meta = dict(meta)
    block = meta.pop("BLOCK", 1024)
    n = params["N"]
    return kernel_call((triton.cdiv(n, block),), arrays["x"], arrays["y"], arrays["out"], 0.5, n, BLOCK=block,
                       **meta)


def launch(arrays, params, meta):
    """Run the kernel (grid and sizes from params; arrays as the compiler takes them)."""
    _call(lambda grid, *a, **kw: scaled_add_kernel[grid](*a, **kw), arrays, params, meta)


def warmup(arrays, params, meta):
    """Compile without running (Triton's `warmup`; the farm's compile step and compile time)."""
    return _call(lambda grid, *a, **kw: scaled_add_kernel.warmup(*a, grid=grid, **kw), arrays, params, meta)


WORKLOAD = Workload(
    name="scaled_add_triton",
    description="out = 0.5 * x + y, written with import triton",
    kernel=scaled_add_kernel,
    make_inputs=make_inputs,
    input_specs=lambda p: [OutputSpec("x", (p["N"],), p["dtype"]), OutputSpec("y", (p["N"],), p["dtype"])],
    output_specs=lambda p: [OutputSpec("out", (p["N"],), p["dtype"])],
    launch=launch,
    warmup=warmup,
    reference=lambda inputs, p: {"out": 0.5 * inputs["x"].astype(np.float64) + inputs["y"].astype(np.float64)},
    flops=lambda p: 2.0 * p["N"],
    bytes=lambda p: 3.0 * p["N"] * np.dtype(p["dtype"]).itemsize,
    default_sweep=[{"N": 5000, "dtype": "float32"}],
    gpu_sweep=[{"N": 1 << 24, "dtype": "float32"}, {"N": 1 << 24, "dtype": "float16"}],
    default_meta={"BLOCK": 1024, "num_warps": 4},
    gpu_meta={"BLOCK": 1024, "num_warps": 4},
    tolerance={"float16": (2e-3, 2e-3)},
)
