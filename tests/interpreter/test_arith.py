"""Element-wise ops per dtype against independent references (Python integers for ints: exact)."""
import zlib

import numpy as np
import pytest

from compiler.interpreter import run
from compiler.ir import types as T

from .irb import elementwise

INTS = [T.int8, T.int16, T.int32, T.int64, T.uint8, T.uint16, T.uint32, T.uint64]
BLOCK = 256
N = 250  # odd-ish, masked tail


def rand_ints(rng, elem, n):
    info = np.iinfo(elem.np)
    x = rng.integers(info.min, info.max, size=n, dtype=elem.np, endpoint=True)
    edges = np.array([info.min, info.max, 1, 2, 3, 7], dtype=elem.np)
    if elem.is_int_signed():
        edges = np.concatenate([edges, np.array([-1, -2, -3, -7, info.min + 1], dtype=elem.np)])
    x[: len(edges)] = edges
    rng.shuffle(x)
    return x


def wrap(v, elem):
    bits = elem.bits
    v &= (1 << bits) - 1
    if elem.is_int_signed() and v >= 1 << (bits - 1):
        v -= 1 << bits
    return v


def tdiv(a, b):
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def ref_int(kind, a, b, elem):
    bits = elem.bits
    if kind == "add":
        return wrap(a + b, elem)
    if kind == "sub":
        return wrap(a - b, elem)
    if kind == "mul":
        return wrap(a * b, elem)
    if kind == "idiv":
        if b == 0:
            return wrap(-1, elem)
        return wrap(tdiv(a, b), elem)
    if kind == "irem":
        if b == 0:
            return a
        return wrap(a - b * tdiv(a, b), elem)
    if kind in ("and", "or", "xor"):
        ua, ub = a & ((1 << bits) - 1), b & ((1 << bits) - 1)
        return wrap({"and": ua & ub, "or": ua | ub, "xor": ua ^ ub}[kind], elem)
    if kind in ("shl", "shr"):
        amt = b & ((1 << bits) - 1)
        if kind == "shl":
            return 0 if amt >= bits else wrap(a << amt, elem)
        if amt >= bits:
            return -1 if a < 0 else 0
        return a >> amt  # Python >> is arithmetic; a is unsigned-valued for uint
    if kind == "max":
        return max(a, b)
    if kind == "min":
        return min(a, b)
    if kind == "umulhi":  # unsigned high half (signed operands read as unsigned, like Triton's umulhi)
        m = (1 << bits) - 1
        return wrap(((a & m) * (b & m)) >> bits, elem)
    raise KeyError(kind)


INT_KINDS = ["add", "sub", "mul", "idiv", "irem", "and", "or", "xor", "shl", "shr", "max", "min", "umulhi"]


def run_binary(kind, elem, a, b, out_elem=None, **attrs):
    out_elem = out_elem or elem
    f = elementwise([elem, elem], out_elem, lambda bd, x, y: bd.binary(kind, x, y, **attrs), block=BLOCK)
    out = np.zeros(len(a), out_elem.np)
    run(f, (1, 1, 1), [a, b, out, len(a)], debug=True)
    return out


@pytest.mark.parametrize("elem", INTS, ids=str)
@pytest.mark.parametrize("kind", INT_KINDS)
def test_int_binary_exact(kind, elem):
    if kind == "umulhi" and elem.bits < 32:
        pytest.skip("umulhi is defined for 32/64-bit ints")
    rng = np.random.default_rng(zlib.crc32(f'{kind}-{elem.name}'.encode()))
    a = rand_ints(rng, elem, N)
    b = rand_ints(rng, elem, N)
    if kind in ("shl", "shr"):  # mostly in-range shift amounts, a few out of range / negative
        b = np.where(rng.random(N) < 0.8, rng.integers(0, elem.bits, N).astype(elem.np), b)
    if kind in ("idiv", "irem"):
        b[::17] = 0  # division by zero is defined (-1 / dividend)
    out = run_binary(kind, elem, a, b)
    want = np.array([ref_int(kind, int(x), int(y), elem) for x, y in zip(a, b)], dtype=object)
    got = out.astype(object)
    bad = np.flatnonzero(got != want)
    assert len(bad) == 0, f"{kind} {elem}: a={a[bad[:5]]} b={b[bad[:5]]} got={got[bad[:5]]} want={want[bad[:5]]}"


@pytest.mark.parametrize("elem", [T.int8, T.int32, T.int64], ids=str)
def test_c_division_negative(elem):
    a = np.array([-7, 7, -7, 7, -1, -8, 5], elem.np)
    b = np.array([2, -2, -2, 2, 3, 3, -5], elem.np)
    q = run_binary("idiv", elem, a, b)
    r = run_binary("irem", elem, a, b)
    assert q.tolist() == [-3, -3, 3, 3, 0, -2, -1]
    assert r.tolist() == [-1, 1, -1, 1, -1, -2, 0]


def test_int_min_div_minus_one_wraps():
    info = np.iinfo(np.int32)
    a = np.array([info.min, info.min], np.int32)
    b = np.array([-1, 0], np.int32)
    assert run_binary("idiv", T.int32, a, b).tolist() == [info.min, -1]
    assert run_binary("irem", T.int32, a, b).tolist() == [0, info.min]


def test_int8_wraps_without_widening():
    a = np.array([127, -128, 100], np.int8)
    b = np.array([1, -1, 100], np.int8)
    assert run_binary("add", T.int8, a, b).tolist() == [-128, 127, -56]
    assert run_binary("mul", T.int8, a, b).tolist() == [127, -128, 16]


def test_bool_ops():
    rng = np.random.default_rng(3)
    a = rng.random(N) < 0.5
    b = rng.random(N) < 0.5
    assert (run_binary("add", T.int1, a, b) == (a ^ b)).all()
    assert (run_binary("mul", T.int1, a, b) == (a & b)).all()
    assert (run_binary("or", T.int1, a, b) == (a | b)).all()
    assert (run_binary("max", T.int1, a, b) == (a | b)).all()


FLOATS = [T.float16, T.bfloat16, T.float32, T.float64]


def rand_floats(rng, elem, n, lo=-100, hi=100):
    return rng.uniform(lo, hi, n).astype(elem.np)


def ref_round(x64, elem):
    """Round float64 values to elem exactly (for bf16 via float32, fine for values that are exact in f64 or
    correctly rounded ops by the 2p+2 rule)."""
    if elem.is_bf16():
        return x64.astype(np.float32).astype(elem.np)
    return x64.astype(elem.np)


@pytest.mark.parametrize("elem", FLOATS, ids=str)
@pytest.mark.parametrize("kind", ["add", "sub", "mul", "fdiv", "frem", "max", "min"])
def test_float_binary(kind, elem):
    rng = np.random.default_rng(zlib.crc32(f'{kind}-{elem.name}-f'.encode()))
    a = rand_floats(rng, elem, N)
    b = rand_floats(rng, elem, N)
    out = run_binary(kind, elem, a, b)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    fn = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "fdiv": np.divide, "frem": np.fmod,
          "max": np.fmax, "min": np.fmin}[kind]
    if elem == T.float64 and kind in ("add", "sub", "mul", "fdiv"):
        want = fn(a64, b64)
    else:
        want = ref_round(fn(a64, b64), elem)
    np.testing.assert_array_equal(out.astype(np.float64), want.astype(np.float64))


def test_fp16_rounds_after_every_op():
    # 2048 + 1 is not representable in fp16: (2048 + 1) - 2048 = 0, not 1
    f = elementwise([T.float16, T.float16], T.float16,
                    lambda bd, x, y: bd.binary("sub", bd.binary("add", x, y), x), block=4)
    a = np.array([2048, 2048, 1, 4096], np.float16)
    b = np.array([1, 3, 1e-4, 3], np.float16)
    out = np.zeros(4, np.float16)
    run(f, (1, 1, 1), [a, b, out, 4])
    # 2048 + 3 -> 2052 (ties to even) - 2048 = 4; 1 + 1e-4 -> 1 (ulp of 1 is 2^-10) - 1 = 0
    assert out.tolist() == [0.0, 4.0, 0.0, 4.0]


def test_bf16_rounding_of_add():
    import ml_dtypes
    bf = ml_dtypes.bfloat16
    a = np.array([1.0, 256.0, 1.0], bf)
    b = np.array([2.0 ** -8, 1.0, 3 * 2.0 ** -9], bf)
    out = run_binary("add", T.bfloat16, a, b)
    # ties to even: 1 + 2^-8 -> 1; 256 + 1 -> 256; 1 + 3*2^-9 -> 1 + 2^-7
    assert out.astype(np.float64).tolist() == [1.0, 256.0, 1.0 + 2.0 ** -7]


def test_float_max_min_nan():
    a = np.array([np.nan, 1.0, np.nan, -0.0, 0.0], np.float32)
    b = np.array([2.0, np.nan, np.nan, 0.0, -0.0], np.float32)
    mx = run_binary("max", T.float32, a, b)
    mn = run_binary("min", T.float32, a, b)
    assert mx[:2].tolist() == [2.0, 1.0] and np.isnan(mx[2])
    assert not np.signbit(mx[3]) and not np.signbit(mx[4])
    assert np.signbit(mn[3]) and np.signbit(mn[4])
    mxp = run_binary("max", T.float32, a, b, propagate_nan=True)
    assert np.isnan(mxp[:3]).all()


def test_cmp_ne_unordered():
    from .irb import elementwise as ew
    for pred, want in [("ne", [True, True, False]), ("eq", [False, False, True]), ("lt", [False, False, False]),
                       ("ge", [False, False, True])]:
        f = ew([T.float32, T.float32], T.int1, lambda bd, x, y, p=pred: bd.cmp(p, x, y), block=4)
        a = np.array([np.nan, 1.0, 2.0], np.float32)
        b = np.array([1.0, np.nan, 2.0], np.float32)
        out = np.zeros(3, np.bool_)
        run(f, (1, 1, 1), [a, b, out, 3])
        assert out.tolist() == want, pred


@pytest.mark.parametrize("elem", [T.int8, T.uint8, T.int32, T.uint32, T.int64, T.uint64], ids=str)
def test_cmp_signedness(elem):
    rng = np.random.default_rng(elem.bits)
    a = rand_ints(rng, elem, N)
    b = rand_ints(rng, elem, N)
    for pred, fn in [("lt", np.less), ("ge", np.greater_equal), ("eq", np.equal)]:
        f = elementwise([elem, elem], T.int1, lambda bd, x, y, p=pred: bd.cmp(p, x, y), block=BLOCK)
        out = np.zeros(N, np.bool_)
        run(f, (1, 1, 1), [a, b, out, N])
        want = np.array([fn(int(x), int(y)) for x, y in zip(a, b)])
        assert (out == want).all()


@pytest.mark.parametrize("elem", FLOATS, ids=str)
@pytest.mark.parametrize("kind", ["exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "erf", "floor",
                                  "ceil", "abs", "neg"])
def test_float_unary(kind, elem):
    import math
    rng = np.random.default_rng(5)
    lo = 0.01 if kind in ("log", "log2", "sqrt", "rsqrt") else -5
    a = rand_floats(rng, elem, N, lo, 5)
    f = elementwise([elem], elem, lambda bd, x: bd.unary(kind, x), block=BLOCK)
    out = np.zeros(N, elem.np)
    run(f, (1, 1, 1), [a, out, N], debug=True)
    a64 = a.astype(np.float64)
    ref = {"exp": np.exp, "exp2": np.exp2, "log": np.log, "log2": np.log2, "sqrt": np.sqrt,
           "rsqrt": lambda x: 1 / np.sqrt(x), "sin": np.sin, "cos": np.cos,
           "erf": np.frompyfunc(math.erf, 1, 1), "floor": np.floor, "ceil": np.ceil, "abs": np.abs,
           "neg": np.negative}[kind](a64).astype(np.float64)
    got = out.astype(np.float64)
    if kind in ("sqrt", "floor", "ceil", "abs", "neg"):
        np.testing.assert_array_equal(got, ref_round(ref, elem).astype(np.float64))
    else:
        rtol = {T.float16: 1e-3, T.bfloat16: 8e-3, T.float32: 1e-7, T.float64: 1e-15}[elem]
        np.testing.assert_allclose(got, ref, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("elem", [T.float32, T.bfloat16, T.float64], ids=str)
def test_exp2_rsqrt_flush_denormals_below_float64(elem):
    """exp2 and rsqrt follow the GPU's .ftz forms (and Triton's): float32-denormal results of exp2 are +0 and a
    denormal operand of rsqrt reads as a signed zero; float64 keeps its denormals; exp keeps them too."""
    a = np.resize(np.array([-130.0, -126.0, -88.0, 3.0], elem.np), N)
    outs = {}
    for kind in ("exp2", "exp"):
        f = elementwise([elem], elem, lambda bd, x, kind=kind: bd.unary(kind, x), block=BLOCK)
        outs[kind] = np.zeros(N, elem.np)
        run(f, (1, 1, 1), [a, outs[kind], N])
    tiny = np.float64(2.0 ** -130)
    want = 0.0 if elem is not T.float64 else tiny
    assert outs["exp2"][0].astype(np.float64) == pytest.approx(want, rel=1e-2, abs=0)
    assert outs["exp2"][1].astype(np.float64) == 2.0 ** -126 and outs["exp2"][3] == 8
    assert 0 < outs["exp"][2] < 2.0 ** -126  # exp(-88) ~ 6e-39: a denormal, kept
    r = np.resize(np.array([1e-40, -1e-40, 4.0, 0.25], np.float64).astype(elem.np), N)
    out = np.zeros(N, elem.np)
    f = elementwise([elem], elem, lambda bd, x: bd.unary("rsqrt", x), block=BLOCK)
    run(f, (1, 1, 1), [r, out, N])
    if elem is T.float64:
        assert np.isfinite(out[0]) and out[0] == pytest.approx(1e20)
    else:
        assert out[0] == np.inf and out[1] == -np.inf
    assert out[2] == 0.5 and out[3] == 2.0


@pytest.mark.parametrize("elem", INTS, ids=str)
def test_int_unary(elem):
    rng = np.random.default_rng(elem.bits + 100)
    a = rand_ints(rng, elem, N)
    for kind, ref in [("neg", lambda v: wrap(-v, elem)), ("not", lambda v: wrap(~v, elem)),
                      ("abs", lambda v: wrap(abs(v), elem))]:
        f = elementwise([elem], elem, lambda bd, x, k=kind: bd.unary(k, x), block=BLOCK)
        out = np.zeros(N, elem.np)
        run(f, (1, 1, 1), [a, out, N], debug=True)
        want = [ref(int(v)) for v in a]
        assert out.astype(object).tolist() == want, kind


@pytest.mark.parametrize("elem", [T.float16, T.bfloat16, T.float32], ids=str)
def test_fma_single_rounding(elem):
    rng = np.random.default_rng(9)
    a = rand_floats(rng, elem, N, -4, 4)
    b = rand_floats(rng, elem, N, -4, 4)
    c = rand_floats(rng, elem, N, -4, 4)
    f = elementwise([elem, elem, elem], elem, lambda bd, x, y, z: bd.fma(x, y, z), block=BLOCK)
    out = np.zeros(N, elem.np)
    run(f, (1, 1, 1), [a, b, c, out, N], debug=True)
    from fractions import Fraction
    # got must be representable and at least as close to the exact a*b+c as the double-rounded candidate
    # (which is correctly rounded except in rare double-rounding cases), i.e. the single-rounding result.
    for g, x, y, z in zip(out.astype(np.float64), a.astype(np.float64), b.astype(np.float64),
                          c.astype(np.float64)):
        exact = Fraction(x) * Fraction(y) + Fraction(z)
        w = float(ref_round(np.array([float(exact)]), elem)[0])
        assert abs(Fraction(float(g)) - exact) <= abs(Fraction(w) - exact)


def test_fma_known_single_rounding_case():
    # a*b = 1 + 2^-12 + 2^-24 exactly... choose fp32: (1+2^-12)^2 = 1 + 2^-11 + 2^-24; with c = -1 the unfused
    # product rounds away the 2^-24 term.
    a = np.array([1 + 2.0 ** -12], np.float32)
    c = np.array([-1.0], np.float32)
    f = elementwise([T.float32, T.float32, T.float32], T.float32, lambda bd, x, y, z: bd.fma(x, y, z), block=2)
    out = np.zeros(1, np.float32)
    run(f, (1, 1, 1), [a, a, c, out, 1])
    assert out[0] == np.float32(2.0 ** -11 + 2.0 ** -24)
