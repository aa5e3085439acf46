"""`constexpr` (a compile-time constant, `BLOCK: tl.constexpr`) and `_unwrap`: a leaf module of the language, so
that the semantics (compiler/frontend/semantic.py, which defines the value type `tensor`), the builtins
(compiler/language/core.py, which re-exports both) and the jit read them without importing each other."""
from __future__ import annotations


class constexpr:
    """Marks a kernel parameter as a compile-time constant (`BLOCK: tl.constexpr`); also wraps such values."""

    def __init__(self, value=None):
        self.value = value.value if isinstance(value, constexpr) else value

    def __repr__(self):
        return f"constexpr[{self.value!r}]"

    def __index__(self):
        return self.value

    def __bool__(self):
        return bool(self.value)

    def __eq__(self, other):
        return self.value == _unwrap(other)

    def __hash__(self):
        return hash(self.value)


def _plain(v) -> bool:
    return isinstance(v, (bool, int, float, str, tuple, type(None)))


def _binary(op, reflected=False):
    """constexpr <op> constexpr (or a plain Python value) is a constexpr, as in Triton; anything else (a tensor)
    is left to the other operand."""
    def f(self, other):
        o = _unwrap(other)
        if not (isinstance(other, constexpr) or _plain(o)):
            return NotImplemented
        return constexpr(op(o, self.value) if reflected else op(self.value, o))
    return f


def _unary(op):
    return lambda self: constexpr(op(self.value))


def _add_operators():
    import operator as o

    for name, op in (("add", o.add), ("sub", o.sub), ("mul", o.mul), ("truediv", o.truediv),
                     ("floordiv", o.floordiv), ("mod", o.mod), ("pow", o.pow), ("lshift", o.lshift),
                     ("rshift", o.rshift), ("and", o.and_), ("or", o.or_), ("xor", o.xor)):
        setattr(constexpr, f"__{name}__", _binary(op))
        setattr(constexpr, f"__r{name}__", _binary(op, reflected=True))
    for name, op in (("lt", o.lt), ("le", o.le), ("gt", o.gt), ("ge", o.ge), ("ne", o.ne)):
        setattr(constexpr, f"__{name}__", _binary(op))
    for name, op in (("neg", o.neg), ("pos", o.pos), ("abs", abs), ("invert", o.invert)):
        setattr(constexpr, f"__{name}__", _unary(op))


_add_operators()


def _unwrap(v):
    return v.value if isinstance(v, constexpr) else v
