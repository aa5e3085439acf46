"""A jit helper in a file of its own, inlined into the kernels of line_info_kernels.py (tests/codegen/test_line_info.py
looks for its line, in this file, in the kernel's line table)."""
import compiler
import compiler.language as tl  # noqa: F401


@compiler.jit
def scaled(x, s):
    return x * s  # OTHER_FILE_HELPER
