"""What a kernel file written for Triton touches, mapped onto this project's compiler.

A file with `import triton` / `import triton.language as tl` runs unchanged under our compiler when it is loaded
with `load_kernel_file(path)`: inside that file (and only there) `triton` names this compatibility layer,
`triton.language` names `compiler.language`. Nothing here is a package named `triton` on `sys.path` and nothing
is put in `sys.modules` under Triton's names, so a real Triton imported in the same process keeps working;
`load_kernel_file(path, compiler="triton")` loads the same file against that real Triton.

    from compiler.triton_compat import load_kernel_file
    ours = load_kernel_file("kernels.py")                      # triton -> compiler
    theirs = load_kernel_file("kernels.py", compiler="triton")  # the real Triton
    ours.add_kernel[grid](x, y, z, n, BLOCK=1024)

What the layer maps (`triton.`): jit, autotune, heuristics, Config, cdiv, next_power_of_2, JITFunction,
CompilationError, TritonError, constexpr, language, testing.do_bench, reinterpret / TensorWrapper, set_allocator,
compile / compiler.ASTSource, must_use_result, runtime.driver.active, runtime.errors, compiler.errors,
tools.tensor_descriptor, tools.mxfp. A name it lacks -- a Triton internal, or a part of
the language this compiler does not have yet -- raises `TritonCompatError` naming it (outside a kernel), or a
CompilationError at the kernel's file:line:col naming it (inside one).
"""
from __future__ import annotations

from .modules import MAPPED, TritonCompatError, compat_module  # noqa: F401
from .loader import load_kernel_file, compat_import  # noqa: F401

__all__ = ["load_kernel_file", "compat_import", "compat_module", "TritonCompatError", "MAPPED"]
