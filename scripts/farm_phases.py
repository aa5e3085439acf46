#!/usr/bin/env python3
"""Where a farm run's time goes, per job, for runs compared side by side (e.g. one GPU against two).

    python3 scripts/farm_phases.py RUN1.json RUN2.json ...     (each: `farm report RUN --format json`)

Per run: jobs, sum and median of each job's wall time and of its parts (inputs + reference, validation, timed
runs incl. baseline and launch cost, compile when done in the worker), the busiest worker's summed wall time, and
the worker count. With one GPU against two, the per-job medians say whether jobs got slower when two run at once
(contention on the host) and the per-worker sums whether the work was split evenly.
"""
from __future__ import annotations

import json
import statistics
import sys


def summarize(path: str) -> dict:
    with open(path) as f:
        d = json.load(f)
    rows = d["results"]
    out = {"run": d["run"]["id"], "jobs": len(rows), "workers": len({r.get("worker") for r in rows})}
    parts = {"wall_s": lambda r: r.get("wall_s"), "validate_s": lambda r: r.get("validate_s"),
             "bench_s": lambda r: r.get("bench_s"), "inputs_s": lambda r: (r.get("artifacts") or {}).get("inputs_s"),
             "compile_s": lambda r: r.get("compile_s")}
    for name, get in parts.items():
        v = [x for x in (get(r) for r in rows) if isinstance(x, (int, float))]
        out[name] = {"sum": round(sum(v), 2), "median": round(statistics.median(v), 4) if v else None}
    per_worker: dict = {}
    for r in rows:
        per_worker[r.get("worker")] = per_worker.get(r.get("worker"), 0.0) + (r.get("wall_s") or 0.0)
    out["busiest_worker_wall_s"] = round(max(per_worker.values()), 2) if per_worker else None
    return out


def main(paths):
    res = [summarize(p) for p in paths]
    print(json.dumps(res, indent=1))
    return res


if __name__ == "__main__":
    main(sys.argv[1:])
