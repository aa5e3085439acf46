"""Kernels of LLM inference and training as their users write them: a decode-time matrix-vector product, rotary
position embeddings on [tokens, heads, head dim], dropout with Philox random numbers, and a W4A16 matmul whose
int4 weights (eight to an int32, per-group fp16 scales) are unpacked inside the K loop."""
import numpy as np
import triton
import triton.language as tl

from workloads.corpus._case import Case, cdiv, philox_uniform, randn


@triton.jit
def gemv_kernel(W, X, Y, N, K, stride_wn, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # y = W @ x for one token: rows of W in blocks, a float32 row sum carried over K
    rn = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        w = tl.load(W + rn[:, None] * stride_wn + rk[None, :], mask=(rn[:, None] < N) & (rk[None, :] < K), other=0.0)
        x = tl.load(X + rk, mask=rk < K, other=0.0)
        acc += tl.sum(w.to(tl.float32) * x.to(tl.float32)[None, :], axis=1)
    tl.store(Y + rn, acc.to(tl.float16), mask=rn < N)


@triton.jit
def rope_kernel(X, COS, SIN, Y, T, stride_t, stride_h, H: tl.constexpr, D: tl.constexpr, BLOCK_T: tl.constexpr):
    # rotate the two halves of each head (GPT-NeoX style): a 3-D tile [tokens, heads, D/2] and cos/sin broadcast
    HALF: tl.constexpr = D // 2
    rt = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    rh = tl.arange(0, H)
    rd = tl.arange(0, HALF)
    c = tl.load(COS + rt[:, None] * HALF + rd[None, :], mask=rt[:, None] < T, other=0.0)[:, None, :]
    s = tl.load(SIN + rt[:, None] * HALF + rd[None, :], mask=rt[:, None] < T, other=0.0)[:, None, :]
    offs = rt[:, None, None] * stride_t + rh[None, :, None] * stride_h + rd[None, None, :]
    m = rt[:, None, None] < T
    x1 = tl.load(X + offs, mask=m, other=0.0).to(tl.float32)
    x2 = tl.load(X + offs + HALF, mask=m, other=0.0).to(tl.float32)
    tl.store(Y + offs, (x1 * c - x2 * s).to(Y.dtype.element_ty), mask=m)
    tl.store(Y + offs + HALF, (x2 * c + x1 * s).to(Y.dtype.element_ty), mask=m)


@triton.jit
def dropout_kernel(x_ptr, out_ptr, n_elements, p, seed, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    keep = tl.rand(seed, offsets) > p
    tl.store(out_ptr + offsets, tl.where(keep, x / (1 - p), 0.0), mask=mask)


@triton.jit
def matmul_w4a16_kernel(a_ptr, qw_ptr, scales_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_qk, stride_qn,
                        stride_sg, stride_sn, stride_cm, stride_cn, GROUP_SIZE: tl.constexpr,
                        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    # int4 weights packed along K, eight to an int32 ([K // 8, N]); each packed row loaded for its eight k
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
    q_ptrs = qw_ptr + (offs_k[:, None] // 8) * stride_qk + offs_n[None, :] * stride_qn
    shifts = (offs_k % 8) * 4
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_m[:, None] < M, other=0.0)
        q = tl.load(q_ptrs, mask=offs_n[None, :] < N, other=0)
        scale = tl.load(scales_ptr + ((k * BLOCK_K) // GROUP_SIZE) * stride_sg + offs_n * stride_sn,
                        mask=offs_n < N, other=0.0)
        w = ((q >> shifts[:, None]) & 0xF) - 8
        b = w.to(tl.float16) * scale[None, :]
        acc += tl.dot(a, b)
        a_ptrs += BLOCK_K * stride_ak
        q_ptrs += (BLOCK_K // 8) * stride_qk
    c = acc.to(tl.float16)
    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn, c,
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


# ---- references -------------------------------------------------------------------------------------------------

def _rope_ref(p, x):
    half = p["D"] // 2
    xs = x["x"].reshape(p["T"], p["H"], p["D"])
    c, s = x["cos"][:, None, :], x["sin"][:, None, :]
    x1, x2 = xs[..., :half], xs[..., half:]
    return {"y": np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], axis=-1)}


P_DROP, SEED = 0.3, 1234


def _dropout_ref(p, x):
    keep = philox_uniform(SEED, np.arange(p["N"])) > np.float32(P_DROP)
    return {"out": np.where(keep, x["x"] / (1.0 - P_DROP), 0.0)}


def _w4_inputs(p, rng):
    M, N, K, G = p["M"], p["N"], p["K"], p["G"]
    nib = rng.integers(0, 16, (K, N), dtype=np.uint32)
    packed = np.zeros((K // 8, N), np.uint32)
    for j in range(8):
        packed |= nib[j::8] << np.uint32(4 * j)
    scales = (rng.random((K // G, N), dtype=np.float32) * 0.02 + 0.005).astype(np.float16)
    return {"a": randn(rng, (M, K), "float16"), "qw": packed.view(np.int32), "scales": scales}


def _w4_ref(p, x):
    K, G = p["K"], p["G"]
    packed = x["qw"].astype(np.int64).astype(np.uint32)  # the inputs come as float64
    w = np.empty((K, packed.shape[1]), np.float32)
    for j in range(8):
        w[j::8] = ((packed >> np.uint32(4 * j)) & np.uint32(0xF)).astype(np.float32) - 8.0
    scale = np.repeat(x["scales"].astype(np.float32), G, axis=0)
    b = (w * scale).astype(np.float16).astype(np.float64)  # w.to(fp16) * scale rounds to fp16
    return {"c": x["a"] @ b}


def _w4_launch(p, a, m):
    M, N, K = p["M"], p["N"], p["K"]
    grid = (cdiv(M, m["BLOCK_M"]) * cdiv(N, m["BLOCK_N"]),)
    return grid, [a["a"], a["qw"], a["scales"], a["c"], M, N, K, K, 1, N, 1, N, 1, N, 1]


CASES = [
    Case("gemv_f16", gemv_kernel,
         lambda p, rng: {"w": randn(rng, (p["N"], p["K"]), "float16"), "x": randn(rng, (p["K"],), "float16")},
         lambda p: {"y": ((p["N"],), "float16")}, lambda p, x: {"y": x["w"] @ x["x"]},
         lambda p, a, m: ((cdiv(p["N"], m["BLOCK_N"]),), [a["w"], a["x"], a["y"], p["N"], p["K"], p["K"]]),
         gpu={"N": 8192, "K": 8192}, ci={"N": 40, "K": 200},
         meta={"BLOCK_N": 16, "BLOCK_K": 512, "num_warps": 4}, ci_meta={"BLOCK_N": 8, "BLOCK_K": 64, "num_warps": 2},
         bytes=lambda p: 2.0 * (p["N"] * p["K"] + p["K"] + p["N"]),
         idiom="decode GEMV: row blocks, tl.sum(w * x[None, :], axis=1) carried over K"),
    Case("rope_f16", rope_kernel,
         lambda p, rng: {"x": randn(rng, (p["T"] * p["H"] * p["D"],), "float16"),
                         "cos": randn(rng, (p["T"], p["D"] // 2), "float32"),
                         "sin": randn(rng, (p["T"], p["D"] // 2), "float32")},
         lambda p: {"y": ((p["T"] * p["H"] * p["D"],), "float16")},
         lambda p, x: {"y": _rope_ref(p, x)["y"].reshape(-1)},
         lambda p, a, m: ((cdiv(p["T"], m["BLOCK_T"]),),
                          [a["x"], a["cos"], a["sin"], a["y"], p["T"], p["H"] * p["D"], p["D"]]),
         gpu={"T": 16384, "H": 32, "D": 128}, ci={"T": 10, "H": 4, "D": 32},
         meta={"H": 32, "D": 128, "BLOCK_T": 4, "num_warps": 4}, ci_meta={"H": 4, "D": 32, "BLOCK_T": 4, "num_warps": 2},
         bytes=lambda p: 4.0 * p["T"] * p["H"] * p["D"] + 4.0 * p["T"] * p["D"],
         idiom="rotary embedding: halves of each head as a 3-D tile, cos/sin broadcast over heads"),
    Case("dropout_f32", dropout_kernel, lambda p, rng: {"x": randn(rng, (p["N"],), "float32")},
         lambda p: {"out": ((p["N"],), "float32")}, _dropout_ref,
         lambda p, a, m: ((cdiv(p["N"], m["BLOCK_SIZE"]),), [a["x"], a["out"], p["N"], P_DROP, SEED]),
         gpu={"N": 1 << 26}, ci={"N": 3000}, meta={"BLOCK_SIZE": 1024, "num_warps": 4},
         ci_meta={"BLOCK_SIZE": 256, "num_warps": 2}, bytes=lambda p: 8.0 * p["N"],
         idiom="dropout: tl.rand(seed, offsets) > p, scaled by 1 / (1 - p) (Philox, ten rounds)"),
    Case("mm_w4a16_f16", matmul_w4a16_kernel, _w4_inputs, lambda p: {"c": ((p["M"], p["N"]), "float16")}, _w4_ref,
         _w4_launch, gpu={"M": 4096, "N": 4096, "K": 4096, "G": 128}, ci={"M": 40, "N": 24, "K": 128, "G": 32},
         meta={"GROUP_SIZE": 128, "BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 8,
               "num_stages": 3},
         ci_meta={"GROUP_SIZE": 32, "BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 32, "GROUP_M": 2, "num_warps": 1,
                  "num_stages": 2},
         flops=lambda p: 2.0 * p["M"] * p["N"] * p["K"],
         bytes=lambda p: 2.0 * p["M"] * p["K"] + p["K"] * p["N"] / 2 + 2.0 * p["M"] * p["N"],
         idiom="W4A16: int4 weights unpacked with shifts and masks in the K loop, per-group fp16 scales"),
]
