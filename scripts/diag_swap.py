#!/usr/bin/env python3
"""Whose code is slower, and is it the code? Corpus kernels' cubins from both compilers launched the same way.

    python3 scripts/diag_swap.py NAME [NAME ...] [--rounds 3] [--out DIR]

bench_corpus times each compiler through its own launch path (`kernel[grid](...)`). Here, per corpus case, the
same inputs are run by several sides, all but the first two launched by one raw launcher (compiler.runtime's
Launcher over a cubin; Triton's two trailing scratch pointers passed as null):

  ours.jit / triton.jit   each compiler's own launch path (as bench_corpus)
  ours.raw / triton.raw   each compiler's cubin through the raw launcher
  triton.ptxas13          Triton's PTX assembled by our ptxas (TILEFARM_PTXAS / find_ptxas)
  ours.ptxas128           our PTX assembled by the ptxas bundled with Triton
  ours.maxntid            our PTX with Triton's entry directives (.maxntid only: no .reqntid, no .minnctapersm)

Every side's output is checked against the float64 reference before it is timed (a side that is wrong is not
timed). Rounds interleave the sides (order reversed every other round), do_bench with the L2 flushed; the ratio
of each side to triton.jit is the median of per-round ratios. If the raw launches keep the jit sides' gap, the
launch path is not the cause; if triton.ptxas13 loses Triton's lead, the assembler is; if ours.maxntid gains,
the entry directives are. Writes OUT/diag_swap.json and prints a table.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for p in (ROOT, os.path.join(ROOT, "scripts")):
    if p not in sys.path:
        sys.path.insert(0, p)

import bench_corpus as B  # noqa: E402

_KIND = {".u64 .ptr": "ptr", ".u64": "int64", ".u32": "int32", ".s32": "int32", ".f32": "float32",
         ".f64": "float64", ".s64": "int64", ".b32": "int32", ".b64": "int64"}


def param_kinds(ptx: str, name: str) -> list:
    """The .entry's parameters as Launcher kinds, in order."""
    m = re.search(r"\.entry\s+" + re.escape(name) + r"\s*\((.*?)\)", ptx, re.S)
    kinds = []
    for decl in m.group(1).split(","):
        t = re.search(r"\.param\s+(\.\w+(?:\s+\.ptr)?)", decl.strip())
        kinds.append(_KIND[re.sub(r"\s+", " ", t.group(1))])
    return kinds


def assemble(ptx: str, exe: str) -> bytes:
    with tempfile.TemporaryDirectory() as d:
        src, out = os.path.join(d, "k.ptx"), os.path.join(d, "k.cubin")
        open(src, "w").write(ptx)
        subprocess.run([exe, "-arch=sm_90a", "-O3", src, "-o", out], check=True, capture_output=True)
        return open(out, "rb").read()


def triton_directives(ptx: str, warps: int) -> str:
    """Our PTX with the entry directives Triton emits: `.maxntid N, 1, 1` only."""
    ptx = re.sub(r"\n\s*\.minnctapersm\s+\d+", "", ptx)
    ptx = re.sub(r"\n\s*\.maxnreg\s+\d+", "", ptx)
    if ".reqntid" in ptx:
        return re.sub(r"\.reqntid\s+[\d, ]+", f".maxntid {32 * warps}, 1, 1", ptx)
    return re.sub(r"(\.entry\s+\w+\s*\(.*?\))", r"\1\n.maxntid " + f"{32 * warps}, 1, 1", ptx, flags=re.S)


def raw_args(a: list, n: int, torch) -> list | None:
    """The launch's arguments as the PTX entry takes them: tensors as addresses, ints equal to 1 dropped (both
    compilers specialize them away); None when the count does not come out at `n`."""
    vals = []
    for x in a:
        if isinstance(x, torch.Tensor):
            vals.append(x.data_ptr())
        elif isinstance(x, bool) or x is None:
            return None
        elif isinstance(x, int) and x == 1:
            continue
        else:
            vals.append(x)
    return vals if len(vals) == n else None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("names", nargs="+")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rep-ms", type=float, default=25.0)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)

    import torch

    from compiler.codegen.ptx import find_ptxas
    from compiler.runtime import do_bench
    from compiler.runtime.launch import Launcher

    names, cases = B.load_both(args.names)
    dev = B.CudaDevice(argparse.Namespace(rep_ms=args.rep_ms, warmup_ms=10.0))
    ours_ptxas, triton_ptxas = find_ptxas(), B.triton_ptxas()
    results = []
    for name in names:
        c_ours, c_tri = cases["tilefarm"].get(name), cases["triton"].get(name)
        if c_ours is None or c_tri is None:
            print(f"{name}: not loaded under both compilers")
            continue
        p, meta = c_ours.params("gpu"), c_ours.meta_for("gpu")
        host = c_ours.make_inputs(p, seed=0)
        dev_in = dev.inputs(host)
        ref = c_ours.expected(p, host)
        specs = c_ours.outputs(p)
        consts, opts = c_ours.split_meta(meta)
        kw = {**consts, **opts}
        warps = int(opts.get("num_warps", 4))
        row = {"name": name, "sides": {}}

        def arrays_for(case):
            outs = dev.outputs(None, case.make_outputs(p))
            return outs, {**dev_in, **outs}

        fns, outs_of = {}, {}
        # the two jit sides
        for side, case in (("ours.jit", c_ours), ("triton.jit", c_tri)):
            outs, arrays = arrays_for(case)
            grid, a = case.launch(p, arrays, meta)
            fns[side] = (lambda k=case.kernel, g=grid, a=a: k[g](*a, **kw))
            outs_of[side] = outs
        # compiled artifacts
        outs, arrays = arrays_for(c_ours)
        grid, a = c_ours.launch(p, arrays, meta)
        ko = c_ours.kernel.warmup(*a, grid=grid, **kw)
        kt = c_tri.kernel.warmup(*a, grid=grid, **kw)
        o_ptx, t_ptx = ko.asm["ptx"], kt.asm["ptx"]
        o_name = re.search(r"\.entry\s+(\w+)", o_ptx).group(1)
        t_name = re.search(r"\.entry\s+(\w+)", t_ptx).group(1)
        o_smem = int(ko.metadata.get("shared_bytes", 0))
        t_smem = int(kt.metadata.shared)
        ok_kinds, tk_kinds = param_kinds(o_ptx, o_name), param_kinds(t_ptx, t_name)
        images = {"ours.raw": (ko.asm["cubin"], o_name, ok_kinds, o_smem, False),
                  "triton.raw": (kt.asm["cubin"], t_name, tk_kinds, t_smem, True),
                  "triton.ptxas13": (assemble(t_ptx, ours_ptxas), t_name, tk_kinds, t_smem, True),
                  "ours.ptxas128": (assemble(o_ptx, triton_ptxas), o_name, ok_kinds, o_smem, False),
                  "ours.maxntid": (assemble(triton_directives(o_ptx, warps), ours_ptxas), o_name, ok_kinds, o_smem,
                                   False)}
        for side, (image, kname, kinds, smem, scratch) in images.items():
            outs, arrays = arrays_for(c_ours)
            grid, a = c_ours.launch(p, arrays, meta)
            n = len(kinds) - (2 if scratch else 0)
            vals = raw_args(a, n, torch)
            if vals is None:
                row["sides"][side] = {"error": f"arguments do not map onto the entry's {len(kinds)} parameters"}
                continue
            if scratch:
                vals += [0, 0]
            lau = Launcher(image, kname, kinds, warps, smem)
            g = grid if isinstance(grid, tuple) else (grid,)
            fns[side] = (lambda lau=lau, g=g, vals=vals: lau(g, None, vals))
            outs_of[side] = outs
        # correctness of every side, then timing
        good = {}
        for side, fn in fns.items():
            try:
                fn()
                dev.sync()
                got = {k: dev.back(side, outs_of[side][k], specs[k][1]) for k in ref}
                ok, msg = B.split_err(c_ours.check(p, got, ref))
            except Exception as e:  # noqa: BLE001
                ok, msg = False, B.short(e)
            row["sides"].setdefault(side, {}).update(ok=ok, check=msg)
            if ok:
                good[side] = fn
        dev.settle(list(good.values()), 100)
        order = list(good)
        samples = {s: [] for s in order}
        for r in range(args.rounds):
            for s in (order if r % 2 == 0 else order[::-1]):
                samples[s].append(do_bench(good[s], warmup_ms=10, rep_ms=args.rep_ms)["median_ms"])
        base = samples.get("triton.jit")
        for s, v in samples.items():
            ent = row["sides"][s]
            ent["rounds_ms"] = v
            ent["ms"] = float(np.median(v))
            if base:
                ent["vs_triton_jit"] = float(np.median([x / y for x, y in zip(v, base)]))
        results.append(row)
        print(f"\n{name}")
        for s, ent in row["sides"].items():
            if "ms" in ent:
                print(f"  {s:16s} {ent['ms'] * 1e3:9.1f} us  / triton.jit {ent.get('vs_triton_jit', float('nan')):.3f}")
            else:
                print(f"  {s:16s} {ent.get('error') or ent.get('check')}")
        dev.release()
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "diag_swap.json"), "w") as f:
            json.dump({"env": B.env_info(), "rounds": args.rounds, "rows": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
