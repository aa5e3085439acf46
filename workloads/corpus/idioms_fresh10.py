"""Block-scaled fp8 GEMM as inference engines write it for DeepSeek-style checkpoints: e4m3 activations quantized per
(token, 128-wide K group) and e4m3 weights per (128 x 128) block, both passed as float8_e4m3fn tensors; the tile
offsets wrapped by `% M` / `% N` (loads unmasked on M and N, masked on K), the two scale vectors of each K tile
loaded inside the loop and applied to that tile's product before it joins the float32 accumulator
(`acc += tl.dot(a, b) * a_s[:, None] * b_s[None, :]`), the weight [N, K] read transposed through its strides, the
output dtype taken from the pointer (C.dtype.element_ty).
"""
import numpy as np
import triton
import triton.language as tl

from workloads.corpus._case import Case, cdiv, pmap, randn, uniform
from workloads.corpus.idioms_infer import E4M3, e4m3_bytes
from workloads.corpus.idioms_quant import as_e4m3


# --- 1. block-scaled fp8 GEMM ------------------------------------------------------------------------------------------
@triton.jit
def fp8_block_scaled_gemm_kernel(A, B, C, A_S, B_S, M, N, K, stride_am, stride_ak, stride_bn, stride_bk, stride_cm,
                                 stride_cn, stride_asm, stride_ask, stride_bsn, stride_bsk,
                                 GROUP_N: tl.constexpr, GROUP_K: tl.constexpr, BLOCK_M: tl.constexpr,
                                 BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # C[m, n] = sum_k (A[m, k] * a_s[m, k // GROUP_K]) * (B[n, k] * b_s[n // GROUP_N, k // GROUP_K])
    pid_m = tl.program_id(axis=0)
    pid_n = tl.program_id(axis=1)
    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = A + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = B + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    as_ptrs = A_S + offs_am * stride_asm
    bs_ptrs = B_S + (offs_bn // GROUP_N) * stride_bsn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        k_group = (k * BLOCK_K) // GROUP_K
        a_s = tl.load(as_ptrs + k_group * stride_ask)
        b_s = tl.load(bs_ptrs + k_group * stride_bsk)
        acc += tl.dot(a, b) * a_s[:, None] * b_s[None, :]
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c = acc.to(C.dtype.element_ty)
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(C + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :], c, mask=c_mask)


def fp8_block_inputs(p, rng):
    M, N, K, gn, gk = p["M"], p["N"], p["K"], p["group_n"], p["group_k"]
    return {"a": e4m3_bytes(randn(rng, (M, K), "float32", 64.0)), "b": e4m3_bytes(randn(rng, (N, K), "float32", 64.0)),
            "a_s": uniform(rng, (M, cdiv(K, gk)), 0.5e-2, 1.5e-2),
            "b_s": uniform(rng, (cdiv(N, gn), cdiv(K, gk)), 0.5e-3, 1.5e-3)}


def fp8_block_ref(p, x):
    M, K, gn, gk = p["M"], p["K"], p["group_n"], p["group_k"]
    a = E4M3[x["a"].astype(np.int64)] * np.repeat(x["a_s"].astype(np.float64), gk, axis=1)[:, :K]
    b_s = np.repeat(np.repeat(x["b_s"].astype(np.float64), gn, axis=0), gk, axis=1)
    b = E4M3[x["b"].astype(np.int64)] * b_s[:p["N"], :K]
    step = max(1, cdiv(M, 16))
    return {"c": np.concatenate(pmap(lambda i: a[i * step:(i + 1) * step] @ b.T, cdiv(M, step)))}


def fp8_block_launch(p, a, m):
    M, N, K = p["M"], p["N"], p["K"]
    grid = (cdiv(M, m["BLOCK_M"]), cdiv(N, m["BLOCK_N"]))
    kg = cdiv(K, p["group_k"])
    return grid, [as_e4m3(a["a"]), as_e4m3(a["b"]), a["c"], a["a_s"], a["b_s"], M, N, K, K, 1, K, 1, N, 1,
                  kg, 1, kg, 1]


CASES = [
    Case("fp8_block_scaled_gemm_bf16", fp8_block_scaled_gemm_kernel, fp8_block_inputs,
         lambda p: {"c": ((p["M"], p["N"]), "bfloat16")}, fp8_block_ref, fp8_block_launch,
         gpu={"M": 4096, "N": 4096, "K": 4096, "group_n": 128, "group_k": 128},
         ci={"M": 40, "N": 72, "K": 160, "group_n": 32, "group_k": 64},
         meta={"GROUP_N": 128, "GROUP_K": 128, "BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 128, "num_warps": 4,
               "num_stages": 3},
         ci_meta={"GROUP_N": 32, "GROUP_K": 64, "BLOCK_M": 16, "BLOCK_N": 32, "BLOCK_K": 32, "num_warps": 1,
                  "num_stages": 2},
         tol={"bfloat16": (1e-2, 5e-3)}, flops=lambda p: 2.0 * p["M"] * p["N"] * p["K"],
         bytes=lambda p: 1.0 * (p["M"] * p["K"] + p["N"] * p["K"]) + 2.0 * p["M"] * p["N"],
         idiom="block-scaled fp8 GEMM (DeepSeek-style checkpoints): float8_e4m3fn tensors in, per (token, K group) "
               "and per (128 x 128) weight block scales loaded in the K loop, acc += tl.dot(a, b) * a_s[:, None] * "
               "b_s[None, :], offsets wrapped by % M / % N, weight [N, K] read transposed by strides, "
               "C.dtype.element_ty out"),
]
