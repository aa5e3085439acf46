"""A farm run on a small fleet on one machine: a CPU-only head, a second CPU-only node and a GPU node (no CPU slots,
so nothing is compiled there), each with its own Ray folder and its own kernel cache folder; `farm run` joins it
from another process as a user would, and the results and the caches are checked afterwards:

- every job ran on the GPU node, was compiled on a CPU node (its compile time measured there), and the GPU node
  compiled and assembled nothing itself (`node_compiles` 0 in every result);
- the GPU node's kernel cache holds exactly the kernels it was sent (each sent once), the CPU nodes' what they built.

    python3 scripts/fleet_session.py --out /tmp/fleet          # on a GPU machine (scripts/gpu_session.sh fleet)
    python3 scripts/fleet_session.py --fake-gpu --out /tmp/f   # anywhere: a declared GPU, validated in the
                                                               # interpreter instead of timed

Writes OUT/fleet.json (per job: status, median, nodes, compile time, node_compiles; per node: resources and cache
entries) and prints a summary; exit code 1 when a check fails.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]

CONFIG = """name: fleet
store: {store}
timing: {{warmup_ms: 10, rep_ms: 30, timeout_s: 300}}
workloads:
  - workload: kernels/scaled_add.py
    params: {{N: {sizes}, dtype: [float32, float16]}}
    meta: {{BLOCK: [256, 1024], num_warps: [4]}}
"""


def cache_keys(path: pathlib.Path) -> list[str]:
    return sorted(p.name for p in path.glob("??/*") if len(p.name) == 64 and (p / "manifest.json").is_file())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--cpus", type=int, default=2, help="CPU slots of each of the two CPU nodes")
    ap.add_argument("--fake-gpu", action="store_true", help="declare a GPU (kind H200) on a machine without one")
    args = ap.parse_args()
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    import ray
    from ray.cluster_utils import Cluster

    root = pathlib.Path(tempfile.mkdtemp(prefix="tf-fleet-", dir="/tmp"))  # short: Ray's socket paths
    env_base = {}
    if args.fake_gpu:
        env_base["FARM_FORCE_NO_GPU"] = "1"  # the declared GPU does not exist: its worker validates only

    def node(name, **kw):
        (root / name).mkdir()
        return dict(temp_dir=str(root / name / "ray"),
                    env_vars={**env_base, "TILEFARM_CACHE_DIR": str(root / name / "cache")}, **kw)

    gpu_res = {"accelerator_type:H200": 1} if args.fake_gpu else {}  # a real GPU: Ray names its kind
    t0 = time.perf_counter()
    cluster = Cluster(initialize_head=True, head_node_args=node("cpu-a", num_cpus=args.cpus, num_gpus=0))
    nodes = {"cpu-a": cluster.head_node, "cpu-b": cluster.add_node(**node("cpu-b", num_cpus=args.cpus, num_gpus=0)),
             "gpu": cluster.add_node(**node("gpu", num_cpus=0, num_gpus=1, resources=gpu_res))}
    up_s = time.perf_counter() - t0
    ray.init(address=cluster.address, log_to_driver=False)
    res = {n["NodeID"]: n["Resources"] for n in ray.nodes() if n["Alive"]}
    ray.shutdown()
    kinds = sorted({k.split(":", 1)[1] for r in res.values() for k in r if k.startswith("accelerator_type:")})
    ids = {name: n.node_id for name, n in nodes.items()}
    print(f"cluster up in {up_s:.1f} s: " + "; ".join(f"{name} {ids[name][:8]} {res.get(ids[name])}" for name in ids))

    work = root / "work"  # the user's folder: a config and its kernel file, sent to the nodes by `farm run`
    (work / "kernels").mkdir(parents=True)
    shutil.copy(ROOT / "configs" / "examples" / "scaled_add.py", work / "kernels" / "scaled_add.py")
    store = root / "fleet.db"
    # (the interpreter, standing in for a GPU that is not there, is slow: small sizes then)
    sizes = [4096, 65536] if args.fake_gpu else [65536, 1048576, 16777216]
    (work / "sweep.yaml").write_text(CONFIG.format(store=store, sizes=sizes))
    env = dict(os.environ)  # the driver sees the declared GPU (only the nodes' workers know it is not there)
    env.pop("FARM_FORCE_NO_GPU", None)
    env["TILEFARM_CACHE_DIR"] = str(root / "driver-cache")  # the driver compiles nothing either; its own folder
    cmd = [sys.executable, "-m", "farm", "run", str(work / "sweep.yaml"), "--address", cluster.address,
           "--insecure-cluster", "--gpu-kind", kinds[0] if kinds else "H200", "--format", "none"]
    print("$ " + " ".join(cmd), flush=True)
    t1 = time.perf_counter()
    run = subprocess.run(cmd, env=env, cwd=str(ROOT), capture_output=True, text=True)
    run_s = time.perf_counter() - t1
    (out / "farm-run.log").write_text(run.stdout + run.stderr)
    print((run.stdout + run.stderr)[-3000:])

    sys.path.insert(0, str(ROOT))
    from farm.store import Store
    st = Store(store, write=False)
    info = st.runs()[0]
    rows = st.rows(info["id"])
    st.close()
    cpu_ids = {ids["cpu-a"], ids["cpu-b"]}
    jobs = []
    for r in rows:
        a = r.get("artifacts") or {}
        jobs.append({"params": r["params"], "meta": r["meta"], "gpu_kind": r.get("gpu_kind"), "status": r["status"],
                     "median_ms": r.get("median_ms"), "compile_s": r.get("compile_s"), "error": r.get("error"),
                     "ran_on": next((k for k, v in ids.items() if v == a.get("node")), a.get("node")),
                     "compiled_on": next((k for k, v in ids.items() if v == a.get("compile_node")), a.get("compile_node")),
                     "node_compiles": a.get("node_compiles"), "node_installed": a.get("node_installed"),
                     "kernel_fetched": a.get("kernel_fetched"), "kernel_key": a.get("kernel_key"),
                     "cubin_shipped": a.get("cubin")})
    keys = {j["kernel_key"] for j in jobs if j["kernel_key"]}
    caches = {name: cache_keys(root / name / "cache") for name in ids}
    good = "validated" if args.fake_gpu else "ok"
    checks = {
        "farm run exit code 0": run.returncode == 0,
        f"every job {good}": bool(jobs) and all(j["status"] == good for j in jobs),
        "every job ran on the GPU node": all(j["ran_on"] == "gpu" for j in jobs),
        "every job compiled on a CPU node": all(j["compiled_on"] in ("cpu-a", "cpu-b") for j in jobs),
        "the GPU node compiled and assembled nothing (node_compiles 0)": all(j["node_compiles"] == 0 for j in jobs),
        "each kernel sent to the GPU node once": sum(bool(j["kernel_fetched"]) for j in jobs) == len(keys),
        "the GPU node's cache holds exactly the kernels it was sent": set(caches["gpu"]) == keys,
        "the CPU nodes' caches hold every kernel": keys <= set(caches["cpu-a"]) | set(caches["cpu-b"]),
        "cubins were assembled on the CPU nodes": all(j["cubin_shipped"] for j in jobs),
    }
    summary = {"when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "fake_gpu": args.fake_gpu,
               "cluster_up_s": round(up_s, 2), "farm_run_s": round(run_s, 2), "target": info["target"],
               "nodes": {name: {"id": ids[name], "resources": res.get(ids[name]), "cache_entries": len(caches[name])}
                         for name in ids},
               "kernels": len(keys), "jobs": jobs, "checks": checks}
    (out / "fleet.json").write_text(json.dumps(summary, indent=1) + "\n")
    cluster.shutdown()
    shutil.rmtree(root, ignore_errors=True)
    for name, ok in checks.items():
        print(f"{'PASS' if ok else 'FAIL'}  {name}")
    print(f"{len(jobs)} jobs, {len(keys)} kernels; farm run {run_s:.1f} s; {out / 'fleet.json'}")
    sys.exit(0 if all(checks.values()) else 1)


if __name__ == "__main__":
    main()
