"""Where does the first call in a fresh process go when the disk cache is warm? Phase by phase, in a child.

    python3 scripts/diag_hit.py [--profile]   (one line per phase, in ms; --profile: where the disk hit's lookup goes)
"""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHILD = r"""
import json, os, sys, time
sys.path.insert(0, %r)
PROFILE = os.environ.get("DIAG_PROFILE") == "1"
import numpy as np
import compiler
from compiler.runtime import DeviceArray, synchronize
from workloads.vector_add.kernel import add_kernel
N = 1 << 20
x = DeviceArray.from_numpy(np.ones(N, np.float32)); y = DeviceArray.from_numpy(np.ones(N, np.float32))
z = DeviceArray.empty(N, np.float32)
synchronize()
T = {}
t = time.perf_counter()
vals, opts = add_kernel._bind((x, y, z, N), {"BLOCK": 1024})
keys, lv, kinds, host = add_kernel._specialize(vals)
from compiler.jit import _CompileOpts
T["bind+specialize"] = time.perf_counter() - t; t = time.perf_counter()
if PROFILE:
    import cProfile, io, pstats
    pr = cProfile.Profile(); pr.enable()
k = add_kernel._compile(vals, keys, kinds, _CompileOpts())
if PROFILE:
    pr.disable(); out = io.StringIO(); pstats.Stats(pr, stream=out).sort_stats("cumulative").print_stats(25)
    print(out.getvalue(), file=sys.stderr)
T["compile_kernel (cache lookup)"] = time.perf_counter() - t; t = time.perf_counter()
from compiler.runtime import fastlaunch
fastlaunch.get()
T["fastlaunch import"] = time.perf_counter() - t; t = time.perf_counter()
if os.environ.get("DIAG_SPLIT") == "1":  # the same steps as k.launcher, timed one by one
    from compiler.runtime.launch import Launcher, Module
    m = Module(k.asm.cached("cubin"))
    T["cuModuleLoadData"] = time.perf_counter() - t; t = time.perf_counter()
    fn = m.get_function(k.metadata["name"])
    T["cuModuleGetFunction"] = time.perf_counter() - t; t = time.perf_counter()
    L = Launcher(fn, [p["type"] for p in k.metadata["params"]], num_warps=k.num_warps, shared_bytes=k.shared)
    T["Launcher"] = time.perf_counter() - t; t = time.perf_counter()
else:
    L = k.launcher
    T["module load + launcher"] = time.perf_counter() - t; t = time.perf_counter()
L((N // 1024,), 0, lv)
T["launch"] = time.perf_counter() - t; t = time.perf_counter()
synchronize()
T["sync"] = time.perf_counter() - t
T["cubin cached"] = k.asm.cached("cubin") is not None
print(json.dumps({a: (b * 1e3 if isinstance(b, float) else b) for a, b in T.items()}))
""" % ROOT


def main():
    profile = "--profile" in sys.argv[1:]
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, TILEFARM_CACHE_DIR=d)
        runs = ["cold"] + ["disk hit"] * 5 + ["disk hit, split"] * 5 + ["disk hit, profiled"] * profile
        for label in runs:
            env["DIAG_PROFILE"] = "1" if label == "disk hit, profiled" else "0"
            env["DIAG_SPLIT"] = "1" if label == "disk hit, split" else "0"
            p = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, env=env)
            line = p.stdout.strip().splitlines()[-1] if p.stdout.strip() else p.stderr[-800:]
            print(f"{label:>15}: {line}")
            if env["DIAG_PROFILE"] == "1":
                print(p.stderr[-6000:])


if __name__ == "__main__":
    main()
