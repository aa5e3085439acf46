"""An argmin over a dot's scores in a loop (k-means' assignment): the index tile comes from an arange that the frontend
shares with the loads' offsets, and exact ties between duplicated centroids must give the first index. Results in the
interpreter, through ptxas and on the GPU. (Its A/B `remat_feed`, that tile rematerialized outside the loop in the
layout its user wants, left: docs/EXPERIMENTS.md.)"""
import numpy as np
import pytest

import compiler

from ..dot.test_tf32_wgmma import _nearest
from .test_ops import TARGETS, assert_exact, poison, run


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
    run(target, _nearest, (compiler.cdiv(M, 64),), [pts, cent, poison(M, "float32"), labels], [M, K], D=D, BM=64,
        BK=32, num_warps=4)
    if target != "ptxas":
        assert_exact(labels, _reference(pts, cent))
