"""Scan kernels for tests/ops/test_scan_layouts.py: 1-D, 2-D and 3-D tiles, a dot's accumulator, one or two
operands, a non-commutative combine."""
import compiler
import compiler.language as tl


@compiler.jit
def _affine(m1, c1, m2, c2):
    # x -> m1*x + c1, then x -> m2*x + c2: associative, not commutative (int32, wrapping)
    return m1 * m2, c1 * m2 + c2


@compiler.jit
def _scan(x, m, AXIS: tl.constexpr, OP: tl.constexpr, REVERSE: tl.constexpr):
    if OP == "cumsum":
        y = tl.cumsum(x, axis=AXIS, reverse=REVERSE)
        z = m
    elif OP == "cummax":
        y = tl.associative_scan(x, AXIS, _max, reverse=REVERSE)
        z = m
    else:
        z, y = tl.associative_scan((m, x), AXIS, _affine, reverse=REVERSE)
    return y, z


@compiler.jit
def _max(a, b):
    return tl.maximum(a, b)


@compiler.jit
def scan1d_kernel(X, M, Y, Z, AXIS: tl.constexpr, OP: tl.constexpr, REVERSE: tl.constexpr, N: tl.constexpr):
    o = tl.arange(0, N)
    y, z = _scan(tl.load(X + o), tl.load(M + o), AXIS, OP, REVERSE)
    tl.store(Y + o, y)
    tl.store(Z + o, z)


@compiler.jit
def scan2d_kernel(X, M, Y, Z, AXIS: tl.constexpr, OP: tl.constexpr, REVERSE: tl.constexpr, BM: tl.constexpr,
                  BN: tl.constexpr):
    o = tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :]
    y, z = _scan(tl.load(X + o), tl.load(M + o), AXIS, OP, REVERSE)
    tl.store(Y + o, y)
    tl.store(Z + o, z)


@compiler.jit
def scan3d_kernel(X, M, Y, Z, AXIS: tl.constexpr, OP: tl.constexpr, REVERSE: tl.constexpr, B0: tl.constexpr,
                  B1: tl.constexpr, B2: tl.constexpr):
    o = (tl.arange(0, B0)[:, None, None] * (B1 * B2) + tl.arange(0, B1)[None, :, None] * B2
         + tl.arange(0, B2)[None, None, :])
    y, z = _scan(tl.load(X + o), tl.load(M + o), AXIS, OP, REVERSE)
    tl.store(Y + o, y)
    tl.store(Z + o, z)


@compiler.jit
def dot_scan_kernel(A, B, Y, AXIS: tl.constexpr, REVERSE: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                    BK: tl.constexpr):
    """A cumsum of a dot's accumulator, in the layout the dot leaves it in (rows: lanes, a register bit, then
    warps)."""
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = tl.load(A + rm[:, None] * BK + rk[None, :])
    b = tl.load(B + rk[:, None] * BN + rn[None, :])
    acc = tl.dot(a, b)
    tl.store(Y + rm[:, None] * BN + rn[None, :], tl.cumsum(acc, axis=AXIS, reverse=REVERSE))
