"""The evaluator: runs a tile-IR Function program by program with NumPy.

Each op is turned once (per `run`) into a closure by a factory from the table `OPS` (op kind -> factory(interp,
op) -> fn(*operand_values)). A Block becomes a `Plan`: its non-terminator ops as (fn, operands, results) steps plus
the terminator's operands. Executing a plan is a tight loop of `env[result] = fn(*[env[v] for v in operands])`;
`env` maps IR Values to NumPy arrays (0-d for scalars) of the element type's NumPy dtype; pointers are uint64
address arrays (the pointee type is read off the IR type, never stored with the value). Values are never
mutated in place, so views (broadcast_to, reshape, transpose) are shared freely.
"""
from __future__ import annotations

import sys

import numpy as np

from compiler.errors import KernelRuntimeError
from compiler.ir import ops as irops, optable

from . import numerics as N
from .memory import Memory


class _Return(Exception):
    """Raised by a `return` terminator (possibly nested in if/for) to end the current program."""


class Plan:
    """A compiled block. `lanes`: a reduce/scan combine block, run on whole slices at once (so its values have
    the slice's shape, not the scalar IR shape)."""

    __slots__ = ("steps", "term_kind", "term_operands", "block", "lanes")

    def __init__(self, block, steps, term_kind, term_operands):
        self.block, self.steps, self.term_kind, self.term_operands = block, steps, term_kind, term_operands
        self.lanes = False


OPS: dict = {}


def impl(*kinds):
    """Register a factory `factory(interp, op) -> fn(*operand_values)` for op kinds."""
    def deco(factory):
        for k in kinds:
            OPS[k] = factory
        return factory
    return deco


def _elem(v):
    return v.type.element


def _nd(v):
    return N.np_dtype(v.type.element)


# ------------------------------------------------------------------------------------------------------------
# sources and shapes
# ------------------------------------------------------------------------------------------------------------


@impl("const")
def _const(interp, op):
    r = op.results[0]
    arr = N.const_array(op.attrs["value"], r.type.element, r.type.shape)
    return lambda: arr


@impl("program_id")
def _program_id(interp, op):
    axis = op.attrs["axis"]
    return lambda: interp.pid_values[axis]


@impl("num_programs")
def _num_programs(interp, op):
    arr = np.asarray(interp.grid[op.attrs["axis"]], np.int32)
    return lambda: arr


@impl("arange")
def _arange(interp, op):
    arr = np.arange(op.attrs["start"], op.attrs["end"], dtype=np.int32)
    return lambda: arr


@impl("splat")
def _splat(interp, op):
    shape = tuple(op.results[0].type.shape)
    strides = (0,) * len(shape)
    nd = _nd(op.operands[0])

    def splat(x):  # a zero-stride view of the scalar (np.broadcast_to is several times slower)
        x = np.asarray(x)
        return np.ndarray(shape, nd, x, 0, strides) if x.dtype == nd else np.broadcast_to(x.astype(nd), shape)
    return splat


@impl("broadcast")
def _broadcast(interp, op):
    shape = tuple(op.results[0].type.shape)
    return lambda x: np.broadcast_to(x, shape)


@impl("expand_dims")
def _expand_dims(interp, op):
    axis = op.attrs["axis"]
    return lambda x: np.expand_dims(x, axis)


@impl("reshape")
def _reshape(interp, op):
    shape = tuple(op.results[0].type.shape)
    return lambda x: np.reshape(x, shape)


@impl("permute")
def _permute(interp, op):
    order = tuple(op.attrs["order"])
    return lambda x: np.transpose(x, order)


@impl("gather")
def _gather(interp, op):
    axis = op.attrs["axis"]
    n = op.operands[0].type.shape[axis]

    def gather(src, index):
        src, index = np.asarray(src), np.asarray(index).astype(np.int64)
        ok = (index >= 0) & (index < n)
        got = np.take_along_axis(src, np.where(ok, index, 0), axis)
        return np.where(ok, got, np.zeros((), src.dtype))
    return gather


@impl("histogram")
def _histogram(interp, op):
    bins = op.attrs["bins"]

    def histogram(x):
        x = np.asarray(x)
        return np.bincount(x[(x >= 0) & (x < bins)].astype(np.int64), minlength=bins).astype(np.int32)
    return histogram


# ------------------------------------------------------------------------------------------------------------
# arithmetic
# ------------------------------------------------------------------------------------------------------------


@impl(*irops.BINARY_SAME)
def _binary(interp, op):
    return N.binary_fn(op.kind, _elem(op.operands[0]), op.attrs)


@impl(*irops.UNARY_SAME)
def _unary(interp, op):
    return N.unary_fn(op.kind, _elem(op.operands[0]))


@impl("fma")
def _fma(interp, op):
    return N.fma_fn(_elem(op.operands[0]))


@impl("extern_elementwise")
def _extern_elementwise(interp, op):
    from .libdevice import libdevice_fn

    return libdevice_fn(op.attrs["symbol"], [_nd(v) for v in op.operands], _nd(op.results[0]))


@impl("inline_asm", "inline_asm_effects")
def _inline_asm(interp, op):
    # PTX has no NumPy meaning: refused when the kernel is prepared, before any program runs
    from compiler.errors import CompilationError

    raise CompilationError("tl.inline_asm_elementwise runs PTX: it needs a GPU; the interpreter cannot run it "
                           "(pass GPU arrays, or give the interpreter a version of the kernel without it)", op.loc)


@impl("barrier")
def _barrier(interp, op):
    # Programs run one at a time and each whole block at once, so every store is visible to every later op.
    return lambda: None


@impl("tensormap_create")
def _tensormap_create(interp, op):
    # an in-kernel descriptor's CUDA tensor map: none here (the GPU writes it into the launch's
    # global scratch); its loads and stores carry the address as an operand they ignore, reading through pointers
    zero = np.asarray(0, np.int64)
    return lambda *_: zero


@impl("cmp")
def _cmp(interp, op):
    return N.cmp_fn(op.attrs["pred"], _elem(op.operands[0]))


@impl("select")
def _select(interp, op):
    nd = _nd(op.results[0])
    return lambda c, a, b: np.where(c, a, b).astype(nd, copy=False)


@impl("cast")
def _cast(interp, op):
    return N.cast_fn(_elem(op.operands[0]), op.attrs["to"], op.attrs.get("rounding"))


@impl("bitcast")
def _bitcast(interp, op):
    return N.bitcast_fn(_elem(op.operands[0]), _elem(op.results[0]))


@impl("addptr")
def _addptr(interp, op):
    size = np.int64(op.operands[0].type.element.element_ty.itemsize)
    u64 = N.U64

    def addptr(p, off):
        delta = (off.astype(np.int64) * size).view(u64)  # off: array or NumPy scalar
        return np.add(p, delta, dtype=u64)
    return addptr


@impl("int_to_ptr")
def _int_to_ptr(interp, op):
    return lambda i: np.asarray(i).view(np.uint64)


@impl("ptr_to_int")
def _ptr_to_int(interp, op):
    return lambda p: np.asarray(p).view(np.int64)


# (i, j): a's part i times b's part j (0 hi, 1 mid, 2 lo), the partial products before hi*hi, in the codegen's order
_BF16_SPLIT_PRODUCTS = {"bf16x3": ((1, 0), (0, 1)),
                        "bf16x6": ((1, 1), (2, 0), (0, 2), (1, 0), (0, 1))}


def _bf16_round(x):
    """float32 -> the nearest bfloat16 (ties to even), as float32; NaN stays NaN, overflow gives inf."""
    bits = np.asarray(x, np.float32).view(np.uint32)
    r = ((bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) & np.uint32(0xFFFF0000))
    return np.where(np.isnan(x), x, r.view(np.float32))


def _bf16_parts(x, prec):
    """float64 copies of the bfloat16 parts of float32 `x`: [hi, mid] (bf16x3) or [hi, mid, lo] (bf16x6); each
    remainder is exact in float32."""
    rest = np.asarray(x, np.float32)
    parts = []
    with np.errstate(invalid="ignore", over="ignore"):
        for _ in range(2 if prec == "bf16x3" else 3):
            p = _bf16_round(rest)
            parts.append(p.astype(np.float64))
            rest = (rest - p).astype(np.float32)
    return parts


@impl("dot")
def _dot(interp, op):
    """Matrix product of the last two dims plus acc, accumulated in float64 and rounded once to the result type.
    int8 operands: as the GPU's code sums them, in K order, saturating at int32's range after each step -- the 32
    products of one .satfinite instruction (mma.sync m16n8k32, or wgmma k32 on sm_90a) where K is a multiple of 32,
    else every product (the FMA path's saturating adds); a sum pushed to the bound and back comes back from the
    bound.
    input_precision "tf32" rounds float32 inputs to tf32 first (ties away); "tf32x3" does not (its three
    tensor-core products are as accurate as float32 here). "bf16x3" / "bf16x6" split each float32 operand into
    bfloat16 parts (hi = bf16(x), mid = bf16(x - hi), lo = bf16(x - hi - mid), each rounded
    to nearest even) and sum the partial products the codegen issues: the cross terms first (hi*mid + mid*hi; for
    bf16x6 also mid*mid + hi*lo + lo*hi), a NaN there replaced by 0 (an infinite input leaves inf - inf in its
    lower parts), then hi*hi, then acc. The products of bf16 parts are exact in float64; what is left out (mid*mid
    and below for bf16x3) is the error the precision names."""
    a_el, r_el = _elem(op.operands[0]), _elem(op.results[0])
    rnd = N.np_dtype(r_el)
    prec = op.attrs.get("input_precision", "ieee") or "ieee"

    def tf32(x):
        b = np.asarray(x, np.float32).view(np.uint32)
        r = ((b + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32)
        return np.where(np.isfinite(x), r, x)

    def dot(a, b, acc):
        if a_el.is_floating():
            if prec in _BF16_SPLIT_PRODUCTS and a_el.is_fp32():
                pa, pb = _bf16_parts(a, prec), _bf16_parts(b, prec)
                s = sum(np.matmul(pa[i], pb[j]) for i, j in _BF16_SPLIT_PRODUCTS[prec])
                s = np.where(np.isnan(s), 0.0, s) + np.matmul(pa[0], pb[0])
                return N.round_f64(s + np.asarray(acc).astype(np.float64), r_el)
            if prec == "tf32" and a_el.is_fp32():  # tf32x3 recovers float32 accuracy (three products)
                a, b = tf32(a), tf32(b)
            p = np.matmul(np.asarray(a).astype(np.float64), np.asarray(b).astype(np.float64))
            return N.round_f64(p + np.asarray(acc).astype(np.float64), r_el)
        a64, b64 = np.asarray(a).astype(np.int64), np.asarray(b).astype(np.int64)
        lim = np.iinfo(rnd)
        K = a64.shape[-1]
        step = 32 if K % 32 == 0 else 1  # codegen: k32 tensor-core steps (assign_layouts.dot_uses_mma), else FMA
        s = np.asarray(acc).astype(np.int64)
        for k0 in range(0, K, step):
            s = np.clip(s + np.matmul(a64[..., k0:k0 + step], b64[..., k0:k0 + step, :]), lim.min, lim.max)
        return s.astype(rnd)
    return dot


# ------------------------------------------------------------------------------------------------------------
# memory
# ------------------------------------------------------------------------------------------------------------


@impl("load")
def _load(interp, op):
    elem = _elem(op.results[0])
    nd = N.np_dtype(elem)
    mem, loc, name = interp.memory, op.loc, repr(elem)
    has_mask, has_other = op.attrs.get("has_mask", False), op.attrs.get("has_other", False)
    # Memory.load/store take the address as an ndarray (0-d for scalars); other values may be NumPy scalars.
    # (a descriptor load's trailing `tma` operands, for the code generator, are not read here)
    if has_mask and has_other:
        return lambda p, m, o, *_tma: mem.load(p, m, o, nd, name, loc)
    if has_mask:
        return lambda p, m, *_tma: mem.load(p, m, None, nd, name, loc)
    return lambda p, *_tma: mem.load(p, None, None, nd, name, loc)


@impl("store")
def _store(interp, op):
    elem = _elem(op.operands[1])
    nd = N.np_dtype(elem)
    mem, loc, name = interp.memory, op.loc, repr(elem)
    if op.attrs.get("has_mask", False):  # (a descriptor store's trailing `tma` operands are not read here)
        return lambda p, v, m, *_tma: mem.store(p, v, m, nd, name, loc)
    return lambda p, v, *_tma: mem.store(p, v, None, nd, name, loc)


_ACCUMULATE = {"add", "and", "or", "xor", "max", "min", "xchg"}


@impl("atomic_rmw")
def _atomic_rmw(interp, op):
    """Lanes are applied in lane order (see Memory.rmw); returns each lane's old value (0 on masked lanes)."""
    kind = op.attrs["op"]
    elem = _elem(op.results[0])
    nd = N.np_dtype(elem)
    mem, loc, name = interp.memory, op.loc, repr(elem)
    shape = tuple(op.results[0].type.shape)
    if kind == "xchg":
        fn = lambda old, new: new  # noqa: E731
        acc = lambda seq: seq  # noqa: E731
    else:
        fn = N.binary_fn(kind, elem)
        acc = None
        if isinstance(fn, np.ufunc) or (kind == "add" and elem.is_floating()):
            u = fn if isinstance(fn, np.ufunc) else np.add  # float add: NumPy rounds each step to nd
            acc = lambda seq: u.accumulate(seq, dtype=nd)  # noqa: E731

    def rmw(p, v, m=None):
        vf = np.broadcast_to(np.asarray(v, nd), shape).reshape(-1)
        return mem.rmw(p, m, nd, name, loc, lambda old, lanes: fn(old, vf[lanes]), "atomic_rmw",
                       vals=vf, accumulate=acc)
    return rmw


@impl("atomic_cas")
def _atomic_cas(interp, op):
    """Compares bits (like atom.cas), so a NaN in memory matches an identical NaN in cmp."""
    elem = _elem(op.results[0])
    nd = N.np_dtype(elem)
    bits = np.dtype(f"u{nd.itemsize}")
    mem, loc, name = interp.memory, op.loc, repr(elem)
    shape = tuple(op.results[0].type.shape)

    def cas(p, c, v):
        cf = np.broadcast_to(np.asarray(c, nd), shape).reshape(-1)
        vf = np.broadcast_to(np.asarray(v, nd), shape).reshape(-1)

        def update(old, lanes):
            return np.where(old.view(bits) == cf[lanes].view(bits), vf[lanes], old)
        return mem.rmw(p, None, nd, name, loc, update, "atomic_cas")
    return cas


# ------------------------------------------------------------------------------------------------------------
# reductions and scans
# ------------------------------------------------------------------------------------------------------------


def _single_binop(block, n):
    """If the combine block is `r = binop(a0, b0); yield r` (either operand order for commutative ops), the
    binop's kind and attrs; else None."""
    if n != 1 or len(block.ops) != 2:
        return None
    o, y = block.ops
    if y.kind != "yield" or len(y.operands) != 1 or len(o.results) != 1 or y.operands[0] is not o.results[0]:
        return None
    if o.kind not in irops.BINARY_SAME or not optable.OPS[o.kind].has("commutative"):
        return None
    a, b = block.args
    if list(o.operands) not in ([a, b], [b, a]):
        return None
    return o.kind, o.attrs


def _combiner(interp, op):
    """combine(list_a, list_b) -> list, vectorized over arrays; plus a ufunc for exact integer fast paths."""
    block = op.blocks[0]
    n = len(op.operands)
    elems = [_elem(v) for v in op.results]
    nds = [N.np_dtype(e) for e in elems]
    single = _single_binop(block, n)
    if single is not None:
        fn = N.binary_fn(single[0], elems[0], single[1])
        exact_ufunc = fn if isinstance(fn, np.ufunc) and not elems[0].is_floating() else None
        return (lambda a, b: [fn(a[0], b[0])]), exact_ufunc
    plan = interp.plan(block)
    plan.lanes = True
    for o in block.ops:
        if o.blocks:
            raise NotImplementedError(f"{o.loc}: `{o.kind}` inside a {op.kind} combine function is not supported "
                                      "by the interpreter (combine blocks are evaluated on whole slices; use "
                                      "select instead of if)")
    args = block.args

    def combine(a, b):
        env = interp.env
        for arg, val in zip(args, list(a) + list(b)):
            env[arg] = val
        out = interp.exec_block(plan, env)
        shape = np.shape(a[0])
        return [np.broadcast_to(np.asarray(o).astype(nd, copy=False), shape) for o, nd in zip(out, nds)]
    return combine, None


@impl("reduce")
def _reduce(interp, op):
    """Tree reduction along `axis` (None: over every element in row-major order): neighbours (2i, 2i+1) are combined as (a=left, b=right) level by level, an
    odd last element is carried to the next level. Integer add/mul/and/or/xor/max/min use ufunc.reduce (exact,
    any order). Float reductions therefore follow this fixed tree order (not the GPU's)."""
    axis = op.attrs["axis"]
    combine, ufunc = _combiner(interp, op)
    nd0 = _nd(op.results[0])
    if ufunc is not None:
        return lambda x: ufunc.reduce(x, axis=axis, dtype=nd0)

    def reduce(*xs):
        # axis None (every element): the same tree over the row-major order
        xs = [np.asarray(x).reshape(-1) if axis is None else np.moveaxis(np.asarray(x), axis, -1) for x in xs]
        while xs[0].shape[-1] > 1:
            length = xs[0].shape[-1]
            m = length // 2
            c = combine([x[..., 0:2 * m:2] for x in xs], [x[..., 1:2 * m:2] for x in xs])
            if length % 2:
                c = [np.concatenate([ci, x[..., 2 * m:]], axis=-1) for ci, x in zip(c, xs)]
            xs = c
        return [x[..., 0] for x in xs]
    return reduce


@impl("scan")
def _scan(interp, op):
    """Inclusive scan along `axis` (Hillis-Steele: step d combines (a=x[i-d], b=x[i])). reverse=True scans from
    the end: the input is flipped, scanned forward and flipped back, so `a` is the accumulation of the later
    elements and `b` the current one. Integer fast paths use ufunc.accumulate."""
    axis = op.attrs["axis"]
    reverse = bool(op.attrs.get("reverse", False))
    combine, ufunc = _combiner(interp, op)
    nd0 = _nd(op.results[0])
    if ufunc is not None:
        if reverse:
            return lambda x: np.flip(ufunc.accumulate(np.flip(x, axis), axis=axis, dtype=nd0), axis)
        return lambda x: ufunc.accumulate(x, axis=axis, dtype=nd0)

    def scan(*xs):
        xs = [np.moveaxis(np.asarray(x), axis, -1) for x in xs]
        if reverse:
            xs = [np.flip(x, -1) for x in xs]
        length = xs[0].shape[-1]
        d = 1
        while d < length:
            c = combine([x[..., : length - d] for x in xs], [x[..., d:] for x in xs])
            xs = [np.concatenate([x[..., :d], ci], axis=-1) for x, ci in zip(xs, c)]
            d *= 2
        if reverse:
            xs = [np.flip(x, -1) for x in xs]
        return [np.moveaxis(x, -1, axis) for x in xs]
    return scan


# ------------------------------------------------------------------------------------------------------------
# control flow
# ------------------------------------------------------------------------------------------------------------


@impl("for")
def _for(interp, op):
    """iv runs lb, lb+step, ... while iv < ub (exact Python integers, given to the body in lb's dtype)."""
    body = op.blocks[0]
    plan = interp.plan(body)
    iv_arg, carried_args = body.args[0], body.args[1:]
    iv_nd = _nd(op.operands[0])
    loc = op.loc

    def run_for(lb, ub, step, *init):
        i, u, s = int(lb), int(ub), int(step)
        vals = list(init)
        if i < u and s <= 0:
            raise KernelRuntimeError(f"for loop with non-positive step {s} would not terminate", loc)
        env = interp.env
        while i < u:
            env[iv_arg] = np.asarray(i, iv_nd)
            for a, v in zip(carried_args, vals):
                env[a] = v
            vals = interp.exec_block(plan, env)
            i += s
        return vals
    return run_for


@impl("if")
def _if(interp, op):
    then_plan = interp.plan(op.blocks[0])
    else_plan = interp.plan(op.blocks[1]) if len(op.blocks) > 1 else None

    def run_if(c):
        if bool(c):
            return interp.exec_block(then_plan, interp.env)
        if else_plan is None:
            return []
        return interp.exec_block(else_plan, interp.env)
    return run_if


@impl("while")
def _while(interp, op):
    before, after = op.blocks
    bplan, aplan = interp.plan(before), interp.plan(after)

    def run_while(*init):
        env = interp.env
        vals = list(init)
        while True:
            for a, v in zip(before.args, vals):
                env[a] = v
            c, *vals = interp.exec_block(bplan, env)
            if not bool(c):
                return vals
            for a, v in zip(after.args, vals):
                env[a] = v
            vals = interp.exec_block(aplan, env)
    return run_while


# ------------------------------------------------------------------------------------------------------------
# debugging ops
# ------------------------------------------------------------------------------------------------------------


def _fmt_value(x, elem, hex_: bool) -> str:
    if hex_:
        nd = N.np_dtype(elem)
        u = np.asarray(x).view(np.dtype(f"u{nd.itemsize}")) if nd != N.BOOL else np.asarray(x).astype(np.uint8)
        return f"0x{int(u):0{max(1, nd.itemsize * 2)}x}"
    if elem.is_ptr():
        return f"0x{int(x):x}"
    if elem.is_floating():
        return f"{float(x):f}"
    return str(int(x))


@impl("print")
def _print(interp, op):
    """device_print: one line per element (row-major) and value, laid out as compiler.ir.ops.print_layout says
    (`pid (x, y, z) idx (  i) x: v`)."""
    from ..ir.ops import print_layout

    hex_ = bool(op.attrs.get("hex", False))
    elems = [_elem(v) for v in op.operands]
    shape = tuple(op.operands[0].type.shape) if op.operands else ()
    label, widths = print_layout(op.attrs.get("prefix", ""), len(op.operands), shape)
    several = len(op.operands) > 1

    def run_print(*vals):
        pid = interp.pid
        head = f"pid ({pid[0]}, {pid[1]}, {pid[2]})"
        if not vals:
            sys.stdout.write(f"{head}{label}\n")
            return
        arrs = [np.broadcast_to(np.asarray(v), shape) for v in vals]
        lines = []
        for idx in np.ndindex(*shape):
            where = ", ".join(f"{i:{w}}" for i, w in zip(idx, widths))
            for k, (a, e) in enumerate(zip(arrs, elems)):
                operand = f"(operand {k}) " if several else ""
                lines.append(f"{head} idx ({where}){label}{operand}{_fmt_value(a[idx], e, hex_)}")
        sys.stdout.write("\n".join(lines) + "\n")
    return run_print


@impl("assert")
def _assert(interp, op):
    msg, loc = op.attrs.get("msg", ""), op.loc

    def run_assert(c):
        if not interp.debug:
            return
        c = np.asarray(c)
        if not c.all():
            bad = tuple(int(i) for i in np.argwhere(~c.astype(bool))[0]) if c.ndim else ()
            raise KernelRuntimeError(f"device_assert failed: {msg} (pid {interp.pid}, idx {bad})", loc)
    return run_assert


# ------------------------------------------------------------------------------------------------------------
# the evaluator
# ------------------------------------------------------------------------------------------------------------


class Interpreter:
    """Evaluates one Function over a grid; see compiler.interpreter.run."""

    def __init__(self, function, grid, memory: Memory, debug: bool = False):
        self.function = function
        self.grid = tuple(int(g) for g in grid)
        self.memory = memory
        self.debug = debug
        self.env: dict = {}
        self.pid = (0, 0, 0)
        self.pid_values = [np.asarray(0, np.int32)] * 3
        self._plans: dict = {}
        self.body = self.plan(function.body)

    def plan(self, block) -> Plan:
        p = self._plans.get(id(block))
        if p is not None:
            return p
        ops = block.ops
        term = ops[-1] if ops and ops[-1].kind in irops.TERMINATORS else None
        steps = []
        for op in ops if term is None else ops[:-1]:
            factory = OPS.get(op.kind)
            if factory is None:
                raise NotImplementedError(f"{op.loc}: the interpreter has no implementation of op `{op.kind}`")
            fn = factory(self, op)
            steps.append((fn, tuple(op.operands), tuple(op.results), op))
        p = Plan(block, steps, term.kind if term else None, tuple(term.operands) if term else ())
        self._plans[id(block)] = p
        return p

    def exec_block(self, plan: Plan, env: dict) -> list:
        """Run a block's ops; returns the values of its yield/condition terminator (raises _Return on return)."""
        check = self.debug
        lanes = plan.lanes
        for fn, operands, results, op in plan.steps:
            try:
                out = fn(*[env[v] for v in operands])
            except (KernelRuntimeError, _Return):
                raise
            except Exception as e:
                if not getattr(e, "_tile_noted", False):
                    e.add_note(f"while interpreting op `{op.kind}` at {op.loc}")
                    e._tile_noted = True
                raise
            if len(results) == 1:
                if type(out) is list:
                    out = out[0]
                env[results[0]] = out
                if check:
                    _check_value(op, results[0], out, lanes)
            elif results:
                for r, o in zip(results, out):
                    env[r] = o
                    if check:
                        _check_value(op, r, o, lanes)
        if plan.term_kind == "return":
            raise _Return()
        return [env[v] for v in plan.term_operands]

    def run_program(self, pid, args) -> None:
        self.pid = pid
        self.pid_values = [np.asarray(p, np.int32) for p in pid]
        env = {a: v for a, v in zip(self.function.args, args)}
        self.env = env
        try:
            self.exec_block(self.body, env)
        except _Return:
            pass


def _check_value(op, r, out, lanes=False) -> None:
    """debug: the interpreter's own consistency check of every result against its IR type."""
    want_nd = N.np_dtype(r.type.element)
    got = np.asarray(out)
    if got.dtype != want_nd or (not lanes and got.shape != tuple(r.type.shape)):
        raise AssertionError(f"interpreter bug: {op.kind} at {op.loc} gave {got.dtype}{got.shape}, IR type is "
                             f"{r.type} ({want_nd}{tuple(r.type.shape)})")
