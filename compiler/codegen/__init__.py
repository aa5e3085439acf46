"""Code generation: tile IR -> LLVM IR (llvm.py) -> PTX / cubin (ptx.py).

`compile_function` runs the whole back half for one Function, so the frontend and the runtime call one thing.
"""
from __future__ import annotations

from ..ir.core import Module
from ..options import Options


def compile_function(fn, options: Options | None = None, *, cubin: bool = True) -> dict:
    """PIPELINE + LLVM emission + PTX (+ cubin when ptxas exists) for `fn` (a Function or a Module).

    Returns {"llir", "ptx", "cubin" (bytes or None), "meta"}; the stage artifacts keep their names so any one
    can be dumped or cached.
    """
    from ..passes import run_pipeline
    from .llvm import emit_llvm
    from .ptx import llvm_to_ptx, ptx_to_cubin

    options = options or Options()
    module = fn if isinstance(fn, Module) else Module(fn)
    module = run_pipeline(module, options)
    llir, meta = emit_llvm(module, options)
    ptx = llvm_to_ptx(llir, options.arch)
    return {"llir": llir, "ptx": ptx, "cubin": ptx_to_cubin(ptx, options.arch) if cubin else None, "meta": meta}
