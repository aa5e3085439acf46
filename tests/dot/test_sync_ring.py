"""A copy ring whose one dot reads its operands from the slot itself (mma.sync's ldmatrix, the FMA dot's shared loads)
is done with the slot when the dot returns, so behind the barrier after the dot the copies write the slot this
iteration read: num_stages - 1 slots (at least 2) hold num_stages - 1 iterations in flight, as Triton's ring for these
dots does (passes/pipeline.py `_pipeline_async`, codegen/dot.py `_slot_offset`; was the A/B `sync_ring`). Results
against float64 (exact for integers) on ptxas and the GPU (the interpreter runs the frontend's IR: no pipeline there),
with K steps fewer than, as many as and more than the slots; the ring's structure and the shared memory it takes on
CPU. A wgmma ring, whose dot reads the slot asynchronously, never has its copies write the slot it is reading."""
import numpy as np
import pytest

import compiler
from compiler import language as tl

from ..ops.test_ops import TARGETS
from . import kernels as K
from .test_mma_ring import ACC, TOL, _operands, check_dot_loop

GPU_OR_PTXAS = [t for t in TARGETS if getattr(t, "values", (t,))[0] != "interp"]


# (M, N, K, BM, BN, BK, num_warps): mma.sync at 16 and 32 rows and on 2 and 8 warps; K of 1, 3 and 7 steps of BK
CONFIGS = [(40, 128, 64, 16, 64, 64, 4), (100, 72, 96, 32, 32, 32, 2), (130, 128, 224, 32, 128, 32, 8)]


@pytest.mark.parametrize("target", GPU_OR_PTXAS)
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int8"])
@pytest.mark.parametrize("stages", [2, 3, 4])
@pytest.mark.parametrize("M,N,Kd,BM,BN,BK,nw", CONFIGS)
def test_sync_ring_results(target, dtype, stages, M, N, Kd, BM, BN, BK, nw):
    # float32: "ieee", the FMA dot's ring (tf32 on 16/32-row blocks is mma.sync, as float16 is)
    check_dot_loop(target, dtype, dtype == "float16", False, stages, (M, N, Kd, BM, BN, BK, nw), "ieee",
                   TOL.get(dtype, 0) if dtype != "float32" else 1e-5,
                   np.random.default_rng(hash((dtype, stages, M, BM, nw)) % 2**32))


def _ring(dtype="float16", BM=16, nw=4, stages=4, precision="ieee"):
    from compiler.options import Options
    from compiler.passes import run_pipeline

    M, N, Kd = 96, 128, 256
    arr_a, arr_b, a, b, strides = _operands(dtype, M, N, Kd, False, False, np.random.default_rng(0))
    c = np.zeros((M, N), np.float32 if dtype != "float64" else np.float64)
    mod = K.masked_dot_loop_kernel.lower(arr_a, arr_b, c, M, N, Kd, *strides, N, 1, BM=BM, BN=64, BK=64,
                                         ACC=ACC[dtype], PRECISION=precision)
    mod = run_pipeline(mod, Options(num_warps=nw, num_stages=stages, arch="sm_90a"))
    return next(op for op in mod.function.body.walk() if op.kind == "for").attrs["_ring"]


@pytest.mark.parametrize("dtype,nw", [("float16", 4), ("float16", 8), ("float32", 4), ("float64", 4)])
@pytest.mark.parametrize("stages", [2, 3, 4])
def test_sync_ring_slots(dtype, nw, stages):
    ring = _ring(dtype, nw=nw, stages=stages)
    assert ring["stages"] == max(2, stages - 1) and ring["ahead"] == ring["stages"]


@pytest.mark.parametrize("BM,nw,stages", [(64, 4, 3), (128, 8, 3), (64, 4, 4)])
def test_wgmma_ring_reads_ahead_of_its_copies(BM, nw, stages):
    ring = _ring(BM=BM, nw=nw, stages=stages)
    assert ring["ahead"] < ring["stages"]


def test_decode_gemm_shared_memory(monkeypatch, tmp_path):
    """16 x 64 x 128 fp16, 4 stages: 3 slots of 20 KiB (three blocks an SM), Triton's 61,440 bytes (4 slots before)."""
    monkeypatch.setenv("TILEFARM_CACHE_DIR", str(tmp_path))
    M, N, Kd = 16, 256, 1024
    a, b, c = np.zeros((M, Kd), np.float16), np.zeros((Kd, N), np.float16), np.zeros((M, N), np.float32)
    ck = K.masked_dot_loop_kernel.warmup(a, b, c, M, N, Kd, Kd, 1, N, 1, N, 1, grid=(1, 4), target="sm_90a",
                                         BM=16, BN=64, BK=128, ACC=tl.float32, PRECISION="tf32", num_warps=4,
                                         num_stages=4)
    assert int(ck.metadata["shared_bytes"]) == 3 * 20480
