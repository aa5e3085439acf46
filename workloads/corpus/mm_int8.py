"""int8 matmuls as quantized-inference users write them: an int32 result, and W8A8 with per-row and per-column
scales applied to the int32 accumulator before an fp16 store (B stored N x K, a Linear weight)."""
import numpy as np
import triton
import triton.language as tl

from workloads.corpus._case import Case, cdiv


@triton.jit
def matmul_int8_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                       stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                       BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    # int8 x int8 -> int32, the tutorial's loop: pointer increments, a K mask, grouped program order
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    group = GROUP_M * num_pid_n
    first_m = (pid // group) * GROUP_M
    gm = min(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + ((pid % group) % gm)
    pid_n = (pid % group) // gm
    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.int32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0)
        acc += tl.dot(a, b)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    tl.store(c_ptr + offs_cm[:, None] * stride_cm + offs_cn[None, :] * stride_cn, acc,
             mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


@triton.jit
def matmul_w8a8_kernel(x_ptr, w_ptr, sx_ptr, sw_ptr, y_ptr, M, N, K, stride_xm, stride_xk, stride_wn, stride_wk,
                       stride_ym, stride_yn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # y = (x @ w^T) * sx[:, None] * sw[None, :]: per-token activation scales, per-channel weight scales
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    x_ptrs = x_ptr + rm[:, None] * stride_xm + rk[None, :] * stride_xk
    w_ptrs = w_ptr + rk[:, None] * stride_wk + rn[None, :] * stride_wn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.int32)
    for k in range(0, K, BLOCK_K):
        x = tl.load(x_ptrs, mask=rm[:, None] < M, other=0)
        w = tl.load(w_ptrs, mask=rn[None, :] < N, other=0)
        acc += tl.dot(x, w)
        x_ptrs += BLOCK_K * stride_xk
        w_ptrs += BLOCK_K * stride_wk
    sx = tl.load(sx_ptr + rm, mask=rm < M, other=0.0)
    sw = tl.load(sw_ptr + rn, mask=rn < N, other=0.0)
    y = acc.to(tl.float32) * sx[:, None] * sw[None, :]
    tl.store(y_ptr + rm[:, None] * stride_ym + rn[None, :] * stride_yn, y.to(tl.float16),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def i8(rng, shape):
    return rng.integers(-128, 128, shape, dtype=np.int8)


def int8_inputs(p, rng):
    return {"a": i8(rng, (p["M"], p["K"])), "b": i8(rng, (p["K"], p["N"]))}


def int8_launch(p, a, m):
    M, N, K = p["M"], p["N"], p["K"]
    grid = (cdiv(M, m["BLOCK_M"]) * cdiv(N, m["BLOCK_N"]),)
    return grid, [a["a"], a["b"], a["c"], M, N, K, K, 1, N, 1, N, 1]


def w8a8_inputs(p, rng):
    M, N, K = p["M"], p["N"], p["K"]
    return {"x": i8(rng, (M, K)), "w": i8(rng, (N, K)),
            "sx": (rng.random(M, dtype=np.float32) * 2e-3 + 1e-4).astype(np.float32),
            "sw": (rng.random(N, dtype=np.float32) * 2e-3 + 1e-4).astype(np.float32)}


def w8a8_launch(p, a, m):
    M, N, K = p["M"], p["N"], p["K"]
    grid = (cdiv(M, m["BLOCK_M"]), cdiv(N, m["BLOCK_N"]))
    return grid, [a["x"], a["w"], a["sx"], a["sw"], a["y"], M, N, K, K, 1, K, 1, N, 1]


def flops(p):
    return 2.0 * p["M"] * p["N"] * p["K"]


def nbytes(out_bytes):
    return lambda p: p["M"] * p["K"] + p["K"] * p["N"] + out_bytes * p["M"] * p["N"]


GPU = {"M": 4096, "N": 4096, "K": 4096}
CI_META = {"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32, "num_warps": 4, "num_stages": 2}
CASES = [
    Case("mm_int8_i32", matmul_int8_kernel, int8_inputs, lambda p: {"c": ((p["M"], p["N"]), "int32")},
         lambda p, x: {"c": x["a"] @ x["b"]}, int8_launch, gpu=GPU, ci={"M": 72, "N": 40, "K": 80},
         meta={"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 128, "GROUP_M": 8, "num_warps": 8, "num_stages": 3},
         ci_meta={**CI_META, "GROUP_M": 2}, flops=flops, bytes=nbytes(4),
         idiom="int8 x int8 -> int32, acc += tl.dot, K mask, pointer increments, grouped order; B stored K x N"),
    Case("mm_w8a8_f16", matmul_w8a8_kernel, w8a8_inputs, lambda p: {"y": ((p["M"], p["N"]), "float16")},
         lambda p, x: {"y": (x["x"] @ x["w"].T) * x["sx"][:, None] * x["sw"][None, :]}, w8a8_launch,
         gpu=GPU, ci={"M": 72, "N": 40, "K": 96},
         meta={"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 128, "num_warps": 8, "num_stages": 3},
         ci_meta=CI_META, flops=flops, bytes=nbytes(2),
         idiom="W8A8: int32 accumulator scaled per row and per column to fp16; weight N x K read transposed"),
]
