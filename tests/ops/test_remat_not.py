"""A value computed from aranges and constants through `not` (or `neg`) is recomputed in the layout its user wants,
as the other cheap elementwise ops are, instead of converted through shared memory: a descending sort network's
direction bits (`not` of an arange's compare, at every compare-and-swap step) stored a byte, met a barrier and
loaded it back per step (the A/B `remat_not`: top-p renormalization 0.866 of that time, H100 2026-12-07). Results
in the interpreter, through ptxas and on the GPU; no byte goes through shared memory."""
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
def test_descending_sort(target):
    a = np.random.default_rng(61).standard_normal(256).astype(np.float32)
    y = poison(a.size, "float32")
    run(target, sort_row_kernel, (1,), [a, y], [], N=256, num_warps=4)
    assert_exact(y, np.sort(a)[::-1])


def test_direction_bits_recomputed():
    a = np.zeros(256, np.float32)
    sort_row_kernel._drop_compiled()
    ptx = sort_row_kernel.warmup(a, a, grid=(1,), target="sm_90a", N=256, num_warps=4).asm["ptx"]
    assert ptx.count("st.shared.b8") == 0
