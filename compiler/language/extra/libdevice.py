"""libdevice math: `from compiler.language.extra import libdevice` (Triton's `triton.language.extra.libdevice`).

Each function calls NVIDIA's libdevice (libdevice.10.bc, linked into the kernel) elementwise, with Triton's
names and dispatch: `tanh(x)` calls `__nv_tanhf` on float32 and `__nv_tanh` on float64; `pow(x, 2)` with an int32
exponent calls `__nv_powif`. Arguments of different dtypes that the function does not take as they are get
promoted to their common dtype. Difference from Triton: float16/bfloat16 arguments are computed in float32 and
the result rounded back (Triton rejects them). The interpreter's meaning of each function is in
compiler/interpreter/libdevice.py.
"""
from __future__ import annotations

import builtins as _py

from ..core import builtin as _builtin

F32, F64, I32, I64, U32, U64 = "float32", "float64", "int32", "int64", "uint32", "uint64"

# name -> {argument dtype names: (libdevice symbol, result dtype name)}
TABLE: dict = {}


def _def(name, table):
    TABLE[name] = table

    def fn(*args):
        from ...frontend import semantic

        return semantic.extern_elementwise(name, args, table)

    fn.__name__ = name
    fn.__qualname__ = name
    sigs = ", ".join(f"({', '.join(k)}) -> {r} [{s}]" for k, (s, r) in table.items())
    fn.__doc__ = f"libdevice {name}: {sigs}."
    globals()[name] = _builtin(fn)


def _float(name, nargs=1, f32=None, f64=None, ret=None):
    """A function of float32 or float64 operands (all of one dtype) returning that dtype (or `ret`)."""
    t = {}
    if f32 is not False:
        t[(F32,) * nargs] = (f32 or f"__nv_{name}f", ret or F32)
    if f64 is not False:
        t[(F64,) * nargs] = (f64 or f"__nv_{name}", ret or F64)
    _def(name, t)


for _n in ("tanh sinh cosh asinh acosh atanh sin cos tan asin acos atan exp exp2 exp10 expm1 log log2 log10 log1p "
           "sqrt rsqrt cbrt rcbrt erf erfc erfinv erfcinv erfcx normcdf normcdfinv lgamma tgamma floor ceil trunc "
           "round rint nearbyint sinpi cospi logb").split():
    _float(_n)
for _n in ("atan2", "hypot", "rhypot", "fmod", "remainder", "copysign", "fdim", "nextafter"):
    _float(_n, 2)
_float("fma", 3)
for _n in ("norm3d", "rnorm3d"):
    _float(_n, 3)
for _n in ("norm4d", "rnorm4d"):
    _float(_n, 4)
_float("isnan", f32="__nv_isnanf", f64="__nv_isnand", ret=I32)
_float("isinf", f32="__nv_isinff", f64="__nv_isinfd", ret=I32)
_float("signbit", f32="__nv_signbitf", f64="__nv_signbitd", ret=I32)
_float("finitef", f32="__nv_finitef", f64=False, ret=I32)
_float("isfinited", f32=False, f64="__nv_isfinited", ret=I32)
_float("ilogb", ret=I32)
_def("llrint", {(F32,): ("__nv_llrintf", I64), (F64,): ("__nv_llrint", I64)})
_def("llround", {(F32,): ("__nv_llroundf", I64), (F64,): ("__nv_llround", I64)})
_float("saturatef", f32="__nv_saturatef", f64=False)
_def("pow", {(F32, I32): ("__nv_powif", F32), (F64, I32): ("__nv_powi", F64),
             (F32, F32): ("__nv_powf", F32), (F64, F64): ("__nv_pow", F64)})
_def("powi", {(F32, I32): ("__nv_powif", F32), (F64, I32): ("__nv_powi", F64)})
_def("ldexp", {(F32, I32): ("__nv_ldexpf", F32), (F64, I32): ("__nv_ldexp", F64)})
_def("scalbn", {(F32, I32): ("__nv_scalbnf", F32), (F64, I32): ("__nv_scalbn", F64)})
_def("abs", {(I32,): ("__nv_abs", I32), (I64,): ("__nv_llabs", I64), (F32,): ("__nv_fabsf", F32),
             (F64,): ("__nv_fabs", F64)})
_def("fabs", {(F32,): ("__nv_fabsf", F32), (F64,): ("__nv_fabs", F64)})
_def("min", {(I32, I32): ("__nv_min", I32), (U32, U32): ("__nv_umin", U32), (I64, I64): ("__nv_llmin", I64),
             (U64, U64): ("__nv_ullmin", U64), (F32, F32): ("__nv_fminf", F32), (F64, F64): ("__nv_fmin", F64)})
_def("max", {(I32, I32): ("__nv_max", I32), (U32, U32): ("__nv_umax", U32), (I64, I64): ("__nv_llmax", I64),
             (U64, U64): ("__nv_ullmax", U64), (F32, F32): ("__nv_fmaxf", F32), (F64, F64): ("__nv_fmax", F64)})
_float("fmin", 2)
_float("fmax", 2)
# fast approximations (float32 only)
for _n in ("sinf", "cosf", "tanf", "log2f", "logf", "log10f", "expf", "exp10f", "tanhf"):
    _float(f"fast_{_n}", f32=f"__nv_fast_{_n}", f64=False)
_def("fast_powf", {(F32, F32): ("__nv_fast_powf", F32)})
_def("fast_dividef", {(F32, F32): ("__nv_fast_fdividef", F32)})
# correctly rounded operations in a rounding mode
for _m in ("rn", "rz", "rd", "ru"):
    _def(f"div_{_m}", {(F32, F32): (f"__nv_fdiv_{_m}", F32), (F64, F64): (f"__nv_ddiv_{_m}", F64)})
    _def(f"add_{_m}", {(F32, F32): (f"__nv_fadd_{_m}", F32), (F64, F64): (f"__nv_dadd_{_m}", F64)})
    _def(f"sub_{_m}", {(F32, F32): (f"__nv_fsub_{_m}", F32), (F64, F64): (f"__nv_dsub_{_m}", F64)})
    _def(f"mul_{_m}", {(F32, F32): (f"__nv_fmul_{_m}", F32), (F64, F64): (f"__nv_dmul_{_m}", F64)})
    _def(f"rcp_{_m}", {(F32,): (f"__nv_frcp_{_m}", F32), (F64,): (f"__nv_drcp_{_m}", F64)})
    _def(f"sqrt_{_m}", {(F32,): (f"__nv_fsqrt_{_m}", F32), (F64,): (f"__nv_dsqrt_{_m}", F64)})
    _def(f"fma_{_m}", {(F32, F32, F32): (f"__nv_fmaf_{_m}", F32), (F64, F64, F64): (f"__nv_fma_{_m}", F64)})
    # conversions (Triton's result dtypes: the unsigned ones are declared int32/int64 there too)
    _def(f"double2float_{_m}", {(F64,): (f"__nv_double2float_{_m}", F32)})
    _def(f"double2int_{_m}", {(F64,): (f"__nv_double2int_{_m}", I32)})
    _def(f"double2uint_{_m}", {(F64,): (f"__nv_double2uint_{_m}", I32)})
    _def(f"float2int_{_m}", {(F32,): (f"__nv_float2int_{_m}", I32)})
    _def(f"float2uint_{_m}", {(F32,): (f"__nv_float2uint_{_m}", I32)})
    _def(f"int2float_{_m}", {(I32,): (f"__nv_int2float_{_m}", F32)})
    _def(f"uint2float_{_m}", {(U32,): (f"__nv_uint2float_{_m}", F32)})
    _def(f"float2ll_{_m}", {(F32,): (f"__nv_float2ll_{_m}", I64)})
    _def(f"float2ull_{_m}", {(F32,): (f"__nv_float2ull_{_m}", I64)})
    _def(f"double2ll_{_m}", {(F64,): (f"__nv_double2ll_{_m}", I64)})
    _def(f"double2ull_{_m}", {(F64,): (f"__nv_double2ull_{_m}", I64)})
    _def(f"ll2float_{_m}", {(I64,): (f"__nv_ll2float_{_m}", F32)})
    _def(f"ull2float_{_m}", {(U64,): (f"__nv_ull2float_{_m}", F32)})
    _def(f"ll2double_{_m}", {(I64,): (f"__nv_ll2double_{_m}", F64)})
    _def(f"ull2double_{_m}", {(U64,): (f"__nv_ull2double_{_m}", F64)})
_def("rsqrt_rn", {(F32,): ("__nv_frsqrt_rn", F32)})
_def("int2double_rn", {(I32,): ("__nv_int2double_rn", F64)})
_def("uint2double_rn", {(U32,): ("__nv_uint2double_rn", F64)})
_def("float_as_int", {(F32,): ("__nv_float_as_int", I32)})
_def("int_as_float", {(I32,): ("__nv_int_as_float", F32)})
_def("float_as_uint", {(F32,): ("__nv_float_as_uint", I32)})
_def("uint_as_float", {(U32,): ("__nv_uint_as_float", F32)})
_def("double_as_longlong", {(F64,): ("__nv_double_as_longlong", I64)})
_def("longlong_as_double", {(I64,): ("__nv_longlong_as_double", F64)})
_def("double2hiint", {(F64,): ("__nv_double2hiint", I32)})
_def("double2loint", {(F64,): ("__nv_double2loint", I32)})
_def("hiloint2double", {(I32, I32): ("__nv_hiloint2double", F64)})
# integer functions
_def("clz", {(I32,): ("__nv_clz", I32), (I64,): ("__nv_clzll", I32)})
_def("popc", {(I32,): ("__nv_popc", I32), (I64,): ("__nv_popcll", I32)})
_def("ffs", {(I32,): ("__nv_ffs", I32), (I64,): ("__nv_ffsll", I32)})
_def("brev", {(I32,): ("__nv_brev", I32), (I64,): ("__nv_brevll", I64)})
_def("mulhi", {(I32, I32): ("__nv_mulhi", I32), (U32, U32): ("__nv_umulhi", U32),
               (I64, I64): ("__nv_mul64hi", I64), (U64, U64): ("__nv_umul64hi", U64)})

_def("byte_perm", {(I32, I32, I32): ("__nv_byte_perm", I32)})
_def("hadd", {(I32, I32): ("__nv_hadd", I32), (U32, U32): ("__nv_uhadd", U32)})
_def("rhadd", {(I32, I32): ("__nv_rhadd", I32), (U32, U32): ("__nv_urhadd", U32)})
_def("mul24", {(I32, I32): ("__nv_mul24", I32), (U32, U32): ("__nv_umul24", U32)})
_def("sad", {(I32, I32, U32): ("__nv_sad", I32), (U32, U32, U32): ("__nv_usad", U32)})
_float("cyl_bessel_i0")
_float("cyl_bessel_i1")
_float("j0")
_float("j1")
_def("jn", {(I32, F32): ("__nv_jnf", F32), (I32, F64): ("__nv_jn", F64)})
_float("y0")
_float("y1")
_def("yn", {(I32, F32): ("__nv_ynf", F32), (I32, F64): ("__nv_yn", F64)})

__all__ = _py.sorted(TABLE)
del _n, _m
