"""Conversions hoisted out of loops with a dot (passes/assign_layouts.py `_hoist_operand`): in a loop whose body has
a dot, a value defined before the loop and converted for an op in it is converted once before the loop instead of
every iteration. Here a gathered GEMM's row mask (from token ids loaded before the K loop, as a fused MoE GEMM's) is
converted for the A loads' mask. Checked on the IR the passes leave for sm_90a, and against float64 on every
target."""
import numpy as np
import pytest

import compiler
import compiler.language as tl

from ..ops.test_ops import TARGETS, assert_close, poison, run
from .test_loop_operands import _loop, _pipeline


@compiler.jit
def _gathered_mm(A, IDS, B, C, n_valid, K, N, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # C[i] = A[ids[i]] @ B for the rows i < n_valid; ids past n_valid are padding
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    ids = tl.load(IDS + rm)
    valid = ids < n_valid
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(A + ids[:, None] * K + (k + rk)[None, :], mask=valid[:, None] & ((k + rk)[None, :] < K),
                    other=0.0)
        b = tl.load(B + (k + rk)[:, None] * N + rn[None, :], mask=(k + rk)[:, None] < K, other=0.0)
        acc += tl.dot(a, b)
    tl.store(C + rm[:, None] * N + rn[None, :], acc, mask=valid[:, None])


def _case(rng, rows=128, n_valid=100, K=96, N=64):
    ids = np.concatenate([rng.permutation(n_valid), np.full(rows - n_valid, n_valid + 7)]).astype(np.int32)
    a = rng.uniform(-1, 1, (n_valid, K)).astype(np.float16)
    b = rng.uniform(-1, 1, (K, N)).astype(np.float16)
    ref = np.zeros((rows, N))
    ref[:n_valid] = a[ids[:n_valid]].astype(np.float64) @ b.astype(np.float64)
    return a, ids, b, ref


def _mask_conversions_in_loop():
    a, ids, b, _ = _case(np.random.default_rng(0))
    mod = _pipeline(_gathered_mm, [a, ids, b, np.zeros((128, 64), np.float32), 100, 96, 64],
                    dict(BM=64, BN=64, BK=32), 4)
    return [o for o in _loop(mod).blocks[0].walk()
            if o.kind == "convert_layout" and o.result.type.element.name in ("int1", "int32")]


def test_mask_converted_before_the_loop():
    assert not _mask_conversions_in_loop()  # (converted every K step, it cost two barriers an iteration)


@pytest.mark.parametrize("target", TARGETS)
def test_results(target):
    a, ids, b, ref = _case(np.random.default_rng(4))
    c = poison((128, 64), "float32")
    run(target, _gathered_mm, (2,), [a, ids, b, c], [100, 96, 64], BM=64, BN=64, BK=32, num_warps=4)
    assert_close(c[:100], ref[:100], "float32")
    assert np.isnan(c[100:]).all()  # the padding rows' stores are masked off
