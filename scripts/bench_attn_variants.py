"""Attention forward timed under several sets of code-generation switches, side by side with Triton.

    python3 scripts/bench_attn_variants.py --variants ",mbar_ring,reduce_tree" --configs 64:128x64-w8-s3 \
        --rounds 10 --out DIR

Each variant ("" is the default code) is a JIT function of its own, compiled with TILEFARM_EXPERIMENTS set to it;
every (config, variant) and Triton's same config are timed in interleaved rounds (the order rotating each round),
and the table gives medians and each variant's ratio to the default round by round. Outputs are checked against
torch's float32 attention: a wrong variant is timed and marked WRONG (a probe that drops work on purpose shows what
that work costs). Needs a GPU, torch and Triton; writes attn-variants-<date>.{json,md} under --out.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def parse_config(text):
    """'64:128x64-w8-s3' -> (64, 128, 64, 8, 3): head dim, BLOCK_M, BLOCK_N, num_warps, num_stages."""
    try:
        d, rest = text.split(":")
        blocks, w, s = rest.split("-")
        bm, bn = (int(x) for x in blocks.split("x"))
        assert w[0] == "w" and s[0] == "s"
        return int(d), bm, bn, int(w[1:]), int(s[1:])
    except (ValueError, AssertionError, IndexError):
        raise SystemExit(f"--configs: {text!r} is not D:BMxBN-wW-sS (e.g. 64:128x64-w8-s3)") from None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--variants", default=",mbar_ring", help="comma-separated switch sets; '+' joins switches "
                    "within one set (e.g. ',mbar_ring,mbar_ring+reduce_tree'); the empty set is the default code; "
                    "the token 'ptxas:triton' assembles that variant with Triton's bundled ptxas")
    ap.add_argument("--configs", default="64:128x64-w8-s3,64:128x64-w4-s3,128:128x64-w8-s3")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--rep-ms", type=float, default=50.0)
    ap.add_argument("--BH", type=int, default=32)
    ap.add_argument("--L", type=int, default=4096)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    variants = [v.replace("+", ",") for v in args.variants.split(",")]
    if "" not in variants:
        variants.insert(0, "")
    configs = [parse_config(c) for c in args.configs.split(",")]

    import torch
    import triton
    from triton.testing import do_bench

    import compiler
    from workloads._common import triton_module
    from workloads.attention import kernel as AK

    base = AK.attention_fwd_kernel
    impls = {f"ours[{v or 'default'}]": (compiler.jit(base.fn), v) for v in variants}
    impls["triton"] = (triton_module(AK).attention_fwd_kernel, None)
    BH, L = args.BH, args.L
    rows = []
    for D, BM, BN, nw, ns in configs:
        g = torch.Generator(device="cuda").manual_seed(D)
        q, k, v = (torch.randn((BH, L, D), device="cuda", generator=g).to(torch.float16) for _ in range(3))
        scale = 1.0 / D ** 0.5
        ref = torch.nn.functional.scaled_dot_product_attention(q.float()[None], k.float()[None], v.float()[None],
                                                               scale=scale)[0]
        flops = 4.0 * BH * L * L * D
        cfg = f"D={D} {BM}x{BN} w{nw} s{ns}"
        fns, errs = {}, {}
        for name, (kern, switches) in impls.items():
            o = torch.full((BH, L, D), float("nan"), device="cuda", dtype=torch.float16)

            def fn(kern=kern, o=o):
                kern[(L // BM, BH)](q, k, v, o, scale, L, L * D, D, HEAD_DIM=D, BLOCK_M=BM, BLOCK_N=BN,
                                    num_warps=nw, num_stages=ns)
            env = {}
            if switches is not None:
                tokens = [t for t in switches.split(",") if t]
                env["TILEFARM_EXPERIMENTS"] = ",".join(t for t in tokens if t != "ptxas:triton")
                if "ptxas:triton" in tokens:
                    env["TILEFARM_PTXAS"] = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia",
                                                         "bin", "ptxas")
            old = {k: os.environ.get(k) for k in env}
            os.environ.update(env)
            try:
                fn()  # compiles with the variant's switches (and assembler)
                torch.cuda.synchronize()
            finally:
                for name_, val in old.items():
                    if val is None:
                        os.environ.pop(name_, None)
                    else:
                        os.environ[name_] = val
            err = ((o.float() - ref).abs().max() / ref.abs().max()).item()
            errs[name] = err if err == err else float("inf")  # NaN (a poisoned element left) counts as wrong
            fns[name] = fn
        names = list(fns)
        samples = {n: [] for n in names}
        for r in range(args.rounds):
            for n in names[r % len(names):] + names[:r % len(names)]:
                samples[n].append(flops / do_bench(fns[n], rep=args.rep_ms) / 1e9)
        d0 = samples["ours[default]"]
        row = {"config": cfg, "D": D, "BM": BM, "BN": BN, "num_warps": nw, "num_stages": ns, "impls": {}}
        for n in names:
            ratios = sorted(x / y for x, y in zip(samples[n], d0))
            row["impls"][n] = {"tflops": statistics.median(samples[n]), "rounds": samples[n], "rel_err": errs[n],
                               "ok": errs[n] < 1e-2, "vs_default": statistics.median(ratios),
                               "vs_default_min_max": [ratios[0], ratios[-1]]}
            print(f"{cfg} {n:36s} {row['impls'][n]['tflops']:7.1f} TFLOP/s  vs default "
                  f"{row['impls'][n]['vs_default']:.3f} [{ratios[0]:.3f}, {ratios[-1]:.3f}]  err {errs[n]:.1e}"
                  f"{'' if errs[n] < 1e-2 else ' WRONG'}", flush=True)
        rows.append(row)
    dev = torch.cuda.get_device_name()
    lines = [f"# Attention variants, {datetime.date.today()}", "",
             f"{dev}, torch {torch.__version__}, Triton {triton.__version__}; BH {BH}, L {L}, fp16; medians of "
             f"{args.rounds} interleaved rounds (do_bench, {args.rep_ms:g} ms each); ratios to the default code "
             "round by round: median [min, max].", "",
             "| config | implementation | TFLOP/s | vs default | rel. error |", "|---|---|---|---|---|"]
    for row in rows:
        for n, ent in row["impls"].items():
            lo, hi = ent["vs_default_min_max"]
            lines.append(f"| {row['config']} | {n} | {ent['tflops']:.1f} | {ent['vs_default']:.3f} [{lo:.3f}, "
                         f"{hi:.3f}] | {ent['rel_err']:.1e}{'' if ent['ok'] else ' WRONG'} |")
    md = "\n".join(lines) + "\n"
    print(md)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        stem = os.path.join(args.out, f"attn-variants-{datetime.date.today()}")
        with open(stem + ".json", "w") as f:
            json.dump({"device": dev, "torch": torch.__version__, "triton": triton.__version__, "rows": rows}, f,
                      indent=1)
        with open(stem + ".md", "w") as f:
            f.write(md)
    return rows


if __name__ == "__main__":
    main()
