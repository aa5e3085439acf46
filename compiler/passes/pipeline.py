"""Software pipelining of the loads of a K loop (num_stages >= 2): the next iteration's tiles load while this
iteration's dot runs.

For a `for` whose body holds a dot, every load whose pointer/mask/other are computed only from the induction
variable, loop-carried values that the body advances without memory reads (pointer increments), and values
from outside the loop is rotated:
  prologue (before the loop):  t0 = load(operands at iv = lb, carried = init, mask & (lb < ub))
  body:                         the pure "address" ops first (they never depend on loads or dots), then
                                t_next = load(operands at iv + step, carried = their yielded values,
                                              mask & (iv + step < ub)),
                                then the rest of the body with the load's uses reading the carried t,
                                yield ..., t_next
So the global-memory latency of iteration k+1 hides behind the shared-memory stores and the (async) MMA of
iteration k; the tiles wait in registers (one extra stage). The interpreter never sees this pass (it runs on
the frontend's IR), and `tile` is printed before it.
"""
from __future__ import annotations

from ..ir import types as T
from ..ir.core import Op, Value
from .dce import EFFECTS

_NOT_MOVABLE = EFFECTS | frozenset(("load", "dot", "reduce", "scan", "convert_layout"))


def pipeline_loads(module, options):
    """Pass: rotate the loads of K loops that contain a dot (see the module docstring); num_stages < 2 or
    loops without a dot are left alone."""
    if getattr(options, "num_stages", 1) < 2:
        return module
    threads = 32 * options.num_warps
    for op in list(module.function.walk()):
        # One dot per iteration (the matmul K loop). Attention's two-dot loop measured slower pipelined on the
        # H200 (its cloned address math costs layout conversions), so it is left alone for now.
        if op.kind == "for" and sum(o.kind == "dot" for o in op.blocks[0].ops) == 1:
            _pipeline(op, threads)
    return module


# Estimated 32-bit registers per thread (live data only) above which the extra stage would spill: ptxas has
# 255, and addresses, masks and the epilogue need the rest (measured: 128x256 fp32 accumulators + prefetch spill).
REG_BUDGET = 150


def _regs(v, threads):
    t = v.type
    if not t.shape or isinstance(t.element, T.pointer_type):
        return 0  # pointer tiles become a base plus offsets after LLVM's strength reduction
    return t.numel * max(4, t.element.bits // 8) // 4 // threads if t.element.bits >= 32 else \
        t.numel * t.element.bits // 32 // threads


def _estimate(loop, loads, threads):
    """Live registers per thread in the pipelined loop: carried values, the prefetched tiles, dot results
    that are not carried (e.g. attention scores), and block values from outside used inside."""
    body = loop.blocks[0]
    y = body.terminator
    yielded = {v.id for v in y.operands}
    n = sum(_regs(a, threads) for a in body.args[1:])
    n += sum(_regs(o.result, threads) for o in loads)
    n += sum(_regs(o.result, threads) for o in body.ops if o.kind == "dot" and o.result.id not in yielded)
    inside = {a.id for a in body.args} | {r.id for o in body.walk() for r in o.results}
    outer = {v.id: v for o in body.walk() for v in o.operands if v.id not in inside}
    n += sum(_regs(v, threads) for v in outer.values())
    return n


def _clean_attrs(attrs):
    return {k: v for k, v in attrs.items() if not k.startswith("_")}


def _pipeline(loop, threads=128):
    body = loop.blocks[0]
    iv, carried = body.args[0], body.args[1:]
    y = body.terminator
    lb, ub, step = loop.operands[:3]
    if not (lb.type == ub.type == step.type == iv.type):
        return
    inside = {a.id for a in body.args}
    for o in body.ops:
        inside.update(r.id for r in o.results)
    indep = {iv.id} | {a.id for a in carried}
    indep_ops = []
    for o in body.ops:
        if o.kind in _NOT_MOVABLE or o.blocks or not o.results:
            continue
        if all(v.id in indep or v.id not in inside for v in o.operands):
            indep_ops.append(o)
            indep.update(r.id for r in o.results)
    ok_yield = {a.id for j, a in enumerate(carried)
                if y.operands[j].id in indep or y.operands[j].id not in inside}

    def slice_args(v, seen):
        """Carried args (ids) the value depends on through independent ops; None if it needs anything else."""
        if v.id in seen:
            return set()
        seen.add(v.id)
        if v.id not in inside or v is iv:
            return set()
        if any(v is a for a in carried):
            return {v.id}
        if v.id not in indep:
            return None
        out = set()
        for x in v.owner.operands:
            s = slice_args(x, seen)
            if s is None:
                return None
            out |= s
        return out

    loads = []
    for o in body.ops:
        if o.kind != "load" or not o.result.type.shape or o.attrs.get("volatile"):
            continue
        deps = set()
        for v in o.operands:
            s = slice_args(v, set())
            if s is None:
                deps = None
                break
            deps |= s
        if deps is not None and deps <= ok_yield:
            loads.append(o)
    if not loads or _estimate(loop, loads, threads) > REG_BUDGET:
        return

    def cloner(subst, out_ops):
        memo = {}

        def clone(v):
            if v.id in subst:
                return subst[v.id]
            if v.id in memo:
                return memo[v.id]
            if v.id not in inside:
                return v
            o = v.owner
            n = Op(o.kind, [clone(x) for x in o.operands], [r.type for r in o.results], _clean_attrs(o.attrs),
                   loc=o.loc)
            out_ops.append(n)
            for r, nr in zip(o.results, n.results):
                memo[r.id] = nr
            return memo[v.id]
        return clone

    def guarded_load(o, clone, cond, out_ops):
        ops = [clone(v) for v in o.operands]
        p = ops[0]
        has_mask = o.attrs.get("has_mask", False)
        shape = tuple(o.result.type.shape)
        bt = T.TensorType(T.int1, shape)
        sp = Op("splat", [cond], [bt], {"shape": shape}, loc=o.loc)
        out_ops.append(sp)
        if has_mask:
            m = Op("and", [ops[1], sp.result], [bt], loc=o.loc)
            out_ops.append(m)
            mask = m.result
        else:
            mask = sp.result
        other = ops[2 if has_mask else 1] if o.attrs.get("has_other") else None
        attrs = _clean_attrs(o.attrs)
        attrs["has_mask"] = True
        n = Op("load", [p, mask] + ([other] if other is not None else []), [o.result.type], attrs, loc=o.loc)
        out_ops.append(n)
        return n.result

    # prologue, before the loop
    parent = loop.block
    pro = []
    c0 = Op("cmp", [lb, ub], [T.TensorType(T.int1)], {"pred": "lt"}, loc=loop.loc)
    pro.append(c0)
    clone0 = cloner({iv.id: lb, **{a.id: loop.operands[3 + j] for j, a in enumerate(carried)}}, pro)
    firsts = [guarded_load(o, clone0, c0.result, pro) for o in loads]
    i = parent.ops.index(loop)
    for n in pro:
        n.block = parent
    parent.ops[i:i] = pro

    # body: independent ops, next-iteration loads, then the rest
    nxt = []
    ivn = Op("add", [iv, step], [iv.type], loc=loop.loc)
    cn = Op("cmp", [ivn.result, ub], [T.TensorType(T.int1)], {"pred": "lt"}, loc=loop.loc)
    nxt += [ivn, cn]
    clone1 = cloner({iv.id: ivn.result, **{a.id: y.operands[j] for j, a in enumerate(carried)}}, nxt)
    nexts = [guarded_load(o, clone1, cn.result, nxt) for o in loads]
    new_args = []
    for o in loads:
        a = Value(o.result.type, body, len(body.args), "pipelined")
        body.args.append(a)
        new_args.append(a)
    repl = {o.result.id: a for o, a in zip(loads, new_args)}
    load_set = set(id(o) for o in loads)
    indep_set = set(id(o) for o in indep_ops)
    rest = [o for o in body.ops if id(o) not in load_set and id(o) not in indep_set]
    body.ops = indep_ops + nxt + rest
    for o in body.ops:
        o.block = body
    _replace_uses(body, repl)
    y.operands.extend(nexts)
    loop.operands.extend(firsts)
    for o in loads:
        r = Value(o.result.type, loop, len(loop.results))
        loop.results.append(r)


def _replace_uses(block, repl):
    for o in block.ops:
        o.operands = [repl.get(v.id, v) for v in o.operands]
        for b in o.blocks:
            _replace_uses(b, repl)
