"""TMA copies into a copy ring (passes/pipeline.py's `tma_served` loads of host-side tensor descriptors).

A ring operand whose load reads a tensor descriptor is copied by the tensor memory accelerator instead of
cp.async: one thread of the block issues, per slot use,
    mbarrier.arrive.expect_tx [bar(slot)], tile bytes
    cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [slot], [tmap, {col, row}], [bar]
(one per 128-byte column block of the tile: the box of compiler.tools.tensor_descriptor.tma_box, encoded on the
host with the same swizzle), and every thread waits for the slot with `mbarrier.try_wait.parity` on the phase of
the iteration ((iteration / slots) & 1) before the ring's barrier. The slot's layout is the ring's SwizzledTile:
column blocks of rows of min(width, 128) bytes whose 16-byte chunks are XOR-ed with the row (the 128B/64B/32B
swizzle TMA writes when the slot starts on a 1024-byte boundary, which ring slots do); the wgmmas read it in
place. Elements outside the array arrive as zeros (TMA's out-of-bounds fill), as the descriptor defines.

Each slot has one mbarrier (8 bytes after the ring's slots) expecting one arrival per TMA operand; they are
initialised where the ring starts (its first prologue copy) and invalidated where it ends (finish_ring).
Copies for iterations past the loop's end are not issued (the cp.async ring issues them masked off), so every
issued copy is waited for inside the loop.
"""
from __future__ import annotations

import llvmlite.ir as ir

from . import common as C


def _asm(e, text, cons, args):
    fty = ir.FunctionType(C.VOID, [a.type for a in args])
    e.b.call(ir.InlineAsm(fty, text, cons, side_effect=True), args)


def ring_has_tma(spec) -> bool:
    return any(spec.get("tma", ()))


def barrier_bytes(spec) -> int:
    """Shared memory the ring's mbarriers take after its slots: 8 bytes each, rounded up to 1024 so that what
    is placed after the ring (scratch operand tiles of other dots) stays on the 1024-byte boundary wgmma's
    swizzled tiles need."""
    return -(-8 * spec["stages"] // 1024) * 1024 if ring_has_tma(spec) else 0


def _bar_addr(e, ring, slot):
    """Shared-window (32-bit) address of the mbarrier of `slot` (an i32 value)."""
    spec = ring.spec
    off = ring.start + spec["stages"] * spec["stage_bytes"]
    base = e.b.add(e.smem.ptrtoint(C.I32), e.i32(off))
    return e.b.add(base, e.b.shl(slot, e.i32(3)))


def _leader(e):
    """i1: this thread issues the block's TMA operations (thread 0)."""
    return e.b.icmp_unsigned("==", e.tid, e.i32(0))


def init_barriers(e, ring):
    """At the ring's start: thread 0 initialises one mbarrier per slot (arrival count: the TMA operands), made
    visible to the other threads and the async proxy before any of them uses it."""
    spec = ring.spec
    n = sum(1 for t in spec["tma"] if t)
    lead = e.b.zext(_leader(e), C.I32)
    for s in range(spec["stages"]):
        _asm(e, "{ .reg .pred p; setp.ne.b32 p, $0, 0; @p mbarrier.init.shared::cta.b64 [$1], " + str(n) + "; }",
             "r,r", [lead, _bar_addr(e, ring, e.i32(s))])
    _asm(e, "{ .reg .pred p; setp.ne.b32 p, $0, 0; @p fence.mbarrier_init.release.cluster; }", "r", [lead])
    # the slots may have held ordinary shared-memory data (an earlier use, a persistent loop's last epilogue):
    # order those generic-proxy accesses before the TMA writes of the async proxy
    _asm(e, "fence.proxy.async.shared::cta;", "", [])
    e.barrier()


def copy(e, op, ring, st, slot):
    """Issue the TMA copy of ring operand op.attrs["operand"] into SwizzledTile st (slot `slot`, an i32):
    operands of the async_copy: (pointers, mask, guard, tensor map, start row, start col)."""
    guard = e.get(op.operands[2])
    tmap = e.get(op.operands[3])
    rows0, cols0 = (e.get(v) for v in op.operands[4:6])
    rows0 = rows0 if rows0.type == C.I32 else e.b.trunc(rows0, C.I32)
    cols0 = cols0 if cols0.type == C.I32 else e.b.trunc(cols0, C.I32)
    issue = e.b.zext(e.b.and_(guard if guard.type == C.I1 else e.b.icmp_unsigned("!=", guard, ir.Constant(
        guard.type, 0)), _leader(e)), C.I32)
    bar = _bar_addr(e, ring, slot)
    nblocks = st.cols // st.block_cols
    nbytes = st.rows * st.cols * st.eb
    _asm(e, "{ .reg .pred p; setp.ne.b32 p, $0, 0; "
            f"@p mbarrier.arrive.expect_tx.shared::cta.b64 _, [$1], {nbytes}; }}", "r,r", [issue, bar])
    gptr = tmap if tmap.type == C.I64 else e.b.ptrtoint(tmap, C.I64)  # a generic address in global memory
    base = e.b.add(e.smem.ptrtoint(C.I32), st.offset(e, None, e.i32(0), e.i32(0)))
    for blk in range(nblocks):
        dst = e.b.add(base, e.i32(blk * st.block_bytes)) if blk else base
        col = e.b.add(cols0, e.i32(blk * st.block_cols)) if blk else cols0
        _asm(e, "{ .reg .pred p; setp.ne.b32 p, $0, 0; "
                "@p cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes "
                "[$1], [$2, {$3, $4}], [$5]; }", "r,r,l,r,r,r", [issue, dst, gptr, col, rows0, bar])


def wait(e, ring, it):
    """Every thread waits until the slot of iteration `it` (i32) has landed: its mbarrier's phase
    (it / slots) & 1 completes."""
    stages = e.i32(ring.spec["stages"])
    slot = e.b.urem(it, stages)
    parity = e.b.and_(e.b.udiv(it, stages), e.i32(1))
    _asm(e, "{ .reg .pred p; TF_TMA_WAIT_${:uid}: mbarrier.try_wait.parity.shared::cta.b64 p, [$0], $1; "
            "@!p bra TF_TMA_WAIT_${:uid}; }", "r,r", [_bar_addr(e, ring, slot), parity])


def release(e, ring):
    """At the ring's end (every thread past its last wait): thread 0 invalidates the mbarriers, so the
    memory can be reused by ordinary stores after the barrier that follows."""
    lead = e.b.zext(_leader(e), C.I32)
    for s in range(ring.spec["stages"]):
        _asm(e, "{ .reg .pred p; setp.ne.b32 p, $0, 0; @p mbarrier.inval.shared::cta.b64 [$1]; }", "r,r",
             [lead, _bar_addr(e, ring, e.i32(s))])
