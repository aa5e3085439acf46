"""Workload: y = softmax(x, axis=-1) for x [M, N] (fp32 / fp16 / bf16 in and out, fp32 math)."""
from __future__ import annotations

import numpy as np

import compiler

from workloads._common import KernelRunner, itemsize, np_dtype, split_meta, to_f64, normal
from workloads.base import OutputSpec, Workload

from . import kernel as K


def make_inputs(params, rng):
    # Logits-like values: N(0, 2), so rows have a clear but not overwhelming maximum.
    x = normal(rng, 0.0, 2.0, (params["M"], params["N"]))
    return {"x": x.astype(np_dtype(params["dtype"]))}


def input_specs(params):
    return [OutputSpec("x", (params["M"], params["N"]), params["dtype"])]


def output_specs(params):
    return [OutputSpec("y", (params["M"], params["N"]), params["dtype"])]


def reference(inputs, params):
    x = to_f64(inputs["x"])
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return {"y": e / e.sum(axis=1, keepdims=True)}


def default_num_warps(block: int) -> int:
    """The tutorial's choice: more warps for wider rows."""
    return 16 if block >= 4096 else 8 if block >= 2048 else 4


def _build(arrays, params, meta):
    consts, opts = split_meta(meta)
    m, n = params["M"], params["N"]
    block = compiler.next_power_of_2(n)
    if consts.get("BLOCK_SIZE", block) < n:
        raise ValueError(f"softmax keeps a whole row in one block: BLOCK_SIZE must be >= N={n}")
    consts["BLOCK_SIZE"] = consts.get("BLOCK_SIZE", block)
    opts.setdefault("num_warps", default_num_warps(consts["BLOCK_SIZE"]))
    # Contiguous rows: the row stride is N for both tensors (from params, never from the arrays).
    return (m,), (arrays["y"], arrays["x"], n, n, n), consts, opts


RUNNER = KernelRunner(K, "softmax_kernel", _build)


def torch_impl(arrays, params):
    import torch

    return torch.softmax(arrays["x"], dim=-1)


def _bytes(p):
    return float(2 * p["M"] * p["N"] * itemsize(p["dtype"]))


WORKLOAD = Workload(
    name="softmax",
    description="row-wise softmax, one row per program, the whole row in one block (fp32 math)",
    kernel=K.softmax_kernel,
    make_inputs=make_inputs,
    input_specs=input_specs,
    output_specs=output_specs,
    launch=RUNNER.launch,
    reference=reference,
    # per element: max, subtract, exp, sum, divide
    flops=lambda p: float(5 * p["M"] * p["N"]),
    bytes=_bytes,
    default_sweep=[{"M": m, "N": n, "dtype": dt} for dt in ("float32", "float16", "bfloat16")
                   for (m, n) in ((1, 1), (4, 781), (17, 1024), (3, 4097))],
    # BLOCK_SIZE is next_power_of_2(N) and num_warps follows it (default_num_warps) unless a sweep sets them.
    default_meta={},
    meta_space={"num_warps": [1, 2, 4, 8, 16, 32]},
    tolerance={"float32": (1e-5, 1e-7)},
    torch_impl=torch_impl,
    triton_launch=RUNNER.triton_launch,
    warmup=RUNNER.warmup,
)
WORKLOAD.gpu_sweep = ([{"M": 16384, "N": 1024, "dtype": "float32"}, {"M": 4096, "N": 8192, "dtype": "float32"},
                       {"M": 8192, "N": 4096, "dtype": "bfloat16"}]
                      + [{"M": 4096, "N": n, "dtype": dt} for dt in ("float32", "float16", "bfloat16")
                         for n in (256, 2048, 16384)])
