"""The driver of `farm run` at scale: a sweep of N jobs (default 100,000) planned into a fresh store and run, with
the driver's own cost per job and its memory (resident set, sampled every 0.1 s) measured.

Two executors, so the driver's part can be told from Ray's:
- `noop`: a stand-in executor that answers every job at once with a result (no worker, no Ray): what is left is
  the driver alone, i.e. planning (expanding, keying, recording the plan in SQLite), reading the pending jobs back
  page by page, the runner's bookkeeping and storing every result. This is the figure for "overhead per job at
  100,000 jobs".
- `ray`: the real Ray executor (interpreter validation on CPU actors, no GPU) on the same sweep, `--ray-jobs` of
  it (default 5,000; several sizes comma-separated): the driver's loop with real round trips to the workers; its
  wall time per job includes the workers' (a job here validates 8 numbers), so it is an upper bound on the
  driver's part. Jobs go to the actors in batches (farm.executor.ray); `--compare-unbatched N` measures the
  N-job sweep again with FARM_BATCH_MAX=1 (one actor call per job, as before batching), right after.
- `ray-gpu`: the real Ray executor on its GPU path, `--gpu-jobs` of it (several sizes comma-separated; 0: skip),
  with the GPUs STUBBED: a local Ray declaring `--gpu-stubs` GPUs (default 2) beside 2 CPUs, started with
  FARM_FORCE_NO_GPU=1 in its environment so that its workers (the "GPU" actors too) validate in the interpreter,
  while the driver drops it and so takes the GPU path: compile tasks ahead on the CPU slots (the NOOP workload
  declares no warmup: a compile is next to nothing), each job's result and kernel bundle through the object store,
  validation on one actor per declared GPU (num_gpus=1). On a machine with a real GPU it is stubbed alike (the
  driver's cost is what is measured, not the GPU's). A stubbed GPU job validates in ~1 ms, so actor calls carry
  batches; a real GPU job is timed for ~0.1-1 s and goes one per call: `--compare-unbatched` on a `ray-gpu` size
  measures it again with FARM_BATCH_MAX=1 and FARM_COMPILE_BATCH_MAX=32 (one actor call per job, compile tasks
  still batched), the driver's cost where GPU jobs are long.

    python3 scripts/bench_driver_scale.py --jobs 100000 --json benchmarks/driver-scale.json
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import sys
import tempfile
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
if str(ROOT) not in os.environ.get("PYTHONPATH", "").split(os.pathsep):
    sys.path.insert(0, str(ROOT))

NOOP_WORKLOAD = '''"""A job whose run costs next to nothing: copy 8 numbers (the driver's cost is what is measured)."""
import numpy as np

from workloads.base import OutputSpec, Workload


def launch(arrays, params, meta):
    arrays["out"][:] = arrays["x"]


WORKLOAD = Workload(
    name="noop", description="out = x, 8 elements", kernel=launch,
    make_inputs=lambda p, rng: {"x": (rng.standard_normal(8) + 3).astype(np.float32)},
    output_specs=lambda p: [OutputSpec("out", (8,), "float32")], launch=launch,
    reference=lambda inputs, p: {"out": inputs["x"].astype(np.float64)},
    flops=lambda p: 0.0, bytes=lambda p: 64.0)
'''


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


class Sampler:
    """The resident set every `every` seconds, in a thread: its peak, and the value at named moments."""

    def __init__(self, every=0.1):
        self.peak, self.marks, self._stop = rss_mb(), {}, threading.Event()
        self._t = threading.Thread(target=self._run, args=(every,), daemon=True)
        self._t.start()

    def _run(self, every):
        while not self._stop.wait(every):
            self.peak = max(self.peak, rss_mb())

    def mark(self, name):
        self.marks[name] = round(rss_mb(), 1)

    def stop(self):
        self._stop.set()
        self._t.join()
        self.peak = max(self.peak, rss_mb())


class NoopExecutor:
    """Answers every job at once (VALIDATED): no worker runs anything. Only for measuring the driver."""

    name = "noop"

    def resources(self):
        return {"cpus": 1, "gpus": 0, "gpu_kind": None, "gpu_names": [], "init_s": 0.0, "nodes": 1}

    def run(self, jobs, opts, on_event):
        from farm.jobs import VALIDATED, Result
        for job in jobs:
            on_event("start", job, "noop")
            on_event("done", job, Result(key=job.key, status=VALIDATED, worker="noop"))

    def close(self):
        pass


def config_text(n: int, store: str) -> str:
    metas = 10 if n >= 10 else 1
    points = -(-n // metas)
    return (f"name: driver-scale\nstore: {store}\ncluster: {{num_cpus: 2}}\nworkloads:\n  - workload: noop.py\n"
            f"    params: {{i: {list(range(points))}, dtype: [float32]}}\n    meta: {{m: {list(range(metas))}}}\n")


def measure(n: int, executor_name: str, folder: pathlib.Path, marks_every: int) -> dict:
    from farm import config, runner
    from farm.store import Store
    store_path = folder / f"{executor_name}-{n}.db"
    cfg_path = folder / f"{executor_name}-{n}.yaml"
    for old in folder.glob(store_path.name + "*"):  # a fresh store: nothing reused from an earlier measurement
        old.unlink()
    cfg_path.write_text(config_text(n, str(store_path)))
    cfg, text = config.load(cfg_path)
    sampler = Sampler()
    sampler.mark("start")
    if executor_name == "noop":
        ex = NoopExecutor()
    elif executor_name == "ray-gpu":
        import logging

        from farm.executor import ray as ray_executor
        # the workers import this checkout (the executor sets this when it starts Ray itself), and inherit
        # FARM_FORCE_NO_GPU=1: the stubbed "GPU" actors validate in the interpreter
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
        os.environ["FARM_FORCE_NO_GPU"] = "1"
        stubs = int(os.environ.get("BENCH_GPU_STUBS", "2"))
        ray_executor._init_local(num_cpus=2, num_gpus=stubs, include_dashboard=False, log_to_driver=False,
                                 logging_level=logging.ERROR)
        del os.environ["FARM_FORCE_NO_GPU"]  # the driver sees the declared GPUs: the GPU path
        ex = ray_executor.RayExecutor()
        assert ex.gpus == stubs, (ex.gpus, stubs)
    else:
        from farm.executor import ray as ray_executor
        ex = ray_executor.RayExecutor(num_cpus=2)
    st = Store(store_path)
    t0, c0 = time.perf_counter(), time.process_time()
    prep = runner.prepare(cfg, text, str(cfg_path), st, ex.resources())
    t_plan, c_plan = time.perf_counter() - t0, time.process_time() - c0
    sampler.mark("planned")
    total = len(prep.jobs)
    done = {"n": 0}
    slices = []  # wall ms per job over each tenth of the run: flat when nothing grows with the jobs done
    t1, c1 = time.perf_counter(), time.process_time()
    last = [t1]

    def on_event(kind, job, payload, tally):
        if kind == "done":
            done["n"] += 1
            if done["n"] % marks_every == 0:
                sampler.mark(f"done_{done['n']}")
                now = time.perf_counter()
                slices.append(round(1e3 * (now - last[0]) / marks_every, 4))
                last[0] = now

    tally = runner.execute(st, prep, ex, on_event)
    t_run, c_run = time.perf_counter() - t1, time.process_time() - c1
    sampler.mark("finished")
    calls = dict(getattr(ex, "calls", {}))
    if executor_name == "ray-gpu":
        calls.setdefault("compile_tasks", None)  # (an executor that does not count them: one task per job)
        calls["gpus_stubbed"] = ex.gpus
        calls["gpu_path"] = True
    ex.close()
    rows = st.sql("SELECT COUNT(*), COUNT(DISTINCT key) FROM results WHERE run_id=:r", r=prep.run_id)[0]
    statuses = {s: c for s, c in st.sql("SELECT status, COUNT(*) FROM results WHERE run_id=:r GROUP BY status",
                                        r=prep.run_id)}
    st.close()
    sampler.stop()
    assert tally.done == total == rows[0] == rows[1] == n, (tally.done, total, rows, n)
    return {"executor": executor_name, "jobs": n, "plan_s": round(t_plan, 3), "run_s": round(t_run, 3),
            "plan_ms_per_job": round(1e3 * t_plan / n, 4), "run_ms_per_job": round(1e3 * t_run / n, 4),
            "total_ms_per_job": round(1e3 * (t_plan + t_run) / n, 4),
            # the driver process's CPU time (all its threads, Ray's included): what it costs whatever else runs
            "driver_cpu_ms_per_job": round(1e3 * (c_plan + c_run) / n, 4),
            "run_ms_per_job_by_tenth": slices,
            "statuses": statuses,  # every job validated (a compile or worker failure would show here)
            "rss_mb": sampler.marks, "rss_peak_mb": round(sampler.peak, 1),
            **({"batch_max": ray_executor.BATCH_MAX, **calls} if executor_name.startswith("ray") else {}),
            **({"compile_batch_max": getattr(ray_executor, "COMPILE_BATCH_MAX", None)}
               if executor_name == "ray-gpu" else {}),
            "store_mb": round(store_path.stat().st_size / 2**20, 1),
            "loadavg_1_5_min": [round(x, 1) for x in os.getloadavg()[:2]]}  # a shared machine: what else ran


def _code_version() -> str:
    """The commit of the checkout measured (and whether it had changes)."""
    import subprocess
    try:
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True).stdout.strip()
        return head + ("+changes" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=int, default=100_000)
    ap.add_argument("--small", type=int, default=10_000, help="a smaller sweep, to show memory does not grow with N")
    ap.add_argument("--ray-jobs", default="5000", help="jobs through the real Ray executor, comma-separated sizes "
                                                       "(0: skip)")
    ap.add_argument("--gpu-jobs", default="0", help="jobs through the Ray executor's GPU path, GPUs stubbed "
                                                    "(comma-separated sizes; 0: skip)")
    ap.add_argument("--gpu-stubs", type=int, default=2, help="GPUs the local Ray declares for --gpu-jobs")
    ap.add_argument("--compare-unbatched", default="",
                    help="Ray sizes (comma-separated, or `all`) measured again with one actor call per job "
                         "(FARM_BATCH_MAX=1; on the GPU path compile tasks stay batched)")
    ap.add_argument("--json", help="write the figures here")
    ap.add_argument("--one", nargs=3, metavar=("N", "EXECUTOR", "FOLDER"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    os.environ.setdefault("FARM_FORCE_NO_GPU", "1")
    ray_sizes = [int(x) for x in str(args.ray_jobs).split(",") if int(x)]
    gpu_sizes = [int(x) for x in str(args.gpu_jobs).split(",") if int(x)]
    os.environ.setdefault("FARM_MAX_JOBS", str(max(args.jobs, args.small, *ray_sizes, *gpu_sizes) + 1))
    os.environ["BENCH_GPU_STUBS"] = str(args.gpu_stubs)
    if args.one:  # one measurement, in a process of its own (so each one's memory starts from the same place)
        n, name, folder = int(args.one[0]), args.one[1], pathlib.Path(args.one[2])
        print(json.dumps(measure(n, name, folder, max(1, n // 10))))
        return
    import subprocess
    out = {"host": platform.node(), "cpus": os.cpu_count(), "python": platform.python_version(),
           "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "code": _code_version(), "runs": []}
    if gpu_sizes:
        out["gpu_path"] = (f"STUBBED: {args.gpu_stubs} GPU(s) declared to a local Ray, its workers validating in "
                           "the interpreter (FARM_FORCE_NO_GPU=1 in theirs, not in the driver's environment)")
    with tempfile.TemporaryDirectory(prefix="driver-scale-") as tmp:
        folder = pathlib.Path(tmp)
        (folder / "noop.py").write_text(NOOP_WORKLOAD)
        todo = [(n, "noop", {}) for n in (args.small, args.jobs) if n]
        for n in ray_sizes:
            todo.append((n, "ray", {}))
            if args.compare_unbatched == "all" or str(n) in args.compare_unbatched.split(","):
                todo.append((n, "ray", {"FARM_BATCH_MAX": "1"}))
        for n in gpu_sizes:
            todo.append((n, "ray-gpu", {}))
            if args.compare_unbatched == "all" or str(n) in args.compare_unbatched.split(","):
                todo.append((n, "ray-gpu", {"FARM_BATCH_MAX": "1", "FARM_COMPILE_BATCH_MAX": "32"}))
        for n, name, env in todo:
            got = subprocess.run([sys.executable, __file__, "--one", str(n), name, str(folder)], check=True,
                                 capture_output=True, text=True, env={**os.environ, **env})
            r = json.loads(got.stdout.strip().splitlines()[-1])
            out["runs"].append(r)
            if name == "ray":
                name = f"ray (batch <= {r['batch_max']}, {r['actor_calls']} actor calls)"
            elif name == "ray-gpu":
                name = (f"ray-gpu, GPUs STUBBED (batch <= {r['batch_max']}, {r['actor_calls']} actor calls; "
                        f"{r['compile_tasks'] if r['compile_tasks'] is not None else n} compile tasks)")
            print(f"{name:5} {n:>7,} jobs: plan {r['plan_ms_per_job']:.3f} ms/job, run {r['run_ms_per_job']:.3f} "
                  f"ms/job, total {r['total_ms_per_job']:.3f} ms/job (driver CPU {r['driver_cpu_ms_per_job']:.3f}); RSS peak {r['rss_peak_mb']} MiB "
                  f"(after planning {r['rss_mb']['planned']}, at the end {r['rss_mb']['finished']})", flush=True)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
