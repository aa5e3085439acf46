"""Six idioms from training code: the two kernels of a flash-attention backward (a dK/dV kernel whose programs own
a block of keys and walk the query blocks, recomputing the probabilities from a saved log-sum-exp, and a dQ kernel
walking the key blocks; Delta = rowsum(dO * O) precomputed), an RMSNorm backward that also reduces the weight
gradient (a fixed number of programs, each looping over its share of rows with a runtime trip count from the
builtin min(), one fp32 partial dW row per program), a GEGLU backward with the tanh-approximated GELU
(libdevice.tanh, bf16 in and out, fp32 math, one long masked row per program), a cross-entropy forward with label
smoothing and an ignore_index (early return for ignored rows, int64 targets, online max / sum-exp over the
vocabulary in blocks plus the row sum of the logits) and a fused residual add + RMSNorm writing the new residual
only when a constexpr flag asks (the pointer passed as None when it does not)."""
import math

import numpy as np
import triton
import triton.language as tl
from triton.language.extra import libdevice

from workloads.corpus._case import Case, cdiv, f64, pmap, randn


# --- 1. flash-attention backward: dK and dV --------------------------------------------------------------------------
@triton.jit
def attn_bwd_dkdv_kernel(Q, K, V, DO, LSE, DELTA, DK, DV, sm_scale, L, stride_h, stride_l, HEAD_DIM: tl.constexpr,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # one program per (key block, head): K and V stay in registers while every query block goes by; the
    # probabilities come back from the forward's log-sum-exp, kept transposed ([keys, queries]) so that
    # dV += P^T dO and dK += dS^T Q are plain dots with no transpose of the big tile
    start_n = tl.program_id(0) * BLOCK_N
    off_h = tl.program_id(1).to(tl.int64)
    base = off_h * stride_h
    offs_n = start_n + tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    n_mask = offs_n < L
    k = tl.load(K + base + offs_n[:, None] * stride_l + offs_d[None, :], mask=n_mask[:, None], other=0.0)
    v = tl.load(V + base + offs_n[:, None] * stride_l + offs_d[None, :], mask=n_mask[:, None], other=0.0)
    dk = tl.zeros([BLOCK_N, HEAD_DIM], dtype=tl.float32)
    dv = tl.zeros([BLOCK_N, HEAD_DIM], dtype=tl.float32)
    for start_m in range(0, L, BLOCK_M):
        offs_m = start_m + tl.arange(0, BLOCK_M)
        m_mask = offs_m < L
        q = tl.load(Q + base + offs_m[:, None] * stride_l + offs_d[None, :], mask=m_mask[:, None], other=0.0)
        do = tl.load(DO + base + offs_m[:, None] * stride_l + offs_d[None, :], mask=m_mask[:, None], other=0.0)
        lse = tl.load(LSE + off_h * L + offs_m, mask=m_mask, other=0.0)
        delta = tl.load(DELTA + off_h * L + offs_m, mask=m_mask, other=0.0)
        s_t = tl.dot(k, tl.trans(q)) * sm_scale
        p_t = tl.exp(s_t - lse[None, :])
        p_t = tl.where(m_mask[None, :], p_t, 0.0)
        dv += tl.dot(p_t.to(tl.float16), do)
        dp_t = tl.dot(v, tl.trans(do))
        ds_t = p_t * (dp_t - delta[None, :])
        dk += tl.dot(ds_t.to(tl.float16), q)
    dk = dk * sm_scale
    out_off = base + offs_n[:, None] * stride_l + offs_d[None, :]
    tl.store(DK + out_off, dk.to(DK.dtype.element_ty), mask=n_mask[:, None])
    tl.store(DV + out_off, dv.to(DV.dtype.element_ty), mask=n_mask[:, None])


# --- 2. flash-attention backward: dQ -------------------------------------------------------------------------------
@triton.jit
def attn_bwd_dq_kernel(Q, K, V, DO, LSE, DELTA, DQ, sm_scale, L, stride_h, stride_l, HEAD_DIM: tl.constexpr,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # one program per (query block, head), looping over the key blocks: dQ = sum_j dS_j K_j * sm_scale
    start_m = tl.program_id(0) * BLOCK_M
    off_h = tl.program_id(1).to(tl.int64)
    base = off_h * stride_h
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    m_mask = offs_m < L
    q = tl.load(Q + base + offs_m[:, None] * stride_l + offs_d[None, :], mask=m_mask[:, None], other=0.0)
    do = tl.load(DO + base + offs_m[:, None] * stride_l + offs_d[None, :], mask=m_mask[:, None], other=0.0)
    lse = tl.load(LSE + off_h * L + offs_m, mask=m_mask, other=0.0)
    delta = tl.load(DELTA + off_h * L + offs_m, mask=m_mask, other=0.0)
    dq = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    for start_n in range(0, L, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        n_mask = offs_n < L
        k = tl.load(K + base + offs_n[:, None] * stride_l + offs_d[None, :], mask=n_mask[:, None], other=0.0)
        v = tl.load(V + base + offs_n[:, None] * stride_l + offs_d[None, :], mask=n_mask[:, None], other=0.0)
        s = tl.dot(q, tl.trans(k)) * sm_scale
        p = tl.exp(s - lse[:, None])
        p = tl.where(n_mask[None, :], p, 0.0)
        dp = tl.dot(do, tl.trans(v))
        ds = p * (dp - delta[:, None])
        dq = tl.dot(ds.to(tl.float16), k, dq)
    dq = dq * sm_scale
    tl.store(DQ + base + offs_m[:, None] * stride_l + offs_d[None, :], dq.to(DQ.dtype.element_ty),
             mask=m_mask[:, None])


# --- 3. RMSNorm backward with the weight gradient ------------------------------------------------------------------
@triton.jit
def rmsnorm_bwd_dw_kernel(DX, DY, X, W, RSTD, DW_PARTIAL, stride, N, n_rows, rows_per_program,
                          BLOCK: tl.constexpr):
    # a grid of about one program per SM: program p handles rows [p * rows_per_program, ...) one after the other,
    # writes dx for each and keeps sum(dy * x * rstd) over its rows in registers; the host adds the partial rows
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    w = tl.load(W + cols, mask=mask, other=0.0)
    dw_acc = tl.zeros([BLOCK], dtype=tl.float32)
    row_start = pid * rows_per_program
    row_end = min(row_start + rows_per_program, n_rows)
    for row in range(row_start, row_end):
        x = tl.load(X + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(DY + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
        rstd = tl.load(RSTD + row)
        x_hat = x * rstd
        wdy = w * dy
        # d/dx of x * rstd(x): the projection term uses mean(wdy * x_hat)
        proj = tl.sum(wdy * x_hat, axis=0) / N
        dx = (wdy - x_hat * proj) * rstd
        tl.store(DX + row * stride + cols, dx.to(DX.dtype.element_ty), mask=mask)
        dw_acc += dy * x_hat
    tl.store(DW_PARTIAL + pid * N + cols, dw_acc, mask=mask)


# --- 4. GEGLU backward (tanh GELU) ---------------------------------------------------------------------------------
@triton.jit
def geglu_tanh_bwd_kernel(DC, A, B, DA, DB, stride, N, BLOCK: tl.constexpr):
    # forward c = gelu_tanh(a) * b; one program per row, the whole row in one masked block
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    off = row * stride + cols
    dc = tl.load(DC + off, mask=mask, other=0.0).to(tl.float32)
    a = tl.load(A + off, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(B + off, mask=mask, other=0.0).to(tl.float32)
    SQRT_2_OVER_PI: tl.constexpr = 0.7978845608028654
    a2 = a * a
    t = libdevice.tanh(SQRT_2_OVER_PI * a * (1.0 + 0.044715 * a2))
    gelu = 0.5 * a * (1.0 + t)
    # d gelu / da = 0.5 (1 + t) + 0.5 a (1 - t^2) d(inner)/da
    dgelu = 0.5 * (1.0 + t) + 0.5 * a * (1.0 - t * t) * SQRT_2_OVER_PI * (1.0 + 3.0 * 0.044715 * a2)
    tl.store(DB + off, (dc * gelu).to(DB.dtype.element_ty), mask=mask)
    tl.store(DA + off, (dc * b * dgelu).to(DA.dtype.element_ty), mask=mask)


# --- 5. cross-entropy forward with label smoothing and ignore_index ------------------------------------------------
@triton.jit
def ce_smooth_ignore_fwd_kernel(LOGITS, TARGETS, LOSS, LSE, stride, V, ignore_index, label_smoothing,
                                BLOCK_V: tl.constexpr):
    # loss = lse - (1 - eps) * x[target] - eps / V * sum(x): the cross-entropy against the smoothed one-hot;
    # padding rows (target == ignore_index) get zeros and leave at once
    row = tl.program_id(0).to(tl.int64)
    target = tl.load(TARGETS + row)
    if target == ignore_index:
        tl.store(LOSS + row, 0.0)
        tl.store(LSE + row, 0.0)
        return
    row_ptr = LOGITS + row * stride
    m = float("-inf")
    d = 0.0
    x_sum = 0.0
    for v0 in range(0, V, BLOCK_V):
        cols = v0 + tl.arange(0, BLOCK_V)
        mask = cols < V
        x = tl.load(row_ptr + cols, mask=mask, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        d = d * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
        x_sum += tl.sum(tl.where(mask, x, 0.0), axis=0)
    lse = m + tl.log(d)
    x_target = tl.load(row_ptr + target).to(tl.float32)
    loss = lse - (1.0 - label_smoothing) * x_target - label_smoothing / V * x_sum
    tl.store(LOSS + row, loss)
    tl.store(LSE + row, lse)


# --- 6. fused residual add + RMSNorm -------------------------------------------------------------------------------
@triton.jit
def add_rmsnorm_kernel(X, RES, W, Y, RES_OUT, stride, N, eps, STORE_RESIDUAL: tl.constexpr, BLOCK: tl.constexpr):
    # h = x + residual (the next block's residual stream), y = h * rsqrt(mean(h^2) + eps) * w with fp32 weights;
    # inference (or a recomputing backward) skips the residual store and passes RES_OUT=None
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(X + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    r = tl.load(RES + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    h = x + r
    if STORE_RESIDUAL:
        tl.store(RES_OUT + row * stride + cols, h.to(RES_OUT.dtype.element_ty), mask=mask)
    rstd = 1.0 / tl.sqrt(tl.sum(h * h, axis=0) / N + eps)
    w = tl.load(W + cols, mask=mask, other=0.0)
    y = h * rstd * w
    tl.store(Y + row * stride + cols, y.to(Y.dtype.element_ty), mask=mask)


# --- host side -------------------------------------------------------------------------------------------------------
EPS = 1e-6
IGNORE_INDEX = -100


# 1-2. attention backward
def attn_bwd_inputs(p, rng):
    """q, k, v, dO in fp16; the forward's LSE (natural log) and Delta = rowsum(dO * O), O rounded to fp16 as the
    forward stored it, both float32 from float64."""
    BH, L, D = p["BH"], p["L"], p["D"]
    q, k, v, do = (randn(rng, (BH, L, D), "float16") for _ in range(4))
    scale = 1.0 / math.sqrt(D)

    def head(h):
        s = (f64(q[h]) @ f64(k[h]).T) * scale
        mx = s.max(axis=1, keepdims=True)
        e = np.exp(s - mx)
        tot = e.sum(axis=1, keepdims=True)
        o = ((e / tot) @ f64(v[h])).astype(np.float16)
        return (mx + np.log(tot))[:, 0], (f64(do[h]) * f64(o)).sum(axis=1)
    parts = pmap(head, BH)
    return {"q": q, "k": k, "v": v, "do": do, "lse": np.stack([a for a, _ in parts]).astype(np.float32),
            "delta": np.stack([b for _, b in parts]).astype(np.float32)}


def attn_bwd_head(p, x, h):
    """dq, dk, dv of head h from the saved LSE and Delta (the same quantities the kernels use)."""
    scale = 1.0 / math.sqrt(p["D"])
    q, k, v, do = x["q"][h], x["k"][h], x["v"][h], x["do"][h]
    pr = np.exp((q @ k.T) * scale - x["lse"][h][:, None])
    dp = do @ v.T
    ds = pr * (dp - x["delta"][h][:, None])
    return ds @ k * scale, ds.T @ q * scale, pr.T @ do


def attn_dkdv_ref(p, x):
    parts = pmap(lambda h: attn_bwd_head(p, x, h)[1:], p["BH"])
    return {"dk": np.stack([a for a, _ in parts]), "dv": np.stack([b for _, b in parts])}


def attn_dq_ref(p, x):
    return {"dq": np.stack(pmap(lambda h: attn_bwd_head(p, x, h)[0], p["BH"]))}


def attn_bwd_args(p, a):
    L, D = p["L"], p["D"]
    return [a["q"], a["k"], a["v"], a["do"], a["lse"], a["delta"]], [1.0 / math.sqrt(D), L, L * D, D]


def attn_dkdv_launch(p, a, m):
    assert m["HEAD_DIM"] == p["D"]
    ins, scalars = attn_bwd_args(p, a)
    return (cdiv(p["L"], m["BLOCK_N"]), p["BH"]), [*ins, a["dk"], a["dv"], *scalars]


def attn_dq_launch(p, a, m):
    assert m["HEAD_DIM"] == p["D"]
    ins, scalars = attn_bwd_args(p, a)
    return (cdiv(p["L"], m["BLOCK_M"]), p["BH"]), [*ins, a["dq"], *scalars]


def bhld(*names):
    return lambda p: {n: ((p["BH"], p["L"], p["D"]), "float16") for n in names}


def attn_bwd_bytes(n_out):
    return lambda p: 2.0 * (4 + n_out) * p["BH"] * p["L"] * p["D"] + 8.0 * p["BH"] * p["L"]


# 3. RMSNorm backward with dW
def rms_dw_inputs(p, rng):
    M, N = p["M"], p["N"]
    x = randn(rng, (M, N), "float16", 1.5)
    xf = f64(x)
    return {"x": x, "dy": randn(rng, (M, N), "float16"), "w": randn(rng, (N,), "float32", 0.3, 1.0),
            "rstd": (1.0 / np.sqrt((xf * xf).mean(axis=1) + EPS)).astype(np.float32)}


def rows_per_program(p):
    return cdiv(p["M"], p["programs"])


def rms_dw_ref(p, x):
    M, N, P = p["M"], p["N"], p["programs"]
    x_hat = x["x"] * x["rstd"][:, None]
    wdy = x["w"] * x["dy"]
    dx = (wdy - x_hat * (wdy * x_hat).mean(axis=1, keepdims=True)) * x["rstd"][:, None]
    rpp = rows_per_program(p)
    part = np.zeros((P, N))
    contrib = x["dy"] * x_hat
    for i in range(P):
        r0, r1 = min(i * rpp, M), min((i + 1) * rpp, M)
        part[i] = contrib[r0:r1].sum(axis=0)
    return {"dx": dx, "dw_partial": part}


def rms_dw_launch(p, a, m):
    M, N = p["M"], p["N"]
    return (p["programs"],), [a["dx"], a["dy"], a["x"], a["w"], a["rstd"], a["dw_partial"], N, N, M,
                              rows_per_program(p)]


# 4. GEGLU backward
def geglu_inputs(p, rng):
    M, N = p["M"], p["N"]
    return {"dc": randn(rng, (M, N), "bfloat16"), "a": randn(rng, (M, N), "bfloat16", 2.0),
            "b": randn(rng, (M, N), "bfloat16")}


def geglu_ref(p, x):
    a, b, dc = x["a"], x["b"], x["dc"]
    k = math.sqrt(2.0 / math.pi)
    t = np.tanh(k * (a + 0.044715 * a ** 3))
    gelu = 0.5 * a * (1.0 + t)
    dgelu = 0.5 * (1.0 + t) + 0.5 * a * (1.0 - t * t) * k * (1.0 + 3 * 0.044715 * a * a)
    return {"da": dc * b * dgelu, "db": dc * gelu}


# 5. cross-entropy with label smoothing and ignore_index
def ce_inputs(p, rng):
    M, V = p["M"], p["V"]
    targets = rng.integers(0, V, M).astype(np.int64)
    targets[rng.random(M) < 0.15] = IGNORE_INDEX  # padding tokens
    targets[1] = IGNORE_INDEX
    targets[0] = V - 1  # the last column of the last (partial) block
    return {"logits": randn(rng, (M, V), "bfloat16", 3.0), "targets": targets}


def ce_ref(p, x):
    M, V, eps = p["M"], p["V"], p["label_smoothing"]

    def rows(i):
        r0, r1 = i * 256, min((i + 1) * 256, M)
        z = x["logits"][r0:r1]
        mx = z.max(axis=1)
        lse = mx + np.log(np.exp(z - mx[:, None]).sum(axis=1))
        t = x["targets"][r0:r1].astype(np.int64)
        keep = t != IGNORE_INDEX
        zt = z[np.arange(r1 - r0), np.where(keep, t, 0)]
        loss = lse - (1.0 - eps) * zt - eps / V * z.sum(axis=1)
        return np.where(keep, loss, 0.0), np.where(keep, lse, 0.0)
    parts = pmap(rows, cdiv(M, 256))
    return {"loss": np.concatenate([a for a, _ in parts]), "lse": np.concatenate([b for _, b in parts])}


def ce_launch(p, a, m):
    return (p["M"],), [a["logits"], a["targets"], a["loss"], a["lse"], p["V"], p["V"], IGNORE_INDEX,
                       p["label_smoothing"]]


# 6. residual add + RMSNorm
def add_rms_inputs(p, rng):
    M, N = p["M"], p["N"]
    return {"x": randn(rng, (M, N), "bfloat16"), "res": randn(rng, (M, N), "bfloat16", 2.0),
            "w": randn(rng, (N,), "float32", 0.3, 1.0)}


def add_rms_ref(store):
    def ref(p, x):
        h = x["x"] + x["res"]
        y = h / np.sqrt((h * h).mean(axis=1, keepdims=True) + EPS) * x["w"]
        return {"y": y, "res_out": h} if store else {"y": y}
    return ref


def add_rms_out(store):
    def out(p):
        o = {"y": ((p["M"], p["N"]), "bfloat16")}
        if store:
            o["res_out"] = ((p["M"], p["N"]), "bfloat16")
        return o
    return out


def add_rms_launch(p, a, m):
    assert m["STORE_RESIDUAL"] == ("res_out" in a)
    return (p["M"],), [a["x"], a["res"], a["w"], a["y"], a.get("res_out"), p["N"], p["N"], EPS]


ATTN_BWD_CI = {"HEAD_DIM": 16, "BLOCK_M": 16, "BLOCK_N": 16, "num_warps": 1, "num_stages": 2}

CASES = [
    Case("attn_bwd_dkdv_d64", attn_bwd_dkdv_kernel, attn_bwd_inputs, bhld("dk", "dv"), attn_dkdv_ref,
         attn_dkdv_launch,
         gpu={"BH": 16, "L": 2048, "D": 64}, ci={"BH": 2, "L": 37, "D": 16},
         meta={"HEAD_DIM": 64, "BLOCK_M": 64, "BLOCK_N": 128, "num_warps": 8, "num_stages": 2},
         ci_meta=ATTN_BWD_CI, flops=lambda p: 8.0 * p["BH"] * p["L"] * p["L"] * p["D"],
         bytes=attn_bwd_bytes(2),
         idiom="flash-attention backward dK/dV: a program per key block loops over query blocks, P^T recomputed "
               "as exp(K Q^T * scale - LSE[None, :]) from the saved log-sum-exp, dV += P^T dO, dS^T = P^T * "
               "(V dO^T - Delta[None, :]), dK += dS^T Q, fp16 casts before the dots, masked ragged query block"),
    Case("attn_bwd_dq_d64", attn_bwd_dq_kernel, attn_bwd_inputs, bhld("dq"), attn_dq_ref, attn_dq_launch,
         gpu={"BH": 16, "L": 2048, "D": 64}, ci={"BH": 2, "L": 37, "D": 16},
         meta={"HEAD_DIM": 64, "BLOCK_M": 128, "BLOCK_N": 64, "num_warps": 8, "num_stages": 2},
         ci_meta=ATTN_BWD_CI, flops=lambda p: 6.0 * p["BH"] * p["L"] * p["L"] * p["D"],
         bytes=attn_bwd_bytes(1),
         idiom="flash-attention backward dQ: a program per query block loops over key blocks, P from the saved "
               "LSE, dP = dO V^T (tl.trans of a row-major V tile), dS = P * (dP - Delta), dQ += dS K"),
    Case("rmsnorm_bwd_dw_f16", rmsnorm_bwd_dw_kernel, rms_dw_inputs,
         lambda p: {"dx": ((p["M"], p["N"]), "float16"), "dw_partial": ((p["programs"], p["N"]), "float32")},
         rms_dw_ref, rms_dw_launch,
         gpu={"M": 16384, "N": 4096, "programs": 132}, ci={"M": 13, "N": 200, "programs": 4},
         meta={"BLOCK": 4096, "num_warps": 8}, ci_meta={"BLOCK": 256, "num_warps": 4},
         flops=lambda p: 9.0 * p["M"] * p["N"], bytes=lambda p: 6.0 * p["M"] * p["N"] + 4.0 * p["programs"] * p["N"],
         idiom="RMSNorm backward with dW: one program per SM, for row in range(start, min(start + rows_per_prog, "
               "n_rows)), dx per row and a [BLOCK] fp32 dW accumulator carried by the loop, partial dW rows "
               "[programs, N] summed by the host, fp32 weights with fp16 activations"),
    Case("geglu_tanh_bwd_bf16", geglu_tanh_bwd_kernel, geglu_inputs,
         lambda p: {"da": ((p["M"], p["N"]), "bfloat16"), "db": ((p["M"], p["N"]), "bfloat16")}, geglu_ref,
         lambda p, a, m: ((p["M"],), [a["dc"], a["a"], a["b"], a["da"], a["db"], p["N"], p["N"]]),
         gpu={"M": 8192, "N": 14336}, ci={"M": 5, "N": 300}, meta={"BLOCK": 16384, "num_warps": 16},
         ci_meta={"BLOCK": 512, "num_warps": 4}, flops=lambda p: 25.0 * p["M"] * p["N"],
         bytes=lambda p: 10.0 * p["M"] * p["N"],
         idiom="GEGLU backward with the tanh GELU: libdevice.tanh, its derivative through 1 - t^2, gate and up "
               "gradients from bf16 in fp32 math, one masked row of 14336 per program, int64 row offset"),
    Case("ce_fwd_smooth_ignore_bf16", ce_smooth_ignore_fwd_kernel, ce_inputs,
         lambda p: {"loss": ((p["M"],), "float32"), "lse": ((p["M"],), "float32")}, ce_ref, ce_launch,
         gpu={"M": 2048, "V": 128256, "label_smoothing": 0.1}, ci={"M": 9, "V": 1000, "label_smoothing": 0.1},
         meta={"BLOCK_V": 8192, "num_warps": 16}, ci_meta={"BLOCK_V": 256, "num_warps": 2},
         flops=lambda p: 5.0 * p["M"] * p["V"], bytes=lambda p: 2.0 * p["M"] * p["V"] + 16.0 * p["M"],
         idiom="cross-entropy forward with label smoothing and ignore_index: int64 targets, `if target == "
               "ignore_index: store zeros; return`, online max / sum-exp over a 128256-word vocabulary in blocks "
               "plus the row sum of the logits, smoothed loss with runtime float eps"),
    Case("add_rmsnorm_resid_bf16", add_rmsnorm_kernel, add_rms_inputs, add_rms_out(True), add_rms_ref(True),
         add_rms_launch,
         gpu={"M": 16384, "N": 4096}, ci={"M": 5, "N": 300},
         meta={"STORE_RESIDUAL": True, "BLOCK": 4096, "num_warps": 8},
         ci_meta={"STORE_RESIDUAL": True, "BLOCK": 512, "num_warps": 4},
         flops=lambda p: 5.0 * p["M"] * p["N"], bytes=lambda p: 8.0 * p["M"] * p["N"],
         idiom="fused residual add + RMSNorm: h = x + residual stored as the new residual under a constexpr flag, "
               "1 / tl.sqrt(mean(h^2) + eps), fp32 weights, bf16 outputs"),
    Case("add_rmsnorm_noresid_bf16", add_rmsnorm_kernel, add_rms_inputs, add_rms_out(False), add_rms_ref(False),
         add_rms_launch,
         gpu={"M": 16384, "N": 8192}, ci={"M": 5, "N": 300},
         meta={"STORE_RESIDUAL": False, "BLOCK": 8192, "num_warps": 16},
         ci_meta={"STORE_RESIDUAL": False, "BLOCK": 512, "num_warps": 4},
         flops=lambda p: 5.0 * p["M"] * p["N"], bytes=lambda p: 6.0 * p["M"] * p["N"],
         idiom="fused residual add + RMSNorm with the constexpr flag off: the residual pointer passed as None, "
               "its store compiled out, rows of 8192 in one block"),
]
