"""(A/B `fma_occ`) An FMA dot's copy-ring loop whose blocks per SM registers bind (shared memory would hold more) is
sized for them and tells ptxas (`.minnctapersm`, passes/pipeline.py `_fma_occupancy`): the ragged fp32 descriptor
matmul's 98 registers, two over the step to a fifth block, become 96 (Triton's, 5 blocks). Where shared memory binds
no hint is given. The same results with and without the switch, in the interpreter, through ptxas and on the GPU."""
import re

import numpy as np
import pytest

import compiler
import compiler.language as tl

from .test_ops import TARGETS, poison, run


@compiler.jit
def fma_mm_kernel(A, B, C, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, STAGES: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k in tl.range(0, K, BK, num_stages=STAGES):
        a = tl.load(A + rm[:, None] * K + (k + rk)[None, :], mask=(rm[:, None] < M) & ((k + rk)[None, :] < K),
                    other=0.0)
        b = tl.load(B + (k + rk)[:, None] * N + rn[None, :], mask=((k + rk)[:, None] < K) & (rn[None, :] < N),
                    other=0.0)
        acc = tl.dot(a, b, acc, input_precision="ieee")
    tl.store(C + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def _hint(ab, stages, monkeypatch):
    monkeypatch.setenv("TILEFARM_AB", ab)
    a, b, c = np.zeros((8, 1024), np.float32), np.zeros((8, 4096), np.float32), np.zeros((8, 4096), np.float32)
    fma_mm_kernel._drop_compiled()
    ptx = fma_mm_kernel.warmup(a, b, c, 4096, 4096, 1024, grid=(1,), target="sm_90a", BM=64, BN=64, BK=32,
                               STAGES=stages, num_warps=4).asm["ptx"]
    assert "fma.rn.f32" in ptx and "cp.async" in ptx  # the FMA dot on its copy ring
    m = re.search(r"\.minnctapersm (\d+)", ptx)
    return int(m.group(1)) if m else None


def test_hint_where_registers_bind(monkeypatch):
    # 2 slots of 64x32 + 32x64 fp32 (32 KiB): shared memory holds 6 blocks, the 32 accumulator registers a thread
    # and 64 more hold 5 of 128 threads
    assert _hint("", 2, monkeypatch) is None
    assert _hint("fma_occ", 2, monkeypatch) == 5


def test_no_hint_where_shared_memory_binds(monkeypatch):
    # 4 slots (64 KiB): shared memory holds 3 blocks, fewer than registers would
    assert _hint("fma_occ", 4, monkeypatch) is None


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("ab", ["", "fma_occ"])
def test_results(target, ab, monkeypatch):
    monkeypatch.setenv("TILEFARM_AB", ab)
    fma_mm_kernel._drop_compiled()
    M, N, K = 150, 90, 100
    rng = np.random.default_rng(7)
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    c = poison((M, N), "float32")
    run(target, fma_mm_kernel, (compiler.cdiv(M, 64), compiler.cdiv(N, 64)), [a, b, c], [M, N, K], BM=64, BN=64,
        BK=32, STAGES=2, num_warps=4)
    if target != "ptxas":
        np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-4, atol=1e-4)
