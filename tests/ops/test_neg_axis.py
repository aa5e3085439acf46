"""(A/B `neg_axis`) The axis analysis keeps a negated value's divisibility (passes/axisinfo.py `_neg`): a row above,
loaded through `p - stride` with a stride divisible by 16, is read by 16-byte vectors as the row below (`p + stride`)
is, where the default knows nothing of `-stride` and loads it an element at a time. The same results with and
without the switch, in the interpreter, through ptxas and on the GPU."""
import re

import numpy as np
import pytest

import compiler
import compiler.language as tl

from .test_ops import TARGETS, poison, run


@compiler.jit
def row_above_kernel(X, Y, H, W, stride, BH: tl.constexpr, BW: tl.constexpr):
    i = (tl.program_id(0) * BH + tl.arange(0, BH))[:, None]
    j = (tl.program_id(1) * BW + tl.arange(0, BW))[None, :]
    ok = (i < H) & (j < W)
    p = X + i * stride + j
    up = tl.load(p - stride, mask=(i >= 1) & ok, other=0.0)
    tl.store(Y + i * W + j, up + tl.load(p, mask=ok, other=0.0), mask=ok)


def _case():
    H, W, stride = 37, 64, 80  # stride a multiple of 16 elements; the last row block masked
    x = np.random.default_rng(13).standard_normal((H, stride)).astype(np.float32)
    ref = x[:, :W].astype(np.float64).copy()
    ref[1:] += x[:-1, :W]
    return x, ref, H, W, stride


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("ab", ["", "neg_axis"])
def test_row_above_results(target, ab, monkeypatch):
    monkeypatch.setenv("TILEFARM_AB", ab)
    x, ref, H, W, stride = _case()
    y = poison((H, W), "float32")
    run(target, row_above_kernel, (compiler.cdiv(H, 16), compiler.cdiv(W, 32)), [x, y], [H, W, stride], BH=16,
        BW=32, num_warps=4)
    if target != "ptxas":
        np.testing.assert_allclose(y, ref, rtol=1e-6, atol=1e-6)


def test_row_above_loads_vectors(monkeypatch):
    """Both loads 16-byte vectors under the switch; the row above an element at a time without it."""
    x, _, H, W, stride = _case()
    y = np.zeros((H, W), np.float32)
    scalar = {}
    for ab in ("", "neg_axis"):
        monkeypatch.setenv("TILEFARM_AB", ab)
        ptx = row_above_kernel.warmup(x, y, H, W, stride, grid=(1, 1), target="sm_90a", BH=16, BW=32,
                                      num_warps=4).asm["ptx"]
        scalar[ab] = len(re.findall(r"ld\.global\.b32", ptx))
        if ab:
            assert len(re.findall(r"ld\.global\.v4\.b32", ptx)) >= 2
    assert scalar["neg_axis"] == 0 and scalar[""] > 0, scalar
