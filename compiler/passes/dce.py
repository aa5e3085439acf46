"""Dead code elimination: remove pure ops whose results nobody uses (walks regions, iterates to a fixed point)."""
from __future__ import annotations

from ..ir import optable
from ..options import ab_switch

# Ops with effects beyond their results (or with regions that may have them) always stay (the op table's
# "effects").
EFFECTS = optable.kinds("effects")


def _uses(block, acc):
    for op in block.ops:
        for v in op.operands:
            acc.add(v.id)
        for b in op.blocks:
            _uses(b, acc)


def _sweep(block, used) -> bool:
    changed = False
    keep = []
    for op in block.ops:
        for b in op.blocks:
            changed |= _sweep(b, used)
        volatile_load = op.kind == "load" and op.attrs.get("volatile")
        if op.kind not in EFFECTS and not volatile_load and op.results and not any(r.id in used for r in op.results):
            changed = True
            continue
        keep.append(op)
    block.ops = keep
    return changed


def dce(module, options):
    """Pass: delete unused side-effect-free ops (reduce/scan combine blocks are kept with their owner)."""
    while True:
        used = set()
        _uses(module.function.body, used)
        if not _sweep(module.function.body, used):
            return module


def _layout_of(v):
    owner = getattr(v, "owner", None)
    lays = getattr(owner, "attrs", {}).get("_layouts") if owner is not None else None
    return lays[v.index] if lays and v.index < len(lays) else None


def _collapse_converts(block, repl: dict):
    """A conversion of a conversion converts the first one's source directly (one trip through shared memory, not
    two: a bf16 vector converted for its cast and again for the broadcast after it), and a conversion back to its
    source's own layout is that source. In op order, so every use sees the replacements of the values before it."""
    for op in block.ops:
        op.operands = [repl.get(v.id, v) for v in op.operands]
        if op.kind == "convert_layout" and op.operands:
            inner = getattr(op.operands[0], "owner", None)
            if getattr(inner, "kind", None) == "convert_layout":
                op.operands[0] = inner.operands[0]
            want = (op.attrs.get("_layouts") or [None])[0]
            if want is not None and _layout_of(op.operands[0]) == want:
                repl[op.result.id] = op.operands[0]
        for b in op.blocks:
            _collapse_converts(b, repl)


def dce_after_layouts(module, options):
    """Pass: dce after the layout pass (which leaves values recomputed in a new layout, and their conversions,
    dead); with the A/B `convert_chain`, chains of conversions collapsed first (_collapse_converts)."""
    if ab_switch("convert_chain"):
        _collapse_converts(module.function.body, {})
    return dce(module, options)
