"""Kernel files as Triton users write them (`import triton`), for tests/farm/test_compilers.py: a correct kernel,
one that leaves its last element unwritten (the farm's poisoned outputs must catch it under either compiler) and
one using a part of Triton's language tilefarm refuses (`tl.float8e4b8`, AMD's fnuz format, which NVIDIA GPUs do
not have)."""
import dataclasses

import numpy as np
import triton
import triton.language as tl

from workloads.base import OutputSpec, Workload


@triton.jit
def axpy_kernel(X, Y, Out, alpha, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m).to(tl.float32)
    y = tl.load(Y + offs, mask=m).to(tl.float32)
    tl.store(Out + offs, (alpha * x + y).to(Out.dtype.element_ty), mask=m)


@triton.jit
def short_kernel(X, Y, Out, alpha, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N - 1  # the last element is never written
    x = tl.load(X + offs, mask=m).to(tl.float32)
    y = tl.load(Y + offs, mask=m).to(tl.float32)
    tl.store(Out + offs, (alpha * x + y).to(Out.dtype.element_ty), mask=m)


@triton.jit
def unsupported_kernel(X, Y, Out, alpha, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m)
    x = x.to(tl.float8e4b8).to(tl.float32)
    y = tl.load(Y + offs, mask=m)
    tl.store(Out + offs, alpha * x + y, mask=m)


def _launcher(kernel):
    def launch(arrays, params, meta):
        meta = dict(meta)
        block = meta.pop("BLOCK")
        n = params["N"]
        kernel[(triton.cdiv(n, block),)](arrays["x"], arrays["y"], arrays["out"], 0.5, n, BLOCK=block, **meta)
    return launch


def _warmer(kernel):
    def warmup(arrays, params, meta):
        meta = dict(meta)
        block = meta.pop("BLOCK")
        n = params["N"]
        return kernel.warmup(arrays["x"], arrays["y"], arrays["out"], 0.5, n, BLOCK=block,
                             grid=(triton.cdiv(n, block),), **meta)
    return warmup


def make_inputs(params, rng):
    n, dt = params["N"], np.dtype(params["dtype"])
    return {"x": rng.uniform(0.5, 2.0, n).astype(dt), "y": rng.standard_normal(n).astype(dt)}


AXPY = Workload(
    name="axpy_triton", description="out = 0.5 x + y, written with import triton", kernel=axpy_kernel,
    make_inputs=make_inputs, output_specs=lambda p: [OutputSpec("out", (p["N"],), p["dtype"])],
    launch=_launcher(axpy_kernel), warmup=_warmer(axpy_kernel),
    reference=lambda x, p: {"out": 0.5 * x["x"].astype(np.float64) + x["y"].astype(np.float64)},
    flops=lambda p: 2.0 * p["N"], bytes=lambda p: 3.0 * p["N"] * np.dtype(p["dtype"]).itemsize,
    default_sweep=[{"N": 1000, "dtype": "float32"}], default_meta={"BLOCK": 256, "num_warps": 4},
    tolerance={"float16": (2e-3, 2e-3)})
WORKLOADS = [AXPY,
             dataclasses.replace(AXPY, name="short_triton", kernel=short_kernel, launch=_launcher(short_kernel),
                                 warmup=_warmer(short_kernel)),
             dataclasses.replace(AXPY, name="unsupported_triton", kernel=unsupported_kernel,
                                 launch=_launcher(unsupported_kernel), warmup=_warmer(unsupported_kernel))]
