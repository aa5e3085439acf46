"""`triton._filecheck` for the external suite: its checks read Triton's MLIR (TTIR) with LLVM's FileCheck, which
this compiler does not produce, so they fail saying so; `run_parser` runs this compiler's frontend on the kernel
(a test that only asks whether a kernel compiles, or that it does not, means the same here)."""
from __future__ import annotations

import functools

_NOT_HERE = "FileCheck over Triton's MLIR does not apply: this compiler has its own IR (kernel.asm['tile'])"


class MatchError(ValueError):
    pass


def run_filecheck(name, module_str, check_template):
    raise NotImplementedError(_NOT_HERE)


def run_parser(kernel_fn, args=(), kwargs=None, target=None):
    """The kernel's IR from this compiler's frontend (CompilationError for a kernel it refuses)."""
    kwargs = dict(kwargs or {})
    kwargs.pop("sanitize_overflow", None)
    return kernel_fn.lower(*args, **kwargs)


def run_filecheck_test(kernel_fn):
    run_parser(kernel_fn)
    raise NotImplementedError(_NOT_HERE)


def filecheck_test(fn):
    @functools.wraps(fn)
    def test_fn():
        run_filecheck_test(fn)

    return test_fn
