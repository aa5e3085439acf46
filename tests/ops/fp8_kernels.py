"""fp8 kernels: casts both ways, fp8 arithmetic, fp8 arrays as arguments, rounding modes."""
import compiler
import compiler.language as tl


@compiler.jit
def cast_kernel(X, Y, N, DST: tl.constexpr, BLOCK: tl.constexpr):
    """y = x.to(DST) (the store is then of DST's own type)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m)
    tl.store(Y + offs, x.to(DST, fp_downcast_rounding="rtne"), mask=m)


@compiler.jit
def rtz_kernel(X, Y, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m)
    tl.store(Y + offs, x.to(Y.dtype.element_ty, fp_downcast_rounding="rtz"), mask=m)


@compiler.jit
def fp8_arith(A, B, Y, N, BLOCK: tl.constexpr):
    """fp8 in, fp8 out: (a * b + 0.5) computed in float32 per op, rounded to fp8 after each op; max with a."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    a = tl.load(A + offs, mask=m, other=0.0)
    b = tl.load(B + offs, mask=m, other=0.0)
    c = a * b
    d = tl.maximum(c + 0.5, a)
    tl.store(Y + offs, d, mask=m)


@compiler.jit
def fp8_constants(X, Y, N, BLOCK: tl.constexpr):
    """fp8 constants in three places: a load's `other`, tl.full, and a Python float operand."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m & (offs % 3 == 0), other=-1.5)
    two = tl.full([BLOCK], 2.0, tl.float8e4nv)
    tl.store(Y + offs, two * x - 0.75, mask=m)


@compiler.jit
def fp8_row_max(X, Y, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + tl.program_id(0) * BLOCK + offs)
    tl.store(Y + tl.program_id(0), tl.max(x, axis=0))


@compiler.jit
def rtz_to_fp8(X, Y):
    tl.store(Y, tl.load(X).to(tl.float8e4nv, fp_downcast_rounding="rtz"))


@compiler.jit
def uses_e4b8(X, Y):
    tl.store(Y, tl.load(X).to(tl.float8e4b8))


@compiler.jit
def fp8_dot(A, B, C, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, F16_ACC: tl.constexpr = False):
    """A dot of fp8 tiles; F16_ACC: accumulated in float16 (out_dtype), as Triton allows."""
    i = tl.arange(0, M)[:, None]
    j = tl.arange(0, N)[None, :]
    k = tl.arange(0, K)
    a = tl.load(A + i * K + k[None, :])
    b = tl.load(B + k[:, None] * N + j)
    if F16_ACC:
        tl.store(C + i * N + j, tl.dot(a, b, out_dtype=tl.float16))
    else:
        tl.store(C + i * N + j, tl.dot(a, b))


@compiler.jit
def fp8_matmul(A, B, C, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, LIMIT: tl.constexpr = None):
    """C = A @ B (fp8 inputs, float32 accumulator) over a K loop with masked edges; LIMIT: max_num_imprecise_acc."""
    pm, pn = tl.program_id(0), tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros([BM, BN], tl.float32)
    for k in range(0, K, BK):
        a = tl.load(A + rm[:, None] * K + (k + rk)[None, :], mask=(rm[:, None] < M) & ((k + rk)[None, :] < K),
                    other=0.0)
        b = tl.load(B + (k + rk)[:, None] * N + rn[None, :], mask=((k + rk)[:, None] < K) & (rn[None, :] < N),
                    other=0.0)
        acc = tl.dot(a, b, acc, max_num_imprecise_acc=LIMIT)
    tl.store(C + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@compiler.jit
def e4b15_up(X, Y, N, BLOCK: tl.constexpr):
    """float8e4b15 bits (loaded as uint8) -> float16 and float32 (the same value, stored side by side)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m).to(tl.float8e4b15, bitcast=True)
    tl.store(Y + 2 * offs, x.to(tl.float16).to(tl.float32), mask=m)
    tl.store(Y + 2 * offs + 1, x.to(tl.float32), mask=m)


@compiler.jit
def e4b15_down(X, Y, N, BLOCK: tl.constexpr):
    """x (float16 or float32) -> float8e4b15, stored as its bits."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m)
    tl.store(Y + offs, x.to(tl.float8e4b15).to(tl.uint8, bitcast=True), mask=m)
