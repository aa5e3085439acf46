"""Block pointers: make_block_ptr / advance, load/store with boundary_check and padding_option ("zero", "nan"),
carried through runtime for and while loops; interpreter, ptxas, GPU."""
import numpy as np
import pytest

import compiler

from . import block_ptr_kernels as K
from .lang_common import TARGETS, assert_close, poison, run


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("transposed", [False, True])
def test_copy2d_edges(target, transposed):
    M, N, BM, BN = 45, 70, 16, 32
    rng = np.random.default_rng(0)
    x = rng.standard_normal((N, M) if transposed else (M, N)).astype(np.float32)
    xs = x.T if transposed else x  # the M x N view
    sxm, sxn = (1, M) if transposed else (N, 1)
    y = poison((M, N), "float32")
    grid = ((M + BM - 1) // BM, (N + BN - 1) // BN)
    run(target, K.copy2d, grid, [x, y], [M, N, sxm, sxn, N, 1], PAD="zero", BM=BM, BN=BN)
    np.testing.assert_array_equal(y, xs + 1)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("pad", ["zero", "nan"])
def test_padding(target, pad):
    M, N = 5, 12
    x = np.random.default_rng(1).standard_normal(M * N).astype(np.float32)
    y = poison(1, "float32")
    y[0] = 123.0
    run(target, K.padded_sum, (1,), [x, y], [M, N], PAD=pad, BM=8, BN=16)
    if pad == "nan":
        assert np.isnan(y[0])
    else:
        assert_close(y, np.array([x.astype(np.float64).sum()]), "float32", rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("target", TARGETS)
def test_matmul_block_ptr_loop(target):
    M, N, Kd, BM, BN, BK = 70, 50, 88, 32, 32, 32
    rng = np.random.default_rng(2)
    a = rng.standard_normal((M, Kd)).astype(np.float16)
    b = rng.standard_normal((Kd, N)).astype(np.float16)
    c = poison((M, N), "float32")
    grid = ((M + BM - 1) // BM, (N + BN - 1) // BN)
    run(target, K.matmul_block_ptr, grid, [a, b, c], [M, N, Kd, Kd, 1, N, 1, N, 1], BM=BM, BN=BN, BK=BK)
    assert_close(c, a.astype(np.float64) @ b.astype(np.float64), "float32", rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("target", TARGETS)
def test_while_loop_block_ptr(target):
    M, N = 6, 100
    x = np.random.default_rng(3).standard_normal((M, N)).astype(np.float32)
    y = poison(M, "float32")
    run(target, K.row_walk, (M,), [x, y], [M, N], BN=32)
    assert_close(y, x.astype(np.float64).sum(axis=1), "float32", rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kern,words", [
    (K.bad_mask_on_block_ptr, "not mask/other"),
    (K.bad_boundary_on_plain, "only apply to block pointers"),
])
def test_misuse_is_a_compilation_error(kern, words):
    with pytest.raises(compiler.CompilationError, match=words):
        kern[(1,)](np.zeros(16, np.float32), 16)


@pytest.mark.parametrize("target", TARGETS)
def test_tensor_descriptor_matmul(target):
    M, N, Kd, BM, BN, BK = 70, 50, 88, 32, 32, 32
    rng = np.random.default_rng(5)
    a = rng.standard_normal((M, Kd)).astype(np.float16)
    b = rng.standard_normal((Kd, N)).astype(np.float16)
    c = poison((M, N), "float16")
    grid = ((M + BM - 1) // BM, (N + BN - 1) // BN)
    run(target, K.desc_matmul, grid, [a, b, c], [M, N, Kd], BM=BM, BN=BN, BK=BK)
    assert_close(c, a.astype(np.float64) @ b.astype(np.float64), "float16", rtol=2e-3, atol=2e-2)


@pytest.mark.parametrize("target", TARGETS)
def test_tensor_descriptor_nan_padding(target):
    x = np.random.default_rng(6).standard_normal((5, 12)).astype(np.float32)
    y = poison(8 * 16, "float32")
    y[:] = 0
    run(target, K.desc_nan_pad, (1,), [x, y], [5, 12])
    y = y.reshape(8, 16)
    np.testing.assert_array_equal(y[:5, :12], x)
    assert np.isnan(y[5:, :]).all() and np.isnan(y[:, 12:]).all()
