"""One jit kernel per op family; the op is picked by a constexpr string so one kernel covers many ops."""
import compiler
import compiler.language as tl


@compiler.jit
def unary_kernel(X, Y, N, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m, other=1)
    if OP == "exp":
        y = tl.exp(x)
    elif OP == "exp2":
        y = tl.exp2(x)
    elif OP == "log":
        y = tl.log(x)
    elif OP == "log2":
        y = tl.log2(x)
    elif OP == "sqrt":
        y = tl.sqrt(x)
    elif OP == "sqrt_rn":
        y = tl.sqrt_rn(x)
    elif OP == "rsqrt":
        y = tl.rsqrt(x)
    elif OP == "abs":
        y = tl.abs(x)
    elif OP == "sin":
        y = tl.sin(x)
    elif OP == "cos":
        y = tl.cos(x)
    elif OP == "erf":
        y = tl.erf(x)
    elif OP == "erfc":
        y = tl.erfc(x)
    elif OP == "erfc_method":
        y = x.erfc()
    elif OP == "floor":
        y = tl.floor(x)
    elif OP == "ceil":
        y = tl.ceil(x)
    elif OP == "sigmoid":
        y = tl.sigmoid(x)
    elif OP == "neg":
        y = -x
    elif OP == "invert":
        y = ~x
    elif OP == "not":
        y = (x == 0)
    else:
        tl.static_assert(False, "unknown op")
    tl.store(Y + offs, y, mask=m)


@compiler.jit
def binary_kernel(X, Y, Z, N, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m, other=1)
    y = tl.load(Y + offs, mask=m, other=1)
    if OP == "add":
        z = x + y
    elif OP == "sub":
        z = x - y
    elif OP == "mul":
        z = x * y
    elif OP == "truediv":
        z = x / y
    elif OP == "floordiv":
        z = x // y
    elif OP == "mod":
        z = x % y
    elif OP == "and":
        z = x & y
    elif OP == "or":
        z = x | y
    elif OP == "xor":
        z = x ^ y
    elif OP == "shl":
        z = x << y
    elif OP == "shr":
        z = x >> y
    elif OP == "maximum":
        z = tl.maximum(x, y)
    elif OP == "minimum":
        z = tl.minimum(x, y)
    elif OP == "umulhi":
        z = tl.umulhi(x, y)
    elif OP == "lt":
        z = x < y
    elif OP == "le":
        z = x <= y
    elif OP == "gt":
        z = x > y
    elif OP == "ge":
        z = x >= y
    elif OP == "eq":
        z = x == y
    elif OP == "ne":
        z = x != y
    elif OP == "where":
        z = tl.where(x > y, x, y)
    elif OP == "fma":
        z = tl.fma(x, y, x)
    elif OP == "clamp":
        z = tl.clamp(x, y, y + 1)
    elif OP == "fdiv":
        z = tl.fdiv(x, y)
    elif OP == "div_rn":
        z = tl.div_rn(x, y)
    else:
        tl.static_assert(False, "unknown op")
    tl.store(Z + offs, z, mask=m)


@compiler.jit
def cast_kernel(X, Y, N, BITCAST: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m)
    tl.store(Y + offs, x.to(Y.dtype.element_ty, bitcast=BITCAST), mask=m)


@compiler.jit
def scalar_kernel(X, Y, a, b, c):
    # int, float and bool scalars; scalar loads and stores
    x = tl.load(X)
    v = x * a + b
    if c:
        v = v + 1
    tl.store(Y, v)


@compiler.jit
def reduce_kernel(X, Y, M, N, stride, AXIS: tl.constexpr, OP: tl.constexpr, KEEP: tl.constexpr,
                  BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(X + rm[:, None] * stride + rn[None, :], mask=mask)
    if OP == "sum":
        r = tl.sum(x, axis=AXIS, keep_dims=KEEP)
    elif OP == "max":
        r = tl.max(x, axis=AXIS, keep_dims=KEEP)
    elif OP == "min":
        r = tl.min(x, axis=AXIS, keep_dims=KEEP)
    elif OP == "argmax":
        r = tl.argmax(x, axis=AXIS, keep_dims=KEEP)
    elif OP == "argmin":
        r = tl.argmin(x, axis=AXIS, keep_dims=KEEP)
    elif OP == "custom":
        r = tl.reduce(x, AXIS, _mul_add, keep_dims=KEEP)
    else:
        tl.static_assert(False, "unknown op")
    if AXIS == 0:
        tl.store(Y + rn, tl.reshape(r, [BN]))
    else:
        tl.store(Y + rm, tl.reshape(r, [BM]))


@compiler.jit
def _mul_add(a, b):
    # an associative, commutative combine written by the user: sum of squares-free values via max/min mix
    return tl.maximum(a, b) + tl.minimum(a, b)


@compiler.jit
def reduce_all_kernel(X, Y, BLOCK: tl.constexpr, OP: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK)[:, None] * BLOCK + tl.arange(0, BLOCK)[None, :])
    if OP == "sum":
        tl.store(Y, tl.sum(x))
    else:
        tl.store(Y, tl.max(x))


@compiler.jit
def _first_nonzero(a, b):
    return tl.where(a != 0, a, b)


@compiler.jit
def scan_kernel(X, Y, AXIS: tl.constexpr, OP: tl.constexpr, REVERSE: tl.constexpr, BM: tl.constexpr,
                BN: tl.constexpr):
    offs = tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :]
    x = tl.load(X + offs)
    if OP == "cumsum":
        y = tl.cumsum(x, axis=AXIS, reverse=REVERSE)
    elif OP == "cumprod":
        y = tl.cumprod(x, axis=AXIS, reverse=REVERSE)
    else:
        y = tl.associative_scan(x, AXIS, _first_nonzero, reverse=REVERSE)
    tl.store(Y + offs, y)


@compiler.jit
def shape_kernel(X, Y, OP: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    x = tl.load(X + rm[:, None] * BN + rn[None, :])  # [BM, BN]
    if OP == "trans":
        y = tl.trans(x)  # [BN, BM]
        tl.store(Y + rn[:, None] * BM + rm[None, :], y)
    elif OP == "permute":
        y = tl.permute(x, (1, 0))
        tl.store(Y + rn[:, None] * BM + rm[None, :], y)
    elif OP == "reshape":
        y = tl.reshape(x, [BM * BN])
        tl.store(Y + tl.arange(0, BM * BN), y)
    elif OP == "broadcast":
        row = tl.load(X + rn)  # [BN]
        y = tl.broadcast_to(row[None, :], [BM, BN]) + tl.expand_dims(rm, 1).to(row.dtype)
        tl.store(Y + rm[:, None] * BN + rn[None, :], y)
    elif OP == "expand3":
        y3 = tl.expand_dims(x, 0) + tl.zeros([2, BM, BN], dtype=x.dtype)  # [2, BM, BN]
        r2 = tl.sum(y3, axis=0)
        tl.store(Y + rm[:, None] * BN + rn[None, :], r2)
    elif OP == "full":
        y = tl.full([BM, BN], 3, tl.int32).to(x.dtype) + tl.zeros_like(x) + x
        tl.store(Y + rm[:, None] * BN + rn[None, :], y)
    else:
        tl.static_assert(False, "unknown op")


@compiler.jit
def atomic_kernel(P, V, IDX, Out, N, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    idx = tl.load(IDX + offs, mask=m, other=0)
    v = tl.load(V + offs, mask=m)
    if OP == "add":
        old = tl.atomic_add(P + idx, v, mask=m)
    elif OP == "max":
        old = tl.atomic_max(P + idx, v, mask=m)
    elif OP == "min":
        old = tl.atomic_min(P + idx, v, mask=m)
    elif OP == "and":
        old = tl.atomic_and(P + idx, v, mask=m)
    elif OP == "or":
        old = tl.atomic_or(P + idx, v, mask=m)
    elif OP == "xor":
        old = tl.atomic_xor(P + idx, v, mask=m)
    elif OP == "xchg":
        old = tl.atomic_xchg(P + idx, v, mask=m)
    else:
        tl.static_assert(False, "unknown op")
    tl.store(Out + offs, old, mask=m)


@compiler.jit
def cas_counter_kernel(Lock, Count, N):
    # every program increments a counter under a spin lock built from atomic_cas / atomic_xchg
    pid = tl.program_id(0)
    if pid < N:
        while tl.atomic_cas(Lock, 0, 1) == 1:
            pass
        c = tl.load(Count, volatile=True)
        tl.store(Count, c + 1)
        tl.atomic_xchg(Lock, 0)


@compiler.jit
def loop_kernel(X, Y, N, BLOCK: tl.constexpr):
    # runtime for/while/if with carried blocks and scalars; static_range unrolled
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    count = 0
    for start in range(0, N, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(X + offs, mask=offs < N, other=0.0)
        if start % (2 * BLOCK) == 0:
            acc += x
        else:
            acc -= x
        count += 1
    for k in tl.static_range(3):
        acc = acc * 0.5 + k
    j = 1
    while j < count:
        j = j * 2
    tl.store(Y + tl.arange(0, BLOCK), acc)
    tl.store(Y + BLOCK, j.to(tl.float32))
    tl.store(Y + BLOCK + 1, count.to(tl.float32))


@compiler.jit
def grid3_kernel(Out, BLOCK: tl.constexpr):
    x = tl.program_id(0)
    y = tl.program_id(1)
    z = tl.program_id(2)
    nx = tl.num_programs(0)
    ny = tl.num_programs(1)
    nz = tl.num_programs(2)
    lin = (z * ny + y) * nx + x
    tl.store(Out + lin * 4 + tl.arange(0, 4), tl.where(tl.arange(0, 4) == 0, x, tl.where(tl.arange(0, 4) == 1, y, tl.where(tl.arange(0, 4) == 2, z, nx * ny * nz))))


@compiler.jit
def oob_kernel(X, N, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(X + offs, tl.load(X + offs) + 1)


@compiler.jit
def print_kernel(X):
    x = tl.load(X + tl.arange(0, 4))
    tl.device_print("x", x)
    tl.static_print("compile-time hello")
    tl.static_print("", x, tl.sum(x, 0))
