"""Typing rules of the tile language: promotion, broadcasting, and building the IR for each operation.

Every function takes `tensor`s and Python values (constexprs) and returns a `tensor`. Mistakes raise
SemanticError; the frontend attaches the source location. Rules follow Triton's where Triton defines them:
- float op float -> the wider; fp16 op bf16 -> fp32; int op float -> the float; ints of one signedness -> the
  wider; mixed signedness -> unsigned if its width >= the signed one, else signed.
- A Python number next to a tensor is "weak": it takes the tensor's dtype (an int next to a float tensor takes the
  float dtype; a float next to an int tensor makes the op fp32).
- `/` on two ints gives fp32; `//` and `%` on ints round toward zero (C), as on the GPU.
"""
from __future__ import annotations

import math

from ..ir import optable, types as T
from ..ir.types import TensorType
from .context import SemanticError, current
from ..language.values import _unwrap, constexpr


def _b():
    return current().builder


# ----------------------------------------------------------------------------------------------------
# the value type (tl.tensor): its operators and methods are the functions below
# ----------------------------------------------------------------------------------------------------
class tensor:
    """A value inside a kernel: a block (shape non-empty) or a scalar, of one element dtype or pointer type."""

    __slots__ = ("handle", "type")

    def __init__(self, handle, type):
        self.handle = handle
        self.type = type

    @property
    def dtype(self):
        return self.type.element

    @property
    def shape(self):
        return [constexpr(s) for s in self.type.shape]

    @property
    def numel(self):
        return constexpr(self.type.numel)

    def __repr__(self):
        return f"tensor({self.type})"

    def __str__(self):  # what tl.static_print shows, in Triton's words: int32[constexpr[128]], fp16[]
        el = self.type.element
        name = str(getattr(el, "name", el))
        name = "bf16" if name == "bfloat16" else name.replace("float", "fp", 1) if name.startswith("float") else name
        return f"{name}[{', '.join(f'constexpr[{s}]' for s in self.type.shape)}]"

    # arithmetic
    def __add__(self, o):
        return add(self, o)

    def __radd__(self, o):
        return add(o, self)

    def __sub__(self, o):
        return sub(self, o)

    def __rsub__(self, o):
        return sub(o, self)

    def __mul__(self, o):
        return mul(self, o)

    def __rmul__(self, o):
        return mul(o, self)

    def __truediv__(self, o):
        return truediv(self, o)

    def __rtruediv__(self, o):
        return truediv(o, self)

    def __floordiv__(self, o):
        return floordiv(self, o)

    def __rfloordiv__(self, o):
        return floordiv(o, self)

    def __mod__(self, o):
        return mod(self, o)

    def __rmod__(self, o):
        return mod(o, self)

    def __and__(self, o):
        return and_(self, o)

    def __rand__(self, o):
        return and_(o, self)

    def __or__(self, o):
        return or_(self, o)

    def __ror__(self, o):
        return or_(o, self)

    def __xor__(self, o):
        return xor_(self, o)

    def __rxor__(self, o):
        return xor_(o, self)

    def __lshift__(self, o):
        return shl(self, o)

    def __rlshift__(self, o):
        return shl(o, self)

    def __rshift__(self, o):
        return shr(self, o)

    def __rrshift__(self, o):
        return shr(o, self)

    def __neg__(self):
        return neg(self)

    def __pos__(self):
        return self

    def __invert__(self):
        return invert(self)

    # comparisons
    def __lt__(self, o):
        return compare("lt", self, o)

    def __le__(self, o):
        return compare("le", self, o)

    def __gt__(self, o):
        return compare("gt", self, o)

    def __ge__(self, o):
        return compare("ge", self, o)

    def __eq__(self, o):
        return compare("eq", self, o)

    def __ne__(self, o):
        return compare("ne", self, o)

    __hash__ = object.__hash__

    def __bool__(self):
        raise SemanticError("a tensor has no Python truth value here; use it in `if` directly (runtime "
                            "branch) or compare constexprs")

    def __getitem__(self, idx):
        return getitem(self, idx)

    # methods
    def to(self, dtype, fp_downcast_rounding=None, bitcast=False):
        return cast(self, _unwrap(dtype), bitcast=_unwrap(bitcast),
                    fp_downcast_rounding=_unwrap(fp_downcast_rounding))

    @property
    def T(self):
        return trans(self)

    # The other methods (x.exp(), x.sum(0), x.cast(dt), ...) are the tl functions of the same name, installed
    # from TENSOR_METHODS at the end of this module: one definition serves both forms.

    def logical_and(self, other):
        """Elementwise `and` of truth values (non-bool operands compare != 0)."""
        return and_(_truth(self), _truth(other))

    def logical_or(self, other):
        """Elementwise `or` of truth values (non-bool operands compare != 0)."""
        return or_(_truth(self), _truth(other))


def _truth(x):
    x = to_tensor(x)
    return x if x.dtype.is_bool() else compare("ne", x, 0)


class block_ptr:
    """A block pointer (`tl.make_block_ptr`): a `block_shape` window at `offsets` into a strided `shape` array at
    `base`. Loads and stores through it address the window; `boundary_check` masks the dims it names to the
    array. A compile-time object whose runtime parts (base, shape, strides, offsets: scalar tensors) are what
    loops carry; `order` is accepted (a layout hint: the compiler picks layouts itself)."""

    def __init__(self, base, shape, strides, offsets, block_shape, order):
        self.base, self.shape, self.strides, self.offsets = base, list(shape), list(strides), list(offsets)
        self.block_shape, self.order = tuple(block_shape), tuple(order)

    @property
    def dtype(self):
        return T.pointer_type(self.base.dtype.element_ty)

    @property
    def type(self):
        return self

    element_ty = property(lambda self: self.base.dtype.element_ty)

    def parts(self):
        return [self.base] + self.shape + self.strides + self.offsets

    def with_parts(self, parts):
        r = len(self.block_shape)
        return block_ptr(parts[0], parts[1:1 + r], parts[1 + r:1 + 2 * r], parts[1 + 2 * r:], self.block_shape,
                         self.order)

    def same_structure(self, other):
        return (isinstance(other, block_ptr) and other.block_shape == self.block_shape
                and other.base.dtype == self.base.dtype)

    def __repr__(self):
        return f"block_ptr<{self.base.dtype.element_ty!r}, {list(self.block_shape)}>"


# ----------------------------------------------------------------------------------------------------
# conversions
# ----------------------------------------------------------------------------------------------------
_F32_MIN_NORMAL, _F32_MAX = 2.0 ** -126, (2 - 2.0 ** -23) * 2.0 ** 127


def scalar_dtype_of_python(v):
    """The type a Python number takes as a tensor, as in Triton: an int is int32 if it fits, else uint32, else
    int64, else uint64 (else an error); a float is float32 when its magnitude is 0, inf, NaN or a normal float32,
    else float64 (1e-300, 1e300)."""
    d = getattr(v, "scalar_dtype", None)  # an assigned number that arithmetic gave a type (fold_numbers)
    if d is not None:
        return d
    v = _unwrap(v)  # a number assigned in the kernel (`add = 10.0`) counts as its value
    if isinstance(v, bool):
        return T.int1
    if isinstance(v, int):
        if -(2**31) <= v < 2**31:
            return T.int32
        if 2**31 <= v < 2**32:
            return T.uint32
        if -(2**63) <= v < 2**63:
            return T.int64
        if 2**63 <= v < 2**64:
            return T.uint64
        raise SemanticError(f"nonrepresentable integer {v}: an integer constant is int32, uint32, int64 or uint64 "
                            "(from -2**63 to 2**64 - 1)")
    if isinstance(v, float):
        m = abs(v)
        if m == 0.0 or m == float("inf") or v != v or _F32_MIN_NORMAL <= m <= _F32_MAX:
            return T.float32
        return T.float64
    raise SemanticError(f"cannot use {type(v).__name__} value {v!r} as a tensor")


def const(value, dtype, shape=()) -> tensor:
    if dtype.is_floating():
        value = float(value)
    elif dtype.is_bool():
        value = bool(value)
    else:
        value = _wrap_int(int(value), dtype)
    return tensor(_b().const(value, TensorType(dtype, tuple(shape))), TensorType(dtype, tuple(shape)))


def to_tensor(v, dtype=None) -> tensor:
    natural = None if isinstance(_unwrap(v), tensor) else scalar_dtype_of_python(v)  # refuses integers no 64-bit
    v = _unwrap(v)                                                                  # type holds, whatever `dtype` is
    if isinstance(v, tensor):
        return v
    return const(v, natural if dtype is None else dtype)


def is_number(v) -> bool:
    v = _unwrap(v)
    return isinstance(v, (bool, int, float))


# ----------------------------------------------------------------------------------------------------
# promotion
# ----------------------------------------------------------------------------------------------------
def promote_dtypes(a, b, div_or_mod=False):
    """The computation dtype of a binary op on element types a and b, by Triton's rules (computation_type_impl):
    float64, then float32, win; float16 next (over bfloat16, fp8 and integers), bfloat16 only beside bfloat16
    (float32 beside anything else but float16); `/` and `%` on float16 or bfloat16 compute in float32 (PTX has no
    16-bit division); two fp8 types meet in float16."""
    if a.is_ptr() or b.is_ptr():
        raise SemanticError("pointer operands here")
    if a.is_floating() or b.is_floating():
        if a.is_fp64() or b.is_fp64():
            return T.float64
        if a.is_fp32() or b.is_fp32():
            return T.float32
        if a.is_fp16() or b.is_fp16():
            return T.float32 if div_or_mod else T.float16
        if a.is_bf16() and b.is_bf16():
            return T.float32 if div_or_mod else T.bfloat16
        if a.is_bf16() or b.is_bf16():
            return T.float32
        if a.is_fp8() and b.is_fp8():
            return a if a == b else T.float16
        return a if a.is_floating() else b  # an fp8 type with an integer: computed in it (float32 inside)
    if a == b:
        return a
    # both ints (int1 counts as the narrowest)
    if a.is_bool():
        return b
    if b.is_bool():
        return a
    if a.is_int_signed() == b.is_int_signed():
        return a if a.bits >= b.bits else b
    s, u = (a, b) if a.is_int_signed() else (b, a)
    return u if u.bits >= s.bits else s


def weak_dtype(tensor_dtype, py):
    """dtype a Python number takes next to a tensor of `tensor_dtype`."""
    if isinstance(py, bool):
        return tensor_dtype if not tensor_dtype.is_ptr() else T.int1
    if isinstance(py, int):
        natural = scalar_dtype_of_python(py)
        if tensor_dtype.is_ptr():
            return natural
        if tensor_dtype.is_bool():  # an integer is of a higher kind than bool: its own type wins
            return natural
        if tensor_dtype.is_int():
            lo, hi = _int_range(tensor_dtype)
            if lo <= py <= hi:
                return tensor_dtype
            # As Triton: the number takes the tensor's type, so one outside it is refused, not wrapped.
            if py < 0 and tensor_dtype.is_int_unsigned():
                raise SemanticError(f"cannot combine an unsigned {tensor_dtype!r} tensor with the negative scalar "
                                    f"{py}; cast one of them explicitly")
            raise SemanticError(f"scalar {py} is out of range for type {tensor_dtype!r}; cast the tensor to a "
                                "wider type first")
        return tensor_dtype
    if isinstance(py, float):
        return tensor_dtype if tensor_dtype.is_floating() else scalar_dtype_of_python(py)
    raise SemanticError(f"cannot combine {type(py).__name__} with a tensor")


def _wrap_int(v: int, d):
    """v in integer type d: two's complement wrap (bool: 0 or 1)."""
    if d.is_bool():
        return v & 1
    v &= (1 << d.bits) - 1
    if d.is_int_signed() and v >= 1 << (d.bits - 1):
        v -= 1 << d.bits
    return v


_FOLDED_OPS = {"add": "add", "sub": "sub", "mul": "mul", "and_": "and", "or_": "or", "xor_": "xor", "shl": "shl",
               "shr": "shr"}


def fold_numbers(kind, a, ta, b, tb):
    """(value, dtype) of `a <kind> b` where a and b are compile-time numbers and ta / tb the scalar tensor types of
    those assigned in the kernel (None for a literal, which is weakly typed beside the other): what Triton computes
    at run time on its scalar tensors, by the interpreter's element arithmetic (compiler/interpreter/numerics.py:
    integer results wrap in their type, // and % truncate toward zero, a zero divisor gives what the GPU gives,
    float32 rounds to float32, `/` on integers divides in float32). None where the emitted operation must report
    an error (bitwise operators on floats, // or % of mixed signedness). `kind` is a semantic function's name
    (add, sub, mul, truediv, floordiv, mod, and_, or_, xor_, shl, shr)."""
    import numpy as np

    from ..interpreter import numerics as N

    if ta is None:
        ta = weak_dtype(tb, a)
    if tb is None:
        tb = weak_dtype(ta, b)
    div = kind in ("truediv", "floordiv", "mod")
    if kind in ("and_", "or_", "xor_", "shl", "shr") and (ta.is_floating() or tb.is_floating()):
        return None
    if div and {ta.kind, tb.kind} == {"int", "uint"}:
        return None
    d = promote_dtypes(ta, tb, div_or_mod=div)
    if kind == "truediv" and not d.is_floating():
        d = T.float32
    fl = d.is_floating()
    op = {"truediv": "fdiv", "floordiv": "fdiv" if fl else "idiv", "mod": "frem" if fl else "irem"}.get(kind) or \
        _FOLDED_OPS[kind]
    nd = N.np_dtype(d)
    x, y = (np.array(float(v) if fl else _wrap_int(int(v), d), dtype=nd) for v in (a, b))
    with np.errstate(all="ignore"):
        r = N.binary_fn(op, d)(x, y)
        if kind == "floordiv" and fl:
            r = np.floor(r)
    r = np.asarray(r).item()
    return (bool(r) if d.is_bool() else r), d


def fold_unary(kind, a, ta):
    """(value, dtype) of -a or ~a (kind "neg" or "invert") for an assigned number `a` of scalar type ta, by the
    interpreter's element arithmetic as fold_numbers does (integers wrap in their type), or None (16-bit floats
    and ~ of a float stay emitted operations)."""
    import numpy as np

    from ..interpreter import numerics as N

    if ta.is_floating() and (kind != "neg" or ta.bits < 32):
        return None
    x = np.array(float(a) if ta.is_floating() else _wrap_int(int(a), ta), dtype=N.np_dtype(ta))
    with np.errstate(all="ignore"):
        r = np.asarray(N.unary_fn("neg" if kind == "neg" else "not", ta)(x)).item()
    return (bool(r) if ta.is_bool() else r), ta


def _int_range(d):
    if d.is_bool():
        return 0, 1
    if d.is_int_signed():
        return -(1 << (d.bits - 1)), (1 << (d.bits - 1)) - 1
    return 0, (1 << d.bits) - 1


def broadcast_shapes(sa, sb):
    sa, sb = tuple(sa), tuple(sb)
    n = max(len(sa), len(sb))
    pa = (1,) * (n - len(sa)) + sa
    pb = (1,) * (n - len(sb)) + sb
    out = []
    for x, y in zip(pa, pb):
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            raise SemanticError(f"incompatible shapes for broadcasting: {list(sa)} and {list(sb)}")
    return tuple(out)


def broadcast_to(x: tensor, shape) -> tensor:
    shape = tuple(shape)
    if x.type.shape == shape:
        return x
    b = _b()
    if not x.type.shape:
        return tensor(b.splat(x.handle, shape), x.type.with_shape(shape))
    h = x.handle
    xs = x.type.shape
    if len(xs) > len(shape):
        raise SemanticError(f"cannot broadcast shape {list(xs)} to {list(shape)}")
    for _ in range(len(shape) - len(xs)):
        h = b.expand_dims(h, 0)
    cur = (1,) * (len(shape) - len(xs)) + xs
    for c, s in zip(cur, shape):
        if c != s and c != 1:
            raise SemanticError(f"cannot broadcast shape {list(xs)} to {list(shape)}")
    h = b.broadcast(h, shape)
    return tensor(h, x.type.with_shape(shape))


def binary_operands(a, b, arith_dtype_fn=None, allow_ptr=False):
    """Turn a pair of tensor/number operands into two tensors of one shape and dtype (the computation dtype)."""
    a, b = _unwrap(a), _unwrap(b)
    if not isinstance(a, tensor) and not isinstance(b, tensor):
        raise SemanticError("internal: binary op on two constants")
    if not isinstance(a, tensor):
        a = to_tensor(a, weak_dtype(b.dtype, a))
    elif not isinstance(b, tensor):
        b = to_tensor(b, weak_dtype(a.dtype, b))
    shape = broadcast_shapes(a.type.shape, b.type.shape)
    a, b = broadcast_to(a, shape), broadcast_to(b, shape)
    if allow_ptr and (a.dtype.is_ptr() or b.dtype.is_ptr()):
        return a, b
    dt = arith_dtype_fn(a.dtype, b.dtype) if arith_dtype_fn else promote_dtypes(a.dtype, b.dtype)
    return cast(a, dt), cast(b, dt)


def _binop(kind, a, b, dtype_fn=None, **attrs):
    a, b = binary_operands(a, b, dtype_fn)
    if a.dtype.is_fp8():  # computed in float32 and rounded once to the fp8 type (exact for + - * / min max)
        r = _binop(kind, _fp8_compute(a), _fp8_compute(b), **attrs)
        return cast(r, a.dtype)
    return tensor(_b().binary(kind, a.handle, b.handle, **attrs), a.type)


# ----------------------------------------------------------------------------------------------------
# arithmetic
# ----------------------------------------------------------------------------------------------------
def add(a, b):
    a, b = _unwrap(a), _unwrap(b)
    ap = isinstance(a, tensor) and a.dtype.is_ptr()
    bp = isinstance(b, tensor) and b.dtype.is_ptr()
    if ap and bp:
        raise SemanticError("cannot add two pointers")
    if ap or bp:
        p, off = (a, b) if ap else (b, a)
        return addptr(p, off)
    return _binop("add", a, b)


def addptr(p, off):
    off = to_tensor(off)
    if not off.dtype.is_int():
        raise SemanticError(f"pointer offset must be an integer, got {off.dtype!r}")
    if off.dtype.is_bool():
        off = cast(off, T.int32)
    shape = broadcast_shapes(p.type.shape, off.type.shape)
    p, off = broadcast_to(p, shape), broadcast_to(off, shape)
    return tensor(_b().addptr(p.handle, off.handle), p.type)


def sub(a, b):
    a, b = _unwrap(a), _unwrap(b)
    if isinstance(a, tensor) and a.dtype.is_ptr():
        if isinstance(b, tensor) and b.dtype.is_ptr():
            raise SemanticError("subtracting two pointers is not supported")
        return addptr(a, neg(to_tensor(b)))
    if isinstance(b, tensor) and b.dtype.is_ptr():
        raise SemanticError("cannot subtract a pointer from a number")
    return _binop("sub", a, b)


def mul(a, b):
    _no_ptr(a, b, "*")
    return _binop("mul", a, b)


def _no_ptr(a, b, what):
    for x in (a, b):
        x = _unwrap(x)
        if isinstance(x, tensor) and x.dtype.is_ptr():
            raise SemanticError(f"operator {what} is not defined on pointers")


def _same_signedness(a, b, sym):
    """Triton refuses /, // and % between a signed and an unsigned integer tensor (the result would rarely be
    what was meant); a Python number takes the tensor's type, so it never trips this."""
    a, b = _unwrap(a), _unwrap(b)
    if isinstance(a, tensor) and isinstance(b, tensor):
        ka, kb = a.dtype.kind, b.dtype.kind
        if {ka, kb} == {"int", "uint"}:
            raise SemanticError(f"Cannot use {sym} with {a.dtype!r} and {b.dtype!r} because they have different "
                                "signedness: cast them to the same signedness")


def truediv(a, b, ieee=False):
    """`/`: fp32 division is approximate to 2 ulp (as Triton's); ieee=True (tl.div_rn) rounds exactly."""
    _no_ptr(a, b, "/")
    _same_signedness(a, b, "/")

    def dt(x, y):
        d = promote_dtypes(x, y, div_or_mod=True)
        return d if d.is_floating() else T.float32

    return _binop("fdiv", a, b, dt, **({"ieee": True} if ieee else {}))


def _div_or_mod_dtype(x, y):
    return promote_dtypes(x, y, div_or_mod=True)


def floordiv(a, b):
    _no_ptr(a, b, "//")
    _same_signedness(a, b, "//")
    a2, b2 = binary_operands(a, b, _div_or_mod_dtype)
    if a2.dtype.is_fp8():
        return cast(floordiv(_fp8_compute(a2), _fp8_compute(b2)), a2.dtype)
    if a2.dtype.is_floating():
        q = tensor(_b().binary("fdiv", a2.handle, b2.handle), a2.type)
        return unary("floor", q)
    return tensor(_b().binary("idiv", a2.handle, b2.handle), a2.type)


def mod(a, b):
    _no_ptr(a, b, "%")
    _same_signedness(a, b, "%")
    a2, b2 = binary_operands(a, b, _div_or_mod_dtype)
    if a2.dtype.is_fp8():
        return cast(mod(_fp8_compute(a2), _fp8_compute(b2)), a2.dtype)
    kind = "frem" if a2.dtype.is_floating() else "irem"
    return tensor(_b().binary(kind, a2.handle, b2.handle), a2.type)


def _int_operands(a, b, sym):
    for v in (_unwrap(a), _unwrap(b)):
        if (isinstance(v, tensor) and v.dtype.is_floating()) or isinstance(v, float):
            ta, tb = (x.dtype if isinstance(x, tensor) else scalar_dtype_of_python(x) for x in (_unwrap(a), _unwrap(b)))
            raise SemanticError(f"operator {sym} needs integer operands: invalid operands of type {ta!r} and {tb!r}")
    a2, b2 = binary_operands(a, b)
    if not a2.dtype.is_int():
        raise SemanticError(f"operator {sym} needs integer operands, got {a2.dtype!r}")
    return a2, b2


def _int_only(kind, a, b, sym):
    a2, b2 = _int_operands(a, b, sym)
    return tensor(_b().binary(kind, a2.handle, b2.handle), a2.type)


def and_(a, b):
    return _int_only("and", a, b, "&")


def or_(a, b):
    return _int_only("or", a, b, "|")


def xor_(a, b):
    return _int_only("xor", a, b, "^")


def shl(a, b):
    return _int_only("shl", a, b, "<<")


def shr(a, b):
    """a >> b as Triton shifts: arithmetic when the left operand's own type is signed, logical when unsigned (a
    Python number on the left takes the right operand's), whatever type the two promote to (int16 >> uint16 is a
    uint16 whose bits are shifted arithmetically)."""
    ua, ub = _unwrap(a), _unwrap(b)
    lhs = ua if isinstance(ua, tensor) else ub if isinstance(ub, tensor) else None
    a2, b2 = _int_operands(a, b, ">>")
    d = a2.dtype
    if lhs is None or lhs.dtype.is_bool() or d.is_bool() or lhs.dtype.is_int_signed() == d.is_int_signed():
        return tensor(_b().binary("shr", a2.handle, b2.handle), a2.type)
    # the promoted type's signedness differs from the left operand's: shift the same bits the other way
    want = getattr(T, ("int" if lhs.dtype.is_int_signed() else "uint") + str(d.primitive_bitwidth))
    shifted = tensor(_b().binary("shr", cast(a2, want, bitcast=True).handle, cast(b2, want, bitcast=True).handle),
                     a2.type.with_element(want))
    return cast(shifted, d, bitcast=True)


def minimum(a, b, propagate_nan=False):
    attrs = {"propagate_nan": True} if propagate_nan else {}
    return _binop("min", a, b, **attrs)


def maximum(a, b, propagate_nan=False):
    attrs = {"propagate_nan": True} if propagate_nan else {}
    return _binop("max", a, b, **attrs)


def umulhi(a, b):
    a2, b2 = binary_operands(a, b)
    if not a2.dtype.is_int() or a2.dtype.bits not in (32, 64):
        raise SemanticError(f"umulhi needs 32- or 64-bit integers, got {a2.dtype!r}")
    return tensor(_b().binary("umulhi", a2.handle, b2.handle), a2.type)


def neg(x):
    x = to_tensor(x)
    if x.dtype.is_ptr():
        raise SemanticError("cannot negate a pointer")
    if x.dtype.is_fp8():
        return cast(neg(_fp8_compute(x)), x.dtype)
    if x.dtype.is_bool():
        x = cast(x, T.int32)
    return tensor(_b().unary("neg", x.handle), x.type)


def invert(x):
    x = to_tensor(x)
    if not x.dtype.is_int():
        raise SemanticError(f"operator ~ needs an integer operand, got {x.dtype!r}")
    return tensor(_b().unary("not", x.handle), x.type)


def logical_not(x):
    x = to_tensor(x)
    if x.dtype.is_bool():
        return tensor(_b().unary("not", x.handle), x.type)
    return compare("eq", x, 0)


def unary(kind, x):
    """A unary math op of the op table (compiler/ir/optable.py MATH), its operand checked by the entry's rule."""
    rule = optable.MATH[kind].ints
    x = to_tensor(x)
    if not x.dtype.is_ptr() and x.dtype.is_fp8():
        return cast(unary(kind, _fp8_compute(x)), x.dtype)
    if rule == "abs":
        if x.dtype.is_ptr():
            raise SemanticError("abs of a pointer")
        if x.dtype.is_int_unsigned() or x.dtype.is_bool():
            return x
        return tensor(_b().unary(kind, x.handle), x.type)
    if not x.dtype.is_floating():
        if rule == "identity" and x.dtype.is_int():
            return x
        raise SemanticError(f"{kind} needs a floating-point operand, got {x.dtype!r}; cast it with .to(tl.float32)")
    return tensor(_b().unary(kind, x.handle), x.type)


def fma(a, b, c):
    a, b, c = _unwrap(a), _unwrap(b), _unwrap(c)
    ts = [v for v in (a, b, c) if isinstance(v, tensor)]
    if not ts:
        raise SemanticError("fma needs a tensor operand")
    dt = ts[0].dtype
    for v in ts[1:]:
        dt = promote_dtypes(dt, v.dtype)
    if not dt.is_floating():
        raise SemanticError(f"fma needs floating-point operands, got {dt!r}")
    if dt.is_fp8():
        return cast(fma(*(cast(to_tensor(v, dt if not isinstance(v, tensor) else None), T.float32)
                          for v in (a, b, c))), dt)
    vals = [cast(to_tensor(v, dt if not isinstance(v, tensor) else None), dt) for v in (a, b, c)]
    shape = ()
    for v in vals:
        shape = broadcast_shapes(shape, v.type.shape)
    vals = [broadcast_to(v, shape) for v in vals]
    return tensor(_b().fma(*(v.handle for v in vals)), vals[0].type)


def extern_elementwise(name, args, table):
    """Call a libdevice function elementwise: `table` maps argument dtype names to (symbol, result dtype name).

    Dispatch follows Triton's: the arguments' own dtypes when the table has them, else all promoted to their
    common dtype; fp16/bf16 arguments (which Triton rejects) go through float32 and the float result is
    rounded back to the argument dtype. Arguments are broadcast to one shape.
    """
    ts = [to_tensor(_unwrap(a)) for a in args]
    for t in ts:
        if t.dtype.is_ptr():
            raise SemanticError(f"libdevice.{name} does not take pointers")
    key = tuple(t.dtype.name for t in ts)
    back = None
    if key not in table:
        common = ts[0].dtype
        for t in ts[1:]:
            common = promote_dtypes(common, t.dtype)
        if (common.name,) * len(ts) not in table and common.is_floating() and common.bits < 32:
            back, common = common, T.float32
        ts = [cast(t, common) for t in ts]
        key = (common.name,) * len(ts)
    if key not in table:
        have = "; ".join("(" + ", ".join(k) + ")" for k in table)
        got = ", ".join(t.dtype.name for t in (to_tensor(_unwrap(a)) for a in args))
        raise SemanticError(f"libdevice.{name} is not defined for ({got}); it takes {have}")
    symbol, ret = table[key]
    shape = ()
    for t in ts:
        shape = broadcast_shapes(shape, t.type.shape)
    ts = [broadcast_to(t, shape) for t in ts]
    rt = TensorType(T.from_name(ret), shape)
    h = _b().extern_elementwise(symbol, [t.handle for t in ts], rt)
    out = tensor(h, rt)
    if back is not None and out.dtype.is_floating():
        out = cast(out, back)
    return out


def inline_asm(asm, constraints, args, dtype, is_pure, pack):
    """tl.inline_asm_elementwise (compiler/language/core.py says what it means): the arguments broadcast to one
    shape, keeping their dtypes (Triton's rule: no promotion), one `inline_asm` op with a result per dtype. The
    dtypes, `pack` and the constraint string are checked against each other here (compiler/ir/inline_asm.py)."""
    from ..ir import inline_asm as ia

    name = "tl.inline_asm_elementwise"
    asm, constraints, pack, is_pure = (_unwrap(x) for x in (asm, constraints, pack, is_pure))
    for what, v in (("asm", asm), ("constraints", constraints)):
        if not isinstance(v, str):
            raise SemanticError(f"{name}: {what} must be a string (a compile-time constant), got {_describe(v)}")
    if isinstance(pack, bool) or not isinstance(pack, int) or pack < 1:
        raise SemanticError(f"{name}: pack must be a constant int >= 1, got {_describe(pack)}")
    if not isinstance(is_pure, (bool, int)):
        raise SemanticError(f"{name}: is_pure must be a constant bool, got {_describe(is_pure)}")
    args = _unwrap(args)
    if not isinstance(args, (list, tuple)):
        raise SemanticError(f"{name}: args must be a list of tensors or numbers, got {_describe(args)}")
    ts = []
    for i, a in enumerate(args):
        a = _unwrap(a)
        if not isinstance(a, tensor) and not is_number(a):
            raise SemanticError(f"{name}: argument {i} must be a tensor or a number, got {_describe(a)}")
        ts.append(to_tensor(a))
    dts = _unwrap(dtype)
    several = isinstance(dts, (tuple, list))
    dts = tuple(_unwrap(d) for d in dts) if several else (dts,)
    if not dts:
        raise SemanticError(f"{name} needs at least one result dtype (an unused dummy result costs nothing)")
    for d in dts:
        if not isinstance(d, T.dtype):
            hint = ": return an int64 and convert it with .to(tl.pointer_type(...))" if getattr(
                d, "is_ptr", lambda: False)() else ""
            raise SemanticError(f"{name}: dtype must be a dtype or a tuple of dtypes, got {d!r}{hint}")
    shape = ()
    for t in ts:
        shape = broadcast_shapes(shape, t.type.shape)
    ts = [broadcast_to(t, shape) for t in ts]
    try:
        cons = ia.check(constraints, [t.dtype for t in ts], dts, pack)
    except ia.InlineAsmError as e:
        raise SemanticError(f"{name}: {e}") from None
    rtypes = [TensorType(d, shape) for d in dts]
    hs = _b().inline_asm(asm, cons, [t.handle for t in ts], rtypes, bool(is_pure), pack)
    outs = tuple(tensor(h, t) for h, t in zip(hs, rtypes))
    return outs if several else outs[0]


def compare(pred, a, b):
    a, b = _unwrap(a), _unwrap(b)
    if (isinstance(a, tensor) and a.dtype.is_ptr()) or (isinstance(b, tensor) and b.dtype.is_ptr()):
        a, b = binary_operands(a, b, allow_ptr=True)
        if not (a.dtype.is_ptr() and b.dtype.is_ptr()):
            raise SemanticError("cannot compare a pointer with a number")
        a = tensor(_b().ptr_to_int(a.handle), a.type.with_element(T.int64))
        b = tensor(_b().ptr_to_int(b.handle), b.type.with_element(T.int64))
    else:
        a, b = binary_operands(a, b)
        if a.dtype.is_fp8():
            a, b = _fp8_compute(a), _fp8_compute(b)
    return tensor(_b().cmp(pred, a.handle, b.handle), a.type.with_element(T.int1))


def where(cond, x, y):
    cond = to_tensor(cond)
    if not cond.dtype.is_bool():
        # as Triton: a non-boolean condition still means "!= 0", with a warning (Triton plans to refuse it)
        import warnings

        warnings.warn(f"tl.where with a non-boolean condition ({cond.dtype!r}) is deprecated in Triton and will be "
                      "an error there: compare it (x != 0) or cast it to tl.int1", UserWarning, stacklevel=2)
        cond = compare("ne", cond, 0)
    x, y = _unwrap(x), _unwrap(y)
    if isinstance(x, tensor) and x.dtype.is_ptr() or isinstance(y, tensor) and y.dtype.is_ptr():
        x, y = binary_operands(x, y, allow_ptr=True)
    elif not isinstance(x, tensor) and not isinstance(y, tensor):
        d = promote_dtypes(scalar_dtype_of_python(x), scalar_dtype_of_python(y))
        x, y = to_tensor(x, d), to_tensor(y, d)
    else:
        x, y = binary_operands(x, y)
    shape = broadcast_shapes(cond.type.shape, x.type.shape)
    cond, x, y = broadcast_to(cond, shape), broadcast_to(x, shape), broadcast_to(y, shape)
    return tensor(_b().select(cond.handle, x.handle, y.handle), x.type)


def cast(x, dtype, bitcast=False, fp_downcast_rounding=None):
    x = _unwrap(x)
    dtype = _unwrap(dtype)
    rounding = _unwrap(fp_downcast_rounding)
    if rounding not in (None, "rtne", "rtz"):
        raise SemanticError(f"fp_downcast_rounding must be 'rtne' or 'rtz', got {rounding!r}")
    if not isinstance(x, tensor):
        x = to_tensor(x, dtype if not bitcast else None)
    if not isinstance(dtype, (T.dtype, T.pointer_type)):
        raise SemanticError(f"{dtype!r} is not a dtype")
    if x.dtype == dtype:
        return x
    if bitcast:
        src_bits = 64 if x.dtype.is_ptr() else x.dtype.bits
        dst_bits = 64 if dtype.is_ptr() else dtype.bits
        if src_bits != dst_bits:
            raise SemanticError(f"bitcast needs equal widths: {x.dtype!r} ({src_bits} bits) to {dtype!r} ({dst_bits} bits)")
        return tensor(_b().bitcast(x.handle, dtype), x.type.with_element(dtype))
    if x.dtype.is_ptr() or dtype.is_ptr():
        if x.dtype.is_ptr() and dtype.is_ptr():
            return tensor(_b().bitcast(x.handle, dtype), x.type.with_element(dtype))
        if x.dtype.is_ptr() and dtype in (T.int64, T.uint64):
            return tensor(_b().ptr_to_int(x.handle), x.type.with_element(T.int64))
        if dtype.is_ptr() and x.dtype.is_int() and not x.dtype.is_bool():
            # an address held as an integer (pointer arrays, grouped GEMM): widened to 64 bits first
            return int_to_ptr(cast(x, T.int64) if x.dtype.bits < 64 else x, dtype)
        raise SemanticError(f"cannot cast {x.dtype!r} to {dtype!r}")
    if rounding == "rtz":
        if not (x.dtype.is_floating() and dtype.is_floating() and dtype.bits < x.dtype.bits):
            raise SemanticError(f"fp_downcast_rounding applies to float downcasts, not {x.dtype!r} to {dtype!r}")
        if not (x.dtype.is_fp32() and (dtype.bits == 16 or dtype == T.float8e5)):
            raise SemanticError(f"fp_downcast_rounding='rtz' from {x.dtype!r} to {dtype!r} is not supported; "
                                "float32 -> float16/bfloat16/float8e5 is")
        return tensor(_b().cast(x.handle, dtype, rounding="rtz"), x.type.with_element(dtype))
    return tensor(_b().cast(x.handle, dtype), x.type.with_element(dtype))


def _fp8_compute(x):
    """fp8 values take part in arithmetic as float32 (exact); the result is rounded back to the fp8 type."""
    return cast(x, T.float32)


# ----------------------------------------------------------------------------------------------------
# creation and shapes
# ----------------------------------------------------------------------------------------------------
def _check_shape(shape):
    shape = tuple(_unwrap(s) for s in (shape if isinstance(shape, (list, tuple)) else [shape]))
    for i, s in enumerate(shape):
        if not isinstance(s, int) or isinstance(s, bool):
            raise SemanticError(f"shape entries must be constexpr ints, got {s!r}")
        if s <= 0 or s & (s - 1):  # Triton's words (its tests compare them); the caret shows the shape
            raise SemanticError(f"Shape element {i} must be a power of 2")
    return shape


def arange(start, end):
    start, end = _unwrap(start), _unwrap(end)
    if not isinstance(start, int) or not isinstance(end, int):
        raise SemanticError("arange bounds must be constexpr ints (mark them tl.constexpr)")
    n = end - start
    if n <= 0:
        raise SemanticError(f"arange({start}, {end}) is empty")
    if n & (n - 1):
        raise SemanticError("arange's range must be a power of 2")  # Triton's words (its tests compare them)
    if end > 2**31 - 1:
        raise SemanticError("arange's end must fit in int32")
    return tensor(_b().arange(start, end), TensorType(T.int32, (n,)))


def full(shape, value, dtype):
    shape = _check_shape(shape)
    dtype = _unwrap(dtype)
    value = _unwrap(value)
    if isinstance(value, tensor):
        if value.type.shape:
            raise SemanticError("full's value must be a scalar")
        return broadcast_to(cast(value, dtype), shape)
    return const(value, dtype, shape)


def expand_dims(x, axis):
    x = to_tensor(x)
    axes = _unwrap(axis)
    axes = list(axes) if isinstance(axes, (list, tuple)) else [axes]
    nd = len(x.type.shape) + len(axes)
    norm = []
    for a in (_unwrap(a) for a in axes):
        if not isinstance(a, int) or not -nd <= a < nd:
            raise SemanticError(f"invalid axis {a!r}: expand_dims of shape {list(x.type.shape)} by {len(axes)} "
                                f"takes axes in [{-nd}, {nd})")
        norm.append(a % nd)
    if len(set(norm)) != len(norm):
        raise SemanticError(f"duplicate axes, normalized axes = {norm}")
    h = x.handle
    shape = list(x.type.shape)
    for a in sorted(norm):
        h = _b().expand_dims(h, a)
        shape.insert(a, 1)
    return tensor(h, x.type.with_shape(shape))


def reshape(x, shape):
    x = to_tensor(x)
    shape = _check_shape(shape)
    n = 1
    for s in shape:
        n *= s
    if n != x.type.numel:
        raise SemanticError(f"cannot reshape {list(x.type.shape)} ({x.type.numel} elements) to {list(shape)}")
    if not x.type.shape:
        return broadcast_to(x, shape)
    return tensor(_b().reshape(x.handle, shape), x.type.with_shape(shape))


def permute(x, order):
    x = to_tensor(x)
    order = tuple(_unwrap(o) for o in order)
    if sorted(order) != list(range(len(x.type.shape))):
        raise SemanticError(f"permute order {list(order)} is not a permutation of the {len(x.type.shape)} dims")
    shape = tuple(x.type.shape[i] for i in order)
    return tensor(_b().permute(x.handle, order), x.type.with_shape(shape))


def trans(x, *dims):
    x = to_tensor(x)
    if len(dims) == 1 and isinstance(_unwrap(dims[0]), (list, tuple)):
        dims = tuple(_unwrap(dims[0]))
    if not dims:
        n = len(x.type.shape)
        if n < 2:
            raise SemanticError("trans needs a tensor of at least 2 dims")
        dims = tuple(range(n - 2)) + (n - 1, n - 2)
    return permute(x, dims)


def join(a, b):
    """Stack a and b (broadcast to one shape and dtype) along a new minor dim of size 2."""
    a, b = binary_operands(a, b, allow_ptr=True)
    if a.dtype != b.dtype:
        raise SemanticError(f"join needs one dtype, got {a.dtype!r} and {b.dtype!r}")
    shape = tuple(a.type.shape) + (2,)
    a2, b2 = broadcast_to(expand_dims(a, len(shape) - 1), shape), broadcast_to(expand_dims(b, len(shape) - 1), shape)
    first = arange(0, 2)
    for _ in range(len(shape) - 1):
        first = expand_dims(first, 0)
    first = compare("eq", first, 0)
    return where(first, a2, b2)


def _bits_dtype(d):
    return {8: T.uint8, 16: T.uint16, 32: T.uint32, 64: T.uint64}[d.bits]


def _as_bits(x):
    """x as unsigned integers of its width (pointers as uint64, bools as uint8), for bit-exact moves."""
    elem = x.dtype
    if elem.is_ptr():
        return cast(tensor(_b().ptr_to_int(x.handle), x.type.with_element(T.int64)), T.uint64, bitcast=True)
    if elem.is_bool():
        return cast(x, T.uint8)
    return cast(x, _bits_dtype(elem), bitcast=True) if elem != _bits_dtype(elem) else x


def _from_bits(b, elem):
    if elem.is_ptr():
        return int_to_ptr(cast(b, T.int64, bitcast=True), elem)
    if elem.is_bool():
        return cast(b, T.int1)
    return cast(b, elem, bitcast=True) if elem != b.dtype else b


def split(x):
    """The two halves of x's minor dim (which must be 2), bit-exact (selected as bits, combined with or)."""
    x = to_tensor(x)
    shape = x.type.shape
    if not shape or shape[-1] != 2:
        raise SemanticError(f"split needs a minor dim of size 2, got shape {list(shape)}")
    elem = x.dtype
    bits = _as_bits(x)
    idx = arange(0, 2)
    for _ in range(len(shape) - 1):
        idx = expand_dims(idx, 0)
    outs = []
    for k in (0, 1):
        sel = where(compare("eq", idx, k), bits, const(0, bits.dtype))
        outs.append(_from_bits(reduce_simple(sel, len(shape) - 1, "or"), elem))
    return outs[0], outs[1]


def interleave(a, b):
    """Elements of a and b alternating along the last dim: [a0, b0, a1, b1, ...]."""
    j = join(a, b)
    shape = j.type.shape[:-2] + (2 * j.type.shape[-2],)
    return reshape(j, shape)


def cat(a, b):
    """a and b (one shape) concatenated along dim 0, in order."""
    a, b = to_tensor(a), to_tensor(b)
    if a.type.shape != b.type.shape or not a.type.shape:
        raise SemanticError(f"cat needs two blocks of one shape, got {list(a.type.shape)} and {list(b.type.shape)}")
    j = join(a, b)
    r = len(j.type.shape)
    j = permute(j, (r - 1,) + tuple(range(r - 1)))
    return reshape(j, (2 * a.type.shape[0],) + tuple(a.type.shape[1:]))


def _partner(y, ax):
    """Each element's partner along the size-2 axis `ax` (the element whose index differs there), bit-exact:
    own ^ xor-of-the-pair. The elements stay where their layout has them: the pair is two registers of one thread,
    one shuffle across lanes, or one exchange through shared memory across warps (no tile is moved so that the
    pair meets in one thread)."""
    own = _as_bits(y)
    both = broadcast_to(reduce_simple(own, ax, "xor", keep_dims=True), tuple(y.type.shape))
    return _from_bits(xor_(own, both), y.dtype)


def flip(x, dim=None):
    """x reversed along `dim` (the last dim by default), bit-exact: reversing the index is flipping each of its
    bits, so each bit's step gives every element its partner along that bit's axis (_partner)."""
    x = to_tensor(x)
    shape = tuple(x.type.shape)
    if not shape:
        raise SemanticError("flip needs a block")
    dim = len(shape) - 1 if _unwrap(dim) is None else _norm_axis(dim, len(shape))
    n = shape[dim]
    steps = n.bit_length() - 1
    if steps == 0:
        return x
    y = reshape(x, shape[:dim] + (2,) * steps + shape[dim + 1:])
    for ax in range(dim, dim + steps):
        y = _partner(y, ax)
    return reshape(y, shape)


def _select_or(x, pick, axis):
    """The elements of x where the bool block `pick` holds, one per line along `axis` (bit-exact: the bits are
    selected and or-reduced, so NaN payloads and -0 survive)."""
    elem = x.dtype
    if elem.is_bool():
        bits = cast(x, T.uint8)
    elif elem.is_ptr():
        bits = cast(tensor(_b().ptr_to_int(x.handle), x.type.with_element(T.int64)), T.uint64, bitcast=True)
    else:
        bits = cast(x, _bits_dtype(elem), bitcast=True) if elem != _bits_dtype(elem) else x
    shape = broadcast_shapes(bits.type.shape, pick.type.shape)
    bits, pick = broadcast_to(bits, shape), broadcast_to(pick, shape)
    r = reduce_simple(where(pick, bits, const(0, bits.dtype)), axis, "or")
    if elem.is_bool():
        return cast(r, T.int1)
    if elem.is_ptr():
        return int_to_ptr(cast(r, T.int64, bitcast=True), elem)
    return cast(r, elem, bitcast=True) if elem != bits.dtype else r


def _sort_keys(x):
    """A float tile as signed integers of its width ordered as the floats' total order (negative values'
    magnitude bits flipped: -NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN), so that one integer compare decides
    each compare-and-swap and equal keys are equal bits (swapping them changes nothing). Integer tiles are their own
    keys, bools sort as uint8. Against two float compares a step (the A/B `sort_keys`, H100 2026-12-07): 0.839 of
    the time over the 4 sorting kernels of the corpus, all 4 faster (benchmarks/2026-12-07d-h100/abin1.md)."""
    if x.dtype.is_bool():
        return cast(x, T.uint8)
    if not x.dtype.is_floating():
        return x
    w = x.dtype.primitive_bitwidth
    return _flip_negatives(cast(x, getattr(T, f"int{w}"), bitcast=True))


def _from_sort_keys(y, elem):
    """The inverse of _sort_keys (flipping the magnitude bits of negative keys is its own inverse)."""
    if elem.is_bool():
        return cast(y, T.int1)
    if not elem.is_floating():
        return y
    return cast(_flip_negatives(y), elem, bitcast=True)


def _flip_negatives(s):
    w = s.dtype.primitive_bitwidth
    return xor_(s, and_(shr(s, w - 1), (1 << (w - 1)) - 1))


def _bit_axes(x, n_bits):
    """x [..., 2**n_bits] -> [..., 2, ..., 2]; index bit b of the last dim is axis rank - 1 - b."""
    shape = tuple(x.type.shape)
    return reshape(x, shape[:-1] + (2,) * n_bits)


def sort(x, dim=None, descending=False):
    """x sorted along its last dim (a bitonic network of compare-and-swap steps; ascending unless descending).

    The index bits are axes of size 2 (_bit_axes). At the step for bit b each element meets its partner (the index
    with bit b flipped) where it is (_partner), instead of the whole tile moving so that the pair meets in one
    thread (a permute and a split per step). Floats are sorted by their total-order keys (_sort_keys): NaNs go to
    the ends (-NaN first, +NaN last), -0 before +0, and every element survives bit-exact."""
    x = to_tensor(x)
    shape = tuple(x.type.shape)
    if not shape:
        raise SemanticError("sort needs a block")
    _last_dim_only(shape, dim, "sort")
    n = shape[-1]
    L = n.bit_length() - 1
    if L == 0:
        return x
    desc_all = bool(_unwrap(descending))
    y = _bit_axes(_sort_keys(x), L)
    rank = len(y.type.shape)
    for stage in range(1, L + 1):  # blocks of 2**stage are merged
        if stage < L:
            down = _axis_bit(rank, rank - 1 - stage)
            if desc_all:
                down = logical_not(down)
        else:
            down = const(desc_all, T.int1)
        y = _bitonic_merge(y, stage, down)
    return _from_sort_keys(reshape(y, shape), x.dtype)


def bitonic_merge(x, dim=None, descending=False):
    """A bitonic sequence along x's last dim merged into order (ascending unless `descending`): the last stage of
    the bitonic sort, log2(n) compare-and-swap steps, the same network as Triton's (so any input, bitonic or not,
    comes out as Triton's does)."""
    x = to_tensor(x)
    shape = tuple(x.type.shape)
    if not shape:
        raise SemanticError("bitonic_merge needs a block")
    _last_dim_only(shape, dim, "bitonic_merge")
    n = shape[-1]
    if n & (n - 1):
        raise SemanticError(f"bitonic_merge needs a power-of-two last dim, got {n}")
    L = n.bit_length() - 1
    if L == 0:
        return x
    y = _bitonic_merge(_bit_axes(_sort_keys(x), L), L, const(bool(_unwrap(descending)), T.int1))
    return _from_sort_keys(reshape(y, shape), x.dtype)


def _last_dim_only(shape, dim, what):
    """sort, topk and bitonic_merge work along the last dim (dim None or naming it), as in Triton."""
    if _unwrap(dim) is not None and _norm_axis(dim, len(shape)) != len(shape) - 1:
        raise SemanticError(f"{what} is supported along the last dim only (as in Triton)")


def _axis_bit(rank, ax):
    """[1, .., 2, .., 1] bools, True at index 1 of the size-2 axis `ax`: whether an element's index has that axis's
    bit set, built from an arange (recomputed in whatever layout its user has, never converted)."""
    bit = arange(0, 2)
    for _ in range(ax):
        bit = expand_dims(bit, 0)
    for _ in range(rank - 1 - ax):
        bit = expand_dims(bit, len(bit.type.shape))
    return compare("ne", bit, 0)


def _bitonic_merge(y, stage, down):
    """The compare-and-swap steps merging bitonic blocks of 2**stage elements along y's bit axes (_bit_axes):
    descending where the bool block `down` holds. y holds sort keys (_sort_keys), ordered totally."""
    rank = len(y.type.shape)
    for b in range(stage - 1, -1, -1):  # compare elements whose index differs in bit b
        partner = _partner(y, rank - 1 - b)
        upper = _axis_bit(rank, rank - 1 - b)  # this element is the pair's upper one
        # the pair's two elements decide alike: y > partner for one is partner < y for the other, unless the keys
        # are equal, and then so are the bits, and a swap changes nothing
        y = where(xor_(compare("gt", y, partner), xor_(down, upper)), partner, y)
    return y


def expand_dims_to(x, rank):
    while len(x.type.shape) < rank:
        x = expand_dims(x, 0)
    return x


def topk(x, k, dim=None):
    """The k largest elements along the last dim, in descending order (shape [..., k]), as Triton computes them:
    blocks of k sorted in alternating directions, then, while more than k remain, the element-wise maximum of each
    block with its neighbour (a bitonic block holding the pair's k largest) merged back into order. n log^2 k
    compare steps instead of a whole sort's n log^2 n."""
    x = to_tensor(x)
    k = _unwrap(k)
    shape = tuple(x.type.shape)
    if not isinstance(k, int) or k <= 0 or k & (k - 1) or k > shape[-1]:
        raise SemanticError(f"topk's k must be a power of two <= {shape[-1]}, got {k!r}")
    if k == shape[-1]:
        return sort(x, dim, descending=True)
    _last_dim_only(shape, dim, "topk")
    L, lk = shape[-1].bit_length() - 1, k.bit_length() - 1
    y = _bit_axes(_sort_keys(x), L)
    for bits in range(L, lk - 1, -1):  # bits: the index bits left along the last dim
        rank = len(y.type.shape)
        last = bits == lk
        # blocks of k ascending and descending by turns (the last merge: all descending)
        down = const(True, T.int1) if last else _axis_bit(rank, rank - 1 - lk)
        for stage in (range(1, lk + 1) if bits == L else (lk,)):
            y = _bitonic_merge(y, stage, down if stage == lk else _axis_bit(rank, rank - 1 - stage))
        if not last:  # each block and its neighbour (bit lk) -> their element-wise maximum
            y = reduce_simple(y, len(y.type.shape) - 1 - lk, "max")
    return _from_sort_keys(reshape(y, shape[:-1] + (k,)), x.dtype)


def histogram(x, num_bins, mask=None):
    """Counts (int32) of the values of the 1-D int block x in [0, num_bins); other values (and masked-off ones)
    are not counted."""
    x = to_tensor(x)
    num_bins = _unwrap(num_bins)
    if len(x.type.shape) != 1 or not x.dtype.is_int():
        raise SemanticError(f"histogram needs a 1-D integer block, got {x.type}")
    _check_shape([num_bins])
    # one histogram op, counted by shared-memory atomics (codegen/reduce.py): the values as signed 32-bit (64-bit
    # for 64-bit ones), masked-off ones as -1
    wide = T.int64 if x.dtype.primitive_bitwidth == 64 else T.int32
    v = cast(x, wide) if x.dtype != wide else x
    mask = _unwrap(mask)
    if mask is not None:
        v = where(_mask_tensor(mask, x.type.shape), v, full(list(x.type.shape), -1, wide))
    return tensor(_b().histogram(v.handle, num_bins), TensorType(T.int32, (num_bins,)))


def gather(src, index, axis):
    """out[..., i, ...] = src[..., index[..., i, ...], ...] along `axis` (index has src's shape elsewhere)."""
    src, index = to_tensor(src), to_tensor(index)
    rank = len(src.type.shape)
    if len(index.type.shape) != rank or rank == 0:
        raise SemanticError(f"gather needs index of src's rank, got {list(index.type.shape)} and "
                            f"{list(src.type.shape)}")
    axis = _norm_axis(axis, rank)
    for dd in range(rank):
        if dd != axis and index.type.shape[dd] != src.type.shape[dd]:
            raise SemanticError(f"gather: index dim {dd} is {index.type.shape[dd]}, src's is {src.type.shape[dd]}")
    if not index.dtype.is_int():
        raise SemanticError(f"gather's index must be integers, got {index.dtype!r}")
    n = src.type.shape[axis]
    from ..options import ab_switch

    if (ab_switch("gather_smem") and not src.dtype.is_ptr()
            and math.prod(src.type.shape) * max(1, src.dtype.bits // 8) <= 65536):
        # (A/B `gather_smem`) one op: src through shared memory, each result element loaded at its index (linear in
        # the result's size; the comparison below is index size x source size along the axis); a source of at most
        # 64 KiB, so the block keeps room for the rest of its shared memory
        return tensor(_b().gather(src.handle, index.handle, axis), TensorType(src.dtype, tuple(index.type.shape)))
    # [.., M(index), N(src), ..]: compare every index with every source position along the axis
    s = expand_dims(src, axis)
    i = expand_dims(index, axis + 1)
    pos = arange(0, n)
    for _ in range(axis + 1):
        pos = expand_dims(pos, 0)
    for _ in range(rank - axis - 1):
        pos = expand_dims(pos, len(pos.type.shape))
    full = broadcast_shapes(s.type.shape, i.type.shape)
    pick = compare("eq", cast(broadcast_to(i, full), T.int32), broadcast_to(pos, full))
    # the source reinterpreted as bits before it is broadcast over the index dim (in _select_or), so the layout
    # pass sees a broadcast of the source tile itself and converts that, the smaller tile, where a conversion is
    # needed: flip + sort + gather's shared memory 16896 -> 4224 bytes
    return _select_or(s, pick, axis + 1)


def swizzle2d(i, j, size_i, size_j, size_g):
    """Row-major (i, j) in a size_i x size_j grid -> the (i, j) visiting groups of size_g rows column-major."""
    ij = add(mul(i, size_j), j)
    size_gj = mul(size_g, size_j) if isinstance(_unwrap(size_g), tensor) or isinstance(_unwrap(size_j), tensor) \
        else _unwrap(size_g) * _unwrap(size_j)
    group = floordiv(ij, size_gj)
    off_i = mul(group, size_g)
    g = minimum(sub(size_i, off_i), size_g)
    ij = mod(ij, size_gj)
    return add(off_i, mod(ij, g)), floordiv(ij, g)


def int_to_ptr(x, ptr_type):
    x = to_tensor(x)
    return tensor(_b().int_to_ptr(x.handle, ptr_type), x.type.with_element(ptr_type))


def getitem(x, idx):
    if not isinstance(idx, tuple):
        idx = (idx,)
    out = x
    dim = 0
    for i in idx:
        i = _unwrap(i)
        if i is None:
            out = expand_dims(out, dim)
            dim += 1
        elif isinstance(i, slice):
            if any(_unwrap(v) is not None for v in (i.start, i.stop, i.step)):
                text = ":".join("" if _unwrap(v) is None else str(_unwrap(v)) for v in (i.start, i.stop, i.step))
                raise SemanticError(f"unsupported tensor index {text.rstrip(':') or ':'}: only ':' and None are "
                                    "supported in tensor indexing")
            dim += 1  # as in Triton, a ':' keeps a dimension and is not checked against the rank
        elif i is Ellipsis:
            raise SemanticError("unsupported tensor index '...': only ':' and None are supported in tensor indexing")
        else:
            raise SemanticError(f"unsupported tensor index {i!r}: use ':' and None")
    return out


# ----------------------------------------------------------------------------------------------------
# memory
# ----------------------------------------------------------------------------------------------------
def _mask_tensor(mask, shape):
    mask = to_tensor(mask)
    if not mask.dtype.is_bool():
        mask = compare("ne", mask, 0)
    return broadcast_to(mask, broadcast_shapes(mask.type.shape, shape))


def load(pointer, mask=None, other=None, cache_modifier="", eviction_policy="", volatile=False):
    pointer = _unwrap(pointer)
    if not isinstance(pointer, tensor) or not pointer.dtype.is_ptr():
        raise SemanticError(f"load needs a pointer, got {_describe(pointer)}")
    mask, other = _unwrap(mask), _unwrap(other)
    elem = pointer.dtype.element_ty
    shape = pointer.type.shape
    if mask is not None:
        m = _mask_tensor(mask, shape)
        shape = m.type.shape
        pointer = broadcast_to(pointer, shape)
        mask = m
    if other is not None:
        if mask is None:
            raise SemanticError("load's `other` needs a `mask`")
        o = cast(to_tensor(other, elem if not isinstance(other, tensor) else None), elem)
        other = broadcast_to(o, shape)
    h = _b().load(pointer.handle, mask.handle if mask is not None else None,
                  other.handle if other is not None else None, cache=cache_modifier or "",
                  eviction=eviction_policy or "", volatile=bool(volatile))
    return tensor(h, TensorType(elem, shape))


def store(pointer, value, mask=None, cache_modifier="", eviction_policy=""):
    pointer = _unwrap(pointer)
    if not isinstance(pointer, tensor) or not pointer.dtype.is_ptr():
        raise SemanticError(f"store needs a pointer, got {_describe(pointer)}")
    if pointer.dtype.is_const():
        raise SemanticError("Cannot store to a constant pointer (a tl.const parameter points to read-only data)")
    elem = pointer.dtype.element_ty
    value = to_tensor(_unwrap(value), elem if not isinstance(_unwrap(value), tensor) else None)
    shape = broadcast_shapes(pointer.type.shape, value.type.shape)
    mask = _unwrap(mask)
    if mask is not None:
        m = _mask_tensor(mask, shape)
        shape = m.type.shape
        mask = m
    pointer, value = broadcast_to(pointer, shape), broadcast_to(value, shape)
    if value.dtype.is_ptr():
        raise SemanticError("storing pointers is not supported")
    value = cast(value, elem)
    _b().store(pointer.handle, value.handle, mask.handle if mask is not None else None,
               cache=cache_modifier or "", eviction=eviction_policy or "")
    return None


def check_no_boundary_check(boundary_check, padding_option):
    if boundary_check not in ((), [], None) or padding_option not in ("", None):
        raise SemanticError("boundary_check and padding_option only apply to block pointers (tl.make_block_ptr); "
                            "use mask= and other= with a tensor of pointers")


def _scalar_int(v, what, dtype):
    v = _unwrap(v)
    t = to_tensor(v, dtype if not isinstance(v, tensor) else None)
    if t.type.shape or not t.dtype.is_int() or t.dtype.is_bool():
        raise SemanticError(f"make_block_ptr {what} must be integer scalars, got {_describe(v)}")
    return cast(t, dtype)


def make_block_ptr(base, shape, strides, offsets, block_shape, order):

    base = _unwrap(base)
    if not isinstance(base, tensor) or not base.dtype.is_ptr() or base.type.shape:
        raise SemanticError(f"make_block_ptr needs a scalar pointer base, got {_describe(base)}")
    shape, strides, offsets, block_shape, order = (list(_unwrap(x)) for x in (shape, strides, offsets,
                                                                              block_shape, order))
    bs = _check_shape(block_shape)
    r = len(bs)
    if not (len(shape) == len(strides) == len(offsets) == r):
        raise SemanticError(f"make_block_ptr: shape, strides, offsets and block_shape need one entry per dim; got "
                            f"{len(shape)}, {len(strides)}, {len(offsets)} and {r}")
    order = [_unwrap(o) for o in order]
    if sorted(order) != list(range(r)):
        raise SemanticError(f"make_block_ptr order {order} is not a permutation of the {r} dims")
    return block_ptr(base, [_scalar_int(v, "shape entries", T.int64) for v in shape],
                     [_scalar_int(v, "strides", T.int64) for v in strides],
                     [_scalar_int(v, "offsets", T.int32) for v in offsets], bs, order)


def advance(p, offsets):

    p = _unwrap(p)
    if not isinstance(p, block_ptr):
        raise SemanticError(f"tl.advance needs a block pointer (tl.make_block_ptr), got {_describe(p)}")
    offsets = list(_unwrap(offsets))
    if len(offsets) != len(p.block_shape):
        raise SemanticError(f"tl.advance needs {len(p.block_shape)} offsets, got {len(offsets)}")
    new = [add(o, _scalar_int(d, "advance offsets", T.int32)) for o, d in zip(p.offsets, offsets)]
    return block_ptr(p.base, p.shape, p.strides, new, p.block_shape, p.order)


def _block_ptr_addresses(p, boundary_check):
    """(pointer block, mask or None) of a block pointer's window; the mask covers the dims in boundary_check."""
    r = len(p.block_shape)
    checks = sorted({_norm_axis(d, r) for d in (boundary_check or ())})
    ptrs = p.base
    mask = None
    # A tensor descriptor's window (language/core.py tensor_descriptor): Triton's contract for
    # make_tensor_descriptor (a 16-byte aligned base, every stride but the last a multiple of 16 bytes) becomes facts
    # the axis analysis reads (passes/axisinfo.py: `base_align` on the first addptr, `stride_div` on each leading
    # dim's index x stride), so its row starts are 16-byte aligned
    eb = p.base.dtype.element_ty.primitive_bitwidth // 8
    contract = getattr(p, "contract", False) and eb in (1, 2, 4, 8)
    for d, n in enumerate(p.block_shape):
        idx = add(p.offsets[d], arange(0, n))
        for _ in range(d):
            idx = expand_dims(idx, 0)
        for _ in range(r - 1 - d):
            idx = expand_dims(idx, len(idx.type.shape))
        off = mul(cast(idx, T.int64), p.strides[d])
        if contract and d < r - 1 and getattr(off.handle.owner, "kind", None) == "mul":
            off.handle.owner.attrs["stride_div"] = 16 // eb
        ptrs = addptr(ptrs, off)
        if contract and d == 0 and getattr(ptrs.handle.owner, "kind", None) == "addptr":
            ptrs.handle.owner.attrs["base_align"] = 16
        if d in checks:
            inb = and_(compare("ge", idx, 0), compare("lt", cast(idx, T.int64), p.shape[d]))
            mask = inb if mask is None else and_(mask, inb)
    ptrs = broadcast_to(ptrs, p.block_shape)
    if mask is not None:
        mask = broadcast_to(mask, p.block_shape)
    return ptrs, mask


def load_block_ptr(p, mask, other, boundary_check, padding_option, cache_modifier, eviction_policy, volatile):
    if _unwrap(mask) is not None or _unwrap(other) is not None:
        raise SemanticError("load through a block pointer takes boundary_check/padding_option, not mask/other")
    padding_option = padding_option or "zero"
    if padding_option not in ("zero", "nan"):
        raise SemanticError(f"padding_option must be 'zero' or 'nan', got {padding_option!r}")
    elem = p.base.dtype.element_ty
    if padding_option == "nan" and not elem.is_floating():
        raise SemanticError(f"padding_option='nan' needs a floating-point block, got {elem!r}")
    ptrs, m = _block_ptr_addresses(p, boundary_check)
    other = None if m is None else (float("nan") if padding_option == "nan" else 0)
    return load(ptrs, m, other, cache_modifier, eviction_policy, volatile)


def store_block_ptr(p, value, mask, boundary_check, cache_modifier, eviction_policy):
    if _unwrap(mask) is not None:
        raise SemanticError("store through a block pointer takes boundary_check, not mask")
    value = _unwrap(value)
    if isinstance(value, tensor) and value.type.shape and tuple(value.type.shape) != p.block_shape:
        raise SemanticError(f"storing a block of shape {list(value.type.shape)} through a block pointer of block "
                            f"shape {list(p.block_shape)}")
    ptrs, m = _block_ptr_addresses(p, boundary_check)
    return store(ptrs, value, m, cache_modifier, eviction_policy)


def atomic(op, pointer, val, mask=None, sem=None, scope=None):
    pointer = _unwrap(pointer)
    if not isinstance(pointer, tensor) or not pointer.dtype.is_ptr():
        raise SemanticError(f"atomic_{op} needs a pointer, got {_describe(pointer)}")
    if pointer.dtype.is_const():
        raise SemanticError(f"atomic_{op} through a pointer to constant data (a tl.const parameter)")
    elem = pointer.dtype.element_ty
    val = _unwrap(val)
    val = to_tensor(val, elem if not isinstance(val, tensor) else None)
    shape = broadcast_shapes(pointer.type.shape, val.type.shape)
    mask = _unwrap(mask)
    if mask is not None:
        m = _mask_tensor(mask, shape)
        shape = m.type.shape
        mask = m
    pointer, val = broadcast_to(pointer, shape), broadcast_to(cast(val, elem), shape)
    if op in ("and", "or", "xor") and not elem.is_int():
        raise SemanticError(f"atomic_{op} needs an integer pointer, got {elem!r}")
    if elem.is_floating() and elem.is_fp8():
        raise SemanticError(f"atomic_{op} on {elem!r} is not supported")
    if elem.is_floating() and elem.bits < 32 and op not in ("add", "max", "min"):
        raise SemanticError(f"atomic_{op} is not supported on {elem!r}")
    if elem.bits < 32 and not (elem.is_floating() and op in ("add", "max", "min")):
        raise SemanticError(f"atomics on {elem!r} are not supported (use 32 or 64 bits)")
    h = _b().atomic_rmw(op, pointer.handle, val.handle, mask.handle if mask is not None else None,
                        sem=sem or "acq_rel", scope=scope or "gpu")
    return tensor(h, TensorType(elem, shape))


def atomic_cas(pointer, cmp, val, sem=None, scope=None):
    pointer = _unwrap(pointer)
    if not isinstance(pointer, tensor) or not pointer.dtype.is_ptr():
        raise SemanticError(f"atomic_cas needs a pointer, got {_describe(pointer)}")
    if pointer.dtype.is_const():
        raise SemanticError("atomic_cas through a pointer to constant data (a tl.const parameter)")
    elem = pointer.dtype.element_ty
    if elem.bits < 16:
        raise SemanticError(f"atomic_cas on {elem!r} is not supported (use 16, 32 or 64 bits)")
    cmp = cast(to_tensor(_unwrap(cmp), elem if not isinstance(_unwrap(cmp), tensor) else None), elem)
    val = cast(to_tensor(_unwrap(val), elem if not isinstance(_unwrap(val), tensor) else None), elem)
    shape = broadcast_shapes(broadcast_shapes(pointer.type.shape, cmp.type.shape), val.type.shape)
    pointer, cmp, val = broadcast_to(pointer, shape), broadcast_to(cmp, shape), broadcast_to(val, shape)
    h = _b().atomic_cas(pointer.handle, cmp.handle, val.handle, sem=sem or "acq_rel", scope=scope or "gpu")
    return tensor(h, TensorType(elem, shape))


def _describe(v):
    if isinstance(v, tensor):
        return f"a tensor of {v.dtype!r}"
    return f"{type(v).__name__} {v!r}"


# ----------------------------------------------------------------------------------------------------
# reductions and scans
# ----------------------------------------------------------------------------------------------------
def _norm_axis(axis, rank):
    axis = _unwrap(axis)
    if not isinstance(axis, int):
        raise SemanticError(f"axis must be a constexpr int, got {axis!r}")
    if axis < 0:
        axis += rank
    if not 0 <= axis < rank:
        raise SemanticError(f"axis {axis} out of range for a tensor of rank {rank}")
    return axis


def reduce(inputs, axis, combine, keep_dims=False):
    """Reduce `inputs` (tensors of one shape) along `axis` with `combine(a..., b...) -> tuple`.

    `combine` is a Python callable building IR on scalar tensors (a jit function or a builtin combine).
    axis None reduces over every element (one reduce over all axes, in the tile's own layout).
    """
    single = isinstance(inputs, tensor)
    inputs = [inputs] if single else [to_tensor(i) for i in inputs]
    shape = inputs[0].type.shape
    for t in inputs:
        if t.type.shape != shape:
            raise SemanticError("reduce inputs must have the same shape")
    if not shape:
        return inputs[0] if single else tuple(inputs)
    axis = _unwrap(axis)
    # axis None on a tile of rank > 1: every element in one reduce over all axes (attrs axis None), combined in the
    # tile's own layout: a thread's registers in one chain, one butterfly over every lane that holds other elements,
    # one cross-warp step, instead of flattening the tile first (an order-keeping reshape, through shared memory
    # when the layouts differ: LSE + argmax 0.834 of that time, H100 2026-12-07, the A/B `reduce_all`,
    # benchmarks/2026-12-07d-h100/abin4.md). The combine sees the elements in an order of its choosing, as Triton's
    # flattening with can_reorder=True allows: the same result for an associative, commutative combine.
    whole = axis is None and len(shape) > 1
    if whole:
        orig_rank = len(shape)
    elif axis is None:  # a 1-D tile
        axis = 0
        orig_rank = 1
    else:
        axis = _norm_axis(axis, len(shape))
        orig_rank = None
    b = _b()
    from ..ir.core import Block

    elems = [t.dtype for t in inputs]
    body = Block([TensorType(e) for e in elems] * 2)
    out_shape = () if whole else tuple(s for i, s in enumerate(inputs[0].type.shape) if i != axis)
    op = b.create("reduce", [t.handle for t in inputs], [TensorType(e, out_shape) for e in elems],
                  {"axis": None if whole else axis}, [body])
    _build_combine(body, combine, elems)
    outs = [tensor(r, r.type) for r in op.results]
    if keep_dims:
        if orig_rank is not None:
            outs = [reshape_scalar_keepdims(o, orig_rank) for o in outs]
        else:
            outs = [expand_dims(o, axis) for o in outs]
    return outs[0] if single else tuple(outs)


def reshape_scalar_keepdims(o, rank):
    return broadcast_to(o, (1,) * rank)


def _build_combine(body, combine, elems):
    gen = current()
    b = gen.builder
    saved = b.block
    b.set_insertion_block(body)
    n = len(elems)
    args = [tensor(a, a.type) for a in body.args]
    res = combine(*args)
    if isinstance(res, tensor) or not isinstance(res, (tuple, list)):
        res = [res]
    res = [_unwrap(r) for r in res]
    if len(res) != n:
        b.set_insertion_block(saved)
        raise SemanticError(f"the combine function must return {n} value(s), got {len(res)}")
    vals = []
    for r, e in zip(res, elems):
        r = to_tensor(r, e if not isinstance(r, tensor) else None)
        if r.type.shape:
            b.set_insertion_block(saved)
            raise SemanticError("the combine function must return scalars")
        vals.append(cast(r, e).handle)
    b.yield_(vals)
    b.set_insertion_block(saved)


def scan(inputs, axis, combine, reverse=False):
    single = isinstance(inputs, tensor)
    inputs = [inputs] if single else [to_tensor(i) for i in inputs]
    shape = inputs[0].type.shape
    if not shape:
        raise SemanticError("scan needs a block, not a scalar")
    axis = _norm_axis(axis, len(shape))
    from ..ir.core import Block

    elems = [t.dtype for t in inputs]
    body = Block([TensorType(e) for e in elems] * 2)
    op = _b().create("scan", [t.handle for t in inputs], [t.type for t in inputs],
                     {"axis": axis, "reverse": bool(_unwrap(reverse))}, [body])
    _build_combine(body, combine, elems)
    outs = [tensor(r, r.type) for r in op.results]
    return outs[0] if single else tuple(outs)


def sum_dtype(d, dtype=None):
    dtype = _unwrap(dtype)
    if dtype is not None:
        return dtype
    if d.is_bool():
        return T.int32
    if d.is_int_signed() and d.bits < 32:
        return T.int32
    if d.is_int_unsigned() and d.bits < 32:
        return T.uint32
    if d.is_floating() and d.bits < 32:
        return T.float32
    return d


def _combine_binary(kind, **attrs):
    def fn(a, b):
        return tensor(_b().binary(kind, a.handle, b.handle, **attrs), a.type)

    return fn


def reduce_simple(x, axis, kind, keep_dims=False, dtype=None):
    x = to_tensor(x)
    if kind == "add":
        x = cast(x, sum_dtype(x.dtype, dtype))
    elif dtype is not None:
        x = cast(x, _unwrap(dtype))
    if x.dtype.is_ptr():
        raise SemanticError("cannot reduce pointers")
    if x.dtype.is_fp8():  # max/min (sum already widened): compare as float32, results back in fp8 (exact)
        r = reduce_simple(_fp8_compute(x), axis, kind, keep_dims)
        return cast(r, x.dtype)
    if kind in ("and", "or", "xor") and not x.dtype.is_int():
        raise SemanticError(f"{kind} reduction needs integers")
    return reduce(x, axis, _combine_binary(kind), keep_dims)


def arg_reduce(x, axis, pred, keep_dims=False, tie_break_left=True):
    """argmax (pred 'gt') / argmin (pred 'lt') along axis; returns (value, index); ties take the smaller index
    under tie_break_left."""
    x = to_tensor(x)
    shape = x.type.shape
    if not shape:
        raise SemanticError("argmax/argmin of a scalar")
    axis = _unwrap(axis)
    whole = axis is None and len(shape) > 1
    if whole:  # the tile as it is (reduce), each element's row-major index: d0 * stride0 + d1 * ...
        idx, stride = None, 1
        for d in reversed(range(len(shape))):
            ix = arange(0, shape[d])
            if stride != 1:
                ix = mul(ix, stride)
            for _ in range(d):
                ix = expand_dims(ix, 0)
            for _ in range(d + 1, len(shape)):
                ix = expand_dims(ix, len(ix.type.shape))
            idx = ix if idx is None else add(ix, idx)
            stride *= shape[d]
        idx = broadcast_to(idx, shape)
        ax = None
    else:
        ax = 0 if axis is None else _norm_axis(axis, len(shape))  # axis None: a 1-D tile
        xs = x.type.shape
        idx = arange(0, xs[ax])
        for d in range(len(xs)):
            if d < ax:
                idx = expand_dims(idx, 0)
            elif d > ax:
                idx = expand_dims(idx, len(idx.type.shape))
        idx = broadcast_to(idx, xs)
    b = _b()

    def combine(av, ai, bv, bi):
        # Triton's combine: a wins when greater (argmax; smaller for argmin), or equal with the smaller index under
        # tie_break_left (otherwise b wins ties: "fast", order-dependent). NaN compares false, so it is not ordered:
        # which index a row holding NaN gives depends on the reduction order, as in Triton's compiled code (NumPy
        # returns the first NaN). The NaN-first combine this replaced cost 2.6x the float compares of Triton's
        # (62 FSETP + 10 PLOP3 against 24 in a 1024-wide row argmax), measured 1.12x Triton's time on the H200.
        take_a = tensor(b.cmp(pred, av.handle, bv.handle), av.type.with_element(T.int1))
        if tie_break_left:
            eq = tensor(b.cmp("eq", av.handle, bv.handle), take_a.type)
            lower = tensor(b.cmp("lt", ai.handle, bi.handle), ai.type.with_element(T.int1))
            take_a = or_(take_a, and_(eq, lower))
        v = tensor(b.select(take_a.handle, av.handle, bv.handle), av.type)
        i = tensor(b.select(take_a.handle, ai.handle, bi.handle), ai.type)
        return v, i

    v, i = reduce([x, idx], ax, combine, keep_dims and axis is not None)
    if keep_dims and axis is None:
        v, i = reshape_scalar_keepdims(v, len(shape)), reshape_scalar_keepdims(i, len(shape))
    return v, i


# ----------------------------------------------------------------------------------------------------
# dot
# ----------------------------------------------------------------------------------------------------
# Triton 3.6's values. For float32 operands: "tf32" one tf32 tensor-core product; "tf32x3" three (each operand
# split into tf32 big + small parts); "bf16x3" / "bf16x6" each operand split into two / three bfloat16 parts and
# three / six partial products on the bf16 tensor cores; "ieee" float32 FMAs. Other operand types ignore it.
_DOT_PRECISIONS = ("tf32", "tf32x3", "ieee", "bf16x3", "bf16x6")


def dot(a, b, acc=None, input_precision=None, allow_tf32=None, out_dtype=T.float32, max_num_imprecise_acc=None):
    """Matrix product of 2-D blocks [M, K] x [K, N] (or batched: [B.., M, K] x [B.., K, N], the leading dims
    flattened into one batch) plus `acc`.

    fp16/bf16 inputs accumulate in fp32 (or fp16 when out_dtype is fp16); fp32 inputs use tf32 unless
    input_precision says otherwise ("tf32x3", "bf16x3", "bf16x6", "ieee"); int8 inputs accumulate in int32,
    saturating at its range instead of wrapping (as Triton's mma.sync code: .satfinite, after each instruction's
    32 products; the interpreter's dot says the order). A dim under 16 (no
    tensor-core shape fits) is computed as products and a sum over K in the accumulator's type (float32 for
    fp16/bf16/fp32 inputs, whatever `input_precision` says: exact FMAs).
    """
    a, b = to_tensor(_unwrap(a)), to_tensor(_unwrap(b))
    out_dtype = _unwrap(out_dtype)
    ra, rb = len(a.type.shape), len(b.type.shape)
    if ra > 3 and ra == rb and a.type.shape[:-2] == b.type.shape[:-2]:
        # more batch dims: one batched dot over all of them (reshapes of the leading dims)
        batch = tuple(a.type.shape[:-2])
        nb = math.prod(batch)
        shape = batch + (a.type.shape[-2], b.type.shape[-1])
        acc = _unwrap(acc)
        if acc is not None:
            acc = to_tensor(acc)
            if tuple(acc.type.shape) != shape:
                raise SemanticError(f"dot acc must have shape {list(shape)}, got {list(acc.type.shape)}")
            acc = reshape(acc, (nb,) + shape[-2:])
        r = dot(reshape(a, (nb,) + tuple(a.type.shape[-2:])), reshape(b, (nb,) + tuple(b.type.shape[-2:])), acc,
                input_precision, allow_tf32, out_dtype, max_num_imprecise_acc)
        return reshape(r, shape)
    if ra not in (2, 3) or ra != rb:
        raise SemanticError(f"dot needs two 2-D (or batched: 3-D and more, the same batch dims) blocks, got shapes "
                            f"{list(a.type.shape)} and {list(b.type.shape)}")
    if ra == 3 and a.type.shape[0] != b.type.shape[0]:
        raise SemanticError(f"dot batch sizes differ: {a.type.shape[0]} and {b.type.shape[0]}")
    M, K = a.type.shape[-2:]
    K2, N = b.type.shape[-2:]
    if K != K2:
        raise SemanticError(f"dot: inner dimensions differ: {list(a.type.shape)} @ {list(b.type.shape)} "
                            f"(K {K} vs {K2})")
    small = min(M, N, K) < 16
    da, db = a.dtype, b.dtype
    if da.is_ptr() or db.is_ptr():
        raise SemanticError("dot of pointers")
    if da.is_fp8() or db.is_fp8():
        if not (da.is_fp8() and db.is_fp8()):
            raise SemanticError(f"dot of {da!r} with {db!r}: fp8 operands go with fp8 operands")
        if out_dtype not in (T.float32, T.float16):
            raise SemanticError(f"dot of fp8 operands accumulates in float32 or float16, got out_dtype "
                                f"{out_dtype!r}")
        # fp8 values are exact in float16: the product runs as a dot of the float16 conversions (passes/fp8_dot.py
        # gives a float32-accumulated one fp8 wgmma instructions; a float16 accumulator keeps the fp16 path)
        a, b = cast(a, T.float16), cast(b, T.float16)
        da = db = T.float16
    if da != db:
        if {da.name, db.name} <= {"float16", "bfloat16", "float32"}:
            # mixed float inputs: compute in the wider/common type, as Triton does
            common = promote_dtypes(da, db)
            a, b = cast(a, common), cast(b, common)
            da = db = common
        else:
            raise SemanticError(f"dot operands must have the same dtype, got {da!r} and {db!r}")
    if da.is_int():
        if da not in (T.int8, T.uint8):
            raise SemanticError(f"integer dot needs int8 operands, got {da!r}")
        out_dtype = T.int32
    elif da.is_fp64():
        out_dtype = T.float64
    elif out_dtype not in (T.float32, T.float16) or (out_dtype == T.float16 and not da.is_fp16()):
        raise SemanticError(f"dot out_dtype must be float32 (or float16 for fp16 inputs), got {out_dtype!r}")
    prec = _unwrap(input_precision)
    if prec is None:  # Triton's knobs.language.fp32_default (TRITON_F32_DEFAULT) first, then allow_tf32
        from ..options import fp32_default

        allow = _unwrap(allow_tf32)
        prec = fp32_default() or ("ieee" if allow is False else "tf32")
        if prec.lower() not in _DOT_PRECISIONS:
            raise SemanticError(f"triton.knobs.language.fp32_default (TRITON_F32_DEFAULT) must be one of "
                                f"{', '.join(_DOT_PRECISIONS)}, got {prec!r}")
    if isinstance(prec, str):
        prec = prec.lower()  # Triton accepts any case ("TF32", "IEEE")
    if prec not in _DOT_PRECISIONS:
        raise SemanticError(f"input_precision must be one of {', '.join(_DOT_PRECISIONS)}, got {prec!r}")
    if not da.is_fp32():
        prec = "ieee" if not da.is_floating() or da.is_fp64() else prec
        if prec.startswith("bf16"):
            prec = "ieee"  # it only concerns float32 inputs (Triton ignores it for the others too)
    shape = a.type.shape[:-2] + (M, N)
    acc = _unwrap(acc)
    if acc is None:
        acc = const(0, out_dtype, shape)
    else:
        acc = to_tensor(acc)
        if tuple(acc.type.shape) != tuple(shape):
            raise SemanticError(f"dot acc must have shape {list(shape)}, got {list(acc.type.shape)}")
        if acc.dtype != out_dtype:
            if da.is_floating() and acc.dtype in (T.float32, T.float16):
                out_dtype = acc.dtype if not (acc.dtype == T.float16 and not da.is_fp16()) else T.float32
                acc = cast(acc, out_dtype)
            else:
                raise SemanticError(f"dot acc dtype {acc.dtype!r} does not match the accumulator type {out_dtype!r}")
    if small:
        return _small_dot(a, b, acc, out_dtype)
    rt = TensorType(out_dtype, shape)
    attrs = {"input_precision": prec, "out_dtype": out_dtype}
    if max_num_imprecise_acc is not None:  # fp8 operands (language/core.py dot): codegen/dot.py _wgmma_issue
        attrs["max_num_imprecise_acc"] = int(max_num_imprecise_acc)
    h = _b().create("dot", [a.handle, b.handle, acc.handle], [rt], attrs).result
    return tensor(h, rt)


_MX_FORMATS = ("e2m1", "e4m3", "e5m2", "bf16", "fp16")


def _mx_upcast(x, scale, fmt, comp, k_axis, what):
    """A dot_scaled operand as a block of `comp` (bfloat16 or float16) values with its K dim `k_axis`: fp4 e2m1
    unpacked (two per byte along K, the first in the low bits), fp8 read from its bits, each group of 32 along K
    times its e8m0 scale 2**(s - 127) (s = 255: NaN), the product rounded once to `comp`.

    Values move (fp4's interleave along K, the scales' spread over their 32 values and transpose) in the narrowest
    type that holds them exactly: the operand in `comp` (fp4 and fp8 values are exact in bfloat16 and float16) and
    the scales as their uint8 codes; only the product is formed in float32 (exact: at most 4 significant bits times
    a power of two), element by element. A 128x256 / 256x128 operand pair's layout conversions take half the shared
    memory and registers of moving float32 values (Triton's test_mxfp8_mxfp4_matmul_tma 128x256x256 asked for
    256 KiB)."""
    x = to_tensor(_unwrap(x))
    if fmt in ("bf16", "fp16"):
        want = T.bfloat16 if fmt == "bf16" else T.float16
        if x.dtype != want:
            raise SemanticError(f"dot_scaled: {what} in format {fmt!r} must be a {want!r} block, got {x.dtype!r}")
        v = x  # its own type until the product (a bfloat16 operand beside a float16 one rounds there)
    elif fmt in ("e4m3", "e5m2"):
        f8 = T.float8e4nv if fmt == "e4m3" else T.float8e5
        if x.dtype not in (T.uint8, T.int8, f8):
            raise SemanticError(f"dot_scaled: {what} in format {fmt!r} must hold uint8 (or {f8!r}), got {x.dtype!r}")
        v = cast(cast(cast(x, f8, bitcast=True) if x.dtype != f8 else x, T.float32), comp)
    else:  # e2m1: s e e m per nibble
        if x.dtype not in (T.uint8, T.int8):
            raise SemanticError(f"dot_scaled: {what} in format 'e2m1' must hold packed uint8, got {x.dtype!r}")
        u = cast(x, T.uint8, bitcast=True)

        def nibble(n):
            e = and_(shr(n, 1), 3)
            m = cast(and_(n, 1), T.float32)
            # 0 (e = 0): m * 0.5 (subnormal); else (1 + m / 2) * 2 ** (e - 1)
            p2 = where(compare("eq", e, 1), 1.0, where(compare("eq", e, 2), 2.0, 4.0))
            mag = where(compare("eq", e, 0), mul(m, 0.5), mul(add(mul(m, 0.5), 1.0), p2))
            return cast(where(compare("ne", and_(n, 8), 0), neg(mag), mag), comp)

        lo, hi = nibble(and_(u, 15)), nibble(shr(u, 4))
        if k_axis == len(x.type.shape) - 1:
            v = interleave(lo, hi)
        else:  # [K/2, N] -> [K, N]: the pair of each byte along dim 0
            j = join(lo, hi)                                # [K/2, N, 2]
            shape = list(j.type.shape)
            v = reshape(permute(j, [0, 2, 1]), [shape[0] * 2, shape[1]])
    if scale is None:
        return cast(v, comp)
    s = to_tensor(_unwrap(scale))
    if s.dtype not in (T.uint8, T.int8):
        raise SemanticError(f"dot_scaled: the scale of {what} must be e8m0 in uint8, got {s.dtype!r}")
    s = cast(s, T.uint8, bitcast=True)
    K = v.type.shape[k_axis]
    other = v.type.shape[1 - k_axis]
    if K % 32:
        raise SemanticError(f"dot_scaled: K must be a multiple of 32 (one e8m0 scale per 32 values), got {K}")
    if tuple(s.type.shape) != (other, K // 32):  # Triton's words (one scale per 32 values along K)
        raise SemanticError(f"{what}_scale must be a tensor of shape [{other}, {K // 32}]. Got "
                            f"{[str(d) for d in s.type.shape]}")
    s = reshape(broadcast_to(expand_dims(s, 2), [other, K // 32, 32]), [other, K])   # [other, K] codes
    if k_axis == 0:
        s = permute(s, [1, 0])
    f = cast(shl(cast(s, T.uint32), 23), T.float32, bitcast=True)   # 2**(s - 127); s = 0 -> 0.0
    f = where(compare("eq", s, 255), float("nan"), f)
    if comp == T.bfloat16 and v.dtype == comp:
        # every 2**(s - 127) is a bfloat16 (its exponent range is float32's), and a bfloat16 product is the exact
        # one rounded once: the same values, with the operand never widened to float32
        return mul(v, cast(f, comp))
    return cast(mul(cast(v, T.float32), f), comp)  # float16 cannot hold every scale: the product in float32


def dot_scaled(lhs, lhs_scale, lhs_format, rhs, rhs_scale, rhs_format, acc=None, fast_math=False,
               lhs_k_pack=True, rhs_k_pack=True, out_dtype=T.float32):
    """acc + lhs @ rhs of microscaled blocks: both operands are upcast (bfloat16, or float16 when one of them is
    fp16) with their scales applied, then multiplied as a dot with float32 accumulation, as Triton emulates it on
    GPUs without native microscaled MMA."""
    fl, fr = _unwrap(lhs_format), _unwrap(rhs_format)
    for f, what in ((fl, "lhs_format"), (fr, "rhs_format")):
        if f not in _MX_FORMATS:
            raise SemanticError(f"dot_scaled: {what} must be one of {', '.join(_MX_FORMATS)}, got {f!r}")
    if not (_unwrap(lhs_k_pack) and _unwrap(rhs_k_pack)):
        raise SemanticError("dot_scaled with operands packed along M/N (k_pack=False) is not supported")
    if _unwrap(out_dtype) != T.float32:
        raise SemanticError("dot_scaled accumulates in float32: out_dtype must be tl.float32")
    comp = T.float16 if "fp16" in (fl, fr) else T.bfloat16
    a = _mx_upcast(lhs, _unwrap(lhs_scale), fl, comp, 1, "lhs")
    b = _mx_upcast(rhs, _unwrap(rhs_scale), fr, comp, 0, "rhs")
    return dot(a, b, acc, out_dtype=T.float32)


def _small_dot(a, b, acc, out_dtype):
    """acc + a @ b as elementwise products [.., M, K, N] summed over K, in `out_dtype` (float16 results are summed
    in float32 and rounded once; int8 ones in int64, saturated to int32's range as the tensor-core path)."""
    work = {T.float16: T.float32, T.int32: T.int64}.get(out_dtype, out_dtype)
    a, b = cast(a, work), cast(b, work)
    r = len(a.type.shape)
    prod = mul(expand_dims(a, r), expand_dims(b, r - 2))  # [.., M, K, 1] * [.., 1, K, N]
    s = add(reduce_simple(prod, r - 1, "add"), cast(acc, work))
    if out_dtype == T.int32:
        s = maximum(minimum(s, const(2**31 - 1, work)), const(-2**31, work))
    return cast(s, out_dtype)


# ----------------------------------------------------------------------------------------------------
# tensor methods: Triton's functions that are also methods of its tensor. Each is `tl.<name>(x, ...)`, looked up
# when called (through the active code generator), so a name whose op is not in the language (yet) says so, and
# works once it is.
# ----------------------------------------------------------------------------------------------------
TENSOR_METHODS = tuple(sorted({
    "advance", "argmax", "argmin", "associative_scan", "atomic_add", "atomic_and", "atomic_cas",
    "atomic_max", "atomic_min", "atomic_or", "atomic_xchg", "atomic_xor", "broadcast_to", "cast", "cdiv",
    "cumprod", "cumsum", "expand_dims", "flip", "gather", "histogram", "item", "max", "min", "permute", "ravel",
    "reduce", "reduce_or", "reshape", "sigmoid", "softmax", "sort", "split", "sqrt_rn", "store", "sum", "trans",
    "view", "xor_sum",
} | {k for k, d in optable.MATH.items() if d.method}))  # the op table's math ops: x.exp() is tl.exp(x)


def _tensor_method(name):
    def method(self, *args, **kwargs):
        gen = current()
        fn = gen.tl_function(name)
        if fn is None:
            raise SemanticError(f"tl.{name} is not supported (called as the tensor method .{name}())")
        return gen.call_function(fn, [self, *args], kwargs)

    method.__name__ = name
    method.__qualname__ = f"tensor.{name}"
    method.__doc__ = f"`x.{name}(...)` is `tl.{name}(x, ...)`."
    method.__tilefarm_builtin__ = True
    return method


for _name in TENSOR_METHODS:
    setattr(tensor, _name, _tensor_method(_name))
del _name
