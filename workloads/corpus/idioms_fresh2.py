"""Ten more idioms from domains the corpus had not reached: a summed-area table (integral image) of one channel of an
interleaved uint8 HWC image by two tl.cumsum scans per row chunk and an int32 column carry down the image; the
pairwise IoU suppression bitmask of torchvision's NMS, a [BLOCK_M, 64] tile of boxes against one 64-box word, the
bits j > i with IoU above the threshold packed into one int64 per (box, word) by a sum of distinct shifted ones; the
vertical pass of a separable Gaussian blur, a channels-last bf16 image read through its strides as (n, c) planes,
static_range taps with reflect-101 borders folded by tl.abs and a where, NCHW out; a MobileNet depthwise 3x3
convolution over NHWC fp16 with bias and ReLU6, nine masked shifted [pixels, channels] tiles; packed variable-length
causal flash attention, sequences delimited by cu_seqlens in a [tokens, 3, heads, dim] qkv tensor, programs past
their sequence's end leaving at once; an AWQ int4 weight-only GEMM, eight nibbles per int32 in AWQ's interleaved
order, per-group zero points (packed the same way) and fp16 scales, (q - z) * s dequantized to fp16 for tl.dot;
histogram-of-oriented-gradients cells by float atomics, central differences with clamped neighbours, the unsigned
orientation by libdevice.atan2 binned into 9 bins of 8x8 cells; torch_scatter's segment_max_csr, a per-lane running
max and its int64 index over a runtime range(start, end) from int64 CSR offsets, empty segments as (0, n); the
forward algorithm of a hidden Markov model in log space, a [S, S] transition tile and the state vector carried
through the time loop (logsumexp down axis 0, the result fed back as rows), time-major emissions; and all-pairs
gravitational N-body accelerations in float64 with Plummer softening over blocks of bodies.
"""
import numpy as np
import triton
import triton.language as tl
from triton.language.extra import libdevice

from workloads.corpus._case import Case, cast, cdiv, pmap, randn, uniform


# --- 1. summed-area table -------------------------------------------------------------------------------------------
@triton.jit
def summed_area_kernel(IMG, SAT, H, W, channel, stride_ib, stride_ih, stride_iw, BLOCK_H: tl.constexpr,
                       BLOCK_W: tl.constexpr):
    # one image per program, a whole row in a block: each chunk of BLOCK_H rows is scanned along the row, then down
    # the chunk, plus the column sums of every row above it (an int32 carry that grows by the chunk's row prefixes)
    b = tl.program_id(0).to(tl.int64)
    rows = tl.arange(0, BLOCK_H)
    cols = tl.arange(0, BLOCK_W)
    col_mask = cols < W
    src = IMG + b * stride_ib + channel + cols[None, :] * stride_iw
    dst = SAT + b * H * W + cols[None, :]
    carry = tl.zeros([BLOCK_W], dtype=tl.int32)
    for h0 in range(0, H, BLOCK_H):
        r = h0 + rows
        mask = (r[:, None] < H) & col_mask[None, :]
        x = tl.load(src + r[:, None] * stride_ih, mask=mask, other=0).to(tl.int32)
        row_prefix = tl.cumsum(x, axis=1)
        s = tl.cumsum(row_prefix, axis=0) + carry[None, :]
        tl.store(dst + r[:, None] * W, s, mask=mask)
        carry += tl.sum(row_prefix, axis=0)


# --- 2. NMS IoU suppression bitmask ----------------------------------------------------------------------------------
@triton.jit
def nms_mask_kernel(BOXES, MASK, n, n_words, iou_threshold, BLOCK_M: tl.constexpr):
    # torchvision's nms_kernel: boxes sorted by score, (x1, y1, x2, y2) rows. grid (row blocks, 64-box words):
    # bit j of word w of box i is set when j = 64 w + bit > i and IoU(i, j) > threshold, compared as
    # inter > threshold * union (no division). The bits are distinct, so their int64 sum is their OR.
    ri = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    word = tl.program_id(1)
    bit = tl.arange(0, 64)
    rj = word * 64 + bit
    mi = ri < n
    mj = rj < n
    x1i = tl.load(BOXES + ri * 4 + 0, mask=mi, other=0.0)
    y1i = tl.load(BOXES + ri * 4 + 1, mask=mi, other=0.0)
    x2i = tl.load(BOXES + ri * 4 + 2, mask=mi, other=0.0)
    y2i = tl.load(BOXES + ri * 4 + 3, mask=mi, other=0.0)
    x1j = tl.load(BOXES + rj * 4 + 0, mask=mj, other=0.0)
    y1j = tl.load(BOXES + rj * 4 + 1, mask=mj, other=0.0)
    x2j = tl.load(BOXES + rj * 4 + 2, mask=mj, other=0.0)
    y2j = tl.load(BOXES + rj * 4 + 3, mask=mj, other=0.0)
    area_i = (x2i - x1i) * (y2i - y1i)
    area_j = (x2j - x1j) * (y2j - y1j)
    w = tl.maximum(tl.minimum(x2i[:, None], x2j[None, :]) - tl.maximum(x1i[:, None], x1j[None, :]), 0.0)
    h = tl.maximum(tl.minimum(y2i[:, None], y2j[None, :]) - tl.maximum(y1i[:, None], y1j[None, :]), 0.0)
    inter = w * h
    union = area_i[:, None] + area_j[None, :] - inter
    hit = (inter > iou_threshold * union) & (rj[None, :] > ri[:, None]) & mj[None, :]
    ones = tl.full([1, 64], 1, dtype=tl.int64) << bit[None, :].to(tl.int64)
    bits = tl.sum(tl.where(hit, ones, 0), axis=1)
    tl.store(MASK + ri.to(tl.int64) * n_words + word, bits, mask=mi)


# --- 3. separable Gaussian blur, vertical pass ---------------------------------------------------------------------
@triton.jit
def gauss_blur_v_kernel(X, WEIGHTS, Y, C, H, W, stride_xn, stride_xh, stride_xw, RADIUS: tl.constexpr,
                        BLOCK_H: tl.constexpr, BLOCK_W: tl.constexpr):
    # grid (W blocks, H blocks, N * C): an (n, c) plane of a channels-last image (stride_xw = C) blurred down the
    # columns by 2 RADIUS + 1 taps, BORDER_REFLECT_101 (-1 -> 1, H -> H - 2); the output written as NCHW
    rw = tl.program_id(0) * BLOCK_W + tl.arange(0, BLOCK_W)
    rh = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
    plane = tl.program_id(2)
    n = (plane // C).to(tl.int64)
    c = plane % C
    mask = (rh[:, None] < H) & (rw[None, :] < W)
    base = X + n * stride_xn + c + rw[None, :] * stride_xw
    acc = tl.zeros([BLOCK_H, BLOCK_W], dtype=tl.float32)
    for t in tl.static_range(2 * RADIUS + 1):
        wt = tl.load(WEIGHTS + t)
        src = tl.abs(rh + (t - RADIUS))
        src = tl.where(src >= H, 2 * H - 2 - src, src)
        v = tl.load(base + src[:, None] * stride_xh, mask=mask, other=0.0).to(tl.float32)
        acc += wt * v
    out = Y + plane.to(tl.int64) * H * W + rh[:, None] * W + rw[None, :]
    tl.store(out, acc.to(Y.dtype.element_ty), mask=mask)


# --- 4. depthwise 3x3 convolution, NHWC, bias + ReLU6 --------------------------------------------------------------
@triton.jit
def dwconv3x3_nhwc_kernel(X, WT, BIAS, Y, H, W, C, BLOCK_W: tl.constexpr, BLOCK_C: tl.constexpr):
    # grid (N * H, W blocks, C blocks): a [BLOCK_W pixels, BLOCK_C channels] output tile of one row; each of the
    # nine taps a shifted tile masked at the image border (zero padding), filters [3, 3, C]
    nh = tl.program_id(0)
    n = nh // H
    oh = nh % H
    ow = tl.program_id(1) * BLOCK_W + tl.arange(0, BLOCK_W)
    rc = tl.program_id(2) * BLOCK_C + tl.arange(0, BLOCK_C)
    c_mask = rc < C
    acc = tl.zeros([BLOCK_W, BLOCK_C], dtype=tl.float32)
    for kh in tl.static_range(3):
        ih = oh + kh - 1
        row_ok = (ih >= 0) & (ih < H)
        row = X + (n * H + ih).to(tl.int64) * W * C
        for kw in tl.static_range(3):
            iw = ow + kw - 1
            m = row_ok & (iw >= 0) & (iw < W)
            x = tl.load(row + iw[:, None] * C + rc[None, :], mask=m[:, None] & c_mask[None, :], other=0.0)
            wt = tl.load(WT + (kh * 3 + kw) * C + rc, mask=c_mask, other=0.0)
            acc += x.to(tl.float32) * wt.to(tl.float32)[None, :]
    acc += tl.load(BIAS + rc, mask=c_mask, other=0.0).to(tl.float32)[None, :]
    acc = tl.minimum(tl.maximum(acc, 0.0), 6.0)
    out = Y + (nh.to(tl.int64) * W + ow[:, None]) * C + rc[None, :]
    tl.store(out, acc.to(tl.float16), mask=(ow[:, None] < W) & c_mask[None, :])


# --- 5. packed variable-length causal attention --------------------------------------------------------------------
@triton.jit
def varlen_causal_attn_kernel(QKV, O, CU_SEQLENS, sm_scale, stride_t, stride_qkv, stride_h, stride_ot, stride_oh,
                              HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # grid (query blocks of the longest sequence, heads, sequences); sequence s is tokens
    # cu_seqlens[s]:cu_seqlens[s + 1] of the packed qkv [tokens, 3, heads, dim]. Causal within the sequence: keys up
    # to the block's last query, the diagonal block masked by tl.where; an online softmax in base 2.
    pid_m = tl.program_id(0)
    h = tl.program_id(1)
    s = tl.program_id(2)
    start = tl.load(CU_SEQLENS + s)
    seqlen = tl.load(CU_SEQLENS + s + 1) - start
    if pid_m * BLOCK_M >= seqlen:
        return
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.arange(0, BLOCK_N)
    rd = tl.arange(0, HEAD_DIM)
    base = QKV + start.to(tl.int64) * stride_t + h * stride_h
    q = tl.load(base + rm[:, None] * stride_t + rd[None, :], mask=rm[:, None] < seqlen, other=0.0)
    k_base = base + stride_qkv
    v_base = base + 2 * stride_qkv
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.4426950408889634
    hi = tl.minimum((pid_m + 1) * BLOCK_M, seqlen)
    for n0 in range(0, hi, BLOCK_N):
        cols = n0 + rn
        k = tl.load(k_base + cols[None, :] * stride_t + rd[:, None], mask=cols[None, :] < seqlen, other=0.0)
        qk = tl.dot(q, k) * qk_scale
        qk = tl.where(rm[:, None] >= cols[None, :], qk, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(qk, axis=1))
        p = tl.exp2(qk - m_new[:, None])
        alpha = tl.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(v_base + cols[:, None] * stride_t + rd[None, :], mask=cols[:, None] < seqlen, other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v)
        m_i = m_new
    acc = acc / l_i[:, None]
    out = O + (start + rm[:, None]).to(tl.int64) * stride_ot + h * stride_oh + rd[None, :]
    tl.store(out, acc.to(tl.float16), mask=rm[:, None] < seqlen)


# --- 6. AWQ int4 weight-only GEMM with zero points -----------------------------------------------------------------
@triton.jit
def awq_gemm_kernel(A, QWEIGHT, QZEROS, SCALES, C, M, N, K, stride_am, stride_cm, GROUP_SIZE: tl.constexpr,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # C = A @ dequant(W): qweight [K, N / 8] int32 with eight 4-bit weights each in AWQ's order (column 8p + j in
    # nibble [0, 4, 1, 5, 2, 6, 3, 7][j]), qzeros [K / G, N / 8] packed alike, scales [K / G, N] fp16;
    # w = (q - z) * s in fp16, one group per K block (BLOCK_K divides GROUP_SIZE). grid (M blocks, N blocks).
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    m_mask = rm < M
    n_mask = rn < N
    packed_n = N // 8
    j = rn % 8
    shifts = ((j // 2) + (j % 2) * 4) * 4
    a_ptrs = A + rm[:, None].to(tl.int64) * stride_am + rk[None, :]
    q_ptrs = QWEIGHT + rk[:, None].to(tl.int64) * packed_n + (rn // 8)[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        a = tl.load(a_ptrs, mask=m_mask[:, None], other=0.0)
        q = tl.load(q_ptrs, mask=n_mask[None, :], other=0)
        g = k0 // GROUP_SIZE
        z = tl.load(QZEROS + g * packed_n + rn // 8, mask=n_mask, other=0)
        s = tl.load(SCALES + g * N + rn, mask=n_mask, other=0.0)
        q = (q >> shifts[None, :]) & 0xF
        z = (z >> shifts) & 0xF
        b = (q - z[None, :]).to(tl.float16) * s[None, :]
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K
        q_ptrs += BLOCK_K * packed_n
    tl.store(C + rm[:, None].to(tl.int64) * stride_cm + rn[None, :], acc.to(tl.float16),
             mask=m_mask[:, None] & n_mask[None, :])


# --- 7. HOG cell histograms by atomics -----------------------------------------------------------------------------
@triton.jit
def hog_cells_kernel(IMG, HIST, H, W, cells_y, cells_x, CELL: tl.constexpr, NBINS: tl.constexpr,
                     BLOCK_H: tl.constexpr, BLOCK_W: tl.constexpr):
    # grid (W blocks, H blocks, images): per pixel the central differences (neighbours clamped at the border),
    # magnitude and unsigned orientation atan2(gy, gx) folded into [0, pi), added to its cell's orientation bin by
    # tl.atomic_add; pixels past the last whole cell are dropped
    ry = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
    rx = tl.program_id(0) * BLOCK_W + tl.arange(0, BLOCK_W)
    b = tl.program_id(2).to(tl.int64)
    base = IMG + b * H * W
    mask = (ry[:, None] < H) & (rx[None, :] < W)
    up = tl.maximum(ry - 1, 0)
    down = tl.minimum(ry + 1, H - 1)
    left = tl.maximum(rx - 1, 0)
    right = tl.minimum(rx + 1, W - 1)
    gx = tl.load(base + ry[:, None] * W + right[None, :], mask=mask, other=0).to(tl.float32) - \
        tl.load(base + ry[:, None] * W + left[None, :], mask=mask, other=0).to(tl.float32)
    gy = tl.load(base + down[:, None] * W + rx[None, :], mask=mask, other=0).to(tl.float32) - \
        tl.load(base + up[:, None] * W + rx[None, :], mask=mask, other=0).to(tl.float32)
    mag = tl.sqrt(gx * gx + gy * gy)
    ang = libdevice.atan2(gy, gx)
    ang = tl.where(ang < 0.0, ang + 3.141592653589793, ang)
    ang = tl.where(ang >= 3.141592653589793, ang - 3.141592653589793, ang)
    bin = tl.minimum((ang * (NBINS / 3.141592653589793)).to(tl.int32), NBINS - 1)
    cy = ry // CELL
    cx = rx // CELL
    keep = mask & (cy[:, None] < cells_y) & (cx[None, :] < cells_x)
    cell = (b * cells_y + cy[:, None]) * cells_x + cx[None, :]
    tl.atomic_add(HIST + cell * NBINS + bin, mag, mask=keep)


# --- 8. segment argmax over CSR offsets ----------------------------------------------------------------------------
@triton.jit
def segment_argmax_csr_kernel(X, INDPTR, OUT, ARG, n, BLOCK: tl.constexpr):
    # torch_scatter.segment_max_csr: segment s is X[indptr[s]:indptr[s + 1]] (int64 offsets); a per-lane running
    # max and its global index over range(start, end, BLOCK), then the lanes' max and the smallest index holding
    # it. An empty segment gives (0, n).
    seg = tl.program_id(0)
    start = tl.load(INDPTR + seg)
    end = tl.load(INDPTR + seg + 1)
    lanes = tl.arange(0, BLOCK)
    best = tl.full([BLOCK], float("-inf"), dtype=tl.float32)
    best_idx = tl.full([BLOCK], 0, dtype=tl.int64)
    for s0 in range(start, end, BLOCK):
        offs = s0 + lanes
        x = tl.load(X + offs, mask=offs < end, other=float("-inf")).to(tl.float32)
        take = x > best
        best = tl.where(take, x, best)
        best_idx = tl.where(take, offs, best_idx)
    top = tl.max(best, axis=0)
    arg = tl.min(tl.where((best == top) & (best > float("-inf")), best_idx, n), axis=0)
    empty = end <= start
    tl.store(OUT + seg, tl.where(empty, 0.0, top).to(OUT.dtype.element_ty))
    tl.store(ARG + seg, tl.where(empty, n, arg))


# --- 9. HMM forward algorithm in log space -------------------------------------------------------------------------
@triton.jit
def hmm_forward_kernel(LOG_EMIT, LOG_TRANS, LOG_INIT, ALPHA, LOGLIK, T, S, stride_et, stride_eb,
                       BLOCK_S: tl.constexpr):
    # one sequence per program: alpha_0 = init + emit_0, alpha_t[j] = logsumexp_i(alpha_{t-1}[i] + A[i, j]) +
    # emit_t[j]; the emissions time-major [T, B, S]; every alpha stored [B, T, S], the log-likelihood at the end.
    # Padded states hold -inf in alpha (their rows drop out), padded transitions 0 (no NaN from -inf - -inf).
    b = tl.program_id(0).to(tl.int64)
    ri = tl.arange(0, BLOCK_S)
    rj = tl.arange(0, BLOCK_S)
    mj = rj < S
    log_a = tl.load(LOG_TRANS + ri[:, None] * S + rj[None, :], mask=(ri[:, None] < S) & mj[None, :], other=0.0)
    emit = LOG_EMIT + b * stride_eb + rj
    alpha = tl.load(LOG_INIT + rj, mask=mj, other=0.0) + tl.load(emit, mask=mj, other=0.0)
    alpha = tl.where(mj, alpha, float("-inf"))
    out = ALPHA + b * T * S + rj
    tl.store(out, alpha, mask=mj)
    for t in range(1, T):
        scores = alpha[:, None] + log_a
        mx = tl.max(scores, axis=0)
        lse = mx + tl.log(tl.sum(tl.exp(scores - mx[None, :]), axis=0))
        e = tl.load(emit + t * stride_et, mask=mj, other=0.0)
        alpha = tl.where(mj, lse + e, float("-inf"))
        tl.store(out + t * S, alpha, mask=mj)
    mx = tl.max(alpha, axis=0)
    tl.store(LOGLIK + b, mx + tl.log(tl.sum(tl.exp(alpha - mx), axis=0)))


# --- 10. N-body accelerations, float64 -----------------------------------------------------------------------------
@triton.jit
def nbody_accel_kernel(BODIES, ACC, n, softening2, BLOCK_I: tl.constexpr, BLOCK_J: tl.constexpr):
    # bodies [n, 4] float64 rows (x, y, z, m); a_i = sum_j m_j (r_j - r_i) / (|r_j - r_i|^2 + eps^2)^(3/2) over
    # blocks of j (padded bodies have zero mass; i = j contributes zero); accelerations [n, 3]
    ri = tl.program_id(0) * BLOCK_I + tl.arange(0, BLOCK_I)
    mi = ri < n
    xi = tl.load(BODIES + ri * 4 + 0, mask=mi, other=0.0)
    yi = tl.load(BODIES + ri * 4 + 1, mask=mi, other=0.0)
    zi = tl.load(BODIES + ri * 4 + 2, mask=mi, other=0.0)
    ax = tl.zeros([BLOCK_I], dtype=tl.float64)
    ay = tl.zeros([BLOCK_I], dtype=tl.float64)
    az = tl.zeros([BLOCK_I], dtype=tl.float64)
    for j0 in range(0, n, BLOCK_J):
        rj = j0 + tl.arange(0, BLOCK_J)
        mj = rj < n
        xj = tl.load(BODIES + rj * 4 + 0, mask=mj, other=0.0)
        yj = tl.load(BODIES + rj * 4 + 1, mask=mj, other=0.0)
        zj = tl.load(BODIES + rj * 4 + 2, mask=mj, other=0.0)
        mass = tl.load(BODIES + rj * 4 + 3, mask=mj, other=0.0)
        dx = xj[None, :] - xi[:, None]
        dy = yj[None, :] - yi[:, None]
        dz = zj[None, :] - zi[:, None]
        r2 = dx * dx + dy * dy + dz * dz + softening2
        inv_r = 1.0 / tl.sqrt(r2)
        s = mass[None, :] * (inv_r * inv_r * inv_r)
        ax += tl.sum(dx * s, axis=1)
        ay += tl.sum(dy * s, axis=1)
        az += tl.sum(dz * s, axis=1)
    tl.store(ACC + ri * 3 + 0, ax, mask=mi)
    tl.store(ACC + ri * 3 + 1, ay, mask=mi)
    tl.store(ACC + ri * 3 + 2, az, mask=mi)


# --- host side --------------------------------------------------------------------------------------------------------
# 1. summed-area table: channel 1 of an interleaved [B, H, W, 3] uint8 image
def sat_inputs(p, rng):
    return {"img": rng.integers(0, 256, (p["B"], p["H"], p["W"], 3), dtype=np.uint8)}


def sat_ref(p, x):
    return {"sat": x["img"][..., 1].cumsum(axis=1).cumsum(axis=2).astype(np.int64)}


def sat_launch(p, a, m):
    H, W = p["H"], p["W"]
    return (p["B"],), [a["img"], a["sat"], H, W, 1, H * W * 3, W * 3, 3]


# 2. NMS bitmask: boxes on a 1/4 grid (areas, intersections and unions exact in float32), clustered so that many
# pairs overlap; sorted by a descending score as torchvision sorts them
def nms_inputs(p, rng):
    n = p["n"]
    centers = rng.uniform(0, p["extent"], (max(n // 8, 1), 2))
    c = centers[rng.integers(0, len(centers), n)] + rng.normal(0, 6.0, (n, 2))
    wh = rng.uniform(4.0, 64.0, (n, 2))
    x1y1 = np.round((c - wh / 2) * 4) / 4
    x2y2 = x1y1 + np.round(wh * 4) / 4
    return {"boxes": np.concatenate([x1y1, x2y2], axis=1).astype(np.float32)}


def nms_ref(p, x):
    b = x["boxes"]
    n, words = p["n"], cdiv(p["n"], 64)
    area = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    out = np.zeros((n, words), np.uint64)
    weights = np.uint64(1) << np.arange(64, dtype=np.uint64)

    def rows(k):
        lo, hi = k * 256, min(k * 256 + 256, n)
        w = np.maximum(np.minimum(b[lo:hi, None, 2], b[None, :, 2]) - np.maximum(b[lo:hi, None, 0], b[None, :, 0]), 0)
        h = np.maximum(np.minimum(b[lo:hi, None, 3], b[None, :, 3]) - np.maximum(b[lo:hi, None, 1], b[None, :, 1]), 0)
        inter = w * h
        union = area[lo:hi, None] + area[None, :] - inter
        hit = (inter > p["iou"] * union) & (np.arange(n)[None, :] > np.arange(lo, hi)[:, None])
        hit = np.pad(hit, ((0, 0), (0, words * 64 - n))).reshape(hi - lo, words, 64)
        out[lo:hi] = (hit.astype(np.uint64) * weights).sum(axis=2, dtype=np.uint64)
    pmap(rows, cdiv(n, 256))
    return {"mask": out.view(np.int64)}


def nms_launch(p, a, m):
    n = p["n"]
    words = cdiv(n, 64)
    return (cdiv(n, m["BLOCK_M"]), words), [a["boxes"], a["mask"], n, words, p["iou"]]


# 3. vertical Gaussian pass over a channels-last bf16 image
def _gauss_weights(radius, sigma):
    t = np.arange(-radius, radius + 1, dtype=np.float64)
    w = np.exp(-t * t / (2 * sigma * sigma))
    return (w / w.sum()).astype(np.float32)


def blur_inputs(p, rng):
    return {"x": uniform(rng, (p["N"], p["H"], p["W"], p["C"]), 0.0, 1.0, "bfloat16"),
            "weights": _gauss_weights(p["R"], p["sigma"])}


def blur_ref(p, x):
    H, R = p["H"], p["R"]
    src = np.abs(np.arange(H)[:, None] + np.arange(-R, R + 1)[None, :])
    src = np.where(src >= H, 2 * H - 2 - src, src)  # [H, taps]
    img = x["x"].transpose(0, 3, 1, 2)  # N, C, H, W
    out = np.zeros(img.shape)
    for t in range(2 * R + 1):
        out += x["weights"][t] * img[:, :, src[:, t], :]
    return {"y": out}


def blur_launch(p, a, m):
    N, C, H, W = p["N"], p["C"], p["H"], p["W"]
    grid = (cdiv(W, m["BLOCK_W"]), cdiv(H, m["BLOCK_H"]), N * C)
    return grid, [a["x"], a["weights"], a["y"], C, H, W, H * W * C, W * C, C]


# 4. depthwise 3x3 NHWC
def dw_inputs(p, rng):
    N, H, W, C = p["N"], p["H"], p["W"], p["C"]
    return {"x": randn(rng, (N, H, W, C), "float16"), "wt": randn(rng, (3, 3, C), "float16", 0.4),
            "bias": randn(rng, (C,), "float16", 0.5, 0.3)}


def dw_ref(p, x):
    N, H, W, C = p["N"], p["H"], p["W"], p["C"]
    xp = np.pad(x["x"], ((0, 0), (1, 1), (1, 1), (0, 0)))
    out = np.zeros((N, H, W, C))
    for kh in range(3):
        for kw in range(3):
            out += xp[:, kh:kh + H, kw:kw + W, :] * x["wt"][kh, kw]
    return {"y": np.clip(out + x["bias"], 0.0, 6.0)}


def dw_launch(p, a, m):
    N, H, W, C = p["N"], p["H"], p["W"], p["C"]
    return (N * H, cdiv(W, m["BLOCK_W"]), cdiv(C, m["BLOCK_C"])), [a["x"], a["wt"], a["bias"], a["y"], H, W, C]


# 5. varlen causal attention over packed qkv
def varlen_inputs(p, rng):
    T = sum(p["lens"])
    return {"qkv": randn(rng, (T, 3, p["H"], p["D"]), "float16"),
            "cu_seqlens": np.concatenate([[0], np.cumsum(p["lens"])]).astype(np.int32)}


def varlen_ref(p, x):
    H, D = p["H"], p["D"]
    cu = x["cu_seqlens"].astype(np.int64)
    out = np.zeros((int(cu[-1]), H, D))
    scale = np.float64(np.float32(D ** -0.5))

    def seq_head(i):
        s, h = divmod(i, H)
        a, b = cu[s], cu[s + 1]
        q, k, v = (x["qkv"][a:b, j, h] for j in range(3))  # L, D
        sc = q @ k.T * scale
        sc = np.where(np.tri(b - a, dtype=bool), sc, -np.inf)
        sc = np.exp(sc - sc.max(axis=-1, keepdims=True))
        out[a:b, h] = (sc / sc.sum(axis=-1, keepdims=True)) @ v
    pmap(seq_head, len(p["lens"]) * H)
    return {"o": out}


def varlen_launch(p, a, m):
    H, D = p["H"], p["D"]
    grid = (cdiv(max(p["lens"]), m["BLOCK_M"]), H, len(p["lens"]))
    return grid, [a["qkv"], a["o"], a["cu_seqlens"], D ** -0.5, 3 * H * D, H * D, D, H * D, D]


def varlen_flops(p):
    return sum(4.0 * L * (L + 1) / 2 * p["H"] * p["D"] for L in p["lens"])


# 6. AWQ int4 GEMM
AWQ_ORDER = np.array([0, 4, 1, 5, 2, 6, 3, 7])  # column j of a pack sits in nibble AWQ_ORDER[j]


def _awq_pack(q):
    """[R, N] values in 0..15 -> [R, N / 8] int32 in AWQ's nibble order."""
    R, N = q.shape
    g = q.reshape(R, N // 8, 8).astype(np.uint32)
    packed = np.zeros((R, N // 8), np.uint32)
    for j in range(8):
        packed |= g[:, :, j] << np.uint32(4 * AWQ_ORDER[j])
    return packed.view(np.int32)


def awq_inputs(p, rng):
    M, N, K, G = p["M"], p["N"], p["K"], p["G"]
    a = randn(rng, (M, K + p["pad"]), "float16")  # rows of a wider buffer: stride K + pad
    return {"a": a, "qweight": _awq_pack(rng.integers(0, 16, (K, N))),
            "qzeros": _awq_pack(rng.integers(5, 11, (K // G, N))),
            "scales": uniform(rng, (K // G, N), 0.5, 1.5, "float16") * np.float16(K ** -0.5 / 4)}


def _awq_unpack(packed, N):
    u = packed.view(np.uint32)
    return np.stack([(u >> np.uint32(4 * AWQ_ORDER[j])) & np.uint32(0xF) for j in range(8)], axis=-1) \
        .reshape(packed.shape[0], N).astype(np.float64)


def awq_ref(p, x):
    N, K, G = p["N"], p["K"], p["G"]
    q = _awq_unpack(x["qweight"].astype(np.int64).astype(np.int32), N)
    z = _awq_unpack(x["qzeros"].astype(np.int64).astype(np.int32), N)
    w = (q - np.repeat(z, G, axis=0)) * np.repeat(x["scales"], G, axis=0)
    w = w.astype(np.float16).astype(np.float64)  # the kernel rounds each dequantized weight to fp16
    return {"c": x["a"][:, :K] @ w}


def awq_launch(p, a, m):
    M, N, K = p["M"], p["N"], p["K"]
    grid = (cdiv(M, m["BLOCK_M"]), cdiv(N, m["BLOCK_N"]))
    return grid, [a["a"], a["qweight"], a["qzeros"], a["scales"], a["c"], M, N, K, K + p["pad"], N]


# 7. HOG cells
HOG_BINS = 9


def hog_inputs(p, rng):
    B, H, W = p["B"], p["H"], p["W"]
    yy, xx = np.mgrid[0:H, 0:W]
    smooth = 100 + 60 * np.sin(xx / 7.0 + rng.uniform(0, 6, (B, 1, 1))) * np.cos(yy / 11.0)
    img = np.clip(smooth + rng.normal(0, 25, (B, H, W)), 0, 255).astype(np.uint8)
    return {"img": img}


def _hog_grad(p, img):
    H, W = p["H"], p["W"]
    r = np.minimum(np.arange(W) + 1, W - 1)
    l_ = np.maximum(np.arange(W) - 1, 0)
    d = np.minimum(np.arange(H) + 1, H - 1)
    u = np.maximum(np.arange(H) - 1, 0)
    gx = img[:, :, r] - img[:, :, l_]
    gy = img[:, d, :] - img[:, u, :]
    ang = np.arctan2(gy, gx)
    ang = np.where(ang < 0, ang + np.pi, ang)
    ang = np.where(ang >= np.pi, ang - np.pi, ang)
    return np.sqrt(gx * gx + gy * gy), ang * (HOG_BINS / np.pi)


def hog_ref(p, x):
    B, H, W, CELL = p["B"], p["H"], p["W"], p["cell"]
    cy, cx = H // CELL, W // CELL
    mag, pos = _hog_grad(p, x["img"])
    bins = np.minimum(pos.astype(np.int64), HOG_BINS - 1)
    mag, bins = mag[:, :cy * CELL, :cx * CELL], bins[:, :cy * CELL, :cx * CELL]
    cell = (np.arange(B)[:, None, None] * cy + (np.arange(cy * CELL) // CELL)[None, :, None]) * cx + \
        (np.arange(cx * CELL) // CELL)[None, None, :]
    hist = np.bincount((cell * HOG_BINS + bins).ravel(), weights=mag.ravel(), minlength=B * cy * cx * HOG_BINS)
    return {"hist": hist.reshape(B, cy, cx, HOG_BINS)}


def hog_launch(p, a, m):
    B, H, W, CELL = p["B"], p["H"], p["W"], p["cell"]
    grid = (cdiv(W, m["BLOCK_W"]), cdiv(H, m["BLOCK_H"]), B)
    return grid, [a["img"], a["hist"], H, W, H // CELL, W // CELL]


# 8. segment argmax: fp16 values, int64 CSR offsets with some empty segments; the total length is p["n"]
def segmax_inputs(p, rng):
    n, S = p["n"], p["segments"]
    cuts = np.sort(rng.integers(0, n + 1, S - 1))
    empty = rng.choice(S - 1, max(S // 10, 1), replace=False)
    cuts[empty] = cuts[np.maximum(empty - 1, 0)]  # some repeated offsets: empty segments
    indptr = np.concatenate([[0], np.sort(cuts), [n]]).astype(np.int64)
    # fp16 values tie (fp16 has ~63k finite values): the smallest index of the maximum wins, as np.argmax's
    return {"x": randn(rng, (n,), "float16", 2.0), "indptr": indptr}


def segmax_ref(p, x):
    v, ip, n = x["x"], x["indptr"].astype(np.int64), p["n"]
    S = p["segments"]
    out = np.zeros(S)
    arg = np.full(S, n, np.int64)
    for s in range(S):
        a, b = ip[s], ip[s + 1]
        if b > a:
            k = int(np.argmax(v[a:b]))  # first index of the maximum
            out[s], arg[s] = v[a + k], a + k
    return {"out": out, "arg": arg}


def segmax_launch(p, a, m):
    return (p["segments"],), [a["x"], a["indptr"], a["out"], a["arg"], p["n"]]


# 9. HMM forward
def _log_softmax(z, axis):
    z = z - z.max(axis=axis, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=axis, keepdims=True))


def hmm_inputs(p, rng):
    B, T, S = p["B"], p["T"], p["S"]
    return {"log_emit": randn(rng, (T, B, S), "float32", 1.5, -4.0),
            "log_trans": _log_softmax(rng.standard_normal((S, S)) * 1.5, 1).astype(np.float32),
            "log_init": _log_softmax(rng.standard_normal(S), 0).astype(np.float32)}


def hmm_ref(p, x):
    B, T, S = p["B"], p["T"], p["S"]
    alpha = np.empty((B, T, S))
    a = x["log_init"][None, :] + x["log_emit"][0]
    alpha[:, 0] = a
    A = x["log_trans"]
    for t in range(1, T):
        sc = a[:, :, None] + A[None]
        mx = sc.max(axis=1)
        a = mx + np.log(np.exp(sc - mx[:, None, :]).sum(axis=1)) + x["log_emit"][t]
        alpha[:, t] = a
    mx = a.max(axis=1)
    return {"alpha": alpha, "loglik": mx + np.log(np.exp(a - mx[:, None]).sum(axis=1))}


def hmm_launch(p, a, m):
    B, T, S = p["B"], p["T"], p["S"]
    return (B,), [a["log_emit"], a["log_trans"], a["log_init"], a["alpha"], a["loglik"], T, S, B * S, S]


# 10. N-body
def nbody_inputs(p, rng):
    n = p["n"]
    pos = rng.standard_normal((n, 3)) * np.array([1.0, 1.0, 0.2])  # a flattened disc
    mass = rng.uniform(0.5, 1.5, (n, 1)) / n
    return {"bodies": np.concatenate([pos, mass], axis=1)}


def nbody_ref(p, x):
    b = x["bodies"]
    n = p["n"]
    acc = np.zeros((n, 3))
    # a Python float argument is a float32 scalar in compiled kernels (a float64 one in Triton's interpreter): the
    # softening (2^-13) is exact in both
    eps2 = np.float64(np.float32(p["eps2"]))

    def rows(k):
        lo, hi = k * 128, min(k * 128 + 128, n)
        d = b[None, :, :3] - b[lo:hi, None, :3]
        r2 = (d * d).sum(axis=2) + eps2
        acc[lo:hi] = (d * (b[None, :, 3] / (r2 * np.sqrt(r2)))[:, :, None]).sum(axis=1)
    pmap(rows, cdiv(n, 128))
    return {"acc": acc}


def nbody_launch(p, a, m):
    return (cdiv(p["n"], m["BLOCK_I"]),), [a["bodies"], a["acc"], p["n"], p["eps2"]]


VARLEN_GPU = (3000, 1537, 4096, 812, 2100, 64, 3333, 1024, 2711, 97, 1900, 4000)

CASES = [
    Case("summed_area_u8_i32", summed_area_kernel, sat_inputs,
         lambda p: {"sat": ((p["B"], p["H"], p["W"]), "int32")}, sat_ref, sat_launch,
         gpu={"B": 96, "H": 600, "W": 500}, ci={"B": 3, "H": 37, "W": 50},
         meta={"BLOCK_H": 16, "BLOCK_W": 512, "num_warps": 8}, ci_meta={"BLOCK_H": 8, "BLOCK_W": 64, "num_warps": 2},
         flops=lambda p: 2.0 * p["B"] * p["H"] * p["W"], bytes=lambda p: 7.0 * p["B"] * p["H"] * p["W"],
         idiom="summed-area table (integral image) of channel 1 of an interleaved [B, H, W, 3] uint8 image "
               "(stride_w = 3, channel offset): per chunk of BLOCK_H full-width rows tl.cumsum(axis=1) then "
               "tl.cumsum(axis=0) in int32, plus an int32 column carry grown by tl.sum of the row prefixes"),
    Case("nms_iou_mask_i64", nms_mask_kernel, nms_inputs,
         lambda p: {"mask": ((p["n"], cdiv(p["n"], 64)), "int64")}, nms_ref, nms_launch,
         gpu={"n": 16384, "extent": 2048.0, "iou": 0.5}, ci={"n": 200, "extent": 160.0, "iou": 0.5},
         meta={"BLOCK_M": 64, "num_warps": 4}, ci_meta={"BLOCK_M": 32, "num_warps": 4},
         flops=lambda p: 15.0 * p["n"] * p["n"], bytes=lambda p: 16.0 * p["n"] + p["n"] * p["n"] / 8.0,
         idiom="torchvision NMS suppression mask: grid (box blocks, 64-box words), [BLOCK_M, 64] pairwise IoU of "
               "(x1, y1, x2, y2) float32 rows loaded as four strided columns, inter > thr * union & j > i, bits "
               "packed into an int64 word by tl.sum(tl.where(hit, 1 << bit, 0), axis=1) (bit 63 negative)"),
    Case("gauss_blur_v_bf16", gauss_blur_v_kernel, blur_inputs,
         lambda p: {"y": ((p["N"], p["C"], p["H"], p["W"]), "bfloat16")}, blur_ref, blur_launch,
         gpu={"N": 4, "C": 3, "H": 1080, "W": 1920, "R": 3, "sigma": 1.5},
         ci={"N": 2, "C": 3, "H": 19, "W": 23, "R": 3, "sigma": 1.5},
         meta={"RADIUS": 3, "BLOCK_H": 16, "BLOCK_W": 64, "num_warps": 2},
         ci_meta={"RADIUS": 3, "BLOCK_H": 8, "BLOCK_W": 16, "num_warps": 2},
         flops=lambda p: 2.0 * (2 * p["R"] + 1) * p["N"] * p["C"] * p["H"] * p["W"],
         bytes=lambda p: 4.0 * p["N"] * p["C"] * p["H"] * p["W"],
         idiom="vertical pass of a separable Gaussian blur: channels-last bf16 [N, H, W, C] read as (n, c) planes "
               "through strides (plane // C, plane % C, stride_w = C) on a 3-D grid, tl.static_range taps with "
               "scalar fp32 weights, reflect-101 borders by tl.abs(i) and tl.where(i >= H, 2H - 2 - i), NCHW out"),
    Case("dwconv3x3_nhwc_f16", dwconv3x3_nhwc_kernel, dw_inputs,
         lambda p: {"y": ((p["N"], p["H"], p["W"], p["C"]), "float16")}, dw_ref, dw_launch,
         gpu={"N": 32, "H": 56, "W": 56, "C": 144}, ci={"N": 2, "H": 7, "W": 9, "C": 20},
         meta={"BLOCK_W": 32, "BLOCK_C": 64, "num_warps": 4}, ci_meta={"BLOCK_W": 8, "BLOCK_C": 16, "num_warps": 1},
         flops=lambda p: 20.0 * p["N"] * p["H"] * p["W"] * p["C"],
         bytes=lambda p: 4.0 * p["N"] * p["H"] * p["W"] * p["C"],
         idiom="MobileNet depthwise 3x3 conv over NHWC fp16, pad 1: grid (N * H, W blocks, C blocks), nine "
               "static_range taps of shifted [pixels, channels] tiles masked by a scalar row test & vector column "
               "tests, per-channel fp16 filters [3, 3, C] broadcast over pixels, bias + ReLU6 by min/max"),
    Case("varlen_causal_attn_f16", varlen_causal_attn_kernel, varlen_inputs,
         lambda p: {"o": ((sum(p["lens"]), p["H"], p["D"]), "float16")}, varlen_ref, varlen_launch,
         gpu={"lens": VARLEN_GPU, "H": 16, "D": 128}, ci={"lens": (37, 5, 64, 20), "H": 2, "D": 32},
         meta={"HEAD_DIM": 128, "BLOCK_M": 128, "BLOCK_N": 64, "num_warps": 8, "num_stages": 2},
         ci_meta={"HEAD_DIM": 32, "BLOCK_M": 16, "BLOCK_N": 16, "num_warps": 4},
         tol={"float16": (1e-2, 5e-3)}, flops=varlen_flops,
         bytes=lambda p: 8.0 * sum(p["lens"]) * p["H"] * p["D"],
         idiom="packed variable-length causal flash attention (flash_attn_varlen_qkvpacked): int32 cu_seqlens, "
               "grid (query blocks of the longest sequence, heads, sequences), `if pid_m * BLOCK_M >= seqlen: "
               "return`, q/k/v at offsets of one [tokens, 3, heads, dim] tensor, runtime key loop to the diagonal, "
               "exp2 online softmax"),
    Case("awq_gemm_int4_f16", awq_gemm_kernel, awq_inputs,
         lambda p: {"c": ((p["M"], p["N"]), "float16")}, awq_ref, awq_launch,
         gpu={"M": 256, "N": 8192, "K": 4096, "G": 128, "pad": 64},
         ci={"M": 20, "N": 72, "K": 256, "G": 64, "pad": 8},
         meta={"GROUP_SIZE": 128, "BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 64, "num_warps": 4, "num_stages": 3},
         ci_meta={"GROUP_SIZE": 64, "BLOCK_M": 16, "BLOCK_N": 32, "BLOCK_K": 32, "num_warps": 4, "num_stages": 2},
         tol={"float16": (1e-2, 5e-3)}, flops=lambda p: 2.0 * p["M"] * p["N"] * p["K"],
         bytes=lambda p: 2.0 * p["M"] * p["K"] + 0.5 * p["K"] * p["N"] + 2.0 * p["M"] * p["N"],
         idiom="AWQ int4 weight-only GEMM: qweight [K, N/8] int32 gathered per column by rn // 8 and shifted by "
               "AWQ's interleaved nibble order ((j // 2) + (j % 2) * 4) * 4, per-group packed zero points and fp16 "
               "scales as [BLOCK_N] vectors at a scalar group k0 // G, (q - z).to(fp16) * s into tl.dot; activation "
               "rows of stride K + pad; num_stages 3"),
    Case("hog_cells_u8_f32", hog_cells_kernel, hog_inputs,
         lambda p: {"hist": ((p["B"], p["H"] // p["cell"], p["W"] // p["cell"], HOG_BINS), "float32")},
         hog_ref, hog_launch,
         gpu={"B": 64, "H": 512, "W": 516, "cell": 8}, ci={"B": 2, "H": 21, "W": 30, "cell": 8},
         meta={"CELL": 8, "NBINS": HOG_BINS, "BLOCK_H": 32, "BLOCK_W": 64, "num_warps": 8},
         ci_meta={"CELL": 8, "NBINS": HOG_BINS, "BLOCK_H": 16, "BLOCK_W": 16, "num_warps": 4},
         zero=("hist",), tol={"float32": (1e-5, 1e-6)}, flops=lambda p: 20.0 * p["B"] * p["H"] * p["W"],
         bytes=lambda p: 1.0 * p["B"] * p["H"] * p["W"],
         idiom="HOG cell histograms: uint8 image, central differences with clamped neighbour indices, magnitude "
               "by tl.sqrt, unsigned orientation by libdevice.atan2 folded into [0, pi) with tl.where, 9 bins by a "
               "truncating cast, float tl.atomic_add of the magnitude into (image, cell_y, cell_x, bin) from a "
               "2-D tile on a 3-D grid, pixels past the last whole cell masked out"),
    Case("segment_argmax_csr_f16", segment_argmax_csr_kernel, segmax_inputs,
         lambda p: {"out": ((p["segments"],), "float16"), "arg": ((p["segments"],), "int64")},
         segmax_ref, segmax_launch,
         gpu={"n": 20_000_000, "segments": 20000}, ci={"n": 900, "segments": 13},
         meta={"BLOCK": 256, "num_warps": 1}, ci_meta={"BLOCK": 32, "num_warps": 1},
         tol={"float16": (0.0, 0.0)}, flops=lambda p: 1.0 * p["n"],
         bytes=lambda p: 2.0 * p["n"] + 8.0 * p["segments"],
         idiom="torch_scatter segment_max_csr: int64 indptr, for s0 in range(start, end, BLOCK) with runtime int64 "
               "bounds, per-lane running max and int64 global index by tl.where(x > best), the smallest index "
               "holding the max by tl.min(tl.where(best == top, idx, n)), empty segments -> (0, n); 1 warp"),
    Case("hmm_forward_f32", hmm_forward_kernel, hmm_inputs,
         lambda p: {"alpha": ((p["B"], p["T"], p["S"]), "float32"), "loglik": ((p["B"],), "float32")},
         hmm_ref, hmm_launch,
         gpu={"B": 512, "T": 512, "S": 48}, ci={"B": 3, "T": 20, "S": 12},
         meta={"BLOCK_S": 64, "num_warps": 4}, ci_meta={"BLOCK_S": 16, "num_warps": 2},
         tol={"float32": (2e-5, 1e-6)}, flops=lambda p: 4.0 * p["B"] * p["T"] * p["S"] ** 2,
         bytes=lambda p: 8.0 * p["B"] * p["T"] * p["S"],
         idiom="HMM forward algorithm in log space: a [BLOCK_S, BLOCK_S] log-transition tile held in registers, "
               "the state vector carried through for t in range(1, T) as alpha[:, None] + A, logsumexp down "
               "axis 0 (the reduced vector fed back as rows each step), time-major [T, B, S] emissions, padded "
               "states -inf by tl.where, every alpha stored and the final log-likelihood"),
    Case("nbody_accel_f64", nbody_accel_kernel, nbody_inputs,
         lambda p: {"acc": ((p["n"], 3), "float64")}, nbody_ref, nbody_launch,
         gpu={"n": 32768, "eps2": 2.0 ** -13}, ci={"n": 150, "eps2": 2.0 ** -13},
         meta={"BLOCK_I": 64, "BLOCK_J": 16, "num_warps": 4}, ci_meta={"BLOCK_I": 32, "BLOCK_J": 16, "num_warps": 2},
         tol={"float64": (1e-10, 1e-12)}, flops=lambda p: 20.0 * p["n"] * p["n"],
         bytes=lambda p: 56.0 * p["n"],
         idiom="all-pairs gravitational N-body in float64: bodies [n, 4] (x, y, z, m) read as four stride-4 "
               "columns, [BLOCK_I, BLOCK_J] displacement tiles over a runtime j loop, 1 / tl.sqrt(r^2 + eps^2) "
               "cubed, three float64 accumulators by tl.sum(axis=1), masked bodies of zero mass, [n, 3] stores"),
]
