"""Matmul with the epilogues users fuse: GELU (tanh via exp, and erf), SiLU, residual, scale and cast, column
bias, leaky ReLU through tl.where, bias + ReLU in bf16, an optional bias passed as None. The main loop is a jit
helper every kernel calls (a common way to share it)."""
import math

import numpy as np
import triton
import triton.language as tl

from workloads.corpus._case import Case, cdiv, erf, randn


@triton.jit
def _tile_ids(M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    grid_m = tl.cdiv(M, BLOCK_M)
    grid_n = tl.cdiv(N, BLOCK_N)
    width = GROUP_M * grid_n
    group_id = pid // width
    group_size = min(grid_m - group_id * GROUP_M, GROUP_M)
    pid_m = group_id * GROUP_M + (pid % group_size)
    pid_n = (pid % width) // group_size
    return pid_m, pid_n


@triton.jit
def _mainloop(A, B, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, pid_m, pid_n,
              BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rm = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    rn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    rk = tl.arange(0, BLOCK_K)
    pa = A + rm[:, None] * stride_am + rk[None, :] * stride_ak
    pb = B + rk[:, None] * stride_bk + rn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(pa, mask=rk[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(pb, mask=rk[:, None] < K - k * BLOCK_K, other=0.0)
        acc += tl.dot(a, b)
        pa += BLOCK_K * stride_ak
        pb += BLOCK_K * stride_bk
    return acc


@triton.jit
def matmul_gelu_tanh_kernel(A, B, C, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                            GROUP_M: tl.constexpr):
    pid_m, pid_n = _tile_ids(M, N, BLOCK_M, BLOCK_N, GROUP_M)
    x = _mainloop(A, B, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, pid_m, pid_n, BLOCK_M, BLOCK_N, BLOCK_K)
    inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)
    tanh = 2.0 / (1.0 + tl.exp(-2.0 * inner)) - 1.0
    y = 0.5 * x * (1.0 + tanh)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    tl.store(C + rm[:, None] * stride_cm + rn[None, :] * stride_cn, y.to(tl.float16),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def matmul_gelu_erf_kernel(A, B, C, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                           GROUP_M: tl.constexpr):
    pid_m, pid_n = _tile_ids(M, N, BLOCK_M, BLOCK_N, GROUP_M)
    x = _mainloop(A, B, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, pid_m, pid_n, BLOCK_M, BLOCK_N, BLOCK_K)
    y = 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476))
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    tl.store(C + rm[:, None] * stride_cm + rn[None, :] * stride_cn, y.to(tl.float16),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def matmul_silu_kernel(A, B, C, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid_m, pid_n = _tile_ids(M, N, BLOCK_M, BLOCK_N, GROUP_M)
    acc = _mainloop(A, B, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, pid_m, pid_n,
                    BLOCK_M, BLOCK_N, BLOCK_K)
    acc = acc * tl.sigmoid(acc)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    tl.store(C + rm[:, None] * stride_cm + rn[None, :] * stride_cn, acc.to(tl.float16),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def matmul_residual_kernel(A, B, R, C, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                           GROUP_M: tl.constexpr):
    pid_m, pid_n = _tile_ids(M, N, BLOCK_M, BLOCK_N, GROUP_M)
    acc = _mainloop(A, B, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, pid_m, pid_n,
                    BLOCK_M, BLOCK_N, BLOCK_K)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs = rm[:, None] * stride_cm + rn[None, :] * stride_cn
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    res = tl.load(R + offs, mask=mask, other=0.0)
    tl.store(C + offs, (acc + res).to(tl.float16), mask=mask)


@triton.jit
def matmul_scale_cast_kernel(A, B, C, M, N, K, alpha, stride_am, stride_ak, stride_bk, stride_bn, stride_cm,
                             stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                             GROUP_M: tl.constexpr):
    pid_m, pid_n = _tile_ids(M, N, BLOCK_M, BLOCK_N, GROUP_M)
    acc = _mainloop(A, B, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, pid_m, pid_n,
                    BLOCK_M, BLOCK_N, BLOCK_K)
    c = (acc * alpha).to(tl.float16)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    tl.store(C + rm[:, None] * stride_cm + rn[None, :] * stride_cn, c, mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def matmul_colbias_kernel(A, B, bias, C, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm,
                          stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                          GROUP_M: tl.constexpr):
    pid_m, pid_n = _tile_ids(M, N, BLOCK_M, BLOCK_N, GROUP_M)
    acc = _mainloop(A, B, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, pid_m, pid_n,
                    BLOCK_M, BLOCK_N, BLOCK_K)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    b = tl.load(bias + rm, mask=rm < M, other=0.0).to(tl.float32)
    acc += b[:, None]
    tl.store(C + rm[:, None] * stride_cm + rn[None, :] * stride_cn, acc.to(tl.float16),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def matmul_leaky_where_kernel(A, B, C, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                              BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                              GROUP_M: tl.constexpr):
    pid_m, pid_n = _tile_ids(M, N, BLOCK_M, BLOCK_N, GROUP_M)
    acc = _mainloop(A, B, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, pid_m, pid_n,
                    BLOCK_M, BLOCK_N, BLOCK_K)
    acc = tl.where(acc >= 0, acc, 0.01 * acc)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    tl.store(C + rm[:, None] * stride_cm + rn[None, :] * stride_cn, acc.to(tl.float16),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def matmul_opt_bias_relu_kernel(A, B, C, bias_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                                stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                                BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, ACTIVATION: tl.constexpr):
    # an optional bias (None when absent) and an activation picked by a constexpr string
    pid_m, pid_n = _tile_ids(M, N, BLOCK_M, BLOCK_N, GROUP_M)
    acc = _mainloop(A, B, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, pid_m, pid_n,
                    BLOCK_M, BLOCK_N, BLOCK_K)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    if bias_ptr is not None:
        acc += tl.load(bias_ptr + rn, mask=rn < N, other=0.0).to(tl.float32)[None, :]
    if ACTIVATION == "relu":
        acc = tl.maximum(acc, 0.0)
    tl.store(C + rm[:, None] * stride_cm + rn[None, :] * stride_cn, acc.to(C.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


META = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 8, "num_stages": 3}
META_256 = {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 8, "num_stages": 3}
META_W4 = {"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 32, "GROUP_M": 8, "num_warps": 4, "num_stages": 4}
CI_META = {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "GROUP_M": 2, "num_warps": 1, "num_stages": 2}
CI = {"M": 40, "N": 24, "K": 40}


def ab(dt="float16"):
    def make(p, rng):
        return {"a": randn(rng, (p["M"], p["K"]), dt, scale=0.5), "b": randn(rng, (p["K"], p["N"]), dt, scale=0.5)}
    return make


def with_(extra):
    def make(p, rng):
        x = ab()(p, rng)
        x.update(extra(p, rng))
        return x
    return make


def out(dt="float16"):
    return lambda p: {"c": ((p["M"], p["N"]), dt)}


def flops(p):
    return 2.0 * p["M"] * p["N"] * p["K"]


def nbytes(p):
    return 2.0 * (p["M"] * p["K"] + p["K"] * p["N"] + p["M"] * p["N"])


def launch(*names, scalars=()):
    def fn(p, a, m):
        M, N, K = p["M"], p["N"], p["K"]
        grid = (cdiv(M, m["BLOCK_M"]) * cdiv(N, m["BLOCK_N"]),)
        return grid, [a[n] for n in names] + [M, N, K] + [p[s] for s in scalars] + [K, 1, N, 1, N, 1]
    return fn


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def gelu_erf(x):
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def launch_opt_bias(with_bias):
    def fn(p, a, m):
        M, N, K = p["M"], p["N"], p["K"]
        grid = (cdiv(M, m["BLOCK_M"]) * cdiv(N, m["BLOCK_N"]),)
        return grid, [a["a"], a["b"], a["c"], a["bias"] if with_bias else None, M, N, K, K, 1, N, 1, N, 1]
    return fn


CASES = [
    Case("mm_gelu_tanh_f16", matmul_gelu_tanh_kernel, ab(), out(),
         lambda p, x: {"c": gelu_tanh(x["a"] @ x["b"])}, launch("a", "b", "c"),
         gpu={"M": 4096, "N": 4096, "K": 4096}, ci=CI, meta=META, ci_meta=CI_META, flops=flops, bytes=nbytes,
         idiom="GELU, tanh written through exp"),
    Case("mm_gelu_erf_f16", matmul_gelu_erf_kernel, ab(), out(),
         lambda p, x: {"c": gelu_erf(x["a"] @ x["b"])}, launch("a", "b", "c"),
         gpu={"M": 2048, "N": 4096, "K": 4096}, ci=CI, meta=META, ci_meta=CI_META, flops=flops, bytes=nbytes,
         idiom="GELU, erf form"),
    Case("mm_silu_f16", matmul_silu_kernel, ab(), out(),
         lambda p, x: {"c": (lambda y: y * sigmoid(y))(x["a"] @ x["b"])}, launch("a", "b", "c"),
         gpu={"M": 4096, "N": 4096, "K": 4096}, ci=CI, meta=META_256, ci_meta=CI_META, flops=flops, bytes=nbytes,
         idiom="SiLU via tl.sigmoid, 128x256 tile"),
    Case("mm_residual_f16", matmul_residual_kernel, with_(lambda p, rng: {"r": randn(rng, (p["M"], p["N"]))
                                                                       .astype(np.float16)}), out(),
         lambda p, x: {"c": x["a"] @ x["b"] + x["r"]}, launch("a", "b", "r", "c"),
         gpu={"M": 4096, "N": 4096, "K": 2048}, ci=CI, meta=META, ci_meta=CI_META, flops=flops,
         bytes=lambda p: nbytes(p) + 2.0 * p["M"] * p["N"], idiom="residual tile loaded and added"),
    Case("mm_scale_cast_f16", matmul_scale_cast_kernel, ab(), out(),
         lambda p, x: {"c": p["alpha"] * (x["a"] @ x["b"])}, launch("a", "b", "c", scalars=("alpha",)),
         gpu={"M": 4096, "N": 4096, "K": 4096, "alpha": 0.125}, ci={**CI, "alpha": 0.125}, meta=META_W4,
         ci_meta=CI_META, flops=flops, bytes=nbytes, idiom="runtime float scale, cast to fp16; 64x128x32 w4 s4"),
    Case("mm_colbias_f16", matmul_colbias_kernel, with_(lambda p, rng: {"bias": randn(rng, (p["M"],), "float16")}),
         out(), lambda p, x: {"c": x["a"] @ x["b"] + x["bias"][:, None]}, launch("a", "b", "bias", "c"),
         gpu={"M": 4096, "N": 4096, "K": 4096}, ci=CI, meta=META, ci_meta=CI_META, flops=flops, bytes=nbytes,
         idiom="column broadcast bias[:, None]"),
    Case("mm_leaky_where_f16", matmul_leaky_where_kernel, ab(), out(),
         lambda p, x: {"c": (lambda y: np.where(y >= 0, y, 0.01 * y))(x["a"] @ x["b"])}, launch("a", "b", "c"),
         gpu={"M": 4096, "N": 4096, "K": 4096}, ci=CI, meta=META, ci_meta=CI_META, flops=flops, bytes=nbytes,
         idiom="leaky ReLU through tl.where"),
    Case("mm_bias_relu_bf16", matmul_opt_bias_relu_kernel,
         lambda p, rng: {"a": randn(rng, (p["M"], p["K"]), "bfloat16", 0.5), "b": randn(rng, (p["K"], p["N"]),
                         "bfloat16", 0.5), "bias": randn(rng, (p["N"],), "bfloat16")},
         out("bfloat16"), lambda p, x: {"c": np.maximum(x["a"] @ x["b"] + x["bias"][None, :], 0.0)},
         launch_opt_bias(True), gpu={"M": 4096, "N": 4096, "K": 4096}, ci=CI,
         meta={**META, "ACTIVATION": "relu"}, ci_meta={**CI_META, "ACTIVATION": "relu"}, flops=flops, bytes=nbytes,
         idiom="bf16, bias pointer tested against None, constexpr string activation"),
    Case("mm_nobias_f16", matmul_opt_bias_relu_kernel, with_(lambda p, rng: {"bias": randn(rng, (1,), "float16")}),
         out(), lambda p, x: {"c": x["a"] @ x["b"]}, launch_opt_bias(False),
         gpu={"M": 4096, "N": 4096, "K": 4096}, ci=CI, meta={**META, "ACTIVATION": ""},
         ci_meta={**CI_META, "ACTIVATION": ""}, flops=flops, bytes=nbytes, idiom="bias_ptr=None, no activation"),
]
