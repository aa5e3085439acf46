"""This process's machine as the farm sees it: the compiler's version, whether a GPU can be used, which one, and
the worker's name. The only farm module that asks the compiler about versions and devices.

The version and the GPU-kind spelling are the compiler's own (`compiler.autotune.compiler_version`,
`normalize_kind`, `gpu_kind`): the farm's job keys and the tuning database's records use the very strings the
autotuner matches at launch. The farm adds what the compiler does not know: `FARM_FORCE_NO_GPU`, and "none" as
the version when the compiler cannot be imported (a checkout mid-change).
"""
from __future__ import annotations

import functools
import os
import socket


def _compiler():
    try:
        import compiler
        return compiler
    except ImportError:
        return None


@functools.lru_cache(maxsize=None)
def compiler_version() -> str:
    """The compiler's version plus a hash of its sources: any change to the compiler changes every job key."""
    try:
        from compiler.autotune import compiler_version as version
    except ImportError:
        return "none"
    return version()


def normalize_kind(name: str) -> str:
    """"NVIDIA H200" -> "H200" (the same spelling as Ray's accelerator_type resource): the compiler's rule."""
    from compiler.autotune import normalize_kind as normalize
    return normalize(name)


def is_compilation_error(e: BaseException) -> bool:
    """A user-facing compile failure (CompilationError, including ptxas/resource failures it reports)."""
    c = _compiler()
    cls = getattr(c, "CompilationError", None) if c else None
    if cls is not None and isinstance(e, cls):
        return True
    return type(e).__name__ == "CompilationError"


def is_cuda_error(e: BaseException) -> bool:
    return type(e).__name__ == "CudaError"


@functools.lru_cache(maxsize=None)
def gpu_available() -> tuple[bool, str]:
    """(True, "") when this process can launch on a GPU, else (False, why)."""
    if os.environ.get("FARM_FORCE_NO_GPU"):
        return False, "FARM_FORCE_NO_GPU is set"
    try:
        from compiler import runtime
        return tuple(runtime.gpu_available())
    except Exception as e:  # no compiler runtime yet, no driver, ...
        return False, f"compiler.runtime unavailable ({type(e).__name__}: {e})"


@functools.lru_cache(maxsize=None)
def gpu_info() -> dict | None:
    """Name, UUID, driver, CUDA version and clocks of this process's GPU (recorded with every result)."""
    if not gpu_available()[0]:
        return None
    info: dict = {}
    try:
        from compiler.runtime import cuda
        for fn in ("device_info", "device_properties", "get_device_properties"):
            if hasattr(cuda, fn):
                got = getattr(cuda, fn)()
                info.update(got if isinstance(got, dict) else vars(got))
                break
    except Exception as e:
        info["error"] = f"{type(e).__name__}: {e}"
    info.setdefault("name", "unknown GPU")
    return {k: (v if isinstance(v, (int, float, str, bool, type(None))) else str(v)) for k, v in info.items()}


def gpu_kind() -> str:
    """The key's GPU kind for this machine (e.g. "H200"), or "interpreter" without a GPU (or with
    FARM_FORCE_NO_GPU): the compiler's `gpu_kind`, asked only when the farm may use the GPU."""
    if not gpu_available()[0]:
        return "interpreter"
    from compiler.autotune import gpu_kind as kind
    return kind()


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"
