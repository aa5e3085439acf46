"""A user's own kernel file for the farm: the kernel, and a Workload saying how to feed, check and count it.

    farm run configs/examples/scaled_add.yaml
"""
import numpy as np

import compiler
import compiler.language as tl
from workloads.base import OutputSpec, Workload


@compiler.jit
def scaled_add_kernel(X, Y, Out, alpha, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m).to(tl.float32)
    y = tl.load(Y + offs, mask=m).to(tl.float32)
    tl.store(Out + offs, (alpha * x + y).to(Out.dtype.element_ty), mask=m)


def make_inputs(params, rng):
    """Seeded random inputs, never zeros."""
    from compiler.ir.types import from_name  # dtype names -> NumPy dtypes (bfloat16 via ml_dtypes)

    n, dt = params["N"], from_name(params["dtype"]).np
    return {"x": rng.uniform(0.5, 2.0, n).astype(dt), "y": rng.standard_normal(n).astype(dt)}


def launch(arrays, params, meta):
    """Run the kernel on device arrays or NumPy arrays (interpreter); meta has BLOCK and num_warps."""
    meta = dict(meta)
    block = meta.pop("BLOCK", 1024)
    n = params["N"]
    scaled_add_kernel[(compiler.cdiv(n, block),)](arrays["x"], arrays["y"], arrays["out"], 0.5, n, BLOCK=block,
                                                  **meta)


def warmup(arrays, params, meta):
    """Compile without running (what the farm's CPU workers do)."""
    meta = dict(meta)
    block = meta.pop("BLOCK", 1024)
    n = params["N"]
    return scaled_add_kernel.warmup(arrays["x"], arrays["y"], arrays["out"], 0.5, n, BLOCK=block,
                                    grid=(compiler.cdiv(n, block),), **meta)


WORKLOAD = Workload(
    name="scaled_add",
    description="out = 0.5 * x + y",
    kernel=scaled_add_kernel,
    make_inputs=make_inputs,
    output_specs=lambda p: [OutputSpec("out", (p["N"],), p["dtype"])],
    launch=launch,
    warmup=warmup,
    reference=lambda inputs, p: {"out": 0.5 * inputs["x"].astype(np.float64) + inputs["y"].astype(np.float64)},
    flops=lambda p: 2.0 * p["N"],
    bytes=lambda p: 3.0 * p["N"] * (4 if p["dtype"] == "float32" else 2),
    default_sweep=[{"N": 5000, "dtype": "float32"}],
    default_meta={"BLOCK": 1024, "num_warps": 4},
    tolerance={"float16": (2e-3, 2e-3)},
)
