"""A/B `remat_div` (passes/assign_layouts.py `_remat`): integer divisions and remainders by a constant or a splat
scalar are recomputed in a user's layout like the other cheap arithmetic. An im2col conv1d's column index split into
(channel, tap) by `j // BK` and `j % BK` once before the loop was converted through shared memory (two barriers)
every iteration where the loop's tiles read it in other layouts. Results under both (interpreter, ptxas, GPU); the
loop's barriers in the PTX."""
import numpy as np
import pytest

import compiler
import compiler.language as tl

from .test_ops import TARGETS, assert_close, poison, run


@compiler.jit
def conv1d_im2col_kernel(X, W, Y, L, PAD, NC: tl.constexpr, BLOCK_L: tl.constexpr, BC: tl.constexpr,
                         BK: tl.constexpr, CO: tl.constexpr):
    # Y[o, l] = sum_{c, k} W[o, c, k] X[c, l + k - PAD]; X [NC, L], W [CO, NC, BK], all fp16, accumulated in fp32
    l = tl.program_id(0) * BLOCK_L + tl.arange(0, BLOCK_L)
    o = tl.arange(0, CO)
    j = tl.arange(0, BC * BK)
    jc = j // BK
    jk = j % BK
    acc = tl.zeros((BLOCK_L, CO), dtype=tl.float32)
    for c0 in range(0, NC, BC):
        pos = l[:, None] + jk[None, :] - PAD
        cols = tl.load(X + (c0 + jc)[None, :] * L + pos, mask=(pos >= 0) & (pos < L), other=0.0)
        w = tl.load(W + o[None, :] * (NC * BK) + ((c0 + jc) * BK + jk)[:, None])
        acc = tl.dot(cols, w, acc)
    tl.store(Y + o[None, :] * L + l[:, None], acc.to(tl.float16), mask=(l < L)[:, None])


def _case(rng, NC=32, L=200, BK=8, CO=32):
    x = rng.standard_normal((NC, L)).astype(np.float16)
    w = (rng.standard_normal((CO, NC, BK)) * 0.2).astype(np.float16)
    pad = BK // 2
    xp = np.pad(x.astype(np.float64), ((0, 0), (pad, BK)))
    ref = np.einsum("ock,ckl->ol", w.astype(np.float64), np.stack([xp[:, k:k + L] for k in range(BK)], axis=1))
    return x, w, pad, ref


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("ab", ["", "remat_div"])
def test_conv1d_results(target, ab, monkeypatch):
    monkeypatch.setenv("TILEFARM_AB", ab)
    x, w, pad, ref = _case(np.random.default_rng(11))
    y = poison((32, 200), "float16")
    run(target, conv1d_im2col_kernel, (4,), [x, w, y], [200, pad], NC=32, BLOCK_L=64, BC=8, BK=8, CO=32,
        num_warps=4)
    if target != "ptxas":
        assert_close(y, ref, "float16", rtol=1e-2, atol=2e-2)


def test_loop_converts_nothing_under_the_switch(monkeypatch, tmp_path):
    from compiler.codegen.ptx import ptx_loops

    monkeypatch.setenv("TILEFARM_CACHE_DIR", str(tmp_path))
    x, w, pad, _ = _case(np.random.default_rng(0))
    bars = {}
    for ab in ("", "remat_div"):
        monkeypatch.setenv("TILEFARM_AB", ab)
        ptx = conv1d_im2col_kernel.warmup(x, w, np.zeros((32, 200), np.float16), 200, pad, grid=(1,),
                                          target="sm_90a", NC=32, BLOCK_L=64, BC=8, BK=8, CO=32,
                                          num_warps=4).asm["ptx"]
        a, b = max(ptx_loops(ptx), key=lambda s: s[1] - s[0])
        bars[ab] = ptx[a:b].count("bar.sync") + ptx[a:b].count("barrier.sync")
    assert bars["remat_div"] < bars[""], bars
