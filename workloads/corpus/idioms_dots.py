"""Ten idioms built around tl.dot, as open-source kernel libraries write them: grouped-query attention (query heads
sharing a K/V head by h // GROUP, K read transposed by its pointers), sliding-window causal attention (a runtime
window, the loop starting at the window's first block), attention with a symmetric ALiBi bias from per-head slopes,
a 2-D convolution over NHWC as an implicit GEMM (im2col addresses computed in the K loop), a block-sparse matmul
walking a CSR table of packed blocks in a runtime-length loop, a mixture-of-experts grouped GEMM whose programs find
their expert by a scan of the experts' offsets, a fused linear + cross-entropy (logits = x @ W^T per vocabulary
block in a nested loop, online log-sum-exp and the target's logit), a LoRA linear (x @ W and x @ A in one K loop,
then (x @ A) @ B into the same accumulator), a matmul accumulating in fp16 (out_dtype=tl.float16) and a batched
matmul broadcast over two batch axes by zero strides."""
import math

import numpy as np
import triton
import triton.language as tl

from workloads.corpus._case import Case, cdiv, pmap, randn, uniform


# --- 1. grouped-query attention forward ----------------------------------------------------------------------------
@triton.jit
def gqa_attn_fwd_kernel(Q, K, V, O, sm_scale, L, stride_qb, stride_qh, stride_ql, stride_kb, stride_kh, stride_kl,
                        GROUP: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # GROUP query heads read the same K/V head: kv_head = head // GROUP; grid (query blocks, query heads, batch)
    start_m = tl.program_id(0)
    off_h = tl.program_id(1)
    off_b = tl.program_id(2)
    off_kv = off_h // GROUP
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q_base = Q + off_b * stride_qb + off_h * stride_qh
    k_base = K + off_b * stride_kb + off_kv * stride_kh
    v_base = V + off_b * stride_kb + off_kv * stride_kh
    q = tl.load(q_base + offs_m[:, None] * stride_ql + offs_d[None, :], mask=offs_m[:, None] < L, other=0.0)
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.4426950408889634
    for start_n in range(0, L, BLOCK_N):
        rn = start_n + offs_n
        # K^T tile [HEAD_DIM, BLOCK_N] straight from the row-major cache
        kt = tl.load(k_base + offs_d[:, None] + rn[None, :] * stride_kl, mask=rn[None, :] < L, other=0.0)
        qk = tl.dot(q, kt) * qk_scale
        qk = tl.where(rn[None, :] < L, qk, float("-inf"))
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(v_base + rn[:, None] * stride_kl + offs_d[None, :], mask=rn[:, None] < L, other=0.0)
        acc = acc * alpha[:, None]
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_ij
    acc = acc / l_i[:, None]
    tl.store(O + off_b * stride_qb + off_h * stride_qh + offs_m[:, None] * stride_ql + offs_d[None, :],
             acc.to(O.dtype.element_ty), mask=offs_m[:, None] < L)


# --- 2. sliding-window causal attention ----------------------------------------------------------------------------
@triton.jit
def swa_attn_fwd_kernel(Q, K, V, O, sm_scale, L, window, stride_h, stride_l, HEAD_DIM: tl.constexpr,
                        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # query i sees keys j with i - window < j <= i (Mistral-style local attention): only the blocks the window of
    # this query block touches are visited, from the block holding its first visible key to the diagonal
    start_m = tl.program_id(0)
    off_h = tl.program_id(1)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    base = off_h * stride_h
    q = tl.load(Q + base + offs_m[:, None] * stride_l + offs_d[None, :], mask=offs_m[:, None] < L, other=0.0)
    # a finite start for the running max: a row whose first block is all outside its window stays at p = 0
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - 1.0e30
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.4426950408889634
    lo = tl.maximum(start_m * BLOCK_M - window + 1, 0)
    lo = (lo // BLOCK_N) * BLOCK_N
    hi = tl.minimum((start_m + 1) * BLOCK_M, L)
    for start_n in range(lo, hi, BLOCK_N):
        rn = start_n + offs_n
        k = tl.load(K + base + rn[:, None] * stride_l + offs_d[None, :], mask=rn[:, None] < L, other=0.0)
        qk = tl.dot(q, tl.trans(k)) * qk_scale
        dist = offs_m[:, None] - rn[None, :]
        visible = (dist >= 0) & (dist < window) & (rn[None, :] < L)
        qk = tl.where(visible, qk, float("-inf"))
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(V + base + rn[:, None] * stride_l + offs_d[None, :], mask=rn[:, None] < L, other=0.0)
        acc = tl.dot(p.to(tl.float16), v, acc * alpha[:, None])
        m_i = m_ij
    out = acc / l_i[:, None]
    tl.store(O + base + offs_m[:, None] * stride_l + offs_d[None, :], out.to(tl.float16), mask=offs_m[:, None] < L)


# --- 3. attention with an ALiBi bias -------------------------------------------------------------------------------
@triton.jit
def alibi_attn_fwd_kernel(Q, K, V, O, SLOPES, sm_scale, L, H, stride_b, stride_h, stride_l, HEAD_DIM: tl.constexpr,
                          BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # bidirectional ALiBi: score(i, j) = q_i . k_j * sm_scale - slope[h] * |i - j|; grid axis 1 is batch * heads
    start_m = tl.program_id(0)
    off_bh = tl.program_id(1)
    off_b = off_bh // H
    off_h = off_bh % H
    slope = tl.load(SLOPES + off_h)
    base = off_b * stride_b + off_h * stride_h
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(Q + base + offs_m[:, None] * stride_l + offs_d[None, :], mask=offs_m[:, None] < L, other=0.0)
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    LOG2E: tl.constexpr = 1.4426950408889634
    for start_n in range(0, L, BLOCK_N):
        rn = start_n + offs_n
        k = tl.load(K + base + rn[:, None] * stride_l + offs_d[None, :], mask=rn[:, None] < L, other=0.0)
        qk = tl.dot(q, tl.trans(k)) * sm_scale
        rel = tl.abs(offs_m[:, None] - rn[None, :]).to(tl.float32)
        qk = (qk - slope * rel) * LOG2E
        qk = tl.where(rn[None, :] < L, qk, float("-inf"))
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(V + base + rn[:, None] * stride_l + offs_d[None, :], mask=rn[:, None] < L, other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v)
        m_i = m_ij
    tl.store(O + base + offs_m[:, None] * stride_l + offs_d[None, :], (acc / l_i[:, None]).to(tl.float16),
             mask=offs_m[:, None] < L)


# --- 4. 2-D convolution as an implicit GEMM over NHWC ----------------------------------------------------------------
@triton.jit
def conv2d_nhwc_igemm_kernel(X, Wt, BIAS, Y, NB, H, W, C, OH, OW, OC, KH: tl.constexpr, KW: tl.constexpr,
                             STRIDE: tl.constexpr, PAD: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                             BLOCK_K: tl.constexpr):
    # GEMM view: rows are output pixels (n, oh, ow), columns output channels, K runs over (kh, kw, c) -- the im2col
    # matrix is never built: each K block's input addresses (and its padding mask) are computed in the loop
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    M = NB * OH * OW
    K_total = KH * KW * C
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    n_img = rm // (OH * OW)
    pix = rm % (OH * OW)
    ih0 = (pix // OW) * STRIDE - PAD
    iw0 = (pix % OW) * STRIDE - PAD
    m_ok = rm < M
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K_total, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        c = rk % C
        tap = rk // C
        kh = tap // KW
        kw = tap % KW
        ih = ih0[:, None] + kh[None, :]
        iw = iw0[:, None] + kw[None, :]
        a_mask = m_ok[:, None] & (rk[None, :] < K_total) & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
        a = tl.load(X + ((n_img[:, None] * H + ih) * W + iw) * C + c[None, :], mask=a_mask, other=0.0)
        b = tl.load(Wt + rk[:, None] * OC + rn[None, :], mask=(rk[:, None] < K_total) & (rn[None, :] < OC),
                    other=0.0)
        acc = tl.dot(a, b, acc)
    bias = tl.load(BIAS + rn, mask=rn < OC, other=0.0).to(tl.float32)
    acc += bias[None, :]
    tl.store(Y + rm[:, None] * OC + rn[None, :], acc.to(Y.dtype.element_ty), mask=m_ok[:, None] & (rn[None, :] < OC))


# --- 5. block-sparse matmul through a CSR table of blocks ----------------------------------------------------------
@triton.jit
def blocksparse_mm_kernel(A_BLOCKS, ROW_PTR, COL_IDX, B, C, N, stride_bk, stride_cm, BS: tl.constexpr,
                          BLOCK_N: tl.constexpr):
    # A is stored as its nonzero BS x BS blocks, packed; row block r owns blocks ROW_PTR[r] .. ROW_PTR[r + 1] - 1,
    # whose K-block indices are COL_IDX[...]: a loop of runtime length per program (possibly zero trips)
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_b = tl.arange(0, BS)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    n_mask = rn < N
    start = tl.load(ROW_PTR + pid_m)
    end = tl.load(ROW_PTR + pid_m + 1)
    acc = tl.zeros((BS, BLOCK_N), dtype=tl.float32)
    for i in range(start, end):
        kb = tl.load(COL_IDX + i)
        a = tl.load(A_BLOCKS + i * (BS * BS) + offs_b[:, None] * BS + offs_b[None, :])
        rk = kb * BS + offs_b
        b = tl.load(B + rk[:, None] * stride_bk + rn[None, :], mask=n_mask[None, :], other=0.0)
        acc += tl.dot(a, b)
    rm = pid_m * BS + offs_b
    tl.store(C + rm[:, None] * stride_cm + rn[None, :], acc.to(C.dtype.element_ty), mask=n_mask[None, :])


# --- 6. mixture-of-experts grouped GEMM ----------------------------------------------------------------------------
@triton.jit
def moe_grouped_gemm_kernel(X, W, EXPERT_OFFSETS, Y, num_experts, N, K, stride_xm, stride_we, stride_wk,
                            stride_ym, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # tokens sorted by expert, expert e owning rows EXPERT_OFFSETS[e] .. EXPERT_OFFSETS[e + 1] - 1; row tiles are
    # numbered expert after expert, and a program finds its expert (and its rows) by walking the offsets. Programs
    # past the last tile (the grid is an upper bound) keep an empty row range and store nothing.
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    tiles_before = 0
    expert = 0
    row_start = 0
    row_end = 0
    for e in range(num_experts):
        lo = tl.load(EXPERT_OFFSETS + e)
        hi = tl.load(EXPERT_OFFSETS + e + 1)
        n_tiles = tl.cdiv(hi - lo, BLOCK_M)
        mine = (pid_m >= tiles_before) & (pid_m < tiles_before + n_tiles)
        expert = tl.where(mine, e, expert)
        row_start = tl.where(mine, lo + (pid_m - tiles_before) * BLOCK_M, row_start)
        row_end = tl.where(mine, hi, row_end)
        tiles_before += n_tiles
    rm = row_start + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    m_mask = rm < row_end
    n_mask = rn < N
    w_base = W + expert.to(tl.int64) * stride_we
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        a = tl.load(X + rm[:, None] * stride_xm + rk[None, :], mask=m_mask[:, None] & (rk[None, :] < K), other=0.0)
        b = tl.load(w_base + rk[:, None] * stride_wk + rn[None, :], mask=(rk[:, None] < K) & n_mask[None, :],
                    other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(Y + rm[:, None] * stride_ym + rn[None, :], acc.to(Y.dtype.element_ty),
             mask=m_mask[:, None] & n_mask[None, :])


# --- 7. fused linear + cross-entropy -------------------------------------------------------------------------------
@triton.jit
def linear_ce_fwd_kernel(X, W, TARGET, LOSS, LSE, T, V, H, stride_x, stride_w, BLOCK_M: tl.constexpr,
                         BLOCK_V: tl.constexpr, BLOCK_H: tl.constexpr):
    # loss = logsumexp(x @ W^T) - (x @ W^T)[target] without the [T, V] logits in memory: each vocabulary block's
    # logits come from a K loop over the hidden size, then fold into a running max / sum of exponentials
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    m_mask = rm < T
    target = tl.load(TARGET + rm, mask=m_mask, other=0)
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    s_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    target_logit = tl.zeros([BLOCK_M], dtype=tl.float32)
    for v0 in range(0, V, BLOCK_V):
        rv = v0 + tl.arange(0, BLOCK_V)
        logits = tl.zeros((BLOCK_M, BLOCK_V), dtype=tl.float32)
        for h0 in range(0, H, BLOCK_H):
            rh = h0 + tl.arange(0, BLOCK_H)
            x = tl.load(X + rm[:, None] * stride_x + rh[None, :], mask=m_mask[:, None] & (rh[None, :] < H),
                        other=0.0)
            w = tl.load(W + rv[:, None] * stride_w + rh[None, :], mask=(rv[:, None] < V) & (rh[None, :] < H),
                        other=0.0)
            logits = tl.dot(x, tl.trans(w), logits)
        logits = tl.where(rv[None, :] < V, logits, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(logits, axis=1))
        s_i = s_i * tl.exp(m_i - m_new) + tl.sum(tl.exp(logits - m_new[:, None]), axis=1)
        m_i = m_new
        target_logit += tl.sum(tl.where(rv[None, :] == target[:, None], logits, 0.0), axis=1)
    lse = m_i + tl.log(s_i)
    tl.store(LSE + rm, lse, mask=m_mask)
    tl.store(LOSS + rm, lse - target_logit, mask=m_mask)


# --- 8. LoRA linear: x @ W + scaling * (x @ A) @ B -----------------------------------------------------------------
@triton.jit
def lora_linear_kernel(X, W, LORA_A, LORA_B, Y, M, N, K, stride_xm, stride_wk, stride_ak, stride_br, stride_ym,
                       scaling, RANK: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                       BLOCK_K: tl.constexpr):
    # the x tile of each K step feeds two dots: the frozen weight's and the low-rank down-projection's; the
    # [BLOCK_M, RANK] result is scaled, rounded to fp16 and up-projected into the same accumulator
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rr = tl.arange(0, RANK)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    xa = tl.zeros((BLOCK_M, RANK), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        k_mask = rk < K
        x = tl.load(X + rm[:, None] * stride_xm + rk[None, :], mask=(rm[:, None] < M) & k_mask[None, :], other=0.0)
        w = tl.load(W + rk[:, None] * stride_wk + rn[None, :], mask=k_mask[:, None] & (rn[None, :] < N), other=0.0)
        a = tl.load(LORA_A + rk[:, None] * stride_ak + rr[None, :], mask=k_mask[:, None], other=0.0)
        acc = tl.dot(x, w, acc)
        xa = tl.dot(x, a, xa)
    b = tl.load(LORA_B + rr[:, None] * stride_br + rn[None, :], mask=rn[None, :] < N, other=0.0)
    acc = tl.dot((xa * scaling).to(tl.float16), b, acc)
    tl.store(Y + rm[:, None] * stride_ym + rn[None, :], acc.to(tl.float16), mask=(rm[:, None] < M) & (rn[None, :] < N))


# --- 9. matmul accumulating in fp16 --------------------------------------------------------------------------------
@triton.jit
def matmul_fp16_acc_kernel(A, B, C, M, N, K, stride_am, stride_bk, stride_cm, BLOCK_M: tl.constexpr,
                           BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # half-precision accumulator (out_dtype=tl.float16): the fast path of consumer cards, bounded inputs only
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = A + rm[:, None] * stride_am + rk[None, :]
    b_ptrs = B + rk[:, None] * stride_bk + rn[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float16)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] < k_left), other=0.0)
        b = tl.load(b_ptrs, mask=(rk[:, None] < k_left) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc, out_dtype=tl.float16)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * stride_bk
    tl.store(C + rm[:, None] * stride_cm + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


# --- 10. batched matmul broadcast over two batch axes ---------------------------------------------------------------
@triton.jit
def bmm_broadcast_kernel(A, B, C, M, N, K, stride_a0, stride_a1, stride_am, stride_b0, stride_b1, stride_bk,
                         stride_c0, stride_c1, stride_cm, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                         BLOCK_K: tl.constexpr):
    # torch.matmul broadcasting [P, 1, M, K] @ [1, Q, K, N] -> [P, Q, M, N]: the batch axes are grid axes 1 and 2
    # and a broadcast operand has stride 0 on its size-1 axis
    pid = tl.program_id(0)
    i0 = tl.program_id(1).to(tl.int64)
    i1 = tl.program_id(2).to(tl.int64)
    grid_n = tl.cdiv(N, BLOCK_N)
    pid_m = pid // grid_n
    pid_n = pid % grid_n
    A += i0 * stride_a0 + i1 * stride_a1
    B += i0 * stride_b0 + i1 * stride_b1
    C += i0 * stride_c0 + i1 * stride_c1
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        a = tl.load(A + rm[:, None] * stride_am + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        b = tl.load(B + rk[:, None] * stride_bk + rn[None, :], mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    tl.store(C + rm[:, None] * stride_cm + rn[None, :], acc.to(C.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


# --- host side -------------------------------------------------------------------------------------------------------
ATTN_TOL = {"float16": (1e-2, 2e-3)}


def mm_tol(K):
    """fp16 outputs of fp32-accumulated K-long sums: the output's rounding, plus an absolute part (relative to
    max|ref|) that grows like sqrt(K) float32 roundings, never below the default's."""
    return {"float16": (5e-3, max(2e-3, 3e-5 * math.sqrt(K)))}


def fp16_acc_tol(K):
    """An fp16 accumulator rounds every partial sum to 11 bits: its error grows like sqrt(K) fp16 roundings."""
    return {"float16": (1e-2, 6e-4 * math.sqrt(K))}


def softmax_rows(s):
    s = np.exp(s - s.max(axis=-1, keepdims=True))
    return s / s.sum(axis=-1, keepdims=True)


def attn_meta(D, BM, BN, w, s):
    return {"HEAD_DIM": D, "BLOCK_M": BM, "BLOCK_N": BN, "num_warps": w, "num_stages": s}


# 1. GQA
def gqa_inputs(p, rng):
    B, HQ, HKV, L, D = p["B"], p["HQ"], p["HKV"], p["L"], p["D"]
    return {"q": randn(rng, (B, HQ, L, D), "float16"), "k": randn(rng, (B, HKV, L, D), "float16"),
            "v": randn(rng, (B, HKV, L, D), "float16")}


def gqa_ref(p, x):
    B, HQ, HKV, D = p["B"], p["HQ"], p["HKV"], p["D"]
    group = HQ // HKV
    scale = 1.0 / math.sqrt(D)

    def head(i):
        b, h = divmod(i, HQ)
        s = (x["q"][b, h] @ x["k"][b, h // group].T) * scale
        return softmax_rows(s) @ x["v"][b, h // group]
    return {"o": np.stack(pmap(head, B * HQ)).reshape(B, HQ, p["L"], D)}


def gqa_launch(p, a, m):
    B, HQ, HKV, L, D = p["B"], p["HQ"], p["HKV"], p["L"], p["D"]
    assert m["GROUP"] == HQ // HKV and m["HEAD_DIM"] == D
    grid = (cdiv(L, m["BLOCK_M"]), HQ, B)
    return grid, [a["q"], a["k"], a["v"], a["o"], 1.0 / math.sqrt(D), L, HQ * L * D, L * D, D, HKV * L * D, L * D, D]


# 2. sliding window
def swa_ref(p, x):
    BH, L, D, Wn = p["BH"], p["L"], p["D"], p["window"]
    scale = 1.0 / math.sqrt(D)
    chunk = 512

    def head(h):
        out = np.empty((L, D))
        for r0 in range(0, L, chunk):
            r1 = min(r0 + chunk, L)
            c0 = max(0, r0 - Wn + 1)
            s = (x["q"][h, r0:r1] @ x["k"][h, c0:r1].T) * scale
            dist = np.arange(r0, r1)[:, None] - np.arange(c0, r1)[None, :]
            s = np.where((dist >= 0) & (dist < Wn), s, -np.inf)
            out[r0:r1] = softmax_rows(s) @ x["v"][h, c0:r1]
        return out
    return {"o": np.stack(pmap(head, BH))}


def bhld_inputs(p, rng):
    BH, L, D = p["BH"], p["L"], p["D"]
    return {"q": randn(rng, (BH, L, D), "float16"), "k": randn(rng, (BH, L, D), "float16"),
            "v": randn(rng, (BH, L, D), "float16")}


def swa_launch(p, a, m):
    BH, L, D = p["BH"], p["L"], p["D"]
    return (cdiv(L, m["BLOCK_M"]), BH), [a["q"], a["k"], a["v"], a["o"], 1.0 / math.sqrt(D), L, p["window"],
                                         L * D, D]


def swa_flops(p):
    L, Wn = p["L"], p["window"]
    pairs = Wn * (Wn + 1) / 2 + (L - Wn) * Wn if L > Wn else L * (L + 1) / 2
    return 4.0 * p["BH"] * pairs * p["D"]


# 3. ALiBi
def alibi_slopes(H):
    # the ALiBi paper's geometric sequence 2^(-8 (h + 1) / H)
    return np.array([2.0 ** (-8.0 * (h + 1) / H) for h in range(H)], np.float32)


def alibi_inputs(p, rng):
    B, H, L, D = p["B"], p["H"], p["L"], p["D"]
    return {"q": randn(rng, (B, H, L, D), "float16"), "k": randn(rng, (B, H, L, D), "float16"),
            "v": randn(rng, (B, H, L, D), "float16"), "slopes": alibi_slopes(H)}


def alibi_ref(p, x):
    B, H, L, D = p["B"], p["H"], p["L"], p["D"]
    scale = 1.0 / math.sqrt(D)
    rel = np.abs(np.arange(L)[:, None] - np.arange(L)[None, :]).astype(np.float64)

    def head(i):
        b, h = divmod(i, H)
        s = (x["q"][b, h] @ x["k"][b, h].T) * scale - x["slopes"][h] * rel
        return softmax_rows(s) @ x["v"][b, h]
    return {"o": np.stack(pmap(head, B * H)).reshape(B, H, L, D)}


def alibi_launch(p, a, m):
    B, H, L, D = p["B"], p["H"], p["L"], p["D"]
    return (cdiv(L, m["BLOCK_M"]), B * H), [a["q"], a["k"], a["v"], a["o"], a["slopes"], 1.0 / math.sqrt(D), L, H,
                                            H * L * D, L * D, D]


# 4. conv2d implicit GEMM
def conv_out_hw(p):
    o = lambda s, k: (s + 2 * p["pad"] - k) // p["stride"] + 1  # noqa: E731
    return o(p["H"], p["KH"]), o(p["W"], p["KW"])


def conv_inputs(p, rng):
    N, H, W, C, OC, KH, KW = p["N"], p["H"], p["W"], p["C"], p["OC"], p["KH"], p["KW"]
    return {"x": randn(rng, (N, H, W, C), "float16"),
            "w": randn(rng, (KH, KW, C, OC), "float16", 1.0 / math.sqrt(KH * KW * C)),
            "bias": randn(rng, (OC,), "float16", 0.1)}


def conv_ref(p, x):
    N, H, W, C, OC, KH, KW, s, pad = p["N"], p["H"], p["W"], p["C"], p["OC"], p["KH"], p["KW"], p["stride"], p["pad"]
    OH, OW = conv_out_hw(p)
    xp = np.zeros((N, H + 2 * pad, W + 2 * pad, C))
    xp[:, pad:pad + H, pad:pad + W] = x["x"]

    def image(n):
        y = np.broadcast_to(x["bias"], (OH, OW, OC)).copy()
        for kh in range(KH):
            for kw in range(KW):
                patch = xp[n, kh:kh + s * (OH - 1) + 1:s, kw:kw + s * (OW - 1) + 1:s]
                y += patch @ x["w"][kh, kw]
        return y
    return {"y": np.stack(pmap(image, N))}


def conv_launch(p, a, m):
    N, H, W, C, OC = p["N"], p["H"], p["W"], p["C"], p["OC"]
    OH, OW = conv_out_hw(p)
    assert (m["KH"], m["KW"], m["STRIDE"], m["PAD"]) == (p["KH"], p["KW"], p["stride"], p["pad"])
    grid = (cdiv(N * OH * OW, m["BLOCK_M"]), cdiv(OC, m["BLOCK_N"]))
    return grid, [a["x"], a["w"], a["bias"], a["y"], N, H, W, C, OH, OW, OC]


def conv_out(p):
    OH, OW = conv_out_hw(p)
    return {"y": ((p["N"], OH, OW, p["OC"]), "float16")}


def conv_flops(p):
    OH, OW = conv_out_hw(p)
    return 2.0 * p["N"] * OH * OW * p["OC"] * p["KH"] * p["KW"] * p["C"]


def conv_bytes(p):
    OH, OW = conv_out_hw(p)
    return 2.0 * (p["N"] * p["H"] * p["W"] * p["C"] + p["KH"] * p["KW"] * p["C"] * p["OC"] + p["N"] * OH * OW * p["OC"])


# 5. block-sparse
def bsr_layout(p):
    """CSR of the nonzero blocks, drawn from its own seed (the same for every input seed: flops and bytes follow)."""
    rng = np.random.default_rng(1234)
    rows, kbs = p["M"] // p["BS"], p["K"] // p["BS"]
    layout = rng.random((rows, kbs)) < p["density"]
    layout[0] = False  # a row block with no blocks: its loop runs zero times, its output is zeros
    layout[1, 0] = layout[1, -1] = True
    counts = layout.sum(axis=1)
    row_ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    col_idx = np.concatenate([np.flatnonzero(r) for r in layout]).astype(np.int32)
    return row_ptr, col_idx


def bsr_inputs(p, rng):
    row_ptr, col_idx = bsr_layout(p)
    BS = p["BS"]
    return {"a_blocks": randn(rng, (len(col_idx), BS, BS), "float16"), "row_ptr": row_ptr, "col_idx": col_idx,
            "b": randn(rng, (p["K"], p["N"]), "float16", 0.5)}


def bsr_ref(p, x):
    BS, N = p["BS"], p["N"]
    row_ptr = x["row_ptr"].astype(np.int64)
    col_idx = x["col_idx"].astype(np.int64)
    rows = p["M"] // BS

    def row_block(r):
        lo, hi = row_ptr[r], row_ptr[r + 1]
        if lo == hi:
            return np.zeros((BS, N))
        a = x["a_blocks"][lo:hi].transpose(1, 0, 2).reshape(BS, -1)  # [BS, nnz * BS]
        k_rows = (col_idx[lo:hi, None] * BS + np.arange(BS)[None, :]).ravel()
        return a @ x["b"][k_rows]
    return {"c": np.concatenate(pmap(row_block, rows), axis=0)}


def bsr_launch(p, a, m):
    assert m["BS"] == p["BS"]
    return (p["M"] // p["BS"], cdiv(p["N"], m["BLOCK_N"])), [a["a_blocks"], a["row_ptr"], a["col_idx"], a["b"],
                                                              a["c"], p["N"], p["N"], p["N"]]


def bsr_nnz(p):
    return len(bsr_layout(p)[1])


def bsr_flops(p):
    return 2.0 * bsr_nnz(p) * p["BS"] * p["BS"] * p["N"]


def bsr_bytes(p):
    return 2.0 * (bsr_nnz(p) * p["BS"] * p["BS"] + p["K"] * p["N"] + p["M"] * p["N"])


# 6. MoE grouped GEMM
def moe_counts(p):
    """Tokens per expert (its own seed): uneven, one expert gets none."""
    rng = np.random.default_rng(4321)
    E, T = p["E"], p["T"]
    w = rng.random(E) + 0.3
    w[E // 2] = 0.0
    counts = np.floor(w / w.sum() * T).astype(np.int64)
    counts[0] += T - counts.sum()
    return counts


def moe_inputs(p, rng):
    counts = moe_counts(p)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    E, T, K, N = p["E"], p["T"], p["K"], p["N"]
    return {"x": randn(rng, (T, K), "float16"), "w": randn(rng, (E, K, N), "float16", 1.0 / math.sqrt(K)),
            "offsets": offsets}


def moe_ref(p, x):
    off = x["offsets"].astype(np.int64)

    def expert(e):
        return x["x"][off[e]:off[e + 1]] @ x["w"][e]
    return {"y": np.concatenate(pmap(expert, p["E"]), axis=0)}


def moe_launch(p, a, m):
    E, T, K, N = p["E"], p["T"], p["K"], p["N"]
    grid = (cdiv(T, m["BLOCK_M"]) + E, cdiv(N, m["BLOCK_N"]))  # at least the number of row tiles of all experts
    return grid, [a["x"], a["w"], a["offsets"], a["y"], E, N, K, K, K * N, N, N]


# 7. fused linear + cross-entropy
def lce_inputs(p, rng):
    T, H, V = p["T"], p["H"], p["V"]
    return {"x": randn(rng, (T, H), "float16"), "w": randn(rng, (V, H), "float16", 2.0 / math.sqrt(H)),
            "target": rng.integers(0, V, T).astype(np.int32)}


def lce_ref(p, x):
    T = p["T"]

    def rows(i):
        r0, r1 = i * 1024, min((i + 1) * 1024, T)
        z = x["x"][r0:r1] @ x["w"].T
        mx = z.max(axis=1)
        lse = mx + np.log(np.exp(z - mx[:, None]).sum(axis=1))
        tgt = z[np.arange(r1 - r0), x["target"][r0:r1].astype(np.int64)]
        return lse, lse - tgt
    parts = pmap(rows, cdiv(T, 1024))
    return {"lse": np.concatenate([q[0] for q in parts]), "loss": np.concatenate([q[1] for q in parts])}


def lce_launch(p, a, m):
    T, H, V = p["T"], p["H"], p["V"]
    return (cdiv(T, m["BLOCK_M"]),), [a["x"], a["w"], a["target"], a["loss"], a["lse"], T, V, H, H, H]


# 8. LoRA
def lora_inputs(p, rng):
    M, N, K, R = p["M"], p["N"], p["K"], p["R"]
    return {"x": randn(rng, (M, K), "float16"), "w": randn(rng, (K, N), "float16", 1.0 / math.sqrt(K)),
            "lora_a": randn(rng, (K, R), "float16", 1.0 / math.sqrt(K)),
            "lora_b": randn(rng, (R, N), "float16", 0.5)}


def lora_ref(p, x):
    return {"y": x["x"] @ x["w"] + p["scaling"] * ((x["x"] @ x["lora_a"]) @ x["lora_b"])}


def lora_launch(p, a, m):
    M, N, K, R = p["M"], p["N"], p["K"], p["R"]
    assert m["RANK"] == R
    return (cdiv(M, m["BLOCK_M"]), cdiv(N, m["BLOCK_N"])), [a["x"], a["w"], a["lora_a"], a["lora_b"], a["y"], M, N,
                                                             K, K, N, R, N, N, p["scaling"]]


# 9. fp16 accumulation
def fp16acc_inputs(p, rng):
    M, N, K = p["M"], p["N"], p["K"]
    s = 1.0 / math.sqrt(math.sqrt(K))  # |C| about 1 whatever K: far from fp16's range
    return {"a": randn(rng, (M, K), "float16", s), "b": randn(rng, (K, N), "float16", s)}


def fp16acc_launch(p, a, m):
    M, N, K = p["M"], p["N"], p["K"]
    return (cdiv(M, m["BLOCK_M"]), cdiv(N, m["BLOCK_N"])), [a["a"], a["b"], a["c"], M, N, K, K, N, N]


# 10. broadcast batched matmul
def bcast_inputs(p, rng):
    P, Q, M, N, K = p["P"], p["Q"], p["M"], p["N"], p["K"]
    return {"a": randn(rng, (P, 1, M, K), "float16", 0.5), "b": randn(rng, (1, Q, K, N), "float16", 0.5)}


def bcast_ref(p, x):
    P, Q = p["P"], p["Q"]
    return {"c": np.stack(pmap(lambda i: x["a"][i // Q, 0] @ x["b"][0, i % Q], P * Q)).reshape(
        P, Q, p["M"], p["N"])}


def bcast_launch(p, a, m):
    P, Q, M, N, K = p["P"], p["Q"], p["M"], p["N"], p["K"]
    grid = (cdiv(M, m["BLOCK_M"]) * cdiv(N, m["BLOCK_N"]), P, Q)
    return grid, [a["a"], a["b"], a["c"], M, N, K, M * K, 0, K, 0, K * N, N, Q * M * N, M * N, N]


def mm_flops(p):
    return 2.0 * p["M"] * p["N"] * p["K"]


MM_CI = {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "num_warps": 1, "num_stages": 2}
MM_GPU = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "num_warps": 8, "num_stages": 3}

CASES = [
    Case("attn_gqa_d128", gqa_attn_fwd_kernel, gqa_inputs, lambda p: {"o": ((p["B"], p["HQ"], p["L"], p["D"]),
                                                                            "float16")},
         gqa_ref, gqa_launch,
         gpu={"B": 4, "HQ": 32, "HKV": 8, "L": 1024, "D": 128}, ci={"B": 1, "HQ": 6, "HKV": 2, "L": 21, "D": 16},
         meta={"GROUP": 4, **attn_meta(128, 128, 64, 8, 3)}, ci_meta={"GROUP": 3, **attn_meta(16, 16, 16, 1, 2)},
         tol=ATTN_TOL, flops=lambda p: 4.0 * p["B"] * p["HQ"] * p["L"] * p["L"] * p["D"],
         bytes=lambda p: 2.0 * p["B"] * p["L"] * p["D"] * (2 * p["HQ"] + 2 * p["HKV"]),
         idiom="grouped-query attention: GROUP query heads share a K/V head (program_id(1) // GROUP), 3-D grid "
               "(blocks, heads, batch), K^T tile loaded by pointer arithmetic, masked on the sequence"),
    Case("attn_sliding_window_d64", swa_attn_fwd_kernel, bhld_inputs,
         lambda p: {"o": ((p["BH"], p["L"], p["D"]), "float16")}, swa_ref, swa_launch,
         gpu={"BH": 32, "L": 8192, "D": 64, "window": 1024}, ci={"BH": 2, "L": 50, "D": 16, "window": 20},
         meta=attn_meta(64, 128, 64, 4, 3), ci_meta=attn_meta(16, 16, 16, 1, 2), tol=ATTN_TOL, flops=swa_flops,
         bytes=lambda p: 2.0 * 4 * p["BH"] * p["L"] * p["D"],
         idiom="sliding-window causal attention: runtime window, loop from the window's first block "
               "(max(.., 0) // BLOCK_N * BLOCK_N) to the diagonal, mask (i - j >= 0) & (i - j < window), "
               "finite initial running max"),
    Case("attn_alibi_d64", alibi_attn_fwd_kernel, alibi_inputs,
         lambda p: {"o": ((p["B"], p["H"], p["L"], p["D"]), "float16")}, alibi_ref, alibi_launch,
         gpu={"B": 2, "H": 16, "L": 2048, "D": 64}, ci={"B": 1, "H": 3, "L": 30, "D": 16},
         meta=attn_meta(64, 128, 64, 4, 3), ci_meta=attn_meta(16, 16, 16, 1, 2), tol=ATTN_TOL,
         flops=lambda p: 4.0 * p["B"] * p["H"] * p["L"] * p["L"] * p["D"],
         bytes=lambda p: 2.0 * 4 * p["B"] * p["H"] * p["L"] * p["D"],
         idiom="attention with a symmetric ALiBi bias: per-head slope loaded by head (b, h split by // and %), "
               "- slope * tl.abs(i - j) added to the scaled scores before exp2"),
    Case("conv2d_nhwc_igemm_f16", conv2d_nhwc_igemm_kernel, conv_inputs, conv_out, conv_ref, conv_launch,
         gpu={"N": 32, "H": 56, "W": 56, "C": 128, "OC": 128, "KH": 3, "KW": 3, "stride": 1, "pad": 1},
         ci={"N": 2, "H": 7, "W": 5, "C": 6, "OC": 20, "KH": 3, "KW": 3, "stride": 1, "pad": 1},
         meta={"KH": 3, "KW": 3, "STRIDE": 1, "PAD": 1, **MM_GPU},
         ci_meta={"KH": 3, "KW": 3, "STRIDE": 1, "PAD": 1, **MM_CI}, tol=mm_tol(3 * 3 * 128),
         flops=conv_flops, bytes=conv_bytes,
         idiom="3x3 convolution over NHWC as an implicit GEMM: output pixel (n, oh, ow) from the row index by // "
               "and %, the K index split into (kh, kw, c) inside the K loop, padding by masks on the gathered "
               "addresses, bias epilogue"),
    Case("mm_blocksparse_csr_f16", blocksparse_mm_kernel, bsr_inputs, lambda p: {"c": ((p["M"], p["N"]), "float16")},
         bsr_ref, bsr_launch,
         gpu={"M": 4096, "N": 4096, "K": 8192, "BS": 64, "density": 0.25},
         ci={"M": 48, "N": 40, "K": 96, "BS": 16, "density": 0.4},
         meta={"BS": 64, "BLOCK_N": 128, "num_warps": 4, "num_stages": 3},
         ci_meta={"BS": 16, "BLOCK_N": 16, "num_warps": 1, "num_stages": 2}, tol=mm_tol(8192 // 4),
         flops=bsr_flops, bytes=bsr_bytes,
         idiom="block-sparse matmul (BSR): packed BS x BS blocks of A, for i in range(ROW_PTR[r], ROW_PTR[r + 1]) "
               "with the K block from COL_IDX[i], an empty row block (zero trips)"),
    Case("moe_grouped_gemm_f16", moe_grouped_gemm_kernel, moe_inputs, lambda p: {"y": ((p["T"], p["N"]), "float16")},
         moe_ref, moe_launch,
         gpu={"T": 16384, "E": 8, "K": 2048, "N": 1024}, ci={"T": 50, "E": 4, "K": 40, "N": 36},
         meta=MM_GPU, ci_meta=MM_CI, tol=mm_tol(2048),
         flops=lambda p: 2.0 * p["T"] * p["K"] * p["N"],
         bytes=lambda p: 2.0 * (p["T"] * p["K"] + p["E"] * p["K"] * p["N"] + p["T"] * p["N"]),
         idiom="mixture-of-experts grouped GEMM over tokens sorted by expert: each program walks the experts' "
               "offsets (runtime loop, tl.cdiv on loaded scalars, loop-carried tl.where scalars) to find its "
               "expert and row range, then a K loop on that expert's weight (int64 expert offset)"),
    Case("linear_ce_fused_f32", linear_ce_fwd_kernel, lce_inputs,
         lambda p: {"loss": ((p["T"],), "float32"), "lse": ((p["T"],), "float32")}, lce_ref, lce_launch,
         gpu={"T": 8192, "H": 1024, "V": 4096}, ci={"T": 40, "H": 40, "V": 150},
         meta={"BLOCK_M": 64, "BLOCK_V": 128, "BLOCK_H": 64, "num_warps": 4, "num_stages": 3},
         ci_meta={"BLOCK_M": 16, "BLOCK_V": 32, "BLOCK_H": 16, "num_warps": 1, "num_stages": 2},
         tol={"float32": (1e-4, 1e-5)}, flops=lambda p: 2.0 * p["T"] * p["H"] * p["V"],
         bytes=lambda p: 2.0 * (p["T"] * p["H"] + p["V"] * p["H"]) + 12.0 * p["T"],
         idiom="fused linear + cross-entropy: logits = x @ W^T per vocabulary block (tl.trans of a row-major W "
               "tile) in a loop nested in the vocabulary loop, online max / sum-exp, the target's logit picked by "
               "tl.where(cols == target), loss and lse outputs"),
    Case("lora_linear_f16", lora_linear_kernel, lora_inputs, lambda p: {"y": ((p["M"], p["N"]), "float16")},
         lora_ref, lora_launch,
         gpu={"M": 2048, "N": 4096, "K": 4096, "R": 16, "scaling": 2.0},
         ci={"M": 40, "N": 36, "K": 48, "R": 16, "scaling": 2.0},
         meta={"RANK": 16, **MM_GPU}, ci_meta={"RANK": 16, **MM_CI}, tol=mm_tol(4096),
         flops=lambda p: 2.0 * p["M"] * (p["N"] + p["R"]) * p["K"] + 2.0 * p["M"] * p["R"] * p["N"],
         bytes=lambda p: 2.0 * (p["M"] * p["K"] + p["K"] * p["N"] + p["K"] * p["R"] + p["R"] * p["N"] +
                                p["M"] * p["N"]),
         idiom="LoRA linear: two dots per K step sharing the x tile (frozen weight and rank-16 down-projection), "
               "then the scaled fp16 [BLOCK_M, RANK] product up-projected into the same accumulator"),
    Case("mm_fp16_acc", matmul_fp16_acc_kernel, fp16acc_inputs, lambda p: {"c": ((p["M"], p["N"]), "float16")},
         lambda p, x: {"c": x["a"] @ x["b"]}, fp16acc_launch,
         gpu={"M": 4096, "N": 4096, "K": 2048}, ci={"M": 40, "N": 36, "K": 64},
         meta=MM_GPU, ci_meta=MM_CI, tol=fp16_acc_tol(2048), flops=mm_flops,
         bytes=lambda p: 2.0 * (p["M"] * p["K"] + p["K"] * p["N"] + p["M"] * p["N"]),
         idiom="fp16 accumulator: tl.zeros(dtype=tl.float16), tl.dot(a, b, acc, out_dtype=tl.float16), stored "
               "without a cast; K mask from the remaining K"),
    Case("bmm_broadcast_f16", bmm_broadcast_kernel, bcast_inputs,
         lambda p: {"c": ((p["P"], p["Q"], p["M"], p["N"]), "float16")}, bcast_ref, bcast_launch,
         gpu={"P": 4, "Q": 4, "M": 1024, "N": 2048, "K": 1024}, ci={"P": 2, "Q": 3, "M": 20, "N": 18, "K": 24},
         meta=MM_GPU, ci_meta=MM_CI, tol=mm_tol(1024),
         flops=lambda p: 2.0 * p["P"] * p["Q"] * p["M"] * p["N"] * p["K"],
         bytes=lambda p: 2.0 * (p["P"] * p["M"] * p["K"] + p["Q"] * p["K"] * p["N"] +
                                p["P"] * p["Q"] * p["M"] * p["N"]),
         idiom="broadcast batched matmul [P, 1, M, K] @ [1, Q, K, N]: two batch grid axes, int64 batch offsets, "
               "stride 0 on each operand's broadcast axis"),
]
