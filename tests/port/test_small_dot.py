"""tl.dot with a dimension under 16 (a row vector times a matrix, 8x8 tiles): Triton computes those without
tensor cores; so do we, as products summed over K in the accumulator's type."""
import numpy as np
import pytest

import compiler
import compiler.language as tl

from .kernels import TARGETS, poison, run


@compiler.jit
def small_dot(A, B, C, Acc, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, USE_ACC: tl.constexpr,
              OUT_F16: tl.constexpr):
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(A + rm[:, None] * K + rk[None, :])
    b = tl.load(B + rk[:, None] * N + rn[None, :])
    if USE_ACC:
        acc = tl.load(Acc + rm[:, None] * N + rn[None, :])
        c = tl.dot(a, b, acc)
    elif OUT_F16:
        c = tl.dot(a, b, out_dtype=tl.float16)
    else:
        c = tl.dot(a, b)
    tl.store(C + rm[:, None] * N + rn[None, :], c)


@compiler.jit
def small_dot3d(A, B, C, BATCH: tl.constexpr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rb, rm, rn, rk = tl.arange(0, BATCH), tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(A + rb[:, None, None] * M * K + rm[None, :, None] * K + rk[None, None, :])
    b = tl.load(B + rb[:, None, None] * K * N + rk[None, :, None] * N + rn[None, None, :])
    tl.store(C + rb[:, None, None] * M * N + rm[None, :, None] * N + rn[None, None, :], tl.dot(a, b))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("M, N, K", [(1, 32, 32), (32, 2, 32), (8, 8, 16), (16, 16, 4)])
@pytest.mark.parametrize("dtype", ["float16", "float32", "int8"])
def test_small_dot(target, M, N, K, dtype):
    rng = np.random.default_rng(M * 100 + N + K)
    if dtype == "int8":
        a = rng.integers(-128, 128, (M, K)).astype(np.int8)
        b = rng.integers(-128, 128, (K, N)).astype(np.int8)
        out = poison((M, N), np.int32)
    else:
        a = rng.standard_normal((M, K)).astype(dtype)
        b = rng.standard_normal((K, N)).astype(dtype)
        out = poison((M, N), np.float32)
    run(target, small_dot, (1,), a, b, out, out, M=M, N=N, K=K, USE_ACC=False, OUT_F16=False)
    want = a.astype(np.float64) @ b.astype(np.float64)
    if dtype == "int8":
        np.testing.assert_array_equal(out, want.astype(np.int64).astype(np.int32))
    else:
        np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5 * K)


@pytest.mark.parametrize("target", TARGETS)
def test_small_dot_acc_and_f16_out(target):
    rng = np.random.default_rng(7)
    M, N, K = 4, 32, 32
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    acc = rng.standard_normal((M, N)).astype(np.float32)
    out = poison((M, N), np.float32)
    run(target, small_dot, (1,), a, b, out, acc, M=M, N=N, K=K, USE_ACC=True, OUT_F16=False)
    np.testing.assert_allclose(out, acc + a.astype(np.float64) @ b.astype(np.float64), rtol=1e-5, atol=1e-4)
    out16 = poison((M, N), np.float16)
    run(target, small_dot, (1,), a, b, out16, acc, M=M, N=N, K=K, USE_ACC=False, OUT_F16=True)
    np.testing.assert_allclose(out16, a.astype(np.float64) @ b.astype(np.float64), rtol=2e-3, atol=1e-2)


@pytest.mark.parametrize("target", TARGETS)
def test_small_dot3d(target):
    rng = np.random.default_rng(3)
    Bt, M, N, K = 2, 8, 8, 32
    a = rng.standard_normal((Bt, M, K)).astype(np.float32)
    b = rng.standard_normal((Bt, K, N)).astype(np.float32)
    out = poison((Bt, M, N), np.float32)
    run(target, small_dot3d, (1,), a, b, out, BATCH=Bt, M=M, N=N, K=K)
    np.testing.assert_allclose(out, np.matmul(a.astype(np.float64), b.astype(np.float64)), rtol=1e-5, atol=1e-4)
