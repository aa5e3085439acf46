"""canonicalize: fold splatted constants, share identical pure ops (CSE), drop unused pure ops (DCE).

Why first in the pipeline: the frontend emits one op per source expression, so the same `offs < N` or
`tl.arange(0, BLOCK)` written twice becomes two ops; sharing them here gives later analyses (axis info,
layouts) fewer values to reason about and codegen fewer registers to keep.
"""
from __future__ import annotations

from ..ir import optable
from ..ir.core import Block, Module, Op

# Ops without side effects whose result depends only on operands and attributes (the op table's "pure").
PURE = optable.kinds("pure", without=("region", "target"))
# Pure ops with nested blocks can be dropped when unused but are not shared.
DROPPABLE = optable.kinds("pure", without=("target",))


def _attr_key(attrs: dict):
    items = []
    for k in sorted(attrs):
        if k.startswith("_"):
            continue
        v = attrs[k]
        if isinstance(v, float) and v != v:
            v = ("nan",)
        items.append((k, v if not isinstance(v, list) else tuple(v)))
    return tuple(items)


def _replace_uses(block: Block, mapping: dict) -> None:
    for op in block.ops:
        if any(o.id in mapping for o in op.operands):
            op.operands = [mapping.get(o.id, o) for o in op.operands]
        for b in op.blocks:
            _replace_uses(b, mapping)


def _fold_splat_const(block: Block) -> None:
    """splat(const c) -> const c of the block type; broadcast(const) likewise."""
    for op in block.ops:
        for b in op.blocks:
            _fold_splat_const(b)
        if op.kind in ("splat", "broadcast") and op.operands[0].owner is not None and \
                isinstance(op.operands[0].owner, Op) and op.operands[0].owner.kind == "const":
            c = op.operands[0].owner
            op.kind = "const"
            op.attrs = {"value": c.attrs["value"]}
            op.operands = []


def _pure_key(op):
    """The key under which _cse shares op (None: not shared): kind, operands, attributes, result type."""
    if op.kind in PURE and not op.blocks and len(op.results) == 1:
        return (op.kind, tuple(o.id for o in op.operands), _attr_key(op.attrs), op.results[0].type)
    return None


def _cse(block: Block, table: dict, mapping: dict) -> None:
    """Share ops whose keys (_pure_key) agree: later ones read the first one's result (marked _dead for the DCE)."""
    table = dict(table)  # values defined in enclosing blocks stay visible; siblings do not leak out
    for op in block.ops:
        if any(o.id in mapping for o in op.operands):
            op.operands = [mapping.get(o.id, o) for o in op.operands]
        for b in op.blocks:
            _cse(b, table, mapping)
        k = _pure_key(op)
        if k is not None:
            prev = table.get(k)
            if prev is not None:
                mapping[op.results[0].id] = prev
                op.attrs["_dead"] = True
            else:
                table[k] = op.results[0]


def _share_small_converts(block: Block, table: dict, mapping: dict, nw: int) -> None:
    """(A/B `convert_cse_small`) Conversions of one value to one layout, each of at most 4 elements a thread, made
    once: the layout pass converts a value once per user, so two users of a small vector (an index vector, RoPE's
    cos / sin row) in one layout cost two shared-memory round trips and their barriers. Scoped like _cse (an enclosing
    block serves the blocks inside it; siblings do not share). Larger tiles are left alone: sharing one held the
    converted tile across all its users where each had converted from the live source just before it (convert_cse,
    docs/EXPERIMENTS.md: the complex split/join tiles 164 -> 186 registers, 1.148 of the time)."""
    from .layouts import linear

    table = dict(table)
    for op in block.ops:
        if any(o.id in mapping for o in op.operands):
            op.operands = [mapping.get(o.id, o) for o in op.operands]
        for b in op.blocks:
            _share_small_converts(b, table, mapping, nw)
        if op.kind != "convert_layout" or not op.results[0].type.shape:
            continue
        lay = op.attrs.get("_layouts", [None])[0]
        if lay is None or linear(lay, tuple(op.results[0].type.shape), nw).num_regs > 4:
            continue
        key = (op.operands[0].id, repr(lay))
        prev = table.get(key)
        if prev is not None:
            mapping[op.results[0].id] = prev
        else:
            table[key] = op.results[0]


def share_small_converts(module: Module, options=None) -> Module:
    """(A/B `convert_cse_small`) _share_small_converts over the kernel body; the DCE after layouts drops the copies."""
    from ..options import ab_switch

    if ab_switch("convert_cse_small"):
        mapping: dict = {}
        _share_small_converts(module.function.body, {}, mapping, options.num_warps if options else 4)
        if mapping:
            _replace_uses(module.function.body, mapping)
    return module


def _uses(block: Block, counts: dict) -> None:
    for op in block.ops:
        for o in op.operands:
            counts[o.id] = counts.get(o.id, 0) + 1
        for b in op.blocks:
            _uses(b, counts)


def _dce(block: Block) -> bool:
    counts: dict = {}
    _uses(block, counts)
    changed = False

    def sweep(b: Block):
        nonlocal changed
        keep = []
        for op in b.ops:
            for nb in op.blocks:
                sweep(nb)
            dead = op.attrs.get("_dead") or (
                op.kind in DROPPABLE and op.results and all(counts.get(r.id, 0) == 0 for r in op.results))
            if dead:
                changed = True
                for o in op.operands:
                    counts[o.id] = counts.get(o.id, 0) - 1
                continue
            keep.append(op)
        b.ops = keep

    sweep(block)
    return changed


def _is_zero(v) -> bool:
    src = v.owner
    return isinstance(src, Op) and src.kind == "const" and src.attrs.get("value") == 0


def _fold_dot_add(block: Block, counts: dict, mapping: dict, fp_fusion: bool, sm: int = 90) -> None:
    """add(x, dot(a, b, 0)) -> dot(a, b, x) when the dot's result has no other use: `acc += tl.dot(a, b)` then
    accumulates in the matrix unit's registers like `acc = tl.dot(a, b, acc)` instead of a separate tile of
    adds (and a second accumulator live across the dot). For floats only where a*b+c may fuse
    (enable_fp_fusion): the sum is rounded once fewer, as with FMA contraction; and not for fp8 dots whose
    tensor-core sums are imprecise (_precise_accumulation): there the add is what keeps x in float32."""
    where = {}
    for i, op in enumerate(block.ops):
        for r in op.results:
            where[r.id] = i
        for b in op.blocks:
            _fold_dot_add(b, counts, mapping, fp_fusion, sm)
        if op.kind != "add" or len(op.operands) != 2:
            continue
        for j in (0, 1):
            d, x = op.operands[j].owner, op.operands[1 - j]
            if not (isinstance(d, Op) and d.kind == "dot" and d.block is block and counts.get(d.result.id) == 1
                    and _is_zero(d.operands[2]) and d.result.type == op.result.type == x.type):
                continue
            if d.result.type.element.kind == "float" and not (fp_fusion and _precise_accumulation(d, sm)):
                continue
            if where.get(x.id, -1) >= where.get(d.result.id, -1) and not _hoist_before(block, x, d, where):
                continue  # x must exist where the dot runs
            counts[d.operands[2].id] = counts.get(d.operands[2].id, 0) - 1
            d.operands[2] = x
            mapping[op.result.id] = d.result
            op.attrs["_dead"] = True
            break


def _precise_accumulation(d: Op, sm: int) -> bool:
    """The dot accumulates into its accumulator at float32 precision. Not so an fp8 dot on sm_90's fp8 wgmma with a
    `max_num_imprecise_acc` above 0 (the default there, as in Triton, is every K element): its partial sums keep
    fewer mantissa bits. Triton keeps `acc += tl.dot(a, b)` as a dot from zero and a float32 add in that case, so
    each K tile's product is added exactly; folding the add would give a different (less precise) result."""
    if not (_fp8_operand(d.operands[0]) and _fp8_operand(d.operands[1])):
        return True
    limit = d.attrs.get("max_num_imprecise_acc")
    if limit is None:
        return sm != 90
    return limit == 0


def _fp8_operand(v) -> bool:
    """An fp8 dot operand: fp8 itself, or the frontend's exact conversion of one (passes/fp8_dot.py)."""
    for t in (v.type.element, getattr(v.owner, "kind", None) == "cast" and v.owner.operands[0].type.element):
        if t and t.kind == "float" and t.bits == 8:
            return True
    return False


def _hoist_before(block: Block, x, d: Op, where: dict, limit: int = 8) -> bool:
    """Move the pure ops that compute x from values defined before dot d to just before d (`tl.dot(a, b) + c`
    whose `c` the frontend widens after the dot: the cast of a tile loaded or built earlier); False, moving
    nothing, when x needs anything computed after the dot or more than `limit` ops."""
    chain, seen, todo = [], set(), [x]
    di = where[d.result.id]
    while todo:
        v = todo.pop()
        o = v.owner
        if not isinstance(o, Op) or o.block is not block or where.get(v.id, -1) < di or id(o) in seen:
            continue  # a block argument, defined outside this block or before the dot, or already taken
        if o.kind not in PURE or o.blocks:
            return False
        seen.add(id(o))
        chain.append(o)
        if len(chain) > limit:
            return False
        todo.extend(o.operands)
    # The ops move within the block's prefix before the add being folded, so the caller's walk of the block (at
    # that add) stays where it is.
    chain.sort(key=lambda o: where[o.results[0].id])
    for o in chain:
        block.ops.remove(o)
    at = block.ops.index(d)
    block.ops[at:at] = chain
    for i, op in enumerate(block.ops):
        for r in op.results:
            where[r.id] = i
    return True


def _invariant_carries(block: Block, mapping: dict) -> None:
    """A value a `for` loop carries but yields unchanged is its initial value throughout (and after) the loop:
    uses of the block argument and of the loop's result read the init directly. The frontend carries every
    field of a block pointer (base, shape, strides) through a loop that only advances its offsets; read through
    the block argument, a stride specialized to 1 was an unknown value to the axis analysis, and the loads lost
    their contiguity (no vector accesses, no copy ring)."""
    for op in block.ops:
        for b in op.blocks:
            _invariant_carries(b, mapping)
        if op.kind != "for":
            continue
        body = op.blocks[0]
        y = body.terminator
        for j, init in enumerate(op.operands[3:]):
            arg = body.args[j + 1]
            # what the body yields, seen through inner loops that carry it unchanged (mapped above): a block
            # pointer advanced only in an inner loop keeps its base, shape and strides in the outer one too
            yv = mapping.get(y.operands[j].id, y.operands[j]) if y is not None else None
            if y is not None and (yv is arg or yv is mapping.get(init.id, init)):
                mapping[arg.id] = mapping.get(init.id, init)
                mapping[op.results[j].id] = mapping.get(init.id, init)


def canonicalize(module: Module, options=None) -> Module:
    """Fold, CSE and DCE the kernel body in place; returns the module."""
    body = module.function.body
    _fold_splat_const(body)
    mapping: dict = {}
    _invariant_carries(body, mapping)
    for k in list(mapping):  # an inner loop's argument maps to the outer loop's argument, which maps to its init
        v = mapping[k]
        while v.id in mapping and mapping[v.id] is not v:
            v = mapping[v.id]
        mapping[k] = v
    if mapping:
        _replace_uses(body, mapping)
        mapping = {}
    _cse(body, {}, mapping)
    _replace_uses(body, mapping)
    while _dce(body):
        pass
    counts: dict = {}
    _uses(body, counts)
    mapping = {}
    _fold_dot_add(body, counts, mapping, getattr(options, "enable_fp_fusion", True), getattr(options, "sm", 90))
    if mapping:
        _replace_uses(body, mapping)
        while _dce(body):
            pass
    return module
