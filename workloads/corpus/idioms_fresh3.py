"""Ten idioms the corpus lacked, each asking something different of a compiler: vLLM's fused mixture-of-experts GEMM,
tokens sorted by expert with padding ids past the valid count, A rows gathered by token // top_k, the expert of each
M block loaded from an array and offsetting an [E, N, K] weight read transposed by its strides, the routed weight
multiplied in the epilogue under a constexpr flag; block-sparse attention, an int8 [heads, query blocks, key blocks]
layout loaded in the key loop and a scalar `if` around the two dots and the online-softmax update; forward
substitution of many small lower-triangular systems, a runtime `for i in range(n)` whose step extracts the
diagonal and the right-hand side by tl.where(cols == i) + tl.sum and writes x_i back by a where (a loop-carried
dependence through reductions), a constexpr unit-diagonal branch; a Monarch matrix (two block-diagonal factors with
the stride permutation between them) as two batched 3-D tl.dot with a tl.permute of the [blocks, rows, block]
intermediate; the gated delta rule recurrence (Gated DeltaNet), an fp32 [DK, BLOCK_V] state decayed by exp(g),
corrected by the outer product k (beta (v - k^T S)) and read by q^T S, q and k L2-normalized in the kernel under a
constexpr; SmoothQuant W8A8 with dynamic per-token activation quantization fused into the GEMM's prologue, a first
K loop for the row absmax of the smoothed activations and a second that quantizes (round half away from zero) into
an int8 x int8 -> int32 tl.dot against a [N, K] int8 weight read transposed, per-token x per-channel dequant + bias;
a jagged LayerNorm, one program per variable-length row of int64 offsets, three runtime loops (mean, centred
variance, normalize) over int64 bounds, empty rows; a column argmax with the first index by tl.reduce over a
(value, index) tuple with a user combine function, the same @triton.jit function merging the chunk results; suffix
sums of bfloat16 rows by tl.flip + tl.cumsum + tl.flip per chunk, the chunks walked from the end by a negative-step
range with a carried total; and a direct (not im2col) NCHW 2-D convolution, three nested runtime loops over input
channels and kernel taps, [BLOCK_OC] weights times [BLOCK_P] shifted pixels as outer products into an fp32 tile.
"""
import numpy as np
import triton
import triton.language as tl

from workloads.corpus._case import Case, cdiv, pmap, randn, uniform


# --- 1. fused MoE GEMM (vLLM style) ---------------------------------------------------------------------------------
@triton.jit
def fused_moe_kernel(A, B, C, TOPK_WEIGHTS, SORTED_TOKEN_IDS, EXPERT_IDS, NUM_TOKENS_POST_PADDED, N, K, EM,
                     num_valid_tokens, stride_am, stride_be, stride_bn, stride_bk, stride_cm,
                     MUL_ROUTED_WEIGHT: tl.constexpr, TOP_K: tl.constexpr, BLOCK_M: tl.constexpr,
                     BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    # the (token, slot) pairs sorted by expert, each expert's run padded to a multiple of BLOCK_M with the id
    # num_valid_tokens; EXPERT_IDS holds the expert of every M block. Pair id t * TOP_K + j reads A row t and writes
    # C row t * TOP_K + j. B is [E, N, K]: read as [K, N] tiles through its strides. Grouped program order.
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(EM, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    group = pid // (GROUP_M * num_pid_n)
    first_m = group * GROUP_M
    group_m = min(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % (GROUP_M * num_pid_n)) % group_m
    pid_n = (pid % (GROUP_M * num_pid_n)) // group_m
    num_tokens_post_padded = tl.load(NUM_TOKENS_POST_PADDED)
    if pid_m * BLOCK_M >= num_tokens_post_padded:
        return
    offs_pair = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    pair = tl.load(SORTED_TOKEN_IDS + offs_pair)
    valid = pair < num_valid_tokens
    expert = tl.load(EXPERT_IDS + pid_m).to(tl.int64)
    offs_n = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = A + (pair[:, None] // TOP_K) * stride_am + offs_k[None, :]
    b_ptrs = B + expert * stride_be + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=valid[:, None] & (offs_k[None, :] < k_left), other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < k_left, other=0.0)
        acc += tl.dot(a, b)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * stride_bk
    if MUL_ROUTED_WEIGHT:
        w = tl.load(TOPK_WEIGHTS + pair, mask=valid, other=0.0)
        acc = acc * w[:, None]
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = C + pair[:, None].to(tl.int64) * stride_cm + offs_cn[None, :]
    tl.store(c_ptrs, acc.to(C.dtype.element_ty), mask=valid[:, None] & (offs_cn[None, :] < N))


# --- 2. block-sparse attention forward --------------------------------------------------------------------------------
@triton.jit
def blocksparse_attn_kernel(Q, K, V, O, LAYOUT, sm_scale, L, H, n_blocks, stride_b, stride_h, stride_l,
                            HEAD_DIM: tl.constexpr, BLOCK: tl.constexpr):
    # grid (query blocks, batch * heads); LAYOUT [H, n_blocks, n_blocks] int8: key block kb is attended by query
    # block qb of head h when layout[h, qb, kb] != 0 (the diagonal always is). Non-causal; L need not be a multiple
    # of BLOCK. Online softmax in base 2, updated only inside the `if`.
    qb = tl.program_id(0)
    bh = tl.program_id(1)
    h = bh % H
    base = (bh // H).to(tl.int64) * stride_b + h.to(tl.int64) * stride_h
    rm = qb * BLOCK + tl.arange(0, BLOCK)
    rn = tl.arange(0, BLOCK)
    rd = tl.arange(0, HEAD_DIM)
    q = tl.load(Q + base + rm[:, None] * stride_l + rd[None, :], mask=rm[:, None] < L, other=0.0)
    layout_row = LAYOUT + (h * n_blocks + qb) * n_blocks
    qk_scale = sm_scale * 1.4426950408889634
    m_i = tl.full([BLOCK], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK], dtype=tl.float32)
    acc = tl.zeros([BLOCK, HEAD_DIM], dtype=tl.float32)
    for kb in range(0, n_blocks):
        active = tl.load(layout_row + kb)
        if active != 0:
            cols = kb * BLOCK + rn
            k = tl.load(K + base + cols[None, :] * stride_l + rd[:, None], mask=cols[None, :] < L, other=0.0)
            s = tl.dot(q, k) * qk_scale
            s = tl.where(cols[None, :] < L, s, float("-inf"))
            m_new = tl.maximum(m_i, tl.max(s, axis=1))
            alpha = tl.exp2(m_i - m_new)
            p = tl.exp2(s - m_new[:, None])
            l_i = l_i * alpha + tl.sum(p, axis=1)
            v = tl.load(V + base + cols[:, None] * stride_l + rd[None, :], mask=cols[:, None] < L, other=0.0)
            acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
            m_i = m_new
    acc = acc / l_i[:, None]
    tl.store(O + base + rm[:, None] * stride_l + rd[None, :], acc.to(O.dtype.element_ty), mask=rm[:, None] < L)


# --- 3. forward substitution of many small lower-triangular systems ----------------------------------------------
@triton.jit
def trsv_lower_kernel(LMAT, B, X, S, n, UNIT_DIAGONAL: tl.constexpr, BLOCK_S: tl.constexpr, BLOCK_N: tl.constexpr):
    # solve L_s x_s = b_s for BLOCK_S systems per program, L [S, n, n] row-major lower triangular, b and x [S, n].
    # Step i reads row i of every system up to the diagonal, takes L_ii and b_i out of their tiles by a where and a
    # sum, and writes x_i into column i of the carried solution (columns > i are still zero).
    rs = tl.program_id(0) * BLOCK_S + tl.arange(0, BLOCK_S)
    cols = tl.arange(0, BLOCK_N)
    s_mask = rs < S
    sys = rs.to(tl.int64)
    rhs = tl.load(B + sys[:, None] * n + cols[None, :], mask=s_mask[:, None] & (cols[None, :] < n), other=0.0)
    x = tl.zeros([BLOCK_S, BLOCK_N], dtype=tl.float32)
    for i in range(n):
        row = tl.load(LMAT + sys[:, None] * n * n + i * n + cols[None, :], mask=s_mask[:, None] & (cols[None, :] <= i),
                      other=0.0)
        at_i = cols[None, :] == i
        b_i = tl.sum(tl.where(at_i, rhs, 0.0), axis=1)
        dot = tl.sum(tl.where(at_i, 0.0, row * x), axis=1)
        if UNIT_DIAGONAL:
            x_i = b_i - dot
        else:
            x_i = (b_i - dot) / tl.sum(tl.where(at_i, row, 0.0), axis=1)
        x = tl.where(at_i, x_i[:, None], x)
    tl.store(X + sys[:, None] * n + cols[None, :], x, mask=s_mask[:, None] & (cols[None, :] < n))


# --- 4. Monarch matrix: two block-diagonal factors by batched 3-D dots ---------------------------------------------
@triton.jit
def monarch_kernel(X, R, LW, Y, M, stride_xm, stride_ym, NBLK: tl.constexpr, BLOCK_M: tl.constexpr):
    # width n = NBLK^2. z[b, m, j] = sum_i x[m, b * NBLK + i] R[b, i, j] (block-diagonal, one dot per block b);
    # the stride permutation makes j the block and b the position in it; y[m, j * NBLK + k] =
    # sum_b z[b, m, j] L[j, b, k]. The intermediate is rounded to fp16 between the dots.
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rb = tl.arange(0, NBLK)
    row = rm[None, :, None].to(tl.int64)
    mask = row < M
    x = tl.load(X + row * stride_xm + rb[:, None, None] * NBLK + rb[None, None, :], mask=mask, other=0.0)
    w_offs = rb[:, None, None] * (NBLK * NBLK) + rb[None, :, None] * NBLK + rb[None, None, :]
    r = tl.load(R + w_offs)
    z = tl.dot(x, r)  # [b, m, j]
    u = tl.permute(z.to(tl.float16), (2, 1, 0))  # [j, m, b]
    lw = tl.load(LW + w_offs)  # [j, b, k]
    y = tl.dot(u, lw)  # [j, m, k]
    tl.store(Y + row * stride_ym + rb[:, None, None] * NBLK + rb[None, None, :], y.to(Y.dtype.element_ty), mask=mask)


# --- 5. gated delta rule, recurrent form -----------------------------------------------------------------------------
@triton.jit
def gated_delta_rule_kernel(Q, K, V, G, BETA, O, FINAL_STATE, T, H, scale, stride_qt, stride_vt,
                            DK: tl.constexpr, DV: tl.constexpr, BLOCK_V: tl.constexpr, USE_QK_L2NORM: tl.constexpr):
    # grid (DV / BLOCK_V, batch * heads). q, k [B, T, H, DK], v and o [B, T, H, DV] bf16, the log decay g and beta
    # [B, T, H]. Per step: S *= exp(g); v' = beta (v - k^T S); S += k v'^T; o = (scale q)^T S. The state [DK, BLOCK_V]
    # stays in fp32 registers for the whole sequence and is written out at the end.
    pid_v = tl.program_id(0)
    bh = tl.program_id(1)
    b = (bh // H).to(tl.int64)
    h = bh % H
    rk = tl.arange(0, DK)
    rv = pid_v * BLOCK_V + tl.arange(0, BLOCK_V)
    q_ptr = Q + b * T * stride_qt + h * DK + rk
    k_ptr = K + b * T * stride_qt + h * DK + rk
    v_ptr = V + b * T * stride_vt + h * DV + rv
    o_ptr = O + b * T * stride_vt + h * DV + rv
    g_ptr = G + b * T * H + h
    beta_ptr = BETA + b * T * H + h
    state = tl.zeros([DK, BLOCK_V], dtype=tl.float32)
    for t in range(T):
        q = tl.load(q_ptr).to(tl.float32)
        k = tl.load(k_ptr).to(tl.float32)
        v = tl.load(v_ptr).to(tl.float32)
        if USE_QK_L2NORM:
            q = q / tl.sqrt(tl.sum(q * q, axis=0) + 1e-6)
            k = k / tl.sqrt(tl.sum(k * k, axis=0) + 1e-6)
        q = q * scale
        g = tl.load(g_ptr)
        beta = tl.load(beta_ptr).to(tl.float32)
        state = state * tl.exp(g)
        v_new = (v - tl.sum(state * k[:, None], axis=0)) * beta
        state += k[:, None] * v_new[None, :]
        o = tl.sum(state * q[:, None], axis=0)
        tl.store(o_ptr, o.to(O.dtype.element_ty))
        q_ptr += stride_qt
        k_ptr += stride_qt
        v_ptr += stride_vt
        o_ptr += stride_vt
        g_ptr += H
        beta_ptr += H
    tl.store(FINAL_STATE + bh.to(tl.int64) * DK * DV + rk[:, None] * DV + rv[None, :], state)


# --- 6. SmoothQuant W8A8 with dynamic per-token quantization in the prologue --------------------------------------
@triton.jit
def smoothquant_gemm_kernel(A, INV_SMOOTH, W, W_SCALE, BIAS, C, A_SCALE, M, N, K, stride_am, stride_wn, stride_cm,
                            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # C = dequant(quant(A * inv_smooth) @ W^T) + bias. A [M, K] fp16, inv_smooth [K] fp32, W [N, K] int8 with per
    # output channel fp32 scales. Loop 1: the absmax of every smoothed row of the block; loop 2: each row quantized
    # to int8 by its own scale (round half away from zero) and multiplied in int32. K is a multiple of BLOCK_K.
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    m_mask = rm < M
    n_mask = rn < N
    a_ptrs = A + rm[:, None].to(tl.int64) * stride_am + rk[None, :]
    absmax = tl.zeros([BLOCK_M], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        a = tl.load(a_ptrs + k0, mask=m_mask[:, None], other=0.0).to(tl.float32)
        s = tl.load(INV_SMOOTH + k0 + rk)
        absmax = tl.maximum(absmax, tl.max(tl.abs(a * s[None, :]), axis=1))
    absmax = tl.maximum(absmax, 1e-8)
    inv_scale = 127.0 / absmax
    a_scale = absmax / 127.0
    w_ptrs = W + rn[None, :].to(tl.int64) * stride_wn + rk[:, None]
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.int32)
    for k0 in range(0, K, BLOCK_K):
        a = tl.load(a_ptrs + k0, mask=m_mask[:, None], other=0.0).to(tl.float32)
        s = tl.load(INV_SMOOTH + k0 + rk)
        v = a * s[None, :] * inv_scale[:, None]
        qa = tl.where(v >= 0, v + 0.5, v - 0.5).to(tl.int8)
        w = tl.load(w_ptrs + k0, mask=n_mask[None, :], other=0)
        acc += tl.dot(qa, w)
    w_scale = tl.load(W_SCALE + rn, mask=n_mask, other=0.0)
    bias = tl.load(BIAS + rn, mask=n_mask, other=0.0).to(tl.float32)
    out = acc.to(tl.float32) * a_scale[:, None] * w_scale[None, :] + bias[None, :]
    tl.store(C + rm[:, None].to(tl.int64) * stride_cm + rn[None, :], out.to(C.dtype.element_ty),
             mask=m_mask[:, None] & n_mask[None, :])
    if pid_n == 0:
        tl.store(A_SCALE + rm, a_scale, mask=m_mask)


# --- 7. jagged LayerNorm --------------------------------------------------------------------------------------------
@triton.jit
def jagged_layernorm_kernel(VALUES, OFFSETS, Y, MEAN, RSTD, eps, BLOCK: tl.constexpr):
    # row r is VALUES[offsets[r]:offsets[r + 1]] (int64 offsets, any length, empty rows too), normalized over its
    # own elements: a loop for the mean, one for the centred variance, one to normalize; per-row fp32 stats
    row = tl.program_id(0)
    start = tl.load(OFFSETS + row)
    end = tl.load(OFFSETS + row + 1)
    length = end - start
    lanes = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, length, BLOCK):
        idx = off + lanes
        acc += tl.load(VALUES + start + idx, mask=idx < length, other=0.0).to(tl.float32)
    count = tl.maximum(length, 1).to(tl.float32)
    mean = tl.sum(acc, axis=0) / count
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, length, BLOCK):
        idx = off + lanes
        x = tl.load(VALUES + start + idx, mask=idx < length, other=0.0).to(tl.float32)
        d = tl.where(idx < length, x - mean, 0.0)
        acc += d * d
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / count + eps)
    tl.store(MEAN + row, mean)
    tl.store(RSTD + row, rstd)
    for off in range(0, length, BLOCK):
        idx = off + lanes
        x = tl.load(VALUES + start + idx, mask=idx < length, other=0.0).to(tl.float32)
        tl.store(Y + start + idx, ((x - mean) * rstd).to(Y.dtype.element_ty), mask=idx < length)


# --- 8. column argmax by tl.reduce over a (value, index) tuple ---------------------------------------------------
@triton.jit
def argmax_first_combine(value1, index1, value2, index2):
    take2 = (value2 > value1) | ((value2 == value1) & (index2 < index1))
    return tl.where(take2, value2, value1), tl.where(take2, index2, index1)


@triton.jit
def col_argmax_kernel(X, VAL, IDX, M, N, stride_m, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # the maximum of every column of X [M, N] (rows of stride_m) and the first row holding it: each [BLOCK_M,
    # BLOCK_N] chunk reduced along dim 0 by the user combine over (value, row), the chunk's winners merged into the
    # running ones by the same function
    rn = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    n_mask = rn < N
    best_v = tl.full([BLOCK_N], float("-inf"), dtype=tl.float32)
    best_i = tl.full([BLOCK_N], 0, dtype=tl.int32)
    for m0 in range(0, M, BLOCK_M):
        rm = m0 + tl.arange(0, BLOCK_M)
        mask = (rm[:, None] < M) & n_mask[None, :]
        x = tl.load(X + rm[:, None] * stride_m + rn[None, :], mask=mask, other=float("-inf")).to(tl.float32)
        rows = tl.broadcast_to(rm[:, None], (BLOCK_M, BLOCK_N))
        v, i = tl.reduce((x, rows), 0, argmax_first_combine)
        best_v, best_i = argmax_first_combine(best_v, best_i, v, i)
    tl.store(VAL + rn, best_v.to(VAL.dtype.element_ty), mask=n_mask)
    tl.store(IDX + rn, best_i, mask=n_mask)


# --- 9. suffix sums by tl.flip + tl.cumsum, chunks from the end ------------------------------------------------------
@triton.jit
def suffix_sum_kernel(X, Y, N, stride_x, stride_y, BLOCK: tl.constexpr):
    # y[r, i] = sum_{j >= i} x[r, j] (e.g. the survival function of sorted probabilities): each chunk's suffix sums
    # are the reversed chunk's prefix sums reversed, plus the total of every chunk after it; the chunks are walked
    # from the last by range(n - 1, -1, -1)
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    carry = 0.0
    for c in range(tl.cdiv(N, BLOCK) - 1, -1, -1):
        offs = c * BLOCK + cols
        x = tl.load(X + row * stride_x + offs, mask=offs < N, other=0.0).to(tl.float32)
        s = tl.flip(tl.cumsum(tl.flip(x, 0), axis=0), 0) + carry
        tl.store(Y + row * stride_y + offs, s, mask=offs < N)
        carry += tl.sum(x, axis=0)


# --- 10. direct 2-D convolution, NCHW ---------------------------------------------------------------------------------
@triton.jit
def conv2d_nchw_direct_kernel(X, Wt, BIAS, Y, C, H, W, OC, OH, OW, KH, KW, stride, pad,
                              BLOCK_OC: tl.constexpr, BLOCK_P: tl.constexpr):
    # grid (output pixel blocks, output channel blocks, images); for every input channel and tap, a [BLOCK_OC]
    # column of weights times a [BLOCK_P] row of input pixels (zero padding by the mask) accumulates into the
    # [BLOCK_OC, BLOCK_P] tile
    rp = tl.program_id(0) * BLOCK_P + tl.arange(0, BLOCK_P)
    roc = tl.program_id(1) * BLOCK_OC + tl.arange(0, BLOCK_OC)
    n = tl.program_id(2).to(tl.int64)
    p_mask = rp < OH * OW
    oc_mask = roc < OC
    oh = rp // OW
    ow = rp % OW
    x_img = X + n * C * H * W
    acc = tl.zeros([BLOCK_OC, BLOCK_P], dtype=tl.float32)
    for c in range(C):
        for kh in range(KH):
            ih = oh * stride - pad + kh
            row_ok = p_mask & (ih >= 0) & (ih < H)
            for kw in range(KW):
                iw = ow * stride - pad + kw
                x = tl.load(x_img + (c * H + ih) * W + iw, mask=row_ok & (iw >= 0) & (iw < W), other=0.0)
                w = tl.load(Wt + ((roc * C + c) * KH + kh) * KW + kw, mask=oc_mask, other=0.0)
                acc += w[:, None] * x[None, :]
    acc += tl.load(BIAS + roc, mask=oc_mask, other=0.0)[:, None]
    out = Y + (n * OC + roc[:, None]) * (OH * OW) + rp[None, :]
    tl.store(out, acc, mask=oc_mask[:, None] & p_mask[None, :])


# --- host side --------------------------------------------------------------------------------------------------------
# 1. fused MoE: top-k experts per token (distinct), pairs sorted by expert and padded as vLLM's moe_align_block_size
def _moe_routing(p, rng):
    M, E, top_k, bm = p["M"], p["E"], p["top_k"], p["bm"]
    logits = rng.standard_normal((M, E))
    ids = np.argsort(-logits, axis=1)[:, :top_k]
    w = np.exp(np.take_along_axis(logits, ids, axis=1))
    w = (w / w.sum(axis=1, keepdims=True)).astype(np.float32)
    flat = ids.ravel()
    valid = M * top_k
    em = valid + E * (bm - 1)
    sorted_ids = np.full(em, valid, np.int32)
    expert_ids = np.zeros(cdiv(em, bm), np.int32)
    pos = 0
    for e in range(E):
        pairs = np.nonzero(flat == e)[0]
        sorted_ids[pos:pos + len(pairs)] = pairs
        nblk = cdiv(len(pairs), bm)
        expert_ids[pos // bm:pos // bm + nblk] = e
        pos += nblk * bm
    return w, sorted_ids, expert_ids, np.array([pos], np.int32)


def moe_inputs(p, rng):
    M, E, N, K = p["M"], p["E"], p["N"], p["K"]
    w, sorted_ids, expert_ids, post = _moe_routing(p, rng)
    return {"a": randn(rng, (M, K), "float16"), "b": randn(rng, (E, N, K), "float16", K ** -0.5),
            "topk_weights": w, "sorted_token_ids": sorted_ids, "expert_ids": expert_ids, "num_post_padded": post}


def moe_ref(p, x):
    M, top_k, N = p["M"], p["top_k"], p["N"]
    out = np.zeros((M * top_k, N))
    sid = x["sorted_token_ids"].astype(np.int64)
    eid = x["expert_ids"].astype(np.int64)
    post = int(x["num_post_padded"][0])
    w = x["topk_weights"].ravel()

    def expert(e):
        blocks = np.nonzero(eid[:post // p["bm"]] == e)[0]
        pairs = np.concatenate([sid[b * p["bm"]:(b + 1) * p["bm"]] for b in blocks]) if len(blocks) else sid[:0]
        pairs = pairs[pairs < M * top_k]
        out[pairs] = (x["a"][pairs // top_k] @ x["b"][e].T) * w[pairs, None]
    pmap(expert, p["E"])
    return {"c": out.reshape(M, top_k, N)}


def moe_launch(p, a, m):
    M, E, N, K, top_k, bm = p["M"], p["E"], p["N"], p["K"], p["top_k"], p["bm"]
    assert m["BLOCK_M"] == bm, "the routing is padded to the kernel's BLOCK_M"
    em = M * top_k + E * (bm - 1)
    grid = (cdiv(em, bm) * cdiv(N, m["BLOCK_N"]),)
    return grid, [a["a"], a["b"], a["c"], a["topk_weights"], a["sorted_token_ids"], a["expert_ids"],
                  a["num_post_padded"], N, K, em, M * top_k, K, N * K, K, 1, N]


# 2. block-sparse attention: a BigBird-like layout per head (band of 3, the first block global, random blocks),
# drawn from its own seed so that flops(p) can count it
def _bs_layout(p):
    H, nb = p["H"], cdiv(p["L"], p["block"])
    r = np.random.default_rng(p["layout_seed"])
    lay = r.random((H, nb, nb)) < p["density"]
    i = np.arange(nb)
    lay |= np.abs(i[:, None] - i[None, :])[None] <= 1
    lay[:, :, 0] = True
    return lay.astype(np.int8)


def bs_inputs(p, rng):
    shape = (p["B"], p["H"], p["L"], p["D"])
    return {"q": randn(rng, shape, "float16"), "k": randn(rng, shape, "float16"), "v": randn(rng, shape, "float16"),
            "layout": _bs_layout(p)}


def bs_ref(p, x):
    B, H, L, D, bs = p["B"], p["H"], p["L"], p["D"], p["block"]
    lay = x["layout"] != 0
    nb = lay.shape[1]
    out = np.zeros((B, H, L, D))
    scale = np.float64(np.float32(D ** -0.5))

    def head(i):
        b, h = divmod(i, H)
        q, k, v = x["q"][b, h], x["k"][b, h], x["v"][b, h]
        for qb in range(nb):
            keys = np.concatenate([np.arange(kb * bs, min(kb * bs + bs, L)) for kb in np.nonzero(lay[h, qb])[0]])
            s = q[qb * bs:qb * bs + bs] @ k[keys].T * scale
            s = np.exp(s - s.max(axis=1, keepdims=True))
            out[b, h, qb * bs:qb * bs + bs] = (s / s.sum(axis=1, keepdims=True)) @ v[keys]
    pmap(head, B * H)
    return {"o": out}


def bs_launch(p, a, m):
    B, H, L, D, bs = p["B"], p["H"], p["L"], p["D"], p["block"]
    assert m["BLOCK"] == bs
    nb = cdiv(L, bs)
    return (nb, B * H), [a["q"], a["k"], a["v"], a["o"], a["layout"], D ** -0.5, L, H, nb, H * L * D, L * D, D]


def bs_flops(p):
    lay = _bs_layout(p)
    return 4.0 * p["B"] * p["block"] * p["block"] * p["D"] * float(lay.sum())


# 3. triangular solves: diagonals in [1, 2], small off-diagonal entries (well conditioned)
def trsv_inputs(p, rng):
    S, n = p["S"], p["n"]
    Lm = np.tril(rng.standard_normal((S, n, n)) * (0.5 / np.sqrt(n)), -1)
    Lm[:, np.arange(n), np.arange(n)] = rng.uniform(1.0, 2.0, (S, n))
    return {"lmat": Lm.astype(np.float32), "b": randn(rng, (S, n))}


def trsv_ref(p, x):
    Lm, b = x["lmat"], x["b"]
    sol = np.zeros_like(b)
    for i in range(p["n"]):
        sol[:, i] = (b[:, i] - np.einsum("sj,sj->s", Lm[:, i, :i], sol[:, :i])) / Lm[:, i, i]
    return {"x": sol}


def trsv_launch(p, a, m):
    return (cdiv(p["S"], m["BLOCK_S"]),), [a["lmat"], a["b"], a["x"], p["S"], p["n"]]


# 4. Monarch
def monarch_inputs(p, rng):
    nb = p["nblk"]
    return {"x": randn(rng, (p["M"], p["stride"]), "float16"),
            "r": randn(rng, (nb, nb, nb), "float16", nb ** -0.5), "lw": randn(rng, (nb, nb, nb), "float16", nb ** -0.5)}


def monarch_ref(p, x):
    M, nb = p["M"], p["nblk"]
    xb = x["x"][:, :nb * nb].reshape(M, nb, nb)  # m, b, i
    z = np.einsum("mbi,bij->bmj", xb, x["r"]).astype(np.float16).astype(np.float64)
    y = np.einsum("bmj,jbk->mjk", z, x["lw"])
    return {"y": y.reshape(M, nb * nb)}


def monarch_launch(p, a, m):
    nb = p["nblk"]
    return (cdiv(p["M"], m["BLOCK_M"]),), [a["x"], a["r"], a["lw"], a["y"], p["M"], p["stride"], nb * nb]


# 5. gated delta rule
def gdr_inputs(p, rng):
    B, T, H, DK, DV = p["B"], p["T"], p["H"], p["DK"], p["DV"]
    return {"q": randn(rng, (B, T, H, DK), "bfloat16"), "k": randn(rng, (B, T, H, DK), "bfloat16"),
            "v": randn(rng, (B, T, H, DV), "bfloat16"),
            "g": np.log(uniform(rng, (B, T, H), 0.85, 0.999)).astype(np.float32),
            "beta": uniform(rng, (B, T, H), 0.1, 0.9, "bfloat16")}


def gdr_ref(p, x):
    B, T, H, DK, DV = p["B"], p["T"], p["H"], p["DK"], p["DV"]
    scale = np.float64(np.float32(DK ** -0.5))
    S = np.zeros((B, H, DK, DV))
    o = np.zeros((B, T, H, DV))
    for t in range(T):
        q, k, v = x["q"][:, t], x["k"][:, t], x["v"][:, t]  # B, H, D
        q = q / np.sqrt((q * q).sum(-1, keepdims=True) + 1e-6) * scale
        k = k / np.sqrt((k * k).sum(-1, keepdims=True) + 1e-6)
        S *= np.exp(x["g"][:, t])[:, :, None, None]
        v_new = (v - np.einsum("bhkv,bhk->bhv", S, k)) * x["beta"][:, t][:, :, None]
        S += k[..., :, None] * v_new[..., None, :]
        o[:, t] = np.einsum("bhkv,bhk->bhv", S, q)
    return {"o": o, "final_state": S}


def gdr_launch(p, a, m):
    B, T, H, DK, DV = p["B"], p["T"], p["H"], p["DK"], p["DV"]
    return (DV // m["BLOCK_V"], B * H), [a["q"], a["k"], a["v"], a["g"], a["beta"], a["o"], a["final_state"], T, H,
                                         DK ** -0.5, H * DK, H * DV]


# 6. SmoothQuant: the reference quantizes as the kernel does, in float32 (the products, the absmax, 127 / absmax
# and the scaled values are single float32 operations; only a fused multiply-add in the rounding could move a value
# by one step, well inside the tolerance)
def sq_inputs(p, rng):
    M, N, K = p["M"], p["N"], p["K"]
    return {"a": randn(rng, (M, K + p["pad"]), "float16"),
            "inv_smooth": uniform(rng, (K,), 0.25, 2.0),
            "w": rng.integers(-127, 128, (N, K), dtype=np.int8),
            "w_scale": uniform(rng, (N,), 0.5, 1.5) * np.float32(1.0 / (127 * np.sqrt(K))),
            "bias": randn(rng, (N,), "float16", 0.5)}


def _sq_quant(p, x):
    K = p["K"]
    a = x["a"][:, :K].astype(np.float32) * x["inv_smooth"].astype(np.float32)[None, :]
    absmax = np.maximum(np.abs(a).max(axis=1), np.float32(1e-8)).astype(np.float32)
    inv = (np.float32(127.0) / absmax).astype(np.float32)
    v = (a * inv[:, None]).astype(np.float32)
    q = np.trunc(np.where(v >= 0, v + np.float32(0.5), v - np.float32(0.5)))
    return q.astype(np.float64), (absmax / np.float32(127.0)).astype(np.float32).astype(np.float64)


def sq_ref(p, x):
    q, a_scale = _sq_quant(p, x)
    c = (q @ x["w"].T) * a_scale[:, None] * x["w_scale"][None, :] + x["bias"][None, :]
    return {"c": c, "a_scale": a_scale}


def sq_launch(p, a, m):
    M, N, K = p["M"], p["N"], p["K"]
    grid = (cdiv(M, m["BLOCK_M"]), cdiv(N, m["BLOCK_N"]))
    return grid, [a["a"], a["inv_smooth"], a["w"], a["w_scale"], a["bias"], a["c"], a["a_scale"], M, N, K,
                  K + p["pad"], K, N]


# 7. jagged LayerNorm: row lengths from 0 to max_len (a few empty), int64 offsets
def _jagged_offsets(p):
    r = np.random.default_rng(p["lengths_seed"])
    lens = r.integers(1, p["max_len"] + 1, p["rows"])
    lens[r.choice(p["rows"], max(p["rows"] // 16, 1), replace=False)] = 0
    return np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)


def jln_inputs(p, rng):
    offs = _jagged_offsets(p)
    return {"values": randn(rng, (int(offs[-1]),), "bfloat16", 2.0, 0.5), "offsets": offs}


def jln_ref(p, x):
    offs = x["offsets"].astype(np.int64)
    v = x["values"]
    y = np.zeros_like(v)
    R = p["rows"]
    mean, rstd = np.zeros(R), np.zeros(R)
    eps = np.float64(np.float32(p["eps"]))
    for r in range(R):
        seg = v[offs[r]:offs[r + 1]]
        mu = seg.mean() if len(seg) else 0.0
        var = ((seg - mu) ** 2).mean() if len(seg) else 0.0
        mean[r], rstd[r] = mu, 1.0 / np.sqrt(var + eps)
        y[offs[r]:offs[r + 1]] = (seg - mu) * rstd[r]
    return {"y": y, "mean": mean, "rstd": rstd}


def jln_launch(p, a, m):
    return (p["rows"],), [a["values"], a["offsets"], a["y"], a["mean"], a["rstd"], p["eps"]]


def jln_total(p):
    return int(_jagged_offsets(p)[-1])


# 8. column argmax: values on a 1/16 grid in fp16, so that columns often hold their maximum more than once
def cam_inputs(p, rng):
    x = rng.integers(-160, 161, (p["M"], p["N"] + p["pad"])).astype(np.float32) / 16
    return {"x": x.astype(np.float16)}


def cam_ref(p, x):
    v = x["x"][:, :p["N"]]
    idx = np.argmax(v, axis=0)  # the first row holding the maximum
    return {"val": v[idx, np.arange(p["N"])], "idx": idx}


def cam_launch(p, a, m):
    M, N = p["M"], p["N"]
    return (cdiv(N, m["BLOCK_N"]),), [a["x"], a["val"], a["idx"], M, N, N + p["pad"]]


# 9. suffix sums of probabilities
def ssum_inputs(p, rng):
    return {"x": uniform(rng, (p["M"], p["N"]), 0.0, 1.0, "bfloat16")}


def ssum_ref(p, x):
    return {"y": np.cumsum(x["x"][:, ::-1], axis=1)[:, ::-1]}


def ssum_launch(p, a, m):
    return (p["M"],), [a["x"], a["y"], p["N"], p["N"], p["N"]]


# 10. direct convolution
def _conv_out(p):
    oh = (p["H"] + 2 * p["pad"] - p["KH"]) // p["stride"] + 1
    ow = (p["W"] + 2 * p["pad"] - p["KW"]) // p["stride"] + 1
    return oh, ow


def conv_inputs(p, rng):
    N, C, H, W, OC, KH, KW = p["N"], p["C"], p["H"], p["W"], p["OC"], p["KH"], p["KW"]
    return {"x": randn(rng, (N, C, H, W)), "w": randn(rng, (OC, C, KH, KW), "float32", (C * KH * KW) ** -0.5),
            "bias": randn(rng, (OC,), "float32", 0.5)}


def conv_ref(p, x):
    N, C, H, W, OC, KH, KW, st, pad = (p[k] for k in ("N", "C", "H", "W", "OC", "KH", "KW", "stride", "pad"))
    OH, OW = _conv_out(p)
    xp = np.pad(x["x"], ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    out = np.zeros((N, OC, OH, OW))
    for kh in range(KH):
        for kw in range(KW):
            patch = xp[:, :, kh:kh + st * (OH - 1) + 1:st, kw:kw + st * (OW - 1) + 1:st]  # N, C, OH, OW
            out += np.einsum("nchw,oc->nohw", patch, x["w"][:, :, kh, kw], optimize=True)
    return {"y": out + x["bias"][None, :, None, None]}


def conv_launch(p, a, m):
    OH, OW = _conv_out(p)
    grid = (cdiv(OH * OW, m["BLOCK_P"]), cdiv(p["OC"], m["BLOCK_OC"]), p["N"])
    return grid, [a["x"], a["w"], a["bias"], a["y"], p["C"], p["H"], p["W"], p["OC"], OH, OW, p["KH"], p["KW"],
                  p["stride"], p["pad"]]


def conv_flops(p):
    OH, OW = _conv_out(p)
    return 2.0 * p["N"] * p["OC"] * OH * OW * p["C"] * p["KH"] * p["KW"]


CASES = [
    Case("fused_moe_gemm_f16", fused_moe_kernel, moe_inputs,
         lambda p: {"c": ((p["M"], p["top_k"], p["N"]), "float16")}, moe_ref, moe_launch,
         gpu={"M": 2048, "E": 8, "top_k": 2, "N": 4096, "K": 2048, "bm": 64},
         ci={"M": 20, "E": 4, "top_k": 2, "N": 40, "K": 48, "bm": 16},
         meta={"MUL_ROUTED_WEIGHT": True, "TOP_K": 2, "BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8,
               "num_warps": 4, "num_stages": 3},
         ci_meta={"MUL_ROUTED_WEIGHT": True, "TOP_K": 2, "BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "GROUP_M": 2,
                  "num_warps": 4, "num_stages": 2},
         tol={"float16": (1e-2, 5e-3)}, flops=lambda p: 2.0 * p["M"] * p["top_k"] * p["N"] * p["K"],
         bytes=lambda p: 2.0 * (p["M"] * p["K"] + p["E"] * p["N"] * p["K"] + p["M"] * p["top_k"] * p["N"]),
         idiom="vLLM fused_moe_kernel: int32 sorted_token_ids padded per expert with ids >= num_valid_tokens, A rows "
               "gathered by pair // TOP_K, the expert of each M block loaded from expert_ids and offsetting an "
               "[E, N, K] fp16 weight read as [K, N] tiles by strides (offs_n % N), grouped program order, early "
               "return past num_tokens_post_padded, `if MUL_ROUTED_WEIGHT:` epilogue, masked on pair validity and N"),
    Case("blocksparse_attn_f16", blocksparse_attn_kernel, bs_inputs,
         lambda p: {"o": ((p["B"], p["H"], p["L"], p["D"]), "float16")}, bs_ref, bs_launch,
         gpu={"B": 2, "H": 16, "L": 4096, "D": 64, "block": 64, "density": 0.12, "layout_seed": 7},
         ci={"B": 1, "H": 2, "L": 72, "D": 32, "block": 16, "density": 0.3, "layout_seed": 7},
         meta={"HEAD_DIM": 64, "BLOCK": 64, "num_warps": 4, "num_stages": 2},
         ci_meta={"HEAD_DIM": 32, "BLOCK": 16, "num_warps": 4},
         tol={"float16": (1e-2, 5e-3)}, flops=bs_flops,
         bytes=lambda p: 8.0 * p["B"] * p["H"] * p["L"] * p["D"],
         idiom="block-sparse attention forward: an int8 [H, q blocks, k blocks] layout (band, global first block, "
               "random blocks) loaded per key block and `if active != 0:` around both tl.dot and the exp2 online "
               "softmax update (loop-carried m_i, l_i, acc through an scf.if), L not a multiple of the block"),
    Case("trsv_lower_batched_f32", trsv_lower_kernel, trsv_inputs,
         lambda p: {"x": ((p["S"], p["n"]), "float32")}, trsv_ref, trsv_launch,
         gpu={"S": 65536, "n": 32}, ci={"S": 37, "n": 13},
         meta={"UNIT_DIAGONAL": False, "BLOCK_S": 32, "BLOCK_N": 32, "num_warps": 4},
         ci_meta={"UNIT_DIAGONAL": False, "BLOCK_S": 8, "BLOCK_N": 16, "num_warps": 2},
         tol={"float32": (2e-4, 1e-5)}, flops=lambda p: 1.0 * p["S"] * p["n"] * p["n"],
         bytes=lambda p: 4.0 * p["S"] * p["n"] * (p["n"] + 2),
         idiom="forward substitution of many small lower-triangular systems: runtime for i in range(n), row i of "
               "each system loaded masked to cols <= i, L_ii and b_i extracted by tl.sum(tl.where(cols == i, ...)), "
               "x_i written into the carried [BLOCK_S, BLOCK_N] solution by tl.where (a dependence through "
               "reductions every step), constexpr UNIT_DIAGONAL branch"),
    Case("monarch_3d_dot_f16", monarch_kernel, monarch_inputs,
         lambda p: {"y": ((p["M"], p["nblk"] ** 2), "float16")}, monarch_ref, monarch_launch,
         gpu={"M": 262144, "nblk": 16, "stride": 264}, ci={"M": 40, "nblk": 16, "stride": 264},
         meta={"NBLK": 16, "BLOCK_M": 64, "num_warps": 4}, ci_meta={"NBLK": 16, "BLOCK_M": 16, "num_warps": 4},
         tol={"float16": (1e-2, 5e-3)}, flops=lambda p: 4.0 * p["M"] * p["nblk"] ** 3,
         bytes=lambda p: 4.0 * p["M"] * p["nblk"] ** 2,
         idiom="Monarch matrix (block-diagonal, stride permutation, block-diagonal) on rows of width 256: a [16, "
               "BLOCK_M, 16] fp16 tile loaded by 3-D pointer arithmetic, two batched 3-D tl.dot with a "
               "tl.permute(z, (2, 1, 0)) of the fp16-rounded intermediate between them, 3-D masked store"),
    Case("gated_delta_rule_bf16", gated_delta_rule_kernel, gdr_inputs,
         lambda p: {"o": ((p["B"], p["T"], p["H"], p["DV"]), "bfloat16"),
                    "final_state": ((p["B"], p["H"], p["DK"], p["DV"]), "float32")}, gdr_ref, gdr_launch,
         gpu={"B": 4, "T": 2048, "H": 16, "DK": 128, "DV": 128}, ci={"B": 1, "T": 12, "H": 2, "DK": 16, "DV": 16},
         meta={"DK": 128, "DV": 128, "BLOCK_V": 32, "USE_QK_L2NORM": True, "num_warps": 4},
         ci_meta={"DK": 16, "DV": 16, "BLOCK_V": 8, "USE_QK_L2NORM": True, "num_warps": 1},
         tol={"float32": (1e-4, 1e-5)},
         flops=lambda p: 8.0 * p["B"] * p["T"] * p["H"] * p["DK"] * p["DV"],
         bytes=lambda p: 2.0 * p["B"] * p["T"] * p["H"] * (2 * p["DK"] + 2 * p["DV"]),
         idiom="gated delta rule (Gated DeltaNet) recurrence: an fp32 [DK, BLOCK_V] state in registers across a "
               "runtime time loop, decayed by exp(g), v' = beta (v - tl.sum(S * k[:, None], 0)), rank-1 update "
               "k[:, None] * v'[None, :], o = tl.sum(S * q[:, None], 0); q, k L2-normalized under a constexpr; "
               "pointer increments per step, bf16 [B, T, H, D] in/out, fp32 final state"),
    Case("smoothquant_dyn_w8a8_f16", smoothquant_gemm_kernel, sq_inputs,
         lambda p: {"c": ((p["M"], p["N"]), "float16"), "a_scale": ((p["M"],), "float32")}, sq_ref, sq_launch,
         gpu={"M": 2048, "N": 4096, "K": 4096, "pad": 0}, ci={"M": 24, "N": 40, "K": 64, "pad": 8},
         meta={"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "num_warps": 8, "num_stages": 3},
         ci_meta={"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 32, "num_warps": 4, "num_stages": 2},
         tol={"float16": (1e-2, 5e-3)}, flops=lambda p: 2.0 * p["M"] * p["N"] * p["K"],
         bytes=lambda p: 2.0 * p["M"] * p["K"] * 2 + 1.0 * p["N"] * p["K"] + 2.0 * p["M"] * p["N"],
         idiom="SmoothQuant W8A8 with dynamic per-token quantization fused in the prologue: loop 1 the absmax of "
               "fp16 A times an fp32 smoothing vector over K, loop 2 quantization by 127 / absmax with round half "
               "away from zero (tl.where(v >= 0, v + 0.5, v - 0.5).to(int8)) into an int8 x int8 -> int32 tl.dot "
               "with W [N, K] read transposed, per-token x per-channel dequant + bias, `if pid_n == 0` scale store"),
    Case("jagged_layernorm_bf16", jagged_layernorm_kernel, jln_inputs,
         lambda p: {"y": ((jln_total(p),), "bfloat16"), "mean": ((p["rows"],), "float32"),
                    "rstd": ((p["rows"],), "float32")}, jln_ref, jln_launch,
         gpu={"rows": 4096, "max_len": 16384, "lengths_seed": 3, "eps": 1e-5},
         ci={"rows": 9, "max_len": 300, "lengths_seed": 3, "eps": 1e-5},
         meta={"BLOCK": 1024, "num_warps": 4}, ci_meta={"BLOCK": 64, "num_warps": 2},
         tol={"float32": (1e-4, 1e-5)}, flops=lambda p: 8.0 * jln_total(p), bytes=lambda p: 8.0 * jln_total(p),
         idiom="jagged LayerNorm: one program per variable-length row of int64 offsets (empty rows included), three "
               "runtime loops range(0, length, BLOCK) with an int64 bound (mean, centred variance, normalize), "
               "count clamped by tl.maximum(length, 1), bf16 values, fp32 per-row mean and rstd"),
    Case("col_argmax_tuple_reduce_f16", col_argmax_kernel, cam_inputs,
         lambda p: {"val": ((p["N"],), "float16"), "idx": ((p["N"],), "int32")}, cam_ref, cam_launch,
         gpu={"M": 16384, "N": 8192, "pad": 64}, ci={"M": 100, "N": 70, "pad": 6},
         meta={"BLOCK_M": 128, "BLOCK_N": 32, "num_warps": 4}, ci_meta={"BLOCK_M": 16, "BLOCK_N": 16, "num_warps": 2},
         tol={"float16": (0.0, 0.0)}, flops=lambda p: 2.0 * p["M"] * p["N"], bytes=lambda p: 2.0 * p["M"] * p["N"],
         idiom="column argmax with the first index: tl.reduce((x, rows), 0, combine) over a (float32 value, int32 row) "
               "tuple with a user @triton.jit combine (greater value, or equal value and smaller index), the same "
               "function called directly to merge each chunk into the running pair; many ties (values on a grid)"),
    Case("suffix_sum_flip_bf16", suffix_sum_kernel, ssum_inputs,
         lambda p: {"y": ((p["M"], p["N"]), "float32")}, ssum_ref, ssum_launch,
         gpu={"M": 4096, "N": 16384}, ci={"M": 5, "N": 300},
         meta={"BLOCK": 1024, "num_warps": 4}, ci_meta={"BLOCK": 64, "num_warps": 2},
         flops=lambda p: 2.0 * p["M"] * p["N"], bytes=lambda p: 6.0 * p["M"] * p["N"],
         idiom="suffix (reverse cumulative) sums of bf16 rows into fp32: tl.flip(tl.cumsum(tl.flip(x, 0), 0), 0) per "
               "chunk plus a carried total started as a Python 0.0, chunks walked from the end by "
               "range(tl.cdiv(N, BLOCK) - 1, -1, -1) (a constant negative step)"),
    Case("conv2d_nchw_direct_f32", conv2d_nchw_direct_kernel, conv_inputs,
         lambda p: {"y": ((p["N"], p["OC"]) + _conv_out(p), "float32")}, conv_ref, conv_launch,
         gpu={"N": 16, "C": 64, "H": 56, "W": 56, "OC": 64, "KH": 3, "KW": 3, "stride": 1, "pad": 1},
         ci={"N": 2, "C": 3, "H": 9, "W": 11, "OC": 5, "KH": 3, "KW": 3, "stride": 2, "pad": 1},
         meta={"BLOCK_OC": 32, "BLOCK_P": 128, "num_warps": 4}, ci_meta={"BLOCK_OC": 4, "BLOCK_P": 16, "num_warps": 1},
         tol={"float32": (1e-4, 1e-5)}, flops=conv_flops,
         bytes=lambda p: 4.0 * p["N"] * (p["C"] * p["H"] * p["W"] + p["OC"] * np.prod(_conv_out(p))),
         idiom="direct (not im2col) NCHW 2-D convolution in fp32: grid (pixel blocks, output channel blocks, images), "
               "three nested runtime loops over input channels and KH x KW taps (runtime sizes, stride and padding), "
               "a [BLOCK_OC] weight column times a [BLOCK_P] row of shifted pixels (zero padding by masks on "
               "oh * stride - pad + kh) accumulated as outer products, bias added"),
]
