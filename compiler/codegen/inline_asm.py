"""`inline_asm` / `inline_asm_effects` (tl.inline_asm_elementwise) -> one LLVM inline-asm call per instance.

A thread's elements are taken in register order, `pack` at a time (the operands share the result's layout, so
register r of every operand is the same element). Elements are packed into registers as compiler/ir/inline_asm.py
plans them (narrow elements as a vector bitcast to one integer, the first element in the low bits), each register
is brought to its constraint's type (`h` i16, `r` i32, `l` i64, `f` float, `d` double: same width by bitcast,
narrower integers widened), and the outputs come back the same way. A thread whose register count is not a
multiple of `pack` (fewer elements than `pack`: small tiles, scalars) fills its last instance with undefined
values and drops their results, as Triton does.

Layouts are not changed for `pack`: the op is elementwise, so any grouping of a thread's elements computes the
same values (Triton leaves the grouping unspecified), and forcing a layout with `pack` contiguous elements per
thread would cost a shared-memory conversion wherever the operands arrive in another one. Where the operands
come from loads, the coalesced layout already gives a thread up to 16 contiguous bytes along the fastest dim, so
its registers group into consecutive elements (int8 pack=4 over 512 elements and 128 threads: one 32-bit load,
one asm, one 32-bit store per thread).
"""
from __future__ import annotations

import llvmlite.ir as ir

from ..ir import inline_asm as ia
from . import common as C
from .common import emits, error, lty


def llvm_asm_string(text: str) -> str:
    """`text` as the body of an LLVM IR string literal (llvmlite writes inline asm unescaped): quotes,
    backslashes, newlines and other control characters as \\XX hex escapes."""
    out = []
    for ch in text:
        o = ord(ch)
        out.append(f"\\{o:02X}" if ch in '"\\' or o < 0x20 or o == 0x7F else ch)
    return "".join(out)


def _bits(t) -> int:
    if isinstance(t, ir.IntType):
        return t.width
    if isinstance(t, ir.PointerType):
        return 64
    return {C.F16: 16, C.BF16: 16, C.F32: 32, C.F64: 64}[t]


def _reg_type(cons: str, reg: ia.Reg, natural, outs_types):
    """The LLVM type a register is passed in: its constraint letter's, a tied output's, or its own."""
    lt = ia.letter(cons)
    if isinstance(lt, int):
        return outs_types[lt]
    if lt is None:
        return natural
    bits, is_float = ia.REGISTERS[lt]
    return (C.F32 if bits == 32 else C.F64) if is_float else ir.IntType(bits)


def _to_reg(e, x, rt, signed, loc):
    """Value x (a packed register's value) in a register of type rt."""
    if x.type == rt:
        return x
    if isinstance(x.type, ir.PointerType):
        x = e.b.ptrtoint(x, C.I64)
        if x.type == rt:
            return x
    xb, rb = _bits(x.type), _bits(rt)
    if xb == rb:
        return e.b.bitcast(x, rt)
    if xb > rb or not isinstance(rt, ir.IntType):
        raise error(f"inline asm: a {xb}-bit value does not fit a {rt} register", loc)
    if not isinstance(x.type, ir.IntType):
        x = e.b.bitcast(x, ir.IntType(xb))
    return e.b.sext(x, rt) if signed else e.b.zext(x, rt)


def _from_reg(e, r, vt, loc):
    """Output register r as a value of type vt (the packed result's type)."""
    if r.type == vt:
        return r
    rb, vb = _bits(r.type), _bits(vt)
    if rb == vb:
        return e.b.bitcast(r, vt)
    if rb < vb or not isinstance(r.type, ir.IntType):
        raise error(f"inline asm: a {rb}-bit output register cannot hold a {vb}-bit result", loc)
    r = e.b.trunc(r, ir.IntType(vb))
    return r if vt == r.type else e.b.bitcast(r, vt)


def _packed_type(elem, n):
    """The value type of a register holding n elements of `elem`: the element's own type, or an integer."""
    return lty(elem) if n == 1 else ir.IntType(n * ia.elem_bits(elem))


def _pack(e, vals, elem):
    if len(vals) == 1:
        return vals[0]
    vt = ir.VectorType(lty(elem), len(vals))
    v = ir.Constant(vt, ir.Undefined)
    for i, x in enumerate(vals):
        v = e.b.insert_element(v, x, e.i32(i))
    return e.b.bitcast(v, _packed_type(elem, len(vals)))


def _unpack(e, w, elem, n):
    if n == 1:
        return [w]
    v = e.b.bitcast(w, ir.VectorType(lty(elem), n))
    return [e.b.extract_element(v, e.i32(i)) for i in range(n)]


@emits("inline_asm", "inline_asm_effects")
def _e_inline_asm(e, op):
    pack = op.attrs["pack"]
    arg_el = [v.type.element for v in op.operands]
    res_el = [r.type.element for r in op.results]
    try:
        outs, ins = ia.plan(arg_el, res_el, pack)
    except ia.InlineAsmError as ex:
        raise error(f"tl.inline_asm_elementwise: {ex}", op.loc) from None
    cons = [c for c in ia.split_constraints(op.attrs["constraints"]) if not c.startswith("~")]
    if len(cons) != len(outs) + len(ins):
        raise error(f"tl.inline_asm_elementwise: {len(cons)} constraints for {len(outs) + len(ins)} registers",
                    op.loc)
    out_types = [_reg_type(c, r, _packed_type(res_el[r.value], r.elems), []) for c, r in zip(cons, outs)]
    in_types = [_reg_type(c, r, _packed_type(arg_el[r.value], r.elems), out_types)
                for c, r in zip(cons[len(outs):], ins)]
    ret = out_types[0] if len(out_types) == 1 else ir.LiteralStructType(out_types)
    asm = ir.InlineAsm(ir.FunctionType(ret, in_types), llvm_asm_string(op.attrs["asm"]), op.attrs["constraints"],
                       side_effect=op.kind == "inline_asm_effects")
    cols = [list(e.regs(v)) for v in op.operands]
    n = len(cols[0]) if cols else 1
    total = -(-n // pack) * pack
    for col, el in zip(cols, arg_el):
        col += [ir.Constant(lty(el), ir.Undefined)] * (total - n)
    results = [[] for _ in op.results]
    for base in range(0, total, pack):
        taken = [0] * len(cols)
        args = []
        for r, rt in zip(ins, in_types):
            el = arg_el[r.value]
            k = taken[r.value]
            taken[r.value] += r.elems
            x = _pack(e, cols[r.value][base + k:base + k + r.elems], el)
            args.append(_to_reg(e, x, rt, r.elems == 1 and el.kind == "int", op.loc))
        got = e.b.call(asm, args)
        for j, (r, rt) in enumerate(zip(outs, out_types)):
            w = got if len(outs) == 1 else e.b.extract_value(got, j)
            el = res_el[r.value]
            results[r.value] += _unpack(e, _from_reg(e, w, _packed_type(el, r.elems), op.loc), el, r.elems)
    for res, regs in zip(op.results, results):
        e.put(res, regs[:n], e.layout_of(res) if res.type.shape else None)
