"""Twelve more idioms, each leaning on a part of the language the corpus had barely touched: the normalized
cross-power spectrum of phase correlation on interleaved complex64, (re, im) pairs taken apart by tl.split of a
[BLOCK, 2] tile and put back by tl.interleave; a segmented inclusive sum under head flags, tl.associative_scan over a
(value, flag) tuple along axis 1 of a 2-D tile with a per-row carry between chunks; stick-breaking weights by
tl.cumprod of (1 - v) along rows, the exclusive product by division, the chunk's product by a user multiply combine
in tl.reduce; MinHash signatures, uint32 multiply-xorshift hashing of int32 tokens against NUM_HASH seeds
(logical shifts, wrapping products, uint32 literals above 2^31), an unsigned tl.min, Lemire range reduction by
tl.umulhi and a tl.xor_sum fingerprint; 4-bit group quantization, a [BLOCK_M, BLOCK_K] tile reshaped to
[BLOCK_M, groups, GROUP] for per-group absmax, the nibbles paired by a reshape + tl.split and packed into uint8 by
shifts; NaN-propagating clamp and row max (tl.maximum / tl.minimum with propagate_nan=tl.PropagateNan.ALL, also as a
tl.reduce combine), NaNs made in the kernel from a validity mask; Triton's persistent matmul on in-kernel tensor
descriptors (tl.make_tensor_descriptor, desc.load, b.T, tl.range(..., flatten=True), epilogue subtiled by
reshape + permute + split into two desc.store) with a leaky-ReLU bf16 epilogue; an error-free compensated dot
product (TwoProduct by tl.fma, Knuth's TwoSum) on ill-conditioned rows; torch.bucketize as a vectorized binary
search, gathered loads of the boundaries under a runtime step loop, a constexpr `right`, int64 out; stochastic
rounding to bfloat16 from tl.randint bits added to the float32 bit pattern (bitcasts, uint32 masks); int16 PCM frame
statistics whose peak-to-peak max - min needs Triton's int32 widening of small-integer tl.max / tl.min; and per-row
stream compaction, an exclusive tl.cumsum of the keep mask as scatter positions with a carried count, then the tail
zero-filled.
"""
import numpy as np
import triton
import triton.language as tl

from workloads.corpus._case import Case, cdiv, philox_word0, randn, uniform


# --- 1. phase correlation: normalized cross-power spectrum of interleaved complex64 -----------------------------------
@triton.jit
def cross_power_phase_kernel(X, Y, OUT, N, eps, BLOCK: tl.constexpr):
    # X, Y, OUT: N complex64 values as float32 (re, im) pairs. out = x conj(y) / (|x conj(y)| + eps)
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    pair = tl.arange(0, 2)
    mask = offs[:, None] < N
    x = tl.load(X + offs[:, None] * 2 + pair[None, :], mask=mask, other=0.0)
    y = tl.load(Y + offs[:, None] * 2 + pair[None, :], mask=mask, other=0.0)
    xr, xi = tl.split(x)
    yr, yi = tl.split(y)
    zr = xr * yr + xi * yi
    zi = xi * yr - xr * yi
    inv = 1.0 / (tl.sqrt(zr * zr + zi * zi) + eps)
    out = tl.interleave(zr * inv, zi * inv)
    o = pid * 2 * BLOCK + tl.arange(0, 2 * BLOCK)
    tl.store(OUT + o, out, mask=o < 2 * N)


# --- 2. segmented inclusive sum under head flags ----------------------------------------------------------------------
@triton.jit
def _segmented_add(v1, f1, v2, f2):
    return tl.where(f2 != 0, v2, v1 + v2), f1 | f2


@triton.jit
def segmented_cumsum_kernel(X, FLAGS, Y, R, N, stride_r, BLOCK_R: tl.constexpr, BLOCK_N: tl.constexpr):
    # y[r, i] = sum of x[r, j] for j from the last flagged position <= i (or the row start) to i
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.arange(0, BLOCK_N)
    row_ok = rows < R
    base = rows[:, None].to(tl.int64) * stride_r
    carry = tl.zeros([BLOCK_R], dtype=tl.float32)
    for start in range(0, N, BLOCK_N):
        c = start + cols
        mask = row_ok[:, None] & (c[None, :] < N)
        x = tl.load(X + base + c[None, :], mask=mask, other=0.0)
        f = tl.load(FLAGS + base + c[None, :], mask=mask, other=0).to(tl.int32)
        v, seen = tl.associative_scan((x, f), 1, _segmented_add)
        y = v + tl.where(seen == 0, carry[:, None], 0.0)
        tl.store(Y + base + c[None, :], y, mask=mask)
        carry = tl.sum(tl.where(cols[None, :] == BLOCK_N - 1, y, 0.0), axis=1)


# --- 3. stick-breaking weights by tl.cumprod -------------------------------------------------------------------------
@triton.jit
def _mul_combine(a, b):
    return a * b


@triton.jit
def stick_breaking_kernel(V, W, REM, R, N, BLOCK_R: tl.constexpr, BLOCK_N: tl.constexpr):
    # w[r, i] = v[r, i] * prod_{j < i} (1 - v[r, j]); rem[r] = prod_j (1 - v[r, j])
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.arange(0, BLOCK_N)
    row_ok = rows < R
    base = rows[:, None].to(tl.int64) * N
    carry = tl.full([BLOCK_R], 1.0, dtype=tl.float32)
    for start in range(0, N, BLOCK_N):
        c = start + cols
        mask = row_ok[:, None] & (c[None, :] < N)
        v = tl.load(V + base + c[None, :], mask=mask, other=0.0).to(tl.float32)
        keep = 1.0 - v
        incl = tl.cumprod(keep, axis=1)
        w = v * (incl / keep) * carry[:, None]
        tl.store(W + base + c[None, :], w, mask=mask)
        carry = carry * tl.reduce(keep, 1, _mul_combine)
    tl.store(REM + rows, carry, mask=row_ok)


# --- 4. MinHash signatures --------------------------------------------------------------------------------------------
@triton.jit
def minhash_kernel(TOK, LENS, HA, HB, SIG, BUCKET, FP, stride_t, n_buckets, NUM_HASH: tl.constexpr,
                   BLOCK_L: tl.constexpr):
    # one document (a row of int32 token ids, its own length) per program; h_j(t) = mix(t * a_j + b_j) in uint32,
    # sig[j] = min over the tokens, bucket[j] = floor(sig[j] * n_buckets / 2^32), fp = xor of the tokens
    row = tl.program_id(0)
    length = tl.load(LENS + row)
    hj = tl.arange(0, NUM_HASH)
    a = tl.load(HA + hj)
    b = tl.load(HB + hj)
    lanes = tl.arange(0, BLOCK_L)
    best = tl.full([NUM_HASH], 0xFFFFFFFF, dtype=tl.uint32)
    fp = tl.zeros([BLOCK_L], dtype=tl.int32)
    for start in range(0, length, BLOCK_L):
        idx = start + lanes
        ok = idx < length
        t = tl.load(TOK + row.to(tl.int64) * stride_t + idx, mask=ok, other=0)
        fp ^= t
        h = t.to(tl.uint32)[:, None] * a[None, :] + b[None, :]
        h ^= h >> 16
        h *= 0x45D9F3B
        h ^= h >> 16
        h = tl.where(ok[:, None], h, 0xFFFFFFFF)
        best = tl.minimum(best, tl.min(h, axis=0))
    tl.store(SIG + row * NUM_HASH + hj, best)
    tl.store(BUCKET + row * NUM_HASH + hj, tl.umulhi(best, n_buckets.to(tl.uint32)).to(tl.int32))
    tl.store(FP + row, tl.xor_sum(fp, axis=0))


# --- 5. 4-bit group quantization, nibbles packed into uint8 --------------------------------------------------------
@triton.jit
def q4_group_quant_kernel(X, Q, S, M, K, stride_xm, GROUP: tl.constexpr, BLOCK_M: tl.constexpr,
                          BLOCK_K: tl.constexpr):
    # symmetric int4 per group of GROUP values along K: scale = absmax / 7, q = clamp(round(x / scale), -8, 7) + 8,
    # element 2i in the low nibble of byte i, 2i + 1 in the high one. K is a multiple of GROUP, not of BLOCK_K.
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    m_ok = rm < M
    NG: tl.constexpr = BLOCK_K // GROUP
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        x = tl.load(X + rm[:, None].to(tl.int64) * stride_xm + rk[None, :], mask=m_ok[:, None] & (rk[None, :] < K),
                    other=0.0).to(tl.float32)
        xg = tl.reshape(x, [BLOCK_M, NG, GROUP])
        amax = tl.max(tl.abs(xg), axis=2)
        scale = tl.where(amax > 0, amax / 7.0, 1.0)
        q = tl.floor(xg / scale[:, :, None] + 0.5)
        q = tl.clamp(q, -8.0, 7.0) + 8.0
        qi = tl.reshape(q.to(tl.uint8), [BLOCK_M, BLOCK_K // 2, 2])
        lo, hi = tl.split(qi)
        packed = lo | (hi << 4)
        rp = k0 // 2 + tl.arange(0, BLOCK_K // 2)
        tl.store(Q + rm[:, None].to(tl.int64) * (K // 2) + rp[None, :], packed,
                 mask=m_ok[:, None] & (rp[None, :] < K // 2))
        rg = k0 // GROUP + tl.arange(0, NG)
        tl.store(S + rm[:, None] * (K // GROUP) + rg[None, :], scale.to(S.dtype.element_ty),
                 mask=m_ok[:, None] & (rg[None, :] < K // GROUP))


# --- 6. NaN-propagating clamp and row max ----------------------------------------------------------------------------
@triton.jit
def _nan_max(a, b):
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def nan_clamp_rowmax_kernel(X, VALID, Y, ROWMAX, NANS, M, N, lo, hi, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # missing values (valid == 0) become NaN and must survive the clamp and the row max; the outputs mark them by
    # sentinels (y = -999, rowmax = 999) and count them per row
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.arange(0, BLOCK_N)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    offs = rm[:, None] * N + rn[None, :]
    x = tl.load(X + offs, mask=mask, other=0.0)
    ok = tl.load(VALID + offs, mask=mask, other=1)
    x = tl.where(ok != 0, x, float("nan"))
    y = tl.minimum(tl.maximum(x, lo, propagate_nan=tl.PropagateNan.ALL), hi, propagate_nan=tl.PropagateNan.ALL)
    isnan = y != y
    tl.store(Y + offs, tl.where(isnan, -999.0, y), mask=mask)
    rmax = tl.reduce(tl.where(mask, x, float("-inf")), 1, _nan_max)
    tl.store(ROWMAX + rm, tl.where(rmax != rmax, 999.0, rmax), mask=rm < M)
    tl.store(NANS + rm, tl.sum(isnan.to(tl.int32), axis=1), mask=rm < M)


# --- 7. persistent matmul on in-kernel tensor descriptors (Triton's tutorial 09) -------------------------------------
@triton.jit
def _compute_pid(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M: tl.constexpr):
    group_id = tile_id // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + (tile_id % group_size_m)
    pid_n = (tile_id % num_pid_in_group) // group_size_m
    return pid_m, pid_n


@triton.jit
def matmul_descriptor_persistent_kernel(a_ptr, b_ptr, c_ptr, M, N, K, negative_slope,
                                        BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
                                        BLOCK_SIZE_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr,
                                        EPILOGUE_SUBTILE: tl.constexpr, NUM_SMS: tl.constexpr):
    # C = leaky_relu(A @ B^T), A [M, K], B [N, K] (nn.Linear's weight), C [M, N], all bf16; out-of-bounds tiles are
    # zero-filled on load and clipped on store by the descriptors
    dtype = c_ptr.dtype.element_ty
    start_pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    k_tiles = tl.cdiv(K, BLOCK_SIZE_K)
    num_tiles = num_pid_m * num_pid_n

    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BLOCK_SIZE_M, BLOCK_SIZE_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[K, 1], block_shape=[BLOCK_SIZE_N, BLOCK_SIZE_K])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1],
                                       block_shape=[BLOCK_SIZE_M,
                                                    BLOCK_SIZE_N if not EPILOGUE_SUBTILE else BLOCK_SIZE_N // 2])

    tile_id_c = start_pid - NUM_SMS
    num_pid_in_group = GROUP_SIZE_M * num_pid_n

    for tile_id in tl.range(start_pid, num_tiles, NUM_SMS, flatten=True):
        pid_m, pid_n = _compute_pid(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M)
        offs_am = pid_m * BLOCK_SIZE_M
        offs_bn = pid_n * BLOCK_SIZE_N
        accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
        for ki in range(k_tiles):
            offs_k = ki * BLOCK_SIZE_K
            a = a_desc.load([offs_am, offs_k])
            b = b_desc.load([offs_bn, offs_k])
            accumulator = tl.dot(a, b.T, accumulator)

        tile_id_c += NUM_SMS
        pid_m, pid_n = _compute_pid(tile_id_c, num_pid_in_group, num_pid_m, GROUP_SIZE_M)
        offs_cm = pid_m * BLOCK_SIZE_M
        offs_cn = pid_n * BLOCK_SIZE_N
        accumulator = tl.where(accumulator >= 0, accumulator, accumulator * negative_slope)
        if EPILOGUE_SUBTILE:
            acc = tl.reshape(accumulator, (BLOCK_SIZE_M, 2, BLOCK_SIZE_N // 2))
            acc = tl.permute(acc, (0, 2, 1))
            acc0, acc1 = tl.split(acc)
            c0 = acc0.to(dtype)
            c_desc.store([offs_cm, offs_cn], c0)
            c1 = acc1.to(dtype)
            c_desc.store([offs_cm, offs_cn + BLOCK_SIZE_N // 2], c1)
        else:
            c_desc.store([offs_cm, offs_cn], accumulator.to(dtype))


# --- 8. compensated (error-free) dot product --------------------------------------------------------------------------
@triton.jit
def dot2_rows_kernel(X, Y, OUT, N, stride_r, BLOCK: tl.constexpr):
    # Ogita-Rump-Oishi Dot2 per lane: p + e == x * y exactly (TwoProduct by an fma), t + z == s + p exactly
    # (Knuth's TwoSum); the lanes' sums and corrections added in float64 at the end
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    s = tl.zeros([BLOCK], dtype=tl.float32)
    c = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, N, BLOCK):
        idx = start + cols
        m = idx < N
        x = tl.load(X + row * stride_r + idx, mask=m, other=0.0)
        y = tl.load(Y + row * stride_r + idx, mask=m, other=0.0)
        p = x * y
        e = tl.fma(x, y, -p)
        t = s + p
        bb = t - s
        z = (s - (t - bb)) + (p - bb)
        s = t
        c += z + e
    total = tl.sum(s.to(tl.float64), axis=0) + tl.sum(c.to(tl.float64), axis=0)
    tl.store(OUT + row, total.to(tl.float32))


# --- 9. torch.bucketize as a vectorized binary search ---------------------------------------------------------------
@triton.jit
def bucketize_kernel(X, BOUNDS, OUT, N, n_bounds, n_steps, RIGHT: tl.constexpr, BLOCK: tl.constexpr):
    # out[i] = #{b < x[i]} (right=False) or #{b <= x[i]} (right=True) over sorted boundaries; every lane searches
    # [lo, hi) for n_steps = ceil(log2(n_bounds + 1)) steps, the boundaries gathered at the midpoints
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N
    x = tl.load(X + offs, mask=mask, other=0.0)
    lo = tl.zeros([BLOCK], dtype=tl.int32)
    hi = tl.zeros([BLOCK], dtype=tl.int32) + n_bounds
    for _ in range(n_steps):
        active = lo < hi
        mid = (lo + hi) // 2
        b = tl.load(BOUNDS + mid, mask=active & mask, other=0.0)
        if RIGHT:
            go_right = b <= x
        else:
            go_right = b < x
        lo = tl.where(active & go_right, mid + 1, lo)
        hi = tl.where(active & ~go_right, mid, hi)
    tl.store(OUT + offs, lo.to(tl.int64), mask=mask)


# --- 10. stochastic rounding to bfloat16 ------------------------------------------------------------------------------
@triton.jit
def stochastic_round_bf16_kernel(X, Y, N, seed, BLOCK: tl.constexpr):
    # 16 random bits added below the bfloat16 mantissa of the float32 pattern, then truncated: rounds up with a
    # probability equal to the discarded fraction (exactly representable in bf16, so the final cast is exact)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N
    x = tl.load(X + offs, mask=mask, other=0.0)
    bits = x.to(tl.uint32, bitcast=True)
    r = tl.randint(seed, offs) & 0xFFFF
    rounded = (bits + r) & 0xFFFF0000
    y = rounded.to(tl.float32, bitcast=True).to(tl.bfloat16)
    tl.store(Y + offs, y, mask=mask)


# --- 11. int16 PCM frame statistics ------------------------------------------------------------------------------
@triton.jit
def pcm_frame_stats_kernel(PCM, Y, PTP, DC, n_frames, FRAME: tl.constexpr, BLOCK_F: tl.constexpr):
    # int16 PCM audio cut into frames of FRAME samples: per frame the peak-to-peak range max - min (tl.max / tl.min
    # of int16 are int32 in Triton, so full-scale audio's 65535 fits), the DC offset, and the frame rescaled to
    # [-1, 1] around its mid-range
    rf = tl.program_id(0) * BLOCK_F + tl.arange(0, BLOCK_F)
    rs = tl.arange(0, FRAME)
    f_ok = rf < n_frames
    offs = rf[:, None].to(tl.int64) * FRAME + rs[None, :]
    x = tl.load(PCM + offs, mask=f_ok[:, None], other=0)
    hi = tl.max(x, axis=1)
    lo = tl.min(x, axis=1)
    ptp = hi - lo
    mid = (hi + lo).to(tl.float32) * 0.5
    half = tl.maximum(ptp, 1).to(tl.float32) * 0.5
    y = (x.to(tl.float32) - mid[:, None]) / half[:, None]
    tl.store(Y + offs, y, mask=f_ok[:, None])
    tl.store(PTP + rf, ptp, mask=f_ok)
    tl.store(DC + rf, tl.sum(x, axis=1).to(tl.float32) / FRAME, mask=f_ok)


# --- 12. per-row stream compaction ----------------------------------------------------------------------------------
@triton.jit
def compact_rows_kernel(X, OUT, COUNT, N, stride_r, thresh, BLOCK: tl.constexpr):
    # the values of each row with |x| > thresh, in order, at the front of its output row; the rest zero
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    x_row = X + row * stride_r
    o_row = OUT + row * N
    total = 0
    for start in range(0, N, BLOCK):
        idx = start + cols
        x = tl.load(x_row + idx, mask=idx < N, other=0.0)
        keep = (idx < N) & (tl.abs(x) > thresh)
        k = keep.to(tl.int32)
        pos = total + tl.cumsum(k, axis=0) - k
        tl.store(o_row + pos, x, mask=keep)
        total += tl.sum(k, axis=0)
    for start in range(0, N, BLOCK):
        idx = start + cols
        tl.store(o_row + idx, 0.0, mask=(idx >= total) & (idx < N))
    tl.store(COUNT + row, total)


# --- host side --------------------------------------------------------------------------------------------------------
# 1. phase correlation
def phase_inputs(p, rng):
    return {"x": randn(rng, (p["N"], 2)), "y": randn(rng, (p["N"], 2))}


def phase_ref(p, x):
    a = x["x"][:, 0] + 1j * x["x"][:, 1]
    b = x["y"][:, 0] + 1j * x["y"][:, 1]
    z = a * np.conj(b)
    z = z / (np.abs(z) + np.float64(np.float32(p["eps"])))
    return {"out": np.stack([z.real, z.imag], axis=1)}


def phase_launch(p, a, m):
    return (cdiv(p["N"], m["BLOCK"]),), [a["x"], a["y"], a["out"], p["N"], p["eps"]]


# 2. segmented scan: about one head flag in 12, some rows without any
def seg_inputs(p, rng):
    R, N = p["R"], p["N"]
    flags = (rng.random((R, N)) < 1 / 12).astype(np.int8)
    flags[::5] = 0
    flags[1, 0] = 1
    return {"x": randn(rng, (R, N)), "flags": flags}


def seg_ref(p, x):
    v, f = x["x"], x["flags"] != 0
    y = np.zeros_like(v)
    run = np.zeros(v.shape[0])
    for i in range(v.shape[1]):
        run = np.where(f[:, i], v[:, i], run + v[:, i])
        y[:, i] = run
    return {"y": y}


def seg_launch(p, a, m):
    return (cdiv(p["R"], m["BLOCK_R"]),), [a["x"], a["flags"], a["y"], p["R"], p["N"], p["N"]]


# 3. stick breaking
def stick_inputs(p, rng):
    return {"v": uniform(rng, (p["R"], p["N"]), 0.002, 0.05, "bfloat16")}


def stick_ref(p, x):
    v = x["v"]
    keep = np.cumprod(1.0 - v, axis=1)
    excl = np.concatenate([np.ones((v.shape[0], 1)), keep[:, :-1]], axis=1)
    return {"w": v * excl, "rem": keep[:, -1]}


def stick_launch(p, a, m):
    return (cdiv(p["R"], m["BLOCK_R"]),), [a["v"], a["w"], a["rem"], p["R"], p["N"]]


# 4. MinHash: ragged documents (one empty), odd multipliers
def _minhash_lengths(p):
    r = np.random.default_rng(p["seed"])
    lens = r.integers(1, p["L"] + 1, p["R"]).astype(np.int32)
    lens[r.integers(0, p["R"])] = 0
    lens[0] = p["L"]
    return lens


def minhash_inputs(p, rng):
    R, L, H = p["R"], p["L"], p["H"]
    return {"tok": rng.integers(0, 50000, (R, L), dtype=np.int32), "lens": _minhash_lengths(p),
            "ha": (rng.integers(0, 2 ** 32, H, dtype=np.uint64) | 1).astype(np.uint32),
            "hb": rng.integers(0, 2 ** 32, H, dtype=np.uint64).astype(np.uint32)}


def minhash_ref(p, x):
    m32 = np.uint64(0xFFFFFFFF)
    tok = x["tok"].astype(np.int64)
    lens = x["lens"].astype(np.int64)
    a = x["ha"].astype(np.uint64)
    b = x["hb"].astype(np.uint64)
    R, H = tok.shape[0], a.shape[0]
    sig = np.full((R, H), 0xFFFFFFFF, np.uint64)
    fp = np.zeros(R, np.int64)
    for r in range(R):
        t = tok[r, :lens[r]].astype(np.uint64)
        if len(t):
            h = (t[:, None] * a[None, :] + b[None, :]) & m32
            h ^= h >> np.uint64(16)
            h = (h * np.uint64(0x45D9F3B)) & m32
            h ^= h >> np.uint64(16)
            sig[r] = h.min(axis=0)
            fp[r] = np.bitwise_xor.reduce(tok[r, :lens[r]].astype(np.int32)).astype(np.int64)
    bucket = (sig * np.uint64(p["n_buckets"])) >> np.uint64(32)
    return {"sig": sig.astype(np.float64), "bucket": bucket.astype(np.float64), "fp": fp.astype(np.float64)}


def minhash_launch(p, a, m):
    assert m["NUM_HASH"] == p["H"]
    return (p["R"],), [a["tok"], a["lens"], a["ha"], a["hb"], a["sig"], a["bucket"], a["fp"], p["L"], p["n_buckets"]]


# 5. 4-bit groups: every group's values on a grid of its power-of-two scale with a jitter of at most 0.2 steps (no
# rounding ties), its absmax exactly 7 steps, so scale, codes and packing are exact
def q4_inputs(p, rng):
    M, K, G = p["M"], p["K"], p["group"]
    ng = K // G
    step = 2.0 ** rng.integers(-3, 3, (M, ng, 1))
    n = rng.integers(-6, 7, (M, ng, G)) + rng.uniform(-0.2, 0.2, (M, ng, G))
    at = rng.integers(0, G, (M, ng))
    sign = np.where(rng.random((M, ng)) < 0.5, -7.0, 7.0)
    np.put_along_axis(n, at[:, :, None], sign[:, :, None], axis=2)
    x = np.zeros((M, K + p["pad"]), np.float32)
    x[:, :K] = (n * step).reshape(M, K)
    x[:, K:] = 1.0
    return {"x": x.astype(np.float16)}


def q4_ref(p, x):
    M, K, G = p["M"], p["K"], p["group"]
    xg = x["x"][:, :K].reshape(M, K // G, G)
    scale = np.abs(xg).max(axis=2) / 7.0
    q = np.clip(np.floor(xg / scale[:, :, None] + 0.5), -8, 7) + 8
    q = q.reshape(M, K // 2, 2)
    return {"q": q[:, :, 0] + 16 * q[:, :, 1], "s": scale}


def q4_launch(p, a, m):
    assert m["GROUP"] == p["group"]
    return (cdiv(p["M"], m["BLOCK_M"]),), [a["x"], a["q"], a["s"], p["M"], p["K"], p["K"] + p["pad"]]


# 6. NaN propagation: about 2% of the values missing, every third row complete
def nanclamp_inputs(p, rng):
    M, N = p["M"], p["N"]
    valid = (rng.random((M, N)) > 0.02).astype(np.uint8)
    valid[::3] = 1
    return {"x": randn(rng, (M, N), "float32", 2.0), "valid": valid}


def nanclamp_ref(p, x):
    v = np.where(x["valid"] != 0, x["x"], np.nan)
    lo, hi = np.float64(np.float32(p["lo"])), np.float64(np.float32(p["hi"]))
    y = np.clip(v, lo, hi)
    rmax = v.max(axis=1)
    return {"y": np.where(np.isnan(y), -999.0, y), "rowmax": np.where(np.isnan(rmax), 999.0, rmax),
            "nans": np.isnan(v).sum(axis=1).astype(np.float64)}


def nanclamp_launch(p, a, m):
    return (cdiv(p["M"], m["BLOCK_M"]),), [a["x"], a["valid"], a["y"], a["rowmax"], a["nans"], p["M"], p["N"],
                                           p["lo"], p["hi"]]


# 7. persistent descriptor matmul
def desc_inputs(p, rng):
    M, N, K = p["M"], p["N"], p["K"]
    return {"a": randn(rng, (M, K), "bfloat16"), "b": randn(rng, (N, K), "bfloat16", K ** -0.5)}


def desc_ref(p, x):
    c = x["a"] @ x["b"].T
    slope = np.float64(np.float32(p["slope"]))
    return {"c": np.where(c >= 0, c, c * slope)}


def desc_launch(p, a, m):
    M, N, K = p["M"], p["N"], p["K"]
    if not isinstance(a["a"], np.ndarray):  # on the GPU: in-kernel descriptors need global scratch memory
        import torch

        dev = a["a"].device
        triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device=dev))
    tiles = cdiv(M, m["BLOCK_SIZE_M"]) * cdiv(N, m["BLOCK_SIZE_N"])
    return (min(m["NUM_SMS"], tiles),), [a["a"], a["b"], a["c"], M, N, K, p["slope"]]


# 8. compensated dot: rows [u, u] . [v, -v + d] with |d| ~ 1e-5 |v|, each pair in one lane (half a row is a
# multiple of BLOCK), so the result is 1e-5 of the products' size and a plain float32 sum misses it by ~1%
def dot2_inputs(p, rng):
    R, half = p["R"], p["N"] // 2
    u = rng.standard_normal((R, half)).astype(np.float32)
    v = rng.standard_normal((R, half)).astype(np.float32)
    d = (rng.standard_normal((R, half)) * 1e-5 * np.abs(v)).astype(np.float32)
    return {"x": np.concatenate([u, u], axis=1), "y": np.concatenate([v, (-v + d).astype(np.float32)], axis=1)}


def dot2_ref(p, x):
    return {"out": np.einsum("rn,rn->r", x["x"], x["y"])}


def dot2_launch(p, a, m):
    assert (p["N"] // 2) % m["BLOCK"] == 0
    return (p["R"],), [a["x"], a["y"], a["out"], p["N"], p["N"]]


# 9. bucketize: values below, inside and above the boundaries, a quarter exactly on one
def bucket_inputs(p, rng):
    nb, N = p["n_bounds"], p["N"]
    bounds = np.unique(rng.standard_normal(nb * 2).astype(np.float32))[:nb]
    while len(bounds) < nb:  # pragma: no cover - a draw of 2 nb normals has nb distinct values
        bounds = np.unique(np.concatenate([bounds, rng.standard_normal(nb).astype(np.float32)]))[:nb]
    x = (rng.standard_normal(N) * 1.5).astype(np.float32)
    on = rng.random(N) < 0.25
    x[on] = bounds[rng.integers(0, nb, on.sum())]
    return {"x": x, "bounds": np.sort(bounds)}


def bucket_ref(p, x):
    side = "right" if p["right"] else "left"
    return {"out": np.searchsorted(x["bounds"], x["x"], side=side).astype(np.float64)}


def bucket_launch(p, a, m):
    assert m["RIGHT"] == p["right"]
    nb = p["n_bounds"]
    return (cdiv(p["N"], m["BLOCK"]),), [a["x"], a["bounds"], a["out"], p["N"], nb, int(np.ceil(np.log2(nb + 1)))]


# 10. stochastic rounding: tl.randint(seed, offset) is the first Philox-4x32-10 word of (offset, 0, 0, 0) (_case)
def sround_inputs(p, rng):
    return {"x": randn(rng, (p["N"],), "float32", 3.0)}


def sround_ref(p, x):
    bits = x["x"].astype(np.float32).view(np.uint32).astype(np.uint64)
    r = philox_word0(p["seed"], np.arange(p["N"])).astype(np.uint64) & np.uint64(0xFFFF)
    out = ((bits + r) & np.uint64(0xFFFF0000)).astype(np.uint32).view(np.float32)
    return {"y": out.astype(np.float64)}


def sround_launch(p, a, m):
    return (cdiv(p["N"], m["BLOCK"]),), [a["x"], a["y"], p["N"], p["seed"]]


# 11. PCM frames: full-scale noise, every fourth frame quiet (a range that int16 holds)
def pcm_inputs(p, rng):
    x = rng.integers(-32768, 32768, (p["frames"], p["frame"])).astype(np.int16)
    x[::4] //= 64
    return {"pcm": x}


def pcm_ref(p, x):
    v = x["pcm"]
    hi, lo = v.max(axis=1), v.min(axis=1)
    ptp = hi - lo
    mid = (hi + lo) * 0.5
    half = np.maximum(ptp, 1) * 0.5
    return {"y": (v - mid[:, None]) / half[:, None], "ptp": ptp, "dc": v.mean(axis=1)}


def pcm_launch(p, a, m):
    assert m["FRAME"] == p["frame"]
    return (cdiv(p["frames"], m["BLOCK_F"]),), [a["pcm"], a["y"], a["ptp"], a["dc"], p["frames"]]


# 12. stream compaction
def compact_inputs(p, rng):
    return {"x": randn(rng, (p["R"], p["N"] + p["pad"]))}


def compact_ref(p, x):
    R, N = p["R"], p["N"]
    v = x["x"][:, :N]
    thr = np.float64(np.float32(p["thresh"]))
    out = np.zeros((R, N))
    cnt = np.zeros(R)
    for r in range(R):
        kept = v[r][np.abs(v[r]) > thr]
        out[r, :len(kept)] = kept
        cnt[r] = len(kept)
    return {"out": out, "count": cnt}


def compact_launch(p, a, m):
    return (p["R"],), [a["x"], a["out"], a["count"], p["N"], p["N"] + p["pad"], p["thresh"]]


CASES = [
    Case("cross_power_phase_interleave_f32", cross_power_phase_kernel, phase_inputs,
         lambda p: {"out": ((p["N"], 2), "float32")}, phase_ref, phase_launch,
         gpu={"N": 1 << 24, "eps": 1e-12}, ci={"N": 1000, "eps": 1e-12},
         meta={"BLOCK": 1024, "num_warps": 4}, ci_meta={"BLOCK": 128, "num_warps": 2},
         tol={"float32": (1e-4, 1e-5)}, flops=lambda p: 12.0 * p["N"], bytes=lambda p: 24.0 * p["N"],
         idiom="phase correlation's normalized cross-power spectrum x conj(y) / |x conj(y)| on complex64 held as "
               "float32 (re, im) pairs: a [BLOCK, 2] tile loaded with pair offsets, tl.split into re / im, "
               "tl.interleave of the results into a [2 * BLOCK] row stored contiguously"),
    Case("segmented_cumsum_flags_f32", segmented_cumsum_kernel, seg_inputs,
         lambda p: {"y": ((p["R"], p["N"]), "float32")}, seg_ref, seg_launch,
         gpu={"R": 4096, "N": 8192}, ci={"R": 11, "N": 150},
         meta={"BLOCK_R": 4, "BLOCK_N": 1024, "num_warps": 4}, ci_meta={"BLOCK_R": 4, "BLOCK_N": 32, "num_warps": 2},
         tol={"float32": (1e-4, 1e-5)}, flops=lambda p: 2.0 * p["R"] * p["N"], bytes=lambda p: 9.0 * p["R"] * p["N"],
         idiom="segmented inclusive sum under int8 head flags: tl.associative_scan((x, flag), 1, combine) over a "
               "(float32, int32) tuple along axis 1 of a [BLOCK_R, BLOCK_N] tile, combine = (where(f2, v2, v1 + v2), "
               "f1 | f2), the chunk's carry added where no flag was seen yet, next carry = last column by a where-sum"),
    Case("stick_breaking_cumprod_bf16", stick_breaking_kernel, stick_inputs,
         lambda p: {"w": ((p["R"], p["N"]), "float32"), "rem": ((p["R"],), "float32")}, stick_ref, stick_launch,
         gpu={"R": 8192, "N": 4096}, ci={"R": 9, "N": 200},
         meta={"BLOCK_R": 4, "BLOCK_N": 512, "num_warps": 4}, ci_meta={"BLOCK_R": 4, "BLOCK_N": 64, "num_warps": 2},
         tol={"float32": (2e-4, 1e-5)}, flops=lambda p: 4.0 * p["R"] * p["N"], bytes=lambda p: 6.0 * p["R"] * p["N"],
         idiom="stick-breaking weights v_i prod_{j<i}(1 - v_j) of bf16 rows: tl.cumprod(1 - v, axis=1) over a 2-D "
               "tile, the exclusive product by dividing out the own factor, a per-row carry multiplied by the "
               "chunk's product from tl.reduce with a user multiply combine, the remainder stored at the end"),
    Case("minhash_umulhi_u32", minhash_kernel, minhash_inputs,
         lambda p: {"sig": ((p["R"], p["H"]), "uint32"), "bucket": ((p["R"], p["H"]), "int32"),
                    "fp": ((p["R"],), "int32")}, minhash_ref, minhash_launch,
         gpu={"R": 65536, "L": 512, "H": 64, "n_buckets": 1000003, "seed": 5},
         ci={"R": 7, "L": 90, "H": 16, "n_buckets": 1000003, "seed": 5},
         meta={"NUM_HASH": 64, "BLOCK_L": 64, "num_warps": 4}, ci_meta={"NUM_HASH": 16, "BLOCK_L": 32, "num_warps": 2},
         flops=lambda p: 8.0 * p["R"] * p["L"] * p["H"], bytes=lambda p: 4.0 * p["R"] * (p["L"] + 2 * p["H"]),
         idiom="MinHash signatures of ragged int32 token rows: uint32 multiply-xorshift hashing (t * a_j + b_j, "
               "h ^= h >> 16 as a logical shift, h *= 0x45D9F3B wrapping) over a [BLOCK_L, NUM_HASH] tile, masked "
               "lanes set to the uint32 literal 0xFFFFFFFF, unsigned tl.min down axis 0 into a running minimum, "
               "tl.umulhi range reduction, tl.xor_sum fingerprint, a runtime loop bound loaded per row"),
    Case("q4_group_quant_pack_u8", q4_group_quant_kernel, q4_inputs,
         lambda p: {"q": ((p["M"], p["K"] // 2), "uint8"), "s": ((p["M"], p["K"] // p["group"]), "float16")},
         q4_ref, q4_launch,
         gpu={"M": 8192, "K": 8192, "group": 32, "pad": 0}, ci={"M": 10, "K": 160, "group": 32, "pad": 8},
         meta={"GROUP": 32, "BLOCK_M": 16, "BLOCK_K": 256, "num_warps": 4},
         ci_meta={"GROUP": 32, "BLOCK_M": 4, "BLOCK_K": 64, "num_warps": 2},
         tol={"float16": (0.0, 0.0)}, flops=lambda p: 4.0 * p["M"] * p["K"], bytes=lambda p: 2.5 * p["M"] * p["K"],
         idiom="symmetric 4-bit group quantization of fp16 rows: the [BLOCK_M, BLOCK_K] tile tl.reshape'd to "
               "[BLOCK_M, BLOCK_K // GROUP, GROUP] (an annotated `NG: tl.constexpr = ...`), absmax down axis 2, "
               "floor(x / scale + 0.5) clamped, codes to uint8, reshape to [.., BLOCK_K // 2, 2] + tl.split into "
               "nibble pairs packed by lo | (hi << 4), K a multiple of the group but not of BLOCK_K"),
    Case("nan_propagate_clamp_rowmax_f32", nan_clamp_rowmax_kernel, nanclamp_inputs,
         lambda p: {"y": ((p["M"], p["N"]), "float32"), "rowmax": ((p["M"],), "float32"),
                    "nans": ((p["M"],), "int32")}, nanclamp_ref, nanclamp_launch,
         gpu={"M": 16384, "N": 1000, "lo": -1.5, "hi": 2.5}, ci={"M": 20, "N": 100, "lo": -1.5, "hi": 2.5},
         meta={"BLOCK_M": 4, "BLOCK_N": 1024, "num_warps": 4}, ci_meta={"BLOCK_M": 4, "BLOCK_N": 128, "num_warps": 2},
         tol={"float32": (0.0, 0.0)}, flops=lambda p: 4.0 * p["M"] * p["N"], bytes=lambda p: 9.0 * p["M"] * p["N"],
         idiom="NaN-propagating clamp and row max: NaNs made by tl.where(valid != 0, x, float('nan')), "
               "tl.minimum(tl.maximum(x, lo, propagate_nan=tl.PropagateNan.ALL), hi, propagate_nan=ALL) with runtime "
               "float bounds, tl.reduce with a NaN-propagating maximum combine, NaNs detected by y != y and counted"),
    Case("mm_desc_persistent_leaky_bf16", matmul_descriptor_persistent_kernel, desc_inputs,
         lambda p: {"c": ((p["M"], p["N"]), "bfloat16")}, desc_ref, desc_launch,
         gpu={"M": 8192, "N": 8192, "K": 4096, "slope": 0.01}, ci={"M": 50, "N": 72, "K": 40, "slope": 0.01},
         meta={"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8,
               "EPILOGUE_SUBTILE": True, "NUM_SMS": 132, "num_warps": 8, "num_stages": 3},
         ci_meta={"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 16, "GROUP_SIZE_M": 2,
                  "EPILOGUE_SUBTILE": True, "NUM_SMS": 3, "num_warps": 4, "num_stages": 2},
         tol={"bfloat16": (2e-2, 1e-2)}, flops=lambda p: 2.0 * p["M"] * p["N"] * p["K"],
         bytes=lambda p: 2.0 * (p["M"] * p["K"] + p["N"] * p["K"] + p["M"] * p["N"]),
         idiom="Triton tutorial 09's persistent matmul on in-kernel tensor descriptors: tl.make_tensor_descriptor for "
               "A [M, K], B [N, K] and C, desc.load at element offsets, tl.dot(a, b.T, acc), "
               "tl.range(start_pid, num_tiles, NUM_SMS, flatten=True), a second tile id for the epilogue, leaky "
               "ReLU, EPILOGUE_SUBTILE: reshape (BM, 2, BN/2) + permute (0, 2, 1) + tl.split, two bf16 desc.store; "
               "M, N, K multiples of no block (zero fill, clipped stores)"),
    Case("dot2_compensated_fma_f32", dot2_rows_kernel, dot2_inputs,
         lambda p: {"out": ((p["R"],), "float32")}, dot2_ref, dot2_launch,
         gpu={"R": 16384, "N": 8192}, ci={"R": 6, "N": 256},
         meta={"BLOCK": 1024, "enable_fp_fusion": False, "num_warps": 4},
         ci_meta={"BLOCK": 32, "enable_fp_fusion": False, "num_warps": 1},
         tol={"float32": (1e-4, 1e-5)}, flops=lambda p: 12.0 * p["R"] * p["N"], bytes=lambda p: 8.0 * p["R"] * p["N"],
         idiom="compensated dot product (Ogita-Rump-Oishi Dot2) per lane: TwoProduct e = tl.fma(x, y, -p), Knuth's "
               "six-operation TwoSum, the lane sums and corrections added in float64 by tl.sum of .to(tl.float64); "
               "launched with enable_fp_fusion=False (a contracted s + x * y breaks TwoSum); rows built to cancel "
               "to 1e-5 of their products (a reassociating or contracting build loses them)"),
    Case("bucketize_binary_search_i64", bucketize_kernel, bucket_inputs,
         lambda p: {"out": ((p["N"],), "int64")}, bucket_ref, bucket_launch,
         gpu={"N": 1 << 24, "n_bounds": 1000, "right": True}, ci={"N": 700, "n_bounds": 37, "right": True},
         meta={"RIGHT": True, "BLOCK": 1024, "num_warps": 4}, ci_meta={"RIGHT": True, "BLOCK": 128, "num_warps": 2},
         flops=lambda p: 4.0 * p["N"] * np.log2(p["n_bounds"] + 1), bytes=lambda p: 12.0 * p["N"],
         idiom="torch.bucketize(right=True) as a vectorized binary search: int32 lo / hi per lane, a runtime "
               "`for _ in range(n_steps)`, the boundaries gathered at the midpoints under `active & mask`, a constexpr "
               "`if RIGHT:` choosing <= or <, updates by tl.where with ~go_right, int64 result"),
    Case("bucketize_left_odd_n_i64", bucketize_kernel, bucket_inputs,
         lambda p: {"out": ((p["N"],), "int64")}, bucket_ref, bucket_launch,
         gpu={"N": (1 << 24) + 5, "n_bounds": 777, "right": False}, ci={"N": 701, "n_bounds": 29, "right": False},
         meta={"RIGHT": False, "BLOCK": 1024, "num_warps": 4}, ci_meta={"RIGHT": False, "BLOCK": 128, "num_warps": 2},
         flops=lambda p: 4.0 * p["N"] * np.log2(p["n_bounds"] + 1), bytes=lambda p: 12.0 * p["N"],
         idiom="torch.bucketize(right=False) over a length that is no multiple of 16: the same binary search, its "
               "mask `offs < N` varying per element (no 16-byte runs), the gathered boundaries meeting x's "
               "4-a-thread tile, int64 result"),
    Case("stochastic_round_randint_bf16", stochastic_round_bf16_kernel, sround_inputs,
         lambda p: {"y": ((p["N"],), "bfloat16")}, sround_ref, sround_launch,
         gpu={"N": 1 << 26, "seed": 20240917}, ci={"N": 3000, "seed": 20240917},
         meta={"BLOCK": 1024, "num_warps": 4}, ci_meta={"BLOCK": 256, "num_warps": 2},
         tol={"bfloat16": (0.0, 0.0)}, flops=lambda p: 40.0 * p["N"], bytes=lambda p: 6.0 * p["N"],
         idiom="stochastic rounding fp32 -> bf16: x.to(tl.uint32, bitcast=True) plus tl.randint(seed, offs) & 0xFFFF, "
               "masked by the uint32 literal 0xFFFF0000, bitcast back to float32 and cast (exactly) to bf16"),
    Case("pcm_frame_ptp_i16", pcm_frame_stats_kernel, pcm_inputs,
         lambda p: {"y": ((p["frames"], p["frame"]), "float32"), "ptp": ((p["frames"],), "int32"),
                    "dc": ((p["frames"],), "float32")}, pcm_ref, pcm_launch,
         gpu={"frames": 262144, "frame": 512}, ci={"frames": 21, "frame": 64},
         meta={"FRAME": 512, "BLOCK_F": 8, "num_warps": 4}, ci_meta={"FRAME": 64, "BLOCK_F": 4, "num_warps": 2},
         tol={"float32": (1e-5, 1e-6)}, flops=lambda p: 6.0 * p["frames"] * p["frame"],
         bytes=lambda p: 6.0 * p["frames"] * p["frame"],
         idiom="int16 PCM audio frame statistics: peak-to-peak tl.max(x, 1) - tl.min(x, 1) and mid-range "
               "(hi + lo) relying on Triton's widening of small-integer max / min to int32 (full-scale frames span "
               "65535), tl.maximum(ptp, 1) with a literal, int16 tl.sum (int32) for the DC offset, the frame "
               "rescaled in float32 by [:, None] broadcasts; int32 and float32 outputs"),
    Case("stream_compact_rows_f32", compact_rows_kernel, compact_inputs,
         lambda p: {"out": ((p["R"], p["N"]), "float32"), "count": ((p["R"],), "int32")}, compact_ref,
         compact_launch,
         gpu={"R": 8192, "N": 8192, "pad": 0, "thresh": 1.0}, ci={"R": 7, "N": 300, "pad": 4, "thresh": 1.0},
         meta={"BLOCK": 1024, "num_warps": 4}, ci_meta={"BLOCK": 64, "num_warps": 2},
         tol={"float32": (0.0, 0.0)}, flops=lambda p: 3.0 * p["R"] * p["N"], bytes=lambda p: 8.0 * p["R"] * p["N"],
         idiom="per-row stream compaction (masked_select): keep = |x| > thresh, positions = carried count + exclusive "
               "tl.cumsum of the int32 keep mask, a scatter store at those positions, the count carried from a "
               "Python 0 through the loop; a second loop zero-fills the tail with a scalar 0.0 store"),
]
