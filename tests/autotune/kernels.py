"""Small kernels for the autotune tests (interpreter): a blocked add, an atomic sum and an in-place increment."""
import compiler
import compiler.language as tl


@compiler.jit
def add_kernel(X, Y, Z, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    tl.store(Z + offs, tl.load(X + offs, mask=m) + tl.load(Y + offs, mask=m), mask=m)


@compiler.jit
def atomic_sum_kernel(X, Out, N, BLOCK: tl.constexpr):
    """Out[0] += sum(X): needs Out zeroed before every run (reset_to_zero)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < N, other=0)
    tl.atomic_add(Out, tl.sum(x, axis=0))


@compiler.jit
def inc_kernel(X, N, BLOCK: tl.constexpr):
    """X += 1 in place: running it twice is wrong (restore_value)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    tl.store(X + offs, tl.load(X + offs, mask=m) + 1, mask=m)


@compiler.jit
def scale_kernel(X, Z, N, BLOCK: tl.constexpr, SCALE: tl.constexpr):
    """Z = X * SCALE: a constexpr the user passes after the tuned BLOCK."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    tl.store(Z + offs, tl.load(X + offs, mask=m) * SCALE, mask=m)
