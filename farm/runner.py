"""The driver side of `farm run`: create or resume a run in the store, execute its jobs, store each result.

Results are written the moment they arrive, so a crash or Ctrl-C loses at most the jobs that were running;
`resume()` picks up the run's planned jobs that have no result yet.
"""
from __future__ import annotations

import dataclasses
import itertools
import time
from dataclasses import dataclass, field

import farm
from farm import FarmError
from farm.compilers import job_version, key_part
from farm.config import Config
from farm.jobs import GOOD, Job, Result, RunOptions
from farm.planner import Stats, iter_jobs, job_key
from farm.store import Store
from farm.loader import load_workload, source_hash
from farm.machine import compiler_version


PLAN_CHUNK = 2000  # jobs recorded per transaction while a plan streams into the store


@dataclass
class Prepared:
    """A run ready to execute: its id, the jobs still to run (a sized iterable: `Store.pending`), how they run."""

    run_id: int
    jobs: "list[Job] | object"
    opts: RunOptions
    n_planned: int
    n_reused: int = 0
    skipped_by_constraint: int = 0
    resumed: bool = False
    rekeyed: int = 0  # resumed jobs whose key changed (their sources were edited): re-planned under the new key


def target_for(cfg: Config, resources: dict) -> str:
    """What the job keys are made for: "compile-only", the GPU kind, or "interpreter" when there is no GPU."""
    if cfg.compile_only:
        return "compile-only"
    if resources.get("gpus") and resources.get("gpu_kind"):
        return resources["gpu_kind"]
    return "interpreter"


def kinds_for(cfg: Config, resources: dict, gpu_kind: str | list | None = None) -> list[str] | None:
    """The GPU kinds a run times each job on (`--gpu-kind`, else the config's `cluster.gpu_kind`): one kind, a
    list (comma-separated on the command line), or `each` (every kind the cluster has now). None where nothing
    is timed (compile-only, no GPU) or the cluster's GPUs carry no kind. Several kinds present and none named is
    a FarmError: their timings would mix in one sweep."""
    if cfg.compile_only or not resources.get("gpus"):
        return None
    want = gpu_kind if gpu_kind is not None else cfg.cluster.gpu_kind
    present = sorted(k for k in (resources.get("gpu_kinds") or {}) if k != "GPU")
    if isinstance(want, str):
        want = [w.strip() for w in want.split(",") if w.strip()]
    if not want:
        if len(present) > 1:
            raise FarmError(f"the cluster has GPUs of {len(present)} kinds ({', '.join(present)}): name the one to "
                            f"time on (--gpu-kind {present[0]}), several (--gpu-kind {','.join(present)}), or "
                            "--gpu-kind each (every job timed on every kind); `cluster.gpu_kind` in the config")
        return present or None
    if want == ["each"]:
        if not present:
            raise FarmError("--gpu-kind each: the cluster's GPUs carry no kind (Ray's accelerator_type resource); "
                            "start its nodes with `ray start --resources '{\"accelerator_type:H200\": 1}'`")
        return present
    if "each" in want:
        raise FarmError(f"--gpu-kind: `each` stands alone, not in a list ({','.join(want)})")
    return list(dict.fromkeys(want))


def options_for(cfg: Config, target: str) -> RunOptions:
    t = cfg.timing
    return RunOptions(target=target, compile_only=cfg.compile_only, warmup_ms=t.warmup_ms, rep_ms=t.rep_ms,
                      flush_l2=t.flush_l2, cuda_graphs=t.cuda_graphs, timeout_s=t.timeout_s, baseline=t.baseline)


def prepare(cfg: Config, config_text: str, config_path: str, store: Store, resources: dict, *,
            force: bool = False, label: str | None = None, max_jobs: int | None = None,
            gpu_kind: str | list | None = None) -> Prepared:
    """Plan the config and record a new run with its plan; jobs the store has already done are reused.

    The plan is streamed into the store in chunks (the jobs are never all in memory: `Prepared.jobs` reads the
    pending ones back lazily), under the status "planning" until the whole plan is in, so a run killed while
    planning is never mistaken for one that can be resumed."""
    target = target_for(cfg, resources)
    kinds = kinds_for(cfg, resources, gpu_kind)
    if kinds:
        target = ",".join(kinds)  # the run's target: its kinds (each job's key has its own)
    opts = options_for(cfg, target)
    stats = Stats()
    jobs = iter_jobs(cfg, target, max_jobs=max_jobs, source=config_path, stats=stats, kinds=kinds)
    run_id = store.create_run(name=cfg.name, label=label or cfg.label, config_text=config_text,
                              config_path=config_path, options=dataclasses.asdict(opts), target=target,
                              gpus=resources.get("gpu_names", []), compiler_version=compiler_version(),
                              farm_version=farm.__version__, status="planning")
    try:
        while chunk := list(itertools.islice(jobs, PLAN_CHUNK)):
            store.add_jobs(run_id, chunk, {} if force else store.done_keys([j.key for j in chunk]))
    except BaseException:  # Ctrl-C or an error while planning: nothing ran, so the half-recorded run goes
        store.delete_run(run_id)
        raise
    store.set_status(run_id, "running")
    info = store.run(run_id)
    return Prepared(run_id, store.pending(run_id), opts, info["n_jobs"], info["n_reused"], stats.skipped)


def resume(store: Store, run_ref: str) -> Prepared:
    """The remaining jobs of an earlier run, with that run's options."""
    run_id = store.resolve(run_ref)
    info = store.run(run_id)
    if info["status"] in ("planning", "abandoned"):
        raise FarmError(f"run {run_id} was stopped while its plan was being recorded, so it cannot be resumed: "
                        f"start it again with `farm run CONFIG` (jobs it finished are reused)")
    if info["status"] == "done" and not len(store.pending(run_id)):
        raise FarmError(f"run {run_id} is complete: nothing to resume (see `farm report {run_id}`)")
    opts = RunOptions(**info["options"])
    changed: dict[str, Job] = {}
    for page in store.pending(run_id).pages():
        changed.update(rekey(page, opts.target)[1])
    if changed:
        store.rekey_jobs(run_id, changed)
    return Prepared(run_id, store.pending(run_id), opts, info["n_jobs"], info["n_reused"], resumed=True,
                    rekeyed=len(changed))


def rekey(jobs: list[Job], target: str) -> tuple[list[Job], dict[str, Job]]:
    """The jobs with their keys computed again from the sources as they are now (a kernel file edited since the
    run was planned gives new keys: its results must not be stored, or later found, under the old source's key).
    Returns the jobs and {old key: re-keyed job} for those that changed."""
    cver = compiler_version()
    out, changed = [], {}
    for job in jobs:
        wl = load_workload(job.workload)  # a file that is gone or broken now: a FarmError naming it
        key = job_key(source_hash(wl), wl.name, job.params, job.meta, key_part(job.compiler, cver),
                      job.gpu_kind or target)
        if key != job.key:  # (a Triton job also when another Triton release is installed now: planned for it)
            new = dataclasses.replace(job, key=key, compiler_version=job_version(job.compiler))
            changed[job.key] = new
            job = new
        out.append(job)
    return out, changed


@dataclass
class Tally:
    """Counts kept while a run executes (the progress display reads them)."""

    total: int
    done: int = 0
    failed: int = 0
    by_status: dict = field(default_factory=dict)
    started: float = field(default_factory=time.monotonic)
    active: dict = field(default_factory=dict)  # worker label -> job now running there
    job_worker: dict = field(default_factory=dict)
    first_start: float | None = None  # when the first job reached a worker (the pool's start-up before it)
    last_done: float | None = None

    def phases(self) -> str:
        """Start-up (until the first job reached a worker) and the steady rate after it: what a sweep's wall
        time is made of, so throughput comparisons can tell fixed costs from per-job ones."""
        if self.first_start is None or self.last_done is None or self.done == 0:
            return ""
        steady = max(self.last_done - self.first_start, 1e-9)
        return f"start-up {self.first_start - self.started:.1f} s, then {self.done / steady:.2f} jobs/s"


def execute(store: Store, prep: Prepared, executor, on_event=None) -> Tally:
    """Run the prepared jobs; store each result as it arrives; mark the run done (or interrupted) at the end."""
    tally = Tally(total=len(prep.jobs))
    store.claim(prep.run_id)  # (a resumed run's first driver is gone: this process is its driver now)

    def handle(kind, job, payload):
        if kind == "notice":  # a message for people (jobs waiting for a node, a job run again): no state
            if on_event:
                on_event(kind, job, payload, tally)
            return
        if kind == "start":
            if tally.first_start is None:
                tally.first_start = time.monotonic()
            tally.active[payload] = job
            tally.job_worker[job.key] = payload
        else:
            res: Result = payload
            store.add_result(prep.run_id, res)
            tally.last_done = time.monotonic()
            tally.done += 1
            tally.failed += res.status not in GOOD
            tally.by_status[res.status] = tally.by_status.get(res.status, 0) + 1
            w = tally.job_worker.pop(job.key, None)
            if w is not None and tally.active.get(w) is job:
                del tally.active[w]
        if on_event:
            on_event(kind, job, payload, tally)

    try:
        executor.run(prep.jobs, prep.opts, handle)
    except BaseException:
        store.finish_run(prep.run_id, "interrupted")
        raise
    store.finish_run(prep.run_id, "done" if not len(store.pending(prep.run_id)) else "incomplete")
    return tally
