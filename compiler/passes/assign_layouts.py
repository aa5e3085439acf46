"""Layout assignment: give every block value a distributed layout and insert `convert_layout` where two meet.

Three walks over the function:
1. provisional forward walk: anchors (load / store / atomics pick a coalesced BlockedLayout from the pointer's
   axis info) and values computed from anchored values get layouts; sources (const, splat, arange) stay open.
   A store whose value is already laid out keeps that layout (no conversion of the data), else it anchors.
2. backward walk: open values take the layout their users want (through elementwise ops, broadcast,
   expand_dims -> slice, reduce -> parent, loops), so `arange`/`splat` materialize directly in the layout
   they are used in (arange in any layout is arithmetic on the thread id: rematerialize, never convert).
3. final forward walk: every block value gets a layout (the wanted one, else the default); where an operand's
   layout differs from what its op needs, a `convert_layout` op is inserted (lowered through shared memory).

Results are stored as `op.attrs["_layouts"]` (one entry per result, None for scalars) and, for ops with
regions, `op.attrs["_arg_layouts"]` (per block, per block argument).
"""
from __future__ import annotations

from ..ir import optable
from ..ir.core import Op
from ..ir import types as T
from ..options import ab_switch
from . import axisinfo
from .layouts import (BlockedLayout, DotOperandLayout, LinearEncoding, MmaLayout, SliceLayout, default_blocked,
                      fill_blocked, linear, mma_warps, permute_layout, reshaped_encoding, wgmma_applies)

# The op table's layout rules (compiler/ir/optable.py): a layout passes through ELEMENTWISE ops unchanged; SOURCES
# materialize in the layout their users want; ANCHORS (memory accesses) pick one from the pointer's axis info.
ELEMENTWISE = optable.with_layout("elementwise")
SOURCES = optable.with_layout("source")
ANCHORS = optable.with_layout("anchor")


def dot_uses_mma(op, options=None) -> bool:
    """Tensor cores for 16-bit floats, int8, and fp32 unless input_precision is "ieee"; FMA otherwise
    (fp32 "ieee", fp64 before sm_90). fp64 on sm_90+ (`options` naming the target): the fp64 mma.sync m16n8k8
    (DMMA), as Triton runs fp64 dots on Hopper's tensor cores. Measured against the FMA dot (H100, 2026-12-06, the
    corpus's 4096^3 fp64 matmul beside Triton, 3 rounds): 0.237 of its time, 5.25 -> 1.25 of Triton's (which uses
    m16n8k16)."""
    el = op.operands[0].type.element
    if el.kind == "float" and el.bits in (8, 16):  # fp8 operands reach a dot only on wgmma (passes/fp8_dot.py)
        return True
    if el.kind == "float" and el.bits == 64:
        return options is not None and options.sm >= 90 and op.result.type.element.bits == 64
    if el.kind in ("int", "uint") and el.bits == 8:
        return op.operands[0].type.shape[-1] % 32 == 0  # m16n8k32: smaller K blocks use integer FMAs
    return el.kind == "float" and el.bits == 32 and op.attrs.get("input_precision", "tf32") != "ieee"


def dot_layouts(op, nw, default=None, options=None):
    """(result, a, b) layouts of a dot: on sm_90a, when the shapes allow, the wgmma accumulator layout with
    operands left where they are (the dot itself writes them to swizzled shared memory); else the mma.sync
    accumulator layout and its register operand layouts; or for an FMA dot a blocked result (`default`) and
    operands that hold whole K rows/columns per thread."""
    shape = tuple(op.result.type.shape)
    if options is not None and dot_uses_mma(op, options):
        got = wgmma_applies(op, options, nw)
        if got is not None and not options.debug_no_wgmma:
            return MmaLayout(3, got[0], got[1]), None, None
    if dot_uses_mma(op, options):
        el = op.operands[0].type.element
        kw = max(1, 4 // max(1, el.bits // 8))
        mma = MmaLayout(2, mma_warps(shape, nw))
        return mma, DotOperandLayout(0, mma, kw), DotOperandLayout(1, mma, kw)
    res = default if isinstance(default, BlockedLayout) else default_blocked(shape, 4, nw)
    return res, DotOperandLayout(0, res), DotOperandLayout(1, res)


def _reshaped(lay, s, r):
    """The blocked layout of reshape(x) in which every thread holds the elements it held in x's blocked layout
    `lay`, where one exists of these two forms: the last dim split in two, [.., n] ->
    [.., n/f, f], with f dividing a thread's run along it (interleaved pairs: `x.reshape(.., n/2, 2)` before
    tl.split); or the last two dims merged, [.., m, f] -> [.., m*f], with the last one wholly in each thread (after
    tl.join). None otherwise (the reshape then goes through shared memory)."""
    if not isinstance(lay, BlockedLayout) or lay.order[0] != len(s) - 1:
        return None
    k = len(s) - 1
    if len(r) == len(s) + 1 and r[:k] == s[:k] and r[k] * r[k + 1] == s[k]:
        f = r[k + 1]
        if lay.spt[k] % f:
            return None
        return BlockedLayout(lay.spt[:k] + (lay.spt[k] // f, f), lay.tpw[:k] + (lay.tpw[k], 1),
                             lay.wpc[:k] + (lay.wpc[k], 1), (k + 1,) + tuple(lay.order))
    if len(r) + 1 == len(s) and s[:k - 1] == r[:k - 1] and s[k - 1] * s[k] == r[k - 1]:
        if lay.spt[k] != s[k] or lay.tpw[k] != 1 or lay.wpc[k] != 1 or lay.order[1] != k - 1:
            return None
        return BlockedLayout(lay.spt[:k - 1] + (lay.spt[k - 1] * s[k],), lay.tpw[:k], lay.wpc[:k],
                             tuple(o for o in lay.order if o != k))
    return None


def _split_last(lay, n, f):
    """The blocked layout of [.., n] -> [.., n/f, f] holding every element in the thread
    that held it, where the last dim's registers, lanes and warps tile it exactly: the new inner dim takes the index's
    low bits (registers first, then lanes, then warps), the outer one the rest. None where that is no blocked layout
    (the inner dim would take some of the registers and some lanes, or lanes and warps around the outer's)."""
    k = lay.rank - 1
    sp, tp, wp = lay.spt[k], lay.tpw[k], lay.wpc[k]
    if lay.order[0] != k or sp * tp * wp != n or n % f:
        return None
    i_s = min(sp, f)
    i_t = min(tp, f // i_s)
    i_w = min(wp, f // (i_s * i_t))
    if i_s * i_t * i_w != f or sp % i_s or tp % i_t or wp % i_w:
        return None
    if (i_t > 1 and i_s != sp) or (i_w > 1 and i_t != tp):
        return None
    return BlockedLayout(lay.spt[:k] + (sp // i_s, i_s), lay.tpw[:k] + (tp // i_t, i_t),
                         lay.wpc[:k] + (wp // i_w, i_w), (k + 1,) + tuple(lay.order))


def _merge_last2(lay, s):
    """The blocked layout of [.., m, f] -> [.., m*f] holding every element in place: the
    last dim tiled exactly by its registers, lanes and warps, each of the second-to-last's levels above the last's
    (its registers only where the last has no lanes or warps, its lanes only where the last has no warps), and the
    last dim first in the order with the second-to-last next. None otherwise."""
    k = lay.rank - 1
    s1, t1, w1 = lay.spt[k - 1], lay.tpw[k - 1], lay.wpc[k - 1]
    s2, t2, w2 = lay.spt[k], lay.tpw[k], lay.wpc[k]
    if lay.order[0] != k or lay.order[1] != k - 1 or s2 * t2 * w2 != s[k] or s1 * t1 * w1 != s[k - 1]:
        return None
    if (s1 > 1 and (t2 > 1 or w2 > 1)) or (t1 > 1 and w2 > 1):
        return None
    return BlockedLayout(lay.spt[:k - 1] + (s1 * s2,), lay.tpw[:k - 1] + (t1 * t2,), lay.wpc[:k - 1] + (w1 * w2,),
                         tuple(o for o in lay.order if o != k))


def _reshaped_trailing(lay, s, r):
    """A reshape that changes only trailing dims, as merges down to one trailing dim and then splits of it (each
    free, _merge_last2 / _split_last), or None: across registers, lanes and warps, so the reshaped value stays in
    registers (the 4-bit group quantizer 10 -> 0 barriers, 149 -> 40 registers, no shared memory; measured on the H100,
    2026-12-06: 0.471 of the time, 1.75 -> 0.83 of Triton's; flip + sort + gather 0.769)."""
    if not isinstance(lay, BlockedLayout):
        return None
    p = 0
    while p < min(len(s), len(r)) and s[p] == r[p]:
        p += 1
    if p == 0 or p == len(s) and p == len(r):
        return None
    cur, shape = lay, list(s)
    while len(shape) > p + 1:  # merge s's trailing dims into one
        cur = _merge_last2(cur, shape)
        if cur is None:
            return None
        shape = shape[:-2] + [shape[-2] * shape[-1]]
    if shape[-1] != _prod(r[p:]):
        return None
    rest = list(r[p:])
    while len(rest) > 1:  # split off r's trailing dims, innermost first, then order them as r has them
        f = _prod(rest[1:])
        nxt = _split_last(cur, shape[-1], f)
        if nxt is None:
            return None
        cur, shape = nxt, shape[:-1] + [shape[-1] // f, f]
        # the split leaves [.., rest[0], prod(rest[1:])]: split the trailing product further
        inner = rest[1:]
        rest = inner
        if len(inner) > 1:
            continue
    return cur if tuple(shape) == tuple(r) else None


def _prod(xs):
    out = 1
    for x in xs:
        out *= x
    return out


def _rebuilt(src, operands, layout, out):
    """A copy of the one-result op `src` on `operands`, in `layout` (appended to out): its result."""
    attrs = {k: a for k, a in src.attrs.items() if k != "_layouts"}
    attrs["_layouts"] = [layout]
    n = Op(src.kind, operands, [src.results[0].type], attrs, loc=src.loc)
    out.append(n)
    return n.result


def _dot_loop_in_loop(block, depth: int = 0) -> bool:
    """A `for` loop whose body holds a dot sits inside another `for` loop."""
    for op in block.ops:
        if op.kind == "for":
            if depth and any(o.kind == "dot" for o in op.blocks[0].walk()):
                return True
            if _dot_loop_in_loop(op.blocks[0], depth + 1):
                return True
        else:
            for b in op.blocks:
                if _dot_loop_in_loop(b, depth):
                    return True
    return False


def _inside(op, region_op) -> bool:
    """Whether `op` sits in a block of `region_op` (at any depth)."""
    blk = op.block
    while blk is not None:
        owner = getattr(blk, "parent", None)
        if owner is None:
            return False
        if owner is region_op:
            return True
        blk = owner.block
    return False


def _loop_of(op):
    """The innermost loop (for / while) around op, or None."""
    blk = op.block
    while blk is not None:
        owner = getattr(blk, "parent", None)
        if owner is None:
            return None
        if owner.kind in ("for", "while"):
            return owner
        blk = owner.block
    return None


def _in_loop(op) -> bool:
    return _loop_of(op) is not None


def _of_family(layout, cls) -> bool:
    """layout is a `cls` or a slice (of a slice...) of one."""
    while isinstance(layout, SliceLayout):
        layout = layout.parent
    return isinstance(layout, cls)


def _wide_store(vl, anc, op) -> bool:
    """Store an MMA-layout value (a dot's result, its epilogue) through a conversion to the pointer's coalesced layout
    where that gives each thread 16 bytes in a row and the MMA fragments fewer (2 elements in a row a thread): one
    st.global.v4 a thread where the fragments take two or four narrower stores, at the cost of a conversion buffer in
    shared memory (Triton converts the same way: a 128x128 float32 result stored without a K loop takes 64 KiB in
    both). Of the corpus kernels it changes only scores_qkT_f32out (one dot, no K loop): the K-loop matmul and
    attention epilogues store 16 bytes a thread already. Measured (H100, 2026-12-05, 3 rounds beside Triton): the
    old store, 8 bytes a thread from the fragments, took 1.18x this one's time on scores_qkT_f32out (1.21 of
    Triton's against 1.03). Triton's test_dot / test_scaled_dot assert the v4."""
    if not isinstance(anc, BlockedLayout):
        return False
    bits = op.operands[1].type.element.bits
    if isinstance(vl, MmaLayout):
        return anc.spt[anc.order[0]] * bits >= 128 and 2 * bits < 128  # MMA fragments: 2 in a row a thread
    if _of_family(vl, LinearEncoding):
        # a value in a layout given by its bases (a reshaped or permuted accumulator): the
        # same rule on its run along the pointer's contiguous dim, read off its register bases
        d = anc.order[0]
        ll = linear(vl, tuple(op.operands[1].type.shape), _num_warps(anc))
        run = 1
        while tuple(run if i == d else 0 for i in range(len(ll.shape))) in ll.reg:
            run *= 2
        return anc.spt[d] * bits >= 128 and run * bits < 128
    return False


def _num_warps(blocked) -> int:
    n = 1
    for w in blocked.wpc:
        n *= w
    return n


def _free_source(v) -> bool:
    """A value that any layout holds for free: a constant, an arange, or a splat of a scalar."""
    src = v.owner
    kind = getattr(src, "kind", None)
    return kind in ("const", "arange") or (kind == "splat" and not src.operands[0].type.shape)


def _free_chain(v, depth: int = 8) -> bool:
    """A value computed only from free sources (_free_source) by shape ops (expand_dims, broadcast) and elementwise
    ops, at most `depth` ops deep: any layout holds it for the cost of its arithmetic."""
    if _free_source(v):
        return True
    src = v.owner
    kind = getattr(src, "kind", None)
    if depth <= 0 or kind is None or len(getattr(src, "results", ())) != 1 or getattr(src, "blocks", None):
        return False
    if kind not in ("expand_dims", "broadcast") and kind not in ELEMENTWISE:
        return False
    return all(not x.type.shape or _free_chain(x, depth - 1) for x in src.operands)


def _ebytes(elem) -> int:
    if isinstance(elem, T.pointer_type):
        return 8
    return max(1, elem.bits // 8)


class _Assigner:
    def __init__(self, fn, num_warps):
        self.fn = fn
        self.nw = num_warps
        self.ai = axisinfo.analyze(fn)
        self.users: dict = {}
        self._note_users(fn.body)
        self.desired: dict = {}
        self.lay: dict = {}  # value id -> layout (None: open / scalar)
        self._gather_idx = ab_switch("gather_idx")
        self._join_regs = ab_switch("join_regs")
        self._data_vote = ab_switch("data_vote")
        self._remat_div = ab_switch("remat_div")
        self.group_run, self.cross_run = self._group_runs(fn.body)
        self._out, self._cur_op = [], None
        self._frames: list = []  # (the new op list, the op being visited) of each block the final walk is in
        self.coalesced: set = set()  # ids of small loads kept coalesced: their users' layout gives a thread > 4
        self._small: list = []  # the small loads the walks left open
        self._broadcast_push = False  # in the last backward walk _first_walks makes (_broadcast_default)
        self._hoist_loop, self._wanted = None, None  # want()'s loop for _hoisted, and the value it converts

    def _note_users(self, block):
        for op in block.ops:
            for v in op.operands:
                self.users.setdefault(v.id, []).append(op)
            for b in op.blocks:
                self._note_users(b)

    def _own_run(self, ptr, to_smem=False):
        """(dims fastest first, elements per thread along the first) of the coalesced layout of accesses through
        ptr. A thread's run along the fastest dim is as long as one vector access can be: contiguous elements AND
        an address aligned for it. Where rows start unaligned (a row stride not divisible by 16 bytes), a run of
        8 scalars per thread would put a warp's lanes 16 bytes apart on every access; one element per thread
        keeps each warp-wide access contiguous. Data bound for shared memory (a dot's operand) keeps the
        contiguous runs: its stores there are vectors whatever the global side's alignment, and one address per
        element would cost a register pair per element."""
        shape = ptr.type.shape
        info = self.ai.get(ptr.id) or axisinfo.AxisInfo.unknown(shape)
        order = sorted(range(len(shape)), key=lambda d: (-info.contiguity[d], -d))
        order = self._continued_order(ptr, order, info)
        eb = _ebytes(ptr.type.element.element_ty)
        d = order[0]
        vec = info.contiguity[d] if to_smem else min(info.contiguity[d], max(1, info.divisibility[d] // eb))
        return tuple(order), min(vec, max(1, 16 // eb), shape[d])

    @staticmethod
    def _continued_order(ptr, order, info) -> list:
        """The dims after the fastest, reordered where the fastest dim's whole extent is one
        contiguous run: among the dims tied with the next one in contiguity, the one whose pointers step by exactly
        the elements the dims before it span (`X + b * 16 + i` over i < 16: b continues i's run) goes next, then
        the same again with the span grown. Lanes then go along one longer contiguous range (a [16, 64, 16] fp16
        tile of rows 528 bytes apart, i and b spanning a row's 512 bytes: a warp's access touches 4 128-byte
        lines, not the 16 of lanes going on to the rows). The analysis sees each dim alone, so without this a tie
        falls to the higher dim whatever the strides. Monarch's 3-D dot: 0.775 of the time (H100, 2026-12-07,
        benchmarks/2026-12-07-h100/abin7.md), 1.05 of Triton's."""
        order = list(order)
        shape = ptr.type.shape
        d = order[0]
        if info.contiguity[d] < shape[d] or axisinfo.elem_step(ptr, d) != 1:
            return order
        span = shape[d]
        for k in range(1, len(order)):
            tied = [e for e in order[k:] if info.contiguity[e] == info.contiguity[order[k]]]
            nxt = next((e for e in tied if shape[e] > 1 and axisinfo.elem_step(ptr, e) == span), None)
            if nxt is None:
                break
            order.remove(nxt)
            order.insert(k, nxt)
            span *= shape[nxt]
        return order

    def _spread_scatter(self, vl, anc, op) -> bool:
        """A store with no contiguous dim (every element its own scalar store: a scatter by computed offsets, such
        as a paged cache's [.., D, block_size] value layout) of a value whose blocked layout
        gives each thread a run of elements along the dim its lanes go along: each of the thread's stores puts the
        warp's lanes `run` elements apart, so one warp-wide store touches up to `run` times the 32-byte sectors and
        128-byte lines it would with lanes on consecutive elements (whatever the stride along that dim; equal once
        it reaches a line), and the run buys no vector. The store then takes its pointer's coalesced layout, one
        element a thread along that dim, and the value is converted to it once. (Stores only: a store goes on to
        the L2 per warp-wide access, sector by sector of each line it touches, where a gather's later accesses to
        the same lines hit in the L1, so gathers keep their group's run, `_group_runs`.) Only where the offsets are
        affine along that dim (a constant or runtime stride apart, axisinfo.affine_along): offsets from data (a
        stream compaction's scan positions, mostly consecutive along a thread's run already) keep the data's
        layout (the A/B `scatter_lanes`, which took them too, ran stream compaction at 1.099 of the time).
        The paged KV append: 0.623 of the time (H100, 2026-12-07, benchmarks/2026-12-07-h100/abin3.md)."""
        if not isinstance(vl, BlockedLayout) or vl.rank != anc.rank or not isinstance(anc, BlockedLayout):
            return False
        d = vl.order[0]
        return (anc.order[0] == d and vl.spt[d] > 1 and anc.spt[d] == 1
                and all(self._contiguity(op.operands[0], x) == 1 for x in range(vl.rank))
                and axisinfo.affine_along(op.operands[0], d))

    def _contiguity(self, v, d) -> int:
        info = self.ai.get(v.id)
        return info.contiguity[d] if info is not None else 1

    def _group_runs(self, body) -> tuple:
        """({id(load op): elements per thread along its contiguous dim}, {id(load op): the dim its free run goes
        along}). The first for loads whose values meet other memory
        accesses' values in elementwise arithmetic (connected through elementwise ops, same shape and order) and
        whose own 16-byte run is shorter than the longest in that group: an fp32 load added to values of an
        fp16 load (8 per thread) takes 8 per thread, two 16-byte vectors, instead of 4 and a conversion of the
        loaded tile through shared memory (two barriers). A run counts as far as the pointer's contiguity and
        alignment and the mask's constancy let one access go. Only loads whose own run is a full 16 bytes are
        lengthened (each of their vectors stays whole): lengthened scalar accesses put a warp's lanes further
        apart (measured on the H200, 2026-12-02: an fp32 -> fp16 chain at n = 2^25 + 7, scalar accesses, took
        1.96x the time at 8 per thread). Stores keep their own rule (the data's layout). Measured on the spin-lock
        LayerNorm backward, whose dW/dB partials (fp32) meet fp16 values: 0.84x the time. The second for scalar
        loads along a contiguous dim whose values are stored along another (below)."""
        parent = {}

        def find(x):
            while parent.get(x, x) != x:
                parent[x] = parent.get(parent[x], parent[x])
                x = parent[x]
            return x

        def union(a, b):
            ra, rb = find(a), find(b)
            if ra != rb:
                parent[ra] = rb

        mem = []  # (op, value id of its data, order, run, full)
        own = {}  # id(op) -> its pointer's own run (the anchor's elements a thread, whatever the mask)
        scans = []  # (operand id, axis) of every scan

        def walk(block):
            for op in block.ops:
                k = op.kind
                if k in ELEMENTWISE and op.results and op.results[0].type.shape:
                    shape = tuple(op.results[0].type.shape)
                    for v in op.operands:
                        if v.type.shape and tuple(v.type.shape) == shape:
                            union(v.id, op.results[0].id)
                    for r in op.results[1:]:
                        union(r.id, op.results[0].id)
                elif k == "for":
                    # a loop-carried value (an accumulator) is one value across the loop: its initial value, the
                    # body's argument, what the body yields and the loop's result share a layout
                    body = op.blocks[0]
                    y = body.terminator
                    inits, args = op.operands[3:], body.args[1:]
                    outs = y.operands if y is not None and y.kind == "yield" else []
                    for i, a in enumerate(args):
                        if not a.type.shape:
                            continue
                        vals = [a] + [x[i] for x in (inits, outs, op.results) if i < len(x)]
                        for v in vals[1:]:
                            if tuple(v.type.shape) == tuple(a.type.shape):
                                union(v.id, a.id)
                elif k == "while":
                    # a while loop's carried values are one value each across the loop too:
                    # the initial value, the before-block's argument, what the condition passes on, the
                    # after-block's argument, what it yields and the loop's result (union-find's roots: 8 -> 0
                    # conversions an iteration, 0.767 of the time on the H100, 2026-12-07, abin1.md there)
                    before, after = op.blocks
                    cond, y = before.terminator, after.terminator
                    for i, a in enumerate(before.args):
                        if not a.type.shape:
                            continue
                        vals = [v[i] for v in (op.operands, cond.operands[1:], after.args, y.operands, op.results)
                                if i < len(v)]
                        for v in vals:
                            if tuple(v.type.shape) == tuple(a.type.shape):
                                union(v.id, a.id)
                elif k == "scan":
                    scans.extend((v.id, op.attrs["axis"]) for v in op.operands if v.type.shape)
                elif k in ("load", "store") and op.operands and op.operands[0].type.shape:
                    if (k == "load" and self._gather_idx and op.results
                            and all(self._contiguity(op.operands[0], d) == 1
                                    for d in range(len(op.operands[0].type.shape)))):
                        # A gather (no contiguous dim: its addresses from loaded indices, a codebook's entries)
                        # is scalar loads in any layout: its values join its addresses' group, so it is laid out
                        # as the indices were loaded, no conversion of its 64-bit pointers or of its values
                        # (the A/B `gather_idx`)
                        union(op.operands[0].id, op.result.id)
                    to_smem = k == "load" and self._to_smem(op)
                    if not to_smem:
                        order, run = self._own_run(op.operands[0])
                        own[id(op)] = run  # the elements a thread its anchor gives it, masks aside
                        eb = _ebytes(op.operands[0].type.element.element_ty)
                        mi = (1 if k == "load" else 2) if op.attrs.get("has_mask") else None
                        if mi is not None and mi < len(op.operands):  # a mask that varies within the run splits it
                            minfo = self.ai.get(op.operands[mi].id)
                            run = min(run, minfo.constancy[order[0]] if minfo is not None else 1)
                        data = op.result.id if k == "load" else op.operands[1].id
                        mem.append((op, data, order, run, run * eb == 16))
                for b in op.blocks:
                    walk(b)

        walk(body)
        best = {}
        laid = {}  # group -> the most elements a thread any of its accesses' anchors gives (masks aside)
        store_dims = {}  # group -> the contiguous dims of its stores
        for op, data, order, run, _ in mem:
            key = (find(data), order)
            best[key] = max(best.get(key, 1), run)
            laid[key] = max(laid.get(key, 1), own[id(op)])
            if op.kind == "store":
                store_dims.setdefault(find(data), set()).add(order[0])
        strided = set()
        # A group with an access through pointers a constant stride of 2 or more elements
        # apart along its fastest dim (`X + offs * 3`): every load of the group takes one element a thread there,
        # so lanes hold consecutive indices and the strided accesses go with lanes one stride apart (a warp's
        # f64 store at stride 3 spans 768 bytes, six 128-byte lines; with 4 elements a thread, lanes were 4
        # strides apart: 3072 bytes, 24 lines). The group's contiguous accesses are then scalar, lanes still
        # consecutive: as many 128-byte lines a warp where their elements are 4 bytes or more (more
        # instructions), so only groups whose contiguous accesses all are (16-bit ones would take two lines an
        # instruction's worth of vector accesses takes in one). Measured against lanes 4 strides apart (H100,
        # 2026-12-07, the 2 corpus kernels it changes, 3 rounds beside Triton): libdevice with mixed float32/float64
        # arguments 0.526 of the time, the voxelizer 0.975 (benchmarks/2026-12-07-h100/abin9.md)
        narrow = set()
        for op, data, order, run, _ in mem:
            key = (find(data), order)
            step = axisinfo.elem_step(op.operands[0], order[0])
            if step is not None and abs(step) >= 2:
                strided.add(key)
            elif self._contiguity(op.operands[0], order[0]) > 1 and _ebytes(
                    op.operands[0].type.element.element_ty) < 4:
                narrow.add(key)
        strided -= narrow
        out, cross = {}, {}
        # A run of more than 16 bytes a thread in a stored value is written by several vectors a thread, each warp
        # instruction's lanes 32 bytes or more apart (half of every sector it touches): a group's runs stop at one
        # vector of its widest stored element, its narrower loads then read shorter vectors (lanes still contiguous)
        # and its stores write whole sectors. Only for stores that can write a vector (their own run, as the
        # pointer's contiguity and alignment and the mask's constancy allow, over one element: a scalar store gains
        # nothing from shorter runs; bucketize over N = 2^24 + 5 took 1.129 of the time when it counted) and not for
        # a group whose values are scanned along that dim (a scan's in-thread part shortens with the run and its
        # cross-lane steps grow: stick-breaking's cumprod loop 396 -> 481 SASS instructions, 1.043 of the time).
        # Then 12 corpus kernels change, each faster or level: 0.927 of the time over them (H100, 2026-12-07,
        # benchmarks/2026-12-07-h100/abin12.md, the A/B `store_runs`: PPO's loss 0.824, integer average pooling
        # 0.857, the optional-pointer kernel 0.872, GAE 0.896; none slower)
        cap = {}  # group -> the most elements a thread its runs may have: one vector of its widest stored element
        scanned = {(find(x), ax) for x, ax in scans}
        for op, data, order, run, _ in mem:
            if op.kind == "store" and run > 1 and (find(data), order[0]) not in scanned:
                key = (find(data), order)
                eb = _ebytes(op.operands[0].type.element.element_ty)
                cap[key] = min(cap.get(key, 16), max(1, 16 // eb))
        for op, data, order, run, full in mem:
            key = (find(data), order)
            if key in cap and op.kind == "load" and max(best[key], own[id(op)]) > cap[key]:
                out[id(op)] = cap[key]
                continue
            g = best[(find(data), order)]
            if (find(data), order) in strided:
                if op.kind == "load":
                    out[id(op)] = 1
                continue
            # a gather takes the layout its group's accesses have, not only their vector runs: values loaded under
            # a mask that varies per element (n not a multiple of the run) are laid out as many a thread as their
            # pointers allow, and a gather meeting them needs no conversion (bucketize over N = 2^24 + 5: 10 -> 1
            # barriers, 72 -> 48 registers; with the loop-carried rule in `_back`, measured on the H100, 2026-12-06:
            # 0.389 of the time, 2.58 -> 1.00 of Triton's)
            gg = max(g, laid[(find(data), order)])
            # (not loads that skip the L1, .cg / .cs / .cv or volatile: the two halves of each 32-byte sector
            # would come from the L2 by separate accesses)
            l1 = op.attrs.get("cache", "") in ("", ".ca") and not op.attrs.get("volatile")
            if op.kind == "load" and full and l1 and g > run and g % run == 0:
                out[id(op)] = g
            elif (op.kind == "load" and run == 1 and gg > 1
                  and all(self._contiguity(op.operands[0], d) == 1 for d in order)):
                # A gather (no contiguous dim: indices, a per-channel broadcast) is scalar loads in any layout; it
                # takes its group's run, and its values meet the others' unconverted
                out[id(op)] = gg
            elif (op.kind == "load" and run == 1 and g > 1 and l1
                  and self._contiguity(op.operands[0], order[0]) >= g):
                # Scalar loads along a contiguous dim (rows unaligned: a shifted window such as a convolution's
                # taps, a stencil's halo) whose values meet longer runs take the group's run: g scalar loads of
                # consecutive elements a thread (the L1 serves the rest of each sector) instead of a conversion of
                # their values through shared memory (H100, 2026-12-06: causal conv1d 0.755 of its time, in a loop;
                # the 5-point stencil outside one: 95 -> 48 registers, no shared memory, as Triton's)
                out[id(op)] = g
            elif op.kind == "load" and run == 1 and self._contiguity(op.operands[0], order[0]) > 1:
                # Scalar accesses (rows unaligned, or a mask that varies along the row) whose values are stored
                # along another dim (a transpose by store addresses): a thread's free run goes along the stores'
                # dim, so the conversion between the two writes 16-byte vectors (lanes still read consecutive
                # elements of one row, coalesced as before).
                dims = store_dims.get(find(data), set()) - {order[0]}
                if len(dims) == 1:
                    cross[id(op)] = dims.pop()
        return out, cross

    # ---- helpers ------------------------------------------------------------------------------------
    def default(self, v):
        return default_blocked(v.type.shape, _ebytes(v.type.element), self.nw)

    def anchor(self, ptr, to_smem=False, run=None, cross=None):
        """Coalesced layout for accesses through `ptr`: fastest dim = most contiguous, 16 bytes per thread
        (`run` elements per thread instead, for a load of a group with longer runs; `cross`: the dim a scalar
        load's free run goes along, the dim its values are stored by: _group_runs)."""
        shape = ptr.type.shape
        rank = len(shape)
        eb = _ebytes(ptr.type.element.element_ty)
        order, vec = self._own_run(ptr, to_smem)
        if cross is not None:
            numel = 1
            for x in shape:
                numel *= x
            spt = [1] * rank
            spt[cross] = max(1, min(16 // eb, shape[cross], numel // (32 * self.nw)))
            return fill_blocked(shape, spt, self.nw, order)
        if run is not None:
            return default_blocked(shape, eb, self.nw, order=order, run=run)
        return default_blocked(shape, eb, self.nw, order=order, max_vec=vec)

    def _to_smem(self, op) -> bool:
        """A load whose tile goes to shared memory: a copy-ring copy, or a load a dot reads (maybe cast first)."""
        if op.kind == "async_copy":
            return True
        if op.kind != "load":
            return False
        return self._read_by_dot(op.result, 3)

    def _read_by_dot(self, v, depth) -> bool:
        """v reaches a dot's a/b operand: directly, through a cast, or carried by a loop (the register pipeline
        yields the next tile and the dot reads the loop's block argument)."""
        for u in self.users.get(v.id, ()):
            if u.kind == "dot" and (u.operands[0] is v or u.operands[1] is v):
                return True
            if depth <= 0:
                continue
            if u.kind == "cast" and self._read_by_dot(u.result, depth - 1):
                return True
            loop = getattr(u.block, "parent", None) if u.kind == "yield" else (u if u.kind == "for" else None)
            if loop is None or loop.kind != "for":
                continue
            idx = [i for i, x in enumerate(u.operands) if x is v]
            args = loop.blocks[0].args
            for i in idx:
                j = i + 1 if u.kind == "yield" else i - 2  # yield operand i / for operand 3 + k -> body arg 1 + k
                if 1 <= j < len(args) and self._read_by_dot(args[j], depth - 1):
                    return True
        return False

    # ---- walk 1 and 3 -------------------------------------------------------------------------------
    def forward(self, block, final: bool):
        saved = (self._out, self._cur_op)
        new_ops = []
        for op in list(block.ops):
            self._out, self._cur_op = new_ops, op
            self._frames.append((new_ops, op))
            self.visit(op, final)
            self._frames.pop()
            new_ops.append(op)
        if final:
            block.ops = new_ops
            for op in new_ops:
                op.block = block
        self._out, self._cur_op = saved

    def L(self, v):
        return self.lay.get(v.id) if v.type.shape else None

    def want(self, op, i, layout, final):
        """Operand i of op must be in `layout`; in the final walk insert a conversion when it is not."""
        v = op.operands[i]
        if not v.type.shape or layout is None:
            return
        if getattr(v.owner, "kind", None) == "smem_view":  # an FMA dot's ring slot: read straight into `layout`
            self.set(v.owner, [layout])
            return
        cur = self.lay.get(v.id)
        if cur == layout or not final:
            return
        new_ops = []
        # Inside loops, a value computed only from constants, scalar splats and aranges is rematerialized in the wanted
        # layout (free: it is computed from thread ids) rather than converted every iteration. Outside, only constants
        # and splats are (a one-time conversion elsewhere keeps the code ptxas schedules best: epilogues that store
        # straight from wgmma accumulators make it serialize the wgmma pipeline), and outside loops too when the
        # wanted layout is a blocked one (address arithmetic for loads: the prologue's aranges otherwise went through
        # shared memory, a barrier each; measured on the H200: attention D=64 1.03x, D=128 1.01x, matmul noise).
        wide = (BlockedLayout, LinearEncoding)
        depth = 8 if _of_family(layout, wide) else 4 if _in_loop(op) else 0
        if depth:
            self._hoist_loop, self._wanted = self._dot_loop_of(op), v
        try:
            got, new_ops = self._materialize(v, layout, op, depth)
        finally:
            self._hoist_loop, self._wanted = None, None
        if self._hoist_operand(op, i, v, layout, new_ops):
            op.operands[i] = got
            return
        for cv in new_ops:
            cv.block = op.block
            if op is self._cur_op:
                self._out.append(cv)
            else:  # a terminator of a region already walked: put the conversion just before it
                op.block.ops.insert(op.block.ops.index(op), cv)
            self.lay[cv.result.id] = layout
        op.operands[i] = got

    def _hoist_operand(self, op, i, v, layout, new_ops) -> bool:
        """A dot operand defined before the loop the dot is in, converted to the dot's operand layout (and any
        operand of an op in a loop body with a dot): the conversion goes before that loop, once, instead of before
        the dot, every iteration (k-means' point tile on mma.sync: a trip through shared memory and its barriers each
        centroid block; H100 0.866 of the time). The converted tile is live through the loop instead of the loaded
        one, which no other op there reads."""
        if not (len(new_ops) == 1 and new_ops[0].kind == "convert_layout" and new_ops[0].operands[0] is v):
            return False
        dot_operand = op.kind == "dot" and i < 2 and isinstance(layout, DotOperandLayout)
        # any op's operand, in a loop whose body has a dot: its iterations meet at barriers already (the dot's
        # operands, its copy ring), so the conversion's barriers no longer pace the loop as they did streaming ones
        # (column variance: 4x slower once its only barrier left); here they add two an iteration (a fused MoE
        # GEMM's token mask converted for the A load every K step). Measured (H100, 2026-12-06, 2 rounds beside
        # Triton): SmoothQuant 0.972 of the time, fused MoE 0.995, attention backward dQ 0.996; no kernel slower.
        if not dot_operand and not any(o.kind == "dot" for o in op.block.ops):
            return False
        loop = _loop_of(op)
        if loop is None or not hasattr(v.owner, "kind"):
            return False
        if _inside(v.owner, loop):  # v must be defined outside the loop
            return False
        if any(u is not op and _inside(u, loop) for u in self.users.get(v.id, ())):
            return False
        return self._before_loop(new_ops[0], loop, layout)

    def _before_loop(self, cv, loop, layout) -> bool:
        """Put conversion cv before `loop` (in the walk of the block that holds it); False where that walk is not
        under way."""
        frame = next((f for f in reversed(self._frames) if f[1] is loop), None)
        if frame is None:
            return False
        cv.block = loop.block
        frame[0].append(cv)  # before the loop, which its block's walk appends after this visit
        self.lay[cv.result.id] = layout
        return True

    def _materialize(self, v, layout, user, depth):
        """(v in `layout`, the ops that make it): recomputed where cheap, else converted before its broadcast,
        else one convert_layout."""
        for make in (self._remat, lambda v, layout, out, depth: self._through_broadcast(v, layout, out, user, depth)):
            ops = []
            got = make(v, layout, ops, depth)
            if got is not None:
                return got, ops
        ops = []
        got = self._through_narrow(v, layout, ops, user)
        if got is not None:
            return got, ops
        if getattr(v.owner, "kind", None) == "convert_layout":
            # a value already converted once: convert its source instead of converting twice
            x = v.owner.operands[0]
            if self.lay.get(x.id) == layout:
                return x, []
            cv = Op("convert_layout", [x], [x.type], {"_layouts": [layout]}, loc=user.loc)
            return cv.result, [cv]
        if depth:
            ops = []
            got = self._through_elementwise(v, layout, ops, user, depth)
            if got is not None:
                return got, ops
        cv = Op("convert_layout", [v], [v.type], {"_layouts": [layout]}, loc=user.loc)
        return cv.result, [cv]

    _NARROW_CHAIN = frozenset(("cast", "add", "sub", "mul", "and", "or", "xor", "shl", "shr", "max", "min", "neg",
                               "bitcast", "cmp", "select"))

    def _through_narrow(self, v, layout, out, user):
        """v in `layout` by converting a narrower value it is computed from and repeating the elementwise ops
        between: v = f(x) where x has v's shape and fewer bits per element and every other operand of the ops
        between is a scalar or rematerializes cheaply (a residual tile loaded as float16 and widened to float32 is
        converted as float16: half the shared memory and its traffic; mm_residual_f16 took 0.952 of the time of
        the float32 conversion, H100, 2026-12-05, none of the 7 kernels it changes slower). None where no such x
        is within a few ops."""
        chain, cur = [], v
        for _ in range(6):
            src = cur.owner
            if getattr(src, "kind", None) not in self._NARROW_CHAIN or len(src.results) != 1:
                break
            tiles = [x for x in src.operands if x.type.shape and tuple(x.type.shape) == tuple(v.type.shape)]
            if not tiles:
                break
            # the operand to follow: the narrowest tile operand
            nxt = min(tiles, key=lambda x: x.type.element.bits)
            chain.append((src, nxt))
            cur = nxt
            if cur.type.element.bits < v.type.element.bits:
                break
        if not chain or cur.type.element.bits >= v.type.element.bits:
            return None
        cv = Op("convert_layout", [cur], [cur.type], {"_layouts": [layout]}, loc=user.loc)
        out.append(cv)
        got = cv.result
        for src, followed in reversed(chain):
            ops = []
            for x in src.operands:
                if x is followed:
                    ops.append(got)
                elif not x.type.shape:
                    ops.append(x)
                else:
                    tmp = []
                    y = x if self.lay.get(x.id) == layout else self._remat(x, layout, tmp, 4)
                    if y is None:
                        return None
                    out.extend(tmp)
                    ops.append(y)
            got = _rebuilt(src, ops, layout, out)
        return got

    def _through_broadcast(self, v, layout, out, user, depth):
        """v = broadcast(expand_dims(x)) (or either alone) made in `layout` by converting the smaller x and
        repeating the broadcast there: a bias row converted as 1xN values, not as the MxN tile."""
        src = v.owner
        kind = getattr(src, "kind", None)
        if kind not in ("broadcast", "expand_dims") or not src.operands[0].type.shape:
            return None
        x = src.operands[0]
        if kind == "broadcast":
            xl = layout
        else:
            xl = SliceLayout(src.attrs["axis"], layout)
        if self.lay.get(x.id) == xl:
            y = x
        else:
            y, tmp = self._materialize(x, xl, user, depth)
            out.extend(tmp)
        return _rebuilt(src, [y], layout, out)

    _ELEMENTWISE = frozenset(("add", "sub", "mul", "and", "or", "xor", "shl", "shr", "cmp", "cast", "max", "min",
                              "addptr"))
    # recomputed in a user's layout: those and `not` and `neg`: a descending sort network's direction bits (`not` of
    # an arange's compare) were converted through shared memory, a barrier pair each step (a 4096-element sort, 8
    # warps: 163 -> 33 barriers, Triton's 53; H100 2026-12-07, the A/B `remat_not`: top-p renormalization 0.866 of
    # the time, sort + gather 0.942, benchmarks/2026-12-07d-h100/abin1.md)
    _REMAT = _ELEMENTWISE | {"not", "neg"}

    def _through_elementwise(self, v, layout, out, user, depth):
        """v = f(a, b, ...) elementwise, made in `layout` from its operands there: each one recomputed where cheap
        or, where it is a broadcast of a smaller block, converted before its broadcast (_through_broadcast). Only
        where some operand is such a broadcast: `rv[None, :] == target[:, None]` read in an MMA layout converts the
        64 targets instead of the 64x128 comparison every iteration (fused linear + cross-entropy: 0.937 of its time,
        H100, 2026-12-06)."""
        src = v.owner
        if getattr(src, "kind", None) not in self._ELEMENTWISE or len(src.results) != 1:
            return None
        ops, narrow = [], False
        for x in src.operands:
            if not x.type.shape or self.lay.get(x.id) == layout:
                ops.append(x)
                continue
            if tuple(x.type.shape) != tuple(v.type.shape):
                return None
            tmp = []
            y = self._remat(x, layout, tmp, depth - 1)
            if y is None:
                tmp = []
                y = self._through_broadcast(x, layout, tmp, user, depth - 1)
                if y is None:
                    return None
                narrow = True
            out.extend(tmp)
            ops.append(y)
        if not narrow:
            return None  # nothing smaller than v was converted: one conversion of v is no worse
        return _rebuilt(src, ops, layout, out)

    def _remat(self, v, layout, out, depth):
        """A copy of v computed in `layout` (ops appended to out), or None when v is not cheap to recompute."""
        src = v.owner
        kind = getattr(src, "kind", None)
        if kind == "convert_layout":  # an earlier conversion of a cheap value: recompute from its source instead
            x = src.operands[0]
            return x if self.lay.get(x.id) == layout else self._remat(x, layout, out, depth)
        if kind in ("const", "splat", "arange")[:3 if depth else 2] and not (
                src.operands and src.operands[0].type.shape):
            ops = list(src.operands)
        elif kind in ("broadcast", "expand_dims") and depth > 0 and src.operands[0].type.shape:
            # no arithmetic of their own: recomputed from their operand recomputed in the matching layout
            x = src.operands[0]
            xl = layout if kind == "broadcast" else SliceLayout(src.attrs["axis"], layout)
            y = x if self.lay.get(x.id) == xl else self._remat(x, xl, out, depth)
            if y is None:
                return None
            ops = [y]
        elif (kind in self._REMAT or (self._remat_div and kind in ("idiv", "irem") and src.operands[1].type.shape
                                      and _free_source(src.operands[1]))) and depth > 0 and len(src.results) == 1:
            # (A/B `remat_div`) an integer division or remainder by a constant or a splat scalar too: `j // BK`,
            # `j % BK` of an im2col's column index, made once before the loop, were converted through shared memory
            # (two barriers) every iteration where the dot's tiles read them in another layout
            ops = []
            for x in src.operands:
                if not x.type.shape:
                    ops.append(x)
                    continue
                if tuple(x.type.shape) != tuple(v.type.shape):
                    return None
                y = self._remat(x, layout, out, depth - 1)
                if y is None:
                    return None
                ops.append(y)
        else:
            return self._hoisted(v, layout)
        return _rebuilt(src, ops, layout, out)

    @staticmethod
    def _dot_loop_of(op):
        """The innermost loop around op, where its body (op's block) has a dot; else None."""
        return _loop_of(op) if any(o.kind == "dot" for o in op.block.ops) else None

    def _hoisted(self, v, layout):
        """v in `layout` by one conversion before the loop of want()'s user, where v is an
        operand deeper in a chain being recomputed in that loop (not the converted value itself), is defined before
        the loop and holds at most 4 elements a thread in `layout`: a loop-invariant part of an address chain
        (a scale vector's pointers `A_S + (offs % M) * stride`, read every iteration in a wgmma accumulator's row
        layout) converted once instead of its chain converted through shared memory every iteration, two barriers
        each. Only in a loop whose body has a dot, as _hoist_operand. None elsewhere. SmoothQuant's W8A8 GEMM 0.924
        of the time, the other 3 corpus kernels it changes 0.995-1.000 (H100, 2026-12-07, 3 rounds beside Triton,
        benchmarks/2026-12-07g-h100/abin6.md)."""
        loop = self._hoist_loop
        if loop is None or v is self._wanted or not v.type.shape or not hasattr(v.owner, "kind"):
            return None
        if v.owner is loop or _inside(v.owner, loop):
            return None
        if linear(layout, tuple(v.type.shape), self.nw).num_regs > 4:
            return None
        cv = Op("convert_layout", [v], [v.type], {"_layouts": [layout]}, loc=v.owner.loc)
        return cv.result if self._before_loop(cv, loop, layout) else None

    def _small_load(self, op) -> bool:
        """A global load whose layout its users choose: not volatile, no TMA, at most one element per thread of the
        block."""
        t = op.result.type
        return (id(op) not in self.coalesced and not op.attrs.get("volatile")
                and not op.attrs.get("tma") and not op.blocks and bool(t.shape) and t.numel <= 32 * self.nw)

    def _crowded(self, op) -> bool:
        """Whether a small load's users' layout (the backward walk's wish) gives a thread too many elements for the
        load to be made in it, and it stays coalesced: more than 4 (a column vector in a wgmma accumulator's layout
        is 16 a thread: attention backward's row statistics, held through the iteration, took 175 -> 217
        registers). Up to 32 for a value used only in the iteration that loads it was tried and lost (the direct
        NCHW convolution 1.18x; docs/EXPERIMENTS.md, remat_wide), and so was up to 4 vector loads a thread
        (SmoothQuant's smoothing vector: 1.015x; docs/EXPERIMENTS.md, remat_vec)."""
        anc = self.open_layout(op.result, True)
        n = linear(anc, tuple(op.result.type.shape), self.nw).num_regs
        if 4 < n <= 8 and _in_loop(op) and not self._carried(op) and not self._reduced(op):
            # up to 8 a thread for a load in a loop body whose value is not carried to the next iteration: the
            # Hamming tile's word vector, 8 rows a thread, loaded in its users' layout as Triton's is (8 loads, the
            # lanes of a row sharing an address) instead of converted through shared memory with two barriers every
            # iteration. Measured against 4 (H100, 2026-12-08, 2 rounds beside Triton, the 5 corpus kernels it
            # changes, benchmarks/2026-12-08-h100/abin1.md): Hamming 0.867 of the time, SmoothQuant 0.958, the
            # persistent scaled GEMM 0.963, the two GEMVs 0.999 / 1.002. Not for a value a reduction or scan of its
            # own shape reads too, which would run in the replicated layout (the gated delta rule's key vector,
            # broadcast over the state and reduced for its L2 norm: 1.058 with it). (remat_wide's 32, the NCHW
            # convolution's weight column, lost.)
            return False
        return n > 4

    def _reduced(self, op) -> bool:
        """Whether a reduction or scan reads op's result, directly or through elementwise ops of its shape."""
        shape = tuple(op.result.type.shape)

        def follow(u):
            return u.kind in ELEMENTWISE and bool(u.results) and tuple(u.results[0].type.shape or ()) == shape
        return self._reaches(op, lambda u: u.kind in ("reduce", "scan"), follow)

    def _carried(self, op) -> bool:
        """Whether op's result itself is carried to the next iteration: yielded as it is or through data movement
        (a load pipelined an iteration ahead), not only folded into a carried accumulator."""
        def hit(u):
            return u.kind in ("yield", "condition")
        return self._reaches(op, hit, lambda u: u.kind in ("broadcast", "expand_dims", "convert_layout", "reshape"))

    def _reaches(self, op, hit, follow) -> bool:
        """Whether a user of op's result, or of the users `follow` admits (transitively), satisfies `hit`."""
        seen, todo = set(), [op]
        while todo:
            for r in todo.pop().results:
                for u in self.users.get(r.id, ()):
                    if id(u) in seen:
                        continue
                    if hit(u):
                        return True
                    seen.add(id(u))
                    if follow(u):
                        todo.append(u)
        return False

    def _read_in_a_loop(self, op) -> bool:
        """Whether op's result is read, directly or through ops outside loops, by an op inside a loop's body (not
        as a loop's initial value: a loop-carried value is made once an iteration wherever it is converted)."""
        def hit(u):
            return u.kind not in ("for", "while") and _in_loop(u)
        return self._reaches(op, hit, lambda u: u.kind not in ("for", "while"))

    def settle_small_loads(self) -> bool:
        """After a first walk and the backward one: the small loads outside every loop, read in a loop's body, that
        will stay coalesced (`_crowded`) are marked so, and True is returned when there are new ones, for the walks
        to be made again with them coalesced from the start. Left open in the first walk,
        such a load's chain took its layouts from its users, so the conversion moved from the users (in the loop)
        to the load (before it): a loop-invariant conversion hoisted, which the code does not do elsewhere either
        (split-KV decode: the query's conversion out of the key loop, 1.18 of the time). A crowded load in a loop,
        or one that starts a loop-carried value (a small load pipelined an iteration ahead), keeps the open walk:
        there its conversion moves within the iteration (attention backward dK/dV: its row statistics' conversions
        from between the dots to the end of the iteration, 0.926)."""
        new = {id(op) for op in self._small
               if id(op) not in self.coalesced and not _in_loop(op) and self._crowded(op)
               and self._read_in_a_loop(op)}
        self._small = []
        self.coalesced |= new
        return bool(new)

    def open_layout(self, v, final):
        got = self.desired.get(v.id)
        if got is None and final:
            got = self.default(v)
        return got

    def set(self, op, layouts):
        layouts = [l if r.type.shape else None for r, l in zip(op.results, layouts)]
        for r, l in zip(op.results, layouts):
            self.lay[r.id] = l
        if op.results:
            op.attrs["_layouts"] = layouts

    def visit(self, op, final):
        k = op.kind
        blockops = [i for i, v in enumerate(op.operands) if v.type.shape]
        if k in SOURCES:
            self.set(op, [self.open_layout(op.result, final) if op.result.type.shape else None])
        elif k in ANCHORS:
            if not op.operands[0].type.shape:
                if k != "store":
                    self.set(op, [None])
                return
            if k == "load" and self._small_load(op):
                # a load of at most one element a thread: no coalescing to keep, so it takes the layout its users
                # want (left open in the first walk, the backward walk's wish in the final one) instead of a
                # conversion through shared memory and a barrier (every iteration, in a loop); its pointers and mask
                # are address arithmetic, rebuilt in that layout. Measured against the conversion (H100, 2026-12-06,
                # the 14 corpus kernels whose code it changes among 32, 2 rounds beside Triton): selective scan
                # 0.879 of the time, attention backward dK/dV 0.930, W4A16 0.932, gated delta rule 0.939, causal
                # conv1d 0.940, HMM 0.969; none slower by over 1.1% (split-KV decode 0.999 since settle_small_loads)
                if not final:
                    self._small.append(op)
                    self.set(op, [None])
                    return
                anc = self.open_layout(op.result, final)
                if self._crowded(op):  # (settle_small_loads made the walks again without those it found)
                    anc = self.anchor(op.operands[0], self._to_smem(op), self.group_run.get(id(op)),
                                      self.cross_run.get(id(op)))
                op.attrs["_anchor"] = anc
                for i in blockops:
                    self.want(op, i, anc, final)
                self.set(op, [anc])
                return
            if k == "store" and not final:
                vl = self.L(op.operands[1])
                anc = self.anchor(op.operands[0])
                # Keep the data where it is unless that would make the store uncoalesced (the value's fastest
                # dim is not the pointer's contiguous one): then one conversion beats strided stores.
                if (vl is not None
                        and not (isinstance(vl, BlockedLayout) and vl.rank > 1 and vl.order[0] != anc.order[0])
                        and not _wide_store(vl, anc, op) and not self._spread_scatter(vl, anc, op)):
                    anc = vl
                op.attrs["_anchor"] = anc
            elif not final or "_anchor" not in op.attrs:
                op.attrs["_anchor"] = self.anchor(op.operands[0], self._to_smem(op), self.group_run.get(id(op)),
                                                  self.cross_run.get(id(op)))
            anc = op.attrs["_anchor"]
            for i in blockops:
                self.want(op, i, anc, final)
            if k != "store":
                self.set(op, [anc])
        elif k in ELEMENTWISE:
            ls = [self.L(op.operands[i]) for i in blockops]
            known = [l for l in ls if l is not None]
            # A computed operand in an MMA layout (a dot's result, its row statistics) keeps the op in that layout,
            # whatever the users after it want: the epilogue's arithmetic runs on the accumulator's registers and
            # only its final value is converted, once, where it must be (constants, scalar splats and aranges
            # cost nothing to materialize in any layout, and other operands are converted before a broadcast).
            mma = [l for i in blockops if not _free_source(op.operands[i])
                   for l in [self.L(op.operands[i])]
                   if _of_family(l, (MmaLayout, LinearEncoding))]
            if mma:
                known = mma
            if not known:
                tgt = self.open_layout(op.results[0], final) if op.results[0].type.shape else None
            else:
                d = self.desired.get(op.results[0].id)
                votes = known
                if self._data_vote and not mma and d not in known:
                    # (A/B `data_vote`) where no operand has the layout the users want, only computed operands
                    # vote if one has a layout: an operand built from constants, aranges and splats by shape ops and
                    # elementwise ops (tl.split's lane mask, a column index compare) costs nothing to rematerialize
                    # in theirs, and its own layout was chosen for its own small shape (the split mask [1, .., 1, 2]:
                    # its default put the lanes on dim 0, and the data went through shared memory into a layout that
                    # replicated it across those lanes)
                    data = [l for i in blockops if not _free_chain(op.operands[i])
                            for l in [self.L(op.operands[i])] if l is not None]
                    votes = data or known
                tgt = d if d in known else max(votes, key=votes.count)
            for i in blockops:
                self.want(op, i, tgt, final)
            self.set(op, [tgt] * len(op.results))  # every result (inline_asm has several) in the one layout
        elif k == "dot":
            # The accumulator is anchored on the MMA layout (loop-carried accumulators stay there: the
            # backward walk pushes it to the loop's init and yield); operands are converted into the
            # fragment layouts (through shared memory, ldmatrix for 16-bit types).
            if "_dot_layouts" not in op.attrs or not final:
                op.attrs["_dot_layouts"] = dot_layouts(op, self.nw, self.desired.get(op.result.id), self.options)
            res, al, bl = op.attrs["_dot_layouts"]
            self.want(op, 0, al, final)
            self.want(op, 1, bl, final)
            self.want(op, 2, res, final)
            self.set(op, [res])
        elif k == "gather":
            # (A/B `gather_smem`) the result in the index's layout (each thread loads its own elements from shared
            # memory), the source stored from its own
            tgt = self.L(op.operands[1]) or self.open_layout(op.result, final)
            self.set(op, [tgt])
            if final:
                self.want(op, 1, self.lay[op.result.id], final)
                if self.L(op.operands[0]) is None:
                    self.want(op, 0, self.default(op.operands[0]), final)
        elif k == "broadcast":
            self.set(op, [self.L(op.operands[0]) or self.open_layout(op.result, final)])
            if final and self.L(op.operands[0]) is None:
                self.want(op, 0, self.lay[op.result.id], final)
        elif k == "expand_dims":
            self._unsqueeze(op, op.attrs["axis"], final)
        elif k == "reshape":
            self._reshape(op, final)
        elif k == "permute":
            src = self.L(op.operands[0])
            pl = permute_layout(src, op.attrs["order"]) if src is not None else None
            self.set(op, [pl or self.open_layout(op.result, final)])
        elif k == "reduce":
            src = self.L(op.operands[0])
            if src is None and final:
                src = self.default(op.operands[0])
            for i in blockops:
                self.want(op, i, src, final)
            ax = op.attrs["axis"]
            out = src
            for d in ((ax,) if ax is not None else reversed(range(src.rank))) if src is not None else ():
                out = SliceLayout(d, out)  # axis None (every element): a slice of every dim, rank 0
            self.set(op, [out] * len(op.results))
            self.forward(op.blocks[0], final)
        elif k == "scan":
            src = self.L(op.operands[0])
            if src is None and final:
                src = self.default(op.operands[0])
            for i in blockops:
                self.want(op, i, src, final)
            self.set(op, [src] * len(op.results))
            self.forward(op.blocks[0], final)
        elif k == "for":
            body = op.blocks[0]
            init = op.operands[3:]
            ls = []
            for j, v in enumerate(init):
                l = self.L(v)
                carried = self.desired.get(body.args[j + 1].id)
                if final and v.type.shape and l is not None and carried is not None and l != carried and (
                        _of_family(carried, MmaLayout) or _free_source(v)):
                    # The body produces this value in an MMA layout (a dot accumulator, its row statistics):
                    # carry it there and convert the initial value once, before the loop, rather than the
                    # carried value twice per iteration (an init shared with other users, such as a zero
                    # constant also used by the epilogue, must not pull the accumulator out of its layout).
                    # Likewise any initial value made for free in any layout (a constant, a splat): it is made in
                    # the carried layout, not converted to the initial value's layout every iteration.
                    l = carried
                    self.want(op, 3 + j, l, final)
                elif l is None and v.type.shape:
                    l = self.desired.get(body.args[j + 1].id) or self.desired.get(op.results[j].id)
                    if l is None and final:
                        l = self.default(v)
                    self.want(op, 3 + j, l, final)
                ls.append(l if v.type.shape else None)
            for a, l in zip(body.args[1:], ls):
                self.lay[a.id] = l
            self.lay[body.args[0].id] = None
            self.forward(body, final)
            y = body.terminator
            for j, l in enumerate(ls):
                self.want(y, j, l, final)
            op.attrs["_arg_layouts"] = [[None] + ls]
            self.set(op, ls)
        elif k == "if":
            outs = None
            for b in op.blocks:
                self.forward(b, final)
                y = b.terminator
                if outs is None:
                    outs = [self.L(v) or (self.desired.get(r.id) if r.type.shape else None) for v, r in
                            zip(y.operands, op.results)]
                    if final:
                        outs = [l if (l is not None or not r.type.shape) else self.default(r)
                                for l, r in zip(outs, op.results)]
                for j, l in enumerate(outs):
                    self.want(y, j, l, final)
            op.attrs["_arg_layouts"] = [[] for _ in op.blocks]
            self.set(op, outs or [])
        elif k == "while":
            before, after = op.blocks
            ls = []
            for j, v in enumerate(op.operands):
                l = self.L(v)
                if l is None and v.type.shape:
                    l = self.desired.get(before.args[j].id) or (self.default(v) if final else None)
                    self.want(op, j, l, final)
                ls.append(l if v.type.shape else None)
            for a, l in zip(before.args, ls):
                self.lay[a.id] = l
            self.forward(before, final)
            cond = before.terminator
            cl = []
            for v, a in zip(cond.operands[1:], after.args):
                l = self.L(v)
                if l is None and v.type.shape:
                    l = self.desired.get(a.id) or (self.default(v) if final else None)
                    self.want(cond, len(cl) + 1, l, final)
                cl.append(l if v.type.shape else None)
            for a, l in zip(after.args, cl):
                self.lay[a.id] = l
            self.forward(after, final)
            y = after.terminator
            for j, l in enumerate(ls):
                self.want(y, j, l, final)
            op.attrs["_arg_layouts"] = [ls, cl]
            self.set(op, cl)
        else:  # print, assert, yield, condition, return, program_id, ...: no layout needs
            for b in op.blocks:
                self.forward(b, final)
            self.set(op, [None] * len(op.results))

    def _unsqueeze(self, op, ax, final):
        src = self.L(op.operands[0])
        if not op.operands[0].type.shape:  # scalar -> [1]: any layout holds it
            self.set(op, [self.open_layout(op.result, final)])
            return
        if isinstance(src, SliceLayout) and src.dim == ax:
            self.set(op, [src.parent])
            return
        tgt = self.desired.get(op.result.id)
        if tgt is None and src is not None and final and self._join_regs:
            tgt = self._register_axis(op.result, src, ax)
        if tgt is None and src is not None and final:
            tgt = self._broadcast_default(op.result) or self.default(op.result)
        if tgt is None:
            self.set(op, [None])
            return
        self.want(op, 0, SliceLayout(ax, tgt), final)
        self.set(op, [tgt])

    def _broadcast_default(self, v):
        """The default layout of the shape v is broadcast to, where v (an expand_dims'
        [M, 1] or [1, N]) has no layout its users want and every user broadcasts it to that one shape: v is made in
        the layout of what it becomes, not in one chosen for its own shape. The default of [M, 1] puts every lane and
        warp on the M rows (more threads than rows where M < 32 * num_warps: a row in two or more threads) and the
        broadcast then holds all N columns in every thread: MinHash's [64, 64] uint32 hash tile in 128 threads was 64
        elements a thread where 32 hold it, each computed twice, and its column minimum went over lanes and warps (64
        warp reductions and a shared-memory exchange an iteration). None where v has other users. Measured against the
        default of v's own shape (H100, 2026-12-07, the 6 corpus kernels it changes, 3 rounds beside Triton): 0.709 of
        the time, MinHash 0.332, n-body 0.518, NMS 0.836, flip + sort + gather 0.906, none slower
        (benchmarks/2026-12-07-h100/abin2.md)."""
        shape = self._broadcast_shape(v)
        return None if shape is None else default_blocked(shape, _ebytes(v.type.element), self.nw)

    def _broadcast_shape(self, v):
        """The one shape every user of v broadcasts it to, or None (no users, another kind of user, several shapes)."""
        users = self.users.get(v.id, ())
        shapes = {tuple(u.result.type.shape) for u in users if u.kind == "broadcast"}
        if not users or len(shapes) != 1 or any(u.kind != "broadcast" for u in users):
            return None
        return shapes.pop()

    def _register_axis(self, v, src, ax):
        """(A/B `join_regs`) For v = expand_dims(x, ax) with x in blocked layout `src`, broadcast by all its users to
        one shape of at most 4 along ax (tl.join's and tl.interleave's pairs, a value paired with a constant): src
        with dim ax added as its fastest dim, that many elements a thread along it, no lanes or warps. x is then
        in v's layout as it is (its slice along ax is src), the broadcast copies registers, and a reshape that
        merges ax into the dim before it (interleave) keeps each thread's elements contiguous: no conversion of x
        into a layout chosen for the new shape. None otherwise."""
        shape = self._broadcast_shape(v) if isinstance(src, BlockedLayout) else None
        if shape is None:
            return None
        n = shape[ax]
        if not 1 < n <= 4:
            return None
        ins = lambda t, x: tuple(t[:ax]) + (x,) + tuple(t[ax:])  # noqa: E731
        order = (ax,) + tuple(o if o < ax else o + 1 for o in src.order)
        return BlockedLayout(ins(src.spt, n), ins(src.tpw, 1), ins(src.wpc, 1), order)

    @staticmethod
    def _invariant_in_loop(v, op) -> bool:
        """Whether op sits in a loop's body and v is defined outside that loop (the innermost one)."""
        loop, blk = None, op.block
        while blk is not None and loop is None:
            owner = getattr(blk, "parent", None)
            if owner is None:
                return False
            if owner.kind in ("for", "while"):
                loop = owner
            blk = owner.block
        return loop is not None and isinstance(v.owner, Op) and not _inside(v.owner, loop)

    def _reshape(self, op, final):
        s, r = op.operands[0].type.shape, op.result.type.shape
        # Inserting or dropping one size-1 dim is free (expand_dims / slice); other reshapes go through shared
        # memory in the emitter (row-major order preserved), so their result can take any layout.
        if len(r) == len(s) + 1:
            for ax in range(len(r)):
                if r[ax] == 1 and r[:ax] + r[ax + 1:] == s:
                    return self._unsqueeze(op, ax, final)
        if len(r) + 1 == len(s):
            for ax in range(len(s)):
                if s[ax] == 1 and s[:ax] + s[ax + 1:] == r:
                    src = self.L(op.operands[0])
                    self.set(op, [SliceLayout(ax, src) if src is not None else self.open_layout(op.result, final)])
                    if final and src is None:
                        self.want(op, 0, self.default(op.operands[0]), final)
                        self.set(op, [SliceLayout(ax, self.lay[op.operands[0].id])])
                    return
        got = _reshaped(self.L(op.operands[0]), tuple(s), tuple(r))
        if got is None:
            got = _reshaped_trailing(self.L(op.operands[0]), tuple(s), tuple(r))
        src = self.L(op.operands[0])
        if got is None and _of_family(src, (MmaLayout, LinearEncoding)):
            # a reshape of an MMA-layout value (or of one already reshaped so) keeps its
            # elements where they are, in a layout given by its bases (an accumulator split for a subtiled
            # epilogue: no trip of the whole accumulator through shared memory; a later user that needs another
            # layout converts the smaller pieces). Not for blocked values: where no blocked layout holds the
            # reshape, later users' conversions multiplied (the bitonic top-k, 11 -> 43 barriers)
            got = reshaped_encoding(linear(src, tuple(s), self.nw), tuple(r))
        self.set(op, [got or self.open_layout(op.result, final)])
        if final and self.L(op.operands[0]) is None:
            self.want(op, 0, self.default(op.operands[0]), final)

    # ---- walk 2 -------------------------------------------------------------------------------------
    def backward(self, block):
        for op in reversed(block.ops):
            self._back(op)

    def _push(self, v, layout):
        if layout is not None and v.type.shape and v.id not in self.desired and self.lay.get(v.id) is None:
            self.desired[v.id] = layout

    def _cur(self, v):
        return self.lay.get(v.id) or self.desired.get(v.id)

    def _back(self, op):
        k = op.kind
        if "_anchor" in op.attrs and k in ANCHORS:
            for v in op.operands:
                self._push(v, op.attrs["_anchor"])
            return
        if k == "dot" and "_dot_layouts" in op.attrs:
            res, al, bl = op.attrs["_dot_layouts"]
            self._push(op.operands[2], res)
            return
        if not op.results and not op.blocks:
            return
        R = self._cur(op.results[0]) if op.results else None
        if R is None and k in ("inline_asm", "inline_asm_effects"):  # several results: the first one wanted
            R = next((x for x in map(self._cur, op.results) if x is not None), None)
        if k == "expand_dims" and R is None and self._broadcast_push and self._invariant_in_loop(op.operands[0], op):
            # (a last backward walk: after every other wish) a loop-invariant operand is made
            # in the layout the final walk gives the expand_dims (_broadcast_default) before the loop, not converted
            # to it every iteration
            R = self._broadcast_default(op.result)
        if k in ELEMENTWISE or k in ("broadcast", "scan"):
            for v in op.operands:
                self._push(v, R)
        elif k in ("expand_dims", "reshape") and R is not None and isinstance(R, (BlockedLayout, MmaLayout)):
            s, r = op.operands[0].type.shape, op.result.type.shape
            if len(r) == len(s) + 1:
                ax = op.attrs.get("axis")
                if ax is None:
                    ax = next((a for a in range(len(r)) if r[a] == 1 and r[:a] + r[a + 1:] == s), None)
                if ax is not None:
                    self._push(op.operands[0], SliceLayout(ax, R))
        elif k == "gather":
            self._push(op.operands[1], R)
        elif k == "reduce" and isinstance(R, SliceLayout) and R.dim == op.attrs["axis"]:
            for v in op.operands:
                self._push(v, R.parent)
        elif k == "permute" and R is not None:
            order = op.attrs["order"]
            inv = [0] * len(order)
            for i, o in enumerate(order):
                inv[o] = i
            self._push(op.operands[0], permute_layout(R, tuple(inv)))
        elif k == "for":
            body = op.blocks[0]
            y = body.terminator
            for j, r in enumerate(op.results):
                # A value the body produces in an anchored layout (a dot accumulator in MMA layout) is carried
                # in that layout, whatever the users after the loop want: no conversion per iteration.
                # So is any slice layout, a reduction's rows (online-softmax maxima and sums of an MMA result,
                # per-block row sums added up): one conversion after the loop for its later users instead of one
                # each iteration.
                yl = self.lay.get(y.operands[j].id)
                # A value an inner loop yields (a K loop nested in an outer loop, both
                # carrying the accumulator): the forward walk gave the inner loop's result its initial value's layout,
                # so the outer loop carried a blocked accumulator, converted to the MMA layout and back through shared
                # memory every outer iteration, above the live copy ring (the nested block-pointer matmul: 164 KiB, 1
                # block an SM, 2.11 of Triton's time); the MMA layout the inner loop carries it in is what it is
                # (measured on the H100, 2026-12-07: 0.451 of the time, 1.01 of Triton's; abin0.md there)
                inner = y.operands[j].owner
                if getattr(inner, "kind", None) == "for" and getattr(inner, "block", None) is body:
                    il = self.desired.get(inner.blocks[0].args[y.operands[j].index + 1].id)
                    if isinstance(il, MmaLayout):
                        yl = il
                # So is any blocked layout the body computes it in (int32 search bounds stored as int64 after the
                # loop: converted once there, not every iteration; bucketize 8 -> 1 barriers, measured on the H100,
                # 2026-12-06: 0.471 of the time, 2.06 -> 0.98 of Triton's; RMSNorm backward's dW partials 0.954)
                if isinstance(yl, (MmaLayout, SliceLayout, BlockedLayout)):
                    self.desired[body.args[j + 1].id] = yl  # over what the loop's later users wanted
                    self._push(body.args[j + 1], yl)
                self._push(body.args[j + 1], self._cur(r))
                self._push(y.operands[j], self._cur(body.args[j + 1]))
            self.backward(body)
            # Second round: what the body's users wanted for the carried values reaches the yielded ones
            # (pointer increments take the load's layout, not a default that would need converting).
            for j in range(len(op.results)):
                self._push(y.operands[j], self._cur(body.args[j + 1]))
            self.backward(body)
            # A carried value nothing wants a layout for (an accumulator that only a reduction reads after the
            # loop) is carried in the layout the body computes it in, as the first walk found it from the body's
            # anchors (the load it accumulates): its initial value is made in that layout once, before the loop,
            # instead of each iteration's result being converted to the initial value's default layout.
            late = False
            for j in range(len(op.results)):
                a, yv = body.args[j + 1], y.operands[j]
                yl = self.lay.get(yv.id)
                if yl is not None and self._cur(a) is None and self._cur(yv) in (None, yl):
                    self._push(a, yl)
                    self._push(yv, yl)
                    late = True
            if late:
                self.backward(body)
            for j, r in enumerate(op.results):
                self._push(op.operands[3 + j], self._cur(body.args[j + 1]))
        elif k == "if":
            for b in op.blocks:
                y = b.terminator
                for j, r in enumerate(op.results):
                    self._push(y.operands[j], self._cur(r))
                self.backward(b)
        elif k == "while":
            before, after = op.blocks
            self.backward(after)
            cond = before.terminator
            for j, a in enumerate(after.args):
                self._push(cond.operands[j + 1], self._cur(a) or self._cur(op.results[j]))
            self.backward(before)
            for j, a in enumerate(before.args):
                self._push(op.operands[j], self._cur(a))
        else:
            for b in op.blocks:
                self.backward(b)


def assign_layouts(module, options):
    """Pass: choose a layout for every block value, inserting convert_layout ops where layouts meet."""
    nw = options.num_warps
    a = _Assigner(module.function, nw)
    a.options = options
    _first_walks(a, module)
    if a.settle_small_loads():  # small loads that stay coalesced: walked again as such
        a.lay, a.desired = {}, {}
        _first_walks(a, module)
    a.lay = {}
    a.forward(module.function.body, final=True)
    module.meta["num_warps"] = nw
    return module


def _first_walks(a, module):
    """The walks before the final one: forward (layouts from sources and anchors) and backward (users' wishes)."""
    a.forward(module.function.body, final=False)
    a.backward(module.function.body)
    if _dot_loop_in_loop(module.function.body):
        # a second round: layouts the first one settled for inner loops' results (a K loop's accumulator in its
        # MMA layout) reach what an outer loop carries from them (online-softmax statistics across vocabulary or key
        # blocks whose scores come from an inner loop), which the first walk could not yet see. Only where a loop
        # with a dot sits in another loop: elsewhere the second round only moved other choices (a one-loop matmul's
        # epilogue conversion took the float32 accumulator instead of its fp16 value)
        a.lay = {}
        a.forward(module.function.body, final=False)
        a.backward(module.function.body)
    # the wishes for loop-invariant operands of values made only to be broadcast, where nothing else wants a layout
    # for them (a wish is never replaced: the other walks' come first)
    a._broadcast_push = True
    a.backward(module.function.body)
    a._broadcast_push = False
