"""A number assigned to a name in a kernel is a scalar tensor in Triton (int32, uint32, int64 or float32 by its
value), so arithmetic on it has that type's semantics even where every operand is a compile-time number: `//` and
`%` truncate toward zero, integers wrap in their width, uint32 stays uint32. Here such arithmetic is folded while
compiling with those semantics, and the result stays usable where a compile-time value is needed."""
import numpy as np
import pytest

import compiler
import compiler.language as tl

from .test_ops import TARGETS, assert_exact, poison, run


@compiler.jit
def assigned_kernel(OUT, U32):
    qmin = -32768
    lo = qmin // 3            # C truncation: -10922 (Python's floor would give -10923)
    r = qmin % 3              # the dividend's sign: -2 (Python: 1)
    big = 1 << 20
    sq = big * big            # int32 wraps: 0
    m = -2147483648
    neg = -m                  # -(INT32_MIN) wraps to itself
    golden = 0x9E3779B9       # uint32
    salt = golden * 3 + 1     # wraps in uint32: 0xDAA66D2C
    back = salt >> 28         # logical shift of a uint32: 13
    n = 4
    width = n * 2             # still a compile-time value
    offs = tl.arange(0, width)
    vals = tl.where(offs == 0, lo, tl.where(offs == 1, r, tl.where(offs == 2, sq, tl.where(offs == 3, neg, back))))
    tl.store(OUT + offs, vals)
    tl.store(U32 + tl.arange(0, 2), salt + tl.zeros([2], dtype=tl.uint32))


@pytest.mark.parametrize("target", TARGETS)
def test_assigned_arithmetic_has_triton_types(target):
    out, u = poison(8, "int32"), poison(2, "uint32")
    run(target, assigned_kernel, (1,), [out, u])
    assert_exact(out, np.array([-10922, -2, 0, -2147483648, 13, 13, 13, 13], np.int32))
    assert_exact(u, np.array([0xDAA66D2C] * 2, np.uint32))


@compiler.jit
def zero_divisor_kernel(OUT):
    z = 0
    five = 5
    tl.store(OUT, five // (z + 1) + five % (z + 2))


def test_folding_keeps_division_semantics_and_compile_time_use():
    out = np.zeros(1, np.int32)
    zero_divisor_kernel[(1,)](out)
    assert out[0] == 5 + 1


@compiler.jit
def annotated_kernel(OUT, n: tl.int64, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(OUT + offs, n * 2 ** 31 + offs)  # int64 arithmetic for every n


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("n", [3, 1])
def test_annotated_int64_argument_equal_to_one(target, n):
    """An argument annotated with a dtype keeps it when it equals 1 (Triton's binder keeps the annotated type;
    specializing it as the constant 1 made `n * 2**31` an int32 overflow error)."""
    out = poison(4, "int64")
    run(target, annotated_kernel, (1,), [out], [n], BLOCK=4)
    assert_exact(out, n * 2 ** 31 + np.arange(4, dtype=np.int64))
