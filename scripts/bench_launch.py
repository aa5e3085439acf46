"""Host cost of one kernel launch (no sync), ours against Triton, torch and the bare driver, interleaved.

GPU launch timings on a shared node drift by tens of percent between minutes, so every variant is measured in
rounds (A B C ... A B C ...) and the median over rounds is reported with the ratio to Triton and torch.add of the
same rounds. Writes DIR/launch-<date>.json and prints a table.

    python3 scripts/bench_launch.py [--out benchmarks] [--rounds 15] [--n 2000]

`--fake` needs no GPU, torch or Triton: it builds tests/runtime/fake_libcuda.c (a driver whose cuLaunchKernel
returns at once), re-runs itself on it, and times the Python side of our launch path stage by stage (torch
tensors are stood in for by a minimal class registered as `torch.Tensor`; real torch accessors cost more):

    python3 scripts/bench_launch.py --fake [--rounds 7] [--n 200000]
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
    ap.add_argument("--n", type=int, default=None, help="launches per variant per round (2000; --fake: 200000)")
    ap.add_argument("--fake", action="store_true", help="no GPU: time the Python side under the fake driver")
    a = ap.parse_args()
    if a.fake:
        return fake_main(a)
    a.n = a.n or 2000

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

    entry = getattr(kern, "_tf_entry", None)  # pack + launch in one C call (the jit's per-kernel entry)
    if entry is not None:
        xp, yp, zp = x.data_ptr(), y.data_ptr(), z.data_ptr()
        variants["ours kernel entry (resolved args)"] = lambda: entry(grid, None, xp, yp, zp, N)
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


# ------------------------------------------------------------------------------------------------ --fake
_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _fake_env() -> dict:
    """Build the fake libcuda.so.1 (tests/runtime/fake_libcuda.c) and return the environment that loads it."""
    import shutil
    import subprocess
    import tempfile

    cc = os.environ.get("CC") or shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        raise SystemExit("--fake needs a C compiler to build the fake libcuda")
    d = tempfile.mkdtemp(prefix="tilefarm-fakecuda-")
    subprocess.run([cc, "-shared", "-fPIC", "-O2", "-o", os.path.join(d, "libcuda.so.1"),
                    os.path.join(_REPO, "tests", "runtime", "fake_libcuda.c"), "-ldl", "-lpthread"], check=True)
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = d + os.pathsep + env.get("LD_LIBRARY_PATH", "")
    env["TILEFARM_BENCH_FAKE_DRIVER"] = d
    env.pop("TILEFARM_DEVICE", None)
    return env


def _install_fake_torch():
    """A stand-in `torch` module whose `Tensor` has what the launch path reads: data_ptr(), is_cuda, dtype."""
    import types

    class dtype:
        __slots__ = ("name",)

        def __init__(self, name):
            self.name = name

        def __repr__(self):
            return f"torch.{self.name}"

        __str__ = __repr__

    class Tensor:
        __slots__ = ("_p", "dtype", "is_cuda", "__weakref__")

        def __init__(self, p, dt, is_cuda=True):
            self._p, self.dtype, self.is_cuda = p, dt, is_cuda

        def data_ptr(self):
            return self._p

    Tensor.__module__ = "torch"
    mod = types.ModuleType("torch")
    mod.Tensor, mod.float32, mod.dtype = Tensor, dtype("float32"), dtype
    sys.modules["torch"] = mod
    return mod


def fake_main(a):
    """Per-launch host cost of our launch path, stage by stage, on the fake driver (see the module docstring)."""
    if not os.environ.get("TILEFARM_BENCH_FAKE_DRIVER"):
        import subprocess

        r = subprocess.run([sys.executable, os.path.abspath(__file__), *sys.argv[1:]], env=_fake_env())
        raise SystemExit(r.returncode)
    n = a.n or 200_000
    rounds = a.rounds if a.rounds != 15 else 7
    torch = _install_fake_torch()
    import compiler
    from compiler.runtime import DeviceArray, fastlaunch
    import workloads.vector_add.kernel as K

    N = 4096
    dx, dy, dz = (DeviceArray.from_numpy(np.ones(N, np.float32)) for _ in range(3))
    x, y, z = (torch.Tensor(d.data_ptr(), torch.float32) for d in (dx, dy, dz))
    grid = (compiler.cdiv(N, 1024),)
    ours = K.add_kernel
    ours[grid](x, y, z, N, BLOCK=1024)
    ours[grid](dx, dy, dz, N, BLOCK=1024)
    kern = next(k for k in ours._kernels.values())
    launcher = kern.launcher
    fast = ours._fast
    c = fastlaunch.get()
    buf = (ctypes.c_uint64 * 4)(x.data_ptr(), y.data_ptr(), z.data_ptr(), N)
    params = (ctypes.c_void_p * 4)(*[ctypes.addressof(buf) + 8 * i for i in range(4)])
    paddr, fptr = ctypes.addressof(params), int(launcher.function)
    ptrs = [x.data_ptr(), y.data_ptr(), z.data_ptr(), N]

    variants = {}
    if c is not None:
        variants["bare C cuLaunchKernel, prepacked"] = lambda: c(fptr, 4, 1, 1, 128, 0, 0, paddr)
    variants["Launcher(grid, 0, [ints])"] = lambda: launcher(grid, 0, ptrs)
    entry = getattr(kern, "_tf_entry", None)
    if entry is not None:
        variants["kernel entry(grid, None, *ints)"] = lambda: entry(grid, None, *ptrs)
    variants["kernel.launch(grid, None, [ints])"] = lambda: kern.launch(grid, None, ptrs)
    variants["jit launcher(grid, DeviceArray...)"] = lambda: fast(grid, dx, dy, dz, N, BLOCK=1024)
    variants["jit launcher(grid, tensors...)"] = lambda: fast(grid, x, y, z, N, BLOCK=1024)
    variants["kernel[grid](DeviceArray)"] = lambda: ours[grid](dx, dy, dz, N, BLOCK=1024)
    variants["kernel[grid](torch tensors)"] = lambda: ours[grid](x, y, z, N, BLOCK=1024)
    variants["lambda: None (loop + call floor)"] = lambda: None
    for fn in variants.values():
        for _ in range(1000):
            fn()
    per = {k: [] for k in variants}
    pc = time.perf_counter
    for _ in range(rounds):
        for k, fn in variants.items():
            t0 = pc()
            for _ in range(n):
                fn()
            per[k].append((pc() - t0) * 1e6 / n)
    print(f"fake driver: Python-side host cost per launch, {rounds} rounds x {n} calls, median us "
          f"(C launcher: {'yes' if c is not None else 'no: ' + str(fastlaunch._state.get('error'))})")
    floor = float(np.median(per["lambda: None (loop + call floor)"]))
    print(f"{'variant':<40} {'median us':>10} {'min':>7} {'- floor':>8}")
    for k, v in per.items():
        print(f"{k:<40} {np.median(v):10.3f} {min(v):7.3f} {np.median(v) - floor:8.3f}")


if __name__ == "__main__":
    main()
