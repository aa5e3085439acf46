"""Matmul layouts and dtypes: A or B transposed through strides, batch in the grid, sizes divisible by nothing,
fp32 inputs (tf32 and ieee), bf16, `range(0, tl.cdiv(K, BK))` with offsets recomputed, split-K with atomics."""
import numpy as np
import triton
import triton.language as tl

from workloads.corpus._case import Case, cdiv, pmap, randn


@triton.jit
def matmul_strided_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                          stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                          BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    # any strides: A^T or B^T (nn.Linear's weight) are read in place
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    group = GROUP_M * num_pid_n
    first_m = (pid // group) * GROUP_M
    gm = min(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + ((pid % group) % gm)
    pid_n = (pid % group) // gm
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] + k < K), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] + k < K) & (offs_n[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def bmm_kernel(A, B, C, M, N, K, stride_ab, stride_am, stride_ak, stride_bb, stride_bk, stride_bn,
               stride_cb, stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
               BLOCK_K: tl.constexpr):
    # batch on grid axis 1
    pid = tl.program_id(0)
    bid = tl.program_id(1)
    grid_n = tl.cdiv(N, BLOCK_N)
    pid_m = pid // grid_n
    pid_n = pid % grid_n
    A += bid * stride_ab
    B += bid * stride_bb
    C += bid * stride_cb
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        kk = k * BLOCK_K + rk
        a = tl.load(A + rm[:, None] * stride_am + kk[None, :] * stride_ak)
        b = tl.load(B + kk[:, None] * stride_bk + rn[None, :] * stride_bn)
        acc = tl.dot(a, b, acc)
    tl.store(C + rm[:, None] * stride_cm + rn[None, :] * stride_cn, acc.to(tl.float16))


@triton.jit
def matmul_fp32_kernel(A, B, C, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                       PRECISION: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = A + rm[:, None] * stride_am + rk[None, :] * stride_ak
    b_ptrs = B + rk[:, None] * stride_bk + rn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] < K - k * BLOCK_K), other=0.0)
        b = tl.load(b_ptrs, mask=(rk[:, None] < K - k * BLOCK_K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b, input_precision=PRECISION)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    tl.store(C + rm[:, None] * stride_cm + rn[None, :] * stride_cn, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def matmul_fp64_kernel(A, B, C, M, N, K, stride_am, stride_bk, stride_cm, BLOCK_M: tl.constexpr,
                       BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """fp64 C = A @ B (row-major, K a multiple of BLOCK_K): a 1-D grid split by division, masks on M and N only,
    `tl.range` over K. (Triton asserts on `tl.dot(a, b, acc)` with a float64 acc unless out_dtype=tl.float64 is
    passed: its out_dtype defaults to float32; `acc += tl.dot(a, b)` is how its users write it.)"""
    pid = tl.program_id(0)
    grid_n = tl.cdiv(N, BLOCK_N)
    pid_m, pid_n = pid // grid_n, pid % grid_n
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float64)
    for k0 in tl.range(0, K, BLOCK_K):
        a = tl.load(A + rm[:, None] * stride_am + (k0 + rk)[None, :], mask=rm[:, None] < M, other=0.0)
        b = tl.load(B + (k0 + rk)[:, None] * stride_bk + rn[None, :], mask=rn[None, :] < N, other=0.0)
        acc += tl.dot(a, b)
    tl.store(C + rm[:, None] * stride_cm + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def matmul_splitk_kernel(A, B, C, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, SPLIT_K: tl.constexpr):
    # split-K: program (m, n, s) sums K-blocks s, s + SPLIT_K, ... and adds its partial with tl.atomic_add
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    pid_k = tl.program_id(2)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = pid_k * BLOCK_K + tl.arange(0, BLOCK_K)
    ram = tl.max_contiguous(tl.multiple_of(rm % M, BLOCK_M), BLOCK_M)
    rbn = tl.max_contiguous(tl.multiple_of(rn % N, BLOCK_N), BLOCK_N)
    a_ptrs = A + ram[:, None] * stride_am + rk[None, :] * stride_ak
    b_ptrs = B + rk[:, None] * stride_bk + rbn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K * SPLIT_K)):
        k_remaining = K - k * (BLOCK_K * SPLIT_K)
        a = tl.load(a_ptrs, mask=rk[None, :] - pid_k * BLOCK_K < k_remaining - pid_k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=rk[:, None] - pid_k * BLOCK_K < k_remaining - pid_k * BLOCK_K, other=0.0)
        acc += tl.dot(a, b)
        a_ptrs += BLOCK_K * SPLIT_K * stride_ak
        b_ptrs += BLOCK_K * SPLIT_K * stride_bk
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    tl.atomic_add(C + rm[:, None] * stride_cm + rn[None, :] * stride_cn, acc, mask=mask)


CI_META = {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "num_warps": 1, "num_stages": 2}
META = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "num_warps": 8, "num_stages": 3}


@triton.jit
def scores_kernel(Q, K, S, M, N, stride_q, stride_k, stride_s, D: tl.constexpr, BLOCK_M: tl.constexpr,
                  BLOCK_N: tl.constexpr):
    # attention scores materialized: one dot over the whole head dim (no K loop), Q @ K^T stored as float32
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rd = tl.arange(0, D)
    q = tl.load(Q + rm[:, None] * stride_q + rd[None, :], mask=rm[:, None] < M, other=0.0)
    k = tl.load(K + rn[:, None] * stride_k + rd[None, :], mask=rn[:, None] < N, other=0.0)
    s = tl.dot(q, tl.trans(k))
    tl.store(S + rm[:, None] * stride_s + rn[None, :], s, mask=(rm[:, None] < M) & (rn[None, :] < N))


def flops(p):
    return 2.0 * p.get("B", 1) * p["M"] * p["N"] * p["K"]


def nbytes(esize, out_esize=None):
    return lambda p: p.get("B", 1) * (esize * (p["M"] * p["K"] + p["K"] * p["N"]) + (out_esize or esize) * p["M"] * p["N"])


def strided_inputs(dt, ta, tb):
    def make(p, rng):
        M, N, K = p["M"], p["N"], p["K"]
        return {"a": randn(rng, (K, M) if ta else (M, K), dt, 0.5), "b": randn(rng, (N, K) if tb else (K, N), dt, 0.5)}
    return make


def strided_ref(ta, tb):
    def ref(p, x):
        a = x["a"].T if ta else x["a"]
        b = x["b"].T if tb else x["b"]
        return {"c": a @ b}
    return ref


def strided_launch(ta, tb):
    def fn(p, a, m):
        M, N, K = p["M"], p["N"], p["K"]
        sa = (1, M) if ta else (K, 1)
        sb = (1, K) if tb else (N, 1)
        grid = (cdiv(M, m["BLOCK_M"]) * cdiv(N, m["BLOCK_N"]),)
        return grid, [a["a"], a["b"], a["c"], M, N, K, *sa, *sb, N, 1]
    return fn


def fp32_launch(p, a, m):
    M, N, K = p["M"], p["N"], p["K"]
    return (cdiv(M, m["BLOCK_M"]), cdiv(N, m["BLOCK_N"])), [a["a"], a["b"], a["c"], M, N, K, K, 1, N, 1, N, 1]


def fp64_launch(p, a, m):
    M, N, K = p["M"], p["N"], p["K"]
    return (cdiv(M, m["BLOCK_M"]) * cdiv(N, m["BLOCK_N"]),), [a["a"], a["b"], a["c"], M, N, K, K, N, N]


def bmm_inputs(p, rng):
    return {"a": randn(rng, (p["B"], p["M"], p["K"]), "float16", 0.5),
            "b": randn(rng, (p["B"], p["K"], p["N"]), "float16", 0.5)}


def bmm_launch(p, a, m):
    B, M, N, K = p["B"], p["M"], p["N"], p["K"]
    grid = (cdiv(M, m["BLOCK_M"]) * cdiv(N, m["BLOCK_N"]), B)
    return grid, [a["a"], a["b"], a["c"], M, N, K, M * K, K, 1, K * N, N, 1, M * N, N, 1]


def splitk_launch(p, a, m):
    M, N, K = p["M"], p["N"], p["K"]
    grid = (cdiv(M, m["BLOCK_M"]), cdiv(N, m["BLOCK_N"]), m["SPLIT_K"])
    return grid, [a["a"], a["b"], a["c"], M, N, K, K, 1, N, 1, N, 1]


def out(dt, batched=False):
    return lambda p: {"c": (((p["B"],) if batched else ()) + (p["M"], p["N"]), dt)}


G = {"GROUP_M": 8}
CASES = [
    Case("mm_at_f16", matmul_strided_kernel, strided_inputs("float16", True, False), out("float16"),
         strided_ref(True, False), strided_launch(True, False), gpu={"M": 4096, "N": 4096, "K": 4096},
         ci={"M": 40, "N": 24, "K": 40}, meta={**META, **G}, ci_meta={**CI_META, "GROUP_M": 2}, flops=flops,
         bytes=nbytes(2), idiom="A stored K x M, read transposed through its strides"),
    Case("mm_bt_f16", matmul_strided_kernel, strided_inputs("float16", False, True), out("float16"),
         strided_ref(False, True), strided_launch(False, True), gpu={"M": 4096, "N": 4096, "K": 4096},
         ci={"M": 40, "N": 24, "K": 40}, meta={**META, **G}, ci_meta={**CI_META, "GROUP_M": 2}, flops=flops,
         bytes=nbytes(2), idiom="B stored N x K (a Linear weight), read transposed through its strides"),
    Case("mm_odd_f16", matmul_strided_kernel, strided_inputs("float16", False, False), out("float16"),
         strided_ref(False, False), strided_launch(False, False), gpu={"M": 3001, "N": 2999, "K": 1001},
         ci={"M": 37, "N": 21, "K": 19}, meta={**META, **G}, ci_meta={**CI_META, "GROUP_M": 2}, flops=flops,
         bytes=nbytes(2), idiom="M, N, K divisible by neither the block nor 16 (unaligned rows)"),
    Case("mm_bf16", matmul_strided_kernel, strided_inputs("bfloat16", False, False), out("bfloat16"),
         strided_ref(False, False), strided_launch(False, False), gpu={"M": 4096, "N": 4096, "K": 4096},
         ci={"M": 32, "N": 32, "K": 48}, meta={"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8,
                                                "num_warps": 8, "num_stages": 3},
         ci_meta={**CI_META, "GROUP_M": 2}, flops=flops, bytes=nbytes(2), idiom="bf16 in and out, 128x256x64"),
    Case("mm_f32out_f16_64x64", matmul_strided_kernel, strided_inputs("float16", False, False), out("float32"),
         strided_ref(False, False), strided_launch(False, False), gpu={"M": 4096, "N": 4096, "K": 4096},
         ci={"M": 40, "N": 24, "K": 40}, meta={"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8,
                                                "num_warps": 4, "num_stages": 3},
         ci_meta={**CI_META, "GROUP_M": 2}, flops=flops, bytes=nbytes(2, 4),
         idiom="float32 output stored as accumulated (no cast), small 64x64 tiles"),
    Case("scores_qkT_f32out", scores_kernel,
         lambda p, rng: {"q": randn(rng, (p["M"], p["D"]), "float16", 0.5), "k": randn(rng, (p["N"], p["D"]), "float16", 0.5)},
         lambda p: {"s": ((p["M"], p["N"]), "float32")}, lambda p, x: {"s": x["q"] @ x["k"].T},
         lambda p, a, m: ((cdiv(p["M"], m["BLOCK_M"]), cdiv(p["N"], m["BLOCK_N"])),
                          [a["q"], a["k"], a["s"], p["M"], p["N"], p["D"], p["D"], p["N"]]),
         gpu={"M": 8192, "N": 8192, "D": 64}, ci={"M": 40, "N": 24, "D": 64},
         meta={"D": 64, "BLOCK_M": 128, "BLOCK_N": 128, "num_warps": 8, "num_stages": 1},
         ci_meta={"D": 64, "BLOCK_M": 16, "BLOCK_N": 16, "num_warps": 4, "num_stages": 1},
         flops=lambda p: 2.0 * p["M"] * p["N"] * p["D"],
         bytes=lambda p: 2 * p["D"] * (p["M"] + p["N"]) + 4 * p["M"] * p["N"],
         idiom="one dot over the head dim, no K loop, scores stored as float32"),
    Case("bmm_f16", bmm_kernel, bmm_inputs, out("float16", True),
         lambda p, x: {"c": np.stack(pmap(lambda i: x["a"][i] @ x["b"][i], p["B"]))}, bmm_launch,
         gpu={"B": 16, "M": 1024, "N": 1024, "K": 1024}, ci={"B": 3, "M": 32, "N": 16, "K": 32},
         meta={"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "num_warps": 4, "num_stages": 4}, ci_meta=CI_META,
         flops=flops, bytes=nbytes(2), idiom="batch on grid axis 1, no masks, offsets recomputed per iteration"),
    Case("mm_tf32", matmul_fp32_kernel,
         lambda p, rng: {"a": randn(rng, (p["M"], p["K"])), "b": randn(rng, (p["K"], p["N"]))}, out("float32"),
         lambda p, x: {"c": x["a"] @ x["b"]}, fp32_launch, gpu={"M": 4096, "N": 4096, "K": 4096},
         ci={"M": 40, "N": 24, "K": 40}, meta={**META, "BLOCK_K": 32, "PRECISION": "tf32"},
         ci_meta={**CI_META, "PRECISION": "tf32"}, tol={"float32": (1e-2, 3e-3)}, flops=flops,
         bytes=nbytes(4), idiom="fp32 inputs, tf32 dot, 2-D grid"),
    Case("mm_fp32_ieee", matmul_fp32_kernel,
         lambda p, rng: {"a": randn(rng, (p["M"], p["K"])), "b": randn(rng, (p["K"], p["N"]))}, out("float32"),
         lambda p, x: {"c": x["a"] @ x["b"]}, fp32_launch, gpu={"M": 2048, "N": 2048, "K": 2048},
         ci={"M": 24, "N": 24, "K": 24}, meta={"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "PRECISION": "ieee",
                                                "num_warps": 4, "num_stages": 3},
         ci_meta={**CI_META, "PRECISION": "ieee"}, tol={"float32": (1e-4, 1e-5)}, flops=flops,
         bytes=nbytes(4), idiom="fp32 dot in full precision (FMA, no tensor cores)"),
    Case("mm_fp64", matmul_fp64_kernel,
         lambda p, rng: {"a": randn(rng, (p["M"], p["K"]), "float64"), "b": randn(rng, (p["K"], p["N"]), "float64")},
         out("float64"), lambda p, x: {"c": x["a"] @ x["b"]}, fp64_launch, gpu={"M": 2048, "N": 2048, "K": 2048},
         ci={"M": 40, "N": 24, "K": 32}, meta={"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 16, "num_warps": 4,
                                                "num_stages": 3},
         ci_meta=CI_META, tol={"float64": (1e-10, 1e-12)}, flops=flops, bytes=nbytes(8),
         idiom="fp64 dot, acc += dot, tl.range over K, masks on M and N, 1-D grid split by division"),
    Case("mm_splitk_f16", matmul_splitk_kernel,
         lambda p, rng: {"a": randn(rng, (p["M"], p["K"]), "float16"), "b": randn(rng, (p["K"], p["N"]), "float16")},
         out("float32"), lambda p, x: {"c": x["a"] @ x["b"]}, splitk_launch,
         gpu={"M": 1024, "N": 1024, "K": 16384}, ci={"M": 24, "N": 16, "K": 72},
         meta={"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "SPLIT_K": 8, "num_warps": 8, "num_stages": 3},
         ci_meta={**CI_META, "SPLIT_K": 2}, zero=("c",), tol={"float32": (1e-4, 1e-5)}, flops=flops,
         bytes=nbytes(2, 4), idiom="split-K over grid axis 2, partials added with tl.atomic_add"),
]
