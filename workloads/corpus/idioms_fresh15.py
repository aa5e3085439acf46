"""Eight more kernels from inference and training stacks, as Triton users write them. Speculative-decoding rejection
sampling: per request, the K draft tokens' draft and target probabilities gathered from [B, K, V] / [B, K + 1, V]
fp32 rows by the int32 token ids, a token rejected when u * p_draft > p_target, the first rejection found by
tl.argmax over the boolean vector (the accepted prefix by tl.cumsum of the rejections == 0), and, when a draft token
was rejected, the recovered token drawn from the residual max(p_target - p_draft, 0) by the exponential trick
(argmax of residual / E over the 128256-wide row in a runtime chunk loop, tl.max with return_indices, carried
scalars updated by tl.where), the [K + 1] output row written by nested tl.where (drafts, then the recovered or bonus
token, then -1). A paged KV-cache gather into contiguous buffers (vLLM's gather_and_maybe_dequant_cache for chunked
prefill): per (request, token block) an int32 block table read as a vector through t // PAGE (two-level indexing),
float8_e4m3fn cache pages [pages, PAGE, H, D] loaded as a 3-D [BLOCK_T, H, D] tile, dequantized by one fp32 scale
per KV head broadcast [None, :, None], written as bf16 at the request's cu_seqlens offset, blocks past the length
leaving by an early return. A LoRA SGMV shrink: tokens grouped by adapter through a sorted token index and per-adapter
offsets, the program's adapter from program_id(1), x rows gathered through the index, the adapter's [R = 16, K]
A read transposed, tl.dot into a [BLOCK_M, 16] accumulator over a split-K loop (a start of pid_k * BLOCK_K, a step
of SPLIT_K * BLOCK_K), scaled and added by a relaxed tl.atomic_add at the token rows. A multi-tensor LAMB step: one
program per tensor of a flat parameter list (int32 offsets, sizes not powers of two), a first runtime pass recomputing
the Adam update to accumulate ||w||^2 and ||u||^2 in vector accumulators, the trust ratio ||w|| / ||u|| (1 when
either is zero), a second pass writing weights, moments (bf16 gradients, fp32 state). A grouped 1-D convolution as
im2col in registers + tl.dot (wav2vec2's positional convolution: 768 channels, 16 groups, 128 taps, padding 64,
the last output dropped): the [BLOCK_L, BLOCK_C * BLOCK_KW] column tile gathered by one 2-D masked load whose
column index is split into (channel, tap) by // and %, the weight tile [BLOCK_C * BLOCK_KW, 64] (48 output channels
masked), two nested loops with constexpr bounds, bias and erf GELU, stored channel-major through a transposed
pointer tile. An int8 weight-only GEMM with per-output-channel scales: the int8 [N, K] weight converted by .to(
tl.float16) straight into tl.dot, the scale and bias applied after the K loop, offsets wrapped by % and hinted by
tl.max_contiguous(tl.multiple_of(...)), M = 77 tokens. RetNet chunkwise retention for several heads per program:
[C, HB * D] bf16 slices of token-major [B, T, H, D] tensors reshaped to [C, HB, D] and permuted to [HB, C, D],
batched 3-D tl.dot for q k^T, (scores * decay) v, q S and k^T v, per-head decays from a [HB] vector broadcast over
[HB, C, C], the [HB, D, D] fp32 state loaded from a cache at the start and stored at the end, the last chunk partial
(T = 2000). A fused GPT-J-style RoPE + KV-cache write (ChatGLM's layout: 32 query heads, 2 KV heads, rotary on the
first 64 of 128 dims): per token q and k tiles reshaped to [H, D / 2, 2] and tl.split into even / odd lanes, rotated
with cos / sin loaded masked (cos 1, sin 0 past the rotary pairs) and put back by tl.join + reshape; q stored, k and
v written into the paged cache at the int64 slot, padding tokens (slot -1) skipped by a scalar if.
"""
import numpy as np
import triton
import triton.language as tl

from workloads.corpus._case import Case, cdiv, erf, pmap, randn, uniform
from workloads.corpus.idioms_infer import E4M3, e4m3_bytes
from workloads.corpus.idioms_quant import as_e4m3


# --- 1. speculative decoding: rejection sampling of draft tokens -----------------------------------------------------
@triton.jit
def spec_rejection_sample_kernel(DraftIds, DraftProbs, TargetProbs, Uniform, InvExp, BonusIds, OutIds, NumAccepted,
                                 V, K: tl.constexpr, BLOCK_K: tl.constexpr, BLOCK_V: tl.constexpr):
    # request b: K draft tokens; DraftProbs [B, K, V], TargetProbs [B, K + 1, V] fp32; OutIds [B, K + 1] int32
    b = tl.program_id(0)
    kk = tl.arange(0, BLOCK_K)
    kmask = kk < K
    tok = tl.load(DraftIds + b * K + kk, mask=kmask, other=0)
    p_d = tl.load(DraftProbs + (b * K + kk).to(tl.int64) * V + tok, mask=kmask, other=1.0)
    p_t = tl.load(TargetProbs + (b * (K + 1) + kk).to(tl.int64) * V + tok, mask=kmask, other=1.0)
    u = tl.load(Uniform + b * K + kk, mask=kmask, other=0.0)
    rejected = (u * p_d > p_t) & kmask  # accepted while u < p_target / p_draft
    accepted_prefix = tl.cumsum(rejected.to(tl.int32), axis=0) == 0
    first = tl.argmax(rejected, axis=0)  # the first rejection (0 when there is none)
    n_acc = tl.where(tl.sum(rejected.to(tl.int32), axis=0) > 0, first, K)
    rec = tl.load(BonusIds + b)
    if n_acc < K:
        # recovered token ~ max(p_target - p_draft, 0): argmax of residual / E, E ~ Exp(1) given as 1 / E
        row_t = TargetProbs + (b * (K + 1) + n_acc).to(tl.int64) * V
        row_d = DraftProbs + (b * K + n_acc).to(tl.int64) * V
        row_e = InvExp + b.to(tl.int64) * V
        offs = tl.arange(0, BLOCK_V)
        best = -1.0
        best_i = 0
        for v0 in range(0, V, BLOCK_V):
            v = v0 + offs
            vm = v < V
            pt = tl.load(row_t + v, mask=vm, other=0.0)
            pd = tl.load(row_d + v, mask=vm, other=0.0)
            e = tl.load(row_e + v, mask=vm, other=0.0)
            score = tl.where(vm, tl.maximum(pt - pd, 0.0) * e, -1.0)
            cmax, cidx = tl.max(score, axis=0, return_indices=True)
            take = cmax > best  # strict: an earlier chunk keeps a tie
            best_i = tl.where(take, v0 + cidx, best_i)
            best = tl.maximum(best, cmax)
        rec = best_i
    out = tl.where(accepted_prefix & kmask, tok, tl.where(kk == n_acc, rec, -1))
    tl.store(OutIds + b * (K + 1) + kk, out, mask=kk < K + 1)
    tl.store(NumAccepted + b, n_acc)


def spec_inputs(p, rng):
    B, K, V = p["B"], p["K"], p["V"]
    pd = uniform(rng, (B, K, V), 0.05, 1.0)
    pt = uniform(rng, (B, K + 1, V), 0.02, 1.0)
    u = uniform(rng, (B, K), 0.2, 1.0)
    u[::4] *= np.float32(1e-3)  # every fourth request accepts all its drafts (the bonus token follows)
    u[u == 0] = np.float32(1e-7)
    return {"draft_ids": rng.integers(0, V, (B, K)).astype(np.int32), "draft_probs": pd, "target_probs": pt,
            "u": u, "inv_exp": (1.0 / rng.exponential(1.0, (B, V))).astype(np.float32),
            "bonus": rng.integers(0, V, B).astype(np.int32)}


def spec_ref(p, x):
    # the float32 decisions the kernel makes (one product and a compare; a difference, a max and a product), exactly
    B, K = p["B"], p["K"]
    tok = x["draft_ids"].astype(np.int64)
    pd = x["draft_probs"].astype(np.float32)
    pt = x["target_probs"].astype(np.float32)
    e = x["inv_exp"].astype(np.float32)
    u = x["u"].astype(np.float32)
    out = np.full((B, K + 1), -1, np.int64)
    nacc = np.zeros(B, np.int64)
    for b in range(B):
        rej = u[b] * pd[b, np.arange(K), tok[b]] > pt[b, np.arange(K), tok[b]]
        n = int(np.argmax(rej)) if rej.any() else K
        out[b, :n] = tok[b, :n]
        if n < K:
            out[b, n] = int(np.argmax(np.maximum(pt[b, n] - pd[b, n], np.float32(0)) * e[b]))
        else:
            out[b, n] = int(x["bonus"][b])
        nacc[b] = n
    return {"out_ids": out.astype(np.float64), "num_accepted": nacc.astype(np.float64)}


def spec_launch(p, a, m):
    assert m["K"] == p["K"] and m["BLOCK_K"] >= p["K"] + 1
    return (p["B"],), [a["draft_ids"], a["draft_probs"], a["target_probs"], a["u"], a["inv_exp"], a["bonus"],
                       a["out_ids"], a["num_accepted"], p["V"]]


# --- 2. paged KV-cache gather into contiguous buffers, fp8 pages dequantized per KV head ------------------------------
@triton.jit
def paged_kv_gather_fp8_kernel(KCache, VCache, KScale, VScale, BlockTable, CuSeqLens, KOut, VOut, stride_bt,
                               H: tl.constexpr, D: tl.constexpr, PAGE: tl.constexpr, BLOCK_T: tl.constexpr):
    # caches [pages, PAGE, H, D] e4m3; request b's token t lives in page BlockTable[b, t // PAGE], slot t % PAGE;
    # KOut / VOut [total_tokens, H, D] bf16, request b's rows from CuSeqLens[b]
    pid_t = tl.program_id(0)
    b = tl.program_id(1)
    start = tl.load(CuSeqLens + b)
    seq_len = tl.load(CuSeqLens + b + 1) - start
    if pid_t * BLOCK_T >= seq_len:
        return
    t = pid_t * BLOCK_T + tl.arange(0, BLOCK_T)
    tmask = t < seq_len
    page = tl.load(BlockTable + b * stride_bt + t // PAGE, mask=tmask, other=0)
    slot = page.to(tl.int64) * PAGE + t % PAGE
    h = tl.arange(0, H)[None, :, None]
    d = tl.arange(0, D)[None, None, :]
    hd = h * D + d
    m3 = tmask[:, None, None]
    src = slot[:, None, None] * (H * D) + hd
    dst = (start + t)[:, None, None].to(tl.int64) * (H * D) + hd
    ks = tl.load(KScale + tl.arange(0, H))[None, :, None]
    vs = tl.load(VScale + tl.arange(0, H))[None, :, None]
    k = tl.load(KCache + src, mask=m3, other=0.0).to(tl.float32) * ks
    tl.store(KOut + dst, k.to(KOut.dtype.element_ty), mask=m3)
    v = tl.load(VCache + src, mask=m3, other=0.0).to(tl.float32) * vs
    tl.store(VOut + dst, v.to(VOut.dtype.element_ty), mask=m3)


def _gather_lens(p):
    rng = np.random.default_rng(p["B"] * 7919 + p["max_len"])  # the lengths are part of the problem size
    lens = rng.integers(1, p["max_len"] + 1, p["B"])
    lens[0] = p["max_len"]
    return lens


def pkv_inputs(p, rng):
    B, H, D, PAGE, ML = p["B"], p["H"], p["D"], p["page"], p["max_len"]
    lens = _gather_lens(p)
    max_pages = cdiv(ML, PAGE)
    need = sum(cdiv(int(n), PAGE) for n in lens)
    n_pages = need + 3
    perm = rng.permutation(n_pages)
    table = np.full((B, max_pages), -1, np.int32)
    used = 0
    for b in range(B):
        np_b = cdiv(int(lens[b]), PAGE)
        table[b, :np_b] = perm[used:used + np_b]
        used += np_b
    cu = np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)
    return {"k_cache": e4m3_bytes(randn(rng, (n_pages, PAGE, H, D), "float32", 100.0)),
            "v_cache": e4m3_bytes(randn(rng, (n_pages, PAGE, H, D), "float32", 100.0)),
            "k_scale": uniform(rng, (H,), 0.002, 0.02), "v_scale": uniform(rng, (H,), 0.002, 0.02),
            "block_table": table, "cu_seqlens": cu}


def pkv_ref(p, x):
    B, H, D, PAGE = p["B"], p["H"], p["D"], p["page"]
    lens = _gather_lens(p)
    table = x["block_table"].astype(np.int64)
    rows = np.concatenate([table[b, np.arange(n) // PAGE] * PAGE + np.arange(n) % PAGE for b, n in enumerate(lens)])
    kc = E4M3[x["k_cache"].astype(np.int64)].reshape(-1, H, D)
    vc = E4M3[x["v_cache"].astype(np.int64)].reshape(-1, H, D)
    return {"k_out": kc[rows] * x["k_scale"][None, :, None], "v_out": vc[rows] * x["v_scale"][None, :, None]}


def pkv_outputs(p):
    tot = int(_gather_lens(p).sum())
    return {"k_out": ((tot, p["H"], p["D"]), "bfloat16"), "v_out": ((tot, p["H"], p["D"]), "bfloat16")}


def pkv_launch(p, a, m):
    B, H, D, PAGE, ML = p["B"], p["H"], p["D"], p["page"], p["max_len"]
    assert (m["H"], m["D"], m["PAGE"]) == (H, D, PAGE)
    return (cdiv(ML, m["BLOCK_T"]), B), [as_e4m3(a["k_cache"]), as_e4m3(a["v_cache"]), a["k_scale"], a["v_scale"],
                                         a["block_table"], a["cu_seqlens"], a["k_out"], a["v_out"], cdiv(ML, PAGE)]


# --- 3. LoRA SGMV shrink: tokens grouped by adapter, split-K, atomic accumulation ---------------------------------------
@triton.jit
def lora_sgmv_shrink_kernel(X, LoraA, SortedTok, LoraOffsets, Out, K, scaling, stride_xt, stride_al, stride_ot,
                            R: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr, SPLIT_K: tl.constexpr):
    # Out[t, :] += scaling * X[t, :] @ A[l]^T for the tokens t = SortedTok[LoraOffsets[l]:LoraOffsets[l + 1]];
    # LoraA [L, R, K] bf16 (vLLM's lora_a_stacked), Out [T, R] fp32 zeroed by the caller
    pid_m = tl.program_id(0)
    lora = tl.program_id(1)
    pid_k = tl.program_id(2)
    start = tl.load(LoraOffsets + lora)
    n_tok = tl.load(LoraOffsets + lora + 1) - start
    if pid_m * BLOCK_M >= n_tok:
        return
    m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    mmask = m < n_tok
    tok = tl.load(SortedTok + start + m, mask=mmask, other=0)
    r = tl.arange(0, R)
    kk = tl.arange(0, BLOCK_K)
    x_ptr = X + tok[:, None].to(tl.int64) * stride_xt + kk[None, :]
    a_ptr = LoraA + lora.to(tl.int64) * stride_al + r[None, :] * K + kk[:, None]  # [BLOCK_K, R]: A[l] transposed
    acc = tl.zeros((BLOCK_M, R), dtype=tl.float32)
    for k0 in range(pid_k * BLOCK_K, K, SPLIT_K * BLOCK_K):
        kmask = k0 + kk < K
        x = tl.load(x_ptr + k0, mask=mmask[:, None] & kmask[None, :], other=0.0)
        a = tl.load(a_ptr + k0, mask=kmask[:, None], other=0.0)
        acc = tl.dot(x, a, acc)
    acc = acc * scaling
    tl.atomic_add(Out + tok[:, None].to(tl.int64) * stride_ot + r[None, :], acc, mask=mmask[:, None], sem="relaxed")


def lora_inputs(p, rng):
    T, K, R, L = p["T"], p["K"], p["R"], p["L"]
    w = rng.random(L + 1)
    w[1] = 0.0  # adapter 0 has no tokens
    w[3 % (L + 1)] *= 4.0  # one adapter takes most of the batch
    ids = rng.choice(np.arange(-1, L), T, p=w / w.sum()).astype(np.int32)  # -1: the base model, no LoRA
    order = np.argsort(ids, kind="stable")
    order = order[ids[order] >= 0].astype(np.int32)
    counts = np.bincount(ids[ids >= 0], minlength=L)
    return {"x": randn(rng, (T, K), "bfloat16"), "lora_a": randn(rng, (L, R, K), "bfloat16", 1.0 / np.sqrt(K)),
            "lora_ids": ids, "sorted_tok": order, "offsets": np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)}


def lora_ref(p, x):
    ids = x["lora_ids"].astype(np.int64)
    out = np.zeros((p["T"], p["R"]))
    for l in range(p["L"]):
        sel = ids == l
        out[sel] = x["x"][sel] @ x["lora_a"][l].T
    return {"out": out * p["scaling"]}


def lora_launch(p, a, m):
    T, K, R, L = p["T"], p["K"], p["R"], p["L"]
    assert m["R"] == R
    return (cdiv(T, m["BLOCK_M"]), L, m["SPLIT_K"]), [a["x"], a["lora_a"], a["sorted_tok"], a["offsets"], a["out"],
                                                      K, p["scaling"], K, R * K, R]


# --- 4. multi-tensor LAMB: one program per tensor, two passes, per-tensor trust ratio ------------------------------------
@triton.jit
def lamb_multi_tensor_kernel(W, G, Mom, Vel, WOut, MOut, VOut, Offsets, lr, beta1, beta2, eps, weight_decay, bc1, bc2,
                             BLOCK: tl.constexpr):
    # tensor i occupies [Offsets[i], Offsets[i + 1]) of the flat fp32 weights / moments and bf16 gradients
    i = tl.program_id(0)
    start = tl.load(Offsets + i)
    end = tl.load(Offsets + i + 1)
    offs = tl.arange(0, BLOCK)
    w_sq = tl.zeros([BLOCK], dtype=tl.float32)
    u_sq = tl.zeros([BLOCK], dtype=tl.float32)
    for s in range(start, end, BLOCK):
        idx = s + offs
        mask = idx < end
        w = tl.load(W + idx, mask=mask, other=0.0)
        g = tl.load(G + idx, mask=mask, other=0.0).to(tl.float32)
        m = beta1 * tl.load(Mom + idx, mask=mask, other=0.0) + (1.0 - beta1) * g
        v = beta2 * tl.load(Vel + idx, mask=mask, other=0.0) + (1.0 - beta2) * g * g
        u = (m / bc1) / (tl.sqrt(v / bc2) + eps) + weight_decay * w
        w_sq += w * w
        u_sq += u * u  # masked lanes: m = v = w = 0, so u = 0
    w_norm = tl.sqrt(tl.sum(w_sq, axis=0))
    u_norm = tl.sqrt(tl.sum(u_sq, axis=0))
    trust = tl.where((w_norm > 0.0) & (u_norm > 0.0), w_norm / u_norm, 1.0)
    step = lr * trust
    for s in range(start, end, BLOCK):
        idx = s + offs
        mask = idx < end
        w = tl.load(W + idx, mask=mask, other=0.0)
        g = tl.load(G + idx, mask=mask, other=0.0).to(tl.float32)
        m = beta1 * tl.load(Mom + idx, mask=mask, other=0.0) + (1.0 - beta1) * g
        v = beta2 * tl.load(Vel + idx, mask=mask, other=0.0) + (1.0 - beta2) * g * g
        u = (m / bc1) / (tl.sqrt(v / bc2) + eps) + weight_decay * w
        tl.store(MOut + idx, m, mask=mask)
        tl.store(VOut + idx, v, mask=mask)
        tl.store(WOut + idx, w - step * u, mask=mask)


def _lamb_sizes(p):
    rng = np.random.default_rng(p["NT"] * 31 + p["avg"])
    sizes = rng.integers(p["avg"] // 8, 2 * p["avg"], p["NT"])
    sizes[1] = 1 + p["avg"] // 100  # a bias-sized tensor
    return sizes


def lamb_inputs(p, rng):
    sizes = _lamb_sizes(p)
    n = int(sizes.sum())
    return {"w": randn(rng, (n,), "float32", 0.05), "g": randn(rng, (n,), "bfloat16", 0.01),
            "m": randn(rng, (n,), "float32", 0.003), "v": uniform(rng, (n,), 1e-6, 1e-4),
            "offsets": np.concatenate([[0], np.cumsum(sizes)]).astype(np.int32)}


def lamb_ref(p, x):
    b1, b2, eps, wd, lr, t = p["beta1"], p["beta2"], p["eps"], p["wd"], p["lr"], p["step"]
    g = x["g"]
    m = b1 * x["m"] + (1 - b1) * g
    v = b2 * x["v"] + (1 - b2) * g * g
    u = (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + eps) + wd * x["w"]
    off = x["offsets"].astype(np.int64)
    w = x["w"].copy()
    for a, b in zip(off[:-1], off[1:]):
        wn, un = np.linalg.norm(x["w"][a:b]), np.linalg.norm(u[a:b])
        tr = wn / un if wn > 0 and un > 0 else 1.0
        w[a:b] -= lr * tr * u[a:b]
    return {"w_out": w, "m_out": m, "v_out": v}


def lamb_outputs(p):
    n = int(_lamb_sizes(p).sum())
    return {"w_out": ((n,), "float32"), "m_out": ((n,), "float32"), "v_out": ((n,), "float32")}


def lamb_launch(p, a, m):
    b1, b2, t = p["beta1"], p["beta2"], p["step"]
    return (p["NT"],), [a["w"], a["g"], a["m"], a["v"], a["w_out"], a["m_out"], a["v_out"], a["offsets"], p["lr"], b1,
                        b2, p["eps"], p["wd"], 1 - b1 ** t, 1 - b2 ** t]


# --- 5. grouped conv1d (wav2vec2 positional conv) as im2col in registers + tl.dot ----------------------------------------
@triton.jit
def grouped_conv1d_im2col_kernel(X, Wt, Bias, Y, C, L, PAD, CPG: tl.constexpr, OPG: tl.constexpr, KW: tl.constexpr,
                                 BLOCK_L: tl.constexpr, BLOCK_O: tl.constexpr, BLOCK_C: tl.constexpr,
                                 BLOCK_KW: tl.constexpr):
    # Y[n, o, l] = gelu(bias[o] + sum_{c, k} Wt[o, c, k] X[n, g(o) CPG + c, l + k - PAD]); X, Y [N, C, L] fp16
    pid_l = tl.program_id(0)
    g = tl.program_id(1)
    n = tl.program_id(2)
    l = pid_l * BLOCK_L + tl.arange(0, BLOCK_L)
    o = tl.arange(0, BLOCK_O)
    omask = o < OPG
    j = tl.arange(0, BLOCK_C * BLOCK_KW)  # im2col column: (channel, tap)
    jc = j // BLOCK_KW
    jk = j % BLOCK_KW
    xb = X + n.to(tl.int64) * C * L + g * CPG * L
    wb = Wt + (g * OPG + o)[None, :] * (CPG * KW)
    acc = tl.zeros((BLOCK_L, BLOCK_O), dtype=tl.float32)
    for c0 in range(0, CPG, BLOCK_C):
        for k0 in range(0, KW, BLOCK_KW):
            c = c0 + jc
            k = k0 + jk
            jmask = (c < CPG) & (k < KW)
            pos = l[:, None] + k[None, :] - PAD
            cols = tl.load(xb + c[None, :] * L + pos, mask=jmask[None, :] & (pos >= 0) & (pos < L), other=0.0)
            w = tl.load(wb + (c * KW + k)[:, None], mask=jmask[:, None] & omask[None, :], other=0.0)
            acc = tl.dot(cols, w, acc)
    acc += tl.load(Bias + g * OPG + o, mask=omask, other=0.0)[None, :]
    y = 0.5 * acc * (1.0 + tl.erf(acc * 0.7071067811865476))
    yb = Y + n.to(tl.int64) * C * L
    tl.store(yb + (g * OPG + o)[None, :] * L + l[:, None], y.to(Y.dtype.element_ty),
             mask=omask[None, :] & (l < L)[:, None])


def conv_inputs(p, rng):
    N, C, L, G, KW = p["N"], p["C"], p["L"], p["G"], p["KW"]
    cpg = C // G
    return {"x": randn(rng, (N, C, L), "float16"), "w": randn(rng, (C, cpg, KW), "float16", 1.0 / np.sqrt(cpg * KW)),
            "bias": randn(rng, (C,), "float32", 0.1)}


def conv_ref(p, x):
    N, C, L, G, KW, PAD = p["N"], p["C"], p["L"], p["G"], p["KW"], p["pad"]
    cpg = C // G
    xp = np.pad(x["x"], ((0, 0), (0, 0), (PAD, PAD)))

    def one(i):
        n, g = divmod(i, G)
        cols = np.lib.stride_tricks.sliding_window_view(xp[n, g * cpg:(g + 1) * cpg], KW, axis=1)[:, :L]  # c, l, k
        wg = x["w"][g * cpg:(g + 1) * cpg]  # o, c, k
        return np.einsum("clk,ock->ol", cols, wg, optimize=True)
    y = np.stack(pmap(one, N * G)).reshape(N, C, L) + x["bias"][None, :, None]
    return {"y": 0.5 * y * (1.0 + erf(y / np.sqrt(2.0)))}


def conv_launch(p, a, m):
    N, C, L, G, KW = p["N"], p["C"], p["L"], p["G"], p["KW"]
    assert m["CPG"] == C // G and m["OPG"] == C // G and m["KW"] == KW and m["BLOCK_O"] >= C // G
    return (cdiv(L, m["BLOCK_L"]), G, N), [a["x"], a["w"], a["bias"], a["y"], C, L, p["pad"]]


# --- 6. int8 weight-only GEMM, per-output-channel scales after the loop -------------------------------------------------
@triton.jit
def w8a16_int8_perchannel_kernel(A, Wq, Scale, Bias, C, M, N, K, stride_am, stride_wn, stride_cm,
                                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # C = (A @ Wq^T) * scale[None, :] + bias; A [M, K] fp16, Wq [N, K] int8, scale / bias [N] fp32, C fp16
    pid_n = tl.program_id(0)
    pid_m = tl.program_id(1)
    rm = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    rn = tl.max_contiguous(tl.multiple_of((pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N, BLOCK_N), BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = A + rm[:, None] * stride_am + rk[None, :]
    w_ptrs = Wq + rn[None, :] * stride_wn + rk[:, None]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        kmask = rk < K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=kmask[None, :], other=0.0)
        w = tl.load(w_ptrs, mask=kmask[:, None], other=0)
        acc = tl.dot(a, w.to(tl.float16), acc)  # int8 -> fp16 is exact
        a_ptrs += BLOCK_K
        w_ptrs += BLOCK_K
    s = tl.load(Scale + rn)
    bias = tl.load(Bias + rn)
    c = acc * s[None, :] + bias[None, :]
    cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    tl.store(C + cm[:, None] * stride_cm + cn[None, :], c.to(C.dtype.element_ty), mask=(cm < M)[:, None] & (cn < N)[None, :])


def w8_inputs(p, rng):
    M, N, K = p["M"], p["N"], p["K"]
    q = rng.integers(-127, 128, (N, K), dtype=np.int64)
    q[q == 0] = 3
    return {"a": randn(rng, (M, K), "float16"), "wq": q.astype(np.int8),
            "scale": uniform(rng, (N,), 0.5, 1.5) / np.float32(127.0 * np.sqrt(K)), "bias": randn(rng, (N,), "float32", 0.1)}


def w8_ref(p, x):
    M = p["M"]
    step = max(1, cdiv(M, 8))
    acc = np.concatenate(pmap(lambda i: x["a"][i * step:(i + 1) * step] @ x["wq"].T, cdiv(M, step)))
    return {"c": acc * x["scale"][None, :] + x["bias"][None, :]}


def w8_launch(p, a, m):
    M, N, K = p["M"], p["N"], p["K"]
    return (cdiv(N, m["BLOCK_N"]), cdiv(M, m["BLOCK_M"])), [a["a"], a["wq"], a["scale"], a["bias"], a["c"], M, N, K, K,
                                                            K, N]


# --- 7. RetNet chunkwise retention, several heads per program through 3-D tl.dot ----------------------------------------
@triton.jit
def retnet_multihead_chunk_kernel(Q, K, V, Log2Gamma, S0, O, SFinal, T, scale, stride_b, stride_t,
                                  H: tl.constexpr, D: tl.constexpr, HB: tl.constexpr, C: tl.constexpr):
    # Q, K, V, O [B, T, H, D] bf16; S0, SFinal [B, H, D, D] fp32; head h decays by gamma_h = 2^Log2Gamma[h] per token
    hb = tl.program_id(0)
    b = tl.program_id(1)
    hh = hb * HB + tl.arange(0, HB)
    lg = tl.load(Log2Gamma + hh)  # [HB]
    i = tl.arange(0, C)
    col = tl.arange(0, HB * D)
    base = b.to(tl.int64) * stride_b + hb * (HB * D)
    causal = (i[:, None] >= i[None, :])[None, :, :]
    dist = (i[:, None] - i[None, :]).to(tl.float32)[None, :, :]
    decay = tl.where(causal, tl.exp2(tl.where(causal, dist, 0.0) * lg[:, None, None]), 0.0)  # [HB, C, C]
    q_dec = tl.exp2((i + 1).to(tl.float32)[None, :] * lg[:, None]) * scale  # [HB, C]
    d1 = tl.arange(0, D)
    s_off = ((b * H + hh).to(tl.int64) * D * D)[:, None, None] + (d1[:, None] * D + d1[None, :])[None, :, :]
    state = tl.load(S0 + s_off)  # [HB, D, D]
    for t0 in range(0, T, C):
        t = t0 + i
        tm = (t < T)[:, None]
        off = base + t[:, None].to(tl.int64) * stride_t + col[None, :]
        q = tl.permute(tl.reshape(tl.load(Q + off, mask=tm, other=0.0), [C, HB, D]), (1, 0, 2))  # [HB, C, D]
        k = tl.permute(tl.reshape(tl.load(K + off, mask=tm, other=0.0), [C, HB, D]), (1, 0, 2))
        v = tl.permute(tl.reshape(tl.load(V + off, mask=tm, other=0.0), [C, HB, D]), (1, 0, 2))
        s = tl.dot(q, tl.permute(k, (0, 2, 1))) * scale * decay  # [HB, C, C]
        o = tl.dot(s.to(q.dtype), v)
        o += tl.dot(q, state.to(q.dtype)) * q_dec[:, :, None]
        n = tl.minimum(T - t0, C)
        k_dec = tl.exp2((n - 1 - i).to(tl.float32)[None, :] * lg[:, None])  # gamma^(n - 1 - j); masked k rows are 0
        k_aged = (k.to(tl.float32) * k_dec[:, :, None]).to(q.dtype)
        state = tl.dot(tl.permute(k_aged, (0, 2, 1)), v, state * tl.exp2(lg * n.to(tl.float32))[:, None, None])
        o2 = tl.reshape(tl.permute(o, (1, 0, 2)), [C, HB * D])
        tl.store(O + off, o2.to(O.dtype.element_ty), mask=tm)
    tl.store(SFinal + s_off, state)


def ret_inputs(p, rng):
    B, T, H, D = p["B"], p["T"], p["H"], p["D"]
    return {"q": randn(rng, (B, T, H, D), "bfloat16"), "k": randn(rng, (B, T, H, D), "bfloat16"),
            "v": randn(rng, (B, T, H, D), "bfloat16"),
            "log2_gamma": np.log2(1.0 - 2.0 ** (-5.0 - np.arange(H) * 6.0 / max(H - 1, 1))).astype(np.float32),
            "s0": randn(rng, (B, H, D, D), "float32", 0.5)}


def ret_ref(p, x):
    B, T, H, D = p["B"], p["T"], p["H"], p["D"]
    sc = D ** -0.5
    CH = 256

    def one(idx):
        b, h = divmod(idx, H)
        g = 2.0 ** x["log2_gamma"][h]
        q, k, v = x["q"][b, :, h], x["k"][b, :, h], x["v"][b, :, h]
        S = x["s0"][b, h].copy()
        o = np.empty((T, D))
        for t0 in range(0, T, CH):
            n = min(CH, T - t0)
            ii = np.arange(n)
            dm = np.where(ii[:, None] >= ii[None, :], g ** np.maximum(ii[:, None] - ii[None, :], 0), 0.0)
            qc, kc, vc = q[t0:t0 + n], k[t0:t0 + n], v[t0:t0 + n]
            o[t0:t0 + n] = ((qc @ kc.T) * sc * dm) @ vc + (qc @ S) * (sc * g ** (ii + 1))[:, None]
            S = S * g ** n + (kc * (g ** (n - 1 - ii))[:, None]).T @ vc
        return o, S
    res = pmap(one, B * H)
    o = np.stack([r[0] for r in res]).reshape(B, H, T, D).transpose(0, 2, 1, 3)
    return {"o": o, "s_final": np.stack([r[1] for r in res]).reshape(B, H, D, D)}


def ret_launch(p, a, m):
    B, T, H, D = p["B"], p["T"], p["H"], p["D"]
    assert (m["H"], m["D"]) == (H, D) and H % m["HB"] == 0
    return (H // m["HB"], B), [a["q"], a["k"], a["v"], a["log2_gamma"], a["s0"], a["o"], a["s_final"], T, D ** -0.5,
                               T * H * D, H * D]


# --- 8. fused GPT-J-style RoPE (interleaved pairs, partial rotary) + paged KV-cache write ------------------------------
@triton.jit
def _rotate_pairs(x, cos, sin, NH: tl.constexpr, D: tl.constexpr):
    xe, xo = tl.split(tl.reshape(x, [NH, D // 2, 2]))
    return tl.reshape(tl.join(xe * cos - xo * sin, xo * cos + xe * sin), [NH, D])


@triton.jit
def rope_gptj_kv_write_kernel(Q, Kx, Vx, Pos, CosSin, Slots, QOut, KCache, VCache, stride_qt, stride_kt,
                              HQ: tl.constexpr, HKV: tl.constexpr, D: tl.constexpr, ROT: tl.constexpr):
    # token t: pairs (2i, 2i + 1) of each head rotated by angle pos * theta_i for i < ROT / 2; CosSin [max_pos, ROT]
    # (cos then sin); caches [pages, PAGE, HKV, D] addressed by slot = page * PAGE + offset
    t = tl.program_id(0)
    pos = tl.load(Pos + t)
    i = tl.arange(0, D // 2)
    rmask = i < ROT // 2
    cos = tl.load(CosSin + pos * ROT + i, mask=rmask, other=1.0)[None, :]
    sin = tl.load(CosSin + pos * ROT + ROT // 2 + i, mask=rmask, other=0.0)[None, :]
    d = tl.arange(0, D)[None, :]
    hq = tl.arange(0, HQ)[:, None]
    q = tl.load(Q + t.to(tl.int64) * stride_qt + hq * D + d).to(tl.float32)
    tl.store(QOut + t.to(tl.int64) * stride_qt + hq * D + d, _rotate_pairs(q, cos, sin, HQ, D).to(QOut.dtype.element_ty))
    slot = tl.load(Slots + t)
    if slot >= 0:
        hk = tl.arange(0, HKV)[:, None]
        k = tl.load(Kx + t.to(tl.int64) * stride_kt + hk * D + d).to(tl.float32)
        v = tl.load(Vx + t.to(tl.int64) * stride_kt + hk * D + d)
        dst = slot * (HKV * D) + hk * D + d
        tl.store(KCache + dst, _rotate_pairs(k, cos, sin, HKV, D).to(KCache.dtype.element_ty))
        tl.store(VCache + dst, v)


def rope_inputs(p, rng):
    T, HQ, HKV, D, ROT, MP, PAD = p["T"], p["HQ"], p["HKV"], p["D"], p["rot"], p["max_pos"], p["pad"]
    inv = 1.0 / (10000.0 ** (np.arange(0, ROT, 2) / ROT))
    ang = np.arange(MP)[:, None] * inv[None, :]
    slots = np.full(T, -1, np.int64)
    live = np.sort(rng.choice(T, T - PAD, replace=False))
    slots[live] = rng.permutation(T - PAD)  # every cache slot written exactly once
    return {"q": randn(rng, (T, HQ, D), "float16"), "k": randn(rng, (T, HKV, D), "float16"),
            "v": randn(rng, (T, HKV, D), "float16"), "pos": rng.integers(0, MP, T).astype(np.int32),
            "cos_sin": np.concatenate([np.cos(ang), np.sin(ang)], axis=1).astype(np.float32), "slots": slots}


def rope_ref(p, x):
    T, HKV, D, ROT, PAD = p["T"], p["HKV"], p["D"], p["rot"], p["pad"]
    cs = x["cos_sin"][x["pos"].astype(np.int64)]
    cos = np.concatenate([cs[:, :ROT // 2], np.ones((T, (D - ROT) // 2))], axis=1)[:, None, :]
    sin = np.concatenate([cs[:, ROT // 2:], np.zeros((T, (D - ROT) // 2))], axis=1)[:, None, :]

    def rot(a):
        e, o = a[..., 0::2], a[..., 1::2]
        r = np.empty_like(a)
        r[..., 0::2] = e * cos - o * sin
        r[..., 1::2] = o * cos + e * sin
        return r
    s = x["slots"].astype(np.int64)
    live = s >= 0
    kc = np.empty((T - PAD, HKV, D))
    vc = np.empty((T - PAD, HKV, D))
    kc[s[live]] = rot(x["k"])[live]
    vc[s[live]] = x["v"][live]
    page = p["page"]
    return {"q_out": rot(x["q"]), "k_cache": kc.reshape(-1, page, HKV, D), "v_cache": vc.reshape(-1, page, HKV, D)}


def rope_outputs(p):
    T, HQ, HKV, D, PAD, page = p["T"], p["HQ"], p["HKV"], p["D"], p["pad"], p["page"]
    assert (T - PAD) % page == 0
    return {"q_out": ((T, HQ, D), "float16"), "k_cache": (((T - PAD) // page, page, HKV, D), "float16"),
            "v_cache": (((T - PAD) // page, page, HKV, D), "float16")}


def rope_launch(p, a, m):
    assert (m["HQ"], m["HKV"], m["D"], m["ROT"]) == (p["HQ"], p["HKV"], p["D"], p["rot"])
    return (p["T"],), [a["q"], a["k"], a["v"], a["pos"], a["cos_sin"], a["slots"], a["q_out"], a["k_cache"],
                       a["v_cache"], p["HQ"] * p["D"], p["HKV"] * p["D"]]


CASES = [
    Case("spec_decode_reject_sample_f32", spec_rejection_sample_kernel, spec_inputs,
         lambda p: {"out_ids": ((p["B"], p["K"] + 1), "int32"), "num_accepted": ((p["B"],), "int32")},
         spec_ref, spec_launch,
         gpu={"B": 64, "K": 5, "V": 128256}, ci={"B": 9, "K": 3, "V": 1000},
         meta={"K": 5, "BLOCK_K": 8, "BLOCK_V": 4096, "num_warps": 8},
         ci_meta={"K": 3, "BLOCK_K": 4, "BLOCK_V": 256, "num_warps": 2},
         flops=lambda p: 3.0 * p["B"] * p["V"], bytes=lambda p: 12.0 * p["B"] * p["V"],
         idiom="speculative-decoding rejection sampling: draft / target probabilities of the K draft tokens gathered "
               "from [B, K, V] / [B, K + 1, V] fp32 rows by int32 ids, rejection u * p_d > p_t, the first rejection "
               "by tl.argmax over a boolean vector, the accepted prefix by tl.cumsum(rejected) == 0, under a scalar "
               "`if n_acc < K` a runtime chunk loop over the 128256-wide residual max(p_t - p_d, 0) * (1 / E) with "
               "tl.max(return_indices=True) and carried scalars updated by tl.where, output row by nested tl.where"),
    Case("paged_kv_gather_fp8_dequant_bf16", paged_kv_gather_fp8_kernel, pkv_inputs, pkv_outputs, pkv_ref, pkv_launch,
         gpu={"B": 16, "H": 8, "D": 128, "page": 16, "max_len": 4000},
         ci={"B": 3, "H": 2, "D": 16, "page": 4, "max_len": 30},
         meta={"H": 8, "D": 128, "PAGE": 16, "BLOCK_T": 16, "num_warps": 8},
         ci_meta={"H": 2, "D": 16, "PAGE": 4, "BLOCK_T": 8, "num_warps": 2},
         tol={"bfloat16": (1e-2, 1e-3)},
         flops=lambda p: 0.0, bytes=lambda p: 6.0 * p["B"] * p["max_len"] / 2 * p["H"] * p["D"],
         idiom="paged KV-cache gather into contiguous buffers (gather_and_maybe_dequant_cache): an int32 block table "
               "read as a vector through t // PAGE (two-level indexing), float8_e4m3fn pages [pages, 16, H, D] "
               "loaded as a 3-D [BLOCK_T, H, D] tile, one fp32 scale per KV head broadcast [None, :, None], bf16 "
               "rows written at the request's cu_seqlens offset, token blocks past the length leaving by an early "
               "return"),
    Case("lora_sgmv_shrink_splitk_bf16", lora_sgmv_shrink_kernel, lora_inputs,
         lambda p: {"out": ((p["T"], p["R"]), "float32")}, lora_ref, lora_launch,
         gpu={"T": 8192, "K": 4096, "R": 16, "L": 8, "scaling": 2.0},
         ci={"T": 70, "K": 200, "R": 16, "L": 4, "scaling": 2.0},
         meta={"R": 16, "BLOCK_M": 64, "BLOCK_K": 64, "SPLIT_K": 4, "num_warps": 4, "num_stages": 3},
         ci_meta={"R": 16, "BLOCK_M": 16, "BLOCK_K": 32, "SPLIT_K": 2, "num_warps": 2},
         zero=("out",), tol={"float32": (2e-4, 2e-5)},
         flops=lambda p: 2.0 * p["T"] * p["K"] * p["R"], bytes=lambda p: 2.0 * p["T"] * p["K"],
         idiom="LoRA SGMV shrink: tokens grouped by adapter (a sorted int32 token index, per-adapter offsets, some "
               "adapters empty, base-model tokens absent), the adapter from program_id(1), an early return past its "
               "token count, x rows gathered through the index, A[l] [16, K] read transposed, tl.dot into a "
               "[BLOCK_M, 16] fp32 accumulator over a split-K loop range(pid_k * BK, K, SPLIT_K * BK), scaled and "
               "added by a relaxed masked tl.atomic_add at the gathered rows"),
    Case("lamb_multi_tensor_trust_f32", lamb_multi_tensor_kernel, lamb_inputs, lamb_outputs, lamb_ref, lamb_launch,
         gpu={"NT": 96, "avg": 250000, "lr": 1e-3, "beta1": 0.9, "beta2": 0.999, "eps": 1e-6, "wd": 0.01,
              "step": 7},
         ci={"NT": 5, "avg": 700, "lr": 1e-3, "beta1": 0.9, "beta2": 0.999, "eps": 1e-6, "wd": 0.01, "step": 7},
         meta={"BLOCK": 2048, "num_warps": 8}, ci_meta={"BLOCK": 256, "num_warps": 2},
         tol={"float32": (2e-4, 2e-5)},
         flops=lambda p: 40.0 * p["NT"] * p["avg"], bytes=lambda p: 40.0 * p["NT"] * p["avg"],
         idiom="multi-tensor LAMB: one program per tensor of a flat list (int32 offsets, sizes not powers of two), a "
               "first runtime pass recomputing the bias-corrected Adam update plus weight decay to accumulate "
               "||w||^2 and ||u||^2 in [BLOCK] vectors, the trust ratio by tl.where on both norms, a second pass "
               "storing w - lr * trust * u and both moments; bf16 gradients, fp32 state, eight float scalars"),
    Case("grouped_conv1d_im2col_dot_f16", grouped_conv1d_im2col_kernel, conv_inputs,
         lambda p: {"y": ((p["N"], p["C"], p["L"]), "float16")}, conv_ref, conv_launch,
         gpu={"N": 8, "C": 768, "L": 1499, "G": 16, "KW": 128, "pad": 64},
         ci={"N": 2, "C": 24, "L": 37, "G": 2, "KW": 6, "pad": 3},
         meta={"CPG": 48, "OPG": 48, "KW": 128, "BLOCK_L": 64, "BLOCK_O": 64, "BLOCK_C": 8, "BLOCK_KW": 16,
               "num_warps": 4},
         ci_meta={"CPG": 12, "OPG": 12, "KW": 6, "BLOCK_L": 16, "BLOCK_O": 16, "BLOCK_C": 8, "BLOCK_KW": 4,
                  "num_warps": 2},
         flops=lambda p: 2.0 * p["N"] * p["C"] * p["L"] * (p["C"] // p["G"]) * p["KW"],
         bytes=lambda p: 4.0 * p["N"] * p["C"] * p["L"],
         idiom="grouped conv1d as im2col in registers + tl.dot (wav2vec2's positional conv: 768 channels, 16 groups, "
               "128 taps, pad 64, the last output dropped): a [BLOCK_L, BLOCK_C * BLOCK_KW] column tile by one 2-D "
               "masked gather load, the column split into (channel, tap) by // and %, a [128, 64] weight tile with "
               "48 output channels masked, nested loops with constexpr bounds, bias + erf GELU, stored "
               "channel-major through a transposed pointer tile, L = 1499"),
    Case("w8a16_int8_perchannel_hints_f16", w8a16_int8_perchannel_kernel, w8_inputs,
         lambda p: {"c": ((p["M"], p["N"]), "float16")}, w8_ref, w8_launch,
         gpu={"M": 77, "N": 11008, "K": 4096}, ci={"M": 9, "N": 40, "K": 200},
         meta={"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 128, "num_warps": 4, "num_stages": 4},
         ci_meta={"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 32, "num_warps": 2},
         flops=lambda p: 2.0 * p["M"] * p["N"] * p["K"],
         bytes=lambda p: 1.0 * p["N"] * p["K"] + 2.0 * p["M"] * (p["K"] + p["N"]),
         idiom="int8 weight-only GEMM with per-output-channel scales: the int8 [N, K] weight read transposed and "
               "converted by .to(tl.float16) straight into tl.dot(a, w, acc), the fp32 scale and bias applied once "
               "after the K loop, rows / columns wrapped by % M / % N with tl.max_contiguous(tl.multiple_of(...)) "
               "hints, a K mask by rk < K - k * BLOCK_K, M = 77 tokens"),
    Case("retnet_multihead_3d_dot_state_bf16", retnet_multihead_chunk_kernel, ret_inputs,
         lambda p: {"o": ((p["B"], p["T"], p["H"], p["D"]), "bfloat16"),
                    "s_final": ((p["B"], p["H"], p["D"], p["D"]), "float32")}, ret_ref, ret_launch,
         gpu={"B": 8, "T": 2000, "H": 16, "D": 64}, ci={"B": 2, "T": 50, "H": 4, "D": 16},
         meta={"H": 16, "D": 64, "HB": 2, "C": 64, "num_warps": 8},
         ci_meta={"H": 4, "D": 16, "HB": 2, "C": 16, "num_warps": 4},
         tol={"bfloat16": (2e-2, 1e-2), "float32": (1e-2, 5e-3)},
         flops=lambda p: 8.0 * p["B"] * p["T"] * p["H"] * p["D"] * 64,
         bytes=lambda p: 8.0 * p["B"] * p["T"] * p["H"] * p["D"],
         idiom="RetNet chunkwise retention, HB heads per program: [C, HB * D] bf16 slices of token-major [B, T, H, D] "
               "tensors tl.reshape'd to [C, HB, D] and tl.permute'd to [HB, C, D], batched 3-D tl.dot for q k^T, "
               "(s * decay) v, q S and k_aged^T v, per-head decays from a [HB] vector broadcast over [HB, C, C] by "
               "tl.exp2, the [HB, D, D] fp32 state loaded from a cache and stored at the end, T = 2000 (last chunk "
               "partial, its decays by tl.minimum(T - t0, C))"),
    Case("rope_gptj_split_join_kv_write_f16", rope_gptj_kv_write_kernel, rope_inputs, rope_outputs, rope_ref,
         rope_launch,
         gpu={"T": 8192, "HQ": 32, "HKV": 2, "D": 128, "rot": 64, "max_pos": 32768, "pad": 192, "page": 16},
         ci={"T": 40, "HQ": 4, "HKV": 2, "D": 32, "rot": 16, "max_pos": 100, "pad": 8, "page": 16},
         meta={"HQ": 32, "HKV": 2, "D": 128, "ROT": 64, "num_warps": 4},
         ci_meta={"HQ": 4, "HKV": 2, "D": 32, "ROT": 16, "num_warps": 2},
         flops=lambda p: 6.0 * p["T"] * (p["HQ"] + p["HKV"]) * p["D"],
         bytes=lambda p: 4.0 * p["T"] * (p["HQ"] + 2 * p["HKV"]) * p["D"],
         idiom="fused GPT-J-style RoPE + paged KV-cache write (ChatGLM: 32 q heads, 2 KV heads, rotary on the first "
               "64 of 128 dims): per token the q and k tiles tl.reshape'd to [H, D / 2, 2] and tl.split into "
               "even / odd lanes in a jit helper, rotated with cos / sin loaded masked (1 and 0 past the rotary "
               "pairs), tl.join + reshape back; q stored, k and v into the cache at an int64 slot, slot -1 padding "
               "tokens skipped by a scalar if"),
]
