"""Reshapes that move no data: the layout pass gives the result the source's elements
per thread (passes/assign_layouts.py `_reshaped`) and the emitter only renames registers
(codegen/llvm.py `_reshape_in_registers`). Checked here without a GPU: for every thread and result register, the
element the renamed register holds is the one the result layout says it holds."""
import itertools

import numpy as np
import pytest

import compiler
import compiler.language as tl
from compiler.codegen.common import Tile
from compiler.codegen.llvm import _flat_index, _reshape_in_registers
from compiler.passes.assign_layouts import _reshaped
from compiler.passes.layouts import BlockedLayout, linear

from .test_ops import TARGETS, poison, run

CASES = [  # (source layout, source shape, result shape, warps)
    (BlockedLayout((1, 8), (2, 16), (4, 1), (1, 0)), (32, 128), (32, 64, 2), 4),
    (BlockedLayout((1, 4), (4, 8), (2, 2), (1, 0)), (16, 64), (16, 16, 4), 4),
    (BlockedLayout((2, 2), (1, 32), (8, 1), (1, 0)), (64, 64), (64, 32, 2), 8),
    (BlockedLayout((1, 4, 2), (2, 16, 1), (4, 1, 1), (2, 1, 0)), (32, 64, 2), (32, 128), 4),
]


@pytest.mark.parametrize("src,s,r,nw", CASES)
def test_reshaped_layout_renames_registers_only(src, s, r, nw):
    dst = _reshaped(src, s, r)
    assert dst is not None
    a, b = linear(src, s, nw), linear(dst, r, nw)
    x = Tile(a, [("reg", i) for i in range(a.num_regs)])
    regs = _reshape_in_registers(x, b, s, r)
    assert regs is not None
    for lane, warp in itertools.product(range(32), range(nw)):
        ta, tb = a.thread_coord(lane, warp), b.thread_coord(lane, warp)
        for q, (_, i) in enumerate(regs):
            want = _flat_index(tuple(u ^ v for u, v in zip(b.reg_coord(q), tb)), r)
            have = _flat_index(tuple(u ^ v for u, v in zip(a.reg_coord(i), ta)), s)
            assert want == have


def test_no_free_form_is_claimed_where_threads_would_need_others_elements():
    # one element of the last dim a thread: a split into pairs needs a neighbour's element
    assert _reshaped(BlockedLayout((1, 1), (1, 32), (4, 1), (1, 0)), (4, 64), (4, 32, 2)) is None
    x = linear(BlockedLayout((1, 1), (1, 32), (4, 1), (1, 0)), (4, 64), 4)
    y = linear(BlockedLayout((1, 1, 2), (1, 32, 1), (4, 1, 1), (2, 1, 0)), (4, 32, 2), 4)
    assert _reshape_in_registers(Tile(x, list(range(x.num_regs))), y, (4, 64), (4, 32, 2)) is None


@compiler.jit
def rope_pairs(X, C, S, Y, D: tl.constexpr, R: tl.constexpr):
    rows = tl.arange(0, R)[:, None]
    x = tl.load(X + rows * D + tl.arange(0, D)[None, :]).to(tl.float32)
    a, b = tl.split(tl.reshape(x, (R, D // 2, 2)))
    c = tl.load(C + tl.arange(0, D // 2))[None, :]
    s = tl.load(S + tl.arange(0, D // 2))[None, :]
    y = tl.reshape(tl.join(a * c - b * s, a * s + b * c), (R, D))
    tl.store(Y + rows * D + tl.arange(0, D)[None, :], y.to(tl.float16))


@pytest.mark.parametrize("target", TARGETS)
def test_interleaved_pairs(target):
    rng = np.random.default_rng(7)
    R, D = 32, 128
    x = rng.uniform(-1, 1, (R, D)).astype(np.float16)
    ang = rng.uniform(0, 6.3, D // 2)
    c, s = np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)
    y = poison((R, D), "float16")
    run(target, rope_pairs, (1,), [x, c, s, y], [], D=D, R=R, num_warps=4)
    a, b = x[:, 0::2].astype(np.float64), x[:, 1::2].astype(np.float64)
    ref = np.empty((R, D))
    ref[:, 0::2], ref[:, 1::2] = a * c - b * s, a * s + b * c
    np.testing.assert_allclose(y.astype(np.float64), ref, rtol=2e-3, atol=2e-3)


def test_interleaved_pairs_need_no_shared_memory():
    """Split into pairs and joined back without a trip through shared memory (which would take the 32x128 tile's
    8 KiB at least)."""
    x = np.zeros((32, 128), np.float16)
    c = np.zeros(64, np.float32)
    k = rope_pairs.warmup(x, c, c, x, D=128, R=32, grid=(1,), target="sm_90a", num_warps=4)
    assert k.metadata.get("shared_bytes", 0) < 1024
