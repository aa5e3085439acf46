"""Global memory: vectorized loads/stores, atomics, device print and assert.

Vector width of a load/store = the largest v (a power of two) such that v registers of the thread hold
consecutive elements along the fastest dim, the pointer is contiguous over v elements and aligned to v * size
(axis info), the mask is constant over them, and v * size <= 16 bytes. Masked (predicated) accesses and cache
hints go through inline PTX (`@p ld.global.v4.b32 {...}, [addr];`), unmasked plain ones through LLVM loads and
stores with the right alignment. Holders of replicated elements are masked off for stores and atomics, so each
element is written once (a scalar store is done by thread 0).
"""
from __future__ import annotations

import llvmlite.ir as ir

from ..ir import types as T
from ..passes import axisinfo
from . import common as C
from .common import Tile, emits, error, uses


def _ai(e, v):
    if not hasattr(e, "ai"):
        e.ai = axisinfo.analyze(e.fn_ir)
    return e.ai.get(v.id) or axisinfo.AxisInfo.unknown(v.type.shape)


def vector_width(e, ll, ptr, mask, ebytes) -> tuple:
    """(v, dim): how many consecutive registers one access may cover, and along which dim."""
    if not ll.reg:
        return 1, 0
    b0 = ll.reg[0]
    dims = [d for d, x in enumerate(b0) if x]
    if len(dims) != 1 or b0[dims[0]] != 1:
        return 1, 0
    d = dims[0]
    v = 1
    while log2i(v) < len(ll.reg) and ll.reg[log2i(v)] == tuple(v if i == d else 0 for i in range(len(b0))):
        v *= 2
    info = _ai(e, ptr)
    v = min(v, info.contiguity[d], max(1, info.divisibility[d] // ebytes), max(1, 16 // ebytes))
    if mask is not None:
        v = min(v, _ai(e, mask).constancy[d])
    return max(1, v), d


def same_run_registers(ll, regs, constancy, num_warps) -> dict:
    """{r: the first register of `regs` whose element lies in the same run of constant values as r's in every
    thread} for a value whose axis info gives `constancy` (runs of that length along each dim, aligned to it): such
    registers hold equal values (a mask over K rows 8 apart where K is a multiple of 16), so one computes for both.
    Decided per dim over the thread coordinates that occur along it."""
    rank = len(ll.shape)
    const = tuple(constancy)[:rank] if rank else ()
    along = [sorted({t[d] for t in ll.thread_coords(num_warps)}) for d in range(rank)]
    keys = {}
    out = {}
    for r in regs:
        rc = ll.reg_coord(r)
        key = tuple(tuple((t + rc[d]) // const[d] for t in along[d]) for d in range(rank))
        out[r] = keys.setdefault(key, r)
    return out


def log2i(n):
    return n.bit_length() - 1


def _words(vec, ebits):
    """How a vector of `vec` elements of `ebits` bits travels: (word bits, number of words)."""
    total = vec * ebits
    w = 64 if ebits == 64 else min(32, total)
    return w, total // w


_WCONS = {8: "h", 16: "h", 32: "r", 64: "l"}


def _pack(e, vals, mt, w, n):
    """Element values (memory type mt) -> n integer words of w bits."""
    per = len(vals) // n
    wt = ir.IntType(max(w, 16))
    out = []
    for i in range(n):
        chunk = vals[i * per:(i + 1) * per]
        if per == 1:
            x = chunk[0]
            if not isinstance(x.type, ir.IntType):
                x = e.b.bitcast(x, ir.IntType(w))
        else:
            vt = ir.VectorType(mt, per)
            vec = ir.Constant(vt, ir.Undefined)
            for j, c in enumerate(chunk):
                vec = e.b.insert_element(vec, c, e.i32(j))
            x = e.b.bitcast(vec, ir.IntType(w))
        if x.type.width < wt.width:
            x = e.b.zext(x, wt)
        out.append(x)
    return out


def _unpack(e, words, mt, w, n, vec):
    per = vec // n
    out = []
    for x in words:
        if x.type.width != w:
            x = e.b.trunc(x, ir.IntType(w))
        if per == 1:
            out.append(x if mt == x.type else e.b.bitcast(x, mt))
        else:
            v = e.b.bitcast(x, ir.VectorType(mt, per))
            out.extend(e.b.extract_element(v, e.i32(j)) for j in range(per))
    return out


def _to_mem(e, x, elem):
    return e.b.zext(x, C.I8) if elem.is_bool() else x


def _from_mem(e, x, elem):
    return e.b.icmp_unsigned("!=", x, ir.Constant(C.I8, 0)) if elem.is_bool() else x


_LD_CACHE = frozenset((".ca", ".cg", ".cs", ".lu", ".cv"))
_ST_CACHE = frozenset((".wb", ".cg", ".cs", ".wt"))


def _hints(attrs, load):
    """PTX qualifiers for the cache/eviction attrs. PTX allows a cache operator or an L1 eviction priority,
    not both: the cache operator wins; qualifiers the instruction does not know are dropped silently."""
    cache = attrs.get("cache") or ""
    if cache and not cache.startswith("."):
        cache = "." + cache
    if cache in (_LD_CACHE if load else _ST_CACHE):
        return cache
    ev = attrs.get("eviction") or ""
    if ev in ("evict_first", "evict_last", "no_allocate" if load else "") and ev:
        return ".L1::" + ev
    return ""


def _ld(e, addr, elem, vec, pred, others, attrs, late=None):
    """The values of one vector load. With `late` (a list), the load is issued now and the function that unpacks
    its values is appended there instead, to be called after the op's other loads."""
    mt = C.mem_lty(elem)
    ebits = 8 if elem.is_bool() else elem.bits
    hints = _hints(attrs, True)
    if pred is None and not hints and not attrs.get("volatile"):
        t = mt if vec == 1 else ir.VectorType(mt, vec)
        x = e.b.load(addr, typ=t, align=vec * ebits // 8)

        def plain():
            vals = [x] if vec == 1 else [e.b.extract_element(x, e.i32(j)) for j in range(vec)]
            return [_from_mem(e, v, elem) for v in vals]
        if late is not None:
            late.append(plain)
            return None
        return plain()
    w, n = _words(vec, ebits)
    wt = ir.IntType(max(w, 16))
    cons = _WCONS[w]
    outs = ", ".join(f"${i}" for i in range(n))
    outs = f"{{{outs}}}" if n > 1 else outs
    space = "ld.volatile.global" if attrs.get("volatile") else "ld.global" + hints
    vs = f".v{n}" if n > 1 else ""
    asm, cons_l, args = [], [f"={cons}"] * n, []
    if pred is not None:
        # Masked-off lanes keep `other` (0 when absent): move it in first, then the predicated load.
        if others is not None:
            owords = _pack(e, [_to_mem(e, o, elem) for o in others], mt, w, n)
        else:
            owords = [ir.Constant(wt, 0)] * n
        for i in range(n):
            asm.append(f"mov.b{max(w, 16)} ${i}, ${n + 2 + i};")
        asm.append(f"@${n} {space}{vs}.b{w} {outs}, [${n + 1}];")
        cons_l += ["b", "l"] + [cons] * n
        args = [pred, addr] + owords
    else:
        asm.append(f"{space}{vs}.b{w} {outs}, [${n}];")
        cons_l += ["l"]
        args = [addr]
    rt = wt if n == 1 else ir.LiteralStructType([wt] * n)
    fty = ir.FunctionType(rt, [a.type for a in args])
    # side_effect: an inline-asm load must not be CSE'd or moved across stores.
    r = e.b.call(ir.InlineAsm(fty, " ".join(asm), ",".join(cons_l), side_effect=True), args)

    def unpack():
        words = [r] if n == 1 else [e.b.extract_value(r, i) for i in range(n)]
        return [_from_mem(e, v, elem) for v in _unpack(e, words, mt, w, n, vec)]
    if late is not None:
        late.append(unpack)
        return None
    return unpack()


def _st(e, addr, elem, vals, pred, attrs):
    mt = C.mem_lty(elem)
    vec = len(vals)
    ebits = 8 if elem.is_bool() else elem.bits
    vals = [_to_mem(e, v, elem) for v in vals]
    hints = _hints(attrs, False)
    if pred is None and not hints:
        if vec == 1:
            e.b.store(vals[0], addr, align=ebits // 8)
        else:
            vt = ir.VectorType(mt, vec)
            x = ir.Constant(vt, ir.Undefined)
            for j, v in enumerate(vals):
                x = e.b.insert_element(x, v, e.i32(j))
            e.b.store(x, addr, align=vec * ebits // 8)
        return
    w, n = _words(vec, ebits)
    words = _pack(e, vals, mt, w, n)
    cons = _WCONS[w]
    base = 0 if pred is None else 1
    ins = ", ".join(f"${base + 1 + i}" for i in range(n))
    ins = f"{{{ins}}}" if n > 1 else ins
    vs = f".v{n}" if n > 1 else ""
    p = "@$0 " if pred is not None else ""
    asm = f"{p}st.global{hints}{vs}.b{w} [${base}], {ins};"
    args = ([pred] if pred is not None else []) + [addr] + words
    cons_l = (["b"] if pred is not None else []) + ["l"] + [cons] * n
    fty = ir.FunctionType(C.VOID, [a.type for a in args])
    e.b.call(ir.InlineAsm(fty, asm, ",".join(cons_l), side_effect=True), args)


@emits("load")
def _e_load(e, op):
    elem = op.result.type.element
    if isinstance(elem, T.pointer_type):
        raise error("loading pointers is not supported", op.loc)
    p = e.get(op.operands[0])
    mask = op.operands[1] if op.attrs.get("has_mask") else None
    other = op.operands[2 if mask is not None else 1] if op.attrs.get("has_other") else None
    if not isinstance(p, Tile):
        pred = e.get(mask) if mask is not None else None
        o = [e.get(other)] if other is not None else None
        e.put(op.result, _ld(e, p, elem, 1, pred, o, op.attrs))
        return
    ll = p.ll
    eb = C.elem_bytes(elem)
    vec, _ = vector_width(e, ll, op.operands[0], mask, eb)
    mregs = e.regs(mask) if mask is not None else None
    oregs = e.regs(other) if other is not None else None
    # every vector load of the tile issued before the words of any is split into its elements: unpacked one by one,
    # ptxas consumed each load before issuing the next (column argmax: 3 of its 4 loop loads in flight, Triton 4; H100
    # 2026-12-07, the A/B `loads_first`: 0.914 of the time over the 4 corpus kernels whose SASS it changes,
    # benchmarks/2026-12-07d-h100/abin5.md)
    late = []
    for r0 in range(0, ll.num_regs, vec):
        pred = mregs[r0] if mregs is not None else None
        o = oregs[r0:r0 + vec] if oregs is not None else None
        _ld(e, p.regs[r0], elem, vec, pred, o, op.attrs, late)
    e.put(op.result, [x for unpack in late for x in unpack()], ll)


@emits("store")
def _e_store(e, op):
    elem = op.operands[1].type.element
    p = e.get(op.operands[0])
    mask = op.operands[2] if op.attrs.get("has_mask") else None
    if not isinstance(p, Tile):
        pred = e.and_pred(e.get(mask) if mask is not None else None, e.b.icmp_unsigned("==", e.tid, e.i32(0)))
        _st(e, p, elem, [e.get(op.operands[1])], pred, op.attrs)
        return
    ll = p.ll
    vec, _ = vector_width(e, ll, op.operands[0], mask, C.elem_bytes(elem))
    uniq = e.unique_pred(ll)
    vregs = e.regs(op.operands[1])
    mregs = e.regs(mask) if mask is not None else None
    for r0 in range(0, ll.num_regs, vec):
        pred = e.and_pred(mregs[r0] if mregs is not None else None, uniq)
        _st(e, p.regs[r0], elem, vregs[r0:r0 + vec], pred, op.attrs)


# ---- atomics ---------------------------------------------------------------------------------------------------

_SEM = {"acq_rel": ".acq_rel", "acquire": ".acquire", "release": ".release", "relaxed": ".relaxed", "": ".acq_rel"}
_SCOPE = {"gpu": ".gpu", "cta": ".cta", "sys": ".sys", "": ".gpu"}


def _atom_type(op_name, elem):
    """PTX type suffix for atom.<op> on `elem`, or None when PTX has no such atomic."""
    k, bits = elem.kind, elem.bits
    if op_name == "add":
        if k == "float":
            return {16: ".noftz.f16" if elem.is_fp16() else ".noftz.bf16", 32: ".f32", 64: ".f64"}[bits]
        return {32: ".u32", 64: ".u64"}.get(bits)
    if op_name in ("max", "min"):
        if k == "float":
            return None
        return {(32, "int"): ".s32", (64, "int"): ".s64", (32, "uint"): ".u32", (64, "uint"): ".u64"}.get((bits, k))
    if op_name == "cas":  # PTX has atom.cas.b16 (sm_70+), no 16-bit form of the others
        return {16: ".b16", 32: ".b32", 64: ".b64"}.get(bits)
    if op_name in ("and", "or", "xor", "xchg"):
        return {32: ".b32", 64: ".b64"}.get(bits)
    return None


def _atom(e, ptx_op, ty, addr, vals, pred, sem, scope, rtype):
    """One predicated `atom` instruction; returns the old value (0 where the predicate was off)."""
    w = 64 if "64" in ty else (16 if "16" in ty else 32)
    cons = {16: "h", 32: "r", 64: "l"}[w]
    nv = len(vals)
    ins = ", ".join(f"${3 + i}" for i in range(nv))
    # qualifiers in the order Triton writes them (ptxas takes any order, the machine code is the same): the space,
    # then the scope and the semantics, those two the other way round for cas (tools and tests grep for them)
    quals = f".global{sem}{scope}" if ptx_op == "cas" else f".global{scope}{sem}"
    asm = f"mov.b{w} $0, 0; @$1 atom{quals}.{ptx_op}{ty} $0, [$2], {ins};"
    it = ir.IntType(w)
    ivals = [v if isinstance(v.type, ir.IntType) else e.b.bitcast(v, it) for v in vals]
    args = [pred, addr] + ivals
    fty = ir.FunctionType(it, [a.type for a in args])
    r = e.b.call(ir.InlineAsm(fty, asm, ",".join([f"={cons}", "b", "l"] + [cons] * nv), side_effect=True), args)
    return r if rtype == it else e.b.bitcast(r, rtype)


def _rmw_one(e, op, addr, val, pred):
    elem = op.result.type.element
    name = op.attrs["op"]
    sem, scope = _SEM[op.attrs.get("sem", "")], _SCOPE[op.attrs.get("scope", "")]
    rt = C.lty(elem)
    if elem.kind == "float" and elem.bits == 16 and name in ("max", "min"):
        return _minmax16_cas(e, name, elem, addr, val, pred, sem, scope)
    if elem.is_bool() or (elem.bits < 32 and not (elem.kind == "float" and name in ("add", "max", "min"))):
        raise error(f"atomic_{name} on {elem} is not supported (32/64-bit ints, f32/f64, f16/bf16 add, min, max)",
                    op.loc)
    if name in ("max", "min") and elem.kind == "float":
        # Floats as ints: for x >= 0 (sign clear) signed-int order is float order; for negatives unsigned-int
        # order is reversed float order. So max = x>=0 ? atom.max.s : atom.min.u (min the other way round).
        bits = elem.bits
        it = ir.IntType(bits)
        xi = e.b.bitcast(val, it)
        pos = e.b.icmp_signed(">=", xi, ir.Constant(it, 0))
        a_op, b_op = ("max", "min") if name == "max" else ("min", "max")
        r1 = _atom(e, a_op, f".s{bits}", addr, [xi], e.b.and_(pred, pos), sem, scope, it)
        r2 = _atom(e, b_op, f".u{bits}", addr, [xi], e.b.and_(pred, e.b.not_(pos)), sem, scope, it)
        return e.b.bitcast(e.b.select(pos, r1, r2), rt)
    ty = _atom_type(name, elem)
    if ty is None:
        raise error(f"atomic_{name} on {elem} is not supported", op.loc)
    ptx_op = "exch" if name == "xchg" else name
    if elem.kind == "float" and name != "add":
        return _atom(e, ptx_op, ty, addr, [e.b.bitcast(val, ir.IntType(elem.bits))], pred, sem, scope, rt)
    return _atom(e, ptx_op, ty, addr, [val], pred, sem, scope, rt)


def _minmax16_cas(e, name, elem, addr, val, pred, sem, scope):
    """atomic min/max of one f16/bf16 element: PTX has these only as vectors of pairs (atom.v2.f16x2.min), so a
    compare-and-swap loop on the 16-bit word (atom.cas.b16): read it, take min/max with `val` (min.f16: a NaN
    operand loses, as in the interpreter), swap it in if the word is still what was read, else retry with what
    was there. The old value is the one the successful swap replaced (0 where the predicate was off). The labels
    are local to the asm's braces, so each element's copy keeps its own."""
    ty = "f16" if elem.is_fp16() else "bf16"
    asm = ("{ .reg .pred %p; .reg .b16 %n, %o; mov.b16 $0, 0; @!$1 bra done; ld.global.b16 $0, [$2]; retry: "
           f"{name}.{ty} %n, $0, $3; atom.global{sem}{scope}.cas.b16 %o, [$2], $0, %n; setp.ne.b16 %p, %o, $0; "
           "mov.b16 $0, %o; @%p bra retry; done: }")
    args = [pred, addr, e.b.bitcast(val, C.I16)]
    fty = ir.FunctionType(C.I16, [a.type for a in args])
    r = e.b.call(ir.InlineAsm(fty, asm, "=&h,b,l,h", side_effect=True), args)
    return e.b.bitcast(r, C.lty(elem))


def _cas_one(e, op, addr, cmp, val, pred):
    elem = op.result.type.element
    ty = _atom_type("cas", elem)
    if ty is None:
        raise error(f"atomic_cas on {elem} is not supported (16/32/64-bit types)", op.loc)
    sem, scope = _SEM[op.attrs.get("sem", "")], _SCOPE[op.attrs.get("scope", "")]
    return _atom(e, "cas", ty, addr, [cmp, val], pred, sem, scope, C.lty(elem))


def _broadcast_scalar(e, v):
    """Thread 0's value of `v` to every thread (through shared memory)."""
    nb = max(4, v.type.width // 8 if isinstance(v.type, ir.IntType) else {C.F16: 2, C.BF16: 2, C.F32: 4,
                                                                               C.F64: 8}[v.type])
    e.smem_begin(nb)
    ptr = e.smem_ptr(0)
    is0 = e.b.icmp_unsigned("==", e.tid, e.i32(0))
    with e.b.if_then(is0):
        e.b.store(v, ptr)
    e.barrier()
    return e.b.load(ptr, typ=v.type)


def _atomic(e, op, one, nvals):
    p = e.get(op.operands[0])
    has_mask = op.attrs.get("has_mask", False)
    vals = op.operands[1:1 + nvals]
    mask = op.operands[1 + nvals] if has_mask else None
    if not isinstance(p, Tile):
        pred = e.b.icmp_unsigned("==", e.tid, e.i32(0))
        if mask is not None:
            pred = e.b.and_(pred, e.get(mask))
        r = one(e, op, p, *[e.get(v) for v in vals], pred)
        # the old value goes to every thread only when something reads it (a lock's release, a flag set:
        # no shared-memory round trip and its two barriers)
        e.put(op.result, [_broadcast_scalar(e, r) if uses(op.block, op.result) else r])
        return
    ll = p.ll
    uniq = e.unique_pred(ll)
    cols = [e.regs(v) for v in vals]
    mregs = e.regs(mask) if mask is not None else None
    vec = _atom_vector_width(e, op, ll, mask) if one is _rmw_one else 1
    out = []
    for r in range(0, ll.num_regs, vec):
        pred = e.and_pred(mregs[r] if mregs is not None else None, uniq) or ir.Constant(C.I1, 1)
        if vec > 1:
            out += _atom_vec_add_f32(e, op, p.regs[r], cols[0][r:r + vec], pred)
        else:
            out.append(one(e, op, p.regs[r], *[c[r] for c in cols], pred))
    e.put(op.result, out, ll)


def _atom_vector_width(e, op, ll, mask):
    """Elements one float32 atomic add may cover (sm_90's atom.global.add.v2/.v4.f32): consecutive registers at
    contiguous, aligned addresses under a mask constant over them (the same analysis as vector loads)."""
    if e.opts.sm < 90 or op.attrs.get("op") != "add" or op.result.type.element != T.float32:
        return 1
    v, _ = vector_width(e, ll, op.operands[0], mask, 4)
    return v if v in (2, 4) else (4 if v > 4 else 1)


def _atom_vec_add_f32(e, op, addr, vals, pred):
    """One predicated vector atom.add.f32 over len(vals) consecutive floats at `addr`; the old values (0 where the
    predicate was off)."""
    n = len(vals)
    sem, scope = _SEM[op.attrs.get("sem", "")], _SCOPE[op.attrs.get("scope", "")]
    outs = ", ".join(f"${i}" for i in range(n))
    ins = ", ".join(f"${n + 2 + i}" for i in range(n))
    zero = " ".join(f"mov.b32 ${i}, 0;" for i in range(n))
    asm = f"{zero} @${n} atom.global{scope}{sem}.add.v{n}.f32 {{{outs}}}, [${n + 1}], {{{ins}}};"
    ivals = [e.b.bitcast(v, C.I32) for v in vals]
    args = [pred, addr] + ivals
    rty = ir.LiteralStructType([C.I32] * n)
    fty = ir.FunctionType(rty, [a.type for a in args])
    cons = ",".join(["=r"] * n + ["b", "l"] + ["r"] * n)
    r = e.b.call(ir.InlineAsm(fty, asm, cons, side_effect=True), args)
    return [e.b.bitcast(e.b.extract_value(r, i), C.F32) for i in range(n)]


@emits("atomic_rmw")
def _e_atomic_rmw(e, op):
    _atomic(e, op, _rmw_one, 1)


@emits("atomic_cas")
def _e_atomic_cas(e, op):
    _atomic(e, op, _cas_one, 2)


# ---- print / assert ---------------------------------------------------------------------------------------------

def _fmt(elem, hex_):
    if isinstance(elem, T.pointer_type):
        return "%p"
    if elem.kind == "float":
        return "%a" if hex_ else "%f"
    if hex_:  # zero-padded to the type's width, as the interpreter prints it
        return f"0x%0{max(1, elem.bits // 4)}llx" if elem.bits == 64 else f"0x%0{max(1, elem.bits // 4)}x"
    if elem.bits == 64:
        return "%lld" if elem.kind == "int" else "%llu"
    return "%d" if elem.kind == "int" else "%u"


def _print_arg(e, x, elem, hex_=False):
    if isinstance(elem, T.pointer_type):
        return e.b.addrspacecast(x, C.PTR)
    if elem.kind == "float":
        return e.b.fpext(x, C.F64) if x.type != C.F64 else x
    if elem.bits < 32:  # hex shows the value's own bits (zero-extended)
        return (e.b.sext if elem.kind == "int" and not hex_ else e.b.zext)(x, C.I32)
    return x


def _vprintf(e, fmt, args):
    vprintf = e.intrinsic("vprintf", C.I32, [C.PTR, C.PTR])
    if args:
        st = ir.LiteralStructType([a.type for a in args])
        slot = e.eb.alloca(st)
        slot.type = C.PTR
        for i, a in enumerate(args):
            e.b.store(a, e.b.gep(slot, [e.i32(0), e.i32(i)], source_etype=st))
        buf = e.b.bitcast(slot, C.PTR)
    else:
        buf = ir.Constant(C.PTR, None)
    e.b.call(vprintf, [e.string(fmt), buf])


@emits("print")
def _e_print(e, op):
    from ..ir.ops import print_layout

    hex_ = op.attrs.get("hex", False)
    pid = [e.sreg("ctaid." + a) for a in "xyz"]
    # a scalar (or no value) is printed by every thread, as Triton does; a block's elements once each
    if not op.operands:
        label, _ = print_layout(op.attrs.get("prefix", ""), 0, ())
        _vprintf(e, "pid (%d, %d, %d)" + label.replace("%", "%%") + "\n", pid)
        return
    for k, v in enumerate(op.operands):
        x = e.get(v)
        elem = v.type.element
        f = _fmt(elem, hex_)
        label, widths = print_layout(op.attrs.get("prefix", ""), len(op.operands), v.type.shape)
        label = label.replace("%", "%%") + (f"(operand {k}) " if len(op.operands) > 1 else "")
        if not isinstance(x, Tile):
            _vprintf(e, f"pid (%d, %d, %d) idx (){label}{f}\n", pid + [_print_arg(e, x, elem, hex_)])
            continue
        ll = x.ll
        uniq = e.unique_pred(ll)
        idx_fmt = ", ".join(f"%{w}d" for w in widths)
        for r in range(ll.num_regs):
            coords = [e.coord(ll, r, d) for d in range(len(ll.shape))]
            args = pid + coords + [_print_arg(e, x.regs[r], elem, hex_)]
            fmt = f"pid (%d, %d, %d) idx ({idx_fmt}){label}{f}\n"
            if uniq is None:
                _vprintf(e, fmt, args)
            else:
                with e.b.if_then(uniq):
                    _vprintf(e, fmt, args)


@emits("assert")
def _e_assert(e, op):
    if not e.opts.debug:
        return
    fail = e.intrinsic("__assertfail", C.VOID, [C.PTR, C.PTR, C.I32, C.PTR, C.I64])
    msg = e.string(op.attrs.get("msg", "assertion failed"))
    file = e.string(op.loc.file)
    func = e.string(e.fn_ir.name)
    for c in e.regs(op.operands[0]):
        with e.b.if_then(e.b.not_(c), likely=False):
            e.b.call(fail, [msg, file, e.i32(op.loc.line), func, ir.Constant(C.I64, 1)])
