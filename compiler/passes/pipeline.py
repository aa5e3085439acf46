"""Software pipelining of the loads of a K loop (num_stages >= 2): the next iteration's tiles load while this
iteration's dot runs.

For a `for` whose body holds a dot, every load whose pointer/mask/other are computed only from the induction
variable, loop-carried values that the body advances without memory reads (pointer increments), and values
from outside the loop is rotated:
  prologue (before the loop):  t0 = load(operands at iv = lb, carried = init, mask & (lb < ub))
  body:                         the pure "address" ops first (they never depend on loads or dots), then
                                t_next = load(operands at iv + step, carried = their yielded values,
                                              mask & (iv + step < ub)),
                                then the rest of the body with the load's uses reading the carried t,
                                yield ..., t_next
So the global-memory latency of iteration k+1 hides behind the shared-memory stores and the (async) MMA of
iteration k; the tiles wait in registers (one extra stage). The interpreter never sees this pass (it runs on
the frontend's IR), and `tile` is printed before it.

On sm_90a, when every dot of the loop runs on wgmma, the loads that feed dot operands straight (16-bit floats,
16-byte aligned rows, `other` zero or absent, no other use) become asynchronous copies into a ring of
shared-memory slots instead (no registers hold the tiles; cp.async in the code generator). A 16-bit tile that
other ops read too (chunked retention's K, scaled for the state update), or only other ops (attention's bias),
joins the ring as well, and those ops read the slot into registers (`smem_load`). A one-dot loop (the
matmul K loop) needs both operands served so; in loops with several dots (attention: K and V) any served load
joins the ring, and the other operands are stored once before the loop (loop-invariant), read from registers
(wgmma's register A) or written to scratch per iteration. With S slots (num_stages + 1 where shared memory
allows, at least 3), D = S - 2 iterations load ahead (a one-warpgroup, one-dot loop takes a tighter ring, and so
does a one-warpgroup loop of several dots where that fits two blocks per SM instead of one, and any loop where
the loose ring does not fit, see "the tight ring" below: S = num_stages, D = S - 1, the copies after the last dot
behind a second barrier):
  prologue:  async_copy(operands at iteration d, slot d) for d < D (masked by iteration < ub), one group each
  body:      async_wait(pending D - 1)      this iteration's slot has landed, for every warp (a barrier)
             a, b = smem_view(...)          the slot (iteration % S), read by the dot
             async_copy(operands at iteration + D, slot (iteration + D) % S)
             ... dot(a, b, acc) ...         (several dots: the copies follow the last one)
The slot written in iteration i was last read by iteration i - 2's wgmmas, which every warpgroup finished
before the barrier of iteration i (a dot leaves at most one wgmma group in flight, see codegen/dot.py).
"""
from __future__ import annotations

from ..ir import optable
from ..ir import types as T
from ..ir.core import Op, Value
from . import axisinfo
from .dce import EFFECTS, dce
from .layouts import wgmma_applies

# Ops that read memory stay where they are (a load: only an index load moves, `_index_load`): a ring slot's
# smem_load moved to the body's front by the register pipeline of a ring loop's leftover small loads would read the
# slot before the async_wait that says its copies landed (a half-served ring's A tile read that way gave wrong
# results: docs/EXPERIMENTS.md, half_ring).
_NOT_MOVABLE = EFFECTS | optable.kinds("reads_memory") | frozenset(("load", "dot", "reduce", "scan", "convert_layout"))


def _fma_dot_loop(loop, options=None) -> bool:
    """A K loop whose one dot runs on FMAs (fp32 "ieee", fp64, small-K int8). On sm_80+ it takes a copy ring
    (_pipeline_async); elsewhere it keeps its loads in place instead of rotating them through registers:
    mm_fp32_ieee 64x64x32 w4 took 125 registers instead of 161 that way, and 0.955 of the time (H100, 2026-12-05)."""
    from .assign_layouts import dot_uses_mma

    return any(o.kind == "dot" and not dot_uses_mma(o, options) for o in loop.blocks[0].ops)


def _mma_sync_dot(op, options) -> bool:
    """The dot runs on mma.sync: tensor cores without wgmma (its layout pass gives it an mma v2 accumulator)."""
    from .assign_layouts import dot_uses_mma

    return (dot_uses_mma(op, options) and len(op.result.type.shape) == 2
            and (options.debug_no_wgmma or wgmma_applies(op, options, options.num_warps) is None))


def _tile_loop(loop) -> bool:
    """The K loop runs inside a loop over tiles that starts at the program's id (a persistent kernel:
    `for tile in range(pid, num_tiles, NUM_SMS)`): each program computes tiles until they run out, and such a grid
    is sized by its user to the machine, one program per SM; a second block per SM is then never resident, so
    buying one with a shallower ring and fewer registers (`.minnctapersm`) only costs (H100, 2026-12-06: the
    persistent scaled matmul 0.886 of its time under `.minnctapersm 2`, the persistent tutorials 0.82)."""
    op = loop.block.parent if loop.block is not None else None
    while op is not None:
        if op.kind == "for" and _from_program_id(op.operands[0]):
            return True
        op = op.block.parent if op.block is not None else None
    return False


def _from_program_id(v, depth: int = 8) -> bool:
    o = v.owner
    if not isinstance(o, Op) or depth <= 0:
        return False
    if o.kind == "program_id":
        return True
    return o.kind in ("add", "mul", "cast") and any(_from_program_id(x, depth - 1) for x in o.operands)


def slot_row_pad(rows_bytes: int) -> int:
    """Bytes of padding after each row of an FMA dot's ring slot whose rows hold `rows_bytes` (at most 128: the
    slot's column blocks): 16 when the row is an even number of 16-byte chunks, so 8 consecutive rows start in 8
    distinct groups of 4 banks (the FMA operand's vector loads read one chunk of several rows at once)."""
    return 16 if (rows_bytes // 16) % 2 == 0 else 0


def mma_slot_swizzled(eb: int) -> bool:
    """An mma.sync dot's 8-byte operand slot takes no padding: its 16-byte chunks are XORed by the row instead
    (mma_slot_swizzle), as Triton's swizzled shared layouts do. The fragment reads are one 8-byte shared load a
    register, served a half-warp at a time: lanes 0-15 read 4 rows x 32 bytes, which must fall in 4 distinct
    32-byte groups of banks; the FMA dot's 16-byte row padding (pitch 144 for 128-byte rows) left every such read
    2-way conflicted (the fp64 GEMM, 1.27 of Triton's time: 256 wavefronts an operand a warp an iteration for 128;
    55296 -> 49152 bytes of shared memory, no spills; 0.79 of the time on the H200)."""
    return eb == 8


def mma_slot_swizzle(row_bytes: int) -> tuple:
    """(per_phase, max_phase, shift) of an 8-byte mma.sync slot: chunk ^= ((row // per_phase) % max_phase) << shift.
    A half-warp reads 4 consecutive rows (or k rows) x 32 bytes (2 chunks); the XOR puts them in 4 distinct
    32-byte groups of the 128 bytes of banks: 128-byte rows (r & 3) << 1, 64-byte rows ((r >> 1) & 1) << 1,
    32-byte rows need none."""
    chunks = max(1, row_bytes // 16)
    pp = max(1, 128 // row_bytes)
    mp = max(1, min(4, chunks // 2))
    return pp, mp, 1


def fma_slot_bytes(shape, eb, pad_rows=True) -> int:
    """Shared memory of an FMA dot's ring operand of this 2-d shape, padded (slot_row_pad; not where `pad_rows` is
    false: a swizzled 8-byte mma.sync slot) whichever dim its copies run along (the code generator picks it from the
    pointers' layout): the larger of the two."""
    most = 0
    for inner in (0, 1):
        cols, rows = shape[inner], shape[1 - inner]
        bc = min(cols, 128 // eb)
        most = max(most, -(-cols // bc) * rows * (bc * eb + (slot_row_pad(bc * eb) if pad_rows else 0)))
    return most


def _has_cp_async(options) -> bool:
    """The target has cp.async (sm_80 and later)."""
    return options.sm >= 80


def loop_stages(loop, options) -> int:
    """A loop's pipelining depth: its own (`tl.range(..., num_stages=k)`), else the launch's num_stages."""
    n = loop.attrs.get("num_stages")
    return getattr(options, "num_stages", 1) if n is None else n


def pipeline_loads(module, options):
    """Pass: rotate the loads of K loops that contain a dot (see the module docstring); loops of fewer than 2
    stages (loop_stages) or without a dot are left alone."""
    threads = 32 * options.num_warps
    rings = False
    for op in list(module.function.walk()):
        if op.kind != "for" or loop_stages(op, options) < 2:
            continue
        ndots = sum(o.kind == "dot" for o in op.blocks[0].ops)
        # Loops whose dots all run on wgmma take the copy ring (matmul's K loop, attention's KV loop). Otherwise
        # only one-dot loops rotate their loads through registers: attention's two-dot loop measured slower
        # that way on the H200 (its cloned address math costs layout conversions).
        if ndots and _pipeline_async(module, op, options):
            rings = True
            # the small loads the ring does not take (row statistics: attention backward's log-sum-exp and delta)
            # load an iteration ahead through registers: dK/dV 0.945 of the time (H100, 2026-12-06). Tiles of 16
            # registers a thread that way (attention's bias, before it joined the ring) took 1.59x, spilling.
            dce(module, options)
            # a one-dot loop whose other operand the ring does not serve (computed from loads: a dequantizing
            # GEMM's B) keeps those loads an iteration ahead like the register pipeline does, within its register
            # budget: left in place, AWQ's 65 scalar weight loads a step took 3.18x the time
            _pipeline(op, threads, extra_regs=None if op.attrs["_ring"]["half"] else 8)
            continue
        # an FMA dot's loop keeps its loads where they are: the register prefetch cost mm_fp32_ieee 161 -> 125
        # registers and 1/0.955 of its time (H100, 2026-12-05)
        if ndots == 1 and not _fma_dot_loop(op, options):
            _pipeline(op, threads)
    if rings:  # the address math of the loads the copies replaced is dead (layouts must not be chosen for it)
        dce(module, options)
    return module


SMEM_MAX = 232448  # bytes of shared memory one block may use on sm_90 (227 KiB)
SMEM_SM = 233472  # bytes of shared memory of one SM on sm_90 (228 KiB), 1 KiB of it reserved per block


def blocks_per_sm(nbytes) -> int:
    """Blocks one SM holds by shared memory alone (nbytes per block)."""
    return SMEM_SM // (nbytes + 1024)


# Estimated 32-bit registers per thread (live data only) above which the extra stage would spill: ptxas has
# 255, and addresses, masks and the epilogue need the rest (measured: 128x256 fp32 accumulators + prefetch spill).
REG_BUDGET = 150


def _regs(v, threads):
    t = v.type
    if not t.shape or isinstance(t.element, T.pointer_type):
        return 0  # pointer tiles become a base plus offsets after LLVM's strength reduction
    return t.numel * max(4, t.element.bits // 8) // 4 // threads if t.element.bits >= 32 else \
        t.numel * t.element.bits // 32 // threads


def _estimate(loop, loads, threads):
    """Live registers per thread in the pipelined loop: carried values, the prefetched tiles, dot results
    that are not carried (e.g. attention scores), and block values from outside used inside."""
    body = loop.blocks[0]
    y = body.terminator
    yielded = {v.id for v in y.operands}
    n = sum(_regs(a, threads) for a in body.args[1:])
    n += sum(_regs(o.result, threads) for o in loads)
    n += sum(_regs(o.result, threads) for o in body.ops if o.kind == "dot" and o.result.id not in yielded)
    inside = {a.id for a in body.args} | {r.id for o in body.walk() for r in o.results}
    outer = {v.id: v for o in body.walk() for v in o.operands if v.id not in inside}
    n += sum(_regs(v, threads) for v in outer.values())
    return n


def _blocks_by_regs(body, dots, options, slack) -> int:
    """Blocks per SM by registers (65,536 an SM): the loop's carried tiles, each dot's result that is not one of
    them (`acc += tl.dot(a, b)` of fp8, whose add canonicalize keeps; attention's scores), and `slack` a thread for
    addresses, masks and an instruction's operands, rounded up to ptxas's allocation step of 8."""
    threads = 32 * options.num_warps
    carried = set(a.id for a in body.args[1:])
    live = sum(_regs(a, threads) for a in body.args[1:])
    live += sum(_regs(d.result, threads) for d in dots
                if d.operands[2].id not in carried and not _rescaled_carry(d.operands[2], carried))
    return 65536 // (threads * (-(-(live + slack) // 8) * 8))


def _address_regs(body, info, threads) -> int:
    """Registers a thread holds for the 64-bit addresses of a loop's tile loads: one pair a vector, a vector as many
    elements as the pointers' contiguity and alignment along their most contiguous dim give, up to 16 bytes. A ring
    of a one-dot loop leaves room for a second block where ptxas can fit its registers (codegen `ring_room` holds it
    there and keeps the code only where no loop spills); a tile loaded element by element (an operand whose columns
    a `tl.where` clamps: no contiguity) keeps 32 addresses a thread live. Over the corpus's four kernels with that
    room: mm_even_k 72 (ptxas's own count 244; held to 128, 786 bytes spilled), W4A16 26 (166; 84 bytes spilled in
    its loop), SmoothQuant's W8A8 14 (194; 128 without spill, 0.771 of the time) and the weight-only fp8 GEMM 14
    (144; 128 and 8 bytes spilled outside the loop, 0.896): at 48 + these, the two that spilled have no room and
    their held assembly (a second ptxas run beside the first, mm_even_k's warm compile 1.79 of Triton's) is not
    made."""
    n = 0
    for o in body.walk():
        if o.kind != "load" or not o.result.type.shape:
            continue
        t = o.result.type
        eb = max(1, t.element.bits // 8)
        per = max(1, t.numel // threads)
        vec = 1
        p = info.get(o.operands[0].id)
        if p is not None:
            d = min(range(len(t.shape)), key=lambda x: (-p.contiguity[x], -x))
            vec = max(1, min(p.contiguity[d], 16 // eb, p.divisibility[d] // eb))
        n += 2 * max(1, per // vec)
    return n


def _rescaled_carry(v, carried) -> bool:
    """Whether a dot's accumulator operand is a carried tile rescaled elementwise (attention's
    `tl.dot(p, v, acc * alpha[:, None])`): the dot's result then takes the carried tile's place, not registers of
    its own. Counted twice before, a two-warpgroup attention loop whose tight ring buys a second block kept the
    loose ring and one block. Measured (H100, 2026-12-07, the A/B `acc_estimate`, 2 rounds beside Triton,
    benchmarks/2026-12-07f-h100): 0.807 of the time over the 4 corpus kernels it changed, none slower (cross-attention
    0.707, GQA with ragged key lengths 0.773, varlen causal 0.821, soft-capped causal 0.943); with its page table
    on the ring (`_index_load`) the paged prefix prefill 0.566 (1.90 -> 1.08 of Triton's)."""
    o = v.owner
    for _ in range(4):
        if getattr(o, "kind", None) not in ("mul", "add", "sub"):
            return False
        tiles = [x for x in o.operands if tuple(x.type.shape) == tuple(v.type.shape)]
        if any(x.id in carried for x in tiles):
            return True
        if len(tiles) != 1:
            return False
        o = tiles[0].owner
    return False


def _tight_gain(body, dots, options, slack, loose_bytes, tight_bytes):
    """Blocks per SM the tight ring holds where that is more than the loose ring's, by shared memory (the two
    rings' bytes) and by registers (_blocks_by_regs); None where it buys none."""
    by_regs = _blocks_by_regs(body, dots, options, slack)
    more = min(blocks_per_sm(tight_bytes), by_regs)
    return more if more > min(blocks_per_sm(loose_bytes), by_regs) else None


def _append(ops, op):
    """op appended to ops; its result."""
    ops.append(op)
    return op.result


def _clean_attrs(attrs):
    return {k: v for k, v in attrs.items() if not k.startswith("_")}


def _index_load(o, writes: bool) -> bool:
    """A scalar load (a table entry: a block index, an expert's offset) the copies may issue ahead for a later
    iteration: not volatile, in a loop that writes no memory (so the entry is the same then). The block-sparse
    matmul's loop took the copy ring so: 0.860 of its time through registers (H100, 2026-12-06)."""
    if o.kind != "load" or o.attrs.get("volatile") or writes:
        return False
    t = o.result.type
    if not t.shape:
        return True
    # A 1-d tile of integers too: a page table's entries for the keys of a block (paged attention:
    # `page = tl.load(BT + t // PAGE)`, the cache rows `page * PAGE + t % PAGE`), so K and V take the copy ring
    # instead of being loaded in place. Paged prefix prefill 0.553 of the time, AWQ 1.010 (H100, 2026-12-07, 3
    # rounds beside Triton, benchmarks/2026-12-07g-h100/abin2.md, abin8.md)
    return len(t.shape) == 1 and t.element.is_int() and t.element.bits > 1 and t.numel <= 256


def _analyze(loop, index_loads: bool = False):
    """(inside ids, independent address ops, ids of carried args whose next value is address-only, a function
    telling whether a load can be computed ahead), or None when the loop's bounds have mixed types. With
    `index_loads` (the copy ring, whose clones are guarded), scalar index loads count as address ops
    (_index_load), but not in what a carried value's next value depends on."""
    body = loop.blocks[0]
    iv, carried = body.args[0], body.args[1:]
    y = body.terminator
    lb, ub, step = loop.operands[:3]
    if not (lb.type == ub.type == step.type == iv.type):
        return None
    inside = {a.id for a in body.args}
    for o in body.ops:
        inside.update(r.id for r in o.results)
    writes = index_loads and any(o.kind in EFFECTS and o.kind != "yield" for o in body.walk())
    indep = {iv.id} | {a.id for a in carried}
    via_load = set()  # ids that depend on an index load
    indep_ops = []
    for o in body.ops:
        idx = index_loads and _index_load(o, writes)
        if (o.kind in _NOT_MOVABLE and not idx) or o.blocks or not o.results:
            continue
        if all(v.id in indep or v.id not in inside for v in o.operands):
            indep_ops.append(o)
            indep.update(r.id for r in o.results)
            if idx or any(v.id in via_load for v in o.operands):
                via_load.update(r.id for r in o.results)
    ok_yield = {a.id for j, a in enumerate(carried)
                if (y.operands[j].id in indep and y.operands[j].id not in via_load)
                or y.operands[j].id not in inside}

    def slice_args(v, seen):
        """Carried args (ids) the value depends on through independent ops; None if it needs anything else."""
        if v.id in seen:
            return set()
        seen.add(v.id)
        if v.id not in inside or v is iv:
            return set()
        if any(v is a for a in carried):
            return {v.id}
        if v.id not in indep:
            return None
        out = set()
        for x in v.owner.operands:
            s = slice_args(x, seen)
            if s is None:
                return None
            out |= s
        return out

    def movable(o):
        if o.kind != "load" or not o.result.type.shape or o.attrs.get("volatile"):
            return False
        deps = set()
        for v in o.operands:
            got = slice_args(v, set())
            if got is None:
                return False
            deps |= got
        return deps <= ok_yield

    return inside, indep_ops, movable, ok_yield


def _cloner(inside, subst, out_ops, guard=None):
    """clone(v): v with the substitutions applied, cloning the body ops it depends on into out_ops. A cloned load
    (an index load, _index_load) is masked by `guard` (the iteration exists), so an iteration past the end reads
    nothing."""
    memo = {}

    def clone(v):
        if v.id in subst:
            return subst[v.id]
        if v.id in memo:
            return memo[v.id]
        if v.id not in inside:
            return v
        o = v.owner
        operands, attrs = [clone(x) for x in o.operands], _clean_attrs(o.attrs)
        if o.kind == "load":
            if guard is None:
                raise AssertionError("a load cloned without a guard (compiler bug)")
            g = guard
            shape = tuple(o.result.type.shape)
            if shape:  # a tile index load (a page table's entries): the scalar guard splatted to its shape
                sp = Op("splat", [guard], [T.TensorType(T.int1, shape)], {"shape": shape}, loc=o.loc)
                out_ops.append(sp)
                g = sp.result
            if o.attrs.get("has_mask"):
                m = Op("and", [operands[1], g], [operands[1].type], loc=o.loc)
                out_ops.append(m)
                operands[1] = m.result
            else:
                operands = [operands[0], g] + operands[1:]
                attrs["has_mask"] = True
        n = Op(o.kind, operands, [r.type for r in o.results], attrs, loc=o.loc)
        out_ops.append(n)
        for r, nr in zip(o.results, n.results):
            memo[r.id] = nr
        return memo[v.id]
    return clone


def _guard(o, clone, cond, out_ops):
    """The mask of load o's clone, and'ed with the scalar `cond` (splatted)."""
    shape = tuple(o.result.type.shape)
    bt = T.TensorType(T.int1, shape)
    sp = Op("splat", [cond], [bt], {"shape": shape}, loc=o.loc)
    out_ops.append(sp)
    if not o.attrs.get("has_mask", False):
        return sp.result
    m = Op("and", [clone(o.operands[1]), sp.result], [bt], loc=o.loc)
    out_ops.append(m)
    return m.result


def _pipeline(loop, threads=128, extra_regs=None):
    """Rotate the loop's movable block loads through registers (the module docstring's first form), where the live
    registers then estimated stay within REG_BUDGET; with `extra_regs`, where the prefetched tiles themselves take
    at most that many registers a thread (a loop whose other tiles sit in the copy ring)."""
    body = loop.blocks[0]
    iv, carried = body.args[0], body.args[1:]
    y = body.terminator
    lb, ub, step = loop.operands[:3]
    got = _analyze(loop)
    if got is None:
        return
    inside, indep_ops, movable, _ = got
    loads = [o for o in body.ops if movable(o)]
    if not loads:
        return
    if extra_regs is None and _estimate(loop, loads, threads) > REG_BUDGET:
        return
    if extra_regs is not None and sum(_regs(o.result, threads) for o in loads) > extra_regs:
        return

    def cloner(subst, out_ops):
        return _cloner(inside, subst, out_ops)

    def guarded_load(o, clone, cond, out_ops):
        ops = [clone(v) for v in o.operands]
        mask = _guard(o, clone, cond, out_ops)
        other = ops[2 if o.attrs.get("has_mask") else 1] if o.attrs.get("has_other") else None
        attrs = _clean_attrs(o.attrs)
        attrs.pop("tma", None)  # a descriptor load through registers: its TMA operands are left behind
        attrs["has_mask"] = True
        n = Op("load", [ops[0], mask] + ([other] if other is not None else []), [o.result.type], attrs, loc=o.loc)
        out_ops.append(n)
        return n.result

    # prologue, before the loop
    parent = loop.block
    pro = []
    c0 = Op("cmp", [lb, ub], [T.TensorType(T.int1)], {"pred": "lt"}, loc=loop.loc)
    pro.append(c0)
    clone0 = cloner({iv.id: lb, **{a.id: loop.operands[3 + j] for j, a in enumerate(carried)}}, pro)
    firsts = [guarded_load(o, clone0, c0.result, pro) for o in loads]
    i = parent.ops.index(loop)
    for n in pro:
        n.block = parent
    parent.ops[i:i] = pro

    # body: independent ops, next-iteration loads, then the rest
    nxt = []
    ivn = Op("add", [iv, step], [iv.type], loc=loop.loc)
    cn = Op("cmp", [ivn.result, ub], [T.TensorType(T.int1)], {"pred": "lt"}, loc=loop.loc)
    nxt += [ivn, cn]
    clone1 = cloner({iv.id: ivn.result, **{a.id: y.operands[j] for j, a in enumerate(carried)}}, nxt)
    nexts = [guarded_load(o, clone1, cn.result, nxt) for o in loads]
    new_args = []
    for o in loads:
        a = Value(o.result.type, body, len(body.args), "pipelined")
        body.args.append(a)
        new_args.append(a)
    repl = {o.result.id: a for o, a in zip(loads, new_args)}
    load_set = set(id(o) for o in loads)
    indep_set = set(id(o) for o in indep_ops)
    rest = [o for o in body.ops if id(o) not in load_set and id(o) not in indep_set]
    body.ops = indep_ops + nxt + rest
    for o in body.ops:
        o.block = body
    _replace_uses(body, repl)
    y.operands.extend(nexts)
    loop.operands.extend(firsts)
    for o in loads:
        r = Value(o.result.type, loop, len(loop.results))
        loop.results.append(r)


def _feeds_dot(body, o, i) -> bool:
    """Operand i of op o reads a ring slot as a dot operand: a or b of a dot, or the source of a transpose of the
    matrix dims whose only user in the loop body is such an operand."""
    if o.kind == "dot":
        return i < 2
    if o.kind == "permute" and _swaps_matrix_dims(o):
        users = [(u, k) for u in body.walk() for k, y in enumerate(u.operands) if y is o.result]
        return len(users) == 1 and users[0][0].kind == "dot" and users[0][1] < 2
    return False


def _read_slot(body, x, view):
    """The uses of loaded tile x in the loop body that are not dot operands read its ring slot (`view`) into
    registers instead: one smem_load, right before the first op that needs it (or whose region does)."""
    def reads(top):
        ops = [top] + [u for b in top.blocks for u in b.walk()]
        return [(u, i) for u in ops for i, y in enumerate(u.operands) if y is x and not _feeds_dot(body, u, i)]
    at = next((k for k, top in enumerate(body.ops) if reads(top)), None)
    if at is None:
        return
    rd = Op("smem_load", [view], [x.type], {}, loc=x.owner.loc)
    for top in body.ops:
        for u, i in reads(top):
            u.operands[i] = rd.result
    body.ops.insert(at, rd)


def _replace_uses(block, repl):
    for o in block.ops:
        o.operands = [repl.get(v.id, v) for v in o.operands]
        for b in o.blocks:
            _replace_uses(b, repl)


# ---- asynchronous copies into a shared-memory ring (wgmma operands) -------------------------------------------

def tma_served(o) -> bool:
    """A load of a host-side tensor descriptor that TMA can serve as a ring copy (its `tma` operands: the
    tensor map, then the tile's start per dim): a 2-d tile of 16-bit (or fp8) elements whose rows are at least 32 bytes
    (a wgmma swizzle mode), each dim at most 256 elements (a TMA box). The copy then lands in the swizzled
    layout the ring's wgmmas read (codegen/tma.py); other descriptor loads use the pointers (cp.async)."""
    if o.kind != "load" or o.attrs.get("tma") != 2:
        return False
    shape = o.result.type.shape
    eb = o.result.type.element.bits // 8
    return (len(shape) == 2 and eb in (1, 2) and shape[1] * eb >= 32 and shape[0] <= 256
            and not o.attrs.get("volatile"))


def _byte_operand_ok(d, o, j, trans, info) -> bool:
    """An 8-bit ring operand: of a dot whose operands are both 8-bit (fp8, int8, uint8). wgmma reads 8-bit operands
    K-major only: an operand whose slot lands K-major is read in place (a [M, K] load for a, a [K, N] load for b
    with K its contiguous dim, a [N, K] load for b under a transpose); a b that lands N-major (a [K, N] load along
    N, attention's V as stored) is copied transposed from its slot into scratch by the dot (codegen/dot.py), which
    beats loading it outside the ring; a transposed a never. TMA tiles land along their last dim; cp.async ones
    along the pointer's contiguous dim."""
    if not (d.operands[0].type.element.bits == 8 and d.operands[1].type.element.bits == 8):
        return False
    if j == 0 and trans:
        return False
    if tma_served(o):
        return True
    dims = _copy_dims(o, info)
    return bool(dims) and (j == 1 or dims == [1])


def _lands_n_major(o, trans, info) -> bool:
    """An 8-bit b operand's ring slot runs along N (wgmma wants it K-major): a TMA tile lands along its last dim,
    a cp.async one along the dim _copy_dims finds; `trans`: the load is [N, K], read through a transpose."""
    n_dim = 0 if trans else 1
    if tma_served(o):
        return n_dim == 1
    dims = _copy_dims(o, info)
    return n_dim in dims and (1 - n_dim) not in dims


def _zero_other(o) -> bool:
    """The load's `other` is absent or a constant zero (cp.async zero-fills masked-off elements)."""
    if not o.attrs.get("has_other"):
        return True
    v = o.operands[2 if o.attrs.get("has_mask") else 1]
    src = v.owner
    while getattr(src, "kind", None) == "splat":
        v = src.operands[0]
        src = v.owner
    return getattr(src, "kind", None) == "const" and src.attrs.get("value") == 0


def _dots_read_only(v, body) -> bool:
    """Every use of v in the loop body is an operand (a or b) of a dot of the body, directly or through a transpose
    of the matrix dims used only that way (_feeds_dot)."""
    return all(o.block is body and _feeds_dot(body, o, i)
               for o in body.walk() for i, x in enumerate(o.operands) if x is v)


def _same_bits_cast(o) -> bool:
    """A bitcast between element types of one size (uint8 -> float8e4nv, int16 -> float16): the bytes unchanged."""
    if getattr(o, "kind", None) != "bitcast" or not o.result.type.shape:
        return False
    a, b = o.operands[0].type.element, o.result.type.element
    return not isinstance(a, T.pointer_type) and not isinstance(b, T.pointer_type) and a.bits == b.bits


def _swaps_matrix_dims(o) -> bool:
    """A permute that swaps the two matrix dims (the last two) and keeps any batch dim in front."""
    order = tuple(o.attrs.get("order", ()))
    r = len(order)
    return r >= 2 and order == tuple(range(r - 2)) + (r - 1, r - 2)


def _copy_dims(o, info, nbytes=16) -> list:
    """The dims along which the load splits into chunks of `nbytes` (16; 8 or 4 for narrow copies): contiguity
    and alignment of that many bytes, a mask constant over them."""
    p = info.get(o.operands[0].id)
    if p is None:
        return []
    eb = o.result.type.element.bits // 8
    chunk = max(1, nbytes // eb)
    dims = []
    for d in range(len(o.result.type.shape)):
        if p.contiguity[d] >= chunk and p.divisibility[d] >= nbytes and o.result.type.shape[d] >= chunk:
            if o.attrs.get("has_mask"):
                m = info.get(o.operands[1].id)
                if m is None or m.constancy[d] < chunk:
                    continue
            dims.append(d)
    return dims


def _copyable(o, info, narrow=False) -> bool:
    """cp.async can serve the load: 16-byte chunks along some dim (_copy_dims); `narrow`: or 8- or 4-byte ones
    (at least one element), for padded slots read by plain shared loads."""
    if _copy_dims(o, info):
        return True
    eb = o.result.type.element.bits // 8
    return narrow and any(_copy_dims(o, info, n) for n in (8, 4) if n >= eb)


def _edge_leaf(v, d, chunk, info, depth=16):
    """The mask terms of `v` that are not constant over `chunk` elements along dim d: [] where v is (or every term
    of its and-tree is), [the one term] where that term is `idx < bound` (or `bound > idx`) on signed integers with
    idx in runs of at least `chunk` consecutive values along d and bound constant over them (a ragged edge: the
    elements of a chunk in bounds are a prefix of it, clamp(bound - first, 0, chunk) of them), else None."""
    shape = tuple(v.type.shape)
    inf = info.get(v.id)
    if inf is None or depth <= 0:
        return None
    if shape[d] == 1 or inf.constancy[d] >= chunk:
        return []
    o = v.owner
    if not isinstance(o, Op):
        return None
    if o.kind == "and":
        a, b = (_edge_leaf(x, d, chunk, info, depth - 1) for x in o.operands[:2])
        return None if a is None or b is None or len(a) + len(b) > 1 else a + b
    if o.kind == "broadcast":
        return _edge_leaf(o.operands[0], d, chunk, info, depth - 1)
    if o.kind == "cmp" and o.attrs.get("pred") in ("lt", "gt"):
        idx, bound = o.operands[:2] if o.attrs["pred"] == "lt" else o.operands[1::-1]
        el = idx.type.element
        ii, bi = info.get(idx.id), info.get(bound.id)
        if (ii is not None and bi is not None and el.kind == "int"
                and ii.contiguity[d] >= chunk and bi.constancy[d] >= chunk):
            return [v]
    return None


def _clamp_plan(o, info):
    """(dim, edge term) where cp.async serves load o by 16-byte copies whose source size is
    clamped to the bytes in bounds (codegen/dot.py _e_async_copy): its pointers contiguous and 16-byte aligned along
    the dim, its mask constant over each 16-byte chunk there but for one ragged-edge term (_edge_leaf), the loads of
    a tensor descriptor or a boundary-checked block pointer whose contiguous dim's extent is not a multiple of the
    chunk (`k < K`); else None."""
    p = info.get(o.operands[0].id)
    if p is None or not o.attrs.get("has_mask"):
        return None
    eb = o.result.type.element.bits // 8
    chunk = max(1, 16 // eb)
    shape = o.result.type.shape
    # the dim the copies will run along: the pointers' most contiguous (the layout pass's order, assign_layouts.py
    # _own_run, ties to the higher dim), which the code generator checks
    d = min(range(len(shape)), key=lambda x: (-p.contiguity[x], -x))
    if p.contiguity[d] >= chunk and p.divisibility[d] >= 16 and shape[d] >= chunk:
        leaf = _edge_leaf(o.operands[1], d, chunk, info)
        if leaf:
            return d, leaf[0]
    return None


def _pipeline_async(module, loop, options) -> bool:
    """Rewrite the loop's operand loads into a ring of asynchronous copies (module docstring); False when the
    loop does not qualify (the register pipeline then applies)."""
    body = loop.blocks[0]
    dots = [o for o in body.ops if o.kind == "dot"]
    if options.debug_no_async_copy:
        return False
    # Either every dot runs on wgmma (sm_90a), or the loop's one dot runs on FMAs (fp32 "ieee", fp64, small-K
    # integers) on a target with cp.async (sm_80+): the FMA dot reads its operands from the slot with vector
    # shared loads (codegen/dot.py) instead of the loads' registers being stored to shared memory every iteration.
    # Measured on the H100 against loads kept in place (2026-12-05, mm_fp32_ieee 64x64x32 w4 s3, 3 rounds beside
    # Triton): 0.922 of the time (1.074 -> 0.99 of Triton's), 125 -> 113 registers.
    fma = len(dots) == 1 and _fma_dot_loop(loop, options) and _has_cp_async(options)
    # A one-dot loop whose dot runs on mma.sync (no wgmma: fp64, blocks under 64 rows or of fewer than 4 warps, any
    # tensor-core dot before sm_90a) takes the same ring: its 16-bit operands in swizzled slots read by ldmatrix,
    # wider ones in padded slots read by shared loads, as the FMA dot's (codegen/dot.py). Measured against the
    # register pipeline (H100, 2026-12-06, 3 rounds beside Triton): fp16 32x128x64 w4 with a GELU epilogue 0.578 of
    # the time (1.70 -> 0.99 of Triton's), 64x64x32 on two warps 0.642 (1.43 -> 0.91), bf16 nn.Linear at 32 rows
    # 0.769 (1.36 -> 1.04), decode GEMM at 16 rows 0.805 (1.28 -> 1.02), 16x16 batched dots 0.973; fp64 64x64x16
    # 1.014 (its gap to Triton is elsewhere: docs/EXPERIMENTS.md)
    # Loops of several mma.sync dots too (decode attention with a query group packed into 16 rows: K for the
    # scores, V for the output), their copies after the last dot: grouped-query decode 0.962 of the time against
    # the register pipeline (165 -> 128 registers; H100, 2026-12-07, 3 rounds, benchmarks/2026-12-07g-h100/abin1.md)
    multi = len(dots) > 1
    mma = (not fma and (len(dots) == 1 or multi) and _has_cp_async(options)
           and all(_mma_sync_dot(d, options) for d in dots))
    sync = fma or mma  # the one dot reads its operands from the slot itself, synchronously
    if not sync and (options.debug_no_wgmma or any(wgmma_applies(d, options, options.num_warps) is None
                                                  for d in dots)):
        return False
    got = _analyze(loop, index_loads=True)
    if got is None:
        return False
    inside, indep_ops, movable, addr_args = got
    info = None
    loads, other_bytes, fixed_bytes = [], 0, 0
    scratch_t = False  # an operand the dot copies transposed into scratch every iteration (its own barrier)
    recast = {}  # id(load) -> the bitcast the dot reads it through (the slot's view takes its type)
    reads = set()  # ids of loads whose slot other ops read too, into registers (smem_load)
    # id(load) -> (dim, edge term): loads whose ragged edge along their contiguous dim the copies serve by a
    # clamped source size (_clamp_plan): tensor-descriptor and boundary-checked block-pointer tiles. The ragged
    # fp32 descriptor matmul (1.40 of Triton's time on the H200, its tiles held in registers before): 0.770 of the
    # time on the H100, 2026-12-07 (benchmarks/2026-12-07-h100/abin4.md)
    clamps = {}
    for d in dots:
        for j, v in enumerate(d.operands[:2]):
            o = v.owner
            eb = v.type.element.bits // 8
            nbytes = -(-v.type.numel * eb // 1024) * 1024
            uses = sum(x is v for op in body.walk() for x in op.operands)
            # An operand read transposed (tl.trans(k), attention's K): the load goes to the ring as it is, and the
            # transpose stays, reading the slot as the other operand order (a K-major tile read MN-major, or the
            # reverse: the same bytes, codegen's permute of a shared-memory operand)
            tr = False
            if (getattr(o, "kind", None) == "permute" and _swaps_matrix_dims(o) and uses == 1
                    and getattr(o, "block", None) is body):
                v = o.operands[0]
                o = v.owner
                uses = sum(x is v for op in body.walk() for x in op.operands)
                tr = True
            # A load reinterpreted as the dot's element type (`tl.load(p).to(tl.float8e4nv, bitcast=True)`: fp8
            # bytes passed as uint8): the same bytes land in the slot, which the dot reads as the bitcast's type
            cast = None
            if _same_bits_cast(o) and uses == 1 and getattr(o, "block", None) is body:
                cast = o
                v = o.operands[0]
                o = v.owner
                uses = sum(x is v for op in body.walk() for x in op.operands)
            if o in loads:
                continue  # already in the ring for another dot: that dot reads the same slot
            # a 16-bit tile several dots read (attention backward's K: K^T for the scores, K for dQ) is one slot
            shared = uses > 1 and eb == 2 and not sync and cast is None and _dots_read_only(v, body)
            # a 16-bit tile elementwise math reads too (chunked retention's K, scaled before it updates the state)
            # joins the ring as well; those reads load the slot into registers (smem_load), as Triton's do
            read_too = uses > 1 and eb == 2 and not sync and cast is None and not shared
            if (getattr(o, "block", None) is body and o.kind == "load" and movable(o) and _zero_other(o)
                    and (uses == 1 or shared or read_too) and (sync or eb in (1, 2))):
                info = info or axisinfo.analyze(module.function)
                if sync:  # any element size, either orientation: the dot reads the slot as it landed
                    # padded slots take 8- and 4-byte copies too: rows only 8-byte aligned (an fp64 matrix of 1000
                    # columns) still ride the ring. Its first form lost (the fp64 32x32x16 GEMM 1.115) to the
                    # 1024-byte rounding of its padded slots (7 blocks an SM, two waves of its 1024 blocks); with
                    # 128-byte slot alignment (below) Triton's copy mix and 8 blocks an SM. mma.sync dots only: an
                    # FMA dot's ring of narrow copies (the ragged fp32 "ieee" descriptor matmul) took 168 -> 187
                    # registers, 3 -> 2 blocks an SM. With the swizzled 8-byte slots, the fp64 GEMMs 0.71-0.79 of
                    # the time on the H200 (2026-12-06)
                    narrow = mma and eb != 2
                    ok = not tr and not o.attrs.get("tma") and len(v.type.shape) == 2
                    if ok and not _copyable(o, info):
                        # 16-byte copies clamped at a ragged edge before narrow ones (rows only 8-byte aligned)
                        clamp = _clamp_plan(o, info)
                        if clamp is not None:
                            clamps[id(o)] = clamp
                    ok = ok and (id(o) in clamps or _copyable(o, info, narrow))
                else:
                    ok = ((eb == 2 and (tma_served(o) or _copyable(o, info)))
                          or (eb == 1 and _byte_operand_ok(d, o, j, tr, info)))
                    if not ok and eb == 2 and not o.attrs.get("tma"):
                        clamp = _clamp_plan(o, info)
                        if clamp is not None:
                            clamps[id(o)], ok = clamp, True
                if ok:
                    loads.append(o)
                    if read_too:
                        reads.add(id(o))
                    if cast is not None:
                        recast[id(o)] = cast
                    if not sync and eb == 1 and j == 1 and _lands_n_major(o, tr, info):
                        # the dot copies this slot transposed into two stages of scratch each iteration
                        # (codegen/dot.py _transposing_tile): shared memory beside the ring, for the whole loop
                        other_bytes += 2 * nbytes
                        fixed_bytes += 2 * nbytes
                        scratch_t = True
                    continue
            # stored once before the loop (defined outside it), or per iteration into scratch (2 stages; or read
            # from registers: attention's P, which the code generator decides)
            other_bytes += nbytes if v.id not in inside else 2 * nbytes
            fixed_bytes += nbytes if v.id not in inside else 0
    half = len(dots) == 1 and len(loads) < 2  # a one-dot loop with one operand served (before the tiles below)
    if not loads or (half and sync):
        # a one-dot loop with an operand cp.async cannot serve: on wgmma the served one joins the ring and the other
        # is written to scratch each iteration, as in loops of several dots (dequantizing GEMMs: W4A16's, AWQ's
        # computed B beside a loaded A). Measured against the register pipeline (H100, 2026-12-06, 3 rounds beside
        # Triton): mm_even_k 0.588 of the time, W4A16 0.903, AWQ 0.919, SmoothQuant 0.976. On mma.sync such a loop
        # keeps the register pipeline
        return False
    if not sync:
        # 16-bit 2-d tiles no dot reads (attention's bias) join the ring too, read into registers: no load left
        # waiting in the loop. Measured against loads in place (H100, 2026-12-06, 3 rounds beside Triton): chunked
        # retention 0.766 of the time (1.33 -> 1.02 of Triton's), attention with a bias tile 0.901 (1.11 -> 1.01)
        info = info or axisinfo.analyze(module.function)
        for o in body.ops:
            if (o.kind == "load" and o not in loads and len(o.result.type.shape) == 2
                    and o.result.type.element.bits == 16 and not o.attrs.get("tma") and movable(o)
                    and _zero_other(o) and _copyable(o, info)):
                loads.append(o)
                reads.add(id(o))
    bases, stage = [], 0
    # padded slots (slot_row_pad) where the dot reads the slot with plain shared loads: an FMA dot's operands and
    # an mma.sync dot's of 32 or 64 bits; swizzled ones (ldmatrix, wgmma descriptors) otherwise
    padded = tuple(fma or (mma and o.result.type.element.bits != 16) for o in loads)
    # of those, an mma.sync dot's 8-byte slots XOR-swizzled instead of padded (mma_slot_swizzled)
    swizzled = tuple(pad and mma and mma_slot_swizzled(o.result.type.element.bits // 8)
                     for o, pad in zip(loads, padded))
    # a ring whose slots are all padded (read by plain shared loads, written by cp.async: no swizzle pattern nor
    # descriptor that needs 1024-byte alignment) rounds each operand's slot to 128 bytes (a whole row of the 32
    # banks: the padding's bank pattern is kept) instead of 1024: the fp64 32x32x16 GEMM's stage 10240 -> 9216
    # bytes, its three slots 30720 -> 27648, 7 -> 8 blocks an SM.
    align = 128 if all(padded) else 1024
    for o, pad, swz in zip(loads, padded, swizzled):
        bases.append(stage)
        eb = o.result.type.element.bits // 8
        nbytes = fma_slot_bytes(o.result.type.shape, eb, not swz) if pad else o.result.type.numel * eb
        stage += -(-nbytes // align) * align
    budget = SMEM_MAX - other_bytes - (1024 if any(tma_served(o) for o in loads) else 0)  # TMA: slot mbarriers
    # The tight ring: a one-dot loop of one warpgroup keeps num_stages slots (not num_stages + 1) and loads
    # num_stages - 1 iterations ahead; its copies follow the dot's wgmma wait and a barrier (every warp then
    # finished reading the slot they overwrite, the previous iteration's). One more barrier per iteration for a
    # slot less of shared memory (64x128x32 w4 s4: 48 KiB, four blocks per SM instead of three), and the wgmmas
    # issue right after the iteration's first barrier. Measured on the H200 (2048^3-8192^3): 64x128x32 w4 s4
    # +3-30%, 128x128x32 w4 s4 +2-5%; 1024^3 (fewer blocks than SMs) -3-5%. Blocks of two warpgroups lost 1-8%
    # with it (docs/EXPERIMENTS.md, ring_tight_all), so they keep the loose ring.
    # A one-warpgroup loop of several dots (attention) takes it too when the loose ring leaves room for one block
    # per SM and the tight one for two (counting the ring and the operands stored before the loop); its copies
    # follow the last dot behind the barrier; the slot they overwrite was read by the previous iteration's dots,
    # whose wgmmas the first dot's wait retired (a dot leaves at most one group in flight). Measured on the H200
    # (BH32 L4096): D=128 64x64 w4 s3 (144 -> 112 KiB) 1.31x, 128x64 w4 s3 1.20x; where the block count stays
    # (D=64 128x64 w4 s3, two blocks either way, register-bound) the second barrier cost 4%, hence the condition.
    stages = loop_stages(loop, options)

    def fit(tight):  # the ring's slots: num_stages (+ 1 when loose), fewer where shared memory runs out
        least = 2 if tight else 3
        n = max(least, stages + (0 if tight else 1))
        while n > least and n * stage > budget:
            n -= 1
        return n

    occupancy = None
    if len(dots) == 1:
        tight = options.num_warps == 4
        # Blocks of two or more warpgroups take it where it fits one more block per SM by shared memory (128x128x64
        # w8 s3: four 32 KiB slots, one block, against three, two blocks). Measured on the H200 (idiom corpus
        # beside Triton, ptxas 13.5, 2026-12-02; ours/Triton loose -> tight): split-K 1.23 -> 0.96, residual
        # 1.26 -> 1.12, column bias 1.15 -> 1.01, masks on M and N 1.21 -> 1.08, bias 1.16 -> 1.11, ReLU 1.24 ->
        # 1.15. Registers must leave room for that block too: the module records the block count it bought and
        # the code generator tells ptxas (`.minnctapersm`), which fits the registers to it, spilling if it must
        # (GELU through erf: 159 registers -> 128 and 60 bytes spilled). Measured against building the loose
        # ring where ptxas's own count did not fit (H100, 2026-12-06, the 10 kernels whose SASS it changes, 3
        # rounds): 0.981, GELU erf 0.887, none slower by over 2%; and each kernel is compiled once.
        if not tight and not sync and not _tile_loop(loop):  # (a synchronous dot's ring: below)
            # blocks per SM by shared memory, and at most as many as the accumulator leaves registers for (65,536
            # per SM; the accumulator plus 64 a thread for addresses, masks and an instruction's operands: a
            # 128x128 fp32 accumulator over 8 warps, two blocks; 128x128 over 8 warps of fp8 at 16 KiB a stage
            # would fit four by shared memory, whose 64-register cap no wgmma of it fits)
            more = _tight_gain(body, dots, options, 64, fixed_bytes + fit(False) * stage,
                               fixed_bytes + fit(True) * stage)
            if more:
                tight, occupancy = True, more
            elif options.num_warps >= 8:
                # the blocks the loose ring leaves shared memory for, where the estimate leaves them registers too:
                # the code generator holds ptxas to them where its code then spills in no loop (codegen `ring_room`)
                # (registers: a thread's 64 of slack read as 48 plus the 64-bit addresses of the loop's loads, one
                # a vector: _address_regs)
                info = info or axisinfo.analyze(module.function)
                slack = 48 + _address_regs(body, info, 32 * options.num_warps)
                room = min(blocks_per_sm(fixed_bytes + fit(False) * stage), _blocks_by_regs(body, dots, options, slack))
                if room >= 2:
                    module.meta["ring_blocks_room"] = min(room, module.meta.get("ring_blocks_room", room))
    elif options.num_warps == 4:
        tight = (blocks_per_sm(fixed_bytes + fit(False) * stage) == 1
                 and blocks_per_sm(fixed_bytes + fit(True) * stage) >= 2)
    else:
        # Two or more warpgroups: where the tight ring buys a block per SM by shared memory and the registers
        # leave room for it (32 a thread beside the live tiles for addresses and masks): a LoRA loop whose x tile
        # two dots read (x @ W, x @ A), 4 slots of 34 KiB against 3.
        occupancy = _tight_gain(body, dots, options, 32, fixed_bytes + fit(False) * stage,
                                fixed_bytes + fit(True) * stage)
        tight = bool(occupancy)
    # Where even the loose ring's fewest slots (3) do not fit in shared memory, the tight ring (num_stages slots,
    # at least 2) for any number of warps, instead of no ring at all (the register pipeline: loads into
    # registers, stores to shared memory after the dots). Attention D=128 128x128 w8 s2: 2 x 64 KiB slots + Q's
    # 32 KiB; measured 327 -> 432 TFLOP/s, matmul 128x256x128 w8 s3 1.22x.
    if not tight and fit(False) * stage > budget:
        tight = True
    slots = fit(tight)
    # A one-dot loop where the tight ring buys no block (128x256 tiles: one block either way) keeps the loose
    # ring's slots (num_stages + 1) in the tight ring's order: copies after the dot's wgmma wait behind a barrier,
    # num_stages iterations ahead, one deeper than the loose ring's copies before the wgmmas. Measured on the H100
    # (2026-12-06, the 7 corpus kernels it changed, 3 rounds beside Triton): 0.962 of the loose ring's time, bf16
    # 128x256 0.836, GELU erf 0.904, W8A8 0.977; the int8 loop whose b the dot transposes through scratch (a
    # barrier of its own each iteration) 1.041, so that one keeps the loose ring.
    if not tight and len(dots) == 1 and not scratch_t:
        tight = True  # the order; the slots stay the loose ring's
    # A dot that reads its operands from the slot itself (mma.sync's ldmatrix, the FMA dot's shared loads) is done
    # with the slot when it returns: behind the tight order's barrier the copies write the slot this iteration read,
    # so num_stages - 1 slots hold num_stages - 1 iterations in flight, as Triton's ring for these dots does (one
    # slot less than the tight ring for as deep a prefetch; the 16-row decode GEMM at 4 stages 81,920 -> 61,440
    # bytes, Triton's, two -> three blocks an SM). Measured with b read four matrices an ldmatrix (codegen/dot.py
    # load_operand; H100, 2026-12-07, benchmarks/2026-12-07e-h100/abin2.md, the A/Bs `ldsm_x4b,sync_ring`, 3 rounds
    # beside Triton): 0.985 of the time over the 10 corpus kernels they change, none slower by over 2%; alone
    # 1.010 (the two-warp 64x64 matmul 1.122 with b's x2 reads: docs/EXPERIMENTS.md). Not the retired
    # `ring_sync_shallow`: its num_stages - 1 slots loaded one iteration less far ahead (1.057)
    if sync:
        tight = True
        slots = max(1 if multi else 2, stages - 1)  # several dots: Triton's num_stages - 1, one slot at two stages
        while slots > 2 and slots * stage > budget:
            slots -= 1
    if slots * stage > budget:
        return False
    if occupancy:
        module.meta["ring_blocks_per_sm"] = min(occupancy, module.meta.get("ring_blocks_per_sm", occupancy))
    # a synchronous dot's copies write the slot this iteration read (behind the barrier)
    ahead = slots if sync else slots - 1 if tight else slots - 2
    rid = module.meta.get("rings", 0)
    module.meta["rings"] = rid + 1
    # In a one-dot loop the copies follow the dot's wgmma wait (and a barrier in the tight order): the slot they
    # write, (slot + ahead) % slots, is an add, a compare and a select that ptxas computes in uniform registers
    # after the last wgmma, on the way to the copies. It is the slot iteration i - (slots - ahead) read, so the
    # code generator carries it from there instead (`carry_prev`). Measured (H100, 2026-12-06, 2 rounds, the 53
    # corpus kernels with a ring): the 36 one-dot loops 0.979 of the time, none slower by over 0.6% (A transposed
    # 0.927, bias 0.952, masks on M and N 0.974, on M, N and K 0.971); the 17 loops of several dots 1.004, attention
    # D=128 1.03-1.06 (at 255 registers, 12-44 bytes more spilled: the carried slots are live through the
    # softmax, whose work already hides the chain): they keep the compare and select.
    ring = {"id": rid, "stages": slots, "tiles": tuple(tuple(o.result.type.shape) for o in loads),
            "stage_bytes": stage, "bases": tuple(bases), "ahead": ahead, "carry_prev": len(dots) == 1,
            "tma": tuple(tma_served(o) for o in loads),
            "ebytes": tuple(o.result.type.element.bits // 8 for o in loads), "padded": padded, "half": half,
            "swizzled": swizzled}

    iv, carried = body.args[0], body.args[1:]
    y = body.terminator
    lb, ub, step = loop.operands[:3]
    cmp_t = T.TensorType(T.int1)

    def copies(clone, cond, out_ops, barrier=False, masks=None, **where):
        for j, o in enumerate(loads):
            mask = _guard(o, (masks or {}).get(id(o), clone), cond, out_ops)
            attrs = {"ring": rid, "_ring": ring, "operand": j, "has_mask": True, "commit": j == len(loads) - 1,
                     **where}
            if barrier and j == 0:
                attrs["barrier"] = True  # every warp is past its reads of the slot first (the tight ring)
            operands = [clone(o.operands[0]), mask]
            if id(o) in clamps:
                # the mask without its edge term (`clone` maps that term to true), and the elements in bounds from
                # each element on along the dim, bound - idx: a chunk's copy reads clamp(that, 0, chunk) elements
                # and zero-fills the rest (cp.async's src-size)
                dim, leaf = clamps[id(o)]
                lo = leaf.owner
                idx, bound = lo.operands[:2] if lo.attrs["pred"] == "lt" else lo.operands[1::-1]
                b_, i_ = clone(bound), clone(idx)
                if idx.type.element.bits < 64:  # in 64 bits: bound - idx of 32-bit values can overflow
                    b_, i_ = (_append(out_ops, Op("cast", [x], [x.type.with_element(T.int64)], {"to": T.int64},
                                                  loc=o.loc)) for x in (b_, i_))
                rem = Op("sub", [b_, i_], [idx.type.with_element(b_.type.element)], loc=o.loc)
                out_ops.append(rem)
                r = rem.result
                shape = tuple(o.result.type.shape)
                if tuple(r.type.shape) != shape:
                    b = Op("broadcast", [r], [r.type.with_shape(shape)], {"shape": shape}, loc=o.loc)
                    out_ops.append(b)
                    r = b.result
                operands.append(r)
                attrs["clamp"] = dim
            if tma_served(o):  # TMA: the copy also takes the iteration's guard, the tensor map and the tile's start
                attrs["tma"] = o.attrs["tma"]
                operands += [cond] + [clone(v) for v in o.operands[-1 - o.attrs["tma"]:]]
            out_ops.append(Op("async_copy", operands, [], attrs, loc=o.loc))

    def advance(state, at_iv, out_ops):
        """The carried values of the next iteration from `state` (the carried values at `at_iv`); only the
        address ones are meaningful."""
        clone = _cloner(inside, {iv.id: at_iv, **{a.id: state[j] for j, a in enumerate(carried)}}, out_ops)
        return [clone(v) if a.id in addr_args else state[j] for j, (a, v) in enumerate(zip(carried, y.operands))]

    def later(state, at, n, out_ops, first=None):
        """(carried values, induction value) n iterations after (state, at); `first`: the next iteration's
        values when the body already computes them (its yielded ones)."""
        for d in range(n):
            state = first if d == 0 and first is not None else advance(state, at, out_ops)
            nxt = Op("add", [at, step], [iv.type], loc=loop.loc)
            out_ops.append(nxt)
            at = nxt.result
        return state, at

    def copies_at(state, at, out_ops, barrier=False, **where):
        c = Op("cmp", [at, ub], [cmp_t], {"pred": "lt"}, loc=loop.loc)
        out_ops.append(c)
        subst = {iv.id: at, **{a.id: state[j] for j, a in enumerate(carried)}}
        clone = _cloner(inside, subst, out_ops, guard=c.result)
        # a clamped copy's mask, cloned on its own with its edge term true (the source size takes that term)
        masks = {}
        for k, (_, leaf) in clamps.items():
            t = Op("const", [], [leaf.type], {"value": True}, loc=loop.loc)
            out_ops.append(t)
            masks[k] = _cloner(inside, {**subst, leaf.id: t.result}, out_ops, guard=c.result)
        copies(clone, c.result, out_ops, barrier=barrier, masks=masks, **where)

    # prologue: iterations 0 .. ahead-1 into slots 0 .. ahead-1
    pro = []
    state, at = list(loop.operands[3:]), lb
    for d in range(ahead):
        if d:
            state, at = later(state, at, 1, pro)
        copies_at(state, at, pro, slot=d)
    parent = loop.block
    i = parent.ops.index(loop)
    for n in pro:
        n.block = parent
    parent.ops[i:i] = pro

    # body: wait + views, the address ops, the copies `ahead` iterations on, then the rest
    head = [Op("async_wait", [], [], {"ring": rid, "_ring": ring, "pending": ahead - 1}, loc=loop.loc)]
    views, replaced = [], []
    for j, o in enumerate(loads):
        src = recast.get(id(o), o)  # a bitcast of the load: the view stands for the bitcast's result
        v = Op("smem_view", [], [src.result.type], {"ring": rid, "_ring": ring, "operand": j}, loc=o.loc)
        head.append(v)
        views.append(v.result)
        replaced.append(src)
    nxt_ops = []
    state, at = later(list(carried), iv, ahead, nxt_ops, first=list(y.operands))
    copies_at(state, at, nxt_ops, barrier=tight, ahead=ahead)
    drop = set(id(o) for o in loads) | set(id(o) for o in indep_ops) | set(id(o) for o in recast.values())
    rest = [o for o in body.ops if id(o) not in drop]
    cut = 0
    # The tight ring's copies follow the (last) dot, whose wgmma wait leaves only this iteration's group in flight.
    # In a loop of several dots the copies go after the last dot too, instead of before the first, so nothing
    # stands between the barrier and the first wgmma (attention's QK, on the softmax's critical path); the slot
    # they write was still last read two iterations back. Measured on the H200: attention D=64 1.02x, D=128
    # 1.03x; the one-dot matmul loop lost up to 4% with it, so not there.
    if tight or len(dots) > 1:
        cut = max(k + 1 for k, o in enumerate(rest) if o.kind == "dot")
    body.ops = head + indep_ops + rest[:cut] + nxt_ops + rest[cut:]
    for o, v in zip(loads, views):
        if id(o) in reads:
            _read_slot(body, o.result, v)
    for o in body.ops:
        o.block = body
    _replace_uses(body, {o.result.id: v for o, v in zip(replaced, views)})
    loop.attrs["_ring"] = ring
    return True
