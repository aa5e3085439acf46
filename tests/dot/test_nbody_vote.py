"""A float64 N-body-style loop (1.0 / sqrt(r2) of a broadcast difference, a constant beside a computed operand in
an elementwise op's layout vote) against float64 on every target. (A rule where constants do not vote, which made
this loop's tile stay in the square root's layout, was timed and removed: docs/EXPERIMENTS.md, free_no_vote.)"""
import numpy as np
import pytest

import compiler
import compiler.language as tl

from ..ops.test_ops import TARGETS, assert_close, poison, run


@compiler.jit
def _inv_dist(P, OUT, n, BI: tl.constexpr, BJ: tl.constexpr):
    ri = tl.program_id(0) * BI + tl.arange(0, BI)
    xi = tl.load(P + ri, mask=ri < n, other=0.0)
    acc = tl.zeros([BI], dtype=tl.float64)
    for j0 in range(0, n, BJ):
        rj = j0 + tl.arange(0, BJ)
        xj = tl.load(P + rj, mask=rj < n, other=0.0)
        d = xj[None, :] - xi[:, None]
        inv = 1.0 / tl.sqrt(d * d + 0.25)
        acc += tl.sum(tl.where(rj[None, :] < n, inv, 0.0), axis=1)
    tl.store(OUT + ri, acc, mask=ri < n)


@pytest.mark.parametrize("target", TARGETS)
def test_results(target):
    rng = np.random.default_rng(5)
    n = 100
    p = rng.uniform(-2, 2, n)
    out = poison(n, "float64")
    run(target, _inv_dist, (2,), [p, out], [n], BI=64, BJ=16, num_warps=4)
    d = p[None, :] - p[:, None]
    assert_close(out, (1.0 / np.sqrt(d * d + 0.25)).sum(axis=1), "float64")
