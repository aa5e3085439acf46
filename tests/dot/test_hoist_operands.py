"""passes/assign_layouts.py `_hoist_operand`: a dot operand defined before the loop the
dot is in, converted to the dot's operand layout, is converted once before the loop instead of every iteration
(here a tf32 dot on mma.sync, whose operands are registers). Checked on the IR the passes leave for sm_90a, and
against float64 on every target."""
import numpy as np
import pytest

import compiler
import compiler.language as tl

from ..ops.test_ops import TARGETS, assert_close, poison, run
from .test_loop_operands import _loop, _pipeline


@compiler.jit
def _scores_max(X, C, OUT, M, K, D: tl.constexpr, BM: tl.constexpr, BK: tl.constexpr, PREC: tl.constexpr):
    # the largest x . c over blocks of centroids c, x loaded once before the loop
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rd = tl.arange(0, D)
    x = tl.load(X + rm[:, None] * D + rd[None, :], mask=rm[:, None] < M, other=0.0)
    best = tl.full([BM], float("-inf"), dtype=tl.float32)
    for k0 in range(0, K, BK):
        rk = k0 + tl.arange(0, BK)
        c = tl.load(C + rk[None, :] * D + rd[:, None], mask=rk[None, :] < K, other=0.0)
        s = tl.where(rk[None, :] < K, tl.dot(x, c, input_precision=PREC), float("-inf"))
        best = tl.maximum(best, tl.max(s, axis=1))
    tl.store(OUT + rm, best, mask=rm < M)


def _args(M=100, K=90, D=32):
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, (M, D)).astype(np.float32)
    c = rng.uniform(-1, 1, (K, D)).astype(np.float32)
    return x, c


def _conversions(prec):
    x, c = _args()
    # sm_90: the tf32 dot on mma.sync (on sm_90a it runs on wgmma, whose operands are stored, not converted)
    mod = _pipeline(_scores_max, [x, c, np.zeros(100, np.float32), 100, 90], dict(D=32, BM=64, BK=32, PREC=prec), 4,
                    arch="sm_90")
    loop = _loop(mod)
    inside = [o for o in loop.blocks[0].walk() if o.kind == "convert_layout" and o.operands[0].type.shape == (64, 32)]
    before = [o for o in mod.function.body.ops[:mod.function.body.ops.index(loop)]
              if o.kind == "convert_layout" and tuple(o.result.type.shape) == (64, 32)]
    return inside, before


@pytest.mark.parametrize("prec", ["tf32", "ieee"])  # mma.sync, FMAs
def test_operand_converted_once_before_the_loop(prec):
    inside, before = _conversions(prec)
    assert before and not inside


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("prec", ["tf32", "ieee"])
def test_results(target, prec):
    x, c = _args()
    out = poison(100, "float32")
    run(target, _scores_max, (2,), [x, c, out], [100, 90], D=32, BM=64, BK=32, PREC=prec, num_warps=4)
    tol = dict(rtol=2e-3, atol=2e-3) if prec == "tf32" else {}  # tf32 keeps 10 mantissa bits of each operand
    assert_close(out, (x.astype(np.float64) @ c.astype(np.float64).T).max(axis=1), "float32", **tol)
