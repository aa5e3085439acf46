"""Eight more kernels as Triton users write them, moving data between layouts inside the kernel. A QuaRot-style
online Hadamard rotation of 4096-wide fp16 rows: H_4096 = H16 (x) H16 (x) H16 applied as three tl.dot against a
16 x 16 Sylvester matrix built in-kernel from the parity of popcount(i & j), the row viewed as [16, 16, 16] and
brought to each axis in turn by 3-D tl.permute's ((0, 2, 1), (2, 1, 0), then (2, 0, 1) back), fp16 between the
stages, scaled by 1 / 64 and stored with a per-row int8 scale (absmax / 127). A fused-QKV split from BSHD to BHSD:
a [BLOCK_S, HB * D] bf16 slice of the packed [B, S, (HQ + 2 HKV) D] projection loaded row-contiguous,
tl.reshape'd to [BLOCK_S, HB, D] and tl.permute'd (1, 0, 2) to [HB, BLOCK_S, D] so each head's rows are stored
contiguous, the destination chosen by a scalar if / elif / else on the head block (q also scaled by
sm_scale * log2 e), S masked. A block-local MoE token sort: int32 keys (expert << 16 | lane) sorted by tl.sort (the
padding keyed past every expert), the permutation taken from the low bits and applied to the block's int8 token
rows by tl.gather along axis 0 (index broadcast to [BLOCK_T, D]) and to their fp32 scales by a 1-D tl.gather.
A channels-last (NHWC) GroupNorm: per (sample, group block) a runtime loop over [BLOCK_HW, GB * CPG] fp16 tiles
reshaped to 3-D [BLOCK_HW, GB, CPG], Welford (mean, M2, count) merged by tl.reduce of a 3-tuple over axis 0 and then
axis 1 with a @triton.jit combine that is also called directly to fold the chunk into the carried per-group
state, then a second pass writing (x - mean) * rstd * gamma + beta. A softmax over the middle axis (torch.softmax
(x, dim=1) of [B, S, H] scores, S = 77 padded to 128, per-sample lengths): the [BLOCK_B, BLOCK_S, H] tile reduced
by tl.max / tl.sum(axis=1, keep_dims=True), probabilities in bf16 and the log-sum-exp stored through a
[BLOCK_B, 1, H] pointer tile. A separable 5-tap image filter as two tl.dot against a banded matrix: a 64 x 64 fp16
tile with a 2-pixel halo (60 x 60 outputs per program: a non-power-of-two tile step), the band
band[p, q] = taps[p - q] gathered by one masked 2-D tl.load of the fp16 taps, x @ band then tl.trans(band) @ t.
An online top-k over a 128256-wide vocabulary row of bf16 logits: each value packed with its index into an int64
key (the float bits made order-preserving, the low word 2^32 - 1 - index so ties favour the lower index), each
chunk's tl.topk merged into the running K by tl.topk of tl.cat(best, top, can_reorder=True) (the order of the 2K
does not matter to a top-k), values and indices decoded at the end. A SqueezeLLM-style
non-uniform 4-bit GEMM: eight codes per int32 along K unpacked by a 3-D shift broadcast and reshape, looked up in
each output channel's own 16-entry fp16 table by tl.gather along axis 1, and the [BLOCK_N, BLOCK_K] weight fed to
tl.dot through tl.trans, M = 32 tokens.
"""
import numpy as np
import triton
import triton.language as tl

from workloads.corpus._case import Case, cdiv, pmap, randn, uniform


# --- 1. Hadamard rotation of 4096-wide rows: three H16 dots over a [16, 16, 16] view moved by 3-D permutes ---------
@triton.jit
def _sylvester16(dtype: tl.constexpr):
    i = tl.arange(0, 16)[:, None]
    j = tl.arange(0, 16)[None, :]
    b = i & j
    parity = (b ^ (b >> 1) ^ (b >> 2) ^ (b >> 3)) & 1
    return tl.where(parity == 1, -1.0, 1.0).to(dtype)


@triton.jit
def hadamard_rotate_kernel(X, Y, Scale, stride_x, stride_y, N: tl.constexpr):
    # Y[r] = X[r] H_N / sqrt(N) for N = 16^3; Scale[r] = max |Y[r]| / 127 (the int8 step the next kernel uses)
    tl.static_assert(N == 4096)
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, N)
    x = tl.load(X + row * stride_x + offs)
    h = _sylvester16(x.dtype)
    y = tl.dot(tl.reshape(x, [256, 16]), h)  # (a, b, c) -> (a, b, c')
    y = tl.permute(tl.reshape(y.to(x.dtype), [16, 16, 16]), (0, 2, 1))  # (a, c', b)
    y = tl.dot(tl.reshape(y, [256, 16]), h)
    y = tl.permute(tl.reshape(y.to(x.dtype), [16, 16, 16]), (2, 1, 0))  # (b', c', a)
    y = tl.dot(tl.reshape(y, [256, 16]), h)
    y = tl.reshape(tl.permute(tl.reshape(y, [16, 16, 16]), (2, 0, 1)), [N]) * (1.0 / 64.0)  # (a', b', c')
    tl.store(Y + row * stride_y + offs, y.to(Y.dtype.element_ty))
    tl.store(Scale + row, tl.max(tl.abs(y), axis=0) / 127.0)


def _h16():
    i = np.arange(16)
    b = i[:, None] & i[None, :]
    par = np.array([bin(v).count("1") & 1 for v in b.ravel()]).reshape(16, 16)
    return np.where(par == 1, -1.0, 1.0)


def had_inputs(p, rng):
    R, N = p["R"], p["N"]
    x = rng.standard_normal((R, N), dtype=np.float32)
    x[:, rng.choice(N, 24, replace=False)] *= 12.0  # outlier channels, what the rotation is for
    return {"x": x.astype(np.float16)}


def had_ref(p, x):
    h = _h16()
    R = p["R"]
    xr = x["x"].reshape(R, 16, 16, 16)

    def one(i):
        s = slice(i * 2048, (i + 1) * 2048)
        return np.einsum("rabc,ax,by,cz->rxyz", xr[s], h, h, h, optimize=True).reshape(-1, 4096) / 64.0
    y = np.concatenate(pmap(one, cdiv(R, 2048)))
    return {"y": y, "scale": np.abs(y).max(axis=1) / 127.0}


def had_launch(p, a, m):
    R, N = p["R"], p["N"]
    assert m["N"] == N
    return (R,), [a["x"], a["y"], a["scale"], N, N]


# --- 2. fused QKV split, BSHD -> BHSD by a 3-D permute of the loaded slice --------------------------------------------
@triton.jit
def qkv_split_bhsd_kernel(QKV, Q, K, V, S, q_scale, stride_b, stride_s, HQ: tl.constexpr, HKV: tl.constexpr,
                          D: tl.constexpr, HB: tl.constexpr, BLOCK_S: tl.constexpr):
    # QKV [B, S, (HQ + 2 HKV) * D] (q heads, then k heads, then v heads); Q [B, HQ, S, D], K / V [B, HKV, S, D]
    pid_s = tl.program_id(0)
    hb = tl.program_id(1)
    b = tl.program_id(2)
    s = pid_s * BLOCK_S + tl.arange(0, BLOCK_S)
    c = tl.arange(0, HB * D)
    src = QKV + b.to(tl.int64) * stride_b + s[:, None].to(tl.int64) * stride_s + hb * (HB * D) + c[None, :]
    x = tl.load(src, mask=(s < S)[:, None], other=0.0)
    x = tl.permute(tl.reshape(x, [BLOCK_S, HB, D]), (1, 0, 2))  # [HB, BLOCK_S, D]
    hh = tl.arange(0, HB)[:, None, None]
    ss = s[None, :, None]
    dd = tl.arange(0, D)[None, None, :]
    mask = ss < S
    g = hb * HB
    if g < HQ:
        off = ((b * HQ + g + hh).to(tl.int64) * S + ss) * D + dd
        tl.store(Q + off, (x.to(tl.float32) * q_scale).to(Q.dtype.element_ty), mask=mask)
    elif g < HQ + HKV:
        off = ((b * HKV + (g - HQ) + hh).to(tl.int64) * S + ss) * D + dd
        tl.store(K + off, x, mask=mask)
    else:
        off = ((b * HKV + (g - HQ - HKV) + hh).to(tl.int64) * S + ss) * D + dd
        tl.store(V + off, x, mask=mask)


def qkv_inputs(p, rng):
    B, S, HQ, HKV, D = p["B"], p["S"], p["HQ"], p["HKV"], p["D"]
    return {"qkv": randn(rng, (B, S, (HQ + 2 * HKV) * D), "bfloat16")}


def qkv_ref(p, x):
    B, S, HQ, HKV, D = p["B"], p["S"], p["HQ"], p["HKV"], p["D"]
    t = x["qkv"].reshape(B, S, HQ + 2 * HKV, D).transpose(0, 2, 1, 3)
    return {"q": t[:, :HQ] * p["q_scale"], "k": t[:, HQ:HQ + HKV], "v": t[:, HQ + HKV:]}


def qkv_launch(p, a, m):
    B, S, HQ, HKV, D = p["B"], p["S"], p["HQ"], p["HKV"], p["D"]
    HB = m["HB"]
    assert (m["HQ"], m["HKV"], m["D"]) == (HQ, HKV, D) and HQ % HB == 0 and HKV % HB == 0
    W = (HQ + 2 * HKV) * D
    return (cdiv(S, m["BLOCK_S"]), (HQ + 2 * HKV) // HB, B), [a["qkv"], a["q"], a["k"], a["v"], S, p["q_scale"],
                                                              S * W, W]


def qkv_outputs(p):
    B, S, HQ, HKV, D = p["B"], p["S"], p["HQ"], p["HKV"], p["D"]
    return {"q": ((B, HQ, S, D), "bfloat16"), "k": ((B, HKV, S, D), "bfloat16"), "v": ((B, HKV, S, D), "bfloat16")}


# --- 3. block-local MoE token sort: int32 keys by tl.sort, rows permuted by tl.gather along axis 0 ------------------
@triton.jit
def moe_block_sort_gather_kernel(Eid, X, Xs, SortedEid, SrcIdx, Xout, Xsout, T, E, D: tl.constexpr,
                                 BLOCK_T: tl.constexpr):
    # per block of BLOCK_T tokens: tokens reordered by expert id (stable), int8 rows [T, D] and fp32 scales with them
    pid = tl.program_id(0)
    lane = tl.arange(0, BLOCK_T)
    t = pid * BLOCK_T + lane
    tmask = t < T
    e = tl.load(Eid + t, mask=tmask, other=E)  # padding keyed past every expert: sorted last
    key = tl.sort((e << 16) | lane)
    perm = key & 0xFFFF
    d = tl.arange(0, D)
    rows = t[:, None].to(tl.int64) * D + d[None, :]
    x = tl.load(X + rows, mask=tmask[:, None], other=0)
    xs = tl.load(Xs + t, mask=tmask, other=0.0)
    xp = tl.gather(x, tl.broadcast_to(perm[:, None], [BLOCK_T, D]), axis=0)
    xsp = tl.gather(xs, perm, axis=0)
    tl.store(SortedEid + t, key >> 16, mask=tmask)
    tl.store(SrcIdx + t, pid * BLOCK_T + perm, mask=tmask)
    tl.store(Xout + rows, xp, mask=tmask[:, None])
    tl.store(Xsout + t, xsp, mask=tmask)


def bsort_inputs(p, rng):
    T, D, E = p["T"], p["D"], p["E"]
    e = rng.integers(0, E, T).astype(np.int32)
    e[: T // 7] = rng.integers(0, 3, T // 7)  # a skewed stretch: long runs of equal keys
    x = rng.integers(-127, 128, (T, D), dtype=np.int64)
    x[x == 0] = 1
    return {"eid": e, "x": x.astype(np.int8), "xs": uniform(rng, (T,), 0.001, 0.05)}


def bsort_ref(p, x):
    T, BT = p["T"], p["block_t"]
    e = x["eid"].astype(np.int64)
    src = np.concatenate([b0 + np.argsort(e[b0:b0 + BT], kind="stable") for b0 in range(0, T, BT)])
    return {"eid_sorted": e[src].astype(np.float64), "src": src.astype(np.float64), "xout": x["x"][src],
            "xsout": x["xs"][src]}


def bsort_launch(p, a, m):
    T, D = p["T"], p["D"]
    assert m["D"] == D and m["BLOCK_T"] == p["block_t"]
    return (cdiv(T, m["BLOCK_T"]),), [a["eid"], a["x"], a["xs"], a["eid_sorted"], a["src"], a["xout"], a["xsout"],
                                      T, p["E"]]


def bsort_outputs(p):
    T, D = p["T"], p["D"]
    return {"eid_sorted": ((T,), "int32"), "src": ((T,), "int32"), "xout": ((T, D), "int8"),
            "xsout": ((T,), "float32")}


# --- 4. NHWC GroupNorm: Welford 3-tuples by tl.reduce over axis 0 of a 3-D tile, then axis 1 -----------------------
@triton.jit
def _welford_merge(m_a, q_a, n_a, m_b, q_b, n_b):
    n = n_a + n_b
    w = tl.where(n > 0, n_b / tl.maximum(n, 1.0), 0.0)
    delta = m_b - m_a
    return m_a + delta * w, q_a + q_b + delta * delta * n_a * w, n


@triton.jit
def groupnorm_nhwc_kernel(X, Gamma, Beta, Y, Mean, Rstd, HW, C, G, eps, CPG: tl.constexpr, GB: tl.constexpr,
                          BLOCK_HW: tl.constexpr):
    # X, Y [N, HW, C] fp16 (channels last); groups of CPG channels; this program: GB groups of sample n
    n = tl.program_id(0)
    gb = tl.program_id(1)
    ch = gb * (GB * CPG) + tl.arange(0, GB * CPG)
    hw = tl.arange(0, BLOCK_HW)
    xbase = X + n.to(tl.int64) * HW * C
    ybase = Y + n.to(tl.int64) * HW * C
    mean = tl.zeros([GB], dtype=tl.float32)
    m2 = tl.zeros([GB], dtype=tl.float32)
    cnt = tl.zeros([GB], dtype=tl.float32)
    for p0 in range(0, HW, BLOCK_HW):
        pix = p0 + hw
        mask = (pix < HW)[:, None]
        x = tl.load(xbase + pix[:, None] * C + ch[None, :], mask=mask, other=0.0).to(tl.float32)
        x3 = tl.reshape(x, [BLOCK_HW, GB, CPG])
        one = tl.broadcast_to(tl.where(pix < HW, 1.0, 0.0)[:, None, None], [BLOCK_HW, GB, CPG])
        bm, bq, bn = tl.reduce((x3, tl.zeros_like(x3), one), 0, _welford_merge)  # [GB, CPG]
        bm, bq, bn = tl.reduce((bm, bq, bn), 1, _welford_merge)  # [GB]
        mean, m2, cnt = _welford_merge(mean, m2, cnt, bm, bq, bn)
    rstd = tl.rsqrt(m2 / cnt + eps)
    grp = gb * GB + tl.arange(0, GB)
    tl.store(Mean + n * G + grp, mean)
    tl.store(Rstd + n * G + grp, rstd)
    scale = tl.reshape(tl.load(Gamma + ch), [GB, CPG]) * rstd[:, None]
    shift = tl.reshape(tl.load(Beta + ch), [GB, CPG]) - mean[:, None] * scale
    for p0 in range(0, HW, BLOCK_HW):
        pix = p0 + hw
        mask = (pix < HW)[:, None]
        x = tl.load(xbase + pix[:, None] * C + ch[None, :], mask=mask, other=0.0).to(tl.float32)
        y = tl.reshape(x, [BLOCK_HW, GB, CPG]) * scale[None, :, :] + shift[None, :, :]
        tl.store(ybase + pix[:, None] * C + ch[None, :], tl.reshape(y, [BLOCK_HW, GB * CPG]).to(Y.dtype.element_ty),
                 mask=mask)


def gn_inputs(p, rng):
    N, HW, C = p["N"], p["HW"], p["C"]
    return {"x": randn(rng, (N, HW, C), "float16", scale=1.5, loc=0.3),
            "gamma": uniform(rng, (C,), 0.5, 1.5), "beta": randn(rng, (C,), "float32", scale=0.1)}


def gn_ref(p, x):
    N, HW, C, G = p["N"], p["HW"], p["C"], p["G"]

    def one(i):
        xi = x["x"][i].reshape(HW, G, C // G)
        mu = xi.mean(axis=(0, 2))
        var = xi.var(axis=(0, 2))
        rs = 1.0 / np.sqrt(var + p["eps"])
        y = ((xi - mu[None, :, None]) * rs[None, :, None]).reshape(HW, C) * x["gamma"] + x["beta"]
        return y, mu, rs
    res = pmap(one, N)
    return {"y": np.stack([r[0] for r in res]), "mean": np.stack([r[1] for r in res]),
            "rstd": np.stack([r[2] for r in res])}


def gn_launch(p, a, m):
    N, HW, C, G = p["N"], p["HW"], p["C"], p["G"]
    assert m["CPG"] * G == C and G % m["GB"] == 0
    return (N, G // m["GB"]), [a["x"], a["gamma"], a["beta"], a["y"], a["mean"], a["rstd"], HW, C, G, p["eps"]]


def gn_outputs(p):
    N, HW, C, G = p["N"], p["HW"], p["C"], p["G"]
    return {"y": ((N, HW, C), "float16"), "mean": ((N, G), "float32"), "rstd": ((N, G), "float32")}


# --- 5. softmax over the middle axis of [B, S, H] scores, keep_dims reductions ------------------------------------
@triton.jit
def softmax_dim1_lens_kernel(Scores, Lens, P, Lse, B, S, H: tl.constexpr, BLOCK_B: tl.constexpr,
                             BLOCK_S: tl.constexpr):
    # P[b, :, h] = softmax(Scores[b, :Lens[b], h]) (zero past the length); Lse[b, h] its log-sum-exp
    bb = tl.program_id(0) * BLOCK_B + tl.arange(0, BLOCK_B)
    L = tl.load(Lens + bb, mask=bb < B, other=0)
    b3 = bb[:, None, None]
    s3 = tl.arange(0, BLOCK_S)[None, :, None]
    h3 = tl.arange(0, H)[None, None, :]
    inb = (b3 < B) & (s3 < S)
    off = (b3.to(tl.int64) * S + s3) * H + h3
    x = tl.load(Scores + off, mask=inb & (s3 < L[:, None, None]), other=-float("inf")).to(tl.float32)
    m = tl.max(x, axis=1, keep_dims=True)  # [BLOCK_B, 1, H]
    e = tl.exp(x - m)
    d = tl.sum(e, axis=1, keep_dims=True)
    tl.store(P + off, (e / d).to(P.dtype.element_ty), mask=inb)
    tl.store(Lse + b3 * H + h3, m + tl.log(d), mask=b3 < B)


def sm1_inputs(p, rng):
    B, S, H = p["B"], p["S"], p["H"]
    lens = rng.integers(1, S + 1, B).astype(np.int32)
    lens[::3] = S
    return {"scores": randn(rng, (B, S, H), "bfloat16", scale=3.0), "lens": lens}


def sm1_ref(p, x):
    B, S = p["B"], p["S"]
    valid = np.arange(S)[None, :, None] < x["lens"][:, None, None]
    s = np.where(valid, x["scores"], -np.inf)
    m = s.max(axis=1, keepdims=True)
    e = np.exp(s - m)
    d = e.sum(axis=1, keepdims=True)
    return {"p": e / d, "lse": (m + np.log(d))[:, 0, :]}


def sm1_launch(p, a, m):
    B, S, H = p["B"], p["S"], p["H"]
    assert m["H"] == H and m["BLOCK_S"] >= S
    return (cdiv(B, m["BLOCK_B"]),), [a["scores"], a["lens"], a["p"], a["lse"], B, S]


# --- 6. separable 5-tap filter by two tl.dot against a banded matrix ----------------------------------------------
@triton.jit
def sep_filter_banded_kernel(Img, Out, Taps, H, W, KSIZE: tl.constexpr, TILE: tl.constexpr):
    # Out[y, x] = sum_{i, j} taps[i] taps[j] Img[y + i - R, x + j - R] (zero outside); planes [P, H, W] fp16
    R: tl.constexpr = KSIZE // 2
    STEP: tl.constexpr = TILE - 2 * R  # outputs per tile and axis
    ti = tl.program_id(0)
    tj = tl.program_id(1)
    base = tl.program_id(2).to(tl.int64) * H * W
    i = tl.arange(0, TILE)
    r_in = ti * STEP - R + i
    c_in = tj * STEP - R + i
    m_in = ((r_in >= 0) & (r_in < H))[:, None] & ((c_in >= 0) & (c_in < W))[None, :]
    x = tl.load(Img + base + r_in[:, None] * W + c_in[None, :], mask=m_in, other=0.0)
    dlt = i[:, None] - i[None, :]  # band[p, q] = taps[p - q]: input p feeds output q
    band = tl.load(Taps + dlt, mask=(dlt >= 0) & (dlt < KSIZE), other=0.0)
    t = tl.dot(x, band)  # rows filtered: [TILE in rows, TILE out cols]
    y = tl.dot(tl.trans(band), t.to(x.dtype))  # then columns
    r_out = ti * STEP + i
    c_out = tj * STEP + i
    m_out = ((i < STEP) & (r_out < H))[:, None] & ((i < STEP) & (c_out < W))[None, :]
    tl.store(Out + base + r_out[:, None] * W + c_out[None, :], y.to(Out.dtype.element_ty), mask=m_out)


def sep_inputs(p, rng):
    t = rng.random(p["ksize"]) + 0.2
    return {"img": uniform(rng, (p["P"], p["H"], p["W"]), -1.0, 1.0, "float16"),
            "taps": (t / t.sum()).astype(np.float16)}


def sep_ref(p, x):
    H, W, Kz = p["H"], p["W"], p["ksize"]
    R = Kz // 2
    tp = x["taps"]

    def one(i):
        a = np.pad(x["img"][i], R)
        h = sum(tp[j] * a[:, j:j + W] for j in range(Kz))
        return sum(tp[j] * h[j:j + H] for j in range(Kz))
    return {"out": np.stack(pmap(one, p["P"]))}


def sep_launch(p, a, m):
    P, H, W = p["P"], p["H"], p["W"]
    assert m["KSIZE"] == p["ksize"]
    step = m["TILE"] - 2 * (m["KSIZE"] // 2)
    return (cdiv(H, step), cdiv(W, step), P), [a["img"], a["out"], a["taps"], H, W]


# --- 7. online top-k over a vocabulary row: int64 packed keys, tl.topk per chunk, merged by tl.cat + tl.topk --------
@triton.jit
def _pack_key(x, idx):
    b = x.to(tl.int32, bitcast=True)
    k = b ^ ((b >> 31) & 0x7FFFFFFF)  # the float order as a signed int order
    return (k.to(tl.int64) << 32) | (4294967295 - idx.to(tl.int64))


@triton.jit
def topk_online_merge_kernel(Logits, Vals, Idx, V, stride_r, K: tl.constexpr, BLOCK_V: tl.constexpr):
    # Vals[r], Idx[r]: the K largest logits of row r in descending order (ties: the lower index first)
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK_V)
    base = Logits + row * stride_r
    x = tl.load(base + offs, mask=offs < V, other=-float("inf")).to(tl.float32)
    best = tl.topk(_pack_key(x, offs), K)
    for v0 in range(BLOCK_V, V, BLOCK_V):
        idx = v0 + offs
        x = tl.load(base + idx, mask=idx < V, other=-float("inf")).to(tl.float32)
        top = tl.topk(_pack_key(x, idx), K)
        best = tl.topk(tl.cat(best, top, can_reorder=True), K)  # the K best of 2K: order is free going in
    k = (best >> 32).to(tl.int32)
    val = (k ^ ((k >> 31) & 0x7FFFFFFF)).to(tl.float32, bitcast=True)
    ids = (4294967295 - (best & 4294967295)).to(tl.int32)
    kk = tl.arange(0, K)
    tl.store(Vals + row * K + kk, val)
    tl.store(Idx + row * K + kk, ids)


def topk_inputs(p, rng):
    return {"logits": randn(rng, (p["R"], p["V"]), "bfloat16", scale=2.0)}


def topk_ref(p, x):
    K = p["K"]

    def one(r):
        return np.argsort(-x["logits"][r], kind="stable")[:K]
    ids = np.stack(pmap(one, p["R"]))
    return {"vals": np.take_along_axis(x["logits"], ids, axis=1), "ids": ids.astype(np.float64)}


def topk_launch(p, a, m):
    R, V = p["R"], p["V"]
    assert m["K"] == p["K"]
    return (R,), [a["logits"], a["vals"], a["ids"], V, V]


# --- 8. SqueezeLLM-style LUT GEMM: int32-packed 4-bit codes, per-channel tables by tl.gather along axis 1 ----------
@triton.jit
def lut4_gemm_kernel(X, Wq, Lut, Y, M, N, K, stride_xm, stride_wn, stride_ym, BLOCK_M: tl.constexpr,
                     BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # Y = X W^T; W [N, K] as 4-bit codes, eight per int32 along K (code k in bits 4 (k % 8)), row n's levels in Lut[n]
    pid_n = tl.program_id(0)
    pid_m = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    kp = tl.arange(0, BLOCK_K // 8)
    shifts = 4 * tl.arange(0, 8)
    lut = tl.load(Lut + rn[:, None] * 16 + tl.arange(0, 16)[None, :], mask=(rn < N)[:, None], other=0.0)
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        x = tl.load(X + rm[:, None] * stride_xm + (k0 + rk)[None, :], mask=(rm < M)[:, None] & (k0 + rk < K)[None, :],
                    other=0.0)
        wp = k0 // 8 + kp
        q = tl.load(Wq + rn[:, None] * stride_wn + wp[None, :], mask=(rn < N)[:, None] & (wp < K // 8)[None, :],
                    other=0)
        codes = tl.reshape((q[:, :, None] >> shifts[None, None, :]) & 0xF, [BLOCK_N, BLOCK_K])
        w = tl.gather(lut, codes, axis=1)  # [BLOCK_N, BLOCK_K]
        acc = tl.dot(x, tl.trans(w), acc)
    tl.store(Y + rm[:, None] * stride_ym + rn[None, :], acc.to(Y.dtype.element_ty),
             mask=(rm < M)[:, None] & (rn < N)[None, :])


def lut_inputs(p, rng):
    M, N, K = p["M"], p["N"], p["K"]
    assert K % 8 == 0
    lut = np.sort(rng.standard_normal((N, 16), dtype=np.float32) * 0.05, axis=1)
    return {"x": randn(rng, (M, K), "float16"),
            "wq": rng.integers(-2 ** 31, 2 ** 31, (N, K // 8), dtype=np.int64).astype(np.int32),
            "lut": lut.astype(np.float16)}


def lut_ref(p, x):
    N, K = p["N"], p["K"]
    q = x["wq"].astype(np.int64) & 0xFFFFFFFF
    codes = ((q[:, :, None] >> (4 * np.arange(8))[None, None, :]) & 0xF).reshape(N, K)
    w = np.take_along_axis(x["lut"], codes, axis=1)
    return {"y": x["x"] @ w.T}


def lut_launch(p, a, m):
    M, N, K = p["M"], p["N"], p["K"]
    return (cdiv(N, m["BLOCK_N"]), cdiv(M, m["BLOCK_M"])), [a["x"], a["wq"], a["lut"], a["y"], M, N, K, K, K // 8, N]


CASES = [
    Case("hadamard_kron16_dot_rotate_f16", hadamard_rotate_kernel, had_inputs,
         lambda p: {"y": ((p["R"], p["N"]), "float16"), "scale": ((p["R"],), "float32")}, had_ref, had_launch,
         gpu={"R": 16384, "N": 4096}, ci={"R": 3, "N": 4096},
         meta={"N": 4096, "num_warps": 4}, ci_meta={"N": 4096, "num_warps": 4},
         tol={"float32": (4e-3, 1e-3)},
         flops=lambda p: 3.0 * 2 * 16 * p["R"] * p["N"], bytes=lambda p: 4.0 * p["R"] * p["N"],
         idiom="QuaRot-style online Hadamard rotation of 4096-wide fp16 rows as H16 (x) H16 (x) H16: a Sylvester "
               "16 x 16 built from the parity of popcount(i & j) in a jit helper taking a constexpr dtype, three "
               "tl.dot([256, 16], H16) with the [16, 16, 16] view moved between them by 3-D tl.permute (0, 2, 1), "
               "(2, 1, 0) and back by (2, 0, 1), fp16 between stages, a per-row absmax / 127 scale"),
    Case("qkv_split_bshd_to_bhsd_bf16", qkv_split_bhsd_kernel, qkv_inputs, qkv_outputs, qkv_ref, qkv_launch,
         gpu={"B": 4, "S": 4000, "HQ": 32, "HKV": 8, "D": 128, "q_scale": 0.08838834764831845 * 1.4426950408889634},
         ci={"B": 2, "S": 37, "HQ": 4, "HKV": 2, "D": 32, "q_scale": 0.17677669529663687 * 1.4426950408889634},
         meta={"HQ": 32, "HKV": 8, "D": 128, "HB": 2, "BLOCK_S": 32, "num_warps": 4},
         ci_meta={"HQ": 4, "HKV": 2, "D": 32, "HB": 2, "BLOCK_S": 16, "num_warps": 2},
         flops=lambda p: 0.0, bytes=lambda p: 4.0 * p["B"] * p["S"] * (p["HQ"] + 2 * p["HKV"]) * p["D"],
         idiom="fused-QKV split BSHD -> BHSD in-kernel: a row-contiguous [BLOCK_S, HB * D] bf16 slice of the packed "
               "projection, tl.reshape to [BLOCK_S, HB, D] and tl.permute (1, 0, 2) to [HB, BLOCK_S, D] for "
               "head-contiguous stores, the destination by a scalar if / elif / else on the head block (GQA: "
               "HQ = 32, HKV = 8), q scaled by sm_scale * log2 e in fp32, S = 4000 masked on a 3-D pointer tile"),
    Case("moe_block_sort_gather_rows_i8", moe_block_sort_gather_kernel, bsort_inputs, bsort_outputs, bsort_ref,
         bsort_launch,
         gpu={"T": 100003, "D": 256, "E": 128, "block_t": 64}, ci={"T": 150, "D": 32, "E": 8, "block_t": 32},
         meta={"D": 256, "BLOCK_T": 64, "num_warps": 4}, ci_meta={"D": 32, "BLOCK_T": 32, "num_warps": 2},
         flops=lambda p: 0.0, bytes=lambda p: 2.0 * p["T"] * (p["D"] + 16),
         idiom="block-local MoE token sort: int32 keys (expert << 16 | lane) by tl.sort with masked lanes keyed "
               "past every expert, the permutation from key & 0xFFFF applied to the block's int8 token rows by "
               "tl.gather(x, tl.broadcast_to(perm[:, None], [BLOCK_T, D]), axis=0) and to the fp32 per-token scales "
               "by a 1-D tl.gather; sorted ids, source indices, rows and scales stored"),
    Case("groupnorm_nhwc_welford_reduce3_f16", groupnorm_nhwc_kernel, gn_inputs, gn_outputs, gn_ref, gn_launch,
         gpu={"N": 32, "HW": 3600, "C": 512, "G": 32, "eps": 1e-5},
         ci={"N": 2, "HW": 50, "C": 64, "G": 8, "eps": 1e-5},
         meta={"CPG": 16, "GB": 4, "BLOCK_HW": 64, "num_warps": 4},
         ci_meta={"CPG": 8, "GB": 2, "BLOCK_HW": 16, "num_warps": 2},
         flops=lambda p: 12.0 * p["N"] * p["HW"] * p["C"], bytes=lambda p: 6.0 * p["N"] * p["HW"] * p["C"],
         idiom="channels-last GroupNorm: [BLOCK_HW, GB * CPG] fp16 tiles reshaped to 3-D [BLOCK_HW, GB, CPG], "
               "Welford (mean, M2, count) by tl.reduce of a 3-tuple over axis 0 then axis 1 with a jit combine "
               "(n == 0 guarded) that is also called directly to fold each chunk into the carried [GB] state in a "
               "runtime HW loop (3600 masked), tl.rsqrt, then a second pass with [GB, CPG] scale / shift broadcast "
               "[None, :, :]"),
    Case("softmax_dim1_keepdims_lens_bf16", softmax_dim1_lens_kernel, sm1_inputs,
         lambda p: {"p": ((p["B"], p["S"], p["H"]), "bfloat16"), "lse": ((p["B"], p["H"]), "float32")},
         sm1_ref, sm1_launch,
         gpu={"B": 16384, "S": 77, "H": 16}, ci={"B": 5, "S": 13, "H": 4},
         meta={"H": 16, "BLOCK_B": 2, "BLOCK_S": 128, "num_warps": 4},
         ci_meta={"H": 4, "BLOCK_B": 2, "BLOCK_S": 16, "num_warps": 2},
         flops=lambda p: 5.0 * p["B"] * p["S"] * p["H"], bytes=lambda p: 4.0 * p["B"] * p["S"] * p["H"],
         idiom="torch.softmax(x, dim=1) of [B, S, H] bf16 scores: a 3-D [BLOCK_B, BLOCK_S, H] tile (S = 77 padded "
               "to 128, per-sample lengths masked to -inf) reduced along the middle axis by tl.max / tl.sum with "
               "keep_dims=True, bf16 probabilities (zero past the length) and an fp32 log-sum-exp stored through a "
               "[BLOCK_B, 1, H] pointer tile"),
    Case("sep_filter5_banded_dot_f16", sep_filter_banded_kernel, sep_inputs,
         lambda p: {"out": ((p["P"], p["H"], p["W"]), "float16")}, sep_ref, sep_launch,
         gpu={"P": 24, "H": 1080, "W": 1920, "ksize": 5}, ci={"P": 2, "H": 70, "W": 100, "ksize": 5},
         meta={"KSIZE": 5, "TILE": 64, "num_warps": 4}, ci_meta={"KSIZE": 5, "TILE": 32, "num_warps": 2},
         flops=lambda p: 4.0 * p["ksize"] * p["P"] * p["H"] * p["W"], bytes=lambda p: 4.0 * p["P"] * p["H"] * p["W"],
         idiom="separable 5-tap filter as two tl.dot against a banded matrix: a 64 x 64 fp16 tile with a 2-pixel "
               "zero-padded halo, 60 x 60 outputs per program (a non-power-of-two tile step), the band "
               "band[p, q] = taps[p - q] by one masked 2-D tl.load of the fp16 taps, x @ band then "
               "tl.trans(band) @ t (t cast back to fp16), a 3-D grid over planes"),
    Case("topk_online_merge_cat_topk_bf16", topk_online_merge_kernel, topk_inputs,
         lambda p: {"vals": ((p["R"], p["K"]), "float32"), "ids": ((p["R"], p["K"]), "int32")}, topk_ref,
         topk_launch,
         gpu={"R": 128, "V": 128256, "K": 64}, ci={"R": 3, "V": 1000, "K": 16},
         meta={"K": 64, "BLOCK_V": 2048, "num_warps": 8}, ci_meta={"K": 16, "BLOCK_V": 128, "num_warps": 2},
         flops=lambda p: 0.0, bytes=lambda p: 2.0 * p["R"] * p["V"],
         idiom="online top-k of bf16 vocabulary rows: (order-preserving float bits << 32) | (2^32 - 1 - index) "
               "int64 keys, the first chunk's tl.topk peeled before a runtime chunk loop, each chunk's tl.topk "
               "merged into the carried [K] by tl.topk(tl.cat(best, top, can_reorder=True), K) (a 2K -> K top-k "
               "of int64 keys), keys decoded back to fp32 values and int32 ids by shifts, masks and a bitcast"),
    Case("lut4_gather_axis1_gemm_f16", lut4_gemm_kernel, lut_inputs,
         lambda p: {"y": ((p["M"], p["N"]), "float16")}, lut_ref, lut_launch,
         gpu={"M": 32, "N": 14336, "K": 4096}, ci={"M": 5, "N": 40, "K": 200},
         meta={"BLOCK_M": 32, "BLOCK_N": 64, "BLOCK_K": 128, "num_warps": 4, "num_stages": 3},
         ci_meta={"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 64, "num_warps": 2},
         flops=lambda p: 2.0 * p["M"] * p["N"] * p["K"],
         bytes=lambda p: p["N"] * p["K"] / 2.0 + 2.0 * p["M"] * (p["K"] + p["N"]) + 32.0 * p["N"],
         idiom="SqueezeLLM-style non-uniform 4-bit GEMM: eight codes per int32 along K unpacked by a 3-D shift "
               "broadcast (q[:, :, None] >> 4 * arange(8)) & 0xF and tl.reshape to [BLOCK_N, BLOCK_K], each output "
               "channel's own 16-entry fp16 table applied by tl.gather(lut, codes, axis=1), the weight fed to tl.dot "
               "through tl.trans, M = 32 tokens masked, K masked in 128 steps"),
]
