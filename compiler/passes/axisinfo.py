"""Axis analysis: per value and per dim, what is known about runs of elements (Triton's AxisInfo, our way).

For every int / pointer value and each dim d:
- contiguity[d]: elements come in runs of this length along d whose values increase by 1 (pointers: by one
  element);
- divisibility[d]: the largest power of two dividing the first element of each run (pointers: in bytes);
- constancy[d]: elements come in runs of this length along d with equal values.
All three are powers of two. A scalar is treated as rank 1 with size 1. The load/store emitter reads them to pick
128-bit accesses: a vector of `v` elements needs contiguity >= v, byte alignment of v * elem_size, and a mask
constant over the vector.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import gcd

from ..ir import types as T
from ..ir.core import Op
from ..options import ab_switch

MAX_DIV = 1 << 30  # "divisible by anything" (e.g. the constant 0), kept finite so products stay small


def pow2_div(v: int) -> int:
    """Largest power of two dividing v (MAX_DIV for 0)."""
    v = int(v)
    if v == 0:
        return MAX_DIV
    return min(MAX_DIV, v & -v)


@dataclass(frozen=True)
class AxisInfo:
    """Facts about a value along each dim (see the module docstring)."""

    contiguity: tuple
    divisibility: tuple
    constancy: tuple

    @staticmethod
    def unknown(shape) -> "AxisInfo":
        r = max(1, len(shape))
        return AxisInfo((1,) * r, (1,) * r, (1,) * r)

    @staticmethod
    def constant(shape, div: int) -> "AxisInfo":
        shape = tuple(shape) or (1,)
        return AxisInfo((1,) * len(shape), (div,) * len(shape), tuple(shape))


def _shape(v):
    return tuple(v.type.shape) or (1,)


def _gcd_all(*xs):
    g = 0
    for x in xs:
        g = gcd(g, x)
    return g


def _join(a: AxisInfo, b: AxisInfo) -> AxisInfo:
    """What holds for both (loop-carried values): the smaller fact per dim (gcd of powers of two)."""
    return AxisInfo(tuple(map(gcd, a.contiguity, b.contiguity)), tuple(map(gcd, a.divisibility, b.divisibility)),
                    tuple(map(gcd, a.constancy, b.constancy)))


def _elem_bytes(v) -> int:
    e = v.type.element
    return e.element_ty.itemsize if isinstance(e, T.pointer_type) else 1


def _add(op, a: AxisInfo, b: AxisInfo, scale: int = 1) -> AxisInfo:
    # A contiguous run plus something constant over the same run stays contiguous; divisibility of a sum is the
    # gcd of the divisibilities (b scaled to bytes for addptr).
    contig = tuple(max(gcd(ca, kb), gcd(ka, cb)) for ca, kb, ka, cb in
                   zip(a.contiguity, b.constancy, a.constancy, b.contiguity))
    div = tuple(min(MAX_DIV, gcd(da, min(MAX_DIV, db * scale))) for da, db in zip(a.divisibility, b.divisibility))
    const = tuple(map(gcd, a.constancy, b.constancy))
    return AxisInfo(contig, div, const)


def _const_value(v):
    """The value of a (splat/broadcast of a) `const`, else None."""
    o = getattr(v, "owner", None)
    while o is not None and getattr(o, "kind", None) in ("splat", "broadcast", "expand_dims"):
        o = getattr(o.operands[0], "owner", None)
    if o is not None and getattr(o, "kind", None) == "const":
        return o.attrs.get("value")
    return None


def _assumed_div(a: AxisInfo, div: int) -> AxisInfo:
    """a whose elements are known multiples of `div` (a promise the frontend recorded: `stride_div`, `base_align`)."""
    return AxisInfo(a.contiguity, tuple(max(x, div) for x in a.divisibility), a.constancy)


def _mul(op, a, b):
    # `stride_div`: operand 1 is a tensor descriptor's leading stride, a multiple of 16 bytes by
    # Triton's contract for make_tensor_descriptor (frontend/semantic.py _block_ptr_addresses)
    if op.attrs.get("stride_div"):
        b = _assumed_div(b, op.attrs["stride_div"])
    # x * 1 is x (a stride specialized to 1 keeps the offsets contiguous: 128-bit loads in matmul kernels).
    if _const_value(op.operands[1]) == 1 and not isinstance(_const_value(op.operands[1]), float):
        return a
    if _const_value(op.operands[0]) == 1 and not isinstance(_const_value(op.operands[0]), float):
        return b
    # The product is no longer contiguous, so its divisibility holds per element: a run [k*2^n, k*2^n + 1, ...]
    # counts as divisible by 1, not 2^n (offs_m * N with N odd has odd elements).
    div = tuple(min(MAX_DIV, (1 if ca > 1 else x) * (1 if cb > 1 else y)) for x, y, ca, cb in
                zip(a.divisibility, b.divisibility, a.contiguity, b.contiguity))
    const = tuple(map(gcd, a.constancy, b.constancy))
    return AxisInfo((1,) * len(div), div, const)


def _irem(op, a, b):
    # (contiguous run starting at a multiple of d) % N with N constant over the run and divisible by k stays
    # contiguous over gcd(run, d, k) elements (Triton's rule; it serves `offs % M` in matmul kernels, whose
    # offsets are non-negative).
    base = _elementwise_const(op, a, b)
    contig = tuple(_gcd_all(ca, da, db) if kb >= ca > 1 else 1 for ca, da, db, kb in
                   zip(a.contiguity, a.divisibility, b.divisibility, b.constancy))
    div = tuple(gcd(da, db) if c > 1 else 1 for c, da, db in zip(contig, a.divisibility, b.divisibility))
    return AxisInfo(contig, div, base.constancy)


def _const_int(op, b):
    """The integer constant operand 1 of op is (the same in every element: b its info), else None."""
    c = _const_value(op.operands[1])
    if isinstance(c, bool) or not isinstance(c, int) or b.constancy != _shape(op.operands[1]):
        return None
    return c


def _quotient_div(a, c: int) -> tuple:
    """Divisibility of x // c (c a power of two) for x of info a, per dim: where every element of x is a multiple
    of c (contiguity 1, divisibility >= c) the division is exact, whatever the sign and the rounding, and leaves
    divisibility / c (`K // 2` of a K divisible by 16: 8, so a row of K // 2 packed bytes starts 8-byte aligned);
    elsewhere nothing is known. The A/B `div_quot` (Triton's analysis keeps such quotients' divisibility too)."""
    return tuple((d if d >= MAX_DIV else d // c) if ca == 1 and d >= c else 1
                 for ca, d in zip(a.contiguity, a.divisibility))


def _idiv(op, a, b):
    # (a contiguous run starting at a multiple of d) // N with N constant over the run and divisible by k is
    # constant over gcd(run, d, k) elements (Triton's rule) where the run's values are known non-negative
    # (`nonneg`): division truncates, so (-16..-9) // 8 is not constant.
    base = _elementwise_const(op, a, b)
    c = _const_int(op, b) if ab_switch("div_quot") else None
    if c is not None and c > 0 and not c & (c - 1):
        base = AxisInfo(base.contiguity, _quotient_div(a, c), base.constancy)
    if not nonneg(op.operands[0]):
        return base
    const = tuple(max(k, _gcd_all(ca, da, db)) if kb >= ca > 1 else k for k, ca, da, db, kb in
                  zip(base.constancy, a.contiguity, a.divisibility, b.divisibility, b.constancy))
    return AxisInfo(base.contiguity, base.divisibility, const)


def _shr(op, a, b):
    """x >> k for a constant k: x // 2^k where x is a multiple of 2^k (exact, arithmetic or logical shift alike;
    _quotient_div), under the A/B `div_quot`."""
    base = _elementwise_const(op, a, b)
    k = _const_int(op, b) if ab_switch("div_quot") else None
    if k is None or not 0 <= k < 63:
        return base
    return AxisInfo(base.contiguity, _quotient_div(a, 1 << k), base.constancy)


_NONNEG_THROUGH = ("splat", "broadcast", "expand_dims", "convert_layout", "permute")
_NONNEG_BOTH = ("add", "mul", "idiv", "min", "or", "xor", "shr")


def nonneg(v, depth: int = 32) -> bool:
    """Whether integer value v is known >= 0 in every element: program ids and counts, aranges from 0, non-negative
    constants, a loop's counter when its start and step are, and sums, products, quotients, minima of such values;
    a maximum or a bitwise and with one such side, a remainder of such a dividend. Kernel arguments are not (they
    may be negative)."""
    if depth <= 0:
        return False
    o = v.owner
    if not isinstance(o, Op):  # a block argument: a loop's counter (its first argument) from start by step
        loop = getattr(o, "parent", None)
        if loop is None or loop.kind != "for" or not o.args or o.args[0] is not v:
            return False
        lb, step = loop.operands[0], loop.operands[2]
        return nonneg(lb, depth - 1) and nonneg(step, depth - 1)
    k = o.kind
    if k in ("program_id", "num_programs"):
        return True
    if k == "arange":
        return o.attrs.get("start", 0) >= 0
    if k == "const":
        val = o.attrs.get("value")
        return isinstance(val, int) and not isinstance(val, bool) and val >= 0
    if k in _NONNEG_THROUGH:
        return nonneg(o.operands[0], depth - 1)
    if k in ("max", "and"):
        return any(nonneg(x, depth - 1) for x in o.operands[:2])
    if k == "irem":  # a remainder takes the dividend's sign
        return nonneg(o.operands[0], depth - 1)
    if k in _NONNEG_BOTH:
        return all(nonneg(x, depth - 1) for x in o.operands[:2])
    return False


def _bitwise(op, a, b):
    const = tuple(map(gcd, a.constancy, b.constancy))
    # x & c keeps x's low zero bits; treat both sides as bounding the result from below.
    div = tuple(max(x, y) for x, y in zip(a.divisibility, b.divisibility)) if op.kind == "and" else (1,) * len(const)
    return AxisInfo((1,) * len(const), div, const)


def _shl(op, a, b):
    co = op.operands[1].owner
    if co is not None and getattr(co, "kind", None) == "const" and b.constancy == tuple(_shape(op.operands[1])):
        k = int(co.attrs["value"])
        return AxisInfo((1,) * len(a.divisibility), tuple(min(MAX_DIV, d << k) for d in a.divisibility),
                        tuple(map(gcd, a.constancy, b.constancy)))
    return _elementwise_const(op, a, b)


def _elementwise_const(op, *infos):
    const = tuple(_gcd_all(*xs) for xs in zip(*(i.constancy for i in infos)))
    return AxisInfo((1,) * len(const), (1,) * len(const), const)


def _neg(op, a):
    """-x: known only constant where x is (the A/B `neg_axis`, which kept x's divisibility, measured no faster:
    docs/EXPERIMENTS.md)."""
    return _elementwise_const(op, a)


def _minmax(op, a, b):
    """min(a, b) / max(a, b) is, element by element, one of its operands: runs where both are contiguous (their
    difference constant, so the order never flips inside one) stay contiguous, and the first element of each run is
    divisible by what divides both sides' elements there (a chunk's end `min(start + chunk, K)` keeps the
    divisibility its two sides share, so a K mask against it stays constant over a vector: a split-K GEMM's loads
    16-byte vectors instead of 2-byte ones, 0.960 of its time on the H100, 0.855 with its copy ring)."""
    contig, div = [], []
    for ca, cb, da, db in zip(a.contiguity, b.contiguity, a.divisibility, b.divisibility):
        c = gcd(ca, cb)
        # a run of the result starting inside one of a side's runs: its first element is that run's first plus a
        # multiple of c
        div.append(gcd(da if c >= ca else gcd(da, c), db if c >= cb else gcd(db, c)))
        contig.append(c)
    return AxisInfo(tuple(contig), tuple(div), tuple(map(gcd, a.constancy, b.constancy)))


def _cmp(op, a, b):
    # offs < N, with offs in runs of K consecutive values starting at multiples of K and N a multiple of K, is
    # constant over each run: constancy gcd(contiguity, divisibility of both sides). Only the predicates whose
    # switch point is N itself qualify (offs < N, offs >= N, N > offs, N <= offs); == and != are not.
    pred = op.attrs["pred"]
    const = []
    for d in range(len(a.constancy)):
        k = gcd(a.constancy[d], b.constancy[d])
        if pred in ("lt", "ge") and b.constancy[d] >= a.contiguity[d] > 1:
            k = max(k, _gcd_all(a.contiguity[d], a.divisibility[d], b.divisibility[d]))
        if pred in ("gt", "le") and a.constancy[d] >= b.contiguity[d] > 1:
            k = max(k, _gcd_all(b.contiguity[d], b.divisibility[d], a.divisibility[d]))
        const.append(k)
    return AxisInfo((1,) * len(const), (1,) * len(const), tuple(const))


def _select(op, c, a, b):
    const = tuple(_gcd_all(*xs) for xs in zip(c.constancy, a.constancy, b.constancy))
    contig = tuple(min(gcd(ca, cc), gcd(cb, cc)) for ca, cb, cc in zip(a.contiguity, b.contiguity, c.constancy))
    div = tuple(map(min, a.divisibility, b.divisibility))
    return AxisInfo(contig, div, const)


def _same(op, a, *rest):
    return a


def _splat(op, a):
    return AxisInfo.constant(op.result.shape, a.divisibility[0])


def _broadcast(op, a):
    src = _shape(op.operands[0])
    out = op.result.shape
    contig, div, const = [], [], []
    for d, (s, o) in enumerate(zip(src, out)):
        contig.append(1 if s != o else a.contiguity[d])
        div.append(a.divisibility[d])
        const.append(o if s != o else a.constancy[d])
    return AxisInfo(tuple(contig), tuple(div), tuple(const))


def _expand_dims(op, a):
    ax = op.attrs["axis"]
    if not op.operands[0].shape:
        return AxisInfo.constant(op.result.shape, a.divisibility[0])
    ins = lambda t, v: t[:ax] + (v,) + t[ax:]  # noqa: E731
    # Along the new size-1 dim every element is a run of its own: what divides every element (a contiguous
    # run's elements are not all divisible like its first).
    per_elem = _gcd_all(*(1 if c > 1 else d for c, d in zip(a.contiguity, a.divisibility)))
    return AxisInfo(ins(a.contiguity, 1), ins(a.divisibility, per_elem), ins(a.constancy, 1))


def _permute(op, a):
    o = op.attrs["order"]
    return AxisInfo(tuple(a.contiguity[i] for i in o), tuple(a.divisibility[i] for i in o),
                    tuple(a.constancy[i] for i in o))


def _cast(op, a):
    to = op.attrs["to"]
    src = op.operands[0].type.element
    if to.is_int() and not to.is_bool() and src.is_int() and not src.is_bool() and to.bits >= src.bits:
        return a
    return _elementwise_const(op, a)


def _addptr(op, p, off):
    # `base_align`: operand 0 is a tensor descriptor's base (splat), 16-byte aligned by contract
    if op.attrs.get("base_align"):
        p = _assumed_div(p, op.attrs["base_align"])
    return _add(op, p, off, _elem_bytes(op.operands[0]))


def _const(op):
    v = op.attrs["value"]
    div = pow2_div(v) if isinstance(v, (int, bool)) and not isinstance(v, float) else 1
    return AxisInfo.constant(op.result.shape, div)


def _arange(op):
    n = op.attrs["end"] - op.attrs["start"]
    return AxisInfo((n,), (pow2_div(op.attrs["start"]),), (1,))


_RULES = {
    "const": _const, "arange": _arange,
    "add": _add, "sub": _add, "addptr": _addptr, "mul": _mul,
    "and": _bitwise, "or": _bitwise, "xor": _bitwise, "shl": _shl,
    "max": _minmax, "min": _minmax, "idiv": _idiv, "irem": _irem,
    "shr": _shr, "not": _elementwise_const, "neg": _neg,
    "cmp": _cmp, "select": _select, "splat": _splat, "broadcast": _broadcast, "expand_dims": _expand_dims,
    "permute": _permute, "cast": _cast, "convert_layout": _same, "bitcast": _elementwise_const,
}


def analyze(function) -> dict:
    """Compute AxisInfo for every value of `function`: {value.id: AxisInfo}. Values with no rule are unknown."""
    info: dict = {}
    for i, (arg, ty) in enumerate(zip(function.args, function.arg_types)):
        div = function.arg_attrs.get(i, {}).get("divisibility", 1)
        info[arg.id] = AxisInfo.constant(arg.type.shape, div)
    _block(function.body, info)
    return info


def _get(info, v):
    r = info.get(v.id)
    return r if r is not None else AxisInfo.unknown(v.type.shape)


def _block(block, info):
    for op in block.ops:
        if op.kind == "for":
            _loop(op, info)
            continue
        if op.kind in ("if", "while"):
            for b in op.blocks:
                for a in b.args:
                    info[a.id] = AxisInfo.unknown(a.type.shape)
                _block(b, info)
            continue
        rule = _RULES.get(op.kind)
        if rule is None or not op.results:
            for b in op.blocks:
                _block(b, info)
            continue
        ins = [_get(info, v) for v in op.operands]
        try:
            if op.kind == "sub":
                r = _add(op, *ins)
                r = AxisInfo(tuple(gcd(ca, kb) for ca, kb in zip(ins[0].contiguity, ins[1].constancy)),
                             r.divisibility, r.constancy)
            else:
                r = rule(op, *ins)
        except Exception:  # an analysis gap must never break compilation: fall back to "nothing known"
            r = AxisInfo.unknown(op.result.shape)
        info[op.result.id] = r


def _loop(op, info):
    body = op.blocks[0]
    lb, ub, step, *init = op.operands
    iv = body.args[0]
    sd = _get(info, step).divisibility[0]
    info[iv.id] = AxisInfo.constant((), gcd(_get(info, lb).divisibility[0], sd))
    carried = [_get(info, v) for v in init]
    for _ in range(3):  # fixed point of "init joined with what the body yields"
        for a, ci in zip(body.args[1:], carried):
            info[a.id] = ci
        _block(body, info)
        y = body.terminator
        new = [_join(c, _get(info, v)) for c, v in zip(carried, y.operands)]
        if new == carried:
            break
        carried = new
    else:
        carried = [AxisInfo.unknown(a.type.shape) for a in body.args[1:]]
        for a, ci in zip(body.args[1:], carried):
            info[a.id] = ci
        _block(body, info)
    for r, ci in zip(op.results, carried):
        info[r.id] = ci


_ANY = "any"  # _step: affine along the dim, its step constant over the dim but not known here (a runtime stride)


def _step(v, d: int, depth: int = 16):
    """The step along dim d of an integer or pointer block value that is affine in the index there (pointers: in
    elements): an int where it is a known constant, _ANY where only its constancy over the dim is known (a product
    with a factor constant along d: `offs * stride`), None where the value is not known to be affine (computed from
    loaded data: a gather's indices, a scan's positions)."""
    if depth <= 0:
        return None
    shape = tuple(v.type.shape)
    if not shape:
        return 0
    o = v.owner
    if not isinstance(o, Op):
        return None
    k = o.kind
    if k == "const":
        return 0
    if k == "splat":
        return 0 if not o.operands[0].type.shape else None
    if k == "arange":
        return 1 if d == 0 else None
    if k == "convert_layout":
        return _step(o.operands[0], d, depth - 1)
    if k == "cast":
        to, src = o.attrs["to"], o.operands[0].type.element
        ok = to.is_int() and not to.is_bool() and src.is_int() and not src.is_bool() and to.bits >= src.bits
        return _step(o.operands[0], d, depth - 1) if ok else None
    if k == "broadcast":
        src = tuple(o.operands[0].type.shape)
        return 0 if src[d] == 1 and shape[d] != 1 else _step(o.operands[0], d, depth - 1)
    if k == "expand_dims":
        ax = o.attrs["axis"]
        if d == ax:
            return 0
        return _step(o.operands[0], d - (d > ax), depth - 1) if o.operands[0].type.shape else 0
    if k in ("add", "sub", "addptr"):
        a, b = (_step(x, d, depth - 1) for x in o.operands[:2])
        if a is None or b is None:
            return None
        if _ANY in (a, b):
            return _ANY
        return a - b if k == "sub" else a + b
    if k in ("mul", "shl"):
        for i in (0, 1) if k == "mul" else (0,):
            c = _const_value(o.operands[1 - i])
            if isinstance(c, int) and not isinstance(c, bool) and (k == "mul" or 0 <= c < 64):
                s = _step(o.operands[i], d, depth - 1)
                return s if s in (None, _ANY) else s * (c if k == "mul" else 1 << c)
        if k == "mul":
            a, b = (_step(x, d, depth - 1) for x in o.operands[:2])
            if None not in (a, b) and 0 in (a, b):
                return _ANY
        return None
    return None


def elem_step(v, d: int, depth: int = 16):
    """The constant step along dim d of an integer or pointer block value that is affine in the index there
    (pointers: in elements), or None where that is not known: `offs * 3` steps by 3, `X + offs * 5 + 1` by 5, a
    scalar splat or a broadcast along d by 0, an arange by 1. Read by the layout pass (`_group_runs`, strided
    groups) to tell a strided access, whose lanes are a constant distance apart, from a gather."""
    s = _step(v, d, depth)
    return None if s == _ANY else s


def affine_along(v, d: int, depth: int = 16) -> bool:
    """Whether an integer or pointer block value is affine in the index along dim d, its step there constant over
    the dim but not necessarily known (`offs * stride`); a value computed from loaded data is not. Read by the
    layout pass (`_spread_scatter`)."""
    return _step(v, d, depth) is not None
