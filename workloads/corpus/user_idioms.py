"""Idioms from open-source kernel libraries: fused residual add + LayerNorm with two outputs, GroupNorm with a
per-lane Welford reduced by tl.reduce, per-row absmax int8 quantization, vLLM-style paged decode attention through
a block table, varlen (cu_seqlens) segment sums, a linear recurrence through tl.associative_scan on a pair, an
activation picked by a constexpr string, and a row-block KL divergence looped over the columns."""
import math

import numpy as np
import triton
import triton.language as tl
from triton.language.extra import libdevice

from workloads.corpus._case import Case, cdiv, pmap, randn, uniform


# --- 1. residual add + LayerNorm --------------------------------------------------------------------------------
@triton.jit
def add_layernorm_kernel(X, R, Y, RES_OUT, W, B, stride, N, eps, BLOCK_N: tl.constexpr):
    # h = x + residual is written back (the next layer's residual) and normalized in the same pass
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(X + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    r = tl.load(R + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    h = x + r
    tl.store(RES_OUT + row * stride + cols, h.to(RES_OUT.dtype.element_ty), mask=mask)
    mean = tl.sum(h, axis=0) / N
    hc = tl.where(mask, h - mean, 0.0)
    var = tl.sum(hc * hc, axis=0) / N
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(B + cols, mask=mask, other=0.0).to(tl.float32)
    y = hc * rstd * w + b
    tl.store(Y + row * stride + cols, y.to(Y.dtype.element_ty), mask=mask)


# --- 2. GroupNorm ---------------------------------------------------------------------------------------------------
@triton.jit
def welford_combine(mean_1, m2_1, weight_1, mean_2, m2_2, weight_2):
    weight = weight_1 + weight_2
    delta = mean_2 - mean_1
    w2 = tl.where(weight == 0.0, 0.0, weight_2 / weight)
    return mean_1 + delta * w2, m2_1 + m2_2 + delta * delta * weight_1 * w2, weight


@triton.jit
def groupnorm_fwd_kernel(X, Y, W, B, C, HW, G, eps, BLOCK: tl.constexpr):
    # one program per (n, g): the group's C // G channels x HW are contiguous; Welford per lane, then tl.reduce
    pid = tl.program_id(0)
    n = pid // G
    g = pid % G
    cpg = C // G
    group_size = cpg * HW
    base = n * C * HW + g * group_size
    mean = tl.zeros([BLOCK], dtype=tl.float32)
    m2 = tl.zeros([BLOCK], dtype=tl.float32)
    cnt = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, group_size, BLOCK):
        idx = off + tl.arange(0, BLOCK)
        mask = idx < group_size
        x = tl.load(X + base + idx, mask=mask, other=0.0).to(tl.float32)
        cnt_new = tl.where(mask, cnt + 1.0, cnt)
        delta = x - mean
        mean_new = tl.where(mask, mean + delta / tl.maximum(cnt_new, 1.0), mean)
        m2 = tl.where(mask, m2 + delta * (x - mean_new), m2)
        mean = mean_new
        cnt = cnt_new
    g_mean, g_m2, g_cnt = tl.reduce((mean, m2, cnt), 0, welford_combine)
    rstd = tl.rsqrt(g_m2 / g_cnt + eps)
    for off in range(0, group_size, BLOCK):
        idx = off + tl.arange(0, BLOCK)
        mask = idx < group_size
        ch = g * cpg + idx // HW
        x = tl.load(X + base + idx, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(W + ch, mask=mask, other=0.0)
        b = tl.load(B + ch, mask=mask, other=0.0)
        tl.store(Y + base + idx, (x - g_mean) * rstd * w + b, mask=mask)


# --- 3. per-row absmax int8 quantization ----------------------------------------------------------------------------
@triton.jit
def quant_rowwise_kernel(X, Q, S, stride_x, stride_q, N, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(X + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    absmax = tl.maximum(tl.max(tl.abs(x), axis=0), 1e-5)
    # div_rn (IEEE) rather than `/` (approximate to 2 ulp on the GPU): the int8 values must match exactly
    scale = tl.math.div_rn(absmax, 127.0)
    q = libdevice.rint(tl.math.div_rn(x, scale))  # round half to even
    q = tl.clamp(q, -127.0, 127.0)
    tl.store(Q + row * stride_q + cols, q.to(tl.int8), mask=mask)
    tl.store(S + row, scale)


# --- 4. paged decode attention ---------------------------------------------------------------------------------------
@triton.jit
def paged_decode_attn_kernel(Q, K_cache, V_cache, block_tables, context_lens, Out, sm_scale,
                             stride_qb, stride_qh, stride_kb, stride_kt, stride_kh, stride_bt, stride_ob, stride_oh,
                             HEAD_DIM: tl.constexpr, PAGE_SIZE: tl.constexpr):
    # one query token per (sequence, head); the sequence's keys live in pages found through its block table
    b = tl.program_id(0)
    h = tl.program_id(1)
    ctx_len = tl.load(context_lens + b)
    offs_d = tl.arange(0, HEAD_DIM)
    offs_t = tl.arange(0, PAGE_SIZE)
    q = tl.load(Q + b * stride_qb + h * stride_qh + offs_d).to(tl.float32)
    m_i = -float("inf")
    l_i = 0.0
    acc = tl.zeros([HEAD_DIM], dtype=tl.float32)
    num_pages = tl.cdiv(ctx_len, PAGE_SIZE)
    for page in range(0, num_pages):
        block = tl.load(block_tables + b * stride_bt + page).to(tl.int64)
        tok = page * PAGE_SIZE + offs_t
        valid = tok < ctx_len
        kv_off = block * stride_kb + offs_t[:, None] * stride_kt + h * stride_kh + offs_d[None, :]
        k = tl.load(K_cache + kv_off, mask=valid[:, None], other=0.0).to(tl.float32)
        qk = tl.sum(q[None, :] * k, axis=1) * sm_scale
        qk = tl.where(valid, qk, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(qk, axis=0))
        p = tl.exp(qk - m_new)
        alpha = tl.exp(m_i - m_new)
        v = tl.load(V_cache + kv_off, mask=valid[:, None], other=0.0).to(tl.float32)
        acc = acc * alpha + tl.sum(p[:, None] * v, axis=0)
        l_i = l_i * alpha + tl.sum(p, axis=0)
        m_i = m_new
    tl.store(Out + b * stride_ob + h * stride_oh + offs_d, (acc / l_i).to(Out.dtype.element_ty))


# --- 5. varlen segment sums ------------------------------------------------------------------------------------------
@triton.jit
def varlen_rowsum_kernel(X, cu_seqlens, Y, D, stride_x, stride_y, BLOCK_T: tl.constexpr, BLOCK_D: tl.constexpr):
    b = tl.program_id(0)
    pid_d = tl.program_id(1)
    start = tl.load(cu_seqlens + b)
    end = tl.load(cu_seqlens + b + 1)
    rd = pid_d * BLOCK_D + tl.arange(0, BLOCK_D)
    acc = tl.zeros([BLOCK_T, BLOCK_D], dtype=tl.float32)
    for t0 in range(start, end, BLOCK_T):
        rt = t0 + tl.arange(0, BLOCK_T)
        mask = (rt[:, None] < end) & (rd[None, :] < D)
        acc += tl.load(X + rt[:, None] * stride_x + rd[None, :], mask=mask, other=0.0)
    tl.store(Y + b * stride_y + rd, tl.sum(acc, axis=0), mask=rd < D)


# --- 6. linear recurrence h_t = a_t * h_{t-1} + x_t -----------------------------------------------------------------
@triton.jit
def linrec_combine(a1, x1, a2, x2):
    return a1 * a2, x1 * a2 + x2


@triton.jit
def linear_recurrence_kernel(A, X, H, L, BLOCK_L: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK_L)
    mask = offs < L
    a = tl.load(A + row * L + offs, mask=mask, other=1.0)
    x = tl.load(X + row * L + offs, mask=mask, other=0.0)
    _, h = tl.associative_scan((a, x), axis=0, combine_fn=linrec_combine)
    tl.store(H + row * L + offs, h, mask=mask)


# --- 7. bias + activation chosen by a constexpr string ---------------------------------------------------------------
@triton.jit
def gelu(x):
    return 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476))


@triton.jit
def silu(x):
    return x * tl.sigmoid(x)


@triton.jit
def bias_act_kernel(X, BIAS, Y, M, N, stride_xm, stride_ym, ACTIVATION: tl.constexpr, BLOCK_M: tl.constexpr,
                    BLOCK_N: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(X + rm[:, None] * stride_xm + rn[None, :], mask=mask, other=0.0).to(tl.float32)
    bias = tl.load(BIAS + rn, mask=rn < N, other=0.0).to(tl.float32)
    x = x + bias[None, :]
    if ACTIVATION == "gelu":
        x = gelu(x)
    elif ACTIVATION == "silu":
        x = silu(x)
    elif ACTIVATION == "relu":
        x = tl.maximum(x, 0.0)
    tl.store(Y + rm[:, None] * stride_ym + rn[None, :], x.to(Y.dtype.element_ty), mask=mask)


# --- 8. KL divergence of log-probabilities, several rows per program -------------------------------------------------
@triton.jit
def kl_div_rows_kernel(X, T, OUT, M, N, stride, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # out[m] = sum_n exp(t) * (t - x): x the input log-probs, t the target log-probs
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    acc = tl.zeros([BLOCK_M], dtype=tl.float32)
    for n0 in range(0, N, BLOCK_N):
        rn = n0 + tl.arange(0, BLOCK_N)
        mask = (rm[:, None] < M) & (rn[None, :] < N)
        offs = rm[:, None] * stride + rn[None, :]
        x = tl.load(X + offs, mask=mask, other=0.0)
        t = tl.load(T + offs, mask=mask, other=0.0)
        kl = tl.where(mask, tl.exp(t) * (t - x), 0.0)
        acc += tl.sum(kl, axis=1)
    tl.store(OUT + rm, acc, mask=rm < M)


# --- host side -------------------------------------------------------------------------------------------------------
EPS = 1e-5


def add_ln_inputs(p, rng):
    M, N = p["M"], p["N"]
    return {"x": randn(rng, (M, N), "float16", 1.5, 0.3), "r": randn(rng, (M, N), "float16", 1.0, 0.2),
            "w": randn(rng, (N,), "float16", 0.5, 1.0), "b": randn(rng, (N,), "float16", 0.5)}


def add_ln_ref(p, x):
    h = x["x"] + x["r"]
    mean = h.mean(axis=1, keepdims=True)
    rstd = 1.0 / np.sqrt(((h - mean) ** 2).mean(axis=1, keepdims=True) + EPS)
    return {"y": (h - mean) * rstd * x["w"] + x["b"], "res": h}


def gn_inputs(p, rng):
    N, C, HW = p["N"], p["C"], p["HW"]
    return {"x": randn(rng, (N, C, HW), "float32", 2.0, 0.5), "w": randn(rng, (C,), "float32", 0.5, 1.0),
            "b": randn(rng, (C,), "float32", 0.5)}


def gn_ref(p, x):
    N, C, HW, G = p["N"], p["C"], p["HW"], p["G"]
    xg = x["x"].reshape(N, G, -1)
    mean = xg.mean(axis=2, keepdims=True)
    var = ((xg - mean) ** 2).mean(axis=2, keepdims=True)
    y = ((xg - mean) / np.sqrt(var + EPS)).reshape(N, C, HW)
    return {"y": y * x["w"][None, :, None] + x["b"][None, :, None]}


def quant_ref(p, x):
    # the kernel's float32 arithmetic, emulated: every step is IEEE rounded (div_rn), so q matches bit for bit
    x32 = x["x"].astype(np.float32)
    absmax = np.maximum(np.abs(x32).max(axis=1), np.float32(1e-5))
    scale = absmax / np.float32(127.0)
    q = np.clip(np.rint(x32 / scale[:, None]), -127, 127)
    return {"q": q.astype(np.float64), "scale": scale.astype(np.float64)}


def paged_inputs(p, rng):
    B, H, D, BS, max_ctx = p["B"], p["H"], p["D"], p["BS"], p["max_ctx"]
    ctx = rng.integers(max_ctx // 3, max_ctx + 1, B).astype(np.int32)
    pages = [cdiv(int(c), BS) for c in ctx]
    num_blocks = sum(pages) + 3  # a shuffled pool with a few blocks no sequence uses
    perm = rng.permutation(num_blocks).astype(np.int32)
    tables = np.zeros((B, cdiv(max_ctx, BS)), np.int32)
    at = 0
    for b, n in enumerate(pages):
        tables[b, :n] = perm[at:at + n]
        at += n
    return {"q": randn(rng, (B, H, D), "float16"), "k_cache": randn(rng, (num_blocks, BS, H, D), "float16"),
            "v_cache": randn(rng, (num_blocks, BS, H, D), "float16"), "block_tables": tables, "context_lens": ctx}


def paged_ref(p, x):
    B, H, D, BS = p["B"], p["H"], p["D"], p["BS"]
    scale = 1.0 / math.sqrt(D)
    ctx = x["context_lens"].astype(np.int64)
    tables = x["block_tables"].astype(np.int64)

    def seq(b):
        n = int(ctx[b])
        blocks = tables[b, :cdiv(n, BS)]
        k = x["k_cache"][blocks].reshape(-1, H, D)[:n]
        v = x["v_cache"][blocks].reshape(-1, H, D)[:n]
        s = np.einsum("hd,thd->ht", x["q"][b], k) * scale
        s = np.exp(s - s.max(axis=1, keepdims=True))
        s /= s.sum(axis=1, keepdims=True)
        return np.einsum("ht,thd->hd", s, v)
    return {"o": np.stack(pmap(seq, B))}


def paged_launch(p, a, m):
    B, H, D, BS = p["B"], p["H"], p["D"], p["BS"]
    return (B, H), [a["q"], a["k_cache"], a["v_cache"], a["block_tables"], a["context_lens"], a["o"],
                    1.0 / math.sqrt(D), H * D, D, BS * H * D, H * D, D, cdiv(p["max_ctx"], BS), H * D, D]


def paged_bytes(p):
    # about 2/3 of max_ctx per sequence on average; K and V, fp16
    return 2.0 * 2 * p["B"] * p["H"] * p["D"] * (2 * p["max_ctx"] / 3)


def varlen_inputs(p, rng):
    B, D = p["B"], p["D"]
    lens = rng.integers(1, p["max_len"] + 1, B)
    cu = np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)
    return {"x": randn(rng, (int(cu[-1]), D), "float32", 1.0, 0.25), "cu_seqlens": cu}


def varlen_ref(p, x):
    cu = x["cu_seqlens"].astype(np.int64)
    return {"y": np.add.reduceat(x["x"], cu[:-1], axis=0)}


def linrec_inputs(p, rng):
    R, L = p["R"], p["L"]
    return {"a": uniform(rng, (R, L), 0.5, 1.0), "x": randn(rng, (R, L), "float32")}


def linrec_ref(p, x):
    a, xs = x["a"], x["x"]
    h = np.empty_like(xs)
    prev = np.zeros(xs.shape[0])
    for t in range(xs.shape[1]):
        prev = a[:, t] * prev + xs[:, t]
        h[:, t] = prev
    return {"h": h}


def silu_ref(p, x):
    z = x["x"] + x["bias"][None, :]
    return {"y": z / (1.0 + np.exp(-z))}


def log_softmax_rows(rng, shape, scale):
    z = randn(rng, shape, "float32", scale)
    z -= z.max(axis=1, keepdims=True)
    z -= np.log(np.exp(z).sum(axis=1, keepdims=True))
    return z


def kl_inputs(p, rng):
    shape = (p["M"], p["N"])
    return {"x": log_softmax_rows(rng, shape, 1.0), "t": log_softmax_rows(rng, shape, 1.5)}


def kl_ref(p, x):
    return {"out": (np.exp(x["t"]) * (x["t"] - x["x"])).sum(axis=1)}


CASES = [
    Case("add_layernorm_f16", add_layernorm_kernel, add_ln_inputs,
         lambda p: {"y": ((p["M"], p["N"]), "float16"), "res": ((p["M"], p["N"]), "float16")}, add_ln_ref,
         lambda p, a, m: ((p["M"],), [a["x"], a["r"], a["y"], a["res"], a["w"], a["b"], p["N"], p["N"], EPS]),
         gpu={"M": 8192, "N": 4096}, ci={"M": 5, "N": 300}, meta={"BLOCK_N": 4096, "num_warps": 8},
         ci_meta={"BLOCK_N": 512, "num_warps": 4},
         flops=lambda p: 9.0 * p["M"] * p["N"], bytes=lambda p: 8.0 * p["M"] * p["N"],
         idiom="fused residual add + LayerNorm: the sum stored as a second output, one row per program"),
    Case("groupnorm_fwd_f32", groupnorm_fwd_kernel, gn_inputs,
         lambda p: {"y": ((p["N"], p["C"], p["HW"]), "float32")}, gn_ref,
         lambda p, a, m: ((p["N"] * p["G"],), [a["x"], a["y"], a["w"], a["b"], p["C"], p["HW"], p["G"], EPS]),
         gpu={"N": 16, "C": 256, "HW": 4096, "G": 32}, ci={"N": 2, "C": 6, "HW": 37, "G": 3},
         meta={"BLOCK": 4096, "num_warps": 8}, ci_meta={"BLOCK": 32, "num_warps": 2},
         flops=lambda p: 10.0 * p["N"] * p["C"] * p["HW"], bytes=lambda p: 12.0 * p["N"] * p["C"] * p["HW"],
         idiom="GroupNorm: per-lane Welford over the group in chunks, tl.reduce of (mean, m2, count) with a jit "
               "combine, a second loop gathering per-channel weight/bias"),
    Case("quant_rowwise_i8", quant_rowwise_kernel, lambda p, rng: {"x": randn(rng, (p["M"], p["N"]), "float16", 2.0)},
         lambda p: {"q": ((p["M"], p["N"]), "int8"), "scale": ((p["M"],), "float32")}, quant_ref,
         lambda p, a, m: ((p["M"],), [a["x"], a["q"], a["scale"], p["N"], p["N"], p["N"]]),
         gpu={"M": 8192, "N": 4096}, ci={"M": 6, "N": 300}, meta={"BLOCK_N": 4096, "num_warps": 8},
         ci_meta={"BLOCK_N": 512, "num_warps": 4}, flops=lambda p: 3.0 * p["M"] * p["N"],
         bytes=lambda p: 3.0 * p["M"] * p["N"],
         idiom="per-row absmax int8 quantization: tl.max(tl.abs), tl.math.div_rn, libdevice.rint, tl.clamp, "
               "int8 and scale outputs"),
    Case("decode_attn_paged_f16", paged_decode_attn_kernel, paged_inputs,
         lambda p: {"o": ((p["B"], p["H"], p["D"]), "float16")}, paged_ref, paged_launch,
         gpu={"B": 32, "H": 32, "D": 128, "BS": 16, "max_ctx": 3072},
         ci={"B": 3, "H": 2, "D": 32, "BS": 16, "max_ctx": 45},
         meta={"HEAD_DIM": 128, "PAGE_SIZE": 16, "num_warps": 4}, ci_meta={"HEAD_DIM": 32, "PAGE_SIZE": 16,
                                                                           "num_warps": 2},
         flops=lambda p: 4.0 * p["B"] * p["H"] * p["D"] * (2 * p["max_ctx"] / 3), bytes=paged_bytes,
         idiom="vLLM-style paged decode attention: block_tables / context_lens, a runtime page loop, keys "
               "gathered through the table, scalar online softmax"),
    Case("varlen_rowsum_f32", varlen_rowsum_kernel, varlen_inputs, lambda p: {"y": ((p["B"], p["D"]), "float32")},
         varlen_ref,
         lambda p, a, m: ((p["B"], cdiv(p["D"], m["BLOCK_D"])), [a["x"], a["cu_seqlens"], a["y"], p["D"], p["D"],
                                                                 p["D"]]),
         gpu={"B": 512, "D": 256, "max_len": 1024}, ci={"B": 5, "D": 40, "max_len": 20},
         meta={"BLOCK_T": 32, "BLOCK_D": 256, "num_warps": 4}, ci_meta={"BLOCK_T": 8, "BLOCK_D": 16, "num_warps": 2},
         flops=lambda p: p["B"] * p["D"] * (p["max_len"] + 1) / 2.0,
         bytes=lambda p: 4.0 * p["B"] * p["D"] * (p["max_len"] + 1) / 2.0,
         idiom="jagged rows: cu_seqlens offsets, range(start, end, BLOCK_T) with runtime bounds, masked tiles"),
    Case("linear_recurrence_scan_f32", linear_recurrence_kernel, linrec_inputs,
         lambda p: {"h": ((p["R"], p["L"]), "float32")}, linrec_ref,
         lambda p, a, m: ((p["R"],), [a["a"], a["x"], a["h"], p["L"]]),
         gpu={"R": 4096, "L": 1024}, ci={"R": 4, "L": 100}, meta={"BLOCK_L": 1024, "num_warps": 4},
         ci_meta={"BLOCK_L": 128, "num_warps": 2}, flops=lambda p: 3.0 * p["R"] * p["L"],
         bytes=lambda p: 12.0 * p["R"] * p["L"],
         idiom="h_t = a_t * h_(t-1) + x_t: tl.associative_scan on a tuple (a, x) with a two-output jit combine"),
    Case("act_constexpr_str_f16", bias_act_kernel,
         lambda p, rng: {"x": randn(rng, (p["M"], p["N"]), "float16", 2.0), "bias": randn(rng, (p["N"],), "float16")},
         lambda p: {"y": ((p["M"], p["N"]), "float16")}, silu_ref,
         lambda p, a, m: ((cdiv(p["M"], m["BLOCK_M"]), cdiv(p["N"], m["BLOCK_N"])),
                          [a["x"], a["bias"], a["y"], p["M"], p["N"], p["N"], p["N"]]),
         gpu={"M": 8192, "N": 8192}, ci={"M": 37, "N": 50},
         meta={"ACTIVATION": "silu", "BLOCK_M": 32, "BLOCK_N": 128, "num_warps": 4},
         ci_meta={"ACTIVATION": "silu", "BLOCK_M": 16, "BLOCK_N": 32, "num_warps": 2},
         flops=lambda p: 6.0 * p["M"] * p["N"], bytes=lambda p: 4.0 * p["M"] * p["N"],
         idiom="ACTIVATION: tl.constexpr string, if/elif on it calling jit helpers; column bias on a 2-D tile"),
    Case("kl_div_rows_f32", kl_div_rows_kernel, kl_inputs, lambda p: {"out": ((p["M"],), "float32")}, kl_ref,
         lambda p, a, m: ((cdiv(p["M"], m["BLOCK_M"]),), [a["x"], a["t"], a["out"], p["M"], p["N"], p["N"]]),
         gpu={"M": 16384, "N": 8192}, ci={"M": 10, "N": 100}, meta={"BLOCK_M": 8, "BLOCK_N": 512, "num_warps": 4},
         ci_meta={"BLOCK_M": 4, "BLOCK_N": 32, "num_warps": 2}, flops=lambda p: 4.0 * p["M"] * p["N"],
         bytes=lambda p: 8.0 * p["M"] * p["N"],
         idiom="KL divergence of log-probs: BLOCK_M rows x BLOCK_N cols, tl.sum(axis=1) into a per-row "
               "accumulator over a loop on N"),
]
