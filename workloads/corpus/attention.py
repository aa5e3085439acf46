"""Flash-attention forward as users write it: masked on the sequence (with tl.where to -inf), unmasked with K
read transposed by pointer arithmetic, K stored pre-transposed, causal; head dims 64 and 128."""
import math

import numpy as np
import triton
import triton.language as tl

from workloads.corpus._case import Case, cdiv, pmap, randn


@triton.jit
def attn_fwd_masked_kernel(Q, K, V, O, sm_scale, L, stride_h, stride_l, HEAD_DIM: tl.constexpr,
                           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    start_m = tl.program_id(0)
    off_h = tl.program_id(1)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    base = off_h * stride_h
    q = tl.load(Q + base + offs_m[:, None] * stride_l + offs_d[None, :], mask=offs_m[:, None] < L, other=0.0)
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504
    for start_n in range(0, L, BLOCK_N):
        rn = start_n + offs_n
        k = tl.load(K + base + rn[:, None] * stride_l + offs_d[None, :], mask=rn[:, None] < L, other=0.0)
        s = tl.dot(q, tl.trans(k))
        s = tl.where(rn[None, :] < L, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1) * qk_scale)
        p = tl.math.exp2(s * qk_scale - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = tl.load(V + base + rn[:, None] * stride_l + offs_d[None, :], mask=rn[:, None] < L, other=0.0)
        acc = tl.dot(p.to(tl.float16), v, acc)
        m_i = m_new
    acc = acc / l_i[:, None]
    tl.store(O + base + offs_m[:, None] * stride_l + offs_d[None, :], acc.to(tl.float16), mask=offs_m[:, None] < L)


@triton.jit
def attn_fwd_kT_kernel(Q, K, V, O, sm_scale, L, stride_h, stride_l, HEAD_DIM: tl.constexpr,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # no masks (L a multiple of both blocks); K^T addressed directly: k_ptrs walks D down, the sequence across
    start_m = tl.program_id(0)
    off_h = tl.program_id(1)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q_ptrs = Q + off_h * stride_h + offs_m[:, None] * stride_l + offs_d[None, :]
    k_ptrs = K + off_h * stride_h + offs_d[:, None] + offs_n[None, :] * stride_l
    v_ptrs = V + off_h * stride_h + offs_n[:, None] * stride_l + offs_d[None, :]
    q = tl.load(q_ptrs)
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    for start_n in range(0, L, BLOCK_N):
        k = tl.load(k_ptrs)
        qk = tl.dot(q, k) * sm_scale
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.exp(qk - m_ij[:, None])
        alpha = tl.exp(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(v_ptrs)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_ij
        k_ptrs += BLOCK_N * stride_l
        v_ptrs += BLOCK_N * stride_l
    tl.store(O + off_h * stride_h + offs_m[:, None] * stride_l + offs_d[None, :], (acc / l_i[:, None]).to(tl.float16))


@triton.jit
def attn_fwd_pretransposed_kernel(Q, KT, V, O, sm_scale, L, stride_h, stride_l, HEAD_DIM: tl.constexpr,
                                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # K stored as (BH, D, L): each K^T tile is a plain row-major load
    start_m = tl.program_id(0)
    off_h = tl.program_id(1)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(Q + off_h * stride_h + offs_m[:, None] * stride_l + offs_d[None, :])
    q = (q * (sm_scale * 1.44269504)).to(tl.float16)
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.full([BLOCK_M], 1.0, dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    for start_n in range(0, L, BLOCK_N):
        rn = start_n + offs_n
        kt = tl.load(KT + off_h * stride_h + offs_d[:, None] * L + rn[None, :])
        qk = tl.dot(q, kt)
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(V + off_h * stride_h + rn[:, None] * stride_l + offs_d[None, :])
        acc = acc * alpha[:, None]
        acc += tl.dot(p.to(tl.float16), v)
        m_i = m_ij
    # l_i started at 1 with m_i at -inf: the first alpha is 0, so that 1 never counts
    tl.store(O + off_h * stride_h + offs_m[:, None] * stride_l + offs_d[None, :], (acc / l_i[:, None]).to(tl.float16))


@triton.jit
def attn_fwd_causal_kernel(Q, K, V, O, sm_scale, L, stride_h, stride_l, HEAD_DIM: tl.constexpr,
                           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # causal: the loop stops at the diagonal block (a runtime bound); the mask is applied with tl.where
    start_m = tl.program_id(0)
    off_h = tl.program_id(1)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    base = off_h * stride_h
    q = tl.load(Q + base + offs_m[:, None] * stride_l + offs_d[None, :])
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504
    hi = (start_m + 1) * BLOCK_M
    for start_n in range(0, hi, BLOCK_N):
        rn = start_n + offs_n
        k = tl.load(K + base + rn[:, None] * stride_l + offs_d[None, :])
        qk = tl.dot(q, tl.trans(k)) * qk_scale
        qk = tl.where(offs_m[:, None] >= rn[None, :], qk, float("-inf"))
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(V + base + rn[:, None] * stride_l + offs_d[None, :])
        acc = tl.dot(p.to(tl.float16), v, acc * alpha[:, None])
        m_i = m_ij
    tl.store(O + base + offs_m[:, None] * stride_l + offs_d[None, :], (acc / l_i[:, None]).to(tl.float16))


def qkv(kt=False):
    def make(p, rng):
        BH, L, D = p["BH"], p["L"], p["D"]
        k = randn(rng, (BH, L, D), "float16")
        return {"q": randn(rng, (BH, L, D), "float16"), "k": np.ascontiguousarray(k.transpose(0, 2, 1)) if kt else k,
                "v": randn(rng, (BH, L, D), "float16")}
    return make


def attention_ref(kt=False, causal=False):
    def ref(p, x):
        BH, L, D = p["BH"], p["L"], p["D"]
        scale = 1.0 / math.sqrt(D)

        def head(h):
            k = x["k"][h].T if kt else x["k"][h]
            s = (x["q"][h] @ k.T) * scale
            if causal:
                s = np.where(np.tril(np.ones((L, L), bool)), s, -np.inf)
            s = np.exp(s - s.max(axis=1, keepdims=True))
            return (s / s.sum(axis=1, keepdims=True)) @ x["v"][h]
        return {"o": np.stack(pmap(head, BH))}
    return ref


def out(p):
    return {"o": ((p["BH"], p["L"], p["D"]), "float16")}


def launch(p, a, m):
    BH, L, D = p["BH"], p["L"], p["D"]
    return (cdiv(L, m["BLOCK_M"]), BH), [a["q"], a["k"], a["v"], a["o"], 1.0 / math.sqrt(D), L, L * D, D]


def flops(causal=False):
    return lambda p: 4.0 * p["BH"] * p["L"] * p["L"] * p["D"] * (0.5 if causal else 1.0)


def nbytes(p):
    return 2.0 * 4 * p["BH"] * p["L"] * p["D"]


def meta(D, BM, BN, w, s):
    return {"HEAD_DIM": D, "BLOCK_M": BM, "BLOCK_N": BN, "num_warps": w, "num_stages": s}


def ci_meta(D):
    return {"HEAD_DIM": D, "BLOCK_M": 16, "BLOCK_N": 16, "num_warps": 1, "num_stages": 2}


TOL = {"float16": (1e-2, 2e-3)}
CASES = [
    Case("attn_masked_d64", attn_fwd_masked_kernel, qkv(), out, attention_ref(), launch,
         gpu={"BH": 32, "L": 4096, "D": 64}, ci={"BH": 2, "L": 40, "D": 64}, meta=meta(64, 128, 64, 8, 3),
         ci_meta=ci_meta(64), tol=TOL, flops=flops(), bytes=nbytes,
         idiom="K/V loads masked on the sequence, tl.where(rn < L, s, -inf), exp2, tl.trans(k)"),
    Case("attn_kT_d64", attn_fwd_kT_kernel, qkv(), out, attention_ref(), launch,
         gpu={"BH": 32, "L": 4096, "D": 64}, ci={"BH": 2, "L": 32, "D": 64}, meta=meta(64, 128, 64, 8, 3),
         ci_meta=ci_meta(64), tol=TOL, flops=flops(), bytes=nbytes,
         idiom="no masks, K read transposed by pointer arithmetic, exp, pointer increments"),
    Case("attn_masked_d128", attn_fwd_masked_kernel, qkv(), out, attention_ref(), launch,
         gpu={"BH": 32, "L": 4096, "D": 128}, ci={"BH": 2, "L": 40, "D": 128}, meta=meta(128, 128, 64, 4, 3),
         ci_meta=ci_meta(128), tol=TOL, flops=flops(), bytes=nbytes, idiom="masked, head dim 128, 4 warps"),
    Case("attn_kT_d128", attn_fwd_kT_kernel, qkv(), out, attention_ref(), launch,
         gpu={"BH": 32, "L": 4096, "D": 128}, ci={"BH": 2, "L": 32, "D": 128}, meta=meta(128, 128, 64, 4, 3),
         ci_meta=ci_meta(128), tol=TOL, flops=flops(), bytes=nbytes, idiom="unmasked, head dim 128, 4 warps"),
    Case("attn_pretransposed_d64", attn_fwd_pretransposed_kernel, qkv(kt=True), out, attention_ref(kt=True), launch,
         gpu={"BH": 32, "L": 4096, "D": 64}, ci={"BH": 2, "L": 32, "D": 64}, meta=meta(64, 128, 64, 4, 3),
         ci_meta=ci_meta(64), tol=TOL, flops=flops(), bytes=nbytes,
         idiom="K stored (BH, D, L), q pre-scaled, acc += dot"),
    Case("attn_causal_d64", attn_fwd_causal_kernel, qkv(), out, attention_ref(causal=True), launch,
         gpu={"BH": 32, "L": 4096, "D": 64}, ci={"BH": 2, "L": 48, "D": 64}, meta=meta(64, 128, 64, 8, 3),
         ci_meta=ci_meta(64), tol=TOL, flops=flops(causal=True), bytes=nbytes,
         idiom="causal: runtime loop bound at the diagonal, tl.where(offs_m >= rn), dot(p, v, acc * alpha)"),
]
