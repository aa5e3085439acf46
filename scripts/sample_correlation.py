#!/usr/bin/env python3
"""How correlated are a run's per-repetition timing samples? The gate's bootstrap blocks follow it
(farm.gate.block_length); this shows what real GPU samples look like.

    python3 scripts/sample_correlation.py [--store .tilefarm/farm.db] [RUN]      (default: the latest run)

Per timed result: samples, lag-1 autocorrelation, the block length the gate now uses and the old n^(1/3).
Ends with the median lag-1 correlation and how many results got blocks longer than n^(1/3).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from farm.gate import block_length  # noqa: E402
from farm.store import Store  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("run", nargs="?", default="latest")
    ap.add_argument("--store", default=os.environ.get("FARM_STORE", ".tilefarm/farm.db"))
    a = ap.parse_args()
    st = Store(a.store)
    run_id = st.resolve(a.run)
    out, rhos, longer = [], [], 0
    for r in st.rows(run_id, samples=True):
        s = np.asarray(r.get("samples") or [], dtype=np.float64)
        if s.size < 8:
            continue
        d = s - s.mean()
        rho = float(d[:-1] @ d[1:] / (d @ d)) if d @ d > 0 else 0.0
        L, old = block_length(s), max(1, round(s.size ** (1 / 3)))
        rhos.append(rho)
        longer += L > old
        out.append({"workload": r["workload"], "params": r["params"], "n": int(s.size), "lag1": round(rho, 3),
                    "block": L, "old_block": old})
    for o in out:
        print(json.dumps(o))
    print(json.dumps({"run": run_id, "timed_results": len(out),
                      "median_lag1": round(statistics.median(rhos), 3) if rhos else None,
                      "longer_blocks_than_before": longer}))


if __name__ == "__main__":
    main()
