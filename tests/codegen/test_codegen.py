"""Codegen tests without a GPU: IR (built with ops.Builder) -> LLVM (verified) -> PTX -> ptxas for sm_90.

Checks key instructions in the PTX (vector loads, shuffles, barriers) and ptxas resources (no spills / local
memory for the simple kernels). Numerical correctness needs the GPU and is checked elsewhere.
"""
from __future__ import annotations

import os
import re
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
import kernels as K  # noqa: E402

from compiler.codegen import compile_function  # noqa: E402
from compiler.codegen.ptx import find_ptxas, ptx_resources  # noqa: E402
from compiler.ir import types as T  # noqa: E402
from compiler.ir.ops import BINARY_SAME, UNARY_MATH  # noqa: E402
from compiler.options import Options  # noqa: E402

HAVE_PTXAS = find_ptxas() is not None
needs_ptxas = pytest.mark.skipif(not HAVE_PTXAS, reason="ptxas not found (install nvidia-cuda-nvcc or set "
                                                        "TILEFARM_PTXAS)")


def build(fn, **opts):
    r = compile_function(fn, Options(**opts), cubin=HAVE_PTXAS)
    assert ".entry " + fn.name in r["ptx"]
    if HAVE_PTXAS:
        assert r["cubin"], "ptxas produced no cubin"
    return r


def count(ptx, pattern):
    return len(re.findall(pattern, ptx))


def no_local_memory(ptx):
    res = ptx_resources(ptx)
    assert res["spill_stores"] == 0 and res["spill_loads"] == 0 and res["stack"] == 0, res
    return res


# ---- the kernels of the brief --------------------------------------------------------------------------------

@needs_ptxas
def test_vector_add_is_vectorized():
    r = build(K.add_kernel(1024))
    ptx = r["ptx"]
    assert count(ptx, r"ld\.global\.v4\.b32") == 4  # 2 per input
    assert count(ptx, r"st\.global\.v4\.b32") == 2
    assert count(ptx, r"ld\.global(?!\.v4)") == 0 and count(ptx, r"st\.global(?!\.v4)") == 0
    assert ".reqntid 128" in ptx
    assert r["meta"]["shared_bytes"] == 0
    assert [p["type"] for p in r["meta"]["params"]] == ["ptr", "ptr", "ptr", "int32"]
    res = no_local_memory(ptx)
    assert res["registers"] <= 40


def test_vector_add_unaligned_is_scalar():
    fn = K.add_kernel(1024)
    fn.arg_attrs = {}
    r = build(fn)
    assert count(r["ptx"], r"ld\.global\.v4") == 0


@pytest.mark.parametrize("dt", [T.float32, T.float16, T.bfloat16])
def test_softmax_row(dt):
    r = build(K.softmax_kernel(1024, dt))
    ptx = r["ptx"]
    assert count(ptx, r"shfl\.sync\.bfly") == 10  # 5 per reduction (max, sum)
    assert count(ptx, r"bar\.sync") >= 3  # two cross-warp reductions, one reuse guard
    assert r["meta"]["shared_bytes"] >= 16
    if dt == T.float32:
        assert count(ptx, r"ld\.global\.v4\.b32") == 2
        assert count(ptx, r"ex2\.approx\.f32") == 8
    if HAVE_PTXAS:
        no_local_memory(ptx)


@needs_ptxas
def test_softmax_num_warps_8():
    r = build(K.softmax_kernel(2048), num_warps=8)
    assert ".reqntid 256" in r["ptx"]
    no_local_memory(r["ptx"])


def test_2d_reduce_axis1_and_broadcast_back():
    r = build(K.row_normalize_2d(4, 256))
    ptx = r["ptx"]
    assert count(ptx, r"shfl\.sync\.bfly") > 0
    assert count(ptx, r"ld\.global\.v4\.b32") == 2
    # the row sums are a SliceLayout value: stored once per element (duplicate holders masked off)
    if HAVE_PTXAS:
        no_local_memory(ptx)


def test_2d_reduce_axis0():
    fn, b, a = K.new_function("colsum", [("X", K.ptr(T.float32)), ("S", K.ptr(T.float32))], divisible=(0, 1))
    rows = b.expand_dims(b.arange(0, 64), 1)
    cols = b.expand_dims(b.arange(0, 64), 0)
    offs = b.binary("add", b.broadcast(b.binary("mul", rows, b.const(64, rows.type)), (64, 64)),
                    b.broadcast(cols, (64, 64)))
    x = b.load(b.addptr(b.splat(a["X"], (64, 64)), offs))
    (s,) = K.reduce(b, [x], 0, K.combine_block(b, "add", T.float32))
    b.store(b.addptr(b.splat(a["S"], (64,)), b.arange(0, 64)), s)
    b.ret()
    r = build(fn)
    assert count(r["ptx"], r"bar\.sync") >= 1


@pytest.mark.parametrize("reverse", [False, True])
def test_cumsum(reverse):
    r = build(K.cumsum_kernel(1024, reverse=reverse))
    ptx = r["ptx"]
    assert count(ptx, r"shfl\.sync\.down" if reverse else r"shfl\.sync\.up") >= 5
    assert count(ptx, r"bar\.sync") >= 1
    if HAVE_PTXAS:
        no_local_memory(ptx)


@pytest.mark.parametrize("dt", [T.int32, T.int64, T.float16, T.float64])
def test_cumsum_dtypes(dt):
    build(K.cumsum_kernel(256, dt))


def test_argmax_two_operands():
    r = build(K.argmax_kernel(1024))
    ptx = r["ptx"]
    assert count(ptx, r"shfl\.sync\.bfly") == 10  # value and index, 5 lane bits each
    # scalar store: one thread
    assert "st.global.b32" in ptx


@pytest.mark.parametrize("dt", [T.int64, T.float64, T.float16, T.int8])
def test_reduce_dtypes(dt):
    fn, b, a = K.new_function(f"sum_{dt.name}", [("X", K.ptr(dt)), ("S", K.ptr(dt))], divisible=(0, 1))
    x = b.load(b.addptr(b.splat(a["X"], (512,)), b.arange(0, 512)))
    (s,) = K.reduce(b, [x], 0, K.combine_block(b, "max", dt))
    b.store(a["S"], s)
    b.ret()
    r = build(fn)
    n = count(r["ptx"], r"shfl\.sync\.bfly")
    assert n == (10 if dt.bits == 64 else 5)


@pytest.mark.parametrize("dt,op", [(T.float32, "add"), (T.int32, "max"), (T.uint32, "min"), (T.int64, "add"),
                                   (T.float64, "add"), (T.float32, "max"), (T.float32, "min"), (T.int32, "xchg"),
                                   (T.uint64, "and"), (T.int32, "or"), (T.int32, "xor"), (T.float16, "add")])
def test_atomics(dt, op):
    r = build(K.atomics_kernel(256, dt, op))
    # Triton's qualifier order (its tests grep for it): space, scope, semantics; space, semantics, scope for cas
    assert count(r["ptx"], r"atom\.global\.gpu\.acq_rel\.") >= 1
    if dt.bits >= 32:
        assert "atom.global.acq_rel.gpu.cas" in r["ptx"]


def test_for_loop_block_carried():
    r = build(K.loop_kernel(512))
    ptx = r["ptx"]
    assert count(ptx, r"ld\.global\.v4\.b32|ld\.global\.v4\.f32") >= 1
    if HAVE_PTXAS:
        no_local_memory(ptx)


def test_if_while():
    r = build(K.if_while_kernel())
    assert count(r["ptx"], r"\bbra") >= 2


def test_transpose_converts_through_shared():
    r = build(K.transpose_kernel())
    ptx = r["ptx"]
    assert count(ptx, r"bar\.sync") >= 1
    assert count(ptx, r"st\.global\.v4") >= 1
    # the writer holds runs down the reader's columns: no padding helps, the 16-byte chunks of each row are XORed
    # with row bits instead (codegen/reduce.py _choose_swizzle), so the buffer is the tile itself
    assert r["meta"]["shared_bytes"] == 32 * 64 * 4
    assert count(ptx, r"xor\.b32") >= 1


MATH_FNS = UNARY_MATH + ("abs",)


@pytest.mark.parametrize("dt", [T.float16, T.bfloat16, T.float32, T.float64])
@pytest.mark.parametrize("kind", MATH_FNS)
def test_math(kind, dt):
    r = build(K.unary_kernel(kind, dt))
    assert "__nv_" not in r["ptx"].split(".entry")[1] or ".func" in r["ptx"]


def test_math_f32_fast_paths():
    assert "ex2.approx.f32" in build(K.unary_kernel("exp", T.float32))["ptx"]
    for name in ("log", "log2"):  # libdevice's logf / log2f, as Triton 3.6: not the approximate lg2
        assert "lg2.approx" not in build(K.unary_kernel(name, T.float32))["ptx"]
    assert "sqrt.approx.ftz.f32" in build(K.unary_kernel("sqrt", T.float32))["ptx"]
    assert "sqrt.rn.f32" in build(K.unary_kernel("sqrt_rn", T.float32))["ptx"]
    assert "rsqrt.approx.ftz.f32" in build(K.unary_kernel("rsqrt", T.float32))["ptx"]
    assert "ex2.approx.ftz.f32" in build(K.unary_kernel("exp2", T.float32))["ptx"]


@pytest.mark.parametrize("src", T.ALL_DTYPES, ids=str)
def test_casts(src):
    for dst in T.ALL_DTYPES:
        if dst != src:
            build(K.cast_kernel(src, dst))


def _binary_cases():
    for k in BINARY_SAME:
        for dt in T.ALL_DTYPES:
            f = dt.is_floating()
            if k in ("idiv", "irem", "and", "or", "xor", "shl", "shr", "umulhi") and f:
                continue
            if k in ("fdiv", "frem") and not f:
                continue
            if k == "umulhi" and dt.bits not in (32, 64):
                continue
            if dt.is_bool() and k not in ("and", "or", "xor"):
                continue
            yield k, dt


@pytest.mark.parametrize("kind,dt", list(_binary_cases()), ids=str)
def test_binary(kind, dt):
    build(K.binary_kernel(kind, dt))


def test_max_propagate_nan():
    assert "max.NaN.f32" in build(K.binary_kernel("max", T.float32, propagate_nan=True))["ptx"]
    assert re.search(r"max\.f32", build(K.binary_kernel("max", T.float32))["ptx"])


def test_unsupported_op_names_location():
    from compiler.ir.core import Loc
    fn, b, a = K.new_function("bad", [("X", K.ptr(T.float32))])
    b.loc = Loc("user_kernel.py", 12, 4)
    b.create("frobnicate", [], [])
    b.ret()
    with pytest.raises(Exception, match=r"user_kernel\.py:12:5"):
        build(fn)


def test_f16_loads_are_128_bit():
    r = build(K.add_kernel(2048, T.float16))
    ptx = r["ptx"]
    assert count(ptx, r"ld\.global\.v4\.b32") == 4  # 8 halves per access, 2 accesses per input
    assert count(ptx, r"add\.rn\.f16|add\.f16|add\.rn\.f16x2") >= 1


def test_print_and_assert():
    from compiler.ir.core import Loc
    fn, b, a = K.new_function("dbg", [("X", K.ptr(T.float32)), ("n", K.scalar(T.int32))], divisible=(0,))
    b.loc = Loc("k.py", 3, 0)
    x = b.load(b.addptr(b.splat(a["X"], (128,)), b.arange(0, 128)))
    b.print("x = ", [x, a["n"]])
    b.assert_(b.cmp("gt", x, b.const(0.0, x.type)), "x must be positive")
    b.ret()
    on = build(fn, debug=True)["ptx"]
    assert "vprintf" in on and "__assertfail" in on
    fn2, b, a = K.new_function("dbg2", [("X", K.ptr(T.float32))], divisible=(0,))
    x = b.load(b.addptr(b.splat(a["X"], (128,)), b.arange(0, 128)))
    b.assert_(b.cmp("gt", x, b.const(0.0, x.type)), "x must be positive")
    b.ret()
    assert "__assertfail" not in build(fn2)["ptx"]


def test_bool_memory_and_bool_param():
    fn, b, a = K.new_function("bools", [("X", K.ptr(T.int1)), ("Y", K.ptr(T.int1)), ("flag", K.scalar(T.int1))],
                              divisible=(0, 1))
    offs = b.arange(0, 512)
    x = b.load(b.addptr(b.splat(a["X"], (512,)), offs))
    y = b.binary("xor", x, b.splat(a["flag"], (512,)))
    b.store(b.addptr(b.splat(a["Y"], (512,)), offs), y)
    b.ret()
    r = build(fn)
    assert r["meta"]["params"][2] == {"name": "flag", "type": "int1", "abi": "i8"}
    assert ".param .u8" in r["ptx"] or ".param .b8" in r["ptx"]


@pytest.mark.parametrize("shape_in,shape_out", [((256,), (256, 1)), ((256,), (1, 256)), ((16, 16), (256,)),
                                                ((256,), (16, 16)), ((256, 1), (256,))])
def test_reshape(shape_in, shape_out):
    import math
    n = math.prod(shape_in)
    fn, b, a = K.new_function("reshape", [("X", K.ptr(T.float32)), ("Y", K.ptr(T.float32))], divisible=(0, 1))
    offs = b.reshape(b.arange(0, n), shape_in)
    x = b.load(b.addptr(b.splat(a["X"], shape_in), offs))
    y = b.reshape(x, shape_out)
    offs2 = b.reshape(b.arange(0, n), shape_out)
    b.store(b.addptr(b.splat(a["Y"], shape_out), offs2), y)
    b.ret()
    build(fn)


def test_scan_2d_axis0_and_multi_operand():
    fn, b, a = K.new_function("scan2d", [("X", K.ptr(T.float32)), ("Y", K.ptr(T.float32))], divisible=(0, 1))
    rows = b.expand_dims(b.arange(0, 64), 1)
    cols = b.expand_dims(b.arange(0, 32), 0)
    offs = b.binary("add", b.broadcast(b.binary("mul", rows, b.const(32, rows.type)), (64, 32)),
                    b.broadcast(cols, (64, 32)))
    p = b.addptr(b.splat(a["X"], (64, 32)), offs)
    x = b.load(p)
    y0, y1 = K.scan(b, [x, x], 0, K.combine_block(b, "add", T.float32, n=2))
    b.store(b.addptr(b.splat(a["Y"], (64, 32)), offs), b.binary("add", y0, y1))
    b.ret()
    build(fn)


@pytest.mark.parametrize("cache,ev,vol", [(".cg", "", False), ("", "evict_first", False), (".cs", "evict_last", False),
                                          ("", "", True), (".ca", "", False), ("", "evict_normal", False)])
def test_cache_hints_assemble(cache, ev, vol):
    fn, b, a = K.new_function("hint", [("X", K.ptr(T.float32)), ("Y", K.ptr(T.float32))], divisible=(0, 1))
    offs = b.arange(0, 512)
    x = b.load(b.addptr(b.splat(a["X"], (512,)), offs), cache=cache, eviction=ev, volatile=vol)
    b.store(b.addptr(b.splat(a["Y"], (512,)), offs), x, cache=cache, eviction=ev)
    b.ret()
    ptx = build(fn)["ptx"]
    assert count(ptx, r"ld\.(volatile\.)?global[.:\w]*\.v4\.b32") == 1


def test_folding_builder_folds_constants_and_identities():
    """codegen.common.FoldingIRBuilder: integer arithmetic on constants and x+0, x*1, x*0, x<<0 ... never reach
    LLVM; other operations are emitted as written."""
    import llvmlite.ir as ir

    from compiler.codegen.common import FoldingIRBuilder

    i32 = ir.IntType(32)
    m = ir.Module()
    f = ir.Function(m, ir.FunctionType(i32, [i32]), "f")
    b = FoldingIRBuilder(f.append_basic_block())
    x = f.args[0]
    c = lambda v: ir.Constant(i32, v)  # noqa: E731
    assert b.mul(c(0), c(128)).constant == 0 and b.add(c(5), c(7)).constant == 12
    assert b.sub(c(3), c(5)).constant == 2**32 - 2  # wraps to i32
    assert b.mul(c(1 << 20), c(1 << 20)).constant == 0 and b.shl(c(1), c(31)).constant == 1 << 31
    assert b.lshr(c(-1), c(28)).constant == 15 and b.and_(c(12), c(10)).constant == 8
    assert b.or_(c(12), c(10)).constant == 14 and b.xor(c(12), c(10)).constant == 6
    assert b.add(x, c(0)) is x and b.add(c(0), x) is x and b.mul(c(1), x) is x and b.sub(x, c(0)) is x
    assert b.shl(x, c(0)) is x and b.or_(x, c(0)) is x and b.xor(c(0), x) is x
    assert b.mul(x, c(0)).constant == 0 and b.and_(c(0), x).constant == 0
    assert not b.block.instructions  # nothing emitted so far
    kept = [b.sub(c(0), x), b.shl(c(1), x), b.shl(c(1), c(32)), b.add(x, x)]  # 0 - x, 1 << x, poison shift, x + x
    assert [i.opname for i in kept] == ["sub", "shl", "shl", "add"] and len(b.block.instructions) == 4


def test_sqrt_approx_and_sqrt_rn():
    """tl.sqrt on float32 is Triton's sqrt.approx.ftz; tl.sqrt_rn is IEEE rounded."""
    ptx = build(K.unary_kernel("sqrt", T.float32))["ptx"]
    assert "sqrt.approx.ftz.f32" in ptx and "sqrt.rn" not in ptx
    ptx = build(K.unary_kernel("sqrt_rn", T.float32))["ptx"]
    assert "sqrt.rn.f32" in ptx and "sqrt.approx" not in ptx
