"""fp16 matmul as users write it, the five styles of issue 16's table (4096^3, 128x128x64, 8 warps, 3 stages)."""
import dataclasses

import numpy as np
import triton
import triton.language as tl

from workloads.corpus._case import Case, cdiv, randn


@triton.jit
def matmul_relu_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                       stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                       BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    accumulator = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        accumulator += tl.dot(a, b)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    accumulator = tl.maximum(accumulator, 0.0)
    c = accumulator.to(tl.float16)
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, c, mask=c_mask)


@triton.jit
def matmul_bias_kernel(a_ptr, b_ptr, bias_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                       stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                       BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    width = GROUP_M * num_pid_n
    group_id = pid // width
    first_m = group_id * GROUP_M
    gsize = min(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % gsize)
    pid_n = (pid % width) // gsize

    rm = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    rn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=rk[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=rk[:, None] < K - k * BLOCK_K, other=0.0)
        acc += tl.dot(a, b)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    bias = tl.load(bias_ptr + cn, mask=cn < N, other=0.0)
    acc = acc + bias[None, :].to(tl.float32)
    tl.store(c_ptr + cm[:, None] * stride_cm + cn[None, :] * stride_cn, acc.to(c_ptr.dtype.element_ty),
             mask=(cm[:, None] < M) & (cn[None, :] < N))


@triton.jit
def matmul_mask_mnk_kernel(A, B, C, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # row-major program order, every load masked on M, N and K, offsets recomputed each iteration
    pid_m = tl.program_id(0) // tl.cdiv(N, BLOCK_N)
    pid_n = tl.program_id(0) % tl.cdiv(N, BLOCK_N)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        offs_k = k0 + tl.arange(0, BLOCK_K)
        a = tl.load(A + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak,
                    mask=(offs_m[:, None] < M) & (offs_k[None, :] < K), other=0.0)
        b = tl.load(B + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn,
                    mask=(offs_k[:, None] < K) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(C + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn, acc.to(tl.float16), mask=mask)


@triton.jit
def matmul_mask_mn_kernel(A, B, C, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                          BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # masks on M and N only (K a multiple of BLOCK_K), `range(0, K, BLOCK_K)` and `acc += tl.dot(a, b)`
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(A + rm[:, None] * stride_am + (k + rk)[None, :] * stride_ak, mask=rm[:, None] < M, other=0.0)
        b = tl.load(B + (k + rk)[:, None] * stride_bk + rn[None, :] * stride_bn, mask=rn[None, :] < N, other=0.0)
        acc += tl.dot(a, b)
    tl.store(C + rm[:, None] * stride_cm + rn[None, :] * stride_cn, acc.to(tl.float16),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def matmul_tutorial_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                           stride_cm, stride_cn, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
                           BLOCK_SIZE_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr):
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
        accumulator = tl.dot(a, b, accumulator)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    c = accumulator.to(tl.float16)
    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, c, mask=c_mask)


GPU = {"M": 4096, "N": 4096, "K": 4096}
META = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "num_warps": 8, "num_stages": 3}
CI_META = {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "num_warps": 1, "num_stages": 2}


def ab(p, rng):
    return {"a": randn(rng, (p["M"], p["K"]), "float16"), "b": randn(rng, (p["K"], p["N"]), "float16")}


def ab_bias(p, rng):
    return {**ab(p, rng), "bias": randn(rng, (p["N"],), "float16")}


def c_out(p):
    return {"c": ((p["M"], p["N"]), "float16")}


def mm_flops(p):
    return 2.0 * p["M"] * p["N"] * p["K"]


def mm_bytes(p):
    return 2.0 * (p["M"] * p["K"] + p["K"] * p["N"] + p["M"] * p["N"])


def strides(p):
    M, N, K = p["M"], p["N"], p["K"]
    return [M, N, K, K, 1, N, 1, N, 1]


def grouped(p, a, meta, *names, bm="BLOCK_M", bn="BLOCK_N"):
    grid = (cdiv(p["M"], meta[bm]) * cdiv(p["N"], meta[bn]),)
    return grid, [a[n] for n in names] + strides(p)


def with_group(meta, g=8, prefix=""):
    return {**meta, "GROUP_M": g}


TUT_META = {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 8,
            "num_stages": 3}
TUT_CI = {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 16, "BLOCK_SIZE_K": 16, "GROUP_SIZE_M": 2, "num_warps": 1,
          "num_stages": 2}

CASES = [
    Case("mm_relu_f16", matmul_relu_kernel, ab, c_out,
         lambda p, x: {"c": np.maximum(x["a"] @ x["b"], 0.0)},
         lambda p, a, m: grouped(p, a, m, "a", "b", "c"),
         gpu=GPU, ci={"M": 40, "N": 24, "K": 40}, meta=with_group(META), ci_meta=with_group(CI_META, 2),
         flops=mm_flops, bytes=mm_bytes, idiom="tutorial loop, tl.maximum(acc, 0.0) before the store"),
    Case("mm_bias_f16", matmul_bias_kernel, ab_bias, c_out,
         lambda p, x: {"c": x["a"] @ x["b"] + x["bias"][None, :]},
         lambda p, a, m: grouped(p, a, m, "a", "b", "bias", "c"),
         gpu=GPU, ci={"M": 40, "N": 24, "K": 40}, meta=with_group(META), ci_meta=with_group(CI_META, 2),
         flops=mm_flops, bytes=mm_bytes, idiom="bias row broadcast before the store, output dtype from c_ptr"),
    Case("mm_mask_mnk_f16", matmul_mask_mnk_kernel, ab, c_out,
         lambda p, x: {"c": x["a"] @ x["b"]},
         lambda p, a, m: ((cdiv(p["M"], m["BLOCK_M"]) * cdiv(p["N"], m["BLOCK_N"]),),
                          [a["a"], a["b"], a["c"]] + strides(p)),
         gpu=GPU, ci={"M": 33, "N": 20, "K": 37}, meta=META, ci_meta=CI_META,
         flops=mm_flops, bytes=mm_bytes, idiom="masks on M, N, K; offsets per iteration; acc = tl.dot(a, b, acc)"),
    Case("mm_mask_mn_f16", matmul_mask_mn_kernel, ab, c_out,
         lambda p, x: {"c": x["a"] @ x["b"]},
         lambda p, a, m: ((cdiv(p["M"], m["BLOCK_M"]), cdiv(p["N"], m["BLOCK_N"])),
                          [a["a"], a["b"], a["c"]] + strides(p)),
         gpu=GPU, ci={"M": 40, "N": 24, "K": 48}, meta=META, ci_meta=CI_META,
         flops=mm_flops, bytes=mm_bytes, idiom="masks on M, N; range(0, K, BLOCK_K); acc += tl.dot; 2-D grid"),
    Case("mm_tutorial_f16", matmul_tutorial_kernel, ab, c_out,
         lambda p, x: {"c": x["a"] @ x["b"]},
         lambda p, a, m: grouped(p, a, m, "a", "b", "c", bm="BLOCK_SIZE_M", bn="BLOCK_SIZE_N"),
         gpu=GPU, ci={"M": 48, "N": 32, "K": 40}, meta=TUT_META, ci_meta=TUT_CI,
         flops=mm_flops, bytes=mm_bytes, idiom="the Triton tutorial: pointer increments, K mask, grouped order"),
]

# the table's masked-loop rows were measured over several configs: two more each, same kernels
_VARIANTS = {"128x256x64_w8s3": {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "num_warps": 8, "num_stages": 3},
             "64x128x32_w4s4": {"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 32, "num_warps": 4, "num_stages": 4}}
for _base in [c for c in CASES if c.name in ("mm_mask_mnk_f16", "mm_mask_mn_f16")]:
    for _tag, _meta in _VARIANTS.items():
        CASES.append(dataclasses.replace(_base, name=f"{_base.name}_{_tag}", meta=_meta,
                                         idiom=f"{_base.idiom}; {_tag}"))
