"""Ten idioms the corpus had not seen: nucleus (top-p) sampling's renormalized distribution, the logits softmaxed under
a temperature, tl.sort'ed descending and tl.cumsum'ed to find the smallest kept probability, the row masked by it and
renormalized; the expert histogram of MoE token alignment, each program's tl.histogram of a block of top-k expert
ids added to the global counts by one vector tl.atomic_add, the last program to take a ticket (a scalar atomic
counter, reset by that program) turning the counts into block-padded, exclusive-cumsum expert offsets; a Mamba
selective scan, a [BLOCK_D, DSTATE] float32 state carried along the sequence in a loop, dt through softplus, the
state decayed by exp(dt * A), the output contracted with C, a skip term and a silu(z) gate; bilinear image
resizing (align_corners=False) over NCHW planes on a 3-D grid, four neighbour gathers with clamped indices and
fractional weights; a fused SwiGLU projection, two tl.dot accumulators over the same A tile (gate and up halves of one
merged nn.Linear weight, read transposed), silu(gate) * up in the epilogue; k-means assignment, tl.dot of a block of
points with the transposed centroids, the centroid norms added, a running argmin (tl.min(..., return_indices=True))
over centroid blocks; a float64 cosine similarity of row pairs in a looped reduction (torch.cosine_similarity's
max(|x| |y|, eps)); reinforcement learning's discounted returns with episode ends and a bootstrap value by a
reversed tl.associative_scan of affine maps; a hashed embedding lookup, int64 ids folded to uint32 and mixed by
MurmurHash3's fmix32 (uint32 multiplies that wrap, logical shifts), the bucket by an unsigned modulo, table rows
gathered on a 2-D grid; and Mamba-2's gated group RMSNorm, x * silu(z) normalized per group of non-power-of-two width
on a (row, group) grid, 1/rms saved.
"""
import numpy as np
import triton
import triton.language as tl

from workloads.corpus._case import Case, cast, cdiv, pmap, randn, uniform


# --- 1. top-p (nucleus) renormalization ------------------------------------------------------------------------------
@triton.jit
def top_p_renorm_kernel(LOGITS, PROBS, V, stride_l, stride_p, inv_temperature, top_p, BLOCK_V: tl.constexpr):
    # one vocabulary row per program. softmax(logits / T); the probabilities sorted descending and their running
    # sum give, for every sorted position, the mass strictly before it: a token stays when that mass is still below
    # top_p. The smallest kept probability is the threshold; the row is masked by it and renormalized.
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_V)
    mask = cols < V
    x = tl.load(LOGITS + row * stride_l + cols, mask=mask, other=float("-inf")).to(tl.float32) * inv_temperature
    e = tl.exp(x - tl.max(x, axis=0))
    p = e / tl.sum(e, axis=0)
    ordered = tl.sort(p, descending=True)
    before = tl.cumsum(ordered, axis=0) - ordered
    threshold = tl.min(tl.where(before < top_p, ordered, float("inf")), axis=0)
    kept = tl.where(p >= threshold, p, 0.0)
    tl.store(PROBS + row * stride_p + cols, kept / tl.sum(kept, axis=0), mask=mask)


# --- 2. MoE alignment: expert histogram + last-block padded offsets ------------------------------------------------
@triton.jit
def moe_align_histogram_kernel(TOPK_IDS, COUNTS, OFFSETS, TICKET, n, NUM_EXPERTS: tl.constexpr,
                               BLOCK_SIZE_M: tl.constexpr, BLOCK: tl.constexpr):
    # stage 1 in every program: a block of the flattened [tokens, top_k] expert ids, its histogram, one vector
    # atomic into the global counts. The program that takes the last ticket sees every count (a barrier orders the
    # block's count atomics before its ticket, whose atomic is acq_rel) and writes each expert's start in the
    # block-padded sorted order and the total at the end, then resets the ticket for the next launch.
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    in_range = offs < n
    ids = tl.load(TOPK_IDS + offs, mask=in_range, other=0)
    hist = tl.histogram(ids, NUM_EXPERTS)
    n_pad = BLOCK - tl.sum(in_range.to(tl.int32), axis=0)  # padding lanes counted into expert 0
    experts = tl.arange(0, NUM_EXPERTS)
    hist = hist - tl.where(experts == 0, n_pad, 0)
    tl.atomic_add(COUNTS + experts, hist)
    tl.debug_barrier()  # every thread's count atomics before this program's ticket (threadfence-reduction order)
    ticket = tl.atomic_add(TICKET, 1)
    if ticket == tl.num_programs(0) - 1:
        counts = tl.load(COUNTS + experts, volatile=True)
        padded = (counts + BLOCK_SIZE_M - 1) // BLOCK_SIZE_M * BLOCK_SIZE_M
        tl.store(OFFSETS + experts, tl.cumsum(padded, axis=0) - padded)
        tl.store(OFFSETS + NUM_EXPERTS, tl.sum(padded, axis=0))
        tl.atomic_xchg(TICKET, 0)


# --- 3. Mamba selective scan ------------------------------------------------------------------------------------------
@triton.jit
def selective_scan_kernel(X, DT, DT_BIAS, A, BM, CM, DSKIP, Z, Y, L, D, stride_xb, stride_xl, stride_bb, stride_bl,
                          DSTATE: tl.constexpr, BLOCK_D: tl.constexpr):
    # grid (D blocks, batch): every program owns BLOCK_D channels and their DSTATE-wide states for the whole sequence.
    # Per step t: dt = softplus(dt_raw + bias); h = exp(dt * A) * h + (dt * x) B_t; y = h . C_t + D x, gated by silu(z).
    pid_d = tl.program_id(0)
    b = tl.program_id(1).to(tl.int64)
    rd = pid_d * BLOCK_D + tl.arange(0, BLOCK_D)
    d_mask = rd < D
    rn = tl.arange(0, DSTATE)
    a = tl.load(A + rd[:, None] * DSTATE + rn[None, :], mask=d_mask[:, None], other=0.0)
    d_skip = tl.load(DSKIP + rd, mask=d_mask, other=0.0)
    dt_bias = tl.load(DT_BIAS + rd, mask=d_mask, other=0.0)
    h = tl.zeros([BLOCK_D, DSTATE], dtype=tl.float32)
    x_ptr = X + b * stride_xb + rd
    dt_ptr = DT + b * stride_xb + rd
    z_ptr = Z + b * stride_xb + rd
    y_ptr = Y + b * stride_xb + rd
    b_ptr = BM + b * stride_bb + rn
    c_ptr = CM + b * stride_bb + rn
    for t in range(L):
        x = tl.load(x_ptr + t * stride_xl, mask=d_mask, other=0.0).to(tl.float32)
        dt = tl.load(dt_ptr + t * stride_xl, mask=d_mask, other=0.0).to(tl.float32) + dt_bias
        dt = tl.where(dt > 20.0, dt, tl.log(1.0 + tl.exp(dt)))
        bt = tl.load(b_ptr + t * stride_bl).to(tl.float32)
        ct = tl.load(c_ptr + t * stride_bl).to(tl.float32)
        h = tl.exp(dt[:, None] * a) * h + (dt * x)[:, None] * bt[None, :]
        y = tl.sum(h * ct[None, :], axis=1) + d_skip * x
        z = tl.load(z_ptr + t * stride_xl, mask=d_mask, other=0.0).to(tl.float32)
        y = y * z * tl.sigmoid(z)
        tl.store(y_ptr + t * stride_xl, y.to(Y.dtype.element_ty), mask=d_mask)


# --- 4. bilinear resize, NCHW -----------------------------------------------------------------------------------------
@triton.jit
def bilinear_resize_kernel(X, Y, H, W, OH, OW, scale_h, scale_w, BLOCK_W: tl.constexpr):
    # grid (OW blocks, OH, N * C): one output row segment per program. align_corners=False: the source coordinate
    # (o + 0.5) * scale - 0.5 clamped at 0, its floor and the next index (clamped at the edge) gathered from the two
    # source rows and blended by the fractional parts.
    ow = tl.program_id(0) * BLOCK_W + tl.arange(0, BLOCK_W)
    oh = tl.program_id(1)
    plane = tl.program_id(2).to(tl.int64)
    w_mask = ow < OW
    src_y = tl.maximum((oh + 0.5) * scale_h - 0.5, 0.0)
    y0 = src_y.to(tl.int32)
    y1 = tl.minimum(y0 + 1, H - 1)
    ly = src_y - y0
    src_x = tl.maximum((ow + 0.5) * scale_w - 0.5, 0.0)
    x0 = src_x.to(tl.int32)
    x1 = tl.minimum(x0 + 1, W - 1)
    lx = src_x - x0
    base = X + plane * H * W
    r0 = base + y0 * W
    r1 = base + y1 * W
    v00 = tl.load(r0 + x0, mask=w_mask, other=0.0).to(tl.float32)
    v01 = tl.load(r0 + x1, mask=w_mask, other=0.0).to(tl.float32)
    v10 = tl.load(r1 + x0, mask=w_mask, other=0.0).to(tl.float32)
    v11 = tl.load(r1 + x1, mask=w_mask, other=0.0).to(tl.float32)
    top = v00 + (v01 - v00) * lx
    bot = v10 + (v11 - v10) * lx
    out = top + (bot - top) * ly
    tl.store(Y + plane * OH * OW + oh * OW + ow, out.to(Y.dtype.element_ty), mask=w_mask)


# --- 5. fused SwiGLU projection: two dots sharing the A tile ---------------------------------------------------------
@triton.jit
def swiglu_dual_dot_kernel(X, W13, OUT, M, N, K, stride_xm, stride_wn, stride_om, BLOCK_M: tl.constexpr,
                           BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # out = silu(x @ W1^T) * (x @ W3^T), W13 = [W1; W3] the merged gate_up_proj weight [2N, K] (nn.Linear layout);
    # grid (N blocks, M blocks)
    pid_n = tl.program_id(0)
    pid_m = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    x_ptrs = X + rm[:, None].to(tl.int64) * stride_xm + rk[None, :]
    w1_ptrs = W13 + rn[None, :].to(tl.int64) * stride_wn + rk[:, None]
    w3_ptrs = w1_ptrs + N * stride_wn
    gate = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    up = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_mask = rk < K - k0
        a = tl.load(x_ptrs, mask=(rm[:, None] < M) & k_mask[None, :], other=0.0)
        w_mask = k_mask[:, None] & (rn[None, :] < N)
        w1 = tl.load(w1_ptrs, mask=w_mask, other=0.0)
        w3 = tl.load(w3_ptrs, mask=w_mask, other=0.0)
        gate = tl.dot(a, w1, gate)
        up = tl.dot(a, w3, up)
        x_ptrs += BLOCK_K
        w1_ptrs += BLOCK_K
        w3_ptrs += BLOCK_K
    out = gate * tl.sigmoid(gate) * up
    tl.store(OUT + rm[:, None].to(tl.int64) * stride_om + rn[None, :], out.to(tl.float16),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


# --- 6. k-means assignment ----------------------------------------------------------------------------------------
@triton.jit
def kmeans_assign_kernel(X, C, LABELS, M, K, stride_x, stride_c, D: tl.constexpr, BLOCK_M: tl.constexpr,
                         BLOCK_K: tl.constexpr):
    # argmin_k |x - c_k|^2 = argmin_k (|c_k|^2 - 2 x . c_k): a block of points against blocks of centroids (read
    # transposed, [D, BLOCK_K]) by tl.dot, the centroid norms from the same tile, padded centroids at +inf, a
    # running minimum and its index carried across the centroid blocks (ties keep the first)
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    m_mask = rm < M
    rd = tl.arange(0, D)
    x = tl.load(X + rm[:, None].to(tl.int64) * stride_x + rd[None, :], mask=m_mask[:, None], other=0.0)
    best = tl.full([BLOCK_M], float("inf"), dtype=tl.float32)
    best_idx = tl.zeros([BLOCK_M], dtype=tl.int32)
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        k_mask = rk < K
        c = tl.load(C + rk[None, :] * stride_c + rd[:, None], mask=k_mask[None, :], other=0.0)
        c_norm = tl.sum(c * c, axis=0)
        dist = c_norm[None, :] - 2.0 * tl.dot(x, c)
        dist = tl.where(k_mask[None, :], dist, float("inf"))
        blk_min, blk_idx = tl.min(dist, axis=1, return_indices=True)
        better = blk_min < best
        best = tl.where(better, blk_min, best)
        best_idx = tl.where(better, k0 + blk_idx, best_idx)
    tl.store(LABELS + rm, best_idx, mask=m_mask)


# --- 7. float64 cosine similarity of row pairs ---------------------------------------------------------------------
@triton.jit
def cosine_rows_f64_kernel(X, Y, OUT, N, stride_x, stride_y, eps, BLOCK_N: tl.constexpr):
    # torch.nn.functional.cosine_similarity(x, y, dim=1) in float64: three per-lane accumulators over the row's
    # chunks, reduced once; x . y / max(|x| |y|, eps)
    row = tl.program_id(0).to(tl.int64)
    xy = tl.zeros([BLOCK_N], dtype=tl.float64)
    xx = tl.zeros([BLOCK_N], dtype=tl.float64)
    yy = tl.zeros([BLOCK_N], dtype=tl.float64)
    for n0 in range(0, N, BLOCK_N):
        cols = n0 + tl.arange(0, BLOCK_N)
        mask = cols < N
        x = tl.load(X + row * stride_x + cols, mask=mask, other=0.0)
        y = tl.load(Y + row * stride_y + cols, mask=mask, other=0.0)
        xy += x * y
        xx += x * x
        yy += y * y
    norm = tl.sqrt(tl.sum(xx, axis=0)) * tl.sqrt(tl.sum(yy, axis=0))
    tl.store(OUT + row, tl.sum(xy, axis=0) / tl.maximum(norm, eps))


# --- 8. discounted returns by a reversed associative scan ------------------------------------------------------------
@triton.jit
def _affine_compose(a_later, b_later, a_here, b_here):
    # G -> b + a * G maps; the reversed scan feeds the later steps' composite first
    return a_later * a_here, b_here + a_here * b_later


@triton.jit
def discounted_returns_kernel(REWARDS, DONES, LAST_VALUE, RETURNS, T, stride_r, stride_d, gamma,
                              BLOCK_T: tl.constexpr):
    # one environment per program: G_t = r_t + gamma * (1 - done_t) * G_{t+1}, G_T = the bootstrap value (folded
    # into the last reward). Lanes past T are the identity map (1, 0), so they drop out of the reversed scan.
    env = tl.program_id(0).to(tl.int64)
    t = tl.arange(0, BLOCK_T)
    mask = t < T
    r = tl.load(REWARDS + env * stride_r + t, mask=mask, other=0.0)
    done = tl.load(DONES + env * stride_d + t, mask=mask, other=1)
    g = tl.where(done != 0, 0.0, gamma)
    bootstrap = tl.load(LAST_VALUE + env)
    r = tl.where(t == T - 1, r + g * bootstrap, r)
    a = tl.where(mask, g, 1.0)
    _, ret = tl.associative_scan((a, r), axis=0, combine_fn=_affine_compose, reverse=True)
    tl.store(RETURNS + env * stride_r + t, ret, mask=mask)


# --- 9. hashed embedding lookup ---------------------------------------------------------------------------------------
@triton.jit
def hash_embedding_kernel(IDS, TABLE, OUT, BUCKETS, n_tokens, dim, num_buckets, seed, stride_t, stride_o,
                          BLOCK_T: tl.constexpr, BLOCK_D: tl.constexpr):
    # the hashing trick: an int64 feature id folded to 32 bits, xor'ed with the seed and mixed by fmix32
    # (MurmurHash3's finalizer: uint32 multiplies that wrap, logical shifts); the bucket's table row gathered.
    # grid (token blocks, dim blocks); the dim-0 programs also write the bucket.
    rt = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    rd = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    t_mask = rt < n_tokens
    ids = tl.load(IDS + rt, mask=t_mask, other=0)
    lo = ids.to(tl.uint32)
    hi = (ids >> 32).to(tl.uint32)
    h = lo ^ (hi * 0x9E3779B1) ^ seed.to(tl.uint32)
    h ^= h >> 16
    h *= 0x85EBCA6B
    h ^= h >> 13
    h *= 0xC2B2AE35
    h ^= h >> 16
    bucket = (h % num_buckets.to(tl.uint32)).to(tl.int64)
    if tl.program_id(1) == 0:
        tl.store(BUCKETS + rt, bucket.to(tl.int32), mask=t_mask)
    mask = t_mask[:, None] & (rd[None, :] < dim)
    rows = tl.load(TABLE + bucket[:, None] * stride_t + rd[None, :], mask=mask, other=0.0)
    tl.store(OUT + rt[:, None].to(tl.int64) * stride_o + rd[None, :], rows, mask=mask)


# --- 10. Mamba-2 gated group RMSNorm ---------------------------------------------------------------------------------
@triton.jit
def rmsnorm_gated_group_kernel(X, Z, W, Y, RSTD, group_size, stride_x, stride_z, stride_y, eps,
                               BLOCK_G: tl.constexpr):
    # grid (rows, groups): y = rmsnorm(x * silu(z)) * w with the mean square taken over each group of group_size
    # columns (not a power of two: masked), the group's 1/rms saved for the backward
    row = tl.program_id(0).to(tl.int64)
    group = tl.program_id(1)
    n_groups = tl.num_programs(1)
    offs = tl.arange(0, BLOCK_G)
    mask = offs < group_size
    cols = group * group_size + offs
    x = tl.load(X + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    z = tl.load(Z + row * stride_z + cols, mask=mask, other=0.0).to(tl.float32)
    x = x * z * tl.sigmoid(z)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / group_size + eps)
    tl.store(RSTD + row * n_groups + group, rstd)
    w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(Y + row * stride_y + cols, (x * rstd * w).to(Y.dtype.element_ty), mask=mask)


# --- host side --------------------------------------------------------------------------------------------------------
def _softmax64(z):
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def _top_p_margin(p_rows, top_p):
    """Per row: the distance of top_p from the nearest mass of strictly larger probabilities (the only sums the
    kept set depends on: equal probabilities are kept or dropped together)."""
    out = np.empty(len(p_rows))
    for i, p in enumerate(p_rows):
        vals, counts = np.unique(p, return_counts=True)
        vals, counts = vals[::-1], counts[::-1]
        mass_before = np.concatenate([[0.0], np.cumsum(vals * counts)[:-1]])
        out[i] = np.min(np.abs(mass_before - top_p))
    return out


def top_p_inputs(p, rng):
    # logits on a 1/4 grid (bf16 logits of a real model tie too): the kept set changes only where the mass of
    # all larger probabilities crosses top_p, and a row where that lands within 1e-4 of top_p (float32 rounding
    # could go either way) is drawn again
    R, V = p["R"], p["V"]
    logits = np.round(rng.standard_normal((R, V)) * 2.0 * 4.0) / 4.0
    inv_t = np.float64(np.float32(1.0 / p["temperature"]))
    for _ in range(100):
        probs = _softmax64(logits.astype(np.float32).astype(np.float64) * inv_t)
        bad = np.nonzero(_top_p_margin(probs, np.float64(np.float32(p["top_p"]))) < 1e-4)[0]
        if not len(bad):
            break
        logits[bad] = np.round(rng.standard_normal((len(bad), V)) * 2.0 * 4.0) / 4.0
    return {"logits": cast(logits.astype(np.float32), "bfloat16")}


def top_p_ref(p, x):
    inv_t = np.float64(np.float32(1.0 / p["temperature"]))
    top_p = np.float64(np.float32(p["top_p"]))

    def rows(i):
        lo, hi = i * step, min((i + 1) * step, p["R"])
        probs = _softmax64(x["logits"][lo:hi] * inv_t)
        ordered = -np.sort(-probs, axis=1)
        before = np.cumsum(ordered, axis=1) - ordered
        thr = np.where(before < top_p, ordered, np.inf).min(axis=1, keepdims=True)
        kept = np.where(probs >= thr, probs, 0.0)
        return kept / kept.sum(axis=1, keepdims=True)

    step = max(1, cdiv(p["R"], 32))
    return {"probs": np.concatenate(pmap(rows, cdiv(p["R"], step)))}


def top_p_launch(p, a, m):
    R, V = p["R"], p["V"]
    return (R,), [a["logits"], a["probs"], V, V, V, 1.0 / p["temperature"], p["top_p"]]


def moe_inputs(p, rng):
    # router choices skewed toward a few hot experts, top_k distinct experts per token
    T, k, E = p["tokens"], p["top_k"], p["experts"]
    w = rng.random(E) ** 3 + 0.01
    w /= w.sum()
    ids = np.stack([rng.choice(E, size=k, replace=False, p=w) for _ in range(T)]) if T <= 4096 else \
        rng.choice(E, size=(T, k), p=w)
    return {"topk_ids": ids.astype(np.int32).reshape(-1)}


def moe_ref(p, x):
    E, bm = p["experts"], p["block_size_m"]
    counts = np.bincount(x["topk_ids"].astype(np.int64), minlength=E).astype(np.float64)
    padded = np.ceil(counts / bm) * bm
    offsets = np.concatenate([np.cumsum(padded) - padded, [padded.sum()]])
    return {"counts": counts, "offsets": offsets, "ticket": np.zeros(1)}


def moe_launch(p, a, m):
    n = p["tokens"] * p["top_k"]
    return (cdiv(n, m["BLOCK"]),), [a["topk_ids"], a["counts"], a["offsets"], a["ticket"], n]


def scan_inputs(p, rng):
    B, L, D, N = p["B"], p["L"], p["D"], p["N"]
    return {"x": randn(rng, (B, L, D), "float16"), "dt": randn(rng, (B, L, D), "float16", 0.5, -1.0),
            "dt_bias": uniform(rng, (D,), -0.5, 0.5),
            "A": -np.exp(uniform(rng, (D, N), -1.0, 1.5)), "Bm": randn(rng, (B, L, N), "float16"),
            "Cm": randn(rng, (B, L, N), "float16"), "Dskip": uniform(rng, (D,), 0.5, 1.5),
            "z": randn(rng, (B, L, D), "float16")}


def scan_ref(p, x):
    B, L, D, N = p["B"], p["L"], p["D"], p["N"]

    def batch(b):
        h = np.zeros((D, N))
        y = np.empty((L, D))
        for t in range(L):
            dt = x["dt"][b, t] + x["dt_bias"]
            dt = np.where(dt > 20.0, dt, np.log1p(np.exp(dt)))
            xt = x["x"][b, t]
            h = np.exp(dt[:, None] * x["A"]) * h + (dt * xt)[:, None] * x["Bm"][b, t][None, :]
            z = x["z"][b, t]
            y[t] = (h @ x["Cm"][b, t] + x["Dskip"] * xt) * z / (1.0 + np.exp(-z))
        return y

    return {"y": np.stack(pmap(batch, B))}


def scan_launch(p, a, m):
    B, L, D, N = p["B"], p["L"], p["D"], p["N"]
    return (cdiv(D, m["BLOCK_D"]), B), [a["x"], a["dt"], a["dt_bias"], a["A"], a["Bm"], a["Cm"], a["Dskip"], a["z"],
                                        a["y"], L, D, L * D, D, L * N, N]


def _bilinear_axis(n_in, n_out):
    scale = np.float64(np.float32(n_in / n_out))
    src = np.maximum((np.arange(n_out) + 0.5) * scale - 0.5, 0.0)
    i0 = np.floor(src).astype(np.int64)
    return i0, np.minimum(i0 + 1, n_in - 1), src - i0


def bilinear_ref(p, x):
    y0, y1, ly = _bilinear_axis(p["H"], p["OH"])
    x0, x1, lx = _bilinear_axis(p["W"], p["OW"])
    img = x["x"].reshape(-1, p["H"], p["W"])

    def planes(i):
        v = img[i * step:(i + 1) * step]
        top = v[:, y0][:, :, x0] * (1 - lx) + v[:, y0][:, :, x1] * lx
        bot = v[:, y1][:, :, x0] * (1 - lx) + v[:, y1][:, :, x1] * lx
        return top * (1 - ly)[:, None] + bot * ly[:, None]

    P = img.shape[0]
    step = max(1, cdiv(P, 32))
    out = np.concatenate(pmap(planes, cdiv(P, step)))
    return {"y": out.reshape(p["N"], p["C"], p["OH"], p["OW"])}


def bilinear_launch(p, a, m):
    H, W, OH, OW = p["H"], p["W"], p["OH"], p["OW"]
    return (cdiv(OW, m["BLOCK_W"]), OH, p["N"] * p["C"]), [a["x"], a["y"], H, W, OH, OW, H / OH, W / OW]


def swiglu_ref(p, x):
    N = p["N"]
    w = x["w13"]

    def rows(i):
        xs = x["x"][i * step:(i + 1) * step]
        g, u = xs @ w[:N].T, xs @ w[N:].T
        return g / (1.0 + np.exp(-g)) * u

    step = max(1, cdiv(p["M"], 16))
    return {"out": np.concatenate(pmap(rows, cdiv(p["M"], step)))}


def swiglu_launch(p, a, m):
    M, N, K = p["M"], p["N"], p["K"]
    return (cdiv(N, m["BLOCK_N"]), cdiv(M, m["BLOCK_M"])), [a["x"], a["w13"], a["out"], M, N, K, K, K, N]


def kmeans_inputs(p, rng):
    # points near their centroids (well apart): the nearest centroid is never a near tie, so tf32 products agree
    M, K, D = p["M"], p["K"], p["D"]
    cent = rng.standard_normal((K, D), dtype=np.float32)
    owner = rng.integers(0, K, M)
    pts = cent[owner] + np.float32(0.05) * rng.standard_normal((M, D), dtype=np.float32)
    return {"x": pts.astype(np.float32), "c": cent}


def kmeans_ref(p, x):
    c = x["c"]
    cn = (c * c).sum(axis=1)

    def rows(i):
        xs = x["x"][i * step:(i + 1) * step]
        return np.argmin(cn[None, :] - 2.0 * xs @ c.T, axis=1).astype(np.float64)

    step = max(1, cdiv(p["M"], 64))
    return {"labels": np.concatenate(pmap(rows, cdiv(p["M"], step)))}


def kmeans_launch(p, a, m):
    M, K, D = p["M"], p["K"], p["D"]
    return (cdiv(M, m["BLOCK_M"]),), [a["x"], a["c"], a["labels"], M, K, D, D]


def cosine_inputs(p, rng):
    # y correlated with x (cosines spread over (-1, 1)), rows of different norms
    M, N = p["M"], p["N"]
    x = rng.standard_normal((M, N)) * rng.uniform(0.1, 10.0, (M, 1))
    mix = rng.uniform(-1.0, 1.0, (M, 1))
    y = mix * x + rng.standard_normal((M, N)) * rng.uniform(0.1, 10.0, (M, 1))
    return {"x": x, "y": y}


def cosine_ref(p, x):
    a, b = x["x"], x["y"]
    norm = np.sqrt((a * a).sum(axis=1)) * np.sqrt((b * b).sum(axis=1))
    return {"out": (a * b).sum(axis=1) / np.maximum(norm, p["eps"])}


def cosine_launch(p, a, m):
    M, N = p["M"], p["N"]
    return (M,), [a["x"], a["y"], a["out"], N, N, N, p["eps"]]


def returns_inputs(p, rng):
    E, T = p["E"], p["T"]
    return {"rewards": randn(rng, (E, T), "float32", 1.0, 0.1),
            "dones": (rng.random((E, T)) < 0.01).astype(np.int8),
            "last_value": randn(rng, (E,), "float32", 5.0)}


def returns_ref(p, x):
    E, T, gamma = p["E"], p["T"], np.float64(np.float32(p["gamma"]))
    g = np.where(x["dones"] != 0, 0.0, gamma)
    out = np.empty((E, T))
    G = x["last_value"].copy()
    for t in range(T - 1, -1, -1):
        G = x["rewards"][:, t] + g[:, t] * G
        out[:, t] = G
    return {"returns": out}


def returns_launch(p, a, m):
    E, T = p["E"], p["T"]
    return (E,), [a["rewards"], a["dones"], a["last_value"], a["returns"], T, T, T, p["gamma"]]


M32 = np.uint64(0xFFFFFFFF)


def _fmix_bucket(ids, seed, buckets):
    ids = ids.astype(np.int64)
    lo = ids.astype(np.uint64) & M32
    hi = (ids >> 32).astype(np.uint64) & M32
    h = lo ^ ((hi * np.uint64(0x9E3779B1)) & M32) ^ np.uint64(seed & 0xFFFFFFFF)
    h ^= h >> np.uint64(16)
    h = (h * np.uint64(0x85EBCA6B)) & M32
    h ^= h >> np.uint64(13)
    h = (h * np.uint64(0xC2B2AE35)) & M32
    h ^= h >> np.uint64(16)
    return (h % np.uint64(buckets)).astype(np.int64)


def hash_inputs(p, rng):
    return {"ids": rng.integers(1, 1 << 40, p["n"], dtype=np.int64),
            "table": randn(rng, (p["buckets"], p["dim"]), "float16")}


def hash_ref(p, x):
    b = _fmix_bucket(x["ids"].astype(np.int64), p["seed"], p["buckets"])
    return {"out": x["table"][b], "buckets": b.astype(np.float64)}


def hash_launch(p, a, m):
    n, dim = p["n"], p["dim"]
    return (cdiv(n, m["BLOCK_T"]), cdiv(dim, m["BLOCK_D"])), [a["ids"], a["table"], a["out"], a["buckets"], n, dim,
                                                              p["buckets"], p["seed"], dim, dim]


def gated_inputs(p, rng):
    M, N = p["M"], p["G"] * p["group"]
    return {"x": randn(rng, (M, N), "bfloat16", 1.5), "z": randn(rng, (M, N), "bfloat16"),
            "w": uniform(rng, (N,), 0.5, 1.5, "bfloat16")}


def gated_ref(p, x):
    M, G, gs = p["M"], p["G"], p["group"]
    z = x["z"]
    h = (x["x"] * z / (1.0 + np.exp(-z))).reshape(M, G, gs)
    rstd = 1.0 / np.sqrt((h * h).mean(axis=2) + p["eps"])
    return {"y": (h * rstd[:, :, None]).reshape(M, G * gs) * x["w"][None, :], "rstd": rstd}


def gated_launch(p, a, m):
    M, G, gs = p["M"], p["G"], p["group"]
    N = G * gs
    return (M, G), [a["x"], a["z"], a["w"], a["y"], a["rstd"], gs, N, N, N, p["eps"]]


CASES = [
    Case("top_p_renorm_bf16", top_p_renorm_kernel, top_p_inputs,
         lambda p: {"probs": ((p["R"], p["V"]), "float32")}, top_p_ref, top_p_launch,
         gpu={"R": 4096, "V": 3000, "temperature": 0.8, "top_p": 0.9},
         ci={"R": 6, "V": 300, "temperature": 0.8, "top_p": 0.9},
         meta={"BLOCK_V": 4096, "num_warps": 8}, ci_meta={"BLOCK_V": 512, "num_warps": 4},
         tol={"float32": (2e-5, 1e-6)}, flops=lambda p: 10.0 * p["R"] * p["V"],
         bytes=lambda p: 6.0 * p["R"] * p["V"],
         idiom="nucleus (top-p) sampling's renormalized distribution: softmax(logits / T) of a bf16 row, tl.sort "
               "descending + tl.cumsum for the mass before each sorted probability, the smallest kept one by "
               "tl.min(tl.where(before < top_p, sorted, inf)) as a threshold back on the unsorted row, renormalized"),
    Case("moe_align_histogram_i32", moe_align_histogram_kernel, moe_inputs,
         lambda p: {"counts": ((p["experts"],), "int32"), "offsets": ((p["experts"] + 1,), "int32"),
                    "ticket": ((1,), "int32")}, moe_ref, moe_launch,
         gpu={"tokens": 1 << 21, "top_k": 8, "experts": 64, "block_size_m": 64},
         ci={"tokens": 300, "top_k": 2, "experts": 16, "block_size_m": 16},
         meta={"NUM_EXPERTS": 64, "BLOCK_SIZE_M": 64, "BLOCK": 4096, "num_warps": 4},
         ci_meta={"NUM_EXPERTS": 16, "BLOCK_SIZE_M": 16, "BLOCK": 128, "num_warps": 2},
         zero=("counts", "ticket"), flops=lambda p: 1.0 * p["tokens"] * p["top_k"],
         bytes=lambda p: 4.0 * p["tokens"] * p["top_k"],
         idiom="MoE token alignment: tl.histogram of a block of int32 top-k expert ids (padding lanes subtracted "
               "from bin 0), one vector tl.atomic_add into the counts; the last program by a scalar atomic ticket "
               "loads the counts (volatile), pads them to BLOCK_SIZE_M and writes exclusive tl.cumsum offsets plus "
               "the total, then resets the ticket by tl.atomic_xchg"),
    Case("selective_scan_f16", selective_scan_kernel, scan_inputs,
         lambda p: {"y": ((p["B"], p["L"], p["D"]), "float16")}, scan_ref, scan_launch,
         gpu={"B": 8, "L": 2048, "D": 2048, "N": 16}, ci={"B": 2, "L": 24, "D": 40, "N": 16},
         meta={"DSTATE": 16, "BLOCK_D": 64, "num_warps": 4}, ci_meta={"DSTATE": 16, "BLOCK_D": 16, "num_warps": 2},
         tol={"float16": (4e-3, 2e-3)}, flops=lambda p: 9.0 * p["B"] * p["L"] * p["D"] * p["N"],
         bytes=lambda p: 8.0 * p["B"] * p["L"] * p["D"] + 4.0 * p["B"] * p["L"] * p["N"],
         idiom="Mamba selective scan: grid (D blocks, batch), a [BLOCK_D, DSTATE] fp32 state carried through "
               "for t in range(L); dt = softplus(dt + bias) by tl.where(dt > 20, dt, log(1 + exp(dt))), "
               "h = exp(dt * A) * h + (dt * x) B_t, y = tl.sum(h * C_t, axis=1) + D x gated by z * sigmoid(z)"),
    Case("bilinear_resize_f16", bilinear_resize_kernel,
         lambda p, rng: {"x": randn(rng, (p["N"], p["C"], p["H"], p["W"]), "float16")},
         lambda p: {"y": ((p["N"], p["C"], p["OH"], p["OW"]), "float16")}, bilinear_ref, bilinear_launch,
         gpu={"N": 8, "C": 64, "H": 256, "W": 256, "OH": 400, "OW": 400},
         ci={"N": 2, "C": 3, "H": 13, "W": 17, "OH": 20, "OW": 29},
         meta={"BLOCK_W": 128, "num_warps": 1}, ci_meta={"BLOCK_W": 16, "num_warps": 1},
         flops=lambda p: 12.0 * p["N"] * p["C"] * p["OH"] * p["OW"],
         bytes=lambda p: 2.0 * p["N"] * p["C"] * (p["H"] * p["W"] + p["OH"] * p["OW"]),
         idiom="F.interpolate(mode='bilinear', align_corners=False) over NCHW fp16: 3-D grid (OW blocks, OH, N*C), "
               "source coordinates (o + 0.5) * scale - 0.5 clamped at 0, truncated to int32 indices with the next "
               "clamped at the edge, four gathers blended by the fractional weights"),
    Case("swiglu_dual_dot_f16", swiglu_dual_dot_kernel,
         lambda p, rng: {"x": randn(rng, (p["M"], p["K"]), "float16"),
                         "w13": randn(rng, (2 * p["N"], p["K"]), "float16", p["K"] ** -0.5)},
         lambda p: {"out": ((p["M"], p["N"]), "float16")}, swiglu_ref, swiglu_launch,
         gpu={"M": 2048, "N": 5632, "K": 2048}, ci={"M": 40, "N": 56, "K": 72},
         meta={"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 64, "num_warps": 8, "num_stages": 3},
         ci_meta={"BLOCK_M": 16, "BLOCK_N": 32, "BLOCK_K": 32, "num_warps": 4},
         tol={"float16": (1e-2, 5e-3)}, flops=lambda p: 4.0 * p["M"] * p["N"] * p["K"],
         bytes=lambda p: 2.0 * (p["M"] * p["K"] + 2 * p["N"] * p["K"] + p["M"] * p["N"]),
         idiom="fused SwiGLU MLP up-projection: one A tile feeding two tl.dot accumulators, gate and up halves "
               "of a merged [2N, K] nn.Linear weight read transposed (W1 rows and W3 = W1 + N * stride), pointers "
               "advanced by += BLOCK_K, silu(gate) * up epilogue; grid (N blocks, M blocks)"),
    Case("kmeans_assign_f32", kmeans_assign_kernel, kmeans_inputs,
         lambda p: {"labels": ((p["M"],), "int32")}, kmeans_ref, kmeans_launch,
         gpu={"M": 1 << 20, "K": 1024, "D": 64}, ci={"M": 150, "K": 37, "D": 32},
         meta={"D": 64, "BLOCK_M": 128, "BLOCK_K": 64, "num_warps": 4},
         ci_meta={"D": 32, "BLOCK_M": 32, "BLOCK_K": 16, "num_warps": 4},
         flops=lambda p: 2.0 * p["M"] * p["K"] * p["D"],
         bytes=lambda p: 4.0 * p["M"] * (p["D"] + 1) + 4.0 * p["K"] * p["D"],
         idiom="k-means assignment: tl.dot of a float32 point block with transposed centroid blocks (tf32), "
               "|c|^2 from the same tile by tl.sum(c * c, axis=0), padded centroids at +inf, per-block "
               "tl.min(..., return_indices=True) merged into a running argmin over K"),
    Case("cosine_rows_f64", cosine_rows_f64_kernel, cosine_inputs,
         lambda p: {"out": ((p["M"],), "float64")}, cosine_ref, cosine_launch,
         gpu={"M": 2048, "N": 8192, "eps": 1e-8}, ci={"M": 7, "N": 300, "eps": 1e-8},
         meta={"BLOCK_N": 1024, "num_warps": 4}, ci_meta={"BLOCK_N": 128, "num_warps": 1},
         tol={"float64": (1e-12, 1e-13)}, flops=lambda p: 6.0 * p["M"] * p["N"],
         bytes=lambda p: 16.0 * p["M"] * p["N"] + 8.0 * p["M"],
         idiom="F.cosine_similarity(x, y, dim=1) in float64: three float64 per-lane accumulators over a looped "
               "row, tl.sum, tl.sqrt of each norm, x . y / tl.maximum(|x| |y|, eps)"),
    Case("discounted_returns_f32", discounted_returns_kernel, returns_inputs,
         lambda p: {"returns": ((p["E"], p["T"]), "float32")}, returns_ref, returns_launch,
         gpu={"E": 16384, "T": 1000, "gamma": 0.99}, ci={"E": 5, "T": 300, "gamma": 0.99},
         meta={"BLOCK_T": 1024, "num_warps": 4}, ci_meta={"BLOCK_T": 512, "num_warps": 2},
         tol={"float32": (1e-5, 1e-6)}, flops=lambda p: 4.0 * p["E"] * p["T"],
         bytes=lambda p: 9.0 * p["E"] * p["T"] + 4.0 * p["E"],
         idiom="RL discounted returns with episode ends: G_t = r_t + gamma (1 - done_t) G_{t+1} by "
               "tl.associative_scan over (a, b) affine maps with reverse=True and a two-tensor combine_fn, int8 "
               "done flags, the bootstrap value folded into the last reward, lanes past T the identity (1, 0)"),
    Case("hash_embedding_f16", hash_embedding_kernel, hash_inputs,
         lambda p: {"out": ((p["n"], p["dim"]), "float16"), "buckets": ((p["n"],), "int32")}, hash_ref,
         hash_launch,
         gpu={"n": (1 << 20) + 3, "dim": 128, "buckets": 500009, "seed": 0x5EED},
         ci={"n": 37, "dim": 48, "buckets": 101, "seed": 0x5EED},
         meta={"BLOCK_T": 32, "BLOCK_D": 128, "num_warps": 4}, ci_meta={"BLOCK_T": 16, "BLOCK_D": 32, "num_warps": 2},
         tol={"float16": (0.0, 0.0)}, flops=lambda p: 12.0 * p["n"],
         bytes=lambda p: 4.0 * p["n"] * p["dim"] + 12.0 * p["n"],
         idiom="hashing-trick embedding: int64 ids split into uint32 halves, MurmurHash3 fmix32 (h ^= h >> 16; "
               "h *= 0x85EBCA6B: uint32 literals above 2^31, wrapping multiplies, logical shifts), bucket = h % "
               "num_buckets (unsigned), fp16 table rows gathered on a 2-D (token, dim) grid, buckets stored by the "
               "dim-0 programs only"),
    Case("rmsnorm_gated_group_bf16", rmsnorm_gated_group_kernel, gated_inputs,
         lambda p: {"y": ((p["M"], p["G"] * p["group"]), "bfloat16"), "rstd": ((p["M"], p["G"]), "float32")},
         gated_ref, gated_launch,
         gpu={"M": 8192, "G": 8, "group": 640, "eps": 1e-5}, ci={"M": 6, "G": 3, "group": 40, "eps": 1e-5},
         meta={"BLOCK_G": 1024, "num_warps": 2}, ci_meta={"BLOCK_G": 64, "num_warps": 1},
         tol={"bfloat16": (1e-2, 2e-3), "float32": (1e-5, 1e-6)}, flops=lambda p: 10.0 * p["M"] * p["G"] * p["group"],
         bytes=lambda p: 6.0 * p["M"] * p["G"] * p["group"] + 4.0 * p["M"] * p["G"],
         idiom="Mamba-2 RMSNormGated: x * silu(z) normalized per group of 640 columns (masked in a 1024 block) on "
               "a (row, group) grid, tl.rsqrt of the group's mean square, n_groups from tl.num_programs(1), "
               "1/rms saved per (row, group)"),
]
