"""tl.dot_scaled: microscaled (OCP MX) operands, upcast with their e8m0 scales and multiplied with float32
accumulation, against float64 references decoded independently (ml_dtypes' fp4/fp8 formats)."""
import ml_dtypes
import numpy as np
import pytest

import compiler
import compiler.language as tl

from .kernels import TARGETS, poison, run


@compiler.jit
def mx_kernel(A, AS, B, BS, C, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, FA: tl.constexpr,
              FB: tl.constexpr):
    KA: tl.constexpr = K // 2 if FA == "e2m1" else K
    KB: tl.constexpr = K // 2 if FB == "e2m1" else K
    a = tl.load(A + tl.arange(0, M)[:, None] * KA + tl.arange(0, KA)[None, :])
    b = tl.load(B + tl.arange(0, KB)[:, None] * N + tl.arange(0, N)[None, :])
    sa = None
    sb = None
    if AS is not None:
        sa = tl.load(AS + tl.arange(0, M)[:, None] * (K // 32) + tl.arange(0, K // 32)[None, :])
    if BS is not None:
        sb = tl.load(BS + tl.arange(0, N)[:, None] * (K // 32) + tl.arange(0, K // 32)[None, :])
    c = tl.dot_scaled(a, sa, FA, b, sb, FB)
    tl.store(C + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :], c)


def _decode(bits, fmt):
    """float64 values of uint8 codes."""
    if fmt == "e4m3":
        return bits.view(ml_dtypes.float8_e4m3fn).astype(np.float64)
    if fmt == "e5m2":
        return bits.view(ml_dtypes.float8_e5m2).astype(np.float64)
    table = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6], np.float64)
    return table[bits]


def _operand(rng, fmt, rows, cols, k_axis, narrow=False):
    """(array passed to the kernel, float64 values [rows, cols]); `narrow`: fp8 values kept within float16's
    range once scaled (exponent field's top bit cleared)."""
    if fmt in ("bf16", "fp16"):
        v = rng.standard_normal((rows, cols)).astype(np.float32)
        arr = v.astype(ml_dtypes.bfloat16 if fmt == "bf16" else np.float16)
        return arr, arr.astype(np.float64)
    if fmt == "e2m1":
        codes = rng.integers(0, 16, (rows, cols)).astype(np.uint8)
        vals = _decode(codes, fmt)
        if k_axis == 1:
            packed = codes[:, 0::2] | (codes[:, 1::2] << 4)
        else:
            packed = codes[0::2, :] | (codes[1::2, :] << 4)
        return packed.astype(np.uint8), vals
    codes = rng.integers(0, 256, (rows, cols)).astype(np.uint8)
    if narrow:
        codes &= 0xBF
    vals = _decode(codes, fmt)
    bad = ~np.isfinite(vals)
    codes[bad] &= 0x80        # NaN/inf codes -> signed zero
    return codes, _decode(codes, fmt)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fa, fb, scale_a, scale_b", [
    ("e2m1", "bf16", True, False), ("bf16", "e2m1", False, True), ("e4m3", "e5m2", True, True),
    ("e5m2", "fp16", True, False), ("fp16", "e4m3", False, True), ("e2m1", "e2m1", True, True),
])
def test_dot_scaled(target, fa, fb, scale_a, scale_b):
    rng = np.random.default_rng(hash((fa, fb, scale_a, scale_b)) % 2**32)
    M, N, K = 32, 32, 64
    narrow = "fp16" in (fa, fb)
    a, av = _operand(rng, fa, M, K, 1, narrow)
    b, bv = _operand(rng, fb, K, N, 0, narrow)
    lo, hi = (124, 131) if "fp16" in (fa, fb) else (110, 140)
    sa = rng.integers(lo, hi + 1, (M, K // 32)).astype(np.uint8) if scale_a else None
    sb = rng.integers(lo, hi + 1, (N, K // 32)).astype(np.uint8) if scale_b else None
    if sa is not None:
        av = av * np.repeat(2.0 ** (sa.astype(np.float64) - 127), 32, axis=1)
    if sb is not None:
        bv = bv * np.repeat(2.0 ** (sb.astype(np.float64) - 127), 32, axis=1).T
    c = poison((M, N), np.float32)
    run(target, mx_kernel, (1,), a, sa, b, sb, c, M=M, N=N, K=K, FA=fa, FB=fb)
    np.testing.assert_allclose(c, av @ bv, rtol=1e-4, atol=1e-4 * np.abs(av).max() * np.abs(bv).max())


def test_dot_scaled_nan_scale_and_errors():
    rng = np.random.default_rng(1)
    M, N, K = 16, 16, 32
    a, av = _operand(rng, "e4m3", M, K, 1)
    b, bv = _operand(rng, "bf16", K, N, 0)
    sa = np.full((M, K // 32), 127, np.uint8)
    sa[3] = 255                                     # row 3's scale is NaN
    c = poison((M, N), np.float32)
    mx_kernel[(1,)](a, sa, b, None, c, M=M, N=N, K=K, FA="e4m3", FB="bf16")
    assert np.isnan(c[3]).all() and np.isfinite(np.delete(c, 3, axis=0)).all()
    np.testing.assert_allclose(np.delete(c, 3, axis=0), np.delete(av @ bv, 3, axis=0), rtol=1e-4, atol=1e-4)
    with pytest.raises(compiler.CompilationError, match="lhs_format must be one of"):
        mx_kernel[(1,)](a, sa, b, None, c, M=M, N=N, K=K, FA="e3m2", FB="bf16")


@compiler.jit
def mx_tma_kernel(A, B, AS, BS, C, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    """fp8 e5m2 A [M, K] times fp4 B stored [N, K/2] and read transposed, both scaled (Triton's MX TMA test)."""
    a = tl.load(A + tl.arange(0, M)[:, None] * K + tl.arange(0, K)[None, :])
    b = tl.load(B + tl.arange(0, N)[:, None] * (K // 2) + tl.arange(0, K // 2)[None, :])
    sa = tl.load(AS + tl.arange(0, M)[:, None] * (K // 32) + tl.arange(0, K // 32)[None, :])
    sb = tl.load(BS + tl.arange(0, N)[:, None] * (K // 32) + tl.arange(0, K // 32)[None, :])
    c = tl.dot_scaled(a, sa, "e5m2", b.T, sb, "e2m1")
    tl.store(C + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :], c)


def test_dot_scaled_operands_move_in_narrow_types():
    """The upcast moves values as bfloat16 and scale codes as uint8, the products formed where they are: a
    128x256 fp8 times 256x256 fp4 (transposed) block of 4 warps needs 192 KiB of shared memory at most, within a
    block's 227 KiB (moving float32 values it asked for 256 KiB and could not launch)."""
    from compiler.codegen.llvm import emit_llvm
    from compiler.options import Options
    from compiler.passes import run_pipeline
    from compiler.passes.pipeline import SMEM_MAX

    M, N, K = 128, 256, 256
    mod = mx_tma_kernel.lower(np.zeros((M, K), np.uint8), np.zeros((N, K // 2), np.uint8),
                              np.zeros((M, K // 32), np.uint8), np.zeros((N, K // 32), np.uint8),
                              np.zeros((M, N), np.float32), M=M, N=N, K=K)
    mod = run_pipeline(mod, Options(num_warps=4, num_stages=1, arch="sm_90a"))
    converts = [op for op in mod.function.body.ops if op.kind == "convert_layout"
                and op.operands[0].owner.kind != "dot"]  # (the result's own conversion: its 16-byte stores)
    assert all(op.result.type.element.bits <= 16 for op in converts if op.result.type.numel >= 128 * 256)
    _, meta = emit_llvm(mod, Options(num_warps=4, num_stages=1, arch="sm_90a"))
    assert meta["shared_bytes"] <= 192 * 1024 <= SMEM_MAX
