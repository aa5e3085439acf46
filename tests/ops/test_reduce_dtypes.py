"""The dtypes reductions return, as Triton's: tl.max / tl.min widen types under 32 bits (floats to float32, integers
and bool to int32; bfloat16 to float32 also with return_indices), so arithmetic on their results does not wrap in
the narrow type; peak-to-peak of int16 and uint8 values checked in the interpreter, through ptxas and on the GPU."""
import numpy as np
import pytest

import compiler
import compiler.language as tl

from .test_ops import TARGETS, assert_exact, npdt, poison, run


@compiler.jit
def ptp_kernel(X, PTP, N, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    x = tl.load(X + r, mask=r < N, other=0)
    tl.store(PTP, tl.max(x, axis=0) - tl.min(x, axis=0))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype,lo,hi", [("int16", -30000, 30000), ("uint8", 5, 250), ("int8", -120, 120)])
def test_peak_to_peak_does_not_wrap(target, dtype, lo, hi):
    rng = np.random.default_rng(4)
    x = rng.integers(lo // 2, hi // 2, 128).astype(npdt(dtype))
    x[7], x[61] = lo, hi
    y = poison(1, "int32")
    run(target, ptp_kernel, (1,), [x, y], [128], BLOCK=128)
    assert_exact(y, np.array([hi - lo], np.int32))


@pytest.mark.parametrize("dtype,want", [("int8", "int32"), ("uint8", "int32"), ("int16", "int32"),
                                        ("float16", "float32"), ("bfloat16", "float32"), ("float32", "float32"),
                                        ("int32", "int32"), ("int64", "int64"), ("float64", "float64")])
@pytest.mark.parametrize("which", ["max", "min", "method"])
def test_max_min_result_dtypes(dtype, want, which):
    @compiler.jit
    def k(X, Y, BLOCK: tl.constexpr, WHICH: tl.constexpr, WANT: tl.constexpr):
        x = tl.load(X + tl.arange(0, BLOCK))
        if WHICH == "max":
            r = tl.max(x, axis=0)
        elif WHICH == "min":
            r = tl.min(x, axis=0)
        else:
            r = x.max(0)
        tl.static_assert(r.dtype == WANT, "reduction dtype")
        tl.store(Y, r)

    x = np.arange(16).astype(npdt(dtype))
    y = np.zeros(1, npdt(want))
    k[(1,)](x, y, BLOCK=16, WHICH=which, WANT=getattr(tl, want))
    assert y[0] == (0 if which == "min" else 15)


@pytest.mark.parametrize("dtype,want", [("float16", "float16"), ("bfloat16", "float32"), ("int8", "int8")])
def test_max_with_indices_widens_only_bfloat16(dtype, want):
    @compiler.jit
    def k(X, Y, I, BLOCK: tl.constexpr, WANT: tl.constexpr):
        v, i = tl.max(tl.load(X + tl.arange(0, BLOCK)), axis=0, return_indices=True)
        tl.static_assert(v.dtype == WANT, "value dtype")
        tl.store(Y, v)
        tl.store(I, i)

    x = np.array([3, 9, 1, 9, 2, 0, 5, 4], dtype=npdt(dtype))
    y, i = np.zeros(1, npdt(want)), np.zeros(1, np.int32)
    k[(1,)](x, y, i, BLOCK=8, WANT=getattr(tl, want))
    assert y[0] == 9 and i[0] == 1
