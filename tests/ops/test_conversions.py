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
