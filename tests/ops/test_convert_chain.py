"""(A/B `convert_chain`) After the layout pass, a conversion of a conversion converts the first one's source: a
column bias loaded in a 1-D layout went to a slice of the blocked layout and then to a slice of the wgmma
accumulator's layout, two trips through shared memory (two barrier pairs) for one. Under the switch no
convert_layout reads another's result, the kernel's barriers fall, and its results are unchanged (the interpreter
and ptxas here, the GPU in the gpu-marked run)."""
import numpy as np
import pytest

import compiler
import compiler.language as tl

from .test_ops import TARGETS, poison, run


@compiler.jit
def mm_rowbias_kernel(A, B, BIAS, C, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(A + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(B + (k + rk)[:, None] * N + rn[None, :])
        acc += tl.dot(a, b)
    bias = tl.load(BIAS + rm, mask=rm < M, other=0.0).to(tl.float32)
    acc += bias[:, None]
    tl.store(C + rm[:, None] * N + rn[None, :], acc.to(tl.float16))


def _args(M=128, N=128, K=128):
    rng = np.random.default_rng(71)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    bias = rng.standard_normal(M).astype(np.float16)
    return a, b, bias


META = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, num_warps=8)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("ab", ["", "convert_chain"])
def test_results(target, ab, monkeypatch):
    monkeypatch.setenv("TILEFARM_AB", ab)
    a, b, bias = _args()
    c = poison(128 * 128, "float16")
    run(target, mm_rowbias_kernel, (1, 1), [a, b, bias, c], [128, 128, 128], **META)
    ref = a.astype(np.float64) @ b.astype(np.float64) + bias.astype(np.float64)[:, None]
    np.testing.assert_allclose(c.reshape(128, 128).astype(np.float64), ref, rtol=2e-2, atol=5e-2)


def test_one_conversion_fewer(monkeypatch):
    a, b, bias = _args()
    c = np.zeros((128, 128), np.float16)
    got = {}
    for ab in ("", "convert_chain"):
        monkeypatch.setenv("TILEFARM_AB", ab)
        ck = mm_rowbias_kernel.warmup(a, b, bias, c, 128, 128, 128, grid=(1, 1), target="sm_90a", **META)
        got[ab] = ck.asm["ptx"].count("bar.sync")
    assert got["convert_chain"] < got[""], got
