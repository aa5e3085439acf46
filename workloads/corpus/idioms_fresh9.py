"""Eight training-library idioms (Liger-Kernel / Unsloth / FlagGems style): a fused linear + cross-entropy backward
chunk (the logits' gradient written in place over the logits, then a tl.dot with the weight); Gemma-style RMSNorm
backward (weight + offset) writing dX in place over dY (the same array passed twice) with dW accumulated across a
per-program row loop into partials; SwiGLU backward writing both input gradients in place; RoPE backward (rotation
by -theta under a BACKWARD_PASS constexpr) in place on Q and K with padded head tiles; Unsloth-style cross-entropy
with logit soft-capping t * tanh(x / t) by libdevice.tanh, forward and backward in one kernel; FlagGems-style
var_mean by lane-wise Welford over a looped row finished by tl.reduce of a (mean, m2, count) tuple; KL-divergence
with a log_target flag and reduction variants (none; batchmean by a float atomic); GeGLU forward with exact erf GELU
(libdevice.erf) or the tanh approximation under a constexpr.
"""
import numpy as np
import triton
import triton.language as tl
from triton.language.extra import libdevice

from workloads.corpus._case import Case, cdiv, erf, randn, uniform


# --- 1. fused linear + cross-entropy backward chunk ---------------------------------------------------------------
@triton.jit
def flce_bwd_chunk_kernel(LOGITS, stride_lm, W, stride_wv, stride_wh, Y, LOSS, GH, stride_gm, M, V, inv_n,
                          ignore_index, HD: tl.constexpr, RETURN_LOSS: tl.constexpr, BLOCK_M: tl.constexpr,
                          BLOCK_V: tl.constexpr):
    # per row block: lse over V (chunked), then d logits = (softmax - onehot(y)) * inv_n written over LOGITS and
    # GH = d logits @ W accumulated chunk by chunk
    pid = tl.program_id(0).to(tl.int64)
    rm = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    rmask = rm < M
    y = tl.load(Y + rm, mask=rmask, other=ignore_index)
    valid = (y != ignore_index) & rmask
    rows = LOGITS + rm[:, None] * stride_lm
    cols = tl.arange(0, BLOCK_V)
    rh = tl.arange(0, HD)
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    xy = tl.zeros([BLOCK_M], dtype=tl.float32)
    for v0 in range(0, V, BLOCK_V):
        cv = v0 + cols
        x = tl.load(rows + cv[None, :], mask=rmask[:, None] & (cv[None, :] < V), other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m_i, tl.max(x, axis=1))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        l_i = l_i * tl.exp(m_i - m_safe) + tl.sum(tl.exp(x - m_safe[:, None]), axis=1)
        m_i = m_new
        xy += tl.sum(tl.where(cv[None, :] == y[:, None], x, 0.0), axis=1)
    lse = tl.where(rmask, m_i + tl.log(l_i), 0.0)
    if RETURN_LOSS:
        tl.store(LOSS + rm, tl.where(valid, (lse - xy) * inv_n, 0.0), mask=rmask)
    scale = tl.where(valid, inv_n, 0.0)
    acc = tl.zeros([BLOCK_M, HD], dtype=tl.float32)
    for v0 in range(0, V, BLOCK_V):
        cv = v0 + cols
        cmask = cv < V
        ptrs = rows + cv[None, :]
        x = tl.load(ptrs, mask=rmask[:, None] & cmask[None, :], other=0.0).to(tl.float32)
        p = tl.exp(x - lse[:, None])
        g = (p - tl.where(cv[None, :] == y[:, None], 1.0, 0.0)) * scale[:, None]
        g = tl.where(rmask[:, None] & cmask[None, :], g, 0.0)
        g16 = g.to(LOGITS.dtype.element_ty)
        tl.store(ptrs, g16, mask=rmask[:, None] & cmask[None, :])
        w = tl.load(W + cv[:, None].to(tl.int64) * stride_wv + rh[None, :] * stride_wh, mask=cmask[:, None],
                    other=0.0)
        acc += tl.dot(g16, w)
    tl.store(GH + rm[:, None] * stride_gm + rh[None, :], acc, mask=rmask[:, None])


# --- 2. Gemma RMSNorm backward: (w + offset), dX in place over dY, dW partials over a row loop ------------------
@triton.jit
def rmsnorm_bwd_offset_kernel(DY, stride_dy, DX, stride_dx, X, stride_x, W, RSTD, DW, stride_dw, R, N,
                              rows_per_program, offset, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    row_start = pid * rows_per_program
    row_end = tl.minimum((pid + 1) * rows_per_program, R)
    cols = tl.arange(0, BLOCK_N)
    cmask = cols < N
    w = tl.load(W + cols, mask=cmask, other=0.0).to(tl.float32) + offset
    dw_acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    for row in range(row_start, row_end):
        r64 = row.to(tl.int64)
        dy = tl.load(DY + r64 * stride_dy + cols, mask=cmask, other=0.0).to(tl.float32)
        x = tl.load(X + r64 * stride_x + cols, mask=cmask, other=0.0).to(tl.float32)
        rstd = tl.load(RSTD + row)
        xhat = x * rstd
        dw_acc += dy * xhat
        m = dy * w
        dx = rstd * m - rstd * (tl.sum(m * xhat, axis=0) / N) * xhat
        tl.store(DX + r64 * stride_dx + cols, dx.to(DX.dtype.element_ty), mask=cmask)
    tl.store(DW + pid * stride_dw + cols, dw_acc, mask=cmask)


# --- 3. SwiGLU backward, both gradients in place --------------------------------------------------------------
@triton.jit
def swiglu_bwd_inplace_kernel(DC, A, B, stride, N, BLOCK_N: tl.constexpr):
    # c = silu(a) * b; writes da over A and db over B
    row = tl.program_id(0).to(tl.int64)
    DC += row * stride
    A += row * stride
    B += row * stride
    for n0 in range(0, N, BLOCK_N):
        cols = n0 + tl.arange(0, BLOCK_N)
        mask = cols < N
        dc = tl.load(DC + cols, mask=mask, other=0.0).to(tl.float32)
        a = tl.load(A + cols, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(B + cols, mask=mask, other=0.0).to(tl.float32)
        sig = tl.sigmoid(a)
        silu = a * sig
        db = dc * silu
        da = dc * (silu * (1.0 - sig) + sig) * b
        tl.store(A + cols, da.to(A.dtype.element_ty), mask=mask)
        tl.store(B + cols, db.to(B.dtype.element_ty), mask=mask)


# --- 4. RoPE backward (rotate-half layout), in place on Q and K ---------------------------------------------------
@triton.jit
def rope_bwd_kernel(Q, stride_qt, K, stride_kt, COS, SIN, stride_cb, stride_cl, L, cos_bs,
                    NQH: tl.constexpr, NKH: tl.constexpr, HD: tl.constexpr, PAD_QH: tl.constexpr,
                    PAD_KH: tl.constexpr, BACKWARD_PASS: tl.constexpr):
    # Q [B*L, NQH, HD], K [B*L, NKH, HD]; cos/sin [cos_bs, L, HD] (first half used)
    pid = tl.program_id(0).to(tl.int64)
    b = pid // L
    l = pid % L
    cb = tl.where(cos_bs == 1, 0, b)
    half = HD // 2
    d = tl.arange(0, HD // 2)
    cos = tl.load(COS + cb * stride_cb + l * stride_cl + d)
    sin = tl.load(SIN + cb * stride_cb + l * stride_cl + d)
    if BACKWARD_PASS:
        sin = -sin
    qh = tl.arange(0, PAD_QH)
    kh = tl.arange(0, PAD_KH)
    qp = Q + pid * stride_qt + qh[:, None] * HD + d[None, :]
    kp = K + pid * stride_kt + kh[:, None] * HD + d[None, :]
    qm = qh[:, None] < NQH
    km = kh[:, None] < NKH
    q1 = tl.load(qp, mask=qm, other=0.0).to(sin.dtype)
    q2 = tl.load(qp + half, mask=qm, other=0.0).to(sin.dtype)
    k1 = tl.load(kp, mask=km, other=0.0).to(sin.dtype)
    k2 = tl.load(kp + half, mask=km, other=0.0).to(sin.dtype)
    tl.store(qp, (q1 * cos[None, :] - q2 * sin[None, :]).to(Q.dtype.element_ty), mask=qm)
    tl.store(qp + half, (q2 * cos[None, :] + q1 * sin[None, :]).to(Q.dtype.element_ty), mask=qm)
    tl.store(kp, (k1 * cos[None, :] - k2 * sin[None, :]).to(K.dtype.element_ty), mask=km)
    tl.store(kp + half, (k2 * cos[None, :] + k1 * sin[None, :]).to(K.dtype.element_ty), mask=km)


# --- 5. Unsloth cross-entropy with soft-capping, forward + backward ----------------------------------------------
@triton.jit
def ce_softcap_fwd_bwd_kernel(LOGITS, stride_l, LABELS, LOSS, LSE, DLOSS, V, SOFTCAP, LOGIT_SCALE,
                              DO_SOFTCAPPING: tl.constexpr, DO_LOGIT_SCALING: tl.constexpr,
                              BLOCK_V: tl.constexpr):
    # z = scale * x (optional), then t * tanh(z / t) (optional); loss = lse(z) - z_y (0 for y == -100);
    # d x = dloss * (softmax(z) - onehot) * dz/dx written over LOGITS
    row = tl.program_id(0).to(tl.int64)
    LOGITS += row * stride_l
    label = tl.load(LABELS + row).to(tl.int32)
    dloss = tl.load(DLOSS + row)
    cols = tl.arange(0, BLOCK_V)
    m = float("-inf")
    s = 0.0
    zy = 0.0
    for v0 in range(0, V, BLOCK_V):
        c = v0 + cols
        x = tl.load(LOGITS + c, mask=c < V, other=float("-inf")).to(tl.float32)
        if DO_LOGIT_SCALING:
            x = LOGIT_SCALE * x
        if DO_SOFTCAPPING:
            x = SOFTCAP * libdevice.tanh(x / SOFTCAP)
        m_new = tl.maximum(m, tl.max(x, 0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), 0)
        m = m_new
        zy += tl.sum(tl.where(c == label, x, 0.0), 0)
    lse = m + tl.log(s)
    loss = tl.where(label != -100, lse - zy, 0.0)
    tl.store(LOSS + row, loss)
    tl.store(LSE + row, lse)
    dl = tl.where(label != -100, dloss, 0.0)
    for v0 in range(0, V, BLOCK_V):
        c = v0 + cols
        x = tl.load(LOGITS + c, mask=c < V, other=0.0).to(tl.float32)
        if DO_LOGIT_SCALING:
            x = LOGIT_SCALE * x
        if DO_SOFTCAPPING:
            t = libdevice.tanh(x / SOFTCAP)
            x = SOFTCAP * t
        g = tl.exp(x - lse) - tl.where(c == label, 1.0, 0.0)
        g = g * dl
        if DO_SOFTCAPPING:
            g = g * (1.0 - t * t)
        if DO_LOGIT_SCALING:
            g = g * LOGIT_SCALE
        tl.store(LOGITS + c, g.to(LOGITS.dtype.element_ty), mask=c < V)


# --- 6. FlagGems var_mean: Welford over a looped row, tl.reduce of a tuple ---------------------------------------
@triton.jit
def welford_combine(mean_a, m2_a, w_a, mean_b, m2_b, w_b):
    w = w_a + w_b
    frac = tl.where(w == 0.0, 0.0, w_b / tl.where(w == 0.0, 1.0, w))
    delta = mean_b - mean_a
    mean = mean_a + delta * frac
    m2 = m2_a + m2_b + delta * delta * w_a * frac
    return mean, m2, w


@triton.jit
def var_mean_welford_kernel(X, VAR, MEAN, M, N, correction, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    rm = (pid * BLOCK_M + tl.arange(0, BLOCK_M))[:, None]
    X = X + rm.to(tl.int64) * N
    rmask = rm < M
    acc_mean = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    acc_m2 = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    acc_w = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for off in range(0, N, BLOCK_N):
        cols = (off + tl.arange(0, BLOCK_N))[None, :]
        mask = rmask & (cols < N)
        x = tl.load(X + cols, mask=mask, other=0.0).to(tl.float32)
        w_new = acc_w + mask.to(tl.float32)
        delta = x - acc_mean
        acc_mean = tl.where(mask, acc_mean + delta / tl.where(w_new == 0.0, 1.0, w_new), acc_mean)
        acc_m2 = tl.where(mask, acc_m2 + delta * (x - acc_mean), acc_m2)
        acc_w = w_new
    mean, m2, w = tl.reduce((acc_mean, acc_m2, acc_w), 1, welford_combine)
    var = m2 / tl.maximum(w - correction, 0.0)
    tl.store(VAR + rm, var[:, None], mask=rmask)
    tl.store(MEAN + rm, mean[:, None], mask=rmask)


# --- 7. KL divergence: log_target flag, reduction variants -----------------------------------------------------
@triton.jit
def kldiv_kernel(YP, stride_p, YT, stride_t, LOSS, N, scale, eps, BLOCK_N: tl.constexpr,
                 LOG_TARGET: tl.constexpr, REDUCTION: tl.constexpr):
    # REDUCTION 0: none (LOSS [R, N]); otherwise LOSS [1] += scale * row sum (1: sum, 2: mean, 3: batchmean)
    row = tl.program_id(0).to(tl.int64)
    YP += row * stride_p
    YT += row * stride_t
    total = tl.zeros([BLOCK_N], dtype=tl.float32)
    for n0 in range(0, N, BLOCK_N):
        cols = n0 + tl.arange(0, BLOCK_N)
        mask = cols < N
        yp = tl.load(YP + cols, mask=mask, other=0.0).to(tl.float32)
        yt = tl.load(YT + cols, mask=mask, other=0.0).to(tl.float32)
        if LOG_TARGET:
            loss = tl.exp(yt) * (yt - yp)
        else:
            loss = tl.where(yt > 0.0, yt * (tl.log(tl.maximum(yt, eps)) - yp), 0.0)
        loss = tl.where(mask, loss, 0.0)
        if REDUCTION == 0:
            tl.store(LOSS + row * N + cols, loss, mask=mask)
        else:
            total += loss
    if REDUCTION != 0:
        tl.atomic_add(LOSS, tl.sum(total, axis=0) * scale)


# --- 8. GeGLU forward: exact erf GELU or the tanh approximation --------------------------------------------------
@triton.jit
def geglu_fwd_kernel(A, B, C, stride, N, APPROXIMATE: tl.constexpr, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    for n0 in tl.range(0, N, BLOCK_N):
        cols = n0 + tl.arange(0, BLOCK_N)
        mask = cols < N
        a = tl.load(A + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(B + row * stride + cols, mask=mask, other=0.0)
        if APPROXIMATE:
            SQRT_2_OVER_PI: tl.constexpr = 0.7978845608028654
            inner = SQRT_2_OVER_PI * (a + 0.044715 * a * a * a)
            g = 0.5 * a * (1.0 + libdevice.tanh(inner))
        else:
            g = 0.5 * a * (1.0 + libdevice.erf(a * 0.7071067811865476))
        c = g.to(b.dtype) * b
        tl.store(C + row * stride + cols, c, mask=mask)


# --- references, inputs, launches ----------------------------------------------------------------------------------
def _softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _lse(z):
    m = z.max(axis=-1)
    return m + np.log(np.exp(z - m[..., None]).sum(axis=-1))


# 1. fused linear CE backward
def fl_inputs(p, rng):
    M, V, HD = p["M"], p["V"], p["HD"]
    y = rng.integers(0, V, M).astype(np.int64)
    y[3::7] = -100
    return {"logits": randn(rng, (M, V), "float16", scale=2.0), "w": randn(rng, (V, HD), "float16", scale=0.5),
            "y": y}


def fl_ref(p, x):
    M, V = p["M"], p["V"]
    z = x["logits"]
    y = x["y"].astype(np.int64)
    valid = y != -100
    n = max(int(valid.sum()), 1)
    lse = _lse(z)
    zy = z[np.arange(M), np.where(valid, y, 0)]
    g = _softmax(z)
    g[np.arange(M), np.where(valid, y, 0)] -= 1.0
    g = np.where(valid[:, None], g / n, 0.0)
    g16 = g.astype(np.float16).astype(np.float64)
    return {"glogits": g, "gh": g16 @ x["w"], "loss": np.where(valid, (lse - zy) / n, 0.0)}


def fl_launch(p, a, m):
    M, V, HD = p["M"], p["V"], p["HD"]
    assert m["HD"] == HD
    a["glogits"][...] = a["logits"]
    n = max(int((np.asarray(a["y"].cpu() if hasattr(a["y"], "cpu") else a["y"]) != -100).sum()), 1)
    return (cdiv(M, m["BLOCK_M"]),), [a["glogits"], V, a["w"], HD, 1, a["y"], a["loss"], a["gh"], HD, M, V,
                                      1.0 / n, -100]


# 2. RMSNorm backward with offset
def rb_inputs(p, rng):
    R, N = p["R"], p["N"]
    x = randn(rng, (R, N), "bfloat16")
    xf = x.astype(np.float64)
    rstd = (1.0 / np.sqrt((xf * xf).mean(axis=1) + 1e-6)).astype(np.float32)
    return {"dy": randn(rng, (R, N), "bfloat16"), "x": x, "w": randn(rng, (N,), "bfloat16", scale=0.1),
            "rstd": rstd}


def rb_ref(p, x):
    R, N, P = p["R"], p["N"], p["P"]
    w = x["w"] + p["offset"]
    xhat = x["x"] * x["rstd"][:, None]
    m = x["dy"] * w
    dx = x["rstd"][:, None] * (m - xhat * (m * xhat).mean(axis=1, keepdims=True))
    per = cdiv(R, P)
    dwp = np.zeros((P, N))
    for i in range(P):
        dwp[i] = (x["dy"][i * per:(i + 1) * per] * xhat[i * per:(i + 1) * per]).sum(axis=0)
    return {"dx": dx, "dw": dwp}


def rb_launch(p, a, m):
    R, N, P = p["R"], p["N"], p["P"]
    a["dx"][...] = a["dy"]
    return (P,), [a["dx"], N, a["dx"], N, a["x"], N, a["w"], a["rstd"], a["dw"], N, R, N, cdiv(R, P), p["offset"]]


# 3. SwiGLU backward
def sg_inputs(p, rng):
    R, N = p["R"], p["N"]
    return {"dc": randn(rng, (R, N), "bfloat16"), "a": randn(rng, (R, N), "bfloat16", scale=2.0),
            "b": randn(rng, (R, N), "bfloat16")}


def sg_ref(p, x):
    a, b, dc = x["a"], x["b"], x["dc"]
    sig = 1.0 / (1.0 + np.exp(-a))
    silu = a * sig
    return {"da": dc * (silu * (1 - sig) + sig) * b, "db": dc * silu}


def sg_launch(p, a, m):
    R, N = p["R"], p["N"]
    a["da"][...] = a["a"]
    a["db"][...] = a["b"]
    return (R,), [a["dc"], a["da"], a["db"], N, N]


# 4. RoPE backward
def rp_inputs(p, rng):
    B, L, NQ, NK, HD = p["B"], p["L"], p["NQ"], p["NK"], p["HD"]
    pos = np.arange(L)[:, None] * (10000.0 ** (-np.arange(0, HD, 2) / HD))[None, :]
    emb = np.concatenate([pos, pos], axis=1)[None]  # [1, L, HD]
    return {"dq": randn(rng, (B * L, NQ, HD), "float16"), "dk": randn(rng, (B * L, NK, HD), "float16"),
            "cos": np.cos(emb).astype(np.float32), "sin": np.sin(emb).astype(np.float32)}


def rp_ref(p, x):
    B, L, HD = p["B"], p["L"], p["HD"]
    h = HD // 2
    c = np.tile(x["cos"][0][:, :h], (B, 1))[:, None, :]
    s = np.tile(x["sin"][0][:, :h], (B, 1))[:, None, :]

    def rot(v):
        v1, v2 = v[..., :h], v[..., h:]
        return np.concatenate([v1 * c + v2 * s, v2 * c - v1 * s], axis=-1)

    return {"q_out": rot(x["dq"]), "k_out": rot(x["dk"])}


def rp_launch(p, a, m):
    B, L, NQ, NK, HD = p["B"], p["L"], p["NQ"], p["NK"], p["HD"]
    assert (m["NQH"], m["NKH"], m["HD"]) == (NQ, NK, HD)
    a["q_out"][...] = a["dq"]
    a["k_out"][...] = a["dk"]
    return (B * L,), [a["q_out"], NQ * HD, a["k_out"], NK * HD, a["cos"], a["sin"], L * HD, HD, L, 1]


# 5. CE softcap
def cs_inputs(p, rng):
    R, V = p["R"], p["V"]
    y = rng.integers(0, V, R).astype(np.int64)
    y[2::5] = -100
    return {"logits": randn(rng, (R, V), "bfloat16", scale=20.0), "labels": y,
            "dloss": uniform(rng, (R,), 0.5, 1.5)}


def cs_ref(p, x):
    R, cap, sc = p["R"], p["softcap"], p["scale"]
    xx = x["logits"] * sc
    t = np.tanh(xx / cap)
    z = cap * t
    y = x["labels"].astype(np.int64)
    valid = y != -100
    yi = np.where(valid, y, 0)
    lse = _lse(z)
    loss = np.where(valid, lse - z[np.arange(R), yi], 0.0)
    g = _softmax(z)
    g[np.arange(R), yi] -= 1.0
    g = g * np.where(valid, x["dloss"], 0.0)[:, None] * (1 - t * t) * sc
    return {"loss": loss, "lse": lse, "dlogits": g}


def cs_launch(p, a, m):
    R, V = p["R"], p["V"]
    a["dlogits"][...] = a["logits"]
    return (R,), [a["dlogits"], V, a["labels"], a["loss"], a["lse"], a["dloss"], V, p["softcap"], p["scale"]]


# 6. var_mean
def vm_inputs(p, rng):
    return {"x": randn(rng, (p["M"], p["N"]), "float16", scale=3.0, loc=5.0)}


def vm_ref(p, x):
    xx = x["x"]
    return {"var": xx.var(axis=1, ddof=p["correction"]), "mean": xx.mean(axis=1)}


def vm_launch(p, a, m):
    M, N = p["M"], p["N"]
    return (cdiv(M, m["BLOCK_M"]),), [a["x"], a["var"], a["mean"], M, N, p["correction"]]


# 7. KL div
def kl_inputs(p, rng):
    R, N = p["R"], p["N"]
    yp = np.log(_softmax(rng.standard_normal((R, N)) * 2)).astype(np.float32)
    yt = _softmax(rng.standard_normal((R, N)) * 2)
    if p["log_target"]:
        yt = np.log(yt)
    else:
        yt[:, 1::9] = 0.0
    return {"yp": yp, "yt": yt.astype(np.float32)}


def kl_ref(p, x):
    yp, yt = x["yp"], x["yt"]
    if p["log_target"]:
        l = np.exp(yt) * (yt - yp)
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            l = np.where(yt > 0, yt * (np.log(np.where(yt > 0, yt, 1.0)) - yp), 0.0)
    if p["reduction"] == 0:
        return {"loss": l}
    scale = {1: 1.0, 2: 1.0 / l.size, 3: 1.0 / l.shape[0]}[p["reduction"]]
    return {"loss": np.array([l.sum() * scale])}


def kl_launch(p, a, m):
    R, N = p["R"], p["N"]
    assert (m["LOG_TARGET"], m["REDUCTION"]) == (p["log_target"], p["reduction"])
    scale = {0: 1.0, 1: 1.0, 2: 1.0 / (R * N), 3: 1.0 / R}[p["reduction"]]
    return (R,), [a["yp"], N, a["yt"], N, a["loss"], N, scale, 1e-10]


# 8. GeGLU
def gg_inputs(p, rng):
    R, N = p["R"], p["N"]
    return {"a": randn(rng, (R, N), "bfloat16", scale=2.0), "b": randn(rng, (R, N), "bfloat16")}


def gg_ref(p, x):
    a, b = x["a"], x["b"]
    if p["approx"]:
        g = 0.5 * a * (1 + np.tanh(np.sqrt(2 / np.pi) * (a + 0.044715 * a ** 3)))
    else:
        g = 0.5 * a * (1 + erf(a / np.sqrt(2.0)))
    return {"c": g * b}


def gg_launch(p, a, m):
    R, N = p["R"], p["N"]
    assert m["APPROXIMATE"] == p["approx"]
    return (R,), [a["a"], a["b"], a["c"], N, N]


CASES = [
    Case("flce_bwd_chunk_inplace_dot_f16", flce_bwd_chunk_kernel, fl_inputs,
         lambda p: {"glogits": ((p["M"], p["V"]), "float16"), "gh": ((p["M"], p["HD"]), "float32"),
                    "loss": ((p["M"],), "float32")}, fl_ref, fl_launch,
         gpu={"M": 4096, "V": 32000, "HD": 256}, ci={"M": 37, "V": 300, "HD": 32},
         meta={"HD": 256, "RETURN_LOSS": True, "BLOCK_M": 64, "BLOCK_V": 64, "num_warps": 8},
         ci_meta={"HD": 32, "RETURN_LOSS": True, "BLOCK_M": 16, "BLOCK_V": 64, "num_warps": 4},
         tol={"float16": (1e-2, 2e-3), "float32": (1e-2, 2e-3)},
         flops=lambda p: 2.0 * p["M"] * p["V"] * p["HD"], bytes=lambda p: 4.0 * p["M"] * p["V"],
         idiom="Liger fused-linear-cross-entropy backward chunk: a row block's chunked online lse with a -inf "
               "guard for padding rows, then d logits = (softmax - onehot) / n_valid stored in place over the "
               "logits (downcast) and fed to tl.dot with the weight chunk, ignore_index rows zero"),
    Case("rmsnorm_bwd_gemma_offset_inplace_bf16", rmsnorm_bwd_offset_kernel, rb_inputs,
         lambda p: {"dx": ((p["R"], p["N"]), "bfloat16"), "dw": ((p["P"], p["N"]), "float32")}, rb_ref, rb_launch,
         gpu={"R": 16384, "N": 4096, "P": 132, "offset": 1.0}, ci={"R": 29, "N": 200, "P": 4, "offset": 1.0},
         meta={"BLOCK_N": 4096, "num_warps": 16}, ci_meta={"BLOCK_N": 256, "num_warps": 4},
         tol={"bfloat16": (2e-2, 1e-2), "float32": (1e-3, 1e-4)},
         flops=lambda p: 8.0 * p["R"] * p["N"], bytes=lambda p: 6.0 * p["R"] * p["N"],
         idiom="Gemma RMSNorm backward (Liger): weight + runtime offset, dX stored in place over dY (the same "
               "array passed as both pointers), a grid of P programs each walking rows_per_program rows with "
               "int64 row offsets, dW accumulated in registers across the row loop and stored as partials"),
    Case("swiglu_bwd_inplace_bf16", swiglu_bwd_inplace_kernel, sg_inputs,
         lambda p: {"da": ((p["R"], p["N"]), "bfloat16"), "db": ((p["R"], p["N"]), "bfloat16")}, sg_ref, sg_launch,
         gpu={"R": 8192, "N": 14336}, ci={"R": 7, "N": 300},
         meta={"BLOCK_N": 2048, "num_warps": 8}, ci_meta={"BLOCK_N": 128, "num_warps": 4},
         flops=lambda p: 10.0 * p["R"] * p["N"], bytes=lambda p: 10.0 * p["R"] * p["N"],
         idiom="SwiGLU backward (Liger): pointers advanced by row * stride (int64), a column loop, fp32 upcasts, "
               "tl.sigmoid, da and db stored in place over the inputs a and b"),
    Case("rope_bwd_rotate_half_inplace_f16", rope_bwd_kernel, rp_inputs,
         lambda p: {"q_out": ((p["B"] * p["L"], p["NQ"], p["HD"]), "float16"),
                    "k_out": ((p["B"] * p["L"], p["NK"], p["HD"]), "float16")}, rp_ref, rp_launch,
         gpu={"B": 4, "L": 4096, "NQ": 32, "NK": 8, "HD": 128}, ci={"B": 2, "L": 11, "NQ": 6, "NK": 2, "HD": 64},
         meta={"NQH": 32, "NKH": 8, "HD": 128, "PAD_QH": 32, "PAD_KH": 8, "BACKWARD_PASS": True, "num_warps": 4},
         ci_meta={"NQH": 6, "NKH": 2, "HD": 64, "PAD_QH": 8, "PAD_KH": 2, "BACKWARD_PASS": True, "num_warps": 2},
         flops=lambda p: 6.0 * p["B"] * p["L"] * (p["NQ"] + p["NK"]) * p["HD"],
         bytes=lambda p: 4.0 * p["B"] * p["L"] * (p["NQ"] + p["NK"]) * p["HD"],
         idiom="RoPE backward (Liger rotate-half): rotation by -theta by negating sin under a BACKWARD_PASS "
               "constexpr, cos/sin batch-broadcast picked by tl.where(cos_bs == 1, 0, b), head tiles padded to a "
               "power of two with masks, fp16 Q/K promoted to the fp32 of sin and stored in place"),
    Case("ce_softcap_fwd_bwd_unsloth_bf16", ce_softcap_fwd_bwd_kernel, cs_inputs,
         lambda p: {"loss": ((p["R"],), "float32"), "lse": ((p["R"],), "float32"),
                    "dlogits": ((p["R"], p["V"]), "bfloat16")}, cs_ref, cs_launch,
         gpu={"R": 512, "V": 256000, "softcap": 30.0, "scale": 0.5},
         ci={"R": 11, "V": 700, "softcap": 30.0, "scale": 0.5},
         meta={"DO_SOFTCAPPING": True, "DO_LOGIT_SCALING": True, "BLOCK_V": 4096, "num_warps": 8},
         ci_meta={"DO_SOFTCAPPING": True, "DO_LOGIT_SCALING": True, "BLOCK_V": 256, "num_warps": 4},
         tol={"float32": (1e-4, 1e-5), "bfloat16": (2e-2, 1e-2)},
         flops=lambda p: 12.0 * p["R"] * p["V"], bytes=lambda p: 4.0 * p["R"] * p["V"],
         idiom="Unsloth cross-entropy with Gemma-2 logit soft-capping: constexpr DO_SOFTCAPPING / "
               "DO_LOGIT_SCALING branches applying SOFTCAP * libdevice.tanh(x / SOFTCAP), a scalar online lse "
               "over chunks (python-float carried state), then the gradient with the tanh derivative (t defined "
               "only inside a constexpr branch, used in a later one) written in place over the logits"),
    Case("var_mean_welford_reduce_tuple_f16", var_mean_welford_kernel, vm_inputs,
         lambda p: {"var": ((p["M"],), "float32"), "mean": ((p["M"],), "float32")}, vm_ref, vm_launch,
         gpu={"M": 8192, "N": 8192, "correction": 1}, ci={"M": 13, "N": 333, "correction": 1},
         meta={"BLOCK_M": 4, "BLOCK_N": 1024, "num_warps": 8}, ci_meta={"BLOCK_M": 4, "BLOCK_N": 64, "num_warps": 4},
         tol={"float32": (1e-4, 1e-5)},
         flops=lambda p: 6.0 * p["M"] * p["N"], bytes=lambda p: 2.0 * p["M"] * p["N"],
         idiom="FlagGems var_mean: lane-wise Welford (mean, m2, count) over a looped row with masked lanes held, "
               "finished by tl.reduce of the 3-tuple along axis 1 with a @triton.jit combine function, var = m2 / "
               "max(n - correction, 0); [BLOCK_M, 1] row pointers"),
    Case("kldiv_none_f32", kldiv_kernel, kl_inputs, lambda p: {"loss": ((p["R"], p["N"]), "float32")}, kl_ref,
         kl_launch,
         gpu={"R": 4096, "N": 32000, "log_target": False, "reduction": 0},
         ci={"R": 9, "N": 500, "log_target": False, "reduction": 0},
         meta={"BLOCK_N": 4096, "LOG_TARGET": False, "REDUCTION": 0, "num_warps": 8},
         ci_meta={"BLOCK_N": 128, "LOG_TARGET": False, "REDUCTION": 0, "num_warps": 4},
         flops=lambda p: 4.0 * p["R"] * p["N"], bytes=lambda p: 12.0 * p["R"] * p["N"],
         idiom="KL divergence (Liger): probability targets with zeros (xlogy guard by tl.where(yt > 0)), "
               "reduction='none' under a constexpr REDUCTION == 0 storing elementwise inside the column loop"),
    Case("kldiv_logtarget_batchmean_atomic_f32", kldiv_kernel, kl_inputs, lambda p: {"loss": ((1,), "float32")},
         kl_ref, kl_launch,
         gpu={"R": 4096, "N": 32000, "log_target": True, "reduction": 3},
         ci={"R": 9, "N": 500, "log_target": True, "reduction": 3},
         meta={"BLOCK_N": 4096, "LOG_TARGET": True, "REDUCTION": 3, "num_warps": 8},
         ci_meta={"BLOCK_N": 128, "LOG_TARGET": True, "REDUCTION": 3, "num_warps": 4},
         zero=("loss",), tol={"float32": (1e-4, 1e-5)},
         flops=lambda p: 4.0 * p["R"] * p["N"], bytes=lambda p: 8.0 * p["R"] * p["N"],
         idiom="KL divergence with log_target: exp(yt) (yt - yp), reduction='batchmean' as a lane-wise sum over "
               "the column loop, one float atomic_add per row scaled by 1 / R"),
    Case("geglu_fwd_erf_libdevice_bf16", geglu_fwd_kernel, gg_inputs,
         lambda p: {"c": ((p["R"], p["N"]), "bfloat16")}, gg_ref, gg_launch,
         gpu={"R": 8192, "N": 14336, "approx": False}, ci={"R": 5, "N": 300, "approx": False},
         meta={"APPROXIMATE": False, "BLOCK_N": 2048, "num_warps": 8},
         ci_meta={"APPROXIMATE": False, "BLOCK_N": 128, "num_warps": 4},
         flops=lambda p: 12.0 * p["R"] * p["N"], bytes=lambda p: 6.0 * p["R"] * p["N"],
         idiom="GeGLU forward (Liger): exact GELU 0.5 a (1 + libdevice.erf(a / sqrt 2)) under APPROXIMATE=False "
               "(tanh form with a constexpr local otherwise), fp32 gelu downcast to b's dtype before the product, "
               "tl.range column loop"),
    Case("geglu_fwd_tanh_libdevice_bf16", geglu_fwd_kernel, gg_inputs,
         lambda p: {"c": ((p["R"], p["N"]), "bfloat16")}, gg_ref, gg_launch,
         gpu={"R": 8192, "N": 14336, "approx": True}, ci={"R": 5, "N": 300, "approx": True},
         meta={"APPROXIMATE": True, "BLOCK_N": 2048, "num_warps": 8},
         ci_meta={"APPROXIMATE": True, "BLOCK_N": 128, "num_warps": 4},
         flops=lambda p: 14.0 * p["R"] * p["N"], bytes=lambda p: 6.0 * p["R"] * p["N"],
         idiom="GeGLU forward, tanh approximation: a constexpr local SQRT_2_OVER_PI inside the constexpr branch, "
               "libdevice.tanh"),
]
