"""Block-scaled fp8 GEMM as inference engines write it for DeepSeek-style checkpoints: e4m3 activations quantized per
(token, 128-wide K group) and e4m3 weights per (128 x 128) block, both passed as float8_e4m3fn tensors; the tile
offsets wrapped by `% M` / `% N` (loads unmasked on M and N, masked on K), the two scale vectors of each K tile
loaded inside the loop and applied to that tile's product before it joins the float32 accumulator
(`acc += tl.dot(a, b) * a_s[:, None] * b_s[None, :]`), the weight [N, K] read transposed through its strides, the
output dtype taken from the pointer (C.dtype.element_ty). A weight-only fp8 GEMM: bfloat16 activations times
e4m3 weights dequantized in the K loop (`b.to(tl.bfloat16) * scale` per 128 x 128 block) before a bf16 tl.dot, the
program order grouped along M. A per-token-group fp8 quantizer: each row cut into groups of 128 values, a scale per
group (max(|x|) / 448, floored at eps) written column-major (the layout block-scaled GEMMs read), the quantized values
clamped and cast to float8_e4m3fn. A grouped-query decode attention step (flash-decoding with the query heads of
one KV head packed into the rows of a tl.dot, padded to 16 rows): per (sequence, KV head, split) a runtime range of
the sequence's cached keys, online softmax, partial outputs and their log-sum-exp for a later combine; empty splits
of short sequences write a zero output and an -inf log-sum-exp. A prefix-prefill attention over a paged KV cache:
a block of a sequence's new queries attends to its cached context, whose keys and values sit in fixed-size pages
named by a block table (the page of each key loaded in the loop, `page * PAGE + t % PAGE` its cache row), no causal
mask. A fused gate/up projection whose weight interleaves the gate and up columns: one GEMM, its accumulator split
into the pairs by tl.reshape + tl.split in the epilogue, SiLU(gate) * up stored at half the width. An fp32 GEMM in "tf32x3" precision (each operand split into a tf32 part
and its remainder, three tensor-core products), the accuracy fp32 users ask for at tensor-core speed, K masked. Causal attention with
the rotary embedding fused in: query and key halves rotated in registers by cos / sin tables (rotate-half form),
the scores as the sum of two dots over the halves. A linear layer with its bias, a residual and a LayerNorm over
the whole output row fused into the epilogue (the row fits one block, N = 256): mean and variance reduced across the
accumulator's columns, normalized, scaled and shifted, bf16 out.
"""
import numpy as np
import triton
import triton.language as tl

from workloads.corpus._case import Case, cast, cdiv, pmap, randn, uniform
from workloads.corpus.idioms_infer import E4M3, e4m3_bytes
from workloads.corpus.idioms_quant import as_e4m3


# --- 1. block-scaled fp8 GEMM ------------------------------------------------------------------------------------------
@triton.jit
def fp8_block_scaled_gemm_kernel(A, B, C, A_S, B_S, M, N, K, stride_am, stride_ak, stride_bn, stride_bk, stride_cm,
                                 stride_cn, stride_asm, stride_ask, stride_bsn, stride_bsk,
                                 GROUP_N: tl.constexpr, GROUP_K: tl.constexpr, BLOCK_M: tl.constexpr,
                                 BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # C[m, n] = sum_k (A[m, k] * a_s[m, k // GROUP_K]) * (B[n, k] * b_s[n // GROUP_N, k // GROUP_K])
    pid_m = tl.program_id(axis=0)
    pid_n = tl.program_id(axis=1)
    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = A + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = B + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    as_ptrs = A_S + offs_am * stride_asm
    bs_ptrs = B_S + (offs_bn // GROUP_N) * stride_bsn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        k_group = (k * BLOCK_K) // GROUP_K
        a_s = tl.load(as_ptrs + k_group * stride_ask)
        b_s = tl.load(bs_ptrs + k_group * stride_bsk)
        acc += tl.dot(a, b) * a_s[:, None] * b_s[None, :]
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c = acc.to(C.dtype.element_ty)
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(C + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :], c, mask=c_mask)


def fp8_block_inputs(p, rng):
    M, N, K, gn, gk = p["M"], p["N"], p["K"], p["group_n"], p["group_k"]
    return {"a": e4m3_bytes(randn(rng, (M, K), "float32", 64.0)), "b": e4m3_bytes(randn(rng, (N, K), "float32", 64.0)),
            "a_s": uniform(rng, (M, cdiv(K, gk)), 0.5e-2, 1.5e-2),
            "b_s": uniform(rng, (cdiv(N, gn), cdiv(K, gk)), 0.5e-3, 1.5e-3)}


def fp8_block_ref(p, x):
    M, K, gn, gk = p["M"], p["K"], p["group_n"], p["group_k"]
    a = E4M3[x["a"].astype(np.int64)] * np.repeat(x["a_s"].astype(np.float64), gk, axis=1)[:, :K]
    b_s = np.repeat(np.repeat(x["b_s"].astype(np.float64), gn, axis=0), gk, axis=1)
    b = E4M3[x["b"].astype(np.int64)] * b_s[:p["N"], :K]
    step = max(1, cdiv(M, 16))
    return {"c": np.concatenate(pmap(lambda i: a[i * step:(i + 1) * step] @ b.T, cdiv(M, step)))}


def fp8_block_launch(p, a, m):
    M, N, K = p["M"], p["N"], p["K"]
    grid = (cdiv(M, m["BLOCK_M"]), cdiv(N, m["BLOCK_N"]))
    kg = cdiv(K, p["group_k"])
    return grid, [as_e4m3(a["a"]), as_e4m3(a["b"]), a["c"], a["a_s"], a["b_s"], M, N, K, K, 1, K, 1, N, 1,
                  kg, 1, kg, 1]


# --- 2. weight-only fp8 GEMM (bf16 activations) --------------------------------------------------------------------
@triton.jit
def w8a16_fp8_block_gemm_kernel(A, W, C, W_S, M, N, K, stride_am, stride_wn, stride_cm, stride_wsn,
                                GROUP_W: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                                BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    # C = A @ (W * w_s)^T: W [N, K] e4m3 with one scale per GROUP_W x GROUP_W block, dequantized to bf16 per K tile
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    group = GROUP_M * num_pid_n
    first_m = (pid // group) * GROUP_M
    rows = min(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % group) % rows
    pid_n = (pid % group) // rows
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = A + rm[:, None] * stride_am + rk[None, :]
    w_ptrs = W + rn[None, :] * stride_wn + rk[:, None]
    ws_row = W_S + (rn // GROUP_W) * stride_wsn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] + k0 < K), other=0.0)
        w = tl.load(w_ptrs, mask=(rk[:, None] + k0 < K) & (rn[None, :] < N), other=0.0)
        s = tl.load(ws_row + k0 // GROUP_W, mask=rn < N, other=0.0)
        b = (w.to(tl.float32) * s[None, :]).to(tl.bfloat16)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K
        w_ptrs += BLOCK_K
    tl.store(C + rm[:, None] * stride_cm + rn[None, :], acc.to(tl.bfloat16),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def w8a16_inputs(p, rng):
    M, N, K, g = p["M"], p["N"], p["K"], p["group"]
    return {"a": randn(rng, (M, K), "bfloat16"), "w": e4m3_bytes(randn(rng, (N, K), "float32", 64.0)),
            "w_s": uniform(rng, (cdiv(N, g), cdiv(K, g)), 0.5e-2, 1.5e-2)}


def w8a16_ref(p, x):
    N, K, g = p["N"], p["K"], p["group"]
    s = np.repeat(np.repeat(x["w_s"].astype(np.float64), g, axis=0), g, axis=1)[:N, :K]
    # the kernel rounds each dequantized weight to bfloat16 before the dot
    w = cast(E4M3[x["w"].astype(np.int64)] * s.astype(np.float32), "bfloat16").astype(np.float64)
    a = x["a"].astype(np.float64)
    M = p["M"]
    step = max(1, cdiv(M, 16))
    return {"c": np.concatenate(pmap(lambda i: a[i * step:(i + 1) * step] @ w.T, cdiv(M, step)))}


def w8a16_launch(p, a, m):
    M, N, K = p["M"], p["N"], p["K"]
    grid = (cdiv(M, m["BLOCK_M"]) * cdiv(N, m["BLOCK_N"]),)
    return grid, [a["a"], as_e4m3(a["w"]), a["c"], a["w_s"], M, N, K, K, K, N, cdiv(K, p["group"])]


# --- 3. per-token-group fp8 quantization, column-major scales -------------------------------------------------------
@triton.jit
def group_quant_fp8_kernel(X, Q, S, n_groups_per_row, n_rows, stride_x, eps, fp8_max,
                           GROUP: tl.constexpr, ROWS: tl.constexpr):
    # program g handles group column g % n_groups_per_row of ROWS rows: scale[gcol, row] (column-major)
    gcol = tl.program_id(0) % n_groups_per_row
    r0 = (tl.program_id(0) // n_groups_per_row) * ROWS
    rows = r0 + tl.arange(0, ROWS)
    cols = gcol * GROUP + tl.arange(0, GROUP)
    ok = rows[:, None] < n_rows
    x = tl.load(X + rows[:, None] * stride_x + cols[None, :], mask=ok, other=0.0).to(tl.float32)
    amax = tl.maximum(tl.max(tl.abs(x), axis=1), eps)
    scale = amax / fp8_max
    q = tl.clamp(x / scale[:, None], -fp8_max, fp8_max).to(Q.dtype.element_ty)
    tl.store(Q + rows[:, None] * stride_x + cols[None, :], q, mask=ok)
    tl.store(S + gcol * n_rows + rows, scale, mask=rows < n_rows)


def gq_inputs(p, rng):
    x = randn(rng, (p["R"], p["D"]), "float32", 2.0)
    # a few outlier groups, the case per-group scales are for
    x[::7, : p["group"]] *= np.float32(40.0)
    return {"x": cast(x, "bfloat16")}


class GroupQuantCase(Case):
    """Codes checked as Fp8QuantCase checks per-token ones: the scale to float32 division error, each code the e4m3
    byte of round-to-nearest-even(clamp(x / scale)) computed with the kernel's own scale, either neighbour accepted
    within 4 float32 ulp of a midpoint (the GPU's division is approximate)."""

    def check(self, p, got, ref):
        res = super().check(p, {"s": got["s"]}, {"s": ref["s"]})
        g = p["group"]
        x = ref["q"].astype(np.float64)
        s = np.repeat(got["s"].astype(np.float64).T, g, axis=1)
        t = np.clip(x / s, -448.0, 448.0)
        codes = np.asarray(got["q"]).view(np.uint8)
        lo = e4m3_bytes((t * (1 - 2.0 ** -21)).astype(np.float32))
        hi = e4m3_bytes((t * (1 + 2.0 ** -21)).astype(np.float32))
        ok = (codes == lo) | (codes == hi)
        res["q"] = (bool(ok.all()), float((~ok).mean()), f"q: {int((~ok).sum())} codes off")
        return res


def gq_ref(p, x):
    g, R = p["group"], p["R"]
    xf = x["x"].astype(np.float64).reshape(R, -1, g)
    amax = np.maximum(np.abs(xf).max(axis=2), 1e-10)
    return {"s": (amax / 448.0).T.astype(np.float32), "q": x["x"].astype(np.float32)}


def gq_launch(p, a, m):
    R, D, g = p["R"], p["D"], p["group"]
    ng = D // g
    return (ng * cdiv(R, m["ROWS"]),), [a["x"], as_e4m3(a["q"]), a["s"], ng, R, D, 1e-10, 448.0]


# --- 4. grouped-query decode attention, query heads packed into a dot's rows --------------------------------------------
@triton.jit
def gqa_decode_kernel(Q, K, V, O, LSE, SEQ_LENS, stride_qb, stride_qh, stride_kb, stride_kt, stride_kh, stride_ob,
                      stride_oh, stride_os, sm_scale, GROUP: tl.constexpr, BLOCK_G: tl.constexpr, D: tl.constexpr,
                      BLOCK_T: tl.constexpr, SPLITS: tl.constexpr):
    b = tl.program_id(0)
    kvh = tl.program_id(1)
    split = tl.program_id(2)
    seq_len = tl.load(SEQ_LENS + b)
    per = tl.cdiv(tl.cdiv(seq_len, SPLITS), BLOCK_T) * BLOCK_T
    start = split * per
    end = tl.minimum(start + per, seq_len)
    g = tl.arange(0, BLOCK_G)
    d = tl.arange(0, D)
    heads = kvh * GROUP + g
    q = tl.load(Q + b * stride_qb + heads[:, None] * stride_qh + d[None, :], mask=g[:, None] < GROUP, other=0.0)
    q = (q * sm_scale).to(q.dtype)
    m_i = tl.full([BLOCK_G], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_G], dtype=tl.float32)
    acc = tl.zeros([BLOCK_G, D], dtype=tl.float32)
    kv = K + b * stride_kb + kvh * stride_kh
    vv = V + b * stride_kb + kvh * stride_kh
    for t0 in range(start, end, BLOCK_T):
        t = t0 + tl.arange(0, BLOCK_T)
        live = t < end
        k = tl.load(kv + t[None, :] * stride_kt + d[:, None], mask=live[None, :], other=0.0)
        s = tl.dot(q, k)
        s = tl.where(live[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        alpha = tl.exp(m_i - m_new)
        p = tl.exp(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(vv + t[:, None] * stride_kt + d[None, :], mask=live[:, None], other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    has = l_i > 0.0
    out = acc / tl.where(has, l_i, 1.0)[:, None]
    lse = tl.where(has, m_i + tl.log(tl.where(has, l_i, 1.0)), float("-inf"))
    rows = g < GROUP
    tl.store(O + b * stride_ob + heads[:, None] * stride_oh + split * stride_os + d[None, :], out, mask=rows[:, None])
    tl.store(LSE + (b * (tl.num_programs(1) * GROUP) + heads) * SPLITS + split, lse, mask=rows)


def gqa_inputs(p, rng):
    B, HKV, G, T, D = p["B"], p["HKV"], p["G"], p["Tmax"], p["D"]
    lens = rng.integers(p["Tmin"], T + 1, B).astype(np.int32)
    lens[0] = min(5, T)  # a short sequence: most of its splits are empty
    return {"q": randn(rng, (B, HKV * G, D), "float16"), "k": randn(rng, (B, T, HKV, D), "float16"),
            "v": randn(rng, (B, T, HKV, D), "float16"), "lens": lens}


def gqa_ref(p, x):
    B, HKV, G, D, S, bt = p["B"], p["HKV"], p["G"], p["D"], p["splits"], p["block_t"]
    o = np.zeros((B, HKV * G, S, D))
    lse = np.full((B, HKV * G, S), -np.inf)
    scale = 1.0 / np.sqrt(D)
    for b in range(B):
        n = int(x["lens"][b])
        per = -(-(-(-n // S)) // bt) * bt
        for h in range(HKV):
            q = (x["q"][b, h * G:(h + 1) * G].astype(np.float32) * np.float32(scale)).astype(np.float16)
            for sp in range(S):
                lo, hi = sp * per, min(sp * per + per, n)
                if lo >= hi:
                    continue
                k = x["k"][b, lo:hi, h].astype(np.float64)
                v = x["v"][b, lo:hi, h].astype(np.float64)
                s = q.astype(np.float64) @ k.T
                m = s.max(axis=1, keepdims=True)
                e = np.exp(s - m)
                o[b, h * G:(h + 1) * G, sp] = (e @ v) / e.sum(axis=1, keepdims=True)
                lse[b, h * G:(h + 1) * G, sp] = m[:, 0] + np.log(e.sum(axis=1))
    return {"o": o, "lse": lse}


def gqa_launch(p, a, m):
    B, HKV, G, T, D, S = p["B"], p["HKV"], p["G"], p["Tmax"], p["D"], p["splits"]
    H = HKV * G
    return (B, HKV, S), [a["q"], a["k"], a["v"], a["o"], a["lse"], a["lens"], H * D, D, T * HKV * D, HKV * D, D,
                         H * S * D, S * D, D, 1.0 / float(np.sqrt(D))]


# --- 5. prefix-prefill attention over a paged KV cache -----------------------------------------------------------
@triton.jit
def paged_prefill_kernel(Q, KC, VC, BT, O, M, ctx_len, stride_bt, sm_scale, H: tl.constexpr, D: tl.constexpr,
                         PAGE: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # Q, O [B, M, H, D]; KC, VC [pages * PAGE, H, D]; BT [B, max_pages] int32
    pid_m = tl.program_id(0)
    h = tl.program_id(1)
    b = tl.program_id(2)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    d = tl.arange(0, D)
    rows = (b * M + rm).to(tl.int64) * (H * D) + h * D
    q = tl.load(Q + rows[:, None] + d[None, :], mask=rm[:, None] < M, other=0.0)
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, D], dtype=tl.float32)
    qk_scale = sm_scale * 1.4426950408889634
    for n0 in range(0, ctx_len, BLOCK_N):
        t = n0 + tl.arange(0, BLOCK_N)
        live = t < ctx_len
        page = tl.load(BT + b * stride_bt + t // PAGE, mask=live, other=0)
        cache_row = (page * PAGE + t % PAGE).to(tl.int64) * (H * D) + h * D
        k = tl.load(KC + cache_row[None, :] + d[:, None], mask=live[None, :], other=0.0)
        s = tl.dot(q, k) * qk_scale
        s = tl.where(live[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        alpha = tl.math.exp2(m_i - m_new)
        p = tl.math.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(VC + cache_row[:, None] + d[None, :], mask=live[:, None], other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v)
        m_i = m_new
    tl.store(O + rows[:, None] + d[None, :], acc / l_i[:, None], mask=rm[:, None] < M)


def prefill_inputs(p, rng):
    B, M, H, D, ctx, page = p["B"], p["M"], p["H"], p["D"], p["ctx"], p["page"]
    npages = cdiv(ctx, page)
    total = B * npages + 3
    # each sequence's pages scattered over the cache in a random order
    bt = rng.permutation(total)[:B * npages].reshape(B, npages).astype(np.int32)
    return {"q": randn(rng, (B, M, H, D), "float16"), "kc": randn(rng, (total * page, H, D), "float16"),
            "vc": randn(rng, (total * page, H, D), "float16"), "bt": bt}


def prefill_ref(p, x):
    B, M, H, D, ctx, page = p["B"], p["M"], p["H"], p["D"], p["ctx"], p["page"]
    t = np.arange(ctx)
    out = np.zeros((B, M, H, D))

    def one(bh):
        b, h = divmod(bh, H)
        r = x["bt"][b, t // page].astype(np.int64) * page + t % page
        k = x["kc"][r, h].astype(np.float64)
        v = x["vc"][r, h].astype(np.float64)
        s = x["q"][b, :, h].astype(np.float64) @ k.T / np.sqrt(D)
        e = np.exp(s - s.max(axis=1, keepdims=True))
        return (e @ v) / e.sum(axis=1, keepdims=True)
    for bh, o in enumerate(pmap(one, B * H)):
        out[bh // H, :, bh % H] = o
    return {"o": out}


def prefill_launch(p, a, m):
    B, M, H, D = p["B"], p["M"], p["H"], p["D"]
    return (cdiv(M, m["BLOCK_M"]), H, B), [a["q"], a["kc"], a["vc"], a["bt"], a["o"], M, p["ctx"],
                                          a["bt"].shape[1], 1.0 / float(np.sqrt(D))]


# --- 6. fused gate/up GEMM, interleaved columns split in the epilogue ----------------------------------------------
@triton.jit
def gate_up_interleaved_kernel(X, W, Y, M, N2, K, stride_xm, stride_wk, stride_ym, BLOCK_M: tl.constexpr,
                               BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # W [K, 2 * N2] holds gate and up columns interleaved (gate_j at 2j, up_j at 2j + 1); Y [M, N2] = silu(g) * u
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    x_ptrs = X + rm[:, None] * stride_xm + rk[None, :]
    w_ptrs = W + rk[:, None] * stride_wk + rn[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        x = tl.load(x_ptrs, mask=(rm[:, None] < M) & (rk[None, :] < K - k * BLOCK_K), other=0.0)
        w = tl.load(w_ptrs, mask=(rk[:, None] < K - k * BLOCK_K) & (rn[None, :] < 2 * N2), other=0.0)
        acc = tl.dot(x, w, acc)
        x_ptrs += BLOCK_K
        w_ptrs += BLOCK_K * stride_wk
    g, u = tl.split(tl.reshape(acc, (BLOCK_M, BLOCK_N // 2, 2)))
    y = (g * tl.sigmoid(g) * u).to(Y.dtype.element_ty)
    cn = pid_n * (BLOCK_N // 2) + tl.arange(0, BLOCK_N // 2)
    tl.store(Y + rm[:, None] * stride_ym + cn[None, :], y, mask=(rm[:, None] < M) & (cn[None, :] < N2))


def gate_up_inputs(p, rng):
    M, N2, K = p["M"], p["N2"], p["K"]
    return {"x": randn(rng, (M, K), "bfloat16"), "w": randn(rng, (K, 2 * N2), "bfloat16", 1.0 / np.sqrt(K))}


def gate_up_ref(p, x):
    M = p["M"]
    a, w = x["x"].astype(np.float64), x["w"].astype(np.float64)
    step = max(1, cdiv(M, 16))
    h = np.concatenate(pmap(lambda i: a[i * step:(i + 1) * step] @ w, cdiv(M, step)))
    g, u = h[:, 0::2], h[:, 1::2]
    return {"y": g / (1.0 + np.exp(-g)) * u}


def gate_up_launch(p, a, m):
    M, N2, K = p["M"], p["N2"], p["K"]
    return (cdiv(M, m["BLOCK_M"]), cdiv(2 * N2, m["BLOCK_N"])), [a["x"], a["w"], a["y"], M, N2, K, K, 2 * N2, N2]


# --- 7. fp32 GEMM in tf32x3 precision ----------------------------------------------------------------------------
@triton.jit
def mm_tf32x3_kernel(A, B, C, M, N, K, stride_am, stride_bk, stride_cm, BLOCK_M: tl.constexpr,
                     BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        a = tl.load(A + rm[:, None] * stride_am + (k0 + rk)[None, :],
                    mask=(rm[:, None] < M) & ((k0 + rk)[None, :] < K), other=0.0)
        b = tl.load(B + (k0 + rk)[:, None] * stride_bk + rn[None, :],
                    mask=((k0 + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc, input_precision="tf32x3")
    tl.store(C + rm[:, None] * stride_cm + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def tf32x3_inputs(p, rng):
    return {"a": randn(rng, (p["M"], p["K"]), "float32"), "b": randn(rng, (p["K"], p["N"]), "float32")}


def tf32x3_ref(p, x):
    M = p["M"]
    a, b = x["a"].astype(np.float64), x["b"].astype(np.float64)
    step = max(1, cdiv(M, 16))
    return {"c": np.concatenate(pmap(lambda i: a[i * step:(i + 1) * step] @ b, cdiv(M, step)))}


def tf32x3_launch(p, a, m):
    M, N, K = p["M"], p["N"], p["K"]
    return (cdiv(M, m["BLOCK_M"]), cdiv(N, m["BLOCK_N"])), [a["a"], a["b"], a["c"], M, N, K, K, N, N]


# --- 8. causal attention with the rotary embedding fused in -------------------------------------------------------
@triton.jit
def rope_attn_kernel(Q, K, V, COS, SIN, O, L, sm_scale, D: tl.constexpr, BLOCK_M: tl.constexpr,
                     BLOCK_N: tl.constexpr):
    # Q, K, V, O [B * H, L, D] fp16; COS, SIN [L, D // 2] fp32; rotate-half RoPE, causal
    HALF: tl.constexpr = D // 2
    pid_m = tl.program_id(0)
    bh = tl.program_id(1).to(tl.int64)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    dh = tl.arange(0, HALF)
    d = tl.arange(0, D)
    base = bh * L * D
    q1 = tl.load(Q + base + rm[:, None] * D + dh[None, :], mask=rm[:, None] < L, other=0.0).to(tl.float32)
    q2 = tl.load(Q + base + rm[:, None] * D + HALF + dh[None, :], mask=rm[:, None] < L, other=0.0).to(tl.float32)
    cq = tl.load(COS + rm[:, None] * HALF + dh[None, :], mask=rm[:, None] < L, other=0.0)
    sq = tl.load(SIN + rm[:, None] * HALF + dh[None, :], mask=rm[:, None] < L, other=0.0)
    scale = sm_scale * 1.4426950408889634
    q1r = ((q1 * cq - q2 * sq) * scale).to(tl.float16)
    q2r = ((q2 * cq + q1 * sq) * scale).to(tl.float16)
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, D], dtype=tl.float32)
    hi = tl.minimum((pid_m + 1) * BLOCK_M, L)
    for n0 in range(0, hi, BLOCK_N):
        rn = n0 + tl.arange(0, BLOCK_N)
        live = rn < L
        k1 = tl.load(K + base + rn[:, None] * D + dh[None, :], mask=live[:, None], other=0.0).to(tl.float32)
        k2 = tl.load(K + base + rn[:, None] * D + HALF + dh[None, :], mask=live[:, None], other=0.0).to(tl.float32)
        ck = tl.load(COS + rn[:, None] * HALF + dh[None, :], mask=live[:, None], other=0.0)
        sk = tl.load(SIN + rn[:, None] * HALF + dh[None, :], mask=live[:, None], other=0.0)
        k1r = (k1 * ck - k2 * sk).to(tl.float16)
        k2r = (k2 * ck + k1 * sk).to(tl.float16)
        s = tl.dot(q1r, tl.trans(k1r)) + tl.dot(q2r, tl.trans(k2r))
        s = tl.where((rm[:, None] >= rn[None, :]) & live[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        alpha = tl.math.exp2(m_i - m_new)
        p = tl.math.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(V + base + rn[:, None] * D + d[None, :], mask=live[:, None], other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v)
        m_i = m_new
    tl.store(O + base + rm[:, None] * D + d[None, :], (acc / l_i[:, None]).to(tl.float16), mask=rm[:, None] < L)


def rope_attn_inputs(p, rng):
    BH, L, D = p["BH"], p["L"], p["D"]
    half = D // 2
    inv = 1.0 / (10000.0 ** (np.arange(half) / half))
    ang = np.arange(L)[:, None] * inv[None, :]
    return {"q": randn(rng, (BH, L, D), "float16"), "k": randn(rng, (BH, L, D), "float16"),
            "v": randn(rng, (BH, L, D), "float16"), "cos": np.cos(ang).astype(np.float32),
            "sin": np.sin(ang).astype(np.float32)}


def rope_attn_ref(p, x):
    BH, L, D = p["BH"], p["L"], p["D"]
    half = D // 2
    c, s_ = x["cos"].astype(np.float64), x["sin"].astype(np.float64)

    def rot(t):
        t = t.astype(np.float64)
        a, b = t[..., :half], t[..., half:]
        return np.concatenate([a * c - b * s_, b * c + a * s_], axis=-1)
    causal = np.tril(np.ones((L, L), bool))

    def one(h):
        sc = rot(x["q"][h]) @ rot(x["k"][h]).T / np.sqrt(D)
        sc = np.where(causal, sc, -np.inf)
        e = np.exp(sc - sc.max(axis=1, keepdims=True))
        return (e @ x["v"][h].astype(np.float64)) / e.sum(axis=1, keepdims=True)
    return {"o": np.stack(pmap(one, BH))}


def rope_attn_launch(p, a, m):
    BH, L, D = p["BH"], p["L"], p["D"]
    return (cdiv(L, m["BLOCK_M"]), BH), [a["q"], a["k"], a["v"], a["cos"], a["sin"], a["o"], L,
                                         1.0 / float(np.sqrt(D))]


# --- 9. linear + bias + residual + LayerNorm over the output row in the epilogue -----------------------------------
@triton.jit
def linear_ln_kernel(X, W, B, R, G, BETA, Y, M, K, eps, N: tl.constexpr, BLOCK_M: tl.constexpr,
                     BLOCK_K: tl.constexpr):
    # Y = LayerNorm(X @ W + b + R) over the N columns; W [K, N]; one program holds BLOCK_M whole rows
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        x = tl.load(X + rm[:, None] * K + (k0 + rk)[None, :], mask=rm[:, None] < M, other=0.0)
        w = tl.load(W + (k0 + rk)[:, None] * N + rn[None, :])
        acc = tl.dot(x, w, acc)
    h = acc + tl.load(B + rn)[None, :] + tl.load(R + rm[:, None] * N + rn[None, :], mask=rm[:, None] < M,
                                                  other=0.0).to(tl.float32)
    mean = tl.sum(h, axis=1) / N
    hc = h - mean[:, None]
    var = tl.sum(hc * hc, axis=1) / N
    y = hc * tl.rsqrt(var + eps)[:, None] * tl.load(G + rn)[None, :] + tl.load(BETA + rn)[None, :]
    tl.store(Y + rm[:, None] * N + rn[None, :], y.to(tl.bfloat16), mask=rm[:, None] < M)


def linear_ln_inputs(p, rng):
    M, N, K = p["M"], p["N"], p["K"]
    return {"x": randn(rng, (M, K), "bfloat16"), "w": randn(rng, (K, N), "bfloat16", 1.0 / np.sqrt(K)),
            "b": randn(rng, (N,), "float32", 0.1), "r": randn(rng, (M, N), "bfloat16"),
            "g": uniform(rng, (N,), 0.5, 1.5), "beta": randn(rng, (N,), "float32", 0.1)}


def linear_ln_ref(p, x):
    M = p["M"]
    a, w = x["x"].astype(np.float64), x["w"].astype(np.float64)
    step = max(1, cdiv(M, 16))
    h = np.concatenate(pmap(lambda i: a[i * step:(i + 1) * step] @ w, cdiv(M, step)))
    h = h + x["b"].astype(np.float64)[None, :] + x["r"].astype(np.float64)
    mu = h.mean(axis=1, keepdims=True)
    var = ((h - mu) ** 2).mean(axis=1, keepdims=True)
    return {"y": (h - mu) / np.sqrt(var + 1e-5) * x["g"].astype(np.float64) + x["beta"].astype(np.float64)}


def linear_ln_launch(p, a, m):
    M, K = p["M"], p["K"]
    return (cdiv(M, m["BLOCK_M"]),), [a["x"], a["w"], a["b"], a["r"], a["g"], a["beta"], a["y"], M, K, 1e-5]


CASES = [
    Case("fp8_block_scaled_gemm_bf16", fp8_block_scaled_gemm_kernel, fp8_block_inputs,
         lambda p: {"c": ((p["M"], p["N"]), "bfloat16")}, fp8_block_ref, fp8_block_launch,
         gpu={"M": 4096, "N": 4096, "K": 4096, "group_n": 128, "group_k": 128},
         ci={"M": 40, "N": 72, "K": 160, "group_n": 32, "group_k": 64},
         meta={"GROUP_N": 128, "GROUP_K": 128, "BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 128, "num_warps": 4,
               "num_stages": 3},
         ci_meta={"GROUP_N": 32, "GROUP_K": 64, "BLOCK_M": 16, "BLOCK_N": 32, "BLOCK_K": 32, "num_warps": 1,
                  "num_stages": 2},
         tol={"bfloat16": (1e-2, 5e-3)}, flops=lambda p: 2.0 * p["M"] * p["N"] * p["K"],
         bytes=lambda p: 1.0 * (p["M"] * p["K"] + p["N"] * p["K"]) + 2.0 * p["M"] * p["N"],
         idiom="block-scaled fp8 GEMM (DeepSeek-style checkpoints): float8_e4m3fn tensors in, per (token, K group) "
               "and per (128 x 128) weight block scales loaded in the K loop, acc += tl.dot(a, b) * a_s[:, None] * "
               "b_s[None, :], offsets wrapped by % M / % N, weight [N, K] read transposed by strides, "
               "C.dtype.element_ty out"),
    Case("w8a16_fp8_block_gemm_bf16", w8a16_fp8_block_gemm_kernel, w8a16_inputs,
         lambda p: {"c": ((p["M"], p["N"]), "bfloat16")}, w8a16_ref, w8a16_launch,
         gpu={"M": 4096, "N": 4096, "K": 4096, "group": 128}, ci={"M": 40, "N": 72, "K": 160, "group": 32},
         meta={"GROUP_W": 128, "BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 8,
               "num_stages": 3},
         ci_meta={"GROUP_W": 32, "BLOCK_M": 16, "BLOCK_N": 32, "BLOCK_K": 32, "GROUP_M": 2, "num_warps": 1,
                  "num_stages": 2},
         tol={"bfloat16": (1e-2, 5e-3)}, flops=lambda p: 2.0 * p["M"] * p["N"] * p["K"],
         bytes=lambda p: 2.0 * p["M"] * p["K"] + 1.0 * p["N"] * p["K"] + 2.0 * p["M"] * p["N"],
         idiom="weight-only fp8 GEMM: bf16 activations, e4m3 weights [N, K] read transposed and dequantized in the "
               "K loop by (w.to(tl.float32) * s[None, :]).to(tl.bfloat16) with 128x128 block scales, "
               "tl.dot(a, b, acc), grouped program order by hand"),
    GroupQuantCase("group_quant_fp8_colmajor_bf16", group_quant_fp8_kernel, gq_inputs,
                   lambda p: {"q": ((p["R"], p["D"]), "uint8"), "s": ((p["D"] // p["group"], p["R"]), "float32")},
                   gq_ref, gq_launch,
                   gpu={"R": 16384, "D": 7168, "group": 128}, ci={"R": 37, "D": 256, "group": 64},
                   meta={"GROUP": 128, "ROWS": 16, "num_warps": 4}, ci_meta={"GROUP": 64, "ROWS": 8, "num_warps": 2},
                   tol={"float32": (3e-7, 0.0)}, flops=lambda p: 4.0 * p["R"] * p["D"],
                   bytes=lambda p: 3.0 * p["R"] * p["D"] + 4.0 * p["R"] * p["D"] / p["group"],
                   idiom="per-token-group fp8 quantization: rows cut into groups of 128, tl.max(tl.abs(x), 1) per "
                         "(row, group) floored at eps, scales stored column-major (scale[group, row]), "
                         "tl.clamp(x / scale, -fp8_max, fp8_max).to(Q.dtype.element_ty) into float8_e4m3fn"),
    Case("gqa_decode_packed_dot_f16", gqa_decode_kernel, gqa_inputs,
         lambda p: {"o": ((p["B"], p["HKV"] * p["G"], p["splits"], p["D"]), "float32"),
                    "lse": ((p["B"], p["HKV"] * p["G"], p["splits"]), "float32")}, gqa_ref, gqa_launch,
         gpu={"B": 32, "HKV": 8, "G": 4, "Tmax": 8192, "Tmin": 2048, "D": 128, "splits": 8, "block_t": 64},
         ci={"B": 3, "HKV": 2, "G": 4, "Tmax": 70, "Tmin": 20, "D": 32, "splits": 3, "block_t": 16},
         meta={"GROUP": 4, "BLOCK_G": 16, "D": 128, "BLOCK_T": 64, "SPLITS": 8, "num_warps": 4, "num_stages": 2},
         ci_meta={"GROUP": 4, "BLOCK_G": 16, "D": 32, "BLOCK_T": 16, "SPLITS": 3, "num_warps": 2, "num_stages": 2},
         tol={"float32": (2e-3, 2e-3)},
         flops=lambda p: 4.0 * p["B"] * p["HKV"] * p["G"] * (p["Tmax"] + p["Tmin"]) / 2 * p["D"],
         bytes=lambda p: 4.0 * p["B"] * p["HKV"] * (p["Tmax"] + p["Tmin"]) / 2 * p["D"],
         idiom="grouped-query flash-decoding: the 4 query heads of a KV head packed into the rows of tl.dot (padded "
               "to 16, masked), a runtime per-split range(start, end, BLOCK_T) from the sequence's loaded length, "
               "online softmax, partial outputs and log-sum-exp with empty splits written as 0 / -inf"),
    Case("paged_prefix_prefill_attn_f16", paged_prefill_kernel, prefill_inputs,
         lambda p: {"o": ((p["B"], p["M"], p["H"], p["D"]), "float32")}, prefill_ref, prefill_launch,
         gpu={"B": 4, "M": 1024, "H": 16, "D": 128, "ctx": 4000, "page": 16},
         ci={"B": 2, "M": 40, "H": 2, "D": 32, "ctx": 50, "page": 16},
         meta={"H": 16, "D": 128, "PAGE": 16, "BLOCK_M": 128, "BLOCK_N": 64, "num_warps": 8, "num_stages": 2},
         ci_meta={"H": 2, "D": 32, "PAGE": 16, "BLOCK_M": 16, "BLOCK_N": 16, "num_warps": 1, "num_stages": 2},
         tol={"float32": (2e-3, 2e-3)},
         flops=lambda p: 4.0 * p["B"] * p["M"] * p["H"] * p["ctx"] * p["D"],
         bytes=lambda p: 2.0 * p["B"] * p["H"] * p["D"] * (2 * p["ctx"] + p["M"]),
         idiom="prefix-prefill attention over a paged KV cache: the page of each key loaded from a block table in "
               "the loop, cache rows page * PAGE + t % PAGE, K read transposed by strides, exp2 online softmax, "
               "runtime context length, no causal mask"),
    Case("gate_up_interleaved_split_bf16", gate_up_interleaved_kernel, gate_up_inputs,
         lambda p: {"y": ((p["M"], p["N2"]), "bfloat16")}, gate_up_ref, gate_up_launch,
         gpu={"M": 4096, "N2": 7168, "K": 2048}, ci={"M": 40, "N2": 40, "K": 72},
         meta={"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "num_warps": 8, "num_stages": 3},
         ci_meta={"BLOCK_M": 16, "BLOCK_N": 32, "BLOCK_K": 32, "num_warps": 1, "num_stages": 2},
         tol={"bfloat16": (1e-2, 5e-3)}, flops=lambda p: 4.0 * p["M"] * p["N2"] * p["K"],
         bytes=lambda p: 2.0 * (p["M"] * p["K"] + 2 * p["K"] * p["N2"] + p["M"] * p["N2"]),
         idiom="fused gate/up projection with interleaved weight columns: one tl.dot GEMM, then "
               "tl.split(tl.reshape(acc, (BM, BN // 2, 2))) into gate and up, SiLU(gate) * up stored at half width"),
    Case("mm_tf32x3_f32", mm_tf32x3_kernel, tf32x3_inputs, lambda p: {"c": ((p["M"], p["N"]), "float32")},
         tf32x3_ref, tf32x3_launch,
         gpu={"M": 4096, "N": 4096, "K": 2048}, ci={"M": 40, "N": 36, "K": 70},
         meta={"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "num_warps": 8, "num_stages": 3},
         ci_meta={"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "num_warps": 1, "num_stages": 2},
         tol={"float32": (1e-4, 1e-4)}, flops=lambda p: 2.0 * p["M"] * p["N"] * p["K"],
         bytes=lambda p: 4.0 * (p["M"] * p["K"] + p["K"] * p["N"] + p["M"] * p["N"]),
         idiom="fp32 GEMM with tl.dot(a, b, acc, input_precision=\"tf32x3\"): three tf32 tensor-core products "
               "for fp32 accuracy, offsets recomputed per iteration, masks on M, N and K"),
    Case("rope_fused_causal_attn_f16", rope_attn_kernel, rope_attn_inputs,
         lambda p: {"o": ((p["BH"], p["L"], p["D"]), "float16")}, rope_attn_ref, rope_attn_launch,
         gpu={"BH": 32, "L": 4096, "D": 128}, ci={"BH": 2, "L": 45, "D": 32},
         meta={"D": 128, "BLOCK_M": 128, "BLOCK_N": 64, "num_warps": 8, "num_stages": 2},
         ci_meta={"D": 32, "BLOCK_M": 16, "BLOCK_N": 16, "num_warps": 1, "num_stages": 2},
         tol={"float16": (1e-2, 2e-3)}, flops=lambda p: 2.0 * p["BH"] * p["L"] * p["L"] * p["D"],
         bytes=lambda p: 8.0 * p["BH"] * p["L"] * p["D"],
         idiom="causal attention with rotary embedding fused in: q and k halves rotated in registers by cos / sin "
               "tables (rotate-half), scores = tl.dot(q1r, tl.trans(k1r)) + tl.dot(q2r, tl.trans(k2r)), exp2 online "
               "softmax, fp16 out"),
    Case("linear_bias_resid_ln_bf16", linear_ln_kernel, linear_ln_inputs,
         lambda p: {"y": ((p["M"], p["N"]), "bfloat16")}, linear_ln_ref, linear_ln_launch,
         gpu={"M": 32768, "N": 256, "K": 1024}, ci={"M": 40, "N": 32, "K": 48},
         meta={"N": 256, "BLOCK_M": 64, "BLOCK_K": 64, "num_warps": 4, "num_stages": 3},
         ci_meta={"N": 32, "BLOCK_M": 16, "BLOCK_K": 16, "num_warps": 1, "num_stages": 2},
         tol={"bfloat16": (2e-2, 1e-2)}, flops=lambda p: 2.0 * p["M"] * p["N"] * p["K"],
         bytes=lambda p: 2.0 * (p["M"] * p["K"] + p["K"] * p["N"] + 2 * p["M"] * p["N"]),
         idiom="linear + bias + residual + LayerNorm fused: each program holds whole output rows (N = 256), the "
               "row statistics by tl.sum over the accumulator's columns in the epilogue, tl.rsqrt, bf16 out"),
]
