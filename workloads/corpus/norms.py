"""LayerNorm and RMSNorm: one pass (row in one block), looped over long rows (the tutorial's three loops), and
the backward kernels (dx)."""
import numpy as np
import triton
import triton.language as tl

from workloads.corpus._case import Case, randn


@triton.jit
def layernorm_fwd_kernel(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(X + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / N
    xc = tl.where(mask, x - mean, 0.0)
    var = tl.sum(xc * xc, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    w = tl.load(W + cols, mask=mask)
    b = tl.load(B + cols, mask=mask)
    y = xc * rstd * w + b
    tl.store(Y + row * stride + cols, y.to(Y.dtype.element_ty), mask=mask)


@triton.jit
def layernorm_looped_kernel(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    Y += row * stride
    X += row * stride
    _mean = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        a = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        _mean += a
    mean = tl.sum(_mean, axis=0) / N
    _var = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        x = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        x = tl.where(cols < N, x - mean, 0.)
        _var += x * x
    var = tl.sum(_var, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        mask = cols < N
        w = tl.load(W + cols, mask=mask)
        b = tl.load(B + cols, mask=mask)
        x = tl.load(X + cols, mask=mask, other=0.).to(tl.float32)
        x_hat = (x - mean) * rstd
        y = x_hat * w + b
        tl.store(Y + cols, y, mask=mask)


@triton.jit
def layernorm_bwd_dx_kernel(DX, DY, X, W, Mean, Rstd, stride, N, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(X + row * stride + cols, mask=mask, other=0).to(tl.float32)
    dy = tl.load(DY + row * stride + cols, mask=mask, other=0).to(tl.float32)
    w = tl.load(W + cols, mask=mask).to(tl.float32)
    mean = tl.load(Mean + row)
    rstd = tl.load(Rstd + row)
    xhat = (x - mean) * rstd
    wdy = w * dy
    xhat = tl.where(mask, xhat, 0.)
    wdy = tl.where(mask, wdy, 0.)
    c1 = tl.sum(xhat * wdy, axis=0) / N
    c2 = tl.sum(wdy, axis=0) / N
    dx = (wdy - (xhat * c1 + c2)) * rstd
    tl.store(DX + row * stride + cols, dx.to(DX.dtype.element_ty), mask=mask)


@triton.jit
def rmsnorm_fwd_kernel(x_ptr, w_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=0.0).to(tl.float32)
    ms = tl.sum(x * x, axis=0) / n_cols
    w = tl.load(w_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    y = x * tl.rsqrt(ms + eps) * w
    tl.store(y_ptr + row * n_cols + offs, y.to(tl.bfloat16), mask=mask)


@triton.jit
def rmsnorm_looped_kernel(X, W, Y, Rstd, stride, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(X + row * stride + cols, mask=cols < N, other=0.0).to(tl.float32)
        acc += x * x
    rstd = tl.rsqrt(tl.sum(acc, 0) / N + eps)
    tl.store(Rstd + row, rstd)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        m = cols < N
        x = tl.load(X + row * stride + cols, mask=m, other=0.0).to(tl.float32)
        w = tl.load(W + cols, mask=m, other=0.0)
        tl.store(Y + row * stride + cols, x * rstd * w, mask=m)


@triton.jit
def rmsnorm_bwd_dx_kernel(DX, DY, X, W, Rstd, stride, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(X + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(DY + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.load(Rstd + row)
    wdy = w * dy
    c = tl.sum(wdy * x, axis=0) * rstd * rstd / N
    dx = (wdy - x * c) * rstd
    tl.store(DX + row * stride + cols, dx.to(DX.dtype.element_ty), mask=mask)


EPS = 1e-5


def ln_inputs(dt, wdt=None):
    def make(p, rng):
        M, N = p["M"], p["N"]
        return {"x": randn(rng, (M, N), dt, 2.0, 0.5), "w": randn(rng, (N,), wdt or dt, 0.5, 1.0),
                "b": randn(rng, (N,), wdt or dt, 0.5)}
    return make


def ln_stats(x):
    mean = x.mean(axis=1)
    rstd = 1.0 / np.sqrt(((x - mean[:, None]) ** 2).mean(axis=1) + EPS)
    return mean, rstd


def ln_ref(p, x):
    mean, rstd = ln_stats(x["x"])
    return {"y": (x["x"] - mean[:, None]) * rstd[:, None] * x["w"] + x["b"], "mean": mean, "rstd": rstd}


def ln_out(dt):
    return lambda p: {"y": ((p["M"], p["N"]), dt), "mean": ((p["M"],), "float32"), "rstd": ((p["M"],), "float32")}


def ln_launch(p, a, m):
    return (p["M"],), [a["x"], a["y"], a["w"], a["b"], a["mean"], a["rstd"], p["N"], p["N"], EPS]


def ln_bwd_inputs(p, rng):
    M, N = p["M"], p["N"]
    x = randn(rng, (M, N), "float16", 2.0, 0.5)
    mean, rstd = ln_stats(x.astype(np.float64))
    return {"x": x, "dy": randn(rng, (M, N), "float16"), "w": randn(rng, (N,), "float16", 0.5, 1.0),
            "mean": mean.astype(np.float32), "rstd": rstd.astype(np.float32)}


def ln_bwd_ref(p, x):
    xhat = (x["x"] - x["mean"][:, None]) * x["rstd"][:, None]
    wdy = x["w"] * x["dy"]
    c1 = (xhat * wdy).mean(axis=1, keepdims=True)
    c2 = wdy.mean(axis=1, keepdims=True)
    return {"dx": (wdy - (xhat * c1 + c2)) * x["rstd"][:, None]}


def rms_inputs(dt):
    return lambda p, rng: {"x": randn(rng, (p["M"], p["N"]), dt, 2.0), "w": randn(rng, (p["N"],), dt, 0.5, 1.0)}


def rms_rstd(x):
    return 1.0 / np.sqrt((x * x).mean(axis=1) + EPS)


def rms_bwd_inputs(p, rng):
    M, N = p["M"], p["N"]
    x = randn(rng, (M, N), "bfloat16", 2.0)
    from workloads.corpus._case import f64
    return {"x": x, "dy": randn(rng, (M, N), "bfloat16"), "w": randn(rng, (N,), "bfloat16", 0.5, 1.0),
            "rstd": rms_rstd(f64(x)).astype(np.float32)}


def rms_bwd_ref(p, x):
    wdy = x["w"] * x["dy"]
    r = x["rstd"][:, None]
    c = (wdy * x["x"]).sum(axis=1, keepdims=True) * r * r / p["N"]
    return {"dx": (wdy - x["x"] * c) * r}


def row_bytes(esize, n):
    return lambda p: float(n * esize * p["M"] * p["N"])


CASES = [
    Case("layernorm_fwd_f16", layernorm_fwd_kernel, ln_inputs("float16"), ln_out("float16"), ln_ref, ln_launch,
         gpu={"M": 16384, "N": 4096}, ci={"M": 5, "N": 300}, meta={"BLOCK_N": 4096, "num_warps": 8},
         ci_meta={"BLOCK_N": 512, "num_warps": 4}, tol={"float32": (1e-4, 1e-5), "float16": (1e-2, 2e-3)},
         flops=lambda p: 8.0 * p["M"] * p["N"], bytes=row_bytes(2, 2), idiom="one pass, mean and rstd stored"),
    Case("layernorm_looped_f32", layernorm_looped_kernel, ln_inputs("float32"), ln_out("float32"), ln_ref,
         ln_launch, gpu={"M": 2048, "N": 32768}, ci={"M": 3, "N": 300}, meta={"BLOCK_SIZE": 2048, "num_warps": 8},
         ci_meta={"BLOCK_SIZE": 64, "num_warps": 2}, flops=lambda p: 8.0 * p["M"] * p["N"], bytes=row_bytes(4, 4),
         idiom="the tutorial's three loops over a long row"),
    Case("layernorm_bwd_dx_f16", layernorm_bwd_dx_kernel, ln_bwd_inputs,
         lambda p: {"dx": ((p["M"], p["N"]), "float16")}, ln_bwd_ref,
         lambda p, a, m: ((p["M"],), [a["dx"], a["dy"], a["x"], a["w"], a["mean"], a["rstd"], p["N"], p["N"]]),
         gpu={"M": 16384, "N": 4096}, ci={"M": 4, "N": 200}, meta={"BLOCK_N": 4096, "num_warps": 8},
         ci_meta={"BLOCK_N": 256, "num_warps": 4}, tol={"float16": (1e-2, 3e-3)},
         flops=lambda p: 10.0 * p["M"] * p["N"], bytes=row_bytes(2, 3), idiom="backward dx, two row sums"),
    Case("rmsnorm_fwd_bf16", rmsnorm_fwd_kernel, rms_inputs("bfloat16"),
         lambda p: {"y": ((p["M"], p["N"]), "bfloat16")},
         lambda p, x: {"y": x["x"] * rms_rstd(x["x"])[:, None] * x["w"]},
         lambda p, a, m: ((p["M"],), [a["x"], a["w"], a["y"], p["N"], EPS]),
         gpu={"M": 16384, "N": 4096}, ci={"M": 5, "N": 300}, meta={"BLOCK": 4096, "num_warps": 8},
         ci_meta={"BLOCK": 512, "num_warps": 4}, flops=lambda p: 4.0 * p["M"] * p["N"], bytes=row_bytes(2, 2),
         idiom="bf16, tl.rsqrt, row stride = n_cols"),
    Case("rmsnorm_looped_f32", rmsnorm_looped_kernel, rms_inputs("float32"),
         lambda p: {"y": ((p["M"], p["N"]), "float32"), "rstd": ((p["M"],), "float32")},
         lambda p, x: {"y": x["x"] * rms_rstd(x["x"])[:, None] * x["w"], "rstd": rms_rstd(x["x"])},
         lambda p, a, m: ((p["M"],), [a["x"], a["w"], a["y"], a["rstd"], p["N"], p["N"], EPS]),
         gpu={"M": 1024, "N": 65536 + 3}, ci={"M": 3, "N": 301}, meta={"BLOCK": 4096, "num_warps": 8},
         ci_meta={"BLOCK": 64, "num_warps": 2}, flops=lambda p: 4.0 * p["M"] * p["N"], bytes=row_bytes(4, 3),
         idiom="long rows, N not divisible by 16, two loops"),
    Case("rmsnorm_bwd_dx_bf16", rmsnorm_bwd_dx_kernel, rms_bwd_inputs,
         lambda p: {"dx": ((p["M"], p["N"]), "bfloat16")}, rms_bwd_ref,
         lambda p, a, m: ((p["M"],), [a["dx"], a["dy"], a["x"], a["w"], a["rstd"], p["N"], p["N"]]),
         gpu={"M": 16384, "N": 4096}, ci={"M": 4, "N": 200}, meta={"BLOCK": 4096, "num_warps": 8},
         ci_meta={"BLOCK": 256, "num_warps": 4}, tol={"bfloat16": (3e-2, 1e-2)},
         flops=lambda p: 6.0 * p["M"] * p["N"], bytes=row_bytes(2, 3), idiom="backward dx"),
]
