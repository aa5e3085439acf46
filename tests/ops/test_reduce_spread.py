"""Spread cross-warp reductions (codegen/reduce.py `_spread_pays`, `_spread_warp_partials`): a reduction whose axis
spans several warps combines the warps' partials spread over the block's threads (W lanes a group, butterfly
shuffles, the outputs through shared memory) instead of every thread combining every partial of its outputs, where
that saves enough instructions (H100: a column argmax over a tuple 0.954 of the time). Checked against float64 /
exact references on ptxas and the GPU (the interpreter runs no code generator), and on which reductions the spread
form is chosen."""
import numpy as np
import pytest

import compiler
import compiler.language as tl

from .test_ops import TARGETS, assert_close, assert_exact, poison, run


@compiler.jit
def _argmax_combine(v1, i1, v2, i2):
    take2 = (v2 > v1) | ((v2 == v1) & (i2 < i1))
    return tl.where(take2, v2, v1), tl.where(take2, i2, i1)


@compiler.jit
def _col_argmax(X, VAL, IDX, M, N, BM: tl.constexpr, BN: tl.constexpr):
    # per column: the maximum and the first row holding it, chunks of BM rows reduced along dim 0 by a tuple combine
    rn = tl.program_id(0) * BN + tl.arange(0, BN)
    best_v = tl.full([BN], float("-inf"), dtype=tl.float32)
    best_i = tl.full([BN], 0, dtype=tl.int32)
    for m0 in range(0, M, BM):
        rm = m0 + tl.arange(0, BM)
        mask = (rm[:, None] < M) & (rn[None, :] < N)
        x = tl.load(X + rm[:, None] * N + rn[None, :], mask=mask, other=float("-inf")).to(tl.float32)
        v, i = tl.reduce((x, tl.broadcast_to(rm[:, None], (BM, BN))), 0, _argmax_combine)
        best_v, best_i = _argmax_combine(best_v, best_i, v, i)
    tl.store(VAL + rn, best_v, mask=rn < N)
    tl.store(IDX + rn, best_i, mask=rn < N)


@compiler.jit
def _col_sum_max(X, S, MX, M, N, BM: tl.constexpr, BN: tl.constexpr):
    # one chunk of BM rows: column sums and maxima (cheap combines)
    rm = tl.arange(0, BM)
    rn = tl.program_id(0) * BN + tl.arange(0, BN)
    x = tl.load(X + rm[:, None] * N + rn[None, :], mask=(rm[:, None] < M) & (rn[None, :] < N), other=0.0)
    tl.store(S + rn, tl.sum(x, axis=0), mask=rn < N)
    tl.store(MX + rn, tl.max(x, axis=0), mask=rn < N)


@compiler.jit
def _all_argmax(X, OUT, N, B: tl.constexpr):
    # the whole block to one (value, index): every warp along the axis, one output
    r = tl.arange(0, B)
    x = tl.load(X + r, mask=r < N, other=float("-inf"))
    v, i = tl.reduce((x, r), 0, _argmax_combine)
    tl.store(OUT, i)


def _argmax_case(rng, M, N):
    x = rng.integers(-20, 20, (M, N)).astype(np.float16)  # ties: the first row must win
    val = x.astype(np.float64).max(axis=0)
    idx = (x.astype(np.float64) == val[None, :]).argmax(axis=0)
    return x, val, idx


@pytest.mark.parametrize("target", [t for t in TARGETS if getattr(t, "values", (t,))[0] != "interp"])
# N a multiple of 16: 16-byte row chunks, lanes along both dims (an odd N loads one element a thread, lanes along N)
@pytest.mark.parametrize("M,N,BM,BN,nw", [(1000, 256, 128, 32, 4), (300, 128, 64, 64, 8), (257, 96, 32, 16, 2),
                                          (512, 96, 256, 32, 8), (200, 100, 128, 32, 4)])
def test_col_argmax(target, M, N, BM, BN, nw):
    x, val, idx = _argmax_case(np.random.default_rng(M + BN), M, N)
    v, i = poison(N, "float32"), poison(N, "int32")
    run(target, _col_argmax, (compiler.cdiv(N, BN),), [x, v, i], [M, N], BM=BM, BN=BN, num_warps=nw)
    if target == "ptxas":
        return
    assert_close(v, val, "float32")
    assert_exact(i, idx)


@pytest.mark.parametrize("target", [t for t in TARGETS if getattr(t, "values", (t,))[0] != "interp"])
@pytest.mark.parametrize("nw", [4, 8])
def test_col_sum_max(target, nw):
    rng = np.random.default_rng(nw)
    M, N = 100, 70
    x = rng.uniform(-1, 1, (M, N)).astype(np.float32)
    s, mx = poison(N, "float32"), poison(N, "float32")
    run(target, _col_sum_max, (2,), [x, s, mx], [M, N], BM=128, BN=64, num_warps=nw)
    if target == "ptxas":
        return
    assert_close(s, x.astype(np.float64).sum(axis=0), "float32")
    assert_close(mx, x.astype(np.float64).max(axis=0), "float32")


@pytest.mark.parametrize("target", [t for t in TARGETS if getattr(t, "values", (t,))[0] != "interp"])
def test_whole_block_argmax(target):
    x = np.random.default_rng(5).permutation(3000).astype(np.float32)
    out = poison(1, "int32")
    run(target, _all_argmax, (1,), [x, out], [3000], B=4096, num_warps=8)
    if target != "ptxas":
        assert_exact(out, np.array([x.argmax()]))


class _Blk:
    def __init__(self, n):
        self.ops = [type("Op", (), {"kind": "add"})() for _ in range(n)]

    def walk(self):
        return iter(self.ops)


class _E:
    def __init__(self, nw):
        self.nw = nw


@pytest.mark.parametrize("keys,W,n_out,nw,combine_ops,spread", [
    (8, 4, 32, 4, 6, True),     # the column argmax: 24 -> 2 combines of 6 instructions
    (8, 4, 32, 4, 1, False),    # a column sum: 22 additions saved, less than a barrier and a round trip
    (1, 4, 32, 4, 6, False),    # one output a thread: 3 -> 2 combines
    (16, 8, 64, 8, 4, True),    # 112 -> 6 combines of 4
    (2, 2, 64, 2, 6, False),    # two warps: 2 -> 1 combines
])
def test_spread_only_where_it_pays(keys, W, n_out, nw, combine_ops, spread):
    """The cost rule: the combines a thread saves, times a combine's instructions, at least 64."""
    from compiler.codegen.reduce import _spread_pays

    assert _spread_pays(_E(nw), _Blk(combine_ops), keys, W, n_out) == spread


def test_argmax_takes_the_spread_form():
    """The tuple argmax over 4 warps: the warps' partials combined by butterflies after the first barrier (4 more
    shuffles than the lane stage's 48), a second barrier before the outputs are read."""
    x = np.zeros((1000, 256), np.float16)
    args = [x, np.zeros(256, np.float32), np.zeros(256, np.int32), 1000, 256]
    ptx = _col_argmax.warmup(*args, grid=(1,), target="sm_90a", BM=128, BN=32, num_warps=4).asm["ptx"]
    assert ptx.count("shfl.sync.bfly") == 52
