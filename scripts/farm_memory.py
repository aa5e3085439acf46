"""Worker memory over a farm run: host RSS and GPU memory after each job, first vs last vs peak, per worker.

    python3 -m farm report latest --format json > run.json && python3 scripts/farm_memory.py run.json
"""
from __future__ import annotations

import json
import sys
from collections import defaultdict


def main():
    data = json.load(open(sys.argv[1]))
    by_worker = defaultdict(list)
    for r in sorted(data["results"], key=lambda r: r.get("created") or 0):
        g = r.get("gpu") or {}
        if "worker_rss_mb" in g:
            by_worker[r.get("worker", "?")].append((g["worker_rss_mb"], g.get("gpu_mem_used_mb")))
    out = {}
    print(f"{'worker':<24} {'jobs':>5} {'rss first':>10} {'rss last':>9} {'rss max':>8} {'gpu first':>10} "
          f"{'gpu last':>9} {'gpu max':>8}  (MiB)")
    for w, xs in by_worker.items():
        rss = [x[0] for x in xs]
        gpu = [x[1] for x in xs if x[1] is not None] or [float("nan")]
        # "first" after a warm-up of 20 jobs: the first jobs load modules and compile
        i0 = min(20, len(xs) - 1)
        out[w] = {"jobs": len(xs), "rss_after_warmup": rss[i0], "rss_last": rss[-1], "rss_max": max(rss),
                  "gpu_after_warmup": gpu[min(i0, len(gpu) - 1)], "gpu_last": gpu[-1], "gpu_max": max(gpu)}
        o = out[w]
        print(f"{w:<24} {len(xs):5d} {o['rss_after_warmup']:10.1f} {o['rss_last']:9.1f} {o['rss_max']:8.1f} "
              f"{o['gpu_after_warmup']:10.1f} {o['gpu_last']:9.1f} {o['gpu_max']:8.1f}")
    if len(sys.argv) > 2:
        json.dump(out, open(sys.argv[2], "w"), indent=1)


if __name__ == "__main__":
    main()
