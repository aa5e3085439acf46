"""`tl.range(..., num_stages=k)`: a loop's own pipelining depth, over the launch's num_stages (Triton's per-loop
hint). Checked on the code built for sm_90a (the copy ring's size in shared memory, cp.async present or not) and, in
the interpreter and on the GPU, on the results."""
import numpy as np
import pytest

import compiler
import compiler.language as tl

from .kernels import TARGETS, poison, run


@compiler.jit
def mm_loop_stages(A, B, C, K, BK: tl.constexpr, STAGES: tl.constexpr):
    r = tl.arange(0, 64)
    rk = tl.arange(0, BK)
    acc = tl.zeros((64, 64), tl.float32)
    for k in tl.range(0, K, BK, num_stages=STAGES):
        a = tl.load(A + r[:, None] * K + (k + rk)[None, :])
        b = tl.load(B + (k + rk)[:, None] * 64 + r[None, :])
        acc = tl.dot(a, b, acc)
    tl.store(C + r[:, None] * 64 + r[None, :], acc)


def _build(stages, launch_stages=3):
    a = np.zeros(64 * 256, np.float16)
    c = np.zeros(64 * 64, np.float32)
    return mm_loop_stages.warmup(a, a, c, 256, BK=32, STAGES=stages, grid=(1,), target="sm_90a", num_warps=4,
                                 num_stages=launch_stages)


def test_the_loops_own_stages_size_its_ring():
    no_ring = _build(1)
    assert "cp.async" not in no_ring.asm["ptx"]
    shared = {s: _build(s).metadata["shared_bytes"] for s in (2, 3, 4)}
    assert shared[2] < shared[3] < shared[4], shared  # one 8 KiB stage of A and B more each time
    # the launch's num_stages does not override the loop's
    assert _build(4, launch_stages=2).metadata["shared_bytes"] == shared[4]
    assert "cp.async" in _build(2, launch_stages=1).asm["ptx"]


def test_bad_num_stages_is_refused():
    with pytest.raises(compiler.CompilationError, match="num_stages must be a non-negative int"):
        _build(-1)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("stages", [1, 4])
def test_results_do_not_depend_on_the_stages(target, stages):
    rng = np.random.default_rng(11)
    a = rng.standard_normal((64, 256)).astype(np.float16)
    b = rng.standard_normal((256, 64)).astype(np.float16)
    c = poison((64, 64), np.float32)
    run(target, mm_loop_stages, (1,), a, b, c, 256, BK=32, STAGES=stages, num_warps=4)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c, ref, rtol=2e-3, atol=2e-3)
