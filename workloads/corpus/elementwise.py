"""Elementwise and memory-bound kernels: saxpy at N = 2^26 + 3 and 2^26, a chain with scalar arguments, SwiGLU
on 2-D rows, integer division and remainder, gathers through index tensors (embedding rows, single elements), a
histogram and a scatter-add with atomics."""
import numpy as np
import triton
import triton.language as tl

from workloads.corpus._case import Case, cdiv, randn


@triton.jit
def saxpy_kernel(x_ptr, y_ptr, out_ptr, a, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, a * x + y, mask=mask)


@triton.jit
def scalar_chain_kernel(X, Y, n, alpha, beta, lo, hi, gamma, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(X + offs, mask=m, other=0.0).to(tl.float32)
    t = tl.minimum(tl.maximum(x * alpha + beta, lo), hi)
    y = tl.exp(t) * gamma - tl.abs(x)
    tl.store(Y + offs, y.to(tl.float16), mask=m)


@triton.jit
def swiglu_kernel(A, B, C, stride, N, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = cols < N
    a = tl.load(A + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(B + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    c = a * tl.sigmoid(a) * b
    tl.store(C + row * stride + cols, c.to(tl.float16), mask=mask)


@triton.jit
def int_divmod_kernel(X, Q, R, n, d, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(X + offs, mask=m, other=1)
    tl.store(Q + offs, x // d, mask=m)
    tl.store(R + offs, x % d, mask=m)


@triton.jit
def embedding_kernel(ids_ptr, table_ptr, out_ptr, n_tokens, D, BLOCK_T: tl.constexpr, BLOCK_D: tl.constexpr):
    rt = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    rd = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    ids = tl.load(ids_ptr + rt, mask=rt < n_tokens, other=0)
    mask = (rt[:, None] < n_tokens) & (rd[None, :] < D)
    rows = tl.load(table_ptr + ids.to(tl.int64)[:, None] * D + rd[None, :], mask=mask)
    tl.store(out_ptr + rt[:, None] * D + rd[None, :], rows, mask=mask)


@triton.jit
def gather_kernel(X, IDX, Y, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    i = tl.load(IDX + offs, mask=m, other=0)
    tl.store(Y + offs, tl.load(X + i, mask=m), mask=m)


@triton.jit
def histogram_kernel(X, HIST, n, n_bins, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(X + offs, mask=m, other=0)
    b = tl.minimum(tl.maximum(v, 0), n_bins - 1)
    tl.atomic_add(HIST + b, 1, mask=m)


@triton.jit
def scatter_add_kernel(VAL, IDX, OUT, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(VAL + offs, mask=m, other=0.0)
    i = tl.load(IDX + offs, mask=m, other=0)
    tl.atomic_add(OUT + i, v, mask=m)


def vec(n_key="N"):
    return lambda p, rng: {"x": randn(rng, (p[n_key],)), "y": randn(rng, (p[n_key],))}


def saxpy_launch(p, a, m):
    return (cdiv(p["N"], m["BLOCK_SIZE"]),), [a["x"], a["y"], a["out"], p["a"], p["N"]]


def chain_ref(p, x):
    t = np.minimum(np.maximum(x["x"] * p["alpha"] + p["beta"], p["lo"]), p["hi"])
    return {"y": np.exp(t) * p["gamma"] - np.abs(x["x"])}


CHAIN = {"alpha": 1.5, "beta": -0.25, "lo": -3.0, "hi": 2.0, "gamma": 0.75}


def swiglu_ref(p, x):
    a = x["a"]
    return {"c": a / (1.0 + np.exp(-a)) * x["b"]}


def embedding_inputs(p, rng):
    return {"ids": rng.integers(0, p["V"], p["T"]).astype(np.int32), "table": randn(rng, (p["V"], p["D"]), "float16")}


def gather_inputs(p, rng):
    return {"x": randn(rng, (p["N"],)), "idx": rng.integers(0, p["N"], p["N"]).astype(np.int32)}


def hist_ref(p, x):
    b = np.clip(x["x"].astype(np.int64), 0, p["bins"] - 1)
    return {"hist": np.bincount(b, minlength=p["bins"]).astype(np.int64)}


def scatter_ref(p, x):
    out = np.zeros(p["OUT"], np.float64)
    np.add.at(out, x["idx"].astype(np.int64), x["val"])
    return {"out": out}


SAXPY_META = {"BLOCK_SIZE": 1024, "num_warps": 4}
CASES = [
    Case("saxpy_2p26p3_f32", saxpy_kernel, vec(), lambda p: {"out": ((p["N"],), "float32")},
         lambda p, x: {"out": p["a"] * x["x"] + x["y"]}, saxpy_launch, gpu={"N": 2 ** 26 + 3, "a": 2.5},
         ci={"N": 1003, "a": 2.5}, meta=SAXPY_META, ci_meta={"BLOCK_SIZE": 256, "num_warps": 2},
         flops=lambda p: 2.0 * p["N"], bytes=lambda p: 12.0 * p["N"],
         idiom="the tutorial vector kernel plus a scalar, N = 2^26 + 3 (not divisible by 16)"),
    Case("saxpy_2p26_f32", saxpy_kernel, vec(), lambda p: {"out": ((p["N"],), "float32")},
         lambda p, x: {"out": p["a"] * x["x"] + x["y"]}, saxpy_launch, gpu={"N": 2 ** 26, "a": 2.5},
         ci={"N": 1024, "a": 2.5}, meta=SAXPY_META, ci_meta={"BLOCK_SIZE": 256, "num_warps": 2},
         flops=lambda p: 2.0 * p["N"], bytes=lambda p: 12.0 * p["N"], idiom="saxpy, N = 2^26"),
    Case("scalar_chain_f32", scalar_chain_kernel, lambda p, rng: {"x": randn(rng, (p["N"],), "float32", 2.0)},
         lambda p: {"y": ((p["N"],), "float16")}, chain_ref,
         lambda p, a, m: ((cdiv(p["N"], m["BLOCK"]),), [a["x"], a["y"], p["N"], p["alpha"], p["beta"], p["lo"],
                                                      p["hi"], p["gamma"]]),
         gpu={"N": 2 ** 25 + 7, **CHAIN}, ci={"N": 777, **CHAIN}, meta={"BLOCK": 2048, "num_warps": 8},
         ci_meta={"BLOCK": 256, "num_warps": 2}, tol={"float16": (2e-3, 1e-4)}, flops=lambda p: 8.0 * p["N"],
         bytes=lambda p: 6.0 * p["N"], idiom="five float scalars, clamp by max/min, exp, cast to fp16"),
    Case("swiglu_f16", swiglu_kernel,
         lambda p, rng: {"a": randn(rng, (p["M"], p["N"]), "float16"), "b": randn(rng, (p["M"], p["N"]), "float16")},
         lambda p: {"c": ((p["M"], p["N"]), "float16")}, swiglu_ref,
         lambda p, a, m: ((p["M"], cdiv(p["N"], m["BLOCK_N"])), [a["a"], a["b"], a["c"], p["N"], p["N"]]),
         gpu={"M": 4096, "N": 11008}, ci={"M": 3, "N": 300}, meta={"BLOCK_N": 1024, "num_warps": 4},
         ci_meta={"BLOCK_N": 128, "num_warps": 2}, flops=lambda p: 5.0 * p["M"] * p["N"],
         bytes=lambda p: 6.0 * p["M"] * p["N"], idiom="SwiGLU on a 2-D grid (row, column block), N = 11008"),
    Case("int_divmod_i32", int_divmod_kernel,
         lambda p, rng: {"x": rng.integers(-10 ** 6, 10 ** 6, p["N"]).astype(np.int32)},
         lambda p: {"q": ((p["N"],), "int32"), "r": ((p["N"],), "int32")},
         lambda p, x: {"q": np.trunc(x["x"] / p["d"]), "r": np.fmod(x["x"], p["d"])},
         lambda p, a, m: ((cdiv(p["N"], m["BLOCK"]),), [a["x"], a["q"], a["r"], p["N"], p["d"]]),
         gpu={"N": 2 ** 26, "d": 7}, ci={"N": 1000, "d": 7}, meta={"BLOCK": 1024, "num_warps": 4},
         ci_meta={"BLOCK": 256, "num_warps": 2}, bytes=lambda p: 12.0 * p["N"],
         idiom="C-style // and % on int32 by a runtime divisor"),
    Case("embedding_f16", embedding_kernel, embedding_inputs, lambda p: {"out": ((p["T"], p["D"]), "float16")},
         lambda p, x: {"out": x["table"][x["ids"].astype(np.int64)]},
         lambda p, a, m: ((cdiv(p["T"], m["BLOCK_T"]), cdiv(p["D"], m["BLOCK_D"])),
                          [a["ids"], a["table"], a["out"], p["T"], p["D"]]),
         gpu={"T": 65536, "V": 32000, "D": 1024}, ci={"T": 20, "V": 50, "D": 40},
         meta={"BLOCK_T": 8, "BLOCK_D": 512, "num_warps": 4}, ci_meta={"BLOCK_T": 8, "BLOCK_D": 16, "num_warps": 2},
         tol={"float16": (0.0, 0.0)}, bytes=lambda p: 4.0 * p["T"] * p["D"],
         idiom="rows gathered through an int32 index tensor (widened to int64)"),
    Case("gather_f32", gather_kernel, gather_inputs, lambda p: {"y": ((p["N"],), "float32")},
         lambda p, x: {"y": x["x"][x["idx"].astype(np.int64)]},
         lambda p, a, m: ((cdiv(p["N"], m["BLOCK"]),), [a["x"], a["idx"], a["y"], p["N"]]),
         gpu={"N": 2 ** 24}, ci={"N": 500}, meta={"BLOCK": 1024, "num_warps": 4},
         ci_meta={"BLOCK": 128, "num_warps": 2}, tol={"float32": (0.0, 0.0)}, bytes=lambda p: 12.0 * p["N"],
         idiom="single elements gathered through a random index tensor"),
    Case("histogram_i32", histogram_kernel,
         lambda p, rng: {"x": rng.integers(-5, p["bins"] + 5, p["N"]).astype(np.int32)},
         lambda p: {"hist": ((p["bins"],), "int32")}, hist_ref,
         lambda p, a, m: ((cdiv(p["N"], m["BLOCK"]),), [a["x"], a["hist"], p["N"], p["bins"]]),
         gpu={"N": 2 ** 24, "bins": 4096}, ci={"N": 600, "bins": 16}, meta={"BLOCK": 1024, "num_warps": 4},
         ci_meta={"BLOCK": 128, "num_warps": 2}, zero=("hist",), bytes=lambda p: 4.0 * p["N"],
         idiom="histogram: tl.atomic_add of 1 into clamped bins"),
    Case("scatter_add_f32", scatter_add_kernel,
         lambda p, rng: {"val": randn(rng, (p["N"],)), "idx": rng.integers(0, p["OUT"], p["N"]).astype(np.int32)},
         lambda p: {"out": ((p["OUT"],), "float32")}, scatter_ref,
         lambda p, a, m: ((cdiv(p["N"], m["BLOCK"]),), [a["val"], a["idx"], a["out"], p["N"]]),
         gpu={"N": 2 ** 24, "OUT": 2 ** 20}, ci={"N": 700, "OUT": 50}, meta={"BLOCK": 1024, "num_warps": 4},
         ci_meta={"BLOCK": 128, "num_warps": 2}, zero=("out",), tol={"float32": (1e-4, 1e-5)},
         bytes=lambda p: 12.0 * p["N"], idiom="scatter-add: float tl.atomic_add through an index tensor"),
]
