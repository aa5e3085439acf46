#!/usr/bin/env python3
"""Two Nsight Compute reports of one kernel side by side, where the time goes (no GPU needed).

    python3 scripts/ncu_compare.py OURS-source.csv TRITON-source.csv [--raw OURS.raw.csv[.xz] TRITON.raw.csv[.xz]]

The inputs are what `NCU_SRC=1 bash scripts/gpu_session.sh ncucorpus` writes per case and compiler:
`ncu -i REPORT --page source --csv --print-source sass` (every SASS instruction with its warp-stall samples by
reason) and, for --raw, `ncu -i REPORT --page raw --csv` (every collected metric). Printed: the stall samples of
each side in all and by reason, split into the code before the innermost backward branch's loop, the loop and the
rest (samples are proportional to time, so the difference says where the slower side loses), the instructions
carrying the most samples, and with --raw the L1/L2/DRAM sectors and requests that differ by more than 2%.
"""
from __future__ import annotations

import argparse
import csv
import lzma
import sys

ALL = "Warp Stall Sampling (All Samples)"


def _num(x: str) -> float:
    try:
        return float(x.replace(",", ""))
    except ValueError:
        return 0.0


def _open(path: str):
    return lzma.open(path, "rt") if path.endswith(".xz") else open(path, newline="")


def load_source(path: str) -> list[dict]:
    rows = list(csv.reader(_open(path)))
    at = next(i for i, r in enumerate(rows) if "Address" in r and "Source" in r)
    hdr = rows[at]
    return [dict(zip(hdr, r)) for r in rows[at + 1:] if len(r) >= len(hdr) - 1]


def reasons(rows: list[dict]) -> list[str]:
    return [k for k in rows[0] if k.startswith("stall_") and "Not Issued" not in k]


def regions(rows: list[dict]) -> dict:
    """Samples before the loop, in it, after it: the loop is the body of the last backward predicated branch."""
    addr = [int(r["Address"], 16) for r in rows]
    loop = None
    for i, r in enumerate(rows):
        src = r["Source"].split()
        if "BRA" in " ".join(src) and src and src[0].startswith("@"):
            try:
                tgt = int(src[-1], 16)
            except ValueError:
                continue
            if tgt < addr[i] and tgt in addr:
                loop = (addr.index(tgt), i)
    s = [_num(r[ALL]) for r in rows]
    if loop is None:
        return {"all": sum(s)}
    a, b = loop
    return {"all": sum(s), "before": sum(s[:a]), "loop": sum(s[a:b + 1]), "after": sum(s[b + 1:]),
            "loop_instructions": sum(_num(r["Instructions Executed"]) for r in rows[a:b + 1])}


def report(name: str, rows: list[dict], top: int) -> dict:
    tot = sum(_num(r[ALL]) for r in rows) or 1.0
    by = {k[6:]: sum(_num(r[k]) for r in rows) for k in reasons(rows)}
    reg = regions(rows)
    print(f"== {name}: {tot:.0f} samples, {sum(_num(r['Instructions Executed']) for r in rows):.0f} instructions "
          f"executed; " + ", ".join(f"{k} {v:.0f}" for k, v in reg.items() if k != "all"))
    print("   by reason: " + ", ".join(f"{k} {v / tot * 100:.1f}%" for k, v in sorted(by.items(), key=lambda kv: -kv[1])
                                       if v / tot > 0.01))
    for r in sorted(rows, key=lambda r: -_num(r[ALL]))[:top]:
        br = sorted(((k[6:], _num(r[k])) for k in reasons(rows)), key=lambda kv: -kv[1])[:3]
        print(f"   {_num(r[ALL]) / tot * 100:5.1f}%  {r['Source'].strip()[:64]:64s} "
              + " ".join(f"{k} {v / tot * 100:.1f}" for k, v in br if v))
    return {"samples": tot, "by": by, "regions": reg}


def load_raw(path: str) -> dict:
    rows = list(csv.reader(_open(path)))
    at = next(i for i, r in enumerate(rows) if r and r[0] == "ID")
    return dict(zip(rows[at], rows[at + 2]))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("a", help="first side's source-page CSV (ours)")
    ap.add_argument("b", help="second side's source-page CSV (Triton)")
    ap.add_argument("--raw", nargs=2, metavar=("A", "B"), help="the two raw-page CSVs (optionally .xz)")
    ap.add_argument("--top", type=int, default=12)
    args = ap.parse_args(argv)
    ra, rb = report(args.a, load_source(args.a), args.top), report(args.b, load_source(args.b), args.top)
    print(f"== first / second: samples {ra['samples'] / rb['samples']:.3f}; difference by reason (samples): "
          + ", ".join(f"{k} {ra['by'].get(k, 0) - rb['by'].get(k, 0):+.0f}" for k in ra["by"]
                      if abs(ra["by"].get(k, 0) - rb["by"].get(k, 0)) > 0.01 * rb["samples"]))
    if args.raw:
        xa, xb = load_raw(args.raw[0]), load_raw(args.raw[1])
        print("== memory metrics that differ by more than 2% (first, second, ratio)")
        for k in sorted(xa):
            if not k.endswith(".sum") or not any(p in k for p in ("lts__t_", "dram__sectors", "l1tex__t_", "l1tex__m_")):
                continue
            x, y = _num(xa[k]), _num(xb.get(k, "0"))
            if y and abs(x / y - 1) > 0.02:
                print(f"   {k:78s} {x:14.0f} {y:14.0f} {x / y:6.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
