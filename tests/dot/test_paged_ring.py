"""Attention over a paged KV cache (keys and values in fixed-size pages a block table names):

- a 1-d tile of integers loaded in the loop only to address the operand tiles (passes/pipeline.py `_index_load`:
  the block table's entries for a block of keys) counts as an index load, so K and V still take the copy ring (the
  copies load the entries for their iteration, guarded); before 2026-12-07 (the A/B `index_tiles`) the loop loaded
  K and V in place.
- the ring's register estimate (passes/pipeline.py `_rescaled_carry`, the A/B `acc_estimate` until it became the
  code) counts a dot onto a rescaled carried accumulator (`tl.dot(p, v, acc * alpha[:, None])`) once, not twice, so
  a two-warpgroup attention loop whose tight ring buys a second block takes it (`.minnctapersm 2`).

Results in the interpreter, through ptxas and on the GPU; the ring and the block count in the PTX."""
import numpy as np
import pytest

import compiler
import compiler.language as tl
from compiler.codegen.ptx import ptx_loops

from ..ops.test_ops import TARGETS, assert_close, poison, run


@compiler.jit
def paged_attn_kernel(Q, KC, VC, BT, O, M, n, stride_bt, sm_scale, D: tl.constexpr, PAGE: tl.constexpr,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # one sequence per program column: Q, O [B, M, D]; KC, VC [pages * PAGE, D]; BT [B, pages]
    pid_m = tl.program_id(0)
    b = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    d = tl.arange(0, D)
    q = tl.load(Q + (b * M + rm[:, None]) * D + d[None, :], mask=rm[:, None] < M, other=0.0)
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, D], dtype=tl.float32)
    for n0 in range(0, n, BLOCK_N):
        t = n0 + tl.arange(0, BLOCK_N)
        live = t < n
        page = tl.load(BT + b * stride_bt + t // PAGE, mask=live, other=0)
        row = page * PAGE + t % PAGE
        k = tl.load(KC + row[None, :] * D + d[:, None], mask=live[None, :], other=0.0)
        s = tl.where(live[None, :], tl.dot(q, k) * sm_scale, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        alpha = tl.exp(m_i - m_new)
        p = tl.exp(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(VC + row[:, None] * D + d[None, :], mask=live[:, None], other=0.0)
        acc = tl.dot(p.to(tl.float16), v, acc * alpha[:, None])
        m_i = m_new
    tl.store(O + (b * M + rm[:, None]) * D + d[None, :], acc / l_i[:, None], mask=rm[:, None] < M)


def _case(B, M, n, D, page, rng):
    npages = -(-n // page)
    total = B * npages + 2
    bt = rng.permutation(total)[:B * npages].reshape(B, npages).astype(np.int32)
    q = (0.3 * rng.standard_normal((B, M, D))).astype(np.float16)
    kc = rng.standard_normal((total * page, D)).astype(np.float16)
    vc = rng.standard_normal((total * page, D)).astype(np.float16)
    ref = np.zeros((B, M, D))
    t = np.arange(n)
    for b in range(B):
        r = bt[b, t // page].astype(np.int64) * page + t % page
        s = q[b].astype(np.float64) @ kc[r].astype(np.float64).T / np.sqrt(D)
        e = np.exp(s - s.max(axis=1, keepdims=True))
        ref[b] = (e @ vc[r].astype(np.float64)) / e.sum(axis=1, keepdims=True)
    return q, kc, vc, bt, ref


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("warps", [4, 8])
def test_paged_attn_results(target, warps):
    B, M, n, D, page = 2, 100, 150, 64, 16  # a ragged last page: its keys masked off
    q, kc, vc, bt, ref = _case(B, M, n, D, page, np.random.default_rng(5))
    o = poison((B, M, D), "float32")
    bm = 64 if warps == 4 else 128
    run(target, paged_attn_kernel, (-(-M // bm), B), [q, kc, vc, bt, o],
        [M, n, bt.shape[1], 1.0 / float(np.sqrt(D))], D=D, PAGE=page, BLOCK_M=bm,
        BLOCK_N=64, num_warps=warps, num_stages=2)
    if target != "ptxas":
        assert_close(o, ref, "float32", rtol=1e-2, atol=1e-2)


def _ptx(monkeypatch, tmp_path, D=128, warps=8):
    monkeypatch.setenv("TILEFARM_CACHE_DIR", str(tmp_path))
    z = np.zeros((64, D), np.float16)
    return paged_attn_kernel.warmup(z, z, z, np.zeros((2, 8), np.int32), np.zeros((64, D), np.float32), 64, 128, 8,
                                    0.1, grid=(1,), target="sm_90a", D=D, PAGE=16, BLOCK_M=128, BLOCK_N=64,
                                    num_warps=warps, num_stages=2).asm["ptx"]


def _loop(ptx):
    a, b = max(ptx_loops(ptx), key=lambda s: s[1] - s[0])
    return ptx[a:b]


def test_tiles_of_a_paged_cache_take_the_ring(monkeypatch, tmp_path):
    """The loop issues K's and V's copies (and loads the table's entries for a later iteration) and reads no tile
    from global memory itself: its only global loads are the table's entries (loaded in place, K and V took 8 or
    more vector loads an iteration)."""
    loop = _loop(_ptx(monkeypatch, tmp_path))
    assert "cp.async.cg.shared.global" in loop
    assert loop.count("ld.global") < 8, loop.count("ld.global")


def test_rescaled_accumulator_counted_once(monkeypatch, tmp_path):
    """Two warpgroups, D=128, the paged tiles on the ring: the rescaled accumulator counted once, the
    tight ring's two slots buy a second block (`.minnctapersm 2`, 128 registers), as for attention loops over plain
    tiles."""
    ptx = _ptx(monkeypatch, tmp_path)
    assert ".minnctapersm 2" in ptx
