"""(A/B `convert_cse`) After layout assignment, one conversion of a value per layout, not one per user: a per-group
absmax used by a compare and a division, both wanting the store's layout, is converted once (the q4 quantizer's
idiom); the copies' users read the shared result and the DCE after layouts drops them."""
import numpy as np
import pytest

import compiler
import compiler.language as tl

from .test_ops import TARGETS, poison, run


@compiler.jit
def group_scale_kernel(X, S, Y, BLOCK_M: tl.constexpr, NG: tl.constexpr, G: tl.constexpr):
    rm = tl.arange(0, BLOCK_M)
    rk = tl.arange(0, NG * G)
    x = tl.load(X + rm[:, None] * (NG * G) + rk[None, :])
    xg = tl.reshape(x, [BLOCK_M, NG, G])
    amax = tl.max(tl.abs(xg), axis=2)
    scale = tl.where(amax > 0, amax / 7.0, 1.0)
    rg = tl.arange(0, NG)
    tl.store(S + rm[:, None] * NG + rg[None, :], scale)
    y = xg / scale[:, :, None]
    tl.store(Y + rm[:, None] * (NG * G) + rk[None, :], tl.reshape(y, [BLOCK_M, NG * G]))


def _compile(monkeypatch, ab):
    monkeypatch.setenv("TILEFARM_AB", ab)
    x, s = np.zeros(16 * 256, np.float32), np.zeros(16 * 8, np.float32)
    return group_scale_kernel.warmup(x, s, x, grid=(1,), target="sm_90a", BLOCK_M=16, NG=8, G=32, num_warps=4)


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
    x = rng.standard_normal(16 * 256).astype(np.float32)
    x[:32] = 0.0  # a group of zeros: scale 1.0 through the where
    s, y = poison(16 * 8, "float32"), poison(16 * 256, "float32")
    run(target, group_scale_kernel, (1,), [x, s, y], [], BLOCK_M=16, NG=8, G=32, num_warps=4)
    xg = x.astype(np.float64).reshape(16, 8, 32)
    amax = np.abs(xg).max(axis=2)
    scale = np.where(amax > 0, amax / 7.0, 1.0)
    np.testing.assert_allclose(s, scale.reshape(-1), rtol=1e-6, atol=0)
    np.testing.assert_allclose(y, (xg / scale[:, :, None]).reshape(-1), rtol=1e-6, atol=0)
