"""tf32x3 on wgmma (passes/layouts.py `tf32_wgmma_applies`, codegen/dot.py `_dot_wgmma`; the A/B `tf32x3_wgmma`
until 2026-12-07): a float32 dot of input_precision "tf32x3" runs on wgmma as "tf32" dots do, each operand written
to scratch as its tf32 part and the tf32 of its remainder, the three products (small x big, big x small, big x big)
in one wgmma group; where wgmma does not apply (two warps) three mma.sync m16n8k8 products per fragment. Results
against float64 in the interpreter, through ptxas and on the GPU on both paths (tf32x3 keeps fp32 accuracy: far
inside what one tf32 product allows); the instructions in the PTX."""
import re

import numpy as np
import pytest

import compiler
import compiler.language as tl

from ..ops.test_ops import TARGETS, poison, run


@compiler.jit
def x3_kernel(A, B, C, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
              PREC: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        a = tl.load(A + rm[:, None] * K + (k0 + rk)[None, :], mask=(rm[:, None] < M) & ((k0 + rk)[None, :] < K),
                    other=0.0)
        b = tl.load(B + (k0 + rk)[:, None] * N + rn[None, :], mask=((k0 + rk)[:, None] < K) & (rn[None, :] < N),
                    other=0.0)
        acc = tl.dot(a, b, acc, input_precision=PREC)
    tl.store(C + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("warps", [2, 4, 8])
def test_tf32x3_accuracy(target, warps):
    M, N, K = 150, 136, 200
    rng = np.random.default_rng(21)
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    c = poison((M, N), "float32")
    bm = 16 * warps
    run(target, x3_kernel, (-(-M // bm), -(-N // 64)), [a, b, c], [M, N, K], BLOCK_M=bm, BLOCK_N=64, BLOCK_K=32,
        PREC="tf32x3", num_warps=warps, num_stages=3)
    if target != "ptxas":
        ref = a.astype(np.float64) @ b.astype(np.float64)
        err = np.abs(c - ref).max() / np.abs(ref).max()
        assert not np.isnan(c).any()
        assert err < 2e-6, err  # one tf32 product: about 1e-3


def test_tf32x3_on_wgmma(monkeypatch, tmp_path):
    """wgmma k8 tf32 at 128 rows on 8 warps: three times the instructions of a "tf32" dot of the same tiles, and no
    mma.sync; on two warps (no wgmma) mma.sync m16n8k8."""
    monkeypatch.setenv("TILEFARM_CACHE_DIR", str(tmp_path))
    z = np.zeros((256, 256), np.float32)
    ptx = {}
    for warps, prec in ((8, "tf32x3"), (8, "tf32"), (2, "tf32x3")):
        ptx[warps, prec] = x3_kernel.warmup(z, z, z, 256, 256, 256, grid=(1,), target="sm_90a", BLOCK_M=16 * warps,
                                            BLOCK_N=128 if warps == 8 else 64, BLOCK_K=32, PREC=prec,
                                            num_warps=warps, num_stages=3).asm["ptx"]
    wg = {k: len(re.findall(r"wgmma\.mma_async\S*tf32", p)) for k, p in ptx.items()}
    assert "mma.sync" not in ptx[8, "tf32x3"]
    assert wg[8, "tf32x3"] == 3 * wg[8, "tf32"] > 0, wg
    assert "mma.sync.aligned.m16n8k8" in ptx[2, "tf32x3"] and wg[2, "tf32x3"] == 0
