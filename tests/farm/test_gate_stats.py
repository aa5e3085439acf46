"""The gate's block bootstrap on correlated samples: the block length follows the samples' autocorrelation, so a
99% interval of two equal sides excludes 1 rarely (with n^(1/3) blocks alone, at lag-1 correlation 0.9 it
excluded 1 for 6 of the 40 equal pairs below, 10 of 60 in a longer run; now at most 3 of 40)."""
import math

import numpy as np

from farm import gate as G


def ar1(rng, n, phi, sigma=0.03):
    e = rng.normal(0, math.sqrt(1 - phi * phi), n)
    x = np.empty(n)
    x[0] = rng.normal()
    for i in range(1, n):
        x[i] = phi * x[i - 1] + e[i]
    return 1 + sigma * x


def test_block_length_follows_the_autocorrelation():
    rng = np.random.default_rng(0)
    n = 2000
    floor = round(n ** (1 / 3))
    white = G.block_length(rng.normal(1, 0.03, n))
    mild, strong = G.block_length(ar1(rng, n, 0.5)), G.block_length(ar1(rng, n, 0.95))
    assert white == floor  # no correlation: the old rule's length, so nothing changes there
    assert floor <= mild < strong and strong > 4 * floor
    assert G.block_length(np.ones(n)) == floor and G.block_length([1.0, 2.0]) == 1
    assert G.block_length(np.arange(n, dtype=float)) <= math.ceil(3 * math.sqrt(n))  # a trend: capped


def test_equal_correlated_sides_rarely_differ():
    rng = np.random.default_rng(5)
    trials, excluded = 40, 0
    for t in range(trials):
        a, b = ar1(rng, 1000, 0.9), ar1(rng, 1000, 0.9)
        _, lo, hi = G.ratio_ci(a, b, alpha=0.01, n_boot=400, seed=t)
        excluded += not (lo <= 1.0 <= hi)
    assert excluded <= 3, f"{excluded}/{trials} intervals excluded 1 at alpha=0.01"


def test_a_real_difference_is_still_found_in_correlated_samples():
    rng = np.random.default_rng(6)
    a, b = ar1(rng, 1000, 0.9), ar1(rng, 1000, 0.9) * 1.10
    ratio, lo, hi = G.ratio_ci(a, b, alpha=0.01, n_boot=400)
    assert lo > 1.0 and G.classify(ratio, lo, hi, 0.05) == G.SLOWER
