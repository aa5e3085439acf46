"""Python numbers in a kernel are scalar tensors once assigned, as in Triton (#22 item 3)."""
import numpy as np
import pytest

import compiler
import compiler.language as tl

from . import kernels as K
from .kernels import TARGETS, poison, run


@pytest.mark.parametrize("target", TARGETS)
def test_assigned_numbers_are_scalar_tensors(target):
    rng = np.random.default_rng(6)
    N, BLOCK = 300, 128
    grid = compiler.cdiv(N, BLOCK)
    x8 = rng.integers(-128, 127, N, dtype=np.int8, endpoint=True)
    h = rng.uniform(-4, 4, N).astype(np.float16)
    out32 = poison(N, np.int32)
    outf = poison(N, np.float32)
    flags = poison(grid + 2, np.int64)
    run(target, K.assigned_numbers, (grid,), x8, h, out32, outf, flags, N, BLOCK=BLOCK)
    np.testing.assert_array_equal(out32, x8.astype(np.int32) * 2)
    # computed in fp32 (fp16 rounding of h * 0.1 would be off by up to 2^-11 relative)
    ref = h.astype(np.float32) * np.float32(0.1)
    np.testing.assert_allclose(outf, ref, rtol=1e-7, atol=0)
    assert (flags[:grid] == N * (N - 1) // 2 + (BLOCK // 2) * (BLOCK // 2 - 1) // 2).all()
    assert flags[grid] == 1 and flags[grid + 1] == 32


def test_assigned_number_dtype_follows_its_range():
    @compiler.jit
    def k(Out):
        a = 1
        b = 2**40
        c = 1.5
        d = True
        tl.store(Out + 0, a.to(tl.int64))
        tl.store(Out + 1, (b * 0 + 7).to(tl.int64))
        tl.store(Out + 2, c.to(tl.int64))
        tl.store(Out + 3, d.to(tl.int64))

    out = poison(4, np.int64)
    k[(1,)](out)
    assert list(out) == [1, 7, 1, 1]


def test_constexpr_annotation_refuses_a_runtime_value():
    @compiler.jit
    def k(X):
        n: tl.constexpr = tl.load(X)
        tl.store(X, n)

    with pytest.raises(compiler.CompilationError, match="tl.constexpr name needs a compile-time value"):
        k[(1,)](np.zeros(4, np.int32))


def test_augmented_assignment_keeps_a_scalar_tensor():
    @compiler.jit
    def k(X, Out, BLOCK: tl.constexpr):
        two = 1
        two += 1
        x = tl.load(X + tl.arange(0, BLOCK))  # int8
        tl.store(Out + tl.arange(0, BLOCK), x * two)

    x = np.full(8, 100, np.int8)
    out = poison(8, np.int32)
    k[(1,)](x, out, BLOCK=8)
    assert (out == 200).all()  # int32 product, no int8 wrap-around


def test_introspection_of_tensors_at_compile_time():
    @compiler.jit
    def k(X, Out):
        x = tl.load(X)
        if isinstance(x, tl.tensor) and hasattr(x, "dtype") and getattr(x, "dtype") == tl.float32:
            tl.store(Out, 1)
        else:
            tl.store(Out, 2)

    out = poison(1, np.int32)
    k[(1,)](np.zeros(1, np.float32), out)
    assert out[0] == 1
