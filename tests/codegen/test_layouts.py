"""Layout math: every (layout, shape) pair must cover each element, registers never duplicate within a thread,
and slices / permutes keep elements in place (what the emitter's free conversions rely on)."""
from __future__ import annotations

import itertools

import pytest

from compiler.passes.layouts import BlockedLayout, SliceLayout, default_blocked, linear, permute_layout


def holders(ll):
    """{coordinate: [(reg, lane, warp)]} by brute force over the bases."""
    out = {}
    nl = 1 << len(ll.warp)
    for r in range(ll.num_regs):
        for lane in range(32):
            for w in range(nl):
                c = list(ll.reg_coord(r))
                for i, b in enumerate(ll.lane):
                    if lane >> i & 1:
                        c = [x ^ y for x, y in zip(c, b)]
                for i, b in enumerate(ll.warp):
                    if w >> i & 1:
                        c = [x ^ y for x, y in zip(c, b)]
                out.setdefault(tuple(c), []).append((r, lane, w))
    return out


SHAPES = [(1,), (16,), (128,), (1024,), (4, 256), (64, 64), (1, 512), (256, 1), (2, 8), (8, 2, 16)]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("nw", [1, 4, 8])
@pytest.mark.parametrize("eb", [1, 2, 4, 8])
def test_default_layout_covers_shape(shape, nw, eb):
    lay = default_blocked(shape, eb, nw)
    ll = linear(lay, shape, nw)
    h = holders(ll)
    assert set(h) == set(itertools.product(*[range(s) for s in shape]))
    n = 1
    for s in shape:
        n *= s
    assert len({ll.reg_coord(r) for r in range(ll.num_regs)}) == ll.num_regs
    # elements are spread: no thread holds more than its share (rounded up)
    assert ll.num_regs <= max(1, n // (32 * nw)) * max(1, 16 // eb)


@pytest.mark.parametrize("shape", [(4, 256), (64, 64), (2, 8)], ids=str)
def test_slice_layout_matches_parent(shape):
    lay = default_blocked(shape, 4, 4)
    for dim in range(2):
        out = tuple(s for d, s in enumerate(shape) if d != dim)
        sl = linear(SliceLayout(dim, lay), out, 4)
        h = holders(sl)
        assert set(h) == set(itertools.product(*[range(s) for s in out]))


def test_permute_layout_is_free():
    lay = BlockedLayout((1, 4), (4, 8), (2, 2), (1, 0))
    p = permute_layout(lay, (1, 0))
    a, b = linear(lay, (64, 32), 4), linear(p, (32, 64), 4)
    assert [c[::-1] for c in a.lane] == list(b.lane)
    assert [c[::-1] for c in a.warp] == list(b.warp)
