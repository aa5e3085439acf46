"""Helpers that build tile-IR functions with compiler.ir.ops.Builder for the interpreter tests (the frontend is
not used here), including the region ops (for/if/while/reduce/scan) Builder has no method for."""
from __future__ import annotations

import contextlib

from compiler.ir import types as T
from compiler.ir.core import Block, Function, Loc, Op
from compiler.ir.ops import Builder

TEST_FILE = "kernels.py"


def tt(elem, shape=()):
    return T.TensorType(elem, tuple(shape))


def ptr(elem, shape=()):
    return T.TensorType(T.pointer_type(elem), tuple(shape))


def function(name, args):
    """args: list of (name, TensorType). Returns (Function, Builder at its body, list of arg Values)."""
    f = Function(name, [n for n, _ in args], [t for _, t in args], loc=Loc(TEST_FILE, 1, 0))
    b = Builder(f.body)
    b.loc = Loc(TEST_FILE, 2, 4)
    return f, b, f.args


def at(b, line, col=4):
    b.loc = Loc(TEST_FILE, line, col)


def i32(b, v, shape=()):
    return b.const(v, tt(T.int32, shape))


def offsets(b, block_size, axis=0):
    """pid * BLOCK + arange(BLOCK) as <BLOCK x i32>."""
    pid = b.program_id(axis)
    base = b.binary("mul", pid, i32(b, block_size))
    return b.binary("add", b.splat(base, (block_size,)), b.arange(0, block_size))


def region_op(b, kind, operands, result_types, block_arg_types, attrs=None):
    """Create an op with len(block_arg_types) blocks; returns (op, [blocks])."""
    blocks = [Block(ts) for ts in block_arg_types]
    op = b.create(kind, operands, result_types, attrs, blocks)
    return op, blocks


@contextlib.contextmanager
def inside(b, block):
    old = b.block
    b.set_insertion_block(block)
    try:
        yield block
    finally:
        b.set_insertion_block(old)


def reduce_(b, xs, axis, combine, kind="reduce", **attrs):
    """combine(b, a_list, b_list) -> list of values to yield (emitted into the combine block)."""
    xs = list(xs)
    rshape = list(xs[0].shape)
    if kind == "reduce":
        del rshape[axis]
    rtypes = [tt(x.type.element, rshape) for x in xs]
    scal = [tt(x.type.element) for x in xs]
    op, (blk,) = region_op(b, kind, xs, rtypes, [scal + scal], dict(axis=axis, **attrs))
    n = len(xs)
    with inside(b, blk):
        b.yield_(combine(b, blk.args[:n], blk.args[n:]))
    return op.results


def elementwise(in_elems, out_elem, body, block=None, n=None, name="ew"):
    """A one-program kernel: loads len(in_elems) arrays of `block` elements (masked by n), applies
    body(b, *values) and stores the result (of out_elem) to the last argument."""
    args = [(f"I{i}", ptr(e)) for i, e in enumerate(in_elems)] + [("O", ptr(out_elem)), ("N", tt(T.int32))]
    f, b, fargs = function(name, args)
    offs = offsets(b, block)
    mask = b.cmp("lt", offs, b.splat(fargs[-1], (block,)))
    vals = []
    for i, e in enumerate(in_elems):
        at(b, 20 + i)
        vals.append(b.load(b.addptr(b.splat(fargs[i], (block,)), offs), mask))
    at(b, 30)
    r = body(b, *vals)
    at(b, 31)
    b.store(b.addptr(b.splat(fargs[len(in_elems)], (block,)), offs), r, mask)
    b.ret()
    return f


def grid2d_offsets(b, rows, cols, row_stride):
    """<rows x cols x i32> offsets r * row_stride + c (row_stride: an i32 Value)."""
    r = b.expand_dims(b.arange(0, rows), 1)
    c = b.expand_dims(b.arange(0, cols), 0)
    rs = b.binary("mul", r, b.splat(row_stride, (rows, 1)))
    return b.binary("add", b.broadcast(rs, (rows, cols)), b.broadcast(c, (rows, cols)))


def reduce_kernel(elem, rows, cols, axis, combine, n_out=1, out_elems=None, kind="reduce", extra_index=False,
                  **attrs):
    """Loads X[rows, cols] (row-major), reduces/scans along `axis` with `combine` and stores the n_out results
    (each a flat array) to O0.. . With extra_index the second operand is the element's index along axis."""
    out_elems = out_elems or [elem] * n_out
    args = [("X", ptr(elem))] + [(f"O{i}", ptr(e)) for i, e in enumerate(out_elems)] + [("C", tt(T.int32))]
    f, b, fa = function(f"{kind}_k", args)
    offs = grid2d_offsets(b, rows, cols, fa[-1])
    x = b.load(b.addptr(b.splat(fa[0], (rows, cols)), offs))
    operands = [x]
    if extra_index:
        idx = b.arange(0, rows if axis == 0 else cols)
        idx = b.expand_dims(idx, 1 - axis)
        operands.append(b.broadcast(idx, (rows, cols)))
    at(b, 40)
    res = reduce_(b, operands, axis, combine, kind=kind, **attrs)
    at(b, 41)
    for i in range(n_out):
        r = res[i]
        if kind == "reduce":
            n = r.shape[0]
            b.store(b.addptr(b.splat(fa[1 + i], (n,)), b.arange(0, n)), r)
        else:
            b.store(b.addptr(b.splat(fa[1 + i], (rows, cols)), offs), r)
    b.ret()
    return f
