"""Reshapes that change trailing dims, as merges and splits of a blocked layout, hold every
element in the thread that held it (checked on the layouts' linear forms, as the emitter's in-register reshape
checks them), and a 4-bit group quantizer's reshapes then cost no shared memory."""
import itertools
import importlib

import numpy as np
import pytest

from compiler.passes.layouts import BlockedLayout, linear

AL = importlib.import_module("compiler.passes.assign_layouts")


def _flat(coord, shape):
    f = 0
    for c, n in zip(coord, shape):
        f = f * n + c
    return f


def _same_elements(src, s, dst, r, nw):
    a, b = linear(src, s, nw), linear(dst, r, nw)
    if len(a.lane) != len(b.lane) or len(a.warp) != len(b.warp):
        return False
    if any(_flat(x, s) != _flat(y, r) for x, y in zip(a.lane + a.warp, b.lane + b.warp)):
        return False
    return sorted(_flat(a.reg_coord(i), s) for i in range(a.num_regs)) == \
        sorted(_flat(b.reg_coord(i), r) for i in range(b.num_regs))


def _layouts(n, nw):
    """Every 2-D blocked layout of [m, n] (rows over the rest) tiling n exactly, with order (1, 0)."""
    for sp, tp in itertools.product((1, 2, 4, 8, 16), (1, 2, 4, 8, 16, 32)):
        wp = n // (sp * tp)
        if wp < 1 or sp * tp * wp != n or nw % wp or 32 % tp:
            continue
        yield BlockedLayout((1, sp), (32 // tp, tp), (nw // wp, wp), (1, 0))


@pytest.mark.parametrize("n,f", [(256, 32), (256, 2), (128, 64), (64, 16), (512, 128), (32, 32)])
def test_split_holds_the_same_elements(n, f):
    found = 0
    for lay in _layouts(n, 4):
        s, r = (16, n), (16, n // f, f)
        got = AL._reshaped_trailing(lay, s, r)
        if got is not None:
            found += 1
            assert _same_elements(lay, s, got, r, 4), (lay, got)
            back = AL._reshaped_trailing(got, r, s)  # and the merge back is the source
            assert back is not None and _same_elements(got, r, back, s, 4)
    assert found


def test_split_refuses_what_no_blocked_layout_holds():
    # the inner dim of 8 would take all 4 registers and 2 lanes: fine; of 2 with 4 registers: the older rule's
    assert AL._split_last(BlockedLayout((1, 4), (1, 32), (4, 1), (1, 0)), 128, 8) is not None
    # a last dim the layout does not tile exactly (broadcast over lanes): refused
    assert AL._split_last(BlockedLayout((1, 4), (1, 32), (4, 1), (1, 0)), 64, 8) is None
    lay = BlockedLayout((1, 4), (4, 8), (4, 1), (1, 0))  # 32 along the last dim
    assert AL._reshaped_trailing(lay, (64, 32), (64, 2, 16)) is not None
    assert AL._reshaped_trailing(lay, (64, 32), (64, 16, 2)) is not None
    assert AL._reshaped_trailing(BlockedLayout((1, 4), (4, 8), (4, 1), (0, 1)), (64, 32), (64, 2, 16)) is None


def test_quantizer_reshapes_in_registers():
    import compiler
    import compiler.language as tl

    @compiler.jit
    def quant(X, Q, S, BLOCK_M: tl.constexpr, NG: tl.constexpr, G: tl.constexpr):
        rm = tl.arange(0, BLOCK_M)
        rk = tl.arange(0, NG * G)
        x = tl.load(X + rm[:, None] * (NG * G) + rk[None, :]).to(tl.float32)
        xg = tl.reshape(x, [BLOCK_M, NG, G])
        amax = tl.max(tl.abs(xg), axis=2)
        scale = tl.where(amax > 0, amax / 7.0, 1.0)
        q = tl.clamp(tl.floor(xg / scale[:, :, None] + 0.5), -8.0, 7.0) + 8.0
        lo, hi = tl.split(tl.reshape(q.to(tl.uint8), [BLOCK_M, NG * G // 2, 2]))
        rp = tl.arange(0, NG * G // 2)
        tl.store(Q + rm[:, None] * (NG * G // 2) + rp[None, :], lo | (hi << 4))
        tl.store(S + rm[:, None] * NG + tl.arange(0, NG)[None, :], scale)

    x = np.random.default_rng(3).standard_normal(16 * 256).astype(np.float16)
    q, s = np.zeros(16 * 128, np.uint8), np.zeros(16 * 8, np.float32)
    args = dict(grid=(1,), target="sm_90a", BLOCK_M=16, NG=8, G=32, num_warps=4)
    split = quant.warmup(x, q, s, **args)  # (16 KiB of shared memory and 10 barriers before this rule)
    assert split.metadata["shared_bytes"] == 0 and "bar.sync" not in split.asm["ptx"]
    quant[(1,)](x, q, s, BLOCK_M=16, NG=8, G=32)  # the interpreter: the spec both builds compile
    xg = x.astype(np.float64).reshape(16, 8, 32)
    amax = np.abs(xg).max(axis=2)
    scale = np.where(amax > 0, amax / 7.0, 1.0)
    np.testing.assert_allclose(s.reshape(16, 8), scale, rtol=1e-6)
