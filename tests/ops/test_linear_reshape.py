"""A reshape of an MMA-layout value keeps its elements in place, in a layout given by its
linear bases: a matmul's subtiled epilogue (acc.reshape(BM, 2, BN // 2).permute(0, 2, 1).split(), Triton's
persistent-matmul tutorial) no longer sends the whole float32 accumulator through shared memory; each half is
converted (bf16) for its 16-byte stores (64 shared stores; 161 when the reshape left the MMA layout).
Results checked in the interpreter, through ptxas and on the GPU."""
import re

import numpy as np
import pytest

import compiler
import compiler.language as tl

from .test_ops import TARGETS, poison, run


@compiler.jit
def subtiled_kernel(A, B, C, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        a = tl.load(A + rm[:, None] * K + (k0 + rk)[None, :])
        b = tl.load(B + (k0 + rk)[:, None] * BN + rn[None, :])
        acc = tl.dot(a, b, acc)
    acc = tl.reshape(acc, (BM, 2, BN // 2))
    acc = tl.permute(acc, (0, 2, 1))
    c0, c1 = tl.split(acc)
    rh = tl.arange(0, BN // 2)
    tl.store(C + rm[:, None] * BN + rh[None, :], c0.to(tl.bfloat16))
    tl.store(C + rm[:, None] * BN + (BN // 2 + rh)[None, :], c1.to(tl.bfloat16))


def _args():
    rng = np.random.default_rng(12)
    a = rng.standard_normal((128, 64)).astype(np.float16)
    b = rng.standard_normal((64, 128)).astype(np.float16)
    return a, b


def test_split_epilogue_without_the_accumulator_in_shared_memory():
    a, b = _args()
    c = np.zeros((128, 128), tl.bfloat16.np)
    ptx = subtiled_kernel.warmup(a, b, c, 64, grid=(1,), target="sm_90a", BM=128, BN=128, BK=32,
                                 num_warps=4).asm["ptx"]
    assert len(re.findall(r"\bst\.shared", ptx)) <= 64


@pytest.mark.parametrize("target", TARGETS)
def test_split_epilogue_results(target):
    a, b = _args()
    c = poison((128, 128), "bfloat16")
    run(target, subtiled_kernel, (1,), [a, b, c], [64], BM=128, BN=128, BK=32, num_warps=4)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c.astype(np.float64), ref, rtol=1e-2, atol=2e-2)
