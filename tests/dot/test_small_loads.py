"""A/B `remat_loads` (passes/assign_layouts.py): a load of at most one element a thread takes the layout its users
want (at most 4 elements a thread there) instead of a coalesced layout and a conversion through shared memory: a
recurrence whose per-step vectors broadcast against a 2-D state converts nothing in its loop. Checked on the IR the
passes leave for sm_90a, and against float64 on every target with the switch on and off."""
import numpy as np
import pytest

import compiler
import compiler.language as tl

from ..ops.test_ops import TARGETS, assert_close, poison, run
from .test_loop_operands import _loop, _pipeline


@compiler.jit
def _decay_state(X, DT, A, Y, L, D, BLOCK_D: tl.constexpr, N: tl.constexpr):
    # per step t: h = exp(dt_t * a) * h + x_t; y_t = sum_n h; x_t, dt_t vectors of the D channels, a [D, N]
    rd = tl.program_id(0) * BLOCK_D + tl.arange(0, BLOCK_D)
    m = rd < D
    rn = tl.arange(0, N)
    a = tl.load(A + rd[:, None] * N + rn[None, :], mask=m[:, None], other=0.0)
    bias = tl.load(DT + L * D + rd, mask=m, other=0.0)  # a per-channel bias after the L steps' rows
    h = tl.zeros([BLOCK_D, N], dtype=tl.float32)
    for t in range(L):
        x = tl.load(X + t * D + rd, mask=m, other=0.0)
        dt = tl.load(DT + t * D + rd, mask=m, other=0.0) + bias
        h = tl.exp(dt[:, None] * a) * h + x[:, None]
        tl.store(Y + t * D + rd, tl.sum(h, axis=1), mask=m)


def _case(rng, L, D, N):
    x = rng.uniform(-1, 1, (L, D)).astype(np.float32)
    dt = rng.uniform(-0.5, 0.0, (L + 1, D)).astype(np.float32)
    a = rng.uniform(0.1, 1.0, (D, N)).astype(np.float32)
    h = np.zeros((D, N))
    ys = []
    for t in range(L):
        h = np.exp((dt[t] + dt[L]).astype(np.float64)[:, None] * a) * h + x[t].astype(np.float64)[:, None]
        ys.append(h.sum(axis=1))
    return x, dt, a, np.array(ys)


def _conversions_in_loop(ab, monkeypatch):
    monkeypatch.setenv("TILEFARM_AB", ab)
    rng = np.random.default_rng(0)
    x, dt, a, _ = _case(rng, 8, 100, 16)
    mod = _pipeline(_decay_state, [x, dt, a, np.zeros((8, 100), np.float32), 8, 100], dict(BLOCK_D=64, N=16), 4)
    return [o for o in _loop(mod).blocks[0].walk() if o.kind == "convert_layout"]


def test_no_conversion_in_the_loop(monkeypatch):
    assert _conversions_in_loop("", monkeypatch)  # the default: the per-step vectors converted every step
    assert not _conversions_in_loop("remat_loads", monkeypatch)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("ab", ["", "remat_loads"])
def test_results(monkeypatch, target, ab):
    monkeypatch.setenv("TILEFARM_AB", ab)
    rng = np.random.default_rng(1)
    L, D, N = 12, 100, 16
    x, dt, a, ref = _case(rng, L, D, N)
    y = poison((L, D), "float32")
    run(target, _decay_state, (2,), [x, dt, a, y], [L, D], BLOCK_D=64, N=N, num_warps=4)
    assert_close(y, ref, "float32")
