"""Eight more kernels as Triton users write them. An int8 x int8 GEMM for W8A8 inference: the int32 accumulator
grown by `acc += tl.dot(a, b)` in a K loop written `for k in tl.range(0, K, BLOCK_K, num_stages=3)` (the pipeline
depth on the loop, not only at launch), the weight [N, K] read transposed through its strides, then dequantized by
a float32 scale per activation row and per weight column, an optional bias (`if Bias is not None:`, launched once
with a tensor and once with None) and a bf16 store. A persistent RMSNorm: as many programs as the GPU has SMs, each
taking rows `row = tl.program_id(0)` and `row += tl.num_programs(0)` in a `while row < n_rows:` loop, the fp32 weight
loaded once before the loop, one masked row of a non-power-of-two width per step. A mixture-of-experts router: a
softmax over 64 expert logits per token, the top two by tl.max / tl.argmax twice (the first winner masked to -inf by
`tl.where(cols == i1, -inf, p)`), the two probabilities renormalized, weights and int32 ids written as [tokens, 2]
pairs built by tl.join, and an expert-usage histogram by one tl.atomic_add on the joined ids (duplicates within a
block). A GroupNorm backward for dx only: one program per (sample, group), the saved mean / rstd loaded, two passes
over the group as a [channels per group, BLOCK_HW] tile (HW = 7 * 7 masked): the sums of dy * gamma * xhat and
dy * gamma accumulated per lane and reduced once, one through tl.reshape to 1-D, the other by two tl.sum, then
dx = rstd * (dy * gamma - xhat * c1 - c2). A per-row median and median absolute deviation of 127 fp16 values: the
row padded to 128 lanes with +inf (`other=float("inf")`), tl.sort, the middle element picked by
`tl.sum(tl.where(cols == 63, s, 0))`, then a second sort of |x - median| in float32. A single-pass chained prefix
sum over a long 1-D array: each program takes its chunk index from an atomic ticket (so the chunk before it belongs
to a program that has already started: the kernel does not rely on in-order block scheduling, as pid-indexed
versions do), scans its chunk with tl.cumsum, spins on its predecessor's flag (`while tl.atomic_add(flag, 0,
sem="acquire") == 0: pass`), publishes its inclusive prefix, tl.debug_barrier(), and raises its own flag with a
release tl.atomic_xchg. A GPT-NeoX RoPE over q and k [T, H, D] bf16 in place: per block of tokens the cos / sin rows
gathered once by int64 positions from [max_pos, D / 2] float32 caches, then a runtime loop over the q heads and one
over the k heads, each calling a @triton.jit helper that loads the two halves with tl.arange(0, D // 2) and
`+ D // 2`. A softmax within the ragged segments of a 1-D score array given int32 CSR offsets (empty segments
included): one program per segment, runtime loop bounds loaded from the offsets, a scalar online max / normalizer
started from Python floats (m = -inf, d = 0.0) in pass one, the normalized exponentials written in pass two.
"""
import numpy as np
import triton
import triton.language as tl

from workloads.corpus._case import Case, cdiv, pmap, randn, uniform


# --- 1. int8 x int8 -> int32 GEMM, row / column dequant, optional bias, bf16 out -------------------------------------
@triton.jit
def int8_mm_dequant_kernel(A, B, C, SA, SB, Bias, M, N, K, stride_am, stride_ak, stride_bn, stride_bk, stride_cm,
                           stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # C[m, n] = (sum_k A[m, k] * B[n, k]) * sa[m] * sb[n] (+ bias[n]); A [M, K] int8, B [N, K] int8 (nn.Linear)
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    m_mask = offs_m < M
    n_mask = offs_n < N
    a_ptrs = A + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = B + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.int32)
    for k in tl.range(0, K, BLOCK_K, num_stages=3):
        a = tl.load(a_ptrs, mask=m_mask[:, None] & (offs_k[None, :] < K - k), other=0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < K - k) & n_mask[None, :], other=0)
        acc += tl.dot(a, b)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    sa = tl.load(SA + offs_m, mask=m_mask, other=0.0)
    sb = tl.load(SB + offs_n, mask=n_mask, other=0.0)
    c = acc.to(tl.float32) * sa[:, None] * sb[None, :]
    if Bias is not None:
        bias = tl.load(Bias + offs_n, mask=n_mask, other=0.0)
        c += bias[None, :]
    c_ptrs = C + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, c.to(tl.bfloat16), mask=m_mask[:, None] & n_mask[None, :])


def i8mm_inputs(p, rng):
    M, N, K = p["M"], p["N"], p["K"]
    x = {"a": rng.integers(-127, 128, (M, K), dtype=np.int8), "b": rng.integers(-127, 128, (N, K), dtype=np.int8),
         "sa": uniform(rng, (M,), 0.002, 0.02), "sb": uniform(rng, (N,), 0.001, 0.01)}
    if p["bias"]:
        x["bias"] = randn(rng, (N,), "float32", 2.0)
    return x


def i8mm_ref(p, x):
    M, step = p["M"], 512

    def one(i):  # float64 products of int8 values are exact integers (|sum| < 2^53)
        return x["a"][i * step:(i + 1) * step] @ x["b"].T
    c = np.concatenate(pmap(one, cdiv(M, step))) * x["sa"][:, None] * x["sb"][None, :]
    if p["bias"]:
        c += x["bias"][None, :]
    return {"c": c}


def i8mm_launch(p, a, m):
    M, N, K = p["M"], p["N"], p["K"]
    return (cdiv(M, m["BLOCK_M"]), cdiv(N, m["BLOCK_N"])), \
        [a["a"], a["b"], a["c"], a["sa"], a["sb"], a["bias"] if p["bias"] else None, M, N, K, K, 1, K, 1, N, 1]


# --- 2. persistent RMSNorm: while row < n_rows, row += num_programs ---------------------------------------------------
@triton.jit
def rmsnorm_persistent_while_kernel(X, W, Y, n_rows, N, stride_x, stride_y, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    w = tl.load(W + cols, mask=mask, other=0.0)
    while row < n_rows:
        x = tl.load(X + row.to(tl.int64) * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
        rstd = tl.rsqrt(tl.sum(x * x, axis=0) / N + eps)
        y = x * rstd * w
        tl.store(Y + row.to(tl.int64) * stride_y + cols, y.to(tl.float16), mask=mask)
        row += tl.num_programs(0)


def prms_inputs(p, rng):
    return {"x": randn(rng, (p["R"], p["N"]), "float16", 1.5), "w": uniform(rng, (p["N"],), 0.5, 1.5)}


def prms_ref(p, x):
    a = x["x"]
    return {"y": a / np.sqrt((a * a).mean(axis=1, keepdims=True) + p["eps"]) * x["w"][None, :]}


def prms_launch(p, a, m):
    R, N = p["R"], p["N"]
    return (min(p["programs"], R),), [a["x"], a["w"], a["y"], R, N, N, N, p["eps"]]


# --- 3. MoE router: softmax, top-2 by max / argmax twice, renormalized, usage histogram ------------------------------
@triton.jit
def router_top2_kernel(Logits, Weights, Ids, Counts, T, stride_t, E: tl.constexpr, BLOCK_T: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    cols = tl.arange(0, E)
    rmask = rows < T
    x = tl.load(Logits + rows[:, None] * stride_t + cols[None, :], mask=rmask[:, None], other=0.0)
    x = x - tl.max(x, axis=1)[:, None]
    e = tl.exp(x)
    p = e / tl.sum(e, axis=1)[:, None]
    p1 = tl.max(p, axis=1)
    i1 = tl.argmax(p, axis=1)
    p = tl.where(cols[None, :] == i1[:, None], -float("inf"), p)
    p2 = tl.max(p, axis=1)
    i2 = tl.argmax(p, axis=1)
    denom = p1 + p2
    w = tl.join(p1 / denom, p2 / denom)  # [BLOCK_T, 2]
    ids = tl.join(i1, i2).to(tl.int32)
    pair = tl.arange(0, 2)
    out = rows[:, None] * 2 + pair[None, :]
    tl.store(Weights + out, w, mask=rmask[:, None])
    tl.store(Ids + out, ids, mask=rmask[:, None])
    tl.atomic_add(Counts + ids, 1, mask=rmask[:, None], sem="relaxed")


def router_inputs(p, rng):
    T, E = p["T"], p["E"]
    # logits on a 1/32 grid: distinct values differ by >= 1/32 (no float32 near-ties can flip an argmax), and exact
    # ties (equal logits, equal probabilities) go to the lower expert id as tl.argmax and np.argmax both break them
    x = np.round(rng.standard_normal((T, E), dtype=np.float32) * 2.0 * 32.0) / np.float32(32.0)
    x = x.astype(np.float32)
    top = np.argmax(x, axis=1)
    for t in range(0, T, 7):  # a tie for first place
        x[t, (top[t] + 5) % E] = x[t, top[t]]
    for t in range(3, T, 11):  # a tie for second place
        r = np.argsort(-x[t], kind="stable")
        x[t, r[2]] = x[t, r[1]]
    return {"logits": x}


def router_ref(p, x):
    T, E = p["T"], p["E"]
    lg = x["logits"]
    i1 = np.argmax(lg, axis=1)
    rest = lg.copy()
    rest[np.arange(T), i1] = -np.inf
    i2 = np.argmax(rest, axis=1)
    d = lg[np.arange(T), i2] - lg[np.arange(T), i1]  # <= 0
    w1 = 1.0 / (1.0 + np.exp(d))
    ids = np.stack([i1, i2], axis=1)
    return {"weights": np.stack([w1, 1.0 - w1], axis=1), "ids": ids.astype(np.float64),
            "counts": np.bincount(ids.ravel(), minlength=E).astype(np.float64)}


def router_launch(p, a, m):
    T, E = p["T"], p["E"]
    assert m["E"] == E
    return (cdiv(T, m["BLOCK_T"]),), [a["logits"], a["weights"], a["ids"], a["counts"], T, E]


# --- 4. GroupNorm backward, dx only -----------------------------------------------------------------------------------
@triton.jit
def groupnorm_bwd_dx_kernel(X, DY, Gamma, Mean, Rstd, DX, C, HW, G, CPG: tl.constexpr, BLOCK_HW: tl.constexpr):
    # X, DY, DX [B, C, HW] fp32; Gamma [C]; Mean, Rstd [B, G] saved by the forward; one program per (b, g)
    pid = tl.program_id(0)
    b = pid // G
    g = pid % G
    ch = g * CPG + tl.arange(0, CPG)
    hw = tl.arange(0, BLOCK_HW)
    base = b.to(tl.int64) * C * HW
    row = ch[:, None] * HW
    gamma = tl.load(Gamma + ch)[:, None]
    mean = tl.load(Mean + pid)
    rstd = tl.load(Rstd + pid)
    s_xhat = tl.zeros([CPG, BLOCK_HW], dtype=tl.float32)
    s_dy = tl.zeros([CPG, BLOCK_HW], dtype=tl.float32)
    for start in range(0, HW, BLOCK_HW):
        cols = start + hw
        mask = (cols < HW)[None, :]
        x = tl.load(X + base + row + cols[None, :], mask=mask, other=0.0)
        dy = tl.load(DY + base + row + cols[None, :], mask=mask, other=0.0)
        wdy = dy * gamma
        s_xhat += wdy * (x - mean) * rstd
        s_dy += wdy
    n = CPG * HW
    c1 = tl.sum(tl.reshape(s_xhat, [CPG * BLOCK_HW]), axis=0) / n
    c2 = tl.sum(tl.sum(s_dy, axis=1), axis=0) / n
    for start in range(0, HW, BLOCK_HW):
        cols = start + hw
        mask = (cols < HW)[None, :]
        x = tl.load(X + base + row + cols[None, :], mask=mask, other=0.0)
        dy = tl.load(DY + base + row + cols[None, :], mask=mask, other=0.0)
        xhat = (x - mean) * rstd
        dx = rstd * (dy * gamma - xhat * c1 - c2)
        tl.store(DX + base + row + cols[None, :], dx, mask=mask)


def gnb_inputs(p, rng):
    B, C, HW, G = p["B"], p["C"], p["HW"], p["G"]
    x = randn(rng, (B, C, HW), "float32", 1.5, 0.3)
    xg = x.astype(np.float64).reshape(B, G, -1)
    mean = xg.mean(axis=2)
    rstd = 1.0 / np.sqrt(xg.var(axis=2) + 1e-5)
    return {"x": x, "dy": randn(rng, (B, C, HW), "float32"), "gamma": uniform(rng, (C,), 0.5, 1.5),
            "mean": mean.astype(np.float32), "rstd": rstd.astype(np.float32)}


def gnb_ref(p, x):
    B, C, HW, G = p["B"], p["C"], p["HW"], p["G"]

    def one(b):
        xg = x["x"][b].reshape(G, -1)
        wdy = (x["dy"][b] * x["gamma"][:, None]).reshape(G, -1)
        xhat = (xg - x["mean"][b][:, None]) * x["rstd"][b][:, None]
        c1 = (wdy * xhat).mean(axis=1, keepdims=True)
        c2 = wdy.mean(axis=1, keepdims=True)
        return (x["rstd"][b][:, None] * (wdy - xhat * c1 - c2)).reshape(C, HW)
    return {"dx": np.stack(pmap(one, B))}


def gnb_launch(p, a, m):
    B, C, HW, G = p["B"], p["C"], p["HW"], p["G"]
    assert m["CPG"] * G == C
    return (B * G,), [a["x"], a["dy"], a["gamma"], a["mean"], a["rstd"], a["dx"], C, HW, G]


# --- 5. per-row median and MAD of 127 values by tl.sort ---------------------------------------------------------------
@triton.jit
def row_median_mad_kernel(X, Med, Mad, R, stride_r, N: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_R: tl.constexpr):
    tl.static_assert(N % 2 == 1)
    MID: tl.constexpr = N // 2
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.arange(0, BLOCK_N)
    rmask = rows < R
    mask = rmask[:, None] & (cols[None, :] < N)
    x = tl.load(X + rows[:, None].to(tl.int64) * stride_r + cols[None, :], mask=mask, other=float("inf"))
    s = tl.sort(x, dim=1)  # the +inf padding sorts last
    med = tl.sum(tl.where(cols[None, :] == MID, s, 0.0), axis=1).to(tl.float32)
    dev = tl.where(cols[None, :] < N, tl.abs(x.to(tl.float32) - med[:, None]), float("inf"))
    sd = tl.sort(dev, dim=1)
    mad = tl.sum(tl.where(cols[None, :] == MID, sd, 0.0), axis=1)
    tl.store(Med + rows, med, mask=rmask)
    tl.store(Mad + rows, mad, mask=rmask)


def med_inputs(p, rng):
    x = randn(rng, (p["R"], p["N"]), "float16", 3.0)
    x[::9, 5:40] = x[::9, 50:51]  # many equal values in some rows
    return {"x": x}


def med_ref(p, x):
    med = np.median(x["x"], axis=1)  # odd N: the middle element itself
    return {"med": med, "mad": np.median(np.abs(x["x"] - med[:, None]), axis=1)}


def med_launch(p, a, m):
    R, N = p["R"], p["N"]
    assert m["N"] == N
    return (cdiv(R, m["BLOCK_R"]),), [a["x"], a["med"], a["mad"], R, N]


# --- 6. chained single-pass prefix sum: atomic ticket, flag spin, release / acquire ---------------------------------
@triton.jit
def chained_scan_kernel(X, Y, Prefix, Flags, Ticket, N, BLOCK: tl.constexpr):
    # chunk index from a ticket, not tl.program_id: the program holding chunk i - 1 has started before chunk i's
    bid = tl.atomic_add(Ticket, 1)
    offs = bid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N
    x = tl.load(X + offs, mask=mask, other=0.0)
    incl = tl.cumsum(x, axis=0)
    total = tl.sum(x, axis=0)
    carry = tl.zeros([], dtype=tl.float32)
    if bid > 0:
        while tl.atomic_add(Flags + bid - 1, 0, sem="acquire") == 0:
            pass
        carry = tl.load(Prefix + bid - 1, volatile=True)
    tl.store(Prefix + bid, carry + total)
    tl.debug_barrier()
    tl.atomic_xchg(Flags + bid, 1, sem="release")
    tl.store(Y + offs, incl + carry, mask=mask)


def scan_inputs(p, rng):
    return {"x": uniform(rng, (p["N"],), -0.25, 1.0)}


def scan_ref(p, x):
    N, BLOCK = p["N"], p["BLOCK"]
    y = np.cumsum(x["x"])
    nb = cdiv(N, BLOCK)
    ends = np.minimum((np.arange(nb) + 1) * BLOCK, N) - 1
    return {"y": y, "prefix": y[ends], "flags": np.ones(nb), "ticket": np.array([nb], np.float64)}


def scan_outputs(p):
    nb = cdiv(p["N"], p["BLOCK"])
    return {"y": ((p["N"],), "float32"), "prefix": ((nb,), "float32"), "flags": ((nb,), "int32"),
            "ticket": ((1,), "int32")}


def scan_launch(p, a, m):
    N = p["N"]
    assert m["BLOCK"] == p["BLOCK"]
    return (cdiv(N, m["BLOCK"]),), [a["x"], a["y"], a["prefix"], a["flags"], a["ticket"], N]


# --- 7. GPT-NeoX RoPE in place, cos / sin gathered by int64 positions -------------------------------------------------
@triton.jit
def _rotate_half_inplace(ptrs, cos, sin, mask, HALF: tl.constexpr):
    x1 = tl.load(ptrs, mask=mask, other=0.0).to(tl.float32)
    x2 = tl.load(ptrs + HALF, mask=mask, other=0.0).to(tl.float32)
    tl.store(ptrs, (x1 * cos - x2 * sin).to(tl.bfloat16), mask=mask)
    tl.store(ptrs + HALF, (x2 * cos + x1 * sin).to(tl.bfloat16), mask=mask)


@triton.jit
def rope_cache_gather_kernel(Q, K, CosCache, SinCache, Pos, T, n_qh, n_kh, stride_qt, stride_qh, stride_kt,
                             stride_kh, stride_cache, D: tl.constexpr, BLOCK_T: tl.constexpr):
    HALF: tl.constexpr = D // 2
    t = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    tmask = t < T
    pos = tl.load(Pos + t, mask=tmask, other=0)  # int64
    d = tl.arange(0, D // 2)
    m = tmask[:, None]
    cos = tl.load(CosCache + pos[:, None] * stride_cache + d[None, :], mask=m, other=0.0)
    sin = tl.load(SinCache + pos[:, None] * stride_cache + d[None, :], mask=m, other=0.0)
    t64 = t.to(tl.int64)
    for h in range(0, n_qh):
        _rotate_half_inplace(Q + t64[:, None] * stride_qt + h * stride_qh + d[None, :], cos, sin, m, HALF)
    for h in range(0, n_kh):
        _rotate_half_inplace(K + t64[:, None] * stride_kt + h * stride_kh + d[None, :], cos, sin, m, HALF)


def rc_inputs(p, rng):
    T, HQ, HK, D, P = p["T"], p["HQ"], p["HK"], p["D"], p["max_pos"]
    inv = 10000.0 ** (-np.arange(0, D, 2, dtype=np.float64) / D)
    ang = np.arange(P, dtype=np.float64)[:, None] * inv[None, :]
    pos = rng.integers(0, P, T).astype(np.int64)
    pos[: min(T, 5)] = [0, P - 1, 1, P - 1, 2][: min(T, 5)]
    return {"q": randn(rng, (T, HQ, D), "bfloat16"), "k": randn(rng, (T, HK, D), "bfloat16"),
            "cos": np.cos(ang).astype(np.float32), "sin": np.sin(ang).astype(np.float32), "pos": pos}


def rc_ref(p, x):
    h = p["D"] // 2
    pos = x["pos"].astype(np.int64)
    c = x["cos"][pos][:, None, :]
    s = x["sin"][pos][:, None, :]

    def rot(v):
        v1, v2 = v[..., :h], v[..., h:]
        return np.concatenate([v1 * c - v2 * s, v2 * c + v1 * s], axis=-1)
    return {"q_out": rot(x["q"]), "k_out": rot(x["k"])}


def rc_launch(p, a, m):
    T, HQ, HK, D = p["T"], p["HQ"], p["HK"], p["D"]
    assert m["D"] == D
    a["q_out"][...] = a["q"]  # in place: the kernel rotates q_out / k_out, which start as q / k
    a["k_out"][...] = a["k"]
    return (cdiv(T, m["BLOCK_T"]),), [a["q_out"], a["k_out"], a["cos"], a["sin"], a["pos"], T, HQ, HK, HQ * D, D,
                                      HK * D, D, D // 2]


# --- 8. softmax within CSR segments, scalar online state --------------------------------------------------------------
@triton.jit
def segment_softmax_csr_kernel(S, Offsets, Out, BLOCK: tl.constexpr):
    seg = tl.program_id(0)
    start = tl.load(Offsets + seg)
    end = tl.load(Offsets + seg + 1)
    lanes = tl.arange(0, BLOCK)
    m = -float("inf")
    d = 0.0
    for s0 in range(start, end, BLOCK):
        offs = s0 + lanes
        x = tl.load(S + offs, mask=offs < end, other=-float("inf"))
        m_new = tl.maximum(m, tl.max(x, axis=0))
        d = d * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    inv = 1.0 / d
    for s0 in range(start, end, BLOCK):
        offs = s0 + lanes
        mask = offs < end
        x = tl.load(S + offs, mask=mask, other=-float("inf"))
        tl.store(Out + offs, tl.exp(x - m) * inv, mask=mask)


def seg_offsets(p):
    """The CSR offsets (int32): ragged lengths drawn from the case's own seed (the output's length depends on them,
    so they cannot come from the inputs' generator), with empty, one-element and one long segment."""
    rng = np.random.default_rng(p["seed"])
    n, mean = p["segments"], p["mean_len"]
    lens = rng.integers(0, 2 * mean, n)
    lens[::13] = 0
    lens[1::17] = 1
    lens[2] = 9 * mean + 3  # many chunks
    lens[n - 1] = 0  # the last segment empty: offsets[-1] == offsets[-2]
    offs = np.zeros(n + 1, np.int64)
    offs[1:] = np.cumsum(lens)
    assert offs[-1] < 2 ** 31
    return offs.astype(np.int32)


def seg_inputs(p, rng):
    offs = seg_offsets(p)
    return {"scores": randn(rng, (int(offs[-1]),), "float32", 3.0), "offsets": offs}


def seg_ref(p, x):
    o = x["offsets"].astype(np.int64)
    s = x["scores"]
    out = np.empty_like(s)
    for i in range(len(o) - 1):
        a, b = o[i], o[i + 1]
        if b > a:
            e = np.exp(s[a:b] - s[a:b].max())
            out[a:b] = e / e.sum()
    return {"out": out}


def seg_launch(p, a, m):
    return (p["segments"],), [a["scores"], a["offsets"], a["out"]]


CASES = [
    Case("mm_int8_rowcol_dequant_bf16", int8_mm_dequant_kernel, i8mm_inputs,
         lambda p: {"c": ((p["M"], p["N"]), "bfloat16")}, i8mm_ref, i8mm_launch,
         gpu={"M": 4096, "N": 4096, "K": 4096, "bias": True}, ci={"M": 70, "N": 88, "K": 200, "bias": True},
         meta={"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 128, "num_warps": 8, "num_stages": 3},
         ci_meta={"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 64, "num_warps": 4, "num_stages": 3},
         flops=lambda p: 2.0 * p["M"] * p["N"] * p["K"],
         bytes=lambda p: 1.0 * (p["M"] + p["N"]) * p["K"] + 2.0 * p["M"] * p["N"],
         idiom="W8A8 GEMM: int8 x int8 -> int32 by acc += tl.dot(a, b) in `for k in tl.range(0, K, BLOCK_K, "
               "num_stages=3)`, K masked by offs_k < K - k, B [N, K] read transposed by strides, per-row and "
               "per-column float32 scales, optional bias by `if Bias is not None:` (a tensor here), bf16 out"),
    Case("mm_int8_rowcol_dequant_nobias_bf16", int8_mm_dequant_kernel, i8mm_inputs,
         lambda p: {"c": ((p["M"], p["N"]), "bfloat16")}, i8mm_ref, i8mm_launch,
         gpu={"M": 8192, "N": 2048, "K": 4096, "bias": False}, ci={"M": 40, "N": 72, "K": 136, "bias": False},
         meta={"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 128, "num_warps": 8, "num_stages": 3},
         ci_meta={"BLOCK_M": 16, "BLOCK_N": 64, "BLOCK_K": 32, "num_warps": 2, "num_stages": 3},
         flops=lambda p: 2.0 * p["M"] * p["N"] * p["K"],
         bytes=lambda p: 1.0 * (p["M"] + p["N"]) * p["K"] + 2.0 * p["M"] * p["N"],
         idiom="the W8A8 GEMM above launched with Bias=None (the `if Bias is not None:` branch compiled out), "
               "a 128 x 256 tile"),
    Case("persistent_rowwise_rmsnorm_while_f16", rmsnorm_persistent_while_kernel, prms_inputs,
         lambda p: {"y": ((p["R"], p["N"]), "float16")}, prms_ref, prms_launch,
         gpu={"R": 32768, "N": 3000, "programs": 132, "eps": 1e-6},
         ci={"R": 37, "N": 300, "programs": 8, "eps": 1e-6},
         meta={"BLOCK_N": 4096, "num_warps": 8}, ci_meta={"BLOCK_N": 512, "num_warps": 4},
         flops=lambda p: 4.0 * p["R"] * p["N"], bytes=lambda p: 4.0 * p["R"] * p["N"],
         idiom="persistent RMSNorm: grid = SM count, `row = tl.program_id(0)`, `while row < n_rows:` ... "
               "`row += tl.num_programs(0)`, fp32 weight hoisted above the loop, int64 row offsets, one masked "
               "row of N = 3000 per step, tl.rsqrt, fp16 in / out"),
    Case("topk_softmax_router_f32", router_top2_kernel, router_inputs,
         lambda p: {"weights": ((p["T"], 2), "float32"), "ids": ((p["T"], 2), "int32"),
                    "counts": ((p["E"],), "int32")}, router_ref, router_launch,
         gpu={"T": 524288, "E": 64}, ci={"T": 300, "E": 64},
         meta={"E": 64, "BLOCK_T": 32, "num_warps": 4}, ci_meta={"E": 64, "BLOCK_T": 16, "num_warps": 2},
         zero=("counts",),
         flops=lambda p: 6.0 * p["T"] * p["E"], bytes=lambda p: 4.0 * p["T"] * p["E"] + 16.0 * p["T"],
         idiom="MoE top-2 router: softmax over 64 experts, tl.max + tl.argmax, the winner masked by "
               "tl.where(cols == i1[:, None], -inf, p), tl.max + tl.argmax again, weights renormalized, "
               "[T, 2] outputs from tl.join(w1, w2) / tl.join(i1, i2), a relaxed tl.atomic_add(Counts + ids, 1) "
               "histogram with a 2-D masked pointer tile (duplicate addresses in one call)"),
    Case("welford_groupnorm_bwd_dx_f32", groupnorm_bwd_dx_kernel, gnb_inputs,
         lambda p: {"dx": ((p["B"], p["C"], p["HW"]), "float32")}, gnb_ref, gnb_launch,
         gpu={"B": 16, "C": 512, "HW": 3136, "G": 32}, ci={"B": 2, "C": 32, "HW": 49, "G": 4},
         meta={"CPG": 16, "BLOCK_HW": 256, "num_warps": 4}, ci_meta={"CPG": 8, "BLOCK_HW": 32, "num_warps": 2},
         flops=lambda p: 14.0 * p["B"] * p["C"] * p["HW"], bytes=lambda p: 20.0 * p["B"] * p["C"] * p["HW"],
         idiom="GroupNorm backward dx: one program per (sample, group), saved mean / rstd scalars, per-channel "
               "gamma as a [CPG, 1] column, two passes over a [CPG, BLOCK_HW] tile with HW masked, per-lane "
               "accumulators reduced once after the loop (tl.sum(tl.reshape(acc, [CPG * BLOCK_HW])) and "
               "tl.sum(tl.sum(acc, 1), 0)), dx = rstd * (dy * gamma - xhat * c1 - c2)"),
    Case("bitonic_row_median_f16", row_median_mad_kernel, med_inputs,
         lambda p: {"med": ((p["R"],), "float32"), "mad": ((p["R"],), "float32")}, med_ref, med_launch,
         gpu={"R": 1 << 20, "N": 127}, ci={"R": 45, "N": 127},
         meta={"N": 127, "BLOCK_N": 128, "BLOCK_R": 16, "num_warps": 4},
         ci_meta={"N": 127, "BLOCK_N": 128, "BLOCK_R": 8, "num_warps": 2},
         # the median is one of the fp16 inputs (exact); |x - med| of two fp16 values is float32-rounded where their
         # bits span more than 24 (2.5 - 0.000123: the H100 run of 2026-12-08 met one among 2^20 rows): one rounding
         tol={"float32": (2.0 ** -23, 0.0)},
         flops=lambda p: 2.0 * p["R"] * 128 * 28, bytes=lambda p: 2.0 * p["R"] * p["N"] + 8.0 * p["R"],
         idiom="per-row median and MAD of 127 fp16 values: masked load with other=float('inf') padding the row "
               "to 128, tl.sort(x, dim=1), the middle by tl.sum(tl.where(cols == N // 2, s, 0)), a constexpr "
               "MID = N // 2 and tl.static_assert, a second sort of |x - med| in float32 (padding re-set to inf)"),
    Case("chunked_cumsum_carry_atomic_f32", chained_scan_kernel, scan_inputs, scan_outputs, scan_ref, scan_launch,
         gpu={"N": (1 << 25) + 123, "BLOCK": 4096}, ci={"N": 20011, "BLOCK": 1024},
         meta={"BLOCK": 4096, "num_warps": 8}, ci_meta={"BLOCK": 1024, "num_warps": 4},
         zero=("flags", "ticket"),
         flops=lambda p: 2.0 * p["N"], bytes=lambda p: 8.0 * p["N"],
         idiom="single-pass chained scan: chunk index from a scalar tl.atomic_add ticket, tl.cumsum of the chunk, "
               "carry-in by spinning `while tl.atomic_add(flags + bid - 1, 0, sem='acquire') == 0: pass` inside "
               "`if bid > 0:`, a volatile load of the predecessor's inclusive prefix, the own prefix stored, "
               "tl.debug_barrier(), tl.atomic_xchg(flag, 1, sem='release')"),
    Case("rope_cache_gather_qk_bf16", rope_cache_gather_kernel, rc_inputs,
         lambda p: {"q_out": ((p["T"], p["HQ"], p["D"]), "bfloat16"),
                    "k_out": ((p["T"], p["HK"], p["D"]), "bfloat16")}, rc_ref, rc_launch,
         gpu={"T": 16384, "HQ": 32, "HK": 8, "D": 128, "max_pos": 8192},
         ci={"T": 37, "HQ": 4, "HK": 2, "D": 64, "max_pos": 512},
         meta={"D": 128, "BLOCK_T": 16, "num_warps": 4}, ci_meta={"D": 64, "BLOCK_T": 8, "num_warps": 2},
         flops=lambda p: 6.0 * p["T"] * (p["HQ"] + p["HK"]) * p["D"],
         bytes=lambda p: 4.0 * p["T"] * (p["HQ"] + p["HK"]) * p["D"] + 4.0 * p["T"] * p["D"],
         idiom="GPT-NeoX RoPE in place on q and k [T, H, D] bf16: cos / sin rows gathered once per token block "
               "by int64 positions from [max_pos, D / 2] float32 caches, runtime loops over q heads and k heads "
               "calling a @triton.jit helper that loads the halves at d and d + D // 2 and stores both back"),
    Case("segment_softmax_csr_f32", segment_softmax_csr_kernel, seg_inputs,
         lambda p: {"out": ((int(seg_offsets(p)[-1]),), "float32")}, seg_ref, seg_launch,
         gpu={"segments": 65536, "mean_len": 192, "seed": 12}, ci={"segments": 40, "mean_len": 60, "seed": 12},
         meta={"BLOCK": 512, "num_warps": 4}, ci_meta={"BLOCK": 64, "num_warps": 2},
         flops=lambda p: 5.0 * int(seg_offsets(p)[-1]), bytes=lambda p: 12.0 * int(seg_offsets(p)[-1]),
         idiom="segment softmax over int32 CSR offsets: one program per segment, `for s0 in range(start, end, "
               "BLOCK)` with bounds loaded at run time (empty segments run no iteration), scalar online state "
               "started as Python floats (m = -float('inf'), d = 0.0) and re-bound to tensors in the loop, "
               "d = d * exp(m - m_new) + tl.sum(exp(x - m_new)), a second pass writing exp(x - m) / d"),
]
