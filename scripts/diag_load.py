"""Does the way a kernel is loaded change its speed? One compiled kernel, three images, timed interleaved.

Images: the PTX given to cuModuleLoadData (driver JIT), the cubin from the driver's linker (cuLink*, what the
launch path caches), and the cubin from ptxas. Also Triton's kernel from the same source, in the same rounds.
Prints a table and writes DIR/load-<date>.json.

    python3 scripts/diag_load.py [--out benchmarks] [--rounds 7]
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="benchmarks")
    ap.add_argument("--rounds", type=int, default=7)
    a = ap.parse_args()
    import torch
    import triton.testing

    from compiler.codegen.ptx import ptx_to_cubin
    from compiler.runtime.launch import Launcher, link_ptx
    from workloads._common import triton_module
    import workloads.softmax.kernel as SK
    import workloads.cross_entropy.kernel as CK  # noqa: F401  (same question, other kernel: kept small here)

    rows = []
    for dtype, M, N, nw in ((torch.bfloat16, 8192, 4096, 4), (torch.float32, 4096, 8192, 8)):
        x = torch.randn(M, N, device="cuda", dtype=dtype)
        y = torch.empty_like(x)
        ours = SK.softmax_kernel
        tri = triton_module(SK).softmax_kernel
        B = triton.next_power_of_2(N)
        ck = ours[(M,)](y, x, x.stride(0), y.stride(0), N, BLOCK_SIZE=B, num_warps=nw)
        ref = torch.softmax(x.float(), dim=-1)
        ptx = ck.asm["ptx"]
        kinds = [p["type"] for p in ck.metadata["params"]]
        images = {"ptx (driver JIT)": ptx, "cubin (cuLink)": link_ptx(ptx), "cubin (ptxas)": ptx_to_cubin(ptx, "sm_90")}
        launchers = {k: Launcher(img, ck.metadata["name"], kinds, ck.num_warps, ck.shared) for k, img in images.items()
                     if img}
        args = [y.data_ptr(), x.data_ptr(), x.stride(0), y.stride(0), N]
        fns = {k: (lambda L=L: L((M,), 0, args)) for k, L in launchers.items()}
        fns["triton"] = lambda: tri[(M,)](y, x, x.stride(0), y.stride(0), N, BLOCK_SIZE=B, num_warps=nw)
        times = {k: [] for k in fns}
        for _ in range(a.rounds):
            for k, fn in fns.items():
                y.fill_(float("nan"))
                fn()
                torch.cuda.synchronize()
                err = (y.float() - ref).abs().max().item()
                assert err < 2e-2, (k, err)
                times[k].append(triton.testing.do_bench(fn, warmup=10, rep=40, return_mode="median"))
        nbytes = 2 * x.numel() * x.element_size()
        for k, ts in times.items():
            ms = float(np.median(ts))
            rows.append({"work": f"softmax {str(dtype).split('.')[-1]} {M}x{N} nw{nw}", "load": k, "median_ms": ms,
                         "gbps": nbytes / ms / 1e6,
                         "vs_triton": float(np.median(np.array(ts) / np.array(times["triton"])))})
    os.makedirs(a.out, exist_ok=True)
    path = os.path.join(a.out, f"load-{datetime.date.today().isoformat()}.json")
    with open(path, "w") as f:
        json.dump(rows, f, indent=1)
    print(f"{'work':<28} {'load':<18} {'ms':>8} {'GB/s':>8} {'time/triton':>12}")
    for r in rows:
        print(f"{r['work']:<28} {r['load']:<18} {r['median_ms']:8.4f} {r['gbps']:8.1f} {r['vs_triton']:12.3f}")


if __name__ == "__main__":
    main()
