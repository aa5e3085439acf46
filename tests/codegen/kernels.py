"""IR builders for the codegen tests (the frontend is not needed: kernels are built with ops.Builder)."""
from __future__ import annotations

from compiler.ir import types as T
from compiler.ir.core import Block, Function
from compiler.ir.ops import Builder


def ptr(dt):
    return T.TensorType(T.pointer_type(dt))


def scalar(dt):
    return T.TensorType(dt)


def new_function(name, args, divisible=()):
    """Function with args [(name, TensorType)]; arg indices in `divisible` get divisibility 16."""
    fn = Function(name, [a for a, _ in args], [t for _, t in args])
    fn.arg_attrs = {i: {"divisibility": 16} for i in divisible}
    b = Builder(fn.body)
    return fn, b, {n: v for n, v in zip(fn.arg_names, fn.args)}


def combine_block(b, kind, dt, n=1):
    """A reduce/scan combine block applying binary `kind` on n operand pairs."""
    t = scalar(dt)
    blk = Block([t] * (2 * n))
    inner = Builder(blk)
    outs = [inner.binary(kind, blk.args[i], blk.args[n + i]) for i in range(n)]
    inner.yield_(outs)
    return blk


def reduce(b, xs, axis, blk):
    shape = list(xs[0].shape)
    del shape[axis]
    return b.create("reduce", xs, [x.type.with_shape(shape) for x in xs], {"axis": axis}, [blk]).results


def scan(b, xs, axis, blk, reverse=False):
    return b.create("scan", xs, [x.type for x in xs], {"axis": axis, "reverse": reverse}, [blk]).results


def offsets_1d(b, a, block):
    pid = b.program_id(0)
    base = b.binary("mul", pid, b.const(block, scalar(T.int32)))
    return b.binary("add", b.splat(base, (block,)), b.arange(0, block))


def add_kernel(BLOCK=1024, dt=T.float32):
    fn, b, a = new_function("add_kernel", [("X", ptr(dt)), ("Y", ptr(dt)), ("Z", ptr(dt)), ("N", scalar(T.int32))],
                            divisible=(0, 1, 2, 3))
    offs = offsets_1d(b, a, BLOCK)
    m = b.cmp("lt", offs, b.splat(a["N"], (BLOCK,)))
    px = b.addptr(b.splat(a["X"], (BLOCK,)), offs)
    py = b.addptr(b.splat(a["Y"], (BLOCK,)), offs)
    pz = b.addptr(b.splat(a["Z"], (BLOCK,)), offs)
    x = b.load(px, mask=m)
    y = b.load(py, mask=m)
    b.store(pz, b.binary("add", x, y), mask=m)
    b.ret()
    return fn


def softmax_kernel(BLOCK=1024, dt=T.float32):
    """One row per program: y = exp(x - max(x)) / sum(...)."""
    fn, b, a = new_function("softmax_kernel", [("X", ptr(dt)), ("Y", ptr(dt)), ("stride", scalar(T.int32)),
                                               ("N", scalar(T.int32))], divisible=(0, 1, 2, 3))
    row = b.program_id(0)
    start = b.binary("mul", row, a["stride"])
    cols = b.arange(0, BLOCK)
    m = b.cmp("lt", cols, b.splat(a["N"], (BLOCK,)))
    xp = b.addptr(b.splat(b.addptr(a["X"], start), (BLOCK,)), cols)
    x = b.load(xp, mask=m, other=b.const(float("-inf"), T.TensorType(dt, (BLOCK,))))
    xf = b.cast(x, T.float32)
    (mx,) = reduce(b, [xf], 0, combine_block(b, "max", T.float32))
    z = b.binary("sub", xf, b.splat(mx, (BLOCK,)))
    num = b.unary("exp", z)
    (den,) = reduce(b, [num], 0, combine_block(b, "add", T.float32))
    y = b.binary("fdiv", num, b.splat(den, (BLOCK,)))
    yp = b.addptr(b.splat(b.addptr(a["Y"], start), (BLOCK,)), cols)
    b.store(yp, b.cast(y, dt), mask=m)
    b.ret()
    return fn


def rows_2d(b, a, M, N, stride_arg="stride"):
    """Pointer offsets of an [M, N] tile of a row-major matrix starting at row pid*M."""
    pid = b.program_id(0)
    r0 = b.binary("mul", pid, b.const(M, scalar(T.int32)))
    rows = b.binary("add", b.splat(r0, (M,)), b.arange(0, M))
    rows2 = b.expand_dims(rows, 1)
    rows2 = b.binary("mul", rows2, b.splat(a[stride_arg], (M, 1)))
    cols2 = b.expand_dims(b.arange(0, N), 0)
    return b.binary("add", b.broadcast(rows2, (M, N)), b.broadcast(cols2, (M, N)))


def row_normalize_2d(M=4, N=256, dt=T.float32):
    """y = x - sum(x, axis=1)[:, None] on an [M, N] tile; also stores the row sums (a SliceLayout store)."""
    fn, b, a = new_function("row_norm", [("X", ptr(dt)), ("Y", ptr(dt)), ("S", ptr(dt)),
                                         ("stride", scalar(T.int32))], divisible=(0, 1, 2, 3))
    offs = rows_2d(b, a, M, N)
    x = b.load(b.addptr(b.splat(a["X"], (M, N)), offs))
    (s,) = reduce(b, [x], 1, combine_block(b, "add", dt))
    y = b.binary("sub", x, b.broadcast(b.expand_dims(s, 1), (M, N)))
    b.store(b.addptr(b.splat(a["Y"], (M, N)), offs), y)
    pid = b.program_id(0)
    rows = b.binary("add", b.splat(b.binary("mul", pid, b.const(M, scalar(T.int32))), (M,)), b.arange(0, M))
    b.store(b.addptr(b.splat(a["S"], (M,)), rows), s)
    b.ret()
    return fn


def cumsum_kernel(BLOCK=1024, dt=T.float32, reverse=False, num_2d=None):
    fn, b, a = new_function("cumsum", [("X", ptr(dt)), ("Y", ptr(dt))], divisible=(0, 1))
    offs = b.arange(0, BLOCK)
    x = b.load(b.addptr(b.splat(a["X"], (BLOCK,)), offs))
    (y,) = scan(b, [x], 0, combine_block(b, "add", dt), reverse=reverse)
    b.store(b.addptr(b.splat(a["Y"], (BLOCK,)), offs), y)
    b.ret()
    return fn


def argmax_kernel(BLOCK=1024, dt=T.float32):
    """(value, index) reduction with a two-operand combine block; stores the index (a scalar store)."""
    fn, b, a = new_function("argmax", [("X", ptr(dt)), ("I", ptr(T.int32))], divisible=(0, 1))
    offs = b.arange(0, BLOCK)
    x = b.load(b.addptr(b.splat(a["X"], (BLOCK,)), offs))
    t = scalar(dt)
    ti = scalar(T.int32)
    blk = Block([t, ti, t, ti])
    ib = Builder(blk)
    va, ia, vb, ib_ = blk.args
    gt = ib.cmp("gt", va, vb)
    eq = ib.cmp("eq", va, vb)
    lt_i = ib.cmp("lt", ia, ib_)
    take_a = ib.binary("or", gt, ib.binary("and", eq, lt_i))
    ib.yield_([ib.select(take_a, va, vb), ib.select(take_a, ia, ib_)])
    v, i = reduce(b, [x, offs], 0, blk)
    b.store(a["I"], i)
    b.ret()
    return fn


def atomics_kernel(BLOCK=256, dt=T.float32, op="add"):
    fn, b, a = new_function("atomics", [("P", ptr(dt)), ("V", ptr(dt)), ("O", ptr(dt)), ("N", scalar(T.int32))],
                            divisible=(0, 1, 2))
    offs = b.arange(0, BLOCK)
    m = b.cmp("lt", offs, b.splat(a["N"], (BLOCK,)))
    v = b.load(b.addptr(b.splat(a["V"], (BLOCK,)), offs), mask=m)
    old = b.atomic_rmw(op, b.addptr(b.splat(a["P"], (BLOCK,)), offs), v, mask=m)
    b.store(b.addptr(b.splat(a["O"], (BLOCK,)), offs), old, mask=m)
    # a scalar atomic too: one thread does it, everyone sees the old value
    s_old = b.atomic_rmw(op, a["P"], b.load(a["V"]))
    b.store(a["O"], s_old)
    if dt.bits >= 32:
        c = b.atomic_cas(b.addptr(b.splat(a["P"], (BLOCK,)), offs), v, old)
        b.store(b.addptr(b.splat(a["O"], (BLOCK,)), offs), c, mask=m)
    b.ret()
    return fn


def loop_kernel(BLOCK=512, dt=T.float32):
    """acc[BLOCK] += X[k*BLOCK + offs] for k in range(0, K): a block-valued loop-carried accumulator."""
    fn, b, a = new_function("loop_acc", [("X", ptr(dt)), ("Y", ptr(dt)), ("K", scalar(T.int32))], divisible=(0, 1))
    offs = b.arange(0, BLOCK)
    acc0 = b.const(0.0, T.TensorType(dt, (BLOCK,)))
    zero, one = b.const(0, scalar(T.int32)), b.const(1, scalar(T.int32))
    body = Block([scalar(T.int32), acc0.type])
    lb = Builder(body)
    k, acc = body.args
    base = lb.binary("mul", k, lb.const(BLOCK, scalar(T.int32)))
    p = lb.addptr(lb.splat(a["X"], (BLOCK,)), lb.binary("add", lb.splat(base, (BLOCK,)), offs))
    lb.yield_([lb.binary("add", acc, lb.load(p))])
    (res,) = b.create("for", [zero, a["K"], one, acc0], [acc0.type], {}, [body]).results
    b.store(b.addptr(b.splat(a["Y"], (BLOCK,)), offs), res)
    b.ret()
    return fn


def if_while_kernel(BLOCK=128):
    """if (pid == 0) x = x * 2 else x = x + 1; then while (s < N) s = s * 2 on a scalar and a block."""
    dt = T.float32
    fn, b, a = new_function("if_while", [("X", ptr(dt)), ("N", scalar(T.int32))], divisible=(0,))
    offs = b.arange(0, BLOCK)
    p = b.addptr(b.splat(a["X"], (BLOCK,)), offs)
    x = b.load(p)
    c = b.cmp("eq", b.program_id(0), b.const(0, scalar(T.int32)))
    then_b, else_b = Block(), Block()
    tb = Builder(then_b)
    tb.yield_([tb.binary("mul", x, tb.const(2.0, x.type))])
    eb = Builder(else_b)
    eb.yield_([eb.binary("add", x, eb.const(1.0, x.type))])
    (x2,) = b.create("if", [c], [x.type], {}, [then_b, else_b]).results
    si = scalar(T.int32)
    before = Block([si, x.type])
    bb = Builder(before)
    s, v = before.args
    bb.condition(bb.cmp("lt", s, a["N"]), [s, v])
    after = Block([si, x.type])
    ab = Builder(after)
    s2, v2 = after.args
    ab.yield_([ab.binary("mul", s2, ab.const(2, si)), ab.binary("add", v2, v2)])
    s_out, x3 = b.create("while", [b.const(1, si), x2], [si, x.type], {}, [before, after]).results
    x4 = b.binary("add", x3, b.cast(b.splat(s_out, (BLOCK,)), dt))
    b.store(p, x4)
    b.ret()
    return fn


def unary_kernel(kind, dt, BLOCK=256):
    fn, b, a = new_function(f"{kind}_{dt.name}", [("X", ptr(dt)), ("Y", ptr(dt))], divisible=(0, 1))
    offs = b.arange(0, BLOCK)
    x = b.load(b.addptr(b.splat(a["X"], (BLOCK,)), offs))
    b.store(b.addptr(b.splat(a["Y"], (BLOCK,)), offs), b.unary(kind, x))
    b.ret()
    return fn


def cast_kernel(src, dst, BLOCK=256):
    fn, b, a = new_function(f"cast_{src.name}_{dst.name}", [("X", ptr(src)), ("Y", ptr(dst))], divisible=(0, 1))
    offs = b.arange(0, BLOCK)
    x = b.load(b.addptr(b.splat(a["X"], (BLOCK,)), offs))
    b.store(b.addptr(b.splat(a["Y"], (BLOCK,)), offs), b.cast(x, dst))
    b.ret()
    return fn


def binary_kernel(kind, dt, BLOCK=256, **attrs):
    fn, b, a = new_function(f"{kind}_{dt.name}", [("X", ptr(dt)), ("Y", ptr(dt)), ("Z", ptr(dt))],
                            divisible=(0, 1, 2))
    offs = b.arange(0, BLOCK)
    x = b.load(b.addptr(b.splat(a["X"], (BLOCK,)), offs))
    y = b.load(b.addptr(b.splat(a["Y"], (BLOCK,)), offs))
    b.store(b.addptr(b.splat(a["Z"], (BLOCK,)), offs), b.binary(kind, x, y, **attrs))
    b.ret()
    return fn


def transpose_kernel(M=64, N=32, dt=T.float32):
    """Y[N, M] = permute(X[M, N]) — exercises permute and a layout conversion before the store."""
    fn, b, a = new_function("transpose", [("X", ptr(dt)), ("Y", ptr(dt))], divisible=(0, 1))
    rows = b.expand_dims(b.arange(0, M), 1)
    cols = b.expand_dims(b.arange(0, N), 0)
    offs = b.binary("add", b.broadcast(b.binary("mul", rows, b.const(N, rows.type)), (M, N)), b.broadcast(cols, (M, N)))
    x = b.load(b.addptr(b.splat(a["X"], (M, N)), offs))
    xt = b.permute(x, (1, 0))
    r2 = b.expand_dims(b.arange(0, N), 1)
    c2 = b.expand_dims(b.arange(0, M), 0)
    o2 = b.binary("add", b.broadcast(b.binary("mul", r2, b.const(M, r2.type)), (N, M)), b.broadcast(c2, (N, M)))
    b.store(b.addptr(b.splat(a["Y"], (N, M)), o2), xt)
    b.ret()
    return fn
