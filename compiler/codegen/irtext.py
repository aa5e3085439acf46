"""llvmlite IR module -> LLVM IR text, the same text as `str(module)`, in a fraction of its time.

llvmlite spells each instruction through several layers of `str.format` and helper calls (its descr methods,
`_stringify_metadata`, `NamedValue._to_string`), about 4-5 us an instruction: 10-20 ms of a large kernel's compile
(4,000-5,000 instructions). `module_text` writes the instruction classes the emitters make with one format each,
exactly as llvmlite writes them (`tests/codegen/test_irtext.py` compares the two), and leaves every other class,
and any instruction whose form it does not cover (call attributes, fast-math flags on calls, ...), to llvmlite.
"""
from __future__ import annotations

from llvmlite import ir
from llvmlite.ir import instructions as I
from llvmlite.ir import values as V

# llvmlite caches an instruction's text and a value's reference once made (`_StrCaching`,
# `_StringReferenceCaching`); a cached one wins, as in llvmlite
_CACHED = "_StrCaching__cached_str"
_CACHED_REF = "_StringReferenceCaching__cached_refstr"
_plain_ref: dict = {}  # value class -> whether its reference is NamedValue's: prefix + quoted name


def _ref(v) -> str:
    """v.get_reference(), made here for named values and integer constants (llvmlite's first call raises and
    catches an AttributeError on its way to the cache) and cached where llvmlite caches it."""
    try:
        d = v.__dict__
    except AttributeError:
        return v.get_reference()
    got = d.get(_CACHED_REF)
    if got is not None:
        return got
    t = type(v)
    if t is V.Constant:
        c = v.constant
        if type(c) is int and type(v.type) is ir.IntType:
            got = str(c)
    else:
        plain = _plain_ref.get(t)
        if plain is None:
            plain = _plain_ref[t] = getattr(t, "_get_reference", None) is V.NamedValue._get_reference
        if plain:
            name = v._name
            if "\\" not in name and '"' not in name:
                got = f'{v.name_prefix}"{name}"'
    if got is None:
        return v.get_reference()
    d[_CACHED_REF] = got
    return got


def _md(instr) -> str:
    """", !dbg !7": an instruction's metadata as `_stringify_metadata(leading_comma=True)` writes it."""
    md = instr.metadata
    if not md:
        return ""
    if len(md) == 1:  # the common case: just the line
        dbg = md.get("dbg")
        if dbg is not None:
            return ", !dbg " + _ref(dbg)
    return "".join([f", !{k} {_ref(v)}" for k, v in md.items()])


def _named(instr, body: str) -> str:
    """`NamedValue._to_string`: "%name = " before a non-void instruction's body, trailing whitespace gone."""
    if isinstance(instr.type, ir.VoidType):
        return body.rstrip()
    return f"{_ref(instr)} = {body}".rstrip()


def _plain(instr):  # Instruction.descr: binary operators
    opname = instr.opname
    if instr.flags:
        opname = " ".join([opname] + instr.flags)
    ops = ", ".join([_ref(op) for op in instr.operands])
    return f"{opname} {instr.type} {ops}{_md(instr)}"


def _gep(instr):
    idx = ", ".join([f"{i.type} {_ref(i)}" for i in instr.indices])
    op = "getelementptr inbounds" if instr.inbounds else "getelementptr"
    p = instr.pointer
    return f"{op} {instr.source_etype}, {p.type} {_ref(p)}, {idx} {_md(instr)}"


def _extractvalue(instr):
    a = instr.aggregate
    idx = ", ".join([str(i) for i in instr.indices])
    return f"extractvalue {a.type} {_ref(a)}, {idx} {_md(instr)}"


def _cast(instr):
    (v,) = instr.operands
    return f"{instr.opname} {v.type} {_ref(v)} to {instr.type} {_md(instr)}"


def _vector_elem(instr):  # ExtractElement / InsertElement: llvmlite writes no metadata for them
    ops = ", ".join([f"{op.type} {_ref(op)}" for op in instr.operands])
    return f"{instr.opname} {ops}"


def _phi(instr):
    incs = ", ".join([f"[{_ref(v)}, {_ref(b)}]" for v, b in instr.incomings])
    return f"phi {' '.join(instr.flags)} {instr.type} {incs} {_md(instr)}"


def _icmp(instr):
    a, b = instr.operands
    flags = "".join([" " + f for f in instr.flags])
    return f"{instr.opname}{flags} {instr.op} {a.type} {_ref(a)}, {_ref(b)} {_md(instr)}"


def _select(instr):
    c, a, b = instr.operands
    return (f"select {' '.join(instr.flags)} {c.type} {_ref(c)}, {a.type} {_ref(a)}, "
            f"{b.type} {_ref(b)} {_md(instr)}")


def _load(instr):
    (p,) = instr.operands
    align = f", align {instr.align:d}" if instr.align is not None else ""
    return f"load {instr.type}, {p.type} {_ref(p)}{align}{_md(instr)}"


def _store(instr):
    v, p = instr.operands
    align = f", align {instr.align:d}" if instr.align is not None else ""
    return f"store {v.type} {_ref(v)}, {p.type} {_ref(p)}{align}{_md(instr)}"


def _call(instr):
    fnty = instr.callee.function_type
    if instr.arg_attributes or instr.fastmath or instr.attributes or instr.tail or fnty.var_arg:
        return None  # forms this module does not spell: llvmlite's own text
    args = ", ".join([f"{a.type} {_ref(a)}" for a in instr.operands[1:]])
    callee = f"{fnty.return_type} {_ref(instr.callee)}"
    if instr.cconv:
        callee = f"{instr.cconv} {callee}"
    return f"{instr.opname} {callee}({args}){_md(instr)}"


_BODY = {I.Instruction: _plain, I.GEPInstr: _gep, I.ExtractValue: _extractvalue, I.CastInstr: _cast,
         I.ExtractElement: _vector_elem, I.InsertElement: _vector_elem, I.PhiInstr: _phi, I.ICMPInstr: _icmp,
         I.SelectInstr: _select, I.LoadInstr: _load, I.StoreInstr: _store, I.CallInstr: _call}


def instr_text(instr) -> str:
    """str(instr)."""
    got = instr.__dict__.get(_CACHED)
    if got is not None:
        return got
    fn = _BODY.get(type(instr))
    body = fn(instr) if fn is not None else None
    if body is None:
        return str(instr)
    return _named(instr, body)


def _function_text(fn: ir.Function) -> str:
    """str(fn) (Function.descr) for a function with a body."""
    buf = []
    fn.descr_prototype(buf)
    buf.append("{\n")
    for blk in fn.blocks:
        buf.append(f"{blk._format_name()}:\n")
        buf += [f"  {instr_text(i)}\n" for i in blk.instructions]
    buf.append("}\n")
    return "".join(buf)


def module_text(mod: ir.Module) -> str:
    """str(mod) (Module.__repr__), with the bodies of functions written by this module."""
    lines = ['; ModuleID = "%s"' % (mod.name,), 'target triple = "%s"' % (mod.triple,),
             'target datalayout = "%s"' % (mod.data_layout,), '']
    lines += [it.get_declaration() for it in mod.get_identified_types().values()]
    lines += [_function_text(v) if type(v) is V.Function and v.blocks else str(v) for v in mod.globals.values()]
    lines += mod._get_metadata_lines()
    return "\n".join(lines)
