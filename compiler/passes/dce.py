"""Dead code elimination: remove pure ops whose results nobody uses (walks regions, iterates to a fixed point)."""
from __future__ import annotations

from ..ir import optable

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


def dce_after_layouts(module, options):
    """Pass: dce after the layout pass (which leaves values recomputed in a new layout, and their conversions,
    dead)."""
    return dce(module, options)
