"""The IR verifier: structural rules every pass must keep (`verify(fn)` raises IRVerifyError listing each broken
rule with the op that breaks it).

- Every operand is defined before its use: a function argument, an argument of an enclosing block, or the result
  of an earlier op of the same or an enclosing block (SSA dominance in structured control flow).
- Ops and blocks link back (op.block is the block holding the op, block.parent the op holding the block).
- A terminator ends its block and nothing follows it; the kernel body ends with `return`. (Which op kinds exist
  is not checked here: the op table, compiler/ir/optable.py, lists them.)
- Region ops: `for` has (lb, ub, step, init...) operands, one body block whose arguments are the induction
  variable (lb's type) and the carried values, and yields as many values as it has results, each of the result's
  type; the init values have the results' types. `if` has a condition and two blocks yielding the results'
  types; `while` has a `before` block ending in `condition` and an `after` block ending in `yield`; `reduce` and
  `scan` have one block with two arguments per operand that yields one value per result.
- `inline_asm` / `inline_asm_effects` have at least one result, operands and results all of one shape, and a
  `pack` >= 1.
- Ops whose result rule in the op table (compiler/ir/optable.py) is "same" (binary and unary arithmetic, the math
  ops, fma, convert_layout) take their number of operands, each of the result's type; `cmp` and `select` agree
  in shape.
"""
from __future__ import annotations

from .core import Block, Function, Module
from .ops import TERMINATORS
from .optable import OPS
from . import types as T

SAME = frozenset(k for k, d in OPS.items() if d.result == "same" and d.operands is not None)

class IRVerifyError(ValueError):
    """The IR breaks a structural rule (a compiler bug: a pass or a builder made it)."""


def verify(fn, where: str = "") -> None:
    """Check `fn` (a Function or Module); raise IRVerifyError naming `where` (e.g. "after pass dce") and every
    problem found, each with its op."""
    f = fn.function if isinstance(fn, Module) else fn
    problems = []
    _Verifier(problems).function(f)
    if problems:
        head = f"IR of @{f.name} is invalid" + (f" {where}" if where else "")
        shown = problems[:20] + ([f"... and {len(problems) - 20} more"] if len(problems) > 20 else [])
        raise IRVerifyError(head + ":\n  " + "\n  ".join(shown))


def _ty(v):
    return getattr(v, "type", None)


class _Verifier:
    def __init__(self, problems):
        self.problems = problems
        self.names: dict[int, str] = {}

    def name(self, op) -> str:
        n = self.names.get(id(op))
        if n is None:
            n = self.names[id(op)] = f"op #{len(self.names)} '{op.kind}'"
        loc = getattr(op, "loc", None)
        return f"{n}" + (f" ({loc})" if loc is not None and getattr(loc, "line", 0) else "")

    def bad(self, op, msg):
        self.problems.append(f"{self.name(op)}: {msg}")

    def function(self, f: Function):
        visible = {v.id for v in f.args}
        self.block(f.body, visible, None)
        last = f.body.terminator
        if last is None or last.kind != "return":
            self.problems.append("the kernel body does not end with 'return'")

    def block(self, b: Block, visible: set, parent):
        if b.parent is not parent and parent is not None:
            self.problems.append(f"a block of {self.name(parent)} does not name it as its parent")
        visible = set(visible) | {a.id for a in b.args}
        for i, op in enumerate(b.ops):
            if op.block is not b:
                self.bad(op, "op.block is not the block that holds it")
            if op.kind in TERMINATORS and i != len(b.ops) - 1:
                self.bad(op, "a terminator in the middle of a block")
            for j, v in enumerate(op.operands):
                if getattr(v, "id", None) not in visible:
                    owner = getattr(v, "owner", None)
                    what = f"the result of '{owner.kind}'" if hasattr(owner, "kind") else "a block argument"
                    self.bad(op, f"operand {j} ({what}) is not defined before this use")
            for blk in op.blocks:
                self.block(blk, visible, op)
            self.rules(op)
            visible |= {r.id for r in op.results}

    # ---- per-kind rules ----------------------------------------------------------------------------------------
    def yields(self, op, blk, term="yield"):
        last = blk.terminator
        if last is None or last.kind != term:
            self.bad(op, f"its block does not end with '{term}'")
            return None
        return last.operands[1:] if term == "condition" else last.operands

    def same_types(self, op, what, got, want):
        if len(got) != len(want):
            self.bad(op, f"{what}: {len(got)} values for {len(want)}")
            return
        for k, (g, w) in enumerate(zip(got, want)):
            if g != w:
                self.bad(op, f"{what}: value {k} is {g}, expected {w}")

    def rules(self, op):
        k = op.kind
        res = [r.type for r in op.results]
        if k == "for":
            if len(op.operands) < 3 or len(op.blocks) != 1:
                self.bad(op, "'for' takes (lb, ub, step, init...) and one body block")
                return
            body = op.blocks[0]
            self.same_types(op, "init values against results", [_ty(v) for v in op.operands[3:]], res)
            if not body.args or body.args[0].type != _ty(op.operands[0]):
                self.bad(op, "the body's first argument (the induction variable) does not have lb's type")
            self.same_types(op, "carried block arguments against results", [a.type for a in body.args[1:]], res)
            ys = self.yields(op, body)
            if ys is not None:
                self.same_types(op, "yielded values against results", [_ty(v) for v in ys], res)
        elif k == "if":
            if len(op.operands) != 1 or len(op.blocks) != 2:
                self.bad(op, "'if' takes a condition and two blocks (then, else)")
                return
            for blk in op.blocks:
                ys = self.yields(op, blk)
                if ys is not None:
                    self.same_types(op, "yielded values against results", [_ty(v) for v in ys], res)
        elif k == "while":
            if len(op.blocks) != 2:
                self.bad(op, "'while' has two blocks (before, after)")
                return
            before, after = op.blocks
            self.same_types(op, "before-block arguments against init values", [a.type for a in before.args],
                            [_ty(v) for v in op.operands])
            cond = self.yields(op, before, "condition")
            if cond is not None:
                self.same_types(op, "condition values against results", [_ty(v) for v in cond], res)
            self.same_types(op, "after-block arguments against results", [a.type for a in after.args], res)
            ys = self.yields(op, after)
            if ys is not None:
                self.same_types(op, "after-block yield against init values", [_ty(v) for v in ys],
                                [_ty(v) for v in op.operands])
        elif k in ("reduce", "scan"):
            if len(op.blocks) != 1 or len(op.blocks[0].args) != 2 * len(op.operands):
                self.bad(op, f"'{k}' has one combine block with two arguments per operand")
                return
            ys = self.yields(op, op.blocks[0])
            if ys is not None and len(ys) != len(res):
                self.bad(op, f"the combine block yields {len(ys)} values for {len(res)} results")
        elif k in SAME:  # the op table's result rule "same": n operands, one result, all of one type
            n = OPS[k].operands
            if len(op.operands) != n or len(res) != 1:
                self.bad(op, f"'{k}' takes {n} operand{'s' if n != 1 else ''} and has one result")
            elif any(_ty(v) != res[0] for v in op.operands):
                self.bad(op, f"operands {', '.join(str(_ty(v)) for v in op.operands)} for a result {res[0]}")
        elif k == "cmp":
            if len(op.operands) != 2 or len(res) != 1:
                self.bad(op, "'cmp' takes two operands and has one result")
            elif (_ty(op.operands[0]) != _ty(op.operands[1]) or res[0].shape != _ty(op.operands[0]).shape
                  or res[0].element != T.int1):
                self.bad(op, "operands of one type and an i1 result of their shape expected")
        elif k == "select":
            if len(op.operands) != 3 or len(res) != 1:
                self.bad(op, "'select' takes (c, a, b) and has one result")
            elif _ty(op.operands[1]) != res[0] or _ty(op.operands[2]) != res[0] or \
                    _ty(op.operands[0]).shape != res[0].shape:
                self.bad(op, "a and b of the result's type and c of its shape expected")
        elif k in ("inline_asm", "inline_asm_effects"):
            if not res or any(_ty(v).shape != res[0].shape for v in op.operands) or \
                    any(t.shape != res[0].shape for t in res):
                self.bad(op, f"'{k}' has at least one result, operands and results of one shape")
            elif not isinstance(op.attrs.get("pack"), int) or op.attrs["pack"] < 1:
                self.bad(op, f"'{k}' needs a pack >= 1")
        elif k in TERMINATORS and op.results:
            self.bad(op, "a terminator has no results")


__all__ = ["IRVerifyError", "verify"]
