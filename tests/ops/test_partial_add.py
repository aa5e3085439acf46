"""A loop-carried sum updated only as `acc += tl.sum(x, axis)` (floats or integers) stays per-lane partial over the
lanes along the axis through the loop, as attention's `l_i * alpha + tl.sum(p, 1)` does (codegen/reduce.py
partial_sums): the sum's shuffles leave the loop, one butterfly after it (the A/B `partial_add`: 0.995 of the time
over 6 corpus kernels, W8A8 0.972, H100 2026-12-07). Results in the interpreter, through ptxas and on the GPU
(integers exact, floats to their dtype's tolerance), and no shuffle left in the loop."""
import re

import numpy as np
import pytest

import compiler
import compiler.language as tl

from .test_ops import TARGETS, assert_exact, poison, run


@compiler.jit
def chunk_sums_kernel(X, W, S, T, n_chunks, R: tl.constexpr, C: tl.constexpr):
    # per-row float sums over chunks of columns, and per-row integer sums over blocks of rows
    rr = tl.arange(0, R)
    rc = tl.arange(0, C)
    s = tl.zeros([R], dtype=tl.float32)
    t = tl.zeros([R], dtype=tl.int32)
    for i in range(n_chunks):
        x = tl.load(X + rr[:, None] * (C * n_chunks) + i * C + rc[None, :])
        s += tl.sum(x, axis=1)
        w = tl.load(W + (i * R + rr[:, None]) * C + rc[None, :])
        t += tl.sum(w.to(tl.int32), axis=1)
    tl.store(S + rr, s)
    tl.store(T + rr, t)


def _inputs(n=5, R=16, C=64):
    rng = np.random.default_rng(51)
    x = rng.standard_normal((R, C * n)).astype(np.float32)
    w = rng.integers(-128, 128, (n * R, C)).astype(np.int8)
    return x, w


@pytest.mark.parametrize("target", TARGETS)
def test_chunk_sums(target):
    x, w = _inputs()
    s, t = poison(16, "float32"), poison(16, "int32")
    run(target, chunk_sums_kernel, (1,), [x, w, s, t], [5], R=16, C=64, num_warps=4)
    np.testing.assert_allclose(s, x.astype(np.float64).sum(axis=1), rtol=1e-5, atol=1e-5)
    assert_exact(t, w.astype(np.int64).reshape(5, 16, 64).sum(axis=(0, 2)).astype(np.int32))


def _loop_body(ptx: str) -> str:
    """The PTX between the loop header's label and the back edge (the one loop of the kernel)."""
    m = re.search(r"\n(\$L__BB0_\d+):.*?bra(?:\.uni)?\s+\1;", ptx, re.S)
    assert m, "no loop found"
    return m.group(0)


def test_no_shuffle_in_the_loop():
    x, w = _inputs()
    s, t = np.zeros(16, np.float32), np.zeros(16, np.int32)
    chunk_sums_kernel._drop_compiled()
    ptx = chunk_sums_kernel.warmup(x, w, s, t, 5, grid=(1,), target="sm_90a", R=16, C=64, num_warps=4).asm["ptx"]
    assert _loop_body(ptx).count("shfl.sync") == 0 and ptx.count("shfl.sync") > 0
