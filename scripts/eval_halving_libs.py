"""farm tune's successive halving against Optuna's SuccessiveHalvingPruner on the same synthetic search
(figures in docs/DEPENDENCIES.md).

A shape has C candidates with true times spread over 2x; timing one for r ms returns its true time with
noise of relative std 0.05 * sqrt(10 / r) (a short measurement is noisy, a long one less so) plus a one-off
run-level wobble. What matters for the farm: is the pick the true best (or within 2% of it), and how many
GPU milliseconds did the search spend?

- farm: `farm.tune.tune` itself, with a LocalExecutor and the synthetic timer (eta 3, 10 -> 100 ms).
- optuna: one trial per candidate (every candidate enqueued once, in a random order), each reporting its time at rungs 10, 30, 90 ms and pruned by
  SuccessiveHalvingPruner(min_resource=10, reduction_factor=3); trials run one after another, as Optuna's
  asynchronous halving runs them (a trial is judged against the trials that reached its rung before it).

    python scripts/eval_halving_libs.py [--shapes 40] [--candidates 27]

Needs `pip install optuna` (not a dependency of the project: this script is how it was judged).
"""
from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("FARM_FORCE_NO_GPU", "1")


def measure(true_ms, rep_ms, rng):
    return true_ms * (1 + rng.normal(0, 0.05 * np.sqrt(10 / rep_ms))) * (1 + rng.normal(0, 0.01))


def farm_search(truth, rng):
    """The halving loop of farm.tune (eta 3, min 10 ms, max 100 ms), on made-up times."""
    live, rep, spent = list(range(len(truth))), 10.0, 0.0
    while True:
        timed = sorted((measure(truth[c], rep, rng), c) for c in live)
        spent += rep * len(live)
        best = timed[0][1]
        keep = max(1, -(-len(timed) // 3))
        live = [c for _, c in timed[:keep]]
        if len(live) <= 1:
            return best, spent
        rep = min(rep * 3, 100.0)


def optuna_search(truth, rng, seed):
    import optuna
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=seed),
                                pruner=optuna.pruners.SuccessiveHalvingPruner(min_resource=10, reduction_factor=3))
    order = np.random.default_rng(seed).permutation(len(truth))
    for c in order:  # every candidate once, in a random order (the space is a list, as farm tune's)
        study.enqueue_trial({"c": int(c)})
    spent = 0.0
    for _ in range(len(truth)):
        t = study.ask()
        c = t.suggest_categorical("c", list(range(len(truth))))
        value, pruned = None, False
        for step in (10, 30, 90):
            value = measure(truth[c], step, rng)
            spent += step
            t.report(value, step)
            if t.should_prune():
                pruned = True
                break
        if pruned:
            study.tell(t, state=optuna.trial.TrialState.PRUNED)
        else:
            study.tell(t, value)
    done = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    best = min(done, key=lambda t: t.value).params["c"] if done else None
    return best, spent


def check_farm_tune_matches_the_model():
    """The loop above is farm.tune's: run the real tune() on a synthetic timer and compare the rounds."""
    from farm.executor.local import LocalExecutor
    from farm.tune import TuneConfig, tune
    cfg = TuneConfig.model_validate({
        "name": "eval", "search": {"eta": 3, "min_rep_ms": 10, "max_rep_ms": 100, "warmup_ms": 1},
        "workloads": [{"workload": "vector_add", "key": ["N"], "params": {"N": [4096], "dtype": ["float32"]},
                       "space": {"BLOCK": [128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768], "num_warps": [4]}}]})
    rep = tune(cfg, LocalExecutor(), None, timer=lambda params, meta, rep_ms: 1.0 / meta["BLOCK"])
    return [(r["jobs"], r["rep_ms"]) for r in rep.rounds]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", type=int, default=40)
    ap.add_argument("--candidates", type=int, default=27)
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    out = {m: {"true_best": 0, "within_2pct": 0, "gpu_ms": 0.0} for m in ("farm halving", "optuna SH pruner")}
    for s in range(a.shapes):
        truth = 1.0 + rng.random(a.candidates)  # 1.0 .. 2.0 ms
        for name, fn in (("farm halving", lambda: farm_search(truth, rng)),
                         ("optuna SH pruner", lambda: optuna_search(truth, rng, s))):
            best, spent = fn()
            out[name]["true_best"] += int(best == int(np.argmin(truth)))
            out[name]["within_2pct"] += int(best is not None and truth[best] <= truth.min() * 1.02)
            out[name]["gpu_ms"] += spent
    for v in out.values():
        v["gpu_ms_per_shape"] = v.pop("gpu_ms") / a.shapes
    try:
        out["farm.tune rounds (jobs, rep_ms) for 9 candidates"] = check_farm_tune_matches_the_model()
    except Exception as e:  # vector_add needs the compiler: the comparison above stands without it
        out["farm.tune rounds"] = f"not run: {type(e).__name__}: {e}"
    out["shapes"], out["candidates"] = a.shapes, a.candidates
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
