"""Workload: per-row cross-entropy loss from logits [M, V] (fp32 / bf16 / fp16) and int64 targets [M]; the
loss [M] is fp32 (fp32 math) whatever the logits' dtype."""
from __future__ import annotations

import numpy as np

from workloads._common import KernelRunner, itemsize, np_dtype, split_meta, to_f64, normal, uniform
from workloads.base import OutputSpec, Workload

from . import kernel as K


def make_inputs(params, rng):
    m, v = params["M"], params["V"]
    # Language-model-like logits: N(0, 2) with a few strongly preferred tokens per row.
    logits = normal(rng, 0.0, 2.0, (m, v))
    hot = rng.integers(0, v, (m, 4))
    logits[np.arange(m)[:, None], hot] += uniform(rng, 4.0, 10.0, (m, 4))
    targets = rng.integers(0, v, m).astype(np.int64)
    return {"logits": logits.astype(np_dtype(params["dtype"])), "targets": targets}


def input_specs(params):
    return [OutputSpec("logits", (params["M"], params["V"]), params["dtype"]),
            OutputSpec("targets", (params["M"],), "int64")]


def output_specs(params):
    return [OutputSpec("loss", (params["M"],), "float32")]


def reference(inputs, params):
    x = to_f64(inputs["logits"])
    t = inputs["targets"]
    mx = x.max(axis=1)
    lse = mx + np.log(np.exp(x - mx[:, None]).sum(axis=1))
    return {"loss": lse - x[np.arange(x.shape[0]), t]}


def default_block(v: int) -> int:
    return min(4096, 1 << max(0, (v - 1).bit_length()))


def _build(arrays, params, meta):
    consts, opts = split_meta(meta)
    m, v = params["M"], params["V"]
    consts.setdefault("BLOCK_SIZE", default_block(v))
    opts.setdefault("num_warps", min(max(consts["BLOCK_SIZE"] // 256, 1), 8))
    return (m,), (arrays["logits"], arrays["targets"], arrays["loss"], v, v), consts, opts


RUNNER = KernelRunner(K, "cross_entropy_fwd_kernel", _build)


def torch_impl(arrays, params):
    import torch

    return torch.nn.functional.cross_entropy(arrays["logits"], arrays["targets"], reduction="none")


def _bytes(p):
    m, v = p["M"], p["V"]
    return float(m * v * itemsize(p["dtype"]) + m * 8 + m * 4)  # logits, targets read; loss written


WORKLOAD = Workload(
    name="cross_entropy",
    description="cross-entropy forward, per-row loss: online logsumexp over V chunks (fp32 math) minus the target logit",
    kernel=K.cross_entropy_fwd_kernel,
    make_inputs=make_inputs,
    input_specs=input_specs,
    output_specs=output_specs,
    launch=RUNNER.launch,
    reference=reference,
    # per element: max, subtract, exp, rescale-and-add
    flops=lambda p: float(5 * p["M"] * p["V"]),
    bytes=_bytes,
    default_sweep=[{"M": m, "V": v, "dtype": dt} for dt in ("float32", "bfloat16", "float16")
                   for (m, v) in ((1, 1), (4, 1000), (7, 5003))],
    default_meta={},
    meta_space={"BLOCK_SIZE": [512, 1024, 2048, 4096, 8192], "num_warps": [2, 4, 8, 16]},
    tolerance={"float32": (1e-5, 1e-5)},
    torch_impl=torch_impl,
    triton_launch=RUNNER.triton_launch,
    warmup=RUNNER.warmup,
)
WORKLOAD.gpu_sweep = [{"M": m, "V": v, "dtype": dt} for dt in ("float32", "bfloat16")
                      for (m, v) in ((4096, 32000), (4096, 128256), (16384, 50257))]
