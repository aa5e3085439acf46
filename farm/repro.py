"""`farm repro ROW`: everything needed to look at and rerun one stored result, in one folder.

The folder holds the kernel's source files, a one-job config (`job.yaml`: that workload at that one
params/meta point, the run's seed and timing), the stored result (`result.json`), the stage artifacts
(`tile`, `llir`, `ptx`, and `cubin` where ptxas is present) compiled again from this checkout, and a README
with the one command that reruns it. When this checkout's kernel source or compiler differ from the run's
(the job's content key does not match), the artifacts are this checkout's and the README says so.
"""
from __future__ import annotations

import json
import pathlib
import shutil
from dataclasses import dataclass

import yaml

from farm import FarmError

STAGE_FILES = {"tile": "kernel.tile", "llir": "kernel.ll", "ptx": "kernel.ptx", "cubin": "kernel.cubin"}


@dataclass
class Repro:
    """What `write` produced: the folder, the rerun command, and notes (e.g. code differs from the run's)."""

    folder: pathlib.Path
    command: str
    files: list
    notes: list


def find(store, ref: str) -> dict:
    """The stored row for `ref`: a result id ("42") or RUN:KEY (run id/label/latest, key or a unique prefix)."""
    ref = str(ref).strip()
    if ref.isdigit():
        run_id, key = store.locate(int(ref))
    elif ":" in ref:
        run_ref, _, key = ref.partition(":")
        run_id = store.resolve(run_ref)
    else:
        raise FarmError(f"row {ref!r}: give a result id (e.g. 42) or RUN:KEY (e.g. 7:3fa9c1)")
    rows = [r for r in store.rows(run_id, samples=True) if r["key"].startswith(key)]
    if not rows:
        raise FarmError(f"run {run_id} has no job with key {key!r} (see `farm report {run_id} --format json`)")
    if len(rows) > 1:
        raise FarmError(f"key prefix {key!r} matches {len(rows)} jobs of run {run_id}: give more of it")
    row = rows[0]
    row["plan_run_id"] = run_id
    return row


def one_job_config(row: dict, run: dict) -> dict:
    """A `farm run` config for exactly this job, with the run's seed and timing."""
    job = row["job"]
    opts = run.get("options") or {}
    timing = {k: opts[k] for k in ("warmup_ms", "rep_ms", "flush_l2", "cuda_graphs", "timeout_s", "baseline")
              if k in opts}
    return {"name": f"repro-{row['workload']}", "seed": job.get("seed", 0), "timing": timing,
            "compilers": [job.get("compiler") or "tilefarm"],
            "workloads": [{"workload": job["workload"],
                           "params": {k: [v] for k, v in job["params"].items()},
                           "meta": {k: [v] for k, v in job["meta"].items()}}]}


def write(store, ref: str, out: str | pathlib.Path | None = None) -> Repro:
    """Write the reproducer folder for `ref` (default ./repro-<result id or key prefix>) and return it."""
    from farm.planner import job_key
    from farm.inputs import host_arrays, input_rng
    from farm.loader import load_workload, source_files, source_hash
    from farm.machine import compiler_version
    from farm.jobs import Job
    row = find(store, ref)
    run = store.run(row["plan_run_id"])
    name = row.get("result_id") or row["key"][:12]
    folder = pathlib.Path(out or f"repro-{name}").resolve()
    folder.mkdir(parents=True, exist_ok=True)
    files, notes = [], []

    def put(rel: str, data):
        p = folder / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data) if isinstance(data, bytes) else p.write_text(data)
        files.append(rel)

    job = row["job"]
    wl = load_workload(job["workload"])
    # Kernel source: the workload file and the kernel's file, as they are in this checkout.
    for src in (f for f in source_files(wl) if pathlib.Path(f).is_file()):
        shutil.copyfile(src, folder / f"src_{pathlib.Path(src).parent.name}_{pathlib.Path(src).name}")
        files.append(f"src_{pathlib.Path(src).parent.name}_{pathlib.Path(src).name}")
    cfg = one_job_config(row, run)
    put("job.yaml", "# One job of run {} (result {}), as `farm repro` wrote it.\n".format(row["plan_run_id"], name)
        + yaml.safe_dump(cfg, sort_keys=False))
    put("seed.txt", f"{job.get('seed', 0)}\n")
    result = {k: v for k, v in row.items() if k not in ("detail",)}
    result["run"] = {k: v for k, v in run.items() if k != "config_text"}
    put("result.json", json.dumps(result, indent=2, default=str))
    if run.get("config_text"):
        put("run_config.yaml", run["config_text"])
    # Is this checkout the code the run measured?
    from farm.compilers import key_part
    comp = job.get("compiler") or "tilefarm"
    here = job_key(source_hash(wl), wl.name, job["params"], job["meta"], key_part(comp, compiler_version()),
                   run["target"])
    if here != row["key"]:
        notes.append(f"this checkout's kernel source or compiler differ from run {row['plan_run_id']}'s "
                     f"(commit {run.get('git_commit') or 'unknown'}): the artifacts and the rerun use this checkout")
    # Stage artifacts: compile again (tilefarm's stages; Triton compiles on the GPU the rerun uses).
    try:
        if comp != "tilefarm":
            raise RuntimeError(f"a {comp} job: its stages come from {comp} on the GPU (the rerun compiles it)")
        j = Job.from_dict(job)
        arrays = host_arrays(wl, j, input_rng(j))[0]
        compiled = wl.compile(arrays, dict(job["params"]), dict(job["meta"]))
        asm = getattr(compiled, "asm", None) or {}
        for stage, fname in STAGE_FILES.items():
            try:
                data = asm[stage]
            except KeyError:
                continue
            except Exception as e:  # e.g. no ptxas for the cubin
                notes.append(f"no {stage}: {type(e).__name__}: {e}")
                continue
            if data:
                put(f"stages/{fname}", data if isinstance(data, (str, bytes)) else str(data))
        if compiled is None:
            notes.append("the workload declares no warmup: no stage artifacts")
    except Exception as e:
        notes.append(f"compiling again failed: {type(e).__name__}: {e}")
    command = f"farm run {folder / 'job.yaml'} --force --local --store {folder / 'farm.db'}"
    put("README.md", _readme(row, run, command, notes))
    return Repro(folder, command, files, notes)


def _readme(row, run, command, notes) -> str:
    lines = [f"# Reproducer: {row['workload']} {json.dumps(row['params'])} {json.dumps(row['meta'])}", "",
             f"- run {row['plan_run_id']} ({run.get('name')}, label {run.get('label') or '-'}, target "
             f"{run.get('target')}, commit {run.get('git_commit') or 'unknown'}, compiler "
             f"{run.get('compiler_version')})",
             f"- status {row['status']}, median {row.get('median_ms')} ms (p10 {row.get('p10_ms')}, "
             f"p90 {row.get('p90_ms')}), seed {row['job'].get('seed', 0)}, key {row['key']}", "",
             "Rerun it (on a GPU it is validated and timed; without one, validated in the interpreter):", "",
             "```", command, "```", ""]
    if row.get("git_commit") or run.get("git_commit"):
        lines += [f"The run's code: `git checkout {(run.get('git_commit') or '').removesuffix('-dirty')}`"
                  + (" (its tree had uncommitted changes)" if (run.get("git_commit") or "").endswith("-dirty")
                     else ""), ""]
    lines += [f"- {n}" for n in notes]
    return "\n".join(lines) + "\n"
