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


def _unwrap(v):
    return v.value if isinstance(v, constexpr) else v
