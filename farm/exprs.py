"""A small, safe expression language for sweep constraints: "BLOCK_N >= N", "M % BLOCK_M == 0 and num_warps <= 8".

Only literals, parameter names, arithmetic, comparisons, `and`/`or`/`not`, `x if c else y` and a few pure
functions are allowed; the expression is parsed with `ast` and walked here, never handed to `eval`.

Bounded in every dimension, so no constraint can hang or exhaust the planner: the text's length and nesting
depth (checked at parse), the size of every operand of `**`, `*`, `<<` (integer results of at most MAX_BITS
bits, strings and tuples of at most MAX_LEN items), the number of nodes evaluated, and a deadline per
evaluation. docs/constraints.md says why this is kept instead of the `simpleeval` package.
"""
from __future__ import annotations

import ast
import math
import operator
import time

_BIN = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
    ast.BitAnd: operator.and_, ast.BitOr: operator.or_, ast.LShift: operator.lshift, ast.RShift: operator.rshift,
}
_CMP = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
    ast.Gt: operator.gt, ast.GtE: operator.ge, ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
}
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_, ast.Invert: operator.invert}


def _is_pow2(x) -> bool:
    return isinstance(x, int) and x > 0 and x & (x - 1) == 0


FUNCTIONS = {
    "min": min, "max": max, "abs": abs, "log2": math.log2, "ceil": math.ceil, "floor": math.floor,
    "cdiv": lambda a, b: -(-a // b), "is_pow2": _is_pow2,
    "itemsize": lambda dtype: {"float64": 8, "float32": 4, "int64": 8, "int32": 4, "float16": 2,
                               "bfloat16": 2, "int16": 2, "int8": 1, "uint8": 1, "bool": 1}[dtype],
}
MAX_TEXT = 1000    # characters in one constraint
MAX_DEPTH = 32     # nesting of the expression tree
MAX_BITS = 1024    # integer results (shapes, byte counts, products of them need far fewer)
MAX_LEN = 10_000   # items in a string or tuple built by `*`
MAX_STEPS = 10_000  # nodes evaluated per evaluation (a parsed tree has fewer; each node costs bounded time)
DEADLINE_S = 1.0   # per evaluation: the last line of defence


class ExprError(ValueError):
    """A constraint that does not parse, uses something not allowed, names an unknown parameter, or is too big."""


def _depth(node, limit: int) -> int:
    best = 0
    stack = [(node, 1)]
    while stack:
        n, d = stack.pop()
        best = max(best, d)
        if best > limit:
            return best
        stack.extend((c, d + 1) for c in ast.iter_child_nodes(n))
    return best


def parse(text: str) -> ast.Expression:
    """Parse and check a constraint; raises ExprError naming the first construct that is not allowed."""
    if not isinstance(text, str):
        raise ExprError(f"a constraint is a string, got {type(text).__name__}")
    if len(text) > MAX_TEXT:
        raise ExprError(f"constraint of {len(text)} characters is too long (limit {MAX_TEXT})")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as e:
        raise ExprError(f"invalid syntax at column {e.offset}: {text!r}") from None
    except (RecursionError, MemoryError):
        raise ExprError(f"constraint nested too deeply (limit {MAX_DEPTH} levels)") from None
    if _depth(tree, MAX_DEPTH) > MAX_DEPTH:
        raise ExprError(f"constraint nested too deeply (limit {MAX_DEPTH} levels): {text[:60]!r}")
    for node in ast.walk(tree):
        ok = isinstance(node, (ast.Expression, ast.BoolOp, ast.BinOp, ast.UnaryOp, ast.Compare, ast.IfExp,
                               ast.Name, ast.Load, ast.Constant, ast.Tuple, ast.List, ast.Call, ast.And, ast.Or,
                               *_BIN, *_CMP, *_UNARY))
        if isinstance(node, ast.Call):
            ok = isinstance(node.func, ast.Name) and node.func.id in FUNCTIONS and not node.keywords
        if isinstance(node, ast.Constant):
            ok = isinstance(node.value, (int, float, str, bool)) or node.value is None
        if not ok:
            what = type(node).__name__ if not isinstance(node, ast.Call) else "call of " + ast.unparse(node.func)
            raise ExprError(f"{what} is not allowed in a constraint: {text!r} "
                            f"(use names, numbers, arithmetic, comparisons, and/or/not, {', '.join(FUNCTIONS)})")
    return tree


def names(tree: ast.Expression) -> set[str]:
    """Parameter names the expression reads (function names excluded)."""
    funcs = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and id(n) not in funcs}


def evaluate(tree: ast.Expression | str, env: dict):
    """Value of a parsed constraint with parameter values from `env`."""
    if isinstance(tree, str):
        tree = parse(tree)
    budget = _Budget(time.monotonic() + DEADLINE_S)
    return _eval(tree.body, env, budget)


class _Budget:
    __slots__ = ("deadline", "steps")

    def __init__(self, deadline: float):
        self.deadline, self.steps = deadline, 0

    def spend(self):
        self.steps += 1
        if self.steps > MAX_STEPS or (self.steps % 64 == 0 and time.monotonic() > self.deadline):
            raise ExprError(f"evaluation took too long (limit {MAX_STEPS} steps, {DEADLINE_S:g} s)")


def _bits(x) -> int:
    return abs(int(x)).bit_length() if isinstance(x, int) else 0


def _check_operands(op, left, right) -> None:
    """Refuse, before computing it, a result too big to be a sweep's arithmetic."""
    if isinstance(op, ast.Pow) and isinstance(right, (int, float)) and not isinstance(right, bool):
        if isinstance(left, int) and isinstance(right, int):
            if right > 0 and max(_bits(left) - 1, 1 if abs(left) > 1 else 0) * right > MAX_BITS:
                raise ExprError(f"{left} ** {right} is too large (results are limited to {MAX_BITS} bits)")
        elif abs(right) > MAX_BITS:
            raise ExprError(f"exponent {right} too large (limit {MAX_BITS})")
    elif isinstance(op, ast.Mult):
        for seq, n in ((left, right), (right, left)):
            if isinstance(seq, (str, tuple)) and isinstance(n, int):
                if len(seq) * max(n, 0) > MAX_LEN:
                    raise ExprError(f"a {type(seq).__name__} of {len(seq)} * {n} items is too long (limit {MAX_LEN})")
                return
        if isinstance(left, int) and isinstance(right, int) and _bits(left) + _bits(right) > MAX_BITS + 1:
            raise ExprError(f"product too large (results are limited to {MAX_BITS} bits)")
    elif isinstance(op, ast.LShift) and isinstance(left, int) and isinstance(right, int):
        if right > 0 and _bits(left) + right > MAX_BITS:
            raise ExprError(f"{left} << {right} is too large (results are limited to {MAX_BITS} bits)")
    elif isinstance(op, ast.Add) and isinstance(left, (str, tuple)) and isinstance(right, (str, tuple)):
        if len(left) + len(right) > MAX_LEN:
            raise ExprError(f"concatenation too long (limit {MAX_LEN})")


def _eval(node, env, budget):
    budget.spend()
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in env:
            raise ExprError(f"unknown name {node.id!r} (known: {', '.join(sorted(env))})")
        return env[node.id]
    if isinstance(node, ast.BoolOp):
        if isinstance(node.op, ast.And):
            result = True
            for v in node.values:
                result = _eval(v, env, budget)
                if not result:
                    return result
            return result
        result = False
        for v in node.values:
            result = _eval(v, env, budget)
            if result:
                return result
        return result
    if isinstance(node, ast.BinOp):
        left, right = _eval(node.left, env, budget), _eval(node.right, env, budget)
        _check_operands(node.op, left, right)
        return _BIN[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp):
        return _UNARY[type(node.op)](_eval(node.operand, env, budget))
    if isinstance(node, ast.Compare):
        left = _eval(node.left, env, budget)
        for op, comp in zip(node.ops, node.comparators):
            right = _eval(comp, env, budget)
            if not _CMP[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.IfExp):
        return _eval(node.body, env, budget) if _eval(node.test, env, budget) else _eval(node.orelse, env, budget)
    if isinstance(node, (ast.Tuple, ast.List)):
        return tuple(_eval(e, env, budget) for e in node.elts)
    if isinstance(node, ast.Call):
        return FUNCTIONS[node.func.id](*[_eval(a, env, budget) for a in node.args])
    raise ExprError(f"{type(node).__name__} is not allowed")  # parse() already refused it
