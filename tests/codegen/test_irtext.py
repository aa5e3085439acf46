"""codegen/irtext.py writes the same LLVM IR text as llvmlite's str(module)."""
from __future__ import annotations

import os
import sys

import llvmlite.ir as ir
import pytest

sys.path.insert(0, os.path.dirname(__file__))
import kernels as K  # noqa: E402

import compiler.codegen.llvm as L  # noqa: E402
from compiler.codegen import compile_function  # noqa: E402
from compiler.codegen.irtext import instr_text, module_text  # noqa: E402
from compiler.ir import types as T  # noqa: E402
from compiler.options import Options  # noqa: E402


def _both(mod):
    fast = module_text(mod)  # first: llvmlite's str() caches the texts it makes, which module_text would reuse
    assert fast == str(mod)
    return fast


def test_every_instruction_form():
    """The forms module_text spells itself, the ones it leaves to llvmlite, and llvmlite's caches."""
    mod = ir.Module("m")
    i32, f32, i8 = ir.IntType(32), ir.FloatType(), ir.IntType(8)
    ptr = ir.PointerType(addrspace=1)
    vec = ir.VectorType(f32, 2)
    st = ir.LiteralStructType([f32, f32])
    fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), [ptr, i32, f32]), "k")
    fn.calling_convention = "ptx_kernel"
    p, n, x = fn.args
    ext = ir.Function(mod, ir.FunctionType(i32, [i32]), "llvm.nvvm.some")
    va = ir.Function(mod, ir.FunctionType(i32, [i32], var_arg=True), "va")
    agg = ir.Function(mod, ir.FunctionType(st, []), "agg")
    entry, loop, done = fn.append_basic_block("entry"), fn.append_basic_block("loop"), fn.append_basic_block("x y")
    di = mod.add_debug_info("DILocation", {"line": 3, "column": 1, "scope": mod.add_debug_info(
        "DISubprogram", {"name": "k"}, is_distinct=True)})
    b = ir.IRBuilder(entry)
    a = b.add(n, ir.Constant(i32, 4))
    a.set_metadata("dbg", di)
    b.mul(a, a, flags=["nsw"])
    b.fmul(x, ir.Constant(f32, 1.5), flags=["contract"])
    b.fadd(x, x)
    b.icmp_signed("<", a, n).set_metadata("dbg", di)
    b.fcmp_ordered("<", x, x)
    b.select(b.icmp_unsigned("==", n, ir.Constant(i32, 0)), a, n)
    g = b.gep(p, [a], source_etype=f32)
    g.set_metadata("dbg", di)
    b.gep(p, [ir.Constant(i32, 2)], inbounds=True, source_etype=i8)
    ld = b.load(g, typ=f32)
    ld.align = 4
    b.load(g, typ=f32).set_metadata("dbg", di)
    b.store(ld, g).align = 4
    b.store(ld, g).set_metadata("dbg", di)
    b.sext(a, ir.IntType(64))
    b.bitcast(a, f32).set_metadata("dbg", di)
    v = b.insert_element(ir.Constant(vec, None), x, ir.Constant(i32, 0))
    b.extract_element(v, ir.Constant(i32, 1))
    b.shuffle_vector(v, v, ir.Constant(ir.VectorType(i32, 2), [1, 0]))
    s = b.call(agg, [])
    b.extract_value(s, 1).set_metadata("dbg", di)
    b.insert_value(s, x, 0)
    b.call(ext, [a]).set_metadata("dbg", di)
    b.call(ext, [a], fastmath=("fast",))  # forms left to llvmlite
    b.call(ext, [a], tail=True)
    b.call(ext, [a], attrs=("nounwind",))
    b.call(va, [a, a])
    b.call(ir.InlineAsm(ir.FunctionType(i32, [i32]), "mov.b32 $0, $1;", "=r,r"), [a])
    cached = b.xor(a, n)
    str(cached)  # a text cached before it would change: llvmlite writes the cached one
    cached.operands = (n, a)
    b.branch(loop)
    b.position_at_end(loop)
    phi = b.phi(i32)
    phi.add_incoming(ir.Constant(i32, 0), entry)
    nxt = b.add(phi, ir.Constant(i32, 1), name='odd"name')
    phi.add_incoming(nxt, loop)
    b.cbranch(b.icmp_signed("<", nxt, n), loop, done)
    b.position_at_end(done)
    b.ret_void()
    n.get_reference()
    n.name = "renamed"  # llvmlite keeps the reference it cached
    text = _both(mod)
    for part in ("call fast i32", "tail call", "nounwind", "(i32, ...)", "asm", '%"odd\\22name"', '"x y":', "align 4"):
        assert part in text
    assert '%"renamed"' not in text  # the reference cached before the rename
    assert instr_text(cached) == str(cached)


@pytest.mark.parametrize("make", [lambda: K.add_kernel(), lambda: K.softmax_kernel(), lambda: K.cumsum_kernel(),
                                  lambda: K.argmax_kernel(), lambda: K.loop_kernel(), lambda: K.if_while_kernel(),
                                  lambda: K.transpose_kernel(), lambda: K.atomics_kernel(dt=T.float16),
                                  lambda: K.cast_kernel(T.float32, T.float16)])
def test_kernels(make, monkeypatch):
    """The emitter's modules, written both ways."""
    seen = []

    def checked(mod):
        seen.append(1)
        return _both(mod)

    monkeypatch.setattr(L, "module_text", checked)
    compile_function(make(), Options(), cubin=False)
    assert seen


def test_folding_builder_builds_llvmlite_instructions():
    """FoldingIRBuilder's own binary operators and casts make the objects llvmlite's builder makes."""
    from compiler.codegen.common import FastNameScope, FoldingIRBuilder

    def build(cls):
        mod = ir.Module("m")
        fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), [ir.IntType(32), ir.FloatType()]), "k")
        fn.scope = FastNameScope.like(fn.scope)
        b = cls(fn.append_basic_block("entry"))
        b.debug_metadata = mod.add_debug_info("DILocation", {"line": 1})
        n, x = fn.args
        out = [b.add(n, n), b.sub(n, n, flags=["nsw"]), b.mul(n, n), b.shl(n, n), b.lshr(n, n), b.and_(n, n),
               b.or_(n, n), b.xor(n, n, name="named"), b.fadd(x, x, flags=("contract",)), b.fsub(x, x), b.fmul(x, x),
               b.fdiv(x, x), b.bitcast(n, ir.FloatType()), b.zext(n, ir.IntType(64)), b.sext(n, ir.IntType(64)),
               b.trunc(n, ir.IntType(8)), b.fpext(x, ir.DoubleType()), b.fptrunc(x, ir.HalfType()),
               b.sitofp(n, ir.FloatType()), b.uitofp(n, ir.FloatType())]
        assert b.bitcast(n, ir.IntType(32)) is n
        return mod, out

    mod_a, ours = build(FoldingIRBuilder)
    mod_b, theirs = build(ir.IRBuilder)
    assert module_text(mod_a) == str(mod_b)
    for a, b in zip(ours, theirs):
        assert type(a) is type(b)
        da, db = ({k: v for k, v in vars(i).items() if "Caching__" not in k} for i in (a, b))  # not the text caches
        assert da.keys() == db.keys()
        assert all(type(da[k]) is type(db[k]) for k in da), (a, b)
        assert (a.opname, a.flags, str(a.type), a.name) == (b.opname, b.flags, str(b.type), b.name)
