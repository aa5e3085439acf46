"""A/B `free_no_vote` (passes/assign_layouts.py, the elementwise rule): a constant operand does not vote for an
elementwise op's layout where a computed operand has one (it is made in any layout for nothing). In a float64
N-body-style loop, 1.0 / sqrt(r2) stays in the square root's layout: no conversion of r2's tile in the loop.
Checked on the IR the passes leave for sm_90a, and against float64 on every target with the switch on and off."""
import numpy as np
import pytest

import compiler
import compiler.language as tl

from ..ops.test_ops import TARGETS, assert_close, poison, run
from .test_loop_operands import _loop, _pipeline


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


def _conversions_2d(monkeypatch, ab):
    monkeypatch.setenv("TILEFARM_AB", ab)
    p = np.zeros(100, np.float64)
    mod = _pipeline(_inv_dist, [p, np.zeros(100, np.float64), 100], dict(BI=64, BJ=16), 4)
    return [o for o in _loop(mod).blocks[0].walk() if o.kind == "convert_layout" and len(o.result.type.shape) == 2]


def test_constant_does_not_outvote(monkeypatch):
    assert _conversions_2d(monkeypatch, "")  # the default: the constant's layout wins, the sqrt's tile converted
    assert not _conversions_2d(monkeypatch, "free_no_vote")


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("ab", ["", "free_no_vote"])
def test_results(monkeypatch, target, ab):
    monkeypatch.setenv("TILEFARM_AB", ab)
    rng = np.random.default_rng(5)
    n = 100
    p = rng.uniform(-2, 2, n)
    out = poison(n, "float64")
    run(target, _inv_dist, (2,), [p, out], [n], BI=64, BJ=16, num_warps=4)
    d = p[None, :] - p[:, None]
    assert_close(out, (1.0 / np.sqrt(d * d + 0.25)).sum(axis=1), "float64")
