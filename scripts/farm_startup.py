"""What a farm run's start-up is made of, on this machine: Ray's start, a CPU task's first round trip, GPU actors
coming up (imports, CUDA context, device query), and a burst of compile tasks as `farm run` submits them.

    python3 scripts/farm_startup.py [--num-cpus N] [--json PATH]

Prints one line per phase (seconds from the start of this script) and writes them as JSON.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
T0 = time.perf_counter()
marks: dict = {}


def mark(name: str, **extra) -> None:
    marks[name] = {"t_s": round(time.perf_counter() - T0, 4), **extra}
    print(f"{marks[name]['t_s']:8.3f} s  {name}" + (f"  {extra}" if extra else ""), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--num-cpus", type=int, default=None)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    sys.path.insert(0, str(ROOT))
    import logging
    import ray
    mark("import ray")
    ray.init(num_cpus=args.num_cpus, include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR)
    res = ray.cluster_resources()
    mark("ray.init", cpus=res.get("CPU"), gpus=res.get("GPU"))

    @ray.remote(num_cpus=1)
    def probe_task():
        t = time.perf_counter()
        import farm.worker  # noqa: F401
        a = time.perf_counter() - t
        import compiler.compile  # noqa: F401
        return {"pid": os.getpid(), "import_farm_worker_s": a, "import_compile_s": time.perf_counter() - t - a}

    @ray.remote(num_gpus=1, num_cpus=0)
    class Probe:
        def __init__(self):
            t = time.perf_counter()
            from farm import worker
            self.t = {"import_s": time.perf_counter() - t}
            t = time.perf_counter()
            from compiler.runtime.cuda import gpu_available
            ok = gpu_available()[0]
            self.t["gpu_available_s"] = time.perf_counter() - t
            t = time.perf_counter()
            worker.gpu_info()
            self.t["gpu_info_s"] = time.perf_counter() - t
            self.t["gpu"] = ok

        def info(self):
            return self.t

    n_gpu = int(res.get("GPU", 0))
    actors = [Probe.remote() for _ in range(n_gpu)]
    refs = [a.info.remote() for a in actors]
    first = probe_task.remote()
    out = ray.get(first)
    mark("first CPU task back", **{k: round(v, 4) if isinstance(v, float) else v for k, v in out.items()})
    pending = list(refs)
    while pending:
        done, pending = ray.wait(pending, num_returns=1)
        mark("GPU actor ready", **{k: round(v, 4) if isinstance(v, float) else v for k, v in ray.get(done[0]).items()})
    burst = [probe_task.remote() for _ in range(int(res.get("CPU", 1)))]
    pending = list(burst)
    done, pending = ray.wait(pending, num_returns=1)
    mark("burst: first of %d CPU tasks back" % len(burst))
    ray.get(burst)
    mark("burst: all back", pids=len({r["pid"] for r in ray.get(burst)}))
    for a in actors:
        ray.kill(a)
    ray.shutdown()
    mark("ray.shutdown")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(marks, indent=1))


if __name__ == "__main__":
    main()
