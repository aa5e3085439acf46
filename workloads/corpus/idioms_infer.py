"""Seven idioms from inference and data-processing code: an fp8 (e4m3) linear layer whose operands arrive as raw uint8
bytes reinterpreted in the kernel (.to(tl.float8e4nv, bitcast=True)), `acc += tl.dot(a, b)` per K tile, scaled per
token and per output channel into bf16 with a tl.swizzle2d tile order; a per-row top-k (MoE routing over 256 experts
by tl.topk, and the top of a padded vocabulary row by a descending tl.sort then tl.gather) that also finds each
winner's column by a broadcast compare and a min-reduction; a paged KV-cache append scattering each token's K and V
heads to the slot an int64 slot mapping names (negative slots, padding tokens, masked out of the store); a per-token
dynamic int8 quantization of wide rows in two chunked passes (running |x| maximum, then tl.math.div_rn and round half
away from zero by tl.where and a truncating cast); a 5-point stencil over a 2-D image with its four halo loads masked
at the borders (zero padding) on a 2-D grid of 2-D tiles; a softmax down the columns (dim 0), each program owning a
strip of columns and walking all the rows twice (online max and sum, then normalize and store); and an embedding bag
(sum) whose programs loop over their bag's runtime range of an int64 index list."""
import numpy as np
import triton
import triton.language as tl

from workloads.corpus._case import Case, cdiv, pmap, randn, uniform


# --- 1. fp8 e4m3 linear layer, per-token and per-channel scales -----------------------------------------------------
@triton.jit
def mm_fp8_scaled_kernel(A, B, C, A_SCALE, B_SCALE, M, N, K, stride_am, stride_bn, stride_cm,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    # C[m, n] = a_scale[m] * b_scale[n] * sum_k A[m, k] * B[n, k]: activations quantized per token, the weight
    # ([out_features, in_features], as nn.Linear keeps it) per output channel. Both tensors come as uint8 buffers
    # holding e4m3 bytes, the way they are often passed around when the framework's fp8 dtype is not at hand.
    pid_m, pid_n = tl.swizzle2d(tl.program_id(0), tl.program_id(1), tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N),
                                GROUP_M)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = A + rm[:, None] * stride_am + rk[None, :]
    b_ptrs = B + rn[None, :] * stride_bn + rk[:, None]  # the [BLOCK_K, BLOCK_N] tile of B^T
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] < k_left), other=0)
        b = tl.load(b_ptrs, mask=(rk[:, None] < k_left) & (rn[None, :] < N), other=0)
        # `acc +=` rather than tl.dot(a, b, acc): on sm_90 the fp8 MMA accumulates in reduced precision, so each
        # K tile's product is summed into the float32 accumulator by an ordinary add
        acc += tl.dot(a.to(tl.float8e4nv, bitcast=True), b.to(tl.float8e4nv, bitcast=True))
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K
    a_scale = tl.load(A_SCALE + rm, mask=rm < M, other=0.0)
    b_scale = tl.load(B_SCALE + rn, mask=rn < N, other=0.0)
    c = acc * a_scale[:, None] * b_scale[None, :]
    tl.store(C + rm[:, None] * stride_cm + rn[None, :], c.to(tl.bfloat16),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


# --- 2. per-row top-k with the winners' columns ---------------------------------------------------------------------
@triton.jit
def topk_rows_kernel(X, VALS, IDX, N, stride_x, stride_o, K: tl.constexpr, BLOCK_N: tl.constexpr,
                     USE_SORT: tl.constexpr):
    # the K largest of each row, largest first, and where they were; the row is padded to a power of two with -inf
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    x = tl.load(X + row * stride_x + cols, mask=cols < N, other=float("-inf"))
    ks = tl.arange(0, K)
    if USE_SORT:
        ordered = tl.sort(x, descending=True)
        top = tl.gather(ordered, ks, 0)
    else:
        top = tl.topk(x, K)
    # each winner's column: the first one holding its value
    hit = x[None, :] == top[:, None]
    winner_cols = tl.min(tl.where(hit, cols[None, :], BLOCK_N), axis=1)
    tl.store(VALS + row * stride_o + ks, top)
    tl.store(IDX + row * stride_o + ks, winner_cols)


# --- 3. paged KV-cache append ---------------------------------------------------------------------------------------
@triton.jit
def kv_cache_append_kernel(KEY, VALUE, K_CACHE, V_CACHE, SLOT_MAPPING, num_heads, stride_key_t, stride_value_t,
                           stride_cache_page, stride_cache_slot, PAGE_SIZE: tl.constexpr, HEAD_DIM: tl.constexpr,
                           BLOCK_H: tl.constexpr):
    # token t's heads go to page slot // PAGE_SIZE, row slot % PAGE_SIZE of the cache [pages, PAGE_SIZE, H, D];
    # a negative slot marks a padding token whose K/V must not land anywhere
    tok = tl.program_id(0)
    slot = tl.load(SLOT_MAPPING + tok)
    page = slot // PAGE_SIZE
    in_page = slot % PAGE_SIZE
    heads = tl.arange(0, BLOCK_H)
    dims = tl.arange(0, HEAD_DIM)
    mask = (slot >= 0) & (heads[:, None] < num_heads)
    src = heads[:, None] * HEAD_DIM + dims[None, :]
    k = tl.load(KEY + tok * stride_key_t + src, mask=mask)
    v = tl.load(VALUE + tok * stride_value_t + src, mask=mask)
    dst = page * stride_cache_page + in_page * stride_cache_slot + src
    tl.store(K_CACHE + dst, k, mask=mask)
    tl.store(V_CACHE + dst, v, mask=mask)


# --- 4. per-token dynamic int8 quantization of wide rows --------------------------------------------------------------
@triton.jit
def quant_per_token_kernel(X, Q, SCALE, N, stride_x, stride_q, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = X + row * stride_x
    q_row = Q + row * stride_q
    # pass 1: the row's largest |x|, kept per lane across the chunks and reduced once at the end
    amax = tl.zeros([BLOCK_N], dtype=tl.float32)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        x = tl.load(x_row + cols, mask=cols < N, other=0.0).to(tl.float32)
        amax = tl.maximum(amax, tl.abs(x))
    amax = tl.maximum(tl.max(amax, axis=0), 1e-6)  # an all-zero row keeps a usable scale
    scale = tl.math.div_rn(amax, 127.0)
    tl.store(SCALE + row, scale)
    # pass 2: x / scale with IEEE division (the int8 codes must not depend on the approximate one), rounded half
    # away from zero: add +-0.5 and let the float -> int8 conversion truncate
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        x = tl.load(x_row + cols, mask=cols < N, other=0.0).to(tl.float32)
        q = tl.math.div_rn(x, scale)
        q = tl.where(q >= 0, q + 0.5, q - 0.5)
        tl.store(q_row + cols, q.to(tl.int8), mask=cols < N)


# --- 5. 5-point stencil on a 2-D image --------------------------------------------------------------------------------
@triton.jit
def stencil5_kernel(X, Y, H, W, stride_x, stride_y, c_center, c_side, BLOCK_H: tl.constexpr,
                    BLOCK_W: tl.constexpr):
    # y = c_center * x[i, j] + c_side * (x[i-1, j] + x[i+1, j] + x[i, j-1] + x[i, j+1]), zero outside the image
    rh = tl.program_id(0) * BLOCK_H + tl.arange(0, BLOCK_H)
    rw = tl.program_id(1) * BLOCK_W + tl.arange(0, BLOCK_W)
    i = rh[:, None]
    j = rw[None, :]
    row_ok = i < H
    col_ok = j < W
    p = X + i * stride_x + j
    center = tl.load(p, mask=row_ok & col_ok, other=0.0)
    up = tl.load(p - stride_x, mask=(i >= 1) & row_ok & col_ok, other=0.0)
    down = tl.load(p + stride_x, mask=(i + 1 < H) & col_ok, other=0.0)
    left = tl.load(p - 1, mask=row_ok & (j >= 1) & col_ok, other=0.0)
    right = tl.load(p + 1, mask=row_ok & (j + 1 < W), other=0.0)
    y = c_center * center + c_side * ((up + down) + (left + right))
    tl.store(Y + i * stride_y + j, y, mask=row_ok & col_ok)


# --- 6. softmax down the columns --------------------------------------------------------------------------------------
@triton.jit
def softmax_dim0_kernel(X, Y, M, N, stride_xm, stride_ym, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # softmax(x, dim=0): this program's BLOCK_N columns, all M rows, in two sweeps
    rn = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    n_mask = rn < N
    col_max = tl.full([BLOCK_N], float("-inf"), dtype=tl.float32)
    col_sum = tl.zeros([BLOCK_N], dtype=tl.float32)
    for m0 in range(0, M, BLOCK_M):
        rm = m0 + tl.arange(0, BLOCK_M)
        mask = (rm[:, None] < M) & n_mask[None, :]
        x = tl.load(X + rm[:, None] * stride_xm + rn[None, :], mask=mask, other=float("-inf")).to(tl.float32)
        new_max = tl.maximum(col_max, tl.max(x, axis=0))
        col_sum = col_sum * tl.exp(col_max - new_max) + tl.sum(tl.exp(x - new_max[None, :]), axis=0)
        col_max = new_max
    for m0 in range(0, M, BLOCK_M):
        rm = m0 + tl.arange(0, BLOCK_M)
        mask = (rm[:, None] < M) & n_mask[None, :]
        x = tl.load(X + rm[:, None] * stride_xm + rn[None, :], mask=mask, other=float("-inf")).to(tl.float32)
        y = tl.exp(x - col_max[None, :]) / col_sum[None, :]
        tl.store(Y + rm[:, None] * stride_ym + rn[None, :], y.to(Y.dtype.element_ty), mask=mask)


# --- 7. embedding bag, sum mode ---------------------------------------------------------------------------------------
@triton.jit
def embedding_bag_sum_kernel(INDICES, OFFSETS, TABLE, OUT, D, stride_table, stride_out, BLOCK_D: tl.constexpr):
    # bag b sums the table rows indices[offsets[b]:offsets[b + 1]] (an empty bag gives zeros)
    bag = tl.program_id(0)
    start = tl.load(OFFSETS + bag)
    end = tl.load(OFFSETS + bag + 1)
    cols = tl.arange(0, BLOCK_D)
    d_mask = cols < D
    acc = tl.zeros([BLOCK_D], dtype=tl.float32)
    for i in range(start, end):
        idx = tl.load(INDICES + i)
        acc += tl.load(TABLE + idx * stride_table + cols, mask=d_mask, other=0.0).to(tl.float32)
    tl.store(OUT + bag * stride_out + cols, acc, mask=d_mask)


# --- host side -------------------------------------------------------------------------------------------------------
def e4m3_values() -> np.ndarray:
    """The value of each of the 256 float8e4nv (e4m3fn) bytes: sign, 4 exponent bits (bias 7), 3 mantissa bits,
    no infinities, S.1111.111 NaN; the largest finite value is 448."""
    bits = np.arange(256)
    e = (bits >> 3) & 0xF
    m = bits & 0x7
    mag = np.where(e == 0, m * 2.0 ** -9, (8 + m) * 2.0 ** (e - 10))
    val = np.where(bits >= 128, -mag, mag)
    val[[0x7F, 0xFF]] = np.nan
    return val


E4M3 = e4m3_values()


def e4m3_bytes(v: np.ndarray) -> np.ndarray:
    """float values -> the uint8 e4m3 bytes nearest to them (clipped to +-448), without ml_dtypes."""
    pos = E4M3[:127]  # bytes 0x00..0x7E: the finite non-negative values, increasing
    a = np.minimum(np.abs(v), 448.0)
    hi = np.clip(np.searchsorted(pos, a), 1, 126)
    lo = hi - 1
    code = np.where(a - pos[lo] <= pos[hi] - a, lo, hi)
    return (code | np.where(v < 0, 0x80, 0)).astype(np.uint8)


def mm_fp8_inputs(p, rng):
    M, N, K = p["M"], p["N"], p["K"]
    # quantized tensors use most of e4m3's range; per-token / per-channel scales bring the products back down
    return {"a": e4m3_bytes(randn(rng, (M, K), "float32", 64.0)), "b": e4m3_bytes(randn(rng, (N, K), "float32", 64.0)),
            "a_scale": uniform(rng, (M,), 0.5e-2, 1.5e-2), "b_scale": uniform(rng, (N,), 0.5e-3, 1.5e-3)}


def mm_fp8_ref(p, x):
    a = E4M3[x["a"].astype(np.int64)]
    b = E4M3[x["b"].astype(np.int64)]
    M = p["M"]
    step = max(1, cdiv(M, 16))
    rows = pmap(lambda i: a[i * step:(i + 1) * step] @ b.T, cdiv(M, step))
    return {"c": np.concatenate(rows) * x["a_scale"][:, None] * x["b_scale"][None, :]}


def mm_fp8_launch(p, a, m):
    M, N, K = p["M"], p["N"], p["K"]
    grid = (cdiv(M, m["BLOCK_M"]), cdiv(N, m["BLOCK_N"]))
    return grid, [a["a"], a["b"], a["c"], a["a_scale"], a["b_scale"], M, N, K, K, K, N]


def topk_inputs(p, rng):
    # distinct values per row (a permutation of a fine grid, shifted per row): the winners' columns are unique
    R, N = p["R"], p["N"]
    grid = np.arange(N, dtype=np.float32) / np.float32(N) * np.float32(8.0) - np.float32(4.0)
    x = np.stack([rng.permutation(grid) for _ in range(R)]) + randn(rng, (R, 1), "float32", 0.5)
    return {"x": x.astype(np.float32)}


def topk_ref(p, x):
    order = np.argsort(-x["x"], axis=1, kind="stable")[:, :p["K"]]
    return {"vals": np.take_along_axis(x["x"], order, axis=1), "idx": order}


def topk_launch(p, a, m):
    R, N, K = p["R"], p["N"], p["K"]
    return (R,), [a["x"], a["vals"], a["idx"], N, N, K]


def topk_out(p):
    return {"vals": ((p["R"], p["K"]), "float32"), "idx": ((p["R"], p["K"]), "int32")}


def kv_inputs(p, rng):
    # every cache slot is written by exactly one token (pages handed out in a shuffled order), so the poisoned
    # cache must come back whole; padding tokens (slot -1) are spread among them
    P, S, H, D, pad = p["pages"], p["page_size"], p["H"], p["D"], p["pad"]
    T = P * S + pad
    slots = np.full(T, -1, np.int64)
    live = np.sort(rng.choice(T, P * S, replace=False))
    slots[live] = (rng.permutation(P)[:, None] * S + np.arange(S)[None, :]).reshape(-1)
    return {"key": randn(rng, (T, H, D), "float16"), "value": randn(rng, (T, H, D), "float16"), "slots": slots}


def kv_ref(p, x):
    P, S, H, D = p["pages"], p["page_size"], p["H"], p["D"]
    slots = x["slots"].astype(np.int64)
    live = slots >= 0
    out = {}
    for name, src in (("k_cache", "key"), ("v_cache", "value")):
        cache = np.full((P * S, H, D), np.nan)
        cache[slots[live]] = x[src][live]
        out[name] = cache.reshape(P, S, H, D)
    return out


def kv_launch(p, a, m):
    P, S, H, D, pad = p["pages"], p["page_size"], p["H"], p["D"], p["pad"]
    T = P * S + pad
    return (T,), [a["key"], a["value"], a["k_cache"], a["v_cache"], a["slots"], H, H * D, H * D, S * H * D, H * D]


def kv_out(p):
    shape = (p["pages"], p["page_size"], p["H"], p["D"])
    return {"k_cache": (shape, "float16"), "v_cache": (shape, "float16")}


def quant_ref(p, x):
    # the kernel's float32 arithmetic, step by step (IEEE division, then +-0.5 and truncation)
    x32 = x["x"].astype(np.float32)
    amax = np.maximum(np.abs(x32).max(axis=1), np.float32(1e-6))
    scale = amax / np.float32(127.0)
    q = x32 / scale[:, None]
    q = np.where(q >= 0, q + np.float32(0.5), q - np.float32(0.5)).astype(np.float32)
    return {"q": np.trunc(q), "scale": scale.astype(np.float64)}


def stencil_ref(p, x):
    v = x["x"]
    padded = np.pad(v, 1)
    side = (padded[:-2, 1:-1] + padded[2:, 1:-1]) + (padded[1:-1, :-2] + padded[1:-1, 2:])
    return {"y": p["c_center"] * v + p["c_side"] * side}


def stencil_launch(p, a, m):
    H, W = p["H"], p["W"]
    grid = (cdiv(H, m["BLOCK_H"]), cdiv(W, m["BLOCK_W"]))
    return grid, [a["x"], a["y"], H, W, W, W, p["c_center"], p["c_side"]]


def softmax_dim0_ref(p, x):
    v = x["x"]
    e = np.exp(v - v.max(axis=0, keepdims=True))
    return {"y": e / e.sum(axis=0, keepdims=True)}


def bag_inputs(p, rng):
    B, V, D, L = p["B"], p["V"], p["D"], p["max_len"]
    lengths = rng.integers(0, L + 1, B)
    lengths[rng.random(B) < 0.05] = 0  # some empty bags
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    return {"indices": rng.integers(0, V, int(offsets[-1])).astype(np.int64), "offsets": offsets,
            "table": randn(rng, (V, D), "float16")}


def bag_ref(p, x):
    offsets = x["offsets"].astype(np.int64)
    rows = x["table"][x["indices"].astype(np.int64)]
    out = np.zeros((p["B"], p["D"]))
    full = np.flatnonzero(offsets[1:] > offsets[:-1])
    if full.size:  # reduceat over the non-empty bags: each runs from its start to the next one's
        out[full] = np.add.reduceat(rows, offsets[full], axis=0)
    return {"out": out}


def bag_launch(p, a, m):
    return (p["B"],), [a["indices"], a["offsets"], a["table"], a["out"], p["D"], p["D"], p["D"]]


def bag_bytes(p):
    nnz = p["B"] * p["max_len"] / 2.0
    return 2.0 * nnz * p["D"] + 8.0 * nnz + 4.0 * p["B"] * p["D"]


MM_FP8_GPU = {"M": 4096, "N": 4096, "K": 4096}
CASES = [
    Case("mm_fp8_rowcol_scaled_bf16", mm_fp8_scaled_kernel, mm_fp8_inputs,
         lambda p: {"c": ((p["M"], p["N"]), "bfloat16")}, mm_fp8_ref, mm_fp8_launch,
         gpu=MM_FP8_GPU, ci={"M": 40, "N": 36, "K": 80},
         meta={"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 128, "GROUP_M": 8, "num_warps": 8, "num_stages": 3},
         ci_meta={"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 32, "GROUP_M": 2, "num_warps": 1, "num_stages": 2},
         tol={"bfloat16": (1e-2, 5e-3)}, flops=lambda p: 2.0 * p["M"] * p["N"] * p["K"],
         bytes=lambda p: 1.0 * (p["M"] * p["K"] + p["N"] * p["K"]) + 2.0 * p["M"] * p["N"],
         idiom="fp8 e4m3 linear: uint8 bytes reinterpreted by .to(tl.float8e4nv, bitcast=True), weight N x K read "
               "transposed, acc += tl.dot(a, b) (each K tile's fp8 product added to the fp32 accumulator), "
               "per-token x per-channel scales, bf16 out, tl.swizzle2d order"),
    Case("topk_experts_f32", topk_rows_kernel, topk_inputs, topk_out, topk_ref, topk_launch,
         gpu={"R": 65536, "N": 256, "K": 8}, ci={"R": 9, "N": 100, "K": 8},
         meta={"K": 8, "BLOCK_N": 256, "USE_SORT": False, "num_warps": 4},
         ci_meta={"K": 8, "BLOCK_N": 128, "USE_SORT": False, "num_warps": 2},
         tol={"float32": (0.0, 0.0)}, bytes=lambda p: 4.0 * p["R"] * (p["N"] + 2 * p["K"]),
         idiom="MoE router top-k: tl.topk on a -inf padded row, the winners' columns by a [K, N] compare with the "
               "row and tl.min(tl.where(hit, cols, N), axis=1), values and int32 indices out"),
    Case("topk_sort_gather_f32", topk_rows_kernel, topk_inputs, topk_out, topk_ref, topk_launch,
         gpu={"R": 16384, "N": 1000, "K": 16}, ci={"R": 6, "N": 50, "K": 4},
         meta={"K": 16, "BLOCK_N": 1024, "USE_SORT": True, "num_warps": 4},
         ci_meta={"K": 4, "BLOCK_N": 64, "USE_SORT": True, "num_warps": 2},
         tol={"float32": (0.0, 0.0)}, bytes=lambda p: 4.0 * p["R"] * (p["N"] + 2 * p["K"]),
         idiom="top-k of a padded row by a full descending tl.sort and tl.gather of its first K; winners' columns "
               "by broadcast compare + min"),
    Case("kv_cache_append_f16", kv_cache_append_kernel, kv_inputs, kv_out, kv_ref, kv_launch,
         gpu={"pages": 2048, "page_size": 16, "H": 8, "D": 128, "pad": 1024},
         ci={"pages": 5, "page_size": 4, "H": 3, "D": 16, "pad": 7},
         meta={"PAGE_SIZE": 16, "HEAD_DIM": 128, "BLOCK_H": 8, "num_warps": 4},
         ci_meta={"PAGE_SIZE": 4, "HEAD_DIM": 16, "BLOCK_H": 4, "num_warps": 1},
         tol={"float16": (0.0, 0.0)},
         bytes=lambda p: 8.0 * p["pages"] * p["page_size"] * p["H"] * p["D"],
         idiom="vLLM-style reshape_and_cache: int64 slot mapping -> (slot // PAGE_SIZE, slot % PAGE_SIZE), "
               "[heads, D] tile scattered into a paged cache, slot < 0 (padding) masked out of loads and stores"),
    Case("quant_per_token_looped_i8", quant_per_token_kernel,
         lambda p, rng: {"x": randn(rng, (p["M"], p["N"]), "float16", 2.0)},
         lambda p: {"q": ((p["M"], p["N"]), "int8"), "scale": ((p["M"],), "float32")}, quant_ref,
         lambda p, a, m: ((p["M"],), [a["x"], a["q"], a["scale"], p["N"], p["N"], p["N"]]),
         gpu={"M": 8192, "N": 16384}, ci={"M": 5, "N": 300},
         meta={"BLOCK_N": 2048, "num_warps": 8}, ci_meta={"BLOCK_N": 64, "num_warps": 2},
         tol={"float32": (0.0, 0.0)}, flops=lambda p: 4.0 * p["M"] * p["N"], bytes=lambda p: 5.0 * p["M"] * p["N"],
         idiom="dynamic per-token int8 quantization of rows wider than a block: a per-lane running max of |x| over "
               "a chunk loop, tl.math.div_rn, round half away from zero by tl.where(q >= 0, q + 0.5, q - 0.5) and "
               "a truncating .to(tl.int8), second chunk loop"),
    Case("stencil5_2d_f32", stencil5_kernel, lambda p, rng: {"x": randn(rng, (p["H"], p["W"]), "float32")},
         lambda p: {"y": ((p["H"], p["W"]), "float32")}, stencil_ref, stencil_launch,
         gpu={"H": 8192, "W": 8192, "c_center": 0.5, "c_side": 0.125},
         ci={"H": 37, "W": 45, "c_center": 0.5, "c_side": 0.125},
         meta={"BLOCK_H": 32, "BLOCK_W": 64, "num_warps": 4}, ci_meta={"BLOCK_H": 16, "BLOCK_W": 16, "num_warps": 2},
         tol={"float32": (5e-7, 5e-8)}, flops=lambda p: 6.0 * p["H"] * p["W"], bytes=lambda p: 8.0 * p["H"] * p["W"],
         idiom="5-point stencil: 2-D grid of 2-D tiles, halo loads at p +- stride and p +- 1 masked at the image "
               "borders (other=0: zero padding), runtime float coefficients"),
    Case("softmax_dim0_f16", softmax_dim0_kernel, lambda p, rng: {"x": randn(rng, (p["M"], p["N"]), "float16", 1.5)},
         lambda p: {"y": ((p["M"], p["N"]), "float16")}, softmax_dim0_ref,
         lambda p, a, m: ((cdiv(p["N"], m["BLOCK_N"]),), [a["x"], a["y"], p["M"], p["N"], p["N"], p["N"]]),
         gpu={"M": 4096, "N": 16384}, ci={"M": 70, "N": 50},
         meta={"BLOCK_M": 64, "BLOCK_N": 64, "num_warps": 4}, ci_meta={"BLOCK_M": 16, "BLOCK_N": 16, "num_warps": 2},
         tol={"float16": (1e-3, 1e-4)}, flops=lambda p: 8.0 * p["M"] * p["N"], bytes=lambda p: 6.0 * p["M"] * p["N"],
         idiom="softmax over dim 0: a strip of BLOCK_N columns per program, an online column max / sum over all "
               "rows (tl.max / tl.sum axis=0, rescaling by exp(old - new)), then a second sweep normalizing"),
    Case("embedding_bag_sum_f16", embedding_bag_sum_kernel, bag_inputs,
         lambda p: {"out": ((p["B"], p["D"]), "float32")}, bag_ref, bag_launch,
         gpu={"B": 16384, "V": 200000, "D": 256, "max_len": 64}, ci={"B": 9, "V": 50, "D": 40, "max_len": 6},
         meta={"BLOCK_D": 256, "num_warps": 2}, ci_meta={"BLOCK_D": 64, "num_warps": 1},
         tol={"float32": (5e-7, 5e-8)}, flops=lambda p: p["B"] * p["max_len"] / 2.0 * p["D"], bytes=bag_bytes,
         idiom="nn.EmbeddingBag(mode='sum'): int32 offsets, for i in range(start, end) with runtime bounds, a scalar "
               "int64 index load per step, fp16 rows summed in fp32, empty bags written as zeros"),
]
