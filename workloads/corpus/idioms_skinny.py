"""Matmuls whose tile shape keeps them off Hopper's wgmma (blocks of fewer than 64 rows, or fewer than 4 warps: a
warpgroup's wgmma needs 4 warps and 64 rows per warpgroup), so they run on mma.sync, as Triton users write them for
decode and other skinny problems. A decode-size GEMM, 16 tokens x a [K, N] row-major fp16 weight, BLOCK_M = 16 and
a grid over N only, pointer increments, only the token rows masked; an nn.Linear in bf16, the weight stored [N, K]
and read as [BLOCK_K, BLOCK_N] tiles through its strides, `acc = tl.dot(a, b, acc)`, masks on M and N, a bias added
in fp32, bf16 out; a 64x64x32 fp16 matmul on two warps, the K offsets recomputed every iteration from the loop
index, masks on M, N and K; a split-K GEMM for 32 rows (Llama's MLP down projection), a 2-D grid of (N blocks,
SPLIT_K), each program summing one contiguous K range (rounded to BLOCK_K, the last one ragged) under a runtime
`range(k_start, k_end, BLOCK_K)`, its fp32 partial added by tl.atomic_add; a 32x128x64 fp16 matmul with the
tutorial's grouped program order and wrapped (`% M`, `% N`) row and column offsets, GELU(tanh) computed in fp32 as
x * sigmoid(2u), M a multiple of no block; and an fp64 matmul on 32x32x16 tiles and two warps, a column-major
1-D program order, pointer increments through all six strides, a K mask from `k_remaining`,
`acc = tl.dot(a, b, acc, out_dtype=tl.float64)`.
"""
import numpy as np
import triton
import triton.language as tl

from workloads.corpus._case import Case, cdiv, randn


# --- 1. decode GEMM: a few tokens x a [K, N] weight ------------------------------------------------------------------
@triton.jit
def decode_gemm_kernel(x_ptr, w_ptr, y_ptr, M, N, K, stride_xm, stride_wk, stride_ym, BLOCK_M: tl.constexpr,
                       BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # grid (N // BLOCK_N, cdiv(M, BLOCK_M)): every token of a decode step in one row block; N and K are multiples
    # of their blocks (weight shapes), only the token rows are masked
    pid_n = tl.program_id(0)
    pid_m = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    x_ptrs = x_ptr + offs_m[:, None] * stride_xm + offs_k[None, :]
    w_ptrs = w_ptr + offs_k[:, None] * stride_wk + offs_n[None, :]
    m_mask = offs_m[:, None] < M
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in range(0, K, BLOCK_K):
        x = tl.load(x_ptrs, mask=m_mask, other=0.0)
        w = tl.load(w_ptrs)
        acc += tl.dot(x, w)
        x_ptrs += BLOCK_K
        w_ptrs += BLOCK_K * stride_wk
    tl.store(y_ptr + offs_m[:, None] * stride_ym + offs_n[None, :], acc.to(tl.float16), mask=m_mask)


# --- 2. nn.Linear (weight [N, K]) + bias, bf16 ------------------------------------------------------------------------
@triton.jit
def linear_bias_kernel(x_ptr, w_ptr, bias_ptr, y_ptr, M, N, K, stride_xm, stride_xk, stride_wn, stride_wk,
                       stride_ym, stride_yn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # y = x @ W^T + b with W as nn.Linear keeps it, [N, K]: the [BLOCK_K, BLOCK_N] tile of W^T is read through its
    # strides (K contiguous); K a multiple of BLOCK_K
    pid_n = tl.program_id(0)
    pid_m = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    x_ptrs = x_ptr + rm[:, None] * stride_xm + rk[None, :] * stride_xk
    w_ptrs = w_ptr + rk[:, None] * stride_wk + rn[None, :] * stride_wn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(x_ptrs, mask=rm[:, None] < M, other=0.0)
        b = tl.load(w_ptrs, mask=rn[None, :] < N, other=0.0)
        acc = tl.dot(a, b, acc)
        x_ptrs += BLOCK_K * stride_xk
        w_ptrs += BLOCK_K * stride_wk
    bias = tl.load(bias_ptr + rn, mask=rn < N, other=0.0).to(tl.float32)
    acc = acc + bias[None, :]
    y_ptrs = y_ptr + rm[:, None] * stride_ym + rn[None, :] * stride_yn
    tl.store(y_ptrs, acc.to(tl.bfloat16), mask=(rm[:, None] < M) & (rn[None, :] < N))


# --- 3. two warps, 64x64x32, offsets recomputed per iteration ---------------------------------------------------------
@triton.jit
def matmul_two_warps_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm,
                            stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        offs_k = k * BLOCK_K + tl.arange(0, BLOCK_K)
        a = tl.load(a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak,
                    mask=(offs_m[:, None] < M) & (offs_k[None, :] < K), other=0.0)
        b = tl.load(b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn,
                    mask=(offs_k[:, None] < K) & (offs_n[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    c = acc.to(tl.float16)
    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn, c,
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


# --- 4. split-K for a few rows: contiguous K ranges, atomics ---------------------------------------------------------
@triton.jit
def splitk_small_m_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm, BLOCK_M: tl.constexpr,
                          BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, SPLIT_K: tl.constexpr):
    # all M rows (M <= BLOCK_M) in one tile; grid (cdiv(N, BLOCK_N), SPLIT_K); program s sums K range
    # [s * chunk, min((s + 1) * chunk, K)), chunk = cdiv(K, SPLIT_K) rounded up to BLOCK_K; c zeroed by the caller
    pid_n = tl.program_id(0)
    pid_k = tl.program_id(1)
    k_chunk = tl.cdiv(tl.cdiv(K, SPLIT_K), BLOCK_K) * BLOCK_K
    k_start = pid_k * k_chunk
    k_end = min(k_start + k_chunk, K)
    offs_m = tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + (k_start + offs_k)[None, :]
    b_ptrs = b_ptr + (k_start + offs_k)[:, None] * stride_bk + offs_n[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(k_start, k_end, BLOCK_K):
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (k + offs_k[None, :] < k_end), other=0.0)
        b = tl.load(b_ptrs, mask=(k + offs_k[:, None] < k_end) & (offs_n[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :]
    tl.atomic_add(c_ptrs, acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


# --- 5. 32-row tiles, grouped order, GELU(tanh) epilogue --------------------------------------------------------------
@triton.jit
def matmul_gelu_sigmoid_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm,
                               stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                               GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    # rows and columns past the end wrap around (loaded, computed, never stored)
    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        acc += tl.dot(a, b)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    # GELU, tanh approximation, in fp32: 0.5 x (1 + tanh(u)) == x * sigmoid(2 u), u = sqrt(2/pi) (x + 0.044715 x^3)
    u = 0.7978845608028654 * (acc + 0.044715 * acc * acc * acc)
    y = acc * tl.sigmoid(2.0 * u)
    c = y.to(tl.float16)
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    tl.store(c_ptrs, c, mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


# --- 6. fp64 on 32x32x16 tiles, pointer increments, K mask -----------------------------------------------------------
@triton.jit
def matmul_fp64_small_tile_kernel(A, B, C, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # 1-D grid, column-major program order (consecutive programs share a B column block)
    pid = tl.program_id(0)
    grid_m = tl.cdiv(M, BLOCK_M)
    pid_m = pid % grid_m
    pid_n = pid // grid_m
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = A + rm[:, None] * stride_am + rk[None, :] * stride_ak
    b_ptrs = B + rk[:, None] * stride_bk + rn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float64)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_remaining = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] < k_remaining), other=0.0)
        b = tl.load(b_ptrs, mask=(rk[:, None] < k_remaining) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc, out_dtype=tl.float64)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    tl.store(C + rm[:, None] * stride_cm + rn[None, :] * stride_cn, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


# --- cases ------------------------------------------------------------------------------------------------------------
def flops(p):
    return 2.0 * p["M"] * p["N"] * p["K"]


def nbytes(esize, out_esize=None):
    return lambda p: esize * (p["M"] * p["K"] + p["K"] * p["N"]) + (out_esize or esize) * p["M"] * p["N"]


def ab(dt, scale=0.5, b_nk=False):
    def make(p, rng):
        M, N, K = p["M"], p["N"], p["K"]
        s = scale(K) if callable(scale) else scale
        return {"a": randn(rng, (M, K), dt, s), "b": randn(rng, (N, K) if b_nk else (K, N), dt, s)}
    return make


def out(dt):
    return lambda p: {"c": ((p["M"], p["N"]), dt)}


def decode_launch(p, a, m):
    M, N, K = p["M"], p["N"], p["K"]
    return (N // m["BLOCK_N"], cdiv(M, m["BLOCK_M"])), [a["a"], a["b"], a["c"], M, N, K, K, N, N]


def linear_inputs(p, rng):
    return {**ab("bfloat16", 0.5, b_nk=True)(p, rng), "bias": randn(rng, (p["N"],), "bfloat16")}


def linear_launch(p, a, m):
    M, N, K = p["M"], p["N"], p["K"]
    grid = (cdiv(N, m["BLOCK_N"]), cdiv(M, m["BLOCK_M"]))
    return grid, [a["a"], a["b"], a["bias"], a["c"], M, N, K, K, 1, K, 1, N, 1]


def two_warps_launch(p, a, m):
    M, N, K = p["M"], p["N"], p["K"]
    return (cdiv(M, m["BLOCK_M"]), cdiv(N, m["BLOCK_N"])), [a["a"], a["b"], a["c"], M, N, K, K, 1, N, 1, N, 1]


def splitk_launch(p, a, m):
    M, N, K = p["M"], p["N"], p["K"]
    assert M <= m["BLOCK_M"]
    return (cdiv(N, m["BLOCK_N"]), m["SPLIT_K"]), [a["a"], a["b"], a["c"], M, N, K, K, N, N]


def gelu_launch(p, a, m):
    M, N, K = p["M"], p["N"], p["K"]
    return (cdiv(M, m["BLOCK_M"]) * cdiv(N, m["BLOCK_N"]),), [a["a"], a["b"], a["c"], M, N, K, K, 1, N, 1, N, 1]


def fp64_launch(p, a, m):
    M, N, K = p["M"], p["N"], p["K"]
    return (cdiv(M, m["BLOCK_M"]) * cdiv(N, m["BLOCK_N"]),), [a["a"], a["b"], a["c"], M, N, K, K, 1, N, 1, N, 1]


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))


def mm_ref(p, x):
    return {"c": x["a"] @ x["b"]}


CASES = [
    Case("mm_decode_m16_f16", decode_gemm_kernel, ab("float16"), out("float16"), mm_ref, decode_launch,
         gpu={"M": 16, "N": 8192, "K": 4096}, ci={"M": 5, "N": 128, "K": 256},
         meta={"BLOCK_M": 16, "BLOCK_N": 64, "BLOCK_K": 128, "num_warps": 4, "num_stages": 4},
         flops=flops, bytes=nbytes(2),
         idiom="decode GEMM: 16 tokens x a [K, N] weight, BLOCK_M 16, grid over N, pointer increments, M mask only"),
    Case("linear_decode_bias_m32_bf16", linear_bias_kernel, linear_inputs, out("bfloat16"),
         lambda p, x: {"c": x["a"] @ x["b"].T + x["bias"][None, :]}, linear_launch,
         gpu={"M": 32, "N": 8192, "K": 4096}, ci={"M": 11, "N": 96, "K": 192},
         meta={"BLOCK_M": 32, "BLOCK_N": 64, "BLOCK_K": 64, "num_warps": 4, "num_stages": 4},
         flops=flops, bytes=lambda p: nbytes(2)(p) + 2 * p["N"],
         idiom="nn.Linear weight [N, K] read transposed through strides, bf16, acc = tl.dot(a, b, acc), bias in "
               "fp32, BLOCK_M 32"),
    Case("mm_two_warps_64x64_f16", matmul_two_warps_kernel, ab("float16"), out("float16"), mm_ref, two_warps_launch,
         gpu={"M": 2048, "N": 2048, "K": 2048}, ci={"M": 70, "N": 40, "K": 72},
         meta={"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "num_warps": 2, "num_stages": 3},
         flops=flops, bytes=nbytes(2),
         idiom="num_warps 2, 64x64x32, K offsets recomputed from the loop index, masks on M, N and K"),
    Case("mm_splitk_m32_f16", splitk_small_m_kernel, ab("float16"), out("float32"), mm_ref, splitk_launch,
         gpu={"M": 32, "N": 4096, "K": 14336}, ci={"M": 7, "N": 100, "K": 200},
         meta={"BLOCK_M": 32, "BLOCK_N": 64, "BLOCK_K": 64, "SPLIT_K": 4, "num_warps": 4, "num_stages": 3},
         ci_meta={"BLOCK_M": 32, "BLOCK_N": 64, "BLOCK_K": 32, "SPLIT_K": 3, "num_warps": 4, "num_stages": 3},
         zero=("c",), tol={"float32": (1e-4, 1e-5)}, flops=flops, bytes=nbytes(2, 4),
         idiom="split-K for 32 rows: grid (N blocks, SPLIT_K), contiguous K ranges under a runtime range, "
               "fp32 partials by tl.atomic_add"),
    Case("mm_gelu_m32_f16", matmul_gelu_sigmoid_kernel, ab("float16", lambda K: K ** -0.25), out("float16"),
         lambda p, x: {"c": gelu_tanh(x["a"] @ x["b"])}, gelu_launch,
         gpu={"M": 1000, "N": 4096, "K": 4096}, ci={"M": 37, "N": 160, "K": 100},
         meta={"BLOCK_M": 32, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 4, "num_stages": 4},
         flops=flops, bytes=nbytes(2),
         idiom="32x128x64 w4, grouped order, offsets wrapped % M / % N, GELU(tanh) as x * sigmoid(2u) in fp32"),
    Case("mm_small_tile_f64", matmul_fp64_small_tile_kernel, ab("float64", 1.0), out("float64"), mm_ref, fp64_launch,
         gpu={"M": 1024, "N": 1024, "K": 1000}, ci={"M": 40, "N": 50, "K": 37},
         meta={"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 16, "num_warps": 2, "num_stages": 3},
         tol={"float64": (1e-10, 1e-12)}, flops=flops, bytes=nbytes(8),
         idiom="fp64 32x32x16 w2, column-major 1-D order, pointer increments, K mask from k_remaining, "
               "tl.dot(a, b, acc, out_dtype=tl.float64)"),
]
