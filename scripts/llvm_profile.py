#!/usr/bin/env python3
"""Where the LLVM stage of a corpus kernel's compile goes (issue 24, host-side speed), CPU only.

    python3 scripts/llvm_profile.py [--reps 3] [--triton] [--out DIR] NAME_OR_GLOB ...

Each kernel of workloads/corpus is compiled at its GPU specialization for sm_90a (scripts/_bench_host_corpus.py
compiles it the same way for the host benchmark), caches off, and its LLVM IR is run again through the steps of
codegen/ptx.py llvm_to_ptx, each timed on its own (CPU time of this process, the median of --reps):
  - parse: the IR text parsed, libdevice linked (its subsets are made once, before any timing), verified;
  - opt: the module pipeline (ptx.py _LEVELS: O1);
  - codegen: the NVPTX back end to PTX (TargetMachine.emit_assembly);
the instructions of the module as emitted and after the pipeline; and, by LLVM's own pass timers (one run, in a child
process: in a process that has run other modules the timers carry their times into the next report), the opt
pipeline's three costliest passes (InstCombine, EarlyCSE, ...) and the back end's straight-line strength reduction
(SLSR), instruction selection (ISel) and load/store vectorizer (LSV).
With --triton, the same kernel compiled by Triton 3.6 (its CPU wheel; in a child process, as bench_host runs it): its
LLVM IR (already optimized by Triton's own pipeline) through the same steps of our LLVM (a target machine with
Triton's 32-bit shared pointers), its instruction count, and ptxas's CPU time (user + sys of the child, median of
--reps, same flags: -lineinfo) on each compiler's PTX. That separates what our IR costs our LLVM from what LLVM
costs anyone.
Writes OUT/llvm_profile.json and OUT/llvm_profile.md (OUT: benchmarks/llvm-profile-<date>).
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for p in (ROOT, os.path.join(ROOT, "scripts")):
    if p not in sys.path:
        sys.path.insert(0, p)

_TIMER = re.compile(r"^\s*([\d.]+) \(\s*[\d.]+%\)(?:\s+[\d.]+ \(\s*[\d.]+%\))*\s+(\S.*?)\s*$")


def _timers(report: str) -> dict:
    """{pass name: user seconds} of an LLVM timing report (its first table; '#N' instance suffixes merged). The
    columns are user, [system,] user + system, wall time (LLVM leaves out a column that is all zero). The module
    pipeline's report (llvmlite's PassBuilder timing) lists every pass twice, with times that may differ in the
    last digit: where every name comes an even number of times, the sums are halved."""
    out: dict = {}
    seen: dict = {}
    for part in report.split("Pass execution timing report")[1:2]:
        for line in part.splitlines():
            m = _TIMER.match(line)
            if m and not m.group(2).startswith("Total"):
                seen[m.group(2)] = seen.get(m.group(2), 0) + 1
                name = re.sub(r" #\d+$", "", m.group(2))
                out[name] = out.get(name, 0.0) + float(m.group(1))
    if seen and all(n % 2 == 0 for n in seen.values()):
        out = {k: v / 2 for k, v in out.items()}
    return out


def _count(mod) -> int:
    return sum(1 for f in mod.functions for b in f.blocks for _ in b.instructions)


def llvm_steps(llir: str, arch: str, reps: int, short_ptr: bool = False, link: bool = True) -> dict:
    """Parse / opt / codegen CPU seconds (medians of `reps`) and instruction counts of one module; the passes'
    timers from a child process (pass_timers)."""
    import llvmlite.binding as llvm

    import compiler.codegen.ptx as X

    X._init()
    level, cg_level = X._LEVELS
    tm = X._target_machine(arch, cg_level, short_ptr)
    names = set(X._NV_NAME.findall(llir)) if link else set()
    if names:
        X._libdevice_subset(frozenset(names))  # made before timing: a process makes each subset once
    clock = time.process_time
    runs = []
    n_in = n_out = 0
    for r in range(reps):
        t0 = clock()
        mod = llvm.parse_assembly(llir)
        if not short_ptr:
            mod.triple = "nvptx64-nvidia-cuda"
            mod.data_layout = str(tm.target_data)
        if names:
            X._link_libdevice(mod, tm, names)
        mod.verify()
        t1 = clock()
        if r == 0:
            n_in = _count(mod)  # counted between the timed steps
        t1b = clock()
        X._optimize(mod, tm, level)
        t2 = clock()
        if r == 0:
            n_out = _count(mod)
        t2b = clock()
        tm.emit_assembly(mod)
        t3 = clock()
        runs.append((t1 - t0, t2 - t1b, t3 - t2b))
    med = [statistics.median(x[i] for x in runs) for i in range(3)]
    return {"parse_s": med[0], "opt_s": med[1], "codegen_s": med[2], "instrs_in": n_in, "instrs_out": n_out,
            **pass_timers(llir, arch, short_ptr, link)}


def pass_timers(llir: str, arch: str, short_ptr: bool, link: bool) -> dict:
    """The module pipeline's three costliest passes and the back end's SLSR / ISel / LSV, by LLVM's own timers
    (user seconds, one run), read in a child process: in a process that has run other modules, LLVM's timer
    groups carry their times into the next report."""
    with tempfile.NamedTemporaryFile("w", suffix=".ll", delete=False) as f:
        f.write(llir)
    try:
        p = subprocess.run([sys.executable, os.path.abspath(__file__), "--timers-child", f.name, arch,
                            str(int(short_ptr)), str(int(link))], check=True, capture_output=True, text=True)
    finally:
        os.unlink(f.name)
    return json.loads(p.stdout.strip().splitlines()[-1])


def timers_child(path: str, arch: str, short_ptr: bool, link: bool) -> None:
    import llvmlite.binding as llvm
    from llvmlite.binding import newpassmanagers as NP

    import compiler.codegen.ptx as X

    X._init()
    level, cg_level = X._LEVELS
    tm = X._target_machine(arch, cg_level, short_ptr)
    llir = open(path).read()
    mod = llvm.parse_assembly(llir)
    if not short_ptr:
        mod.triple = "nvptx64-nvidia-cuda"
        mod.data_layout = str(tm.target_data)
    names = set(X._NV_NAME.findall(llir)) if link else set()
    if names:
        X._link_libdevice(mod, tm, names)
    pb = llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options(speed_level=level))
    pb.start_pass_timing()
    pb.getModulePassManager().run(mod, pb)
    opt_t = _timers(pb.finish_pass_timing())
    NP.set_time_passes(True)
    tm.emit_assembly(mod)
    cg_t = _timers(NP.report_and_reset_timings())
    top = sorted(opt_t.items(), key=lambda kv: -kv[1])[:3]
    print(json.dumps({"opt_top": [[k, v] for k, v in top],
                      "codegen_timers": {"slsr_s": cg_t.get("Straight line strength reduction", 0.0),
                                         "isel_s": cg_t.get("NVPTX DAG->DAG Pattern Instruction Selection", 0.0),
                                         "lsv_s": cg_t.get("GPU Load and Store Vectorizer", 0.0),
                                         "total_s": sum(cg_t.values())}}))


def ptxas_cpu(ptx_path: str, reps: int) -> float:
    """Median user + sys CPU seconds of `ptxas -arch=<the PTX's target> [-lineinfo] PTX` (the default ptxas)."""
    from compiler.codegen.ptx import find_ptxas

    text = open(ptx_path).read()
    arch = re.search(r"^\s*\.target\s+(sm_\w+)", text, re.M).group(1)
    flags = ["-lineinfo"] if "\t.loc\t" in text else []
    out = []
    with tempfile.TemporaryDirectory(prefix="llvmprof-") as d:
        for _ in range(reps):
            r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            subprocess.run([find_ptxas(), f"-arch={arch}", *flags, ptx_path, "-o", os.path.join(d, "k.cubin")],
                           check=True, capture_output=True)
            r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            out.append(r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime)
    return statistics.median(out)


def compile_ours(names: list, files: dict, out_dir: str) -> dict:
    """{name: {"arch"}}: each kernel's LLVM IR and PTX written to out_dir/<name>.ours.{ll,ptx}."""
    os.environ["TILEFARM_CACHE"] = "0"
    import _bench_host_corpus as BC

    import compiler.compile as C

    loaded, got = {}, {}
    for n in names:
        path = files[n]
        if path not in loaded:
            loaded[path] = BC.cases_of(path, "ours")
        case = loaded[path][n]
        args, kw = BC.prepare(case)
        C._mem_cache.clear()
        k = case.kernel.warmup(*args, grid=(1,), target=BC.TARGET_OURS, **kw)
        ptx = k.asm["ptx"]
        with open(os.path.join(out_dir, f"{n}.ours.ll"), "w") as f:
            f.write(k.asm["llir"])
        with open(os.path.join(out_dir, f"{n}.ours.ptx"), "w") as f:
            f.write(ptx)
        got[n] = {"arch": re.search(r"^\s*\.target\s+(sm_\w+)", ptx, re.M).group(1)}
    return got


def triton_child(out_dir: str, items: list) -> None:
    """In a child process: compile each "path::name" with Triton, writing out_dir/<name>.triton.{ll,ptx}."""
    import _bench_host_corpus as BC
    import triton

    made = {}
    real = triton.compile

    def keep(*a, **k):
        made["k"] = real(*a, **k)
        return made["k"]

    triton.compile = keep
    for it in items:
        path, name = it.split("::", 1)
        case = BC.cases_of(path, "triton")[name]
        args, kw = BC.prepare(case)
        BC.compile_triton(case, args, kw)
        for ext, key in (("ll", "llir"), ("ptx", "ptx")):
            with open(os.path.join(out_dir, f"{name}.triton.{ext}"), "w") as f:
                f.write(made["k"].asm[key])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", help="corpus kernel names or globs (default: all)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--triton", action="store_true", help="also Triton's IR through our LLVM, and ptxas on both PTX")
    ap.add_argument("--out", default=os.path.join(ROOT, "benchmarks", f"llvm-profile-{datetime.date.today()}"))
    ap.add_argument("--triton-child", nargs="+", help=argparse.SUPPRESS)
    ap.add_argument("--timers-child", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.timers_child:
        path, arch, short_ptr, link = args.timers_child
        timers_child(path, arch, short_ptr == "1", link == "1")
        return
    if args.triton_child:
        triton_child(args.triton_child[0], args.triton_child[1:])
        return
    import _bench_host_corpus as BC

    files = BC.case_files([x for a in args.names for x in a.split(",") if x] or None)
    names = sorted(files)
    if not names:
        sys.exit(f"llvm_profile: no corpus kernel matches {' '.join(args.names)}")
    os.makedirs(args.out, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="llvmprof-")
    ours = compile_ours(names, files, tmp)
    if args.triton:
        with tempfile.TemporaryDirectory(prefix="llvmprof-triton-cache-") as cache:
            env = dict(os.environ, TRITON_CACHE_DIR=cache, TRITON_HOME=cache,
                       PYTHONPATH=os.pathsep.join([ROOT, os.path.join(ROOT, "scripts")]
                                                  + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                                                     if p]))
            subprocess.run([sys.executable, os.path.abspath(__file__), "--triton-child", tmp,
                            *[f"{files[n]}::{n}" for n in names]], check=True, env=env)
    res = {}
    for n in names:
        llir = open(os.path.join(tmp, f"{n}.ours.ll")).read()
        r = {"ours": llvm_steps(llir, ours[n]["arch"], args.reps)}
        if args.triton:
            tl = open(os.path.join(tmp, f"{n}.triton.ll")).read()
            r["triton_ir"] = llvm_steps(tl, "sm_90a", args.reps, short_ptr=True, link=False)
            r["ptxas_cpu_s"] = {w: ptxas_cpu(os.path.join(tmp, f"{n}.{w}.ptx"), args.reps) for w in ("ours", "triton")}
        res[n] = r
        print(_row(n, r, args.triton), flush=True)
    doc = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), "reps": args.reps,
           "levels": list(__import__("compiler.codegen.ptx", fromlist=["_LEVELS"])._LEVELS), "kernels": res}
    with open(os.path.join(args.out, "llvm_profile.json"), "w") as f:
        json.dump(doc, f, indent=1)
    with open(os.path.join(args.out, "llvm_profile.md"), "w") as f:
        f.write(_markdown(res, args.triton))
    print(f"wrote {args.out}/llvm_profile.md")


def _ms(x) -> str:
    return f"{x * 1000:.0f}"


def _row(n: str, r: dict, triton: bool) -> str:
    o = r["ours"]
    t = o["codegen_timers"]
    cells = [n, f"{_ms(o['parse_s'])} / {_ms(o['opt_s'])} / {_ms(o['codegen_s'])}",
             f"{_ms(t['slsr_s'])} / {_ms(t['isel_s'])}", f"{o['instrs_in']} -> {o['instrs_out']}",
             ", ".join(f"{k} {_ms(v)}" for k, v in o["opt_top"][:2])]
    if triton:
        ti = r["triton_ir"]
        cells += [f"{_ms(ti['parse_s'])} / {_ms(ti['opt_s'])} / {_ms(ti['codegen_s'])}",
                  f"{_ms(ti['codegen_timers']['slsr_s'])}", str(ti["instrs_in"]),
                  f"{_ms(r['ptxas_cpu_s']['ours'])} / {_ms(r['ptxas_cpu_s']['triton'])}"]
    return "| " + " | ".join(cells) + " |"


def _markdown(res: dict, triton: bool) -> str:
    head = ["kernel", "ours: parse / opt / codegen ms", "SLSR / ISel ms", "instructions emitted -> optimized",
            "costliest opt passes ms"]
    if triton:
        head += ["Triton's IR, our LLVM: parse / opt / codegen ms", "its SLSR ms", "its instructions",
                 "ptxas CPU ms: ours / Triton's PTX"]
    lines = ["# The LLVM stage by step (scripts/llvm_profile.py)", "",
             "CPU time of this process, medians; pass timers from LLVM's own (one run). Without --triton the "
             "Triton columns are absent.", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += [_row(n, r, triton) for n, r in res.items()]
    tot = {k: sum(r["ours"][k] for r in res.values()) for k in ("parse_s", "opt_s", "codegen_s")}
    slsr = sum(r["ours"]["codegen_timers"]["slsr_s"] for r in res.values())
    lines += ["", f"Totals over {len(res)} kernels: parse {_ms(tot['parse_s'])} ms, opt {_ms(tot['opt_s'])} ms, "
              f"codegen {_ms(tot['codegen_s'])} ms (of which SLSR {_ms(slsr)} ms by its timer)."]
    if triton:
        tt = {k: sum(r["triton_ir"][k] for r in res.values()) for k in ("parse_s", "opt_s", "codegen_s")}
        pa = {w: sum(r["ptxas_cpu_s"][w] for r in res.values()) for w in ("ours", "triton")}
        lines += [f"Triton's IR through our LLVM: parse {_ms(tt['parse_s'])} ms, opt {_ms(tt['opt_s'])} ms, codegen "
                  f"{_ms(tt['codegen_s'])} ms; ptxas CPU on our PTX {_ms(pa['ours'])} ms, on Triton's "
                  f"{_ms(pa['triton'])} ms."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
