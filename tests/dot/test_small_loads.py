"""Small loads (passes/assign_layouts.py `_small_load`): a load of at most one element a thread takes the layout its
users want (at most 4 elements a thread there) instead of a coalesced layout and a conversion through shared memory:
a recurrence whose per-step vectors broadcast against a 2-D state converts nothing in its loop. Checked on the IR the
passes leave for sm_90a, and against float64 on every target."""
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


def _conversions_in_loop():
    rng = np.random.default_rng(0)
    x, dt, a, _ = _case(rng, 8, 100, 16)
    mod = _pipeline(_decay_state, [x, dt, a, np.zeros((8, 100), np.float32), 8, 100], dict(BLOCK_D=64, N=16), 4)
    return [o for o in _loop(mod).blocks[0].walk() if o.kind == "convert_layout"]


def test_no_conversion_in_the_loop():
    # (a coalesced load of the per-step vectors converted them every step: 14 barriers a step in the selective scan)
    assert not _conversions_in_loop()


@pytest.mark.parametrize("target", TARGETS)
def test_results(target):
    rng = np.random.default_rng(1)
    L, D, N = 12, 100, 16
    x, dt, a, ref = _case(rng, L, D, N)
    y = poison((L, D), "float32")
    run(target, _decay_state, (2,), [x, dt, a, y], [L, D], BLOCK_D=64, N=N, num_warps=4)
    assert_close(y, ref, "float32")


@compiler.jit
def _query_scores(Q, K, OUT, L, D: tl.constexpr, BLOCK_N: tl.constexpr):
    # one query row q [D] loaded once, then a loop over key blocks: s = sum(k * q[None, :], 1), a running max
    rd = tl.arange(0, D)
    q = tl.load(Q + rd).to(tl.float32) * 0.5
    best = float("-inf")
    for start in range(0, L, BLOCK_N):
        rn = start + tl.arange(0, BLOCK_N)
        k = tl.load(K + rn[:, None] * D + rd[None, :], mask=rn[:, None] < L, other=0.0)
        s = tl.sum(k.to(tl.float32) * q[None, :], axis=1)
        best = tl.maximum(best, tl.max(tl.where(rn < L, s, float("-inf")), axis=0))
    tl.store(OUT, best)


def _query_loop_conversions():
    q, k = np.zeros(128, np.float16), np.zeros((300, 128), np.float16)
    mod = _pipeline(_query_scores, [q, k, np.zeros(1, np.float32), 300], dict(D=128, BLOCK_N=64), 4)
    loop = _loop(mod)
    before = mod.function.body.ops[:mod.function.body.ops.index(loop)]
    return ([o for o in loop.blocks[0].walk() if o.kind == "convert_layout"],
            [o for o in before if o.kind == "convert_layout"])


def test_loop_invariant_load_keeps_its_conversion_in_the_loop(monkeypatch):
    """A small load before a loop whose users' layout in the loop gives a thread more than 4 elements stays
    coalesced, and its chain is converted in the loop, not hoisted before the loop by the open first walk (split-KV
    decode: 1.18 of the time hoisted; settle_small_loads walks it again coalesced)."""
    inside, before = _query_loop_conversions()
    assert inside and not before


@pytest.mark.parametrize("target", TARGETS)
def test_query_scores(target):
    rng = np.random.default_rng(2)
    q = rng.uniform(-1, 1, 128).astype(np.float16)
    k = rng.uniform(-1, 1, (300, 128)).astype(np.float16)
    out = poison(1, "float32")
    run(target, _query_scores, (1,), [q, k, out], [300], D=128, BLOCK_N=64, num_warps=4)
    ref = (k.astype(np.float64) @ (q.astype(np.float64) * 0.5)).max()
    assert_close(out, np.array([ref]), "float32")


@compiler.jit
def _taps(X, Wt, Y, C, P, OC, BLOCK_OC: tl.constexpr, BLOCK_P: tl.constexpr):
    # a direct-convolution-like loop: for each input channel, a [BLOCK_OC] weight column (address arithmetic several
    # ops deep) times a [BLOCK_P] row of inputs into a [BLOCK_OC, BLOCK_P] accumulator
    rp = tl.program_id(0) * BLOCK_P + tl.arange(0, BLOCK_P)
    roc = tl.arange(0, BLOCK_OC)
    acc = tl.zeros([BLOCK_OC, BLOCK_P], dtype=tl.float32)
    for c in range(C):
        x = tl.load(X + c * P + rp, mask=rp < P, other=0.0)
        w = tl.load(Wt + ((roc * C + c) * 3 + 1) * 3 + 2, mask=roc < OC, other=0.0)
        acc += w[:, None] * x[None, :]
    tl.store(Y + roc[:, None] * P + rp[None, :], acc, mask=(roc[:, None] < OC) & (rp[None, :] < P))


def _taps_case(rng, C=5, P=200, OC=30):
    x = rng.uniform(-1, 1, (C, P)).astype(np.float32)
    w = rng.uniform(-1, 1, (OC, C, 3, 3)).astype(np.float32)
    return x, w, w[:, :, 1, 2].astype(np.float64) @ x.astype(np.float64)


def _taps_loop_conversions():
    x, w, _ = _taps_case(np.random.default_rng(0))
    mod = _pipeline(_taps, [x, w, np.zeros((30, 200), np.float32), 5, 200, 30], dict(BLOCK_OC=32, BLOCK_P=128), 4)
    return [o for o in _loop(mod).blocks[0].walk() if o.kind == "convert_layout"]


def test_wide_small_load_stays_coalesced():
    """The weight column would take 32 elements a thread in the accumulator's slice layout: over 4, so it stays
    coalesced and is converted in the loop (loaded in that layout, the direct NCHW convolution took 1.18x its time on
    the H100: docs/EXPERIMENTS.md, remat_wide)."""
    assert _taps_loop_conversions()


@pytest.mark.parametrize("target", TARGETS)
def test_taps(target):
    x, w, ref = _taps_case(np.random.default_rng(3))
    y = poison((30, 200), "float32")
    run(target, _taps, (2,), [x, w, y], [5, 200, 30], BLOCK_OC=32, BLOCK_P=128, num_warps=4)
    assert_close(y, ref, "float32")


@compiler.jit
def _scaled_absmax(A, S, OUT, M, K, BM: tl.constexpr, BK: tl.constexpr):
    # per row: max over k of |a[m, k] * s[k]|; s loaded per K step (a smoothing vector), 8 contiguous floats a thread
    # in the slice of the tile's layout
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rk = tl.arange(0, BK)
    best = tl.zeros([BM], dtype=tl.float32)
    for k0 in range(0, K, BK):
        a = tl.load(A + rm[:, None] * K + k0 + rk[None, :], mask=rm[:, None] < M, other=0.0).to(tl.float32)
        s = tl.load(S + k0 + rk)
        best = tl.maximum(best, tl.max(tl.abs(a * s[None, :]), axis=1))
    tl.store(OUT + rm, best, mask=rm < M)


def _absmax_case(rng, M=200, K=256):
    a = rng.uniform(-1, 1, (M, K)).astype(np.float16)
    s = rng.uniform(0.5, 2.0, K).astype(np.float32)
    return a, s, np.abs(a.astype(np.float64) * s.astype(np.float64)[None, :]).max(axis=1)


@pytest.mark.parametrize("target", TARGETS)
def test_scaled_absmax(target):
    a, s, ref = _absmax_case(np.random.default_rng(6))
    out = poison(200, "float32")
    run(target, _scaled_absmax, (2,), [a, s, out], [200, 256], BM=128, BK=64, num_warps=8)
    assert_close(out, ref, "float32")
