"""Stores through host-side tensor descriptors written by TMA (sm_90+): `desc.store([i, j], tile)` of a 2-D tile
whose descriptor is a CUDA tensor map (its store op carries the `tma` operands: the map, then the tile's start).

The tile is written into shared memory in the layout of the map's box and swizzle (codegen/dot.py's SwizzledTile:
column blocks of rows of min(width, 128) bytes, 16-byte chunks XOR-ed with the row, exactly what TMA's
128B/64B/32B modes read; compiler.tools.tensor_descriptor.tma_box gives the host the same box), the writes are
fenced to the async proxy, and after a barrier one thread issues one
    cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [tmap, {col, row}], [tile]
per column block, commits the group and waits until its reads of shared memory are done (the next shared-memory
use starts with a barrier, so no thread overwrites the tile before). TMA drops the elements past the array's
edge, but along the row only in whole 16-byte units: past an inner extent that is not a whole number of them it
writes the row's elements up to the next unit (on an H100, 2026-12-07: a padded C's columns past N). Where the
extent is not known to be whole units (a host-side descriptor's launch checks it, jit._desc_handler; an in-kernel
one's is proved or not by passes/tensormaps.py, which marks the store `tma_guard`), the block first votes on its
mask (`bar.red.and`): a tile wholly in bounds goes by TMA, one over an edge by the masked store. What the guard
costs (H100, 2026-12-07, the ragged fp32 descriptor matmul, N = 4092 whole units but not proved so): the unguarded
TMA store 0.985 of its time, the masked store alone 1.023 (benchmarks/2026-12-07d-h100/tma-guard.md). Other
stores are the ordinary masked stores (memory.py)."""
from __future__ import annotations

import llvmlite.ir as ir

from . import common as C
from . import memory
from .common import Tile, emits
from .dot import SwizzledTile, store_swizzled
from .tma import _asm, _leader


def _applies(e, op) -> bool:
    if op.attrs.get("tma") != 2 or getattr(e.opts, "sm", 0) < 90:
        return False
    v = op.operands[1]
    tm = op.operands[-3]  # an in-kernel map the kernel does not write: the masked store
    if getattr(tm.owner, "kind", None) == "tensormap_create" and tm.id not in (getattr(e, "tmap_slots", None) or {}):
        return False
    return (len(v.type.shape) == 2 and v.type.element.bits in (8, 16, 32)
            and isinstance(e.get(op.operands[0]), Tile))


@emits("store")
def _e_store(e, op):
    if not _applies(e, op):
        return memory._e_store(e, op)
    if not op.attrs.get("tma_guard") or not op.attrs.get("has_mask"):
        return _tma_store(e, op)
    # the whole tile in bounds (every thread's mask bits): TMA; else the masked store. The vote is uniform, so
    # the barriers inside either branch are met by the whole block
    mine = None
    for m in e.regs(op.operands[2]):
        mine = m if mine is None else e.b.and_(mine, m)
    vote = ir.InlineAsm(ir.FunctionType(C.I32, [C.I32]), "{ .reg .pred p, q; setp.ne.b32 q, $1, 0; "
                        "bar.red.and.pred p, 0, q; selp.b32 $0, 1, 0, p; }", "=r,r", side_effect=True)
    got = e.b.call(vote, [e.b.zext(mine, C.I32)])
    inside = e.b.icmp_unsigned("!=", got, e.i32(0))
    tma_b = e.kfn.append_basic_block("store.tma")
    masked_b = e.kfn.append_basic_block("store.masked")
    merge = e.kfn.append_basic_block("store.end")
    e.b.cbranch(inside, tma_b, masked_b)
    e.exclusive_paths([(tma_b, lambda: _tma_store(e, op)), (masked_b, lambda: memory._e_store(e, op))], merge)


def _tma_store(e, op):
    x = e.get(op.operands[1])
    v = op.operands[1]
    eb = C.elem_bytes(v.type.element)
    st = SwizzledTile(tuple(v.type.shape), 1, eb)
    e.smem_begin(st.nbytes)  # a barrier first when shared memory was used before
    st.base = e.smem_base  # 1024-aligned (uses stack in whole KiB), as the 128B swizzle pattern needs
    st.absolute = True
    store_swizzled(e, x, st)
    _asm(e, "fence.proxy.async.shared::cta;", "", [])  # generic-proxy writes -> the async proxy's reads
    e.barrier()
    tmap = e.get(op.operands[-3])
    tmap = tmap if tmap.type == C.I64 else e.b.ptrtoint(tmap, C.I64)
    rows0, cols0 = (e.get(w) for w in op.operands[-2:])
    rows0 = rows0 if rows0.type == C.I32 else e.b.trunc(rows0, C.I32)
    cols0 = cols0 if cols0.type == C.I32 else e.b.trunc(cols0, C.I32)
    lead = e.b.zext(_leader(e), C.I32)
    base = e.b.add(e.smem.ptrtoint(C.I32), e.i32(st.base))
    for blk in range(st.cols // st.block_cols):
        src = e.b.add(base, e.i32(blk * st.block_bytes)) if blk else base
        col = e.b.add(cols0, e.i32(blk * st.block_cols)) if blk else cols0
        _asm(e, "{ .reg .pred p; setp.ne.b32 p, $0, 0; "
                "@p cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [$1, {$2, $3}], [$4]; }",
             "r,l,r,r,r", [lead, tmap, col, rows0, src])
    _asm(e, "{ .reg .pred p; setp.ne.b32 p, $0, 0; @p cp.async.bulk.commit_group; "
            "@p cp.async.bulk.wait_group.read 0; }", "r", [lead])
