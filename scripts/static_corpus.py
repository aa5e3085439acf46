#!/usr/bin/env python3
"""The corpus kernels' machine code beside Triton's, without a GPU: where ours is likely slower before any timing.

    python3 scripts/static_corpus.py [--out DIR] [--ab SWITCH[,SWITCH]] [NAME_OR_GLOB ...]

Every kernel of workloads/corpus (or those named) is compiled at its GPU specialization by both compilers for
sm_90a (as scripts/bench_host.py does), assembled by the same ptxas (`-v`: registers, spills) and disassembled
(`nvdisasm -c`). Per kernel, each side's registers, spill bytes, shared memory, resident blocks per SM, SASS
instructions, and its loops (a backward branch closes one): instructions, barriers (BAR.SYNC) and shared-memory
accesses in the loop body. The flags name what has, across the corpus, come before a measured gap: fewer blocks per
SM, spills, a loop with more barriers than Triton's, a loop over 15% longer, shared-memory traffic in a loop where
Triton's has none, an opcode ours issues 1.5 times as often and 64 more times (the kernel does work of a kind
Triton's does not). A flag is a place to look, not a verdict: a longer loop with a deeper pipeline, or more registers
that buy a second block, often run faster. Writes OUT/static_corpus.json and OUT/static_corpus.md.
"""
from __future__ import annotations

import argparse
import datetime
import fnmatch
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for p in (ROOT, os.path.join(ROOT, "scripts")):
    if p not in sys.path:
        sys.path.insert(0, p)

from compiler.codegen.sass import _PRED, loop_bodies  # noqa: E402


def loops(lines) -> list[dict]:
    """Per loop of a SASS listing (loop_bodies): instructions, BAR.SYNC, shared loads and stores."""
    out = []
    for body in loop_bodies(lines):
        ops = [_PRED.sub("", b).split()[0].rstrip(";") for b in body]
        out.append({"instructions": len(body),
                    "barriers": sum(o.startswith("BAR.SYNC") for o in ops),
                    "shared": sum(o.startswith(("LDS", "STS", "LDSM", "STSM")) for o in ops)})
    return out


def side(cubin: bytes, ptx: str, smem: int, threads: int, nvdisasm: str) -> dict:
    from compiler.codegen.ptx import ptx_resources
    from compiler.resources import occupancy
    from sass_compare import sass

    res = ptx_resources(ptx, "sm_90a")
    shared = smem + res.get("shared_bytes", 0)
    lines = sass(nvdisasm, cubin)
    ops: dict = {}
    for ln in lines:
        if ln.endswith(";"):
            op = _PRED.sub("", ln).split(None, 1)[0].split(".")[0]
            ops[op] = ops.get(op, 0) + 1
    return {"registers": res.get("registers"), "spills": res.get("spill_stores", 0), "shared": shared,
            "blocks": occupancy(res.get("registers") or 0, shared, threads, "sm_90a"),
            "instructions": sum(ops.values()), "loops": loops(lines), "opcodes": ops}


def flags(ours: dict, tri: dict) -> list[str]:
    out = []
    if ours["blocks"] < tri["blocks"]:
        out.append(f"blocks {ours['blocks']}/{tri['blocks']}")
    if ours["spills"] > tri["spills"]:
        out.append(f"spills {ours['spills']}/{tri['spills']}")
    # loops matched in order (both compilers emit a kernel's loops in source order; unrolled ones may be missing)
    for j, (a, b) in enumerate(zip(ours["loops"], tri["loops"])):
        if a["barriers"] > b["barriers"]:
            out.append(f"loop {j} barriers {a['barriers']}/{b['barriers']}")
        if a["instructions"] > 1.15 * b["instructions"]:
            out.append(f"loop {j} {a['instructions']}/{b['instructions']} instructions")
        if a["shared"] and not b["shared"]:
            out.append(f"loop {j} shared {a['shared']}/0")
    # an opcode ours issues far more of (the float compares of a sort network, predicates moved to registers, P2R):
    # the kernel does work of a kind Triton's does not
    for op, n in sorted(ours.get("opcodes", {}).items()):
        m = tri.get("opcodes", {}).get(op, 0)
        if n >= 64 + m and n >= 1.5 * m:
            out.append(f"{op} {n}/{m}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("select", nargs="*")
    ap.add_argument("--out", default=os.path.join(ROOT, "benchmarks", f"static-{datetime.date.today()}"))
    ap.add_argument("--ab", default="", help="TILEFARM_AB switches for our side")
    a = ap.parse_args()
    os.environ["TILEFARM_CACHE"] = "0"
    if a.ab:
        os.environ["TILEFARM_AB"] = a.ab
    import _bench_host_corpus as B
    from compiler.codegen.ptx import find_nvdisasm

    nvdisasm = find_nvdisasm()
    if nvdisasm is None:
        raise SystemExit("nvdisasm not found (pip install nvidia-cuda-nvdisasm, or TILEFARM_NVDISASM)")
    files = B.case_files()
    if a.select:
        files = {n: p for n, p in files.items() if any(fnmatch.fnmatch(n, g) or g == n for g in a.select)}
    rows, loaded = [], {}
    for name, path in sorted(files.items()):
        for which in ("ours", "triton"):
            if (path, which) not in loaded:
                loaded[path, which] = B.cases_of(path, which)
        case = loaded[path, "ours"][name]
        args, kw = B.prepare(case)
        threads = 32 * kw.get("num_warps", 4)
        try:
            ours = side(*B.compile_ours(case, args, kw), threads, nvdisasm)
            tcase = loaded[path, "triton"][name]
            targs, tkw = B.prepare(tcase)
            tri = side(*B.compile_triton(tcase, targs, tkw), threads, nvdisasm)
        except (Exception, SystemExit) as e:  # noqa: BLE001 -- one kernel's failure is a row, not the end
            rows.append({"name": name, "error": f"{type(e).__name__}: {e}"[:300]})
            print(f"{name}: {rows[-1]['error']}", flush=True)
            continue
        row = {"name": name, "ours": ours, "triton": tri, "flags": flags(ours, tri)}
        rows.append(row)
        print(f"{name:36s} {ours['instructions']:5d}/{tri['instructions']:<5d} {'; '.join(row['flags'])}", flush=True)
    os.makedirs(a.out, exist_ok=True)
    doc = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), "ab": a.ab,
           "rows": rows}
    with open(os.path.join(a.out, "static_corpus.json"), "w") as f:
        json.dump(doc, f, indent=1)
    with open(os.path.join(a.out, "static_corpus.md"), "w") as f:
        f.write(markdown(doc))
    print(f"wrote {a.out}/static_corpus.md")


def markdown(doc) -> str:
    out = [f"# Corpus machine code beside Triton's, no GPU ({doc['date']}{', ' + doc['ab'] if doc['ab'] else ''})",
           "", "`scripts/static_corpus.py`: both compilers for sm_90a at each kernel's GPU specialization, the same "
           "ptxas; loops in source order (instructions / barriers / shared accesses, ours then Triton's).", "",
           "| kernel | registers | spills | shared bytes | blocks/SM | SASS | loops ours | loops Triton | flags |",
           "|---|---:|---:|---:|---:|---:|---|---|---|"]
    ok = [r for r in doc["rows"] if "error" not in r]
    ok.sort(key=lambda r: (-len(r["flags"]), r["name"]))

    def lp(s):
        return ", ".join(f"{x['instructions']}/{x['barriers']}/{x['shared']}" for x in s["loops"]) or "-"
    for r in ok:
        o, t = r["ours"], r["triton"]
        out.append(f"| {r['name']} | {o['registers']}/{t['registers']} | {o['spills']}/{t['spills']} | "
                   f"{o['shared']}/{t['shared']} | {o['blocks']}/{t['blocks']} | {o['instructions']}/"
                   f"{t['instructions']} | {lp(o)} | {lp(t)} | {'; '.join(r['flags'])} |")
    for r in doc["rows"]:
        if "error" in r:
            out.append(f"| {r['name']} | | | | | | | | error: {r['error']} |")
    flagged = sum(1 for r in ok if r["flags"])
    out += ["", f"{len(ok)} kernels, {flagged} flagged."]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    main()
