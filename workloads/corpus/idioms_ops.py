"""Seven idioms from operator libraries: a LayerNorm forward over rows too long for one block, its statistics from a
single looped pass of Welford / Chan merges (each chunk's count, mean and M2 folded into the running ones) and a
second loop normalizing, fp16 in and out with fp32 weight and bias, the row's mean and 1/std saved; sampling the
next token from logits by the Gumbel-max trick, tl.rand(seed, offsets) noise turned into Gumbel noise, added to the
temperature-scaled logits and reduced by a running tl.max(..., return_indices=True) over vocabulary chunks (the last
padded with -inf), the drawn uniforms also written out so the reference can use the same draw; a GPT-J style rotary
embedding on interleaved pairs (x[2i], x[2i+1]) taken apart by tl.reshape + tl.split and put back by tl.join +
tl.reshape; a cumulative sum along very long rows in chunks, each chunk's tl.cumsum shifted by the carried total
of the chunks before it; a batch of many tiny (16 x 16) matrix products, each program looping over its share of the
batch with one tl.dot per pair; a CSR sparse matrix times dense vector, one row per program walking its runtime
range of nonzeros in masked chunks and gathering x through the column indices; and the backward of a 2x2 max pool,
the forward's per-plane argmax indices scattering the output gradient into a zeroed input gradient by
tl.atomic_add."""
import numpy as np
import triton
import triton.language as tl

from workloads.corpus._case import Case, cdiv, pmap, randn, uniform


# --- 1. LayerNorm forward, looped Welford statistics ------------------------------------------------------------------
@triton.jit
def layernorm_welford_kernel(X, Y, W, B, MEAN, RSTD, N, stride_x, stride_y, eps, BLOCK_N: tl.constexpr):
    # one row per program. Pass 1 reads the row once: every chunk's own mean and sum of squared deviations are
    # merged into the running ones (Chan et al.), which stays accurate when |mean| >> std, unlike sum / sum of
    # squares. Pass 2 reads the row again (from L2 by then) and writes (x - mean) * rstd * w + b.
    row = tl.program_id(0).to(tl.int64)
    x_row = X + row * stride_x
    count = 0.0
    mean = 0.0
    m2 = 0.0
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = cols < N
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        n_chunk = tl.minimum(N - start, BLOCK_N).to(tl.float32)
        chunk_mean = tl.sum(x, axis=0) / n_chunk
        dev = tl.where(mask, x - chunk_mean, 0.0)
        chunk_m2 = tl.sum(dev * dev, axis=0)
        total = count + n_chunk
        delta = chunk_mean - mean
        mean += delta * (n_chunk / total)
        m2 += chunk_m2 + delta * delta * (count * n_chunk / total)
        count = total
    rstd = 1.0 / tl.sqrt(m2 / N + eps)
    tl.store(MEAN + row, mean)
    tl.store(RSTD + row, rstd)
    y_row = Y + row * stride_y
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = cols < N
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(W + cols, mask=mask, other=0.0)
        b = tl.load(B + cols, mask=mask, other=0.0)
        y = (x - mean) * rstd * w + b
        tl.store(y_row + cols, y.to(tl.float16), mask=mask)


# --- 2. Gumbel-max sampling from logits -------------------------------------------------------------------------------
@triton.jit
def gumbel_sample_kernel(LOGITS, NOISE, TOKENS, V, stride_logits, stride_noise, temperature, seed,
                         BLOCK_V: tl.constexpr):
    # token = argmax_v(logits[v] / T + g[v]) with g = -log(-log(u)), u ~ U(0, 1): an exact sample of
    # softmax(logits / T) without the softmax. Each element's counter is its flat index, so a row's draw does not
    # depend on the block size. The uniforms also go to NOISE (a debugging aid, and what the test checks against).
    row = tl.program_id(0)
    best = float("-inf")
    best_idx = 0
    for start in range(0, V, BLOCK_V):
        cols = start + tl.arange(0, BLOCK_V)
        mask = cols < V
        logit = tl.load(LOGITS + row * stride_logits + cols, mask=mask, other=float("-inf")).to(tl.float32)
        u = tl.rand(seed, row * V + cols)
        tl.store(NOISE + row * stride_noise + cols, u, mask=mask)
        # g = -log(E) with E = -log(u) ~ Exp(1): u = 0 gives E = inf, g = -inf (never chosen); the floor keeps g
        # finite should E come out 0 just below u = 1
        expo = tl.maximum(-tl.log(u), 1e-10)
        score = logit / temperature - tl.log(expo)  # padding: -inf - finite stays -inf
        chunk_best, chunk_idx = tl.max(score, axis=0, return_indices=True)
        better = chunk_best > best  # strict: an equal later chunk does not win, as argmax keeps the first
        best_idx = tl.where(better, start + chunk_idx, best_idx)
        best = tl.where(better, chunk_best, best)
    tl.store(TOKENS + row, best_idx)


# --- 3. rotary embedding, interleaved (GPT-J) pairs -------------------------------------------------------------------
@triton.jit
def rope_interleaved_kernel(X, COS, SIN, Y, n_heads, stride_xt, stride_xh, stride_yt, stride_yh, stride_cs,
                            HEAD_DIM: tl.constexpr, BLOCK_H: tl.constexpr):
    # one program per token, all its heads: feature pairs (2i, 2i+1) are rotated by the angle of frequency i,
    # (e, o) -> (e cos - o sin, e sin + o cos). The pairs are adjacent in memory, so the [heads, D] tile is viewed
    # as [heads, D/2, 2] and split into its even and odd halves, and the rotated halves joined back.
    tok = tl.program_id(0).to(tl.int64)
    heads = tl.arange(0, BLOCK_H)
    dims = tl.arange(0, HEAD_DIM)
    half = tl.arange(0, HEAD_DIM // 2)
    h_mask = heads[:, None] < n_heads
    x = tl.load(X + tok * stride_xt + heads[:, None] * stride_xh + dims[None, :], mask=h_mask, other=0.0)
    x = x.to(tl.float32)
    even, odd = tl.split(tl.reshape(x, (BLOCK_H, HEAD_DIM // 2, 2)))
    cos = tl.load(COS + tok * stride_cs + half)[None, :]
    sin = tl.load(SIN + tok * stride_cs + half)[None, :]
    y = tl.reshape(tl.join(even * cos - odd * sin, even * sin + odd * cos), (BLOCK_H, HEAD_DIM))
    tl.store(Y + tok * stride_yt + heads[:, None] * stride_yh + dims[None, :], y.to(Y.dtype.element_ty), mask=h_mask)


# --- 4. cumulative sum along long rows, chunk by chunk ----------------------------------------------------------------
@triton.jit
def cumsum_long_rows_kernel(X, Y, N, stride_x, stride_y, BLOCK_N: tl.constexpr):
    # one row per program: each chunk is scanned on its own and shifted by the sum of everything before it
    row = tl.program_id(0).to(tl.int64)
    carry = 0.0
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = cols < N
        x = tl.load(X + row * stride_x + cols, mask=mask, other=0.0)
        tl.store(Y + row * stride_y + cols, tl.cumsum(x, axis=0) + carry, mask=mask)
        carry += tl.sum(x, axis=0)


# --- 5. a batch of tiny matrix products -------------------------------------------------------------------------------
@triton.jit
def tiny_bmm_kernel(A, B, C, n_batch, BATCH_PER_PROG: tl.constexpr, S: tl.constexpr):
    # C[i] = A[i] @ B[i] for a batch of contiguous S x S matrices; one program would do far too little work on a
    # single product, so each takes BATCH_PER_PROG consecutive ones (the last program's tail masked off)
    first = tl.program_id(0) * BATCH_PER_PROG
    r = tl.arange(0, S)
    tile = r[:, None] * S + r[None, :]
    for i in range(BATCH_PER_PROG):
        mat = first + i
        ok = mat < n_batch
        base = mat.to(tl.int64) * (S * S)
        a = tl.load(A + base + tile, mask=ok, other=0.0)
        b = tl.load(B + base + tile, mask=ok, other=0.0)
        tl.store(C + base + tile, tl.dot(a, b), mask=ok)


# --- 6. CSR sparse matrix x dense vector ------------------------------------------------------------------------------
@triton.jit
def spmv_csr_kernel(INDPTR, INDICES, DATA, X, Y, BLOCK: tl.constexpr):
    # y[row] = sum over the row's nonzeros of data[k] * x[indices[k]], k in [indptr[row], indptr[row + 1]): the
    # rows have different lengths, so the loop bounds are read at run time; an empty row stores 0
    row = tl.program_id(0)
    start = tl.load(INDPTR + row)
    end = tl.load(INDPTR + row + 1)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for k in range(start, end, BLOCK):
        offs = k + tl.arange(0, BLOCK)
        mask = offs < end
        col = tl.load(INDICES + offs, mask=mask, other=0)
        val = tl.load(DATA + offs, mask=mask, other=0.0)
        acc += val * tl.load(X + col, mask=mask, other=0.0)
    tl.store(Y + row, tl.sum(acc, axis=0))


# --- 7. max-pool 2x2 backward by scattered atomics --------------------------------------------------------------------
@triton.jit
def maxpool_bwd_scatter_kernel(GRAD_OUT, INDICES, GRAD_IN, total, out_plane, in_plane, BLOCK: tl.constexpr):
    # every pooled output sends its gradient to the input element that won its window; the forward saved that
    # element's index inside its (n, c) plane (as torch's max_pool2d(return_indices=True) does). Windows that
    # overlap would send several gradients to one element, hence the atomics; grad_in starts zeroed.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    g = tl.load(GRAD_OUT + offs, mask=mask, other=0.0)
    idx = tl.load(INDICES + offs, mask=mask, other=0)
    plane = offs // out_plane
    tl.atomic_add(GRAD_IN + plane * in_plane + idx, g, mask=mask)


# --- host side --------------------------------------------------------------------------------------------------------
def ln_inputs(p, rng):
    # rows with a large common offset: the one-pass statistics must not cancel catastrophically
    M, N = p["M"], p["N"]
    return {"x": randn(rng, (M, N), "float16", 1.0, 4.0), "w": uniform(rng, (N,), 0.5, 1.5),
            "b": randn(rng, (N,), "float32", 0.1)}


def ln_ref(p, x):
    def rows(i):  # a slice of rows (on a thread pool: the GPU size has 4096 rows of 16384)
        v = x["x"][i * step:(i + 1) * step]
        mean = v.mean(axis=1)
        rstd = 1.0 / np.sqrt(v.var(axis=1) + p["eps"])
        return (v - mean[:, None]) * rstd[:, None] * x["w"][None, :] + x["b"][None, :], mean, rstd

    step = max(1, cdiv(p["M"], 32))
    parts = pmap(rows, cdiv(p["M"], step))
    return {k: np.concatenate([q[j] for q in parts]) for j, k in enumerate(("y", "mean", "rstd"))}


def ln_launch(p, a, m):
    M, N = p["M"], p["N"]
    return (M,), [a["x"], a["y"], a["w"], a["b"], a["mean"], a["rstd"], N, N, N, p["eps"]]


def ln_out(p):
    return {"y": ((p["M"], p["N"]), "float16"), "mean": ((p["M"],), "float32"), "rstd": ((p["M"],), "float32")}


class GumbelSampleCase(Case):
    """A case whose token reference needs the uniforms the kernel drew (Triton's Philox bits, not reimplemented
    here): the reference gives the float64 temperature-scaled logits in place of the tokens, and `check` adds the
    Gumbel noise of the kernel's own NOISE output, after checking that every uniform lies in (0, 1).

    The token must be the argmax exactly, except in a row whose two best scores are closer than the kernel's
    float32 arithmetic can tell apart (a few ulp of each term: tl.log is libdevice's logf, within 1 ulp, in
    Triton; `/` is div.full.f32, within 2): there, any token within that error of the best is accepted. At the GPU
    size no row comes closer than 1e-3 (the error is ~1e-5), so the check is exact there."""

    def check(self, p, got, ref):
        u = np.asarray(got["noise"], np.float32)
        outside = int(np.count_nonzero(~((u > 0) & (u < 1))))  # NaN, the poison of an unwritten one, included
        res = {"noise": (outside == 0, float(outside),
                         f"{outside} of {u.size} not in (0, 1)" if outside else f"all {u.size} in (0, 1)")}
        with np.errstate(invalid="ignore", divide="ignore"):
            gumbel = -np.log(np.maximum(-np.log(u.astype(np.float64)), 1e-10))
        rows = np.arange(u.shape[0])
        score = ref["tokens"] + gumbel
        want = np.argmax(score, axis=1)
        tok = np.asarray(got["tokens"]).astype(np.int64)
        in_range = (tok >= 0) & (tok < u.shape[1])
        k = np.where(in_range, tok, want)

        def slack(j):  # ~4 ulp of each float32 term of score[row, j]
            scaled, g = ref["tokens"][rows, j], gumbel[rows, j]
            return 2.0 ** -21 * (1.0 + np.abs(scaled) + np.abs(g) + np.abs(scaled + g))

        near = score[rows, k] + slack(k) >= score[rows, want] - slack(want)
        exact = in_range & (tok == want)
        bad = int(np.count_nonzero(~(exact | (in_range & near))))
        ties = int(np.count_nonzero(in_range & ~exact & near))
        msg = f"{bad} of {tok.size} rows not the argmax" if bad else "exact" if not ties else \
            f"exact but for {ties} of {tok.size} rows whose best scores lie within float32 error"
        res["tokens"] = (bad == 0, float(bad), msg)
        return res

    def as_workload(self, source_file: str = ""):
        return None  # the farm checks outputs against a reference made from the inputs alone


def sample_ref(p, x):
    # noise: a placeholder (check() asks for uniforms in (0, 1)); tokens: the scaled logits, to which check() adds
    # the Gumbel noise of the kernel's own draw
    return {"noise": np.broadcast_to(np.float64(0.5), (p["R"], p["V"])), "tokens": x["logits"] / p["temperature"]}


def sample_launch(p, a, m):
    R, V = p["R"], p["V"]
    return (R,), [a["logits"], a["noise"], a["tokens"], V, V, V, p["temperature"], p["seed"]]


def rope_inputs(p, rng):
    T, H, D = p["T"], p["H"], p["D"]
    # the tables of positions 0..T-1 with the usual frequencies base^(-2i/D)
    inv_freq = 10000.0 ** (-np.arange(0, D, 2, dtype=np.float64) / D)
    angle = np.arange(T, dtype=np.float64)[:, None] * inv_freq[None, :]
    return {"x": randn(rng, (T, H, D), "float16"), "cos": np.cos(angle).astype(np.float32),
            "sin": np.sin(angle).astype(np.float32)}


def rope_ref(p, x):
    v = x["x"]
    e, o = v[..., 0::2], v[..., 1::2]
    c, s = x["cos"][:, None, :], x["sin"][:, None, :]
    y = np.empty_like(v)
    y[..., 0::2] = e * c - o * s
    y[..., 1::2] = e * s + o * c
    return {"y": y}


def rope_launch(p, a, m):
    T, H, D = p["T"], p["H"], p["D"]
    return (T,), [a["x"], a["cos"], a["sin"], a["y"], H, H * D, D, H * D, D, D // 2]


def tiny_bmm_ref(p, x):
    step = max(1, cdiv(p["batch"], 64))
    return {"c": np.concatenate(pmap(lambda i: x["a"][i * step:(i + 1) * step] @ x["b"][i * step:(i + 1) * step],
                                     cdiv(p["batch"], step)))}


def tiny_bmm_launch(p, a, m):
    n = p["batch"]
    return (cdiv(n, m["BATCH_PER_PROG"]),), [a["a"], a["b"], a["c"], n]


def spmv_inputs(p, rng):
    # row lengths uniform in [0, 2 * avg], some rows empty; columns drawn independently (repeats allowed: CSR
    # with duplicates sums them, as the reference does)
    M, N, avg = p["M"], p["N"], p["avg_nnz"]
    lengths = rng.integers(0, 2 * avg + 1, M)
    lengths[rng.random(M) < 0.02] = 0
    indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    nnz = int(indptr[-1])
    return {"indptr": indptr, "indices": rng.integers(0, N, nnz).astype(np.int32),
            "data": randn(rng, (nnz,), "float32"), "x": randn(rng, (N,), "float32")}


def spmv_ref(p, x):
    indptr = x["indptr"].astype(np.int64)
    rows = np.repeat(np.arange(p["M"]), np.diff(indptr))
    prod = x["data"] * x["x"][x["indices"].astype(np.int64)]
    return {"y": np.bincount(rows, weights=prod, minlength=p["M"])}


def spmv_bytes(p):
    nnz = p["M"] * p["avg_nnz"]
    return 12.0 * nnz + 8.0 * p["M"]


def pool_inputs(p, rng):
    # the forward's winners: one element of each 2x2 window (stride 2, floor mode: an odd last row / column of
    # the input belongs to no window and gets no gradient), as an index into its (n, c) plane
    N, C, H, W = p["N"], p["C"], p["H"], p["W"]
    OH, OW = H // 2, W // 2
    dy = rng.integers(0, 2, (N, C, OH, OW))
    dx = rng.integers(0, 2, (N, C, OH, OW))
    rows = 2 * np.arange(OH)[:, None] + dy
    cols = 2 * np.arange(OW)[None, :] + dx
    return {"grad_out": randn(rng, (N, C, OH, OW), "float32"), "indices": (rows * W + cols).astype(np.int32)}


def pool_ref(p, x):
    N, C, H, W = p["N"], p["C"], p["H"], p["W"]
    planes = np.arange(N * C)[:, None] * (H * W)
    grad_in = np.zeros(N * C * H * W)
    np.add.at(grad_in, (planes + x["indices"].astype(np.int64).reshape(N * C, -1)).ravel(), x["grad_out"].ravel())
    return {"grad_in": grad_in.reshape(N, C, H, W)}


def pool_bytes(p):
    n_out = p["N"] * p["C"] * (p["H"] // 2) * (p["W"] // 2)
    return 8.0 * n_out + 4.0 * p["N"] * p["C"] * p["H"] * p["W"]  # grad_out and indices read, grad_in written


def pool_launch(p, a, m):
    N, C, H, W = p["N"], p["C"], p["H"], p["W"]
    OH, OW = H // 2, W // 2
    total = N * C * OH * OW
    return (cdiv(total, m["BLOCK"]),), [a["grad_out"], a["indices"], a["grad_in"], total, OH * OW, H * W]


CASES = [
    Case("layernorm_welford_looped_f16", layernorm_welford_kernel, ln_inputs, ln_out, ln_ref, ln_launch,
         gpu={"M": 4096, "N": 16384, "eps": 1e-5}, ci={"M": 5, "N": 700, "eps": 1e-5},
         meta={"BLOCK_N": 2048, "num_warps": 8}, ci_meta={"BLOCK_N": 128, "num_warps": 2},
         tol={"float16": (1e-3, 1e-5), "float32": (5e-7, 5e-8)},
         flops=lambda p: 9.0 * p["M"] * p["N"], bytes=lambda p: 4.0 * p["M"] * p["N"] + 8.0 * p["N"],
         idiom="LayerNorm forward over rows longer than a block: one looped pass merging each chunk's (count, "
               "mean, M2) into the running ones (Chan / Welford), scalar loop-carried statistics, then a second "
               "loop normalizing; fp16 x and y, fp32 weight and bias, mean and rstd saved"),
    GumbelSampleCase(
        "gumbel_sample_vocab_f32", gumbel_sample_kernel,
        lambda p, rng: {"logits": randn(rng, (p["R"], p["V"]), "float32", 3.0)},
        lambda p: {"noise": ((p["R"], p["V"]), "float32"), "tokens": ((p["R"],), "int32")}, sample_ref,
        sample_launch,
        gpu={"R": 1024, "V": 32000, "temperature": 0.7, "seed": 1234},
        ci={"R": 6, "V": 1000, "temperature": 0.7, "seed": 1234},
        meta={"BLOCK_V": 4096, "num_warps": 8}, ci_meta={"BLOCK_V": 256, "num_warps": 2},
        flops=lambda p: 8.0 * p["R"] * p["V"],
        bytes=lambda p: 8.0 * p["R"] * p["V"] + 4.0 * p["R"],
        idiom="Gumbel-max sampling: tl.rand(seed, row * V + cols) -> -log(-log(u)) added to logits / temperature, "
              "a running tl.max(score, axis=0, return_indices=True) over vocabulary chunks (the last padded with "
              "-inf) kept by tl.where on scalars, int32 token ids out, the uniforms written out too"),
    Case("rope_interleaved_f16", rope_interleaved_kernel, rope_inputs,
         lambda p: {"y": ((p["T"], p["H"], p["D"]), "float16")}, rope_ref, rope_launch,
         gpu={"T": 16384, "H": 32, "D": 128}, ci={"T": 7, "H": 3, "D": 16},
         meta={"HEAD_DIM": 128, "BLOCK_H": 32, "num_warps": 4}, ci_meta={"HEAD_DIM": 16, "BLOCK_H": 4, "num_warps": 1},
         tol={"float16": (1e-3, 1e-5)}, flops=lambda p: 3.0 * p["T"] * p["H"] * p["D"],
         bytes=lambda p: 4.0 * p["T"] * p["H"] * p["D"] + 4.0 * p["T"] * p["D"],
         idiom="GPT-J rotary embedding on interleaved pairs: the [heads, D] tile tl.reshape'd to [heads, D/2, 2] "
               "and tl.split into even / odd, rotated by fp32 cos / sin rows broadcast over heads, tl.join + "
               "tl.reshape back to [heads, D]; heads masked"),
    Case("cumsum_long_rows_f32", cumsum_long_rows_kernel, lambda p, rng: {"x": randn(rng, (p["M"], p["N"]))},
         lambda p: {"y": ((p["M"], p["N"]), "float32")}, lambda p, x: {"y": np.cumsum(x["x"], axis=1)},
         lambda p, a, m: ((p["M"],), [a["x"], a["y"], p["N"], p["N"], p["N"]]),
         gpu={"M": 1024, "N": 65536}, ci={"M": 4, "N": 1000},
         meta={"BLOCK_N": 4096, "num_warps": 8}, ci_meta={"BLOCK_N": 128, "num_warps": 2},
         tol={"float32": (1.5e-5, 1.5e-6)}, flops=lambda p: 2.0 * p["M"] * p["N"],
         bytes=lambda p: 8.0 * p["M"] * p["N"],
         idiom="prefix sum of rows longer than a block: tl.cumsum(axis=0) per chunk plus a scalar running total "
               "carried through the loop (carry += tl.sum(chunk))"),
    Case("tiny_bmm16_f16", tiny_bmm_kernel,
         lambda p, rng: {"a": randn(rng, (p["batch"], 16, 16), "float16"),
                         "b": randn(rng, (p["batch"], 16, 16), "float16")},
         lambda p: {"c": ((p["batch"], 16, 16), "float32")}, tiny_bmm_ref, tiny_bmm_launch,
         gpu={"batch": 262144}, ci={"batch": 37},
         meta={"BATCH_PER_PROG": 16, "S": 16, "num_warps": 2}, ci_meta={"BATCH_PER_PROG": 4, "S": 16, "num_warps": 1},
         tol={"float32": (2e-6, 2e-7)}, flops=lambda p: 2.0 * 16 ** 3 * p["batch"],
         bytes=lambda p: 8.0 * 16 * 16 * p["batch"],
         idiom="a large batch of 16x16 fp16 matmuls: each program loops over BATCH_PER_PROG consecutive "
               "matrices (int64 base offsets), one tl.dot per pair, the batch tail masked, fp32 out"),
    Case("spmv_csr_f32", spmv_csr_kernel, spmv_inputs, lambda p: {"y": ((p["M"],), "float32")}, spmv_ref,
         lambda p, a, m: ((p["M"],), [a["indptr"], a["indices"], a["data"], a["x"], a["y"]]),
         gpu={"M": 1 << 20, "N": 1 << 20, "avg_nnz": 32}, ci={"M": 40, "N": 50, "avg_nnz": 10},
         meta={"BLOCK": 64, "num_warps": 2}, ci_meta={"BLOCK": 8, "num_warps": 1},
         tol={"float32": (1.5e-6, 1.5e-7)}, flops=lambda p: 2.0 * p["M"] * p["avg_nnz"], bytes=spmv_bytes,
         idiom="CSR SpMV, one row per program: int32 indptr bounds loaded at run time, for k in range(start, "
               "end, BLOCK) with masked chunks, x gathered through int32 column indices, fp32 lane accumulator "
               "reduced once"),
    Case("maxpool2x2_bwd_atomic_f32", maxpool_bwd_scatter_kernel, pool_inputs,
         lambda p: {"grad_in": ((p["N"], p["C"], p["H"], p["W"]), "float32")}, pool_ref, pool_launch,
         gpu={"N": 64, "C": 128, "H": 112, "W": 112}, ci={"N": 2, "C": 3, "H": 13, "W": 11},
         meta={"BLOCK": 1024, "num_warps": 4}, ci_meta={"BLOCK": 64, "num_warps": 2},
         tol={"float32": (0.0, 0.0)}, zero=("grad_in",),
         bytes=pool_bytes,
         idiom="max-pool 2x2 backward: the forward's int32 argmax (an index inside each (n, c) plane) turned into "
               "a flat address by offs // plane size, grad_out scattered with tl.atomic_add into a zeroed "
               "grad_in"),
]
