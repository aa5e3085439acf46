"""wgmma_loops: which wgmma dots of a K loop may leave their tensor-core work in flight, and which loops must wait
for it at their exit. Code generation reads the answers (it writes nothing back into the IR).

Attached to the IR (private attrs, not printed):
- dot `_acc_carried`: True when its accumulator is a value the enclosing `for` carries, used only by this dot, and
  the dot's result only goes back through the loop's yield at the same position (the K loop of a matmul): its
  wgmma group may stay in flight (wait_group 1) while the next iteration loads its tiles.
- dot `_defer_to`: on a later wgmma dot of a loop body whose result only goes back through the yield (attention's
  P.V), the body index of the loop's first dot, which waits for this one's group (wait_group 0) before any use of
  the carried value, one iteration later. Measured on the H200 (2026-11-29): attention D=128 419.5 -> 440.2
  TFLOP/s, D=64 unchanged.
- for `_wgmma_in_flight`: True when a wgmma dot of its body has either of the above, so the loop's exit waits.

Why here, last: it reads the layouts assign_layouts chose (a wgmma dot is one whose result has the MMA v3 layout),
and nothing after it changes the IR.
"""
from __future__ import annotations

from ..ir.core import uses
from .layouts import MmaLayout, linear


def register_a_applies(a_ll, lay, M, K, num_warps) -> bool:
    """`a` can feed wgmma from registers: it is laid out like a wgmma accumulator of shape [M, K] with this dot's
    warps (one warpgroup column, K at most 256), whose fragments are exactly wgmma's register A fragments."""
    wm, wn = lay.wpc
    if wn != 1 or K > 256 or K % 16:
        return False
    return a_ll == linear(MmaLayout(3, (wm, wn), K), (M, K), num_warps)


def is_wgmma(op) -> bool:
    lay = op.attrs.get("_layouts", (None,))[0]
    return isinstance(lay, MmaLayout) and lay.version == 3


def acc_carried_loop(op):
    """The enclosing `for` when dot op's accumulator is a loop-carried value used only by this dot and the dot's
    result only goes back through the loop's yield at the same position; else None."""
    blk = op.block
    loop = getattr(blk, "parent", None)
    if loop is None or loop.kind != "for" or blk is not loop.blocks[0]:
        return None
    acc = op.operands[2]
    if acc.owner is not blk or acc not in blk.args:
        return None
    j = blk.args.index(acc) - 1
    y = blk.terminator
    if uses(blk, acc) != 1 or uses(blk, op.result) != 1 or j < 0 or y.operands[j] is not op.result:
        return None
    return loop


def _inside(blk, v) -> bool:
    """v is defined in block blk or in a region nested in it."""
    owner = v.owner
    b = owner if not hasattr(owner, "kind") else getattr(owner, "block", None)
    while b is not None:
        if b is blk:
            return True
        parent = getattr(b, "parent", None)
        b = getattr(parent, "block", None) if parent is not None else None
    return False


def partial_accumulation(op) -> bool:
    """An fp8 dot (8-bit operands, so on wgmma) with a `max_num_imprecise_acc`: codegen/dot.py _wgmma_issue adds
    its tensor-core partial sums to the accumulator in float32, so nothing of it stays in flight."""
    return op.attrs.get("max_num_imprecise_acc") is not None and op.operands[0].type.element.bits == 8


def defer_index(op, num_warps):
    """The body index of the first dot of op's loop when wgmma dot op -- a later dot of the same loop body whose
    result only goes back through the loop's yield -- may leave its wgmma in flight into the next iteration;
    None otherwise."""
    blk = op.block
    loop = getattr(blk, "parent", None)
    if loop is None or loop.kind != "for" or blk is not loop.blocks[0]:
        return None
    y = blk.terminator
    if uses(blk, op.result) != 1 or op.result not in y.operands:
        return None
    dots = [i for i, o in enumerate(blk.ops) if o.kind == "dot"]
    if len(dots) < 2 or blk.ops[dots[0]] is op or acc_carried_loop(blk.ops[dots[0]]) is not None:
        return None
    arg = blk.args[1 + y.operands.index(op.result)]
    for o in blk.ops[:dots[0] + 1]:  # the carried value is read only after the first dot
        if any(x is arg for x in o.operands) or any(uses(b, arg) for b in o.blocks):
            return None
    # Its operands must not be in per-iteration scratch shared memory (the next iteration could overwrite it while
    # the wgmma reads): ring slots, operands from outside the loop (stored once), or `a` in registers.
    lay = op.attrs["_layouts"][0]
    M, N = op.result.type.shape
    K = op.operands[0].type.shape[-1]
    # 8-bit and tf32 operands: K-major only, a never from registers
    eight = op.operands[0].type.element.bits in (8, 32)
    for i, v in enumerate(op.operands[:2]):
        owner = v.owner
        if getattr(owner, "kind", None) == "smem_view":
            if eight and i == 1:
                return None  # b read from its slot as loaded (N-major) is copied transposed into scratch
            continue
        if not _inside(blk, v):
            continue
        if eight:
            return None
        lays = getattr(owner, "attrs", {}).get("_layouts") if i == 0 else None
        la = lays[v.index] if lays else None
        if la is None or not register_a_applies(linear(la, (M, K), num_warps), lay, M, K, num_warps):
            return None
    return dots[0]


def wgmma_loops(module, options):
    """Pass: mark the wgmma dots that stay in flight across iterations and the loops that wait for them."""
    for op in module.function.walk():
        if op.kind != "dot":
            continue
        if partial_accumulation(op):
            continue  # its partial sums are read (added) as soon as they are made: waited where it is
        loop = acc_carried_loop(op)
        if loop is not None:
            op.attrs["_acc_carried"] = True
        if not is_wgmma(op):
            continue
        j = defer_index(op, options.num_warps)
        if j is not None:
            op.attrs["_defer_to"] = j
        if loop is not None or j is not None:
            op.block.parent.attrs["_wgmma_in_flight"] = True
    return module
