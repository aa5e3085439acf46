"""Kernels for tests/codegen/test_line_info.py: the test finds the lines it expects by the marker comments, so the
kernels can move within this file."""
import compiler
import compiler.language as tl
from line_info_helpers import scaled


@compiler.jit
def same_file_helper(x):
    return x + 1.0  # SAME_FILE_HELPER


@compiler.jit
def copy_kernel(X, Y, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))  # LOAD
    tl.store(Y + tl.arange(0, BLOCK), x)  # STORE


@compiler.jit
def helpers_kernel(X, Y, s, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs)  # HELPERS_LOAD
    y = scaled(same_file_helper(x), s)
    tl.store(Y + offs, y)  # HELPERS_STORE
