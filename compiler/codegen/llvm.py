"""Tile IR (after the pass pipeline) -> LLVM IR text for the NVPTX backend.

Each block value becomes a `Tile`: its LinearLayout and one LLVM scalar per register; a scalar value is one LLVM
value held by every thread. Per-op work is a table (`common.EMIT`, filled here and in memory.py / reduce.py).
Elementwise ops map a scalar builder over registers; tables below give the scalar builder per (op, dtype class).

Kernel ABI: one `ptx_kernel` function named like the IR function; parameters in argument order: pointers as
`ptr addrspace(1)`, scalars as their LLVM type except int1, passed as i8 (metadata "params" says "abi": "i8").
Thread block: num_warps*32 threads in x (`"nvvm.reqntid"`); dynamic shared memory is one `extern` addrspace(3)
array, size metadata["shared_bytes"].
"""
from __future__ import annotations

import llvmlite.ir as ir

from ..ir import optable, types as T
from ..passes.layouts import linear, log2
from . import common as C
from .common import EMIT, Tile, emits, error, lty
from .irtext import module_text
from . import inline_asm as _inline_asm  # noqa: F401,E402  (registers its emitter: tl.inline_asm_elementwise)
from . import tensormap as _tensormap  # noqa: E402  (registers its emitter: tensormap_create)

# ---- scalar builders per (op, class): class 'f' float, 's' signed int, 'u' unsigned int / bool ----------------


def _cls(elem) -> str:
    if elem.kind == "float":
        return "f"
    return "s" if elem.kind == "int" else "u"


def _intr(e, name, ret, args):
    return e.intrinsic(name, ret, args)


def _minmax(which):
    def f(e, a, b, op):
        c = _cls(op.operands[0].type.element)
        t = a.type
        if c == "f":
            base = ("maximum" if which == "max" else "minimum") if op.attrs.get("propagate_nan") else \
                ("maxnum" if which == "max" else "minnum")
        else:
            base = ("s" if c == "s" else "u") + which
        return e.b.call(e.intrinsic(f"llvm.{base}.{_tname(t)}", t, [t, t]), [a, b])
    return f


def _tname(t) -> str:
    if isinstance(t, ir.IntType):
        return f"i{t.width}"
    return {C.F16: "f16", C.BF16: "bf16", C.F32: "f32", C.F64: "f64"}[t]


def _umulhi(e, a, b, op):
    w = a.type.width
    wide = ir.IntType(2 * w)
    p = e.b.mul(e.b.zext(a, wide), e.b.zext(b, wide))
    return e.b.trunc(e.b.lshr(p, ir.Constant(wide, w)), a.type)


BINARY = {
    # `contract` lets a multiply feed an add as one FMA (Triton's default, enable_fp_fusion); without it the
    # NVPTX back end pins every op with .rn and ptxas may not fuse, costing instructions in every epilogue.
    ("add", "f"): lambda e, a, b, op: e.b.fadd(a, b, flags=e.fp_flags),
    ("add", "s"): lambda e, a, b, op: e.b.add(a, b),
    ("sub", "f"): lambda e, a, b, op: e.b.fsub(a, b, flags=e.fp_flags),
    ("sub", "s"): lambda e, a, b, op: e.b.sub(a, b),
    ("mul", "f"): lambda e, a, b, op: e.b.fmul(a, b, flags=e.fp_flags),
    ("mul", "s"): lambda e, a, b, op: e.b.mul(a, b),
    ("fdiv", "f"): lambda e, a, b, op: _fdiv(e, a, b, op),
    ("frem", "f"): lambda e, a, b, op: e.b.frem(a, b),
    ("idiv", "s"): lambda e, a, b, op: e.b.sdiv(a, b),
    ("idiv", "u"): lambda e, a, b, op: e.b.udiv(a, b),
    ("irem", "s"): lambda e, a, b, op: e.b.srem(a, b),
    ("irem", "u"): lambda e, a, b, op: e.b.urem(a, b),
    ("and", "s"): lambda e, a, b, op: e.b.and_(a, b),
    ("or", "s"): lambda e, a, b, op: e.b.or_(a, b),
    ("xor", "s"): lambda e, a, b, op: e.b.xor(a, b),
    ("shl", "s"): lambda e, a, b, op: e.b.shl(a, b),
    ("shr", "s"): lambda e, a, b, op: e.b.ashr(a, b),
    ("shr", "u"): lambda e, a, b, op: e.b.lshr(a, b),
    ("umulhi", "s"): _umulhi,
    ("max", "f"): _minmax("max"), ("max", "s"): _minmax("max"), ("max", "u"): _minmax("max"),
    ("min", "f"): _minmax("min"), ("min", "s"): _minmax("min"), ("min", "u"): _minmax("min"),
}
# Wrap-around ops are the same for signed and unsigned.
for _k in ("add", "sub", "mul", "and", "or", "xor", "shl", "umulhi"):
    BINARY[(_k, "u")] = BINARY[(_k, "s")]

ICMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def _cmp(e, a, b, op):
    c = _cls(op.operands[0].type.element)
    p = ICMP[op.attrs["pred"]]
    if c == "f":
        # C semantics: every comparison is ordered (false on NaN) except !=, which is unordered (true on NaN).
        return e.b.fcmp_unordered(p, a, b) if p == "!=" else e.b.fcmp_ordered(p, a, b)
    if isinstance(a.type, ir.PointerType):
        a, b = e.b.ptrtoint(a, C.I64), e.b.ptrtoint(b, C.I64)
        return e.b.icmp_unsigned(p, a, b)
    return e.b.icmp_signed(p, a, b) if c == "s" else e.b.icmp_unsigned(p, a, b)


# ---- math: f32 fast paths (Triton's choices), libdevice for the rest; f16/bf16 go through f32 ----------------
LOG2E = 1.4426950408889634


def _asm1(e, text, t, x, cons="f"):
    fty = ir.FunctionType(t, [t])
    return e.b.call(ir.InlineAsm(fty, text, f"={cons},{cons}"), [x])


def _fdiv(e, a, b, op):
    """fp32 `/` is div.full.f32 (max 2 ulp, no slow path), as Triton's; `tl.div_rn` (attr ieee) rounds exactly."""
    if a.type == C.F32 and not op.attrs.get("ieee"):
        fty = ir.FunctionType(C.F32, [C.F32, C.F32])
        return e.b.call(ir.InlineAsm(fty, "div.full.f32 $0, $1, $2;", "=f,f,f"), [a, b])
    return e.b.fdiv(a, b)


def _f32_exp(e, x):
    return _asm1(e, "ex2.approx.f32 $0, $1;", C.F32, e.b.fmul(x, ir.Constant(C.F32, LOG2E)))


def _llvm_unary(name):
    def f(e, x):
        return e.b.call(e.intrinsic(f"llvm.{name}.{_tname(x.type)}", x.type, [x.type]), [x])
    return f


def _libdevice(name):
    def f(e, x):
        return e.b.call(e.intrinsic(name, x.type, [x.type]), [x])
    return f


def _f32_sqrt(e, x):
    """tl.sqrt on float32: Triton's instruction, sqrt.approx.ftz (tl.sqrt_rn is the IEEE-rounded one). The IEEE square
    root's slow path cost AdamW 47 registers and 10 blocks an SM against Triton's 40 and 12, 1.14 of Triton's time on
    the H200 (2026-12-06); measured against it (H100, 2026-12-07, the 13 corpus kernels it changes, 2 rounds beside
    Triton): 0.987 of the time, LayerNorm + gated activations from helpers 0.908, the gated delta rule 0.966, none
    slower (benchmarks/2026-12-07j-h100/abin2.md)."""
    return _lowering("asm:sqrt.approx.ftz.f32 $0, $1;")(e, x)


# Named lowerings the op table's "@<name>" entries refer to (compiler/ir/optable.py MATH[...].lower).
ROUTINES = {"exp_approx": _f32_exp, "sqrt": _f32_sqrt}


def _lowering(spec):
    """The scalar builder for one op table lowering entry (see compiler/ir/optable.py)."""
    if spec.startswith("__nv_"):
        return _libdevice(spec)
    if spec.startswith("llvm."):
        return _llvm_unary(spec[len("llvm."):])
    if spec.startswith("asm:"):
        text = spec[len("asm:"):]
        keep = text.replace(".ftz", "")  # enable_reflect_ftz=False: denormals kept
        return lambda e, x: _asm1(e, text if e.ftz else keep, C.F32, x)
    if spec.startswith("@"):
        return ROUTINES[spec[1:]]
    raise ValueError(f"unknown lowering {spec!r} in the op table")


MATH = {(k, dt): _lowering(spec) for k, d in optable.MATH.items() for dt, spec in d.lower.items()}


def _math(e, x, op):
    elem = op.operands[0].type.element
    k = op.kind
    if elem.kind != "float":
        if k == "abs":
            if elem.kind == "uint" or elem.is_bool():
                return x
            return e.b.call(e.intrinsic(f"llvm.abs.{_tname(x.type)}", x.type, [x.type, C.I1]),
                            [x, ir.Constant(C.I1, 0)])
        raise error(f"{k} needs a floating-point operand, got {elem}", op.loc)
    f = MATH.get((k, elem.name))
    if f is not None:
        return f(e, x)
    # f16 / bf16: compute in f32 and round back once (the f32 result is the correctly rounded-enough value).
    y = MATH[(k, "float32")](e, e.b.fpext(x, C.F32))
    return e.b.fptrunc(y, x.type)


def libdevice_calls(fn) -> set:
    """The libdevice functions emitting `fn` calls (ptx.py links their bitcode), known before emission: the
    symbols of its extern_elementwise ops and the "__nv_" lowerings of its math ops (a float16 / bfloat16 one
    takes the float32 lowering, as _math does)."""
    out = set()

    def walk(block):
        for op in block.ops:
            if op.kind == "extern_elementwise" and str(op.attrs.get("symbol", "")).startswith("__nv_"):
                out.add(op.attrs["symbol"])
            elif op.kind in optable.MATH and op.operands and op.operands[0].type.element.kind == "float":
                lower = optable.MATH[op.kind].lower
                spec = lower.get(op.operands[0].type.element.name) or lower.get("float32", "")
                if spec.startswith("__nv_"):
                    out.add(spec)
            for b in op.blocks:
                walk(b)
    walk(fn.body)
    return out


def _neg(e, x, op):
    return e.b.fneg(x) if op.operands[0].type.element.kind == "float" else e.b.neg(x)


def _not(e, x, op):
    return e.b.not_(x)


UNARY = {"neg": _neg, "not": _not}
for _k in optable.MATH:
    UNARY[_k] = _math


# ---- casts: (from class, to class) -> builder; classes 'b' bool, 's', 'u', 'f' -------------------------------

def _ccls(elem) -> str:
    return "b" if elem.is_bool() else _cls(elem)


def _int_resize(e, x, t, signed):
    if x.type.width == t.width:
        return x
    if x.type.width > t.width:
        return e.b.trunc(x, t)
    return e.b.sext(x, t) if signed else e.b.zext(x, t)


def _fp_resize(e, x, t):
    a, b = x.type, t
    if a == b:
        return x
    if {a, b} == {C.F16, C.BF16}:  # f16 <-> bf16: widening to f32 is exact, so one rounding
        return e.b.fptrunc(e.b.fpext(x, C.F32), b)
    order = {C.F16: 16, C.BF16: 16, C.F32: 32, C.F64: 64}
    return e.b.fpext(x, b) if order[a] < order[b] else e.b.fptrunc(x, b)


def _fp_to_int(signed):
    """A float -> int cast (truncation toward zero, saturation to the destination's range, NaN -> 0: the contract,
    docs/CONTRACTS.md) as one `cvt.rzi`: PTX clamps float-to-integer conversions to the destination's range by
    itself, where LLVM's expansion of llvm.fpto[su]i.sat adds a clamp (two min/max or two compare-selects, in 16-bit
    registers for 8/16-bit results). SmoothQuant's quantizing loop, 32 int8 casts a thread an iteration: 600 -> 505
    SASS instructions; measured against the expansion (H100, 2026-12-06, beside Triton): SmoothQuant 0.929 of the
    time, the 4-bit group quantizer 0.916, none of 18 kernels slower. NaN (measured on an H100,
    tests/ops/test_cast_edges.py test_bare_cvt_rzi_nan): a bare `cvt.rzi` from float32 gives 0 up to 32 bits; from
    float64 it gives the bit pattern 100...0 of its width at every width (-128 for s8, 2^31 for u32), and to 64 bits
    from either. So 64-bit results and every result from float64 take a select.
    8- and 16-bit results come sign/zero-extended in a 32-bit register (F2I.S8 and the like), then truncated.
    float16/bfloat16 sources widen to float32 first (exact)."""
    def f(e, x, t, op):
        if x.type in (C.F16, C.BF16):
            x, src = e.b.fpext(x, C.F32), "f32"
        else:
            src = "f64" if x.type == C.F64 else "f32"
        w = t.width
        rt = C.I64 if w == 64 else C.I32
        cvt = f"cvt.rzi.{'s' if signed else 'u'}{w}.{src} $0, $1;"
        if w == 64 or src == "f64":
            text = f"{{ .reg .pred p; setp.nan.{src} p, $1, $1; {cvt} @p mov.b{64 if w == 64 else 32} $0, 0; }}"
        else:
            text = cvt
        fty = ir.FunctionType(rt, [x.type])
        r = e.b.call(ir.InlineAsm(fty, text, f"={'l' if w == 64 else 'r'},{'d' if src == 'f64' else 'f'}"), [x])
        return r if w >= 32 else e.b.trunc(r, t)
    return f


CASTS = {
    ("b", "s"): lambda e, x, t, op: _int_resize(e, x, t, False),
    ("b", "u"): lambda e, x, t, op: _int_resize(e, x, t, False),
    ("s", "s"): lambda e, x, t, op: _int_resize(e, x, t, True),
    ("s", "u"): lambda e, x, t, op: _int_resize(e, x, t, True),
    ("u", "s"): lambda e, x, t, op: _int_resize(e, x, t, False),
    ("u", "u"): lambda e, x, t, op: _int_resize(e, x, t, False),
    ("s", "b"): lambda e, x, t, op: e.b.icmp_unsigned("!=", x, ir.Constant(x.type, 0)),
    ("u", "b"): lambda e, x, t, op: e.b.icmp_unsigned("!=", x, ir.Constant(x.type, 0)),
    ("b", "b"): lambda e, x, t, op: x,
    ("f", "b"): lambda e, x, t, op: e.b.fcmp_unordered("!=", x, ir.Constant(x.type, 0.0)),
    ("b", "f"): lambda e, x, t, op: e.b.uitofp(x, t),
    ("s", "f"): lambda e, x, t, op: e.b.sitofp(x, t),
    ("u", "f"): lambda e, x, t, op: e.b.uitofp(x, t),
    ("f", "s"): _fp_to_int(True),
    ("f", "u"): _fp_to_int(False),
    ("f", "f"): lambda e, x, t, op: _fp_resize(e, x, t),
}


# ---- the emitter ---------------------------------------------------------------------------------------------


def _sink_compares(bb):
    """A compare of the basic block held past other work (not only past other compares and selects) moves down to
    just before its first user there. A tile op is emitted for all of a thread's registers at once, so a compare of
    blocks leaves as many predicates live as the thread holds elements until its user; a thread has 7 predicate
    registers, and ptxas holds the rest in general ones and orders the work around them. Moved to its user, each
    predicate is made where it is used (select by select). The fused residual + dropout + LayerNorm: keep =
    tl.rand(...) > p held 16 predicates a thread across the divisions x / (1 - p): 95 registers, 63 with the
    compares at their selects (H100, 2026-12-06: 0.944 of the time; 45 kernels whose SASS it changes 0.996, none
    slower by over 2%). A compare reads values defined before it, so moving it down keeps them defined; a compare
    without a user in its block stays."""
    ins = bb.instructions
    cmps = {id(i) for i in ins if isinstance(i, (ir.ICMPInstr, ir.FCMPInstr))}
    if not cmps:
        return
    first = {}
    for k, i in enumerate(ins):
        for o in getattr(i, "operands", ()):
            if id(o) in cmps and id(o) not in first:
                first[id(o)] = k
    # only past other work: a tile's compares right before its selects stay (interleaved there, ptxas issued a
    # safe division's last load after its first reciprocal: 1.07x the time)
    moved = {id(i) for k, i in enumerate(ins) if id(i) in first
             and any(id(x) not in cmps and not isinstance(x, ir.SelectInstr) for x in ins[k + 1:first[id(i)]])}
    if not moved:
        return
    before = {}
    for k, i in enumerate(ins):
        if id(i) in moved:
            before.setdefault(first[id(i)], []).append(i)
    out = []
    for k, i in enumerate(ins):
        out.extend(before.get(k, ()))
        if id(i) not in moved:
            out.append(i)
    bb.instructions[:] = out


class Emitter:
    """Emits one kernel. Entry-block values (thread ids, per-layout thread coordinates) are built once with
    `self.eb` so every later block can use them; `self.b` follows the body's control flow."""

    def __init__(self, module, options):
        self.irmod = module
        self.fn_ir = module.function
        self.opts = options
        self.fp_flags = ("contract",) if getattr(options, "enable_fp_fusion", True) else ()
        self.ftz = getattr(options, "enable_reflect_ftz", True)
        self.nw = options.num_warps
        self.mod = ir.Module(name=self.fn_ir.name)
        self.mod.triple = "nvptx64-nvidia-cuda"
        self.env: dict = {}
        self.smem_bytes = 0
        self.smem_used = False
        self.smem_base = 0  # bytes at the start of shared memory held by a live copy ring (codegen/dot.py)
        self.rings: dict = {}
        self.hoisted: dict = {}  # value id -> SmemOperand: loop-invariant dot operands stored before the loop
        self.hoisted_by_loop: dict = {}  # id(for op) -> (shared memory base, value ids) hoisted before that loop
        self.partial_reduces: set = set()  # id(reduce op) whose sum stays per-lane partial (codegen/reduce.py)
        self.loop_depth = 0  # loops around the op being emitted (smem_begin: a use may follow itself)
        self.retired_dots: set = set()  # ids of wgmma dots whose own wait was wait_group 0 (codegen/dot.py)
        self._coord_cache: dict = {}
        self._pred_cache: dict = {}
        self._strings: dict = {}
        self.dbg = None  # LineInfo (codegen/lineinfo.py) when the kernel carries source line information

    # ---- infrastructure -------------------------------------------------------------------------------
    def intrinsic(self, name, ret, args, var_arg=False):
        g = self.mod.globals.get(name)
        if g is None:
            g = ir.Function(self.mod, ir.FunctionType(ret, args, var_arg=var_arg), name)
        return g

    def sreg(self, name, builder=None):
        b = builder or self.eb
        return b.call(self.intrinsic(f"llvm.nvvm.read.ptx.sreg.{name}", C.I32, []), [])

    def i32(self, v):
        return ir.Constant(C.I32, v)

    @property
    def smem(self):
        g = self.mod.globals.get("tf_smem")
        if g is None:
            g = ir.GlobalVariable(self.mod, ir.ArrayType(C.I8, 0), "tf_smem", addrspace=3)
            g.linkage = "external"
            g.align = 1024  # wgmma's swizzled operand tiles need 1024-byte alignment of the pattern
            g.type = C.SPTR  # opaque pointer, so GEPs/loads/stores of any type check
        return g

    def smem_ptr(self, byte_off, absolute=False):
        """Pointer into dynamic shared memory at `byte_off` (an i32 LLVM value or int) of the current use, which
        starts after a live copy ring (`absolute`: from the start of shared memory)."""
        if self.smem_base and not absolute:
            byte_off = byte_off + self.smem_base if isinstance(byte_off, int) else \
                self.b.add(byte_off, self.i32(self.smem_base))
        if isinstance(byte_off, int):
            byte_off = self.i32(byte_off)
        return self.b.gep(self.smem, [byte_off], source_etype=C.I8)

    def barrier(self):
        self.b.call(self.intrinsic("llvm.nvvm.barrier.cta.sync.aligned.all", C.VOID, [C.I32]), [self.i32(0)])

    def smem_begin(self, nbytes):
        """Start a shared-memory use of `nbytes` at offset 0: all uses share the buffer, so a barrier first
        guards the previous use's readers, wherever an earlier use may reach this one: inside a loop (the next
        iteration's use follows this one's), or after a use on the way here (the paths of an `if` exclude each
        other: each starts from the uses before the `if`, `exclusive_paths`). The first use of a kernel under an early
        `return` then has none, as in Triton's code. Measured against a barrier before every use in a branch
        (H100, 2026-12-07, the A/B `smem_paths`, the 5 corpus kernels it changes, 3 rounds beside Triton): 0.996 of
        the time, none slower (benchmarks/2026-12-07e-h100/abin0.md)."""
        if self.smem_used or self.loop_depth:
            self.barrier()
        self.smem_used = True
        self.smem_bytes = max(self.smem_bytes, self.smem_base + (nbytes + 15) // 16 * 16)

    def loop_body(self, emit):
        """emit() the body of a loop (smem_begin: a shared-memory use in it may follow itself)."""
        self.loop_depth += 1
        try:
            return emit()
        finally:
            self.loop_depth -= 1

    def exclusive_paths(self, paths, merge):
        """Emit each (basic block, fn) of `paths`, branches that exclude each other, each ending in a branch to
        `merge`: each starts from the shared-memory uses before them (smem_begin), and after them shared memory counts
        as used if any path used it. Returns [(fn's result, the block the path ended in)]; emission goes on at
        `merge`."""
        before, used, out = self.smem_used, [], []
        for bb, fn in paths:
            self.b.position_at_end(bb)
            self.smem_used = before
            out.append((fn(), self.b.block))
            used.append(self.smem_used)
            self.b.branch(merge)
        self.smem_used = before or any(used)
        self.b.position_at_end(merge)
        return out

    def string(self, s: str):
        """A constant C string in global memory, returned as a generic pointer."""
        g = self._strings.get(s)
        if g is None:
            data = bytearray(s.encode()) + b"\0"
            ty = ir.ArrayType(C.I8, len(data))
            g = ir.GlobalVariable(self.mod, ty, f"tf_str{len(self._strings)}", addrspace=1)
            g.global_constant = True
            g.linkage = "internal"
            g.initializer = ir.Constant(ty, data)
            g.type = C.GPTR
            self._strings[s] = g
        return self.b.addrspacecast(g, C.PTR)

    # ---- layouts and coordinates ----------------------------------------------------------------------
    def layout_of(self, v):
        """The LinearLayout of block value v (from the layout pass' attrs)."""
        owner = v.owner
        if hasattr(owner, "kind"):
            lay = owner.attrs["_layouts"][v.index]
        else:  # block argument: the parent op recorded per-block argument layouts
            parent = owner.parent
            lay = parent.attrs["_arg_layouts"][parent.blocks.index(owner)][v.index]
        return linear(lay, tuple(v.type.shape), self.nw)

    def result_ll(self, op, i=0):
        return linear(op.attrs["_layouts"][i], tuple(op.results[i].type.shape), self.nw)

    def _bits(self, src, bases, d):
        """Sum of basis[d] over the set bits of `src` (an i32 in the entry block), as shifts of bit runs."""
        pairs = [(i, bs[d]) for i, bs in enumerate(bases) if bs[d]]
        terms, i = [], 0
        while i < len(pairs):
            j = i
            while j + 1 < len(pairs) and pairs[j + 1][0] == pairs[j][0] + 1 and pairs[j + 1][1] == 2 * pairs[j][1]:
                j += 1
            s0, v0 = pairs[i]
            t = self.eb.lshr(src, self.i32(s0)) if s0 else src
            t = self.eb.and_(t, self.i32((1 << (j - i + 1)) - 1))
            if v0 > 1:
                t = self.eb.shl(t, self.i32(log2(v0)))
            terms.append(t)
            i = j + 1
        out = None
        for t in terms:
            out = t if out is None else self.eb.or_(out, t)
        return out

    def thread_coords(self, ll):
        """Per dim: the thread-dependent part of every element's coordinate (None when zero)."""
        key = (ll.lane, ll.warp)
        got = self._coord_cache.get(key)
        if got is None:
            got = []
            for d in range(len(ll.shape)):
                a = self._bits(self.lane, ll.lane, d)
                w = self._bits(self.warp, ll.warp, d)
                got.append(a if w is None else (w if a is None else self.eb.or_(a, w)))
            self._coord_cache[key] = got
        return got

    def coord(self, ll, r, d):
        """Coordinate along dim d of register r of the calling thread (an i32 value)."""
        tc = self.thread_coords(ll)[d]
        c = ll.reg_coord(r)[d]
        if tc is None:
            return self.i32(c)
        return self.b.add(tc, self.i32(c)) if c else tc

    def linear_index(self, ll, r, shape=None, perm=None, row_pad=0):
        """Row-major index of register r's element (in `shape`, after permuting coords by `perm`); `row_pad`
        elements of padding after each row of the last dim."""
        coords = [self.coord(ll, r, d) for d in range(len(ll.shape))]
        if perm is not None:
            coords = [coords[p] for p in perm]
        shape = shape or ll.shape
        idx, stride = None, 1
        for d in range(len(shape) - 1, -1, -1):
            t = coords[d] if stride == 1 else self.b.mul(coords[d], self.i32(stride))
            idx = t if idx is None else self.b.add(idx, t)
            stride *= shape[d] + (row_pad if d == len(shape) - 1 else 0)
        return idx if idx is not None else self.i32(0)

    def unique_pred(self, ll):
        """i1 true in exactly one holder of each element (lanes/warps whose bits only replicate are off); None
        when no thread duplicates another."""
        key = (ll.lane, ll.warp)
        if key in self._pred_cache:
            return self._pred_cache[key]
        lm, wm = ll.lane_repl_mask(), ll.warp_repl_mask()
        p = None
        if lm:
            p = self.eb.icmp_unsigned("==", self.eb.and_(self.lane, self.i32(lm)), self.i32(0))
        if wm:
            q = self.eb.icmp_unsigned("==", self.eb.and_(self.warp, self.i32(wm)), self.i32(0))
            p = q if p is None else self.eb.and_(p, q)
        self._pred_cache[key] = p
        return p

    def and_pred(self, a, b):
        if a is None:
            return b
        if b is None:
            return a
        return self.b.and_(a, b)

    # ---- values ---------------------------------------------------------------------------------------
    def get(self, v):
        return self.env[v.id]

    def regs(self, v):
        x = self.env[v.id]
        return x.regs if isinstance(x, Tile) else [x]

    def put(self, v, regs, ll=None):
        if v.type.shape:
            self.env[v.id] = Tile(ll if ll is not None else self.layout_of(v), list(regs))
        else:
            self.env[v.id] = regs[0]

    def map(self, op, fn):
        """Apply fn(*scalars) per register of op's operands (all share the result's layout). Registers axis info
        proves equal in every thread (codegen/memory.py same_run_registers) are computed once: a mask like
        `offs < N`, a channel index `offs // HW`."""
        cols = [self.regs(v) for v in op.operands]
        same = _same_registers(self, op.result) if cols else None
        if same:
            out = []
            for r, xs in enumerate(zip(*cols)):
                out.append(out[same[r]] if r in same else fn(*xs))
        else:
            out = [fn(*xs) for xs in zip(*cols)]
        self.put(op.result, out)

    # ---- driver ---------------------------------------------------------------------------------------
    def emit(self):
        f = self.fn_ir
        params, ptypes = [], []
        for name, v in zip(f.arg_names, f.args):
            el = v.type.element
            if isinstance(el, T.pointer_type):
                ptypes.append(C.GPTR)
                params.append({"name": name, "type": "ptr", "abi": "ptr"})
            elif el.is_bool():
                ptypes.append(C.I8)
                params.append({"name": name, "type": el.name, "abi": "i8"})
            else:
                ptypes.append(lty(el))
                params.append({"name": name, "type": el.name, "abi": str(lty(el))})
        # tensor maps the kernel writes for in-kernel descriptors: a hidden last parameter, the
        # launch's per-program global scratch (codegen/tensormap.py); none without the switch
        self.tmap_slots = _tensormap.plan(self, f)
        if self.tmap_slots:
            ptypes.append(C.GPTR)
            params.append({"name": "global_scratch", "type": "ptr", "abi": "ptr"})
        self.kfn = ir.Function(self.mod, ir.FunctionType(C.VOID, ptypes), f.name)
        self.kfn.scope = C.FastNameScope.like(self.kfn.scope)  # before any block: blocks share their function's
        self.kfn.calling_convention = "ptx_kernel"
        entry = self.kfn.append_basic_block("entry")
        body = self.kfn.append_basic_block("body")
        self.eb = C.FoldingIRBuilder(entry)
        self.b = C.FoldingIRBuilder(body)
        if not self.opts.disable_line_info:
            from .lineinfo import LineInfo

            self.dbg = LineInfo.for_function(self.mod, self.kfn, f)
        self.tid = self.sreg("tid.x")
        self.lane = self.eb.and_(self.tid, self.i32(31))
        # The warp index broadcast from lane 0: the same value, but ptxas then knows it is warp-uniform and keeps
        # what derives from it (wgmma descriptors per warpgroup) in uniform registers. Without this it moves
        # each descriptor through one uniform register pair and serializes the wgmma pipeline on it (C7514).
        shfl = self.intrinsic("llvm.nvvm.shfl.sync.idx.i32", C.I32, [C.I32, C.I32, C.I32, C.I32])
        self.warp = self.eb.call(shfl, [self.i32(-1), self.eb.lshr(self.tid, self.i32(5)), self.i32(0),
                                        self.i32(31)])
        for v, a, el in zip(f.args, self.kfn.args, (v.type.element for v in f.args)):
            a.name = f"arg_{v.name_hint or v.id}"
            if not isinstance(el, T.pointer_type) and el.is_bool():
                self.env[v.id] = self.eb.icmp_unsigned("!=", a, ir.Constant(C.I8, 0))
            else:
                self.env[v.id] = a
        self.block(f.body)
        if not self.b.block.is_terminated:
            self.b.ret_void()
        self.eb.branch(body)
        for bb in self.kfn.blocks:
            _sink_compares(bb)
        text = module_text(self.mod)  # str(self.mod), faster (codegen/irtext.py)
        # llvmlite cannot spell string function attributes; reqntid tells ptxas the exact block size (.reqntid),
        # as Triton writes it (timed beside .maxntid on the H200, 2026-12-02: 0.993 over 21 matmul and attention
        # kernels, none slower; docs/EXPERIMENTS.md)
        text = _add_fn_attrs(text, f.name, f'"nvvm.reqntid"="{self.nw * 32}"')
        meta = {"name": f.name, "num_warps": self.nw, "shared_bytes": self.smem_bytes, "params": params}
        if self.tmap_slots:
            meta["global_scratch_size"] = _tensormap.MAP_BYTES * len(self.tmap_slots)
            meta["global_scratch_align"] = _tensormap.MAP_BYTES
        return text, meta

    def block(self, block):
        for op in block.ops:
            self.emit_op(op)

    def emit_op(self, op):
        """Emit one op (its emitter from EMIT). With line info, every instruction either builder makes for it
        (entry-block values it asks for included) carries the op's location, and the enclosing op's location
        is back in place afterwards (a loop's increment and branch after its body, say)."""
        fn = EMIT.get(op.kind)
        if fn is None:
            raise error(f"operation '{op.kind}' is not supported by the code generator", op.loc)
        if self.dbg is None:
            fn(self, op)
            return
        outer = self.b.debug_metadata
        self.b.debug_metadata = self.eb.debug_metadata = self.dbg.at(op.loc)
        fn(self, op)
        self.b.debug_metadata = self.eb.debug_metadata = outer

    def inline(self, block, args):
        """Emit `block` with its arguments bound to `args`; return the LLVM values of its terminator."""
        for a, v in zip(block.args, args):
            self.env[a.id] = v
        for op in block.ops[:-1]:
            self.emit_op(op)
        return [self.env[v.id] for v in block.ops[-1].operands]


def _add_fn_attrs(text: str, name: str, attrs: str) -> str:
    """Attach attribute group #0 = {attrs} to the kernel's definition line."""
    head = f'define ptx_kernel void @"{name}"('
    i = text.index(head)
    j = text.index("\n", i)
    line = text[i:j]
    k = line.rfind(")")
    line = line[: k + 1] + " #0" + line[k + 1:]
    return text[:i] + line + text[j:] + f"\nattributes #0 = {{ {attrs} }}\n"


# ---- op emitters ---------------------------------------------------------------------------------------------

@emits(*sorted({k for k, _ in BINARY}))
def _e_binary(e, op):
    c = _cls(op.operands[0].type.element)
    f = BINARY.get((op.kind, c))
    if f is None:
        raise error(f"'{op.kind}' is not defined for {op.operands[0].type.element}", op.loc)
    e.map(op, lambda a, b: f(e, a, b, op))


@emits(*UNARY)
def _e_unary(e, op):
    f = UNARY[op.kind]
    e.map(op, lambda x: f(e, x, op))


@emits("fma")
def _e_fma(e, op):
    t = lty(op.result.type.element)
    if op.result.type.element.kind != "float":
        e.map(op, lambda a, b, c: e.b.add(e.b.mul(a, b), c))
        return
    fn = e.intrinsic(f"llvm.fma.{_tname(t)}", t, [t, t, t])
    e.map(op, lambda a, b, c: e.b.call(fn, [a, b, c]))


@emits("extern_elementwise")
def _e_extern_elementwise(e, op):
    """A libdevice call per element (ptx.py links the bitcode of the functions a module calls)."""
    fn = e.intrinsic(op.attrs["symbol"], lty(op.result.type.element), [lty(v.type.element) for v in op.operands])
    e.map(op, lambda *xs: e.b.call(fn, list(xs)))


@emits("barrier")
def _e_barrier(e, op):
    """tl.debug_barrier(): bar.sync 0 across the program's threads."""
    e.barrier()


@emits("cmp")
def _e_cmp(e, op):
    e.map(op, lambda a, b: _cmp(e, a, b, op))


def _same_registers(e, v):
    """{r: an earlier register holding the same value} for block value v, where axis info makes some of a thread's
    registers equal in every thread; None where none are."""
    if not v.type.shape:
        return None
    from .memory import _ai, same_run_registers

    const = tuple(_ai(e, v).constancy)
    if max(const, default=1) <= 1:
        return None
    ll = e.layout_of(v)
    if ll.num_regs <= 1:
        return None
    cache = e.__dict__.setdefault("_same_regs", {})
    key = (ll, const)
    if key not in cache:
        same = same_run_registers(ll, range(ll.num_regs), const, e.nw)
        cache[key] = {r: f for r, f in same.items() if f != r} or None
    return cache[key]


@emits("select")
def _e_select(e, op):
    e.map(op, lambda c, a, b: e.b.select(c, a, b))


# ---- fp8 (float8e4nv = e4m3, float8e5 = e5m2): i8 registers, converted with sm_89+ cvt -------------------------
_FP8_PTX = {"float8e4nv": "e4m3", "float8e5": "e5m2"}


def _fp8_to_f16(e, x, src):
    """fp8 bits -> f16 (exact): cvt.rn.f16x2.{e4m3,e5m2}x2 on the byte in the low half; float8e4b15's bits move
    into place (interpreter/numerics.py e4b15_to_f16)."""
    if src.is_fp8e4b15():
        h = e.b.zext(x, C.I16)
        sign = e.b.shl(e.b.and_(h, ir.Constant(C.I16, 0x80)), ir.Constant(C.I16, 8))
        rest = e.b.shl(e.b.and_(h, ir.Constant(C.I16, 0x7F)), ir.Constant(C.I16, 7))
        return e.b.bitcast(e.b.or_(sign, rest), C.F16)
    fty = ir.FunctionType(C.I32, [C.I16])
    w = e.b.call(ir.InlineAsm(fty, f"cvt.rn.f16x2.{_FP8_PTX[src.name]}x2 $0, $1;", "=r,h"), [e.b.zext(x, C.I16)])
    return e.b.bitcast(e.b.trunc(w, C.I16), C.F16)


def _f32_to_fp8(e, x, dst):
    """f32 -> fp8 bits, round to nearest even, finite values saturated to +-max, NaN -> NaN (cvt.rn.satfinite).
    float8e4b15 as Triton converts it (interpreter/numerics.py f16_to_e4b15): float16 first, the magnitude's bits
    clamped to 1.75's (an unsigned min also takes inf and NaN there), plus half of the dropped bits, the top byte
    with the sign."""
    if dst.is_fp8e4b15():
        h = e.b.bitcast(e.b.fptrunc(x, C.F16), C.I16)
        a = e.b.and_(h, ir.Constant(C.I16, 0x7FFF))
        a = e.b.select(e.b.icmp_unsigned("<", a, ir.Constant(C.I16, 0x3F00)), a, ir.Constant(C.I16, 0x3F00))
        a = e.b.lshr(e.b.add(e.b.shl(a, ir.Constant(C.I16, 1)), ir.Constant(C.I16, 0x80)), ir.Constant(C.I16, 8))
        sign = e.b.and_(e.b.lshr(h, ir.Constant(C.I16, 8)), ir.Constant(C.I16, 0x80))
        return e.b.trunc(e.b.or_(a, sign), C.I8)
    fty = ir.FunctionType(C.I16, [C.F32, C.F32])
    asm = ir.InlineAsm(fty, f"cvt.rn.satfinite.{_FP8_PTX[dst.name]}x2.f32 $0, $1, $2;", "=h,f,f")
    return e.b.trunc(e.b.call(asm, [ir.Constant(C.F32, 0.0), x]), C.I8)  # $2 -> the low byte


def _fp8_pairs_apply(e, op, src, dst) -> bool:
    """A cast of a tile to float8e4nv / float8e5 from a non-fp8 type, rounding to nearest, with its registers in
    pairs: one cvt.rn.satfinite.{e4m3,e5m2}x2.f32 converts two of them (each rounded on its own, the same bits as one
    at a time), as Triton's conversions do, instead of one per register (per-token fp8 quantization 0.94 of the time
    of one cvt a register; H100, 2026-12-06, benchmarks/2026-12-06e-h100)."""
    return (dst.is_fp8() and not dst.is_fp8e4b15() and not src.is_fp8()
            and dst.name in _FP8_PTX and op.attrs.get("rounding") != "rtz" and bool(op.result.type.shape)
            and len(e.regs(op.operands[0])) % 2 == 0)


def _cast_fp8_pairs(e, op, src, dst):
    fs = [x if src.is_fp32() else CASTS[(_ccls(src), "f")](e, x, C.F32, op) for x in e.regs(op.operands[0])]
    e.put(op.result, _paired_cvt(e, fs, f"cvt.rn.satfinite.{_FP8_PTX[dst.name]}x2.f32", C.I16, "h", C.I8))


def _fp8_pairs_in_apply(e, op, src, dst) -> bool:
    """A cast of a float8e4nv / float8e5 tile to a wider type, its registers in pairs: the two bytes of registers
    (2i, 2i+1) in one 16-bit word, one cvt.rn.f16x2.{e4m3,e5m2}x2 converting both (exact either way: the same bits as
    one at a time), as Triton's dequantizing loops do. The weight-only fp8 GEMM's loop: 277 -> 235 SASS instructions
    (Triton's 238), its 32 byte permutes and 8 spilled bytes gone; 0.849 of its time (H100, 2026-12-07, 2 rounds
    beside Triton, 1.11 -> 0.94 of Triton's; benchmarks/2026-12-07j-h100/abin1.md)."""
    return (src.is_fp8() and not src.is_fp8e4b15() and src.name in _FP8_PTX
            and not dst.is_fp8() and not dst.is_bool() and bool(op.result.type.shape)
            and len(e.regs(op.operands[0])) % 2 == 0)


def _cast_fp8_pairs_in(e, op, src, dst):
    asm = ir.InlineAsm(ir.FunctionType(C.I32, [C.I16]), f"cvt.rn.f16x2.{_FP8_PTX[src.name]}x2 $0, $1;", "=r,h")
    vt = ir.VectorType(C.F16, 2)
    xs = e.regs(op.operands[0])
    out = []
    for i in range(0, len(xs), 2):
        lo = e.b.zext(xs[i], C.I16)
        hi = e.b.shl(e.b.zext(xs[i + 1], C.I16), ir.Constant(C.I16, 8))
        w = e.b.bitcast(e.b.call(asm, [e.b.or_(lo, hi)]), vt)  # the low byte -> the low half
        for k in (0, 1):
            h = e.b.extract_element(w, e.i32(k))
            if dst.is_fp16():
                out.append(h)
                continue
            f = e.b.fpext(h, C.F32)
            out.append(f if dst.is_fp32() else CASTS[("f", _ccls(dst))](e, f, lty(dst), op))
    e.put(op.result, out)


def _paired_cvt(e, xs, instr, word, cons, elem):
    """float32 registers (2i, 2i+1) rounded by one two-wide conversion `instr` each (its result a `word`, register
    constraint `cons`), taken apart as a 2-vector of `elem`: register 2i the low half, 2i+1 the high one."""
    asm = ir.InlineAsm(ir.FunctionType(word, [C.F32, C.F32]), f"{instr} $0, $1, $2;", f"={cons},f,f")
    vt = ir.VectorType(elem, 2)
    out = []
    for i in range(0, len(xs), 2):
        w = e.b.bitcast(e.b.call(asm, [xs[i + 1], xs[i]]), vt)  # $1 -> the upper half, $2 -> the lower
        out += [e.b.extract_element(w, e.i32(0)), e.b.extract_element(w, e.i32(1))]
    return out


def _f32_rtz_e5m2(e, x):
    """f32 -> float8e5 rounding toward zero: float16 toward zero (cvt.rz, which keeps a finite value finite), whose
    high byte is the e5m2 value truncated; infinities saturate to +-max as the round-to-nearest cast's do."""
    h = e.b.lshr(e.b.bitcast(_f32_rtz(e, x, T.float16), C.I16), ir.Constant(C.I16, 8))
    b = e.b.trunc(h, C.I8)
    inf = e.b.icmp_unsigned("==", e.b.and_(b, ir.Constant(C.I8, 0x7F)), ir.Constant(C.I8, 0x7C))
    return e.b.select(inf, e.b.sub(b, ir.Constant(C.I8, 1)), b)


def _fp8_cast(e, x, src, dst, op):
    """A cast with an fp8 side: through f16 (from fp8, exact) and f32 (to fp8), as the interpreter defines."""
    if op.attrs.get("rounding") == "rtz":  # float32 -> float8e5 (the frontend allows no other)
        return _f32_rtz_e5m2(e, x)
    if src.is_fp8():
        if dst.is_fp8():
            return _f32_to_fp8(e, e.b.fpext(_fp8_to_f16(e, x, src), C.F32), dst)
        if dst.is_bool():
            return e.b.icmp_unsigned("!=", e.b.and_(x, ir.Constant(C.I8, 0x7F)), ir.Constant(C.I8, 0))
        h = _fp8_to_f16(e, x, src)
        if dst.is_fp16():
            return h
        f = e.b.fpext(h, C.F32)
        return f if dst.is_fp32() else CASTS[("f", _ccls(dst))](e, f, lty(dst), op)
    # to fp8: first to f32 (ints and f64 round there; f16/bf16 widen exactly)
    f = x if src.is_fp32() else CASTS[(_ccls(src), "f")](e, x, C.F32, op)
    return _f32_to_fp8(e, f, dst)


def _f32_rtz(e, x, dst):
    """f32 -> f16/bf16 rounding toward zero (fp_downcast_rounding="rtz")."""
    kind, cons = ("f16", "h") if dst.is_fp16() else ("bf16", "h")
    fty = ir.FunctionType(C.I16, [C.F32])
    r = e.b.call(ir.InlineAsm(fty, f"cvt.rz.{kind}.f32 $0, $1;", f"={cons},f"), [x])
    return e.b.bitcast(r, lty(dst))


@emits("cast")
def _e_cast(e, op):
    src, dst = op.operands[0].type.element, op.attrs["to"]
    if isinstance(src, T.pointer_type) or isinstance(dst, T.pointer_type):
        raise error(f"cast between {src} and {dst} (use bitcast / ptr_to_int)", op.loc)
    if src.is_fp8() or dst.is_fp8():
        if _fp8_pairs_apply(e, op, src, dst):
            _cast_fp8_pairs(e, op, src, dst)
            return
        if _fp8_pairs_in_apply(e, op, src, dst):
            _cast_fp8_pairs_in(e, op, src, dst)
            return
        e.map(op, lambda x: _fp8_cast(e, x, src, dst, op))
        return
    if op.attrs.get("rounding") == "rtz":
        e.map(op, lambda x: _f32_rtz(e, x, dst))
        return
    f = CASTS[(_ccls(src), _ccls(dst))]
    t = lty(dst)
    if src.name == "float32" and dst.name in ("float16", "bfloat16") and _paired_cvt_applies(e, op):
        _cast_pairs(e, op, "f16" if dst.name == "float16" else "bf16", t)
        return
    e.map(op, lambda x: f(e, x, t, op))


def _paired_cvt_applies(e, op) -> bool:
    """float32 -> float16/bfloat16 of a tile with registers in pairs, on sm_80+ (cvt.rn.{f16,bf16}x2.f32): ends
    ptxas's serialization of the wgmma chain (C7514) in 128x128x64 and 64x256x64 w8 matmul."""
    return e.opts.sm >= 80 and bool(op.result.type.shape) and len(e.regs(op.operands[0])) % 2 == 0


def _cast_pairs(e, op, kind, t):
    """Round register pairs (2i, 2i+1) with one cvt.rn.{f16,bf16}x2.f32 each, as an opaque instruction: left to
    LLVM, a pair is sometimes split into two scalar cvt.rn.f16.f32, and when those read wgmma accumulators ptxas
    serializes every wgmma of the kernel (C7514, seen on 128x128x64 w8 matmul)."""
    e.put(op.result, _paired_cvt(e, e.regs(op.operands[0]), f"cvt.rn.{kind}x2.f32", C.I32, "r", t))


@emits("bitcast")
def _e_bitcast(e, op):
    t = lty(op.attrs["to"])
    src = op.operands[0].type.element
    if isinstance(src, T.pointer_type) and isinstance(op.attrs["to"], T.pointer_type):
        e.map(op, lambda x: x)
        return
    e.map(op, lambda x: e.b.bitcast(x, t))


@emits("addptr")
def _e_addptr(e, op):
    et = C.mem_lty(op.operands[0].type.element.element_ty)
    unsigned = op.operands[1].type.element.kind in ("uint", "bool")

    def f(p, off):
        if unsigned and off.type.width < 64:
            off = e.b.zext(off, C.I64)
        return e.b.gep(p, [off], source_etype=et)
    e.map(op, f)


@emits("int_to_ptr")
def _e_int_to_ptr(e, op):
    e.map(op, lambda x: e.b.inttoptr(x, C.GPTR))


@emits("ptr_to_int")
def _e_ptr_to_int(e, op):
    e.map(op, lambda p: e.b.ptrtoint(p, C.I64))


@emits("const")
def _e_const(e, op):
    c = C.const(op.result.type.element, op.attrs["value"])
    if op.result.type.shape:
        ll = e.result_ll(op)
        e.put(op.result, [c] * ll.num_regs, ll)
    else:
        e.put(op.result, [c])


@emits("program_id")
def _e_program_id(e, op):
    e.put(op.result, [e.sreg("ctaid." + "xyz"[op.attrs["axis"]])])


@emits("num_programs")
def _e_num_programs(e, op):
    e.put(op.result, [e.sreg("nctaid." + "xyz"[op.attrs["axis"]])])


@emits("arange")
def _e_arange(e, op):
    ll = e.result_ll(op)
    start = op.attrs["start"]
    tc = e.thread_coords(ll)[0]
    base = tc if not start else (e.eb.add(tc, e.i32(start)) if tc is not None else None)
    regs = []
    for r in range(ll.num_regs):
        c = ll.reg_coord(r)[0]
        if base is None:
            regs.append(e.i32(c + start))
        else:
            regs.append(e.b.add(base, e.i32(c)) if c else base)
    e.put(op.result, regs, ll)


@emits("splat")
def _e_splat(e, op):
    ll = e.result_ll(op)
    e.put(op.result, [e.get(op.operands[0])] * ll.num_regs, ll)


def _remap(src_ll, src_regs, dst_ll, drop_dims=(), insert=None):
    """Registers of dst gathered from src by compile-time coordinate: dst coords with `drop_dims` zeroed (dims that
    grew by broadcast) must be held by the same thread in src. Returns None if some register is missing."""
    index = {src_ll.reg_coord(r): r for r in range(src_ll.num_regs)}
    out = []
    for r in range(dst_ll.num_regs):
        c = list(dst_ll.reg_coord(r))
        for d in drop_dims:
            c[d] = 0
        if insert is not None:
            c = insert(c)
        j = index.get(tuple(c))
        if j is None:
            return None
        out.append(src_regs[j])
    return out


@emits("broadcast")
def _e_broadcast(e, op):
    x = e.get(op.operands[0])
    ll = e.result_ll(op)
    if not isinstance(x, Tile):
        e.put(op.result, [x] * ll.num_regs, ll)
        return
    grow = [d for d, (a, b) in enumerate(zip(op.operands[0].type.shape, op.result.type.shape)) if a != b]
    regs = _remap(x.ll, x.regs, ll, grow)
    if regs is None or x.ll.lane != tuple(tuple(0 if d in grow else v for d, v in enumerate(b)) for b in ll.lane):
        # The layout pass keeps the operand's layout, so this only trips on a layout-pass bug.
        raise error("broadcast between incompatible layouts (compiler bug)", op.loc)
    e.put(op.result, regs, ll)


def _squeeze_or_unsqueeze(e, op, src_shape, dst_shape):
    x = e.get(op.operands[0])
    ll = e.result_ll(op)
    if not isinstance(x, Tile):
        e.put(op.result, [x] * ll.num_regs, ll)
        return True
    if len(dst_shape) == len(src_shape) + 1:
        ax = next(a for a in range(len(dst_shape)) if dst_shape[a] == 1 and
                  tuple(dst_shape[:a]) + tuple(dst_shape[a + 1:]) == tuple(src_shape))
        regs = _remap(x.ll, x.regs, ll, insert=lambda c: c[:ax] + c[ax + 1:])
    else:
        ax = next(a for a in range(len(src_shape)) if src_shape[a] == 1 and
                  tuple(src_shape[:a]) + tuple(src_shape[a + 1:]) == tuple(dst_shape))
        regs = _remap(x.ll, x.regs, ll, insert=lambda c: c[:ax] + [0] + c[ax:])
    if regs is None:
        return False
    e.put(op.result, regs, ll)
    return True


@emits("expand_dims")
def _e_expand_dims(e, op):
    if not _squeeze_or_unsqueeze(e, op, op.operands[0].type.shape, op.result.type.shape):
        raise error("expand_dims between incompatible layouts (compiler bug)", op.loc)


@emits("reshape")
def _e_reshape(e, op):
    from .reduce import convert

    s, r = op.operands[0].type.shape, op.result.type.shape
    x = e.get(op.operands[0])
    ll = e.result_ll(op)
    if not isinstance(x, Tile):
        e.put(op.result, [x] * ll.num_regs, ll)
        return
    if abs(len(s) - len(r)) == 1 and sorted(s) == sorted(list(r)) and 1 in (tuple(s) + tuple(r)):
        if _squeeze_or_unsqueeze(e, op, s, r):
            return
    regs = _reshape_in_registers(x, ll, s, r)
    if regs is not None:
        e.put(op.result, regs, ll)
        return
    # general reshape: row-major order is preserved, so write at the source index, read at the result index
    e.env[op.result.id] = convert(e, x, ll, dst_shape=r)


def _flat_index(coord, shape):
    f = 0
    for c, n in zip(coord, shape):
        f = f * n + c
    return f


def _reshape_in_registers(x, ll, s, r):
    """The result registers of reshape(x) when every thread already holds the elements it needs (A/B
    `free_reshape`): each lane and warp basis names the same row-major offset in both shapes (power-of-two dims:
    the offset of an XOR of coordinates is the XOR of their offsets), and each thread's registers hold the same set
    of offsets, so only their order changes. None otherwise."""
    src = x.ll
    if len(src.lane) != len(ll.lane) or len(src.warp) != len(ll.warp):
        return None
    for a, b in zip(src.lane + src.warp, ll.lane + ll.warp):
        if _flat_index(a, s) != _flat_index(b, r):
            return None
    held = {_flat_index(src.reg_coord(i), s): i for i in range(src.num_regs)}
    try:
        return [x.regs[held[_flat_index(ll.reg_coord(i), r)]] for i in range(ll.num_regs)]
    except KeyError:
        return None


# ---- control flow ---------------------------------------------------------------------------------------------

def _flat(e, vals):
    out = []
    for v in vals:
        out.extend(v.regs if isinstance(v, Tile) else [v])
    return out


def _unflat(e, values, flat):
    """Rebuild Tiles/scalars for IR `values` from a flat register list."""
    i = 0
    for v in values:
        if v.type.shape:
            ll = e.layout_of(v)
            e.env[v.id] = Tile(ll, flat[i:i + ll.num_regs])
            i += ll.num_regs
        else:
            e.env[v.id] = flat[i]
            i += 1


def _pack_plan(vals, loaded=None):
    """For loop-carried values: [(start, count, k, element type)] runs of the flat register list
    whose 8-bit integer registers travel k = 4 to a 32-bit word through the loop's phis. A tile prefetched by the register
    pipeline (an int8 GEMM's operands) otherwise crosses the back edge as one i8 phi per element: its loaded words
    are split into bytes before the loop's end and every byte is copied there, and elementwise math on them (an
    xor a byte) stays byte by byte instead of 32-bit operations on the words. Only values the body yields straight
    from a load (`loaded`), which arrive as words: a running value computed a byte at a time (delta decoding's xor
    checksum) would be packed and unpacked every iteration (its loop 180 -> 189 SASS instructions, 1.029 of the
    time on the H200 under the first form of the switch, which packed every 8-bit carried tile). The gathered W8A8
    GEMM: 0.797 of the time (H100, 2026-12-07, benchmarks/2026-12-07-h100/abin6.md). 16-bit runs travel two to a
    word (the A/B `pack_carried16`, with codegen/dot.py `_wait_tied`'s words: 0.955 of the time over the 7 corpus
    kernels it changes, 6 faster, none slower; H100 2026-12-07, benchmarks/2026-12-07d-h100/abin6.md)."""
    plan, i = [], 0
    for j, v in enumerate(vals):
        regs = v.regs if isinstance(v, Tile) else [v]
        t = regs[0].type if regs else None
        if isinstance(v, Tile) and regs and all(r.type == t for r in regs):
            if (isinstance(t, ir.IntType) and t.width == 8 and len(regs) % 4 == 0
                    and (loaded is None or loaded[j])):
                plan.append((i, len(regs), 4, t))
            # 16-bit registers (float16, bfloat16, int16) two to a word: a batched fp16 GEMM on mma.sync carried its
            # prefetched tiles and its fp16 accumulator as one 16-bit value an element, and ptxas repacked them
            # around every mma and store (loop 301 -> 217 SASS instructions, 134 -> 123 registers, 3 -> 4 blocks an
            # SM)
            elif len(regs) % 2 == 0 and (t in (C.F16, C.BF16) or (
                    isinstance(t, ir.IntType) and t.width == 16)):
                plan.append((i, len(regs), 2, t))
        i += len(regs)
    return plan


def _pack(e, flat, plan):
    if not plan:
        return flat
    out, i = [], 0
    for start, count, k, t in plan:
        vt = ir.VectorType(t, k)
        out.extend(flat[i:start])
        for j in range(start, start + count, k):
            vec = ir.Constant(vt, ir.Undefined)
            for lane in range(k):
                vec = e.b.insert_element(vec, flat[j + lane], ir.Constant(C.I32, lane))
            out.append(e.b.bitcast(vec, C.I32))
        i = start + count
    out.extend(flat[i:])
    return out


def _unpack(e, words, plan):
    if not plan:
        return words
    out, w = [], 0
    pos = 0  # position in the unpacked list
    for start, count, k, t in plan:
        vt = ir.VectorType(t, k)
        n = start - pos
        out.extend(words[w:w + n])
        w += n
        for _ in range(count // k):
            vec = e.b.bitcast(words[w], vt)
            out.extend(e.b.extract_element(vec, ir.Constant(C.I32, lane)) for lane in range(k))
            w += 1
        pos = start + count
    out.extend(words[w:])
    return out


@emits("for")
def _e_for(e, op):
    body = op.blocks[0]
    lb, ub, step = (e.get(v) for v in op.operands[:3])
    init = _flat(e, [e.get(v) for v in op.operands[3:]])
    signed = op.operands[0].type.element.kind == "int"
    pre = e.b.block
    header = e.kfn.append_basic_block("for.header")
    loop = e.kfn.append_basic_block("for.body")
    exit_ = e.kfn.append_basic_block("for.exit")
    from .dot import finish_loop, hoist_operands, ring_slot_begin, ring_slot_end
    from .reduce import partial_init, partial_sums, partial_total

    hoist_operands(e, op)
    partial = partial_sums(e, op)
    if partial:  # carried sums kept per lane: start them on one lane of each group
        vals = [e.get(v) for v in op.operands[3:]]
        for j, lanes in partial.items():
            vals[j] = partial_init(e, vals[j], lanes)
        init = _flat(e, vals)
    plan = _pack_plan([e.get(v) for v in op.operands[3:]],
                      [getattr(getattr(v, "owner", None), "kind", None) == "load" for v in body.terminator.operands])
    init = _pack(e, init, plan)
    pre = e.b.block
    e.b.branch(header)
    e.b.position_at_end(header)
    iv = e.b.phi(lb.type)
    iv.add_incoming(lb, pre)
    phis = [e.b.phi(v.type) for v in init]
    for p, v in zip(phis, init):
        p.add_incoming(v, pre)
    ring = ring_slot_begin(e, op, pre)
    cond = (e.b.icmp_signed if signed else e.b.icmp_unsigned)("<", iv, ub)
    e.b.cbranch(cond, loop, exit_)
    e.b.position_at_end(loop)
    e.env[body.args[0].id] = iv
    _unflat(e, body.args[1:], _unpack(e, phis, plan))
    e.loop_body(lambda: e.block_ops(body))
    ys = _pack(e, _flat(e, [e.get(v) for v in body.terminator.operands]), plan)
    nxt = e.b.add(iv, step)
    slot_next = ring_slot_end(e, ring) if ring is not None else None
    end = e.b.block
    iv.add_incoming(nxt, end)
    if ring is not None:
        ring.slot.add_incoming(slot_next, end)
    for p, v in zip(phis, ys):
        p.add_incoming(v, end)
    e.b.branch(header)
    e.b.position_at_end(exit_)
    _unflat(e, op.results, _unpack(e, phis, plan))
    for j, lanes in partial.items():
        res = op.results[j]
        e.env[res.id] = partial_total(e, e.env[res.id], lanes)
    finish_loop(e, op)


@emits("if")
def _e_if(e, op):
    cond = e.get(op.operands[0])
    then_b = e.kfn.append_basic_block("if.then")
    else_b = e.kfn.append_basic_block("if.else")
    merge = e.kfn.append_basic_block("if.end")
    e.b.cbranch(cond, then_b, else_b)

    def path(blk):
        if blk is None:
            return []
        e.block_ops(blk)
        return _flat(e, [e.get(v) for v in blk.terminator.operands])
    blocks = list(op.blocks) + [None] * (2 - len(op.blocks))
    incoming = e.exclusive_paths([(then_b, lambda: path(blocks[0])), (else_b, lambda: path(blocks[1]))], merge)
    if op.results:
        phis = []
        for i, v in enumerate(incoming[0][0]):
            p = e.b.phi(v.type)
            for vals, bb in incoming:
                p.add_incoming(vals[i], bb)
            phis.append(p)
        _unflat(e, op.results, phis)


@emits("while")
def _e_while(e, op):
    before, after = op.blocks
    init = _flat(e, [e.get(v) for v in op.operands])
    pre = e.b.block
    header = e.kfn.append_basic_block("while.before")
    body = e.kfn.append_basic_block("while.after")
    exit_ = e.kfn.append_basic_block("while.exit")
    e.b.branch(header)
    e.b.position_at_end(header)
    phis = [e.b.phi(v.type) for v in init]
    for p, v in zip(phis, init):
        p.add_incoming(v, pre)
    _unflat(e, before.args, phis)

    def iteration():
        e.block_ops(before)
        cond_op = before.terminator
        c = e.get(cond_op.operands[0])
        passed = [e.get(v) for v in cond_op.operands[1:]]
        e.b.cbranch(c, body, exit_)
        e.b.position_at_end(body)
        for a, v in zip(after.args, passed):
            e.env[a.id] = v
        e.block_ops(after)
        ys = _flat(e, [e.get(v) for v in after.terminator.operands])
        for p, v in zip(phis, ys):
            p.add_incoming(v, e.b.block)
        e.b.branch(header)
        return passed
    passed = e.loop_body(iteration)
    e.b.position_at_end(exit_)
    for r, v in zip(op.results, passed):
        e.env[r.id] = v


def _block_ops(self, block):
    """Emit every op of a region except its terminator (yield/condition are read by the region's owner)."""
    for op in block.ops:
        if op.kind in ("yield", "condition"):
            continue
        self.emit_op(op)


Emitter.block_ops = _block_ops


@emits("return")
def _e_return(e, op):
    e.b.ret_void()


@emits("yield", "condition")
def _e_terminator(e, op):
    pass


def emit_llvm(module, options):
    """Lower a module that went through `compiler.passes.PIPELINE` to LLVM IR text and launch metadata
    {"name", "num_warps", "shared_bytes", "params": [{"name", "type", "abi"}]}."""
    from . import dot, memory, reduce, tma_store  # noqa: F401  (register their emitters; tma_store's store last)
    e = Emitter(module, options)
    out = e.emit()
    _release(e)
    return out


def _release(e):
    """Drop the llvmlite module's reference cycles (instruction <-> block <-> function <-> module, argument <->
    function, metadata <-> module) and the emitter's state once the text is made: the 10^4-10^5 objects of a
    large kernel are then freed by reference counting here, not walked by the cyclic collector at the end of
    the compile (compile.py `_collector_paused`; 1-3 ms less a compile)."""
    mod = e.__dict__.get("mod")
    if mod is not None:
        for f in mod.functions:
            for blk in f.blocks:
                for i in blk.instructions:
                    if type(i) is ir.PhiInstr:  # a loop-carried value's phi and the instructions that feed it
                        i.incomings = []
                blk.instructions = []
                blk.terminator = None
            f.blocks = []
            f.args = ()
        mod.globals.clear()
        mod.metadata = []
        mod._metadatacache.clear()
        mod.namedmetadata.clear()
    e.__dict__.clear()
