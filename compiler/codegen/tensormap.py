"""CUDA tensor maps written by the kernel for its in-kernel tensor descriptors (sm_90a).

A `tensormap_create` op (language/core.py `_in_kernel_tensor_map`, kept by passes/tensormaps.py only where a TMA
access uses it) becomes a 128-byte CUtensorMap in global scratch memory:

  scratch layout  The kernel takes one hidden last parameter, `global_scratch` (a global pointer, 128-byte aligned),
                  when it writes any map: per program `128 * n` bytes (n: the maps it writes, one per creating call
                  site, numbered in program order), program p = ctaid.x + nctaid.x * (ctaid.y + nctaid.y * ctaid.z)
                  at `global_scratch + p * 128 * n`, map i at `+ 128 * i`. The launcher (compile.CompiledKernel.launch,
                  runtime/scratch.py) passes grid programs x that many bytes; the metadata says how many
                  (`global_scratch_size` a program, `global_scratch_align`).
  writing         Thread 0 (the thread that issues the block's TMA operations, codegen/tma.py `_leader`) zeroes the
                  map (eight 16-byte global stores), then sets every field with `tensormap.replace.tile.<field>.global`
                  (PTX ISA 8.3, sm_90a): global_address (the base), rank (rank - 1), per dim (innermost first) box_dim
                  and global_dim, the global_stride of every dim but the innermost (bytes), element_stride 1,
                  elemtype (the PTX ISA's numbering, tools/tensor_descriptor.py `tma_elemtype`),
                  interleave_layout 0 (none), swizzle_mode and box from `tma_box` (the host's maps and the ring slots
                  codegen/tma.py fills use the same: 0 none, 1 32B, 2 64B, 3 128B), fill_mode 0 (zeros) or 1 (NaN,
                  padding_option="nan"). These are generic-proxy writes; TMA reads the map through the tensormap
                  proxy, so thread 0 then issues `fence.proxy.tensormap::generic.release.gpu`, the block meets at a
                  barrier, and thread 0 issues `fence.proxy.tensormap::generic.acquire.gpu [map], 128` before any
                  cp.async.bulk.tensor reads it (they all follow in program order).
  strides         tensormap.replace's global_stride takes bytes: ptxas 13.5 assembles it as a shift right by 4 into
                  the map's field (SHF.R.U64 by 4 before the store, the same for PTX ISA 8.3 and 8.7 input). Older
                  assemblers stored the value unshifted (Triton's lowering pre-shifts it for PTX ISA <= 8.5, i.e.
                  ptxas up to 12.6: TMAToLLVM.cpp `needsStrideWorkaround`), so the stride is pre-shifted by 4 where
                  the installed ptxas is older than 12.7 (`stride_shift`); the ptxas release is in the cache key.

A map that no TMA access uses is not written (its value is 0 and nothing reads it). The maps' creation pays for
the copies it saves: the persistent descriptor matmul 0.763 of the time of masked pointer accesses, the ragged fp32
descriptor matmul's stores 0.970 (H100, 2026-12-07, benchmarks/2026-12-07-h100/abin4.md, abin5.md); the maps'
fields, fences and padding were first checked on that GPU by tests/ops/test_desc_tma.py."""
from __future__ import annotations

import functools
import re

import llvmlite.ir as ir

from ..tools.tensor_descriptor import tma_box, tma_elemtype
from . import common as C
from .common import emits
from .tma import _asm, _leader

MAP_BYTES = 128


@functools.lru_cache(maxsize=None)
def ptxas_version(path) -> str:
    """`ptxas --version`'s text ("" where it cannot run); compile.toolchain keys the cache on the same release."""
    import subprocess

    if not path:
        return ""
    try:
        return subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


def stride_shift() -> int:
    """4 where the installed ptxas takes tensormap.replace's global_stride in 16-byte units (before 12.7), else 0
    (newer ones, and the driver's JIT where no ptxas is installed)."""
    from .ptx import find_ptxas

    m = re.search(r"release (\d+)\.(\d+)", ptxas_version(find_ptxas()))
    return 4 if m and (int(m.group(1)), int(m.group(2))) < (12, 7) else 0


def plan(e, f) -> dict:
    """{tensormap_create result id: slot} of the maps this kernel writes: those a TMA access uses (a ring copy
    served by TMA, a TMA store), on sm_90a; numbered in program order."""
    from ..options import has_wgmma

    creates = [op for op in f.walk() if op.kind == "tensormap_create"]
    if not creates or not has_wgmma(getattr(e.opts, "arch", "")):
        return {}
    ids = {c.result.id for c in creates}
    used = set()
    for op in f.walk():
        if op.kind == "async_copy" and op.attrs.get("tma") and len(op.operands) > 3:
            used.add(op.operands[3].id)
        elif op.kind == "store" and op.attrs.get("tma") == 2:
            used.add(op.operands[-3].id)
        elif op.kind not in ("load", "store", "async_copy"):
            used.update(v.id for v in op.operands if v.id in ids)  # conservatively: any other use
    slots = {}
    for c in creates:
        if c.result.id in used:
            slots[c.result.id] = len(slots)
    return slots


def _program_base(e):
    """i64: the generic address of this program's scratch (computed once, in the entry block)."""
    got = getattr(e, "_tmap_base", None)
    if got is not None:
        return got
    b = e.eb
    x, y, z = (b.zext(e.sreg(f"ctaid.{a}"), C.I64) for a in "xyz")
    nx, ny = (b.zext(e.sreg(f"nctaid.{a}"), C.I64) for a in "xy")
    pid = b.add(x, b.mul(nx, b.add(y, b.mul(ny, z))))
    per = ir.Constant(C.I64, MAP_BYTES * len(e.tmap_slots))
    base = b.add(b.ptrtoint(e.kfn.args[-1], C.I64), b.mul(pid, per))
    e._tmap_base = base
    return base


@emits("tensormap_create")
def _e_tensormap_create(e, op):
    slot = e.tmap_slots.get(op.result.id) if getattr(e, "tmap_slots", None) else None
    if slot is None:  # no TMA access uses it: not written
        e.put(op.result, [ir.Constant(C.I64, 0)])
        return
    r = len(op.attrs["block"])
    el = op.operands[0].type.element.element_ty
    eb = el.bits // 8
    box, sw = tma_box(op.attrs["block"], eb)
    base = e.get(op.operands[0])
    base = base if base.type == C.I64 else e.b.ptrtoint(base, C.I64)
    dims = [e.get(v) for v in op.operands[1:1 + r]]
    dims = [d if d.type == C.I32 else e.b.trunc(d, C.I32) for d in dims]
    strides = [e.get(v) for v in op.operands[1 + r:]]
    strides = [s if s.type == C.I64 else e.b.sext(s, C.I64) for s in strides]
    sh = stride_shift()
    strides = [e.b.mul(s, ir.Constant(C.I64, eb)) for s in strides]
    if sh:
        strides = [e.b.ashr(s, ir.Constant(C.I64, sh)) for s in strides]
    addr = _program_base(e)
    addr = e.b.add(addr, ir.Constant(C.I64, MAP_BYTES * slot)) if slot else addr
    lead = e.b.zext(_leader(e), C.I32)
    # operands: $0 leader, $1 map (generic), $2 base, then the dims (innermost first), the strides (the dim next
    # to the innermost first), the box dims and the element strides (registers, as ptxas takes them)
    args = [lead, addr, base] + dims[::-1] + strides[::-1] + [e.i32(b) for b in box[::-1]] + [e.i32(1)]
    cons = ["r", "l", "l"] + ["r"] * r + ["l"] * (r - 1) + ["r"] * r + ["r"]
    n_dim, n_str, n_box, one = 3, 3 + r, 3 + 2 * r - 1, 3 + 3 * r - 1
    fill = 1 if op.attrs.get("padding") == "nan" else 0
    swz = {0: 0, 32: 1, 64: 2, 128: 3}[sw]
    lines = ["{ .reg .pred p; .reg .b64 a; .reg .b32 z; setp.ne.b32 p, $0, 0; cvta.to.global.u64 a, $1; mov.b32 z, 0;"]
    lines += [f"@p st.global.v4.b32 [a+{16 * i}], {{z, z, z, z}};" for i in range(MAP_BYTES // 16)]
    t = "tensormap.replace.tile"
    lines += [f"@p {t}.global_address.global.b1024.b64 [a], $2;", f"@p {t}.rank.global.b1024.b32 [a], {r - 1};"]
    lines += [f"@p {t}.box_dim.global.b1024.b32 [a], {i}, ${n_box + i};" for i in range(r)]
    lines += [f"@p {t}.global_dim.global.b1024.b32 [a], {i}, ${n_dim + i};" for i in range(r)]
    lines += [f"@p {t}.global_stride.global.b1024.b64 [a], {i}, ${n_str + i};" for i in range(r - 1)]
    lines += [f"@p {t}.element_stride.global.b1024.b32 [a], {i}, ${one};" for i in range(r)]
    lines += [f"@p {t}.elemtype.global.b1024.b32 [a], {tma_elemtype(el)};",
              f"@p {t}.interleave_layout.global.b1024.b32 [a], 0;",
              f"@p {t}.swizzle_mode.global.b1024.b32 [a], {swz};",
              f"@p {t}.fill_mode.global.b1024.b32 [a], {fill};",
              "@p fence.proxy.tensormap::generic.release.gpu; }"]
    _asm(e, " ".join(lines), ",".join(cons + ["~{memory}"]), args)
    e.barrier()  # every thread past the map's writes (and the release) before its first use
    _asm(e, "{ .reg .pred p; setp.ne.b32 p, $0, 0; @p fence.proxy.tensormap::generic.acquire.gpu [$1], 128; }",
         "r,l,~{memory}", [lead, addr])
    e.put(op.result, [addr])
