"""tf32 dots on wgmma (passes/layouts.py tf32_wgmma_applies, codegen/dot.py): a float32 dot of input_precision "tf32"
on sm_90a runs on `wgmma.mma_async ... m64nNk8.f32.tf32.tf32`, both operands rounded to tf32 and stored K-major
into swizzled shared memory (wgmma reads 32-bit operands K-major only: a [K, N] b loaded row-major is stored
transposed), instead of mma.sync m16n8k8 with operands in registers (sm_80, no wgmma). Checked on the PTX for both
targets (assembled by ptxas) and against float64 on every target; the dots that keep their mma.sync or FMA paths
(input_precision "ieee", "tf32x3", "bf16x3", sm_80, batched dots, tiles too large for shared memory, K not a
multiple of 8) are checked to keep them."""
import re

import numpy as np
import pytest

import compiler
import compiler.language as tl
from compiler.ir import types as T
from compiler.options import Options
from compiler.passes.layouts import mma_warps, wgmma_applies

from ..ops.test_ops import TARGETS, assert_close, poison, run

TF32_WGMMA = re.compile(r"wgmma\.mma_async\.sync\.aligned\.m64n(\d+)k8\.f32\.tf32\.tf32")


@compiler.jit
def _mm(A, B, BIAS, C, M, N, K, stride_bk, stride_bn, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
        PREC: tl.constexpr):
    # C = (A @ B) * 0.5 + bias[None, :], A [M, K] row-major, B [K, N] by strides (row-major, or transposed: an [N, K]
    # array read with stride_bk 1), a K loop of BK steps
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        a = tl.load(A + rm[:, None] * K + (k0 + rk)[None, :], mask=(rm[:, None] < M) & (k0 + rk[None, :] < K),
                    other=0.0)
        b = tl.load(B + (k0 + rk)[:, None] * stride_bk + rn[None, :] * stride_bn,
                    mask=(k0 + rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b, input_precision=PREC)
    bias = tl.load(BIAS + rn, mask=rn < N, other=0.0)
    tl.store(C + rm[:, None] * N + rn[None, :], acc * 0.5 + bias[None, :], mask=(rm[:, None] < M) & (rn[None, :] < N))


@compiler.jit
def _mm_once(A, B, C, M, N, stride_bk, stride_bn, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
             PREC: tl.constexpr):
    # one dot, no loop: C = relu(A @ B), K = BK
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = tl.load(A + rm[:, None] * BK + rk[None, :], mask=rm[:, None] < M, other=0.0)
    b = tl.load(B + rk[:, None] * stride_bk + rn[None, :] * stride_bn, mask=rn[None, :] < N, other=0.0)
    c = tl.maximum(tl.dot(a, b, input_precision=PREC), 0.0)
    tl.store(C + rm[:, None] * N + rn[None, :], c, mask=(rm[:, None] < M) & (rn[None, :] < N))


@compiler.jit
def _nearest(X, CT, OUT, IDX, M, K, D: tl.constexpr, BM: tl.constexpr, BK: tl.constexpr):
    # k-means' assignment step: x [BM, D] loaded once before the loop (stored to shared memory once), centroids read
    # transposed ([D, BK], D contiguous), the smallest |c|^2 - 2 x.c and its index over the centroid blocks
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rd = tl.arange(0, D)
    x = tl.load(X + rm[:, None] * D + rd[None, :], mask=rm[:, None] < M, other=0.0)
    best = tl.full([BM], float("inf"), dtype=tl.float32)
    best_idx = tl.zeros([BM], dtype=tl.int32)
    for k0 in range(0, K, BK):
        rk = k0 + tl.arange(0, BK)
        c = tl.load(CT + rk[None, :] * D + rd[:, None], mask=rk[None, :] < K, other=0.0)
        dist = tl.sum(c * c, axis=0)[None, :] - 2.0 * tl.dot(x, c)
        dist = tl.where(rk[None, :] < K, dist, float("inf"))
        m, i = tl.min(dist, axis=1, return_indices=True)
        better = m < best
        best = tl.where(better, m, best)
        best_idx = tl.where(better, k0 + i, best_idx)
    tl.store(OUT + rm, best, mask=rm < M)
    tl.store(IDX + rm, best_idx, mask=rm < M)


@compiler.jit
def _two_dots(Q, KM, V, OUT, L, D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    # attention's shape without the softmax: s = q k^T (k read [BN, D] and transposed), acc += (s * 0.125) v; the
    # second dot's a is the first dot's accumulator (stored to scratch: tf32 a never comes from registers)
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rd = tl.arange(0, D)
    q = tl.load(Q + rm[:, None] * D + rd[None, :])
    acc = tl.zeros((BM, D), dtype=tl.float32)
    for n0 in range(0, L, BN):
        rn = n0 + tl.arange(0, BN)
        k = tl.load(KM + rn[:, None] * D + rd[None, :])
        v = tl.load(V + rn[:, None] * D + rd[None, :])
        s = tl.dot(q, tl.trans(k))
        acc = tl.dot(s * 0.125, v, acc)
    tl.store(OUT + rm[:, None] * D + rd[None, :], acc)


# (M, N, BK, K, num_warps, b transposed): M 64 and 128, N 16..256, K blocks 16..128 (a dot's K is at least 16: smaller
# ones are not dots), 4 and 8 warps (8 warps on M 64: two warpgroups side by side along N)
LOOP_CASES = [
    (64, 16, 16, 48, 4, False),
    (64, 64, 32, 96, 4, True),
    (128, 128, 32, 96, 8, False),
    (64, 256, 16, 48, 8, False),
    (128, 32, 128, 256, 4, True),
    (64, 128, 64, 128, 4, False),
]
ONCE_CASES = [
    (64, 32, 16, 16, 4, True),
    (128, 64, 64, 64, 4, False),
    (128, 256, 64, 64, 8, True),
    (64, 64, 128, 128, 8, False),
]


def _rand(rng, shape):
    return rng.uniform(-1, 1, shape).astype(np.float32)


def _operands(rng, M, N, K, trans):
    """a [M, K], the array b is read from (row-major [K, N], or [N, K] read transposed), its strides, and b [K, N]."""
    a = _rand(rng, (M, K))
    if trans:
        bt = _rand(rng, (N, K))
        return a, bt, (1, K), bt.T
    b = _rand(rng, (K, N))
    return a, b, (N, 1), b


def _sizes(M, N, trans):
    return 2 * M - 5, 2 * N - 3  # two blocks each way, the last masked


def _loop_launch(case, rng, prec="tf32"):
    BM, BN, BK, K, nw, trans = case
    M, N = _sizes(BM, BN, trans)
    a, barr, (sbk, sbn), b = _operands(rng, M, N, K, trans)
    bias = _rand(rng, N)
    c = poison((M, N), "float32")
    ref = (a.astype(np.float64) @ b.astype(np.float64)) * 0.5 + bias
    return [a, barr, bias, c], [M, N, K, sbk, sbn], dict(BM=BM, BN=BN, BK=BK, PREC=prec, num_warps=nw), ref, c


def _once_launch(case, rng, prec="tf32"):
    BM, BN, BK, _, nw, trans = case
    M, N = _sizes(BM, BN, trans)
    a, barr, (sbk, sbn), b = _operands(rng, M, N, BK, trans)
    c = poison((M, N), "float32")
    ref = np.maximum(a.astype(np.float64) @ b.astype(np.float64), 0.0)
    return [a, barr, c], [M, N, sbk, sbn], dict(BM=BM, BN=BN, BK=BK, PREC=prec, num_warps=nw), ref, c


def _tol(K):
    # tf32 keeps 10 mantissa bits of each operand (relative error 2^-11 each, rounded): the error of a K-term sum of
    # products of values in [-1, 1] grows with K
    return dict(rtol=2e-3, atol=2e-3 * max(1.0, K / 32))


def _asm(kernel, arrays, scalars, meta, arch="sm_90a"):
    ck = kernel.warmup(*arrays, *scalars, grid=(2, 2), target=arch, **meta)
    ptx, cubin = ck.asm["ptx"], ck.asm["cubin"]
    assert ".entry" in ptx and isinstance(cubin, bytes) and cubin  # ptxas assembled it
    return ptx


def _instructions(M, N, K, nw):
    """(instruction N, wgmma instructions of one dot): warpgroups along M first (mma_warps), each 64-row block of a
    warpgroup's rows times each instruction-N block of its columns, one k8 instruction a K step."""
    wm, wn = mma_warps((M, N), nw, version=3)
    instr_n = min(N // wn, 256)
    return instr_n, M // (16 * wm) * (N // (instr_n * wn)) * (K // 8)


def _assert_wgmma(ptx, instr_n=None):
    found = TF32_WGMMA.findall(ptx)
    assert found, "no tf32 wgmma"
    assert "mma.sync" not in ptx
    if instr_n is not None:
        assert {int(n) for n in found} == {instr_n}


def _assert_mma_sync(ptx):
    assert "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32" in ptx
    assert "wgmma.mma_async" not in ptx


def _switch_ptx(kernel, launch, case):
    """The PTX of `kernel` at `case`: mma.sync for sm_80 (no wgmma there; asserted), wgmma's tf32 form for sm_90a
    (returned, its instruction shape and count asserted)."""
    args, scalars, meta, _, _ = launch(case, np.random.default_rng(0))
    _assert_mma_sync(_asm(kernel, args, scalars, meta, arch="sm_80"))
    ptx = _asm(kernel, args, scalars, meta)
    BM, BN, BK, _, nw, _ = case
    _assert_wgmma(ptx, _instructions(BM, BN, BK, nw)[0])
    assert len(TF32_WGMMA.findall(ptx)) == _instructions(BM, BN, BK, nw)[1]
    return ptx


@pytest.mark.parametrize("case", LOOP_CASES, ids=str)
def test_loop_ptx(case):
    ptx = _switch_ptx(_mm, _loop_launch, case)
    # rounded to tf32 on the way to shared memory; the loop leaves its wgmma group in flight (two scratch stages)
    assert "cvt.rna.tf32.f32" in ptx and "wgmma.wait_group.sync.aligned 1;" in ptx


@pytest.mark.parametrize("case", ONCE_CASES, ids=str)
def test_once_ptx(case):
    _switch_ptx(_mm_once, _once_launch, case)


def _nearest_launch(rng, M=200, K=150, D=64):
    x = _rand(rng, (M, D))
    c = _rand(rng, (K, D))
    out = poison(M, "float32")
    ref = ((c.astype(np.float64) ** 2).sum(1)[None, :] - 2 * x.astype(np.float64) @ c.astype(np.float64).T).min(1)
    return [x, c, out, poison(M, "int32")], [M, K], dict(D=D, BM=128, BK=64, num_warps=4), ref, out


def test_nearest_ptx():
    """k-means' kernel: x stored to shared memory once before the loop, 8 wgmma m64n64k8 an iteration a warpgroup
    (M 128 on one warpgroup: two 64-row blocks)."""
    args, scalars, meta, _, _ = _nearest_launch(np.random.default_rng(0))
    _assert_mma_sync(_asm(_nearest, args, scalars, meta, arch="sm_80"))
    ptx = _asm(_nearest, args, scalars, meta)
    _assert_wgmma(ptx, 64)
    assert len(TF32_WGMMA.findall(ptx)) == _instructions(128, 64, 64, 4)[1] == 16


def _two_dots_launch(rng, L=192, D=64, BM=64, BN=64, nw=4):
    q, k, v = (_rand(rng, (L, D)) for _ in range(3))
    out = poison((L, D), "float32")
    q64, k64, v64 = (x.astype(np.float64) for x in (q, k, v))
    ref = (q64 @ k64.T * 0.125) @ v64
    return [q, k, v, out], [L], dict(D=D, BM=BM, BN=BN, num_warps=nw), ref, out


def test_two_dots_ptx():
    args, scalars, meta, _, _ = _two_dots_launch(np.random.default_rng(0))
    _assert_mma_sync(_asm(_two_dots, args, scalars, meta, arch="sm_80"))
    _assert_wgmma(_asm(_two_dots, args, scalars, meta), 64)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", LOOP_CASES, ids=str)
def test_loop_results(target, case):
    arrays, scalars, meta, ref, c = _loop_launch(case, np.random.default_rng(1))
    BM, BN, _, K, _, _ = case
    run(target, _mm, (2, 2), arrays, scalars, **meta)
    assert_close(c, ref, "float32", **_tol(K))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", ONCE_CASES, ids=str)
def test_once_results(target, case):
    arrays, scalars, meta, ref, c = _once_launch(case, np.random.default_rng(2))
    run(target, _mm_once, (2, 2), arrays, scalars, **meta)
    assert_close(c, ref, "float32", **_tol(case[2]))


@pytest.mark.parametrize("target", TARGETS)
def test_nearest_results(target):
    arrays, scalars, meta, ref, out = _nearest_launch(np.random.default_rng(3))
    run(target, _nearest, (2,), arrays, scalars, **meta)
    assert_close(out, ref, "float32", **_tol(2 * 64))


@pytest.mark.parametrize("target", TARGETS)
def test_two_dots_results(target):
    arrays, scalars, meta, ref, out = _two_dots_launch(np.random.default_rng(4))
    run(target, _two_dots, (3,), arrays, scalars, **meta)
    assert_close(out, ref, "float32", **_tol(192 * 8))  # s holds sums of 64 products, rounded to tf32 again


# ---- dots that keep their paths --------------------------------------------------------------------------------

@pytest.mark.parametrize("prec", ["bf16x3", "ieee"])
def test_other_precisions_keep_their_paths(prec):
    """("tf32x3" runs on wgmma too: tests/dot/test_tf32x3_wgmma.py)"""
    args, scalars, meta, _, _ = _loop_launch(LOOP_CASES[1], np.random.default_rng(0), prec)
    ptx = _asm(_mm, args, scalars, meta)
    assert "wgmma.mma_async" not in ptx
    if prec == "ieee":  # FMAs
        assert "mma.sync" not in ptx
    else:
        assert "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32" in ptx


def test_sm80_keeps_mma_sync():
    args, scalars, meta, _, _ = _loop_launch(LOOP_CASES[1], np.random.default_rng(0))
    _assert_mma_sync(_asm(_mm, args, scalars, meta, arch="sm_80"))


def test_large_tiles_keep_mma_sync():
    """128x128 a and 128x256 b tiles of float32 take 192 KiB: more than tf32_wgmma_applies admits."""
    args, scalars, meta, _, _ = _once_launch((128, 256, 128, 128, 8, False), np.random.default_rng(0))
    _assert_mma_sync(_asm(_mm_once, args, scalars, meta))


class _V:
    def __init__(self, t):
        self.type = t


class _Dot:
    def __init__(self, M, N, K, prec="tf32", dtype=T.float32):
        self.operands = [_V(T.TensorType(dtype, (M, K))), _V(T.TensorType(dtype, (K, N))),
                         _V(T.TensorType(T.float32, (M, N)))]
        self.result = _V(T.TensorType(T.float32, (M, N)))
        self.attrs = {"input_precision": prec}


@pytest.mark.parametrize("M,N,K,prec,nw,applies", [
    (64, 64, 8, "tf32", 4, True),
    (64, 64, 32, "tf32", 4, True),
    (64, 64, 4, "tf32", 4, False),  # K not a multiple of 8
    (64, 64, 12, "tf32", 4, False),
    (64, 64, 32, "tf32x3", 4, True),
    (128, 128, 64, "tf32x3", 8, True),  # twice the bytes of tf32's tiles: 128 KiB, the limit
    (128, 256, 64, "tf32x3", 8, False),  # 192 KiB
    (128, 256, 64, "tf32", 8, True),  # 96 KiB
    (64, 64, 32, "ieee", 4, False),
    (32, 64, 32, "tf32", 4, False),  # M under a warpgroup's 64 rows
    (64, 64, 32, "tf32", 2, False),  # not a whole warpgroup
])
def test_wgmma_applies(M, N, K, prec, nw, applies):
    op = _Dot(M, N, K, prec)
    opts = Options(num_warps=nw, arch="sm_90a")
    assert (wgmma_applies(op, opts, nw) is not None) == applies
    assert wgmma_applies(op, Options(num_warps=nw, arch="sm_90"), nw) is None
