"""(A/B `remat_not`) A value computed from aranges and constants through `not` (or `neg`) is recomputed in the layout
its user wants, as the other cheap elementwise ops are, instead of converted through shared memory: a descending
sort network's direction bits (`not` of an arange's compare, at every compare-and-swap step) stored a byte, met a
barrier and loaded it back per step. The same results with and without the switch in the interpreter, through
ptxas and on the GPU; under it no byte goes through shared memory and the barriers fall."""
import numpy as np
import pytest

import compiler
import compiler.language as tl

from .test_ops import TARGETS, assert_exact, poison, run


@compiler.jit
def sort_row_kernel(X, Y, N: tl.constexpr):
    c = tl.arange(0, N)
    tl.store(Y + c, tl.sort(tl.load(X + c), descending=True))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("ab", ["", "remat_not"])
def test_descending_sort(target, ab, monkeypatch):
    monkeypatch.setenv("TILEFARM_AB", ab)
    a = np.random.default_rng(61).standard_normal(256).astype(np.float32)
    y = poison(a.size, "float32")
    run(target, sort_row_kernel, (1,), [a, y], [], N=256, num_warps=4)
    assert_exact(y, np.sort(a)[::-1])


def test_direction_bits_recomputed(monkeypatch):
    a = np.zeros(256, np.float32)
    got = {}
    for ab in ("", "remat_not"):
        monkeypatch.setenv("TILEFARM_AB", ab)
        ptx = sort_row_kernel.warmup(a, a, grid=(1,), target="sm_90a", N=256, num_warps=4).asm["ptx"]
        got[ab] = (ptx.count("st.shared.b8"), ptx.count("bar.sync"))
    assert got[""][0] > 0 and got["remat_not"][0] == 0, got
    assert got["remat_not"][1] < got[""][1], got
