#!/usr/bin/env python3
"""Does a change of the LLVM pipeline or of the assembler change the machine code? The corpus kernels, compared by
their SASS, with the time each side took (no GPU needed).

    python3 scripts/sass_compare.py --ab SWITCH[,SWITCH] [--reps 3] [--out DIR] [NAME_OR_GLOB ...]
        PTX of the default LLVM pipeline against the one with these A/B switches (compiler/codegen/ptx.py
        AB_SWITCHES: copy_src64), both assembled with the same ptxas
    python3 scripts/sass_compare.py --ptxas-b PATH [--reps 3] [--out DIR] [NAME_OR_GLOB ...]
        the default PTX assembled by the default ptxas (find_ptxas: TILEFARM_PTXAS, nvidia-cuda-nvcc) against
        the ptxas at PATH (another CUDA release)

Every kernel of workloads/corpus is compiled at its GPU specialization for sm_90a (scripts/_bench_host_corpus.py
does the same for the host benchmark), caches off. Where the two PTX texts are byte-identical the machine code is
too. Where they differ (or with --ptxas-b, always), both sides are assembled (`ptxas -v`, -O3) and disassembled
(`nvdisasm -c`; from nvidia-cuda-nvdisasm, the `sass` extra, TILEFARM_NVDISASM, or PATH), the instruction
text is compared with the address comments removed, and the registers, spills, instruction count and the
opcodes whose counts changed are listed: a kernel with different SASS needs a GPU A/B before the change becomes
the default.
Times: the fastest of --reps (CPU time of this process for LLVM; CPU time of the ptxas child, user + sys, and
its wall time for the assemblers). Writes OUT/sass_compare.json and OUT/sass_compare.md.
"""
from __future__ import annotations

import argparse
import collections
import fnmatch
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for p in (ROOT, os.path.join(ROOT, "scripts")):
    if p not in sys.path:
        sys.path.insert(0, p)


def find_nvdisasm() -> str | None:
    env = os.environ.get("TILEFARM_NVDISASM")
    if env and os.path.isfile(env):
        return env
    from compiler.codegen.ptx import _pkg_dirs

    for d in _pkg_dirs():
        c = os.path.join(d, "bin", "nvdisasm")
        if os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return shutil.which("nvdisasm")


def assemble(ptxas: str, ptx: str, arch: str, reps: int) -> dict:
    """cubin, `ptxas -v` resources and the fastest CPU (user + sys of the child) and wall time of `reps` runs."""
    from compiler.codegen.ptx import _RES

    with tempfile.TemporaryDirectory(prefix="sass-") as d:
        src, out = os.path.join(d, "k.ptx"), os.path.join(d, "k.cubin")
        with open(src, "w") as f:
            f.write(ptx)
        cpu, wall = [], []
        for _ in range(reps):
            r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            t = time.perf_counter()
            p = subprocess.run([ptxas, f"-arch={arch}", "-v", src, "-o", out], capture_output=True, text=True)
            wall.append(time.perf_counter() - t)
            r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu.append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
            if p.returncode != 0:
                raise SystemExit(f"{ptxas} failed:\n{p.stderr}")
        with open(out, "rb") as f:
            cubin = f.read()
    log = p.stderr + p.stdout
    res = {}
    for k, rx in _RES.items():
        m = rx.search(log)
        res[k] = int(m.group(1)) if m else 0
    return {"cubin": cubin, "res": res, "cpu_s": min(cpu), "wall_s": min(wall)}


def sass(nvdisasm: str, cubin: bytes) -> list[str]:
    """The instructions of a cubin as text lines, address comments removed (labels kept: they name targets)."""
    from compiler.codegen.sass import NvdisasmError, sass as _sass

    try:
        return _sass(cubin, nvdisasm)
    except NvdisasmError as e:
        raise SystemExit(str(e))


def opcodes(lines) -> collections.Counter:
    c = collections.Counter()
    for ln in lines:
        if ln.endswith(";") and not ln.startswith("."):
            body = re.sub(r"^@!?U?P\w+\s+", "", ln)
            c[body.split()[0].rstrip(";")] += 1
    return c


def corpus_ptx(select) -> dict:
    """{case: (LLVM IR, arch, maxnreg, default PTX)} for every corpus case at its GPU specialization."""
    os.environ["TILEFARM_CACHE"] = "0"
    os.environ.pop("TILEFARM_AB", None)
    import _bench_host_corpus as B

    files = B.case_files()
    if select:
        files = {n: p for n, p in files.items() if any(fnmatch.fnmatch(n, g) or g == n for g in select)}
    loaded, out = {}, {}
    for name, path in files.items():
        if path not in loaded:
            loaded[path] = B.cases_of(path, "ours")
        case = loaded[path][name]
        args, kw = B.prepare(case)
        k = case.kernel.warmup(*args, grid=(1,), target=B.TARGET_OURS, **kw)
        out[name] = (k.asm["llir"], k.metadata.get("target") or B.TARGET_OURS, k.metadata.get("maxnreg"),
                     k.asm["ptx"])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--ab", help="default vs these A/B switches of llvm_to_ptx (comma-separated), one ptxas")
    g.add_argument("--ptxas-b", help="default ptxas vs this one, on the default PTX")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", default=None)
    ap.add_argument("select", nargs="*")
    args = ap.parse_args()

    from compiler.codegen import _with_maxnreg
    from compiler.codegen.ptx import find_ptxas, llvm_to_ptx, ptx_arch

    ptxas_a = find_ptxas()
    ptxas_b = args.ptxas_b or ptxas_a
    nvdisasm = find_nvdisasm()
    if not ptxas_a or not nvdisasm:
        raise SystemExit("needs ptxas (nvidia-cuda-nvcc) and nvdisasm (nvidia-cuda-nvdisasm or TILEFARM_NVDISASM)")
    ab = frozenset(x.strip() for x in args.ab.split(",")) - {""} if args.ab else None
    labels = ("default", "+".join(sorted(ab))) if ab else ("ptxas " + _release(ptxas_a), "ptxas " + _release(ptxas_b))
    cases = corpus_ptx(args.select)
    rows = {}
    for name, (llir, arch, maxnreg, ptx_default) in cases.items():
        row = {}
        if ab:
            texts, times = [], []
            for switches in (frozenset(), ab):
                best = None
                for _ in range(args.reps):
                    t = time.process_time()
                    ptx = llvm_to_ptx(llir, arch, ab=switches)
                    dt = time.process_time() - t
                    best = dt if best is None else min(best, dt)
                texts.append(_with_maxnreg(ptx, maxnreg) if maxnreg else ptx)
                times.append(best)
            if texts[0] != ptx_default:
                raise SystemExit(f"{name}: llvm_to_ptx without switches is not the compile's PTX")
            row["llvm_s"] = times
            row["same_ptx"] = texts[0] == texts[1]
            tools = (ptxas_a, ptxas_a)
        else:
            texts = [ptx_default, ptx_default]
            row["same_ptx"] = True
            tools = (ptxas_a, ptxas_b)
        if row["same_ptx"] and tools[0] == tools[1]:
            row["same_sass"] = True
        else:
            sides = [assemble(tool, t, ptx_arch(t, arch), args.reps) for tool, t in zip(tools, texts)]
            code = [sass(nvdisasm, s["cubin"]) for s in sides]
            row["same_sass"] = code[0] == code[1]
            row["ptxas_cpu_s"] = [s["cpu_s"] for s in sides]
            row["ptxas_wall_s"] = [s["wall_s"] for s in sides]
            row["resources"] = [s["res"] for s in sides]
            ops = [opcodes(c) for c in code]
            row["instructions"] = [sum(o.values()) for o in ops]
            row["opcode_changes"] = {op: [ops[0][op], ops[1][op]] for op in sorted(set(ops[0]) | set(ops[1]))
                                     if ops[0][op] != ops[1][op]}
        rows[name] = row
        print(name, _line(row), flush=True)
    doc = {"mode": "ab" if ab else "ptxas", "labels": labels, "ptxas": [ptxas_a, ptxas_b],
           "nvdisasm": nvdisasm, "reps": args.reps, "kernels": rows}
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "sass_compare.json"), "w") as f:
            json.dump(doc, f, indent=1)
        with open(os.path.join(args.out, "sass_compare.md"), "w") as f:
            f.write(markdown(doc))
    print(markdown(doc))


def _release(path) -> str:
    out = subprocess.run([path, "--version"], capture_output=True, text=True).stdout
    m = re.search(r"release (\d+\.\d+)", out)
    return m.group(1) if m else os.path.basename(path)


def _line(row) -> str:
    bits = ["PTX same" if row["same_ptx"] else "PTX differs", "SASS same" if row["same_sass"] else "SASS DIFFERS"]
    if "llvm_s" in row:
        bits.append("llvm {:.0f} -> {:.0f} ms".format(*(x * 1000 for x in row["llvm_s"])))
    if "ptxas_cpu_s" in row:
        bits.append("ptxas cpu {:.0f} / {:.0f} ms".format(*(x * 1000 for x in row["ptxas_cpu_s"])))
    return ", ".join(bits)


def markdown(doc) -> str:
    a, b = doc["labels"]
    ks = doc["kernels"]
    n_same = sum(r["same_sass"] for r in ks.values())
    lines = [f"# SASS: {a} vs {b} ({len(ks)} corpus kernels, sm_90a)", "",
             f"Identical SASS: {n_same} of {len(ks)}; identical PTX: {sum(r['same_ptx'] for r in ks.values())}. "
             f"Times are the fastest of {doc['reps']}.", ""]
    if doc["mode"] == "ab":
        tot = [sum(r["llvm_s"][i] for r in ks.values()) for i in (0, 1)]
        lines += [f"LLVM (parse, O-pipeline, NVPTX codegen), CPU time summed over the kernels: {tot[0]*1000:.0f} ms "
                  f"-> {tot[1]*1000:.0f} ms ({tot[1]/tot[0]:.2f}x).", ""]
    else:
        for key, what in (("ptxas_cpu_s", "CPU (user + sys)"), ("ptxas_wall_s", "wall")):
            tot = [sum(r[key][i] for r in ks.values()) for i in (0, 1)]
            lines.append(f"ptxas {what} summed over the kernels: {a} {tot[0]*1000:.0f} ms, {b} {tot[1]*1000:.0f} ms "
                         f"({tot[1]/tot[0]:.2f}x).")
        lines.append("")
    diff = [n for n, r in ks.items() if not r["same_sass"]]
    if diff:
        lines += ["Kernels whose SASS differs (left / right):", "",
                  "| kernel | instructions | registers | spill stores | spill loads | opcodes whose count changed |",
                  "|---|---:|---:|---:|---:|---|"]
        for n in diff:
            r = ks[n]
            ra, rb = r["resources"]
            ch = ", ".join(f"{op} {x}->{y}" for op, (x, y) in list(r["opcode_changes"].items())[:8])
            lines.append(f"| {n} | {r['instructions'][0]} / {r['instructions'][1]} | {ra['registers']} / "
                         f"{rb['registers']} | {ra['spill_stores']} / {rb['spill_stores']} | {ra['spill_loads']} / "
                         f"{rb['spill_loads']} | {ch or 'same counts, other order or registers'} |")
    lines += ["", "| kernel | PTX | SASS | " + ("LLVM ms" if doc["mode"] == "ab" else "ptxas CPU ms | ptxas wall ms")
              + " |", "|---|---|---|---:|" + ("" if doc["mode"] == "ab" else "---:|")]
    for n, r in ks.items():
        t = ("{:.0f} -> {:.0f}".format(*(x * 1000 for x in r["llvm_s"])) if doc["mode"] == "ab" else
             "{:.0f} / {:.0f} | {:.0f} / {:.0f}".format(*(x * 1000 for x in r["ptxas_cpu_s"] + r["ptxas_wall_s"])))
        lines.append(f"| {n} | {'same' if r['same_ptx'] else 'differs'} | {'same' if r['same_sass'] else 'DIFFERS'} "
                     f"| {t} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
