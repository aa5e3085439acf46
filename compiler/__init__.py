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
from .version import __version__  # noqa: E402,F401
from .errors import CompilationError, KernelRuntimeError  # noqa: E402,F401
from .jit import JITFunction, cdiv, constexpr_function, jit, must_use_result, next_power_of_2  # noqa: E402,F401
from .language.values import constexpr  # noqa: E402,F401
from .autotune import Autotuner, Config, Heuristics, autotune, heuristics  # noqa: E402,F401
from . import language  # noqa: E402,F401

# Everything else loads when first used, so a process that only imports the package (a CLI call, a test
# collecting kernels) pays for none of it: the frontend, passes and LLVM code generation (llvmlite) on the first
# compile, NumPy and ml_dtypes (bfloat16) on the first NumPy argument or `dtype.np`, the CUDA bindings and the C
# launch call on the first launch. `compiler.runtime` and the other subpackages are still attributes of the
# package (module `__getattr__`, PEP 562).
_SUBMODULES = frozenset({"codegen", "compile", "frontend", "interpreter", "ir", "options", "passes", "runtime"})

__all__ = ["jit", "JITFunction", "cdiv", "constexpr_function", "next_power_of_2", "CompilationError", "KernelRuntimeError", "constexpr",
           "autotune", "heuristics", "Config", "Autotuner", "Heuristics", "__version__"]


def __getattr__(name):
    if name in _SUBMODULES:
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
