"""tl.inline_asm_elementwise: PTX the language lacks, run per element (issue #20).

Each kernel is compiled to PTX and assembled by ptxas for sm_90a (no GPU needed; the PTX is also read for what the
lowering promises: one asm instance per `pack` elements of a thread, side effects kept) and, on a GPU, run
against a NumPy reference (integers and correctly rounded results exact). The interpreter cannot run PTX: a
kernel using it there is an error at the call.
"""
import inspect
import re
import textwrap
import traceback

import numpy as np
import pytest

import compiler
import compiler.language as tl
from compiler.ir.parser import parse_function
from compiler.ir.printer import print_function

from .kernels import TARGETS, poison, run

DEVICE = TARGETS[1:]  # ptxas and gpu: the interpreter cannot run PTX (test_interpreter_refuses_it)
SM = "sm_90a"


def compiled(kernel, *args, grid, **meta):
    ck = kernel.warmup(*args, grid=grid, target=SM, **meta)
    cubin = ck.asm["cubin"]
    assert isinstance(cubin, bytes) and len(cubin) > 0
    return ck


def launch(target, kernel, grid, *args, **meta):
    """ptxas: the compiled kernel (assembled); gpu: run it (results copied back into the NumPy arrays)."""
    if target == "ptxas":
        return compiled(kernel, *args, grid=grid, **meta)
    run(target, kernel, grid, *args, **meta)
    return None


def count(ptx: str, text: str) -> int:
    return ptx.count(text)


# ---- pack=1, float32: fast approximate math -------------------------------------------------------------------
@compiler.jit
def ex2_kernel(X, Y, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m)
    y = tl.inline_asm_elementwise("ex2.approx.f32 $0, $1;", "=f,f", [x], dtype=tl.float32, is_pure=True, pack=1)
    tl.store(Y + offs, y, mask=m)


@pytest.mark.parametrize("target", DEVICE)
@pytest.mark.parametrize("num_warps, BLOCK", [(1, 128), (4, 1024), (8, 256), (4, 64)])
def test_pack1_f32_ex2(target, num_warps, BLOCK):
    rng = np.random.default_rng(1)
    N = 3 * BLOCK - 17  # a masked tail
    x = rng.uniform(-20, 20, N).astype(np.float32)
    y = poison(N, np.float32)
    ck = launch(target, ex2_kernel, (3,), x, y, N, BLOCK=BLOCK, num_warps=num_warps)
    if ck is not None:
        # one instance per element a thread holds (BLOCK=64 over 128 threads: one each, replicated)
        per_thread = max(1, BLOCK // (32 * num_warps))
        assert count(ck.asm["ptx"], "ex2.approx.f32 ") == per_thread
        return
    want = np.exp2(x.astype(np.float64))
    np.testing.assert_allclose(y, want, rtol=2e-6, atol=0)


# ---- pack=4, int8: four bytes in one 32-bit register ------------------------------------------------------------
@compiler.jit
def sign_bytes_kernel(X, Y, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m)
    # prmt with the sign-replicate selector per byte: each byte becomes 0x00 or 0xFF (x >> 7, per element)
    y = tl.inline_asm_elementwise("prmt.b32 $0, $1, 0, 0xBA98;", "=r,r", [x], dtype=tl.int8, is_pure=True, pack=4)
    tl.store(Y + offs, y, mask=m)


@pytest.mark.parametrize("target", DEVICE)
@pytest.mark.parametrize("num_warps, BLOCK", [(4, 512), (4, 2048), (1, 64), (8, 256), (4, 64)])
def test_pack4_int8_prmt(target, num_warps, BLOCK):
    rng = np.random.default_rng(2)
    N = 2 * BLOCK
    x = rng.integers(-128, 128, N).astype(np.int8)
    y = poison(N, np.int8)
    ck = launch(target, sign_bytes_kernel, (2,), x, y, N, BLOCK=BLOCK, num_warps=num_warps)
    if ck is not None:
        # the loads' layout gives a thread its bytes contiguously: one instance per 4 of them (a thread with
        # fewer than 4 fills the rest of its one instance)
        per_thread = max(1, BLOCK // (32 * num_warps))
        assert count(ck.asm["ptx"], "0xBA98") == max(1, per_thread // 4)
        return
    np.testing.assert_array_equal(y, x >> 7)


@compiler.jit
def bytes_to_words_kernel(X, Y, N, BLOCK: tl.constexpr):
    """uint8 in, int32 out (a result wider than the argument): four output registers, one packed input."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m)
    y = tl.inline_asm_elementwise(
        """bfe.u32 $0, $4, 0, 8;
           bfe.u32 $1, $4, 8, 8;
           bfe.u32 $2, $4, 16, 8;
           bfe.u32 $3, $4, 24, 8;""",
        "=r,=r,=r,=r,r", [x], dtype=tl.int32, is_pure=True, pack=4)
    tl.store(Y + offs, y, mask=m)


@compiler.jit
def words_to_bytes_kernel(X, Y, N, BLOCK: tl.constexpr):
    """int32 in, int8 out (a result narrower than the argument): four input registers, one packed output."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m)
    y = tl.inline_asm_elementwise(
        """{
            .reg .b32 lo, hi;
            prmt.b32 lo, $1, $2, 0x0040;
            prmt.b32 hi, $3, $4, 0x0040;
            prmt.b32 $0, lo, hi, 0x5410;
        }""",
        "=r,r,r,r,r", [x], dtype=tl.int8, is_pure=True, pack=4)
    tl.store(Y + offs, y, mask=m)


@pytest.mark.parametrize("target", DEVICE)
@pytest.mark.parametrize("num_warps, BLOCK", [(4, 1024), (2, 128), (4, 32)])
def test_pack4_element_order(target, num_warps, BLOCK):
    """Element k of an instance is byte k of a packed register (low byte first), both ways."""
    rng = np.random.default_rng(3)
    N = 4 * BLOCK - 5
    grid = (4,)
    x8 = rng.integers(0, 256, N).astype(np.uint8)
    y32 = poison(N, np.int32)
    ck = launch(target, bytes_to_words_kernel, grid, x8, y32, N, BLOCK=BLOCK, num_warps=num_warps)
    if ck is None:
        np.testing.assert_array_equal(y32, x8.astype(np.int32))
    x32 = rng.integers(-(2**31), 2**31, N).astype(np.int32)
    y8 = poison(N, np.int8)
    ck = launch(target, words_to_bytes_kernel, grid, x32, y8, N, BLOCK=BLOCK, num_warps=num_warps)
    if ck is None:
        np.testing.assert_array_equal(y8, x32.astype(np.int8))  # the low byte of each word


# ---- pack=2, float16: two halves in one 32-bit register ----------------------------------------------------------
@compiler.jit
def half_mul_kernel(X, Y, Z, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m)
    y = tl.load(Y + offs, mask=m)
    z = tl.inline_asm_elementwise("mul.rn.f16x2 $0, $1, $2;", "=r,r,r", [x, y], dtype=tl.float16, is_pure=True,
                                  pack=2)
    tl.store(Z + offs, z, mask=m)


@compiler.jit
def half_to_float_kernel(X, Y, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m)
    y = tl.inline_asm_elementwise(
        "{ .reg .b16 lo, hi; mov.b32 {lo, hi}, $2; cvt.f32.f16 $0, lo; cvt.f32.f16 $1, hi; }",
        "=f,=f,r", [x], dtype=tl.float32, is_pure=True, pack=2)
    tl.store(Y + offs, y, mask=m)


@pytest.mark.parametrize("target", DEVICE)
@pytest.mark.parametrize("num_warps, BLOCK", [(4, 1024), (1, 256), (8, 64)])
def test_pack2_fp16(target, num_warps, BLOCK):
    rng = np.random.default_rng(4)
    N = 2 * BLOCK - 3
    x = rng.uniform(-4, 4, N).astype(np.float16)
    y = rng.uniform(-4, 4, N).astype(np.float16)
    x[:4] = [0.0, -0.0, 6e-5, 65504]
    y[:4] = [1.0, 3.0, 1e-3, 1.5]  # a subnormal product and an overflow to inf
    z = poison(N, np.float16)
    ck = launch(target, half_mul_kernel, (2,), x, y, z, N, BLOCK=BLOCK, num_warps=num_warps)
    if ck is not None:
        per_thread = max(1, BLOCK // (32 * num_warps))
        assert count(ck.asm["ptx"], "mul.rn.f16x2") == max(1, per_thread // 2)
    else:
        # the product of two halves is exact in float32: rounded once to half, it is the correctly rounded product
        want = (x.astype(np.float32) * y.astype(np.float32)).astype(np.float16)
        np.testing.assert_array_equal(z.view(np.uint16), want.view(np.uint16))
    f = poison(N, np.float32)
    ck = launch(target, half_to_float_kernel, (2,), x, f, N, BLOCK=BLOCK, num_warps=num_warps)
    if ck is None:
        np.testing.assert_array_equal(f.view(np.uint32), x.astype(np.float32).view(np.uint32))


# ---- fp8: two e4m3 values in one 16-bit register -------------------------------------------------------------------
@compiler.jit
def fp8_to_half_kernel(X, Y, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs).to(tl.float8e4nv, bitcast=True)
    y = tl.inline_asm_elementwise("cvt.rn.f16x2.e4m3x2 $0, $1;", "=r,h", [x], dtype=tl.float16, is_pure=True,
                                  pack=2)
    tl.store(Y + offs, y)


@pytest.mark.parametrize("target", DEVICE)
def test_pack2_fp8_in_a_half_register(target):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    bits = np.arange(256, dtype=np.uint8)  # every e4m3 value
    y = np.full(256, 1000.0, np.float16)  # poisoned with a value no e4m3 converts to (NaN is one)
    if launch(target, fp8_to_half_kernel, (1,), bits, y, BLOCK=256) is None:
        want = bits.view(ml_dtypes.float8_e4m3fn).astype(np.float16)
        nan = np.isnan(want)
        assert np.isnan(y[nan]).all() and nan.sum() == 2
        np.testing.assert_array_equal(y[~nan].view(np.uint16), want[~nan].view(np.uint16))


# ---- cvt with a rounding mode the language lacks: float32 -> float16 toward zero, `h` register ------------------------
@compiler.jit
def cvt_rz_kernel(X, Y, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m)
    y = tl.inline_asm_elementwise("cvt.rz.f16.f32 $0, $1;", "=h,f", [x], dtype=tl.float16, is_pure=True, pack=1)
    tl.store(Y + offs, y, mask=m)


def _f16_toward_zero(x):
    r = x.astype(np.float16)  # to nearest; where that moved away from zero, one step back toward it
    away = np.abs(r.astype(np.float64)) > np.abs(x.astype(np.float64))
    return np.where(away, np.nextafter(r, np.float16(0)), r)


@pytest.mark.parametrize("target", DEVICE)
def test_cvt_rz_half_register(target):
    rng = np.random.default_rng(5)
    N = 1000
    x = (rng.uniform(-1, 1, N) * 10.0 ** rng.integers(-7, 5, N)).astype(np.float32)
    x[:5] = [70000.0, -70000.0, 65519.0, 1e-8, -0.0]  # beyond the largest half: toward zero is 65504
    y = poison(N, np.float16)
    if launch(target, cvt_rz_kernel, (4,), x, y, N, BLOCK=256) is None:
        with np.errstate(over="ignore"):
            want = _f16_toward_zero(x)
        np.testing.assert_array_equal(y.view(np.uint16), want.view(np.uint16))


# ---- several results: a tuple of dtypes ---------------------------------------------------------------------------
@compiler.jit
def min_max_kernel(A, B, C, D, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    a = tl.load(A + offs, mask=m)
    b = tl.load(B + offs, mask=m)
    lo, hi = tl.inline_asm_elementwise(asm="min.u32 $0, $2, $3;\n max.u32 $1, $2, $3;", constraints="=r,=r,r,r",
                                       args=[a, b], dtype=(tl.uint32, tl.uint32), is_pure=True, pack=1)
    tl.store(C + offs, lo, mask=m)
    tl.store(D + offs, hi, mask=m)


@pytest.mark.parametrize("target", DEVICE)
def test_two_results(target):
    rng = np.random.default_rng(6)
    N = 777
    a = rng.integers(0, 2**32, N, dtype=np.uint64).astype(np.uint32)
    b = rng.integers(0, 2**32, N, dtype=np.uint64).astype(np.uint32)
    c, d = poison(N, np.uint32), poison(N, np.uint32)
    ck = launch(target, min_max_kernel, (4,), a, b, c, d, N, BLOCK=256)
    if ck is None:
        np.testing.assert_array_equal(c, np.minimum(a, b))
        np.testing.assert_array_equal(d, np.maximum(a, b))


@compiler.jit
def widen_two_kernel(X, S, U, N, BLOCK: tl.constexpr):
    """int8 pack=4 into two results: int16 (two registers of two) sign-extended, uint8 (one register) masked."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m)
    s, u = tl.inline_asm_elementwise(
        """prmt.b32 $0, $3, 0, 0x9180;
           prmt.b32 $1, $3, 0, 0xB3A2;
           and.b32 $2, $3, 0x0F0F0F0F;""",
        "=r,=r,=r,r", [x], dtype=(tl.int16, tl.uint8), is_pure=True, pack=4)
    tl.store(S + offs, s, mask=m)
    tl.store(U + offs, u, mask=m)


@pytest.mark.parametrize("target", DEVICE)
@pytest.mark.parametrize("num_warps", [1, 4])
def test_two_results_of_different_widths(target, num_warps):
    """prmt 0x9180: bytes (x0, sign(x0), x1, sign(x1)) = two int16 sign extensions; the low nibbles as uint8."""
    rng = np.random.default_rng(7)
    N = 1024 - 7
    x = rng.integers(-128, 128, N).astype(np.int8)
    s, u = poison(N, np.int16), poison(N, np.uint8)
    if launch(target, widen_two_kernel, (2,), x, s, u, N, BLOCK=512, num_warps=num_warps) is None:
        np.testing.assert_array_equal(s, x.astype(np.int16))
        np.testing.assert_array_equal(u, x.view(np.uint8) & 0x0F)


# ---- scalars: broadcast to the tensors' shape, or a scalar call ------------------------------------------------------
@compiler.jit
def mad_scalar_kernel(X, Y, scale, N, ADD: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m)
    # a runtime scalar argument and a Python constant, each broadcast to x's shape
    y = tl.inline_asm_elementwise("mad.lo.u32 $0, $1, $2, $3;", "=r,r,r,r", [x, scale, ADD], dtype=tl.uint32,
                                  is_pure=True, pack=1)
    tl.store(Y + offs, y, mask=m)


@compiler.jit
def scalar_call_kernel(Out, H, OutH, a, b):
    pid = tl.program_id(0)
    r = tl.inline_asm_elementwise("sub.s32 $0, $1, $2;", "=r,r,r", [a * pid, b], dtype=tl.int32, is_pure=True,
                                  pack=1)
    tl.store(Out + pid, r)
    # a scalar with pack=2: one element, the other half of the register undefined and its result dropped
    h = tl.inline_asm_elementwise("neg.f16x2 $0, $1;", "=r,r", [tl.load(H + pid)], dtype=tl.float16,
                                  is_pure=True, pack=2)
    tl.store(OutH + pid, h)


@pytest.mark.parametrize("target", DEVICE)
def test_scalar_arguments(target):
    rng = np.random.default_rng(8)
    N = 1500
    x = rng.integers(0, 2**32, N, dtype=np.uint64).astype(np.uint32)
    y = poison(N, np.uint32)
    scale, add = 123457, 7
    ck = launch(target, mad_scalar_kernel, (3,), x, y, scale, N, ADD=add, BLOCK=512)
    if ck is not None:
        assert "splat" in ck.asm["tile"] and "inline_asm" in ck.asm["tile"]
    else:
        want = (x.astype(np.uint64) * scale + add) % 2**32
        np.testing.assert_array_equal(y, want.astype(np.uint32))
    out, hs, oh = poison(5, np.int32), rng.uniform(-9, 9, 5).astype(np.float16), poison(5, np.float16)
    if launch(target, scalar_call_kernel, (5,), out, hs, oh, 1000, 3) is None:
        np.testing.assert_array_equal(out, np.arange(5, dtype=np.int32) * 1000 - 3)
        np.testing.assert_array_equal(oh.view(np.uint16), (-hs).view(np.uint16))


@compiler.jit
def no_args_kernel(Out):
    # no arguments: one scalar result per thread (a special register the language has no name for)
    n = tl.inline_asm_elementwise("mov.u32 $0, %nctaid.x;", "=r", [], dtype=tl.int32, is_pure=True, pack=1)
    tl.store(Out + tl.program_id(0), n)


@pytest.mark.parametrize("target", DEVICE)
def test_no_arguments(target):
    out = poison(6, np.int32)
    if launch(target, no_args_kernel, (6,), out) is None:
        np.testing.assert_array_equal(out, np.full(6, 6, np.int32))


# ---- 2-D tiles ------------------------------------------------------------------------------------------------
@compiler.jit
def tile2d_kernel(F, H, B, OF, OH, OB, M, N, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.program_id(1) * BN + tl.arange(0, BN)
    idx = rows[:, None] * N + cols[None, :]
    m = (rows[:, None] < M) & (cols[None, :] < N)
    f = tl.load(F + idx, mask=m)
    h = tl.load(H + idx, mask=m)
    b = tl.load(B + idx, mask=m)
    of = tl.inline_asm_elementwise("ex2.approx.f32 $0, $1;", "=f,f", [f], dtype=tl.float32, is_pure=True, pack=1)
    oh = tl.inline_asm_elementwise("neg.f16x2 $0, $1;", "=r,r", [h], dtype=tl.float16, is_pure=True, pack=2)
    ob = tl.inline_asm_elementwise("prmt.b32 $0, $1, 0, 0xBA98;", "=r,r", [b], dtype=tl.int8, is_pure=True, pack=4)
    tl.store(OF + idx, of, mask=m)
    tl.store(OH + idx, oh, mask=m)
    tl.store(OB + idx, ob, mask=m)


@pytest.mark.parametrize("target", DEVICE)
@pytest.mark.parametrize("num_warps, BM, BN", [(4, 32, 64), (1, 8, 32), (8, 64, 128), (2, 16, 8)])
def test_2d_tiles(target, num_warps, BM, BN):
    rng = np.random.default_rng(9)
    M, N = 2 * BM - 3, 2 * BN - 1
    f = rng.uniform(-10, 10, (M, N)).astype(np.float32)
    h = rng.uniform(-100, 100, (M, N)).astype(np.float16)
    b = rng.integers(-128, 128, (M, N)).astype(np.int8)
    of, oh, ob = poison((M, N), np.float32), poison((M, N), np.float16), poison((M, N), np.int8)
    if launch(target, tile2d_kernel, (2, 2), f, h, b, of, oh, ob, M, N, BM=BM, BN=BN, num_warps=num_warps) is None:
        np.testing.assert_allclose(of, np.exp2(f.astype(np.float64)), rtol=2e-6, atol=0)
        np.testing.assert_array_equal(oh.view(np.uint16), (-h).view(np.uint16))
        np.testing.assert_array_equal(ob, b >> 7)


@compiler.jit
def tile3d_kernel(X, R, Y, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr):
    i = tl.arange(0, A)[:, None, None] * B * C + tl.arange(0, B)[None, :, None] * C + tl.arange(0, C)[None, None, :]
    x = tl.load(X + i)
    r = tl.load(R + tl.arange(0, C))
    # pack=4 of float16: two registers of two halves per operand; the row r broadcast along the first two dims
    y = tl.inline_asm_elementwise("sub.rn.f16x2 $0, $2, $4;\n sub.rn.f16x2 $1, $3, $5;", "=r,=r,r,r,r,r",
                                  [x, r[None, None, :]], dtype=tl.float16, is_pure=True, pack=4)
    tl.store(Y + i, y)


@pytest.mark.parametrize("target", DEVICE)
@pytest.mark.parametrize("num_warps, A, B, C", [(4, 4, 8, 16), (2, 2, 4, 64), (8, 8, 8, 8)])
def test_3d_tile_and_a_broadcast_row(target, num_warps, A, B, C):
    rng = np.random.default_rng(15)
    x = rng.uniform(-8, 8, (A, B, C)).astype(np.float16)
    r = rng.uniform(-8, 8, C).astype(np.float16)
    y = poison((A, B, C), np.float16)
    ck = launch(target, tile3d_kernel, (1,), x, r, y, A=A, B=B, C=C, num_warps=num_warps)
    if ck is None:
        want = (x.astype(np.float64) - r.astype(np.float64)).astype(np.float16)  # exact in float64, one rounding
        np.testing.assert_array_equal(y.view(np.uint16), want.view(np.uint16))


# ---- other layouts and control flow: a dot's accumulator, a loop-carried value, a branch -------------------------
@compiler.jit
def dot_epilogue_kernel(A, B, C, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = tl.load(A + rm[:, None] * BK + rk[None, :])
    b = tl.load(B + rk[:, None] * BN + rn[None, :])
    acc = tl.dot(a, b)
    # two float32 accumulators -> one register of two halves ($2 to the upper half, $1 to the lower)
    h = tl.inline_asm_elementwise("cvt.rn.f16x2.f32 $0, $2, $1;", "=r,r,r", [acc], dtype=tl.float16, is_pure=True,
                                  pack=2)
    tl.store(C + rm[:, None] * BN + rn[None, :], h)


@pytest.mark.parametrize("target", DEVICE)
@pytest.mark.parametrize("num_warps, BM, BN, BK", [(4, 64, 64, 64), (8, 128, 64, 32), (4, 16, 16, 16)])
def test_on_a_dot_accumulator(target, num_warps, BM, BN, BK):
    rng = np.random.default_rng(13)
    a = (rng.integers(-24, 25, (BM, BK)) / 8).astype(np.float16)  # products and sums exact in float32
    b = (rng.integers(-24, 25, (BK, BN)) / 8).astype(np.float16)
    c = poison((BM, BN), np.float16)
    ck = launch(target, dot_epilogue_kernel, (1,), a, b, c, BM=BM, BN=BN, BK=BK, num_warps=num_warps)
    if ck is not None:
        assert "wgmma" in ck.asm["ptx"] or "mma.sync" in ck.asm["ptx"]
        return
    want = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32).astype(np.float16)
    np.testing.assert_array_equal(c.view(np.uint16), want.view(np.uint16))


@compiler.jit
def loop_kernel(X, Y, N, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), tl.uint32)
    for i in range(0, N, BLOCK):
        x = tl.load(X + i + offs)
        acc = tl.inline_asm_elementwise("add.u32 $0, $1, $2;", "=r,r,r", [acc, x], dtype=tl.uint32, is_pure=True,
                                        pack=1)
        if i > 0:
            acc = tl.inline_asm_elementwise("xor.b32 $0, $1, 0x5;", "=r,r", [acc], dtype=tl.uint32, is_pure=False,
                                            pack=1)
    tl.store(Y + offs, acc)


@pytest.mark.parametrize("target", DEVICE)
def test_in_a_loop_and_a_branch(target):
    rng = np.random.default_rng(14)
    N, BLOCK = 1024, 128
    x = rng.integers(0, 2**32, N, dtype=np.uint64).astype(np.uint32)
    y = poison(BLOCK, np.uint32)
    if launch(target, loop_kernel, (1,), x, y, N, BLOCK=BLOCK) is None:
        acc = np.zeros(BLOCK, np.uint64)
        for i in range(0, N, BLOCK):
            acc = (acc + x[i:i + BLOCK]) % 2**32
            if i > 0:
                acc ^= 5
        np.testing.assert_array_equal(y, acc.astype(np.uint32))


# ---- is_pure=False: side effects are kept, never merged, never moved past memory accesses -------------------------
@compiler.jit
def count_twice_kernel(C, BLOCK: tl.constexpr, PURE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    p = C + offs
    # the results are unused and the two calls are equal: only their side effects (two increments) matter
    tl.inline_asm_elementwise("atom.global.add.u32 $0, [$1], 1;", "=r,l", [p], dtype=tl.int32, is_pure=PURE,
                              pack=1)
    tl.inline_asm_elementwise("atom.global.add.u32 $0, [$1], 1;", "=r,l", [p], dtype=tl.int32, is_pure=PURE,
                              pack=1)


@pytest.mark.parametrize("target", DEVICE)
def test_impure_asm_is_kept_and_not_merged(target):
    BLOCK, nw = 512, 4
    c = np.arange(4 * BLOCK, dtype=np.uint32) * 3
    start = c.copy()
    ck = launch(target, count_twice_kernel, (4,), c, BLOCK=BLOCK, PURE=False, num_warps=nw)
    if ck is not None:
        assert ck.asm["tile"].count("inline_asm_effects") == 2
        assert count(ck.asm["ptx"], "atom.global.add.u32") == 2 * BLOCK // (32 * nw)
        # the same calls marked pure have no use: removed
        pure = compiled(count_twice_kernel, c, grid=(4,), BLOCK=BLOCK, PURE=True, num_warps=nw)
        assert "inline_asm" not in pure.asm["tile"] and "atom.global" not in pure.asm["ptx"]
        return
    np.testing.assert_array_equal(c, start + 2)


@compiler.jit
def pure_twice_kernel(X, Y, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    a = tl.inline_asm_elementwise("lop3.b32 $0, $1, 0x0F0F0F0F, 0, 0xC0;", "=r,r", [x], dtype=tl.int32,
                                  is_pure=True, pack=1)
    b = tl.inline_asm_elementwise("lop3.b32 $0, $1, 0x0F0F0F0F, 0, 0xC0;", "=r,r", [x], dtype=tl.int32,
                                  is_pure=True, pack=1)
    tl.store(Y + tl.arange(0, BLOCK), a + b)


@pytest.mark.parametrize("target", DEVICE)
def test_pure_asm_equal_calls_are_shared(target):
    rng = np.random.default_rng(10)
    x = rng.integers(-(2**31), 2**31, 256).astype(np.int32)
    y = poison(256, np.int32)
    ck = launch(target, pure_twice_kernel, (1,), x, y, BLOCK=256)
    if ck is not None:
        assert ck.asm["tile"].count("inline_asm ") == 1  # equal pure calls: shared (CSE)
        return
    np.testing.assert_array_equal(y, 2 * (x & 0x0F0F0F0F))


@compiler.jit
def store_then_asm_load_kernel(X, Y, Z, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    tl.store(Y + offs, x * 3)
    tl.debug_barrier()  # another thread may hold the element in the asm's layout
    z = tl.inline_asm_elementwise("ld.global.b32 $0, [$1];", "=r,l", [Y + offs], dtype=tl.int32, is_pure=False,
                                  pack=1)
    tl.store(Z + offs, z)


@pytest.mark.parametrize("target", DEVICE)
def test_impure_asm_stays_after_a_store(target):
    rng = np.random.default_rng(11)
    x = rng.integers(-1000, 1000, 1024).astype(np.int32)
    y, z = poison(1024, np.int32), poison(1024, np.int32)
    ck = launch(target, store_then_asm_load_kernel, (4,), x, y, z, BLOCK=256)
    if ck is not None:
        ptx = ck.asm["ptx"]
        assert ptx.index("st.global") < ptx.index("bar.sync") < ptx.index("ld.global.b32 %r")
        return
    np.testing.assert_array_equal(z, 3 * x)


# ---- kernels written for Triton (import triton.language as tl) ---------------------------------------------------
TRITON_FILE = '''
import triton
import triton.language as tl


@triton.jit
def rotl_kernel(X, Y, Z, n: tl.constexpr, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    y = tl.load(Y + tl.arange(0, BLOCK))
    s = tl.full([BLOCK], n, tl.int32)
    z = tl.inline_asm_elementwise("shf.l.wrap.b32 $0, $1, $2, $3;", "=r, r, r, r", [x, y, s], dtype=tl.int32,
                                  is_pure=True, pack=1)
    tl.store(Z + tl.arange(0, BLOCK), z)
'''


@pytest.mark.parametrize("target", DEVICE)
def test_through_the_triton_compat_layer(target, tmp_path):
    from compiler.triton_compat import load_kernel_file

    path = tmp_path / "triton_kernels.py"
    path.write_text(textwrap.dedent(TRITON_FILE))
    mod = load_kernel_file(str(path))
    rng = np.random.default_rng(12)
    x = rng.integers(0, 2**32, 128, dtype=np.uint64).astype(np.uint32)
    y = rng.integers(0, 2**32, 128, dtype=np.uint64).astype(np.uint32)
    z = poison(128, np.uint32)
    n = 13
    if launch(target, mod.rotl_kernel, (1,), x, y, z, n=n, BLOCK=128) is None:
        # shf.l.wrap: the high word of (y:x) << n
        want = ((y.astype(np.uint64) << n) | (x.astype(np.uint64) >> (32 - n))) & 0xFFFFFFFF
        np.testing.assert_array_equal(z, want.astype(np.uint32))


# ---- the interpreter cannot run PTX ---------------------------------------------------------------------------
def test_interpreter_refuses_it():
    x = np.ones(100, np.float32)
    y = poison(100, np.float32)
    with pytest.raises(compiler.CompilationError) as e:
        ex2_kernel[(1,)](x, y, 100, BLOCK=128)
    msg = str(e.value)
    assert "tl.inline_asm_elementwise runs PTX: it needs a GPU; the interpreter cannot run it" in msg
    src, first = inspect.getsourcelines(ex2_kernel.fn)
    line = first + next(i for i, t in enumerate(src) if "inline_asm_elementwise" in t)  # the call's line
    assert f"test_inline_asm.py:{line}:9:" in msg and "^" in msg
    frames = [f.filename for f in traceback.extract_tb(e.value.__traceback__)]
    assert not any("compiler/interpreter" in f for f in frames), frames  # no traceback into the interpreter
    assert np.isnan(y).all()  # nothing ran


# ---- mistakes are errors at the call ------------------------------------------------------------------------------
@compiler.jit
def bad_kernel(X, Y, WHICH: tl.constexpr):
    x = tl.load(X + tl.arange(0, 64))
    if WHICH == 0:
        y = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [x], dtype=tl.int8, is_pure=True, pack=4)
    elif WHICH == 1:
        y = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r,r", [x], dtype=tl.int32, is_pure=True, pack=1)
    elif WHICH == 2:
        y = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=h,h", [x], dtype=tl.int32, is_pure=True, pack=1)
    elif WHICH == 3:
        y = tl.inline_asm_elementwise("mov.b32 $0, $1;", "+r", [x], dtype=tl.int32, is_pure=True, pack=1)
    elif WHICH == 4:
        y = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [x > 0], dtype=tl.int32, is_pure=True, pack=1)
    elif WHICH == 5:
        y = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [x], dtype=(), is_pure=True, pack=1)
    elif WHICH == 6:
        y = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [x], dtype=tl.int32, is_pure=True, pack=0)
    elif WHICH == 7:
        y = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=f,f", [x.to(tl.float16)], dtype=tl.float16,
                                      is_pure=True, pack=1)
    else:
        y = tl.inline_asm_elementwise("mov.b32 $0, $1;", "r,=r", [x], dtype=tl.int32, is_pure=True, pack=1)
    tl.store(Y + tl.arange(0, 64), y)


@pytest.mark.parametrize("which, msg", [
    (0, r"name 1 output and 1 input, but with pack=4 one asm instance has 1 output register \[\$0: result 0 "
        r"\(4 x int8\)\] and 4 input registers \[\$1: argument 0 \(int32\), \$2: argument 0 \(int32\)"),
    (1, r"name 1 output and 2 inputs, but with pack=1 one asm instance has 1 output register"),
    (2, r"\$0 is result 0 \(int32\), 32 bits, in a 'h' register of 16 bits: use 'r'"),
    (3, r"'\+' \(read-write\) constraint is not LLVM's"),
    (4, r"argument 0 is int1: .*\.to\(tl\.int8\)"),
    (5, r"needs at least one result dtype"),
    (6, r"pack must be a constant int >= 1, got int 0"),
    (7, r"\$0 is result 0 \(float16\), 16 bits, in a 'f' register \(32-bit float\)"),
    (8, r"outputs \('=\.\.\.'\) must come before the inputs"),
])
def test_mistakes_name_the_call(which, msg):
    x = np.zeros(64, np.int32)
    y = np.zeros(64, np.int32)
    with pytest.raises(compiler.CompilationError, match=msg) as e:
        bad_kernel.warmup(x, y, WHICH=which, grid=(1,), target=SM)
    assert re.search(r"test_inline_asm\.py:\d+:13: tl\.inline_asm_elementwise", str(e.value)), str(e.value)


def test_ir_text_keeps_multiline_asm():
    """The tile IR prints each op on one line (newlines and tabs escaped) and parses back to the same asm."""
    a = np.zeros(16, np.uint8)
    c, d = np.zeros(16, np.int16), np.zeros(16, np.uint8)
    fn = widen_two_kernel.lower(a, c, d, 16, BLOCK=16).function
    text = print_function(fn)
    assert "\\n" in text and 'constraints="=r,=r,=r,r"' in text
    again = parse_function(text)
    assert print_function(again) == text
    ops = [o for o in again.walk() if o.kind == "inline_asm"]
    assert len(ops) == 1 and "\n" in ops[0].attrs["asm"] and len(ops[0].results) == 2
    assert ops[0].attrs["pack"] == 4
