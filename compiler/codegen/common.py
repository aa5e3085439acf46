"""Shared pieces of LLVM emission: IR dtype -> LLVM type, constants, the per-op emitter registry, `Tile`."""
from __future__ import annotations

import collections
import struct

import llvmlite.ir as ir
from llvmlite.ir import types as _lt
from llvmlite.ir._utils import NameScope

from ..ir import types as T
from ..ir.core import uses  # noqa: F401 (memory.py and reduce.py import it from here)


class BFloatType(_lt._BaseFloatType):
    """LLVM `bfloat` (llvmlite 0.50 has no such type; constants print as 0xR hex of the bf16 bits)."""

    null = "0.0"
    intrinsic_name = "bf16"

    def __str__(self) -> str:
        return "bfloat"

    def format_constant(self, value) -> str:
        return "0xR%04X" % f32_to_bf16_bits(float(value))


BFloatType._create_instance()


def f32_to_bf16_bits(x: float) -> int:
    """Round-to-nearest-even float -> bf16 bit pattern (NaN stays a quiet NaN)."""
    u = struct.unpack("<I", struct.pack("<f", x))[0]
    if (u & 0x7F800000) == 0x7F800000 and (u & 0x7FFFFF):
        return 0x7FC0 | ((u >> 16) & 0x8000)
    u += 0x7FFF + ((u >> 16) & 1)
    return (u >> 16) & 0xFFFF


I1, I8, I16, I32, I64 = (ir.IntType(n) for n in (1, 8, 16, 32, 64))
F16, BF16, F32, F64 = ir.HalfType(), BFloatType(), ir.FloatType(), ir.DoubleType()
GPTR = ir.PointerType(addrspace=1)  # global memory (opaque pointer)
SPTR = ir.PointerType(addrspace=3)  # shared memory
PTR = ir.PointerType()  # generic
VOID = ir.VoidType()

_FLOAT_LTY = {"float16": F16, "bfloat16": BF16, "float32": F32, "float64": F64}


def lty(elem) -> ir.Type:
    """LLVM register type of an IR element type (uint* share the signless iN; pointers are global ptrs)."""
    if isinstance(elem, T.pointer_type):
        return GPTR
    if elem.kind == "float":
        return I8 if elem.bits == 8 else _FLOAT_LTY[elem.name]  # fp8: the bits, converted by cvt (codegen/fp8)
    return ir.IntType(elem.bits)


def mem_lty(elem) -> ir.Type:
    """LLVM type of an element in memory: int1 is stored as a byte."""
    if not isinstance(elem, T.pointer_type) and elem.is_bool():
        return I8
    return lty(elem)


def elem_bytes(elem) -> int:
    if isinstance(elem, T.pointer_type):
        return 8
    return max(1, elem.bits // 8)


def const(elem, value) -> ir.Constant:
    """An LLVM constant of IR element type `elem` (ints wrap to the width, as the IR says)."""
    t = lty(elem)
    if elem.is_fp8():  # before the integer case: fp8 lives in i8 registers, but the value is a float to encode
        from ..interpreter.numerics import fp8_bits

        b = fp8_bits(float(value), elem)
        return ir.Constant(t, b - 256 if b >= 128 else b)
    if isinstance(t, ir.IntType):
        v = int(value)
        if t.width == 1:
            return ir.Constant(t, 1 if v else 0)
        v &= (1 << t.width) - 1
        if v >= 1 << (t.width - 1):
            v -= 1 << t.width
        return ir.Constant(t, v)
    return ir.Constant(t, float(value))


class Tile:
    """A block value during emission: its LinearLayout and one LLVM scalar per register (register order)."""

    __slots__ = ("ll", "regs")

    def __init__(self, ll, regs):
        assert len(regs) == ll.num_regs, (len(regs), ll)
        self.ll = ll
        self.regs = regs


# kind -> fn(emitter, op); filled by @emits in llvm.py, memory.py, reduce.py

def _int_const(v):
    """The Python int of an integer ir.Constant, else None."""
    if isinstance(v, ir.Constant) and isinstance(v.type, ir.IntType) and isinstance(v.constant, int):
        return v.constant
    return None


class FastNameScope(NameScope):
    """llvmlite's NameScope, the names of unnamed values (".1", ".2", ...) made in one call: llvmlite's
    deduplicate loop takes most of an instruction's construction, for the same names."""

    @classmethod
    def like(cls, scope: NameScope) -> "FastNameScope":
        """A FastNameScope holding the names `scope` has given out."""
        new = cls()
        new._useset = set(scope._useset)
        new._basenamemap = collections.defaultdict(int, scope._basenamemap)
        return new

    def register(self, name, deduplicate=False):
        if name or not deduplicate:
            return super().register(name, deduplicate)
        # NameScope.deduplicate(""): ".N" for the next N after the last one given whose name is free
        used, n = self._useset, self._basenamemap[""] + 1
        got = f".{n}"
        while got in used:
            n += 1
            got = f".{n}"
        self._basenamemap[""] = n
        used.add(got)
        return got


_Instr = ir.Instruction
_CastInstr = ir.CastInstr


def _fold_add(x, y, w):
    return x + y


def _fold_sub(x, y, w):
    return x - y


def _fold_mul(x, y, w):
    return x * y


def _fold_shl(x, y, w):
    return x << y if 0 <= y < w else None


def _fold_lshr(x, y, w):
    return (x & ((1 << w) - 1)) >> y if 0 <= y < w else None


def _fold_and(x, y, w):
    return x & y


def _fold_or(x, y, w):
    return x | y


def _fold_xor(x, y, w):
    return x ^ y


class FoldingIRBuilder(ir.IRBuilder):
    """An IRBuilder that folds integer arithmetic on constants, and the identities x + 0, x * 1, x * 0, x << 0 ...,
    as it emits them (llvmlite's builder emits `mul i32 0, 128` as written). LLVM folds the same things in its
    first passes, so the optimized code is the same; what changes is how much IR LLVM parses and walks first:
    layout conversions index shared memory with such products per element (a 128-element tl.sort: 49,505 muls).

    Binary operators and casts -- most of a kernel's instructions -- are built by `_binop` and `_cast`: the same
    llvmlite objects as its builder makes, without its chain of constructors (about 2.4 us an instruction
    there, under 1 here)."""

    @staticmethod
    def _wrap(t, v):
        v &= (1 << t.width) - 1
        return ir.Constant(t, v)

    def _new(self, cls, opname, typ, operands, name, flags):
        """An instruction of llvmlite class `cls` in the current block, its fields set as its constructor sets them
        (without the constructor chain), inserted at the builder's position."""
        blk = self._block
        i = object.__new__(cls)
        i.parent, i.type = blk, typ
        i._name = blk.scope.register(name, deduplicate=True)
        i.opname, i.operands, i.flags, i.metadata = opname, operands, list(flags), {}
        self._insert(i)
        return i

    def _binop(self, opname, a, b, name="", flags=()):
        """IRBuilder's binary operator `opname` (llvmlite's builder `_binop` and `Instruction.__init__`)."""
        t = a.type
        if b.type is not t and b.type != t:
            raise ValueError("Operands must be the same type, got (%s, %s)" % (t, b.type))
        return self._new(_Instr, opname, t, (a, b), name, flags)

    def _cast(self, opname, val, typ, name=""):
        """IRBuilder's cast `opname` (llvmlite's builder `_castop` and `CastInstr.__init__`): `val` itself where
        it has type `typ` already."""
        if val.type is typ or val.type == typ:
            return val
        return self._new(_CastInstr, opname, typ, [val], name, ())

    def _fold(self, op, a, b, name, flags, fold, ident=None, absorb=None, right_ident_only=False):
        ca, cb = _int_const(a), _int_const(b)
        if ca is not None and cb is not None:
            got = fold(ca, cb, a.type.width)
            if got is not None:
                return self._wrap(a.type, got)
        if ident is not None:
            if cb == ident:
                return a
            if ca == ident and not right_ident_only:
                return b
        if absorb is not None and (ca == absorb or cb == absorb):
            return ir.Constant(a.type, absorb)
        return self._binop(op, a, b, name, flags)

    def add(self, a, b, name="", flags=()):
        return self._fold("add", a, b, name, flags, _fold_add, ident=0)

    def sub(self, a, b, name="", flags=()):
        return self._fold("sub", a, b, name, flags, _fold_sub, ident=0, right_ident_only=True)

    def mul(self, a, b, name="", flags=()):
        return self._fold("mul", a, b, name, flags, _fold_mul, ident=1, absorb=0)

    def shl(self, a, b, name="", flags=()):
        return self._fold("shl", a, b, name, flags, _fold_shl, ident=0, right_ident_only=True)

    def lshr(self, a, b, name="", flags=()):
        return self._fold("lshr", a, b, name, flags, _fold_lshr, ident=0, right_ident_only=True)

    def and_(self, a, b, name="", flags=()):
        return self._fold("and", a, b, name, flags, _fold_and, absorb=0)

    def or_(self, a, b, name="", flags=()):
        return self._fold("or", a, b, name, flags, _fold_or, ident=0)

    def xor(self, a, b, name="", flags=()):
        return self._fold("xor", a, b, name, flags, _fold_xor, ident=0)

    def fadd(self, a, b, name="", flags=()):
        return self._binop("fadd", a, b, name, flags)

    def fsub(self, a, b, name="", flags=()):
        return self._binop("fsub", a, b, name, flags)

    def fmul(self, a, b, name="", flags=()):
        return self._binop("fmul", a, b, name, flags)

    def fdiv(self, a, b, name="", flags=()):
        return self._binop("fdiv", a, b, name, flags)

    def bitcast(self, val, typ, name=""):
        return self._cast("bitcast", val, typ, name)

    def zext(self, val, typ, name=""):
        return self._cast("zext", val, typ, name)

    def sext(self, val, typ, name=""):
        return self._cast("sext", val, typ, name)

    def trunc(self, val, typ, name=""):
        return self._cast("trunc", val, typ, name)

    def fpext(self, val, typ, name=""):
        return self._cast("fpext", val, typ, name)

    def fptrunc(self, val, typ, name=""):
        return self._cast("fptrunc", val, typ, name)

    def sitofp(self, val, typ, name=""):
        return self._cast("sitofp", val, typ, name)

    def uitofp(self, val, typ, name=""):
        return self._cast("uitofp", val, typ, name)


EMIT: dict = {}


def emits(*kinds):
    """Register an emitter for op kinds (a table, not an if-chain)."""
    def deco(fn):
        for k in kinds:
            EMIT[k] = fn
        return fn
    return deco


class CodegenError(Exception):
    """Fallback error when compiler.errors.CompilationError is not available."""

    def __init__(self, message, loc=None):
        super().__init__(f"{loc}: {message}" if loc is not None else message)
        self.loc = loc


def error(message: str, loc):
    """The error to raise for an unsupported construct at `loc` (CompilationError once the frontend has it)."""
    try:
        from ..errors import CompilationError  # type: ignore
    except Exception:
        return CodegenError(message, loc)
    try:
        return CompilationError(message, loc)
    except Exception:
        return CodegenError(message, loc)


def shuffle(e, kind, x, arg):
    """shfl.sync.<kind> of LLVM scalar x; kind: bfly, up, down, idx; arg an int or i32 value."""
    c = 0 if kind == "up" else 0x1F
    fn = e.intrinsic(f"llvm.nvvm.shfl.sync.{kind}.i32", I32, [I32, I32, I32, I32])
    argv = arg if not isinstance(arg, int) else e.i32(arg)

    def one(w):
        return e.b.call(fn, [ir.Constant(I32, -1), w, argv, e.i32(c)])
    t = x.type
    if isinstance(t, ir.PointerType):
        return e.b.inttoptr(shuffle(e, kind, e.b.ptrtoint(x, I64), arg), t)
    bits = t.width if isinstance(t, ir.IntType) else {F16: 16, BF16: 16, F32: 32, F64: 64}[t]
    xi = x if isinstance(t, ir.IntType) else e.b.bitcast(x, ir.IntType(bits))
    if bits == 64:
        lo = one(e.b.trunc(xi, I32))
        hi = one(e.b.trunc(e.b.lshr(xi, ir.Constant(I64, 32)), I32))
        r = e.b.or_(e.b.zext(lo, I64), e.b.shl(e.b.zext(hi, I64), ir.Constant(I64, 32)))
    elif bits == 32:
        r = one(xi)
    else:
        r = e.b.trunc(one(e.b.zext(xi, I32)), ir.IntType(bits))
    return r if isinstance(t, ir.IntType) else e.b.bitcast(r, t)
