"""Kernels for the interpreter's end-to-end tests through @compiler.jit (kept in a file so locations are real)."""
import compiler
import compiler.language as tl


@compiler.jit
def histogram(X, Counts, N, NB: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m, other=0)
    tl.atomic_add(Counts + x % NB, 1, mask=m)


@compiler.jit
def row_argmax(X, Out, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + row * stride + offs, mask=offs < n_cols, other=-float("inf"))
    tl.store(Out + row, tl.argmax(x, 0))


@compiler.jit
def row_cumsum(X, Out, stride, n_cols, REVERSE: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    m = offs < n_cols
    x = tl.load(X + row * stride + offs, mask=m, other=0)
    tl.store(Out + row * stride + offs, tl.cumsum(x, 0, reverse=REVERSE), mask=m)


@compiler.jit
def checked(X, N, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < N, other=1)
    tl.device_assert(x > 0, "x must be positive")


@compiler.jit
def printer(X):
    tl.device_print("x", tl.load(X + tl.arange(0, 2)))


@compiler.jit
def oob_2d(X, stride, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)[:, None]
    c = tl.arange(0, BLOCK)[None, :]
    x = tl.load(X + r * stride + c)
    tl.store(X + r * stride + c, x * 2)

