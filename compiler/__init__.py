"""tilefarm's tile compiler: Triton-style kernels in Python, compiled to PTX for NVIDIA GPUs.

    import compiler
    import compiler.language as tl

    @compiler.jit
    def add_kernel(X, Y, Z, N, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < N
        tl.store(Z + offs, tl.load(X + offs, mask=m) + tl.load(Y + offs, mask=m), mask=m)

    add_kernel[(compiler.cdiv(N, 1024),)](x, y, z, N, BLOCK=1024)
"""
__version__ = "0.1.0"

from .errors import CompilationError, KernelRuntimeError  # noqa: E402,F401
from .jit import JITFunction, cdiv, jit, next_power_of_2  # noqa: E402,F401
from .language.core import constexpr  # noqa: E402,F401
from .autotune import Autotuner, Config, Heuristics, autotune, heuristics  # noqa: E402,F401
from . import compile as _compile  # noqa: E402,F401  (the frontend and stage driver load with the package,
from . import language  # noqa: E402,F401            so the first compile pays no import cost)
from . import runtime as _runtime  # noqa: E402,F401  (no driver is loaded until a GPU is used)
from .runtime import cache as _cache  # noqa: E402,F401
try:  # the LLVM back end too; an install without it can still interpret kernels
    from . import codegen as _codegen  # noqa: E402,F401
    from .codegen import llvm as _llvm, ptx as _ptx  # noqa: E402,F401
    from . import passes as _passes  # noqa: E402,F401
except ImportError:  # pragma: no cover
    pass

__all__ = ["jit", "JITFunction", "cdiv", "next_power_of_2", "CompilationError", "KernelRuntimeError", "constexpr",
           "autotune", "heuristics", "Config", "Autotuner", "Heuristics", "__version__"]

_compile.source_fingerprint()  # hash the compiler's sources once, at import, not on the first compile
from .runtime import fastlaunch as _fastlaunch  # noqa: E402

_fastlaunch.preload()  # the C launch call, when this machine built it before (loading it needs no GPU)
