"""An argmin over a dot's scores in a loop (k-means' assignment): the index tile comes from an arange that the frontend
shares with the loads' offsets, and exact ties between duplicated centroids must give the first index. Results in the
interpreter, through ptxas and on the GPU. (Its A/B `remat_feed`, that tile rematerialized outside the loop in the
layout its user wants, left: docs/EXPERIMENTS.md.)"""
import numpy as np
import pytest

import compiler
import compiler.language as tl

from .test_ops import TARGETS, assert_exact, poison, run


@compiler.jit
def nearest_kernel(X, C, LABELS, M, K, D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rd = tl.arange(0, D)
    x = tl.load(X + rm[:, None] * D + rd[None, :], mask=rm[:, None] < M, other=0.0)
    best = tl.full([BLOCK_M], float("inf"), dtype=tl.float32)
    best_idx = tl.zeros([BLOCK_M], dtype=tl.int32)
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        c = tl.load(C + rk[None, :] * D + rd[:, None], mask=rk[None, :] < K, other=0.0)
        dist = tl.sum(c * c, axis=0)[None, :] - 2.0 * tl.dot(x, c)
        dist = tl.where(rk[None, :] < K, dist, float("inf"))
        blk_min, blk_idx = tl.min(dist, axis=1, return_indices=True)
        better = blk_min < best
        best = tl.where(better, blk_min, best)
        best_idx = tl.where(better, k0 + blk_idx, best_idx)
    tl.store(LABELS + rm, best_idx, mask=rm < M)


def _inputs(M, K, D, rng):
    # points near their centroids, well apart (tf32 products agree on the nearest), with exact ties between
    # duplicated centroids: the first index must win
    cent = rng.standard_normal((K, D)).astype(np.float32)
    cent[K // 2] = cent[3]
    owner = rng.integers(0, K, M)
    pts = (cent[owner] + np.float32(0.05) * rng.standard_normal((M, D))).astype(np.float32)
    return pts, cent


def _reference(pts, cent):
    d = (cent.astype(np.float64) ** 2).sum(1)[None, :] - 2.0 * pts.astype(np.float64) @ cent.astype(np.float64).T
    return d.argmin(axis=1).astype(np.int32)


@pytest.mark.parametrize("target", TARGETS)
def test_nearest_results(target):
    M, K, D = 200, 100, 32
    pts, cent = _inputs(M, K, D, np.random.default_rng(45))
    labels = poison(M, "int32")
    run(target, nearest_kernel, (compiler.cdiv(M, 64),), [pts, cent, labels], [M, K], D=D, BLOCK_M=64, BLOCK_K=32,
        num_warps=4)
    if target != "ptxas":
        assert_exact(labels, _reference(pts, cent))
