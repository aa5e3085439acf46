"""Kernels for join / split / interleave / cat / flip / swizzle2d / assume, pointer arrays, cache hints."""
import compiler
import compiler.language as tl


@compiler.jit
def shape_ops(A, B, Y, WHAT: tl.constexpr, M: tl.constexpr, N: tl.constexpr):
    """A, B: M x N row-major; Y receives the op's result, row-major."""
    i = tl.arange(0, M)[:, None]
    j = tl.arange(0, N)[None, :]
    a = tl.load(A + i * N + j)
    b = tl.load(B + i * N + j)
    if WHAT == "join":
        r = tl.join(a, b)  # M x N x 2
        k = tl.arange(0, 2)[None, None, :]
        tl.store(Y + (i * N + j)[:, :, None] * 2 + k, r)
    elif WHAT == "split":
        lo, hi = tl.split(tl.join(a, b))
        tl.store(Y + i * N + j, lo)
        tl.store(Y + M * N + i * N + j, hi)
    elif WHAT == "interleave":
        r = tl.interleave(a, b)  # M x 2N
        tl.store(Y + i * 2 * N + tl.arange(0, 2 * N)[None, :], r)
    elif WHAT == "cat":
        r = tl.cat(a, b, can_reorder=True)  # 2M x N
        tl.store(Y + tl.arange(0, 2 * M)[:, None] * N + j, r)
    elif WHAT == "flip1":
        tl.store(Y + i * N + j, tl.flip(a, 1))
    elif WHAT == "flip0":
        tl.store(Y + i * N + j, tl.flip(a, dim=0))
    else:
        tl.static_assert(False, "unknown")


@compiler.jit
def swizzle_kernel(Y, size_i, size_j, GROUP: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.arange(0, BLOCK)
    i = pid // size_j
    j = pid % size_j
    tl.assume(size_i > 0)
    ni, nj = tl.swizzle2d(i, j, size_i, size_j, GROUP)
    m = pid < size_i * size_j
    tl.store(Y + 2 * pid, ni, mask=m)
    tl.store(Y + 2 * pid + 1, nj, mask=m)


@compiler.jit
def gather_rows(PTRS, Y, A0, A1, A2, N, BLOCK: tl.constexpr):
    """Row g of Y = the first N floats at the address PTRS[g] (A0..A2 are the arrays the addresses point into)."""
    g = tl.program_id(0)
    p = tl.load(PTRS + g).to(tl.pointer_type(tl.float32))
    offs = tl.arange(0, BLOCK)
    x = tl.load(p + offs, mask=offs < N, other=0.0)
    tl.store(Y + g * N + offs, x * 2, mask=offs < N)


@compiler.jit
def hinted_copy(X, Y, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m, cache_modifier=".cg")
    y = tl.load(X + offs, mask=m, eviction_policy="evict_last")
    tl.store(Y + offs, x + y, mask=m, eviction_policy="evict_first")
    tl.store(Y + N + offs, x, mask=m, cache_modifier=".cs")


@compiler.jit
def sort_kernel(X, Y, WHAT: tl.constexpr, DESC: tl.constexpr, M: tl.constexpr, N: tl.constexpr,
                K: tl.constexpr):
    i = tl.arange(0, M)[:, None]
    j = tl.arange(0, N)[None, :]
    x = tl.load(X + i * N + j)
    if WHAT == "sort":
        tl.store(Y + i * N + j, tl.sort(x, descending=DESC))
    else:
        tl.store(Y + i * K + tl.arange(0, K)[None, :], tl.topk(x, K))


@compiler.jit
def histogram_kernel(X, Y, N, BINS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < N, other=0)
    h = tl.histogram(x, BINS, mask=offs < N)
    tl.store(Y + tl.arange(0, BINS), h)


@compiler.jit
def gather_kernel(X, I, Y, M: tl.constexpr, N: tl.constexpr, MI: tl.constexpr):
    """Y[r, c] = X[I[r, c], c] (gather along axis 0)."""
    x = tl.load(X + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :])
    idx = tl.load(I + tl.arange(0, MI)[:, None] * N + tl.arange(0, N)[None, :])
    tl.store(Y + tl.arange(0, MI)[:, None] * N + tl.arange(0, N)[None, :], tl.gather(x, idx, 0))


@compiler.jit
def flip_wide(X, Y, P, M: tl.constexpr, N: tl.constexpr, DIM: tl.constexpr):
    """flip of an M x N tile along DIM (values, and the pointers to them: a pointer block flipped as bits)."""
    o = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(X + o)
    tl.store(Y + o, tl.flip(x, DIM))
    q = tl.flip(X + o, DIM)          # pointers
    tl.store(P + o, tl.load(q) * 2)


@compiler.jit
def topk_rows(X, Y, N: tl.constexpr, K: tl.constexpr):
    r = tl.program_id(0)
    tl.store(Y + r * K + tl.arange(0, K), tl.topk(tl.load(X + r * N + tl.arange(0, N)), K))
