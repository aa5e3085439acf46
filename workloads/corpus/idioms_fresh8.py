"""Eight serving and training idioms: causal attention with ALiBi slopes computed per head in the kernel
(2^(-8 (h + 1) / H) by tl.exp2); grouped-query attention over ragged key lengths read from memory, the KV head
picked by `head // group`; sliding-window causal attention with attention-sink tokens (the first SINKS keys always
visible) walking two key ranges; cross-entropy with label smoothing and an ignore_index, the mean over the valid
rows finished by the last program of an atomic ticket; Gumbel-max sampling from logits at a runtime temperature by
tl.rand(seed, offsets), a chunked running argmax; per-head RMSNorm (QK-norm) fused with rotary embedding on
even/odd pairs of Q and K by tl.reshape + tl.split / tl.join; a two-pass online softmax at a runtime temperature
with a key mask where whole rows are masked (zeros, never NaN); and a paged KV-cache append whose slot mapping has
-1 slots (skipped by an early return), the keys in vLLM's [blocks, H, D / X, block_size, X] layout.
"""
import numpy as np
import triton
import triton.language as tl

from workloads.corpus._case import Case, cdiv, philox_uniform, randn, uniform


# --- 1. causal attention with in-kernel ALiBi slopes --------------------------------------------------------------
@triton.jit
def attn_alibi_slope_kernel(Q, K, V, O, sm_scale, L, H, D: tl.constexpr, BLOCK_M: tl.constexpr,
                            BLOCK_N: tl.constexpr):
    # Q, K, V, O [B, H, L, D] fp16; s_ij = q_i . k_j * sm_scale + slope_h * (j - i), j <= i
    pid_m = tl.program_id(0)
    bh = tl.program_id(1)
    h = bh % H
    slope = tl.exp2(-8.0 * (h + 1) / H)
    base = bh.to(tl.int64) * L * D
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.arange(0, BLOCK_N)
    rd = tl.arange(0, D)
    q = tl.load(Q + base + rm[:, None] * D + rd[None, :], mask=rm[:, None] < L, other=0.0)
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, D], dtype=tl.float32)
    LOG2E: tl.constexpr = 1.4426950408889634
    qk_scale = sm_scale * LOG2E
    hi = tl.minimum((pid_m + 1) * BLOCK_M, L)
    for start in range(0, hi, BLOCK_N):
        kn = start + rn
        k = tl.load(K + base + kn[:, None] * D + rd[None, :], mask=kn[:, None] < L, other=0.0)
        v = tl.load(V + base + kn[:, None] * D + rd[None, :], mask=kn[:, None] < L, other=0.0)
        s = tl.dot(q, tl.trans(k)) * qk_scale
        s += (slope * LOG2E) * (kn[None, :] - rm[:, None]).to(tl.float32)
        s = tl.where((kn[None, :] <= rm[:, None]) & (kn[None, :] < L), s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v)
        m_i = m_new
    tl.store(O + base + rm[:, None] * D + rd[None, :], (acc / l_i[:, None]).to(tl.float16), mask=rm[:, None] < L)


# --- 2. grouped-query attention over ragged key lengths ----------------------------------------------------------
@triton.jit
def gqa_ragged_kernel(Q, K, V, O, KLEN, sm_scale, Lq, Lk, GROUP, stride_qb, stride_qh, stride_kb, stride_kh,
                      HQ: tl.constexpr, D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # Q, O [B, HQ, Lq, D]; K, V [B, HQ // GROUP, Lk, D]; batch b sees keys [0, KLEN[b]) (no causal mask)
    pid_m = tl.program_id(0)
    pid_bh = tl.program_id(1)
    b = pid_bh // HQ
    h = pid_bh % HQ
    kvh = h // GROUP
    n_keys = tl.load(KLEN + b)
    q_off = b.to(tl.int64) * stride_qb + h * stride_qh
    kv_off = b.to(tl.int64) * stride_kb + kvh * stride_kh
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.arange(0, BLOCK_N)
    rd = tl.arange(0, D)
    q = tl.load(Q + q_off + rm[:, None] * D + rd[None, :], mask=rm[:, None] < Lq, other=0.0)
    q = (q.to(tl.float32) * (sm_scale * 1.4426950408889634)).to(tl.float16)
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, D], dtype=tl.float32)
    for start in tl.range(0, n_keys, BLOCK_N):
        kn = start + rn
        kmask = kn < n_keys
        kt = tl.load(K + kv_off + kn[None, :] * D + rd[:, None], mask=kmask[None, :], other=0.0)   # [D, BLOCK_N]
        v = tl.load(V + kv_off + kn[:, None] * D + rd[None, :], mask=kmask[:, None], other=0.0)
        s = tl.dot(q, kt)
        s = tl.where(kmask[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        alpha = tl.math.exp2(m_i - m_new)
        p = tl.math.exp2(s - m_new[:, None])
        acc = acc * alpha[:, None]
        acc = tl.dot(p.to(v.dtype), v, acc)
        l_i = l_i * alpha + tl.sum(p, 1)
        m_i = m_new
    out = acc / l_i[:, None]
    tl.store(O + q_off + rm[:, None] * D + rd[None, :], out.to(O.dtype.element_ty), mask=rm[:, None] < Lq)


# --- 3. sliding-window causal attention with attention sinks -----------------------------------------------------
@triton.jit
def swa_sink_kernel(Q, K, V, O, LSE, sm_scale, L, WINDOW, SINKS, D: tl.constexpr, BLOCK_M: tl.constexpr,
                    BLOCK_N: tl.constexpr):
    # key j visible to query i iff j <= i and (i - j < WINDOW or j < SINKS); LSE [BH, L] natural-log logsumexp
    pid_m = tl.program_id(0)
    bh = tl.program_id(1).to(tl.int64)
    base = bh * L * D
    q_lo = pid_m * BLOCK_M
    rm = q_lo + tl.arange(0, BLOCK_M)
    rn = tl.arange(0, BLOCK_N)
    rd = tl.arange(0, D)
    q = tl.load(Q + base + rm[:, None] * D + rd[None, :], mask=rm[:, None] < L, other=0.0)
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, D], dtype=tl.float32)
    sink_end = tl.minimum(tl.cdiv(SINKS, BLOCK_N) * BLOCK_N, L)
    hi = tl.minimum(q_lo + BLOCK_M, L)
    win_lo = tl.maximum(q_lo - WINDOW + 1, 0) // BLOCK_N * BLOCK_N
    win_lo = tl.maximum(win_lo, sink_end)
    for phase in tl.static_range(2):
        if phase == 0:
            lo_ = 0
            hi_ = tl.minimum(sink_end, hi)
        else:
            lo_ = win_lo
            hi_ = hi
        for start in range(lo_, hi_, BLOCK_N):
            kn = start + rn
            k = tl.load(K + base + kn[:, None] * D + rd[None, :], mask=kn[:, None] < L, other=0.0)
            v = tl.load(V + base + kn[:, None] * D + rd[None, :], mask=kn[:, None] < L, other=0.0)
            s = tl.dot(q, tl.trans(k)) * sm_scale
            causal = kn[None, :] <= rm[:, None]
            vis = causal & ((rm[:, None] - kn[None, :] < WINDOW) | (kn[None, :] < SINKS)) & (kn[None, :] < L)
            s = tl.where(vis, s, float("-inf"))
            m_new = tl.maximum(m_i, tl.max(s, axis=1))
            alpha = tl.exp(m_i - m_new)
            p = tl.exp(s - m_new[:, None])
            l_i = l_i * alpha + tl.sum(p, axis=1)
            acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v)
            m_i = m_new
    tl.store(O + base + rm[:, None] * D + rd[None, :], (acc / l_i[:, None]).to(tl.float16), mask=rm[:, None] < L)
    tl.store(LSE + bh * L + rm, m_i + tl.log(l_i), mask=rm < L)


# --- 4. cross-entropy: label smoothing, ignore_index, mean over valid rows by an atomic ticket --------------------
@triton.jit
def ce_smooth_ticket_kernel(X, Y, LOSS, SUMS, TICKET, MEAN, R, V, stride_x, eps, ignore_index,
                            BLOCK_V: tl.constexpr):
    # loss_r = (1 - eps) (lse - x_y) + eps (lse - mean_v x), 0 where y == ignore_index; MEAN = sum / #valid,
    # written by whichever program takes the last ticket
    row = tl.program_id(0)
    y = tl.load(Y + row)
    xr = X + row.to(tl.int64) * stride_x
    cols = tl.arange(0, BLOCK_V)
    m = tl.full([BLOCK_V], float("-inf"), tl.float32)
    s = tl.zeros([BLOCK_V], dtype=tl.float32)
    tot = tl.zeros([BLOCK_V], dtype=tl.float32)
    xy = 0.0
    for v0 in range(0, V, BLOCK_V):
        c = v0 + cols
        x = tl.load(xr + c, mask=c < V, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, x)
        s = s * tl.exp(tl.where(m_new == float("-inf"), 0.0, m - m_new)) + \
            tl.where(c < V, tl.exp(x - m_new), 0.0)
        m = m_new
        tot += tl.where(c < V, x, 0.0)
        xy += tl.sum(tl.where(c == y, x, 0.0))
    mx = tl.max(m, axis=0)
    lse = mx + tl.log(tl.sum(s * tl.exp(m - mx), axis=0))
    loss = (1.0 - eps) * (lse - xy) + eps * (lse - tl.sum(tot, axis=0) / V)
    valid = y != ignore_index
    loss = tl.where(valid, loss, 0.0)
    tl.store(LOSS + row, loss)
    tl.atomic_add(SUMS, loss)
    tl.atomic_add(SUMS + 1, valid.to(tl.float32))
    t = tl.atomic_add(TICKET, 1)
    if t == tl.num_programs(0) - 1:
        total = tl.atomic_add(SUMS, 0.0)
        n = tl.atomic_add(SUMS + 1, 0.0)
        tl.store(MEAN, tl.where(n > 0, total / tl.maximum(n, 1.0), 0.0))


# --- 5. Gumbel-max sampling -----------------------------------------------------------------------------------------
@triton.jit
def gumbel_sample_kernel(LOGITS, TEMP, OUT_IDX, OUT_VAL, V, seed, BLOCK_V: tl.constexpr):
    # idx_r = argmax_v (logits / T_r - log(-log u)), u = tl.rand(seed, r * V + v); T_r = 0 means greedy
    row = tl.program_id(0)
    t = tl.load(TEMP + row)
    greedy = t == 0.0
    inv_t = 1.0 / tl.where(greedy, 1.0, t)
    cols = tl.arange(0, BLOCK_V)
    best = tl.full([1], float("-inf"), tl.float32)
    best_i = tl.zeros([1], dtype=tl.int32)
    for v0 in range(0, V, BLOCK_V):
        c = v0 + cols
        ok = c < V
        x = tl.load(LOGITS + row.to(tl.int64) * V + c, mask=ok, other=float("-inf")).to(tl.float32)
        u = tl.rand(seed, row * V + c)
        g = -tl.log(-tl.log(u))
        z = tl.where(greedy, x, x * inv_t + g)
        z = tl.where(ok, z, float("-inf"))
        cm, ci = tl.max(z, axis=0, return_indices=True)
        take = cm > best
        best_i = tl.where(take, ci + v0, best_i)
        best = tl.where(take, cm, best)
    tl.store(OUT_IDX + row + tl.arange(0, 1), best_i)
    tl.store(OUT_VAL + row + tl.arange(0, 1), best)


# --- 6. QK-norm (per-head RMSNorm) fused with rotary embedding on even/odd pairs ------------------------------------
@triton.jit
def _rms_rope(x, w, cos, sin, eps, D: tl.constexpr):
    # x [H, D] fp32, w [D]; cos / sin [D // 2]: pairs (x[2i], x[2i + 1]) rotated by angle i
    var = tl.sum(x * x, axis=1) / D
    xn = x * tl.rsqrt(var + eps)[:, None] * w[None, :]
    H: tl.constexpr = x.shape[0]
    xe, xo = tl.split(tl.reshape(xn, [H, D // 2, 2]))
    re = xe * cos[None, :] - xo * sin[None, :]
    ro = xe * sin[None, :] + xo * cos[None, :]
    return tl.reshape(tl.join(re, ro), [H, D])


@triton.jit
def qknorm_rope_kernel(QKV, POS, WQ, WK, INV_FREQ, QO, KO, eps, HQ: tl.constexpr, HK: tl.constexpr,
                       D: tl.constexpr):
    # QKV [T, (HQ + 2 HK) D] bf16 packed per token (Q heads, K heads, V heads); QO [T, HQ, D], KO [T, HK, D]
    tok = tl.program_id(0).to(tl.int64)
    pos = tl.load(POS + tok).to(tl.float32)
    rd = tl.arange(0, D)
    ang = pos * tl.load(INV_FREQ + tl.arange(0, D // 2))
    cos = tl.cos(ang)
    sin = tl.sin(ang)
    row = QKV + tok * ((HQ + 2 * HK) * D)
    hq = tl.arange(0, HQ)
    q = tl.load(row + hq[:, None] * D + rd[None, :]).to(tl.float32)
    q = _rms_rope(q, tl.load(WQ + rd).to(tl.float32), cos, sin, eps, D)
    tl.store(QO + tok * HQ * D + hq[:, None] * D + rd[None, :], q.to(tl.bfloat16))
    hk = tl.arange(0, HK)
    k = tl.load(row + HQ * D + hk[:, None] * D + rd[None, :]).to(tl.float32)
    k = _rms_rope(k, tl.load(WK + rd).to(tl.float32), cos, sin, eps, D)
    tl.store(KO + tok * HK * D + hk[:, None] * D + rd[None, :], k.to(tl.bfloat16))


# --- 7. masked online softmax at a runtime temperature, all-masked rows give zeros ---------------------------------
@triton.jit
def softmax_temp_masked_kernel(X, KEEP, Y, R, C, temperature, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    r_ok = rows < R
    cols = tl.arange(0, BLOCK_C)
    inv_t = 1.0 / temperature
    m = tl.full([BLOCK_R], float("-inf"), tl.float32)
    l = tl.zeros([BLOCK_R], dtype=tl.float32)
    for c0 in range(0, C, BLOCK_C):
        c = c0 + cols
        ok = r_ok[:, None] & (c[None, :] < C)
        keep = tl.load(KEEP + rows[:, None] * C + c[None, :], mask=ok, other=0) != 0
        x = tl.load(X + rows[:, None] * C + c[None, :], mask=ok, other=0.0).to(tl.float32) * inv_t
        x = tl.where(keep, x, float("-inf"))
        m_new = tl.maximum(m, tl.max(x, axis=1))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        l = l * tl.exp(m - m_safe) + tl.sum(tl.exp(x - m_safe[:, None]), axis=1)
        m = m_new
    m_safe = tl.where(m == float("-inf"), 0.0, m)
    inv_l = tl.where(l > 0, 1.0 / l, 0.0)
    for c0 in range(0, C, BLOCK_C):
        c = c0 + cols
        ok = r_ok[:, None] & (c[None, :] < C)
        keep = tl.load(KEEP + rows[:, None] * C + c[None, :], mask=ok, other=0) != 0
        x = tl.load(X + rows[:, None] * C + c[None, :], mask=ok, other=0.0).to(tl.float32) * inv_t
        p = tl.where(keep, tl.exp(x - m_safe[:, None]) * inv_l[:, None], 0.0)
        tl.store(Y + rows[:, None] * C + c[None, :], p.to(Y.dtype.element_ty), mask=ok)


# --- 8. paged KV-cache append with a slot mapping (-1: skip) --------------------------------------------------------
@triton.jit
def kv_append_slots_kernel(KEY, VALUE, SLOTS, KCACHE, VCACHE, H, BLOCK_SIZE, D: tl.constexpr, X: tl.constexpr,
                           BLOCK_H: tl.constexpr):
    # KEY, VALUE [T, H, D]; KCACHE [NB, H, D // X, BLOCK_SIZE, X]; VCACHE [NB, H, D, BLOCK_SIZE]
    tok = tl.program_id(0)
    slot = tl.load(SLOTS + tok).to(tl.int64)
    if slot < 0:
        return
    blk = slot // BLOCK_SIZE
    off = slot % BLOCK_SIZE
    rh = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
    rd = tl.arange(0, D)
    h_ok = rh[:, None] < H
    src = tok.to(tl.int64) * H * D + rh[:, None] * D + rd[None, :]
    k = tl.load(KEY + src, mask=h_ok)
    v = tl.load(VALUE + src, mask=h_ok)
    kdst = (((blk * H + rh[:, None]) * (D // X) + rd[None, :] // X) * BLOCK_SIZE + off) * X + rd[None, :] % X
    tl.store(KCACHE + kdst, k, mask=h_ok)
    vdst = ((blk * H + rh[:, None]) * D + rd[None, :]) * BLOCK_SIZE + off
    tl.store(VCACHE + vdst, v, mask=h_ok)


# ======================================= cases =====================================================================
def _softmax_rows(s):
    m = s.max(axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.exp(s - m)
    return e / e.sum(axis=-1, keepdims=True)


# 1. ALiBi
def al_inputs(p, rng):
    B, H, L, D = p["B"], p["H"], p["L"], p["D"]
    return {k: randn(rng, (B, H, L, D), "float16") for k in ("q", "k", "v")}


def al_ref(p, x):
    B, H, L, D = p["B"], p["H"], p["L"], p["D"]
    s = np.einsum("bhid,bhjd->bhij", x["q"], x["k"]) / np.sqrt(D)
    slopes = 2.0 ** (-8.0 * (np.arange(H) + 1) / H)
    i, j = np.arange(L)[:, None], np.arange(L)[None, :]
    s = s + slopes[None, :, None, None] * (j - i)[None, None]
    s = np.where(j <= i, s, -np.inf)
    return {"o": np.einsum("bhij,bhjd->bhid", _softmax_rows(s), x["v"])}


def al_launch(p, a, m):
    B, H, L, D = p["B"], p["H"], p["L"], p["D"]
    assert m["D"] == D
    return (cdiv(L, m["BLOCK_M"]), B * H), [a["q"], a["k"], a["v"], a["o"], 1.0 / np.sqrt(D), L, H]


# 2. GQA
def gq_inputs(p, rng):
    B, HQ, HK, Lq, Lk, D = p["B"], p["HQ"], p["HK"], p["Lq"], p["Lk"], p["D"]
    klen = rng.integers(1, Lk + 1, B).astype(np.int32)
    klen[0] = Lk
    return {"q": randn(rng, (B, HQ, Lq, D), "float16"), "k": randn(rng, (B, HK, Lk, D), "float16"),
            "v": randn(rng, (B, HK, Lk, D), "float16"), "klen": klen}


def gq_ref(p, x):
    B, HQ, HK, Lq, D = p["B"], p["HQ"], p["HK"], p["Lq"], p["D"]
    g = HQ // HK
    o = np.zeros((B, HQ, Lq, D))
    for b in range(B):
        n = int(x["klen"][b])
        for h in range(HQ):
            s = x["q"][b, h] @ x["k"][b, h // g, :n].T / np.sqrt(D)
            o[b, h] = _softmax_rows(s) @ x["v"][b, h // g, :n]
    return {"o": o}


def gq_launch(p, a, m):
    B, HQ, HK, Lq, Lk, D = p["B"], p["HQ"], p["HK"], p["Lq"], p["Lk"], p["D"]
    assert m["HQ"] == HQ and m["D"] == D
    return (cdiv(Lq, m["BLOCK_M"]), B * HQ), [a["q"], a["k"], a["v"], a["o"], a["klen"], 1.0 / np.sqrt(D), Lq, Lk,
                                              HQ // HK, HQ * Lq * D, Lq * D, HK * Lk * D, Lk * D]


# 3. sliding window + sinks
def sw_inputs(p, rng):
    BH, L, D = p["BH"], p["L"], p["D"]
    return {k: randn(rng, (BH, L, D), "float16") for k in ("q", "k", "v")}


def sw_ref(p, x):
    L, D, W, S = p["L"], p["D"], p["WINDOW"], p["SINKS"]
    s = np.einsum("bid,bjd->bij", x["q"], x["k"]) / np.sqrt(D)
    i, j = np.arange(L)[:, None], np.arange(L)[None, :]
    vis = (j <= i) & ((i - j < W) | (j < S))
    s = np.where(vis[None], s, -np.inf)
    m = s.max(axis=-1, keepdims=True)
    lse = (m + np.log(np.exp(s - m).sum(-1, keepdims=True)))[..., 0]
    return {"o": np.einsum("bij,bjd->bid", _softmax_rows(s), x["v"]), "lse": lse}


def sw_launch(p, a, m):
    BH, L, D = p["BH"], p["L"], p["D"]
    return (cdiv(L, m["BLOCK_M"]), BH), [a["q"], a["k"], a["v"], a["o"], a["lse"], 1.0 / np.sqrt(D), L,
                                         p["WINDOW"], p["SINKS"]]


# 4. CE with smoothing
def ce_inputs(p, rng):
    R, V = p["R"], p["V"]
    y = rng.integers(0, V, R).astype(np.int64)
    y[rng.random(R) < 0.3] = -100
    y[0] = 3
    return {"x": randn(rng, (R, V), "bfloat16", scale=3.0), "y": y}


def ce_ref(p, x):
    R, V, eps = p["R"], p["V"], p["eps"]
    xx = x["x"]
    y = x["y"].astype(np.int64)
    m = xx.max(axis=1)
    lse = m + np.log(np.exp(xx - m[:, None]).sum(axis=1))
    valid = y != -100
    xy = xx[np.arange(R), np.where(valid, y, 0)]
    loss = (1 - eps) * (lse - xy) + eps * (lse - xx.mean(axis=1))
    loss = np.where(valid, loss, 0.0)
    return {"loss": loss, "mean": np.array([loss.sum() / valid.sum()])}


def ce_launch(p, a, m):
    R, V = p["R"], p["V"]
    return (R,), [a["x"], a["y"], a["loss"], a["sums"], a["ticket"], a["mean"], R, V, V, p["eps"], -100]


# 5. Gumbel-max
def gs_inputs(p, rng):
    R, V = p["R"], p["V"]
    t = uniform(rng, (R,), 0.3, 1.5)
    t[1::4] = 0.0
    return {"logits": randn(rng, (R, V), "float16", scale=2.0), "temp": t}


def gs_ref(p, x):
    R, V = p["R"], p["V"]
    u = philox_uniform(p["seed"], np.arange(R * V)).reshape(R, V).astype(np.float64)
    with np.errstate(divide="ignore"):
        g = -np.log(-np.log(u))
    t = x["temp"][:, None]
    z = np.where(t == 0, x["logits"], x["logits"] / np.where(t == 0, 1, t) + g)
    return {"idx": z.argmax(axis=1), "val": z.max(axis=1)}


def gs_launch(p, a, m):
    R, V = p["R"], p["V"]
    return (R,), [a["logits"], a["temp"], a["idx"], a["val"], V, p["seed"]]


# 6. QK-norm + RoPE
def qr_inputs(p, rng):
    T, HQ, HK, D = p["T"], p["HQ"], p["HK"], p["D"]
    return {"qkv": randn(rng, (T, (HQ + 2 * HK) * D), "bfloat16"),
            "pos": rng.integers(0, 4096, T).astype(np.int32),
            "wq": uniform(rng, (D,), 0.5, 1.5, "bfloat16"), "wk": uniform(rng, (D,), 0.5, 1.5, "bfloat16"),
            "inv_freq": (10000.0 ** (-np.arange(0, D, 2) / D)).astype(np.float32)}


def qr_ref(p, x):
    T, HQ, HK, D, eps = p["T"], p["HQ"], p["HK"], p["D"], p["eps"]
    ang = x["pos"][:, None] * x["inv_freq"].astype(np.float32).astype(np.float64)[None, :]  # [T, D/2]
    ang = (x["pos"][:, None].astype(np.float32) * x["inv_freq"][None, :].astype(np.float32)).astype(np.float64)
    c, s = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]

    def f(v, w):
        v = v / np.sqrt((v * v).mean(-1, keepdims=True) + eps) * w
        e, o = v[..., 0::2], v[..., 1::2]
        out = np.empty_like(v)
        out[..., 0::2] = e * c - o * s
        out[..., 1::2] = e * s + o * c
        return out

    qkv = x["qkv"].reshape(T, HQ + 2 * HK, D)
    return {"qo": f(qkv[:, :HQ], x["wq"]), "ko": f(qkv[:, HQ:HQ + HK], x["wk"])}


def qr_launch(p, a, m):
    assert (m["HQ"], m["HK"], m["D"]) == (p["HQ"], p["HK"], p["D"])
    return (p["T"],), [a["qkv"], a["pos"], a["wq"], a["wk"], a["inv_freq"], a["qo"], a["ko"], p["eps"]]


# 7. masked softmax with temperature
def sm_inputs(p, rng):
    R, C = p["R"], p["C"]
    keep = (rng.random((R, C)) < 0.7).astype(np.int8)
    keep[2::5] = 0
    keep[0, 0] = 1
    return {"x": randn(rng, (R, C), "float16", scale=4.0), "keep": keep}


def sm_ref(p, x):
    s = np.where(x["keep"] != 0, x["x"] / p["temp"], -np.inf)
    y = _softmax_rows(s)
    return {"y": np.where(np.isnan(y), 0.0, y)}


def sm_launch(p, a, m):
    R, C = p["R"], p["C"]
    return (cdiv(R, m["BLOCK_R"]),), [a["x"], a["keep"], a["y"], R, C, p["temp"]]


# 8. KV append
def kv_inputs(p, rng):
    T, H, D, NB, BS = p["T"], p["H"], p["D"], p["NB"], p["BS"]
    slots = rng.permutation(NB * BS)[:T].astype(np.int64)
    slots[rng.random(T) < 0.25] = -1
    slots[0] = 5
    return {"key": randn(rng, (T, H, D), "float16"), "value": randn(rng, (T, H, D), "float16"), "slots": slots}


def kv_ref(p, x):
    T, H, D, NB, BS, X = p["T"], p["H"], p["D"], p["NB"], p["BS"], p["X"]
    kc = np.zeros((NB, H, D // X, BS, X))
    vc = np.zeros((NB, H, D, BS))
    for t in range(T):
        s = int(x["slots"][t])
        if s < 0:
            continue
        b, o = divmod(s, BS)
        kc[b, :, :, o, :] = x["key"][t].reshape(H, D // X, X)
        vc[b, :, :, o] = x["value"][t]
    return {"kcache": kc, "vcache": vc}


def kv_launch(p, a, m):
    T, H, D, BS = p["T"], p["H"], p["D"], p["BS"]
    assert (m["D"], m["X"]) == (D, p["X"])
    return (T, cdiv(H, m["BLOCK_H"])), [a["key"], a["value"], a["slots"], a["kcache"], a["vcache"], H, BS]


CASES = [
    Case("attn_alibi_inkernel_slopes_f16", attn_alibi_slope_kernel, al_inputs,
         lambda p: {"o": ((p["B"], p["H"], p["L"], p["D"]), "float16")}, al_ref, al_launch,
         gpu={"B": 4, "H": 16, "L": 2048, "D": 64}, ci={"B": 1, "H": 4, "L": 70, "D": 32},
         meta={"D": 64, "BLOCK_M": 128, "BLOCK_N": 64, "num_warps": 8, "num_stages": 2},
         ci_meta={"D": 32, "BLOCK_M": 32, "BLOCK_N": 16, "num_warps": 4},
         tol={"float16": (1e-2, 3e-3)},
         flops=lambda p: 2.0 * p["B"] * p["H"] * p["L"] * p["L"] * p["D"],
         bytes=lambda p: 8.0 * p["B"] * p["H"] * p["L"] * p["D"],
         idiom="causal flash attention with ALiBi: the head's slope 2^(-8 (h + 1) / H) computed in the kernel by "
               "tl.exp2 of a float expression of program ids, the bias slope * (j - i) folded into the log2-domain "
               "scores, exp2 online softmax"),
    Case("attn_gqa_ragged_klen_f16", gqa_ragged_kernel, gq_inputs,
         lambda p: {"o": ((p["B"], p["HQ"], p["Lq"], p["D"]), "float16")}, gq_ref, gq_launch,
         gpu={"B": 8, "HQ": 32, "HK": 8, "Lq": 1024, "Lk": 2048, "D": 128},
         ci={"B": 3, "HQ": 6, "HK": 2, "Lq": 20, "Lk": 45, "D": 32},
         meta={"HQ": 32, "D": 128, "BLOCK_M": 128, "BLOCK_N": 64, "num_warps": 8, "num_stages": 2},
         ci_meta={"HQ": 6, "D": 32, "BLOCK_M": 16, "BLOCK_N": 16, "num_warps": 4},
         tol={"float16": (1e-2, 3e-3)},
         flops=lambda p: 4.0 * p["B"] * p["HQ"] * p["Lq"] * p["Lk"] * p["D"],
         bytes=lambda p: 2.0 * p["B"] * p["D"] * (2 * p["HQ"] * p["Lq"] + 2 * p["HK"] * p["Lk"]),
         idiom="grouped-query attention: the KV head h // GROUP (GROUP a runtime int), batch and head offsets from "
               "runtime strides, the key loop bound loaded per batch from memory (tl.range), K loaded transposed "
               "by its pointer arithmetic, q pre-scaled in fp32 and cast back, tl.dot(p, v, acc)"),
    Case("attn_swa_sinks_lse_f16", swa_sink_kernel, sw_inputs,
         lambda p: {"o": ((p["BH"], p["L"], p["D"]), "float16"), "lse": ((p["BH"], p["L"]), "float32")}, sw_ref,
         sw_launch,
         gpu={"BH": 64, "L": 4096, "D": 64, "WINDOW": 512, "SINKS": 4},
         ci={"BH": 2, "L": 90, "D": 32, "WINDOW": 20, "SINKS": 3},
         meta={"D": 64, "BLOCK_M": 128, "BLOCK_N": 64, "num_warps": 8},
         ci_meta={"D": 32, "BLOCK_M": 16, "BLOCK_N": 16, "num_warps": 4},
         tol={"float16": (1e-2, 3e-3), "float32": (1e-3, 1e-4)},
         flops=lambda p: 4.0 * p["BH"] * p["L"] * (p["WINDOW"] + p["SINKS"]) * p["D"],
         bytes=lambda p: 8.0 * p["BH"] * p["L"] * p["D"],
         idiom="sliding-window causal attention with attention sinks: two key ranges (the sink blocks, then the "
               "window's blocks from a block-aligned tl.maximum) chosen in a tl.static_range(2) phase loop by an "
               "`if` on the constexpr phase, visibility (i - j < W) | (j < S) masks, natural-log LSE out"),
    Case("ce_smooth_ignore_ticket_mean_bf16", ce_smooth_ticket_kernel, ce_inputs,
         lambda p: {"loss": ((p["R"],), "float32"), "sums": ((2,), "float32"), "ticket": ((1,), "int32"),
                    "mean": ((1,), "float32")}, ce_ref, ce_launch,
         gpu={"R": 8192, "V": 32000, "eps": 0.1}, ci={"R": 23, "V": 1000, "eps": 0.1},
         meta={"BLOCK_V": 4096, "num_warps": 8}, ci_meta={"BLOCK_V": 256, "num_warps": 4},
         zero=("sums", "ticket"), tol={"float32": (1e-4, 1e-5)},
         flops=lambda p: 6.0 * p["R"] * p["V"], bytes=lambda p: 2.0 * p["R"] * p["V"],
         idiom="cross-entropy with label smoothing (eps / V spread) and ignore_index = -100 on int64 labels: a "
               "chunked lane-wise online logsumexp guarded against -inf - -inf, the target logit gathered by "
               "tl.where(c == y), float atomics of the loss sum and valid count, an atomic ticket whose last "
               "holder reads the sums by atomic_add(ptr, 0.0) and writes the mean"),
    Case("gumbel_max_sample_temp_f16", gumbel_sample_kernel, gs_inputs,
         lambda p: {"idx": ((p["R"],), "int32"), "val": ((p["R"],), "float32")}, gs_ref, gs_launch,
         gpu={"R": 256, "V": 128256, "seed": 1234}, ci={"R": 12, "V": 700, "seed": 1234},
         meta={"BLOCK_V": 4096, "num_warps": 8}, ci_meta={"BLOCK_V": 256, "num_warps": 4},
         tol={"float32": (1e-5, 1e-6)},
         flops=lambda p: 20.0 * p["R"] * p["V"], bytes=lambda p: 2.0 * p["R"] * p["V"],
         idiom="Gumbel-max sampling: logits / T_r - log(-log(tl.rand(seed, r * V + v))) with T_r = 0 rows greedy, "
               "a chunked running argmax by tl.max(..., return_indices=True) carried as [1] tensors, stored by "
               "ptr + tl.arange(0, 1)"),
    Case("qknorm_rope_evenodd_bf16", qknorm_rope_kernel, qr_inputs,
         lambda p: {"qo": ((p["T"], p["HQ"], p["D"]), "bfloat16"), "ko": ((p["T"], p["HK"], p["D"]), "bfloat16")},
         qr_ref, qr_launch,
         gpu={"T": 16384, "HQ": 32, "HK": 8, "D": 128, "eps": 1e-6}, ci={"T": 9, "HQ": 8, "HK": 2, "D": 64,
                                                                          "eps": 1e-6},
         meta={"HQ": 32, "HK": 8, "D": 128, "num_warps": 4}, ci_meta={"HQ": 8, "HK": 2, "D": 64, "num_warps": 4},
         tol={"bfloat16": (2e-2, 1e-2)},
         flops=lambda p: 10.0 * p["T"] * (p["HQ"] + p["HK"]) * p["D"],
         bytes=lambda p: 4.0 * p["T"] * (p["HQ"] + 2 * p["HK"]) * p["D"],
         idiom="QK-norm + RoPE in one kernel: packed QKV rows, per-head RMSNorm of [H, D] tiles by a @triton.jit "
               "helper reading its head count from x.shape[0] as a constexpr, rotation of (even, odd) pairs by "
               "tl.split(tl.reshape(x, [H, D / 2, 2])) and tl.join back, angles pos * inv_freq with tl.cos / tl.sin"),
    Case("softmax_temp_allmasked_rows_f16", softmax_temp_masked_kernel, sm_inputs,
         lambda p: {"y": ((p["R"], p["C"]), "float16")}, sm_ref, sm_launch,
         gpu={"R": 16384, "C": 4096, "temp": 0.7}, ci={"R": 13, "C": 300, "temp": 0.7},
         meta={"BLOCK_R": 4, "BLOCK_C": 1024, "num_warps": 8}, ci_meta={"BLOCK_R": 4, "BLOCK_C": 128,
                                                                         "num_warps": 4},
         flops=lambda p: 8.0 * p["R"] * p["C"], bytes=lambda p: 5.0 * p["R"] * p["C"],
         idiom="two-pass online softmax over column chunks at a runtime temperature with an int8 keep mask, rows "
               "wholly masked (-inf everywhere) kept finite by m_safe = where(m == -inf, 0, m) and 1 / l guarded "
               "to 0: zeros, never NaN"),
    Case("kv_append_slotmap_vllm_layout_f16", kv_append_slots_kernel, kv_inputs,
         lambda p: {"kcache": ((p["NB"], p["H"], p["D"] // p["X"], p["BS"], p["X"]), "float16"),
                    "vcache": ((p["NB"], p["H"], p["D"], p["BS"]), "float16")}, kv_ref, kv_launch,
         gpu={"T": 8192, "H": 8, "D": 128, "NB": 1024, "BS": 16, "X": 8},
         ci={"T": 21, "H": 3, "D": 64, "NB": 6, "BS": 16, "X": 8},
         meta={"D": 128, "X": 8, "BLOCK_H": 8, "num_warps": 4}, ci_meta={"D": 64, "X": 8, "BLOCK_H": 2,
                                                                          "num_warps": 2},
         zero=("kcache", "vcache"),
         bytes=lambda p: 8.0 * p["T"] * p["H"] * p["D"],
         idiom="paged KV-cache append (vLLM reshape_and_cache): the slot read per token as int64, -1 slots skipped "
               "by an early scalar `return`, keys scattered into the [blocks, H, D / X, block_size, X] layout by "
               "// and % of the head dim, values into [blocks, H, D, block_size]"),
]
