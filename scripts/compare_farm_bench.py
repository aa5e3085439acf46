"""Do the farm's timings agree with the benchmark script's? And what does the farm cost per job?

Reads a `farm report RUN --format json` file and a `scripts/bench_memory.py` JSON from the same GPU session,
matches jobs by (workload, params, meta), and prints farm median / script median per point. Also prints the
farm's own overhead per job: wall time minus the time spent in the kernel's measured runs (compile, inputs,
validation against the float64 reference, storing), split by job size. Writes DIR/farm-vs-bench-<date>.json.

    python3 scripts/compare_farm_bench.py FARM.json BENCH.json [--out DIR]
"""
from __future__ import annotations

import argparse
import datetime
import json
import os

import numpy as np


def _key(workload, params, meta):
    return (workload, json.dumps(params, sort_keys=True), json.dumps(meta, sort_keys=True))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("farm")
    ap.add_argument("bench")
    ap.add_argument("--out", default="benchmarks")
    a = ap.parse_args()
    farm = json.load(open(a.farm))
    bench = json.load(open(a.bench))
    script = {}
    for t in bench.get("targets", []):
        for run in t.get("impls", {}).get("ours", {}).get("runs", []):
            b = run.get("bench") or {}
            if run.get("valid") and b.get("median_ms"):
                script[_key(t["workload"], t["params"], run["meta"])] = b
    rows = []
    for r in farm["results"]:
        k = _key(r["workload"], r["params"], r["meta"])
        if k in script and r.get("median_ms"):
            s = script[k]
            rows.append({"workload": r["workload"], "params": r["params"], "meta": r["meta"],
                         "farm_ms": r["median_ms"], "farm_p10": r["p10_ms"], "farm_p90": r["p90_ms"],
                         "script_ms": s["median_ms"], "script_p10": s.get("p10_ms"), "script_p90": s.get("p90_ms"),
                         "ratio": r["median_ms"] / s["median_ms"]})
    over = []
    for r in farm["results"]:
        if r.get("wall_s") is None:
            continue
        kernel_s = (r.get("bench_s") or 0.0)
        over.append({"workload": r["workload"], "bytes": r.get("bytes") or 0, "overhead_ms": (r["wall_s"] - kernel_s) * 1e3,
                     "compile_ms": (r.get("compile_s") or 0) * 1e3, "validate_ms": (r.get("validate_s") or 0) * 1e3})
    print(f"{'point':<60} {'farm ms':>9} {'script ms':>10} {'farm/script':>12}")
    for r in rows:
        name = f"{r['workload']} {r['params']} {r['meta']}"[:60]
        print(f"{name:<60} {r['farm_ms']:9.4f} {r['script_ms']:10.4f} {r['ratio']:12.3f}")
    summary = {}
    if rows:
        ratios = np.array([r["ratio"] for r in rows])
        summary["agreement"] = {"n": len(rows), "median_ratio": float(np.median(ratios)),
                                "min_ratio": float(ratios.min()), "max_ratio": float(ratios.max())}
        print(f"\nfarm/script over {len(rows)} points: median {np.median(ratios):.3f}, "
              f"range {ratios.min():.3f}-{ratios.max():.3f}")
    if over:
        for label, sel in (("jobs under 64 MB", [o for o in over if o["bytes"] < 64e6]),
                           ("jobs of 64 MB or more", [o for o in over if o["bytes"] >= 64e6])):
            if sel:
                ov = np.array([o["overhead_ms"] for o in sel])
                va = np.array([o["validate_ms"] for o in sel])
                summary[label] = {"n": len(sel), "overhead_median_ms": float(np.median(ov)),
                                  "overhead_p90_ms": float(np.quantile(ov, 0.9)),
                                  "validate_median_ms": float(np.median(va))}
                print(f"farm overhead per job, {label}: median {np.median(ov):.1f} ms, p90 "
                      f"{np.quantile(ov, 0.9):.1f} ms (of which validation median {np.median(va):.1f} ms), n={len(sel)}")
    os.makedirs(a.out, exist_ok=True)
    path = os.path.join(a.out, f"farm-vs-bench-{datetime.date.today().isoformat()}.json")
    with open(path, "w") as f:
        json.dump({"rows": rows, "overhead": over, "summary": summary}, f, indent=1)
    print("wrote", path)


if __name__ == "__main__":
    main()
