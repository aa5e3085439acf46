"""Workload: RMSNorm forward over the last axis of x [M, N] with weight [N] (fp16 / bf16 / fp32; weight in x's
dtype; Rstd [M] in fp32): y = x / sqrt(mean(x^2) + eps) * w."""
from __future__ import annotations

import numpy as np

import compiler

from workloads._common import ROW_META_SPACE, ROW_SWEEP, KernelRunner, itemsize, np_dtype, split_meta, to_f64, normal, uniform
from workloads.base import OutputSpec, Workload

from . import kernel as K

EPS = 1e-6


def make_inputs(params, rng):
    m, n = params["M"], params["N"]
    dt = np_dtype(params["dtype"])
    x = normal(rng, 0.0, 1.0, (m, n)) * uniform(rng, 0.5, 2.0, (m, 1)) + normal(rng, 0.0, 0.3, (m, 1))
    w = rng.normal(1.0, 0.1, n)
    return {"x": x.astype(dt), "w": w.astype(dt)}


def input_specs(params):
    m, n, dt = params["M"], params["N"], params["dtype"]
    return [OutputSpec("x", (m, n), dt), OutputSpec("w", (n,), dt)]


def output_specs(params):
    m, n = params["M"], params["N"]
    return [OutputSpec("y", (m, n), params["dtype"]), OutputSpec("rstd", (m,), "float32")]


def reference(inputs, params):
    x, w = to_f64(inputs["x"]), to_f64(inputs["w"])
    rstd = 1.0 / np.sqrt((x * x).mean(axis=1) + params.get("eps", EPS))
    return {"y": x * rstd[:, None] * w, "rstd": rstd}


def default_block(n: int, elem_bytes: int) -> int:
    """As for LayerNorm: the whole row when it fits in 64 KB, else 64 KB chunks."""
    return min(65536 // elem_bytes, compiler.next_power_of_2(n))


def _build(arrays, params, meta):
    consts, opts = split_meta(meta)
    m, n = params["M"], params["N"]
    consts.setdefault("BLOCK_SIZE", default_block(n, itemsize(params["dtype"])))
    opts.setdefault("num_warps", min(max(consts["BLOCK_SIZE"] // 256, 1), 8))
    args = (arrays["x"], arrays["y"], arrays["w"], arrays["rstd"], n, n, float(params.get("eps", EPS)))
    return (m,), args, consts, opts


RUNNER = KernelRunner(K, "rms_norm_fwd_kernel", _build)


def torch_impl(arrays, params):
    import torch

    x = arrays["x"]
    return torch.nn.functional.rms_norm(x, (x.shape[-1],), arrays["w"], params.get("eps", EPS))


def _bytes(p):
    m, n, s = p["M"], p["N"], itemsize(p["dtype"])
    return float((2 * m * n + n) * s + m * 4)  # x, w read; y, rstd written


WORKLOAD = Workload(
    name="rmsnorm",
    description="RMSNorm forward: y = x * rsqrt(mean(x^2) + eps) * w, also Rstd",
    kernel=K.rms_norm_fwd_kernel,
    make_inputs=make_inputs,
    input_specs=input_specs,
    output_specs=output_specs,
    launch=RUNNER.launch,
    reference=reference,
    # per element: square+sum, two multiplies
    flops=lambda p: float(4 * p["M"] * p["N"]),
    bytes=_bytes,
    default_sweep=ROW_SWEEP,
    default_meta={},
    meta_space=ROW_META_SPACE,
    tolerance={"float32": (1e-4, 1e-5)},
    torch_impl=torch_impl,
    triton_launch=RUNNER.triton_launch,
    warmup=RUNNER.warmup,
)
WORKLOAD.gpu_sweep = ([{"M": 8192, "N": 8192, "dtype": "float16"}, {"M": 8192, "N": 8192, "dtype": "bfloat16"}]
                      + [{"M": 4096, "N": n, "dtype": dt} for dt in ("float16", "bfloat16", "float32")
                         for n in (1024, 4096, 16384)])
