"""Errors that point at the user's kernel source.

`CompilationError` is raised for every user mistake found while compiling: its message is
"file:line:col: message", then the source line and a caret under the column, then where that is in its jit
function as Triton counts it ("at 2:4: in kernel": line 2 of the function, its `def` being line 1, column 4).
An error inside a jit function that another one calls goes on with each call site, innermost first, like a
traceback read upwards. It is picklable (it crosses Ray process boundaries) and carries no traceback into
compiler internals. `__cause__` is what Triton puts there: the exception a builtin raised (its message, with no
traceback), or, for an error inside a called jit function, the error as that function raised it.
`KernelRuntimeError` is a fault found while running a kernel in the interpreter (out-of-bounds access, failed
device_assert), located the same way.
"""
from __future__ import annotations

import linecache


def _source_line(file: str, line: int) -> str:
    if not file or line <= 0:
        return ""
    return linecache.getline(file, line).rstrip("\n")


def format_location(message: str, loc, where=None) -> str:
    """'file:line:col: message' plus the source line and a caret under the column, when the source is known, and
    `where` (function name, line, column, as Triton counts them) as "at L:C: in name"."""
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
    if where is not None:
        name, line, col = where
        text += f"\n  at {line}:{col}: in {name}"
    return text


class _Located:
    """Shared by the user-facing errors: `.loc` is where, `.raw_message` (`.message`) is what; str() shows both
    with the source line and a caret; pickles intact (errors cross Ray process boundaries).

    `.where`: (jit function, line, column) of `.loc` counted from the function's `def` (Triton's numbering);
    `.calls`: the call sites that led there, innermost first, each (loc, where)."""

    def __init__(self, message: str, loc=None, *, where=None, calls=(), cause=None):
        self.raw_message = self.message = self.error_message = message  # error_message: Triton's name
        self.loc = loc
        self.where = where
        self.calls = tuple(calls)
        super().__init__(self._text())
        if cause is not None:
            self.__cause__ = _bare(cause)
            self.__suppress_context__ = True

    def _text(self) -> str:
        text = format_location(self.raw_message, self.loc, self.where)
        for loc, where in self.calls:
            text += "\n" + format_location("called from here", loc, where)
        return text

    def locate_in(self, where) -> None:
        """Name the jit function `.loc` is in, where it was not known when the error was made."""
        if self.where is None and where is not None:
            self.where = where
            self.args = (self._text(),)

    def called_from(self, loc, where):
        """The same error seen from a call site of the function it happened in: the call site is added to the
        text and the error as the callee raised it becomes the cause (as Triton chains them)."""
        err = type(self)(self.raw_message, self.loc, where=self.where, calls=self.calls + ((loc, where),))
        err.__cause__ = _bare(self)
        err.__suppress_context__ = True
        return err

    def __reduce__(self):
        return (_rebuild, (type(self), self.raw_message, self.loc, str(self)))


def _bare(exc: BaseException) -> BaseException:
    """`exc` without the traceback and context that lead into the compiler's own frames."""
    exc.__traceback__ = None
    exc.__context__ = None
    exc.__suppress_context__ = True
    return exc


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
    err.raw_message = err.message = err.error_message = message
    err.loc = loc
    err.where, err.calls = None, ()
    Exception.__init__(err, text)
    return err
