#!/usr/bin/env python3
"""How many global loads a loop has in flight, ours beside Triton's, from the machine code (no GPU).

    python3 scripts/loads_in_flight.py [--out DIR] [--ab SWITCH[,SWITCH]] [NAME_OR_GLOB ...]
    python3 scripts/loads_in_flight.py --ptx FILE [FILE ...]     (PTX files, e.g. hand-edited ones, assembled alone)

Every kernel of workloads/corpus (or those named) is compiled at its GPU specialization by both compilers for
sm_90a (scripts/_bench_host_corpus.py), assembled by the same ptxas and disassembled (`nvdisasm -c`). Loops are
found as scripts/static_corpus.py finds them (a backward branch closes one). In each loop body, walked in order,
"loads in flight" is the number of global loads (LDG, generic LD) issued before the first instruction that reads
or overwrites a register one of them writes: how many loads' latencies overlap before the warp must wait. A memory
bound loop whose loads are consumed one by one (the assembler reused the destination registers of the first load
for the second) waits for each load's full latency in turn. Loops are matched in order (both compilers emit a
kernel's loops in source order; a loop unrolled by one compiler and not the other mismatches the rest); a kernel
is listed where one of its loops has fewer loads in flight than the same loop of Triton's and not all of its own.
An approximation of the hardware's scoreboard: the first register operand is taken as the destination (none for
stores, compares into predicates, branches), 64-bit operands by their `.64` suffix, IMAD.WIDE and double ops.
--no-triton: ours only (an A/B of our switches needs no Triton). Writes OUT/loads_in_flight.json and
OUT/loads_in_flight.md.
"""
from __future__ import annotations

import argparse
import datetime
import fnmatch
import hashlib
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for p in (ROOT, os.path.join(ROOT, "scripts")):
    if p not in sys.path:
        sys.path.insert(0, p)

from compiler.codegen.sass import (in_flight, is_global_load, loop_bodies, operands,  # noqa: E402,F401
                                   reads_writes)


def side_loops(lines) -> list[dict]:
    return [in_flight(b) for b in loop_bodies(lines)]


def sass_of(cubin: bytes, nvdisasm: str) -> list[str]:
    from compiler.codegen.sass import sass

    return sass(cubin, nvdisasm)


def side(cubin: bytes, ptx: str, nvdisasm: str) -> dict:
    from compiler.codegen.ptx import ptx_resources

    text = ptx if isinstance(ptx, str) else ptx.decode()
    res = ptx_resources(text, "sm_90a")
    # the PTX's SHA-1 with the checkout's path (in its .file lines) taken out: comparable across checkouts
    sha = hashlib.sha1(text.replace(ROOT, "<root>").encode()).hexdigest()
    return {"registers": res.get("registers"), "spills": res.get("spill_stores", 0),
            "loops": side_loops(sass_of(cubin, nvdisasm)), "ptx_sha1": sha}


def compare(ours: dict, tri: dict) -> list[dict]:
    """Loops (matched in order) where ours has fewer loads in flight than Triton's and not all of its own."""
    out = []
    for j, (a, b) in enumerate(zip(ours["loops"], tri["loops"])):
        if a["in_flight"] < min(b["in_flight"], a["loads"]):
            out.append({"loop": j, "ours": a["in_flight"], "triton": b["in_flight"]})
    return out


def assemble_ptx(path: str, nvdisasm: str) -> dict:
    """A PTX file assembled alone (ptxas -arch=sm_90a -O3 -v): registers and its loops."""
    from compiler.codegen.ptx import _RES, find_ptxas

    with open(path) as f:
        text = f.read()
    with tempfile.TemporaryDirectory(prefix="lif-") as d:
        out = os.path.join(d, "k.cubin")
        p = subprocess.run([find_ptxas(), "-arch=sm_90a", "-O3", "-v", path, "-o", out], capture_output=True,
                           text=True)
        if p.returncode != 0:
            raise SystemExit(f"ptxas failed on {path}:\n{p.stderr}")
        with open(out, "rb") as f:
            cubin = f.read()
    m = _RES["registers"].search(p.stderr + p.stdout)
    del text
    return {"registers": int(m.group(1)) if m else None, "loops": side_loops(sass_of(cubin, nvdisasm))}


def _fmt_loops(s: dict) -> str:
    return ", ".join(f"{x['in_flight']}/{x['loads']}" for x in s["loops"] if x["loads"]) or "-"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("select", nargs="*")
    ap.add_argument("--out", default=os.path.join(ROOT, "benchmarks", f"static-{datetime.date.today()}"))
    ap.add_argument("--ab", default="", help="TILEFARM_AB switches for our side")
    ap.add_argument("--ptx", nargs="+", help="assemble these PTX files alone and print their loops")
    ap.add_argument("--no-triton", action="store_true", help="ours only (the A/B comparisons need no Triton)")
    a = ap.parse_args()
    from compiler.codegen.ptx import find_nvdisasm

    nvdisasm = find_nvdisasm()
    if nvdisasm is None:
        raise SystemExit("nvdisasm not found (nvidia-cuda-nvdisasm: the `sass` extra; or TILEFARM_NVDISASM)")
    if a.ptx:
        for path in a.ptx:
            s = assemble_ptx(path, nvdisasm)
            print(f"{path}: {s['registers']} registers; loops (in flight/loads/instructions): " +
                  (", ".join(f"{x['in_flight']}/{x['loads']}/{x['instructions']}" for x in s["loops"]) or "-"))
        return
    os.environ["TILEFARM_CACHE"] = "0"
    if a.ab:
        os.environ["TILEFARM_AB"] = a.ab
    import _bench_host_corpus as B

    files = B.case_files()
    if a.select:
        files = {n: p for n, p in files.items() if any(fnmatch.fnmatch(n, g) or g == n for g in a.select)}
    rows, loaded = [], {}
    for name, path in sorted(files.items()):
        for which in ("ours",) if a.no_triton else ("ours", "triton"):
            if (path, which) not in loaded:
                loaded[path, which] = B.cases_of(path, which)
        try:
            case = loaded[path, "ours"][name]
            args, kw = B.prepare(case)
            ours = side(*B.compile_ours(case, args, kw)[:2], nvdisasm)
            tri = None
            if not a.no_triton:
                tcase = loaded[path, "triton"][name]
                targs, tkw = B.prepare(tcase)
                tri = side(*B.compile_triton(tcase, targs, tkw)[:2], nvdisasm)
        except (Exception, SystemExit) as e:  # noqa: BLE001 -- one kernel's failure is a row, not the end
            rows.append({"name": name, "error": f"{type(e).__name__}: {e}"[:300]})
            print(f"{name}: {rows[-1]['error']}", flush=True)
            continue
        row = {"name": name, "ours": ours, "triton": tri, "fewer": compare(ours, tri) if tri else []}
        rows.append(row)
        print(f"{name:40s} {ours['registers'] or 0:4d}/{(tri or {}).get('registers') or 0:<4d} "
              f"{_fmt_loops(ours):24s} {_fmt_loops(tri) if tri else '':24s} "
              f"{'FEWER' if row['fewer'] else ''}", flush=True)
    os.makedirs(a.out, exist_ok=True)
    doc = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), "ab": a.ab,
           "rows": rows}
    with open(os.path.join(a.out, "loads_in_flight.json"), "w") as f:
        json.dump(doc, f, indent=1)
    with open(os.path.join(a.out, "loads_in_flight.md"), "w") as f:
        f.write(markdown(doc))
    print(f"wrote {a.out}/loads_in_flight.md")


def markdown(doc) -> str:
    out = [f"# Loads in flight per loop, ours beside Triton's ({doc['date']}{', ' + doc['ab'] if doc['ab'] else ''})",
           "", "`scripts/loads_in_flight.py`: both compilers for sm_90a at each kernel's GPU specialization, the same "
           "ptxas; per loop with global loads (source order): loads issued before the first use of one of them / "
           "global loads in the loop body.", "",
           "| kernel | registers | loops ours | loops Triton | fewer in flight |", "|---|---:|---|---|---|"]
    ok = [r for r in doc["rows"] if "error" not in r and any(x["loads"] for x in r["ours"]["loops"])]
    ok.sort(key=lambda r: (not r["fewer"], r["name"]))
    for r in ok:
        o, t = r["ours"], r["triton"]
        fewer = "; ".join(f"loop {f['loop']}: {f['ours']} < {f['triton']}" for f in r["fewer"])
        out.append(f"| {r['name']} | {o['registers']}/{(t or {}).get('registers', '')} | {_fmt_loops(o)} | "
                   f"{_fmt_loops(t) if t else ''} | {fewer} |")
    for r in doc["rows"]:
        if "error" in r:
            out.append(f"| {r['name']} | | | | error: {r['error']} |")
    n = sum(1 for r in ok if r["fewer"])
    out += ["", f"{len(doc['rows'])} kernels, {len(ok)} with a loop that loads from global memory, {n} with a loop "
            "that has fewer loads in flight than Triton's."]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    main()
