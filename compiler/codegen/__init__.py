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
    from .llvm import emit_llvm, libdevice_calls
    from .ptx import llvm_to_ptx, prefetch_libdevice, prestart_ptxas, ptx_to_cubin

    options = options or Options()
    module = fn if isinstance(fn, Module) else Module(fn)
    options = target_options(module, options)
    module = run_pipeline(module, options)
    # the assembler starts now, beside LLVM IR emission and LLVM, with the flags its run will have: the PTX's target,
    # line information as emitted
    prestart_ptxas(options.arch, lineinfo=not options.disable_line_info)
    prefetch_libdevice(libdevice_calls(module.function))  # and the libdevice functions it calls, on a thread
    llir, meta = emit_llvm(module, options)
    meta["target"] = options.arch
    ptx = llvm_to_ptx(llir, options.arch)
    blocks = module.meta.get("ring_blocks_per_sm")
    if blocks and not options.maxnreg:
        # the blocks per SM a copy ring was sized for (passes/pipeline.py): ptxas fits the registers to them
        ptx = _beside_reqntid(ptx, f".minnctapersm {blocks}")
        meta["ring_blocks_per_sm"] = blocks
    if options.maxnreg:
        ptx = _with_maxnreg(ptx, options.maxnreg)
        meta["maxnreg"] = options.maxnreg
    return {"llir": llir, "ptx": ptx, "cubin": ptx_to_cubin(ptx, options.arch) if cubin else None, "meta": meta}


def _with_maxnreg(ptx: str, n: int) -> str:
    """The kernel's PTX with `.maxnreg n` beside its `.reqntid` (LLVM's NVPTX back end writes no .maxnreg)."""
    return _beside_reqntid(ptx, f".maxnreg {n}")


def _beside_reqntid(ptx: str, directive: str) -> str:
    """The kernel's PTX with a performance-tuning directive after its `.reqntid`."""
    import re

    out, k = re.subn(r"^(\.reqntid [^\n]*)$", lambda m: f"{m.group(1)}\n{directive}", ptx, count=1, flags=re.M)
    if not k:
        raise ValueError(f"the kernel's PTX has no .reqntid to put {directive.split()[0]} beside")
    return out


def _has_dot(block) -> bool:
    return any(op.kind == "dot" or any(_has_dot(b) for b in op.blocks) for op in block.ops)


def target_options(module, options: Options) -> Options:
    """sm_90 kernels that contain a dot are built for sm_90a (wgmma needs the arch-specific target); the
    metadata's "target" says which one was used. Options.debug_no_wgmma (TILEFARM_NO_WGMMA=1) keeps sm_90
    (mma.sync)."""
    import dataclasses

    if options.arch == "sm_90" and not options.debug_no_wgmma and _has_dot(module.function.body):
        return dataclasses.replace(options, arch="sm_90a")
    return options
