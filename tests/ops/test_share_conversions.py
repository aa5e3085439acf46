"""(A/B `convert_cse`) After layout assignment, one conversion of a value per layout, not one per user: a transposed
tile read by two elementwise ops, both in the layout of the tile they meet, is converted once; the copies' users read
the shared result and the DCE after layouts drops them. (The switch's first test kernel, the q4 quantizer's per-group
absmax, has no conversion left since reshapes of trailing dims stay in registers.)"""
import numpy as np
import pytest

import compiler
import compiler.language as tl

from .test_ops import TARGETS, poison, run


@compiler.jit
def trans_two_users_kernel(X, B, S, P, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.arange(0, BM)
    cols = tl.arange(0, BN)
    t = tl.trans(tl.load(X + rows[:, None] * BN + cols[None, :]))
    b = tl.load(B + cols[:, None] * BM + rows[None, :])
    tl.store(S + cols[:, None] * BM + rows[None, :], t + b)
    tl.store(P + cols[:, None] * BM + rows[None, :], t * b)


def _compile(monkeypatch, ab):
    monkeypatch.setenv("TILEFARM_AB", ab)
    x = np.zeros(64 * 64, np.float32)
    return trans_two_users_kernel.warmup(x, x, x, x, grid=(1,), target="sm_90a", BM=64, BN=64, num_warps=4)


def test_one_conversion_per_value_and_layout(monkeypatch):
    plain = _compile(monkeypatch, "").asm["ptx"].count("bar.sync")
    shared = _compile(monkeypatch, "convert_cse").asm["ptx"].count("bar.sync")
    assert shared == plain - 2, (plain, shared)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("ab", ["", "convert_cse"])
def test_shared_conversions_compute_the_same(target, ab, monkeypatch):
    if target == "interp" and ab:
        pytest.skip("the interpreter runs the IR before layouts: the switch does not reach it")
    monkeypatch.setenv("TILEFARM_AB", ab)
    rng = np.random.default_rng(8)
    x = rng.standard_normal(64 * 64).astype(np.float32)
    b = rng.standard_normal(64 * 64).astype(np.float32)
    s, p = poison(64 * 64, "float32"), poison(64 * 64, "float32")
    run(target, trans_two_users_kernel, (1,), [x, b, s, p], [], BM=64, BN=64, num_warps=4)
    t = x.astype(np.float64).reshape(64, 64).T
    b2 = b.astype(np.float64).reshape(64, 64)
    np.testing.assert_allclose(s.reshape(64, 64), t + b2, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(p.reshape(64, 64), t * b2, rtol=1e-6, atol=1e-6)
