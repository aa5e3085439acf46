"""FMA dots (fp32 "ieee", fp64, int8 with K blocks below 32) in a K loop take a copy ring (passes/pipeline.py):
cp.async copies into padded shared-memory slots, read by the dot with vector shared loads, instead of loads into
registers stored to shared memory every iteration (H100, 2026-12-05: mm_fp32_ieee in 0.922 of the time).

Targets: the interpreter (CI), ptxas (sm_90, CI) and the GPU (marked gpu); the ring's structure on CPU."""
import math
import re

import numpy as np
import pytest

import compiler
import compiler.language as tl
from compiler.ir import types as T

from ..ops.test_ops import TARGETS, assert_close, assert_exact, poison, run
from . import kernels as K


ACC = {"float32": tl.float32, "float64": tl.float64, "int8": tl.int32}
OUT = {"float32": "float32", "float64": "float64", "int8": "int32"}


def _operands(dtype, M, N, Kd, a_t, rng):
    if dtype == "int8":
        a, b = rng.integers(-8, 8, (M, Kd), dtype=np.int8), rng.integers(-8, 8, (Kd, N), dtype=np.int8)
    else:
        a = rng.uniform(-1, 1, (M, Kd)).astype(T.from_name(dtype).np)
        b = rng.uniform(-1, 1, (Kd, N)).astype(T.from_name(dtype).np)
    if a_t:  # A stored K-major (column-major [M, K]): its copies run along M
        return np.ascontiguousarray(a.T), a, b, (1, M)
    return a, a, b, (Kd, 1)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["float32", "float64", "int8"])
@pytest.mark.parametrize("a_t", [False, True])
@pytest.mark.parametrize("stages", [2, 3, 4])
@pytest.mark.parametrize("M,N,Kd,BM,BN,BK,nw", [(96, 80, 96, 32, 32, 16, 4),   # masks on M, N and K tails
                                                 (100, 64, 77, 64, 64, 32, 4),  # rows not 16-byte aligned: no ring
                                                 (128, 128, 256, 64, 64, 32, 4)])
def test_fma_dot_k_loop(target, dtype, a_t, stages, M, N, Kd, BM, BN, BK, nw):
    if dtype == "int8" and BK >= 32:
        BK = 16  # int8 runs on FMAs below K blocks of 32
    rng = np.random.default_rng(hash((dtype, a_t, stages, M, N, Kd)) % 2**32)
    arr, a, b, (sam, sak) = _operands(dtype, M, N, Kd, a_t, rng)
    out = OUT[dtype]
    c = poison((M, N), out)
    run(target, K.masked_dot_loop_kernel, (compiler.cdiv(M, BM), compiler.cdiv(N, BN)), [arr, b, c],
        [M, N, Kd, sam, sak, N, 1, N, 1], BM=BM, BN=BN, BK=BK, ACC=ACC[dtype], PRECISION="ieee", num_warps=nw,
        num_stages=stages)
    if dtype == "int8":
        assert_exact(c, a.astype(np.int64) @ b.astype(np.int64))
        return
    ref = a.astype(np.float64) @ b.astype(np.float64)
    tol = 1e-5 if dtype == "float32" else 1e-12
    assert_close(c, ref, out, rtol=tol, atol=tol * math.sqrt(Kd))


def _lowered(dtype, a_t, stages, arch, M=96, N=80, Kd=96, BM=32, BN=32, BK=16, nw=4):
    from compiler.options import Options
    from compiler.passes import run_pipeline

    rng = np.random.default_rng(0)
    arr, a, b, (sam, sak) = _operands(dtype, M, N, Kd, a_t, rng)
    c = np.zeros((M, N), T.from_name(OUT[dtype]).np)
    mod = K.masked_dot_loop_kernel.lower(arr, b, c, M, N, Kd, sam, sak, N, 1, N, 1, BM=BM, BN=BN, BK=BK,
                                         ACC=ACC[dtype], PRECISION="ieee")
    return run_pipeline(mod, Options(num_warps=nw, num_stages=stages, arch=arch))


@pytest.mark.parametrize("arch", ["sm_80", "sm_90", "sm_90a"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int8"])
@pytest.mark.parametrize("a_t", [False, True])
def test_fma_dot_operands_come_through_a_ring(arch, dtype, a_t):
    """Both operand loads become ring copies (no load left in the loop, the dot reads two slot views), and each
    slot leaves room for 16 bytes of padding after rows of an even number of 16-byte chunks, rounded to 128 bytes."""
    from compiler.passes.pipeline import fma_slot_bytes

    if dtype == "float64" and arch != "sm_80":
        pytest.skip("fp64 dots run on the fp64 mma.sync from sm_90 (tests/dot/test_dot.py's f64 tests)")
    mod = _lowered(dtype, a_t, 3, arch)
    loop = next(op for op in mod.function.body.walk() if op.kind == "for")
    ring = loop.attrs.get("_ring")
    assert ring is not None and ring["padded"] == (True, True)
    body = loop.blocks[0].ops
    assert "load" not in [op.kind for op in body]
    dot = next(op for op in body if op.kind == "dot")
    assert [v.owner.kind for v in dot.operands[:2]] == ["smem_view", "smem_view"]
    eb = T.from_name(dtype).bits // 8
    assert fma_slot_bytes((32, 16), eb) > 32 * 16 * eb  # padded
    # an all-padded ring's slots are rounded to 128 bytes (a row of the 32 banks), not 1024
    assert ring["stage_bytes"] == sum(-(-fma_slot_bytes(t, eb) // 128) * 128 for t in ring["tiles"])


def test_fma_ring_needs_cp_async():
    """Before sm_80 (no cp.async) the FMA dot's loop keeps its loads."""
    mod = _lowered("float32", False, 3, "sm_75")
    loop = next(op for op in mod.function.body.walk() if op.kind == "for")
    assert "_ring" not in loop.attrs and any(op.kind == "load" for op in loop.blocks[0].ops)


def test_fma_ring_ptx():
    """The ring's PTX for a 64x64x32 fp32 "ieee" loop: cp.async copies of 16 bytes, no global load in the loop,
    128-bit shared loads for the operands; ptxas assembles it without spills."""
    from compiler.codegen.ptx import find_ptxas, ptx_resources

    M = N = Kd = 256
    a = np.zeros((M, Kd), np.float32)
    b = np.zeros((Kd, N), np.float32)
    c = np.zeros((M, N), np.float32)
    ck = K.masked_dot_loop_kernel.warmup(a, b, c, M, N, Kd, Kd, 1, N, 1, N, 1, grid=(4, 4), target="sm_90a", BM=64,
                                         BN=64, BK=32, ACC=tl.float32, PRECISION="ieee", num_warps=4, num_stages=3)
    ptx = ck.asm["ptx"]
    assert "cp.async.cg.shared.global" in ptx and "cp.async.wait_group" in ptx
    assert not re.search(r"\bld\.global", ptx) and "ld.shared.v4" in ptx and "fma.rn.f32" in ptx
    if find_ptxas() is not None:
        r = ptx_resources(ptx, "sm_90a")
        assert r["spill_stores"] == 0



@pytest.mark.parametrize("op_idx,shape,inner", [(0, (64, 32), 1), (1, (32, 64), 1), (0, (64, 32), 0),
                                                (1, (32, 64), 0), (1, (16, 128), 1)])
@pytest.mark.parametrize("eb", [4, 8])
def test_padded_slot_reads_follow_the_layout(op_idx, shape, inner, eb):
    """An FMA operand read from a padded ring slot (codegen/dot.py _load_padded): every vector's lanes are the
    registers whose elements lie at consecutive addresses, and each run's distance from the thread's first run is
    the same in every thread, checked against SwizzledTile.py_offset for every thread of the block."""
    from compiler.codegen.dot import SwizzledTile, _inner_run_bits, padded_read_plan
    from compiler.passes.layouts import DotOperandLayout, default_blocked, linear
    from compiler.passes.pipeline import slot_row_pad

    nw = 4
    res = default_blocked((64, 64) if shape != (16, 128) else (64, 128), 4, nw)
    ll = linear(DotOperandLayout(op_idx, res), shape, nw)
    pad = slot_row_pad(min(shape[inner], 128 // eb) * eb)
    st = SwizzledTile(shape, inner, eb, pad=pad)
    bits = _inner_run_bits(st, ll)
    v = 1 << len(bits)
    starts, members, deltas = padded_read_plan(st, ll, bits, nw)
    assert v * eb <= 16 and deltas is not None and sorted(r for m in members.values() for r in m) == list(
        range(ll.num_regs))
    for t in ll.thread_coords(nw):
        def addr(r):
            c = ll.reg_coord(r)
            return st.py_offset(t[st.outer] + c[st.outer], t[st.inner] + c[st.inner])
        for r0 in starts:
            assert addr(r0) - addr(starts[0]) == deltas[r0]
            for i, r in enumerate(members[r0]):
                assert addr(r) == addr(r0) + i * eb
            assert addr(r0) % (v * eb) == 0  # the vector's alignment
