"""A/B timing server for `farm gate`'s re-measurement: one process per source tree, driven over JSON lines.

Run by path (`python farm/ab_server.py`) with the working directory and PYTHONPATH set to the tree whose
`compiler`, `workloads` and `farm` should time the job -- the current checkout, or an extracted copy of
the baseline's commit -- so the baseline's kernel runs with the baseline's compiler. Both sides' servers share
one GPU and take turns (the client alternates them), so neither sees the other's load.

Requests (one JSON object per line on stdin), answers (one per line on stdout):
  {"op": "load", "id": "a", "job": {...job dict...}}                -> {"ok": true}
  {"op": "bench", "id": "a", "rep_ms": 50, "warmup_ms": 5, "flush_l2": true}   -> {"samples": [ms, ...]}
  {"op": "launch", "id": "a"}                                         -> {"median_us": ..., "p10_us": ...}
A bench request carries all three timing fields (the client's farm.timing preset: this server has no timing
defaults of its own). Any failure answers {"error": "..."}. Without a GPU, launches run in the interpreter and
are timed with perf_counter (for tests of the plumbing; such numbers mean nothing for a real kernel).
"""
import json
import os
import sys
import time
import traceback

# The script's own folder (farm/) must not shadow the tree's top-level packages.
if sys.path and os.path.abspath(sys.path[0]) == os.path.dirname(os.path.abspath(__file__)):
    sys.path.pop(0)
sys.path.insert(0, os.getcwd())


def tree_api():
    """What the server needs from the tree's farm: (gpu_available, compiler_version, load_workload, host_arrays,
    input_rng). The current checkout's server also drives trees extracted from commits from before farm.worker
    was split into modules; those have them in farm.worker only (two under their old private names)."""
    try:
        from farm.inputs import host_arrays, input_rng
        from farm.loader import load_workload
        from farm.machine import compiler_version, gpu_available
    except ImportError:
        from farm import worker as W
        return (W.gpu_available, W.compiler_version, W.load_workload, getattr(W, "_host_arrays"),
                getattr(W, "_rng"))
    return gpu_available, compiler_version, load_workload, host_arrays, input_rng


def main():
    from farm.jobs import Job

    gpu_available, compiler_version, load_workload, host_arrays, input_rng = tree_api()
    on_gpu = gpu_available()[0]
    loaded = {}

    def answer(obj):
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()

    answer({"ready": True, "gpu": on_gpu, "compiler": compiler_version()})
    for line in sys.stdin:
        try:
            req = json.loads(line)
            if req["op"] == "load":
                job = Job.from_dict(req["job"])
                comp = getattr(job, "compiler", "tilefarm")
                arr = None
                if comp != "tilefarm":  # the job's own compiler (farm.compilers), set up before it is loaded
                    from farm import compilers
                    compilers.prepare_process(comp, on_gpu)
                    arr = compilers.arrays_for(comp)
                wl = load_workload(job.workload, comp) if arr is not None else load_workload(job.workload)
                params, meta = dict(job.params), dict(job.meta)
                arrays = host_arrays(wl, job, input_rng(job))[0]
                if on_gpu:
                    from compiler.runtime import DeviceArray
                    to_device = arr.to_device if arr is not None else DeviceArray.from_numpy
                    arrays = {k: to_device(v) if hasattr(v, "dtype") and hasattr(v, "shape") else v
                              for k, v in arrays.items()}
                elif arr is not None:
                    arrays = {k: arr.wrap(v) for k, v in arrays.items()}
                fn = (lambda wl=wl, a=arrays, p=params, m=meta: wl.launch(a, p, m))
                fn()
                loaded[req["id"]] = fn
                answer({"ok": True})
            elif req["op"] == "bench":
                missing = [k for k in ("warmup_ms", "rep_ms", "flush_l2") if k not in req]
                if missing:
                    raise ValueError(f"bench request without {', '.join(missing)} (the client sends its timing)")
                fn = loaded[req["id"]]
                if on_gpu:
                    from compiler.runtime import do_bench
                    got = do_bench(fn, warmup_ms=req["warmup_ms"], rep_ms=req["rep_ms"], flush_l2=req["flush_l2"],
                                   return_samples=True)
                    answer({"samples": got["samples"]})
                else:
                    samples, end = [], time.perf_counter() + req["rep_ms"] / 1e3
                    while time.perf_counter() < end or len(samples) < 3:
                        t0 = time.perf_counter()
                        fn()
                        samples.append((time.perf_counter() - t0) * 1e3)
                    answer({"samples": samples})
            elif req["op"] == "launch":  # host cost of one launch, as the farm's worker records it
                fn = loaded[req["id"]]
                if on_gpu:
                    from compiler.runtime import launch_overhead_us
                    answer(launch_overhead_us(fn, n=req.get("n", 500), batch=50))
                else:
                    per = []
                    for _ in range(10):
                        t0 = time.perf_counter()
                        for _ in range(5):
                            fn()
                        per.append((time.perf_counter() - t0) * 1e6 / 5)
                    per.sort()
                    answer({"median_us": per[len(per) // 2]})
            else:
                answer({"error": f"unknown op {req['op']!r}"})
        except Exception as e:
            answer({"error": f"{type(e).__name__}: {e}", "detail": traceback.format_exc()[-2000:]})


if __name__ == "__main__":
    main()
