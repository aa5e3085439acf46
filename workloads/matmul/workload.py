"""Workload: C = epilogue(A @ B) for A [M, K], B [K, N] (fp16 / bf16 / fp32-tf32 / fp32-ieee / int8).

params: M, N, K, dtype (input dtype name, or "tf32" = float32 inputs with tf32 tensor cores), epilogue
("none", "bias_relu", "gelu"). Output dtype: the input dtype for 16-bit inputs, float32 for fp32/tf32, int32
for int8 (the epilogues apply to float outputs only).
"""
from __future__ import annotations

import math

import numpy as np

import compiler

from workloads._common import KernelRunner, itemsize, np_dtype, split_meta, to_f64, uniform
from workloads.base import OutputSpec, Workload

from . import kernel as K


def _in_dtype(p):
    return "float32" if p["dtype"] in ("tf32", "float32") else p["dtype"]


def _out_dtype(p):
    d = p["dtype"]
    return {"tf32": "float32", "float32": "float32", "int8": "int32"}.get(d, d)


def _precision(p):
    return "ieee" if p["dtype"] == "float32" else "tf32"


def make_inputs(params, rng):
    M, N, Kd = params["M"], params["N"], params["K"]
    if params["dtype"] == "int8":
        a = rng.integers(-8, 8, (M, Kd), dtype=np.int8)
        b = rng.integers(-8, 8, (Kd, N), dtype=np.int8)
    else:
        dt = np_dtype(_in_dtype(params))
        a = uniform(rng, -1, 1, (M, Kd)).astype(dt)
        b = uniform(rng, -1, 1, (Kd, N)).astype(dt)
    bias = rng.uniform(-1, 1, N).astype(np.float32)
    return {"a": a, "b": b, "bias": bias}


def input_specs(params):
    M, N, Kd = params["M"], params["N"], params["K"]
    dt = "int8" if params["dtype"] == "int8" else _in_dtype(params)
    return [OutputSpec("a", (M, Kd), dt), OutputSpec("b", (Kd, N), dt), OutputSpec("bias", (N,), "float32")]


def output_specs(params):
    return [OutputSpec("c", (params["M"], params["N"]), _out_dtype(params))]


def reference(inputs, params):
    if params["dtype"] == "int8":
        return {"c": inputs["a"].astype(np.int64) @ inputs["b"].astype(np.int64)}
    a, b = to_f64(inputs["a"]), to_f64(inputs["b"])
    if params["dtype"] == "tf32":  # the interpreter and the hardware round inputs to tf32 first
        def tf32(x):
            u = x.astype(np.float32).view(np.uint32)
            return ((u + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32).astype(np.float64)
        a, b = tf32(a), tf32(b)
    c = a @ b
    ep = params.get("epilogue", "none")
    if ep == "bias_relu":
        c = np.maximum(c + inputs["bias"].astype(np.float64)[None, :], 0)
    elif ep == "gelu":
        c = 0.5 * c * (1 + np.vectorize(math.erf)(c / math.sqrt(2)))
    return {"c": c}


def _build(arrays, params, meta):
    consts, opts = split_meta(meta)
    M, N, Kd = params["M"], params["N"], params["K"]
    consts.setdefault("BLOCK_M", 128)
    consts.setdefault("BLOCK_N", 128)
    consts.setdefault("BLOCK_K", 32 if itemsize(_in_dtype(params)) >= 4 else 64)
    consts.setdefault("GROUP_M", 8)
    consts["EPILOGUE"] = params.get("epilogue", "none")
    consts["PRECISION"] = _precision(params)
    opts.setdefault("num_warps", 8)
    grid = (compiler.cdiv(M, consts["BLOCK_M"]) * compiler.cdiv(N, consts["BLOCK_N"]),)
    # Contiguous row-major operands: strides from params, never from the arrays.
    args = (arrays["a"], arrays["b"], arrays["c"], arrays["bias"], M, N, Kd, Kd, 1, N, 1, N, 1)
    return grid, args, consts, opts


RUNNER = KernelRunner(K, "matmul_kernel", _build)


def torch_impl(arrays, params):
    import torch

    c = torch.matmul(arrays["a"], arrays["b"])
    ep = params.get("epilogue", "none")
    if ep == "bias_relu":
        c = torch.relu(c + arrays["bias"].to(c.dtype))
    elif ep == "gelu":
        c = torch.nn.functional.gelu(c)
    return c


WORKLOAD = Workload(
    name="matmul",
    description="C = epilogue(A @ B), grouped-ordering tiled matmul with a fused epilogue (tensor cores)",
    kernel=K.matmul_kernel,
    make_inputs=make_inputs,
    input_specs=input_specs,
    output_specs=output_specs,
    launch=RUNNER.launch,
    reference=reference,
    flops=lambda p: 2.0 * p["M"] * p["N"] * p["K"],
    bytes=lambda p: float((p["M"] * p["K"] + p["K"] * p["N"]) * itemsize(_in_dtype(p)) +
                          p["M"] * p["N"] * itemsize(_out_dtype(p))),
    default_sweep=[{"M": m, "N": n, "K": k, "dtype": dt, "epilogue": ep}
                   for (m, n, k) in ((64, 64, 64), (100, 70, 45))
                   for dt in ("float16", "bfloat16", "tf32", "int8")
                   for ep in (("none", "bias_relu", "gelu") if dt == "float16" else ("none",))],
    default_meta={"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32, "num_warps": 4},
    meta_space={"BLOCK_M": [64, 128], "BLOCK_N": [64, 128, 256], "BLOCK_K": [32, 64], "num_warps": [4, 8],
                "num_stages": [3, 4]},
    # K-long sums: absolute error grows like sqrt(K) * eps of the output type
    tolerance={"float16": (4e-3, 2e-2), "bfloat16": (2e-2, 1e-1), "float32": (2e-3, 2e-2)},
    torch_impl=torch_impl,
    triton_launch=RUNNER.triton_launch,
    warmup=RUNNER.warmup,
)
