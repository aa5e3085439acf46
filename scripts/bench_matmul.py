#!/usr/bin/env python3
"""Matmul and flash-attention forward on the GPU: our compiler vs Triton (same source) vs torch, in one process.

    python3 scripts/bench_matmul.py [--out DIR] [--quick] [--sizes 1024,4096] [--dtypes float16] [--no-attention]
                                    [--rounds N]
    python3 scripts/bench_matmul.py --table DIR/matmul-<date>.json      # re-render a stored run, no GPU

Matmul (workloads/matmul/kernel.py, epilogue none): fp16 and bf16, square sizes 1024^3 .. 8192^3, a few block
configs each; every implementation's output is checked against a float64 reference (max |err| / max |ref|)
before it is timed, and a wrong output's time never counts. Best config of ours and of Triton are compared with
each other and with torch.matmul (cuBLAS). Attention (workloads/attention/kernel.py): BH 32, L 4096, D 64 and
128, fp16, ours vs Triton on the same source over 7-10 configs each (`--attn-configs small`: two), checked
against torch's scaled_dot_product_attention in fp32.
Timing: compiler.runtime.do_bench (L2 flushed before each repetition, median); the best config of each side (and
torch) is then re-timed in N (5) interleaved rounds and the table shows those medians, and the ratio ours/Triton
taken round by round (median, min, max): the two were timed side by side in each round, so that ratio is free of
the drift between rounds that a ratio of medians keeps. Writes DIR/matmul-<date>.json and .md (GPU, driver,
versions, every number) and prints a table with ratios.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

# (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages)
MATMUL_CONFIGS = [
    (128, 128, 64, 8, 8, 3),
    (128, 256, 64, 8, 8, 3),
    (128, 256, 64, 8, 8, 4),
    (64, 256, 64, 8, 8, 3),
    (128, 128, 32, 8, 4, 4),
    (64, 128, 32, 8, 4, 4),
]
QUICK_CONFIGS = MATMUL_CONFIGS[:2]
# (BLOCK_M, BLOCK_N, num_warps, num_stages) per head dimension; the same list for every implementation.
# --attn-configs small: two per head dimension (what the figures up to 2026-11-30b used)
ATTN_SMALL = {64: [(128, 64, 4, 3), (128, 64, 8, 3)], 128: [(128, 64, 8, 3), (128, 32, 8, 3)]}
# --attn-configs wide (default): a larger part of the Triton tutorial's autotuning space (BLOCK_M 64/128,
# BLOCK_N 32-128, 4/8 warps, 2-4 stages)
ATTN_WIDE = {64: [(128, 64, 4, 3), (128, 64, 8, 3), (128, 64, 4, 2), (128, 64, 4, 4), (128, 64, 8, 4),
                  (128, 128, 8, 3), (128, 128, 8, 2), (128, 128, 4, 2), (64, 64, 4, 3), (128, 32, 4, 3)],
             128: [(128, 64, 8, 3), (128, 32, 8, 3), (128, 64, 8, 2), (128, 64, 8, 4), (128, 128, 8, 2),
                   (64, 64, 4, 3), (128, 64, 4, 3)]}
ATTN_CONFIGS = ATTN_WIDE
MATMUL_TOL = 1e-2  # max |err| / max |ref| for fp16/bf16 outputs of K-long fp32 sums


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def bench(fn, rep_ms):
    from compiler.runtime import do_bench

    r = do_bench(fn, warmup_ms=10, rep_ms=rep_ms)
    return r["median_ms"]


def rel_err(torch, got, ref):
    g = got.double()
    if torch.isnan(g).any():
        return float("inf")
    return float((g - ref).abs().max() / ref.abs().max().clamp_min(1e-30))


IMPLS = ("ours", "triton")


def _impls(ours_k, trit_k):
    return [("ours", ours_k), ("triton", trit_k)]


ROUNDS = 5  # interleaved re-measurements of the best configs (clocks drift over a sweep; one sample each misleads)


def confirm(row, fns, flops, rep_ms, rounds=None):
    """Re-time the best correct config of ours and of Triton (and torch, when given) in `rounds` interleaved
    rounds, rotating the order each round, and report each one's median: the ratios then compare numbers taken
    side by side, not minutes apart under different clocks. The sweep's single numbers stay in row[impl]."""
    picked = {}
    for impl in (i for i in IMPLS if i in row):
        good = {k: v for k, v in row[impl].items() if v.get("ok")}
        if good:
            k = max(good, key=lambda c: good[c]["tflops"])
            picked[impl] = (k, fns[impl][k])
    if row.get("torch", {}).get("ok") and "torch" in fns:
        picked["torch"] = (None, fns["torch"])
    names = list(picked)
    rounds = rounds or ROUNDS
    samples = {n: [] for n in names}
    for r in range(rounds):
        for n in names[r % len(names):] + names[:r % len(names)]:
            samples[n].append(flops / bench(picked[n][1], rep_ms) / 1e9)
    for n in names:
        vals = sorted(samples[n])
        med = vals[len(vals) // 2]
        if n == "torch":
            row["torch"].update(tflops=med, rounds=samples[n])
        else:
            row[f"best_{n}"] = {"config": picked[n][0], "tflops": med, "rounds": samples[n]}
    return row


def measure(torch, impl, fn, error_of, tol, flops, rep_ms) -> dict:
    """Run fn once (it compiles), check its output (error_of() against tol), then time it; an exception becomes
    the entry's error."""
    try:
        fn()
        torch.cuda.synchronize()
        err = error_of()
        ms = bench(fn, rep_ms)
        return {"ms": ms, "tflops": flops / ms / 1e9, "rel_err": err, "ok": err < tol}
    except Exception as e:  # noqa: BLE001
        traceback.print_exc()
        return {"error": f"{type(e).__name__}: {str(e)[:300]}", "ok": False}


def log_medians(label, row):
    log(f"{label} interleaved medians: " + ", ".join(
        f"{n} {row[k]['tflops']:.1f}" for n, k in (("ours", "best_ours"), ("triton", "best_triton"),
                                                   ("torch", "torch"))
        if k in row and "tflops" in row[k]))


def run_matmul(torch, sizes, dtypes, configs, rep_ms):
    from workloads._common import triton_module
    from workloads.matmul import kernel as MK

    ours_k = MK.matmul_kernel
    trit_k = triton_module(MK).matmul_kernel
    impls = _impls(ours_k, trit_k)
    rows = []
    for dt in dtypes:
        tdt = getattr(torch, dt)
        for S in sizes:
            M = N = K = S
            g = torch.Generator(device="cuda").manual_seed(S)
            a = torch.randn((M, K), device="cuda", generator=g).to(tdt)
            b = torch.randn((K, N), device="cuda", generator=g).to(tdt)
            ref = a.double() @ b.double()
            bias = torch.zeros(N, device="cuda", dtype=torch.float32)
            flops = 2.0 * M * N * K
            row = {"op": "matmul", "dtype": dt, "M": M, "N": N, "K": K, **{i: {} for i, _ in impls}}
            fns = {i: {} for i, _ in impls}
            for impl, kern in impls:
                for (BM, BN, BK, GM, nw, ns) in configs:
                    cfg = f"{BM}x{BN}x{BK} w{nw} s{ns}"
                    c = torch.full((M, N), float("nan"), device="cuda", dtype=tdt)
                    grid = (triton_cdiv(M, BM) * triton_cdiv(N, BN),)

                    # every value bound now: confirm() runs the best configs again after the sweep
                    def fn(kern=kern, grid=grid, c=c, BM=BM, BN=BN, BK=BK, GM=GM, nw=nw, ns=ns):
                        kern[grid](a, b, c, bias, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                   c.stride(0), c.stride(1), BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK, GROUP_M=GM,
                                   EPILOGUE="none", PRECISION="tf32", num_warps=nw, num_stages=ns)
                    ent = row[impl][cfg] = measure(torch, impl, fn, lambda c=c, ref=ref: rel_err(torch, c, ref),
                                                   MATMUL_TOL, flops, rep_ms)
                    fns[impl][cfg] = fn
                    log(f"matmul {dt} {S}^3 {impl:6s} {cfg}: {fmt_ent(ent)}")
            c = torch.empty((M, N), device="cuda", dtype=tdt)
            torch.matmul(a, b, out=c)
            err = rel_err(torch, c, ref)
            ms = bench(lambda: torch.matmul(a, b, out=c), rep_ms)
            row["torch"] = {"ms": ms, "tflops": flops / ms / 1e9, "rel_err": err, "ok": err < MATMUL_TOL}
            log(f"matmul {dt} {S}^3 torch  : {fmt_ent(row['torch'])}")
            fns["torch"] = lambda: torch.matmul(a, b, out=c)
            del ref
            rows.append(summarize(confirm(row, fns, flops, rep_ms)))
            log_medians(f"matmul {dt} {S}^3", row)
    return rows


def run_attention(torch, dims, rep_ms, BH=32, L=4096):
    from workloads._common import triton_module
    from workloads.attention import kernel as AK

    ours_k = AK.attention_fwd_kernel
    trit_k = triton_module(AK).attention_fwd_kernel
    impls = _impls(ours_k, trit_k)
    rows = []
    for D in dims:
        g = torch.Generator(device="cuda").manual_seed(D)
        q, k, v = (torch.randn((BH, L, D), device="cuda", generator=g).to(torch.float16) for _ in range(3))
        scale = 1.0 / D ** 0.5
        ref = torch.nn.functional.scaled_dot_product_attention(q.float()[None], k.float()[None], v.float()[None],
                                                               scale=scale)[0].double()
        flops = 4.0 * BH * L * L * D
        row = {"op": "attention", "dtype": "float16", "BH": BH, "L": L, "D": D, **{i: {} for i, _ in impls}}
        fns = {i: {} for i, _ in impls}
        for impl, kern in impls:
            for (BM, BN, nw, ns) in ATTN_CONFIGS[D]:
                cfg = f"{BM}x{BN} w{nw} s{ns}"
                o = torch.full((BH, L, D), float("nan"), device="cuda", dtype=torch.float16)

                def fn(kern=kern, o=o, BM=BM, BN=BN, nw=nw, ns=ns):  # bound now: confirm() re-runs it later
                    kern[(L // BM, BH)](q, k, v, o, scale, L, L * D, D, HEAD_DIM=D, BLOCK_M=BM, BLOCK_N=BN,
                                        num_warps=nw, num_stages=ns)
                ent = row[impl][cfg] = measure(torch, impl, fn, lambda o=o: rel_err(torch, o, ref), 1e-2, flops,
                                               rep_ms)
                fns[impl][cfg] = fn
                log(f"attention D={D} {impl:6s} {cfg}: {fmt_ent(ent)}")
        rows.append(summarize(confirm(row, fns, flops, rep_ms)))
        log_medians(f"attention D={D}", row)
    return rows


def sass_report(configs, dtype="float16", S=4096):
    """Resources (ptxas -v) and SASS instruction counts (cuobjdump) of our matmul kernel per config."""
    import re
    import shutil
    import subprocess
    import tempfile

    import numpy as np

    from compiler.codegen.ptx import ptx_arch, ptx_resources, ptx_to_cubin
    from workloads._common import np_dtype
    from workloads.matmul import kernel as MK

    out = {}
    a = np.zeros((S, S), np_dtype(dtype))
    bias = np.zeros(1, np.float32)
    for (BM, BN, BK, GM, nw, ns) in configs:
        cfg = f"{BM}x{BN}x{BK} w{nw} s{ns}"
        ck = MK.matmul_kernel.warmup(a, a, a, bias, S, S, S, S, 1, S, 1, S, 1, grid=(1,), target="sm_90",
                                     BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK, GROUP_M=GM, EPILOGUE="none",
                                     PRECISION="tf32", num_warps=nw, num_stages=ns)
        ptx = ck.asm["ptx"]
        res = ptx_resources(ptx, "sm_90")
        res.pop("log", None)
        ent = {"target": ptx_arch(ptx, "sm_90"), "resources": res}
        tool = shutil.which("cuobjdump")
        if tool:
            with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
                f.write(ptx_to_cubin(ptx, "sm_90"))
                f.flush()
                sass = subprocess.run([tool, "-sass", f.name], capture_output=True, text=True).stdout
            ent["sass"] = {k: len(re.findall(rf"\b{k}\b", sass)) for k in
                           ("HGMMA", "HMMA", "LDSM", "STS", "LDG", "BAR", "WARPGROUP")}
        out[cfg] = ent
        log(f"sass {cfg}: {ent}")
    return out


def occupancy_report(torch, configs, dtype="float16", S=4096):
    """Blocks of our matmul kernel resident per SM (the driver's occupancy calculator, with the kernel's shared
    memory and carveout attributes set as a launch sets them), with registers and shared bytes per config."""
    from compiler.runtime.cuda import check, driver
    from workloads.matmul import kernel as MK

    d = driver()
    a = torch.empty((S, S), device="cuda", dtype=getattr(torch, dtype))
    bias = torch.empty(1, device="cuda", dtype=torch.float32)
    out = {}
    for (BM, BN, BK, GM, nw, ns) in configs:
        cfg = f"{BM}x{BN}x{BK} w{nw} s{ns}"
        ck = MK.matmul_kernel.warmup(a, a, a, bias, S, S, S, S, 1, S, 1, S, 1, grid=(1,), BLOCK_M=BM, BLOCK_N=BN,
                                     BLOCK_K=BK, GROUP_M=GM, EPILOGUE="none", PRECISION="tf32", num_warps=nw,
                                     num_stages=ns)
        kern = ck.launcher.kernel
        blocks = check(d.cuOccupancyMaxActiveBlocksPerMultiprocessor(kern.handle, 32 * nw, ck.shared),
                       "cuOccupancyMaxActiveBlocksPerMultiprocessor")
        out[cfg] = {"blocks_per_sm": int(blocks), "registers": kern.attribute("NUM_REGS"), "shared": ck.shared}
        log(f"occupancy {cfg}: {out[cfg]}")
    return out


def pooled(paths, seed=0, resamples=2000):
    """Ours/Triton round by round, pooled over several runs' JSON (each round times the two side by side): per
    work the number of rounds, their median, the share of rounds at or above 1, and a bootstrap 95% interval of
    the median (resampling rounds). Runs of different code should not be pooled for the works they changed."""
    import random

    works = {}
    for path in paths:
        with open(path) as f:
            for r in json.load(f)["rows"]:
                ra = (r.get("best_ours") or {}).get("rounds")
                rb = (r.get("best_triton") or {}).get("rounds")
                if ra and rb and len(ra) == len(rb):
                    works.setdefault(work_name(r), []).extend(x / y for x, y in zip(ra, rb))
    rng = random.Random(seed)
    med = lambda v: sorted(v)[len(v) // 2]  # noqa: E731
    out = {}
    for w, q in works.items():
        boot = sorted(med([rng.choice(q) for _ in q]) for _ in range(resamples))
        out[w] = {"rounds": len(q), "median": med(q), "share_at_least_1": sum(x >= 1 for x in q) / len(q),
                  "ci95": (boot[int(0.025 * resamples)], boot[int(0.975 * resamples) - 1])}
    lines = ["| work | rounds | ours/Triton per round: median | 95% interval of the median | rounds >= 1 |",
             "|---|---|---|---|---|"]
    lines += [f"| {w} | {v['rounds']} | {v['median']:.3f} | [{v['ci95'][0]:.3f}, {v['ci95'][1]:.3f}] | "
              f"{v['share_at_least_1']:.0%} |" for w, v in out.items()]
    print("\n".join(lines))
    return out


def parse_config(text):
    """'128x256x128-w8-s3' -> (128, 256, 128, 8, 8, 3): BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages."""
    try:
        blocks, w, st = text.strip().split("-")
        bm, bn, bk = (int(x) for x in blocks.split("x"))
        assert w[0] == "w" and st[0] == "s"
        return (bm, bn, bk, 8, int(w[1:]), int(st[1:]))
    except (ValueError, AssertionError, IndexError):
        raise SystemExit(f"--matmul-configs: {text!r} is not BMxBNxBK-wW-sS (e.g. 128x256x128-w8-s3)") from None


def triton_cdiv(a, b):
    return (a + b - 1) // b


def fmt_ent(ent):
    if "error" in ent:
        return "ERROR " + ent["error"][:120]
    return f"{ent['tflops']:7.1f} TFLOP/s ({ent['ms']:.3f} ms) err {ent['rel_err']:.1e}{'' if ent['ok'] else ' WRONG'}"


def summarize(row):
    """Best correct config of ours and of Triton (as `confirm` re-timed it, when it did), and the ratios."""
    for impl in (i for i in IMPLS if i in row):
        good = {k: v for k, v in row[impl].items() if v.get("ok")}
        if good and f"best_{impl}" not in row:
            k = max(good, key=lambda c: good[c]["tflops"])
            row[f"best_{impl}"] = {"config": k, "tflops": good[k]["tflops"]}
    o = row.get("best_ours", {}).get("tflops")
    t = row.get("best_triton", {}).get("tflops")
    c = row.get("torch", {}).get("tflops") if row.get("torch", {}).get("ok") else None
    row["ours_vs_triton"] = o / t if o and t else None
    row["ours_vs_torch"] = o / c if o and c else None
    row["ours_vs_triton_rounds"] = paired_spread(row.get("best_ours"), row.get("best_triton"))
    return row


def paired_spread(a, b):
    """(min, median, max) of a/b taken round by round (the two were timed side by side in each round), or None;
    the spread says how far a ratio of medians can be trusted: one round's clocks and neighbours move both."""
    ra, rb = (a or {}).get("rounds"), (b or {}).get("rounds")
    if not ra or not rb or len(ra) != len(rb):
        return None
    q = sorted(x / y for x, y in zip(ra, rb))
    return (q[0], q[len(q) // 2], q[-1])


def spread(sp) -> str:
    return f"{sp[1]:.3f} [{sp[0]:.3f}, {sp[2]:.3f}]" if sp else "-"


def work_name(r):
    return (f"matmul {r['dtype']} {r['M']}^3" if r["op"] == "matmul" else
            f"attention fwd fp16 BH{r['BH']} L{r['L']} D{r['D']}")


def table(rows):
    f = lambda x: f"{x:.3f}" if x else "-"  # noqa: E731
    lines = ["| work | ours TFLOP/s (config) | Triton 3.6 TFLOP/s (config) | torch/cuBLAS TFLOP/s | ours/Triton | "
             "ours/Triton per round: median [min, max] | ours/cuBLAS |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        name = work_name(r)
        bo, bt = r.get("best_ours"), r.get("best_triton")
        tc = r.get("torch")
        lines.append(f"| {name} | {bo['tflops']:.1f} ({bo['config']}) | " if bo else f"| {name} | - | ")
        lines[-1] += f"{bt['tflops']:.1f} ({bt['config']}) | " if bt else "- | "
        lines[-1] += (f"{tc['tflops']:.1f} | " if tc and tc.get("ok") else "- | ")
        lines[-1] += f"{f(r.get('ours_vs_triton'))} | {spread(r.get('ours_vs_triton_rounds'))} | "
        lines[-1] += f"{f(r.get('ours_vs_torch'))} |"
    return "\n".join(lines)


def env_info(torch):
    info = {"python": platform.python_version(), "torch": torch.__version__,
            "gpu": torch.cuda.get_device_name(0), "date": datetime.date.today().isoformat()}
    try:
        import triton

        info["triton"] = triton.__version__
    except Exception:  # noqa: BLE001
        info["triton"] = None
    try:
        import llvmlite

        info["llvmlite"] = llvmlite.__version__
    except Exception:  # noqa: BLE001
        pass
    try:
        import subprocess

        info["driver"] = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                        capture_output=True, text=True).stdout.strip()
    except Exception:  # noqa: BLE001
        pass
    return info


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=None, help="directory for matmul-<date>.json / .md")
    ap.add_argument("--quick", action="store_true", help="4096^3 only, two configs, D=64 attention")
    ap.add_argument("--sizes", default=None, help="comma-separated square sizes")
    ap.add_argument("--dtypes", default="float16,bfloat16")
    ap.add_argument("--no-attention", action="store_true")
    ap.add_argument("--no-matmul", action="store_true")
    ap.add_argument("--attn-configs", choices=("small", "wide"), default="wide",
                    help="attention configs: a part of the Triton tutorial's autotuning space (wide, 7-10 per head "
                         "dimension, the default since 2026-11-30) or two per head dimension (small)")
    ap.add_argument("--matmul-configs", default=None, metavar="LIST",
                    help="matmul configs instead of the default list, comma-separated BMxBNxBK-wW-sS "
                         "(e.g. 128x256x128-w8-s3; GROUP_M 8)")
    ap.add_argument("--rep-ms", type=float, default=100.0)
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds re-timing the best configs")
    ap.add_argument("--sass", action="store_true", help="resources and SASS counts of our matmul per config")
    ap.add_argument("--occupancy", action="store_true", help="blocks per SM of our matmul per config, then stop")
    ap.add_argument("--pool", metavar="JSON", nargs="+", default=None,
                    help="ours/Triton round by round pooled over several runs' JSON, with a bootstrap interval; no GPU")
    ap.add_argument("--table", metavar="JSON", default=None,
                    help="print the table of an earlier run's JSON (with the per-round spread) and stop; no GPU")
    args = ap.parse_args(argv)
    global ROUNDS, ATTN_CONFIGS
    ROUNDS = max(1, args.rounds)
    ATTN_CONFIGS = ATTN_WIDE if args.attn_configs == "wide" else ATTN_SMALL
    if args.pool:
        return pooled(args.pool)
    if args.table:
        with open(args.table) as f:
            rows = [summarize(r) for r in json.load(f)["rows"]]
        print(table(rows))
        return rows
    import torch

    if args.occupancy:
        return occupancy_report(torch, MATMUL_CONFIGS)
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else ([4096] if args.quick else
                                                                        [1024, 2048, 4096, 8192])
    configs = QUICK_CONFIGS if args.quick else MATMUL_CONFIGS
    if args.matmul_configs:
        configs = [parse_config(c) for c in args.matmul_configs.split(",")]
    rows = []
    if not args.no_matmul:
        rows += run_matmul(torch, sizes, args.dtypes.split(","), configs, args.rep_ms)
    if not args.no_attention:
        rows += run_attention(torch, [64] if args.quick else [64, 128], args.rep_ms)
    info = env_info(torch)
    info["attn_configs"] = {str(d): [list(c) for c in cs] for d, cs in ATTN_CONFIGS.items()}
    if args.sass:
        info["sass"] = sass_report(configs)
    tab = table(rows)
    print(tab)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        stem = os.path.join(args.out, f"matmul-{info['date']}")
        with open(stem + ".json", "w") as f:
            json.dump({"env": info, "rows": rows}, f, indent=1, default=str)
        with open(stem + ".md", "w") as f:
            f.write(f"# Matmul / attention benchmark, {info['date']}\n\n{info['gpu']}, driver {info.get('driver')}, "
                    f"torch {info['torch']}, Triton {info['triton']}, llvmlite {info.get('llvmlite')}; medians of "
                    f"do_bench (L2 flushed), best correct config per implementation.\n\n{tab}\n")
    return rows


if __name__ == "__main__":
    main()
