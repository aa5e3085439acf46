"""A/B `smem_regions` (codegen/llvm.py `smem_begin`, codegen/dot.py `_dot_wgmma`): in a loop body each wgmma dot with
operands written to scratch gets its own byte range, and a shared-memory use waits at a barrier only where a use ended
since the last barrier overlaps it. Attention with the rotary embedding fused in writes the rotated halves of K for
its two score dots: by default the second dot's stores wait for the first dot's readers (a barrier), under the switch
they go to other bytes. Results in the interpreter, through ptxas and on the GPU under both; barriers in the PTX."""
import numpy as np
import pytest

import compiler
import compiler.language as tl
from compiler.codegen.ptx import ptx_loops

from ..ops.test_ops import TARGETS, assert_close, poison, run


@compiler.jit
def two_dot_kernel(Q, K, C, O, n, D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # o = sum over key blocks of (q1 @ (k1 * c)^T + q2 @ (k2 * c)^T) @ k1: K's halves scaled in registers per block
    HALF: tl.constexpr = D // 2
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    dh = tl.arange(0, HALF)
    q1 = tl.load(Q + rm[:, None] * D + dh[None, :])
    q2 = tl.load(Q + rm[:, None] * D + HALF + dh[None, :])
    acc = tl.zeros([BLOCK_M, HALF], dtype=tl.float32)
    for n0 in range(0, n, BLOCK_N):
        rn = n0 + tl.arange(0, BLOCK_N)
        c = tl.load(C + rn)
        k1 = tl.load(K + rn[:, None] * D + dh[None, :])
        k2 = tl.load(K + rn[:, None] * D + HALF + dh[None, :])
        k1c = (k1.to(tl.float32) * c[:, None]).to(tl.float16)
        k2c = (k2.to(tl.float32) * c[:, None]).to(tl.float16)
        s = tl.dot(q1, tl.trans(k1c)) + tl.dot(q2, tl.trans(k2c))
        acc += tl.dot(s.to(tl.float16), k1)
    tl.store(O + rm[:, None] * HALF + dh[None, :], acc)


def _reference(q, k, c):
    D = q.shape[1]
    h = D // 2
    q64, k64 = q.astype(np.float64), k.astype(np.float64)
    kc = (k.astype(np.float32) * c[:, None]).astype(np.float16).astype(np.float64)
    s = (q64 @ kc.T).astype(np.float16).astype(np.float64)  # the scores are rounded to fp16 for the last dot
    return s @ k64[:, :h]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("ab", ["", "smem_regions", "smem_regions,iter_barrier"])
def test_two_dot_results(target, ab, monkeypatch):
    monkeypatch.setenv("TILEFARM_AB", ab)
    M, n, D = 128, 192, 64
    rng = np.random.default_rng(9)
    q = (0.25 * rng.standard_normal((M, D))).astype(np.float16)
    k = (0.25 * rng.standard_normal((n, D))).astype(np.float16)
    c = rng.uniform(0.5, 1.5, n).astype(np.float32)
    o = poison((M, D // 2), "float32")
    run(target, two_dot_kernel, (M // 64,), [q, k, c, o], [n], D=D, BLOCK_M=64, BLOCK_N=64, num_warps=4,
        num_stages=2)
    if target != "ptxas":
        assert_close(o, _reference(q, k, c), "float32", rtol=2e-2, atol=2e-2)


def test_second_dots_stores_need_no_barrier(monkeypatch, tmp_path):
    """Fewer barriers in the loop under the switch; the kernel's shared memory grows by the later ranges."""
    monkeypatch.setenv("TILEFARM_CACHE_DIR", str(tmp_path))
    got = {}
    for ab in ("", "smem_regions"):
        monkeypatch.setenv("TILEFARM_AB", ab)
        z = np.zeros((128, 64), np.float16)
        k = two_dot_kernel.warmup(z, z, np.zeros(128, np.float32), np.zeros((128, 32), np.float32), 128, grid=(1,),
                                  target="sm_90a", D=64, BLOCK_M=64, BLOCK_N=64, num_warps=4, num_stages=2)
        ptx = k.asm["ptx"]
        a, b = max(ptx_loops(ptx), key=lambda s: s[1] - s[0])
        got[ab] = (ptx[a:b].count("barrier.sync") + ptx[a:b].count("bar.sync"), int(k.metadata["shared_bytes"]))
    assert got["smem_regions"][0] < got[""][0], got  # here two fewer: each later dot of the iteration
    assert got["smem_regions"][1] >= got[""][1], got
