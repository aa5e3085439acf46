"""Reductions and scans along either axis: row and column sums, argmax along rows (issue 16's 16384x1024), argmin
down columns, cumsum along rows and down columns, a running max through tl.associative_scan."""
import numpy as np
import triton
import triton.language as tl

from workloads.corpus._case import Case, cdiv, randn


@triton.jit
def row_sum_kernel(X, Y, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.arange(0, BLOCK_N)
    x = tl.load(X + rm[:, None] * N + rn[None, :], mask=(rm[:, None] < M) & (rn[None, :] < N), other=0.0)
    tl.store(Y + rm, tl.sum(x, axis=1), mask=rm < M)


@triton.jit
def col_sum_kernel(X, Y, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rn = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for m0 in range(0, M, BLOCK_M):
        rm = m0 + tl.arange(0, BLOCK_M)
        acc += tl.load(X + rm[:, None] * N + rn[None, :], mask=(rm[:, None] < M) & (rn[None, :] < N),
                       other=0.0).to(tl.float32)
    tl.store(Y + rn, tl.sum(acc, axis=0), mask=rn < N)


@triton.jit
def argmax_rows_kernel(X, OUT, M, N, stride, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    x = tl.load(X + row * stride + cols, mask=cols < N, other=float("-inf"))
    tl.store(OUT + row, tl.argmax(x, axis=0))


@triton.jit
def argmin_cols_kernel(X, OUT, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rn = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    rm = tl.arange(0, BLOCK_M)
    x = tl.load(X + rm[:, None] * N + rn[None, :], mask=(rm[:, None] < M) & (rn[None, :] < N), other=float("inf"))
    idx = tl.argmin(x, axis=0)
    tl.store(OUT + rn, idx, mask=rn < N)


@triton.jit
def cumsum_rows_kernel(X, Y, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.arange(0, BLOCK_N)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(X + rm[:, None] * N + rn[None, :], mask=mask, other=0.0)
    tl.store(Y + rm[:, None] * N + rn[None, :], tl.cumsum(x, axis=1), mask=mask)


@triton.jit
def cumsum_cols_kernel(X, Y, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rn = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    rm = tl.arange(0, BLOCK_M)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(X + rm[:, None] * N + rn[None, :], mask=mask, other=0.0)
    tl.store(Y + rm[:, None] * N + rn[None, :], tl.cumsum(x, axis=0), mask=mask)


@triton.jit
def _max_combine(a, b):
    return tl.maximum(a, b)


@triton.jit
def cummax_rows_kernel(X, Y, N, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    x = tl.load(X + row * N + cols, mask=cols < N, other=float("-inf"))
    y = tl.associative_scan(x, 0, _max_combine)
    tl.store(Y + row * N + cols, y, mask=cols < N)


def mat(dt="float32"):
    return lambda p, rng: {"x": randn(rng, (p["M"], p["N"]), dt)}


def nbytes(es):
    return lambda p: float(es * p["M"] * p["N"])


SUM_TOL = {"float32": (1e-4, 1e-5)}
CASES = [
    Case("rowsum_f32", row_sum_kernel, mat(), lambda p: {"y": ((p["M"],), "float32")},
         lambda p, x: {"y": x["x"].sum(axis=1)},
         lambda p, a, m: ((cdiv(p["M"], m["BLOCK_M"]),), [a["x"], a["y"], p["M"], p["N"]]),
         gpu={"M": 16384, "N": 1024}, ci={"M": 10, "N": 100}, meta={"BLOCK_M": 4, "BLOCK_N": 1024, "num_warps": 4},
         ci_meta={"BLOCK_M": 4, "BLOCK_N": 128, "num_warps": 2}, tol=SUM_TOL, flops=lambda p: p["M"] * p["N"],
         bytes=nbytes(4), idiom="2-D tile of rows, tl.sum(axis=1)"),
    Case("colsum_f16", col_sum_kernel, mat("float16"), lambda p: {"y": ((p["N"],), "float32")},
         lambda p, x: {"y": x["x"].sum(axis=0)},
         lambda p, a, m: ((cdiv(p["N"], m["BLOCK_N"]),), [a["x"], a["y"], p["M"], p["N"]]),
         gpu={"M": 16384, "N": 4096}, ci={"M": 50, "N": 40}, meta={"BLOCK_M": 64, "BLOCK_N": 64, "num_warps": 4},
         ci_meta={"BLOCK_M": 16, "BLOCK_N": 16, "num_warps": 2}, tol=SUM_TOL, flops=lambda p: p["M"] * p["N"],
         bytes=nbytes(2), idiom="down the columns: a 2-D fp32 accumulator over a loop, tl.sum(axis=0) once"),
    Case("argmax_rows_f32", argmax_rows_kernel, mat(), lambda p: {"idx": ((p["M"],), "int32")},
         lambda p, x: {"idx": x["x"].argmax(axis=1)},
         lambda p, a, m: ((p["M"],), [a["x"], a["idx"], p["M"], p["N"], p["N"]]),
         gpu={"M": 16384, "N": 1024}, ci={"M": 6, "N": 100}, meta={"BLOCK_N": 1024, "num_warps": 4},
         ci_meta={"BLOCK_N": 128, "num_warps": 2}, bytes=nbytes(4), idiom="tl.argmax along a row, 4 warps"),
    Case("argmin_cols_f32", argmin_cols_kernel, mat(), lambda p: {"idx": ((p["N"],), "int32")},
         lambda p, x: {"idx": x["x"].argmin(axis=0)},
         lambda p, a, m: ((cdiv(p["N"], m["BLOCK_N"]),), [a["x"], a["idx"], p["M"], p["N"]]),
         gpu={"M": 512, "N": 65536}, ci={"M": 30, "N": 40}, meta={"BLOCK_M": 512, "BLOCK_N": 16, "num_warps": 4},
         ci_meta={"BLOCK_M": 32, "BLOCK_N": 16, "num_warps": 2}, bytes=nbytes(4),
         idiom="tl.argmin down columns (axis 0)"),
    Case("cumsum_rows_f32", cumsum_rows_kernel, mat(), lambda p: {"y": ((p["M"], p["N"]), "float32")},
         lambda p, x: {"y": np.cumsum(x["x"], axis=1)},
         lambda p, a, m: ((cdiv(p["M"], m["BLOCK_M"]),), [a["x"], a["y"], p["M"], p["N"]]),
         gpu={"M": 16384, "N": 1024}, ci={"M": 9, "N": 100}, meta={"BLOCK_M": 4, "BLOCK_N": 1024, "num_warps": 4},
         ci_meta={"BLOCK_M": 4, "BLOCK_N": 128, "num_warps": 2}, tol=SUM_TOL, flops=lambda p: p["M"] * p["N"],
         bytes=nbytes(8), idiom="tl.cumsum(axis=1) on a tile of rows"),
    Case("cumsum_cols_f32", cumsum_cols_kernel, mat(), lambda p: {"y": ((p["M"], p["N"]), "float32")},
         lambda p, x: {"y": np.cumsum(x["x"], axis=0)},
         lambda p, a, m: ((cdiv(p["N"], m["BLOCK_N"]),), [a["x"], a["y"], p["M"], p["N"]]),
         gpu={"M": 256, "N": 65536}, ci={"M": 20, "N": 40}, meta={"BLOCK_M": 256, "BLOCK_N": 32, "num_warps": 4},
         ci_meta={"BLOCK_M": 32, "BLOCK_N": 16, "num_warps": 2}, tol=SUM_TOL, flops=lambda p: p["M"] * p["N"],
         bytes=nbytes(8), idiom="tl.cumsum(axis=0): a scan down the columns"),
    Case("cummax_rows_f32", cummax_rows_kernel, mat(), lambda p: {"y": ((p["M"], p["N"]), "float32")},
         lambda p, x: {"y": np.maximum.accumulate(x["x"], axis=1)},
         lambda p, a, m: ((p["M"],), [a["x"], a["y"], p["N"]]),
         gpu={"M": 16384, "N": 2048}, ci={"M": 4, "N": 100}, meta={"BLOCK_N": 2048, "num_warps": 8},
         ci_meta={"BLOCK_N": 128, "num_warps": 2}, tol={"float32": (0.0, 0.0)}, bytes=nbytes(8),
         idiom="tl.associative_scan with a jit combine function (running max)"),
]
