#!/usr/bin/env python3
"""The farm's tilefarm/Triton ratios on the idiom corpus against scripts/bench_corpus.py's, kernel by kernel.

    farm run configs/corpus.yaml --allow-outside --label corpus
    farm report corpus --format json > farm-corpus.json
    python3 scripts/bench_corpus.py --out DIR                     # DIR/corpus-<date>.json
    python3 scripts/compare_corpus_farm.py farm-corpus.json DIR/corpus-<date>.json [--out compare.md]

Both measure the same kernels from the same source files at the same sizes and meta-parameters, under both
compilers on the same GPU; they differ in method: the farm times each job once (do_bench for timing.rep_ms, L2
flushed, its own inputs), the benchmark in interleaved rounds (the median of per-round ratios, with a min-max
span). A kernel agrees when the farm's ratio lies within the benchmark's span widened by --slack (default 5%) on
each side. Prints one line per kernel, the geomeans of both over the kernels both timed, and how many agree;
exits 1 when the two geomeans differ by more than --slack, else 0.
"""
from __future__ import annotations

import argparse
import json
import math
import sys


def geomean(vals):
    vals = [v for v in vals if v and v > 0]
    return math.exp(sum(math.log(v) for v in vals) / len(vals)) if vals else None


def farm_ratios(doc: dict) -> dict:
    """{kernel: tilefarm/triton} from `farm report --format json` (its "compilers" section)."""
    comp = doc.get("compilers") or {}
    if comp.get("ratio_to") != "triton":
        raise SystemExit("the farm report has no ratios to triton (a run with compilers [tilefarm, triton] on a GPU?)")
    out = {}
    for p in comp.get("points", []):
        r = p.get("ratio", {}).get("tilefarm")
        if r:
            out[p["workload"]] = r
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("farm_json", help="farm report RUN --format json")
    ap.add_argument("bench_json", help="scripts/bench_corpus.py's corpus-<date>.json")
    ap.add_argument("--slack", type=float, default=0.05, help="relative widening of the benchmark's span")
    ap.add_argument("--out", default=None, help="also write the table as Markdown here")
    args = ap.parse_args(argv)
    with open(args.farm_json) as f:
        farm = farm_ratios(json.load(f))
    with open(args.bench_json) as f:
        bench = {r["name"]: r for r in json.load(f)["rows"] if r.get("ratio")}
    common = sorted(set(farm) & set(bench))
    lines = ["| kernel | farm tilefarm/triton | bench_corpus (min-max) | agree |", "|---|---|---|---|"]
    agree = 0
    for k in common:
        b = bench[k]
        lo, hi = b["ratio_min"] * (1 - args.slack), b["ratio_max"] * (1 + args.slack)
        ok = lo <= farm[k] <= hi
        agree += ok
        lines.append(f"| {k} | {farm[k]:.3f} | {b['ratio']:.3f} ({b['ratio_min']:.2f}-{b['ratio_max']:.2f}) | "
                     f"{'yes' if ok else 'NO'} |")
    gf, gb = geomean([farm[k] for k in common]), geomean([bench[k]["ratio"] for k in common])
    only_farm, only_bench = sorted(set(farm) - set(bench)), sorted(set(bench) - set(farm))
    summary = [f"kernels timed by both: {len(common)}; agreeing within the benchmark's span +-{args.slack:.0%}: "
               f"{agree}", f"geomean tilefarm/triton: farm {gf:.3f}, bench_corpus {gb:.3f}" if gf and gb else
               "no kernel timed by both", f"only in the farm run: {', '.join(only_farm) or 'none'}",
               f"only in the benchmark: {', '.join(only_bench) or 'none'}"]
    text = "\n".join(lines + [""] + summary) + "\n"
    print(text, end="")
    if args.out:
        with open(args.out, "w") as f:
            f.write("# The farm's corpus ratios against bench_corpus.py\n\n" + text)
    return 1 if gf and gb and abs(gf / gb - 1) > args.slack else 0


if __name__ == "__main__":
    sys.exit(main())
