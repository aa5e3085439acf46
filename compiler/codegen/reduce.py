"""Cross-thread data movement: reduce, scan, convert_layout (and the reshapes/permutes that need it).

All of it reads the LinearLayout bases: a register bit along the axis is combined in-thread, a lane bit with a
warp shuffle (shfl.sync.bfly for reduce, shfl.sync.up/down for scan), a warp bit through shared memory; bits
whose basis is zero only replicate data and are skipped. Shared memory is one buffer at offset 0 shared by
every use: `smem_begin` puts a barrier before a use when an earlier use may still be reading.
"""
from __future__ import annotations

import functools
import math

import llvmlite.ir as ir

from ..passes.layouts import DotOperandLayout, MmaLayout, linear
from . import common as C
from .common import Tile, emits, error, shuffle, uses
from .ptx import ab_switch

FULL = 0xFFFFFFFF


# ---- warp shuffles of any scalar type (64-bit as two halves, narrow types widened) ---------------------------

def _sel(e, c, a, b):
    return [e.b.select(c, x, y) for x, y in zip(a, b)]


def _bytes(v):
    t = v.type
    if isinstance(t, ir.IntType):
        return max(1, t.width // 8)
    if isinstance(t, ir.PointerType):
        return 8
    return {C.F16: 2, C.BF16: 2, C.F32: 4, C.F64: 8}[t]


def _st_smem(e, off_elems, base, v):
    """Store scalar v at element index off_elems of a typed array at byte offset base."""
    if v.type == C.I1:
        v = e.b.zext(v, C.I8)
    e.b.store(v, e.b.gep(e.smem_ptr(base), [off_elems], source_etype=v.type))


def _ld_smem(e, off_elems, base, t):
    lt = C.I8 if t == C.I1 else t
    p = e.b.gep(e.smem_ptr(base), [off_elems], source_etype=lt)
    x = e.b.load(p, typ=lt)
    return e.b.icmp_unsigned("!=", x, ir.Constant(C.I8, 0)) if t == C.I1 else x


def _thread_dim_index(e, bases, src, axis):
    """Index (0..2^k-1) of this thread among the lanes/warps whose basis lies along `axis` (an int, or a tuple of
    axes: along any of them), and 2^k."""
    axes = axis if isinstance(axis, tuple) else (axis,)
    bits = [i for i, b in enumerate(bases) if any(b[a] for a in axes)]
    if not bits:
        return None, 1
    idx = None
    for k, i in enumerate(bits):
        t = e.b.and_(e.b.lshr(src, e.i32(i)), e.i32(1)) if i else e.b.and_(src, e.i32(1))
        if k:
            t = e.b.shl(t, e.i32(k))
        idx = t if idx is None else e.b.or_(idx, t)
    return idx, 1 << len(bits)


# ---- reduce ---------------------------------------------------------------------------------------------------

_REDUX = {"add": ("add.s32", "add.u32"), "min": ("min.s32", "min.u32"), "max": ("max.s32", "max.u32"),
          "and": ("and.b32", "and.b32"), "or": ("or.b32", "or.b32"), "xor": ("xor.b32", "xor.b32")}


def _redux(e, op, ll, axes):
    """The `redux.sync` form ("min.s32", ...) of a reduction of one 32-bit integer whose combiner is a single add,
    min, max, and, or or xor, where all 32 lanes of a warp lie along the axis (sm_80 and later): the hardware's warp
    reduction, one instruction where butterfly shuffles take five shuffles and five combines. Lanes that only
    replicate data (a zero basis) are allowed for the idempotent ones (min, max, and, or), which they cannot
    change; None otherwise. (H100, 2026-12-06: top-k 0.90, sort + gather 0.93 of the shuffles' time.)"""
    if e.opts.sm < 80 or len(op.operands) != 1 or len(ll.lane) != 5:
        return None
    el = op.operands[0].type.element
    if el.kind not in ("int", "uint") or el.bits != 32:
        return None
    blk = op.blocks[0]
    if len(blk.ops) != 2 or blk.ops[1].kind != "yield" or blk.ops[1].operands[0] is not blk.ops[0].result:
        return None
    c = blk.ops[0]
    if c.kind not in _REDUX or sorted(v.id for v in c.operands) != sorted(a.id for a in blk.args):
        return None
    for b in ll.lane:
        along = any(b[a] for a in axes) and not any(x for d, x in enumerate(b) if d not in axes)
        if not along and (any(b) or c.kind in ("add", "xor")):
            return None
    return _REDUX[c.kind][el.kind == "uint"]


@emits("reduce")
def _e_reduce(e, op):
    xs = [e.get(v) for v in op.operands]
    ll = xs[0].ll
    # the reduced axes: one, or every axis (attrs axis None: tl.sum(x) of a tile of any rank, combined in the layout
    # the tile has, where a reshape to one dim first would take it through shared memory)
    axes = (op.attrs["axis"],) if op.attrs["axis"] is not None else tuple(range(len(ll.shape)))
    kept = [d for d in range(len(ll.shape)) if d not in axes]
    nops = len(xs)
    blk = op.blocks[0]

    def combine(a, b):
        return e.inline(blk, list(a) + list(b))

    # 1. in-thread: registers that differ only along the axis, in coordinate order, combined as a chain (a tree
    # of neighbours measured no faster: docs/EXPERIMENTS.md, reduce_tree)
    rows = {}
    for r in sorted(range(ll.num_regs), key=lambda r: tuple(ll.reg_coord(r)[a] for a in axes)):
        c = ll.reg_coord(r)
        rows.setdefault(tuple(c[d] for d in kept), []).append([x.regs[r] for x in xs])
    # The chains advance together, one axis position at a time for every output (the register order of the loads
    # that feed them), not one output's whole chain after another (each chain combines in the same order either
    # way): argmin_cols_f32 72 -> 40 registers and 0.948 of the time, attention's row max/sum 0.98-1.01 (H100,
    # 2026-12-05)
    acc = {key: level[0] for key, level in rows.items()}
    for i in range(1, max(len(level) for level in rows.values())):
        for key, level in rows.items():
            if i < len(level):
                acc[key] = combine(acc[key], level[i])
    # 2. lanes along the axis: butterfly shuffles (a zero basis only replicates: skip it); a sum that stays
    # per-lane partial across its loop (partial_sums below) skips them
    redux = _redux(e, op, ll, axes) if id(op) not in e.partial_reduces else None
    if redux is not None:  # the whole warp along the axis: one warp reduction instruction instead of 5 levels
        for key in acc:
            acc[key] = [e.b.call(ir.InlineAsm(ir.FunctionType(C.I32, [C.I32]), f"redux.sync.{redux} $0, $1, -1;",
                                              "=r,r"), [acc[key][0]])]
    for i, b in enumerate(ll.lane if redux is None else ()):
        if any(b[a] for a in axes) and id(op) not in e.partial_reduces:
            for key in acc:
                other = [shuffle(e, "bfly", v, 1 << i) for v in acc[key]]
                acc[key] = combine(acc[key], other)
    # 3. warps along the axis: partials through shared memory
    out_shape = tuple(ll.shape[d] for d in kept)
    out_lay = op.attrs["_layouts"][0]
    out_ll = linear(out_lay, out_shape, e.nw) if out_shape else None
    wbits = [i for i, b in enumerate(ll.warp) if any(b[a] for a in axes)]
    if wbits:
        wi, W = _thread_dim_index(e, ll.warp, e.warp, axes)
        n_out = 1
        for s in out_shape:
            n_out *= s
        sample = next(iter(acc.values()))
        bases, off = [], 0
        for v in sample:
            bases.append(off)
            off += (W * n_out * _bytes(v) + 15) // 16 * 16
        spread = _spread_pays(e, blk, len(acc), W, n_out)
        res = []
        for v in sample if spread else ():  # the spread combine's outputs: n_out slots, one more for idle lanes
            res.append(off)
            off += ((n_out + 1) * _bytes(v) + 15) // 16 * 16
        e.smem_begin(off)
        keys = list(acc)
        lin = {}
        for key in keys:
            if out_shape:
                r = _out_reg(out_ll, key)
                lin[key] = e.linear_index(out_ll, r)
            else:
                lin[key] = e.i32(0)
            slot = e.b.add(e.b.mul(wi, e.i32(n_out)), lin[key])
            for k in range(nops):
                _st_smem(e, slot, bases[k], acc[key][k])
        e.barrier()
        if spread:
            _spread_warp_partials(e, combine, sample, bases, res, W, n_out, lin, keys, acc)
        else:
            for key in keys:
                vals = None
                for w in range(W):
                    slot = e.b.add(lin[key], e.i32(w * n_out))
                    got = [_ld_smem(e, slot, bases[k], sample[k].type) for k in range(nops)]
                    vals = got if vals is None else combine(vals, got)
                acc[key] = vals
    # results
    for k, res in enumerate(op.results):
        if not out_shape:
            e.put(res, [acc[()][k]])
        else:
            e.put(res, [acc[out_ll.reg_coord(r)][k] for r in range(out_ll.num_regs)], out_ll)


def _combine_cost(blk) -> int:
    """Instructions of one combine (the reduce's region, its terminator left out)."""
    return max(1, sum(1 for o in blk.walk() if o.kind != "yield"))


def _spread_pays(e, blk, keys, W, n_out) -> bool:
    """The warps' partials are combined spread over the block's threads (each takes W * n_out / threads of them, W
    lanes a group, log2(W) shuffle levels) rather than by every thread for each of its outputs (keys * (W - 1)
    combines, most of them the same work as other threads'), where the combines that saves outweigh a second
    shared-memory round trip and barrier: 64 instructions or more (a column argmax over a (value, index) tuple: 8
    outputs a thread, 4 warps, 6 instructions a combine, 24 -> 2 combines). Measured (H100, 2026-12-06, 3 rounds
    beside Triton): that argmax 0.954 of the time (1.16 -> 1.11 of Triton's), argmin over columns 0.981."""
    threads = 32 * e.nw
    total = W * n_out
    if W > 32:
        return False
    reps = -(-total // threads)
    levels = W.bit_length() - 1
    saved = keys * (W - 1) - reps * levels
    return saved * _combine_cost(blk) >= 64


def _spread_warp_partials(e, combine, sample, bases, res, W, n_out, lin, keys, acc):
    """The warps' partials (slot w * n_out + o of each operand's array, written before the caller's barrier)
    combined by the whole block: element i = w + W * o goes to thread i % threads (W consecutive lanes hold one
    output's W partials and combine them by butterfly shuffles), the first lane of each group writes the output to a
    second array, and after a barrier every thread reads its outputs from there."""
    nops = len(sample)
    threads = 32 * e.nw
    total = W * n_out
    tid = e.b.add(e.b.mul(e.warp, e.i32(32)), e.lane)
    for rep in range(-(-total // threads)):
        i = e.b.add(tid, e.i32(rep * threads)) if rep else tid
        valid = e.b.icmp_unsigned("<", i, e.i32(total))
        j = e.b.select(valid, i, e.i32(0))  # any slot in range: a whole group is valid or not (W divides both)
        w = e.b.and_(j, e.i32(W - 1))
        o = e.b.lshr(j, e.i32(W.bit_length() - 1))
        slot = e.b.add(e.b.mul(w, e.i32(n_out)), o)
        vals = [_ld_smem(e, slot, bases[k], sample[k].type) for k in range(nops)]
        for lvl in range(W.bit_length() - 1):
            other = [shuffle(e, "bfly", v, 1 << lvl) for v in vals]
            vals = combine(vals, other)
        first = e.b.and_(valid, e.b.icmp_unsigned("==", w, e.i32(0)))
        dst = e.b.select(first, o, e.i32(n_out))
        for k in range(nops):
            _st_smem(e, dst, res[k], vals[k])
    e.barrier()
    for key in keys:
        acc[key] = [_ld_smem(e, lin[key], res[k], sample[k].type) for k in range(nops)]


def _out_reg(out_ll, key):
    for r in range(out_ll.num_regs):
        if out_ll.reg_coord(r) == key:
            return r
    raise KeyError(key)


@emits("gather")
def _e_gather(e, op):
    """tl.gather through shared memory (the A/B `gather_smem`): the source tile stored row-major by one holder of
    each element, a barrier, then each result register loaded at its own coordinates with the index's value along
    `axis` (0 where the index is outside [0, n)). Linear in the source's and the result's sizes, where the comparison
    of every index with every source position costs their product."""
    src, index = op.operands
    axis = op.attrs["axis"]
    shape = tuple(src.type.shape)
    n = shape[axis]
    xl, rl = e.layout_of(src), e.result_ll(op)
    xs, idx = e.regs(src), e.regs(index)
    t = xs[0].type
    eb = _bytes(xs[0])
    e.smem_begin(math.prod(shape) * eb)
    uniq = e.unique_pred(xl)
    seen = set()
    for r, v in enumerate(xs):
        c = tuple(xl.reg_coord(r))
        if c in seen:
            continue
        seen.add(c)
        if uniq is None:
            _st_smem(e, e.linear_index(xl, r), 0, v)
        else:
            with e.b.if_then(uniq):
                _st_smem(e, e.linear_index(xl, r), 0, v)
    e.barrier()
    strides = [1] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        strides[d] = strides[d + 1] * shape[d + 1]
    zero = ir.Constant(C.I8 if t == C.I1 else t, 0)
    signed = index.type.element.is_int_signed()
    out = []
    for r in range(rl.num_regs):
        i = idx[r]
        if i.type.width > 32:  # a 64-bit index: out of range where its high word is not that of a small one
            ok = e.b.icmp_unsigned("<", i, ir.Constant(i.type, n))
            i = e.b.trunc(i, C.I32)
        else:
            if i.type != C.I32:
                i = e.b.sext(i, C.I32) if signed else e.b.zext(i, C.I32)
            ok = e.b.icmp_unsigned("<", i, e.i32(n))  # negative indices wrap to large unsigned ones
        pos = e.b.select(ok, i, e.i32(0))
        off = None
        for d in range(len(shape)):
            cd = pos if d == axis else e.coord(rl, r, d)
            term = cd if strides[d] == 1 else e.b.mul(cd, e.i32(strides[d]))
            off = term if off is None else e.b.add(off, term)
        got = _ld_smem(e, off, 0, t)
        if t == C.I1:
            out.append(e.b.and_(got, ok))
        else:
            out.append(e.b.select(ok, got, zero))
    e.put(op.result, out, rl)


# ---- scan -----------------------------------------------------------------------------------------------------

@emits("histogram")
def _e_histogram(e, op):
    """tl.histogram: `bins` int32 counters in shared memory zeroed by the block's threads, a
    barrier, one shared-memory atomic add per element (by one holder of it: a layout that repeats an element across
    lanes, warps or a thread's registers counts it once; values outside [0, bins), masked-off ones -1, are not
    counted), a barrier, then each result register read from its bin. Linear in the block's size, where the
    comparison of every value with every bin it replaces is size x bins."""
    x = op.operands[0]
    xl = e.layout_of(x)
    rl = e.result_ll(op)
    bins = op.attrs["bins"]
    nt = 32 * e.nw
    e.smem_begin(4 * bins)
    for i in range(0, bins, nt):
        idx = e.b.add(e.tid, e.i32(i)) if i else e.tid
        ptr = e.smem_ptr(e.b.mul(idx, e.i32(4)))
        if i + nt > bins:
            with e.b.if_then(e.b.icmp_unsigned("<", idx, e.i32(bins))):
                e.b.store(e.i32(0), ptr)
        else:
            e.b.store(e.i32(0), ptr)
    e.barrier()
    uniq = e.unique_pred(xl)
    seen = set()
    for r, v in enumerate(e.regs(x)):
        c = tuple(xl.reg_coord(r))
        if c in seen:
            continue
        seen.add(c)
        ok = e.b.and_(e.b.icmp_signed(">=", v, ir.Constant(v.type, 0)),
                      e.b.icmp_signed("<", v, ir.Constant(v.type, bins)))
        idx = v if v.type == C.I32 else e.b.trunc(v, C.I32)
        ptr = e.smem_ptr(e.b.mul(idx, e.i32(4)))
        with e.b.if_then(e.and_pred(uniq, ok)):
            e.b.atomic_rmw("add", ptr, e.i32(1), "monotonic")
    e.barrier()
    regs = [e.b.load(e.smem_ptr(e.b.mul(e.linear_index(rl, r), e.i32(4))), typ=C.I32) for r in range(rl.num_regs)]
    e.put(op.result, regs, rl)


@emits("scan")
def _e_scan(e, op):
    axis = op.attrs["axis"]
    rev = op.attrs.get("reverse", False)
    xs = [e.get(v) for v in op.operands]
    ll = xs[0].ll
    nops = len(xs)
    blk = op.blocks[0]

    def combine(a, b):
        return e.inline(blk, list(a) + list(b))

    thr = [b[axis] for b in ll.lane + ll.warp if b[axis]]
    thr_min = min(thr) if thr else 1 << 30
    # chunks: registers with the same other-coords and the same "rep" (coordinate bits above the threads')
    chunks = {}
    for r in range(ll.num_regs):
        c = ll.reg_coord(r)
        key = c[:axis] + c[axis + 1:]
        rep = c[axis] & ~(thr_min - 1)
        chunks.setdefault((key, rep), []).append((c[axis], r))
    vals = [[x.regs[r] for x in xs] for r in range(ll.num_regs)]
    totals = {}
    for ck, lst in chunks.items():
        lst.sort(reverse=rev)
        acc = None
        for _, r in lst:
            acc = vals[r] if acc is None else combine(acc, vals[r])
            vals[r] = acc
        totals[ck] = acc
    wbits = [i for i, b in enumerate(ll.warp) if b[axis]]
    reps = sorted({rep for (_, rep) in chunks}, reverse=rev)
    keys = sorted({key for (key, _) in chunks})
    # lanes along the axis: Hillis-Steele over chunk totals, then add the exclusive prefix into each element
    lbits = [i for i, b in enumerate(ll.lane) if b[axis]]
    seg_last = None  # i1: this lane holds its segments' totals (only it stores them for the warps' combine)
    if lbits:
        i0, m = lbits[0], len(lbits)
        if lbits != list(range(i0, i0 + m)):
            raise error("scan over a layout with non-contiguous lane bits", op.loc)
        # the lanes' shuffles scan in lane order: their bits must be the coordinate bits right above the
        # in-thread ones, in order (every other thread or register bit then lies above them)
        if [ll.lane[i][axis] for i in lbits] != [thr_min << k for k in range(m)]:
            raise error("scan over a layout whose lanes along the axis are not in coordinate order", op.loc)
        M = 1 << m
        li = e.b.and_(e.b.lshr(e.lane, e.i32(i0)), e.i32(M - 1))
        kind = "down" if rev else "up"
        # the segment total ends in the last lane along the axis (first, for a reverse scan): the warps' combine
        # stores it from there; the registers' carry between reps needs it in every lane
        bcast = not wbits and len(reps) > 1
        seg_last = e.b.icmp_unsigned("==", li, e.i32(0 if rev else M - 1))
        for ck in chunks:
            t = totals[ck]
            for k in range(m):
                delta = (1 << k) << i0
                v = [shuffle(e, kind, x, delta) for x in t]
                ok = (e.b.icmp_unsigned("<", li, e.i32(M - (1 << k))) if rev else
                      e.b.icmp_unsigned(">=", li, e.i32(1 << k)))
                t = _sel(e, ok, combine(v, t), t)
            lst = chunks[ck]
            if len(lst) > 1:
                ex = [shuffle(e, kind, x, 1 << i0) for x in t]
                has = e.b.icmp_unsigned("<", li, e.i32(M - 1)) if rev else e.b.icmp_unsigned(">", li, e.i32(0))
                for _, r in lst[:-1]:
                    vals[r] = _sel(e, has, combine(ex, vals[r]), vals[r])
            # the chunk's last element (in the scan's order) held its in-thread total: now the inclusive scan
            vals[lst[-1][1]] = t
            if bcast:
                mask = (M - 1) << i0
                src = e.b.and_(e.lane, e.i32(~mask & 31))
                if not rev:
                    src = e.b.or_(src, e.i32(mask))
                totals[ck] = [shuffle(e, "idx", x, src) for x in t]
            else:
                totals[ck] = t
    if not wbits and len(reps) > 1:
        for key in keys:
            carry = None
            for rep in reps:
                tot = totals[(key, rep)]
                if carry is not None:
                    for _, r in chunks[(key, rep)]:
                        vals[r] = combine(carry, vals[r])
                    carry = combine(carry, tot)
                else:
                    carry = tot
    elif wbits:
        _cross_warp_scan(e, op, ll, axis, rev, nops, combine, chunks, totals, vals, thr_min, seg_last)
    for k, res in enumerate(op.results):
        e.put(res, [vals[r][k] for r in range(ll.num_regs)], ll)


# Cost of a barrier (and of the extra round trip through shared memory it brings) in combine-sized instructions,
# weighed against the instructions the prefix scheme saves over the direct one (_cross_warp_scan). With 24 the
# model picks the scheme of fewer SASS instructions (ptxas 13, sm_90a) in 27 of 28 scans of tests/ops/
# test_scan_layouts.py's kernels (1-D to 2-D, 2 to 16 warps; the miss: 8 instructions of 240); a GPU A/B of
# TILEFARM_AB=scan_direct / scan_prefix against the model is what settles it.
_BARRIER_COST = 24


def _cross_warp_scan(e, op, ll, axis, rev, nops, combine, chunks, totals, vals, thr_min, seg_last):
    """Combine the segment totals of the warps along the axis into every element, in time linear in the number of
    segments. A segment is what one warp's lanes scanned for one rep (register bits along the axis at or above the
    lowest thread bit) and one set of other coordinates; its position along the axis is the rank of its rep and
    warp bits among all of them, so reps may lie below, between or above the warp bits. The lane that holds a
    segment's total (`seg_last`; every lane where no lanes lie along the axis) stores it at slot (position,
    other-coords), then a barrier, then one of two schemes:
    - direct: each thread walks the totals of each of its columns once, in the scan's order, keeping the running
      combine, and each chunk picks the one that ends just before its own segment (a select over this warp's
      possible positions): per thread keys x segments loads and combines, no second barrier;
    - prefix: the block's threads scan the columns once (each column split into parts that lanes of one warp
      scan in-thread and join by shuffles) and write each total's inclusive prefix into a region of their own;
      after a second barrier each chunk reads one prefix: per thread keys x reps loads, plus a share of the
      column scans.
    The direct scheme is taken where its extra instructions cost less than a barrier (_BARRIER_COST);
    TILEFARM_AB=scan_direct or scan_prefix forces one of them. Both combine in the scan's order (the earlier
    segments on the left): exact for non-commutative combines and for reverse scans."""
    rep_bits = sorted({b[axis] for b in ll.reg if b[axis] >= thr_min})
    warp_bits = [(j, b[axis]) for j, b in enumerate(ll.warp) if b[axis]]
    seg_vals = sorted(rep_bits + [v for _, v in warp_bits])
    if len(set(seg_vals)) != len(seg_vals):
        raise error("scan over a layout whose warps repeat a coordinate along the axis", op.loc)
    rank = {v: i for i, v in enumerate(seg_vals)}
    S = 1 << len(seg_vals)
    W = 1 << len(warp_bits)
    n_other = 1
    for d, s in enumerate(ll.shape):
        if d != axis:
            n_other *= s
    keys = sorted({key for key, _ in chunks})
    reps = sorted({rep for _, rep in chunks})
    nt = 32 * e.nw
    if n_other >= nt:
        P, L, cols = 1, S, n_other // nt
    else:
        P = min(S, 32, nt // n_other)
        L, cols = S // P, 1
    direct_cost = len(keys) * (2 * S + len(reps) * W)
    prefix_cost = len(keys) * len(reps) + cols * (3 * L + 3 * (P.bit_length() - 1) + 2) + _BARRIER_COST
    if ab_switch("scan_direct"):
        use_prefix = False
    elif ab_switch("scan_prefix"):
        use_prefix = True
    else:
        use_prefix = prefix_cost < direct_cost

    # the totals (and, for the prefix scheme, their prefixes: a region of their own, so that no thread overwrites
    # a total another may still read)
    types = [v.type for v in vals[0]]
    bases, pbases, off = [], [], 0
    for region in ((bases, pbases) if use_prefix else (bases,)):
        for v in vals[0]:
            region.append(off)
            off += (S * n_other * _bytes(v) + 15) // 16 * 16
    e.smem_begin(off)

    def static_pos(rep):
        return sum(1 << rank[v] for v in rep_bits if rep & v)

    def warp_pos(w):
        """Position bits of warp combination w (bit k of w: the k-th warp bit along the axis)."""
        return sum(1 << rank[v] for k, (_, v) in enumerate(warp_bits) if w >> k & 1)

    # this warp's part of the position (warp-uniform)
    dyn = None
    for j, v in warp_bits:
        t = e.b.and_(e.b.lshr(e.warp, e.i32(j)), e.i32(1)) if j else e.b.and_(e.warp, e.i32(1))
        if rank[v]:
            t = e.b.shl(t, e.i32(rank[v]))
        dyn = t if dyn is None else e.b.or_(dyn, t)
    warp_mask = warp_pos(W - 1)
    # row-major index of the other coords, from a register of each key
    lin = {}
    for (key, rep), lst in chunks.items():
        if key in lin:
            continue
        r = lst[0][1]
        idx, stride = e.i32(0), 1
        for d in range(len(ll.shape) - 1, -1, -1):
            if d == axis:
                continue
            idx = e.b.add(idx, e.b.mul(e.coord(ll, r, d), e.i32(stride)))
            stride *= ll.shape[d]
        lin[key] = idx

    def slot(pos, col):
        p = e.i32(pos * n_other) if isinstance(pos, int) else e.b.mul(pos, e.i32(n_other))
        return e.b.add(p, col)

    def load(pos, col, region=bases):
        s = slot(pos, col)
        return [_ld_smem(e, s, region[k], types[k]) for k in range(nops)]

    def store(pos, col, v, region=bases):
        s = slot(pos, col)
        for k in range(nops):
            _st_smem(e, s, region[k], v[k])

    def first(sp):
        """Is this chunk's segment the first in the scan's order, for some warp? (then: the i1 'not first')"""
        if not rev:
            return None if sp else e.b.icmp_unsigned("!=", dyn, e.i32(0))
        return e.b.icmp_unsigned("!=", dyn, e.i32(warp_mask)) if (sp | warp_mask) == S - 1 else None

    def apply(lst, pre, has):
        for _, r in lst:
            vals[r] = combine(pre, vals[r]) if has is None else _sel(e, has, combine(pre, vals[r]), vals[r])

    def store_totals():
        for (key, rep), tot in totals.items():
            store(e.b.add(dyn, e.i32(static_pos(rep))), lin[key], tot)

    if seg_last is None:
        store_totals()
    else:
        with e.b.if_then(seg_last):
            store_totals()
    e.barrier()

    if not use_prefix:
        # order index q of position p: p forward, S-1-p reversed; the running combine after q = 0..S-2
        eq = {w: e.b.icmp_unsigned("==", dyn, e.i32(warp_pos(w))) for w in range(1, W)}
        for key in keys:
            got = [load(S - 1 - q if rev else q, lin[key]) for q in range(S - 1)]
            run = [got[0]]
            for q in range(1, S - 1):
                run.append(combine(run[-1], got[q]))
            for rep in reps:
                if (key, rep) not in chunks:
                    continue
                sp = static_pos(rep)
                # the running combine before this warp's segment: the first candidate is the default (taken for
                # warp combination 0, or where the segment is the first and nothing is combined)
                pre = None
                for w in range(W):
                    p = sp | warp_pos(w)
                    q = S - 1 - p if rev else p
                    if q == 0:
                        continue
                    pre = run[q - 1] if pre is None else _sel(e, eq[w], run[q - 1], pre)
                apply(chunks[(key, rep)], pre, first(sp))
        return

    def column(col, part, active):
        # this thread's part of the column: order indices q = part*L + i, i < L
        qb = e.b.mul(part, e.i32(L)) if P > 1 else e.i32(0)
        pos = [e.b.sub(e.i32(S - 1 - i), qb) if rev else e.b.add(qb, e.i32(i)) for i in range(L)]
        got = [load(p, col) for p in pos]
        loc = [got[0]]
        for i in range(1, L):
            loc.append(combine(loc[-1], got[i]))
        if P > 1:
            # the parts' totals: an inclusive Hillis-Steele over the P lanes of the column, then shifted by one
            t = loc[-1]
            for k in range(P.bit_length() - 1):
                v = [shuffle(e, "up", x, 1 << k) for x in t]
                t = _sel(e, e.b.icmp_unsigned(">=", part, e.i32(1 << k)), combine(v, t), t)
            ex = [shuffle(e, "up", x, 1) for x in t]
            has = e.b.icmp_unsigned("!=", part, e.i32(0))
            loc = [_sel(e, has, combine(ex, x), x) for x in loc]
        if active is None:
            for p, v in zip(pos, loc):
                store(p, col, v, pbases)
        else:
            with e.b.if_then(active):
                for p, v in zip(pos, loc):
                    store(p, col, v, pbases)

    if P == 1 and n_other >= nt:
        for j in range(cols):
            column(e.tid if not j else e.b.add(e.tid, e.i32(j * nt)), None, None)
    else:
        lg = P.bit_length() - 1
        part = e.b.and_(e.lane, e.i32(P - 1)) if P > 1 else None
        c = e.b.lshr(e.tid, e.i32(lg)) if lg else e.tid
        active = e.b.icmp_unsigned("<", c, e.i32(n_other)) if n_other * P < nt else None
        if active is not None:
            c = e.b.urem(c, e.i32(n_other))
        column(c, part, active)
    e.barrier()
    for (key, rep), lst in chunks.items():
        sp = static_pos(rep)
        # the position before this one in the scan's order, wrapped into the buffer where there is none
        if rev:
            pos = e.b.add(dyn, e.i32(sp + 1))
        else:
            pos = e.b.add(dyn, e.i32(sp - 1)) if sp else e.b.add(dyn, e.i32(S - 1))
        has = first(sp)
        if has is not None:
            pos = e.b.and_(pos, e.i32(S - 1))
        apply(lst, load(pos, lin[key], pbases), has)


# ---- layout conversion through shared memory ------------------------------------------------------------------

def _same_threads(a, b):
    return a.lane == b.lane and a.warp == b.warp and sorted(a.reg) == sorted(b.reg)


def convert(e, x, dst_ll, src_shape_perm=None, dst_shape=None):
    """Move Tile x into dst_ll. Free when the same threads hold the same elements (registers are reordered);
    otherwise every element is written at its row-major offset, a barrier, and read back in the new layout.
    `src_shape_perm` (permute) maps source coords into the destination's dims."""
    if src_shape_perm is None and dst_shape is None and _same_threads(x.ll, dst_ll):
        index = {x.ll.reg_coord(r): r for r in range(x.ll.num_regs)}
        return Tile(dst_ll, [x.regs[index[dst_ll.reg_coord(r)]] for r in range(dst_ll.num_regs)])
    plan = _plan(x, dst_ll, src_shape_perm, dst_shape)
    e.smem_begin(plan["bytes"])
    _store_plan(e, x, dst_ll, plan, 0)
    e.barrier()
    return _load_plan(e, dst_ll, plan, 0)


def convert_together(e, pairs):
    """Several conversions through shared memory at once: every source stored in a region of its own, one
    barrier, then every destination read. The reads follow no store, so the code generator and ptxas may place
    each of them next to its first use (what an FMA dot needs of its two operands: converted one after the other,
    the first operand's reads were pinned before the second's stores, and all of its registers lived at once)."""
    plans, offs, total = [], [], 0
    for x, dst_ll in pairs:
        plan = _plan(x, dst_ll, None, None)
        plans.append(plan)
        offs.append(total)
        total += -(-plan["bytes"] // 128) * 128
    e.smem_begin(total)
    for (x, dst_ll), plan, off in zip(pairs, plans, offs):
        _store_plan(e, x, dst_ll, plan, off)
    e.barrier()
    return [_load_plan(e, dst_ll, plan, off) for (_, dst_ll), plan, off in zip(pairs, plans, offs)]


def _plan(x, dst_ll, src_shape_perm, dst_shape):
    t = x.regs[0].type
    eb = 1 if t == C.I1 else _bytes(x.regs[0])
    # (1) 16 bytes of padding after each row of 128
    # bytes or more -- unpadded, rows a multiple of 128 bytes apart share banks, and an MMA accumulator fragment (8 rows
    # x 4 lanes per warp) stored row-major is an 8-way bank conflict; (2) runs of registers that are consecutive along
    # the last dim move as one vector access (up to 16 bytes) on each side, instead of scalars LLVM may or may not
    # merge. Both sides index in the destination's shape (so not for reshape, whose sides differ). Measured on the
    # H200 with the paired casts and the ring's immediate distances (2026-11-30): matmul 1.00-1.11x, attention
    # D=64 1.05x.
    fast = dst_shape is None and t != C.I1
    best = _buffer_plan(x.ll, dst_ll, src_shape_perm, eb, fast, None)
    rank = len(dst_ll.shape)
    if fast and src_shape_perm is None and rank >= 2:
        # The buffer's contiguous dim need not be the tensor's last: where the writer's registers run along
        # another dim (scalar loads whose threads hold runs along the dim they are stored by: a transpose by
        # store addresses), a buffer contiguous along that dim takes the writes as 16-byte vectors. Taken where
        # the reads stay as wide as before and the count of wavefronts falls. Measured on the H200 (2026-12-02,
        # benchmarks/2026-12-02d/ab-buffer-order.md): transpose by store addresses, fp16 at odd sizes, 1.09 ->
        # 0.99 of Triton's time (2 vector stores per thread instead of 16 scalar ones); where the reads lost
        # their vectors (a 3-D permute's writer and reader swapping 16-byte runs) it took 1.02x, hence the rule.
        w = max(range(rank), key=lambda d: (_run_length(x.ll, d, 16 // eb), d == rank - 1))
        if w != rank - 1 and _run_length(x.ll, w, 16 // eb) > 1:
            dperm = tuple(d for d in range(rank) if d != w) + (w,)
            alt = _buffer_plan(x.ll, dst_ll, dperm, eb, fast, dperm)
            if alt["vs"] > best["vs"] and alt["vd"] >= best["vd"] and \
                    _plan_cost(x.ll, dst_ll, eb, alt) < _plan_cost(x.ll, dst_ll, eb, best):
                best = alt
    numel = 1
    for n in best["shape"][:-1]:
        numel *= n
    numel *= best["shape"][-1] + best["pad"] if best["shape"] else 1
    return {"t": t, "eb": eb, "fast": fast, "pad": best["pad"], "vs": best["vs"], "vd": best["vd"],
            "swz": best["swz"], "perm": best["perm"], "dperm": best["dperm"], "shape": best["shape"],
            "bytes": numel * eb}


def _buffer_plan(src, dst, perm, eb, fast, dperm):
    """Padding, swizzle, vector widths and cost of a conversion buffer whose dims are the destination's in the
    order `dperm` (None: the destination's), the writer's coordinates permuted by `perm`."""
    shape = _buffer_shape(dst.shape, dperm) if dst.shape else ()
    last = shape[-1] if shape else 1
    pad = 16 // eb if fast and last * eb >= 128 else 0
    # the source dim that becomes the buffer's last (a permute's destination dim d is source dim perm[d])
    src_last = (perm[-1] if perm is not None else len(src.shape) - 1) if dst.shape else 0
    dst_last = (dperm[-1] if dperm is not None else len(dst.shape) - 1) if dst.shape else 0
    vs = _run_length(src, src_last, 16 // eb) if fast else 1
    vd = _run_length(dst, dst_last, 16 // eb) if fast and dst.shape else 1
    if pad:
        pad = _choose_pad(src, dst, perm, eb, vs, vd, pad, dperm)
    swz = _choose_swizzle(src, dst, perm, eb, vs, vd, pad, dperm) if fast else None
    if swz is not None:
        pad = 0
    return {"pad": pad, "vs": vs, "vd": vd, "swz": swz, "perm": perm, "dperm": dperm, "shape": shape}


def _plan_cost(src, dst, eb, b):
    return _cached_cost(src, dst, b["perm"], eb, b["vs"], b["vd"], b["pad"], b["swz"], b["dperm"])


@functools.lru_cache(maxsize=None)
def _cached_cost(src, dst, perm, eb, vs, vd, pad, swz, dperm):
    return _conversion_cost(src, dst, perm, eb, vs, vd, pad, swz, None, dperm)


def _store_plan(e, x, dst_ll, plan, off):
    t, eb, pad, vs, swz, perm = plan["t"], plan["eb"], plan["pad"], plan["vs"], plan["swz"], plan["perm"]
    shape = plan["shape"]  # the buffer's dims (the destination's, or in the order plan["dperm"])
    # Duplicate holders write the same value to the same place: harmless, so no predicate.
    for r in range(0, x.ll.num_regs, vs):
        if swz is not None:
            idx = _swizzled_index(e, x.ll, r, shape, perm, swz)
        elif perm is not None:
            idx = e.linear_index(x.ll, r, shape=shape, perm=perm, row_pad=pad)
        else:
            idx = e.linear_index(x.ll, r, shape=dst_ll.shape if plan["fast"] else None, row_pad=pad)
        if vs == 1:
            _st_smem(e, idx, off, x.regs[r])
        else:
            from .dot import _store_vector
            _store_vector(e, x.regs[r:r + vs], e.b.gep(e.smem_ptr(off), [idx], source_etype=t), vs * eb)


def _load_plan(e, dst_ll, plan, off):
    t, eb, pad, vd, swz, dperm = plan["t"], plan["eb"], plan["pad"], plan["vd"], plan["swz"], plan["dperm"]
    shape = plan["shape"]
    regs = []
    for r in range(0, dst_ll.num_regs, vd):
        idx = _swizzled_index(e, dst_ll, r, shape, dperm, swz) if swz is not None else \
            e.linear_index(dst_ll, r, shape=shape, perm=dperm, row_pad=pad)
        if vd == 1:
            regs.append(_ld_smem(e, idx, off, t))
        else:
            v = e.b.load(e.b.gep(e.smem_ptr(off), [idx], source_etype=t), typ=ir.VectorType(t, vd), align=vd * eb)
            regs += [e.b.extract_element(v, e.i32(i)) for i in range(vd)]
    return Tile(dst_ll, regs)


def _span_array(ll, which):
    """LinearLayout._span as an int64 array (entries x dims), kept beside it."""
    import numpy as np  # here, not at import: the code generator loads NumPy only when a conversion is planned

    span = ll._span(which)  # builds the layout's table cache if needed
    cache = ll.__dict__["_spans"]
    got = cache.get(("np", which))
    if got is None:
        got = cache[("np", which)] = np.array(span, dtype=np.int64).reshape(-1, len(ll.shape))
    return got


def _buffer_index(coords, shape, pad, swz):
    """Element index of `coords` in the conversion buffer: row-major with `pad` elements after each last-dim row,
    or, with swz = (shift, mask, vec), unpadded with the 16-byte chunk of each row XORed by (row >> shift) & mask.
    `coords` is a sequence of per-dim coordinates, or an array whose last axis is the dims (an array of indices
    comes back)."""
    if hasattr(coords, "ndim"):  # an array
        coords = [coords[..., d] for d in range(coords.shape[-1])]
    row = 0
    for c, n in zip(coords[:-1], shape[:-1]):
        row = row * n + c
    col = coords[-1]
    if swz is None:
        return row * (shape[-1] + pad) + col
    shift, mask, vec = swz
    return row * shape[-1] + (col ^ (((row >> shift) & mask) * vec))


def _wavefronts(addrs, width):
    """Shared-memory wavefronts of one warp-wide access of `width` bytes per lane at byte addresses `addrs`
    (lane order): lanes are served in groups of 128 bytes of requests (32 lanes at 4 bytes, 16 at 8, 8 at 16),
    and a group takes as many wavefronts as the most distinct 4-byte words falling in one of the 32 banks.
    `addrs` may also be an array of accesses x lanes: the sum over its accesses."""
    import numpy as np

    a = np.asarray(addrs, dtype=np.int64)
    if a.ndim == 1:
        a = a[None, :]
    n, lanes = a.shape
    if n == 0 or lanes == 0:
        return 0
    size = max(width, 4)
    per = max(1, 128 // size)
    groups = -(-lanes // per)
    # every 4-byte word each lane touches, tagged with its (access, lane group)
    words = (a // 4)[:, :, None] + np.arange(size // 4, dtype=np.int64)
    gid = (np.arange(n, dtype=np.int64)[:, None] * groups + np.arange(lanes, dtype=np.int64)[None, :] // per)
    gid = np.broadcast_to(gid[:, :, None], words.shape)
    distinct, _ = _distinct_counts(gid.ravel() << 32 | words.ravel())  # each word once per group
    g, w = distinct >> 32, distinct & 0xFFFFFFFF
    banks, counts = _distinct_counts(g * 32 + w % 32)  # distinct words per (group, bank)
    most = np.zeros(n * groups, dtype=np.int64)
    np.maximum.at(most, banks // 32, counts)
    return int(most.sum())


def _distinct_counts(x):
    """(sorted distinct values, how often each occurs) of a 1-D integer array: np.unique(x, return_counts=True)
    without its first call's import of numpy.ma (15 ms of a compile in numpy 2.4)."""
    import numpy as np

    x = np.sort(x)
    starts = np.flatnonzero(np.r_[True, x[1:] != x[:-1]]) if len(x) else np.zeros(0, dtype=np.int64)
    return x[starts], np.diff(np.r_[starts, len(x)])


def _accesses(src, dst, perm, vs, vd, dperm=None):
    """[(width in elements, coords)] of warp 0's accesses: the writes of `src` (coordinates permuted by `perm`) and
    the reads of `dst` (permuted by `dperm`: the buffer's dim order); coords is an array of vector accesses x
    lanes 0..31 x dims."""
    import numpy as np

    out = []
    for ll, v, p in ((src, vs, perm), (dst, vd, dperm)):
        reg = _span_array(ll, "reg")[0:ll.num_regs:v]
        lane = _span_array(ll, "lane")[np.arange(32) & ((1 << len(ll.lane)) - 1)]
        c = reg[:, None, :] ^ lane[None, :, :]
        out.append((v, c[..., list(p)] if p is not None else c))
    return out


def _conversion_cost(src, dst, perm, eb, vs, vd, pad, swz, accesses=None, dperm=None):
    """Wavefronts of warp 0 writing `src` and reading `dst` through the buffer described by (pad, swz), whose
    dims are the destination's in the order `dperm` (default: the destination's own)."""
    shape = _buffer_shape(dst.shape, dperm)
    cost = 0
    for v, coords in accesses if accesses is not None else _accesses(src, dst, perm, vs, vd, dperm):
        cost += _wavefronts(_buffer_index(coords, shape, pad, swz) * eb, v * eb)
    return cost


def _buffer_shape(shape, dperm):
    return tuple(shape) if dperm is None else tuple(shape[p] for p in dperm)


@functools.lru_cache(maxsize=None)
def _choose_pad(src, dst, perm, eb, vs, vd, pad, dperm=None):
    """The row padding (in elements) whose accesses take the fewest shared-memory wavefronts: 16 bytes (what vector
    accesses of 16 bytes keep aligned), 32 bytes, or one or two 4-byte words where neither side moves vectors that
    wide. A scalar transpose reads a column of 32 rows: rows 16 bytes apart beyond a multiple of 128 put 8 of them in
    one bank (4-way for 16-bit elements), rows one word apart put each in a bank of its own. An MMA accumulator of
    32-bit elements is written 8 bytes a lane (rows g, columns 2t, 2t+1), a half-warp of 4 rows x 4 lanes a
    wavefront: rows 16 bytes apart share 4 of their 8 banks with the next row's (two wavefronts where one does), 32
    bytes apart none. Ties keep 16 bytes. Measured against 16 bytes only (H100, 2026-12-05, the five corpus kernels
    whose padding changes, 3 rounds): 16 bytes took 1.009 of this one's time (mm_tf32 1.034, mm_int8_i32 1.012)."""
    width = max(vs, vd) * eb
    acc = _accesses(src, dst, perm, vs, vd, dperm)
    best, best_cost = pad, _conversion_cost(src, dst, perm, eb, vs, vd, pad, None, acc, dperm)
    for nbytes in (4, 8, 32):
        if nbytes % width or nbytes % eb:
            continue
        cost = _conversion_cost(src, dst, perm, eb, vs, vd, nbytes // eb, None, acc, dperm)
        if cost < best_cost:
            best, best_cost = nbytes // eb, cost
    return best


@functools.lru_cache(maxsize=None)
def _choose_swizzle(src, dst, perm, eb, vs, vd, pad, dperm=None):
    """A swizzled buffer (shift, mask, vec) when it moves the data in fewer shared-memory wavefronts than the padded
    row-major one, else None. Decided by counting bank conflicts of both sides' accesses (e.g. a transpose, whose
    writer holds runs along the reader's rows: padding cannot spread those rows over the banks, an XOR of the
    16-byte chunk with the row bits the writer's lanes step through can). Cached: layouts and shapes repeat
    between kernels and specializations; and the padded buffer is kept without trying swizzles when its accesses
    already take the fewest wavefronts possible (the matmul epilogue's)."""
    shape = _buffer_shape(dst.shape, dperm)
    vec = 16 // eb
    if len(shape) < 2 or shape[-1] % vec or shape[-1] // vec < 2 or vs > vec or vd > vec:
        return None
    rows = 1
    for n in shape[:-1]:
        rows *= n
    mask = min(shape[-1] // vec, 128 // 16) - 1
    if mask & (mask + 1):
        return None
    acc = _accesses(src, dst, perm, vs, vd, dperm)
    best, best_cost = None, _conversion_cost(src, dst, perm, eb, vs, vd, pad, None, acc, dperm)
    if best_cost <= sum(len(c) * -(-32 * max(v * eb, 4) // 128) for v, c in acc):  # one wavefront per 128 bytes
        return None
    for shift in range(max(1, rows.bit_length() - 1)):
        swz = (shift, mask, vec)
        cost = _conversion_cost(src, dst, perm, eb, vs, vd, pad, swz, acc, dperm)
        if cost < best_cost:
            best, best_cost = swz, cost
    return best


def _swizzled_index(e, ll, r, shape, perm, swz):
    """The calling thread's element index of register r in the swizzled buffer (see _buffer_index), as i32."""
    coords = [e.coord(ll, r, d) for d in range(len(ll.shape))]
    if perm is not None:
        coords = [coords[p] for p in perm]
    row = None
    for c, n in zip(coords[:-1], shape[:-1]):
        row = c if row is None else e.b.add(e.b.mul(row, e.i32(n)), c)
    shift, mask, vec = swz
    phase = e.b.and_(e.b.lshr(row, e.i32(shift)) if shift else row, e.i32(mask))
    col = e.b.xor(coords[-1], e.b.mul(phase, e.i32(vec)))
    return e.b.add(e.b.mul(row, e.i32(shape[-1])), col)


def _run_length(ll, dim, cap):
    """How many consecutive registers (from any multiple of it) hold consecutive elements along `dim`: 2**k for
    the longest prefix of register bases that are 1, 2, 4, ... along `dim` alone; at most `cap`."""
    n = 1
    for i, b in enumerate(ll.reg):
        if n * 2 > cap or any(v for d, v in enumerate(b) if d != dim) or b[dim] != 1 << i:
            break
        n *= 2
    return n


def _as_matrix_operand(lay, ll, nw):
    """A slice along the batch dim of a rank-3 mma.sync operand layout (a matrix broadcast over
    the batch: w[None] before tl.broadcast_to) as the rank-2 operand layout of the same linear form, if one is: the
    conversion then reads the matrix with ldmatrix. A batched fp16 GEMM with a broadcast weight read it with 64 16-bit
    shared loads and packing an iteration (8 ldmatrix in Triton's): loop 301 -> 197 SASS instructions, 74 -> 26
    shared accesses (135 with pack_carried16); 0.91 of the time on the H200."""
    from ..passes.layouts import DotOperandLayout, MmaLayout, SliceLayout, linear

    if not (isinstance(lay, SliceLayout) and lay.dim == 0 and isinstance(lay.parent, DotOperandLayout)
            and isinstance(lay.parent.parent, MmaLayout) and lay.parent.parent.version == 2
            and lay.parent.rank == 3):
        return lay
    d, m = lay.parent, lay.parent.parent
    for wpc in ((m.wpc[0] * m.wpc[1], m.wpc[2]), (m.wpc[1], m.wpc[0] * m.wpc[2])):
        cand = DotOperandLayout(d.op_idx, MmaLayout(2, wpc, m.instr_n), d.kwidth)
        if linear(cand, tuple(ll.shape), nw) == ll:
            return cand
    return lay


@emits("convert_layout")
def _e_convert(e, op):
    x = e.get(op.operands[0])
    ll = e.result_ll(op)
    if not isinstance(x, Tile):
        e.put(op.result, [x] * ll.num_regs, ll)
        return
    from . import dot

    if op.result.id in e.env:
        return  # converted together with the previous conversion (_fma_operands)
    lay = op.attrs["_layouts"][0]
    lay = _as_matrix_operand(lay, ll, e.nw)
    if dot.ldmatrix_applies(lay, op.result.type.element.bits) and not _same_threads(x.ll, ll) \
            and dot.swizzle_inner_ok(x.ll):
        e.env[op.result.id] = dot.to_dot_operand(e, x, ll, lay)
        return
    other = _fma_operands(e, op, x, ll)
    if other is not None:
        y = e.get(other.operands[0])
        a, b = convert_together(e, [(x, ll), (y, e.result_ll(other))])
        e.env[op.result.id], e.env[other.result.id] = a, b
        return
    e.env[op.result.id] = convert(e, x, ll)


def _fma_operands(e, op, x, ll):
    """The conversion of the other operand when `op` converts one operand of an FMA dot (a dot without tensor
    cores, whose operand layouts have a blocked parent) and the other operand's conversion is the next op: both
    then go through shared memory together (convert_together)."""
    lay = op.attrs["_layouts"][0]
    if not isinstance(lay, DotOperandLayout) or isinstance(lay.parent, MmaLayout) or _same_threads(x.ll, ll):
        return None
    ops = op.block.ops
    i = next(k for k, o in enumerate(ops) if o is op)
    if i + 1 >= len(ops) or ops[i + 1].kind != "convert_layout":
        return None
    other = ops[i + 1]
    olay = other.attrs["_layouts"][0]
    y = e.get(other.operands[0])
    if (not isinstance(olay, DotOperandLayout) or olay.parent != lay.parent or olay.op_idx == lay.op_idx
            or not isinstance(y, Tile) or other.operands[0] is op.result):
        return None
    oll = e.result_ll(other)
    if _same_threads(y.ll, oll):
        return None
    users = [o for o in ops[i + 2:] if op.result in o.operands or other.result in o.operands]
    if not users or users[0].kind != "dot" or not (op.result in users[0].operands and other.result in users[0].operands):
        return None
    return other


@emits("permute")
def _e_permute(e, op):
    x = e.get(op.operands[0])
    ll = e.result_ll(op)
    order = op.attrs["order"]
    from .dot import SmemOperand

    if isinstance(x, SmemOperand):  # a copy-ring slot read transposed by a dot (passes/pipeline.py)
        e.env[op.result.id] = SmemOperand(x.st.transposed())
        return
    if not isinstance(x, Tile):
        e.put(op.result, [x] * ll.num_regs, ll)
        return
    # free when the permuted source layout is the result layout (the layout pass arranges that)
    perm_lane = tuple(tuple(b[o] for o in order) for b in x.ll.lane)
    perm_warp = tuple(tuple(b[o] for o in order) for b in x.ll.warp)
    if perm_lane == ll.lane and perm_warp == ll.warp:
        index = {tuple(x.ll.reg_coord(r)[o] for o in order): r for r in range(x.ll.num_regs)}
        if all(ll.reg_coord(r) in index for r in range(ll.num_regs)):
            e.put(op.result, [x.regs[index[ll.reg_coord(r)]] for r in range(ll.num_regs)], ll)
            return
    e.env[op.result.id] = convert(e, x, ll, src_shape_perm=order)



# ---- lane-partial loop sums ----------------------------------------------------------------------------------------

def partial_sums(e, loop):
    """A loop-carried value updated only as l = l * a + sum(x, axis) (attention's row
    sum: l_i = l_i * alpha + tl.sum(p, 1)), or as l = l + sum(x, axis) of floats or integers (a = 1), is carried as
    per-lane partial sums over the lanes along the axis: the sum's butterfly shuffles leave the loop (one reduction
    after it instead of one per iteration). Exact in real arithmetic and for integers (a is the same on those
    lanes); in floating point the additions are reassociated, as any change of reduction order does. Returns
    {carried position: lane bits along the axis}; the reduces are noted in e.partial_reduces (their lane step is
    skipped). Measured on the H200 (2026-11-30, three A/B runs): attention D=64 128x64 w8 s3 1.032-1.037x, D=128
    1.002-1.013x; the a = 1 form on the H100 (2026-12-07, the A/B `partial_add`): 0.995 over the 6 corpus kernels it
    changes, W8A8 0.972, none slower by 2% (benchmarks/2026-12-07d-h100/abin2.md)."""
    body = loop.blocks[0]
    y = body.terminator
    out = {}
    for j, arg in enumerate(body.args[1:]):
        t = arg.type
        kind = getattr(t.element, "kind", "")
        if not t.shape or kind not in ("float", "int", "uint") or uses(body, arg) != 1:
            continue
        mul = next((o for o in body.ops if o.kind == "mul" and any(x is arg for x in o.operands)), None)
        if mul is not None and kind == "float":
            if uses(body, mul.result) != 1:
                continue
            src = mul.result
        else:  # l = l + sum(x, axis): the same with a = 1
            src = arg
        add = next((o for o in body.ops if o.kind == "add" and any(x is src for x in o.operands)), None)
        if add is None or y.operands[j] is not add.result or uses(body, add.result) != 1:
            continue
        r = next(x for x in add.operands if x is not src)
        red = getattr(r, "owner", None)
        if (getattr(red, "kind", None) != "reduce" or red.block is not body or len(red.operands) != 1
                or uses(body, r) != 1 or [o.kind for o in red.blocks[0].ops] != ["add", "yield"]):
            continue
        ll = e.layout_of(red.operands[0])
        axis = red.attrs["axis"]
        if axis is None:
            continue
        lanes = [i for i, b in enumerate(ll.lane) if b[axis]]
        if not lanes or any(b[axis] for b in ll.warp):
            continue
        e.partial_reduces.add(id(red))
        out[j] = lanes
    return out


def partial_init(e, tile, lanes):
    """A carried value's start as partial sums: the value on the first lane of each group, zero on the others."""
    mask = sum(1 << i for i in lanes)
    first = e.b.icmp_unsigned("==", e.b.and_(e.lane, e.i32(mask)), e.i32(0))
    return Tile(tile.ll, [e.b.select(first, x, ir.Constant(x.type, 0.0 if _is_float(x) else 0)) for x in tile.regs])


def _is_float(x) -> bool:
    return not isinstance(x.type, ir.IntType)


def partial_total(e, tile, lanes):
    """The partial sums of a group of lanes added up (butterfly: every lane of the group gets the same total)."""
    regs = list(tile.regs)
    for i in lanes:
        regs = [(e.b.fadd if _is_float(x) else e.b.add)(x, shuffle(e, "bfly", x, 1 << i)) for x in regs]
    return Tile(tile.ll, regs)
