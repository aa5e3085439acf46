"""User-facing errors of the compiler and its runtimes (kept tiny; the frontend owner extends this file)."""
from __future__ import annotations


class KernelRuntimeError(RuntimeError):
    """A kernel did something invalid while running (out-of-bounds access, failed device_assert, ...).

    `loc` is the kernel source location (compiler.ir.core.Loc or a string) of the op that failed; the message
    starts with it as `file:line:col: `.
    """

    def __init__(self, message: str, loc=None):
        self.message = message
        self.loc = loc
        super().__init__(f"{loc}: {message}" if loc is not None else message)
