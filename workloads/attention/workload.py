"""Workload: flash-attention forward O = softmax(Q K^T * scale) V, non-causal, fp16 (BH heads of L x D)."""
from __future__ import annotations

import math

import numpy as np

from workloads._common import KernelRunner, split_meta, to_f64, uniform
from workloads.base import OutputSpec, Workload

from . import kernel as K


def make_inputs(params, rng):
    BH, L, D = params["BH"], params["L"], params["D"]
    return {n: uniform(rng, -1, 1, (BH, L, D)).astype(np.float16) for n in ("q", "k", "v")}


def input_specs(params):
    return [OutputSpec(n, (params["BH"], params["L"], params["D"]), "float16") for n in ("q", "k", "v")]


def output_specs(params):
    return [OutputSpec("o", (params["BH"], params["L"], params["D"]), "float16")]


def reference(inputs, params):
    q, k, v = (to_f64(inputs[n]) for n in ("q", "k", "v"))
    s = np.einsum("hld,hmd->hlm", q, k) / math.sqrt(params["D"])
    p = np.exp(s - s.max(-1, keepdims=True))
    return {"o": np.einsum("hlm,hmd->hld", p / p.sum(-1, keepdims=True), v)}


def _build(arrays, params, meta):
    consts, opts = split_meta(meta)
    BH, L, D = params["BH"], params["L"], params["D"]
    consts.setdefault("BLOCK_M", 128 if L >= 128 else L)
    consts.setdefault("BLOCK_N", 64 if L >= 64 else L)
    consts["HEAD_DIM"] = D
    opts.setdefault("num_warps", 8 if D >= 128 else 4)
    if L % consts["BLOCK_M"] or L % consts["BLOCK_N"]:
        raise ValueError("attention: L must be a multiple of BLOCK_M and BLOCK_N (no masking in this kernel)")
    grid = (L // consts["BLOCK_M"], BH)
    args = (arrays["q"], arrays["k"], arrays["v"], arrays["o"], 1.0 / math.sqrt(D), L, L * D, D)
    return grid, args, consts, opts


RUNNER = KernelRunner(K, "attention_fwd_kernel", _build)


def torch_impl(arrays, params):
    import torch

    return torch.nn.functional.scaled_dot_product_attention(arrays["q"][None], arrays["k"][None],
                                                            arrays["v"][None])[0]


WORKLOAD = Workload(
    name="attention",
    description="flash-attention forward (online softmax, two dots per K/V block), fp16, non-causal",
    kernel=K.attention_fwd_kernel,
    make_inputs=make_inputs,
    input_specs=input_specs,
    output_specs=output_specs,
    launch=RUNNER.launch,
    reference=reference,
    flops=lambda p: 4.0 * p["BH"] * p["L"] * p["L"] * p["D"],
    bytes=lambda p: float(4 * p["BH"] * p["L"] * p["D"] * 2),
    default_sweep=[{"BH": 2, "L": 128, "D": 64}, {"BH": 2, "L": 128, "D": 128}],
    default_meta={"BLOCK_M": 64, "BLOCK_N": 32},
    meta_space={"BLOCK_M": [64, 128], "BLOCK_N": [32, 64], "num_warps": [4, 8]},
    tolerance={"float16": (1e-2, 1e-2)},
    torch_impl=torch_impl,
    triton_launch=RUNNER.triton_launch,
    warmup=RUNNER.warmup,
)
