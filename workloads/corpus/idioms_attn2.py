"""Six more members of the attention family, as users write them: a head-dim-256 bf16 forward through block
pointers (K^T as a column-major block pointer, boundary_check / padding_option="zero", tl.advance) that also
writes the log-sum-exp; a forward with an additive fp16 bias [L, L] read per (query block, key block) (relative
position bias, or a mask given as a large negative bias); cross-attention in the [B, L, H, D] layout with query
and key lengths that differ and divide no block (a 3-D grid, masks on both sides, natural exp); flash-decoding
split over the KV cache (one query token per (batch, head), each program one chunk of the cache, scalar online
softmax over [BLOCK_N, D] tiles reduced with tl.sum, a normalized partial output and its log-sum-exp) and the
kernel that combines those partials; Gemma-2-style logit soft-capping (cap * tanh(s / cap) with libdevice.tanh)
under a causal mask, the off-diagonal blocks unmasked and the diagonal blocks masked through one jit helper with
a constexpr flag; and chunked retention (RetNet): per chunk of C tokens (Q K^T * decay) V inside the chunk plus
Q S from a carried fp32 [D, D] state, decays from tl.exp of index differences times a per-head log(gamma)."""
import math

import numpy as np
import triton
import triton.language as tl
from triton.language.extra import libdevice

from workloads.corpus._case import Case, cdiv, pmap, randn, uniform


# --- 1. head dim 256, bf16, block pointers, with the log-sum-exp ---------------------------------------------------
@triton.jit
def attn_fwd_d256_kernel(Q, K, V, O, LSE, sm_scale, L, stride_h, stride_l, HEAD_DIM: tl.constexpr,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    start_m = tl.program_id(0) * BLOCK_M
    off_h = tl.program_id(1).to(tl.int64)
    base = off_h * stride_h
    q_blk = tl.make_block_ptr(Q + base, shape=(L, HEAD_DIM), strides=(stride_l, 1), offsets=(start_m, 0),
                              block_shape=(BLOCK_M, HEAD_DIM), order=(1, 0))
    # K read as its transpose: a (HEAD_DIM, L) view whose fastest dimension is the first one
    kt_blk = tl.make_block_ptr(K + base, shape=(HEAD_DIM, L), strides=(1, stride_l), offsets=(0, 0),
                               block_shape=(HEAD_DIM, BLOCK_N), order=(0, 1))
    v_blk = tl.make_block_ptr(V + base, shape=(L, HEAD_DIM), strides=(stride_l, 1), offsets=(0, 0),
                              block_shape=(BLOCK_N, HEAD_DIM), order=(1, 0))
    q = tl.load(q_blk, boundary_check=(0,), padding_option="zero")
    # softmax in base 2: log2(e) goes into the scale once, exp2 in the loop
    qk_scale = sm_scale * 1.4426950408889634
    offs_n = tl.arange(0, BLOCK_N)
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    for start_n in range(0, L, BLOCK_N):
        kt = tl.load(kt_blk, boundary_check=(1,), padding_option="zero")
        s = tl.dot(q, kt) * qk_scale
        s = tl.where((start_n + offs_n)[None, :] < L, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        alpha = tl.math.exp2(m_i - m_new)
        p = tl.math.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(v_blk, boundary_check=(0,), padding_option="zero")
        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
        m_i = m_new
        kt_blk = tl.advance(kt_blk, (0, BLOCK_N))
        v_blk = tl.advance(v_blk, (BLOCK_N, 0))
    acc = acc / l_i[:, None]
    o_blk = tl.make_block_ptr(O + base, shape=(L, HEAD_DIM), strides=(stride_l, 1), offsets=(start_m, 0),
                              block_shape=(BLOCK_M, HEAD_DIM), order=(1, 0))
    tl.store(o_blk, acc.to(O.dtype.element_ty), boundary_check=(0,))
    # the backward wants the natural-log LSE of the scaled scores: back from base 2
    offs_m = start_m + tl.arange(0, BLOCK_M)
    lse = (m_i + tl.math.log2(l_i)) * 0.6931471805599453
    tl.store(LSE + off_h * L + offs_m, lse, mask=offs_m < L)


# --- 2. additive bias [L, L] ---------------------------------------------------------------------------------------
@triton.jit
def attn_fwd_bias_kernel(Q, K, V, BIAS, O, sm_scale, L, stride_h, stride_l, stride_bias, HEAD_DIM: tl.constexpr,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # scores = q k^T * scale + bias[m, n]; one bias shared by every head, so its tiles come mostly from L2
    pid_m = tl.program_id(0)
    off_h = tl.program_id(1).to(tl.int64)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    m_mask = offs_m < L
    q = tl.load(Q + off_h * stride_h + offs_m[:, None] * stride_l + offs_d[None, :], mask=m_mask[:, None],
                other=0.0)
    k_ptrs = K + off_h * stride_h + offs_n[:, None] * stride_l + offs_d[None, :]
    v_ptrs = V + off_h * stride_h + offs_n[:, None] * stride_l + offs_d[None, :]
    b_ptrs = BIAS + offs_m[:, None] * stride_bias + offs_n[None, :]
    qk_scale = sm_scale * 1.4426950408889634
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    for start_n in range(0, L, BLOCK_N):
        n_mask = (start_n + offs_n) < L
        k = tl.load(k_ptrs, mask=n_mask[:, None], other=0.0)
        bias = tl.load(b_ptrs, mask=m_mask[:, None] & n_mask[None, :], other=0.0)
        s = tl.dot(q, tl.trans(k)) * qk_scale + bias.to(tl.float32) * 1.4426950408889634
        s = tl.where(n_mask[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.math.exp2(s - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(v_ptrs, mask=n_mask[:, None], other=0.0)
        acc = acc * alpha[:, None]
        acc += tl.dot(p.to(tl.float16), v)
        m_i = m_new
        k_ptrs += BLOCK_N * stride_l
        v_ptrs += BLOCK_N * stride_l
        b_ptrs += BLOCK_N
    out = acc / l_i[:, None]
    tl.store(O + off_h * stride_h + offs_m[:, None] * stride_l + offs_d[None, :], out.to(tl.float16),
             mask=m_mask[:, None])


# --- 3. cross-attention, [B, L, H, D] layout -----------------------------------------------------------------------
@triton.jit
def cross_attn_fwd_kernel(Q, K, V, O, sm_scale, Lq, Lk, stride_qb, stride_ql, stride_kb, stride_kl, stride_hd,
                          HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # decoder queries over encoder keys: Lq != Lk, neither a multiple of its block; grid (query blocks, heads,
    # batch); rows of one head are H * D elements apart (stride_ql / stride_kl), heads D apart (stride_hd)
    pid_m = tl.program_id(0)
    off_h = tl.program_id(1)
    off_b = tl.program_id(2).to(tl.int64)
    q_base = Q + off_b * stride_qb + off_h * stride_hd
    k_base = K + off_b * stride_kb + off_h * stride_hd
    v_base = V + off_b * stride_kb + off_h * stride_hd
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    q_mask = offs_m[:, None] < Lq
    q = tl.load(q_base + offs_m[:, None] * stride_ql + offs_d[None, :], mask=q_mask, other=0.0)
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    for start_n in range(0, Lk, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        kv_mask = offs_n[:, None] < Lk
        k = tl.load(k_base + offs_n[:, None] * stride_kl + offs_d[None, :], mask=kv_mask, other=0.0)
        v = tl.load(v_base + offs_n[:, None] * stride_kl + offs_d[None, :], mask=kv_mask, other=0.0)
        qk = tl.dot(q, tl.trans(k)) * sm_scale
        qk = tl.where(offs_n[None, :] < Lk, qk, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(qk, axis=1))
        p = tl.exp(qk - m_new[:, None])
        corr = tl.exp(m_i - m_new)
        l_i = l_i * corr + tl.sum(p, axis=1)
        acc = tl.dot(p.to(v.dtype), v, acc * corr[:, None])
        m_i = m_new
    out = acc / l_i[:, None]
    o_base = O + off_b * stride_qb + off_h * stride_hd
    tl.store(o_base + offs_m[:, None] * stride_ql + offs_d[None, :], out.to(O.dtype.element_ty), mask=q_mask)


# --- 4a. flash-decoding: one chunk of the KV cache per program --------------------------------------------------------
@triton.jit
def decode_split_kv_kernel(Q, K, V, O_PART, LSE_PART, sm_scale, L, stride_kh, stride_kl,
                           NUM_SPLITS: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_N: tl.constexpr):
    # grid (batch * heads, NUM_SPLITS): the L cached keys of a head are cut into NUM_SPLITS chunks of a whole
    # number of blocks; each program leaves its chunk's softmax-normalized output and log-sum-exp behind
    bh = tl.program_id(0).to(tl.int64)
    split = tl.program_id(1)
    chunk = tl.cdiv(tl.cdiv(L, NUM_SPLITS), BLOCK_N) * BLOCK_N
    lo = split * chunk
    hi = tl.minimum(lo + chunk, L)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(Q + bh * HEAD_DIM + offs_d).to(tl.float32) * (sm_scale * 1.4426950408889634)
    m_i = float("-inf")
    l_i = 0.0
    acc = tl.zeros([HEAD_DIM], dtype=tl.float32)
    for start_n in range(lo, hi, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        n_mask = offs_n < hi
        kv_off = bh * stride_kh + offs_n[:, None] * stride_kl + offs_d[None, :]
        k = tl.load(K + kv_off, mask=n_mask[:, None], other=0.0)
        # a single query row: no tensor-core dot, a broadcast multiply and a row sum
        s = tl.sum(k.to(tl.float32) * q[None, :], axis=1)
        s = tl.where(n_mask, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=0))
        alpha = tl.math.exp2(m_i - m_new)
        p = tl.math.exp2(s - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=0)
        v = tl.load(V + kv_off, mask=n_mask[:, None], other=0.0)
        acc = acc * alpha + tl.sum(p[:, None] * v.to(tl.float32), axis=0)
        m_i = m_new
    part = bh * NUM_SPLITS + split
    tl.store(O_PART + part * HEAD_DIM + offs_d, acc / l_i)
    tl.store(LSE_PART + part, (m_i + tl.math.log2(l_i)) * 0.6931471805599453)


# --- 4b. flash-decoding: combine the partials ------------------------------------------------------------------------
@triton.jit
def decode_combine_kernel(O_PART, LSE_PART, O, LSE, num_splits, HEAD_DIM: tl.constexpr, BLOCK_S: tl.constexpr):
    # out = sum_s exp(lse_s - lse) * o_s with lse = log sum_s exp(lse_s); the split count is a runtime value,
    # the splits a masked power-of-two block (missing ones weigh exp(-inf) = 0)
    bh = tl.program_id(0).to(tl.int64)
    offs_s = tl.arange(0, BLOCK_S)
    offs_d = tl.arange(0, HEAD_DIM)
    s_mask = offs_s < num_splits
    lse_s = tl.load(LSE_PART + bh * num_splits + offs_s, mask=s_mask, other=float("-inf"))
    m = tl.max(lse_s, axis=0)
    w = tl.exp(lse_s - m)
    total = tl.sum(w, axis=0)
    o_s = tl.load(O_PART + (bh * num_splits + offs_s)[:, None] * HEAD_DIM + offs_d[None, :], mask=s_mask[:, None],
                  other=0.0)
    out = tl.sum(o_s * (w / total)[:, None], axis=0)
    tl.store(O + bh * HEAD_DIM + offs_d, out.to(O.dtype.element_ty))
    tl.store(LSE + bh, m + tl.log(total))


# --- 5. logit soft-capping, causal ---------------------------------------------------------------------------------
@triton.jit
def _softcap_tile(acc, l_i, m_i, q, k_ptrs, v_ptrs, offs_m, offs_n, L, sm_scale, softcap, ON_DIAGONAL: tl.constexpr):
    # one key block of the online softmax; only the blocks that meet the diagonal need the masks
    if ON_DIAGONAL:
        k = tl.load(k_ptrs, mask=offs_n[:, None] < L, other=0.0)
    else:
        k = tl.load(k_ptrs)
    s = tl.dot(q, tl.trans(k)) * sm_scale
    # Gemma 2: squash the logits into (-softcap, softcap) before the softmax
    s = softcap * libdevice.tanh(s / softcap)
    if ON_DIAGONAL:
        s = tl.where(offs_m[:, None] >= offs_n[None, :], s, float("-inf"))
    s = s * 1.4426950408889634
    m_new = tl.maximum(m_i, tl.max(s, axis=1))
    p = tl.math.exp2(s - m_new[:, None])
    alpha = tl.math.exp2(m_i - m_new)
    l_i = l_i * alpha + tl.sum(p, axis=1)
    if ON_DIAGONAL:
        v = tl.load(v_ptrs, mask=offs_n[:, None] < L, other=0.0)
    else:
        v = tl.load(v_ptrs)
    acc = tl.dot(p.to(tl.float16), v, acc * alpha[:, None])
    return acc, l_i, m_new


@triton.jit
def attn_softcap_causal_kernel(Q, K, V, O, sm_scale, softcap, L, stride_h, stride_l, HEAD_DIM: tl.constexpr,
                               BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_m = tl.program_id(0)
    base = tl.program_id(1).to(tl.int64) * stride_h
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(Q + base + offs_m[:, None] * stride_l + offs_d[None, :], mask=offs_m[:, None] < L, other=0.0)
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    diag_lo = pid_m * BLOCK_M
    # keys wholly below the diagonal (all < diag_lo <= L): no mask at all
    for start_n in range(0, diag_lo, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        kv = base + offs_n[:, None] * stride_l + offs_d[None, :]
        acc, l_i, m_i = _softcap_tile(acc, l_i, m_i, q, K + kv, V + kv, offs_m, offs_n, L, sm_scale, softcap,
                                      False)
    # the blocks the diagonal crosses: causal mask, and the sequence end
    for start_n in range(diag_lo, diag_lo + BLOCK_M, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        kv = base + offs_n[:, None] * stride_l + offs_d[None, :]
        acc, l_i, m_i = _softcap_tile(acc, l_i, m_i, q, K + kv, V + kv, offs_m, offs_n, L, sm_scale, softcap,
                                      True)
    tl.store(O + base + offs_m[:, None] * stride_l + offs_d[None, :], (acc / l_i[:, None]).to(tl.float16),
             mask=offs_m[:, None] < L)


# --- 6. chunked retention ------------------------------------------------------------------------------------------
@triton.jit
def retention_chunked_kernel(Q, K, V, O, LOG_DECAY, sm_scale, L, H, stride_h, stride_l, HEAD_DIM: tl.constexpr,
                             CHUNK: tl.constexpr):
    # o_t = sum_{s <= t} gamma^(t - s) (q_t . k_s) * scale * v_s, one program per (batch, head) walking the chunks
    # in order: inside a chunk the decayed causal product, from before it the state
    # S = sum_{s < chunk start} gamma^(start - 1 - s) k_s^T v_s, seen by row i through gamma^(i + 1)
    bh = tl.program_id(0)
    log_gamma = tl.load(LOG_DECAY + bh % H)
    base = bh.to(tl.int64) * stride_h
    offs_c = tl.arange(0, CHUNK)
    offs_d = tl.arange(0, HEAD_DIM)
    below = offs_c[:, None] >= offs_c[None, :]
    dist = tl.where(below, offs_c[:, None] - offs_c[None, :], 0).to(tl.float32)
    decay = tl.where(below, tl.exp(dist * log_gamma), 0.0)
    q_decay = tl.exp((offs_c + 1).to(tl.float32) * log_gamma) * sm_scale
    k_decay = tl.exp((CHUNK - 1 - offs_c).to(tl.float32) * log_gamma)
    chunk_decay = tl.exp(CHUNK * log_gamma)
    state = tl.zeros([HEAD_DIM, HEAD_DIM], dtype=tl.float32)
    for start in range(0, L, CHUNK):
        rows = start + offs_c
        r_mask = rows[:, None] < L
        off = base + rows[:, None] * stride_l + offs_d[None, :]
        q = tl.load(Q + off, mask=r_mask, other=0.0)
        k = tl.load(K + off, mask=r_mask, other=0.0)
        v = tl.load(V + off, mask=r_mask, other=0.0)
        scores = tl.dot(q, tl.trans(k)) * sm_scale * decay
        o = tl.dot(scores.to(tl.float16), v)
        o += tl.dot(q, state.to(tl.float16)) * q_decay[:, None]
        tl.store(O + off, o.to(O.dtype.element_ty), mask=r_mask)
        k_aged = (k * k_decay[:, None]).to(tl.float16)
        state = tl.dot(tl.trans(k_aged), v, state * chunk_decay)


# --- host side -------------------------------------------------------------------------------------------------------
def _softmax_rows(s):
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _lse_rows(s):
    mx = s.max(axis=1)
    return mx + np.log(np.exp(s - mx[:, None]).sum(axis=1))


def bhld_inputs(dt, q_scale=1.0):
    def make(p, rng):
        BH, L, D = p["BH"], p["L"], p["D"]
        return {"q": randn(rng, (BH, L, D), dt, q_scale), "k": randn(rng, (BH, L, D), dt),
                "v": randn(rng, (BH, L, D), dt)}
    return make


def attn_meta(D, BM, BN, w, s=2):
    return {"HEAD_DIM": D, "BLOCK_M": BM, "BLOCK_N": BN, "num_warps": w, "num_stages": s}


CI_ATTN = {"BLOCK_M": 16, "BLOCK_N": 16, "num_warps": 1, "num_stages": 2}


def attn_flops(p, causal=False):
    return 4.0 * p["BH"] * p["L"] * p["L"] * p["D"] * (0.5 if causal else 1.0)


# 1. head dim 256
def d256_ref(p, x):
    scale = 1.0 / math.sqrt(p["D"])

    def head(h):
        s = (x["q"][h] @ x["k"][h].T) * scale
        return _softmax_rows(s) @ x["v"][h], _lse_rows(s)
    parts = pmap(head, p["BH"])
    return {"o": np.stack([a for a, _ in parts]), "lse": np.stack([b for _, b in parts])}


def d256_launch(p, a, m):
    assert m["HEAD_DIM"] == p["D"]
    L, D = p["L"], p["D"]
    return (cdiv(L, m["BLOCK_M"]), p["BH"]), [a["q"], a["k"], a["v"], a["o"], a["lse"], 1.0 / math.sqrt(D), L,
                                              L * D, D]


# 2. additive bias
def bias_inputs(p, rng):
    L = p["L"]
    x = bhld_inputs("float16")(p, rng)
    # a smooth relative-position term plus noise, with about a fifth of the pairs masked out by -1e4 (never the
    # diagonal, so no row is masked whole)
    rel = np.arange(L)[:, None] - np.arange(L)[None, :]
    bias = -0.02 * np.abs(rel) + 0.5 * rng.standard_normal((L, L))
    masked = (rng.random((L, L)) < 0.2) & (rel != 0)
    bias = np.where(masked, -1e4, bias)
    x["bias"] = bias.astype(np.float16)
    return x


def bias_ref(p, x):
    scale = 1.0 / math.sqrt(p["D"])
    return {"o": np.stack(pmap(lambda h: _softmax_rows((x["q"][h] @ x["k"][h].T) * scale + x["bias"]) @ x["v"][h],
                               p["BH"]))}


def bias_launch(p, a, m):
    assert m["HEAD_DIM"] == p["D"]
    L, D = p["L"], p["D"]
    return (cdiv(L, m["BLOCK_M"]), p["BH"]), [a["q"], a["k"], a["v"], a["bias"], a["o"], 1.0 / math.sqrt(D), L,
                                              L * D, D, L]


# 3. cross-attention
def cross_inputs(p, rng):
    B, H, Lq, Lk, D = p["B"], p["H"], p["Lq"], p["Lk"], p["D"]
    return {"q": randn(rng, (B, Lq, H, D), "float16"), "k": randn(rng, (B, Lk, H, D), "float16"),
            "v": randn(rng, (B, Lk, H, D), "float16")}


def cross_ref(p, x):
    B, H, D = p["B"], p["H"], p["D"]
    scale = 1.0 / math.sqrt(D)

    def head(i):
        b, h = divmod(i, H)
        s = (x["q"][b, :, h] @ x["k"][b, :, h].T) * scale
        return _softmax_rows(s) @ x["v"][b, :, h]
    heads = pmap(head, B * H)
    o = np.stack(heads).reshape(B, H, p["Lq"], D).transpose(0, 2, 1, 3)
    return {"o": np.ascontiguousarray(o)}


def cross_launch(p, a, m):
    B, H, Lq, Lk, D = p["B"], p["H"], p["Lq"], p["Lk"], p["D"]
    assert m["HEAD_DIM"] == D
    return (cdiv(Lq, m["BLOCK_M"]), H, B), [a["q"], a["k"], a["v"], a["o"], 1.0 / math.sqrt(D), Lq, Lk,
                                            Lq * H * D, H * D, Lk * H * D, H * D, D]


# 4a. flash-decoding, the split kernel
def split_chunk(p, block_n):
    return cdiv(cdiv(p["L"], p["splits"]), block_n) * block_n


def decode_inputs(p, rng):
    BH, Lmax, D = p["BH"], p["Lmax"], p["D"]
    return {"q": randn(rng, (BH, D), "float16"), "k": randn(rng, (BH, Lmax, D), "float16"),
            "v": randn(rng, (BH, Lmax, D), "float16")}


def decode_split_ref(p, x):
    BH, L, S, D = p["BH"], p["L"], p["splits"], p["D"]
    chunk = split_chunk(p, p["block_n"])
    scale = 1.0 / math.sqrt(D)

    def head(h):
        s = (x["k"][h, :L] @ x["q"][h]) * scale
        o, lse = np.empty((S, D)), np.empty(S)
        for j in range(S):
            sj = s[j * chunk:min((j + 1) * chunk, L)]
            e = np.exp(sj - sj.max())
            o[j] = e @ x["v"][h, j * chunk:j * chunk + sj.size] / e.sum()
            lse[j] = sj.max() + np.log(e.sum())
        return o, lse
    parts = pmap(head, BH)
    return {"o_part": np.stack([a for a, _ in parts]), "lse_part": np.stack([b for _, b in parts])}


def decode_split_launch(p, a, m):
    assert m["NUM_SPLITS"] == p["splits"] and m["BLOCK_N"] == p["block_n"] and m["HEAD_DIM"] == p["D"]
    assert (p["splits"] - 1) * split_chunk(p, m["BLOCK_N"]) < p["L"] <= p["Lmax"], "an empty split"
    return (p["BH"], p["splits"]), [a["q"], a["k"], a["v"], a["o_part"], a["lse_part"], 1.0 / math.sqrt(p["D"]),
                                    p["L"], p["Lmax"] * p["D"], p["D"]]


# 4b. flash-decoding, the combine kernel
def combine_inputs(p, rng):
    BH, S, D = p["BH"], p["splits"], p["D"]
    # partial outputs are convex combinations of values (|o| ~ 1); log-sum-exps of a few thousand scores
    return {"o_part": randn(rng, (BH, S, D), "float32", 0.5), "lse_part": uniform(rng, (BH, S), 4.0, 12.0)}


def combine_ref(p, x):
    lse = x["lse_part"]
    mx = lse.max(axis=1, keepdims=True)
    w = np.exp(lse - mx)
    tot = w.sum(axis=1, keepdims=True)
    return {"o": np.einsum("bs,bsd->bd", w / tot, x["o_part"]), "lse": (mx + np.log(tot))[:, 0]}


def combine_launch(p, a, m):
    assert m["HEAD_DIM"] == p["D"] and m["BLOCK_S"] >= p["splits"]
    return (p["BH"],), [a["o_part"], a["lse_part"], a["o"], a["lse"], p["splits"]]


# 5. soft-capping
def softcap_ref(p, x):
    L = p["L"]
    scale, cap = 1.0 / math.sqrt(p["D"]), p["softcap"]
    causal = np.tril(np.ones((L, L), bool))

    def head(h):
        s = cap * np.tanh((x["q"][h] @ x["k"][h].T) * scale / cap)
        return _softmax_rows(np.where(causal, s, -np.inf)) @ x["v"][h]
    return {"o": np.stack(pmap(head, p["BH"]))}


def softcap_launch(p, a, m):
    assert m["HEAD_DIM"] == p["D"] and m["BLOCK_M"] % m["BLOCK_N"] == 0
    L, D = p["L"], p["D"]
    return (cdiv(L, m["BLOCK_M"]), p["BH"]), [a["q"], a["k"], a["v"], a["o"], 1.0 / math.sqrt(D), p["softcap"], L,
                                              L * D, D]


# 6. retention
def retention_inputs(p, rng):
    x = bhld_inputs("float16")(p, rng)
    # RetNet's per-head decays gamma_h = 1 - 2^(-5 - h), as logs
    x["log_decay"] = np.log(1.0 - 2.0 ** (-5.0 - np.arange(p["H"]))).astype(np.float32)
    return x


def retention_ref(p, x):
    L, H = p["L"], p["H"]
    scale = 1.0 / math.sqrt(p["D"])
    dist = np.arange(L)[:, None] - np.arange(L)[None, :]

    def head(h):
        lg = x["log_decay"][h % H]
        dec = np.where(dist >= 0, np.exp(np.maximum(dist, 0) * lg), 0.0)
        return ((x["q"][h] @ x["k"][h].T) * scale * dec) @ x["v"][h]
    return {"o": np.stack(pmap(head, p["BH"]))}


def retention_launch(p, a, m):
    assert m["HEAD_DIM"] == p["D"] and p["BH"] % p["H"] == 0
    L, D = p["L"], p["D"]
    return (p["BH"],), [a["q"], a["k"], a["v"], a["o"], a["log_decay"], 1.0 / math.sqrt(D), L, p["H"], L * D, D]


def bhld_out(dt, *extra):
    def out(p):
        o = {"o": ((p["BH"], p["L"], p["D"]), dt)}
        if "lse" in extra:
            o["lse"] = ((p["BH"], p["L"]), "float32")
        return o
    return out


CASES = [
    Case("attn_d256_lse_bf16", attn_fwd_d256_kernel, bhld_inputs("bfloat16"), bhld_out("bfloat16", "lse"), d256_ref,
         d256_launch,
         gpu={"BH": 64, "L": 2048, "D": 256}, ci={"BH": 2, "L": 45, "D": 256},
         meta=attn_meta(256, 64, 32, 4), ci_meta={"HEAD_DIM": 256, **CI_ATTN},
         flops=attn_flops, bytes=lambda p: 2.0 * 4 * p["BH"] * p["L"] * p["D"] + 4.0 * p["BH"] * p["L"],
         idiom="head dim 256 in bf16 through block pointers: K^T as an order=(0, 1) block pointer over (D, L), "
               "boundary_check + padding_option='zero' on the ragged end, tl.advance, exp2 with log2(e) folded "
               "into the scale, natural-log LSE stored beside O"),
    Case("attn_bias_d64", attn_fwd_bias_kernel, bias_inputs, bhld_out("float16"), bias_ref, bias_launch,
         gpu={"BH": 32, "L": 2048, "D": 64}, ci={"BH": 2, "L": 41, "D": 64},
         meta=attn_meta(64, 128, 64, 4, 3), ci_meta={"HEAD_DIM": 64, **CI_ATTN},
         flops=attn_flops,
         bytes=lambda p: 2.0 * 4 * p["BH"] * p["L"] * p["D"] + 2.0 * p["L"] * p["L"],
         idiom="additive fp16 bias [L, L] shared by the heads, a [BLOCK_M, BLOCK_N] tile per key block loaded "
               "with a 2-D mask and walked by pointer increments, scores * scale + bias in base 2, mask-as-bias "
               "(-1e4 entries)"),
    Case("cross_attn_bshd_d128", cross_attn_fwd_kernel, cross_inputs,
         lambda p: {"o": ((p["B"], p["Lq"], p["H"], p["D"]), "float16")}, cross_ref, cross_launch,
         gpu={"B": 4, "H": 16, "Lq": 1000, "Lk": 1537, "D": 128}, ci={"B": 2, "H": 2, "Lq": 23, "Lk": 37, "D": 128},
         meta=attn_meta(128, 128, 64, 8), ci_meta={"HEAD_DIM": 128, **CI_ATTN},
         flops=lambda p: 4.0 * p["B"] * p["H"] * p["Lq"] * p["Lk"] * p["D"],
         bytes=lambda p: 2.0 * p["B"] * p["H"] * p["D"] * (2 * p["Lq"] + 2 * p["Lk"]),
         idiom="cross-attention Lq != Lk (1000 x 1537), both ragged: [B, L, H, D] strides, 3-D grid "
               "(query blocks, heads, batch), masks on queries and keys, natural exp, dot(p.to(v.dtype), v, acc)"),
    Case("decode_split_kv_f16", decode_split_kv_kernel, decode_inputs,
         lambda p: {"o_part": ((p["BH"], p["splits"], p["D"]), "float32"),
                    "lse_part": ((p["BH"], p["splits"]), "float32")},
         decode_split_ref, decode_split_launch,
         gpu={"BH": 64, "Lmax": 16384, "L": 16000, "D": 128, "splits": 16, "block_n": 64},
         ci={"BH": 3, "Lmax": 96, "L": 77, "D": 32, "splits": 3, "block_n": 16},
         meta={"NUM_SPLITS": 16, "HEAD_DIM": 128, "BLOCK_N": 64, "num_warps": 4},
         ci_meta={"NUM_SPLITS": 3, "HEAD_DIM": 32, "BLOCK_N": 16, "num_warps": 2},
         flops=lambda p: 4.0 * p["BH"] * p["L"] * p["D"], bytes=lambda p: 4.0 * p["BH"] * p["L"] * p["D"],
         idiom="flash-decoding split-KV: grid (batch * heads, NUM_SPLITS), each program one block-aligned chunk "
               "of an over-allocated KV cache (runtime range(lo, hi) from tl.cdiv / tl.minimum), one query row: "
               "tl.sum(k * q[None, :], 1), scalar online softmax, partial O and LSE in fp32"),
    Case("decode_combine_f16", decode_combine_kernel, combine_inputs,
         lambda p: {"o": ((p["BH"], p["D"]), "float16"), "lse": ((p["BH"],), "float32")},
         combine_ref, combine_launch,
         gpu={"BH": 8192, "D": 128, "splits": 16}, ci={"BH": 6, "D": 32, "splits": 5},
         meta={"HEAD_DIM": 128, "BLOCK_S": 16, "num_warps": 4}, ci_meta={"HEAD_DIM": 32, "BLOCK_S": 8, "num_warps": 1},
         flops=lambda p: 3.0 * p["BH"] * p["splits"] * p["D"],
         bytes=lambda p: 4.0 * p["BH"] * p["splits"] * (p["D"] + 1) + 2.0 * p["BH"] * p["D"],
         idiom="flash-decoding combine: masked [BLOCK_S] log-sum-exps (other=-inf), weights exp(lse_s - max), "
               "a [BLOCK_S, D] tile of partial outputs reduced over the splits, final LSE"),
    Case("attn_softcap_causal_d128", attn_softcap_causal_kernel, bhld_inputs("float16", q_scale=3.0),
         bhld_out("float16"), softcap_ref, softcap_launch,
         gpu={"BH": 32, "L": 4096, "D": 128, "softcap": 10.0}, ci={"BH": 2, "L": 45, "D": 128, "softcap": 10.0},
         meta=attn_meta(128, 128, 64, 8), ci_meta={"HEAD_DIM": 128, **CI_ATTN},
         flops=lambda p: attn_flops(p, causal=True), bytes=lambda p: 2.0 * 4 * p["BH"] * p["L"] * p["D"],
         idiom="Gemma-2 logit soft-capping: softcap * libdevice.tanh(s / softcap) before the online softmax; "
               "causal as two loops calling one jit helper that returns (acc, l, m): unmasked below the "
               "diagonal, masked (tl.where + masked loads) under a constexpr flag on the diagonal blocks"),
    Case("retention_chunked_d64", retention_chunked_kernel, retention_inputs, bhld_out("float16"), retention_ref,
         retention_launch,
         gpu={"BH": 128, "H": 16, "L": 4096, "D": 64}, ci={"BH": 4, "H": 2, "L": 70, "D": 64},
         meta={"HEAD_DIM": 64, "CHUNK": 64, "num_warps": 4}, ci_meta={"HEAD_DIM": 64, "CHUNK": 16, "num_warps": 1},
        
         flops=lambda p: 4.0 * p["BH"] * p["L"] * p["D"] * (64 + p["D"]),
         bytes=lambda p: 2.0 * 4 * p["BH"] * p["L"] * p["D"],
         idiom="chunked retention: decay matrix tl.where(i >= j, tl.exp((i - j) * log_gamma), 0) per head, "
               "(Q K^T * decay) V in the chunk, Q S * gamma^(i+1) from a loop-carried fp32 [D, D] state cast to "
               "fp16 for the dot, S = dot(trans(K * gamma^(C-1-j)), V, S * gamma^C)"),
]
