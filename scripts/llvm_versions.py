#!/usr/bin/env python3
"""The corpus compiled through two llvmlite builds (two LLVM versions), side by side, without a GPU: per kernel
the LLVM stage's CPU time (llvm_to_ptx: parse, the module pipeline, the NVPTX back end), and what ptxas makes of
the PTX (registers, spill bytes, SASS instructions, and whether the SASS is the same).

    python3 scripts/llvm_versions.py --a DIR_A --b DIR_B [--out DIR] [NAME_OR_GLOB ...]

DIR_A / DIR_B: folders holding an llvmlite package (e.g. `pip install --no-deps --target /tmp/ll47
llvmlite==0.47.0`), or `installed` for the one this Python imports. Each side runs in its own process with its
folder first on sys.path (an empty kernel lowered first, untimed, so that the target machine is warm; each
kernel then compiled once, timed). The code generator spells a few NVPTX attributes
and intrinsics as LLVM 21+ does (the comparison with llvmlite 0.47 / LLVM 20.1.8 in benchmarks/llvm-versions-2026-12-07
ran on a tree that spelled them for both: commit 25a296e). Writes OUT/llvm_versions.json and OUT/llvm_versions.md.
"""
from __future__ import annotations

import argparse
import datetime
import fnmatch
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def child(select: list[str]) -> dict:
    """One side: compile the selected corpus kernels, return {name: figures} (runs in the child process)."""
    sys.path[:0] = [ROOT, os.path.join(ROOT, "scripts")]
    os.environ["TILEFARM_CACHE"] = "0"
    import llvmlite
    import llvmlite.binding as llvm

    import _bench_host_corpus as B
    from compiler.codegen import ptx as P

    nvdisasm = P.find_nvdisasm()
    spent = [0.0]
    orig = P.llvm_to_ptx

    def timed(*a, **k):
        t = time.process_time()
        try:
            return orig(*a, **k)
        finally:
            spent[0] += time.process_time() - t
    for mod in list(sys.modules.values()):  # every module that imported the function by name
        if mod is not None and getattr(mod, "llvm_to_ptx", None) is orig:
            mod.llvm_to_ptx = timed
    files = B.case_files()
    names = sorted(n for n in files if not select or any(fnmatch.fnmatch(n, g) for g in select))
    out, loaded = {}, {}

    def case_of(n):
        if files[n] not in loaded:
            loaded[files[n]] = B.cases_of(files[n], "ours")
        case = loaded[files[n]][n]
        return case, *B.prepare(case)
    # warm-up, untimed: the target machine, on an empty kernel (libdevice's subset is made by the first kernel
    # that calls it, on both sides alike)
    orig('define ptx_kernel void @warm() {\n  ret void\n}\n', "sm_90a")
    for n in names:
        case, args, kw = case_of(n)
        try:
            spent[0] = 0.0
            cubin, ptx, _ = B.compile_ours(case, args, kw)
        except Exception as e:  # noqa: BLE001 -- one kernel's failure is a row
            out[n] = {"error": f"{type(e).__name__}: {e}"[:200]}
            continue
        res = P.ptx_resources(ptx if isinstance(ptx, str) else ptx.decode(), "sm_90a")
        with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as f:
            f.write(cubin)
        sass = subprocess.run([nvdisasm, "-c", f.name], capture_output=True, text=True).stdout
        os.unlink(f.name)
        sass = re.sub(r"/\*[0-9a-f]{4,}\*/", "", sass)
        out[n] = {"llvm_ms": round(1000 * spent[0], 2), "registers": res.get("registers"),
                  "spill_bytes": res.get("spill_stores", 0) + res.get("spill_loads", 0),
                  "sass": sum(1 for ln in sass.splitlines() if ln.strip().endswith(";")),
                  "sass_sha1": hashlib.sha1(sass.encode()).hexdigest()}
    return {"llvmlite": llvmlite.__version__, "llvm": ".".join(map(str, llvm.llvm_version_info)), "kernels": out}


def side(where: str, select: list[str]) -> dict:
    env = dict(os.environ)
    if where != "installed":
        env["PYTHONPATH"] = os.pathsep.join([where, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    code = (f"import json, sys; sys.path.insert(0, {os.path.join(ROOT, 'scripts')!r}); import llvm_versions as L; "
            f"print('@@' + json.dumps(L.child({select!r})))")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=ROOT)
    line = next((ln for ln in r.stdout.splitlines() if ln.startswith("@@")), None)
    if line is None:
        raise SystemExit(f"the side {where} failed:\n{r.stderr[-3000:]}")
    return json.loads(line[2:])


def markdown(doc: dict) -> str:
    a, b = doc["a"], doc["b"]
    rows = []
    ta = tb = 0.0
    same = both = 0
    for n in sorted(set(a["kernels"]) | set(b["kernels"])):
        x, y = a["kernels"].get(n, {}), b["kernels"].get(n, {})
        if "llvm_ms" not in x or "llvm_ms" not in y:
            rows.append(f"| {n} | {x.get('error', '-')} | {y.get('error', '-')} | | | | |")
            continue
        both += 1
        ta, tb = ta + x["llvm_ms"], tb + y["llvm_ms"]
        eq = x["sass_sha1"] == y["sass_sha1"]
        same += eq
        rows.append(f"| {n} | {x['llvm_ms']:.1f} / {y['llvm_ms']:.1f} | {y['llvm_ms'] / max(x['llvm_ms'], 1e-9):.2f} | "
                    f"{x['registers']} / {y['registers']} | {x['spill_bytes']} / {y['spill_bytes']} | "
                    f"{x['sass']} / {y['sass']} | {'same' if eq else 'differs'} |")
    head = [f"# The corpus through two LLVMs ({doc['date']})", "",
            f"A: llvmlite {a['llvmlite']} (LLVM {a['llvm']}); B: llvmlite {b['llvmlite']} (LLVM {b['llvm']}). "
            f"LLVM stage CPU time over the {both} kernels: {ta:.0f} ms / {tb:.0f} ms (B/A {tb / max(ta, 1e-9):.3f}); "
            f"the same SASS on {same} of {both}.", "",
            "| kernel | LLVM ms A / B | B/A | registers | spill bytes | SASS instructions | SASS |",
            "|---|---:|---:|---|---|---|---|"]
    return "\n".join(head + rows) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("select", nargs="*")
    ap.add_argument("--a", required=True)
    ap.add_argument("--b", required=True)
    ap.add_argument("--out", default=os.path.join(ROOT, "benchmarks", f"llvm-versions-{datetime.date.today()}"))
    args = ap.parse_args()
    doc = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "a": side(args.a, args.select), "b": side(args.b, args.select)}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "llvm_versions.json"), "w") as f:
        json.dump(doc, f, indent=1)
    md = markdown(doc)
    with open(os.path.join(args.out, "llvm_versions.md"), "w") as f:
        f.write(md)
    print(md.split("\n\n")[1])
    print(f"wrote {args.out}/llvm_versions.md")


if __name__ == "__main__":
    main()
