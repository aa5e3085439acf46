"""Ten more idioms from training and inference code: a fused AdamW step (four inputs, three outputs, float scalar
hyper-parameters), 3x3 / stride-2 max pooling over NCHW with computed strides and tl.static_range taps, log-softmax
backward, a bias + GELU backward over a flat index (column = offset % N), a Mamba-style causal depthwise conv1d
looping over its taps, a segment mean by tl.atomic_add through a segment-id tensor, a persistent matmul whose tile
loop strides by the number of SMs with a hand-written grouped order and row/column scales, de-interleaving even and
odd columns by stride-2 loads, a two-pass column variance (axis-0 reductions, tl.sqrt_rn), and a safe division
cleaned by a NaN test (x != x) and tl.clamp in a grid-stride loop over tl.num_programs(0)."""
import math

import numpy as np
import triton
import triton.language as tl

from workloads.corpus._case import Case, cdiv, erf, randn, uniform


# --- 1. fused AdamW step -------------------------------------------------------------------------------------------
@triton.jit
def adamw_step_kernel(PARAM, GRAD, EXP_AVG, EXP_AVG_SQ, PARAM_OUT, EXP_AVG_OUT, EXP_AVG_SQ_OUT, n_elements,
                      lr, beta1, beta2, eps, weight_decay, bias_correction1, bias_correction2_sqrt,
                      BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    param = tl.load(PARAM + offsets, mask=mask)
    grad = tl.load(GRAD + offsets, mask=mask).to(tl.float32)  # bf16 gradients, fp32 master weights and moments
    exp_avg = tl.load(EXP_AVG + offsets, mask=mask)
    exp_avg_sq = tl.load(EXP_AVG_SQ + offsets, mask=mask)
    # decoupled weight decay, then the moment updates
    param = param * (1.0 - lr * weight_decay)
    exp_avg = beta1 * exp_avg + (1.0 - beta1) * grad
    exp_avg_sq = beta2 * exp_avg_sq + (1.0 - beta2) * grad * grad
    denom = tl.sqrt(exp_avg_sq) / bias_correction2_sqrt + eps
    step_size = lr / bias_correction1
    param = param - step_size * (exp_avg / denom)
    tl.store(PARAM_OUT + offsets, param, mask=mask)
    tl.store(EXP_AVG_OUT + offsets, exp_avg, mask=mask)
    tl.store(EXP_AVG_SQ_OUT + offsets, exp_avg_sq, mask=mask)


# --- 2. 2-D max pooling over NCHW -----------------------------------------------------------------------------------
@triton.jit
def max_pool2d_kernel(X, Y, C, H, W, OH, OW, stride_xn, stride_xc, stride_xh, stride_yn, stride_yc, stride_yh,
                      KSIZE: tl.constexpr, STRIDE: tl.constexpr, PAD: tl.constexpr, BLOCK_H: tl.constexpr,
                      BLOCK_W: tl.constexpr):
    pid_nc = tl.program_id(0)
    n = pid_nc // C
    c = pid_nc % C
    oh = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
    ow = tl.program_id(2) * BLOCK_W + tl.arange(0, BLOCK_W)
    x_plane = X + n * stride_xn + c * stride_xc
    best = tl.full([BLOCK_H, BLOCK_W], float("-inf"), dtype=tl.float32)
    for kh in tl.static_range(KSIZE):
        ih = oh * STRIDE - PAD + kh
        h_ok = (ih >= 0) & (ih < H)
        for kw in tl.static_range(KSIZE):
            iw = ow * STRIDE - PAD + kw
            w_ok = (iw >= 0) & (iw < W)
            v = tl.load(x_plane + ih[:, None] * stride_xh + iw[None, :], mask=h_ok[:, None] & w_ok[None, :],
                        other=float("-inf"))
            best = tl.maximum(best, v.to(tl.float32))
    out_mask = (oh[:, None] < OH) & (ow[None, :] < OW)
    y_ptrs = Y + n * stride_yn + c * stride_yc + oh[:, None] * stride_yh + ow[None, :]
    tl.store(y_ptrs, best.to(Y.dtype.element_ty), mask=out_mask)


# --- 3. log-softmax backward ----------------------------------------------------------------------------------------
@triton.jit
def log_softmax_bwd_kernel(DX, DY, Y, stride_dx, stride_dy, stride_y, n_cols, BLOCK_N: tl.constexpr):
    # y = log_softmax(x): dx = dy - exp(y) * sum(dy)
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    dy = tl.load(DY + row * stride_dy + cols, mask=mask, other=0.0).to(tl.float32)
    y = tl.load(Y + row * stride_y + cols, mask=mask, other=float("-inf")).to(tl.float32)
    dy_sum = tl.sum(dy, axis=0)
    dx = dy - tl.exp(y) * dy_sum
    tl.store(DX + row * stride_dx + cols, dx.to(DX.dtype.element_ty), mask=mask)


# --- 4. bias + GELU backward ----------------------------------------------------------------------------------------
@triton.jit
def bias_gelu_bwd_kernel(DY, X, BIAS, DX, n_elements, N, BLOCK: tl.constexpr):
    # the forward was y = gelu(x + bias[col]) on a row-major (M, N) tensor, walked here as one flat array
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    col = offs % N
    x = tl.load(X + offs, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(BIAS + col, mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(DY + offs, mask=mask, other=0.0).to(tl.float32)
    z = x + b
    cdf = 0.5 * (1.0 + tl.erf(z * 0.7071067811865476))
    pdf = tl.exp(-0.5 * z * z) * 0.3989422804014327
    dx = dy * (cdf + z * pdf)
    tl.store(DX + offs, dx.to(DX.dtype.element_ty), mask=mask)


# --- 5. causal depthwise conv1d (Mamba) -----------------------------------------------------------------------------
@triton.jit
def causal_conv1d_kernel(X, WEIGHT, BIAS, OUT, D, L, stride_xb, stride_xd, stride_wd, stride_ob, stride_od,
                         KW: tl.constexpr, SILU: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_L: tl.constexpr):
    # out[b, d, t] = bias[d] + sum_k w[d, k] * x[b, d, t - (KW - 1) + k]; x before t = 0 reads as zero
    b = tl.program_id(0)
    rd = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    rl = tl.program_id(2) * BLOCK_L + tl.arange(0, BLOCK_L)
    d_mask = rd < D
    bias = tl.load(BIAS + rd, mask=d_mask, other=0.0).to(tl.float32)
    acc = tl.zeros([BLOCK_D, BLOCK_L], dtype=tl.float32) + bias[:, None]
    x_rows = X + b * stride_xb + rd[:, None] * stride_xd
    for k in range(KW):
        t = rl - (KW - 1) + k
        m = d_mask[:, None] & (t[None, :] >= 0) & (t[None, :] < L)
        xv = tl.load(x_rows + t[None, :], mask=m, other=0.0).to(tl.float32)
        wk = tl.load(WEIGHT + rd * stride_wd + k, mask=d_mask, other=0.0).to(tl.float32)
        acc += wk[:, None] * xv
    if SILU:
        acc = acc * tl.sigmoid(acc)
    out_mask = d_mask[:, None] & (rl[None, :] < L)
    tl.store(OUT + b * stride_ob + rd[:, None] * stride_od + rl[None, :], acc.to(OUT.dtype.element_ty),
             mask=out_mask)


# --- 6. segment mean by atomics ---------------------------------------------------------------------------------------
@triton.jit
def segment_mean_kernel(X, SEG_IDS, SEG_COUNTS, OUT, T, D, stride_x, stride_out, BLOCK_T: tl.constexpr,
                        BLOCK_D: tl.constexpr):
    # every row adds x / count(its segment) into out[segment]: the mean with no second pass
    rt = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    rd = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    t_mask = rt < T
    seg = tl.load(SEG_IDS + rt, mask=t_mask, other=0)
    count = tl.load(SEG_COUNTS + seg, mask=t_mask, other=1).to(tl.float32)
    mask = t_mask[:, None] & (rd[None, :] < D)
    x = tl.load(X + rt[:, None] * stride_x + rd[None, :], mask=mask, other=0.0)
    tl.atomic_add(OUT + seg[:, None] * stride_out + rd[None, :], x / count[:, None], mask=mask)


# --- 7. persistent matmul with row / column scales ------------------------------------------------------------------
@triton.jit
def matmul_persistent_scaled_kernel(A, B, C, SCALE_M, SCALE_N, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                                    stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                                    BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, NUM_SMS: tl.constexpr):
    start_pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_tiles = num_pid_m * num_pid_n
    tiles_per_group = GROUP_M * num_pid_n
    for tile_id in range(start_pid, num_tiles, NUM_SMS):
        # grouped order: GROUP_M row blocks walk the columns together (L2 reuse of B)
        group_id = tile_id // tiles_per_group
        first_pid_m = group_id * GROUP_M
        group_rows = min(num_pid_m - first_pid_m, GROUP_M)
        pid_m = first_pid_m + (tile_id % tiles_per_group) % group_rows
        pid_n = (tile_id % tiles_per_group) // group_rows
        rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        rk = tl.arange(0, BLOCK_K)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k0 in range(0, K, BLOCK_K):
            ks = k0 + rk
            a = tl.load(A + rm[:, None] * stride_am + ks[None, :] * stride_ak,
                        mask=(rm[:, None] < M) & (ks[None, :] < K), other=0.0)
            b = tl.load(B + ks[:, None] * stride_bk + rn[None, :] * stride_bn,
                        mask=(ks[:, None] < K) & (rn[None, :] < N), other=0.0)
            acc = tl.dot(a, b, acc)
        sm = tl.load(SCALE_M + rm, mask=rm < M, other=0.0)
        sn = tl.load(SCALE_N + rn, mask=rn < N, other=0.0)
        acc = acc * sm[:, None] * sn[None, :]
        c_mask = (rm[:, None] < M) & (rn[None, :] < N)
        tl.store(C + rm[:, None] * stride_cm + rn[None, :] * stride_cn, acc.to(C.dtype.element_ty), mask=c_mask)


# --- 8. de-interleave even / odd columns ------------------------------------------------------------------------------
@triton.jit
def deinterleave_kernel(X, EVEN, ODD, M, N, stride_xm, stride_em, stride_om, BLOCK_M: tl.constexpr,
                        BLOCK_N: tl.constexpr):
    # X is (M, 2N) holding pairs [e0, o0, e1, o1, ...] per row (packed complex, fused gate/up): stride-2 loads
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    src = X + rm[:, None] * stride_xm + 2 * rn[None, :]
    even = tl.load(src, mask=mask)
    odd = tl.load(src + 1, mask=mask)
    tl.store(EVEN + rm[:, None] * stride_em + rn[None, :], even, mask=mask)
    tl.store(ODD + rm[:, None] * stride_om + rn[None, :], odd, mask=mask)


# --- 9. two-pass column variance --------------------------------------------------------------------------------------
@triton.jit
def col_var_kernel(X, MEAN, VAR, STD, M, N, stride_xm, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # torch.var(x, dim=0) (unbiased): the column means first, then the squared deviations from them
    rn = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    n_mask = rn < N
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for m0 in range(0, M, BLOCK_M):
        rm = m0 + tl.arange(0, BLOCK_M)
        mask = (rm[:, None] < M) & n_mask[None, :]
        acc += tl.load(X + rm[:, None] * stride_xm + rn[None, :], mask=mask, other=0.0)
    mean = tl.sum(acc, axis=0) / M
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for m0 in range(0, M, BLOCK_M):
        rm = m0 + tl.arange(0, BLOCK_M)
        mask = (rm[:, None] < M) & n_mask[None, :]
        x = tl.load(X + rm[:, None] * stride_xm + rn[None, :], mask=mask, other=0.0)
        d = tl.where(mask, x - mean[None, :], 0.0)
        acc += d * d
    var = tl.sum(acc, axis=0) / (M - 1)
    tl.store(MEAN + rn, mean, mask=n_mask)
    tl.store(VAR + rn, var, mask=n_mask)
    tl.store(STD + rn, tl.sqrt_rn(var), mask=n_mask)


# --- 10. safe division, nan_to_num and clamp in a grid-stride loop --------------------------------------------------
@triton.jit
def safe_div_clamp_kernel(NUM, DEN, OUT, n_elements, nan_value, lo, hi, BLOCK: tl.constexpr):
    # a fixed number of programs strides over all the tiles; 0 / 0 -> nan_value, x / 0 -> +-inf -> clamped
    pid = tl.program_id(0)
    n_tiles = tl.cdiv(n_elements, BLOCK)
    for tile in range(pid, n_tiles, tl.num_programs(0)):
        offs = tile * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n_elements
        num = tl.load(NUM + offs, mask=mask, other=0.0)
        den = tl.load(DEN + offs, mask=mask, other=1.0)
        r = num / den
        r = tl.where(r != r, nan_value, r)
        r = tl.clamp(r, lo, hi)
        tl.store(OUT + offs, r, mask=mask)


# --- host side -------------------------------------------------------------------------------------------------------
ADAM = {"lr": 1e-3, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "weight_decay": 0.01}


def adam_corrections(step):
    return 1.0 - ADAM["beta1"] ** step, math.sqrt(1.0 - ADAM["beta2"] ** step)


def adamw_inputs(p, rng):
    n = p["N"]
    return {"param": randn(rng, (n,), "float32", 0.5), "grad": randn(rng, (n,), "bfloat16", 0.05),
            "exp_avg": randn(rng, (n,), "float32", 0.02),
            "exp_avg_sq": uniform(rng, (n,), 1e-5, 4e-3)}


def adamw_ref(p, x):
    h = ADAM
    bc1, bc2_sqrt = adam_corrections(p["step"])
    g = x["grad"]
    m = h["beta1"] * x["exp_avg"] + (1.0 - h["beta1"]) * g
    v = h["beta2"] * x["exp_avg_sq"] + (1.0 - h["beta2"]) * g * g
    param = x["param"] * (1.0 - h["lr"] * h["weight_decay"]) - (h["lr"] / bc1) * m / (np.sqrt(v) / bc2_sqrt + h["eps"])
    return {"param_out": param, "exp_avg_out": m, "exp_avg_sq_out": v}


def adamw_launch(p, a, m):
    h = ADAM
    bc1, bc2_sqrt = adam_corrections(p["step"])
    return (cdiv(p["N"], m["BLOCK_SIZE"]),), [a["param"], a["grad"], a["exp_avg"], a["exp_avg_sq"], a["param_out"],
                                             a["exp_avg_out"], a["exp_avg_sq_out"], p["N"], h["lr"], h["beta1"],
                                             h["beta2"], h["eps"], h["weight_decay"], bc1, bc2_sqrt]


def pool_dims(p):
    out = lambda s: (s + 2 * p["pad"] - p["k"]) // p["stride"] + 1  # noqa: E731
    return out(p["H"]), out(p["W"])


def pool_ref(p, x):
    k, s, pad = p["k"], p["stride"], p["pad"]
    OH, OW = pool_dims(p)
    v = x["x"]
    xp = np.full(v.shape[:2] + (v.shape[2] + 2 * pad, v.shape[3] + 2 * pad), -np.inf)
    xp[:, :, pad:pad + v.shape[2], pad:pad + v.shape[3]] = v
    y = np.full(v.shape[:2] + (OH, OW), -np.inf)
    for kh in range(k):
        for kw in range(k):
            np.maximum(y, xp[:, :, kh:kh + s * (OH - 1) + 1:s, kw:kw + s * (OW - 1) + 1:s], out=y)
    return {"y": y}


def pool_launch(p, a, m):
    N, C, H, W = p["N"], p["C"], p["H"], p["W"]
    OH, OW = pool_dims(p)
    grid = (N * C, cdiv(OH, m["BLOCK_H"]), cdiv(OW, m["BLOCK_W"]))
    return grid, [a["x"], a["y"], C, H, W, OH, OW, C * H * W, H * W, W, C * OH * OW, OH * OW, OW]


def pool_out(p):
    return {"y": ((p["N"], p["C"]) + pool_dims(p), "float16")}


def log_softmax_bwd_inputs(p, rng):
    z = randn(rng, (p["M"], p["N"]), "float32", 2.0).astype(np.float64)
    z -= z.max(axis=1, keepdims=True)
    z -= np.log(np.exp(z).sum(axis=1, keepdims=True))
    return {"y": z.astype(np.float16), "dy": randn(rng, (p["M"], p["N"]), "float16")}


def log_softmax_bwd_ref(p, x):
    return {"dx": x["dy"] - np.exp(x["y"]) * x["dy"].sum(axis=1, keepdims=True)}


def dgelu_ref(p, x):
    z = x["x"] + x["bias"][None, :]
    cdf = 0.5 * (1.0 + erf(z / math.sqrt(2.0)))
    pdf = np.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)
    return {"dx": x["dy"] * (cdf + z * pdf)}


def conv_inputs(p, rng):
    B, D, L, KW = p["B"], p["D"], p["L"], p["KW"]
    return {"x": randn(rng, (B, D, L), "float16"), "weight": randn(rng, (D, KW), "float32", 0.5),
            "bias": randn(rng, (D,), "float32", 0.1)}


def conv_ref(p, x):
    L, KW = p["L"], p["KW"]
    v = x["x"]
    xp = np.concatenate([np.zeros(v.shape[:2] + (KW - 1,)), v], axis=2)
    acc = np.broadcast_to(x["bias"][None, :, None], v.shape).copy()
    for k in range(KW):
        acc += x["weight"][None, :, k, None] * xp[:, :, k:k + L]
    return {"out": acc / (1.0 + np.exp(-acc))}


def conv_launch(p, a, m):
    B, D, L, KW = p["B"], p["D"], p["L"], p["KW"]
    grid = (B, cdiv(D, m["BLOCK_D"]), cdiv(L, m["BLOCK_L"]))
    return grid, [a["x"], a["weight"], a["bias"], a["out"], D, L, D * L, L, KW, D * L, L]


def segment_inputs(p, rng):
    T, D, S = p["T"], p["D"], p["S"]
    seg = rng.integers(0, S, T).astype(np.int32)
    counts = np.bincount(seg, minlength=S).astype(np.int32)
    return {"x": randn(rng, (T, D), "float32", 1.0, 0.5), "seg": seg, "counts": counts}


def segment_ref(p, x):
    S, D = p["S"], p["D"]
    seg = x["seg"].astype(np.int64)
    sums = np.zeros((S, D))
    np.add.at(sums, seg, x["x"])
    return {"out": sums / np.maximum(x["counts"], 1.0)[:, None]}


def segment_launch(p, a, m):
    T, D = p["T"], p["D"]
    return (cdiv(T, m["BLOCK_T"]), cdiv(D, m["BLOCK_D"])), [a["x"], a["seg"], a["counts"], a["out"], T, D, D, D]


def mm_scaled_inputs(p, rng):
    M, N, K = p["M"], p["N"], p["K"]
    return {"a": randn(rng, (M, K), "float16"), "b": randn(rng, (K, N), "float16"),
            "scale_m": uniform(rng, (M,), 0.02, 0.06), "scale_n": uniform(rng, (N,), 0.5, 2.0)}


def mm_scaled_ref(p, x):
    return {"c": (x["a"] @ x["b"]) * x["scale_m"][:, None] * x["scale_n"][None, :]}


def mm_scaled_launch(p, a, m):
    M, N, K = p["M"], p["N"], p["K"]
    tiles = cdiv(M, m["BLOCK_M"]) * cdiv(N, m["BLOCK_N"])
    return (min(m["NUM_SMS"], tiles),), [a["a"], a["b"], a["c"], a["scale_m"], a["scale_n"], M, N, K, K, 1, N, 1,
                                         N, 1]


def deinterleave_launch(p, a, m):
    M, N = p["M"], p["N"]
    return (cdiv(M, m["BLOCK_M"]), cdiv(N, m["BLOCK_N"])), [a["x"], a["even"], a["odd"], M, N, 2 * N, N, N]


def col_var_ref(p, x):
    v = x["x"]
    var = v.var(axis=0, ddof=1)
    return {"mean": v.mean(axis=0), "var": var, "std": np.sqrt(var)}


def safe_div_inputs(p, rng):
    n = p["N"]
    num = randn(rng, (n,), "float32", 2.0)
    den = randn(rng, (n,), "float32", 1.0)
    den[rng.random(n) < 0.1] = 0.0  # x / 0 -> +-inf
    zero_both = rng.random(n) < 0.05  # 0 / 0 -> NaN
    num[zero_both] = 0.0
    den[zero_both] = 0.0
    return {"num": num, "den": den}


def safe_div_ref(p, x):
    with np.errstate(divide="ignore", invalid="ignore"):
        r = x["num"] / x["den"]
    r = np.where(np.isnan(r), p["nan_value"], r)
    return {"out": np.clip(r, p["lo"], p["hi"])}


def safe_div_launch(p, a, m):
    n = p["N"]
    return (min(p["programs"], cdiv(n, m["BLOCK"])),), [a["num"], a["den"], a["out"], n, p["nan_value"], p["lo"],
                                                         p["hi"]]


CASES = [
    Case("adamw_step_f32", adamw_step_kernel, adamw_inputs,
         lambda p: {"param_out": ((p["N"],), "float32"), "exp_avg_out": ((p["N"],), "float32"),
                    "exp_avg_sq_out": ((p["N"],), "float32")}, adamw_ref, adamw_launch,
         gpu={"N": 2 ** 25, "step": 10}, ci={"N": 3000, "step": 10}, meta={"BLOCK_SIZE": 1024, "num_warps": 4},
         ci_meta={"BLOCK_SIZE": 256, "num_warps": 2}, flops=lambda p: 16.0 * p["N"],
         bytes=lambda p: 26.0 * p["N"],
         idiom="fused AdamW step: four inputs (bf16 grads, fp32 weights and moments), three outputs, seven float "
               "scalar hyper-parameters, tl.sqrt"),
    Case("maxpool2d_nchw_f16", max_pool2d_kernel, lambda p, rng: {"x": randn(rng, (p["N"], p["C"], p["H"], p["W"]),
                                                                             "float16", 1.5)},
         pool_out, pool_ref, pool_launch,
         gpu={"N": 64, "C": 64, "H": 112, "W": 112, "k": 3, "stride": 2, "pad": 1},
         ci={"N": 2, "C": 3, "H": 13, "W": 11, "k": 3, "stride": 2, "pad": 1},
         meta={"KSIZE": 3, "STRIDE": 2, "PAD": 1, "BLOCK_H": 8, "BLOCK_W": 64, "num_warps": 4},
         ci_meta={"KSIZE": 3, "STRIDE": 2, "PAD": 1, "BLOCK_H": 4, "BLOCK_W": 4, "num_warps": 1},
         tol={"float16": (0.0, 0.0)},
         flops=lambda p: 9.0 * p["N"] * p["C"] * p["H"] * p["W"] / 4,
         bytes=lambda p: 2.0 * p["N"] * p["C"] * p["H"] * p["W"] * 1.25,
         idiom="3x3 stride-2 pad-1 max pooling over NCHW: (n, c) split from program_id(0) by // and %, nested "
               "tl.static_range taps, padding masks with other=-inf, 3-D grid"),
    Case("log_softmax_bwd_f16", log_softmax_bwd_kernel, log_softmax_bwd_inputs,
         lambda p: {"dx": ((p["M"], p["N"]), "float16")}, log_softmax_bwd_ref,
         lambda p, a, m: ((p["M"],), [a["dx"], a["dy"], a["y"], p["N"], p["N"], p["N"], p["N"]]),
         gpu={"M": 32768, "N": 4096}, ci={"M": 6, "N": 300}, meta={"BLOCK_N": 4096, "num_warps": 8},
         ci_meta={"BLOCK_N": 512, "num_warps": 4}, flops=lambda p: 4.0 * p["M"] * p["N"],
         bytes=lambda p: 6.0 * p["M"] * p["N"],
         idiom="log-softmax backward: dx = dy - exp(y) * sum(dy), masked lanes loaded as -inf, int64 row offset"),
    Case("bias_gelu_bwd_f16", bias_gelu_bwd_kernel,
         lambda p, rng: {"dy": randn(rng, (p["M"], p["N"]), "float16"),
                         "x": randn(rng, (p["M"], p["N"]), "float16", 1.5),
                         "bias": randn(rng, (p["N"],), "float16", 0.5)},
         lambda p: {"dx": ((p["M"], p["N"]), "float16")}, dgelu_ref,
         lambda p, a, m: ((cdiv(p["M"] * p["N"], m["BLOCK"]),), [a["dy"], a["x"], a["bias"], a["dx"],
                                                                 p["M"] * p["N"], p["N"]]),
         gpu={"M": 8192, "N": 16384}, ci={"M": 7, "N": 300}, meta={"BLOCK": 2048, "num_warps": 8},
         ci_meta={"BLOCK": 256, "num_warps": 2}, flops=lambda p: 14.0 * p["M"] * p["N"],
         bytes=lambda p: 6.0 * p["M"] * p["N"],
         idiom="bias + GELU (erf) backward on the flat tensor: bias gathered by offs % N, tl.erf and tl.exp"),
    Case("causal_conv1d_silu_f16", causal_conv1d_kernel, conv_inputs,
         lambda p: {"out": ((p["B"], p["D"], p["L"]), "float16")}, conv_ref, conv_launch,
         gpu={"B": 4, "D": 4096, "L": 4096, "KW": 4}, ci={"B": 2, "D": 5, "L": 37, "KW": 4},
         meta={"KW": 4, "SILU": True, "BLOCK_D": 16, "BLOCK_L": 256, "num_warps": 4},
         ci_meta={"KW": 4, "SILU": True, "BLOCK_D": 4, "BLOCK_L": 16, "num_warps": 2},
         flops=lambda p: (2.0 * p["KW"] + 5) * p["B"] * p["D"] * p["L"],
         bytes=lambda p: 4.0 * p["B"] * p["D"] * p["L"],
         idiom="Mamba-style causal depthwise conv1d over (B, D, L): range(KW) over the taps with shifted, "
               "left-masked loads, per-channel weight columns, constexpr-bool SiLU"),
    Case("segment_mean_f32", segment_mean_kernel, segment_inputs, lambda p: {"out": ((p["S"], p["D"]), "float32")},
         segment_ref, segment_launch,
         gpu={"T": 2 ** 20, "D": 128, "S": 4096}, ci={"T": 300, "D": 20, "S": 7},
         meta={"BLOCK_T": 64, "BLOCK_D": 128, "num_warps": 4}, ci_meta={"BLOCK_T": 16, "BLOCK_D": 8, "num_warps": 2},
         zero=("out",), flops=lambda p: 2.0 * p["T"] * p["D"], bytes=lambda p: 8.0 * p["T"] * p["D"],
         idiom="segment mean (scatter_mean): 2-D tile of rows, per-row count gathered through the segment id, "
               "tl.atomic_add of x / count into out[seg[:, None], cols]"),
    Case("mm_persistent_scaled_f16", matmul_persistent_scaled_kernel, mm_scaled_inputs,
         lambda p: {"c": ((p["M"], p["N"]), "float16")}, mm_scaled_ref, mm_scaled_launch,
         gpu={"M": 8192, "N": 8192, "K": 4096}, ci={"M": 40, "N": 36, "K": 40},
         meta={"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8, "NUM_SMS": 132, "num_warps": 8,
               "num_stages": 3},
         ci_meta={"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "GROUP_M": 2, "NUM_SMS": 3, "num_warps": 1,
                  "num_stages": 2},
         flops=lambda p: 2.0 * p["M"] * p["N"] * p["K"],
         bytes=lambda p: 2.0 * (p["M"] * p["K"] + p["K"] * p["N"] + p["M"] * p["N"]),
         idiom="persistent matmul: NUM_SMS programs, for tile_id in range(pid, num_tiles, NUM_SMS), grouped order "
               "by hand with // % and min(), masked K loop, per-row and per-column scales in the epilogue"),
    Case("deinterleave_f16", deinterleave_kernel, lambda p, rng: {"x": randn(rng, (p["M"], 2 * p["N"]), "float16")},
         lambda p: {"even": ((p["M"], p["N"]), "float16"), "odd": ((p["M"], p["N"]), "float16")},
         lambda p, x: {"even": x["x"][:, 0::2], "odd": x["x"][:, 1::2]}, deinterleave_launch,
         gpu={"M": 8192, "N": 8192}, ci={"M": 9, "N": 70}, meta={"BLOCK_M": 16, "BLOCK_N": 128, "num_warps": 4},
         ci_meta={"BLOCK_M": 4, "BLOCK_N": 32, "num_warps": 2}, tol={"float16": (0.0, 0.0)},
         bytes=lambda p: 8.0 * p["M"] * p["N"],
         idiom="split interleaved columns into two outputs: stride-2 loads X + 2 * cols and X + 2 * cols + 1"),
    Case("col_var_f32", col_var_kernel, lambda p, rng: {"x": randn(rng, (p["M"], p["N"]), "float32", 0.5, 3.0)},
         lambda p: {"mean": ((p["N"],), "float32"), "var": ((p["N"],), "float32"), "std": ((p["N"],), "float32")},
         col_var_ref,
         lambda p, a, m: ((cdiv(p["N"], m["BLOCK_N"]),), [a["x"], a["mean"], a["var"], a["std"], p["M"], p["N"],
                                                          p["N"]]),
         gpu={"M": 65536, "N": 2048}, ci={"M": 50, "N": 20}, meta={"BLOCK_M": 64, "BLOCK_N": 64, "num_warps": 4},
         ci_meta={"BLOCK_M": 8, "BLOCK_N": 8, "num_warps": 1}, flops=lambda p: 4.0 * p["M"] * p["N"],
         bytes=lambda p: 8.0 * p["M"] * p["N"],
         idiom="two-pass unbiased variance down the columns: 2-D accumulators, tl.sum(axis=0), the mean "
               "broadcast back as mean[None, :], / (M - 1), tl.sqrt_rn"),
    Case("safe_div_clamp_f32", safe_div_clamp_kernel, safe_div_inputs, lambda p: {"out": ((p["N"],), "float32")},
         safe_div_ref, safe_div_launch,
         gpu={"N": 2 ** 26, "programs": 132 * 4, "nan_value": 0.0, "lo": -50.0, "hi": 50.0},
         ci={"N": 3000, "programs": 3, "nan_value": 0.0, "lo": -50.0, "hi": 50.0},
         meta={"BLOCK": 1024, "num_warps": 4}, ci_meta={"BLOCK": 256, "num_warps": 2},
         flops=lambda p: 4.0 * p["N"], bytes=lambda p: 12.0 * p["N"],
         idiom="grid-stride loop range(pid, n_tiles, tl.num_programs(0)); nan_to_num by tl.where(r != r, ...), "
               "+-inf from x / 0 bounded by tl.clamp with runtime scalars"),
]
