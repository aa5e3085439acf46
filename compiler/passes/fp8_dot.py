"""fp8 dots on native wgmma (sm_90a).

The frontend writes `tl.dot` of fp8 operands as a dot of their exact float16 conversions (the interpreter's
definition; it also runs on mma.sync anywhere). Where the dot runs on wgmma, the conversions are dropped and the
dot takes the fp8 values themselves: the code generator then stores both operands K-major into swizzled shared
memory (wgmma reads 8-bit operands only K-major: B is transposed on the way) and issues
`wgmma.mma_async ... k32.f32.{e4m3,e5m2}.{e4m3,e5m2}`, half the shared-memory bytes and twice the K per
instruction of the fp16 path, with the same float32 accumulation of exact products.

Applies to 2-D dots with float32 accumulators whose operands are both `cast` fp8 -> float16, K a multiple of 32,
on shapes wgmma takes (passes/layouts.py wgmma_applies); others keep the float16 path.
"""
from __future__ import annotations

from .dce import dce
from .layouts import wgmma_applies
from ..options import has_wgmma


def _fp8_source(v):
    o = v.owner
    if getattr(o, "kind", None) != "cast" or v.type.element.name != "float16":
        return None
    src = o.operands[0]
    return src if src.type.element.name in ("float8e4nv", "float8e5") else None  # wgmma's fp8 formats


def fp8_dots(module, options):
    """Pass: dot(cast(a8 -> f16), cast(b8 -> f16), acc) -> dot(a8, b8, acc) where wgmma applies (see above)."""
    if getattr(options, "debug_no_wgmma", False) or not has_wgmma(getattr(options, "arch", "")):
        return module
    changed = False
    for op in list(module.function.walk()):
        if op.kind != "dot" or len(op.result.type.shape) != 2 or op.result.type.element.name != "float32":
            continue
        a8, b8 = _fp8_source(op.operands[0]), _fp8_source(op.operands[1])
        if a8 is None or b8 is None or op.operands[0].type.shape[-1] % 32:
            continue
        wide = op.operands[0], op.operands[1]
        op.operands[0], op.operands[1] = a8, b8  # wgmma takes these shapes for 8-bit operands (K-major both)?
        if wgmma_applies(op, options, options.num_warps) is None:
            op.operands[0], op.operands[1] = wide
            continue
        changed = True
    return dce(module, options) if changed else module  # the conversions are dead now
