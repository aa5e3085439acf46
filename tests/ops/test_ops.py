"""Every op and dtype of the language against NumPy: in the interpreter (CI) and on the GPU (marked gpu).

The same test body runs on both targets; `run` moves arrays to the device and back when the target is the GPU.
Integers are compared exactly (with the GPU's wrap-around and C division semantics); floats with a relative
tolerance per dtype against a float64 reference; NaN never passes; outputs are poisoned before each run.
"""
import os

import numpy as np
import pytest

import compiler
import compiler.language as tl
from compiler.ir import types as T

from . import kernels as K
from .conftest import CompiledOnly

try:
    import ml_dtypes

    BF16 = np.dtype(ml_dtypes.bfloat16)
except ImportError:  # pragma: no cover
    BF16 = None

def _have_ptxas():
    from compiler.codegen.ptx import find_ptxas

    return find_ptxas() is not None


# interp: run in the NumPy interpreter; ptxas: compile to PTX and assemble it for sm_90 (no GPU); gpu: run on it
TARGETS = ["interp", pytest.param("ptxas", marks=pytest.mark.skipif(not _have_ptxas(), reason="ptxas not found")),
           pytest.param("gpu", marks=pytest.mark.gpu)]

INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
FLOATS = ["float16", "bfloat16", "float32", "float64"]
N = 1000  # odd size: the last program is masked
BLOCK = 256


def npdt(name):
    return T.from_name(name).np


def rand(dtype, n, rng, lo=None, hi=None, nonzero=False):
    d = npdt(dtype)
    if dtype == "int1":
        return rng.random(n) < 0.5
    if T.from_name(dtype).is_floating():
        lo = -4.0 if lo is None else lo
        hi = 4.0 if hi is None else hi
        x = rng.uniform(lo, hi, n)
        if nonzero:
            x = np.where(np.abs(x) < 0.25, 0.5, x)
        return x.astype(d)
    info = np.iinfo(d)
    lo = info.min if lo is None else lo
    hi = info.max if hi is None else hi
    x = rng.integers(lo, hi, n, dtype=d, endpoint=True)
    if nonzero:
        x = np.where(x == 0, d.type(1), x)
    return x


def poison(shape, dtype):
    d = npdt(dtype)
    if T.from_name(dtype).is_floating():
        return np.full(shape, np.nan, dtype=d)
    if dtype == "int1":
        return np.zeros(shape, dtype=d)
    return np.full(shape, np.iinfo(d).max // 3 + 7, dtype=d)


def run(target, kernel, grid, arrays, scalars=(), **meta):
    """Launch with NumPy arrays (interpreter) or their device copies (GPU); results copied back in place."""
    if target == "interp":
        kernel[grid](*arrays, *scalars, **meta)
        return
    if target == "ptxas":
        ck = kernel.warmup(*arrays, *scalars, grid=grid, target="sm_90", **meta)
        assert ".entry" in ck.asm["ptx"]
        cubin = ck.asm["cubin"]
        assert isinstance(cubin, bytes) and len(cubin) > 0
        raise CompiledOnly()  # a pass: nothing runs without a GPU (see conftest.py)
    from compiler.runtime import DeviceArray, synchronize

    # a test that sets TILEFARM_AB gets code built under it: the launch path's compiled kernels are not keyed by the
    # switches (only the disk cache is), so a kernel launched under other switches is dropped first
    ab = os.environ.get("TILEFARM_AB", "")
    if getattr(kernel, "_test_ab", "") != ab and hasattr(kernel, "_drop_compiled"):
        kernel._drop_compiled()
    kernel._test_ab = ab
    dev = [DeviceArray.from_numpy(a) for a in arrays]
    kernel[grid](*dev, *scalars, **meta)
    synchronize()
    for a, d in zip(arrays, dev):
        a[...] = d.numpy().reshape(a.shape)


TOL = {"float16": 2e-3, "bfloat16": 1.6e-2, "float32": 2e-6, "float64": 1e-13}
TOL_TRANSC = {"float16": 2e-3, "bfloat16": 1.6e-2, "float32": 2e-5, "float64": 1e-12}


def assert_close(got, ref, dtype, rtol=None, atol=None):
    got64 = np.asarray(got).astype(np.float64)
    assert not np.isnan(got64).any() or np.isnan(ref).any(), "NaN in output"
    if np.isnan(ref).any():
        assert np.array_equal(np.isnan(got64), np.isnan(ref)), "NaN pattern differs"
        mask = ~np.isnan(ref)
        got64, ref = got64[mask], ref[mask]
    rtol = TOL[dtype] if rtol is None else rtol
    atol = rtol if atol is None else atol
    np.testing.assert_allclose(got64, ref, rtol=rtol, atol=atol)


def assert_exact(got, ref):
    np.testing.assert_array_equal(got, ref)


# ------------------------------------------------------------------------------------------------
# integer reference semantics (GPU): wrap-around, C division
# ------------------------------------------------------------------------------------------------
def c_div(a, b):
    a64, b64 = a.astype(object), b.astype(object)
    q = np.array([abs(x) // abs(y) * (1 if (x >= 0) == (y >= 0) else -1) for x, y in zip(a64, b64)], dtype=object)
    return q


def wrap(obj_arr, dtype):
    d = npdt(dtype)
    bits = d.itemsize * 8
    vals = [int(v) & ((1 << bits) - 1) for v in obj_arr]
    if np.issubdtype(d, np.signedinteger):
        vals = [v - (1 << bits) if v >= 1 << (bits - 1) else v for v in vals]
    return np.array(vals, dtype=d)


INT_BINARY = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "floordiv": lambda a, b: c_div(a, b), "mod": lambda a, b: a - c_div(a, b) * b,
    "and": lambda a, b: a & b, "or": lambda a, b: a | b, "xor": lambda a, b: a ^ b,
    "maximum": lambda a, b: np.maximum(a, b), "minimum": lambda a, b: np.minimum(a, b),
}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("op", sorted(INT_BINARY) + ["shl", "shr", "lt", "le", "gt", "ge", "eq", "ne", "where"])
def test_int_binary(target, dtype, op):
    rng = np.random.default_rng(hash((dtype, op)) % 2**32)
    bits = npdt(dtype).itemsize * 8
    x = rand(dtype, N, rng)
    if op in ("shl", "shr"):
        y = rand(dtype, N, rng, 0, bits - 1)
    else:
        y = rand(dtype, N, rng, nonzero=op in ("floordiv", "mod"))
        if np.issubdtype(npdt(dtype), np.signedinteger) and op in ("floordiv", "mod"):
            x = np.where(x == np.iinfo(npdt(dtype)).min, 1, x).astype(npdt(dtype))
    cmp = op in ("lt", "le", "gt", "ge", "eq", "ne")
    out_dt = "int1" if cmp else dtype
    z = poison(N, out_dt)
    run(target, K.binary_kernel, (compiler.cdiv(N, BLOCK),), [x, y, z], [N], OP=op, BLOCK=BLOCK)
    xo, yo = x.astype(object), y.astype(object)
    if op in INT_BINARY:
        ref = wrap(INT_BINARY[op](xo, yo), dtype)
    elif op == "shl":
        ref = wrap(np.array([int(a) << int(b) for a, b in zip(xo, yo)], dtype=object), dtype)
    elif op == "shr":
        ref = (x >> y).astype(npdt(dtype))  # NumPy: arithmetic for signed, logical for unsigned
    elif op == "where":
        ref = np.where(x > y, x, y)
    else:
        ref = {"lt": x < y, "le": x <= y, "gt": x > y, "ge": x >= y, "eq": x == y, "ne": x != y}[op]
    assert_exact(z, ref)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["int32", "uint32", "int64", "uint64"])
def test_umulhi(target, dtype):
    rng = np.random.default_rng(7)
    x, y = rand(dtype, N, rng), rand(dtype, N, rng)
    z = poison(N, dtype)
    run(target, K.binary_kernel, (compiler.cdiv(N, BLOCK),), [x, y, z], [N], OP="umulhi", BLOCK=BLOCK)
    bits = npdt(dtype).itemsize * 8
    m = (1 << bits) - 1
    ref = wrap(np.array([((int(a) & m) * (int(b) & m)) >> bits for a, b in zip(x, y)], dtype=object), dtype)
    assert_exact(z, ref)


FLOAT_BINARY = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "truediv": lambda a, b: a / b, "fdiv": lambda a, b: a / b, "div_rn": lambda a, b: a / b, "maximum": np.maximum, "minimum": np.minimum,
    "floordiv": lambda a, b: np.floor(a / b), "mod": lambda a, b: np.fmod(a, b),
    "fma": lambda a, b: a * b + a, "clamp": lambda a, b: np.minimum(np.maximum(a, b), b + 1),
    "where": lambda a, b: np.where(a > b, a, b),
}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", sorted(FLOAT_BINARY) + ["lt", "le", "gt", "ge", "eq", "ne"])
def test_float_binary(target, dtype, op):
    rng = np.random.default_rng(hash((dtype, op)) % 2**32)
    x = rand(dtype, N, rng)
    y = rand(dtype, N, rng, nonzero=op in ("truediv", "fdiv", "div_rn", "floordiv", "mod"))
    if op in ("eq", "ne", "le", "ge"):
        y[::7] = x[::7]  # make some equal
    cmp = op in ("lt", "le", "gt", "ge", "eq", "ne")
    z = poison(N, "int1" if cmp else dtype)
    run(target, K.binary_kernel, (compiler.cdiv(N, BLOCK),), [x, y, z], [N], OP=op, BLOCK=BLOCK)
    a, b = x.astype(np.float64), y.astype(np.float64)
    if cmp:
        ref = {"lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b, "eq": a == b, "ne": a != b}[op]
        assert_exact(z, ref)
        return
    ref = FLOAT_BINARY[op](a, b)
    if op in ("floordiv", "mod"):
        # computed in the storage precision: compare where the quotient is not at a rounding edge
        q = a / b
        ok = np.abs(q - np.round(q)) > np.abs(q) * TOL[dtype] * 4 + 1e-2
        assert_close(z[ok], ref[ok], dtype, rtol=TOL[dtype] * 4)
        return
    if op == "div_rn":  # IEEE division: exactly the correctly rounded quotient
        assert_exact(z, ref.astype(npdt(dtype)))
        return
    assert_close(z, ref, dtype, rtol=TOL[dtype] * (2 if op in ("fma", "truediv", "fdiv") else 1))


UNARY_REF = {
    "exp": np.exp, "exp2": np.exp2, "log": np.log, "log2": np.log2, "sqrt": np.sqrt, "sqrt_rn": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x),
    "abs": np.abs, "sin": np.sin, "cos": np.cos, "floor": np.floor, "ceil": np.ceil, "neg": np.negative,
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
}


def _erf(x):
    import math

    return np.vectorize(math.erf)(x)


def _erfc(x):
    import math

    return np.vectorize(math.erfc)(x)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", sorted(UNARY_REF) + ["erf", "erfc", "erfc_method"])
def test_float_unary(target, dtype, op):
    rng = np.random.default_rng(hash((dtype, op)) % 2**32)
    positive = op in ("log", "log2", "sqrt", "sqrt_rn", "rsqrt")
    x = rand(dtype, N, rng, 0.05 if positive else -4.0, 8.0 if positive else 4.0)
    y = poison(N, dtype)
    run(target, K.unary_kernel, (compiler.cdiv(N, BLOCK),), [x, y], [N], OP=op, BLOCK=BLOCK)
    a = x.astype(np.float64)
    ref = _erf(a) if op == "erf" else _erfc(a) if op.startswith("erfc") else UNARY_REF[op](a)
    exact = op in ("abs", "floor", "ceil", "neg", "sqrt", "sqrt_rn")
    tol = TOL[dtype] if exact else TOL_TRANSC[dtype]
    assert_close(y, ref, dtype, rtol=tol, atol=tol)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("op", ["neg", "invert", "abs", "not"])
def test_int_unary(target, dtype, op):
    rng = np.random.default_rng(3)
    x = rand(dtype, N, rng)
    if np.issubdtype(npdt(dtype), np.signedinteger):
        x = np.where(x == np.iinfo(npdt(dtype)).min, 5, x).astype(npdt(dtype))
    x[::5] = 0
    out_dt = "int1" if op == "not" else dtype
    y = poison(N, out_dt)
    run(target, K.unary_kernel, (compiler.cdiv(N, BLOCK),), [x, y], [N], OP=op, BLOCK=BLOCK)
    xo = x.astype(object)
    ref = {"neg": lambda: wrap(-xo, dtype), "invert": lambda: wrap(np.array([~int(v) for v in xo], dtype=object), dtype),
           "abs": lambda: (np.abs(x) if np.issubdtype(npdt(dtype), np.signedinteger) else x),
           "not": lambda: x == 0}[op]()
    assert_exact(y, ref)


CAST_DTYPES = ["int1", "int8", "int32", "int64", "uint8", "uint32", "float16", "bfloat16", "float32", "float64"]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("src", CAST_DTYPES)
@pytest.mark.parametrize("dst", CAST_DTYPES)
def test_cast(target, src, dst):
    rng = np.random.default_rng(11)
    sd, dd = T.from_name(src), T.from_name(dst)
    if sd.is_floating() and dd.is_int() and not dd.is_bool():
        # in range of the destination, so the result is defined: truncation toward zero
        lo, hi = (0, 100) if dd.is_int_unsigned() else (-100, 100)
        x = rand(src, N, rng, lo, hi)
    elif sd.is_floating():
        x = rand(src, N, rng, -1000, 1000)
        x[::9] = 0
    else:
        x = rand(src, N, rng)
        if src != "int1":
            x[::9] = 0
    y = poison(N, dst)
    run(target, K.cast_kernel, (compiler.cdiv(N, BLOCK),), [x, y], [N], BITCAST=False, BLOCK=BLOCK)
    if dd.is_bool():
        ref = x.astype(np.float64) != 0
        assert_exact(y, ref)
    elif dd.is_floating():
        ref = x.astype(np.float64) if not sd.is_int() or sd.bits < 64 else np.array([float(v) for v in x.astype(object)])
        ref = ref.astype(npdt(dst)).astype(np.float64)  # out-of-range values become inf, as on the GPU
        assert_close(y, ref, dst, rtol=TOL[dst], atol=0)
    elif sd.is_floating():
        assert_exact(y, np.trunc(x.astype(np.float64)).astype(npdt(dst)))
    else:
        assert_exact(y, wrap(x.astype(object), dst) if src != "int1" else x.astype(npdt(dst)))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("src,dst", [("float32", "int32"), ("int32", "float32"), ("float16", "int16"),
                                     ("bfloat16", "uint16"), ("float64", "uint64"), ("uint32", "int32")])
def test_bitcast(target, src, dst):
    rng = np.random.default_rng(5)
    x = rand(src, N, rng)
    y = poison(N, dst)
    run(target, K.cast_kernel, (compiler.cdiv(N, BLOCK),), [x, y], [N], BITCAST=True, BLOCK=BLOCK)
    assert_exact(y.view(np.uint8), x.view(np.uint8))


@pytest.mark.parametrize("target", TARGETS)
def test_scalars(target):
    x = np.array([2.5], np.float32)
    y = poison(1, "float32")
    run(target, K.scalar_kernel, (1,), [x, y], [3, 0.25, True])
    assert y[0] == np.float32(2.5 * 3 + 0.25 + 1)
    run(target, K.scalar_kernel, (1,), [x, y], [2**40, 0.5, False])  # int64 scalar
    assert y[0] == np.float32(2.5 * 2**40 + 0.5)


REDUCE_DTYPES = ["float32", "float16", "bfloat16", "float64", "int32", "int8", "uint32", "int64"]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", REDUCE_DTYPES)
@pytest.mark.parametrize("op", ["sum", "max", "min", "argmax", "argmin", "custom"])
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("shape", [(32, 64), (64, 16), (8, 8)])
def test_reduce(target, dtype, op, axis, shape):
    if op == "custom" and dtype not in ("float32", "int32"):
        pytest.skip("custom combine checked on two dtypes")
    rng = np.random.default_rng(hash((dtype, op, axis, shape)) % 2**32)
    BM, BN = shape
    M, Nn = BM - 3, BN - 1  # masked rows/cols load 0 (masked-off lanes have no `other`: use full tiles below)
    M, Nn = BM, BN
    if T.from_name(dtype).is_floating():
        x = rand(dtype, BM * BN, rng, -1, 1).reshape(BM, BN)
    else:
        x = rand(dtype, BM * BN, rng, 0 if dtype.startswith("u") else -50, 50).reshape(BM, BN)
    if op in ("argmax", "argmin"):
        x.reshape(-1)[::11] = x.reshape(-1)[0]  # ties: the first index wins
    n_out = BN if axis == 0 else BM
    sum_dt = {"int8": "int32", "float16": "float32", "bfloat16": "float32"}.get(dtype, dtype)
    out_dt = "int32" if op in ("argmax", "argmin") else (sum_dt if op == "sum" else dtype)
    if op == "custom":
        sum_dt = out_dt = dtype
    y = poison(n_out, out_dt)
    run(target, K.reduce_kernel, (1,), [x, y], [M, Nn, BN], AXIS=axis, OP=op, KEEP=(axis == 1), BM=BM, BN=BN)
    xf = x.astype(np.float64) if T.from_name(dtype).is_floating() else x.astype(object)
    if op in ("sum", "custom"):
        ref = xf.sum(axis=axis)
        if T.from_name(out_dt).is_int():
            assert_exact(y, wrap(ref, out_dt))
        else:
            assert_close(y, ref.astype(np.float64), out_dt, rtol=TOL[out_dt] * 8, atol=TOL[out_dt] * 8)
        return
    if op in ("max", "min"):
        ref = x.max(axis=axis) if op == "max" else x.min(axis=axis)
        assert_exact(y, ref)
        return
    ref = np.argmax(x, axis=axis) if op == "argmax" else np.argmin(x, axis=axis)
    assert_exact(y, ref.astype(np.int32))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("op", ["sum", "max"])
def test_reduce_all(target, op):
    rng = np.random.default_rng(1)
    x = rand("float32", 32 * 32, rng, -1, 1)
    y = poison(1, "float32")
    run(target, K.reduce_all_kernel, (1,), [x, y], [], BLOCK=32, OP=op)
    ref = x.astype(np.float64).sum() if op == "sum" else x.max()
    assert_close(y, np.array([ref]), "float32", rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["float32", "int32", "int64", "float16"])
@pytest.mark.parametrize("op", ["cumsum", "cumprod", "first_nonzero"])
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("reverse", [False, True])
def test_scan(target, dtype, op, axis, reverse):
    rng = np.random.default_rng(hash((dtype, op, axis, reverse)) % 2**32)
    BM, BN = 16, 64
    if op == "cumprod":
        x = (rng.choice([-1, 1], BM * BN) * rng.choice([1, 1, 1, 2], BM * BN)).astype(npdt(dtype))
        if T.from_name(dtype).is_floating():
            x = rng.uniform(0.9, 1.1, BM * BN).astype(npdt(dtype))
    elif op == "first_nonzero":
        x = rand(dtype, BM * BN, rng, -3, 3)
        x[rng.random(BM * BN) < 0.5] = 0
    else:
        x = rand(dtype, BM * BN, rng, -20, 20)
    x = x.reshape(BM, BN)
    out_dt = "float32" if (op == "cumsum" and dtype == "float16") else dtype
    y = poison((BM, BN), out_dt)
    run(target, K.scan_kernel, (1,), [x, y], [], AXIS=axis, OP=op, REVERSE=reverse, BM=BM, BN=BN)
    xs = np.flip(x, axis) if reverse else x
    isf = T.from_name(dtype).is_floating()
    if op == "cumsum":
        ref = np.cumsum(xs.astype(np.float64) if isf else xs.astype(object), axis=axis)
    elif op == "cumprod":
        ref = np.cumprod(xs.astype(np.float64) if isf else xs.astype(object), axis=axis)
    else:
        ref = np.zeros_like(xs)
        it = np.moveaxis(xs, axis, 0)
        out = np.moveaxis(ref, axis, 0)
        acc = it[0].copy()
        out[0] = acc
        for i in range(1, it.shape[0]):
            acc = np.where(acc != 0, acc, it[i])
            out[i] = acc
    if reverse:
        ref = np.flip(ref, axis)
    if isf:
        assert_close(y, np.asarray(ref, np.float64), out_dt, rtol=TOL[out_dt] * 16, atol=TOL[out_dt] * 16)
    else:
        assert_exact(y, wrap(np.asarray(ref, dtype=object).reshape(-1), dtype).reshape(BM, BN))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("op", ["trans", "permute", "reshape", "broadcast", "expand3", "full"])
@pytest.mark.parametrize("dtype", ["float32", "int16", "float64"])
def test_shapes(target, op, dtype):
    rng = np.random.default_rng(2)
    BM, BN = 16, 32
    x = rand(dtype, BM * BN, rng, -100, 100).reshape(BM, BN)
    X = x.reshape(-1)
    if op in ("trans", "permute"):
        y = poison((BN, BM), dtype)
        ref = x.T
    elif op == "reshape":
        y = poison(BM * BN, dtype)
        ref = X
    elif op == "broadcast":
        y = poison((BM, BN), dtype)
        ref = (x[0][None, :].astype(np.float64) + np.arange(BM)[:, None]).astype(npdt(dtype))
    elif op == "expand3":
        y = poison((BM, BN), dtype)
        ref = (x.astype(np.float64) * 2).astype(npdt(dtype)) if dtype != "int16" else wrap((x.astype(object) * 2).reshape(-1), dtype).reshape(BM, BN)
    else:
        y = poison((BM, BN), dtype)
        ref = (x.astype(np.float64) + 3).astype(npdt(dtype))
    run(target, K.shape_kernel, (1,), [X, y], [], OP=op, BM=BM, BN=BN)
    assert_exact(y, ref)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("op", ["add", "max", "min", "and", "or", "xor", "xchg"])
@pytest.mark.parametrize("dtype", ["int32", "uint32", "int64", "float32", "float64"])
def test_atomics(target, op, dtype):
    if op in ("and", "or", "xor") and T.from_name(dtype).is_floating():
        pytest.skip("bitwise atomics are integer-only")
    rng = np.random.default_rng(hash((op, dtype)) % 2**32)
    n, slots = 1000, 8
    p0 = rand(dtype, slots, rng, 0 if dtype.startswith("u") else -8, 8)
    v = rand(dtype, n, rng, 0 if dtype.startswith("u") else -8, 8)
    if T.from_name(dtype).is_floating():
        v = np.round(v).astype(v.dtype)  # integral values: float adds are exact in any order
        p0 = np.round(p0).astype(p0.dtype)
    idx = rng.integers(0, slots, n).astype(np.int32)
    p = p0.copy()
    old = poison(n, dtype)
    run(target, K.atomic_kernel, (compiler.cdiv(n, 128),), [p, v, idx, old], [n], OP=op, BLOCK=128)
    ref = p0.astype(object).copy()
    fn = {"add": lambda a, b: a + b, "max": max, "min": min, "and": lambda a, b: a & b,
          "or": lambda a, b: a | b, "xor": lambda a, b: a ^ b}
    if op == "xchg":
        # the final value is one of the values written to that slot; olds + final form a permutation
        for s in range(slots):
            sel = idx == s
            if sel.any():
                vals = sorted(np.concatenate([v[sel], [p0[s]]]).tolist())
                got = sorted(np.concatenate([old[sel], [p[s]]]).tolist())
                assert vals == got
        return
    for s in range(slots):
        for val in v[idx == s]:
            ref[s] = fn[op](ref[s], val.item() if hasattr(val, "item") else val)
    if T.from_name(dtype).is_int():
        assert_exact(p, wrap(ref, dtype))
    else:
        assert_exact(p, ref.astype(npdt(dtype)))
    # every returned old value is a value the slot held at some point: check for `add` that olds are distinct
    # partial sums (a permutation of the prefix sums of some order) — at least that none is poison
    assert not (old == poison(1, dtype)[0]).all()


@pytest.mark.parametrize("target", TARGETS)
def test_atomic_cas_lock(target):
    lock = np.zeros(1, np.int32)
    count = np.zeros(1, np.int32) + 5
    run(target, K.cas_counter_kernel, (64,), [lock, count], [64])
    assert count[0] == 69 and lock[0] == 0


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("n", [0, 1, 100, 128, 300])
def test_loops(target, n):
    rng = np.random.default_rng(n)
    BLOCK = 32
    x = rand("float32", max(n, 1), rng)
    y = poison(BLOCK + 2, "float32")
    run(target, K.loop_kernel, (1,), [x, y], [n], BLOCK=BLOCK)
    acc = np.zeros(BLOCK)
    count = 0
    for start in range(0, n, BLOCK):
        chunk = np.zeros(BLOCK)
        m = min(BLOCK, n - start)
        chunk[:m] = x[start:start + m]
        acc = acc + chunk if start % (2 * BLOCK) == 0 else acc - chunk
        count += 1
    for k in range(3):
        acc = acc * 0.5 + k
    j = 1
    while j < count:
        j *= 2
    assert_close(y[:BLOCK], acc, "float32", rtol=1e-6, atol=1e-6)
    assert y[BLOCK] == j and y[BLOCK + 1] == count


@pytest.mark.parametrize("target", TARGETS)
def test_grid_3d(target):
    gx, gy, gz = 3, 2, 4
    out = np.full(gx * gy * gz * 4, -1, np.int32)
    run(target, K.grid3_kernel, (gx, gy, gz), [out], [], BLOCK=4)
    out = out.reshape(gz, gy, gx, 4)
    for z in range(gz):
        for y in range(gy):
            for x in range(gx):
                assert list(out[z, y, x]) == [x, y, z, gx * gy * gz]


def test_out_of_bounds_names_the_line():
    x = np.zeros(10, np.float32)
    with pytest.raises(compiler.KernelRuntimeError) as ei:
        K.oob_kernel[(1,)](x, 10, BLOCK=16)
    msg = str(ei.value)
    assert "kernels.py" in msg and "oob" not in msg.split(":")[0]
    with open(K.__file__) as f:
        lines = f.read().splitlines()
    line = next(i for i, s in enumerate(lines, 1) if "tl.store(X + offs, tl.load(X + offs) + 1)" in s)
    assert f":{line}:" in msg


def test_grid_callable_and_meta():
    x = np.arange(1000, dtype=np.float32)
    y = np.arange(1000, dtype=np.float32) * 2
    z = poison(1000, "float32")
    K.binary_kernel[lambda meta: (compiler.cdiv(1000, meta["BLOCK"]),)](x, y, z, 1000, OP="add", BLOCK=128)
    assert_exact(z, x + y)


def test_device_print_and_static_print(capfd):
    x = np.arange(4, dtype=np.float32)
    K.print_kernel[(1,)](x)
    out = capfd.readouterr().out
    assert "compile-time hello" in out
    assert " fp32[constexpr[4]] fp32[]" in out  # as Triton shows them
    assert "x" in out and "3" in out


@pytest.mark.gpu
def test_pointer_argument_kinds():
    """GPU pointers from DeviceArray, any __cuda_array_interface__ object, and torch tensors (if present)."""
    from compiler.runtime import DeviceArray, synchronize

    class CAI:  # what CuPy and Numba arrays offer
        def __init__(self, d):
            self._d = d
            self.__cuda_array_interface__ = d.__cuda_array_interface__

    n = 1000
    x = np.arange(n, dtype=np.float32)
    y = np.full(n, 2.0, np.float32)
    dx, dy, dz = DeviceArray.from_numpy(x), DeviceArray.from_numpy(y), DeviceArray.from_numpy(poison(n, "float32"))
    K.binary_kernel[(compiler.cdiv(n, 128),)](CAI(dx), CAI(dy), CAI(dz), n, OP="add", BLOCK=128)
    synchronize()
    assert_exact(dz.numpy(), x + y)
    torch = pytest.importorskip("torch")
    tx, ty = torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda()
    tz = torch.full_like(tx, float("nan"))
    K.binary_kernel[(compiler.cdiv(n, 128),)](tx, ty, tz, n, OP="mul", BLOCK=128)
    torch.cuda.synchronize()
    assert_exact(tz.cpu().numpy(), x * y)
    with pytest.raises(TypeError, match="GPU"):
        K.binary_kernel[(1,)](tx.cpu(), ty, tz, n, OP="mul", BLOCK=128)


@pytest.mark.gpu
def test_cuda_error_is_named():
    """An illegal address inside a kernel surfaces as a CudaError naming the CUDA error (in a child process:
    the fault poisons the CUDA context for the rest of the process)."""
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent("""
        import numpy as np, compiler
        from compiler.runtime import DeviceArray, synchronize, CudaError
        from compiler.runtime.memory import DeviceArray as DA
        from tests.ops import kernels as K
        bad = DA.from_ptr(16, (1 << 20,), np.float32)
        try:
            K.unary_kernel[(4096,)](bad, bad, 1 << 20, OP="neg", BLOCK=256)
            synchronize()
        except CudaError as e:
            print("CUDAERROR", e)
    """)
    import os

    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    assert "CUDAERROR" in p.stdout and "CUDA_ERROR_" in p.stdout, p.stdout + p.stderr


@compiler.jit
def _argmax_fast_kernel(x_ptr, y_ptr, N: tl.constexpr, LEFT: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    tl.store(y_ptr, tl.argmax(x, 0, tie_break_left=LEFT))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("left", [True, False])
def test_argmax_tie_break(target, left):
    """Triton's combine: with tie_break_left the first of the tied maxima wins; without it any of them may (Triton's
    "fast" order), but the index still holds the maximum."""
    rng = np.random.default_rng(3)
    x = rand("float32", 256, rng, -1, 0.5)
    ties = [17, 40, 200]
    x[ties] = np.float32(0.75)
    y = poison(1, "int32")
    run(target, _argmax_fast_kernel, (1,), [x, y], [], N=256, LEFT=left)
    if left:
        assert int(y[0]) == ties[0]
    else:
        assert int(y[0]) in ties
