"""Errors that point at the user's kernel source.

`CompilationError` is raised for every user mistake found while compiling: its message is
"file:line:col: message", then the source line and a caret under the column. It is picklable (it crosses Ray
process boundaries) and carries no traceback into compiler internals (it is raised `from None`).
`KernelRuntimeError` is a fault found while running a kernel in the interpreter (out-of-bounds access, failed
device_assert), located the same way.
"""
from __future__ import annotations

import linecache


def _source_line(file: str, line: int) -> str:
    if not file or line <= 0:
        return ""
    return linecache.getline(file, line).rstrip("\n")


def format_location(message: str, loc) -> str:
    """'file:line:col: message' plus the source line and a caret under the column, when the source is known."""
    if loc is None:
        return message
    if isinstance(loc, str):
        return f"{loc}: {message}"
    if getattr(loc, "line", 0) <= 0:
        return message
    text = f"{loc.file}:{loc.line}:{loc.col + 1}: {message}"
    src = _source_line(loc.file, loc.line)
    if src:
        text += f"\n    {src}\n    {' ' * loc.col}^"
    return text


class _Located:
    """Shared by the user-facing errors: `.loc` is where, `.raw_message` (`.message`) is what; str() shows both
    with the source line and a caret; pickles intact (errors cross Ray process boundaries)."""

    def __init__(self, message: str, loc=None):
        self.raw_message = self.message = message
        self.loc = loc
        super().__init__(format_location(message, loc))

    def __reduce__(self):
        return (_rebuild, (type(self), self.raw_message, self.loc, str(self)))


class CompilerError(Exception):
    """The base of the errors this compiler raises for a kernel (`except compiler.errors.CompilerError` catches
    both below; the Triton compatibility layer's `triton.TritonError` is this class)."""


class CompilationError(_Located, CompilerError):
    """A kernel that cannot be compiled."""


class CompileTimeAssertionFailure(CompilationError):
    """A `tl.static_assert` whose condition is false (Triton's class of the same name)."""


class KernelRuntimeError(_Located, CompilerError, RuntimeError):
    """A kernel did something invalid while running in the interpreter (out-of-bounds access, device_assert)."""


def _rebuild(cls, message, loc, text):
    err = cls.__new__(cls)
    err.raw_message = err.message = message
    err.loc = loc
    Exception.__init__(err, text)
    return err
