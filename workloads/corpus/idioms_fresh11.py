"""Eight more kernels as Triton users write them. Flash-attention forward for a head size that is not a power of two
(HEAD_DIM = 80, as in several vision and speech models): the head loaded at BLOCK_D = 128 lanes with an
`offs_d < HEAD_DIM` mask on the Q / K / V loads and the output store, the sequence masked too, the softmax scale a
float argument folded with log2(e) into tl.exp2. Binary-embedding search: Hamming distances between packed uint32
codes as the popcount of XORed words (libdevice.popc on the words bitcast to int32), a 2-D tile of int32 counts
accumulated over the words. A QLoRA-style NF4 GEMV: 4-bit codes packed two per byte (high nibble first, as
bitsandbytes packs), split by `>> 4` / `& 0xF`, looked up in a 16-entry float32 codebook by a gathering tl.load,
put back in order by tl.interleave, and scaled per 64-value block (the dot product of each block reduced first,
then multiplied by its absmax) against a bf16 activation vector, one token per grid row. A scale-and-bias
elementwise kernel with int64 index math the way users guard against overflow: tl.program_id(0).to(tl.int64),
the element count and row strides promoted, the row and column split off a flat offset by // and %. Per-row suffix
sums by tl.cumsum(x, axis=1, reverse=True) with the exclusive form (suffix minus x) as a second output. A per-row
argsort by sorting packed int64 keys (the float's order-preserving int32 bits in the high word, the column in the
low word: a stable sort of values by one tl.sort), indices and values unpacked by masks and shifts. Single-token
decode attention over an int8 KV cache with a float32 scale per cached token, ragged sequence lengths read at run
time, tl.sum dot products (no tl.dot), scalar online-softmax state. A long-row softmax in two passes over the row:
pass one keeps a running maximum and normalizer per lane (d = d * exp(m - m_new) + exp(x - m_new)), combined across
the lanes by tl.max / tl.sum after the loop, pass two writes exp(x - m) / d; the masked tail read as -inf.
"""
import numpy as np
import triton
import triton.language as tl
from triton.language.extra import libdevice

from workloads.corpus._case import Case, cdiv, pmap, randn, uniform


# --- 1. flash attention, HEAD_DIM = 80 padded to BLOCK_D = 128 ------------------------------------------------------
@triton.jit
def attn_hd80_kernel(Q, K, V, Out, L, stride_h, stride_m, sm_scale, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr,
                     BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr):
    # Q, K, V, Out [B * H, L, HEAD_DIM] fp16; non-causal
    start_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    base = off_hz.to(tl.int64) * stride_h
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)
    d_mask = offs_d < HEAD_DIM
    q_mask = (offs_m[:, None] < L) & d_mask[None, :]
    q = tl.load(Q + base + offs_m[:, None] * stride_m + offs_d[None, :], mask=q_mask, other=0.0)
    qk_scale = sm_scale * 1.44269504
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float32)
    for start_n in range(0, L, BLOCK_N):
        cols = start_n + offs_n
        kt = tl.load(K + base + cols[None, :] * stride_m + offs_d[:, None],
                     mask=(cols[None, :] < L) & d_mask[:, None], other=0.0)
        qk = tl.dot(q, kt)
        qk = tl.where(cols[None, :] < L, qk * qk_scale, float("-inf"))
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_ij[:, None])
        l_ij = tl.sum(p, 1)
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + l_ij
        acc = acc * alpha[:, None]
        v = tl.load(V + base + cols[:, None] * stride_m + offs_d[None, :],
                    mask=(cols[:, None] < L) & d_mask[None, :], other=0.0)
        acc = tl.dot(p.to(tl.float16), v, acc)
        m_i = m_ij
    acc = acc / l_i[:, None]
    tl.store(Out + base + offs_m[:, None] * stride_m + offs_d[None, :], acc.to(Out.type.element_ty), mask=q_mask)


def hd80_inputs(p, rng):
    BH, L, D = p["BH"], p["L"], p["D"]
    return {"q": randn(rng, (BH, L, D), "float16"), "k": randn(rng, (BH, L, D), "float16"),
            "v": randn(rng, (BH, L, D), "float16")}


def hd80_ref(p, x):
    D = p["D"]

    def one(h):
        s = x["q"][h].astype(np.float64) @ x["k"][h].astype(np.float64).T / np.sqrt(D)
        e = np.exp(s - s.max(axis=1, keepdims=True))
        return (e @ x["v"][h].astype(np.float64)) / e.sum(axis=1, keepdims=True)
    return {"o": np.stack(pmap(one, p["BH"]))}


def hd80_launch(p, a, m):
    BH, L, D = p["BH"], p["L"], p["D"]
    return (cdiv(L, m["BLOCK_M"]), BH), [a["q"], a["k"], a["v"], a["o"], L, L * D, D, 1.0 / float(np.sqrt(D))]


# --- 2. Hamming distances of packed binary codes by popcount --------------------------------------------------------
@triton.jit
def hamming_popc_kernel(X, Y, Dist, M, N, W, stride_xm, stride_yn, stride_dm, BLOCK_M: tl.constexpr,
                        BLOCK_N: tl.constexpr):
    # Dist[m, n] = popcount(X[m] ^ Y[n]) over W uint32 words
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask_m = offs_m < M
    mask_n = offs_n < N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.int32)
    for w in range(0, W):
        x = tl.load(X + offs_m * stride_xm + w, mask=mask_m, other=0)
        y = tl.load(Y + offs_n * stride_yn + w, mask=mask_n, other=0)
        z = x[:, None] ^ y[None, :]
        acc += libdevice.popc(z.to(tl.int32, bitcast=True))
    tl.store(Dist + offs_m[:, None] * stride_dm + offs_n[None, :], acc, mask=mask_m[:, None] & mask_n[None, :])


def ham_inputs(p, rng):
    M, N, W = p["M"], p["N"], p["W"]
    x = rng.integers(0, 2 ** 32, (M, W), dtype=np.uint32)
    y = rng.integers(0, 2 ** 32, (N, W), dtype=np.uint32)
    y[: min(N, M) // 3] = x[: min(N, M) // 3]  # some exact matches (distance 0)
    y[0, 0] ^= np.uint32(0x80000001)  # near matches: the sign bit and bit 0 flipped
    return {"x": x, "y": y}


def ham_ref(p, x):
    a = x["x"].astype(np.uint32)
    b = x["y"].astype(np.uint32)
    M = p["M"]
    step = 32  # rows per chunk: the (rows, N, W) XOR temporary stays small on every thread

    def one(i):
        blk = a[i * step:(i + 1) * step]
        return np.bitwise_count(blk[:, None, :] ^ b[None, :, :]).sum(axis=2, dtype=np.int64)
    return {"d": np.concatenate(pmap(one, cdiv(M, step))).astype(np.float64)}


def ham_launch(p, a, m):
    M, N, W = p["M"], p["N"], p["W"]
    return (cdiv(M, m["BLOCK_M"]), cdiv(N, m["BLOCK_N"])), [a["x"], a["y"], a["d"], M, N, W, W, W, N]


# --- 3. NF4 (QLoRA) dequantizing GEMV ------------------------------------------------------------------------------
NF4 = np.array([-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635,
                -0.18477343022823334, -0.09105003625154495, 0.0, 0.07958029955625534, 0.16093020141124725,
                0.24611230194568634, 0.33791524171829224, 0.44070982933044434, 0.5626170039176941,
                0.7229568362236023, 1.0], np.float32)


@triton.jit
def nf4_gemv_kernel(X, Wq, Absmax, Code, Y, N, K, stride_xb, stride_yb, BLOCKSIZE: tl.constexpr,
                    BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # Y[b, n] = sum_k code[q[n, k]] * absmax[n, k // BLOCKSIZE] * X[b, k]; q packed two per byte, high nibble first
    tl.static_assert(BLOCK_K % BLOCKSIZE == 0)
    NB: tl.constexpr = BLOCK_K // BLOCKSIZE
    pid_n = tl.program_id(0)
    pid_b = tl.program_id(1)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    n_mask = rn < N
    rbyte = tl.arange(0, BLOCK_K // 2)
    rk = tl.arange(0, BLOCK_K)
    rblk = tl.arange(0, NB)
    half_k = K // 2
    n_blocks = K // BLOCKSIZE
    w_row = Wq + rn.to(tl.int64)[:, None] * half_k
    s_row = Absmax + rn[:, None] * n_blocks
    x_row = X + pid_b * stride_xb
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        packed = tl.load(w_row + (k0 // 2 + rbyte)[None, :], mask=n_mask[:, None], other=0)
        hi = tl.load(Code + (packed >> 4))
        lo = tl.load(Code + (packed & 0xF))
        w = tl.interleave(hi, lo)  # [BLOCK_N, BLOCK_K]: column 2j from byte j's high nibble, 2j + 1 from its low
        x = tl.load(x_row + k0 + rk, mask=k0 + rk < K, other=0.0).to(tl.float32)
        part = tl.sum(tl.reshape(w * x[None, :], (BLOCK_N, NB, BLOCKSIZE)), axis=2)
        s = tl.load(s_row + (k0 // BLOCKSIZE + rblk)[None, :], mask=n_mask[:, None], other=0.0)
        acc += tl.sum(part * s, axis=1)
    tl.store(Y + pid_b * stride_yb + rn, acc.to(tl.bfloat16), mask=n_mask)


def nf4_inputs(p, rng):
    B, N, K, bs = p["B"], p["N"], p["K"], p["blocksize"]
    return {"x": randn(rng, (B, K), "bfloat16"), "wq": rng.integers(0, 256, (N, K // 2), dtype=np.uint8),
            "absmax": uniform(rng, (N, K // bs), 0.01, 0.05), "code": NF4.copy()}


def nf4_ref(p, x):
    N, K, bs = p["N"], p["K"], p["blocksize"]
    code = x["code"].astype(np.float64)
    wq = x["wq"].astype(np.int64)
    xb = x["x"].astype(np.float64)
    step = max(1, cdiv(N, 64))

    def one(i):
        q = wq[i * step:(i + 1) * step]
        idx = np.empty((q.shape[0], K), np.int64)
        idx[:, 0::2] = q >> 4
        idx[:, 1::2] = q & 0xF
        w = code[idx] * np.repeat(x["absmax"][i * step:(i + 1) * step].astype(np.float64), bs, axis=1)
        return w @ xb.T
    return {"y": np.concatenate(pmap(one, cdiv(N, step))).T}


def nf4_launch(p, a, m):
    B, N, K = p["B"], p["N"], p["K"]
    return (cdiv(N, m["BLOCK_N"]), B), [a["x"], a["wq"], a["absmax"], a["code"], a["y"], N, K, K, N]


# --- 4. scale + column bias with int64 offsets ---------------------------------------------------------------------
@triton.jit
def scale_bias_i64_kernel(X, Bias, Y, R, C, stride_xr, stride_yr, scale, BLOCK: tl.constexpr):
    # Y[r, c] = X[r, c] * scale + bias[c]; X a strided view (row stride > C), every index computed in int64
    pid = tl.program_id(0).to(tl.int64)
    n_elements = R.to(tl.int64) * C
    sx = stride_xr.to(tl.int64)
    sy = stride_yr.to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    row = offs // C
    col = offs % C
    x = tl.load(X + row * sx + col, mask=mask, other=0.0)
    b = tl.load(Bias + col, mask=mask, other=0.0)
    y = x.to(tl.float32) * scale + b
    tl.store(Y + row * sy + col, y.to(tl.float16), mask=mask)


def sb_inputs(p, rng):
    R, C, ld = p["R"], p["C"], p["ldx"]
    return {"x": randn(rng, (R, ld), "float16", 2.0), "bias": randn(rng, (C,), "float32", 0.5)}


def sb_ref(p, x):
    C = p["C"]
    return {"y": x["x"][:, :C] * p["scale"] + x["bias"][None, :]}


def sb_launch(p, a, m):
    R, C = p["R"], p["C"]
    return (cdiv(R * C, m["BLOCK"]),), [a["x"], a["bias"], a["y"], R, C, p["ldx"], C, p["scale"]]


# --- 5. reverse cumulative sums per row: inclusive and exclusive suffix sums ------------------------------------------
@triton.jit
def suffix_sum_kernel(X, S, E, R, N, stride_r, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < R) & (cols[None, :] < N)
    offs = rows[:, None] * stride_r + cols[None, :]
    x = tl.load(X + offs, mask=mask, other=0.0)
    s = tl.cumsum(x, axis=1, reverse=True)
    tl.store(S + offs, s, mask=mask)
    tl.store(E + offs, s - x, mask=mask)


def ss_inputs(p, rng):
    return {"x": uniform(rng, (p["R"], p["N"]), -0.5, 1.5)}


def ss_ref(p, x):
    a = x["x"]
    s = np.cumsum(a[:, ::-1], axis=1)[:, ::-1]
    return {"s": s, "e": s - a}


def ss_launch(p, a, m):
    R, N = p["R"], p["N"]
    return (cdiv(R, m["BLOCK_M"]),), [a["x"], a["s"], a["e"], R, N, N]


# --- 6. per-row argsort through packed int64 keys --------------------------------------------------------------------
@triton.jit
def argsort_packed_kernel(X, Idx, Vals, R, stride_r, N: tl.constexpr, BLOCK_M: tl.constexpr):
    # key = (order-preserving int32 bits of x) << 32 | column: one ascending sort gives the stable argsort
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, N)
    rmask = rows[:, None] < R
    offs = rows[:, None].to(tl.int64) * stride_r + cols[None, :]
    x = tl.load(X + offs, mask=rmask, other=0.0)
    bits = x.to(tl.int32, bitcast=True)
    skey = bits ^ ((bits >> 31) & 0x7FFFFFFF)
    key = (skey.to(tl.int64) << 32) | cols[None, :].to(tl.int64)
    key = tl.sort(key, dim=1)
    idx = (key & 0xFFFFFFFF).to(tl.int32)
    sk = (key >> 32).to(tl.int32)
    vbits = sk ^ ((sk >> 31) & 0x7FFFFFFF)
    tl.store(Idx + offs, idx, mask=rmask)
    tl.store(Vals + offs, vbits.to(tl.float32, bitcast=True), mask=rmask)


def as_inputs(p, rng):
    R, N = p["R"], p["N"]
    x = randn(rng, (R, N), "float32")
    # exact ties in some rows (the packed column makes the sort stable: they keep their column order)
    x[::5, 7] = x[::5, 3]
    x[::5, N - 1] = x[::5, 3]
    return {"x": x}


def as_ref(p, x):
    a = x["x"]
    idx = np.argsort(a, axis=1, kind="stable")
    return {"idx": idx.astype(np.float64), "vals": np.take_along_axis(a, idx, axis=1)}


def as_launch(p, a, m):
    R, N = p["R"], p["N"]
    return (cdiv(R, m["BLOCK_M"]),), [a["x"], a["idx"], a["vals"], R, N]


# --- 7. decode attention over an int8 KV cache with per-token scales --------------------------------------------------
@triton.jit
def kv_int8_decode_kernel(Q, K, V, KScale, VScale, SeqLens, Out, H, max_len, sm_scale, D: tl.constexpr,
                          BLOCK_N: tl.constexpr):
    # one program per (batch, head): q [B * H, D] fp16, K / V [B * H, max_len, D] int8, scales [B * H, max_len]
    bh = tl.program_id(0)
    b = bh // H
    seq_len = tl.load(SeqLens + b)
    d = tl.arange(0, D)
    q = tl.load(Q + bh * D + d).to(tl.float32)
    kv_base = bh.to(tl.int64) * max_len * D
    s_base = bh.to(tl.int64) * max_len
    m_i = tl.full([], float("-inf"), dtype=tl.float32)
    l_i = tl.full([], 0.0, dtype=tl.float32)
    acc = tl.zeros([D], dtype=tl.float32)
    for start in range(0, seq_len, BLOCK_N):
        n = start + tl.arange(0, BLOCK_N)
        live = n < seq_len
        k = tl.load(K + kv_base + n[:, None] * D + d[None, :], mask=live[:, None], other=0)
        k_scale = tl.load(KScale + s_base + n, mask=live, other=0.0)
        s = tl.sum(q[None, :] * k.to(tl.float32), 1) * k_scale * sm_scale
        s = tl.where(live, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 0))
        alpha = tl.exp(m_i - m_new)
        p = tl.exp(s - m_new)
        l_i = l_i * alpha + tl.sum(p, 0)
        v = tl.load(V + kv_base + n[:, None] * D + d[None, :], mask=live[:, None], other=0)
        v_scale = tl.load(VScale + s_base + n, mask=live, other=0.0)
        acc = acc * alpha + tl.sum(p[:, None] * v.to(tl.float32) * v_scale[:, None], 0)
        m_i = m_new
    tl.store(Out + bh * D + d, (acc / l_i).to(tl.float16))


def kv8_inputs(p, rng):
    B, H, L, D = p["B"], p["H"], p["L"], p["D"]
    lens = rng.integers(p["Lmin"], L + 1, B).astype(np.int32)
    lens[0] = 1  # a one-token sequence
    if B > 1:
        lens[1] = L  # a full one
    return {"q": randn(rng, (B * H, D), "float16"),
            "k": rng.integers(-127, 128, (B * H, L, D), dtype=np.int8),
            "v": rng.integers(-127, 128, (B * H, L, D), dtype=np.int8),
            "k_scale": uniform(rng, (B * H, L), 0.005, 0.02), "v_scale": uniform(rng, (B * H, L), 0.005, 0.02),
            "lens": lens}


def kv8_ref(p, x):
    B, H, D = p["B"], p["H"], p["D"]
    scale = 1.0 / np.sqrt(D)

    def one(bh):
        n = int(x["lens"][bh // H])
        k = x["k"][bh, :n] * x["k_scale"][bh, :n, None]
        v = x["v"][bh, :n] * x["v_scale"][bh, :n, None]
        s = k @ x["q"][bh] * scale
        e = np.exp(s - s.max())
        return e @ v / e.sum()
    return {"o": np.stack(pmap(one, B * H))}


def kv8_launch(p, a, m):
    B, H, L, D = p["B"], p["H"], p["L"], p["D"]
    return (B * H,), [a["q"], a["k"], a["v"], a["k_scale"], a["v_scale"], a["lens"], a["o"], H, L,
                      1.0 / float(np.sqrt(D))]


# --- 8. two-pass online softmax over a long row --------------------------------------------------------------------
@triton.jit
def softmax_online_2pass_kernel(X, Y, N, stride_x, stride_y, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = X + row * stride_x
    y_row = Y + row * stride_y
    m = tl.full([BLOCK], float("-inf"), dtype=tl.float32)
    d = tl.zeros([BLOCK], dtype=tl.float32)
    # pass 1: per-lane running max and normalizer
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < N, other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m, x)
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)  # lanes that have only seen the padding
        d = d * tl.exp(m - m_safe) + tl.exp(x - m_safe)
        m = m_new
    m_row = tl.max(m, 0)
    d_row = tl.sum(d * tl.exp(m - m_row), 0)
    inv = 1.0 / d_row
    # pass 2: normalized exponentials
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < N
        x = tl.load(x_row + cols, mask=mask, other=-float("inf")).to(tl.float32)
        tl.store(y_row + cols, (tl.exp(x - m_row) * inv).to(tl.float16), mask=mask)


def osm_inputs(p, rng):
    return {"x": randn(rng, (p["R"], p["N"]), "float16", 2.0)}


def osm_ref(p, x):
    def one(i):
        a = x["x"][i]
        e = np.exp(a - a.max())
        return e / e.sum()
    return {"y": np.stack(pmap(one, p["R"]))}


def osm_launch(p, a, m):
    R, N = p["R"], p["N"]
    return (R,), [a["x"], a["y"], N, N, N]


CASES = [
    Case("attn_hd80_dmask_f16", attn_hd80_kernel, hd80_inputs,
         lambda p: {"o": ((p["BH"], p["L"], p["D"]), "float16")}, hd80_ref, hd80_launch,
         gpu={"BH": 32, "L": 4000, "D": 80}, ci={"BH": 2, "L": 45, "D": 80},
         meta={"HEAD_DIM": 80, "BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_D": 128, "num_warps": 8, "num_stages": 3},
         ci_meta={"HEAD_DIM": 80, "BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_D": 128, "num_warps": 1, "num_stages": 2},
         # P is rounded to fp16 before the PV product (as every flash kernel does): ~1e-3 relative on top of the
         # output's own fp16 rounding
         tol={"float16": (1e-2, 2e-3)}, flops=lambda p: 4.0 * p["BH"] * p["L"] * p["L"] * p["D"],
         bytes=lambda p: 8.0 * p["BH"] * p["L"] * p["D"],
         idiom="flash-attention forward with HEAD_DIM = 80: tl.arange(0, BLOCK_D = 128) and an offs_d < HEAD_DIM "
               "mask on Q / K / V loads and the output store, L masked (not a multiple of BLOCK_N), qk scale a "
               "float argument folded with log2 e, tl.math.exp2, tl.dot(p, v, acc), Out.type.element_ty"),
    Case("hamming_popc_u32", hamming_popc_kernel, ham_inputs, lambda p: {"d": ((p["M"], p["N"]), "int32")},
         ham_ref, ham_launch,
         gpu={"M": 8192, "N": 8192, "W": 16}, ci={"M": 37, "N": 45, "W": 4},
         meta={"BLOCK_M": 64, "BLOCK_N": 64, "num_warps": 4}, ci_meta={"BLOCK_M": 16, "BLOCK_N": 32, "num_warps": 2},
         flops=lambda p: 3.0 * p["M"] * p["N"] * p["W"],
         bytes=lambda p: 4.0 * (p["M"] * p["N"] + (p["M"] + p["N"]) * p["W"]),
         idiom="binary-embedding Hamming search: uint32 code words, x[:, None] ^ y[None, :] bitcast to int32, "
               "libdevice.popc accumulated into an int32 (BLOCK_M, BLOCK_N) tile over a runtime word loop"),
    Case("nf4_dequant_gemv_bf16", nf4_gemv_kernel, nf4_inputs, lambda p: {"y": ((p["B"], p["N"]), "bfloat16")},
         nf4_ref, nf4_launch,
         gpu={"B": 2, "N": 32768, "K": 8192, "blocksize": 64}, ci={"B": 2, "N": 37, "K": 384, "blocksize": 64},
         meta={"BLOCKSIZE": 64, "BLOCK_N": 32, "BLOCK_K": 256, "num_warps": 4},
         ci_meta={"BLOCKSIZE": 64, "BLOCK_N": 16, "BLOCK_K": 128, "num_warps": 2},
         flops=lambda p: 2.0 * p["B"] * p["N"] * p["K"],
         bytes=lambda p: 0.5 * p["N"] * p["K"] + 4.0 * p["N"] * p["K"] / p["blocksize"],
         idiom="QLoRA NF4 GEMV: two 4-bit codes per uint8 split by >> 4 and & 0xF, a 16-entry float32 codebook "
               "gathered by tl.load(code + nibble), tl.interleave(hi, lo) back to K order, each 64-value block's "
               "partial dot by tl.reshape + tl.sum then times its absmax, bf16 activations, one token per grid row"),
    Case("int64_pid_offsets_scale_f16", scale_bias_i64_kernel, sb_inputs,
         lambda p: {"y": ((p["R"], p["C"]), "float16")}, sb_ref, sb_launch,
         gpu={"R": 8192, "C": 12289, "ldx": 12352, "scale": 0.75}, ci={"R": 37, "C": 301, "ldx": 320, "scale": 0.75},
         meta={"BLOCK": 1024, "num_warps": 4}, ci_meta={"BLOCK": 256, "num_warps": 2},
         flops=lambda p: 2.0 * p["R"] * p["C"], bytes=lambda p: 4.0 * p["R"] * p["C"],
         idiom="overflow-safe elementwise: pid = tl.program_id(0).to(tl.int64), n_elements = R.to(tl.int64) * C, "
               "strides promoted by .to(tl.int64), row / col = offs // C, offs % C on a flat int64 offset, a "
               "strided source view, per-column fp32 bias, float scale argument"),
    Case("cumsum_reverse_rows_f32", suffix_sum_kernel, ss_inputs,
         lambda p: {"s": ((p["R"], p["N"]), "float32"), "e": ((p["R"], p["N"]), "float32")}, ss_ref, ss_launch,
         gpu={"R": 32768, "N": 1000}, ci={"R": 13, "N": 200},
         meta={"BLOCK_M": 4, "BLOCK_N": 1024, "num_warps": 4}, ci_meta={"BLOCK_M": 4, "BLOCK_N": 256, "num_warps": 2},
         flops=lambda p: 2.0 * p["R"] * p["N"], bytes=lambda p: 12.0 * p["R"] * p["N"],
         idiom="suffix sums per row by tl.cumsum(x, axis=1, reverse=True) over a masked (BLOCK_M, BLOCK_N) tile, "
               "the exclusive reverse scan as s - x, two outputs"),
    Case("argsort_packed_keys_i64", argsort_packed_kernel, as_inputs,
         lambda p: {"idx": ((p["R"], p["N"]), "int32"), "vals": ((p["R"], p["N"]), "float32")}, as_ref, as_launch,
         gpu={"R": 65536, "N": 512}, ci={"R": 13, "N": 256},
         meta={"N": 512, "BLOCK_M": 4, "num_warps": 4}, ci_meta={"N": 256, "BLOCK_M": 2, "num_warps": 2},
         # the values are bit patterns moved through the key, so exact
         tol={"float32": (0.0, 0.0)},
         flops=lambda p: 1.0 * p["R"] * p["N"] * np.log2(p["N"]) ** 2 / 2, bytes=lambda p: 12.0 * p["R"] * p["N"],
         idiom="argsort by packed int64 keys: float bits made order-preserving by bits ^ ((bits >> 31) & "
               "0x7FFFFFFF), shifted << 32 and OR'd with the column, tl.sort(key, dim=1), index = (key & "
               "0xFFFFFFFF).to(tl.int32), values unpacked by the inverse bit flip and a bitcast"),
    Case("kv_int8_decode_attn_f16", kv_int8_decode_kernel, kv8_inputs,
         lambda p: {"o": ((p["B"] * p["H"], p["D"]), "float16")}, kv8_ref, kv8_launch,
         gpu={"B": 16, "H": 32, "L": 4096, "Lmin": 1024, "D": 128},
         ci={"B": 3, "H": 2, "L": 70, "Lmin": 20, "D": 128},
         meta={"D": 128, "BLOCK_N": 64, "num_warps": 4}, ci_meta={"D": 128, "BLOCK_N": 16, "num_warps": 2},
         flops=lambda p: 4.0 * p["B"] * p["H"] * (p["L"] + p["Lmin"]) / 2 * p["D"],
         bytes=lambda p: 2.0 * p["B"] * p["H"] * (p["L"] + p["Lmin"]) / 2 * (p["D"] + 4),
         idiom="single-token decode attention over an int8 KV cache: per-token float32 k / v scales, ragged "
               "sequence lengths loaded at run time as the loop bound, scores by tl.sum(q[None, :] * k, 1) "
               "(no tl.dot), 0-d tl.full online-softmax state, fp16 out"),
    Case("online_softmax_2pass_looped_f16", softmax_online_2pass_kernel, osm_inputs,
         lambda p: {"y": ((p["R"], p["N"]), "float16")}, osm_ref, osm_launch,
         gpu={"R": 2048, "N": 32775}, ci={"R": 5, "N": 1031},
         meta={"BLOCK": 2048, "num_warps": 8}, ci_meta={"BLOCK": 256, "num_warps": 4},
         flops=lambda p: 6.0 * p["R"] * p["N"], bytes=lambda p: 6.0 * p["R"] * p["N"],
         idiom="online softmax (Milakov & Gimelshein) over a long row: a per-lane running max and normalizer "
               "d = d * exp(m - m_new) + exp(x - m_new) in a column loop, combined by tl.max / tl.sum after it, "
               "a second pass writing exp(x - m) / d, masked tail read as -inf"),
]
