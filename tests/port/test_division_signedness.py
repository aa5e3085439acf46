"""/, // and % between a signed and an unsigned integer tensor are refused, as Triton refuses them; a Python
number meeting a tensor takes its type, so it is never refused."""
import numpy as np
import pytest

import compiler
import compiler.language as tl

from .kernels import TARGETS, poison, run


@compiler.jit
def divide(X, Y, Out, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    y = tl.load(Y + offs)
    if OP == "/":
        z = x / y
    elif OP == "//":
        z = x // y
    else:
        z = x % y
    tl.store(Out + offs, z)


@compiler.jit
def divide_by_number(X, Out, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    tl.store(Out + offs, x // 7 + x % 5)


@pytest.mark.parametrize("op", ["/", "//", "%"])
@pytest.mark.parametrize("dx, dy", [(np.int32, np.uint16), (np.uint8, np.int8), (np.uint64, np.int32)])
def test_mixed_signedness_refused(op, dx, dy):
    x = np.arange(1, 17).astype(dx)
    y = np.arange(1, 17).astype(dy)
    out = np.zeros(16, np.float32 if op == "/" else np.int64)
    with pytest.raises(compiler.CompilationError, match=r"Cannot use .* because they have different signedness"):
        divide[(1,)](x, y, out, OP=op, BLOCK=16)


@pytest.mark.parametrize("op", ["//", "%"])
def test_same_signedness_and_numbers_allowed(op):
    rng = np.random.default_rng(4)
    x = rng.integers(-1000, 1000, 32).astype(np.int32)
    y = rng.integers(1, 50, 32).astype(np.int16) * rng.choice([-1, 1], 32).astype(np.int16)
    out = poison(32, np.int32)
    divide[(1,)](x, y, out, OP=op, BLOCK=32)
    q = np.trunc(x / y.astype(np.float64)).astype(np.int32)   # C-style: toward zero
    np.testing.assert_array_equal(out, q if op == "//" else x - q * y)
    u = rng.integers(0, 2**32, 32, dtype=np.uint64).astype(np.uint32)
    outu = poison(32, np.uint32)
    divide_by_number[(1,)](u, outu, BLOCK=32)
    np.testing.assert_array_equal(outu, (u // 7 + u % 5).astype(np.uint32))


@compiler.jit
def shift_right(X, Y, Out, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(Out + offs, tl.load(X + offs) >> tl.load(Y + offs))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dx,dy,dz", [("int16", "uint16", "uint16"), ("int32", "uint64", "uint64"),
                                      ("uint16", "int32", "int32"), ("int8", "int8", "int8"),
                                      ("uint32", "uint32", "uint32")])
def test_shift_right_follows_the_left_operands_signedness(target, dx, dy, dz):
    """As in Triton: >> is arithmetic when the left operand's own type is signed and logical when it is unsigned,
    whatever the two promote to (int16 >> uint16 is a uint16 holding the arithmetic shift's bits)."""
    rng = np.random.default_rng(5)
    info = np.iinfo(dx)
    x = rng.integers(info.min, info.max, 128, dtype=np.int64, endpoint=True).astype(dx)
    bits = 8 * max(np.dtype(dx).itemsize, np.dtype(dy).itemsize)
    y = rng.integers(0, bits, 128).astype(dy)
    out = poison(128, dz)
    run(target, shift_right, (1,), x, y, out, BLOCK=128)
    wide = x.astype(np.int64) if info.min < 0 else x.astype(np.uint64)
    ref = np.array([int(a) >> int(b) for a, b in zip(wide, y)], dtype=object)  # Python's >>: arithmetic on ints
    ref = np.array([int(v) % (1 << bits) for v in ref], dtype=np.uint64).astype(np.dtype(dz).str.replace("i", "u"))
    np.testing.assert_array_equal(out.view(np.dtype(dz).str.replace("i", "u")), ref)
