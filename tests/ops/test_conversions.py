"""Layout conversions a kernel pays for: only where data must move between threads. Index and mask arithmetic is
recomputed in the layout its user needs (an arange-based mask costs compares, not a trip through shared memory),
and a conversion through shared memory moves each side's elements without bank conflicts the layouts can avoid."""
import numpy as np
import pytest

import compiler
import compiler.language as tl

from .test_ops import TARGETS, poison, run


@compiler.jit
def transpose_kernel(x_ptr, y_ptr, M, N, sxm, sym, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(x_ptr + rm[:, None] * sxm + rn[None, :], mask=mask)
    tl.store(y_ptr + rn[:, None] * sym + rm[None, :], tl.trans(x), mask=tl.trans(mask))


def _lowered(fn, args, meta, nw=4):
    from compiler.options import Options
    from compiler.passes import run_pipeline

    return run_pipeline(fn.lower(*args, **meta), Options(num_warps=nw, arch="sm_90a"))


@pytest.mark.parametrize("B", [32, 64])
def test_transpose_converts_the_data_only(B):
    """The mask is used in the load's layout and (transposed) in the store's: it is recomputed in both, and the
    one conversion left is the tile of data itself."""
    x = np.zeros((256, 256), np.float32)
    mod = _lowered(transpose_kernel, [x, x, 256, 256, 256, 256], dict(BM=B, BN=B))
    cvs = [op for op in mod.function.body.ops if op.kind == "convert_layout"]
    assert len(cvs) == 1 and cvs[0].result.type.element.kind == "float", [str(op.result.type) for op in cvs]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("B", [32, 64])
def test_transpose_with_transposed_mask(target, B):
    M, N = 100, 75
    rng = np.random.default_rng(1)
    x = rng.standard_normal((M, N)).astype(np.float32)
    y = poison((N, M), "float32")
    run(target, transpose_kernel, (compiler.cdiv(M, B), compiler.cdiv(N, B)), [x, y], [M, N, N, M], BM=B, BN=B,
        num_warps=4)
    np.testing.assert_array_equal(y, x.T)


def _transpose_layouts(B, nw=4):
    from compiler.passes.layouts import default_blocked, linear, permute_layout

    src = default_blocked((B, B), 4, nw)
    return linear(permute_layout(src, (1, 0)), (B, B), nw), linear(src, (B, B), nw)


@pytest.mark.parametrize("B", [32, 64, 128])
def test_transpose_buffer_is_swizzled_against_bank_conflicts(B):
    """Writers holding runs down the reader's columns: no padding spreads them over the banks, an XOR swizzle of
    the 16-byte chunks does, at least halving the wavefronts of the padded buffer."""
    from compiler.codegen.reduce import _choose_swizzle, _conversion_cost

    src, dst = _transpose_layouts(B)
    swz = _choose_swizzle(src, dst, None, 4, 1, 4, 4)
    assert swz is not None
    assert 2 * _conversion_cost(src, dst, None, 4, 1, 4, 4, swz) <= _conversion_cost(src, dst, None, 4, 1, 4, 4, None)


@pytest.mark.parametrize("shape,swz", [((64, 64), (2, 7, 4)), ((32, 32), (0, 7, 4)), ((16, 128), (1, 7, 8)),
                                       ((4, 8, 32), (3, 3, 8))])
def test_swizzled_buffer_index_is_a_permutation_of_each_row(shape, swz):
    import itertools

    from compiler.codegen.reduce import _buffer_index

    rowlen = shape[-1]
    seen = {}
    for c in itertools.product(*[range(n) for n in shape]):
        i = _buffer_index(list(c), shape, 0, swz)
        row = 0
        for x, n in zip(c[:-1], shape[:-1]):
            row = row * n + x
        assert i // rowlen == row  # stays in its row
        seen[i] = c
    assert len(seen) == int(np.prod(shape))


def test_wavefronts_count_bank_conflicts():
    from compiler.codegen.reduce import _wavefronts

    assert _wavefronts([4 * i for i in range(32)], 4) == 1          # 32 banks, one word each
    assert _wavefronts([128 * i for i in range(32)], 4) == 32       # all in bank 0
    assert _wavefronts([0] * 32, 4) == 1                            # one word: a broadcast
    assert _wavefronts([16 * i for i in range(32)], 16) == 4        # 4 groups of 8 lanes x 16 bytes
    assert _wavefronts([256 * i for i in range(32)], 16) == 4 * 8   # 8 lanes of a group on the same 4 banks
