#!/usr/bin/env python3
"""Host-side cost against Triton 3.6, CPU only: import, fresh-process compile, warm compile, `farm --help`.

    python3 scripts/bench_host.py [--reps 9] [--out benchmarks/host-2026-12-01] [--only SUBSTR]
    python3 scripts/bench_host.py --corpus [NAME_OR_GLOB ...] [--reps 3] [--out DIR]   # the corpus kernels

(Run it with a Python that has Triton installed; the child processes get this tree first on PYTHONPATH. With
--corpus, every kernel of workloads/corpus under both compilers: see scripts/_bench_host_corpus.py.)

Six kernels, each written once (the workloads' kernel.py files; for Triton the same text with its two imports
rewritten, loaded from a temporary file): vector add, row softmax, layernorm forward, fp16 matmul 128x128x64
w8 s3, the same matmul with the bias + ReLU epilogue, flash-attention forward D=64 128x64 w4 s3. Both compilers
compile ahead of time for sm_90 (ours: `compiler.compile.compile_kernel` with the same specialization as a
launch would make; Triton: `triton.compile(ASTSource(...), target=GPUTarget("cuda", 90, 32))`), to a cubin,
which is checked non-empty. Every measurement runs in a fresh subprocess with empty caches (a new
TILEFARM_CACHE_DIR / TRITON_CACHE_DIR each time), and the rounds interleave the compilers (their order alternates
round by round), so the load of a shared machine falls on both alike. Per round:
  - import: `import compiler` / `import triton` (in-process time, interpreter start excluded);
  - fresh: import + load the kernel's module + compile to cubin (in-process), and the compile call alone;
  - warm: the compile call for the kernel after one other kernel was compiled in the same process.
Medians over the rounds, and the ratios ours / Triton of the medians. Registers, spills and static shared
memory come from `ptxas -v` on each compiler's PTX (the same ptxas for both: the one ours uses), dynamic shared
memory from each compiler's metadata. `farm --help`: the whole process, wall clock.
Both run from bytecode: site-packages (Triton) was byte-compiled by pip, and this script byte-compiles
compiler/, farm/ and workloads/ first (`compileall`, what a non-editable install does), since an environment
with PYTHONDONTWRITEBYTECODE=1 would otherwise make every fresh process of ours compile its sources again.
Writes OUT/host.json (every sample) and OUT/host.md. With --corpus, each wall time has a CPU time beside it (user +
system of the process and of the ptxas runs it waited for; for fresh_process, of the whole child from the parent),
and the ratios of both are reported: on a machine shared with other work, CPU time is inflated less than wall time.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# name -> (kernel file, jit function, [(param, type)], options). type: "*fp16" a 16-byte aligned pointer,
# "i32:16" an int divisible by 16, "i32" / "fp32" plain scalars, ("c", value) a compile-time constant.
KERNELS = {
    "vector_add": ("workloads/vector_add/kernel.py", "add_kernel",
                   [("X", "*fp32"), ("Y", "*fp32"), ("Z", "*fp32"), ("N", "i32:16"), ("BLOCK", ("c", 1024))],
                   {"num_warps": 4, "num_stages": 3}),
    "softmax": ("workloads/softmax/kernel.py", "softmax_kernel",
                [("output_ptr", "*fp32"), ("input_ptr", "*fp32"), ("input_row_stride", "i32:16"),
                 ("output_row_stride", "i32:16"), ("n_cols", "i32:16"), ("BLOCK_SIZE", ("c", 1024))],
                {"num_warps": 4, "num_stages": 3}),
    "layernorm": ("workloads/layernorm/kernel.py", "layer_norm_fwd_kernel",
                  [("X", "*fp16"), ("Y", "*fp16"), ("W", "*fp16"), ("B", "*fp16"), ("Mean", "*fp32"),
                   ("Rstd", "*fp32"), ("stride", "i32:16"), ("N", "i32:16"), ("eps", "fp32"),
                   ("BLOCK_SIZE", ("c", 1024))],
                  {"num_warps": 8, "num_stages": 3}),
}
_MM = [("a_ptr", "*fp16"), ("b_ptr", "*fp16"), ("c_ptr", "*fp16"), ("bias_ptr", "*fp32"), ("M", "i32:16"),
       ("N", "i32:16"), ("K", "i32:16"), ("stride_am", "i32:16"), ("stride_ak", ("c", 1)), ("stride_bk", "i32:16"),
       ("stride_bn", ("c", 1)), ("stride_cm", "i32:16"), ("stride_cn", ("c", 1)), ("BLOCK_M", ("c", 128)),
       ("BLOCK_N", ("c", 128)), ("BLOCK_K", ("c", 64)), ("GROUP_M", ("c", 8))]
KERNELS["matmul"] = ("workloads/matmul/kernel.py", "matmul_kernel",
                     _MM + [("EPILOGUE", ("c", "none")), ("PRECISION", ("c", "tf32"))],
                     {"num_warps": 8, "num_stages": 3})
KERNELS["matmul_bias_relu"] = ("workloads/matmul/kernel.py", "matmul_kernel",
                               _MM + [("EPILOGUE", ("c", "bias_relu")), ("PRECISION", ("c", "tf32"))],
                               {"num_warps": 8, "num_stages": 3})
KERNELS["attention"] = ("workloads/attention/kernel.py", "attention_fwd_kernel",
                        [("Q", "*fp16"), ("K", "*fp16"), ("V", "*fp16"), ("Out", "*fp16"), ("sm_scale", "fp32"),
                         ("L", "i32:16"), ("stride_h", "i32:16"), ("stride_l", "i32:16"), ("HEAD_DIM", ("c", 64)),
                         ("BLOCK_M", ("c", 128)), ("BLOCK_N", ("c", 64))],
                        {"num_warps": 4, "num_stages": 3})
WARM_AFTER = {"vector_add": "softmax"}  # the kernel compiled first in the warm measurement (default: vector_add)

OURS_IMPORTS = ("import compiler\n", "import compiler.language as tl\n")
TRITON_IMPORTS = ("import triton as compiler\n", "import triton.language as tl\n")


# ----------------------------------------------------------------------------------------------- child side
def _load(kernel: str, which: str, tmpdir: str):
    """The kernel's module from its file, for Triton with the two imports rewritten (same text otherwise)."""
    import importlib.util

    path, fn_name, _, _ = KERNELS[kernel]
    src = open(os.path.join(ROOT, path)).read()
    if which == "triton":
        for a, b in zip(OURS_IMPORTS, TRITON_IMPORTS):
            if a not in src:
                raise SystemExit(f"{path}: expected the line {a.strip()!r} to rewrite for Triton")
            src = src.replace(a, b, 1)
    mod_name = f"_hostbench_{which}_{os.path.basename(os.path.dirname(path))}"
    file = os.path.join(tmpdir, mod_name + ".py")
    with open(file, "w") as f:
        f.write(src)
    spec = importlib.util.spec_from_file_location(mod_name, file)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = mod
    spec.loader.exec_module(mod)
    return getattr(mod, fn_name)


def _compile_ours(fn, kernel: str):
    from compiler.compile import compile_kernel
    from compiler.ir import types as T

    _, _, sig, opts = KERNELS[kernel]
    params = []
    for _, ty in sig:
        if isinstance(ty, tuple):
            params.append(("const", ty[1]))
        elif ty.startswith("*"):
            params.append(("arg", T.TensorType(T.pointer_type(T.from_name(ty[1:]))), {"divisibility": 16}))
        else:
            base, _, div = ty.partition(":")
            params.append(("arg", T.TensorType(T.from_name(base)), {"divisibility": int(div)} if div else {}))
    k = compile_kernel(fn, params, num_warps=opts["num_warps"], num_stages=opts["num_stages"], arch="sm_90")
    cubin = k.asm["cubin"]
    return k, cubin, k.asm["ptx"], k.metadata.get("shared_bytes", 0)


def _compile_triton(fn, kernel: str):
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    _, _, sig, opts = KERNELS[kernel]
    signature, constexprs, attrs = {}, {}, {}
    for i, (name, ty) in enumerate(sig):
        if isinstance(ty, tuple):
            signature[name] = "constexpr"
            constexprs[name] = ty[1]
            continue
        base, _, div = ty.partition(":")
        signature[name] = base
        if base.startswith("*") or div:
            attrs[(i,)] = [["tt.divisibility", 16]]
    src = ASTSource(fn, signature=signature, constexprs=constexprs, attrs=attrs)
    k = triton.compile(src, target=GPUTarget("cuda", 90, 32), options=dict(opts))
    return k, k.asm["cubin"], k.asm["ptx"], k.metadata.shared


def stages(kernels, n: int) -> dict:
    """Our compile of each kernel split by stage, in this process (caches off, every module already imported,
    one other kernel compiled first), the fastest of n runs per stage: frontend, each pass, LLVM IR emission
    (of which llvmlite's IR-to-text), LLVM (parse, O3, NVPTX code generation), ptxas; and the tile IR's op
    count, to see what grows with the kernel."""
    return _staged(kernels, n, lambda k, tmp: (lambda fn: (lambda: _compile_ours(fn, k)[0]))(_load(k, "ours", tmp)),
                   lambda tmp: _compile_ours(_load("softmax", "ours", tmp), "softmax"))


def corpus_stages(items, n: int) -> dict:
    """stages() for corpus cases ("path::name"), compiled as the corpus benchmark compiles them."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import _bench_host_corpus as BC

    files = dict(reversed(it.split("::", 1)) for it in items)

    def thunk(name, tmp):
        case = BC.cases_of(files[name], "ours")[name]
        args, kw = BC.prepare(case)
        def run():
            k = case.kernel.warmup(*args, grid=(1,), target=BC.TARGET_OURS, **kw)
            assert k.asm["cubin"]
            return k
        return run

    def first(tmp):
        name = next(iter(files))
        thunk(name, tmp)()
    return _staged(list(files), n, thunk, first)


def _staged(kernels, n, make, first) -> dict:
    import collections

    os.environ["TILEFARM_CACHE"] = "0"
    import compiler.codegen.llvm as L
    import compiler.codegen.ptx as X
    import compiler.compile as C
    import compiler.passes as P
    import llvmlite.ir as llir

    acc = collections.defaultdict(float)

    def timed(label, f):
        def w(*a, **k):
            t = time.perf_counter()
            try:
                return f(*a, **k)
            finally:
                acc[label] += time.perf_counter() - t
        return w

    saved = (C.lower, L.emit_llvm, X.llvm_to_ptx, X.ptx_to_cubin, llir.Module.__repr__, list(P.PIPELINE))
    C.lower = timed("frontend", C.lower)
    L.emit_llvm = timed("emit_llvm", L.emit_llvm)
    X.llvm_to_ptx = timed("llvm", X.llvm_to_ptx)
    X.ptx_to_cubin = timed("ptxas", X.ptx_to_cubin)
    llir.Module.__repr__ = timed("emit_llvm:text", llir.Module.__repr__)
    P.PIPELINE[:] = [(name, timed("pass:" + name, f)) for name, f in P.PIPELINE]
    out = {}
    tmp = tempfile.mkdtemp(prefix="hostbench-src-")
    try:
        first(tmp)
        for k in kernels:
            run = make(k, tmp)
            best = {}
            for _ in range(n):
                acc.clear()
                C._mem_cache.clear()
                t = time.perf_counter()
                ck = run()
                acc["total"] = time.perf_counter() - t
                best = {key: min(best.get(key, 1e9), v) for key, v in acc.items()}
            best["tile_ops"] = sum(1 for line in ck.asm["tile"].splitlines() if "=" in line or "store" in line)
            out[k] = best
    finally:
        C.lower, L.emit_llvm, X.llvm_to_ptx, X.ptx_to_cubin, llir.Module.__repr__, P.PIPELINE[:] = saved
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def child(args) -> None:
    """One measurement in this (fresh) process; prints one JSON line."""
    t0 = time.perf_counter()
    if args.which == "ours":
        import compiler  # noqa: F401
    else:
        import triton  # noqa: F401
    t_import = time.perf_counter() - t0
    out = {"import_s": t_import}
    if args.mode == "import":
        print(json.dumps(out))
        return
    if args.mode == "stages":
        print(json.dumps(stages(args.kernel.split(","), 5)))
        return
    comp = _compile_ours if args.which == "ours" else _compile_triton
    tmp = tempfile.mkdtemp(prefix="hostbench-src-")
    if args.mode == "fresh":
        fn = _load(args.kernel, args.which, tmp)
        t1 = time.perf_counter()
        k, cubin, ptx, shared = comp(fn, args.kernel)
        t2 = time.perf_counter()
        out.update(compile_s=t2 - t1, fresh_s=t2 - t0)
    else:  # warm: one other kernel first, in this process
        other = WARM_AFTER.get(args.kernel, "vector_add")
        fo = _load(other, args.which, tmp)
        fn = _load(args.kernel, args.which, tmp)
        ko, cubin_o, _, _ = comp(fo, other)
        assert cubin_o, f"{args.which} {other}: empty cubin"
        t1 = time.perf_counter()
        k, cubin, ptx, shared = comp(fn, args.kernel)
        out.update(warm_s=time.perf_counter() - t1, warm_after=other)
    if not cubin or not ptx or ".entry" not in (ptx if isinstance(ptx, str) else ptx.decode()):
        raise SystemExit(f"{args.which} {args.kernel}: empty cubin or PTX")
    out.update(cubin_bytes=len(cubin), ptx_bytes=len(ptx), dyn_shared=int(shared))
    if args.ptx_out:
        with open(args.ptx_out, "w") as f:
            f.write(ptx if isinstance(ptx, str) else ptx.decode())
    shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(out))


# ---------------------------------------------------------------------------------------------- parent side
def _run_child(which, mode, kernel=None, ptx_out=None) -> dict:
    return _run_child_items(which, mode, [kernel] if kernel else [], ptx_out)


def _farm_help_s() -> float:
    farm = os.path.join(os.path.dirname(sys.executable), "farm")
    cmd = [farm, "--help"] if os.path.exists(farm) else [sys.executable, "-m", "farm", "--help"]
    return _process_s(cmd)


def _process_s(cmd):
    """Wall time of the whole process, or None when it fails (a machine without typer, say)."""
    t = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, cwd=ROOT)
    return time.perf_counter() - t if p.returncode == 0 else None


# Floors for `farm --help` on the same machine and moment: the interpreter alone, and typer with the rich help
# formatter it loads for any --help (what farm cannot avoid while its help is rendered by typer + rich).
FLOORS = {"python_start": "pass", "typer_rich_help": "import typer, typer.rich_utils"}


def _resources(ptx_path: str) -> dict:
    sys.path.insert(0, ROOT)
    from compiler.codegen.ptx import ptx_resources

    import re

    ptx = open(ptx_path).read()
    m = re.search(r"^\.target\s+(sm_\w+)", ptx, re.M)
    res = ptx_resources(ptx, m.group(1) if m else "sm_90")
    out = {k: v for k, v in res.items() if k != "log"}
    n = re.search(r"^\s*\.(?:reqntid|maxntid)\s+(\d+)", ptx, re.M)  # both compilers write the block's threads
    out["threads"] = int(n.group(1)) if n else None
    return out


def _blocks_per_sm(r: dict):
    """Resident blocks per SM on sm_90 from a kernel's registers, shared memory and threads (None: unknown)."""
    if not r.get("threads") or r.get("registers") is None:
        return None
    from compiler.resources import occupancy

    return occupancy(r["registers"], r.get("shared_total") or 0, r["threads"], "sm_90")


def _med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def _versions() -> dict:
    out = {"python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count()}
    for mod in ("triton", "llvmlite", "numpy", "ml_dtypes"):
        try:
            from importlib.metadata import version

            out[mod] = version(mod if mod != "ml_dtypes" else "ml_dtypes")
        except Exception:
            out[mod] = None
    try:
        ver = subprocess.run([_ptxas(), "--version"], capture_output=True, text=True).stdout
        out["ptxas"] = ver.strip().splitlines()[-1]
    except Exception:
        out["ptxas"] = None
    return out


def _ptxas():
    sys.path.insert(0, ROOT)
    from compiler.codegen.ptx import find_ptxas

    return find_ptxas()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--child", nargs="+", metavar=("WHICH", "MODE"), help=argparse.SUPPRESS)
    ap.add_argument("--ptx-out", help=argparse.SUPPRESS)
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--only", default="", help="only kernels whose name contains this")
    ap.add_argument("--corpus", nargs="*", metavar="GLOB",
                    help="the corpus kernels (workloads/corpus; optionally only these names/globs) instead of the six "
                         "kernels: writes OUT/corpus.json and OUT/corpus.md")
    ap.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "host-" + datetime.date.today().isoformat()))
    args = ap.parse_args()
    if args.child:
        which, mode, *rest = args.child
        if mode in ("cfresh", "cwarm"):
            sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
            import _bench_host_corpus

            _bench_host_corpus.child(which, mode[1:], rest, args.ptx_out)
            return
        if mode == "cstages":
            print(json.dumps(corpus_stages(rest, 3)))
            return
        child(argparse.Namespace(which=which, mode=mode, kernel=rest[0] if rest else None, ptx_out=args.ptx_out))
        return
    if args.corpus is not None:
        corpus_main(args)
        return

    kernels = [k for k in KERNELS if args.only in k]
    args.out = os.path.abspath(args.out)
    import compileall

    for pkg in ("compiler", "farm", "workloads"):
        compileall.compile_dir(os.path.join(ROOT, pkg), quiet=1)
    os.makedirs(args.out, exist_ok=True)
    ptxdir = tempfile.mkdtemp(prefix="hostbench-ptx-")  # each compiler's PTX, for ptxas -v (not kept)
    samples = {"import": {"ours": [], "triton": []}, "farm_help": [], **{f: [] for f in FLOORS}}
    try:
        load_start = os.getloadavg()
    except OSError:
        load_start = None
    for k in kernels:
        samples[k] = {w: {"fresh": [], "compile": [], "warm": [], "fresh_process": []} for w in ("ours", "triton")}
    info = {}
    t_start = time.time()
    for rep in range(args.reps):
        order = ("ours", "triton") if rep % 2 == 0 else ("triton", "ours")
        for w in order:
            samples["import"][w].append(_run_child(w, "import")["import_s"])
        samples["farm_help"].append(_farm_help_s())
        for f, code in FLOORS.items():
            samples[f].append(_process_s([sys.executable, "-c", code]))
        for k in kernels:
            for w in order:
                ptx_out = os.path.join(ptxdir, f"{k}.{w}.ptx") if rep == 0 else None
                r = _run_child(w, "fresh", k, ptx_out)
                s = samples[k][w]
                s["fresh"].append(r["fresh_s"])
                s["compile"].append(r["compile_s"])
                s["fresh_process"].append(r["process_s"])
                if rep == 0:
                    info[(k, w)] = {"cubin_bytes": r["cubin_bytes"], "ptx_bytes": r["ptx_bytes"],
                                    "dyn_shared": r["dyn_shared"]}
                rw = _run_child(w, "warm", k)
                s["warm"].append(rw["warm_s"])
                info[(k, w)]["warm_after"] = rw["warm_after"]
        print(f"round {rep + 1}/{args.reps} done ({time.time() - t_start:.0f} s)", flush=True)

    st = _run_child("ours", "stages", ",".join(kernels))
    st.pop("import_s", None)
    st.pop("process_s", None)

    res = {}
    for k in kernels:
        res[k] = {}
        for w in ("ours", "triton"):
            r = _resources(os.path.join(ptxdir, f"{k}.{w}.ptx"))
            res[k][w] = dict(info[(k, w)], registers=r.get("registers"), static_shared=r.get("shared"),
                             spill_stores=r.get("spill_stores"), spill_loads=r.get("spill_loads"))
            res[k][w]["shared_total"] = res[k][w]["dyn_shared"] + (r.get("shared") or 0)

    med = {"import": {w: _med(samples["import"][w]) for w in ("ours", "triton")},
           "farm_help": _med(samples["farm_help"]),
           **{f: _med(samples[f]) for f in FLOORS}}
    med["import"]["ratio"] = med["import"]["ours"] / med["import"]["triton"]
    for k in kernels:
        med[k] = {}
        for what in ("fresh", "compile", "warm", "fresh_process"):
            o, t = _med(samples[k]["ours"][what]), _med(samples[k]["triton"][what])
            med[k][what] = {"ours": o, "triton": t, "ratio": o / t}
    targets = {"import <= 1.5x": med["import"]["ratio"] <= 1.5,
               "fresh <= 0.5x on every kernel": all(med[k]["fresh"]["ratio"] <= 0.5 for k in kernels),
               "warm <= 0.8x on every kernel": all(med[k]["warm"]["ratio"] <= 0.8 for k in kernels),
               "farm --help < 200 ms": med["farm_help"] is not None and med["farm_help"] < 0.2}
    env = _versions()
    env["loadavg_start"] = load_start
    try:
        env["loadavg_end"] = os.getloadavg()
    except OSError:
        pass
    doc = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), "reps": args.reps,
           "env": env, "medians": med, "targets": targets, "resources": res, "stages_ours_ms": {
               k: {s: (round(v * 1000, 2) if s != "tile_ops" else v) for s, v in st[k].items()} for k in kernels},
           "samples": samples,
           "kernels": {k: {"file": KERNELS[k][0], "fn": KERNELS[k][1], "signature": KERNELS[k][2],
                           "options": KERNELS[k][3]} for k in kernels}}
    with open(os.path.join(args.out, "host.json"), "w") as f:
        json.dump(doc, f, indent=1, default=str)
    with open(os.path.join(args.out, "host.md"), "w") as f:
        f.write(_markdown(doc, kernels))
    print(_markdown(doc, kernels))


# Per kernel and compiler: wall times (in-process perf_counter; fresh_process: the whole child process from the
# parent) and CPU times, user + system of the process and of the ptxas runs it waited for (both compilers run
# ptxas as a child), which a loaded machine inflates less than wall time.
CORPUS_MEASURES = ("fresh", "compile", "warm", "fresh_process", "fresh_cpu", "compile_cpu", "warm_cpu",
                   "fresh_process_cpu")


def corpus_main(args) -> None:
    """Every corpus kernel under both compilers: import, fresh-process compile, warm compile (interleaved rounds,
    the compilers' order alternating), ptxas -v resources of each compiler's PTX; OUT/corpus.json, OUT/corpus.md."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import compileall

    import _bench_host_corpus as BC

    for pkg in ("compiler", "farm", "workloads"):
        compileall.compile_dir(os.path.join(ROOT, pkg), quiet=1)
    # names or globs, space- or comma-separated
    want = [x for a in (args.corpus or []) for x in a.split(",") if x] or None
    files = BC.case_files(want)
    names = sorted(files)
    if not names:
        sys.exit(f"bench_host: no corpus kernel matches --corpus {' '.join(args.corpus)} (names or globs; "
                 f"python scripts/bench_corpus.py --list lists them)")
    # a kernel to compile first in the warm processes when the selection has only one: any other corpus kernel
    everything = BC.case_files(None) if len(names) < 2 else files
    spare = [n for n in sorted(everything) if n not in files][:1] or names
    item = {n: f"{everything.get(n) or files[n]}::{n}" for n in set(names) | set(spare)}
    args.out = os.path.abspath(args.out)
    os.makedirs(args.out, exist_ok=True)
    ptxdir = tempfile.mkdtemp(prefix="hostbench-ptx-")
    W = ("ours", "triton")
    samples = {"import": {w: [] for w in W},
               **{n: {w: {x: [] for x in CORPUS_MEASURES} for w in W} for n in names}}
    info = {}
    try:
        load_start = os.getloadavg()
    except OSError:
        load_start = None
    t_start = time.time()
    half = (len(names) + 1) // 2
    for rep in range(args.reps):
        order = W if rep % 2 == 0 else W[::-1]
        for w in order:
            samples["import"][w].append(_run_child(w, "import")["import_s"])
        for n in names:
            for w in order:
                r = _run_child_items(w, "cfresh", [item[n]], ptxdir if rep == 0 else None)
                k = r["kernels"][n]
                s = samples[n][w]
                s["fresh"].append(k["fresh_s"])
                s["compile"].append(k["compile_s"])
                s["fresh_process"].append(r["process_s"])
                s["fresh_cpu"].append(k["fresh_cpu_s"])
                s["compile_cpu"].append(k["compile_cpu_s"])
                s["fresh_process_cpu"].append(r["process_cpu_s"])
                if rep == 0:
                    info[(n, w)] = {x: k[x] for x in ("cubin_bytes", "ptx_bytes", "dyn_shared")}
        # warm: two processes per compiler, each compiling one kernel of the other half first (untimed); the
        # order within a half rotates round by round
        rot = rep % max(1, half)
        halves = [names[:half], names[half:]]
        for i, part in enumerate(halves):
            if not part:
                continue
            part = part[rot % len(part):] + part[:rot % len(part)]
            other = halves[1 - i] or spare
            lst = [item[other[rot % len(other)]]] + [item[n] for n in part]
            for w in order:
                r = _run_child_items(w, "cwarm", lst, None)
                for n, k in r["kernels"].items():
                    samples[n][w]["warm"].append(k["warm_s"])
                    samples[n][w]["warm_cpu"].append(k["warm_cpu_s"])
        print(f"round {rep + 1}/{args.reps} done ({time.time() - t_start:.0f} s)", flush=True)

    st = _run_child_items("ours", "cstages", [item[n] for n in names], None)
    st.pop("process_s", None)
    res = {}
    for n in names:
        res[n] = {}
        for w in W:
            r = _resources(os.path.join(ptxdir, f"{n}.{w}.ptx"))
            res[n][w] = dict(info[(n, w)], registers=r.get("registers"), static_shared=r.get("shared"),
                             spill_stores=r.get("spill_stores"), spill_loads=r.get("spill_loads"))
            res[n][w]["shared_total"] = res[n][w]["dyn_shared"] + (r.get("shared") or 0)
            res[n][w]["threads"] = r.get("threads")
            res[n][w]["blocks_per_sm"] = _blocks_per_sm(res[n][w])
    shutil.rmtree(ptxdir, ignore_errors=True)
    med = {"import": {w: _med(samples["import"][w]) for w in W}}
    med["import"]["ratio"] = med["import"]["ours"] / med["import"]["triton"]
    for n in names:
        med[n] = {}
        for what in CORPUS_MEASURES:
            o, t = _med(samples[n]["ours"][what]), _med(samples[n]["triton"][what])
            med[n][what] = {"ours": o, "triton": t, "ratio": o / t if o and t else None}
    ratios = {what: [med[n][what]["ratio"] for n in names if med[n][what]["ratio"]]
              for what in ("fresh", "warm", "fresh_cpu", "warm_cpu")}
    summary = {what: {"min": min(v), "median": statistics.median(v), "max": max(v),
                      "geomean": _geomean(v), "worst": max(names, key=lambda n: med[n][what]["ratio"] or 0)}
               for what, v in ratios.items() if v}
    targets = {"import <= 1.5x": med["import"]["ratio"] <= 1.5,
               "fresh <= 0.5x on every kernel": all(r <= 0.5 for r in ratios["fresh"]),
               "warm <= 0.8x on every kernel": all(r <= 0.8 for r in ratios["warm"]),
               "warm <= 1.0x on every kernel": all(r <= 1.0 for r in ratios["warm"])}
    counts = {f"{what} above {lim}": sum(r > lim for r in ratios[what])
              for what, lims in (("fresh", (0.5,)), ("warm", (0.8, 1.0)), ("fresh_cpu", (0.5,)),
                                 ("warm_cpu", (0.8, 1.0))) for lim in lims if ratios.get(what)}
    env = _versions()
    env["loadavg_start"] = load_start
    try:
        env["loadavg_end"] = os.getloadavg()
    except OSError:
        pass
    doc = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), "reps": args.reps,
           "targets_compiled": {"ours": BC.TARGET_OURS, "triton": 'GPUTarget("cuda", 90, 32)'},
           "env": env, "medians": med, "summary": summary, "targets": targets, "counts": counts, "resources": res,
           "stages_ours_ms": {n: {k: (round(v * 1000, 2) if k != "tile_ops" else v) for k, v in st[n].items()}
                              for n in names if n in st},
           "samples": samples, "kernels": {n: os.path.relpath(files[n], ROOT) for n in names}}
    with open(os.path.join(args.out, "corpus.json"), "w") as f:
        json.dump(doc, f, indent=1, default=str)
    md = _corpus_markdown(doc, names)
    with open(os.path.join(args.out, "corpus.md"), "w") as f:
        f.write(md)
    print(md)


def _geomean(xs):
    import math

    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def _run_child_items(which, mode, items, ptx_dir) -> dict:
    """One child process (`--child which mode items...`) with caches of its own; its last stdout line as JSON."""
    with tempfile.TemporaryDirectory(prefix="hostbench-cache-") as cache:
        env = dict(os.environ, TILEFARM_CACHE_DIR=os.path.join(cache, "tf"), TRITON_CACHE_DIR=os.path.join(cache, "tr"),
                   TRITON_HOME=cache)
        env.pop("TILEFARM_INTERPRET", None)
        env["PYTHONPATH"] = os.pathsep.join([ROOT] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                                                      if p])  # this tree's compiler, whatever the venv installed
        cmd = [sys.executable, os.path.abspath(__file__), "--child", which, mode] + list(items)
        if ptx_dir:
            cmd += ["--ptx-out", ptx_dir]
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cache, timeout=1200)
        wall = time.perf_counter() - t
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise RuntimeError(f"{which} {mode} {items[:2]}: exit {p.returncode}\n{p.stderr[-3000:]}")
    r = json.loads(p.stdout.strip().splitlines()[-1])
    r["process_s"] = wall
    r["process_cpu_s"] = r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime  # the child and its ptxas runs
    return r


def _corpus_markdown(doc, names) -> str:
    med, res, env, sm = doc["medians"], doc["resources"], doc["env"], doc["summary"]
    ms = lambda s: "-" if s is None else f"{s * 1000:.0f}"  # noqa: E731
    rt = lambda r: "-" if r is None else f"{r:.2f}"  # noqa: E731
    lines = [f"# Host-side compile of the corpus kernels vs Triton {env.get('triton')} ({doc['date']})", "",
             f"CPU only ({env.get('cpus')} cores, shared with other work: load average "
             f"{_la(env.get('loadavg_start'))} at the start, {_la(env.get('loadavg_end'))} at the end), "
             f"{doc['reps']} interleaved rounds, medians; ours for {doc['targets_compiled']['ours']}, Triton for "
             f"{doc['targets_compiled']['triton']}, each kernel at its GPU specialization. "
             "`scripts/bench_host.py --corpus`; every sample in `corpus.json`.", "",
             f"`import`: {ms(med['import']['ours'])} / {ms(med['import']['triton'])} ms = "
             f"**{med['import']['ratio']:.2f}**", ""]
    for what, label in (("fresh", "fresh process (import + load the file + compile)"),
                        ("warm", "warm compile (after other kernels in the process)"),
                        ("fresh_cpu", "fresh process, CPU time (user + sys, ptxas included)"),
                        ("warm_cpu", "warm compile, CPU time (user + sys, ptxas included)")):
        if what in sm:
            s = sm[what]
            lines.append(f"- {label}, ours / Triton: min {s['min']:.2f}, median {s['median']:.2f}, geomean "
                         f"{s['geomean']:.2f}, max {s['max']:.2f} ({s['worst']})")
    lines += ["", "Targets (wall): " + ", ".join(f"{k}: {'met' if v else 'NOT met'}"
                                                for k, v in doc["targets"].items()), ""]
    if doc.get("counts"):
        lines += ["Kernels above the bounds: " + ", ".join(f"{k}: {v}" for k, v in doc["counts"].items()), ""]
    lines += ["| kernel | fresh ms ours / Triton | ratio | CPU ratio | warm ms ours / Triton | ratio | CPU ratio "
              "| registers ours / Triton "
              "| shared bytes ours / Triton | spills ours / Triton | blocks per SM ours / Triton "
              "| our stages: frontend + passes / emit / llvm "
              "/ ptxas ms |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for n in names:
        m, o, t = med[n], res[n]["ours"], res[n]["triton"]
        st = doc["stages_ours_ms"].get(n, {})
        fp = st.get("frontend", 0) + sum(v for k, v in st.items() if k.startswith("pass:"))
        stage = (f"{fp:.0f} / {st.get('emit_llvm', 0):.0f} / {st.get('llvm', 0):.0f} / {st.get('ptxas', 0):.0f}"
                 if st else "-")
        lines.append(f"| {n} | {ms(m['fresh']['ours'])} / {ms(m['fresh']['triton'])} | {rt(m['fresh']['ratio'])} | "
                     f"{rt(m.get('fresh_cpu', {}).get('ratio'))} | "
                     f"{ms(m['warm']['ours'])} / {ms(m['warm']['triton'])} | **{rt(m['warm']['ratio'])}** | "
                     f"{rt(m.get('warm_cpu', {}).get('ratio'))} | "
                     f"{o['registers']} / {t['registers']} | {o['shared_total']} / {t['shared_total']} | "
                     f"{o['spill_stores']} / {t['spill_stores']} | "
                     f"{_flag(o.get('blocks_per_sm'), t.get('blocks_per_sm'))} | {stage} |")
    lines += ["", f"Resources: ptxas -v ({env.get('ptxas')}) on each compiler's PTX for sm_90a; shared = dynamic "
              "(each compiler's metadata) + static (ptxas); blocks per SM from those and the block's threads "
              "(compiler/resources.py occupancy), in bold where ours are fewer."]
    fewer = [n for n in names if (res[n]["ours"].get("blocks_per_sm") or 0) < (res[n]["triton"].get("blocks_per_sm") or 0)]
    spills = [n for n in names if (res[n]["ours"].get("spill_stores") or 0) > (res[n]["triton"].get("spill_stores") or 0)]
    more = [n for n in names if (res[n]["ours"].get("registers") or 0) > (res[n]["triton"].get("registers") or 0)
            or (res[n]["ours"].get("shared_total") or 0) > (res[n]["triton"].get("shared_total") or 0)]
    lines += ["", f"More registers or shared memory than Triton's: {len(more)} kernels; of them fewer blocks per SM: "
              f"{', '.join(fewer) or 'none'}; more spills: {', '.join(spills) or 'none'}."]
    return "\n".join(lines) + "\n"


def _flag(o, t) -> str:
    if o is None or t is None:
        return "-"
    return f"**{o}** / {t}" if o < t else f"{o} / {t}"


def _la(x) -> str:
    return "/".join(f"{v:.1f}" for v in x) if x else "?"


def _markdown(doc, kernels) -> str:
    med, res, env = doc["medians"], doc["resources"], doc["env"]
    ms = lambda s: "-" if s is None else f"{s * 1000:.0f}"  # noqa: E731
    lines = [f"# Host-side cost vs Triton {env.get('triton')} ({doc['date']})", "",
             f"CPU only ({env.get('cpus')} cores, shared with other work: load average "
             f"{_la(env.get('loadavg_start'))} at the start, {_la(env.get('loadavg_end'))} at the end), "
             f"{doc['reps']} interleaved rounds, fresh process and "
             "empty caches for every sample, medians. `scripts/bench_host.py`; every sample in `host.json`.", "",
             "| what | tilefarm ms | Triton ms | ratio |", "|---|---:|---:|---:|",
             f"| `import` | {ms(med['import']['ours'])} | {ms(med['import']['triton'])} | "
             f"{med['import']['ratio']:.2f} |",
             f"| `farm --help` (whole process) | {ms(med['farm_help'])} | - | - |",
             f"| floor: `python -c pass` | {ms(med['python_start'])} | | |",
             f"| floor: `python -c 'import typer, typer.rich_utils'` (typer's --help formatter) | "
             f"{ms(med['typer_rich_help'])} | | |", "",
             "| kernel | fresh: import + compile to cubin | compile call, first in process | "
             "warm: after one other kernel "
             "| fresh, whole process |", "|---|---|---|---|---|"]
    for k in kernels:
        cells = []
        for what in ("fresh", "compile", "warm", "fresh_process"):
            m = med[k][what]
            cells.append(f"{ms(m['ours'])} / {ms(m['triton'])} = **{m['ratio']:.2f}**")
        lines.append(f"| {k} | " + " | ".join(cells) + " |")
    lines += ["", "(ours / Triton ms = ratio)", "", "Targets: " + ", ".join(
        f"{k}: {'met' if v else 'NOT met'}" for k, v in doc["targets"].items()), "",
              f"Resources (ptxas -v with {env.get('ptxas')} on each compiler's PTX; shared = dynamic from the "
              "compiler's metadata + static from ptxas):", "",
              "| kernel | registers ours / Triton | shared bytes ours / Triton | spill stores ours / Triton |",
              "|---|---:|---:|---:|"]
    for k in kernels:
        o, t = res[k]["ours"], res[k]["triton"]
        lines.append(f"| {k} | {o['registers']} / {t['registers']} | {o['shared_total']} / {t['shared_total']} | "
                     f"{o['spill_stores']} / {t['spill_stores']} |")
    cols = ["frontend", "pass:canonicalize", "pass:dce", "pass:pipeline_loads", "pass:assign_layouts", "emit_llvm",
            "emit_llvm:text", "llvm", "ptxas", "total"]
    lines += ["", "Our compile by stage, ms (one process, every module loaded, caches off, fastest of 5; "
              "emit_llvm includes emit_llvm:text, llvmlite writing the IR out; llvm = parse + O3 + NVPTX codegen):", "",
              "| kernel | tile ops | " + " | ".join(c.replace("pass:", "") for c in cols) + " |",
              "|---|" + "---:|" * (len(cols) + 1)]
    for k in kernels:
        s = doc["stages_ours_ms"][k]
        lines.append(f"| {k} | {s['tile_ops']} | " + " | ".join(f"{s.get(c, 0):.1f}" for c in cols) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
