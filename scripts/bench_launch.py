"""Host cost of one kernel launch (no sync), ours against Triton, torch and the bare driver, interleaved.

GPU launch timings on a shared node drift by tens of percent between minutes, so every variant is measured in
rounds (A B C ... A B C ...) and the median over rounds is reported with the ratio to Triton and torch.add of the
same rounds. Writes DIR/launch-<date>.json and prints a table.

    python3 scripts/bench_launch.py [--out benchmarks] [--rounds 15] [--n 2000]
"""
from __future__ import annotations

import argparse
import ctypes
import datetime
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def per_launch_us(fn, n, sync):
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    t1 = time.perf_counter()
    sync()
    return (t1 - t0) * 1e6 / n


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="benchmarks")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--n", type=int, default=2000, help="launches per variant per round")
    a = ap.parse_args()

    import torch
    import compiler
    from compiler.runtime import DeviceArray, cuda
    from compiler.runtime.cuda import driver
    import workloads.vector_add.kernel as K
    from workloads._common import triton_module

    N = 4096
    x, y = torch.randn(N, device="cuda"), torch.randn(N, device="cuda")
    z = torch.empty_like(x)
    dx, dy, dz = (DeviceArray.from_numpy(np.ones(N, np.float32)) for _ in range(3))
    grid = (compiler.cdiv(N, 1024),)
    ours = K.add_kernel
    tri = triton_module(K).add_kernel
    ours[grid](x, y, z, N, BLOCK=1024)
    tri[grid](x, y, z, N, BLOCK=1024)
    torch.cuda.synchronize()
    kern = next(iter(ours._kernels.values()))
    launcher = kern.launcher
    d = driver()
    fn_handle = launcher.function
    params = (ctypes.c_void_p * 4)()
    storage = [ctypes.c_uint64(x.data_ptr()), ctypes.c_uint64(y.data_ptr()), ctypes.c_uint64(z.data_ptr()),
               ctypes.c_int32(N)]
    for i, st in enumerate(storage):
        params[i] = ctypes.addressof(st)
    paddr = ctypes.addressof(params)

    libcuda = ctypes.CDLL("libcuda.so.1")
    raw = libcuda.cuLaunchKernel
    raw.restype = ctypes.c_int
    raw.argtypes = [ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint,
                    ctypes.c_uint, ctypes.c_uint, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    fptr = int(fn_handle)

    variants = {
        "ours kernel[grid](torch tensors)": lambda: ours[grid](x, y, z, N, BLOCK=1024),
        "ours kernel[grid](DeviceArray)": lambda: ours[grid](dx, dy, dz, N, BLOCK=1024),
        "ours Launcher (resolved args)": lambda: launcher(grid, 0, [x.data_ptr(), y.data_ptr(), z.data_ptr(), N]),
        "triton kernel[grid](torch)": lambda: tri[grid](x, y, z, N, BLOCK=1024),
        "torch.add(x, y, out=z)": lambda: torch.add(x, y, out=z),
        "bare cuda-python cuLaunchKernel": lambda: d.cuLaunchKernel(fn_handle, 4, 1, 1, 128, 1, 1, 0, 0, paddr, 0),
        "bare ctypes cuLaunchKernel": lambda: raw(fptr, 4, 1, 1, 128, 1, 1, 0, None, paddr, None),
    }
    from compiler.runtime import fastlaunch

    c = fastlaunch.get()
    if c is not None:
        variants["bare C cuLaunchKernel (fastlaunch)"] = lambda: c(fptr, 4, 1, 1, 128, 0, 0, paddr)
    sync = torch.cuda.synchronize
    for fn in variants.values():
        for _ in range(200):
            fn()
        sync()
    rounds = {k: [] for k in variants}
    for _ in range(a.rounds):
        for k, fn in variants.items():
            rounds[k].append(per_launch_us(fn, a.n, sync))
    med = {k: float(np.median(v)) for k, v in rounds.items()}
    # ratios per round, then the median ratio (robust to drift between rounds)
    def ratio(k, ref):
        return float(np.median(np.array(rounds[k]) / np.array(rounds[ref])))

    props = cuda.device_properties()
    rows = []
    for k in variants:
        rows.append({"variant": k, "median_us": med[k], "p10_us": float(np.quantile(rounds[k], 0.1)),
                     "p90_us": float(np.quantile(rounds[k], 0.9)),
                     "vs_triton": ratio(k, "triton kernel[grid](torch)"), "vs_torch_add": ratio(k, "torch.add(x, y, out=z)")})
    import triton

    rep = {"date": datetime.date.today().isoformat(), "gpu": props.name, "driver": cuda.driver_version(),
           "torch": torch.__version__, "triton": triton.__version__, "rounds": a.rounds, "n_per_round": a.n,
           "rows": rows}
    os.makedirs(a.out, exist_ok=True)
    path = os.path.join(a.out, f"launch-{rep['date']}.json")
    with open(path, "w") as f:
        json.dump(rep, f, indent=1)
    print(f"host cost of one launch, no sync ({props.name}, {a.rounds} interleaved rounds x {a.n})")
    print(f"{'variant':<36} {'median us':>10} {'p10':>7} {'p90':>7} {'/triton':>8} {'/torch.add':>10}")
    for r in rows:
        print(f"{r['variant']:<36} {r['median_us']:10.2f} {r['p10_us']:7.2f} {r['p90_us']:7.2f} "
              f"{r['vs_triton']:8.2f} {r['vs_torch_add']:10.2f}")
    print("wrote", path)


if __name__ == "__main__":
    main()
