"""tl.histogram: one op counted by shared-memory atomics (codegen/reduce.py `_e_histogram`). Values outside
[0, bins) and masked-off ones are not counted; an element a layout repeats across lanes, warps or registers counts
once (64 values over 128 threads); more bins than threads; 8- to 64-bit, signed and unsigned values."""
import numpy as np
import pytest

import compiler
import compiler.language as tl

from .test_ops import TARGETS, poison, run


@compiler.jit
def _hist(X, Y, N, BINS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < N, other=0)
    tl.store(Y + tl.arange(0, BINS), tl.histogram(x, BINS, mask=offs < N))


@compiler.jit
def _hist_nomask(X, Y, BINS: tl.constexpr, BLOCK: tl.constexpr):
    tl.store(Y + tl.arange(0, BINS), tl.histogram(tl.load(X + tl.arange(0, BLOCK)), BINS))


CASES = [  # dtype, n, bins, block, warps
    ("int32", 200, 16, 256, 4),
    ("int32", 64, 8, 64, 4),      # 64 values, 128 threads: each value held twice
    ("int8", 1000, 32, 1024, 2),  # negative values
    ("uint8", 500, 64, 512, 4),   # values above bins, and 255
    ("int64", 300, 512, 512, 4),  # more bins than threads
    ("uint32", 100, 16, 128, 1),  # values above 2^31
]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", range(len(CASES)))
def test_histogram(target, case):
    dtype, n, bins, block, warps = CASES[case]
    rng = np.random.default_rng(case)
    info = np.iinfo(dtype)
    x = rng.integers(max(info.min, -5), min(info.max, 2 * bins), block, endpoint=True).astype(dtype)
    if dtype == "uint32":
        x[::7] = np.uint32(3_000_000_000)
    y = poison(bins, "int32")
    run(target, _hist, (1,), [x, y], [n], BINS=bins, BLOCK=block, num_warps=warps)
    v = x[:n].astype(np.int64)
    np.testing.assert_array_equal(y, np.bincount(v[(v >= 0) & (v < bins)], minlength=bins))


@pytest.mark.parametrize("target", TARGETS)
def test_histogram_without_mask(target):
    x = np.random.default_rng(9).integers(0, 64, 2048).astype(np.int32)
    y = poison(64, "int32")
    run(target, _hist_nomask, (1,), [x, y], [], BINS=64, BLOCK=2048, num_warps=8)
    np.testing.assert_array_equal(y, np.bincount(x, minlength=64))


def test_one_op_and_no_comparison_block():
    """The histogram is one op, not a [block, bins] comparison: its cost grows with the block, not block x bins."""
    x, y = np.zeros(1024, np.int32), np.zeros(64, np.int32)
    tile = _hist.warmup(x, y, 1000, BINS=64, BLOCK=1024, grid=(1,), target="sm_90a").asm["tile"]
    assert "histogram" in tile and "1024x64" not in tile
