"""Autotuning on the GPU: our `@compiler.autotune` against Triton's `@triton.autotune`, same kernel source, same
configs, same run; then the tuning database in a fresh process, and our pick against an exhaustive search.

Steps (each timed with wall clocks around the user's call, torch.cuda.synchronize() included):
 1. compile modes: our parallel compile of every config (serial / thread pool / forked processes), each in a
    fresh process with an empty kernel cache; the fastest mode that works is used below.
 2. tuning wall time per shape: the first shape compiles every config, the next ones only time them;
    ours (fresh kernel cache) and Triton's (fresh TRITON_CACHE_DIR), same warmup/rep budgets.
 3. exhaustive: every config timed again with 4x the rep budget; is the tuned config within 3% of the best?
 4. the tuning database: what we measured goes into a TuningDB; a fresh process with TILEFARM_TUNING_DB set
    runs each shape with zero tuning (bench calls counted), another without it re-tunes (warm kernel cache).
 5. launch cost after tuning: autotuned and plain launches, ours and Triton's.

The kernel: workloads/matmul when it exists (tensor-core dot), else vector_add (memory-bound, BLOCK x
num_warps = 20 configs); --workload picks another KernelRunner-based workload with a meta_space.

    python3 scripts/bench_autotune.py --out benchmarks [--workload vector_add] [--rep 100]

Writes OUT/autotune-<date>.json and prints a Markdown summary. Needs torch, triton, numpy (no ray/pydantic).
"""
from __future__ import annotations

import argparse
import datetime
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)


# ------------------------------------------------------------------------------------------------ setup
def pick_workload(name):
    import workloads

    reg = workloads.registry()
    if name == "auto":
        name = "matmul" if "matmul" in reg else "vector_add"
    return reg[name]


def runner_of(wl):
    r = getattr(wl.launch, "__self__", None)
    if r is None or not hasattr(r, "build"):
        raise SystemExit(f"{wl.name}: its launch is not a KernelRunner's (need build/module/kernel_name)")
    return r


def configs_of(wl, limit=None):
    import compiler

    space = dict(wl.meta_space)
    names = list(space)
    out = []
    for vals in itertools.product(*(space[n] for n in names)):
        m = {**wl.default_meta, **dict(zip(names, vals))}
        out.append(compiler.Config.from_meta(m))
    return out[:limit] if limit else out


def shapes_of(wl, spec):
    if spec:
        return [json.loads(s) for s in spec]
    if wl.name == "matmul":
        return [{"M": n, "N": n, "K": n, "dtype": "float16", "epilogue": "none"} for n in (1024, 2048, 4096)]
    pts = getattr(wl, "gpu_sweep", None) or wl.default_sweep
    pts = [p for p in pts if p.get("dtype") in ("float32", "float16")]
    return pts[:3]


def tuned_names(wl):
    return {k for k in wl.meta_space if k not in ("num_warps", "num_stages")}


def setup(wl, params, seed=0):
    """Torch CUDA arrays for one shape, and (positional args, extra constexpr kwargs, grid function of meta)."""
    import numpy as np
    import torch

    from workloads._common import np_dtype

    runner = runner_of(wl)
    rng = np.random.default_rng(seed)
    inputs = wl.make_inputs(dict(params), rng)
    arrays = {k: torch.from_numpy(np.ascontiguousarray(v)).cuda() for k, v in inputs.items()}
    for spec in wl.output_specs(dict(params)):
        if spec.inplace:
            arrays[spec.name] = arrays[spec.inplace]
        else:
            arrays[spec.name] = torch.empty(spec.shape, dtype=getattr(torch, spec.dtype), device="cuda")
    _, args, consts, _ = runner.build(arrays, dict(params), dict(wl.default_meta))
    extra = {k: v for k, v in consts.items() if k not in tuned_names(wl)}  # e.g. EPILOGUE, GROUP_M
    grid = lambda meta: runner.build(arrays, dict(params), dict(meta))[0]  # noqa: E731
    return args, extra, grid


def key_names(wl):
    runner = runner_of(wl)
    jf = runner.kernel
    params = shapes_of(wl, None)[0]
    args, _, _ = setup(wl, params)
    return [n for n, a in zip([n for n, c in zip(jf.arg_names, jf.constexpr_mask) if not c], args)
            if type(a) is int and a != 1]


def sync():
    import torch

    torch.cuda.synchronize()


# ------------------------------------------------------------------------------------------------ children
def child_compile(mode, wl_name, limit):
    """Time our parallel compile of every config for the first shape (fresh kernel cache: set by the parent)."""
    import compiler

    wl = pick_workload(wl_name)
    configs = configs_of(wl, limit)
    args, extra, _ = setup(wl, shapes_of(wl, None)[0])
    at = compiler.autotune(configs, key=key_names(wl), compile_mode=mode)(runner_of(wl).kernel)
    t0 = time.perf_counter()
    failed = at._compile_configs(configs, args, extra)
    return {"mode": mode, "compile_s": time.perf_counter() - t0, "failed": len(failed), "n": len(configs)}


def child_fresh(wl_name, limit, shapes, warmup, rep):
    """A fresh process: run every shape once through the autotuner; report tuning work and wall time."""
    t_import = time.perf_counter()
    import torch  # noqa: F401

    import compiler

    wl = pick_workload(wl_name)
    t_import = time.perf_counter() - t_import
    configs = configs_of(wl, limit)
    at = compiler.autotune(configs, key=key_names(wl), warmup=warmup, rep=rep)(runner_of(wl).kernel)
    out = {"import_s": t_import, "shapes": []}
    for p in shapes:
        args, extra, grid = setup(wl, p)
        sync()
        b0, t0 = at.bench_calls, time.perf_counter()
        at[grid](*args, **extra)
        sync()
        out["shapes"].append({"params": p, "first_call_s": time.perf_counter() - t0,
                              "bench_calls": at.bench_calls - b0, "db_hit": at.db_hits,
                              "best": at.best_config.to_dict()})
    out["tune_count"], out["db_hits"] = at.tune_count, at.db_hits
    return out


def run_child(argv, env_extra, timeout=900):
    env = {**os.environ, "PYTHONPATH": REPO + os.pathsep + os.environ.get("PYTHONPATH", ""), **env_extra}
    p = subprocess.run([sys.executable, os.path.abspath(__file__), *argv], capture_output=True, text=True,
                       env=env, timeout=timeout)
    if p.returncode:
        return {"error": (p.stderr or p.stdout)[-3000:]}
    return json.loads(p.stdout.strip().splitlines()[-1])


# ------------------------------------------------------------------------------------------------ main
def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="benchmarks")
    ap.add_argument("--workload", default="auto")
    ap.add_argument("--shape", action="append", help='a shape as JSON, e.g. \'{"N": 16777216, "dtype": "float32"}\'')
    ap.add_argument("--limit", type=int, default=None, help="use only the first LIMIT configs")
    ap.add_argument("--warmup", type=float, default=25)
    ap.add_argument("--rep", type=float, default=100)
    ap.add_argument("--exhaustive-factor", type=float, default=2)
    ap.add_argument("--compile-configs", type=int, default=16, help="configs compiled when comparing compile modes")
    ap.add_argument("--child", nargs="*", help=argparse.SUPPRESS)
    a = ap.parse_args()

    if a.child:
        kind = a.child[0]
        if kind == "compile":
            print(json.dumps(child_compile(a.child[1], a.workload, a.limit)))
        else:
            print(json.dumps(child_fresh(a.workload, a.limit, json.loads(a.child[1]), a.warmup, a.rep)))
        return

    cache = tempfile.mkdtemp(prefix="tf-autotune-cache-")
    os.environ["TILEFARM_CACHE_DIR"] = cache
    os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="triton-autotune-cache-")
    os.environ.pop("TILEFARM_TUNING_DB", None)
    import torch
    import triton

    import compiler
    from compiler.runtime import do_bench, launch_overhead_us
    from farm.tuning_db import TuningDB
    from workloads._common import triton_module

    wl = pick_workload(a.workload)
    runner = runner_of(wl)
    configs = configs_of(wl, a.limit)
    shapes = shapes_of(wl, a.shape)
    keys = key_names(wl)
    res = {"date": datetime.date.today().isoformat(), "workload": wl.name, "kernel": runner.kernel_name,
           "n_configs": len(configs), "shapes": shapes, "key": keys, "warmup_ms": a.warmup, "rep_ms": a.rep,
           "gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__}
    print(f"{wl.name}: {len(configs)} configs x {len(shapes)} shapes on {res['gpu']}", flush=True)

    # 1. compile modes, each in a fresh process with an empty cache
    modes = {}
    for mode in ("serial", "thread", "process"):
        modes[mode] = run_child(["--workload", a.workload, "--limit", str(min(a.limit or 10**9, a.compile_configs)),
                                 "--child", "compile", mode],
                                {"TILEFARM_CACHE_DIR": tempfile.mkdtemp(prefix=f"tf-cm-{mode}-")}, timeout=600)
        print("compile", mode, modes[mode], flush=True)
    ok = {m: r["compile_s"] for m, r in modes.items() if "compile_s" in r and not r.get("failed")}
    best_mode = min(ok, key=ok.get) if ok else "serial"
    res["compile_modes"] = modes
    res["compile_mode_used"] = best_mode

    # 2. tuning wall time: ours, then Triton's, shape by shape
    ours = compiler.autotune(configs, key=keys, warmup=a.warmup, rep=a.rep, compile_mode=best_mode,
                             use_database=False)(runner.kernel)
    tri_kernel = getattr(triton_module(runner.module), runner.kernel_name)

    def tri_bench(fn, quantiles=None):
        return triton.testing.do_bench(fn, warmup=a.warmup, rep=a.rep, quantiles=quantiles)

    tri = triton.autotune(configs=[triton.Config(dict(c.kwargs), num_warps=c.num_warps, num_stages=c.num_stages)
                                   for c in configs], key=keys, do_bench=tri_bench)(tri_kernel)
    per_shape = []
    for p in shapes:
        args, extra, grid = setup(wl, p)
        sync()
        t0 = time.perf_counter()
        ours[grid](*args, **extra)
        sync()
        t_ours = time.perf_counter() - t0
        t0 = time.perf_counter()
        tri[grid](*args, **extra)
        sync()
        t_tri = time.perf_counter() - t0
        row = {"params": p, "ours_tune_s": t_ours, "triton_tune_s": t_tri, "ours_best": ours.best_config.to_dict(),
               "triton_best": {"kwargs": dict(tri.best_config.kwargs), "num_warps": tri.best_config.num_warps,
                               "num_stages": tri.best_config.num_stages},
               "ours_bench_calls": ours.bench_calls}
        print(f"tune {p}: ours {t_ours:.2f} s -> {ours.best_config}; triton {t_tri:.2f} s -> {tri.best_config}",
              flush=True)
        per_shape.append(row)
    res["tuning"] = per_shape

    # 3. exhaustive: every config, 4x the rep budget; ours with our kernel, Triton's with Triton's
    for row in per_shape:
        args, extra, grid = setup(wl, row["params"])
        ex_ours, ex_tri = {}, {}
        for c in configs:
            kw = {**extra, **c.all_kwargs()}
            g = grid(kw)
            ex_ours[repr(c)] = do_bench(lambda: runner.kernel[g](*args, **kw), warmup_ms=a.warmup,
                                        rep_ms=a.rep * a.exhaustive_factor)["median_ms"]
            ex_tri[repr(c)] = triton.testing.do_bench(lambda: tri_kernel[g](*args, **kw), warmup=a.warmup,
                                                      rep=a.rep * a.exhaustive_factor)
        chosen = repr(compiler.Config.from_dict(row["ours_best"]))
        tchosen = repr(compiler.Config.from_dict(row["triton_best"]))
        b, tb = min(ex_ours.values()), min(ex_tri.values())
        row.update(exhaustive_ours_ms=ex_ours, exhaustive_triton_ms=ex_tri, ours_best_exhaustive=min(ex_ours, key=ex_ours.get),
                   ours_pick_vs_best=ex_ours[chosen] / b - 1, triton_pick_vs_best=ex_tri[tchosen] / tb - 1,
                   ours_within_3pct=ex_ours[chosen] <= 1.03 * b, triton_within_3pct=ex_tri[tchosen] <= 1.03 * tb)
        print(f"exhaustive {row['params']}: ours pick +{100 * row['ours_pick_vs_best']:.1f}% vs best, "
              f"triton pick +{100 * row['triton_pick_vs_best']:.1f}%", flush=True)

    # 4. the database: store what we measured; fresh processes with and without it
    os.makedirs(a.out, exist_ok=True)
    dbpath = os.path.join(tempfile.mkdtemp(prefix="tf-tuning-"), "tuning.db")
    db = TuningDB(dbpath)
    n = db.save_autotuner(ours)
    export = os.path.join(a.out, f"autotune-db-{res['date']}.json")
    db.export_json(export)
    db.close()
    shapes_json = json.dumps(shapes)
    lim = ["--limit", str(a.limit)] if a.limit else []
    common = ["--workload", a.workload, "--warmup", str(a.warmup), "--rep", str(a.rep), *lim]
    res["database"] = {"records": n, "export": export,
                       "fresh_with_db": run_child([*common, "--child", "fresh", shapes_json],
                                                  {"TILEFARM_TUNING_DB": dbpath, "TILEFARM_CACHE_DIR": cache}),
                       "fresh_with_json": run_child([*common, "--child", "fresh", shapes_json],
                                                    {"TILEFARM_TUNING_DB": export, "TILEFARM_CACHE_DIR": cache}),
                       "fresh_without_db": run_child([*common, "--child", "fresh", shapes_json],
                                                     {"TILEFARM_CACHE_DIR": cache})}
    for k in ("fresh_with_db", "fresh_with_json", "fresh_without_db"):
        print(k, json.dumps(res["database"][k])[:400], flush=True)

    # 5. launch cost after tuning (host side, no sync per launch)
    p = shapes[0]
    args, extra, grid = setup(wl, p)
    c = compiler.Config.from_dict(per_shape[0]["ours_best"])
    kw = {**extra, **c.all_kwargs()}
    g = grid(kw)
    variants = {
        "ours autotuned kernel[grid](...)": lambda: ours[g](*args, **extra),
        "ours autotuned, grid callable": lambda: ours[grid](*args, **extra),
        "ours jit kernel[grid](..., meta)": lambda: runner.kernel[g](*args, **kw),
        "triton autotuned kernel[grid](...)": lambda: tri[g](*args, **extra),
        "triton jit kernel[grid](..., meta)": lambda: tri_kernel[g](*args, **kw),
    }
    res["launch_us"] = {name: launch_overhead_us(fn, n=3000)["median_us"] for name, fn in variants.items()}
    for name, us in res["launch_us"].items():
        print(f"launch {name}: {us:.2f} us", flush=True)

    # one file per day; each workload's run is merged in under its name
    path = os.path.join(a.out, f"autotune-{res['date']}.json")
    allres = {"runs": {}}
    if os.path.exists(path):
        try:
            with open(path) as f:
                allres = json.load(f)
        except ValueError:
            pass
    allres.setdefault("runs", {})[wl.name] = res
    with open(path, "w") as f:
        json.dump(allres, f, indent=1, default=str)
    with open(os.path.join(a.out, f"autotune-{res['date']}-{wl.name}.md"), "w") as f:
        f.write(summary(res) + "\n")
    print(summary(res))
    print(f"wrote {path}")


def summary(res) -> str:
    lines = [f"# autotune: {res['workload']} ({res['n_configs']} configs) on {res['gpu']}", "",
             f"compile all configs (fresh cache): " + ", ".join(
                 f"{m} {r.get('compile_s', float('nan')):.2f} s" for m, r in res["compile_modes"].items())
             + f"; used: {res['compile_mode_used']}", "",
             "| shape | ours tune s | triton tune s | ours pick vs best | triton pick vs best |",
             "|---|---|---|---|---|"]
    for r in res["tuning"]:
        lines.append(f"| {r['params']} | {r['ours_tune_s']:.2f} | {r['triton_tune_s']:.2f} | "
                     f"{100 * r.get('ours_pick_vs_best', float('nan')):+.1f}% | "
                     f"{100 * r.get('triton_pick_vs_best', float('nan')):+.1f}% |")
    d = res["database"]
    for k in ("fresh_with_db", "fresh_with_json", "fresh_without_db"):
        v = d[k]
        if "shapes" in v:
            lines.append(f"- {k}: bench calls {[s['bench_calls'] for s in v['shapes']]}, first-call s "
                         f"{[round(s['first_call_s'], 3) for s in v['shapes']]}, db hits {v['db_hits']}")
        else:
            lines.append(f"- {k}: error {v.get('error', '')[:300]}")
    lines.append("- launch us: " + ", ".join(f"{k} {v:.2f}" for k, v in res["launch_us"].items()))
    return "\n".join(lines)


if __name__ == "__main__":
    main()
