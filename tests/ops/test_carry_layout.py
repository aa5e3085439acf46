"""A loop-carried value is carried in the layout its loop body computes it in, blocked ones too, not in the layout a
user after the loop wants: a binary search's int32 bounds stored as int64 after the loop (int64 stores take 2
elements a thread, the float32 loads the search compares with 4) are converted once after the loop instead of twice
every step. The boundaries gathered at the midpoints take the layout of the values they are compared with even where
those values' mask varies per element (n no multiple of 16: no vector runs), so the loop converts nothing (it had 4
barriers a step before both rules)."""
import re

import numpy as np
import pytest

import compiler
import compiler.language as tl

from .test_ops import TARGETS, assert_exact, poison, run


@compiler.jit
def search_kernel(X, BOUNDS, OUT, N, n_bounds, n_steps, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N
    x = tl.load(X + offs, mask=mask, other=0.0)
    lo = tl.zeros([BLOCK], dtype=tl.int32)
    hi = tl.zeros([BLOCK], dtype=tl.int32) + n_bounds
    for _ in range(n_steps):
        active = lo < hi
        mid = (lo + hi) // 2
        b = tl.load(BOUNDS + mid, mask=active & mask, other=0.0)
        go_right = b < x
        lo = tl.where(active & go_right, mid + 1, lo)
        hi = tl.where(active & ~go_right, mid, hi)
    tl.store(OUT + offs, lo.to(tl.int64), mask=mask)


def _loop_barriers(ptx):
    """bar.sync between the loop's label and its backward branch."""
    lines = ptx.splitlines()
    for i, ln in enumerate(lines):
        m = re.match(r"\s*(\$L__BB\d+_\d+):", ln)
        if not m:
            continue
        for j in range(i + 1, len(lines)):
            if re.search(r"bra(\.uni)?\s+" + re.escape(m.group(1)) + r";", lines[j]):
                return sum("bar.sync" in x for x in lines[i:j])
    return None


def _inputs():
    rng = np.random.default_rng(6)
    bounds = np.sort(rng.standard_normal(60)).astype(np.float32)
    x = rng.standard_normal(3000).astype(np.float32)
    x[:5] = bounds[[0, 7, 59, 30, 31]]  # ties: strictly-less search
    return x, bounds


def test_loop_barriers():
    x, bounds = _inputs()
    out = np.zeros(3000, np.int64)
    ptx = search_kernel.warmup(x, bounds, out, 3000, 60, 6, grid=(3,), target="sm_90a", BLOCK=1024).asm["ptx"]
    assert _loop_barriers(ptx) == 0


@pytest.mark.parametrize("target", TARGETS)
def test_search_results(target):
    x, bounds = _inputs()
    out = poison(3000, "int64")
    run(target, search_kernel, (3,), [x, bounds, out], [3000, 60, 6], BLOCK=1024)
    assert_exact(out, np.searchsorted(bounds.astype(np.float64), x.astype(np.float64), side="left").astype(np.int64))
