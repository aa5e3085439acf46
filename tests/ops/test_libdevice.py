"""libdevice (`compiler.language.extra.libdevice`) against float64 references: interpreter, ptxas, GPU.

Math functions are compared within a per-dtype tolerance (libdevice is within a few ulp, the interpreter rounds
the float64 value once); correctly rounded functions with a rounding mode and conversions are compared bit for
bit against references computed independently (exact float64 arithmetic on float32 inputs).
"""
import math
from decimal import Decimal, localcontext

import numpy as np
import pytest

import compiler
from compiler.codegen import ptx as P
from compiler.language.extra import libdevice

from . import libdevice_kernels as K
from .lang_common import TARGETS, assert_close, poison, run

N = 1000
BLOCK = 256
GRID = (4,)


def _m(fn):
    """An elementwise reference from a `math` function (not NumPy's, which the interpreter uses)."""
    def ref(*xs):
        def one(*v):
            try:
                return fn(*v)
            except (ValueError, OverflowError):
                return math.nan
        return np.vectorize(one, otypes=[np.float64])(*[np.asarray(x, np.float64) for x in xs])
    return ref


# name -> (reference, input range)
UNARY = {
    "tanh": (_m(math.tanh), (-5, 5)), "sinh": (_m(math.sinh), (-5, 5)), "cosh": (_m(math.cosh), (-5, 5)),
    "asinh": (_m(math.asinh), (-5, 5)), "acosh": (_m(math.acosh), (1, 8)), "atanh": (_m(math.atanh), (-0.99, 0.99)),
    "sin": (_m(math.sin), (-6, 6)), "cos": (_m(math.cos), (-6, 6)), "tan": (_m(math.tan), (-1.5, 1.5)),
    "asin": (_m(math.asin), (-1, 1)), "acos": (_m(math.acos), (-1, 1)), "atan": (_m(math.atan), (-9, 9)),
    "exp": (_m(math.exp), (-20, 20)), "exp2": (_m(lambda v: 2.0 ** v), (-20, 20)),
    "exp10": (_m(lambda v: 10.0 ** v), (-6, 6)), "expm1": (_m(math.expm1), (-3, 3)),
    "log": (_m(math.log), (1e-3, 1e3)), "log2": (_m(math.log2), (1e-3, 1e3)),
    "log10": (_m(math.log10), (1e-3, 1e3)), "log1p": (_m(math.log1p), (-0.9, 9)),
    "sqrt": (_m(math.sqrt), (0, 100)), "rsqrt": (_m(lambda v: 1 / math.sqrt(v)), (0.01, 100)),
    "cbrt": (_m(lambda v: math.copysign(abs(v) ** (1 / 3), v)), (-50, 50)),
    "erf": (_m(math.erf), (-3, 3)), "erfc": (_m(math.erfc), (-3, 3)),
    "lgamma": (_m(math.lgamma), (0.1, 20)), "tgamma": (_m(math.gamma), (0.1, 10)),
    "floor": (_m(math.floor), (-50, 50)), "ceil": (_m(math.ceil), (-50, 50)), "trunc": (_m(math.trunc), (-50, 50)),
    "round": (_m(lambda v: math.copysign(math.floor(abs(v) + 0.5), v)), (-50, 50)),
    "rint": (_m(lambda v: float(round(v))), (-50, 50)), "nearbyint": (_m(lambda v: float(round(v))), (-50, 50)),
    "abs": (_m(abs), (-5, 5)),
}
BINARY = {
    "pow": (_m(math.pow), (0.1, 4), (-3, 3)), "atan2": (_m(math.atan2), (-5, 5), (-5, 5)),
    "hypot": (_m(math.hypot), (-5, 5), (-5, 5)), "fmod": (_m(math.fmod), (-20, 20), (0.5, 4)),
    "copysign": (_m(math.copysign), (-5, 5), (-5, 5)), "fmin": (_m(min), (-5, 5), (-5, 5)),
    "fmax": (_m(max), (-5, 5), (-5, 5)),
}
PREDICATES = ("isnan", "isinf", "signbit")


def _inputs(lo, hi, dt, rng, n=N):
    return rng.uniform(lo, hi, n).astype(dt)


def _tol(name, dtype):
    if dtype == "float32":
        return 4e-6 if name not in ("lgamma", "tgamma") else 2e-5
    return 1e-13


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(target, dtype, name):
    ref, (lo, hi) = UNARY[name]
    rng = np.random.default_rng(abs(hash(name)) % 2**32)
    x = _inputs(lo, hi, dtype, rng)
    y = poison(N, dtype)
    run(target, K.ld_unary, GRID, [x, y], [N], FN=name, BLOCK=BLOCK)
    assert_close(y, ref(x), dtype, rtol=_tol(name, dtype), atol=_tol(name, dtype))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary(target, dtype, name):
    ref, (lo, hi), (lo2, hi2) = BINARY[name]
    rng = np.random.default_rng(abs(hash(name)) % 2**32)
    x, z = _inputs(lo, hi, dtype, rng), _inputs(lo2, hi2, dtype, rng)
    y = poison(N, dtype)
    run(target, K.ld_binary, GRID, [x, z, y], [N], FN=name, BLOCK=BLOCK)
    assert_close(y, ref(x, z), dtype, rtol=_tol(name, dtype), atol=_tol(name, dtype))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fma_exact(target, dtype):
    """fma rounds once: a*b+c exact in float64 for float32 inputs, rounded once (ties even) to float32."""
    rng = np.random.default_rng(7)
    a, b, c = (_inputs(-4, 4, dtype, rng) for _ in range(3))
    y = poison(N, dtype)
    run(target, K.ld_ternary, GRID, [a, b, c, y], [N], FN="fma", BLOCK=BLOCK)
    if dtype == "float32":
        ref = (a.astype(np.float64) * b + c).astype(np.float32)  # the product is exact; the sum has one rounding
        ok = np.abs(a.astype(np.float64) * b) < 2.0 ** 29 * np.abs(c.astype(np.float64)) + 1  # exact sum in f64
        np.testing.assert_array_equal(y[ok], ref[ok])
    else:
        from fractions import Fraction
        ref = np.array([float(Fraction(float(p)) * Fraction(float(q)) + Fraction(float(r)))
                        for p, q, r in zip(a, b, c)])
        np.testing.assert_array_equal(y, ref)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_predicates(target, dtype):
    rng = np.random.default_rng(3)
    x = _inputs(-4, 4, dtype, rng)
    x[::7] = np.nan
    x[1::11] = np.inf
    x[2::13] = -np.inf
    x[3::17] = -0.0
    for name, ref in (("isnan", np.isnan), ("isinf", np.isinf), ("signbit", np.signbit)):
        y = poison(N, "int32")
        run(target, K.ld_unary, GRID, [x, y], [N], FN=name, BLOCK=BLOCK)
        np.testing.assert_array_equal(y != 0, ref(x), err_msg=name)


def _directed(v_f32, exact_cmp, mode):
    """Round-to-nearest float32 values `v_f32` moved to the rounding mode's neighbour: exact_cmp(f) is the sign of
    f - exact (computed exactly), per element."""
    f = v_f32.copy()
    s = exact_cmp(f)
    up, down = np.nextafter(f, np.float32(np.inf)), np.nextafter(f, np.float32(-np.inf))
    if mode == "rz":
        return np.where((f > 0) & (s > 0), down, np.where((f < 0) & (s < 0), up, f))
    if mode == "ru":
        return np.where(s < 0, up, f)
    if mode == "rd":
        return np.where(s > 0, down, f)
    return f


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("mode", ["rn", "rz", "rd", "ru"])
@pytest.mark.parametrize("op", ["div", "add", "mul", "sqrt"])
def test_rounding_modes_f32(target, mode, op):
    """div/add/mul/sqrt_{rn,rz,rd,ru} on float32, bit-exact: the exact value's sign relative to a candidate is
    known exactly in float64 (products of two float32 are exact there)."""
    rng = np.random.default_rng(11)
    a, b = _inputs(-8, 8, "float32", rng), _inputs(0.1, 8, "float32", rng)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    y = poison(N, "float32")
    if op == "sqrt":
        a, a64 = np.abs(a), np.abs(a64)
        run(target, K.ld_unary, GRID, [a, y], [N], FN=f"sqrt_{mode}", BLOCK=BLOCK)
        ref = _directed(np.sqrt(a64).astype(np.float32), lambda f: np.sign(f.astype(np.float64) ** 2 - a64), mode)
    else:
        run(target, K.ld_binary, GRID, [a, b, y], [N], FN=f"{op}_{mode}", BLOCK=BLOCK)
        if op == "div":
            ref = _directed((a64 / b64).astype(np.float32), lambda f: np.sign(f.astype(np.float64) * b64 - a64), mode)
        else:
            exact = a64 + b64 if op == "add" else a64 * b64  # exact in float64 for these inputs
            ref = _directed(exact.astype(np.float32), lambda f: np.sign(f.astype(np.float64) - exact), mode)
    np.testing.assert_array_equal(y.view(np.uint32), ref.view(np.uint32))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("mode,fn", [("rn", np.rint), ("rz", np.trunc), ("rd", np.floor), ("ru", np.ceil)])
def test_float2int(target, mode, fn):
    rng = np.random.default_rng(5)
    x = _inputs(-100, 100, "float32", rng)
    x[:8] = [0.5, 1.5, 2.5, -0.5, -2.5, 3e9, -3e9, np.nan]
    y = poison(N, "int32")
    run(target, K.ld_unary, GRID, [x, y], [N], FN=f"float2int_{mode}", BLOCK=BLOCK)
    ref = np.clip(np.nan_to_num(fn(x.astype(np.float64)), nan=0.0), -2**31, 2**31 - 1).astype(np.int32)
    np.testing.assert_array_equal(y, ref)
    y64 = poison(N, "int64")
    run(target, K.ld_unary, GRID, [x, y64], [N], FN="llrint", BLOCK=BLOCK)
    np.testing.assert_array_equal(y64[8:], np.rint(x[8:].astype(np.float64)).astype(np.int64))
    np.testing.assert_array_equal(y64[:5], [0, 2, 2, 0, -2])


@pytest.mark.parametrize("target", TARGETS)
def test_import_paths_and_pow_dispatch(target):
    rng = np.random.default_rng(9)
    x = _inputs(0.1, 3, "float32", rng)
    y = poison(N, "float32")
    run(target, K.ld_paths, GRID, [x, y], [N], BLOCK=BLOCK)
    x64 = x.astype(np.float64)
    ref = np.tanh(x64) + _m(math.erf)(x64) + x64 ** 2 + np.sqrt(x64)
    assert_close(y, ref, "float32", rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("target", TARGETS)
def test_scalar_argument(target):
    y = poison(1, "float64")
    run(target, K.ld_scalar, (1,), [y], [np.float64(0.75)])
    assert_close(y, np.array([2 * math.exp(0.75)]), "float32", rtol=1e-5, atol=1e-5)


def test_fp16_goes_through_fp32():
    x = np.random.default_rng(2).uniform(-3, 3, N).astype(np.float16)
    y = poison(N, "float16")
    run("interp", K.ld_unary, GRID, [x, y], [N], FN="tanh", BLOCK=BLOCK)
    np.testing.assert_array_equal(y, np.tanh(x.astype(np.float64)).astype(np.float16))


def test_bad_dtype_is_a_compilation_error():
    x = np.arange(N, dtype=np.int32)
    y = poison(N, "int32")
    with pytest.raises(compiler.CompilationError) as ei:
        K.ld_unary[GRID](x, y, N, FN="tanh", BLOCK=BLOCK)
    msg = str(ei.value)
    assert "libdevice.tanh is not defined for (int32)" in msg and "libdevice_kernels.py" in msg


@pytest.mark.skipif(P.find_libdevice() is None, reason="libdevice.10.bc not found")
def test_every_symbol_exists_and_has_a_meaning():
    """Each symbol the module calls is defined in libdevice.10.bc with the argument/result types of the table,
    and the interpreter has a meaning for it."""
    import llvmlite.binding as llvm

    from compiler.interpreter.libdevice import libdevice_fn
    from compiler.ir import types as T

    P._init()
    lib = llvm.parse_bitcode(P._libdevice_bitcode())
    defs = {f.name: str(f.global_value_type) for f in lib.functions if not f.is_declaration}
    llt = {"float32": "float", "float64": "double", "int32": "i32", "int64": "i64", "uint32": "i32",
           "uint64": "i64"}
    n = 0
    for name, table in libdevice.TABLE.items():
        for args, (sym, ret) in table.items():
            assert sym in defs, f"{name}: {sym} is not in libdevice"
            assert defs[sym] == f"{llt[ret]} ({', '.join(llt[a] for a in args)})", (name, sym, defs[sym])
            libdevice_fn(sym, [T.from_name(a).np for a in args], T.from_name(ret).np)
            n += 1
    assert n > 250


# ---- tl.debug_barrier ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("target", TARGETS)
def test_debug_barrier(target):
    x = np.random.default_rng(4).integers(-1000, 1000, 4 * 128).astype(np.int32)
    y = poison(4 * 128, "int32")
    run(target, K.barrier_kernel, (4,), [x, y], [], BLOCK=128)
    ref = (x.reshape(4, 128)[:, ::-1] * 2 + 1).reshape(-1)
    np.testing.assert_array_equal(y, ref)


def test_debug_barrier_ptx():
    if P.find_ptxas() is None:
        pytest.skip("ptxas not found")
    x = np.zeros(512, np.int32)
    ck = K.barrier_kernel.warmup(x, x, grid=(4,), BLOCK=128, target="sm_90a")
    assert "bar.sync" in ck.asm["ptx"] or "barrier.sync" in ck.asm["ptx"]


# ---- a scalar parameter annotated with a dtype -------------------------------------------------------------
ALPHA = 1.0 + 2.0 ** -40  # not a float32: rounding it to float32 gives exactly 1.0


@pytest.mark.parametrize("target", TARGETS)
def test_float64_annotated_parameter(target):
    x = np.random.default_rng(8).uniform(-4, 4, N).astype(np.float64)
    y = poison(N, "float64")
    run(target, K.scale_f64, GRID, [x, y], [ALPHA, N], BLOCK=BLOCK)
    np.testing.assert_array_equal(y, x * ALPHA)


def test_float64_annotated_parameter_ptx():
    if P.find_ptxas() is None:
        pytest.skip("ptxas not found")
    x = np.zeros(N)
    ck = K.scale_f64.warmup(x, x, ALPHA, N, grid=GRID, BLOCK=BLOCK, target="sm_90a")
    ptx = ck.asm["ptx"]
    assert ".param .f64" in ptx and ("mul.rn.f64" in ptx or "mul.f64" in ptx), ptx[:2000]
    assert [p["type"] for p in ck.metadata["params"]][2] == "float64"


@pytest.mark.parametrize("target", TARGETS)
def test_int64_annotated_parameter(target):
    y = poison(1, "int64")
    run(target, K.annotated_int64, (1,), [y], [2**31 - 1])  # k * 3 overflows int32 but not int64
    assert int(y[0]) == 3 * (2**31 - 1)


# ---- Bessel functions and integer functions -----------------------------------------------------------------
def _series(x, n, sign):
    """J_n (sign -1) / I_n (sign +1) by their power series, summed exactly-enough with fsum (|x| <= 10)."""
    out = []
    for v in np.asarray(x, np.float64):
        terms = [sign ** k * (v / 2) ** (2 * k + n) / (math.factorial(k) * math.factorial(k + n)) for k in range(60)]
        out.append(math.fsum(terms))
    return np.array(out)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,n,sign", [("j0", 0, -1), ("j1", 1, -1), ("cyl_bessel_i0", 0, 1),
                                         ("cyl_bessel_i1", 1, 1)])
def test_bessel(target, dtype, name, n, sign):
    x = _inputs(-8, 8, dtype, np.random.default_rng(12))
    y = poison(N, dtype)
    run(target, K.ld_unary, GRID, [x, y], [N], FN=name, BLOCK=BLOCK)
    tol = 1e-5 if dtype == "float32" else 1e-12
    assert_close(y, _series(x, n, sign), dtype, rtol=tol, atol=tol)


INT_REFS = {
    "popc": (1, lambda a: bin(a & 0xFFFFFFFF).count("1")),
    "clz": (1, lambda a: 32 - (a & 0xFFFFFFFF).bit_length()),
    "brev": (1, lambda a: int(format(a & 0xFFFFFFFF, "032b")[::-1], 2)),
    "ffs": (1, lambda a: ((a & 0xFFFFFFFF) & -(a & 0xFFFFFFFF)).bit_length()),
    "mulhi": (2, lambda a, b: (a * b) >> 32),
    "hadd": (2, lambda a, b: (a + b) >> 1),
    "rhadd": (2, lambda a, b: (a + b + 1) >> 1),
    "mul24": (2, lambda a, b: ((((a & 0xFFFFFF) ^ 0x800000) - 0x800000) * (((b & 0xFFFFFF) ^ 0x800000) - 0x800000))),
    "min": (2, min), "max": (2, max),
}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", sorted(INT_REFS))
def test_integer_functions(target, name):
    nargs, ref = INT_REFS[name]
    rng = np.random.default_rng(13)
    a = rng.integers(-2**31, 2**31 - 1, N, dtype=np.int32)
    b = rng.integers(-2**31, 2**31 - 1, N, dtype=np.int32)
    y = poison(N, "int32")
    if nargs == 1:
        run(target, K.ld_unary, GRID, [a, y], [N], FN=name, BLOCK=BLOCK)
        want = [ref(int(v)) for v in a]
    else:
        run(target, K.ld_binary, GRID, [a, b, y], [N], FN=name, BLOCK=BLOCK)
        want = [ref(int(v), int(w)) for v, w in zip(a, b)]
    np.testing.assert_array_equal(y.view(np.uint32), np.array([w & 0xFFFFFFFF for w in want], np.uint32))


# ---- Bessel functions of the second kind: y0, y1, yn ----------------------------------------------------------
_PI = Decimal("3.141592653589793238462643383279502884197169399375105820974944592307816")
_GAMMA = Decimal("0.577215664901532860606512090082402431042159335939923598805767234884868")


def _sincos(r):
    """(sin r, cos r) of a Decimal |r| <= 4 by their Taylor series."""
    s = c = Decimal(0)
    term = Decimal(1)
    for i in range(100):
        if i % 4 == 0:
            c += term
        elif i % 4 == 1:
            s += term
        elif i % 4 == 2:
            c -= term
        else:
            s -= term
        term = term * r / (i + 1)
    return s, c


def _y_exact(n, x):
    """Y_n(x) for a float x > 0 and an order n >= 0 (<= ~10) in 70-digit decimal arithmetic, independent of the
    interpreter's methods: the power series with the logarithm (DLMF 10.8.1) for x <= 40 (its terms reach about
    1e16 times the result there, far below 70 digits), Hankel's asymptotic expansion (DLMF 10.17.4, summed while
    its terms decrease: the smallest is below 1e-30 for x > 40) above, with sin/cos by Taylor series after
    reducing the phase by a 70-digit pi."""
    with localcontext() as ctx:
        ctx.prec = 70
        X = Decimal(x)  # exact
        if x <= 40:
            h = X / 2
            hh = h * h
            fin = sum(Decimal(math.factorial(n - k - 1)) / math.factorial(k) * hh ** k for k in range(n))
            term = Decimal(1) / math.factorial(n)  # (-hh)^k / (k! (n+k)!) at k = 0
            hk, hnk = Decimal(0), sum((Decimal(1) / j for j in range(1, n + 1)), Decimal(0))  # H_k, H_{n+k}
            jn = s = Decimal(0)
            for k in range(int(2 * x) + 80):
                if k:
                    term = -term * hh / (k * (n + k))
                    hk += Decimal(1) / k
                    hnk += Decimal(1) / (n + k)
                jn += term
                s += (hk + hnk - 2 * _GAMMA) * term  # psi(k+1) + psi(n+k+1)
            hn = h ** n
            y = -fin / (hn * _PI) + 2 / _PI * h.ln() * hn * jn - hn / _PI * s
        else:
            chi = X - (2 * n + 1) * _PI / 4
            chi -= (chi / (2 * _PI)).to_integral_value() * 2 * _PI
            sin, cos = _sincos(chi)
            mu = 4 * n * n
            p = q = Decimal(0)
            a, prev = Decimal(1), None  # a = a_k(n) / x^k
            for k in range(400):
                if prev is not None and abs(a) >= prev:
                    break
                if k % 2 == 0:
                    p += a if k % 4 == 0 else -a
                else:
                    q += a if k % 4 == 1 else -a
                prev = abs(a)
                a = a * (mu - (2 * k + 1) ** 2) / ((k + 1) * 8 * X)
            y = (2 / (_PI * X)).sqrt() * (p * sin + q * cos)
        return float(y)


def _y_ref(n, x):
    """Y_n elementwise with libdevice's special values (NaN for n < 0, x < 0 or NaN, -inf at +-0, 0 at +inf),
    rounded to x's dtype (float32: beyond its range, -inf) and returned as float64."""
    out = []
    for k, v in zip(np.broadcast_to(n, np.shape(x)).tolist(), np.asarray(x, np.float64).tolist()):
        if k < 0 or math.isnan(v) or v < 0:
            out.append(math.nan)
        elif v == 0:
            out.append(-math.inf)
        elif v == math.inf:
            out.append(0.0)
        else:
            out.append(_y_exact(k, v))
    with np.errstate(over="ignore"):
        return np.array(out).astype(np.asarray(x).dtype).astype(np.float64)


# first zeros of Y0 and Y1 (float64 nearest), where only an absolute error is meaningful
_Y_ZEROS = [0.8935769662791675, 3.957678419314858, 7.086051060301773, 2.197141326031017, 5.429681040794135]


def _y_inputs(dtype, seed, n=N, signed_zero=True):
    """Seeded x: uniform in (0, 30), log-uniform in [1e-6, 1e4], the zeros above, and the special values."""
    rng = np.random.default_rng(seed)
    x = np.concatenate([rng.uniform(0, 30, n // 2), np.exp(rng.uniform(math.log(1e-6), math.log(1e4), n - n // 2))])
    edges = [0.0, -0.0 if signed_zero else 0.0, -1.5, -np.inf, np.nan, np.inf, 1e-30] + _Y_ZEROS
    x[:len(edges)] = edges
    return x.astype(dtype)


def _y_tol(target, dtype, n=0):
    """Interpreter: one rounding of a float64 value within ~1e-15 of the exact one. GPU: libdevice's documented
    bounds (float: 9 ulp for |x| < 8, else 2.2e-6 absolute, ceil(2 + 2.5n) ulp for yn; double: a few ulp for
    |x| < 8, else 5e-12 absolute)."""
    if target == "interp":
        return (1.2e-7, 1e-14) if dtype == "float32" else (1e-13, 1e-14)
    if dtype == "float32":
        return (4e-6, 4e-6) if n < 2 else (1e-5, 1e-5)
    return (1e-13, 1e-11) if n < 2 else (1e-12, 1e-11)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,n", [("y0", 0), ("y1", 1)])
def test_bessel_y(target, dtype, name, n):
    x = _y_inputs(dtype, 21 + n)
    y = poison(N, dtype)
    run(target, K.ld_unary, GRID, [x, y], [N], FN=name, BLOCK=BLOCK)
    rtol, atol = _y_tol(target, dtype)
    assert_close(y, _y_ref(n, x), dtype, rtol=rtol, atol=atol)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_bessel_yn(target, dtype):
    """yn(n, x) for orders -2 .. 8 (libdevice: NaN for n < 0); no -0.0 here: libdevice's double yn returns +inf at
    -0.0 for n >= 2 (its float one and CUDA's documentation say -inf, as the interpreter does)."""
    x = _y_inputs(dtype, 23, signed_zero=False)
    orders = np.random.default_rng(24).integers(-2, 9, N).astype(np.int32)
    orders[:12] = 3
    y = poison(N, dtype)
    run(target, K.ld_binary, GRID, [orders, x, y], [N], FN="yn", BLOCK=BLOCK)
    rtol, atol = _y_tol(target, dtype, n=8)
    assert_close(y, _y_ref(orders, x), dtype, rtol=rtol, atol=atol)


@pytest.mark.skipif(P.find_ptxas() is None, reason="ptxas not found")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_bessel_y_ptx_sm90(dtype):
    """One kernel calling y0, y1 and yn compiles for sm_90 and ptxas assembles it; the libdevice functions
    (__nv_y0f/__nv_y0, ...) are linked in and inlined: no call to an __nv_ symbol is left."""
    x = np.zeros(N, dtype)
    ck = K.ld_bessel_y.warmup(x, x, x, x, 3, N, grid=GRID, BLOCK=BLOCK, target="sm_90")
    ptx = ck.asm["ptx"]
    assert ".target sm_90" in ptx and "__nv_" not in ptx
    assert isinstance(ck.asm["cubin"], bytes) and len(ck.asm["cubin"]) > 0
    if dtype == "float64":
        assert "fma.rn.f64" in ptx


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_bessel_y_one_kernel(target, dtype):
    """y0, y1 and yn(5) of one x in one kernel; no -0.0, for yn's sake (test_bessel_yn says why; the H200 gave +inf
    there for the double yn, 2026-12-05); test_bessel_y covers -0.0 for y0 and y1."""
    x = _y_inputs(dtype, 25, n=N, signed_zero=False)
    y0, y1, yn = poison(N, dtype), poison(N, dtype), poison(N, dtype)
    run(target, K.ld_bessel_y, GRID, [x, y0, y1, yn], [5, N], BLOCK=BLOCK)
    for got, n in ((y0, 0), (y1, 1), (yn, 5)):
        rtol, atol = _y_tol(target, dtype, n)
        assert_close(got, _y_ref(n, x), dtype, rtol=rtol, atol=atol)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_bessel_y_against_torch(dtype):
    """Triton's own check (test_math_extern): torch.randn inputs, compared with torch.special.bessel_y0/y1 by
    torch.testing.assert_close's default tolerances, NaN (x < 0) equal."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    for name, ref in (("y0", torch.special.bessel_y0), ("y1", torch.special.bessel_y1)):
        x = torch.randn(128, dtype=getattr(torch, dtype))
        y = np.full(128, np.nan, dtype)
        K.ld_unary[(1,)](x.numpy(), y, 128, FN=name, BLOCK=128)
        torch.testing.assert_close(torch.from_numpy(y), ref(x), equal_nan=True)
