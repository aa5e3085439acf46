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
                                               ("N", scalar(T.int32))], divisible=(0, 1, 2))
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
