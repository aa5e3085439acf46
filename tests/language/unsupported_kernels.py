"""Kernels using things the compiler does not support (each on its own marked line)."""
import compiler
import compiler.language as tl


@compiler.jit
def unknown_tl_name(X):
    x = tl.load(X)
    tl.store(X, tl.not_a_real_op(x))  # MARK unknown_tl_name


@compiler.jit
def unknown_kwarg(X):
    x = tl.load(X, not_a_real_kwarg=True)  # MARK unknown_kwarg
    tl.store(X, x)


@compiler.jit
def unknown_libdevice(X):
    x = tl.load(X)
    tl.store(X, tl.extra.libdevice.not_a_function(x))  # MARK unknown_libdevice
