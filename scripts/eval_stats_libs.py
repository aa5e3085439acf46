"""Measure farm.gate's statistics against the libraries issue 17 names (figures in docs/DEPENDENCIES.md).

1. Block bootstrap of the ratio of medians: farm.gate.ratio_ci (moving blocks of n^(1/3)) against arch's
   MovingBlockBootstrap and StationaryBootstrap with arch's optimal (Politis-White) block length. On
   AR(1)-correlated timing samples (the drift of clocks and temperature between repetitions) where both sides
   have the same distribution, how often does the interval exclude 1 (false alarms, nominal alpha), and how
   long does one interval take?
2. Step detection over runs: farm.dashboard.steps (the gate's test between consecutive runs, confirmed by the
   next run) against ruptures' PELT on the run medians, on series with and without one real step and with a
   one-run spike.

    python scripts/eval_stats_libs.py [--quick]

Needs `pip install arch ruptures` (not dependencies of the project: this script is how they were judged).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from farm.dashboard import steps  # noqa: E402
from farm.gate import ratio_ci  # noqa: E402


def ar1(rng, n, phi, sigma, level=1.0):
    """Timing samples: level * (1 + AR(1) noise) with stationary std sigma, plus a rare slow outlier."""
    e = rng.normal(0, sigma * np.sqrt(1 - phi * phi), n)
    x = np.empty(n)
    x[0] = rng.normal(0, sigma)
    for i in range(1, n):
        x[i] = phi * x[i - 1] + e[i]
    out = level * (1 + x)
    out[rng.random(n) < 0.005] *= 1.5
    return out


def arch_ci(a, b, alpha, n_boot, kind, seed):
    from arch.bootstrap import MovingBlockBootstrap, StationaryBootstrap, optimal_block_length
    meds = []
    for i, x in enumerate((a, b)):
        opt = optimal_block_length(x)
        if kind == "moving":
            L = max(1, int(round(float(opt["circular"].iloc[0]))))
            bs = MovingBlockBootstrap(L, x, seed=seed + i)
        else:
            L = max(1.0, float(opt["stationary"].iloc[0]))
            bs = StationaryBootstrap(L, x, seed=seed + i)
        meds.append(bs.apply(np.median, n_boot).ravel())
    r = meds[1] / meds[0]
    lo, hi = np.quantile(r, [alpha / 2, 1 - alpha / 2])
    return float(np.median(b) / np.median(a)), float(lo), float(hi)


def bootstrap_eval(trials, n, phi, alpha, n_boot):
    rng = np.random.default_rng(1)
    methods = {"farm ratio_ci": lambda a, b, s: ratio_ci(a, b, alpha, n_boot, seed=s),
               "arch moving (optimal L)": lambda a, b, s: arch_ci(a, b, alpha, n_boot, "moving", s),
               "arch stationary (optimal L)": lambda a, b, s: arch_ci(a, b, alpha, n_boot, "stationary", s)}
    out = {}
    for name, fn in methods.items():
        false, width, secs = 0, [], 0.0
        rng = np.random.default_rng(1)
        for t in range(trials):
            a, b = ar1(rng, n, phi, 0.03), ar1(rng, n, phi, 0.03)
            t0 = time.perf_counter()
            _, lo, hi = fn(a, b, t)
            secs += time.perf_counter() - t0
            false += not (lo <= 1.0 <= hi)
            width.append(hi - lo)
        out[name] = {"false_alarm_rate": false / trials, "nominal": alpha, "median_width_pct": 100 * float(np.median(width)),
                     "ms_per_interval": 1e3 * secs / trials}
    return out


def step_series(rng, kind, n_runs=12, at=6, size=0.10, noise=0.02, n_samples=300):
    """One series of runs (points as the dashboard has them), with a step, a spike or neither."""
    pts, truth = [], []
    for r in range(n_runs):
        level = 1.0 * (1 + rng.normal(0, noise))
        if kind == "step" and r >= at:
            level *= 1 + size
        if kind == "spike" and r == at:
            level *= 1 + 3 * size
        s = ar1(rng, n_samples, 0.5, 0.02, level)
        pts.append({"median_ms": float(np.median(s)), "p10_ms": float(np.quantile(s, 0.1)),
                    "p90_ms": float(np.quantile(s, 0.9)), "samples": list(s)})
    return pts, ({at} if kind == "step" else set())


def pelt_steps(pts, noise):
    import ruptures as rpt
    y = np.log([p["median_ms"] for p in pts]).reshape(-1, 1)
    # BIC-like penalty for a mean shift in Gaussian noise of the run-to-run std (known here: the best case)
    bkps = rpt.Pelt(model="l2", min_size=1, jump=1).fit(y).predict(pen=2 * np.log(len(y)) * noise ** 2 * 2)
    return {b for b in bkps[:-1]}


def step_eval(trials, noise):
    out = {}
    for name, fn in {"farm dashboard.steps": lambda p: {i for i, _, _ in steps(p, 0.05)},
                     "ruptures PELT (l2, BIC pen)": lambda p: pelt_steps(p, noise)}.items():
        rng = np.random.default_rng(2)
        found = missed = false = 0
        secs = 0.0
        for _ in range(trials):
            for kind in ("step", "spike", "flat"):
                pts, truth = step_series(rng, kind, noise=noise)
                t0 = time.perf_counter()
                got = fn(pts)
                secs += time.perf_counter() - t0
                hit = {g for g in got if any(abs(g - t) <= 1 for t in truth)}
                found += len(truth) if hit else 0
                missed += len(truth) if not hit else 0
                false += len(got - hit)
        out[name] = {"steps_found": found, "steps_missed": missed, "false_steps": false,
                     "series": 3 * trials, "ms_per_series": 1e3 * secs / (3 * trials)}
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    trials = 40 if a.quick else 200
    res = {"bootstrap (n=2000 per side, AR(1) phi=0.9, equal sides, alpha=0.01, 2000 resamples)":
           bootstrap_eval(trials, 2000, 0.9, 0.01, 2000),
           "bootstrap (n=2000, phi=0.5)": bootstrap_eval(trials, 2000, 0.5, 0.01, 2000),
           "steps (12 runs, +10% step / +30% one-run spike / flat, run-to-run noise 2%)": step_eval(trials, 0.02)}
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
