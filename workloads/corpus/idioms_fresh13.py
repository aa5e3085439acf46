"""Eight more kernels as Triton users write them. A radix-2 decimation-in-time FFT of complex rows held in registers:
the row gathered in bit-reversed order (the index reversed by shifts and ORs in a tl.static_range helper), then one
butterfly stage per tl.static_range step, a @triton.jit helper taking the span 2 ** s as a constexpr argument:
the [BLOCK_R, N] real and imaginary tiles tl.reshape'd to 4-D [BLOCK_R, N / 2H, 2, H], tl.permute'd to put the pair
axis last, tl.split into the two halves, twiddled by tl.cos / tl.sin of a float angle, tl.join'ed back and reshaped,
the result stored as interleaved (re, im) pairs by a final tl.join. A scaled Gram matrix X X^T / K (SYRK) that
launches only the lower-triangular blocks: the program id decoded into a (row, column) block pair by a float
tl.sqrt with integer fix-ups, both operands read from the same matrix (the second transposed through its strides),
and the block stored twice, the second time transposed (tl.trans of the tile and of its mask) above the diagonal
under a scalar `if bi != bj`. The intra-chunk output of Mamba-2's SSD: per (chunk, batch * head) the log decay
tl.cumsum(dt * A) of the chunk, C B^T by one tl.dot, the segment-sum decay exp(cs_i - cs_j) under a causal
tl.where(..., -inf) before the exp, scaled by dt_j, cast to bf16 and multiplied into the head's x by a second tl.dot.
DeepSeek-V3's group-limited top-k routing: selection keys logits + a load-balancing bias, the [BLOCK_T, E] tile
reshaped to [BLOCK_T, groups, experts per group] with the group score the sum of its two largest keys (tl.max,
tl.argmax and the winner masked), the best TOPK_GROUP groups picked by tl.argmax in a tl.static_range loop into a
boolean keep mask, broadcast back over the experts by tl.broadcast_to + tl.reshape, then TOP_K experts picked the same
way, each one's sigmoid score taken by a masked tl.sum and written into column k of [BLOCK_T, TOP_K] tiles by
tl.where(kk == k, ...), the weights normalized and scaled. The MoE finalize (unpermute) step: per token and hidden
block, TOP_K source rows of the expert outputs read through an int32 permutation under a scalar `if src >= 0:` (slots
dropped by the capacity limit hold -1) inside a tl.static_range loop, weighted and summed in fp32, a masked hidden
size of 2880. A time-varying second-order linear recurrence y_t = a1_t y_{t-1} + a2_t y_{t-2} + x_t by
tl.associative_scan over a 6-tuple ((2 x 2 companion matrix, 2-vector) affine maps composed by a @triton.jit combine
function), masked tails padded with identity maps by tl.where, a per-row 2-vector state carried across a runtime
loop over chunks and read out of the last column. An MXFP4 GEMV (OCP microscaling, as gpt-oss ships its MoE
weights): two e2m1 codes per uint8 (low nibble first), decoded by bit fields into float32 bit patterns (sign << 31,
exponent + 126 << 23, mantissa << 22, the subnormal 0.5 by tl.where) and a bitcast, put in order by tl.interleave,
each 32-value group scaled by its e8m0 byte as (s << 23) bitcast to float32, the tile reshaped to 3-D for the scale
and back, a K of 2880 masked at the tail. Batched Cholesky factorization of 16 x 16 SPD matrices: a
[BLOCK_S, 16, 16] tile per program, a runtime loop over the columns (the order n a runtime int under the padded 16),
column j and the pivot extracted by tl.sum(tl.where(cols == j, ...)), the column scaled by 1 / tl.sqrt(pivot) and
written into L by tl.where, the trailing matrix updated by a 3-D rank-1 outer product.
"""
import numpy as np
import triton
import triton.language as tl

from workloads.corpus._case import Case, cdiv, pmap, randn, uniform


# --- 1. radix-2 FFT of complex rows: bit-reversed gather, reshape / permute / split / join butterflies -------------
@triton.jit
def _bit_reverse(i, LOG2N: tl.constexpr):
    r = tl.zeros_like(i)
    for b in tl.static_range(LOG2N):
        r = (r << 1) | ((i >> b) & 1)
    return r


@triton.jit
def _fft_stage(re, im, BLOCK_R: tl.constexpr, N: tl.constexpr, H: tl.constexpr):
    # one radix-2 stage of span 2H: group g's pairs (g, 0, j), (g, 1, j) of the [BLOCK_R, N / 2H, 2, H] view
    G: tl.constexpr = N // (2 * H)
    a_re, b_re = tl.split(tl.permute(tl.reshape(re, [BLOCK_R, G, 2, H]), (0, 1, 3, 2)))
    a_im, b_im = tl.split(tl.permute(tl.reshape(im, [BLOCK_R, G, 2, H]), (0, 1, 3, 2)))
    ang = tl.arange(0, H).to(tl.float32) * (-3.141592653589793 / H)
    w_re = tl.cos(ang)[None, None, :]
    w_im = tl.sin(ang)[None, None, :]
    t_re = w_re * b_re - w_im * b_im
    t_im = w_re * b_im + w_im * b_re
    re = tl.reshape(tl.permute(tl.join(a_re + t_re, a_re - t_re), (0, 1, 3, 2)), [BLOCK_R, N])
    im = tl.reshape(tl.permute(tl.join(a_im + t_im, a_im - t_im), (0, 1, 3, 2)), [BLOCK_R, N])
    return re, im


@triton.jit
def fft_radix2_rows_kernel(X, Y, R, N: tl.constexpr, LOG2N: tl.constexpr, BLOCK_R: tl.constexpr):
    # X, Y [R, N] complex64 as float32 (re, im) pairs; Y[r] = fft(X[r])
    tl.static_assert(N == 2 ** LOG2N)
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    rmask = (rows < R)[:, None]
    k = tl.arange(0, N)
    base = rows[:, None].to(tl.int64) * (2 * N)
    src = _bit_reverse(k, LOG2N)
    re = tl.load(X + base + 2 * src[None, :], mask=rmask, other=0.0)
    im = tl.load(X + base + 2 * src[None, :] + 1, mask=rmask, other=0.0)
    for s in tl.static_range(LOG2N):
        re, im = _fft_stage(re, im, BLOCK_R, N, 2 ** s)  # the span passed inline: a constexpr argument
    pair = tl.arange(0, 2)
    offs = base[:, :, None] + 2 * k[None, :, None] + pair[None, None, :]
    tl.store(Y + offs, tl.join(re, im), mask=rmask[:, :, None])


def fft_inputs(p, rng):
    return {"x": randn(rng, (p["R"], p["N"], 2), "float32")}


def fft_ref(p, x):
    z = x["x"][..., 0] + 1j * x["x"][..., 1]
    f = np.fft.fft(z, axis=1)
    return {"y": np.stack([f.real, f.imag], axis=-1)}


def fft_launch(p, a, m):
    R, N = p["R"], p["N"]
    assert m["N"] == N and 2 ** m["LOG2N"] == N
    return (cdiv(R, m["BLOCK_R"]),), [a["x"], a["y"], R]


# --- 2. SYRK: lower-triangular block grid decoded by sqrt, the block mirrored by tl.trans -------------------------
@triton.jit
def syrk_lower_mirror_kernel(X, C, N, K, stride_xn, stride_xk, stride_cm, stride_cn, alpha,
                             BLOCK: tl.constexpr, BLOCK_K: tl.constexpr):
    # C = alpha * X X^T, X [N, K] fp16, C [N, N] fp16; programs only for blocks (bi, bj) with bi >= bj
    pid = tl.program_id(0)
    bi = ((tl.sqrt(8.0 * pid + 1.0) - 1.0) * 0.5).to(tl.int32)
    bi = tl.where((bi + 1) * (bi + 2) // 2 <= pid, bi + 1, bi)  # float rounding of the root, fixed by integers
    bi = tl.where(bi * (bi + 1) // 2 > pid, bi - 1, bi)
    bj = pid - bi * (bi + 1) // 2
    offs_i = bi * BLOCK + tl.arange(0, BLOCK)
    offs_j = bj * BLOCK + tl.arange(0, BLOCK)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = X + offs_i[:, None] * stride_xn + offs_k[None, :] * stride_xk
    b_ptrs = X + offs_k[:, None] * stride_xk + offs_j[None, :] * stride_xn
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=(offs_i[:, None] < N) & (offs_k[None, :] < k_left), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < k_left) & (offs_j[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_xk
        b_ptrs += BLOCK_K * stride_xk
    c = (acc * alpha).to(tl.float16)
    mask = (offs_i[:, None] < N) & (offs_j[None, :] < N)
    tl.store(C + offs_i[:, None] * stride_cm + offs_j[None, :] * stride_cn, c, mask=mask)
    if bi != bj:
        tl.store(C + offs_j[:, None] * stride_cm + offs_i[None, :] * stride_cn, tl.trans(c), mask=tl.trans(mask))


def syrk_inputs(p, rng):
    return {"x": randn(rng, (p["N"], p["K"]), "float16")}


def syrk_ref(p, x):
    X, N, step = x["x"], p["N"], 1024

    def one(i):
        return X[i * step:(i + 1) * step] @ X.T
    return {"c": np.concatenate(pmap(one, cdiv(N, step))) / p["K"]}


def syrk_launch(p, a, m):
    N, K = p["N"], p["K"]
    nb = cdiv(N, m["BLOCK"])
    return (nb * (nb + 1) // 2,), [a["x"], a["c"], N, K, K, 1, N, 1, 1.0 / K]


# --- 3. Mamba-2 SSD intra-chunk output: tl.cumsum log decay, segment-sum mask, two tl.dot ------------------------
@triton.jit
def ssd_chunk_diag_kernel(X, DT, A, Bm, Cm, Y, L, H, stride_xb, stride_xl, stride_xh, stride_db, stride_dl,
                          stride_bb, stride_bl, stride_yb, stride_yl, stride_yh,
                          CHUNK: tl.constexpr, DSTATE: tl.constexpr, HEADDIM: tl.constexpr):
    # y[t] = sum_{s <= t in t's chunk} (C_t . B_s) exp(cs_t - cs_s) dt_s x_s, cs the chunk's cumsum of dt * A
    c = tl.program_id(0)
    bh = tl.program_id(1)
    b = bh // H
    h = bh % H
    t = c * CHUNK + tl.arange(0, CHUNK)
    tmask = t < L
    dt = tl.load(DT + b * stride_db + t * stride_dl + h, mask=tmask, other=0.0)
    a = tl.load(A + h)
    cs = tl.cumsum(dt * a, axis=0)
    n = tl.arange(0, DSTATE)
    cm = tl.load(Cm + b * stride_bb + t[:, None] * stride_bl + n[None, :], mask=tmask[:, None], other=0.0)
    bt = tl.load(Bm + b * stride_bb + t[None, :] * stride_bl + n[:, None], mask=tmask[None, :], other=0.0)
    cb = tl.dot(cm, bt)  # [CHUNK, CHUNK]
    i = tl.arange(0, CHUNK)
    seg = tl.where(i[:, None] >= i[None, :], cs[:, None] - cs[None, :], -float("inf"))
    w = cb * tl.exp(seg) * dt[None, :]
    p = tl.arange(0, HEADDIM)
    x = tl.load(X + b * stride_xb + t[:, None] * stride_xl + h * stride_xh + p[None, :], mask=tmask[:, None],
                other=0.0)
    y = tl.dot(w.to(x.dtype), x)
    tl.store(Y + b * stride_yb + t[:, None] * stride_yl + h * stride_yh + p[None, :], y.to(tl.bfloat16),
             mask=tmask[:, None])


def ssd_inputs(p, rng):
    B, L, H, P, N = p["B"], p["L"], p["H"], p["P"], p["N"]
    return {"x": randn(rng, (B, L, H, P), "bfloat16"), "dt": uniform(rng, (B, L, H), 0.002, 0.1),
            "A": -uniform(rng, (H,), 1.0, 16.0), "bm": randn(rng, (B, L, N), "bfloat16"),
            "cm": randn(rng, (B, L, N), "bfloat16")}


def ssd_ref(p, x):
    B, L, H, Q = p["B"], p["L"], p["H"], p["chunk"]
    nc = cdiv(L, Q)

    def one(bi):
        y = np.empty((L, H, p["P"]))
        for c in range(nc):
            s = slice(c * Q, min((c + 1) * Q, L))
            q = s.stop - s.start
            cb = x["cm"][bi, s] @ x["bm"][bi, s].T  # [q, q]
            causal = np.tril(np.ones((q, q), bool))
            for h in range(H):
                dt = x["dt"][bi, s, h]
                cs = np.cumsum(dt * x["A"][h])
                seg = np.where(causal, cs[:, None] - cs[None, :], -np.inf)
                y[s, h] = (cb * np.exp(seg) * dt[None, :]) @ x["x"][bi, s, h]
        return y
    return {"y": np.stack(pmap(one, B))}


def ssd_launch(p, a, m):
    B, L, H, P, N = p["B"], p["L"], p["H"], p["P"], p["N"]
    assert m["CHUNK"] == p["chunk"] and m["DSTATE"] == N and m["HEADDIM"] == P
    return (cdiv(L, m["CHUNK"]), B * H), [a["x"], a["dt"], a["A"], a["bm"], a["cm"], a["y"], L, H,
                                          L * H * P, H * P, P, L * H, H, L * N, N, L * H * P, H * P, P]


# --- 4. DeepSeek-V3 group-limited top-k routing ---------------------------------------------------------------------
@triton.jit
def group_limited_topk_kernel(Logits, Bias, Wout, Ids, T, scale, E: tl.constexpr, N_GROUP: tl.constexpr,
                              TOPK_GROUP: tl.constexpr, TOP_K: tl.constexpr, BLOCK_T: tl.constexpr):
    GS: tl.constexpr = E // N_GROUP
    rows = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    rmask = rows < T
    cols = tl.arange(0, E)
    logits = tl.load(Logits + rows[:, None] * E + cols[None, :], mask=rmask[:, None], other=0.0)
    key = logits + tl.load(Bias + cols)[None, :]  # the bias steers the choice, not the weights
    # group score: the sum of the group's two largest keys
    k3 = tl.reshape(key, [BLOCK_T, N_GROUP, GS])
    m1 = tl.max(k3, axis=2)
    i1 = tl.argmax(k3, axis=2)
    gcol = tl.arange(0, GS)
    m2 = tl.max(tl.where(gcol[None, None, :] == i1[:, :, None], -float("inf"), k3), axis=2)
    gscore = m1 + m2
    g = tl.arange(0, N_GROUP)
    keep = tl.zeros([BLOCK_T, N_GROUP], dtype=tl.int1)
    for _ in tl.static_range(TOPK_GROUP):
        best = tl.argmax(gscore, axis=1)
        hit = g[None, :] == best[:, None]
        keep = keep | hit
        gscore = tl.where(hit, -float("inf"), gscore)
    allowed = tl.reshape(tl.broadcast_to(keep[:, :, None], [BLOCK_T, N_GROUP, GS]), [BLOCK_T, E])
    key = tl.where(allowed, key, -float("inf"))
    sig = tl.sigmoid(logits)
    kk = tl.arange(0, TOP_K)
    ids = tl.zeros([BLOCK_T, TOP_K], dtype=tl.int32)
    wts = tl.zeros([BLOCK_T, TOP_K], dtype=tl.float32)
    for k in tl.static_range(TOP_K):
        e = tl.argmax(key, axis=1)
        hit = cols[None, :] == e[:, None]
        s = tl.sum(tl.where(hit, sig, 0.0), axis=1)
        ids = tl.where(kk[None, :] == k, e[:, None], ids)
        wts = tl.where(kk[None, :] == k, s[:, None], wts)
        key = tl.where(hit, -float("inf"), key)
    wts = wts / tl.sum(wts, axis=1)[:, None] * scale
    out = rows[:, None] * TOP_K + kk[None, :]
    tl.store(Wout + out, wts, mask=rmask[:, None])
    tl.store(Ids + out, ids, mask=rmask[:, None])


def glr_inputs(p, rng):
    T, E = p["T"], p["E"]
    # keys on a 1/64 grid (exact in float32, sums of two too): selections are exact; ties go to the lower index
    lg = (np.round(rng.standard_normal((T, E), dtype=np.float32) * 2.0 * 64.0) / np.float32(64.0)).astype(np.float32)
    bias = (np.round(rng.standard_normal(E, dtype=np.float32) * 0.25 * 64.0) / np.float32(64.0)).astype(np.float32)
    for t in range(0, T, 5):  # a tie for the best key of the row
        j = int(np.argmax(lg[t] + bias))
        o = (j + 3 * E // p["n_group"] + 1) % E
        lg[t, o] = lg[t, j] + bias[j] - bias[o]
    return {"logits": lg, "bias": bias}


def glr_ref(p, x):
    T, E, G, TG, K = p["T"], p["E"], p["n_group"], p["topk_group"], p["top_k"]
    key = x["logits"] + x["bias"][None, :]
    gs = np.sort(key.reshape(T, G, E // G), axis=2)[..., -2:].sum(axis=2)
    groups = np.argsort(-gs, axis=1, kind="stable")[:, :TG]
    allowed = np.zeros((T, G), bool)
    np.put_along_axis(allowed, groups, True, axis=1)
    masked = np.where(np.repeat(allowed, E // G, axis=1), key, -np.inf)
    ids = np.argsort(-masked, axis=1, kind="stable")[:, :K]
    s = 1.0 / (1.0 + np.exp(-np.take_along_axis(x["logits"], ids, axis=1)))
    return {"weights": s / s.sum(axis=1, keepdims=True) * p["scale"], "ids": ids.astype(np.float64)}


def glr_launch(p, a, m):
    T = p["T"]
    assert (m["E"], m["N_GROUP"], m["TOPK_GROUP"], m["TOP_K"]) == (p["E"], p["n_group"], p["topk_group"], p["top_k"])
    return (cdiv(T, m["BLOCK_T"]),), [a["logits"], a["bias"], a["weights"], a["ids"], T, p["scale"]]


# --- 5. MoE finalize: unpermute and weight-sum the top-k expert rows, dropped slots skipped -------------------------
@triton.jit
def moe_unpermute_kernel(Yp, Perm, Wt, Out, D, stride_y, stride_o, TOP_K: tl.constexpr, BLOCK_D: tl.constexpr):
    t = tl.program_id(0)
    d = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    dmask = d < D
    acc = tl.zeros([BLOCK_D], dtype=tl.float32)
    for k in tl.static_range(TOP_K):
        src = tl.load(Perm + t * TOP_K + k)
        if src >= 0:  # -1: the slot was dropped (expert over capacity)
            w = tl.load(Wt + t * TOP_K + k)
            row = tl.load(Yp + src.to(tl.int64) * stride_y + d, mask=dmask, other=0.0)
            acc += w * row.to(tl.float32)
    tl.store(Out + t.to(tl.int64) * stride_o + d, acc.to(Out.dtype.element_ty), mask=dmask)


def unperm_perm(p):
    """The permutation (int32 [T, TOP_K]): the slots' rows in the expert-sorted buffer, from the case's own seed
    (the buffer's padding rows are never named), about 6% dropped (-1) and one token with every slot dropped."""
    rng = np.random.default_rng(p["seed"])
    T, K = p["T"], p["top_k"]
    perm = rng.permutation(T * K).astype(np.int32).reshape(T, K)
    perm[rng.random((T, K)) < 0.06] = -1
    perm[min(3, T - 1)] = -1
    return perm


def unperm_inputs(p, rng):
    T, K, D = p["T"], p["top_k"], p["D"]
    w = uniform(rng, (T, K), 0.05, 1.0)
    return {"yp": randn(rng, (T * K + p["pad"], D), "bfloat16"), "perm": unperm_perm(p),
            "w": w / w.sum(1, keepdims=True)}


def unperm_ref(p, x):
    perm = x["perm"].astype(np.int64)
    keep = perm >= 0
    rows = x["yp"][np.where(keep, perm, 0)]  # [T, K, D]
    return {"out": np.einsum("tk,tkd->td", np.where(keep, x["w"], 0.0), rows)}


def unperm_launch(p, a, m):
    T, D = p["T"], p["D"]
    assert m["TOP_K"] == p["top_k"]
    return (T, cdiv(D, m["BLOCK_D"])), [a["yp"], a["perm"], a["w"], a["out"], D, D, D]


# --- 6. second-order linear recurrence by an associative scan of affine 2 x 2 maps ----------------------------------
@triton.jit
def _affine2_combine(a00, a01, a10, a11, a0, a1, b00, b01, b10, b11, b0, b1):
    # (B, b) after (A, a): s -> B (A s + a) + b
    return (b00 * a00 + b01 * a10, b00 * a01 + b01 * a11, b10 * a00 + b11 * a10, b10 * a01 + b11 * a11,
            b00 * a0 + b01 * a1 + b0, b10 * a0 + b11 * a1 + b1)


@triton.jit
def recurrence2_scan_kernel(A1, A2, X, Y, R, T, stride_r, BLOCK_R: tl.constexpr, BLOCK_T: tl.constexpr):
    # y_t = a1_t y_{t-1} + a2_t y_{t-2} + x_t per row, y_{-1} = y_{-2} = 0; state s_t = (y_t, y_{t-1})
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    rmask = rows < R
    cols = tl.arange(0, BLOCK_T)
    base = rows[:, None].to(tl.int64) * stride_r
    c0 = tl.zeros([BLOCK_R], dtype=tl.float32)
    c1 = tl.zeros([BLOCK_R], dtype=tl.float32)
    for t0 in range(0, T, BLOCK_T):
        t = t0 + cols
        mask = rmask[:, None] & (t < T)[None, :]
        a1 = tl.load(A1 + base + t[None, :], mask=mask, other=0.0)
        a2 = tl.load(A2 + base + t[None, :], mask=mask, other=0.0)
        x = tl.load(X + base + t[None, :], mask=mask, other=0.0)
        # companion matrix [[a1, a2], [1, 0]] and vector (x, 0); the identity map past the end
        m10 = tl.where(mask, 1.0, 0.0)
        m11 = tl.where(mask, 0.0, 1.0)
        m00 = tl.where(mask, a1, 1.0)
        v1 = tl.zeros_like(x)
        p00, p01, p10, p11, u0, u1 = tl.associative_scan((m00, a2, m10, m11, x, v1), axis=1,
                                                         combine_fn=_affine2_combine)
        s0 = p00 * c0[:, None] + p01 * c1[:, None] + u0
        s1 = p10 * c0[:, None] + p11 * c1[:, None] + u1
        tl.store(Y + base + t[None, :], s0, mask=mask)
        last = cols[None, :] == BLOCK_T - 1
        c0 = tl.sum(tl.where(last, s0, 0.0), axis=1)
        c1 = tl.sum(tl.where(last, s1, 0.0), axis=1)


def rec2_inputs(p, rng):
    R, T = p["R"], p["T"]
    r = uniform(rng, (R, T), 0.6, 0.9)  # pole radius and angle per step: a stable resonator that drifts
    th = uniform(rng, (R, T), 0.0, 3.0)
    return {"a1": (2.0 * r * np.cos(th)).astype(np.float32), "a2": (-r * r).astype(np.float32),
            "x": randn(rng, (R, T), "float32")}


def rec2_ref(p, x):
    R, T = p["R"], p["T"]
    y = np.empty((R, T))
    y1 = np.zeros(R)
    y2 = np.zeros(R)
    a1, a2, xx = x["a1"].T.copy(), x["a2"].T.copy(), x["x"].T.copy()
    for t in range(T):
        yt = a1[t] * y1 + a2[t] * y2 + xx[t]
        y[:, t] = yt
        y2, y1 = y1, yt
    return {"y": y}


def rec2_launch(p, a, m):
    R, T = p["R"], p["T"]
    return (cdiv(R, m["BLOCK_R"]),), [a["a1"], a["a2"], a["x"], a["y"], R, T, T]


# --- 7. MXFP4 GEMV: e2m1 nibbles decoded by bit fields, e8m0 group scales by bitcast -------------------------------
@triton.jit
def _e2m1_to_f32(c):
    c = c.to(tl.uint32)
    e = (c >> 1) & 3
    m = c & 1
    mag = tl.where(e > 0, ((e + 126) << 23) | (m << 22), m * (126 << 23))  # e == 0: 0 or 0.5
    return (mag | ((c >> 3) << 31)).to(tl.float32, bitcast=True)


@triton.jit
def mxfp4_gemv_kernel(X, Wq, Ws, Y, N, K, stride_xm, stride_wn, stride_sn, stride_ym,
                      BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # Y[m, n] = sum_k X[m, k] W[n, k]; W [N, K] as e2m1 codes packed two per byte [N, K / 2] (element 2j in byte
    # j's low nibble) with one e8m0 scale byte per 32 elements [N, K / 32]
    GROUP: tl.constexpr = 32
    m = tl.program_id(1)
    n = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    nmask = n < N
    kb = tl.arange(0, BLOCK_K // 2)
    kg = tl.arange(0, BLOCK_K // GROUP)
    kx = tl.arange(0, BLOCK_K)
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        qb = k0 // 2 + kb
        q = tl.load(Wq + n[:, None] * stride_wn + qb[None, :], mask=nmask[:, None] & (qb < K // 2)[None, :],
                    other=0)
        w = tl.interleave(_e2m1_to_f32(q & 0xF), _e2m1_to_f32(q >> 4))  # [BLOCK_N, BLOCK_K]
        sg = k0 // GROUP + kg
        sc = tl.load(Ws + n[:, None] * stride_sn + sg[None, :], mask=nmask[:, None] & (sg < K // GROUP)[None, :],
                     other=127)
        scale = (sc.to(tl.uint32) << 23).to(tl.float32, bitcast=True)  # 2^(sc - 127)
        w = tl.reshape(tl.reshape(w, [BLOCK_N, BLOCK_K // GROUP, GROUP]) * scale[:, :, None], [BLOCK_N, BLOCK_K])
        x = tl.load(X + m * stride_xm + k0 + kx, mask=k0 + kx < K, other=0.0).to(tl.float32)
        acc += tl.sum(w * x[None, :], axis=1)
    tl.store(Y + m * stride_ym + n, acc.to(tl.bfloat16), mask=nmask)


E2M1 = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0])


def mx_inputs(p, rng):
    M, N, K = p["M"], p["N"], p["K"]
    assert K % 32 == 0
    return {"x": randn(rng, (M, K), "bfloat16"), "wq": rng.integers(0, 256, (N, K // 2), dtype=np.uint8),
            "ws": rng.integers(118, 131, (N, K // 32), dtype=np.uint8)}


def mx_ref(p, x):
    q = x["wq"].astype(np.int64)
    N, K = p["N"], p["K"]
    w = np.empty((N, K))
    w[:, 0::2] = E2M1[q & 0xF]
    w[:, 1::2] = E2M1[q >> 4]
    w *= np.repeat(np.exp2(x["ws"] - 127.0), 32, axis=1)
    return {"y": x["x"] @ w.T}


def mx_launch(p, a, m):
    M, N, K = p["M"], p["N"], p["K"]
    return (cdiv(N, m["BLOCK_N"]), M), [a["x"], a["wq"], a["ws"], a["y"], N, K, K, K // 2, K // 32, N]


# --- 8. batched Cholesky of small SPD matrices in registers -------------------------------------------------------
@triton.jit
def cholesky_batched_kernel(A, L, S, n, BLOCK_S: tl.constexpr, BN: tl.constexpr):
    # A, L [S, n, n] fp32, n <= BN; A = L L^T with L lower triangular (zeros above the diagonal)
    sys = tl.program_id(0) * BLOCK_S + tl.arange(0, BLOCK_S)
    r = tl.arange(0, BN)
    rr = r[None, :, None]
    cc = r[None, None, :]
    inb = (sys < S)[:, None, None] & (rr < n) & (cc < n)
    base = sys[:, None, None].to(tl.int64) * n * n
    a = tl.load(A + base + rr * n + cc, mask=inb, other=0.0)
    a = tl.where(inb | (rr != cc), a, 1.0)  # padding: the identity, so its pivots are 1
    out = tl.zeros([BLOCK_S, BN, BN], dtype=tl.float32)
    for j in range(n):
        col = tl.sum(tl.where(cc == j, a, 0.0), axis=2)  # [BLOCK_S, BN]: column j of the trailing matrix
        piv = tl.sum(tl.where(r[None, :] == j, col, 0.0), axis=1)
        lcol = tl.where(r[None, :] >= j, col * (1.0 / tl.sqrt(piv))[:, None], 0.0)
        out = tl.where(cc == j, lcol[:, :, None], out)
        a = a - lcol[:, :, None] * lcol[:, None, :]
    tl.store(L + base + rr * n + cc, out, mask=inb)


def chol_inputs(p, rng):
    S, n = p["S"], p["n"]
    b = randn(rng, (S, n, n), "float32").astype(np.float64)
    a = b @ b.transpose(0, 2, 1) / n + 0.5 * np.eye(n)  # SPD, condition number in the tens
    return {"a": a.astype(np.float32)}


def chol_ref(p, x):
    a = x["a"]
    step = 1 << 15
    return {"l": np.concatenate(pmap(lambda i: np.linalg.cholesky(a[i * step:(i + 1) * step]),
                                     cdiv(p["S"], step)))}


def chol_launch(p, a, m):
    S, n = p["S"], p["n"]
    assert n <= m["BN"]
    return (cdiv(S, m["BLOCK_S"]),), [a["a"], a["l"], S, n]


CASES = [
    Case("fft_radix2_rows_c64", fft_radix2_rows_kernel, fft_inputs,
         lambda p: {"y": ((p["R"], p["N"], 2), "float32")}, fft_ref, fft_launch,
         gpu={"R": 1 << 16, "N": 256}, ci={"R": 10, "N": 64},
         meta={"N": 256, "LOG2N": 8, "BLOCK_R": 8, "num_warps": 4},
         ci_meta={"N": 64, "LOG2N": 6, "BLOCK_R": 4, "num_warps": 2},
         flops=lambda p: 5.0 * p["R"] * p["N"] * np.log2(p["N"]), bytes=lambda p: 16.0 * p["R"] * p["N"],
         idiom="radix-2 DIT FFT of complex64 rows (float32 pairs): bit-reversed gather by a static_range "
               "shift/OR helper, per stage a jit helper given the span H = 2 ** s inline as a "
               "constexpr argument, tl.reshape to 4-D [BLOCK_R, N / 2H, 2, H], "
               "tl.permute (0, 1, 3, 2), tl.split, tl.cos / tl.sin twiddles, tl.join + permute + reshape back, "
               "the result stored as interleaved pairs by tl.join(re, im)"),
    Case("syrk_gram_lower_mirror_f16", syrk_lower_mirror_kernel, syrk_inputs,
         lambda p: {"c": ((p["N"], p["N"]), "float16")}, syrk_ref, syrk_launch,
         gpu={"N": 8192, "K": 4096}, ci={"N": 100, "K": 72},
         meta={"BLOCK": 128, "BLOCK_K": 64, "num_warps": 8, "num_stages": 3},
         ci_meta={"BLOCK": 32, "BLOCK_K": 32, "num_warps": 4, "num_stages": 2},
         flops=lambda p: 1.0 * p["N"] * (p["N"] + 128) * p["K"], bytes=lambda p: 2.0 * p["N"] * (p["K"] + p["N"]),
         idiom="SYRK C = X X^T / K on lower-triangular blocks only: the block pair decoded from program_id by "
               "tl.sqrt(8.0 * pid + 1.0) with integer fix-ups, both operands from X (the second transposed by "
               "strides), K masked by the remaining K, the fp16 tile stored and, under `if bi != bj:`, stored "
               "again transposed (tl.trans of tile and mask) above the diagonal"),
    Case("ssd_chunk_diag_bf16", ssd_chunk_diag_kernel, ssd_inputs,
         lambda p: {"y": ((p["B"], p["L"], p["H"], p["P"]), "bfloat16")}, ssd_ref, ssd_launch,
         gpu={"B": 4, "L": 4096, "H": 32, "P": 64, "N": 64, "chunk": 128},
         ci={"B": 2, "L": 72, "H": 3, "P": 16, "N": 16, "chunk": 32},
         meta={"CHUNK": 128, "DSTATE": 64, "HEADDIM": 64, "num_warps": 8},
         ci_meta={"CHUNK": 32, "DSTATE": 16, "HEADDIM": 16, "num_warps": 4},
         flops=lambda p: 2.0 * p["B"] * p["L"] * p["H"] * p["chunk"] * (p["N"] + p["P"]),
         bytes=lambda p: 4.0 * p["B"] * p["L"] * p["H"] * p["P"] + 4.0 * p["B"] * p["L"] * p["N"] * p["H"],
         idiom="Mamba-2 SSD intra-chunk output: log decay by tl.cumsum(dt * A) over the chunk, C B^T by tl.dot "
               "(B loaded transposed), segment sums cs_i - cs_j under a causal tl.where(..., -inf) before tl.exp, "
               "times dt_j, cast to the input dtype (bf16) for a second tl.dot with the head's x, L masked"),
    Case("router_group_limited_topk_f32", group_limited_topk_kernel, glr_inputs,
         lambda p: {"weights": ((p["T"], p["top_k"]), "float32"), "ids": ((p["T"], p["top_k"]), "int32")},
         glr_ref, glr_launch,
         gpu={"T": 65536, "E": 256, "n_group": 8, "topk_group": 4, "top_k": 8, "scale": 2.5},
         ci={"T": 45, "E": 64, "n_group": 4, "topk_group": 2, "top_k": 4, "scale": 2.5},
         meta={"E": 256, "N_GROUP": 8, "TOPK_GROUP": 4, "TOP_K": 8, "BLOCK_T": 16, "num_warps": 4},
         ci_meta={"E": 64, "N_GROUP": 4, "TOPK_GROUP": 2, "TOP_K": 4, "BLOCK_T": 8, "num_warps": 2},
         flops=lambda p: 20.0 * p["T"] * p["E"], bytes=lambda p: 4.0 * p["T"] * p["E"] + 8.0 * p["T"] * p["top_k"],
         idiom="DeepSeek-V3 group-limited routing: keys = logits + bias, a 3-D tl.reshape to [T, groups, 32], "
               "group score = top-2 sum by tl.max / tl.argmax / masked tl.max on axis 2, TOPK_GROUP groups by "
               "tl.argmax in a static_range into a tl.int1 keep mask (|=), tl.broadcast_to + reshape back over "
               "the experts, TOP_K experts by argmax in a static_range writing column k by tl.where(kk == k), "
               "sigmoid weights by a masked tl.sum, normalized and scaled"),
    Case("moe_unpermute_weighted_bf16", moe_unpermute_kernel, unperm_inputs,
         lambda p: {"out": ((p["T"], p["D"]), "bfloat16")}, unperm_ref, unperm_launch,
         gpu={"T": 8192, "D": 2880, "top_k": 4, "pad": 512, "seed": 5},
         ci={"T": 20, "D": 300, "top_k": 4, "pad": 7, "seed": 5},
         meta={"TOP_K": 4, "BLOCK_D": 1024, "num_warps": 4}, ci_meta={"TOP_K": 4, "BLOCK_D": 128, "num_warps": 2},
         flops=lambda p: 2.0 * p["T"] * p["top_k"] * p["D"],
         bytes=lambda p: 2.0 * p["T"] * (p["top_k"] + 1) * p["D"],
         idiom="MoE finalize (unpermute + weighted sum): grid (token, hidden block), tl.static_range over TOP_K "
               "slots, an int32 source row loaded as a scalar and tested by `if src >= 0:` (dropped slots -1) "
               "around the weighted accumulate (an if carrying the fp32 accumulator), int64 row offsets, "
               "hidden 2880 masked in 1024 blocks, the output dtype from Out.dtype.element_ty"),
    Case("recurrence2_affine_scan_f32", recurrence2_scan_kernel, rec2_inputs,
         lambda p: {"y": ((p["R"], p["T"]), "float32")}, rec2_ref, rec2_launch,
         gpu={"R": 2048, "T": 8192}, ci={"R": 5, "T": 300},
         meta={"BLOCK_R": 2, "BLOCK_T": 1024, "num_warps": 4}, ci_meta={"BLOCK_R": 2, "BLOCK_T": 64, "num_warps": 2},
         flops=lambda p: 30.0 * p["R"] * p["T"], bytes=lambda p: 16.0 * p["R"] * p["T"],
         idiom="time-varying second-order recurrence y_t = a1_t y_{t-1} + a2_t y_{t-2} + x_t: tl.associative_scan "
               "over a 6-tuple (2 x 2 companion matrix, 2-vector) with a 12-argument @triton.jit combine composing "
               "affine maps, identity maps past the end by tl.where, a per-row 2-vector carry across a runtime "
               "chunk loop read from the last column by tl.sum(tl.where(cols == BLOCK_T - 1, ...))"),
    Case("mxfp4_gemv_e8m0_bf16", mxfp4_gemv_kernel, mx_inputs,
         lambda p: {"y": ((p["M"], p["N"]), "bfloat16")}, mx_ref, mx_launch,
         gpu={"M": 4, "N": 5760, "K": 2880}, ci={"M": 2, "N": 40, "K": 352},
         meta={"BLOCK_N": 32, "BLOCK_K": 128, "num_warps": 4}, ci_meta={"BLOCK_N": 16, "BLOCK_K": 128, "num_warps": 2},
         flops=lambda p: 2.0 * p["M"] * p["N"] * p["K"],
         bytes=lambda p: p["N"] * p["K"] * (0.5 + 1.0 / 32) + 2.0 * p["M"] * (p["K"] + p["N"]),
         idiom="MXFP4 GEMV: uint8 bytes of two e2m1 codes (low nibble first) decoded in a jit helper by uint32 "
               "bit fields (sign << 31, (e + 126) << 23, m << 22, the subnormal by tl.where) and a bitcast to "
               "float32, tl.interleave(lo, hi), e8m0 group scales as (s << 23) bitcast, a 3-D reshape to apply "
               "them per 32 and back, tl.sum against bf16 x, K = 2880 masked at the tail (bytes, scales, x)"),
    Case("cholesky_batched_16_f32", cholesky_batched_kernel, chol_inputs,
         lambda p: {"l": ((p["S"], p["n"], p["n"]), "float32")}, chol_ref, chol_launch,
         gpu={"S": 1 << 18, "n": 16}, ci={"S": 37, "n": 13},
         meta={"BLOCK_S": 8, "BN": 16, "num_warps": 4}, ci_meta={"BLOCK_S": 4, "BN": 16, "num_warps": 2},
         tol={"float32": (1e-4, 1e-5)},
         flops=lambda p: p["S"] * p["n"] ** 3 / 3.0, bytes=lambda p: 8.0 * p["S"] * p["n"] ** 2,
         idiom="batched Cholesky of 16 x 16 SPD matrices in registers: [BLOCK_S, BN, BN] tiles, padding turned "
               "into the identity by tl.where, a runtime `for j in range(n)`, column and pivot extracted by "
               "tl.sum(tl.where(cols == j, ...)), the column scaled by 1 / tl.sqrt(pivot) and merged into L by "
               "tl.where, the trailing matrix updated by a 3-D rank-1 outer product"),
]
