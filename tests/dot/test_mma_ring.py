"""mma.sync dots on the copy ring (passes/pipeline.py `_pipeline_async`, codegen/dot.py `_slot_operand`): a one-dot K
loop whose dot runs on mma.sync (fp64; tf32 before sm_90a; 16-bit and int8 blocks under 64 rows or of fewer than
four warps) takes a copy ring: cp.async into shared-memory slots, 16-bit operands read by ldmatrix from swizzled
slots, wider ones by shared loads from padded slots, instead of loads into registers stored to shared memory every
iteration (H100: a 32-row fp16 GEMM 0.578 of the time, two warps 0.642). Checked against float64 (exact for
integers) on the interpreter (the spec: the pass never runs there), ptxas and the GPU; the ring's structure on
CPU."""
import math

import numpy as np
import pytest

import compiler
from compiler.ir import types as T

from ..ops.test_ops import TARGETS, assert_close, assert_exact, poison, run
from . import kernels as K
from compiler import language as tl

ACC = {"float16": tl.float32, "bfloat16": tl.float32, "float32": tl.float32, "float64": tl.float64, "int8": tl.int32}
OUT = {"float16": "float32", "bfloat16": "float32", "float32": "float32", "float64": "float64", "int8": "int32"}
TOL = {"float16": 2e-3, "bfloat16": 1e-2, "float32": 2e-3, "float64": 1e-12}


def _operands(dtype, M, N, Kd, a_t, b_t, rng):
    if dtype == "int8":
        a, b = rng.integers(-8, 8, (M, Kd), dtype=np.int8), rng.integers(-8, 8, (Kd, N), dtype=np.int8)
    else:
        a = rng.uniform(-1, 1, (M, Kd)).astype(T.from_name(dtype).np)
        b = rng.uniform(-1, 1, (Kd, N)).astype(T.from_name(dtype).np)
    # A stored K-major (its copies run along M), B stored N-major ([N, K] row-major: its copies run along K)
    arr_a, (sam, sak) = (np.ascontiguousarray(a.T), (1, M)) if a_t else (a, (Kd, 1))
    arr_b, (sbk, sbn) = (np.ascontiguousarray(b.T), (1, Kd)) if b_t else (b, (N, 1))
    return arr_a, arr_b, a, b, (sam, sak, sbk, sbn)


# (M, N, K, BM, BN, BK, num_warps): blocks of 16 and 32 rows (no wgmma), two warps, masks on M, N and K tails
CONFIGS = [(100, 72, 200, 16, 64, 64, 4), (96, 80, 96, 32, 32, 32, 2), (130, 64, 160, 32, 64, 32, 4),
           (64, 128, 128, 64, 64, 32, 2)]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64", "int8"])
@pytest.mark.parametrize("a_t,b_t", [(False, False), (True, True)])
@pytest.mark.parametrize("stages", [2, 3])
@pytest.mark.parametrize("M,N,Kd,BM,BN,BK,nw", CONFIGS)
def test_mma_dot_k_loop(target, dtype, a_t, b_t, stages, M, N, Kd, BM, BN, BK, nw):
    if target == "interp" and stages == 2:
        pytest.skip("the interpreter runs the frontend's IR: no pipeline pass, the stages change nothing")
    rng = np.random.default_rng(hash((dtype, a_t, b_t, stages, M, N, Kd, BM)) % 2**32)
    check_dot_loop(target, dtype, a_t, b_t, stages, (M, N, Kd, BM, BN, BK, nw), "tf32", TOL.get(dtype, 0), rng)


def check_dot_loop(target, dtype, a_t, b_t, stages, config, precision, tol, rng):
    """masked_dot_loop_kernel on operands of `dtype` (a, b stored transposed where a_t, b_t) at config (M, N, K, BM,
    BN, BK, num_warps), against float64 (exact for integers)."""
    M, N, Kd, BM, BN, BK, nw = config
    arr_a, arr_b, a, b, strides = _operands(dtype, M, N, Kd, a_t, b_t, rng)
    out = OUT[dtype]
    c = poison((M, N), out)
    run(target, K.masked_dot_loop_kernel, (compiler.cdiv(M, BM), compiler.cdiv(N, BN)), [arr_a, arr_b, c],
        [M, N, Kd, *strides, N, 1], BM=BM, BN=BN, BK=BK, ACC=ACC[dtype], PRECISION=precision, num_warps=nw,
        num_stages=stages)
    if target == "ptxas":
        return
    if dtype == "int8":
        assert_exact(c, a.astype(np.int64) @ b.astype(np.int64))
        return
    assert_close(c, a.astype(np.float64) @ b.astype(np.float64), out, rtol=tol, atol=tol * math.sqrt(Kd))


def _loop(dtype, arch, BM=32, BN=64, BK=32, nw=4, a_t=False, no_ring=False):
    from compiler.options import Options
    from compiler.passes import run_pipeline

    M, N, Kd = 96, 128, 128
    arr_a, arr_b, a, b, strides = _operands(dtype, M, N, Kd, a_t, False, np.random.default_rng(0))
    c = np.zeros((M, N), T.from_name(OUT[dtype]).np)
    mod = K.masked_dot_loop_kernel.lower(arr_a, arr_b, c, M, N, Kd, *strides, N, 1, BM=BM, BN=BN, BK=BK,
                                         ACC=ACC[dtype], PRECISION="tf32")
    mod = run_pipeline(mod, Options(num_warps=nw, num_stages=3, arch=arch, debug_no_async_copy=no_ring))
    return next(op for op in mod.function.body.walk() if op.kind == "for")


@pytest.mark.parametrize("dtype,padded", [("float16", False), ("bfloat16", False), ("float32", True),
                                          ("float64", True), ("int8", True)])
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_ring_replaces_the_register_pipeline(dtype, padded, arch):
    """Both operand loads become ring copies read by the dot from two slot views (16-bit slots swizzled for
    ldmatrix, wider ones padded); with the ring turned off (debug_no_async_copy) the loop keeps its loads (the
    register pipeline)."""
    if dtype == "float64" and arch == "sm_80":
        pytest.skip("fp64 dots run on FMAs before sm_90 (the FMA dot's ring, tests/dot/test_fma_ring.py)")
    loop = _loop(dtype, arch, no_ring=True)
    assert "_ring" not in loop.attrs and any(op.kind == "load" for op in loop.blocks[0].ops)
    loop = _loop(dtype, arch)
    ring = loop.attrs.get("_ring")
    assert ring is not None and ring["padded"] == (padded, padded)
    body = loop.blocks[0].ops
    assert "load" not in [op.kind for op in body]
    dot = next(op for op in body if op.kind == "dot")
    assert [v.owner.kind for v in dot.operands[:2]] == ["smem_view", "smem_view"]


def test_wgmma_loops_keep_their_ring():
    """A dot on wgmma (64-row blocks of a warpgroup on sm_90a) is not an mma.sync dot: its ring is the swizzled one
    and its dot reads the slots through descriptors."""
    loop = _loop("float16", "sm_90a", BM=64)
    assert loop.attrs["_ring"]["padded"] == (False, False)
    dot = next(op for op in loop.blocks[0].ops if op.kind == "dot")
    assert dot.attrs["_layouts"][0].version == 3


def test_ring_ptx():
    """The 16-bit ring's PTX for a 32x64x32 loop: cp.async copies, ldmatrix reads, no global load in the loop;
    ptxas assembles it without spills."""
    import re

    from compiler.codegen.ptx import find_ptxas, ptx_resources

    M = N = Kd = 256
    a = np.zeros((M, Kd), np.float16)
    b = np.zeros((Kd, N), np.float16)
    c = np.zeros((M, N), np.float32)
    ck = K.masked_dot_loop_kernel.warmup(a, b, c, M, N, Kd, Kd, 1, N, 1, N, 1, grid=(8, 4), target="sm_90a", BM=32,
                                         BN=64, BK=32, ACC=tl.float32, PRECISION="tf32", num_warps=4, num_stages=3)
    ptx = ck.asm["ptx"]
    assert "cp.async.cg.shared.global" in ptx and "cp.async.wait_group" in ptx
    # a's fragments and b's two k16 steps (K = 32) four matrices an ldmatrix
    assert "ldmatrix.sync.aligned.m8n8.x4.shared.b16" in ptx and "ldmatrix.sync.aligned.m8n8.x4.trans" in ptx
    assert "ldmatrix.sync.aligned.m8n8.x2" not in ptx
    assert not re.search(r"\bld\.global", ptx) and "mma.sync.aligned.m16n8k16" in ptx
    if find_ptxas() is not None:
        r = ptx_resources(ptx, "sm_90a")
        assert r["spill_stores"] == 0


@pytest.mark.parametrize("BM,BN,BK,nw,arch", [(128, 128, 64, 8, "sm_80"), (128, 128, 32, 4, "sm_80"),
                                              (64, 64, 32, 2, "sm_90a"), (32, 128, 64, 4, "sm_90a")])
def test_ring_leaves_registers_for_the_fragments(BM, BN, BK, nw, arch):
    """An mma.sync dot's ring (num_stages - 1 slots, no block count told to ptxas) leaves ptxas the registers for the
    accumulator and the operand fragments read from the slot before the mmas: no spills (128x128x64 on 8 warps
    spilled 244 bytes when a ring sized for a second block told ptxas to fit one counting only the accumulator)."""
    from compiler.codegen.ptx import find_ptxas, ptx_resources

    if find_ptxas() is None:
        pytest.skip("ptxas not found")
    a = np.zeros((256, 256), np.float16)
    c = np.zeros((256, 256), np.float32)
    ck = K.masked_dot_loop_kernel.warmup(a, a, c, 256, 256, 256, 256, 1, 256, 1, 256, 1, grid=(2, 2), target=arch,
                                         BM=BM, BN=BN, BK=BK, ACC=tl.float32, PRECISION="tf32", num_warps=nw,
                                         num_stages=3)
    ptx = ck.asm["ptx"]
    assert "ldmatrix" in ptx and "cp.async" in ptx
    assert ptx_resources(ptx, arch)["spill_stores"] == 0


def test_mma_sync_ring_depth():
    """An mma.sync dot's ring keeps num_stages - 1 slots and loads as many iterations ahead (its copies write the slot
    the iteration's dot read, behind a barrier: tests/dot/test_sync_ring.py); a wgmma loop's keeps num_stages slots,
    one more than it loads ahead. (num_stages - 1 slots loading one iteration less far ahead, the retired A/B
    `ring_sync_shallow`, measured 1.057 over the 12 skinny GEMMs: docs/EXPERIMENTS.md.)"""
    from compiler.options import Options
    from compiler.passes import run_pipeline

    def ring(BM):
        a = np.zeros((96, 128), np.float16)
        b = np.zeros((128, 128), np.float16)
        c = np.zeros((96, 128), np.float32)
        mod = K.masked_dot_loop_kernel.lower(a, b, c, 96, 128, 128, 128, 1, 128, 1, 128, 1, BM=BM, BN=64, BK=32,
                                             ACC=tl.float32, PRECISION="tf32")
        mod = run_pipeline(mod, Options(num_warps=4, num_stages=4, arch="sm_90a"))
        r = next(op for op in mod.function.body.walk() if op.kind == "for").attrs["_ring"]
        return r["stages"], r["ahead"]
    assert ring(32) == (3, 3) and ring(64) == (4, 3)


@pytest.mark.parametrize("target", [t for t in TARGETS if getattr(t, "values", (t,))[0] != "interp"])
@pytest.mark.parametrize("stages", [2, 3, 4])
def test_mma_sync_ring_results(target, stages):
    rng = np.random.default_rng(stages)
    M, N, Kd = 100, 72, 200
    arr_a, arr_b, a, b, strides = _operands("float16", M, N, Kd, False, False, rng)
    c = poison((M, N), "float32")
    run(target, K.masked_dot_loop_kernel, (compiler.cdiv(M, 32), compiler.cdiv(N, 64)), [arr_a, arr_b, c],
        [M, N, Kd, *strides, N, 1], BM=32, BN=64, BK=32, ACC=tl.float32, PRECISION="tf32", num_warps=4,
        num_stages=stages)
    if target != "ptxas":
        assert_close(c, a.astype(np.float64) @ b.astype(np.float64), "float32", rtol=2e-3, atol=2e-3 * math.sqrt(Kd))


@pytest.mark.parametrize("dtype,Kd,prec,arch,second", [
    ("float64", 1000, "tf32", "sm_90a", 32 * 16 * 8), ("float32", 1002, "tf32", "sm_80", 32 * (16 * 4 + 16)),
    ("float32", 1002, "ieee", "sm_90a", None), ("float64", 1000, "tf32", "sm_80", None)])
def test_unaligned_rows_ring(dtype, Kd, prec, arch, second):
    """Rows aligned to 8 or 4 bytes only (K = 1000 doubles, 1002 floats): an mma.sync dot's ring takes them by
    8- and 4-byte copies into its padded slots, rounded to 128 bytes, not 1024 (the first form of the narrow copies
    lost to that rounding: the fp64 32x32x16 GEMM 1.115, 7 blocks an SM; with 128-byte slots and fp64 slots
    swizzled 0.71 of the time on the H200); an FMA dot (fp32 "ieee") keeps the register pipeline (its ring of narrow
    copies took 168 -> 187 registers on the ragged descriptor matmul; fp64 dots run on FMAs before sm_90)."""
    from compiler.options import Options
    from compiler.passes import run_pipeline

    a = np.zeros((64, Kd), T.from_name(dtype).np)
    b = np.zeros((Kd, 64), T.from_name(dtype).np)
    c = np.zeros((64, 64), T.from_name(dtype).np)
    mod = K.masked_dot_loop_kernel.lower(a, b, c, 64, 64, Kd, Kd, 1, 64, 1, 64, 1, BM=32, BN=32, BK=16,
                                         ACC=ACC[dtype], PRECISION=prec)
    mod = run_pipeline(mod, Options(num_warps=2, num_stages=3, arch=arch))
    attrs = next(op for op in mod.function.body.walk() if op.kind == "for").attrs
    assert ("_ring" in attrs) == (second is not None)
    if second is not None:  # where the second operand's slot starts in a stage: the first's bytes (swizzled fp64
        # rows unpadded, fp32 rows padded by 16 bytes) rounded to 128
        assert attrs["_ring"]["bases"][1] == second


@pytest.mark.parametrize("target", [t for t in TARGETS if getattr(t, "values", (t,))[0] != "interp"])
@pytest.mark.parametrize("dtype,Kd,prec", [("float64", 1000, "tf32"), ("float32", 1002, "ieee"),
                                           ("float32", 998, "tf32"), ("float64", 1024, "tf32")])
def test_unaligned_rows_results(target, dtype, Kd, prec):
    """Rows 8- or 4-byte aligned ride the ring by narrow copies into 128-byte slots, fp64 slots swizzled instead
    of padded; aligned fp64 rows (K = 1024) take the swizzled slots alone."""
    rng = np.random.default_rng(Kd)
    M, N = 70, 40
    a = rng.uniform(-1, 1, (M, Kd)).astype(T.from_name(dtype).np)
    b = rng.uniform(-1, 1, (Kd, N)).astype(T.from_name(dtype).np)
    c = poison((M, N), dtype)
    run(target, K.masked_dot_loop_kernel, (compiler.cdiv(M, 32), compiler.cdiv(N, 32)), [a, b, c],
        [M, N, Kd, Kd, 1, N, 1, N, 1], BM=32, BN=32, BK=16, ACC=ACC[dtype], PRECISION=prec, num_warps=2,
        num_stages=3)
    if target != "ptxas":
        tol = 1e-12 if dtype == "float64" else (1e-5 if prec == "ieee" else 2e-3)
        assert_close(c, a.astype(np.float64) @ b.astype(np.float64), dtype, rtol=tol, atol=tol * math.sqrt(Kd))


def test_fp64_slots_swizzled_not_padded():
    """An fp64 mma.sync ring slot: XOR-swizzled 16-byte chunks instead of 16 bytes of padding a row (the fragment
    reads conflict-free): a 64x64x16 tile pair, 16384 bytes a slot (18432 padded), 2 slots at 3 stages."""
    from compiler.options import Options
    from compiler.passes import run_pipeline

    a = np.zeros((128, 1024), np.float64)
    c = np.zeros((128, 128), np.float64)
    mod = K.masked_dot_loop_kernel.lower(a, a.T.copy(), c, 128, 128, 1024, 1024, 1, 128, 1, 128, 1, BM=64, BN=64,
                                         BK=16, ACC=tl.float64, PRECISION="tf32")
    mod = run_pipeline(mod, Options(num_warps=4, num_stages=3, arch="sm_90a"))
    ring = next(op for op in mod.function.body.walk() if op.kind == "for").attrs["_ring"]
    assert ring["stage_bytes"] == 16384 and ring["stages"] == 2, (ring["stage_bytes"], ring["stages"])