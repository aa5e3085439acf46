"""Synthetic farm runs for gate and dashboard tests: stores filled with made-up timing samples, no GPU."""
from __future__ import annotations

import numpy as np

from farm.jobs import Job, Result
from farm.planner import job_key


def samples(median_ms: float, noise: float, n: int, rng, drift: float = 0.0) -> list[float]:
    """Timings with a realistic shape: lognormal spread `noise` (0.1-0.3), a few slow outliers, AR(1) drift."""
    eps = rng.standard_normal(n)
    ar = np.empty(n)
    ar[0] = eps[0]
    for i in range(1, n):  # consecutive repetitions are correlated (clocks, temperature)
        ar[i] = 0.6 * ar[i - 1] + 0.8 * eps[i]
    x = median_ms * (1 + drift) * np.exp(noise * 0.5 * ar)
    tail = rng.random(n) < 0.03
    x[tail] *= 1 + rng.exponential(noise * 2, tail.sum())
    return [float(v) for v in x]


def add_run(store, jobs: list[dict], *, label=None, target="H200", commit="abc123", name="synthetic",
            seed=0) -> int:
    """A run of `jobs`, each a dict: workload, params, meta, compiler (default tilefarm), gpu_kind (default none:
    the run's target), median_ms, noise, n
    (samples), status, compile_s,
    launch_us, slow (factor), drift (run-level shift), with_samples (False: an old store's row)."""
    rng = np.random.default_rng(seed)
    run_id = store.create_run(name=name, label=label, config_text="", config_path="", options={"flush_l2": True},
                              target=target, gpus=[target], compiler_version="0", farm_version="0")
    store.update_run(run_id, git_commit=commit)
    planned = []
    for i, j in enumerate(jobs):
        comp = j.get("compiler", "tilefarm")
        kind = j.get("gpu_kind", "")
        key = job_key(f"src{seed}", j["workload"], j["params"], j["meta"], f"c{run_id}{comp}", kind or target)
        planned.append((Job(key=key, idx=i, workload=j["workload"], name=j["workload"], params=j["params"],
                            meta=j["meta"], compiler=comp, gpu_kind=kind), j))
    store.add_jobs(run_id, [p[0] for p in planned], {})
    for job, j in planned:
        status = j.get("status", "ok")
        res = Result(key=job.key, status=status, compile_s=j.get("compile_s", 0.3), flops=1e9, bytes=4e8,
                     provenance=j.get("provenance"))
        if status == "ok":
            s = samples(j.get("median_ms", 0.1) * j.get("slow", 1.0), j.get("noise", 0.2), j.get("n", 300), rng,
                        j.get("drift", 0.0))
            a = np.asarray(s)
            res.median_ms, res.p10_ms, res.p90_ms = float(np.median(a)), float(np.quantile(a, .1)), \
                float(np.quantile(a, .9))
            res.n_reps = len(s)
            res.samples = s if j.get("with_samples", True) else None
            if j.get("launch_us"):
                lu = j["launch_us"]
                res.launch = {"median_us": lu, "p10_us": lu * 0.97, "p90_us": lu * 1.03, "n": 2000}
        else:
            res.error = "out: 3/1024 elements wrong"
        store.add_result(run_id, res)
    store.finish_run(run_id, "done")
    return run_id


def sweep(**over) -> list[dict]:
    """A small sweep: 2 workloads x 3 shapes."""
    out = []
    for w, base in (("vector_add", 0.02), ("softmax", 0.15)):
        for n, mult in ((4096, 1.0), (65536, 3.0), (1 << 20, 20.0)):
            out.append({"workload": w, "params": {"N": n, "dtype": "float32"}, "meta": {"BLOCK": 1024},
                        "median_ms": base * mult, **over})
    return out
