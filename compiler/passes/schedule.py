"""Issue global loads early: each load moves up its block past the layout conversions and pure arithmetic before
it that it does not depend on.

A layout conversion through shared memory is a store, a barrier and a load; ptxas moves no global load across the
barrier. Where a block loads a tile, converts it, combines it, then loads the next tile (a critical section that
reads two partial sums, an epilogue that reads a bias and a residual), each load waited for the conversion of the
one before: their memory latencies added up instead of overlapping. Moved up, every load of such a run is in
flight before the first barrier.

A load never crosses an op with a memory effect (store, atomic, async copy or wait, print, assert), a
`debug_barrier` or a region (loop, if); the pure ops that compute its operands (address arithmetic the layout
pass recomputed beside it) move up with it, in their order, and a load whose operands come from a conversion
stays. Volatile loads stay where they are. Everything else keeps its order.
"""
from __future__ import annotations

from ..ir.optable import kinds

# ops a load may move above: the op table's pure ops outside regions (arithmetic, math, shape ops), and layout
# conversions (shared memory only, never global); not dot, whose lowering is worth keeping where it is
_CROSSABLE = (kinds("pure", without=("region",)) - {"dot"}) | {"convert_layout"}


def _schedule_block(block):
    ops = block.ops
    i = 0
    while i < len(ops):
        op = ops[i]
        if op.kind == "load" and not op.attrs.get("volatile") and not op.blocks:
            j = i
            while j > 0 and ops[j - 1].kind in _CROSSABLE and not ops[j - 1].blocks:
                j -= 1
            # the ops of the window [j, i) the load depends on (its address arithmetic) move up with it
            deps, need = [], {v.id for v in op.operands}
            for k in range(i - 1, j - 1, -1):
                o = ops[k]
                if any(r.id in need for r in o.results):
                    deps.append(o)
                    need |= {v.id for v in o.operands}
            deps.reverse()
            dep_ids = {id(o) for o in deps}
            rest = [o for o in ops[j:i] if id(o) not in dep_ids]
            # only worth it past a layout conversion (a barrier) that the load does not depend on
            if any(o.kind == "convert_layout" for o in rest) and not any(o.kind == "convert_layout" for o in deps):
                ops[j:i + 1] = deps + [op] + rest
        i += 1
    for op in ops:
        for b in op.blocks:
            _schedule_block(b)


def schedule_loads(module, options):
    """Pass: move global loads up past the layout conversions before them (see the module's docstring)."""
    _schedule_block(module.function.body)
    return module

