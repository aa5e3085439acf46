"""reduce and scan: fast paths, generic combine blocks, multi-operand (argmax) with the tie rule."""
import numpy as np
import pytest

from compiler.interpreter import run
from compiler.ir import types as T

from .irb import i32, reduce_kernel

R, C = 16, 32


def binop(kind):
    return lambda b, a, c: [b.binary(kind, a[0], c[0])]


def add_plus_zero(b, a, c):  # not recognisable as a single op: forces the generic combine-block path
    s = b.binary("add", a[0], c[0])
    return [b.binary("add", s, b.const(0.0, s.type))]


def argmax_combine(b, a, c):
    gt = b.cmp("gt", a[0], c[0])
    eq = b.cmp("eq", a[0], c[0])
    lt_i = b.cmp("lt", a[1], c[1])
    take_a = b.binary("or", gt, b.binary("and", eq, lt_i))
    return [b.select(take_a, a[0], c[0]), b.select(take_a, a[1], c[1])]


def run_reduce(elem, x, axis, combine, n_out=1, out_elems=None, kind="reduce", extra_index=False, **attrs):
    out_elems = out_elems or [elem] * n_out
    f = reduce_kernel(elem, R, C, axis, combine, n_out, out_elems, kind, extra_index, **attrs)
    n = (C if axis == 0 else R) if kind == "reduce" else R * C
    outs = [np.zeros(n, e.np) for e in out_elems]
    run(f, (1, 1, 1), [x] + outs + [C], debug=True)
    return outs


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("elem", [T.int8, T.uint16, T.int32, T.int64], ids=str)
@pytest.mark.parametrize("kind", ["add", "mul", "max", "min", "xor"])
def test_int_reduce_exact(kind, elem, axis):
    rng = np.random.default_rng(axis * 7 + elem.bits)
    info = np.iinfo(elem.np)
    x = rng.integers(info.min, info.max, (R, C), dtype=elem.np, endpoint=True)
    (out,) = run_reduce(elem, x, axis, binop(kind))
    u = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum, "xor": np.bitwise_xor}[kind]
    np.testing.assert_array_equal(out, u.reduce(x, axis=axis, dtype=elem.np))


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("elem", [T.float16, T.bfloat16, T.float32], ids=str)
def test_float_sum_generic_equals_fast(elem, axis):
    rng = np.random.default_rng(3 + axis)
    x = rng.standard_normal((R, C)).astype(elem.np)
    (fast,) = run_reduce(elem, x, axis, binop("add"))
    (generic,) = run_reduce(elem, x, axis, add_plus_zero)
    np.testing.assert_array_equal(fast.astype(np.float64), generic.astype(np.float64))
    ref = x.astype(np.float64).sum(axis=axis)
    tol = {T.float16: 2e-2, T.bfloat16: 1e-1, T.float32: 1e-5}[elem]
    np.testing.assert_allclose(fast.astype(np.float64), ref, rtol=tol, atol=tol)


@pytest.mark.parametrize("axis", [0, 1])
def test_float_max_reduce(axis):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((R, C)).astype(np.float32)
    x[3, 4] = np.nan  # max ignores NaN
    (out,) = run_reduce(T.float32, x, axis, binop("max"))
    np.testing.assert_array_equal(out, np.fmax.reduce(x, axis=axis))


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("elem", [T.float32, T.int32], ids=str)
def test_argmax_ties_smallest_index(elem, axis):
    rng = np.random.default_rng(7 + axis)
    x = rng.integers(1, 5, (R, C)).astype(elem.np)  # many ties
    vals, idx = run_reduce(elem, x, axis, argmax_combine, n_out=2, out_elems=[elem, T.int32], extra_index=True)
    np.testing.assert_array_equal(vals, x.max(axis=axis))
    np.testing.assert_array_equal(idx, np.argmax(x, axis=axis))  # NumPy: first occurrence


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("axis", [0, 1])
def test_int_cumsum(axis, reverse):
    rng = np.random.default_rng(11)
    x = rng.integers(-100, 100, (R, C), dtype=np.int8)
    (out,) = run_reduce(T.int8, x, axis, binop("add"), kind="scan", reverse=reverse)
    if reverse:
        ref = np.flip(np.add.accumulate(np.flip(x, axis), axis=axis, dtype=np.int8), axis)
    else:
        ref = np.add.accumulate(x, axis=axis, dtype=np.int8)  # wraps
    np.testing.assert_array_equal(out.reshape(R, C), ref)


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("axis", [0, 1])
def test_float_scan_generic(axis, reverse):
    rng = np.random.default_rng(13)
    x = rng.standard_normal((R, C)).astype(np.float32)
    (fast,) = run_reduce(T.float32, x, axis, binop("add"), kind="scan", reverse=reverse)
    (generic,) = run_reduce(T.float32, x, axis, add_plus_zero, kind="scan", reverse=reverse)
    np.testing.assert_array_equal(fast, generic)
    x64 = x.astype(np.float64)
    ref = np.flip(np.cumsum(np.flip(x64, axis), axis=axis), axis) if reverse else np.cumsum(x64, axis=axis)
    np.testing.assert_allclose(fast.reshape(R, C), ref, rtol=1e-5, atol=1e-5)


def test_two_operand_scan():
    def combine(b, a, c):
        return [b.binary("add", a[0], c[0]), b.binary("max", a[1], c[1])]
    rng = np.random.default_rng(17)
    x = rng.integers(-50, 50, (R, C), dtype=np.int32)
    # second operand: the column index, so the running max is the index itself
    s, m = run_reduce(T.int32, x, 1, combine, n_out=2, out_elems=[T.int32, T.int32], kind="scan",
                      extra_index=True)
    np.testing.assert_array_equal(s.reshape(R, C), np.cumsum(x, axis=1))
    np.testing.assert_array_equal(m.reshape(R, C), np.broadcast_to(np.arange(C), (R, C)))
