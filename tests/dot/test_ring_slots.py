"""The slot a copy ring's copies write. In a one-dot loop the copies `ahead` iterations on write the slot that
iteration i - (stages - ahead) read, carried from the iterations before (`carry_prev`: no add, compare and select
on the way to the copies); loops of several dots compute it. Checked on the pass's decision, on the LLVM IR (the
carried slots start as the slots after the prologue's) and against float64 on every target with loops shorter
than, as long as and longer than the ring."""
import re

import numpy as np
import pytest

import compiler
import compiler.language as tl

from ..ops.test_ops import TARGETS, assert_close, poison, run
from .test_loop_operands import _loop, _pipeline


@compiler.jit
def _mm(A, B, C, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(A + rm[:, None] * K + (k + rk)[None, :], mask=rm[:, None] < M, other=0.0)
        b = tl.load(B + (k + rk)[:, None] * N + rn[None, :], mask=rn[None, :] < N, other=0.0)
        acc += tl.dot(a, b)
    tl.store(C + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@compiler.jit
def _two_dots(Q, K, V, O, L, D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    # o = sum over key blocks of (q k^T) v: two dots a loop iteration
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rd = tl.arange(0, D)
    q = tl.load(Q + rm[:, None] * D + rd[None, :])
    acc = tl.zeros((BM, D), dtype=tl.float32)
    for n0 in range(0, L, BN):
        rn = n0 + tl.arange(0, BN)
        k = tl.load(K + rn[:, None] * D + rd[None, :])
        v = tl.load(V + rn[:, None] * D + rd[None, :])
        s = tl.dot(q, tl.trans(k))
        acc += tl.dot(s.to(tl.float16), v)
    tl.store(O + rm[:, None] * D + rd[None, :], acc)


def _mm_args(M=72, N=80, K=96):
    return [np.zeros((M, K), np.float16), np.zeros((K, N), np.float16), np.zeros((M, N), np.float32)], [M, N, K]


@pytest.mark.parametrize("stages", [2, 3, 4, 5])
def test_one_dot_loop_carries_the_slots(stages):
    arrays, scalars = _mm_args()
    mod = _pipeline(_mm, arrays + scalars, dict(BM=64, BN=64, BK=32), 4, stages=stages)
    spec = _loop(mod).attrs["_ring"]
    assert spec["carry_prev"] and 0 < spec["ahead"] < spec["stages"]


def test_two_dot_loop_computes_the_slot():
    L, D = 256, 64
    arrays = [np.zeros((64, D), np.float16), np.zeros((L, D), np.float16), np.zeros((L, D), np.float16),
              np.zeros((64, D), np.float32)]
    mod = _pipeline(_two_dots, arrays + [L], dict(D=D, BM=64, BN=64), 4, stages=3)
    spec = _loop(mod).attrs["_ring"]
    assert not spec["carry_prev"]


@pytest.mark.parametrize("stages", [2, 3, 4])
def test_carried_slots_start_after_the_prologue(stages):
    arrays, scalars = _mm_args()
    meta = dict(BM=64, BN=64, BK=32)
    spec = _loop(_pipeline(_mm, arrays + scalars, meta, 4, stages=stages)).attrs["_ring"]
    ck = _mm.warmup(*arrays, *scalars, grid=(2, 2), target="sm_90a", num_warps=4, num_stages=stages, **meta)
    starts = {int(x) for x in re.findall(r"= phi\s+i32\s+\[\s*(\d+),", ck.asm["llir"])}
    slots, ahead, sb = spec["stages"], spec["ahead"], spec["stage_bytes"]
    # iteration -j read slot slots - j (so the copies of iteration 0 write slot `ahead`, the first after the
    # prologue's): the carried slots' incoming values from before the loop
    assert {(slots - j) * sb for j in range(1, slots - ahead + 1)} <= starts


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("stages", [2, 3, 4, 5])
@pytest.mark.parametrize("K", [32, 64, 96, 224])  # one iteration, two, three, seven: fewer and more than the ring
def test_results(target, stages, K):
    M, N = 72, 80  # N a multiple of 16 (16-byte rows of b for the copies), M not one of the block
    rng = np.random.default_rng(stages * 100 + K)
    a = rng.uniform(-1, 1, (M, K)).astype(np.float16)
    b = rng.uniform(-1, 1, (K, N)).astype(np.float16)
    c = poison((M, N), "float32")
    run(target, _mm, (2, 2), [a, b, c], [M, N, K], BM=64, BN=64, BK=32, num_warps=4, num_stages=stages)
    assert_close(c, a.astype(np.float64) @ b.astype(np.float64), "float32", rtol=1e-3, atol=1e-3)
