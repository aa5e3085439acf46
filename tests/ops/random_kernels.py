"""Kernels drawing Philox random numbers (tl.randint4x, tl.rand, tl.randn ...)."""
import compiler
import compiler.language as tl


@compiler.jit
def randint4x_kernel(Y0, Y1, Y2, Y3, seed, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    a, b, c, d = tl.randint4x(seed, offs)
    tl.store(Y0 + offs, a, mask=m)
    tl.store(Y1 + offs, b, mask=m)
    tl.store(Y2 + offs, c, mask=m)
    tl.store(Y3 + offs, d, mask=m)


@compiler.jit
def random_kernel(Y, seed, N, WHAT: tl.constexpr, ROUNDS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    if WHAT == "randint":
        y = tl.randint(seed, offs, ROUNDS)
    elif WHAT == "rand":
        y = tl.rand(seed, offs, ROUNDS)
    elif WHAT == "randn":
        y = tl.randn(seed, offs, ROUNDS)
    elif WHAT == "randint64":
        y = tl.randint(seed, offs.to(tl.int64) + 2**40, ROUNDS)
    else:
        tl.static_assert(False, "unknown")
    tl.store(Y + offs, y, mask=m)


@compiler.jit
def dropout_kernel(X, Y, N, p, seed, BLOCK: tl.constexpr):
    """Triton's low-memory dropout: keep x / (1 - p) where rand >= p."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m)
    keep = tl.rand(seed, offs) > p
    tl.store(Y + offs, tl.where(keep, x / (1 - p), 0.0), mask=m)


@compiler.jit
def philox_kernel(C, Y, seed, N, BLOCK: tl.constexpr):
    """Philox 4x32-10 of counters C[4*i .. 4*i+3] keyed by `seed` (uint32 words)."""
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < N
    c0 = tl.load(C + 4 * i, mask=m)
    c1 = tl.load(C + 4 * i + 1, mask=m)
    c2 = tl.load(C + 4 * i + 2, mask=m)
    c3 = tl.load(C + 4 * i + 3, mask=m)
    a, b, c, d = tl.philox(seed, c0, c1, c2, c3)
    tl.store(Y + 4 * i, a, mask=m)
    tl.store(Y + 4 * i + 1, b, mask=m)
    tl.store(Y + 4 * i + 2, c, mask=m)
    tl.store(Y + 4 * i + 3, d, mask=m)


@compiler.jit
def rand_any_seed(X, seed):
    offset = tl.arange(0, 1)
    tl.store(X + offset, tl.rand(seed, offset))
