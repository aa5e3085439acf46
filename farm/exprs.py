"""A small, safe expression language for sweep constraints: "BLOCK_N >= N", "M % BLOCK_M == 0 and num_warps <= 8".

Only literals, parameter names, arithmetic, comparisons, `and`/`or`/`not`, `x if c else y` and a few pure
functions are allowed; the expression is parsed with `ast` and walked here, never handed to `eval`.
"""
from __future__ import annotations

import ast
import math
import operator

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
_MAX_POW = 4096  # keeps "2 ** 10 ** 10" from eating the machine


class ExprError(ValueError):
    """A constraint that does not parse, uses something not allowed, or names an unknown parameter."""


def parse(text: str) -> ast.Expression:
    """Parse and check a constraint; raises ExprError naming the first construct that is not allowed."""
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as e:
        raise ExprError(f"invalid syntax at column {e.offset}: {text!r}") from None
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
    return _eval(tree.body, env)


def _eval(node, env):
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
                result = _eval(v, env)
                if not result:
                    return result
            return result
        result = False
        for v in node.values:
            result = _eval(v, env)
            if result:
                return result
        return result
    if isinstance(node, ast.BinOp):
        left, right = _eval(node.left, env), _eval(node.right, env)
        if isinstance(node.op, ast.Pow) and isinstance(right, (int, float)) and abs(right) > _MAX_POW:
            raise ExprError(f"exponent {right} too large")
        return _BIN[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp):
        return _UNARY[type(node.op)](_eval(node.operand, env))
    if isinstance(node, ast.Compare):
        left = _eval(node.left, env)
        for op, comp in zip(node.ops, node.comparators):
            right = _eval(comp, env)
            if not _CMP[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.IfExp):
        return _eval(node.body, env) if _eval(node.test, env) else _eval(node.orelse, env)
    if isinstance(node, (ast.Tuple, ast.List)):
        return tuple(_eval(e, env) for e in node.elts)
    if isinstance(node, ast.Call):
        return FUNCTIONS[node.func.id](*[_eval(a, env) for a in node.args])
    raise ExprError(f"{type(node).__name__} is not allowed")  # parse() already refused it
