"""Which accesses of in-kernel tensor descriptors keep their tensor map.

`tl.make_tensor_descriptor` writes a CUDA tensor map (a `tensormap_create` op, whose result its loads and stores
carry as a host-side descriptor's carry theirs; language/core.py `_in_kernel_tensor_map`). The kernel writes it with
`tensormap.replace`, which only sm_90a has, and TMA serves only two kinds of its accesses: the 2-D loads of a wgmma
loop's copy ring (passes/pipeline.py `tma_served`) and 2-D stores (codegen/tma_store.py). So before the pipeliner,
every other load or store of such a descriptor (and every one of a descriptor whose base the launch specialized as
not 16-byte aligned) drops its map operands and goes through its pointers (a load feeding an mma.sync or FMA dot
keeps that dot's own copy ring, which takes no TMA loads), and a map nobody uses any more is not written. Kernels
without in-kernel maps are left exactly as they are. A store whose map's inner extent is not proved a whole number
of 16-byte units is marked `tma_guard`: TMA stores clip at those units, so it goes by TMA only where its tile is
wholly in bounds."""
from __future__ import annotations

from ..options import has_wgmma
from . import axisinfo
from .dce import dce
from .layouts import wgmma_applies


def _dot_users(v, body_ops):
    """The dots that read value `v` as an operand, directly or through a transpose or a same-width bitcast."""
    out = []
    for op in body_ops:
        if v not in op.operands:
            continue
        if op.kind == "dot" and any(x is v for x in op.operands[:2]):
            out.append(op)
        elif op.kind in ("permute", "bitcast") and op.results:
            out += _dot_users(op.result, body_ops)
    return out


def _feeds_wgmma(op, options) -> bool:
    """A 2-D 8- or 16-bit load inside a loop whose result only dots running on wgmma read."""
    v = op.result
    el = v.type.element
    if len(v.type.shape) != 2 or el.bits not in (8, 16) or op.block is None or op.block.parent is None:
        return False
    ops = list(op.block.ops)
    dots = _dot_users(v, ops)
    return bool(dots) and all(wgmma_applies(d, options, options.num_warps) is not None for d in dots)


def _store_served(op) -> bool:
    v = op.operands[1]
    return len(v.type.shape) == 2 and v.type.element.bits in (8, 16, 32)


def _inner_whole_units(create, info) -> bool:
    """Whether the map's inner extent is proved a whole number of 16-byte units: a TMA store clips at those units
    of the row (it writes the elements of a tile past a ragged extent up to the next unit; on an H100, 2026-12-07,
    tests/ops/test_desc_ring.py), so another map's stores go by TMA only where the tile is wholly in bounds
    (`tma_guard`, codegen/tma_store.py)."""
    r = len(create.attrs["block"])
    eb = create.operands[0].type.element.element_ty.bits // 8
    inner = create.operands[r]
    div = axisinfo._get(info, inner).divisibility[0]
    return div * eb % 16 == 0


def tensormaps(module, options):
    """Pass: drop the tensor-map operands of in-kernel descriptor accesses TMA cannot serve here, and the
    tensor maps no access uses."""
    f = module.function
    creates = [op for op in f.walk() if op.kind == "tensormap_create"]
    if not creates:
        return module
    # A base the launch specialized as not 16-byte aligned (a pointer argument without divisibility 16) breaks
    # Triton's contract for make_tensor_descriptor: it keeps the pointer path rather than fault in TMA
    args = {a.id: i for i, a in enumerate(f.args)}
    unaligned = {c.result.id for c in creates if c.operands[0].id in args
                 and f.arg_attrs.get(args[c.operands[0].id], {}).get("divisibility", 1) % 16}
    ids = {c.result.id for c in creates}
    info = axisinfo.analyze(f)
    ragged = {c.result.id for c in creates if not _inner_whole_units(c, info)}
    wgmma = has_wgmma(getattr(options, "arch", "")) and not getattr(options, "debug_no_wgmma", False)
    used = set()
    for op in f.walk():
        n = op.attrs.get("tma") if op.kind in ("load", "store") else None
        if not n:
            continue
        tmap = op.operands[-1 - n]
        if tmap.id not in ids:
            continue  # a host-side descriptor's
        keep = wgmma and tmap.id not in unaligned and (_store_served(op) if op.kind == "store"
                                                        else _feeds_wgmma(op, options))
        if keep:
            used.add(tmap.id)
            if op.kind == "store" and tmap.id in ragged:
                op.attrs["tma_guard"] = True
        else:
            op.operands = op.operands[:-1 - n]
            del op.attrs["tma"]
    for op in f.walk():  # any other use (none is made today) keeps its map
        if op.kind not in ("load", "store"):
            used.update(v.id for v in op.operands if v.id in ids)
    dropped = [c for c in creates if c.result.id not in used]
    for c in dropped:
        c.block.ops.remove(c)
    # the dropped operands' int32 casts (the tile's start) and a dropped map's own casts are dead now
    return dce(module, options)
