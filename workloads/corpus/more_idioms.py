"""More idioms users reach for: block pointers (tl.make_block_ptr / tl.advance), @triton.heuristics deciding a
constexpr from the arguments, libdevice's tanh, multi-row softmax with keep_dims and eviction hints, and the
tutorial's LayerNorm backward that accumulates dW/dB partials under a spin lock (atomic_cas / atomic_xchg)."""
import math

import numpy as np
import triton
import triton.language as tl
from triton.language.extra import libdevice

from workloads.corpus._case import Case, cdiv, f64, randn


@triton.jit
def matmul_block_ptr_kernel(A, B, C, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    a_blk = tl.make_block_ptr(A, shape=(M, K), strides=(stride_am, stride_ak), offsets=(pid_m * BLOCK_M, 0),
                              block_shape=(BLOCK_M, BLOCK_K), order=(1, 0))
    b_blk = tl.make_block_ptr(B, shape=(K, N), strides=(stride_bk, stride_bn), offsets=(0, pid_n * BLOCK_N),
                              block_shape=(BLOCK_K, BLOCK_N), order=(1, 0))
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_blk, boundary_check=(0, 1), padding_option="zero")
        b = tl.load(b_blk, boundary_check=(0, 1), padding_option="zero")
        acc += tl.dot(a, b)
        a_blk = tl.advance(a_blk, (0, BLOCK_K))
        b_blk = tl.advance(b_blk, (BLOCK_K, 0))
    c_blk = tl.make_block_ptr(C, shape=(M, N), strides=(stride_cm, stride_cn),
                              offsets=(pid_m * BLOCK_M, pid_n * BLOCK_N), block_shape=(BLOCK_M, BLOCK_N),
                              order=(1, 0))
    tl.store(c_blk, acc.to(tl.float16), boundary_check=(0, 1))


@triton.heuristics({"EVEN_K": lambda args: args["K"] % args["BLOCK_K"] == 0})
@triton.jit
def matmul_even_k_kernel(A, B, C, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                         EVEN_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    ram = tl.where(rm < M, rm, 0)
    rbn = tl.where(rn < N, rn, 0)
    pa = A + ram[:, None] * stride_am + rk[None, :] * stride_ak
    pb = B + rk[:, None] * stride_bk + rbn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        if EVEN_K:
            a = tl.load(pa)
            b = tl.load(pb)
        else:
            a = tl.load(pa, mask=rk[None, :] < K - k, other=0.0)
            b = tl.load(pb, mask=rk[:, None] < K - k, other=0.0)
        acc = tl.dot(a, b, acc)
        pa += BLOCK_K * stride_ak
        pb += BLOCK_K * stride_bk
    tl.store(C + rm[:, None] * stride_cm + rn[None, :] * stride_cn, acc.to(tl.float16),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def gelu_libdevice_kernel(X, Y, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(X + offs, mask=m).to(tl.float32)
    y = 0.5 * x * (1.0 + libdevice.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))
    tl.store(Y + offs, y.to(tl.float16), mask=m)


@triton.jit
def softmax_rows_kernel(X, Y, M, N, stride, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # several short rows per program, reductions with keep_dims, streaming loads/stores hinted as such
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    x = tl.load(X + rows[:, None] * stride + cols[None, :], mask=mask, other=float("-inf"),
                eviction_policy="evict_first")
    x = x - tl.max(x, axis=1, keep_dims=True)
    e = tl.exp(x)
    y = e / tl.sum(e, axis=1, keep_dims=True)
    tl.store(Y + rows[:, None] * stride + cols[None, :], y, mask=mask, cache_modifier=".cs")


@triton.jit
def layernorm_bwd_fused_kernel(DX, DY, DW, DB, X, W, Mean, Rstd, Lock, stride, N, GROUP_SIZE_M: tl.constexpr,
                               BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(X + row * stride + cols, mask=mask, other=0).to(tl.float32)
    dy = tl.load(DY + row * stride + cols, mask=mask, other=0).to(tl.float32)
    w = tl.load(W + cols, mask=mask).to(tl.float32)
    mean = tl.load(Mean + row)
    rstd = tl.load(Rstd + row)
    xhat = tl.where(mask, (x - mean) * rstd, 0.0)
    wdy = tl.where(mask, w * dy, 0.0)
    c1 = tl.sum(xhat * wdy, axis=0) / N
    c2 = tl.sum(wdy, axis=0) / N
    tl.store(DX + row * stride + cols, ((wdy - (xhat * c1 + c2)) * rstd).to(DX.dtype.element_ty), mask=mask)
    # this row's dW/dB go into the partial buffers of group row % GROUP_SIZE_M, one writer at a time
    group = row % GROUP_SIZE_M
    lock = Lock + group
    count = Lock + GROUP_SIZE_M + group
    dw_ptrs = DW + group * N + cols
    db_ptrs = DB + group * N + cols
    pdw = dy * xhat
    pdb = dy
    while tl.atomic_cas(lock, 0, 1) == 1:
        pass
    seen = tl.load(count)
    if seen == 0:
        tl.atomic_xchg(count, 1)
    else:
        pdw += tl.load(dw_ptrs, mask=mask)
        pdb += tl.load(db_ptrs, mask=mask)
    tl.store(dw_ptrs, pdw, mask=mask)
    tl.store(db_ptrs, pdb, mask=mask)
    tl.debug_barrier()
    tl.atomic_xchg(lock, 0)


def mm_inputs(p, rng):
    return {"a": randn(rng, (p["M"], p["K"]), "float16"), "b": randn(rng, (p["K"], p["N"]), "float16")}


def mm_out(p):
    return {"c": ((p["M"], p["N"]), "float16")}


def mm_launch(p, a, m):
    M, N, K = p["M"], p["N"], p["K"]
    return (cdiv(M, m["BLOCK_M"]), cdiv(N, m["BLOCK_N"])), [a["a"], a["b"], a["c"], M, N, K, K, 1, N, 1, N, 1]


def mm_flops(p):
    return 2.0 * p["M"] * p["N"] * p["K"]


def mm_bytes(p):
    return 2.0 * (p["M"] * p["K"] + p["K"] * p["N"] + p["M"] * p["N"])


MM_META = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "num_warps": 8, "num_stages": 3}
MM_CI = {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "num_warps": 1, "num_stages": 2}


def gelu_ref(p, x):
    v = x["x"]
    return {"y": 0.5 * v * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (v + 0.044715 * v ** 3)))}


def softmax_ref(p, x):
    e = np.exp(x["x"] - x["x"].max(axis=1, keepdims=True))
    return {"y": e / e.sum(axis=1, keepdims=True)}


EPS = 1e-5


def ln_bwd_inputs(p, rng):
    M, N = p["M"], p["N"]
    x = randn(rng, (M, N), "float16", 2.0, 0.5)
    xd = f64(x)
    mean = xd.mean(axis=1)
    rstd = 1.0 / np.sqrt(((xd - mean[:, None]) ** 2).mean(axis=1) + EPS)
    return {"x": x, "dy": randn(rng, (M, N), "float16"), "w": randn(rng, (N,), "float16", 0.5, 1.0),
            "mean": mean.astype(np.float32), "rstd": rstd.astype(np.float32)}


def ln_bwd_ref(p, x):
    G = p["G"]
    xhat = (x["x"] - x["mean"][:, None]) * x["rstd"][:, None]
    wdy = x["w"] * x["dy"]
    c1 = (xhat * wdy).mean(axis=1, keepdims=True)
    c2 = wdy.mean(axis=1, keepdims=True)
    dx = (wdy - (xhat * c1 + c2)) * x["rstd"][:, None]
    M, N = p["M"], p["N"]

    def by_group(v):  # row r belongs to group r % G
        pad = (-M) % G
        v = np.concatenate([v, np.zeros((pad, N))]) if pad else v
        return v.reshape(-1, G, N).sum(axis=0)
    dw, db = by_group(x["dy"] * xhat), by_group(x["dy"])
    return {"dx": dx, "dw": dw, "db": db}


def ln_bwd_out(p):
    return {"dx": ((p["M"], p["N"]), "float16"), "dw": ((p["G"], p["N"]), "float32"),
            "db": ((p["G"], p["N"]), "float32"), "lock": ((2 * p["G"],), "int32")}


def ln_bwd_launch(p, a, m):
    return (p["M"],), [a["dx"], a["dy"], a["dw"], a["db"], a["x"], a["w"], a["mean"], a["rstd"], a["lock"], p["N"],
                       p["N"]]


CASES = [
    Case("mm_block_ptr_f16", matmul_block_ptr_kernel, mm_inputs, mm_out, lambda p, x: {"c": x["a"] @ x["b"]},
         mm_launch, gpu={"M": 4096, "N": 4096, "K": 4096}, ci={"M": 40, "N": 24, "K": 40}, meta=MM_META,
         ci_meta=MM_CI, flops=mm_flops, bytes=mm_bytes, idiom="block pointers with boundary_check and tl.advance"),
    Case("mm_even_k_f16", matmul_even_k_kernel, mm_inputs, mm_out, lambda p, x: {"c": x["a"] @ x["b"]}, mm_launch,
         gpu={"M": 4096, "N": 4096, "K": 4096}, ci={"M": 40, "N": 24, "K": 40}, meta=MM_META, ci_meta=MM_CI,
         flops=mm_flops, bytes=mm_bytes,
         idiom="@triton.heuristics EVEN_K picks unmasked loads (GPU) or K masks (CI: K % BLOCK_K != 0); "
               "rows clamped with tl.where"),
    Case("gelu_libdevice_f16", gelu_libdevice_kernel, lambda p, rng: {"x": randn(rng, (p["N"],), "float16", 2.0)},
         lambda p: {"y": ((p["N"],), "float16")}, gelu_ref,
         lambda p, a, m: ((cdiv(p["N"], m["BLOCK"]),), [a["x"], a["y"], p["N"]]),
         gpu={"N": 2 ** 26}, ci={"N": 1000}, meta={"BLOCK": 1024, "num_warps": 4},
         ci_meta={"BLOCK": 256, "num_warps": 2}, flops=lambda p: 10.0 * p["N"], bytes=lambda p: 4.0 * p["N"],
         idiom="from triton.language.extra import libdevice; libdevice.tanh"),
    Case("softmax_rows_keepdims_f32", softmax_rows_kernel, lambda p, rng: {"x": randn(rng, (p["M"], p["N"]),
                                                                                      "float32", 2.0)},
         lambda p: {"y": ((p["M"], p["N"]), "float32")}, softmax_ref,
         lambda p, a, m: ((cdiv(p["M"], m["BLOCK_M"]),), [a["x"], a["y"], p["M"], p["N"], p["N"]]),
         gpu={"M": 65536, "N": 200}, ci={"M": 9, "N": 50}, meta={"BLOCK_M": 16, "BLOCK_N": 256, "num_warps": 4},
         ci_meta={"BLOCK_M": 4, "BLOCK_N": 64, "num_warps": 2}, flops=lambda p: 5.0 * p["M"] * p["N"],
         bytes=lambda p: 8.0 * p["M"] * p["N"],
         idiom="many short rows per program, keep_dims=True, eviction_policy / cache_modifier hints"),
    Case("layernorm_bwd_lock_f16", layernorm_bwd_fused_kernel, ln_bwd_inputs, ln_bwd_out, ln_bwd_ref, ln_bwd_launch,
         gpu={"M": 8192, "N": 4096, "G": 64}, ci={"M": 12, "N": 200, "G": 4},
         meta={"GROUP_SIZE_M": 64, "BLOCK_N": 4096, "num_warps": 8},
         ci_meta={"GROUP_SIZE_M": 4, "BLOCK_N": 256, "num_warps": 4}, zero=("lock",),
         tol={"float16": (1e-2, 3e-3), "float32": (1e-4, 1e-5)}, flops=lambda p: 14.0 * p["M"] * p["N"],
         bytes=lambda p: 6.0 * p["M"] * p["N"],
         idiom="dx plus dW/dB partials per row group under a spin lock (atomic_cas, atomic_xchg, while, if)"),
]
