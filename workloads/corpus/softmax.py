"""Row softmax: one pass with the row in one block, the tutorial's persistent tl.range loop, the looped
(online) form for long rows, and the backward kernel."""
import numpy as np
import triton
import triton.language as tl

from workloads.corpus._case import Case, randn


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    col = tl.arange(0, BLOCK_SIZE)
    x = tl.load(in_ptr + row * in_row_stride + col, mask=col < n_cols, other=-float("inf"))
    z = x - tl.max(x, axis=0)
    num = tl.exp(z)
    y = num / tl.sum(num, axis=0)
    tl.store(out_ptr + row * out_row_stride + col, y, mask=col < n_cols)


@triton.jit
def softmax_persistent_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows, n_cols,
                              BLOCK_SIZE: tl.constexpr, num_stages: tl.constexpr):
    row_start = tl.program_id(0)
    row_step = tl.num_programs(0)
    for row_idx in tl.range(row_start, n_rows, row_step, num_stages=num_stages):
        row_start_ptr = input_ptr + row_idx * input_row_stride
        col_offsets = tl.arange(0, BLOCK_SIZE)
        mask = col_offsets < n_cols
        row = tl.load(row_start_ptr + col_offsets, mask=mask, other=-float("inf")).to(tl.float32)
        row_minus_max = row - tl.max(row, axis=0)
        numerator = tl.exp(row_minus_max)
        softmax_output = numerator / tl.sum(numerator, axis=0)
        tl.store(output_ptr + row_idx * output_row_stride + col_offsets, softmax_output.to(tl.float16), mask=mask)


@triton.jit
def softmax_looped_kernel(X, Y, stride, N, BLOCK: tl.constexpr):
    # a long row in blocks: an online max/sum pass, then the normalized write
    row = tl.program_id(0).to(tl.int64)
    X += row * stride
    Y += row * stride
    m = tl.full([BLOCK], float("-inf"), dtype=tl.float32)
    d = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(X + cols, mask=cols < N, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, x)
        d = d * tl.exp(m - m_new) + tl.where(cols < N, tl.exp(x - m_new), 0.0)
        m = m_new
    row_max = tl.max(m, 0)
    denom = tl.sum(d * tl.exp(m - row_max), 0)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(X + cols, mask=cols < N, other=float("-inf")).to(tl.float32)
        tl.store(Y + cols, tl.exp(x - row_max) / denom, mask=cols < N)


@triton.jit
def softmax_bwd_kernel(DX, DY, Y, stride, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    y = tl.load(Y + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(DY + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    dot = tl.sum(y * dy, axis=0)
    tl.store(DX + row * stride + cols, (y * (dy - dot)).to(DX.dtype.element_ty), mask=mask)


def softmax_ref(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def rows(dt, scale=2.0):
    return lambda p, rng: {"x": randn(rng, (p["M"], p["N"]), dt, scale)}


def out(dt, name="y"):
    return lambda p: {name: ((p["M"], p["N"]), dt)}


def io_bytes(esize, n_arrays=2):
    return lambda p: float(n_arrays * esize * p["M"] * p["N"])


def softmax_bwd_inputs(p, rng):
    y = softmax_ref(randn(rng, (p["M"], p["N"]), "float32", 2.0).astype(np.float64)).astype(np.float16)
    return {"y": y, "dy": randn(rng, (p["M"], p["N"]), "float16")}


def bwd_ref(p, x):
    return {"dx": x["y"] * (x["dy"] - (x["y"] * x["dy"]).sum(axis=1, keepdims=True))}


CASES = [
    Case("softmax_onepass_f32", softmax_kernel, rows("float32"), out("float32"),
         lambda p, x: {"y": softmax_ref(x["x"])},
         lambda p, a, m: ((p["M"],), [a["y"], a["x"], p["N"], p["N"], p["N"]]),
         gpu={"M": 16384, "N": 2048}, ci={"M": 5, "N": 300}, meta={"BLOCK_SIZE": 2048, "num_warps": 8},
         ci_meta={"BLOCK_SIZE": 512, "num_warps": 4}, flops=lambda p: 5.0 * p["M"] * p["N"], bytes=io_bytes(4),
         idiom="row in one block, masked with -inf"),
    Case("softmax_persistent_f16", softmax_persistent_kernel, rows("float16"), out("float16"),
         lambda p, x: {"y": softmax_ref(x["x"])},
         lambda p, a, m: ((min(p["M"], p["programs"]),), [a["y"], a["x"], p["N"], p["N"], p["M"], p["N"]]),
         gpu={"M": 32768, "N": 1000, "programs": 132 * 8}, ci={"M": 7, "N": 100, "programs": 3},
         meta={"BLOCK_SIZE": 1024, "num_stages": 4, "num_warps": 4},
         ci_meta={"BLOCK_SIZE": 128, "num_stages": 2, "num_warps": 2}, flops=lambda p: 5.0 * p["M"] * p["N"],
         bytes=io_bytes(2), idiom="the tutorial: persistent programs, tl.range(..., num_stages=...), N=1000"),
    Case("softmax_looped_f32", softmax_looped_kernel, rows("float32"), out("float32"),
         lambda p, x: {"y": softmax_ref(x["x"])},
         lambda p, a, m: ((p["M"],), [a["x"], a["y"], p["N"], p["N"]]),
         gpu={"M": 1024, "N": 32768 + 17}, ci={"M": 3, "N": 300}, meta={"BLOCK": 4096, "num_warps": 8},
         ci_meta={"BLOCK": 64, "num_warps": 2}, flops=lambda p: 8.0 * p["M"] * p["N"], bytes=io_bytes(4, 3),
         idiom="long rows: online max/sum loop then a second pass, int64 row offset"),
    Case("softmax_bwd_f16", softmax_bwd_kernel, softmax_bwd_inputs, out("float16", "dx"), bwd_ref,
         lambda p, a, m: ((p["M"],), [a["dx"], a["dy"], a["y"], p["N"], p["N"]]),
         gpu={"M": 16384, "N": 4096}, ci={"M": 4, "N": 200}, meta={"BLOCK": 4096, "num_warps": 16},
         ci_meta={"BLOCK": 256, "num_warps": 4}, tol={"float16": (1e-2, 2e-3)},
         flops=lambda p: 4.0 * p["M"] * p["N"], bytes=io_bytes(2, 3), idiom="backward: y * (dy - sum(y * dy))"),
]
