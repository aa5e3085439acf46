"""Workload: LayerNorm forward over the last axis of x [M, N] with weight and bias [N] (fp16 / bf16 / fp32;
weight and bias in x's dtype; Mean and Rstd [M] in fp32)."""
from __future__ import annotations

import numpy as np

import compiler

from workloads._common import ROW_META_SPACE, ROW_SWEEP, KernelRunner, itemsize, np_dtype, split_meta, to_f64, normal, uniform
from workloads.base import OutputSpec, Workload

from . import kernel as K

EPS = 1e-5


def make_inputs(params, rng):
    m, n = params["M"], params["N"]
    dt = np_dtype(params["dtype"])
    # Activations with a per-row offset and scale (so mean and variance both matter); weight near 1, bias small.
    x = normal(rng, 0.0, 1.0, (m, n)) * uniform(rng, 0.5, 2.0, (m, 1)) + normal(rng, 0.0, 1.0, (m, 1))
    w = rng.normal(1.0, 0.1, n)
    b = rng.normal(0.0, 0.1, n)
    return {"x": x.astype(dt), "w": w.astype(dt), "b": b.astype(dt)}


def input_specs(params):
    m, n, dt = params["M"], params["N"], params["dtype"]
    return [OutputSpec("x", (m, n), dt), OutputSpec("w", (n,), dt), OutputSpec("b", (n,), dt)]


def output_specs(params):
    m, n = params["M"], params["N"]
    return [OutputSpec("y", (m, n), params["dtype"]), OutputSpec("mean", (m,), "float32"),
            OutputSpec("rstd", (m,), "float32")]


def reference(inputs, params):
    x, w, b = to_f64(inputs["x"]), to_f64(inputs["w"]), to_f64(inputs["b"])
    eps = params.get("eps", EPS)
    mean = x.mean(axis=1)
    var = ((x - mean[:, None]) ** 2).mean(axis=1)
    rstd = 1.0 / np.sqrt(var + eps)
    return {"y": (x - mean[:, None]) * rstd[:, None] * w + b, "mean": mean, "rstd": rstd}


def default_block(n: int, elem_bytes: int) -> int:
    """The tutorial's choice: the whole row when it fits in 64 KB, else 64 KB chunks."""
    return min(65536 // elem_bytes, compiler.next_power_of_2(n))


def _build(arrays, params, meta):
    consts, opts = split_meta(meta)
    m, n = params["M"], params["N"]
    consts.setdefault("BLOCK_SIZE", default_block(n, itemsize(params["dtype"])))
    # The tutorial's heuristic: a warp per 256 elements of the block, 1 to 8 warps.
    opts.setdefault("num_warps", min(max(consts["BLOCK_SIZE"] // 256, 1), 8))
    args = (arrays["x"], arrays["y"], arrays["w"], arrays["b"], arrays["mean"], arrays["rstd"], n, n,
            float(params.get("eps", EPS)))
    return (m,), args, consts, opts


RUNNER = KernelRunner(K, "layer_norm_fwd_kernel", _build)


def torch_impl(arrays, params):
    import torch

    x = arrays["x"]
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), arrays["w"], arrays["b"], params.get("eps", EPS))


def _bytes(p):
    m, n, s = p["M"], p["N"], itemsize(p["dtype"])
    return float((2 * m * n + 2 * n) * s + 2 * m * 4)  # x, w, b read; y, mean, rstd written


WORKLOAD = Workload(
    name="layernorm",
    description="LayerNorm forward (Triton tutorial kernel): y = (x - mean) * rstd * w + b, also Mean and Rstd",
    kernel=K.layer_norm_fwd_kernel,
    make_inputs=make_inputs,
    input_specs=input_specs,
    output_specs=output_specs,
    launch=RUNNER.launch,
    reference=reference,
    # per element: sum, subtract+square+sum, subtract, multiply by rstd, fma with w and b
    flops=lambda p: float(8 * p["M"] * p["N"]),
    bytes=_bytes,
    default_sweep=ROW_SWEEP,
    # BLOCK_SIZE and num_warps follow the tutorial (default_block, N/256 warps) unless a sweep sets them;
    # BLOCK_SIZE smaller than N gives the chunked loop.
    default_meta={},
    meta_space=ROW_META_SPACE,
    tolerance={"float32": (1e-4, 1e-5)},
    torch_impl=torch_impl,
    triton_launch=RUNNER.triton_launch,
    warmup=RUNNER.warmup,
)
WORKLOAD.gpu_sweep = ([{"M": 8192, "N": 8192, "dtype": "float16"}]
                      + [{"M": 4096, "N": n, "dtype": dt} for dt in ("float16", "bfloat16", "float32")
                         for n in (1024, 4096, 16384)])
