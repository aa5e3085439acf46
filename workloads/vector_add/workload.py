"""Workload: z = x + y over N elements (fp32 / fp16 / bf16)."""
from __future__ import annotations

import numpy as np

import compiler

from workloads._common import KernelRunner, itemsize, np_dtype, split_meta, to_f64, normal, uniform
from workloads.base import OutputSpec, Workload

from . import kernel as K


def make_inputs(params, rng):
    dt = np_dtype(params["dtype"])
    n = params["N"]
    # Normal values, kept away from exact zero so an unwritten (or zero-filled) output cannot pass.
    x = normal(rng, 0.05, 1.0, n)
    y = uniform(rng, 0.5, 2.0, n) * np.where(rng.random(n, dtype=np.float32) < 0.5, np.float32(-1), np.float32(1))
    return {"x": x.astype(dt), "y": y.astype(dt)}


def input_specs(params):
    return [OutputSpec(n, (params["N"],), params["dtype"]) for n in ("x", "y")]


def output_specs(params):
    return [OutputSpec("z", (params["N"],), params["dtype"])]


def reference(inputs, params):
    return {"z": to_f64(inputs["x"]) + to_f64(inputs["y"])}


def _build(arrays, params, meta):
    consts, opts = split_meta(meta)
    consts.setdefault("BLOCK", 1024)
    n = params["N"]
    grid = (compiler.cdiv(n, consts["BLOCK"]),)
    return grid, (arrays["x"], arrays["y"], arrays["z"], n), consts, opts


RUNNER = KernelRunner(K, "add_kernel", _build)


def torch_impl(arrays, params):
    import torch

    return torch.add(arrays["x"], arrays["y"])


WORKLOAD = Workload(
    name="vector_add",
    description="z = x + y, one BLOCK of elements per program",
    kernel=K.add_kernel,
    make_inputs=make_inputs,
    input_specs=input_specs,
    output_specs=output_specs,
    launch=RUNNER.launch,
    reference=reference,
    flops=lambda p: float(p["N"]),
    bytes=lambda p: float(3 * p["N"] * itemsize(p["dtype"])),
    default_sweep=[{"N": n, "dtype": dt} for dt in ("float32", "float16", "bfloat16")
                   for n in (1, 1000, 4096, 65537)],
    default_meta={"BLOCK": 1024, "num_warps": 4},
    meta_space={"BLOCK": [256, 512, 1024, 2048, 4096], "num_warps": [1, 2, 4, 8]},
    tolerance={},
    torch_impl=torch_impl,
    triton_launch=RUNNER.triton_launch,
    warmup=RUNNER.warmup,
)
# Sizes worth timing only on a GPU (the interpreter would take minutes); the farm's default sweep stays small.
WORKLOAD.gpu_sweep = [{"N": n, "dtype": dt} for dt in ("float32", "float16", "bfloat16")
                      for n in (1 << 20, 1 << 24, 1 << 28)]
