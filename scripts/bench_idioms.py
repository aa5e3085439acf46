#!/usr/bin/env python3
"""Matmul idioms on the GPU, ours vs Triton from the same source, in one process (a quick A/B for compiler
changes; the idiom corpus's side-by-side run is the full picture).

    python3 scripts/bench_idioms.py [--out DIR] [--rounds 3] [--size 4096]

Kernels: tests/dot/epilogue_kernels.py (ReLU against a shared 0.0, bias, bias+SiLU, tl.where, no epilogue;
acc += tl.dot; masks on M/N/K with offsets recomputed per iteration), fp16, 128x128x64 w8 s3. Each output is
checked against a float64 reference before timing (a wrong kernel is never timed as a win); timing is
triton.testing.do_bench's median (L2 flushed), in interleaved rounds; the table gives ours/Triton time per
round (median, min, max). Writes DIR/idioms-<date>.json.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:  # PYTHONPATH=<other tree>:$PWD then times that tree's compiler (an A/B)
    sys.path.insert(0, ROOT)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=".")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--size", type=int, default=4096)
    args = ap.parse_args()
    import torch
    import triton
    import triton.testing

    from tests.dot import epilogue_kernels as E
    from workloads._common import triton_module

    T = triton_module(E)
    M = N = K = args.size
    torch.manual_seed(0)
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16)
    bias = torch.randn(N, device="cuda", dtype=torch.float32)
    ref = a.double() @ b.double()
    cases = {}
    for act in ("none", "relu", "bias", "bias_silu", "where"):
        r = ref
        if act == "relu":
            r = ref.clamp_min(0)
        elif act in ("bias", "bias_silu"):
            r = ref + bias.double()[None, :]
            if act == "bias_silu":
                r = r * torch.sigmoid(r)
        elif act == "where":
            r = torch.where(ref > 0, ref, 0.1 * ref)
        cases[f"mm_{act}"] = ("mm_act_kernel", True, dict(ACT=act), r, torch.float16)
    cases["mm_plus_eq"] = ("mm_plus_eq_kernel", False, {}, ref, torch.float32)
    cases["mm_mask_all"] = ("mm_mask_all_kernel", False, {}, ref, torch.float32)
    grid = (triton.cdiv(M, 128), triton.cdiv(N, 128))
    meta = dict(BM=128, BN=128, BK=64, num_warps=8, num_stages=3)
    rows = {}
    fns = {}
    for name, (kname, has_bias, extra, r, odt) in cases.items():
        c = torch.full((M, N), float("nan"), device="cuda", dtype=odt)
        pre = [a, b, c] + ([bias] if has_bias else [])
        scal = [M, N, K, K, 1, N, 1, N, 1]
        row = rows[name] = {}
        for impl, mod in (("ours", E), ("triton", T)):
            k = getattr(mod, kname)

            def fn(k=k, pre=pre, scal=scal, extra=extra):
                k[grid](*pre, *scal, **meta, **extra)
            try:
                c.fill_(float("nan"))
                fn()
                torch.cuda.synchronize()
                err = ((c.double() - r).abs().max() / r.abs().max()).item()
                ok = err < 1e-2 and not torch.isnan(c).any().item()
                row[impl] = {"err": err, "ok": ok, "ms": []}
                if ok:
                    fns[(name, impl)] = fn
            except Exception as e:  # recorded, never aborts the run
                row[impl] = {"ok": False, "error": f"{type(e).__name__}: {e}"[:400], "ms": []}
    for _ in range(args.rounds):
        for (name, impl), fn in fns.items():
            rows[name][impl]["ms"].append(triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median"))
    flops = 2 * M * N * K
    print(f"| kernel ({M}^3 fp16 128x128x64 w8 s3) | ours TFLOP/s | Triton TFLOP/s | ours/Triton time, median [min, max] |")
    print("|---|---|---|---|")
    for name, row in rows.items():
        o, t = row["ours"], row["triton"]
        if o["ms"] and t["ms"]:
            rat = [x / y for x, y in zip(o["ms"], t["ms"])]
            row["ratio"] = statistics.median(rat)
            print(f"| {name} | {flops / statistics.median(o['ms']) / 1e9:.0f} | "
                  f"{flops / statistics.median(t['ms']) / 1e9:.0f} | {row['ratio']:.3f} [{min(rat):.3f}, {max(rat):.3f}] |")
        else:
            print(f"| {name} | {o.get('error') or o.get('err')} | {t.get('error') or t.get('err')} | - |")
    info = {"date": datetime.date.today().isoformat(), "gpu": torch.cuda.get_device_name(),
            "triton": triton.__version__, "torch": torch.__version__, "size": M, "rows": rows}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, f"idioms-{info['date']}.json"), "w") as f:
        json.dump(info, f, indent=1)


if __name__ == "__main__":
    main()
