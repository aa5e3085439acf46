"""Float -> int casts at the edges: the contract (docs/CONTRACTS.md) is truncation toward zero, saturation to the
destination's range (infinities too) and NaN -> 0, for every float source and integer destination, in the
interpreter and on the GPU (the code generator: one `cvt.rzi`, codegen/llvm.py `_fp_to_int`)."""
import math

import numpy as np
import pytest

import compiler
import compiler.language as tl

from . import kernels as K
from .test_ops import TARGETS, assert_exact, npdt, poison, run

SRCS = ["float16", "bfloat16", "float32", "float64"]
DSTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
N = 300
BLOCK = 128

EDGES = [math.nan, math.inf, -math.inf, 0.0, -0.0, 0.5, -0.5, 0.99, -0.99, 1.5, -1.5, 126.9, 127.0, 127.5, 128.0,
         -128.0, -128.9, -129.0, 254.9, 255.0, 255.5, 256.0, 32767.0, 32767.5, 32768.0, -32768.0, -32769.0,
         65535.0, 65536.0, 2.0 ** 31 - 1, 2.0 ** 31, -2.0 ** 31, -2.0 ** 31 - 1, 2.0 ** 32 - 1, 2.0 ** 32,
         2.0 ** 63, -2.0 ** 63, 2.0 ** 64, -2.0 ** 64, 1e30, -1e30, -1e-30, 1e-30]


def _inputs(src):
    rng = np.random.default_rng(17)
    d = npdt(src)
    with np.errstate(over="ignore"):  # edges past float16's range become infinities: still edges
        edges = np.array(EDGES, dtype=np.float64).astype(d)
        wide = (rng.standard_normal(N - len(EDGES)) * 10.0 ** rng.integers(0, 12, N - len(EDGES))).astype(d)
    return np.concatenate([edges, wide])


def _reference(x, dst):
    info = np.iinfo(npdt(dst))
    out = []
    for v in x.astype(np.float64):
        if math.isnan(v):
            out.append(0)
        elif math.isinf(v):
            out.append(info.max if v > 0 else info.min)
        else:
            out.append(min(max(math.trunc(v), info.min), info.max))
    return np.array(out, dtype=object).astype(npdt(dst))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("src", SRCS)
@pytest.mark.parametrize("dst", DSTS)
def test_float_to_int_saturates(target, src, dst):
    x = _inputs(src)
    y = poison(N, dst)
    run(target, K.cast_kernel, (compiler.cdiv(N, BLOCK),), [x, y], [N], BITCAST=False, BLOCK=BLOCK)
    assert_exact(y, _reference(x, dst))


def test_cast_is_one_conversion():
    """A cast is one cvt.rzi, with no clamp of the float first (PTX clamps float-to-integer conversions to the
    destination range itself) and a NaN select only where a bare cvt.rzi does not give 0 (64-bit results, and any
    from float64: test_bare_cvt_rzi_nan below)."""
    x = _inputs("float32")
    y = poison(N, "int8")
    ptx = K.cast_kernel.warmup(x, y, N, grid=(3,), target="sm_90a", BITCAST=False, BLOCK=BLOCK).asm["ptx"]
    assert "cvt.rzi.s8.f32" in ptx and "setp.nan" not in ptx
    assert "max.f32" not in ptx and "min.f32" not in ptx
    y64 = poison(N, "int64")
    ptx = K.cast_kernel.warmup(x, y64, N, grid=(3,), target="sm_90a", BITCAST=False, BLOCK=BLOCK).asm["ptx"]
    assert "cvt.rzi.s64.f32" in ptx and "setp.nan.f32" in ptx
    xd, y32 = _inputs("float64"), poison(N, "int32")
    ptx = K.cast_kernel.warmup(xd, y32, N, grid=(3,), target="sm_90a", BITCAST=False, BLOCK=BLOCK).asm["ptx"]
    assert "cvt.rzi.s32.f64" in ptx and "setp.nan.f64" in ptx
    ptx = K.cast_kernel.warmup(xd, y, N, grid=(3,), target="sm_90a", BITCAST=False, BLOCK=BLOCK).asm["ptx"]
    assert "cvt.rzi.s8.f64" in ptx and "setp.nan.f64" in ptx


@compiler.jit
def bare_cvt_kernel(X, Y, N, ASM: tl.constexpr, CONS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m)
    y = tl.inline_asm_elementwise(ASM, CONS, [x], dtype=Y.dtype.element_ty, is_pure=True, pack=1)
    tl.store(Y + offs, y, mask=m)


@pytest.mark.parametrize("target", [t for t in TARGETS if getattr(t, "values", (t,))[0] != "interp"])
@pytest.mark.parametrize("src", ["float32", "float64"])
@pytest.mark.parametrize("cvt,dst", [("s8", "int32"), ("u8", "uint32"), ("s16", "int32"), ("u16", "uint32"),
                                     ("s32", "int32"), ("u32", "uint32"), ("s64", "int64"), ("u64", "uint64")])
def test_bare_cvt_rzi_nan(target, src, cvt, dst):
    """The hardware facts the casts rest on (measured on an H100, 2026-12-06): a bare `cvt.rzi` clamps to its width
    (PTX says so); NaN gives 0 from float32 up to 32 bits, and the bit pattern 100...0 of the width from float64 at
    every width (-128 for s8, 128 for u8, 2^31 for u32) and at 64 bits from either: hence the select for 64-bit
    results and every result from float64; 8/16-bit results sign- or zero-extended in the 32-bit register."""
    x = _inputs(src)
    y = poison(N, dst)
    wide = dst.endswith("64")
    cons = ("=l," if wide else "=r,") + ("d" if src == "float64" else "f")
    run(target, bare_cvt_kernel, (compiler.cdiv(N, BLOCK),), [x, y], [N],
        ASM=f"cvt.rzi.{cvt}.{'f64' if src == 'float64' else 'f32'} $0, $1;", CONS=cons, BLOCK=BLOCK)
    ref = _reference(x, ("int" if cvt[0] == "s" else "uint") + cvt[1:]).astype(npdt(dst))
    if wide:
        ref[np.isnan(x)] = np.array(1 << 63, dtype=np.uint64).view(npdt(dst))
    elif src == "float64":
        bits = int(cvt[1:])
        ref[np.isnan(x)] = -(1 << (bits - 1)) if cvt[0] == "s" else 1 << (bits - 1)
    assert_exact(y, ref)
