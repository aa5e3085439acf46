"""Eight idioms from quantization and transformer-layer code: the first pass of per-tensor dynamic fp8 scaling, a
grid-stride loop of tl.num_programs(0) programs keeping a per-lane running |x| maximum of a large bf16 tensor, each
program folding its tl.max into one float32 scalar by tl.atomic_max (the output zeroed by the launch: |x| >= 0);
per-token fp8 (e4m3) quantization, each row's absmax giving scale = amax / 448 and tl.clamp(x / scale, -448, 448)
cast by .to(tl.float8e4nv) into a float8_e4m3fn tensor, the float32 scales written too; a training-time fused
residual + dropout + LayerNorm forward, keep = tl.rand(seed, row * N + cols) > p (Philox), the new residual
(x / (1 - p) where kept, plus the old residual) stored and normalized with the row's mean and 1/std saved; a softmax
of attention-score rows of non-power-of-two length under a boolean padding mask loaded per (batch, query) row and
broadcast over the heads of a 3-D grid, masked scores set to -inf by tl.where, a fully masked row (a padded query)
giving zeros rather than NaN by the kernel's own guards on the row maximum and the denominator; a GPT-NeoX
(half-split) rotary embedding of q and k in one launch, a 2-D grid of (token, head) over the query heads followed by
the key heads (pointers chosen in the two branches of a runtime `if`), cos and sin gathered from a [max position,
head dim] cache through an int32 position id per token; a log-sum-exp over the middle axis of a [B, L, D] tensor in
L-chunks, an online column maximum and rescaled sum carried across the loop; and a bf16 GEMV with a fused epilogue,
y = s * (W @ x) + r with a float32 per-row scale and a bf16 residual, `acc += tl.sum(w * x[None, :], axis=1)` over K;
and a grouped GEMM through pointer arrays, each group's A, B, C base addresses in int64 arrays turned into pointers
by .to(tl.pointer_type(tl.float16)) and its sizes in an int32 array, a fixed number of programs walking all groups'
tiles (a while loop inside the loop over groups; the case's `addresses` tells our interpreter about the arrays the
kernel reaches only through those addresses).
"""
import numpy as np
import triton
import triton.language as tl

from workloads.corpus._case import Case, cast, cdiv, philox_uniform, pmap, randn, uniform


# --- 1. per-tensor fp8 scaling, pass 1: the tensor's absmax -----------------------------------------------------------
@triton.jit
def absmax_grid_stride_kernel(X, AMAX, n_elements, BLOCK: tl.constexpr):
    # a fixed number of programs strides over the whole tensor, each keeping a running max of |x| per lane; one
    # reduction and one float atomic per program at the end. AMAX starts at 0, the identity of a max over |x|.
    pid = tl.program_id(0)
    step = tl.num_programs(0) * BLOCK
    running = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(pid * BLOCK, n_elements, step):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(X + offs, mask=offs < n_elements, other=0.0)
        running = tl.maximum(running, tl.abs(x.to(tl.float32)))
    tl.atomic_max(AMAX, tl.max(running, axis=0))


# --- 2. per-token fp8 e4m3 quantization -------------------------------------------------------------------------------
@triton.jit
def quant_fp8_per_token_kernel(X, Q, SCALE, N, stride_x, stride_q, FP8_MAX: tl.constexpr, BLOCK_N: tl.constexpr):
    # one row (token) per program, the whole row in one block: scale = amax / 448 maps the row's largest |x| to
    # e4m3's largest finite value; the clamp guards the rounding of x / scale just past it
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(X + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    amax = tl.maximum(tl.max(tl.abs(x), axis=0), 1e-10)  # an all-zero row keeps a finite scale
    scale = amax / FP8_MAX
    q = tl.clamp(x / scale, -FP8_MAX, FP8_MAX)
    tl.store(Q + row * stride_q + cols, q.to(tl.float8e4nv), mask=mask)
    tl.store(SCALE + row, scale)


# --- 3. fused residual + dropout + LayerNorm forward (training) -------------------------------------------------------
@triton.jit
def dropout_add_layernorm_kernel(X, RESIDUAL, W, B, RESIDUAL_OUT, Y, MEAN, RSTD, N, stride_row, p, seed, eps,
                                 BLOCK_N: tl.constexpr):
    # h = dropout(x) + residual, kept in float32 for the statistics and also stored (the next layer's residual);
    # y = (h - mean) / sqrt(var + eps) * w + b. Each element's Philox counter is its flat index row * N + col.
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    offs = row * stride_row + cols
    x = tl.load(X + offs, mask=mask, other=0.0).to(tl.float32)
    res = tl.load(RESIDUAL + offs, mask=mask, other=0.0).to(tl.float32)
    keep = tl.rand(seed, row * N + cols) > p
    h = tl.where(keep, x / (1.0 - p), 0.0) + res
    tl.store(RESIDUAL_OUT + offs, h.to(RESIDUAL_OUT.dtype.element_ty), mask=mask)
    mean = tl.sum(h, axis=0) / N
    diff = tl.where(mask, h - mean, 0.0)
    var = tl.sum(diff * diff, axis=0) / N
    rstd = 1.0 / tl.sqrt(var + eps)
    tl.store(MEAN + row, mean)
    tl.store(RSTD + row, rstd)
    w = tl.load(W + cols, mask=mask, other=0.0)
    b = tl.load(B + cols, mask=mask, other=0.0)
    y = diff * rstd * w + b
    tl.store(Y + offs, y.to(Y.dtype.element_ty), mask=mask)


# --- 4. softmax of attention scores under a boolean padding mask -----------------------------------------------------
@triton.jit
def softmax_padding_mask_kernel(S, MASK, OUT, Lq, Lk, scale, BLOCK_N: tl.constexpr):
    # scores [B, H, Lq, Lk], mask [B, Lq, Lk] (True: attend) shared by the heads; grid (Lq, H, B). A padded query's
    # row is all False: its maximum stays -inf and its denominator 0, and both are guarded so it comes out zeros.
    q = tl.program_id(0)
    h = tl.program_id(1)
    b = tl.program_id(2)
    n_heads = tl.num_programs(1)
    row = ((b * n_heads + h) * Lq + q).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    in_row = cols < Lk
    s = tl.load(S + row * Lk + cols, mask=in_row, other=0.0).to(tl.float32) * scale
    keep = tl.load(MASK + (b * Lq + q).to(tl.int64) * Lk + cols, mask=in_row, other=False)
    s = tl.where(keep, s, float("-inf"))
    row_max = tl.max(s, axis=0)
    row_max = tl.where(row_max == float("-inf"), 0.0, row_max)
    num = tl.exp(s - row_max)
    den = tl.sum(num, axis=0)
    y = tl.where(den > 0.0, num / den, 0.0)
    tl.store(OUT + row * Lk + cols, y.to(OUT.dtype.element_ty), mask=in_row)


# --- 5. GPT-NeoX rotary embedding of q and k, positions gathered from a cache ----------------------------------------
@triton.jit
def rope_neox_qk_kernel(Q, K, Q_OUT, K_OUT, POSITIONS, COS_SIN_CACHE, n_q_heads, stride_qt, stride_kt,
                        stride_cache, HEAD_DIM: tl.constexpr):
    # grid (tokens, q heads + k heads): the first n_q_heads programs of a token rotate its query heads, the rest
    # its key heads. The halves (x1, x2) of a head rotate as (x1 cos - x2 sin, x2 cos + x1 sin); a cache row holds
    # the position's cos in its first half and sin in its second (vLLM's cos_sin_cache).
    HALF: tl.constexpr = HEAD_DIM // 2
    tok = tl.program_id(0).to(tl.int64)
    head = tl.program_id(1)
    pos = tl.load(POSITIONS + tok)
    d = tl.arange(0, HALF)
    cos = tl.load(COS_SIN_CACHE + pos * stride_cache + d)
    sin = tl.load(COS_SIN_CACHE + pos * stride_cache + HALF + d)
    if head < n_q_heads:
        src = Q + tok * stride_qt + head * HEAD_DIM
        dst = Q_OUT + tok * stride_qt + head * HEAD_DIM
    else:
        src = K + tok * stride_kt + (head - n_q_heads) * HEAD_DIM
        dst = K_OUT + tok * stride_kt + (head - n_q_heads) * HEAD_DIM
    x1 = tl.load(src + d).to(tl.float32)
    x2 = tl.load(src + HALF + d).to(tl.float32)
    tl.store(dst + d, (x1 * cos - x2 * sin).to(Q_OUT.dtype.element_ty))
    tl.store(dst + HALF + d, (x2 * cos + x1 * sin).to(Q_OUT.dtype.element_ty))


# --- 6. log-sum-exp over the middle axis --------------------------------------------------------------------------
@triton.jit
def logsumexp_dim1_kernel(X, OUT, L, D, stride_xb, stride_xl, stride_ob, BLOCK_L: tl.constexpr,
                          BLOCK_D: tl.constexpr):
    # out[b, d] = log sum_l exp(x[b, l, d]): grid (B, D blocks), each program walks all L in chunks with an online
    # maximum and a sum rescaled by exp(old max - new max) whenever the maximum grows
    b = tl.program_id(0).to(tl.int64)
    rd = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    d_mask = rd < D
    x_base = X + b * stride_xb
    m = tl.full([BLOCK_D], float("-inf"), dtype=tl.float32)
    acc = tl.zeros([BLOCK_D], dtype=tl.float32)
    for l0 in range(0, L, BLOCK_L):
        rl = l0 + tl.arange(0, BLOCK_L)
        mask = (rl[:, None] < L) & d_mask[None, :]
        x = tl.load(x_base + rl[:, None] * stride_xl + rd[None, :], mask=mask, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        acc = acc * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new[None, :]), axis=0)
        m = m_new
    tl.store(OUT + b * stride_ob + rd, m + tl.log(acc), mask=d_mask)


# --- 7. bf16 GEMV with a per-row scale and a residual ---------------------------------------------------------------
@triton.jit
def gemv_scale_residual_kernel(W, X, S, R, Y, N, K, stride_wn, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # y = s * (W @ x) + r for one token: W row-major [N, K] in row blocks, a float32 sum per row carried over K,
    # the scale and the residual applied once at the end
    rn = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    n_mask = rn < N
    w_rows = W + rn[:, None].to(tl.int64) * stride_wn
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        k_mask = rk < K
        w = tl.load(w_rows + rk[None, :], mask=n_mask[:, None] & k_mask[None, :], other=0.0).to(tl.float32)
        x = tl.load(X + rk, mask=k_mask, other=0.0).to(tl.float32)
        acc += tl.sum(w * x[None, :], axis=1)
    s = tl.load(S + rn, mask=n_mask, other=0.0)
    r = tl.load(R + rn, mask=n_mask, other=0.0).to(tl.float32)
    tl.store(Y + rn, (s * acc + r).to(tl.bfloat16), mask=n_mask)


# --- 8. grouped GEMM over pointer arrays ---------------------------------------------------------------------------
@triton.jit
def grouped_gemm_ptrs_kernel(A_PTRS, B_PTRS, C_PTRS, SIZES, n_groups, NUM_PROGRAMS: tl.constexpr,
                             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # group g: C_g = A_g @ B_g, row-major fp16 [M_g, K_g] x [K_g, N_g] -> [M_g, N_g]; the groups' base addresses sit
    # in int64 arrays and their sizes in SIZES[3g:3g+3]. NUM_PROGRAMS programs walk all groups' tiles in order,
    # program p taking tiles p, p + NUM_PROGRAMS, ... wherever they fall
    tile = tl.program_id(0)
    first = 0
    for g in range(n_groups):
        M = tl.load(SIZES + 3 * g)
        N = tl.load(SIZES + 3 * g + 1)
        K = tl.load(SIZES + 3 * g + 2)
        tiles_n = tl.cdiv(N, BLOCK_N)
        count = tl.cdiv(M, BLOCK_M) * tiles_n
        a_base = tl.load(A_PTRS + g).to(tl.pointer_type(tl.float16))
        b_base = tl.load(B_PTRS + g).to(tl.pointer_type(tl.float16))
        c_base = tl.load(C_PTRS + g).to(tl.pointer_type(tl.float16))
        while tile >= first and tile < first + count:
            local = tile - first
            rm = (local // tiles_n) * BLOCK_M + tl.arange(0, BLOCK_M)
            rn = (local % tiles_n) * BLOCK_N + tl.arange(0, BLOCK_N)
            rk = tl.arange(0, BLOCK_K)
            acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
            for k0 in range(0, K, BLOCK_K):
                a = tl.load(a_base + rm[:, None] * K + (k0 + rk)[None, :],
                            mask=(rm[:, None] < M) & (k0 + rk[None, :] < K), other=0.0)
                b = tl.load(b_base + (k0 + rk)[:, None] * N + rn[None, :],
                            mask=(k0 + rk[:, None] < K) & (rn[None, :] < N), other=0.0)
                acc = tl.dot(a, b, acc)
            tl.store(c_base + rm[:, None] * N + rn[None, :], acc.to(tl.float16),
                     mask=(rm[:, None] < M) & (rn[None, :] < N))
            tile += NUM_PROGRAMS
        first += count


# --- host side --------------------------------------------------------------------------------------------------------
def grouped_inputs(p, rng):
    out = {}
    for g, (M, N, K) in enumerate(p["groups"]):
        out[f"a{g}"] = randn(rng, (M, K), "float16", 0.5)
        out[f"b{g}"] = randn(rng, (K, N), "float16", 0.5)
    return out


def grouped_outputs(p):
    return {f"c{g}": ((M, N), "float16") for g, (M, N, K) in enumerate(p["groups"])}


def grouped_ref(p, x):
    return {f"c{g}": x[f"a{g}"] @ x[f"b{g}"] for g in range(len(p["groups"]))}


def _addresses(arrays):
    """The int64 array of the arrays' base addresses, where the kernel can read it: host memory for NumPy arrays
    (our interpreter, told of them by the case's `addresses`), device memory beside torch tensors."""
    if isinstance(arrays[0], np.ndarray):
        return np.array([a.ctypes.data for a in arrays], np.int64)
    import torch

    return torch.tensor([a.data_ptr() for a in arrays], dtype=torch.int64, device=arrays[0].device)


def grouped_launch(p, a, m):
    groups = p["groups"]
    n = len(groups)
    sizes = np.array(groups, np.int32).reshape(-1)
    if not isinstance(a["a0"], np.ndarray):
        import torch

        sizes = torch.from_numpy(sizes).to(a["a0"].device)
    ptrs = [_addresses([a[f"{w}{g}"] for g in range(n)]) for w in "abc"]
    tiles = sum(cdiv(M, m["BLOCK_M"]) * cdiv(N, m["BLOCK_N"]) for M, N, K in groups)
    return (min(m["NUM_PROGRAMS"], tiles),), [*ptrs, sizes, n]


def absmax_inputs(p, rng):
    # a handful of outliers far from the bulk, as activations have: the maximum is one of them
    n = p["n"]
    x = rng.standard_normal(n, dtype=np.float32)
    spikes = rng.integers(0, n, max(1, n // 4096))
    x[spikes] *= np.float32(40.0)
    return {"x": cast(x, "bfloat16")}


def absmax_launch(p, a, m):
    n = p["n"]
    return (min(p["programs"], cdiv(n, m["BLOCK"])),), [a["x"], a["amax"], n]


def e4m3():
    import ml_dtypes

    return np.dtype(ml_dtypes.float8_e4m3fn)


def as_e4m3(a):
    """A uint8 output seen by the kernel as float8_e4m3fn: the harness allocates, poisons (0xFF, a NaN in e4m3)
    and moves it as bytes (its NumPy <-> torch copies know no fp8); the kernel stores through a float8e4nv
    pointer. NumPy arrays (the interpreter, compile-only runs) are viewed with ml_dtypes, torch tensors as
    torch.float8_e4m3fn."""
    if isinstance(a, np.ndarray):
        return a.view(e4m3())
    import torch

    return a.view(torch.float8_e4m3fn)


FP8_MAX = 448.0


class Fp8QuantCase(Case):
    """Per-token fp8 quantization, checked code by code.

    scale: amax / 448 within float32 division error (`/` is div.full.f32 on the GPU, within 2 ulp; the
    interpreter's is IEEE). q: the e4m3 byte of round-to-nearest-even(clamp(x / scale)) (ml_dtypes' rounding,
    cvt.rn.satfinite's on the GPU) with the kernel's own float32 scale, bit for bit -- except where x / scale lies
    within 4 float32 ulp of the midpoint between two e4m3 values: there the approximate division may land on
    either side, and either neighbour is accepted (on an H100 at the GPU size: 1077 of 42M codes, with both
    compilers; the interpreter's division is exact, so CI is bit-exact). The reference holds x (as the "q" entry)
    for that; the farm, which checks against a reference from the inputs alone, does not take this case."""

    def check(self, p, got, ref):
        res = super().check(p, {"scale": got["scale"]}, {"scale": ref["scale"]})
        dt = e4m3()
        values = np.arange(256, dtype=np.uint8).view(dt).astype(np.float64)  # NaN for 0x7F and 0xFF
        x = np.asarray(ref["q"], np.float64)
        s = np.asarray(got["scale"], np.float32)[:, None]
        g = np.asarray(got["q"]).view(np.uint8)
        if g.shape != x.shape:
            res["q"] = (False, float("inf"), f"shape {g.shape} != reference {x.shape}")
            return res
        with np.errstate(all="ignore"):
            t32 = np.clip(x.astype(np.float32) / s, np.float32(-FP8_MAX), np.float32(FP8_MAX))
            want = t32.astype(dt).view(np.uint8)
            nan = np.isnan(values[g])
            diff = (g != want) & ~nan
            t64 = np.clip(x / s.astype(np.float64), -FP8_MAX, FP8_MAX)[diff]
            mid = 0.5 * (values[g[diff]] + values[want[diff]])
            slack = 4.0 * np.spacing(np.abs(t32[diff])).astype(np.float64)
            near = np.abs(t64 - mid) <= slack
        bad = int(np.count_nonzero(nan)) + int(np.count_nonzero(~near))
        ties = int(np.count_nonzero(near))
        msg = f"{bad} of {g.size} codes wrong ({int(np.count_nonzero(nan))} NaN)" if bad else "bit-exact" \
            if not ties else f"bit-exact but for {ties} of {g.size} codes at a rounding midpoint within float32 error"
        res["q"] = (bad == 0, float(bad), msg)
        return res

    def as_workload(self, source_file: str = ""):
        return None  # see the class docstring


def quant_fp8_inputs(p, rng):
    # rows of different magnitudes (each row's scale differs), fp16
    M, N = p["M"], p["N"]
    mag = uniform(rng, (M, 1), 0.05, 20.0)
    return {"x": (rng.standard_normal((M, N), dtype=np.float32) * mag).astype(np.float16)}


def quant_fp8_ref(p, x):
    # q: the inputs themselves, for Fp8QuantCase.check (which rounds x / the kernel's scale to e4m3)
    v = x["x"]
    return {"q": v, "scale": np.maximum(np.abs(v).max(axis=1), 1e-10) / FP8_MAX}


def quant_fp8_launch(p, a, m):
    M, N = p["M"], p["N"]
    return (M,), [a["x"], as_e4m3(a["q"]), a["scale"], N, N, N]


def dropout_ln_inputs(p, rng):
    M, N = p["M"], p["N"]
    return {"x": randn(rng, (M, N), "float16"), "residual": randn(rng, (M, N), "float16", 2.0, 0.5),
            "w": uniform(rng, (N,), 0.5, 1.5), "b": randn(rng, (N,), "float32", 0.1)}


def dropout_ln_ref(p, x):
    M, N, drop = p["M"], p["N"], p["p"]

    def rows(i):  # a slice of rows on a thread pool (Philox on the host is the slow part)
        lo, hi = i * step, min((i + 1) * step, M)
        keep = philox_uniform(p["seed"], np.arange(lo * N, hi * N)).reshape(hi - lo, N) > np.float32(drop)
        h = np.where(keep, x["x"][lo:hi] / (1.0 - np.float64(np.float32(drop))), 0.0) + x["residual"][lo:hi]
        mean = h.mean(axis=1)
        rstd = 1.0 / np.sqrt(h.var(axis=1) + p["eps"])
        return h, (h - mean[:, None]) * rstd[:, None] * x["w"][None, :] + x["b"][None, :], mean, rstd

    step = max(1, cdiv(M, 32))
    parts = pmap(rows, cdiv(M, step))
    return {k: np.concatenate([q[j] for q in parts]) for j, k in enumerate(("residual_out", "y", "mean", "rstd"))}


def dropout_ln_out(p):
    M, N = p["M"], p["N"]
    return {"residual_out": ((M, N), "float16"), "y": ((M, N), "float16"), "mean": ((M,), "float32"),
            "rstd": ((M,), "float32")}


def dropout_ln_launch(p, a, m):
    M, N = p["M"], p["N"]
    return (M,), [a["x"], a["residual"], a["w"], a["b"], a["residual_out"], a["y"], a["mean"], a["rstd"], N, N,
                  p["p"], p["seed"], p["eps"]]


def softmax_mask_inputs(p, rng):
    # key padding (keys past the batch's length are masked) and query padding (a padded query's whole row is
    # masked); one batch also drops a random tenth of its keys, as a sparse attention pattern would
    B, H, Lq, Lk = p["B"], p["H"], p["Lq"], p["Lk"]
    kv_len = rng.integers(Lk // 2, Lk + 1, B)
    kv_len[0] = Lk
    q_len = rng.integers(max(1, Lq - 3), Lq + 1, B)
    q_len[-1] = Lq - 2 if Lq > 2 else Lq
    mask = (np.arange(Lk)[None, None, :] < kv_len[:, None, None]) & (np.arange(Lq)[None, :, None] <
                                                                      q_len[:, None, None])
    mask[0] &= rng.random((Lq, Lk)) >= 0.1
    return {"scores": randn(rng, (B, H, Lq, Lk), "float16", 3.0), "mask": mask}


def softmax_mask_ref(p, x):
    s = x["scores"] * p["scale"]
    keep = np.broadcast_to(x["mask"][:, None] != 0, s.shape)
    s = np.where(keep, s, -np.inf)
    mx = s.max(axis=-1, keepdims=True)
    mx = np.where(np.isfinite(mx), mx, 0.0)
    e = np.exp(s - mx)
    den = e.sum(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore"):
        return {"out": np.where(den > 0, e / den, 0.0)}


def softmax_mask_launch(p, a, m):
    B, H, Lq, Lk = p["B"], p["H"], p["Lq"], p["Lk"]
    return (Lq, H, B), [a["scores"], a["mask"], a["out"], Lq, Lk, p["scale"]]


def rope_qk_inputs(p, rng):
    T, Hq, Hk, D, P = p["T"], p["Hq"], p["Hk"], p["D"], p["max_pos"]
    inv_freq = 10000.0 ** (-np.arange(0, D, 2, dtype=np.float64) / D)
    angle = np.arange(P, dtype=np.float64)[:, None] * inv_freq[None, :]
    cache = np.concatenate([np.cos(angle), np.sin(angle)], axis=1).astype(np.float32)
    return {"q": randn(rng, (T, Hq, D), "bfloat16"), "k": randn(rng, (T, Hk, D), "bfloat16"),
            "positions": rng.integers(0, P, T).astype(np.int32), "cos_sin_cache": cache}


def rope_qk_ref(p, x):
    half = p["D"] // 2
    rows = x["cos_sin_cache"][x["positions"].astype(np.int64)]
    c, s = rows[:, None, :half], rows[:, None, half:]
    out = {}
    for name in ("q", "k"):
        x1, x2 = x[name][..., :half], x[name][..., half:]
        out[name + "_out"] = np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], axis=-1)
    return out


def rope_qk_launch(p, a, m):
    T, Hq, Hk, D = p["T"], p["Hq"], p["Hk"], p["D"]
    return (T, Hq + Hk), [a["q"], a["k"], a["q_out"], a["k_out"], a["positions"], a["cos_sin_cache"], Hq, Hq * D,
                          Hk * D, D]


def rope_qk_bytes(p):
    T, H, D = p["T"], p["Hq"] + p["Hk"], p["D"]
    return 4.0 * T * H * D + 4.0 * T + 4.0 * T * D


def lse_ref(p, x):
    def batch(i):
        v = x["x"][i]
        mx = v.max(axis=0)
        return mx + np.log(np.exp(v - mx[None, :]).sum(axis=0))

    return {"out": np.stack(pmap(batch, p["B"]))}


def lse_launch(p, a, m):
    B, L, D = p["B"], p["L"], p["D"]
    return (B, cdiv(D, m["BLOCK_D"])), [a["x"], a["out"], L, D, L * D, D, D]


def gemv_inputs(p, rng):
    N, K = p["N"], p["K"]
    return {"w": randn(rng, (N, K), "bfloat16", 0.05), "x": randn(rng, (K,), "bfloat16"),
            "s": uniform(rng, (N,), 0.5, 2.0), "r": randn(rng, (N,), "bfloat16")}


def gemv_ref(p, x):
    step = max(1, cdiv(p["N"], 32))
    wx = np.concatenate(pmap(lambda i: x["w"][i * step:(i + 1) * step] @ x["x"], cdiv(p["N"], step)))
    return {"y": x["s"] * wx + x["r"]}


def gemv_launch(p, a, m):
    N, K = p["N"], p["K"]
    return (cdiv(N, m["BLOCK_N"]),), [a["w"], a["x"], a["s"], a["r"], a["y"], N, K, K]


CASES = [
    Case("absmax_grid_stride_bf16", absmax_grid_stride_kernel, absmax_inputs,
         lambda p: {"amax": ((1,), "float32")}, lambda p, x: {"amax": np.abs(x["x"]).max(keepdims=True)},
         absmax_launch,
         gpu={"n": (1 << 26) + 3, "programs": 132 * 8}, ci={"n": 5003, "programs": 3},
         meta={"BLOCK": 2048, "num_warps": 8}, ci_meta={"BLOCK": 256, "num_warps": 2},
         tol={"float32": (0.0, 0.0)}, zero=("amax",), flops=lambda p: 2.0 * p["n"], bytes=lambda p: 2.0 * p["n"],
         idiom="per-tensor fp8 scaling, pass 1: a grid-stride loop over a bf16 tensor (range(pid * BLOCK, n, "
               "tl.num_programs(0) * BLOCK)), a per-lane running max of |x|, tl.max per program folded into one "
               "float32 scalar by tl.atomic_max (zeroed output)"),
    Fp8QuantCase(
        "quant_fp8_per_token_e4m3", quant_fp8_per_token_kernel, quant_fp8_inputs,
        lambda p: {"q": ((p["M"], p["N"]), "uint8"), "scale": ((p["M"],), "float32")}, quant_fp8_ref,
        quant_fp8_launch,
        gpu={"M": 8192, "N": 5120}, ci={"M": 5, "N": 300},
        meta={"FP8_MAX": FP8_MAX, "BLOCK_N": 8192, "num_warps": 8},
        ci_meta={"FP8_MAX": FP8_MAX, "BLOCK_N": 512, "num_warps": 2},
        tol={"float32": (3e-7, 0.0)}, flops=lambda p: 4.0 * p["M"] * p["N"],
        bytes=lambda p: 3.0 * p["M"] * p["N"] + 4.0 * p["M"],
        idiom="dynamic per-token fp8 quantization: the row's tl.max(tl.abs(x)) -> scale = amax / 448, "
              "tl.clamp(x / scale, -448, 448).to(tl.float8e4nv) stored through a float8_e4m3fn pointer, float32 "
              "scales out; rows of non-power-of-two width masked"),
    Case("dropout_add_layernorm_f16", dropout_add_layernorm_kernel, dropout_ln_inputs, dropout_ln_out,
         dropout_ln_ref, dropout_ln_launch,
         gpu={"M": 8192, "N": 4096, "p": 0.1, "seed": 42, "eps": 1e-5},
         ci={"M": 6, "N": 300, "p": 0.1, "seed": 42, "eps": 1e-5},
         meta={"BLOCK_N": 4096, "num_warps": 8}, ci_meta={"BLOCK_N": 512, "num_warps": 2},
         tol={"float16": (1e-3, 1e-4), "float32": (2e-6, 2e-7)}, flops=lambda p: 30.0 * p["M"] * p["N"],
         bytes=lambda p: 8.0 * p["M"] * p["N"] + 8.0 * p["N"] + 8.0 * p["M"],
         idiom="training-time residual + dropout + LayerNorm forward: keep = tl.rand(seed, row * N + cols) > p "
               "(Philox), h = where(keep, x / (1 - p), 0) + residual stored as the new residual, then the row's "
               "mean / rstd (saved) and the normalized fp16 output, one row per block"),
    Case("softmax_padding_mask_f16", softmax_padding_mask_kernel, softmax_mask_inputs,
         lambda p: {"out": ((p["B"], p["H"], p["Lq"], p["Lk"]), "float16")}, softmax_mask_ref, softmax_mask_launch,
         gpu={"B": 4, "H": 16, "Lq": 1000, "Lk": 1000, "scale": 0.125},
         ci={"B": 2, "H": 3, "Lq": 7, "Lk": 37, "scale": 0.125},
         meta={"BLOCK_N": 1024, "num_warps": 4}, ci_meta={"BLOCK_N": 64, "num_warps": 2},
         tol={"float16": (1e-3, 1e-4)}, flops=lambda p: 6.0 * p["B"] * p["H"] * p["Lq"] * p["Lk"],
         bytes=lambda p: 4.0 * p["B"] * p["H"] * p["Lq"] * p["Lk"] + 1.0 * p["B"] * p["Lq"] * p["Lk"],
         idiom="masked attention softmax: a bool [B, Lq, Lk] padding mask loaded per row and shared by the heads "
               "of a 3-D grid, tl.where(keep, s, -inf), rows of non-power-of-two length, a fully masked row "
               "guarded (max -inf -> 0, den == 0 -> 0) into zeros, not NaN"),
    Case("rope_neox_qk_positions_bf16", rope_neox_qk_kernel, rope_qk_inputs,
         lambda p: {"q_out": ((p["T"], p["Hq"], p["D"]), "bfloat16"),
                    "k_out": ((p["T"], p["Hk"], p["D"]), "bfloat16")}, rope_qk_ref, rope_qk_launch,
         gpu={"T": 16384, "Hq": 32, "Hk": 8, "D": 128, "max_pos": 32768},
         ci={"T": 9, "Hq": 4, "Hk": 2, "D": 128, "max_pos": 50},
         meta={"HEAD_DIM": 128, "num_warps": 1}, ci_meta={"HEAD_DIM": 128, "num_warps": 1},
         tol={"bfloat16": (8e-3, 1e-5)}, flops=lambda p: 3.0 * p["T"] * (p["Hq"] + p["Hk"]) * p["D"],
         bytes=rope_qk_bytes,
         idiom="GPT-NeoX rotary embedding of q and k in one launch: grid (tokens, q heads + k heads), the tensor "
               "picked by a runtime if / else on program_id(1) (pointers assigned in both branches), int32 "
               "positions[token] gathering cos / sin halves of a float32 cache row, head_dim 128 split in halves"),
    Case("logsumexp_dim1_bf16", logsumexp_dim1_kernel,
         lambda p, rng: {"x": randn(rng, (p["B"], p["L"], p["D"]), "bfloat16", 2.0)},
         lambda p: {"out": ((p["B"], p["D"]), "float32")}, lse_ref, lse_launch,
         gpu={"B": 32, "L": 2048, "D": 1024}, ci={"B": 3, "L": 50, "D": 37},
         meta={"BLOCK_L": 32, "BLOCK_D": 64, "num_warps": 4}, ci_meta={"BLOCK_L": 16, "BLOCK_D": 16, "num_warps": 2},
         tol={"float32": (2e-6, 2e-7)}, flops=lambda p: 4.0 * p["B"] * p["L"] * p["D"],
         bytes=lambda p: 2.0 * p["B"] * p["L"] * p["D"] + 4.0 * p["B"] * p["D"],
         idiom="torch.logsumexp(x, dim=1) of a [B, L, D] bf16 tensor: grid (B, D blocks), L walked in chunks "
               "with an online column max and a sum rescaled by exp(m - m_new), -inf padding, fp32 out"),
    Case("gemv_scale_residual_bf16", gemv_scale_residual_kernel, gemv_inputs,
         lambda p: {"y": ((p["N"],), "bfloat16")}, gemv_ref, gemv_launch,
         gpu={"N": 8192, "K": 8192}, ci={"N": 40, "K": 200},
         meta={"BLOCK_N": 16, "BLOCK_K": 512, "num_warps": 4}, ci_meta={"BLOCK_N": 8, "BLOCK_K": 64, "num_warps": 2},
         tol={"bfloat16": (1e-2, 5e-3)}, flops=lambda p: 2.0 * p["N"] * p["K"],
         bytes=lambda p: 2.0 * p["N"] * p["K"] + 2.0 * p["K"] + 8.0 * p["N"],
         idiom="decode GEMV with a fused epilogue: bf16 W [N, K] row-major in row blocks, acc += tl.sum(w * "
               "x[None, :], axis=1) in fp32 over a K loop, y = s * acc + r (fp32 per-row scale, bf16 residual)"),
    Case("grouped_gemm_ptrs_f16", grouped_gemm_ptrs_kernel, grouped_inputs, grouped_outputs, grouped_ref,
         grouped_launch,
         gpu={"groups": [[4096, 2048, 1024], [1024, 4096, 2048], [2048, 1024, 4096], [512, 1536, 2048]]},
         ci={"groups": [[40, 24, 40], [17, 33, 20], [64, 16, 48], [9, 40, 24]]},
         meta={"NUM_PROGRAMS": 132, "BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "num_warps": 8, "num_stages": 3},
         ci_meta={"NUM_PROGRAMS": 4, "BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "num_warps": 2},
         tol={"float16": (1e-2, 5e-3)}, addresses=True,
         flops=lambda p: sum(2.0 * M * N * K for M, N, K in p["groups"]),
         bytes=lambda p: sum(2.0 * (M * K + K * N + M * N) for M, N, K in p["groups"]),
         idiom="grouped GEMM through pointer arrays: each group's A, B, C base addresses loaded from int64 arrays and "
               "cast by .to(tl.pointer_type(tl.float16)), its M, N, K from an int32 array, a fixed number of programs "
               "walking every group's tiles in a while loop inside the loop over groups"),
]
