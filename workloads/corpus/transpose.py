"""Transposes and permutes: tl.trans with a transposed mask (32x32 and 64x64 tiles, fp32 8192^2), a transpose by
store addresses alone (fp16, sizes not divisible by the tile), a 3-D tl.permute."""
import numpy as np
import triton
import triton.language as tl

from workloads.corpus._case import Case, cdiv, randn


@triton.jit
def transpose_kernel(X, Y, M, N, stride_xm, stride_ym, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(X + rm[:, None] * stride_xm + rn[None, :], mask=mask)
    # Y is N x M: its tile is x transposed, stored with the transposed mask
    tl.store(Y + rn[:, None] * stride_ym + rm[None, :], tl.trans(x), mask=tl.trans(mask))


@triton.jit
def transpose_addr_kernel(X, Y, M, N, BLOCK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK + tl.arange(0, BLOCK)
    offs_n = pid_n * BLOCK + tl.arange(0, BLOCK)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    x = tl.load(X + offs_m[:, None] * N + offs_n[None, :], mask=mask)
    tl.store(Y + offs_n[None, :] * M + offs_m[:, None], x, mask=mask)


@triton.jit
def permute_021_kernel(X, Y, B, M, N, BLOCK_B: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # X is B x M x N, Y is B x N x M: a 3-D tile loaded and tl.permute'd
    pb = tl.program_id(2)
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    rb = pb * BLOCK_B + tl.arange(0, BLOCK_B)
    rm = pm * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pn * BLOCK_N + tl.arange(0, BLOCK_N)
    src = X + rb[:, None, None] * (M * N) + rm[None, :, None] * N + rn[None, None, :]
    mask = (rb[:, None, None] < B) & (rm[None, :, None] < M) & (rn[None, None, :] < N)
    x = tl.load(src, mask=mask)
    y = tl.permute(x, (0, 2, 1))
    dst = Y + rb[:, None, None] * (M * N) + rn[None, :, None] * M + rm[None, None, :]
    tl.store(dst, y, mask=tl.permute(mask, (0, 2, 1)))


def inputs2(dt):
    return lambda p, rng: {"x": randn(rng, (p["M"], p["N"]), dt)}


def out2(dt):
    return lambda p: {"y": ((p["N"], p["M"]), dt)}


def t_launch(p, a, m):
    M, N = p["M"], p["N"]
    return (cdiv(M, m["BLOCK_M"]), cdiv(N, m["BLOCK_N"])), [a["x"], a["y"], M, N, N, M]


def bytes2(es):
    return lambda p: 2.0 * es * p["M"] * p["N"]


EXACT = {"float32": (0.0, 0.0), "float16": (0.0, 0.0)}
CASES = [
    Case("transpose32_f32", transpose_kernel, inputs2("float32"), out2("float32"), lambda p, x: {"y": x["x"].T},
         t_launch, gpu={"M": 8192, "N": 8192}, ci={"M": 40, "N": 72}, meta={"BLOCK_M": 32, "BLOCK_N": 32,
                                                                          "num_warps": 4},
         ci_meta={"BLOCK_M": 32, "BLOCK_N": 32, "num_warps": 4}, tol=EXACT, bytes=bytes2(4),
         idiom="tl.trans(x) stored with tl.trans(mask), 32x32 tiles"),
    Case("transpose64_f32", transpose_kernel, inputs2("float32"), out2("float32"), lambda p, x: {"y": x["x"].T},
         t_launch, gpu={"M": 8192, "N": 8192}, ci={"M": 100, "N": 72}, meta={"BLOCK_M": 64, "BLOCK_N": 64,
                                                                           "num_warps": 4},
         ci_meta={"BLOCK_M": 64, "BLOCK_N": 64, "num_warps": 4}, tol=EXACT, bytes=bytes2(4),
         idiom="tl.trans with a transposed mask, 64x64 tiles"),
    Case("transpose_addr_f16", transpose_addr_kernel, inputs2("float16"), out2("float16"),
         lambda p, x: {"y": x["x"].T},
         lambda p, a, m: ((cdiv(p["M"], m["BLOCK"]), cdiv(p["N"], m["BLOCK"])), [a["x"], a["y"], p["M"], p["N"]]),
         gpu={"M": 8190, "N": 6001}, ci={"M": 33, "N": 50}, meta={"BLOCK": 64, "num_warps": 8},
         ci_meta={"BLOCK": 32, "num_warps": 2}, tol=EXACT, bytes=bytes2(2),
         idiom="transpose by store addresses alone, sizes not divisible by the tile or 16"),
    Case("permute021_f32", permute_021_kernel, lambda p, rng: {"x": randn(rng, (p["B"], p["M"], p["N"]))},
         lambda p: {"y": ((p["B"], p["N"], p["M"]), "float32")}, lambda p, x: {"y": x["x"].transpose(0, 2, 1)},
         lambda p, a, m: ((cdiv(p["M"], m["BLOCK_M"]), cdiv(p["N"], m["BLOCK_N"]), cdiv(p["B"], m["BLOCK_B"])),
                          [a["x"], a["y"], p["B"], p["M"], p["N"]]),
         gpu={"B": 64, "M": 1024, "N": 1024}, ci={"B": 3, "M": 20, "N": 40},
         meta={"BLOCK_B": 2, "BLOCK_M": 32, "BLOCK_N": 64, "num_warps": 4},
         ci_meta={"BLOCK_B": 2, "BLOCK_M": 16, "BLOCK_N": 16, "num_warps": 2}, tol={"float32": (0.0, 0.0)},
         bytes=lambda p: 8.0 * p["B"] * p["M"] * p["N"], idiom="3-D tile and mask through tl.permute(x, (0, 2, 1))"),
]
