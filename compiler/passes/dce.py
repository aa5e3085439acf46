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


def _fold_convert_chains(block) -> None:
    """(A/B `convert_chain`) A conversion of a conversion converts the first one's source instead (a layout change
    is the identity on values): one trip through shared memory where there were two (a column bias loaded in a 1-D
    layout, converted to a slice of the blocked layout, then to a slice of the MMA layout). The first conversion is
    then left for dce when nothing else reads it."""
    for op in block.ops:
        for b in op.blocks:
            _fold_convert_chains(b)
        if op.kind != "convert_layout":
            continue
        src = getattr(op.operands[0], "owner", None)
        while getattr(src, "kind", None) == "convert_layout":
            op.operands[0] = src.operands[0]
            src = getattr(op.operands[0], "owner", None)


def dce_after_layouts(module, options):
    """Pass: dce after the layout pass (which leaves values recomputed in a new layout, and their conversions,
    dead); under `convert_chain`, conversions of conversions folded first."""
    from ..options import ab_switch

    if ab_switch("convert_chain"):
        _fold_convert_chains(module.function.body)
    return dce(module, options)
