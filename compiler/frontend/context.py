"""The code generator active on this thread, so that `tl.*` builtins can reach the IR builder.

Builtins are plain Python functions; they only work while a kernel is being lowered (the frontend sets the
current generator around the walk of the kernel's AST).
"""
from __future__ import annotations

import threading

_state = threading.local()


class SemanticError(Exception):
    """A user mistake found while building IR; the frontend turns it into a CompilationError at the source."""


class StaticAssertError(SemanticError):
    """A failed `tl.static_assert`: a CompileTimeAssertionFailure (a CompilationError) at the source."""


def current():
    gen = getattr(_state, "gen", None)
    if gen is None:
        raise SemanticError("tl functions can only be called inside a @compiler.jit kernel")
    return gen


def push(gen):
    prev = getattr(_state, "gen", None)
    _state.gen = gen
    return prev


def pop(prev):
    _state.gen = prev
