"""Run jobs on Ray (the only farm module that imports ray).

- Compile runs as Ray CPU tasks (`_compile_many`), each carrying a batch of jobs (`_Compiles`: sized like the
  actors' batches, by the measured compile time per job, and spread over the cluster's CPU slots). A task streams,
  for each job, the kernel's bundle (farm.artifacts: PTX, the cubin assembled there, metadata) and then the job's
  result, each an object of its own; the driver keeps one bundle ref per kernel key, and a GPU worker fetches it
  only when its node lacks that kernel, installs it and loads it: a GPU node compiles nothing and needs no shared
  disk. A compile-only run is nothing but these tasks.
- Validation and timing run in a pool of actors (`_Worker`): with GPUs one actor per GPU (`num_gpus=1`, a
  warm CUDA context), placed by GPU kind (`accelerator_type`) when the jobs name one; without GPUs one actor per
  CPU slot, validating in the interpreter (compile included).
- An actor call carries a batch of jobs (`_Worker.run_many`, a streaming generator): each job's result comes back
  the moment it is done, so the driver always knows which job of a batch is running (its timeout counts from the
  previous result; a worker that dies is charged with that one job) and the jobs of the batch not yet begun go back
  to the front of the line, untouched, when the actor is lost or replaced. A batch lasts about `BATCH_S` by the
  kind's measured time per job, at most `BATCH_MAX` jobs, and never more than the actor's share of the ready
  jobs: slow jobs (a GPU timing) go one per call, as before; fast ones (interpreter validation) share the call's
  cost, which was most of the driver's time per job.
- `ship(folder)`: the config's folder goes to every node as the tasks' and actors' working folder (runtime_env).
- An idle actor takes the ready job whose inputs it already holds (affinity.py), else one no other actor is on.
  A Triton job goes to an actor on a node that has Triton whenever a live node of its pool has it: the executor
  asks each node once which Triton its processes see (`triton_nodes`; Ray's resources and labels are fixed when a
  node starts, what is installed there is not), and places an actor on such a node when none is there yet. Where
  no node has it, the job is recorded as not runnable, saying so.
- Jobs stream from the store; a bounded window of them is held (compiling, ready, running), so the driver's memory
  does not grow with the sweep; results are handled in completion order with `ray.wait`.
- Faults are data: an actor past the job's timeout is killed and replaced (TIMEOUT); an actor or task whose
  process died (segfault, os._exit) gives WORKER_DIED and the actor is replaced; a result that says its CUDA
  context is poisoned gets its actor replaced too. A node that leaves gives its running jobs back to the line
  (`retries` times, then WORKER_DIED); a node that joins gets actors; jobs that no live node can take wait with a
  notice, then time out (`wait_s`). The sweep goes on.
"""
from __future__ import annotations

import collections
import contextlib
import logging
import os
import pathlib
import time

import ray

from farm import FarmError
from farm.executor.affinity import ASKING, input_key, pick, suits, triton_fits
from farm.jobs import COMPILED, ERROR, NOT_RUNNABLE, TIMEOUT, WORKER_DIED, Job, Result, RunOptions

_REPO = str(pathlib.Path(__file__).resolve().parents[2])


# How long a GPU worker waits for a kernel compiled elsewhere (at most half the job's timeout) before it compiles
# the kernel itself (FARM_KERNEL_WAIT_S in the driver's environment; the driver sends it with every batch).
KERNEL_WAIT_S = float(os.environ.get("FARM_KERNEL_WAIT_S", "60"))


# max_retries: Ray runs a compile again when its process or node was lost (not when it raised: that is a result),
# and rebuilds a kernel bundle that was lost with its node when a GPU worker asks for it (a streaming task is run
# again from its start and its outputs replayed: each job always yields two objects, so the replay matches).
@ray.remote(num_cpus=1, max_retries=2, num_returns="streaming")
def _compile_many(jobs: list, arch: str | None = None):
    """Compile a batch of jobs in order, yielding for each its kernel bundle (None: no kernel to send), then
    (its result, the seconds the job took here): each job's result and bundle are objects of their own, the
    driver reads each job's result as soon as it is done, and it always knows which job of the batch is
    compiling (its timeout counts from the previous result; a process that dies is charged with that one)."""
    # The target arch comes from the executor (a GPU worker's device, or the driver's): a compile process never
    # initializes CUDA itself. On a GPU node dozens of fresh compile processes each calling cuInit at once took
    # ~7 s apiece, which was most of a sweep's start-up.
    if arch:
        os.environ["TILEFARM_ARCH"] = arch
    from farm import worker
    from farm.machine import compiler_version
    node, version = ray.get_runtime_context().get_node_id(), compiler_version()
    for d in jobs:
        t0 = time.perf_counter()
        job = Job.from_dict(d)
        try:
            res, bundle = worker.compile_and_export(job)
        except Exception as e:  # e.g. the workload cannot be loaded on this node
            res, bundle = Result(key=job.key, status=ERROR, error=f"{type(e).__name__}: {e}",
                                 worker=worker.worker_name()), None
        res.artifacts["compile_node"] = node
        res.artifacts["compiler_version"] = version
        yield bundle
        yield res.to_dict(), time.perf_counter() - t0


@ray.remote(num_cpus=0, max_retries=0)
def _triton_here() -> str | None:
    """The Triton version this node's processes see (None: none), for placement (RayExecutor.triton_nodes)."""
    from farm.compilers import triton_version
    return triton_version()


@ray.remote(max_restarts=0, max_task_retries=0)
class _Worker:
    """Holds a warm process (imports, CUDA context, loaded modules) and runs one job at a time."""

    def __init__(self, force_no_gpu: bool):
        if force_no_gpu:
            os.environ["FARM_FORCE_NO_GPU"] = "1"
        from farm import worker
        self._worker = worker
        from farm.compilers import triton_version
        self._info = {"gpu": worker.gpu_info(), "name": worker.worker_name(), "kind": worker.gpu_kind(),
                      "node": ray.get_runtime_context().get_node_id(),
                      "triton": triton_version()}  # placement: Triton jobs prefer workers that have it
        if self._info["gpu"]:
            from compiler.compile import default_arch
            self._info["arch"] = default_arch()

    def info(self) -> dict:
        return self._info

    @ray.method(num_returns="streaming")
    def run_many(self, jobs: list, opts: dict, compiled: list, boxes: list, kernel_wait_s: float = KERNEL_WAIT_S):
        """Run a batch of jobs in order, yielding each one's result as soon as it is done (the driver reads them
        as they come). A result that asks for a fresh worker (a poisoned CUDA context) ends the batch: the jobs
        after it are not run here."""
        for job, comp, box in zip(jobs, compiled, boxes):
            res = self.run(job, opts, comp, box, kernel_wait_s)
            yield res
            if res.get("replace_worker"):
                return

    def run(self, job: dict, opts: dict, compiled: dict | None, box: list | None = None,
            kernel_wait_s: float = KERNEL_WAIT_S) -> dict:
        """Run one job; `box`: [ref of the kernel's bundle], fetched only when this machine lacks the kernel."""
        from farm import artifacts
        bundle, note = None, None
        key = (compiled or {}).get("artifacts", {}).get("kernel_key")
        if box and key and not artifacts.present(key):
            # Bounded: a kernel lost with the node that held it is rebuilt by Ray running its compile task
            # again, which waits for ever where no live node has a CPU for it; compiling here is the way out
            wait = min(kernel_wait_s, 0.5 * float(opts.get("timeout_s") or kernel_wait_s))
            try:
                bundle = ray.get(box[0], timeout=wait)
            except ray.exceptions.GetTimeoutError:
                note = (f"the compiled kernel did not arrive within {wait:g} s (lost with its node, and Ray could "
                        "not rebuild it); compiled on this node")
            except ray.exceptions.RayError as e:  # lost beyond rebuilding: compiled here, and said so
                note = f"the compiled kernel did not arrive ({type(e).__name__}); compiled on this node"
        res = self._worker.run_job(Job.from_dict(job), RunOptions(**opts),
                                   Result.from_dict(compiled) if compiled else None, bundle)
        res.artifacts["node"] = self._info["node"]
        res.artifacts["kernel_fetched"] = bundle is not None
        if note:
            res.notes.append(note)
            res.artifacts["kernel_lost"] = True  # (node_compiles says what this node compiled instead)
        return res.to_dict()


def _died(job: Job, e: BaseException, where: str) -> Result:
    kind = type(e).__name__
    if isinstance(e, ray.exceptions.RayTaskError):  # the task itself raised (not expected: workers catch)
        return Result(key=job.key, status=ERROR, error=str(e).strip().splitlines()[-1], worker=where)
    return Result(key=job.key, status=WORKER_DIED, worker=where,
                  error=f"the worker process died while running this job ({kind}); it was replaced",
                  detail=str(e)[-2000:])


# Excluded from the config folder sent to the nodes: caches, stores, environments and version control.
SHIP_EXCLUDES = [".git", ".hg", ".svn", "__pycache__", "*.pyc", ".venv", "venv", ".tilefarm", "*.db", "*.db-*",
                 ".pytest_cache", ".mypy_cache", ".ruff_cache", "node_modules", ".gpu-node", "site"]
SHIP_MAX_MB = float(os.environ.get("FARM_SHIP_MAX_MB", "100"))


# Batches (see the module's docstring): a batch is sized to last about BATCH_S by the measured time per job of its
# kind, at most BATCH_MAX jobs (FARM_BATCH_MAX=1: one job per actor call).
BATCH_S = float(os.environ.get("FARM_BATCH_S", "0.25"))
BATCH_MAX = max(1, int(os.environ.get("FARM_BATCH_MAX", "32")))
# Compile tasks are batched alike, at most COMPILE_BATCH_MAX jobs per task (FARM_COMPILE_BATCH_MAX, default
# BATCH_MAX; 1: one job per compile task)
COMPILE_BATCH_MAX = max(1, int(os.environ.get("FARM_COMPILE_BATCH_MAX", str(BATCH_MAX))))


class _Batch:
    """Jobs sent to one actor in one call: `jobs` [(job, item)], `i` the one running now (results came for those
    before it), `deadline` its timeout, `since` when it began (as the driver saw it: the previous result)."""

    __slots__ = ("sid", "kind", "jobs", "i", "deadline", "since")

    def __init__(self, sid: int, kind: str, jobs: list, timeout_s: float):
        self.sid, self.kind, self.jobs, self.i = sid, kind, jobs, 0
        self.since = time.monotonic()
        self.deadline = self.since + timeout_s


class _Slot:
    """One pooled actor: the GPU kind it was placed on ("" for any), its node once known, its inputs (affinity)."""

    __slots__ = ("actor", "kind", "node", "inputs", "label", "info")

    def __init__(self, actor, kind: str, label: str):
        self.actor, self.kind, self.node, self.inputs, self.label = actor, kind, None, None, label
        self.info = None  # its info() once it is up (None: not known yet; affinity.suits)


class RayExecutor:
    """Ray executor (see farm.executor). Joins `address` or starts a local Ray; reuses one already running.

    `wait_s`: how long jobs wait for a node with the resources they need (a GPU kind no node has) before they are
    recorded as timed out; a notice says so every `notice_s` meanwhile. `retries`: how often a job whose node was
    lost under it is run again before it is recorded as lost."""

    name = "ray"

    def __init__(self, address: str | None = None, num_cpus: int | None = None, num_gpus: int | None = None,
                 max_in_flight: int | None = None, insecure: bool = False, wait_s: float = 600.0,
                 retries: int = 2, notice_s: float | None = None):
        self.started_ray = False
        self.init_s = 0.0
        self._session_dir: str | None = None
        t0 = time.perf_counter()
        if address and not insecure and not _token_auth():
            raise FarmError(f"refusing to join the Ray cluster at {address} without authentication: "
                            "anyone who can reach it can run code there. Join with a token "
                            "(RAY_AUTH_MODE=token and the cluster's token in RAY_AUTH_TOKEN or "
                            "~/.ray/auth_token), or pass --insecure-cluster if that network is yours")
        if not ray.is_initialized():
            kwargs = dict(include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR)
            if address:
                kwargs["logging_level"] = logging.WARNING  # joining: Ray's warnings (security ones) are shown
                with _loopback(_is_loopback(address)):  # a farm's local Ray: this driver must be 127.0.0.1 too
                    ray.init(address=address, **kwargs)
            else:
                # Local workers inherit this environment: make the checkout importable for them.
                paths = os.environ.get("PYTHONPATH", "")
                if _REPO not in paths.split(os.pathsep):
                    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (_REPO, paths) if p)
                _init_local(num_cpus=num_cpus, num_gpus=num_gpus, **kwargs)
                self._session_dir = _session_dir()
            self.started_ray = True
        self.init_s = time.perf_counter() - t0
        res = ray.cluster_resources()
        self.cpus = int(res.get("CPU", 1))
        # FARM_FORCE_NO_GPU: validate in the interpreter even where the cluster has GPUs (tests, debugging).
        self.gpus = 0 if os.environ.get("FARM_FORCE_NO_GPU") else int(res.get("GPU", 0))
        self._fixed_in_flight = max_in_flight
        self.max_in_flight = max_in_flight or self.cpus
        self.wait_s, self.retries = wait_s, retries
        self.notice_s = notice_s if notice_s is not None else float(os.environ.get("FARM_PROGRESS_S", "30"))
        self._gpu_names: list[str] | None = None
        # keep_pool: actors survive between run() calls (farm tune runs one call per search round), closed by close()
        self.keep_pool = False
        self._pools: dict = {}
        # the arch compile tasks build for: TILEFARM_ARCH, else the first GPU worker's device (GPU runs) or
        # this process's default (compile-only runs); found once, then passed to every compile task
        self._arch: str | None = os.environ.get("TILEFARM_ARCH") or None
        self._arch_of: dict = {}  # GPU kind -> the arch its first worker reported (None: no GPU in that worker)
        self._runtime_env: dict | None = None
        self._shipped: str | None = None  # the local folder the nodes get as their working folder
        # kernel key -> ref of its bundle in the object store: each kernel is sent once however many jobs use it
        self._kernels: collections.OrderedDict = collections.OrderedDict()
        self._nodes_at = 0.0
        self._nodes: list = []
        # actor calls made and the jobs they carried (a call carries a batch), compile tasks and the jobs they
        # carried (a batch too): what a sweep cost in round trips
        self.calls = {"actor_calls": 0, "jobs_sent": 0, "compile_tasks": 0, "jobs_compiled": 0}
        self._triton: dict = {}  # node id -> the Triton version its processes see (None: none), asked once
        self._asking: dict = {}  # ref of a node's _triton_here -> node id

    # ------------------------------------------------------------ what the cluster has

    def resources(self) -> dict:
        res = ray.cluster_resources()
        kinds = sorted(k.split(":", 1)[1] for k in res if k.startswith("accelerator_type:"))
        return {"cpus": self.cpus, "gpus": self.gpus, "gpu_kind": kinds[0] if kinds else ("GPU" if self.gpus else None),
                "gpu_names": kinds, "gpu_kinds": self.gpu_kinds(), "init_s": self.init_s,
                "nodes": len([n for n in ray.nodes() if n["Alive"]])}

    def gpu_kinds(self) -> dict:
        """GPU kind -> GPUs of that kind on the live nodes (a node's kind: its `accelerator_type:KIND` resource)."""
        out: dict = {}
        for n in self._alive(refresh=True):
            r = n.get("Resources", {})
            kinds = [k.split(":", 1)[1] for k in r if k.startswith("accelerator_type:")]
            for k in kinds or (["GPU"] if r.get("GPU") else []):
                out[k] = out.get(k, 0) + int(r.get("GPU", 0))
        return out

    def details(self) -> dict:
        """Nodes (as ray.nodes() gives them) and the CPUs/GPUs free right now (the rest is busy or queued)."""
        avail = ray.available_resources()
        return {"nodes": ray.nodes(), "available": {k: avail.get(k, 0) for k in ("CPU", "GPU")}}

    def _alive(self, refresh: bool = False) -> list:
        """The live nodes, read again from Ray at most every 2 s (or now, with `refresh`)."""
        now = time.monotonic()
        if refresh or now - self._nodes_at > 2.0:
            self._nodes = [n for n in ray.nodes() if n.get("Alive")]
            self._nodes_at = now
            if self._fixed_in_flight is None:  # nodes that joined add compile slots; lost ones take them away
                self.max_in_flight = max(1, int(sum(n.get("Resources", {}).get("CPU", 0) for n in self._nodes)))
        return self._nodes

    def triton_nodes(self, node_ids, wait_s: float = 0.0) -> dict:
        """node id -> the Triton version that node's processes see (None: no Triton; ASKING until it answers):
        each node is asked once (a task pinned to it, no CPU), waiting here at most `wait_s` for the answers."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
        for nid in node_ids:
            if nid not in self._triton and nid not in self._asking.values():
                strategy = NodeAffinitySchedulingStrategy(nid, soft=False)
                self._asking[_triton_here.options(scheduling_strategy=strategy).remote()] = nid
        if self._asking:
            done, _ = ray.wait(list(self._asking), num_returns=len(self._asking), timeout=wait_s)
            for ref in done:
                nid = self._asking.pop(ref)
                try:
                    self._triton[nid] = ray.get(ref)
                except ray.exceptions.RayError:  # the node left while asked
                    self._triton[nid] = None
        return {nid: self._triton.get(nid, ASKING) for nid in node_ids}

    def _capacity(self, kind: str, use_gpu: bool) -> int:
        """How many actors the live nodes can hold for `kind` (GPUs of that kind; CPU slots without GPUs)."""
        total = 0
        for n in self._alive():
            r = n.get("Resources", {})
            if not use_gpu:
                total += int(r.get("CPU", 0))
            elif not kind or f"accelerator_type:{kind}" in r:
                total += int(r.get("GPU", 0))
        return total

    # ------------------------------------------------------------ sending the config's folder

    def ship(self, folder: str) -> None:
        """Send `folder` (the config's: its workload and kernel files) to every node as the working folder of the
        farm's tasks and actors (Ray's runtime_env `working_dir`), so a node needs only the installed package.
        Caches, stores, environments and version control stay behind (SHIP_EXCLUDES); a folder over
        FARM_SHIP_MAX_MB (default 100 MiB) is refused with the largest entries named."""
        folder = str(pathlib.Path(folder).resolve())
        size, big = _folder_size(folder, SHIP_EXCLUDES)
        if size > SHIP_MAX_MB * 2**20:
            raise FarmError(f"the config's folder {folder} holds {size / 2**20:.0f} MiB to send to the cluster's "
                            f"nodes (over FARM_SHIP_MAX_MB={SHIP_MAX_MB:g}); largest: "
                            + ", ".join(f"{p} ({b / 2**20:.1f} MiB)" for p, b in big)
                            + ". Put the config and its kernel files in a folder of their own")
        from ray._private.runtime_env.working_dir import upload_working_dir_if_needed
        node = getattr(ray._private.worker.global_worker, "node", None)
        if node is None:
            raise FarmError("cannot send the config's folder through a Ray Client connection (ray://): join the "
                            "cluster at its GCS address instead (--address HEAD:6379)")
        try:
            env = upload_working_dir_if_needed({"working_dir": folder, "excludes": list(SHIP_EXCLUDES)},
                                               include_gitignore=True, scratch_dir=node.get_runtime_env_dir_path())
        except (ValueError, OSError) as e:
            raise FarmError(f"could not send the config's folder {folder} to the cluster: {e}") from None
        env.pop("excludes", None)
        self._runtime_env, self._shipped = env, folder

    def _job_for_nodes(self, job: Job) -> dict:
        """The job as a node sees it: a workload file inside the shipped folder named relative to it (a task's
        working folder is that folder's copy on its node)."""
        d = job.to_dict()
        if self._shipped:
            path, sep, name = job.workload.partition("::")
            if path.endswith(".py") and os.path.isabs(path):
                try:
                    d["workload"] = str(pathlib.Path(path).relative_to(self._shipped)) + sep + name
                except ValueError:
                    pass  # outside the folder: the node must have it at the same path (a shared disk)
        return d

    # ------------------------------------------------------------ compiling

    def _compile(self, jobs: list[Job], arch: str | None = None):
        """Submit one compile task for a batch of jobs, built for `arch` (default: the executor's); a batch with
        a big job reserves host memory for it (inputs are built to specialize the kernel; the jobs of a batch
        compile one after another, so the biggest one's need is the batch's). Returns the task's stream
        (_compile_many: a bundle, then a result, per job)."""
        opts: dict = {}
        if self._runtime_env:
            opts["runtime_env"] = self._runtime_env
        need = max(4 * job.data_bytes for job in jobs)  # inputs, outputs and float64 temporaries, roughly
        if need > 256 * 2**20:
            cap = 0.5 * ray.cluster_resources().get("memory", need * 2)
            opts["memory"] = int(min(need, cap))
        task = _compile_many.options(**opts) if opts else _compile_many
        self.calls["compile_tasks"] += 1
        self.calls["jobs_compiled"] += len(jobs)
        return task.remote([self._job_for_nodes(job) for job in jobs], arch or self._arch)

    def _kernel_ref(self, key: str | None, ref):
        """The one bundle ref kept per kernel key (later jobs of the same kernel send that one)."""
        if not key:
            return None
        got = self._kernels.get(key)
        if got is None:
            self._kernels[key] = got = ref
            while len(self._kernels) > 4096:  # jobs still holding an evicted ref keep it alive
                self._kernels.popitem(last=False)
        else:
            self._kernels.move_to_end(key)
        return got

    # ------------------------------------------------------------ actors

    def _new_actor(self, use_gpu: bool, kind: str = "", node: str | None = None):
        opts: dict = {"num_gpus": 1, "num_cpus": 0} if use_gpu else {"num_cpus": 1}
        if use_gpu and kind:
            opts["accelerator_type"] = kind
        if node:  # on that node only (a worker for Triton jobs where Triton is: _Pool._place_for_triton)
            from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
            opts["scheduling_strategy"] = NodeAffinitySchedulingStrategy(node, soft=False)
        if self._runtime_env:
            opts["runtime_env"] = self._runtime_env
        return _Worker.options(**opts).remote(not use_gpu)

    # ------------------------------------------------------------ run

    def run(self, jobs: list[Job], opts: RunOptions, on_event) -> None:
        if opts.compile_only:
            return self._run_compile_only(jobs, opts, on_event)
        use_gpu = self.gpus > 0 and opts.target != "interpreter"
        _Pool(self, opts, on_event, use_gpu).run(jobs)

    def _run_compile_only(self, jobs, opts, on_event):
        if self._arch is None:
            from compiler.compile import default_arch
            self._arch = default_arch()
        queue = _Queue(jobs)
        line: collections.deque = collections.deque()  # read ahead of the tasks, to cut batches from
        comp = _Compiles(self, opts.timeout_s, lambda job, res, bref: on_event("done", job, _checked(job, res)),
                         lambda job: on_event("start", job, "cpu"))
        while queue or line or comp.busy():
            while queue and len(line) + comp.n_jobs < 2 * self.max_in_flight * comp.most():
                line.append(queue.popleft())
            comp.launch(line, self._arch)
            comp.wait()
            self._alive()

    def close(self):
        for actors in self._pools.values():
            for a in actors:
                ray.kill(a.actor if isinstance(a, _Slot) else a, no_restart=True)
        self._pools = {}
        self._kernels.clear()
        if self.started_ray:
            ray.shutdown()
            self.started_ray = False
            if self._session_dir:
                _remove_session(self._session_dir)


def _checked(job: Job, res: Result) -> Result:
    """A compile result from a node whose compiler differs from the driver's (another installed version) is an
    error: its kernel is not the one the job's key names."""
    from farm.machine import compiler_version
    theirs = res.artifacts.get("compiler_version")
    if theirs and theirs != compiler_version():
        return Result(key=job.key, status=ERROR, worker=res.worker, compile_s=res.compile_s,
                      error=f"the node that compiled this job runs another compiler ({theirs[:12]}) than the farm "
                            f"that planned it ({compiler_version()[:12]}): install the same tilefarm on every node")
    return res


class _Pool:
    """One `run` of jobs on a pool of actors (see the module's docstring); GPU runs compile ahead on CPU tasks.

    Jobs stream from `jobs` (an iterable read lazily); at most a window of them are held at a time (compiling,
    compiled and waiting for a worker, running), so the driver's memory does not grow with the sweep. Actors are
    kept per GPU kind, as many as the live nodes hold: the pool grows when a node joins and loses the actors of a
    node that leaves, whose running jobs go back to the front of the line (`retries` times)."""

    def __init__(self, ex: RayExecutor, opts: RunOptions, on_event, use_gpu: bool):
        self.ex, self.opts, self.on_event, self.use_gpu = ex, opts, on_event, use_gpu
        self.label = "gpu" if use_gpu else "cpu"
        self.opts_d = vars(opts).copy()
        self.slots: dict[int, _Slot] = {}
        self.next_slot = 0
        self.idle: dict[str, collections.deque] = collections.defaultdict(collections.deque)
        self.warming: dict = {}   # info() ref -> slot id: actors still starting (imports, CUDA context)
        self.ready: dict[str, collections.deque] = collections.defaultdict(collections.deque)  # kind -> (job, item)
        self.parked: dict[str, collections.deque] = collections.defaultdict(collections.deque)  # kind -> jobs
        # compile tasks in flight (GPU runs), each a batch of jobs; their results go to _compiled
        self.compiles = _Compiles(ex, opts.timeout_s, self._compiled)
        self.running: dict = {}    # generator of an actor's batch -> _Batch
        self.n_running = 0         # jobs in those batches without a result yet
        self.job_s: dict[str, float] = {}  # kind -> measured seconds per job (moving average): the batch size
        self.retries: dict[str, int] = {}
        self.again: collections.deque = collections.deque()  # jobs to run again (their node was lost)
        self.waiting: dict[str, float] = {}  # kind -> since when its jobs wait for a node that has it
        self.noticed: dict[str, float] = {}
        self.gone: set[str] = set()          # kinds that waited past wait_s: their jobs time out at once
        self.solo: set[str] = set()  # keys of jobs that run alone, in a call of their own (see _ran)
        self.n_ready = 0  # jobs held in `ready` and `parked`
        self._queue = None  # the jobs not read yet (run)

    def kind_of(self, job: Job) -> str:
        return job.gpu_kind if self.use_gpu else ""

    def window(self) -> int:
        most = max([self._batch_limit(k) for k in self.job_s] or [1])
        return 2 * self.ex.max_in_flight * self.compiles.most() + 2 * max(1, len(self.slots)) * most

    def _batch_limit(self, kind: str) -> int:
        """How many jobs of `kind` one actor call carries, by their measured time per job (1 until one is known)."""
        per = self.job_s.get(kind)
        if per is None:
            return 1
        return max(1, min(BATCH_MAX, int(BATCH_S / max(per, 1e-5))))

    def run(self, jobs) -> None:
        ex = self.ex
        queue = self._queue = _Queue(jobs)
        if not queue:
            return
        old = ex._pools.pop(self.use_gpu, None) or []
        for slot in old:
            self._adopt(slot)
        self._grow()
        try:
            while queue or self.again or self.compiles.busy() or self.n_ready or self.running:
                self._launch()
                self._feed(queue)
                self._dispatch()
                self._wait()
                self._expire()
                self._grow()
                self._starved()
        finally:
            if ex.keep_pool and not self.running:
                ex._pools[self.use_gpu] = [s for s in self.slots.values()]
            else:
                for s in self.slots.values():
                    ray.kill(s.actor, no_restart=True)

    # -- feeding: compile ahead (GPU runs) or take jobs as they are (the actor compiles)

    def _arch(self, kind: str):
        """(known, arch) for compiling `kind`'s jobs: TILEFARM_ARCH, else what the kind's first worker reported."""
        if self.ex._arch:
            return True, self.ex._arch
        if kind in self.ex._arch_of:
            return True, self.ex._arch_of[kind]
        return False, None

    def _feed(self, queue) -> None:
        while (self.again or queue) and self.compiles.n_jobs + self.n_ready + self.n_running < self.window():
            job = self.again.popleft() if self.again else queue.popleft()
            kind = self.kind_of(job)
            if kind in self.gone:
                self._finish(job, self._no_node(job, kind))
                continue
            if not self.use_gpu:
                self._put_ready(kind, job, (None, None, None))
                continue
            # to compile, in batches cut by _launch (once a worker of its kind has said which arch that kind is)
            self.parked[kind].append(job)
            self.n_ready += 1

    def _launch(self) -> None:
        """Compile tasks onto the free CPU slots: batches of the jobs waiting to compile, kind by kind (a batch
        compiles for one arch)."""
        if not self.use_gpu:
            return
        self.compiles.launch(collections.deque(), None)  # the jobs to compile again go first
        for kind, jobs in self.parked.items():
            if self.compiles.free() <= 0:
                return
            known, arch = self._arch(kind)
            if jobs and known:
                # a batch smaller than its measured size goes only at the sweep's end or when the kind's workers
                # are short of compiled jobs: else each job a GPU worker takes would be compiled in a task of its
                # own (where GPU jobs are slow, compiling runs ahead of them and the waiting line stays short)
                low = max(1, sum(1 for sl in self.slots.values() if sl.kind == kind)) * self._batch_limit(kind)
                partial = not (self._queue or self.again) or len(self.ready[kind]) + self.compiles.n_jobs <= low
                self.n_ready -= self.compiles.launch(jobs, arch, partial)

    def _put_ready(self, kind: str, job: Job, item, front: bool = False) -> None:
        (self.ready[kind].appendleft if front else self.ready[kind].append)((job, item))
        self.n_ready += 1

    # -- dispatch: an idle actor of the job's kind takes a ready job (the one whose inputs it holds)

    def _dispatch(self) -> None:
        for kind, ready in self.ready.items():
            idle = self.idle[kind]
            if not ready or not idle:
                continue
            tri = self._triton_nodes(kind) if any(j.compiler == "triton" for j, _ in ready) else {}
            busy = {self.slots[b.sid].inputs for b in self.running.values() if b.sid in self.slots}
            limit = self._batch_limit(kind)
            actors = max(1, sum(1 for s in self.slots.values() if s.kind == kind))
            for _ in range(len(idle)):
                if not ready:
                    break
                sid = idle.popleft()
                slot = self.slots.get(sid)
                if slot is None:
                    continue
                # this actor's share of the ready jobs, so the others (and a node that joins) get theirs
                size = max(1, min(limit, -(-len(ready) // actors)))
                can, own, batch = suits(slot.info, tri), slot.inputs, []
                while ready and len(batch) < size:
                    i = pick(ready, own, busy, can)
                    if i < 0:  # nothing (more) here for this worker (Triton jobs wait for a worker with Triton)
                        break
                    if batch and ready[i][0].key in self.solo:  # it goes alone, in a call of its own
                        break
                    ready.rotate(-i)
                    job, item = ready.popleft()
                    ready.rotate(i)
                    batch.append((job, item))
                    own = input_key(job)
                    if job.key in self.solo:
                        break
                if not batch:
                    idle.append(sid)
                    continue
                self.n_ready -= len(batch)
                slot.inputs = own
                busy.add(own)
                gen = slot.actor.run_many.remote(
                    [self.ex._job_for_nodes(j) for j, _ in batch], self.opts_d, [it[0] for _, it in batch],
                    [[it[2]] if it[2] is not None else None for _, it in batch], KERNEL_WAIT_S)
                self.running[gen] = _Batch(sid, kind, batch, self.opts.timeout_s)
                self.n_running += len(batch)
                self.ex.calls["actor_calls"] += 1
                self.ex.calls["jobs_sent"] += len(batch)
                self.on_event("start", batch[0][0], slot.label)

    # -- results

    def _wait(self) -> None:
        waiting = list(self.running) + list(self.compiles.tasks) + list(self.warming)
        if not waiting:
            time.sleep(0.05)  # nothing in flight: jobs wait for an actor that cannot be placed yet
            return
        deadlines = [b.deadline for b in self.running.values()] + self.compiles.deadlines()
        timeout = min([d - time.monotonic() for d in deadlines] + [1.0])
        # fetch_local=False: a compile task's next object may be a kernel bundle, which only the GPU worker that
        # needs it fetches (a copy on the driver's node would outlive the node that made it, and cost its memory)
        done, _ = ray.wait(waiting, num_returns=1, timeout=max(0.0, timeout), fetch_local=False)
        if done:
            # Take everything that is ready now, not just one, to keep the loop's overhead per job small.
            done, _ = ray.wait(waiting, num_returns=len(waiting), timeout=0, fetch_local=False)
        for ref in done:
            if ref in self.warming:
                self._warmed(ref)
            elif ref in self.compiles.tasks:
                self.compiles.handle(ref)
            elif ref in self.running:
                self._ran(ref)

    def _warmed(self, ref) -> None:
        sid = self.warming.pop(ref)
        slot = self.slots.get(sid)
        try:
            got = ray.get(ref)
        except ray.exceptions.RayError as e:
            if slot is not None and self._node_lost(slot, e):
                self._drop(sid)  # placed on a node that then left: _grow places another where there is room
                return
            raise FarmError(f"a {self.label} worker could not start: {e}") from None
        if slot is None:
            return
        slot.info = got
        slot.node = got.get("node")
        if slot.node:
            slot.label = f"{slot.label}@{slot.node[:8]}"  # which node a job runs on, in progress displays
        gpu = (got.get("gpu") or {}).get("name") or ""
        if slot.kind and gpu and slot.kind.lower() not in gpu.lower().replace(" ", "-"):
            self.on_event("notice", None, f"node {slot.node[:12]} is placed as GPU kind {slot.kind} but its GPU is "
                                          f"{gpu}: its results are stored as {slot.kind} (check the node's "
                                          "accelerator_type resource)")
        self.idle[slot.kind].append(sid)
        if self.use_gpu:
            self.ex._arch_of.setdefault(slot.kind, got.get("arch"))

    def _compiled(self, job: Job, res: Result, bref) -> None:
        """A job's compile result (from _Compiles): ready for a worker of its kind, with its kernel's bundle ref
        (one per kernel key), or that job's result when it did not compile."""
        res = _checked(job, res)
        if res.status != COMPILED:
            self._finish(job, res)
            return
        key = res.artifacts.get("kernel_key")
        kind = self.kind_of(job)
        self._put_ready(kind, job, (res.to_dict(), key, self.ex._kernel_ref(key, bref)))

    def _ran(self, gen) -> None:
        """Take the results a batch has sent so far (ray.wait said the first is there). The batch ends after its
        last result, with its actor's death (charged to the job it was running), or with a result that asks for
        a fresh worker."""
        b = self.running[gen]
        slot = self.slots.get(b.sid)
        where = slot.label if slot else self.label
        first = True
        while True:
            try:
                if not first and not gen.next_ready():
                    if not gen.is_finished():
                        return
                    raise StopIteration
                first = False
                got = ray.get(next(gen))
            except StopIteration:  # all its jobs had results: nothing goes back
                self._end(gen, b.i)
                if b.sid in self.slots:
                    self.idle[b.kind].append(b.sid)
                return
            except ray.exceptions.RayError as e:
                job, item = b.jobs[b.i]
                if slot is not None and self._node_lost(slot, e):
                    self._end(gen, b.i + 1)  # the jobs after the one it was running: back to the line as they were
                    self._drop(b.sid)
                    self._again(job, item, where)
                    return
                self._replace(b.sid)
                if b.i + 1 < len(b.jobs):
                    # The process died with several jobs of its batch unanswered. A result is sent as its job ends,
                    # but a process that dies a moment later (os._exit, a segfault) can take that message with
                    # it, so the first job without a result is not surely the one that killed it: it runs again
                    # alone (a worker that dies under it then is its doing), the others go back as they were.
                    # Each death either names its job or sees one more innocent job through: it ends.
                    self.solo.add(job.key)
                    self._end(gen, b.i)
                    return
                self._end(gen, b.i + 1)
                self._finish(job, _died(job, e, where))
                return
            job, _ = b.jobs[b.i]
            b.i += 1
            self.n_running -= 1
            now = time.monotonic()
            res = Result.from_dict(got)
            took = res.wall_s if res.wall_s is not None else now - b.since  # the worker's own time for the job
            per = self.job_s.get(b.kind)
            self.job_s[b.kind] = took if per is None else 0.5 * (per + took)
            b.since, b.deadline = now, now + self.opts.timeout_s
            if res.status == NOT_RUNNABLE and job.compiler == "triton":
                tri = self._triton_nodes(b.kind)
                if not any(triton_fits(v, job) for v in tri.values()):
                    res.error = (f"{res.error}; none of the {len(tri)} live node(s) that can run it has Triton"
                                 + (f" {job.compiler_version}" if job.compiler_version else ""))
            if res.replace_worker:  # the actor ended the batch after this job
                self._end(gen, b.i)
                self._replace(b.sid)
                self._finish(job, res)
                return
            self._finish(job, res)
            if b.i < len(b.jobs):
                self.on_event("start", b.jobs[b.i][0], where)

    def _end(self, gen, keep: int) -> _Batch:
        """A batch is over: its jobs from index `keep` on, which have no result, go back to the front of their
        line (not counted as retries: they never ran, or, for the one running, the caller decides)."""
        b = self.running.pop(gen)
        self.n_running -= len(b.jobs) - b.i
        for job, item in reversed(b.jobs[keep:]):
            self._put_ready(b.kind, job, item, front=True)
        return b

    def _again(self, job: Job, item, where: str) -> None:
        """A job whose node left under it: to the front of its kind's line, or recorded as lost past `retries`."""
        n = self.retries.get(job.key, 0) + 1
        self.retries[job.key] = n
        if n > self.ex.retries:
            self._finish(job, Result(key=job.key, status=WORKER_DIED, worker=where,
                                     error=f"lost with its node {n} times (retries: {self.ex.retries}); "
                                           "a later run plans it again"))
            return
        self.on_event("notice", job, f"{job.name}: its node left the cluster under it; running it again "
                                     f"({n} of {self.ex.retries})")
        self._put_ready(self.kind_of(job), job, item, front=True)

    def _finish(self, job: Job, res: Result) -> None:
        self.solo.discard(job.key)
        self.retries.pop(job.key, None)
        self.on_event("done", job, res)

    # -- actors: as many per kind as the live nodes hold; a node that joins adds some, one that leaves ends its own

    def _adopt(self, slot) -> None:
        if not isinstance(slot, _Slot):
            return
        sid = self.next_slot
        self.next_slot += 1
        self.slots[sid] = slot
        self.idle[slot.kind].append(sid)

    def _triton_nodes(self, kind: str) -> dict:
        """Triton on the live nodes that can hold a worker of `kind` (RayExecutor.triton_nodes)."""
        def holds(r: dict) -> bool:
            if not self.use_gpu:
                return r.get("CPU", 0) > 0
            return r.get("GPU", 0) > 0 and (not kind or f"accelerator_type:{kind}" in r)
        return self.ex.triton_nodes([n["NodeID"] for n in self.ex._alive() if holds(n.get("Resources", {}))])

    def _place_for_triton(self, kind: str) -> None:
        """Triton jobs wait and no worker of `kind` is on a node that has their Triton: one more worker, there
        (once every worker of the kind has said where it runs, so a worker still starting is not doubled)."""
        jobs = [j for j, _ in self.ready.get(kind, ()) if j.compiler == "triton"]
        mine = [s for s in self.slots.values() if s.kind == kind]
        if not jobs or any(s.info is None and s.node is None for s in mine):
            return
        tri = self._triton_nodes(kind)
        there = [nid for nid, v in tri.items() if any(triton_fits(v, j) for j in jobs)]
        if not there or any(s.node in there for s in mine):
            return
        sid = self.next_slot
        self.next_slot += 1
        slot = self.slots[sid] = _Slot(self.ex._new_actor(self.use_gpu, kind, node=there[0]), kind,
                                       f"{self.label}{sid}" if not kind else f"{kind}:{sid}")
        slot.node = there[0]
        self.warming[slot.actor.info.remote()] = sid

    def _kinds(self) -> set:
        kinds = {k for k, r in self.ready.items() if r} | {k for k, r in self.parked.items() if r}
        kinds |= {b.kind for b in self.running.values()}
        kinds |= {self.kind_of(b.jobs[0]) for b in self.compiles.tasks.values()}
        kinds |= {self.kind_of(jobs[0]) for jobs, _ in self.compiles.redo}
        if not self.use_gpu:
            kinds.add("")
        return kinds - self.gone

    def _grow(self) -> None:
        for kind in self._kinds():
            have = sum(1 for s in self.slots.values() if s.kind == kind)
            want = self.ex._capacity(kind, self.use_gpu)
            if not self.use_gpu:  # one actor per CPU slot, but no more than there are jobs to run
                want = min(want, max(1, self.n_ready + len(self.running) + len(self.again)))
            for _ in range(max(0, want - have)):
                sid = self.next_slot
                self.next_slot += 1
                label = f"{self.label}{sid}" if not kind else f"{kind}:{sid}"
                slot = self.slots[sid] = _Slot(self.ex._new_actor(self.use_gpu, kind), kind, label)
                self.warming[slot.actor.info.remote()] = sid
            self._place_for_triton(kind)

    def _drop(self, sid: int) -> None:
        slot = self.slots.pop(sid, None)
        if slot is not None:
            ray.kill(slot.actor, no_restart=True)
            for ref, s in list(self.warming.items()):
                if s == sid:
                    del self.warming[ref]

    def _replace(self, sid: int) -> None:
        """A worker that died or is suspect goes; _grow starts another (placed by Ray, not waited for here)."""
        self._drop(sid)

    def _node_lost(self, slot: _Slot, err: BaseException) -> bool:
        """Whether the slot's actor died because its node left the cluster (not because its process died under
        a kernel: that is the job's result). Ray may report the actor's death a moment before the node's."""
        if slot.node is None:
            return True  # it never started: its node went before it could
        said = str(err).lower()  # Ray's words when an actor went down with its node
        for _ in range(20 if "its node has died" in said or "node was terminated" in said else 1):
            if slot.node not in {n["NodeID"] for n in self.ex._alive(refresh=True)}:
                return True
            time.sleep(0.25)
        return False

    # -- timeouts, and jobs that no node can take

    def _expire(self) -> None:
        now = time.monotonic()
        for gen, b in list(self.running.items()):
            if now > b.deadline:
                job, _ = b.jobs[b.i]
                self._end(gen, b.i + 1)
                slot = self.slots.get(b.sid)
                self._replace(b.sid)
                self._finish(job, Result(
                    key=job.key, status=TIMEOUT, worker=slot.label if slot else self.label,
                    error=f"ran past timeout_s={self.opts.timeout_s:g}; its worker was killed and replaced"))
        self.compiles.expire()

    def _starved(self) -> None:
        """Jobs of a kind no live node has: a notice every `notice_s`, and after `wait_s` they time out."""
        now = time.monotonic()
        if self.compiles.tasks and now - self.noticed.get("compile", 0.0) >= self.ex.notice_s and not any(
                n.get("Resources", {}).get("CPU") for n in self.ex._alive()):
            self.noticed["compile"] = now
            self.on_event("notice", None, f"{self.compiles.n_jobs} job(s) wait to compile for a node with CPUs: no "
                                          f"live node has one; each times out after timeout_s="
                                          f"{self.opts.timeout_s:g} s")
        for kind in set(self.ready) | set(self.parked):
            ready, parked = self.ready[kind], self.parked[kind]
            n = len(ready) + len(parked)
            if not n or any(s.kind == kind for s in self.slots.values()):
                self.waiting.pop(kind, None)
                continue
            since = self.waiting.setdefault(kind, now)
            what = f"a GPU of kind {kind}" if kind else ("a GPU" if self.use_gpu else "a CPU")
            if now - since >= self.ex.wait_s:
                self.gone.add(kind)
                while ready:
                    self.n_ready -= 1
                    job, _ = ready.popleft()
                    self._finish(job, self._no_node(job, kind))
                while parked:
                    self.n_ready -= 1
                    job = parked.popleft()
                    self._finish(job, self._no_node(job, kind))
                continue
            if now - self.noticed.get(kind, since - self.ex.notice_s) >= self.ex.notice_s:
                self.noticed[kind] = now
                have = ", ".join(f"{k} x{g}" for k, g in sorted(self.ex.gpu_kinds().items())) or "none"
                self.on_event("notice", None,
                              f"{n} job(s) wait for a node with {what}: no live node has one (GPUs now: {have}); "
                              f"waiting up to {self.ex.wait_s:g} s ({now - since:.0f} s so far) for one to join "
                              "(`ray start --address ...` on it)")

    def _no_node(self, job: Job, kind: str) -> Result:
        what = f"GPU kind {kind}" if kind else ("a GPU" if self.use_gpu else "a CPU")
        return Result(key=job.key, status=TIMEOUT, worker="",
                      error=f"no node of the cluster had {what} within wait_s={self.ex.wait_s:g} s "
                            "(a later run plans it again)")


def _init_local(**kwargs) -> None:
    """Start a Ray for this process only, listening on 127.0.0.1 alone, and never joining another one by accident
    (`address="local"` ignores RAY_ADDRESS and clusters started with `ray start`).

    Ray picks the address its servers listen on from the node's IP, which it finds by routing towards the
    network; its loopback-only mode (meant for laptops) is chosen by a module constant read at that moment,
    so it is set for the start only. Checked by tests/farm/test_ray.py: every listening socket is 127.0.0.1.
    """
    with _loopback(True):
        ray.init(address="local", **kwargs)
    token = pathlib.Path.home() / ".ray" / "auth_token"  # Ray writes it world-readable
    try:
        if token.is_file() and token.stat().st_mode & 0o077:
            token.chmod(0o600)
    except OSError:
        pass


@contextlib.contextmanager
def _loopback(on: bool):
    """Ray's loopback-only node address (127.0.0.1) while `on`: for starting a local Ray, and for joining one
    from another process of this machine (a driver whose address differs from its raylet's waits forever)."""
    from ray._private import ray_constants
    saved = ray_constants.ENABLE_RAY_CLUSTER
    if on:
        ray_constants.ENABLE_RAY_CLUSTER = False
    try:
        yield
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = saved


def _is_loopback(address: str) -> bool:
    host = address.split("://")[-1].rsplit(":", 1)[0].strip("[]")
    return host in ("localhost", "::1") or host.startswith("127.")


def _token_auth() -> bool:
    """Whether this process would join a cluster with token authentication (as Ray decides it)."""
    mode = os.environ.get("RAY_AUTH_MODE")
    if mode is not None:
        return mode.lower() == "token"
    return bool(os.environ.get("RAY_AUTH_TOKEN")) or (pathlib.Path.home() / ".ray" / "auth_token").is_file()


def _session_dir() -> str | None:
    try:
        return ray._private.worker._global_node.get_session_dir_path()
    except Exception:  # a Ray without the attribute: the folder stays, as before
        return None


def _remove_session(path: str) -> None:
    """Remove the session folder of a Ray this process started and stopped (logs, sockets, spilled objects);
    Ray keeps every one in /tmp/ray otherwise. The `session_latest` link goes too when it points there."""
    import shutil
    p = pathlib.Path(path)
    if not p.name.startswith("session_"):
        return
    shutil.rmtree(p, ignore_errors=True)
    latest = p.parent / "session_latest"
    try:
        if latest.is_symlink() and pathlib.Path(os.readlink(latest)).name == p.name:
            latest.unlink()
    except OSError:
        pass


class _Queue:
    """The jobs still to submit, taken one at a time from any iterable (a run's jobs are read from the store
    lazily: a million-job run is never all in memory); truthy while one is left."""

    def __init__(self, jobs):
        self._it = iter(jobs)
        self._next = next(self._it, None)

    def __bool__(self) -> bool:
        return self._next is not None

    def popleft(self):
        job, self._next = self._next, next(self._it, None)
        return job


class _CBatch:
    """Jobs compiled by one task (`_compile_many`): `i` the one compiling now (results came for those before it),
    `bref` its bundle's ref once sent, `deadline` its timeout, `since` when it began (as the driver saw it: the
    previous result, or the submission), `arch` what the batch compiles for."""

    __slots__ = ("jobs", "i", "bref", "since", "deadline", "arch")

    def __init__(self, jobs: list, arch, timeout_s: float):
        self.jobs, self.i, self.bref, self.arch = jobs, 0, None, arch
        self.since = time.monotonic()
        self.deadline = self.since + timeout_s


class _Compiles:
    """The compile tasks in flight, each carrying a batch of jobs (see the module's docstring), on the cluster's
    CPU slots (`max_in_flight` tasks at once).

    A batch lasts about BATCH_S by the measured time per job of its workload (compile tasks' own time for a job:
    a cold compile of a specialization takes 50-500 ms, one from the kernel cache ~1 ms), at most
    COMPILE_BATCH_MAX jobs,
    one job per task until a time is known, and never more than a task's share of the jobs waiting, so every CPU
    slot gets work. Each job's result goes to `done(job, result, bundle ref)` as it comes (`start(job)` when its
    compile begins, as the driver sees it). A job past timeout_s (counted from the previous result, so a batch's
    deadline grows with its size) is a TIMEOUT: its task is cancelled and the batch's jobs not begun are compiled
    again. A task whose process died (past Ray's retries) is charged to its job when that was the batch's last,
    else each of the batch's jobs without a result is compiled again in a task of its own (the process may have
    died just after sending a result, so the first job without one is not surely the one that killed it)."""

    def __init__(self, ex: RayExecutor, timeout_s: float, done, start=None):
        self.ex, self.timeout_s, self.done, self.start = ex, timeout_s, done, start
        self.tasks: dict = {}  # stream of a compile task -> _CBatch
        self.n_jobs = 0        # jobs in those batches without a result yet
        self.redo: collections.deque = collections.deque()  # ([jobs], arch) to compile again, each in a task
        self.job_s: dict[str, float] = {}  # workload -> measured seconds per job (moving average)

    def busy(self) -> bool:
        return bool(self.tasks or self.redo)

    def free(self) -> int:
        return self.ex.max_in_flight - len(self.tasks)

    def limit(self, workload: str) -> int:
        per = self.job_s.get(workload)
        if per is None:
            return 1
        return max(1, min(COMPILE_BATCH_MAX, int(BATCH_S / max(per, 1e-5))))

    def most(self) -> int:
        """The largest batch any workload measured so far gets (1 before any is measured)."""
        return max([self.limit(w) for w in self.job_s] or [1])

    def submit(self, jobs: list, arch) -> None:
        gen = self.ex._compile(jobs, arch)
        self.tasks[gen] = _CBatch(jobs, arch, self.timeout_s)
        self.n_jobs += len(jobs)
        if self.start:
            self.start(jobs[0])

    def launch(self, line: collections.deque, arch, partial: bool = True) -> int:
        """Cut batches from the front of `line` (jobs of one arch) onto the free CPU slots (the jobs to compile
        again first); returns how many jobs were taken from `line`. `partial=False`: only full batches (the
        workers have compiled jobs enough meanwhile: more jobs will come to fill one)."""
        while self.redo and self.free() > 0:
            self.submit(*self.redo.popleft())
        taken = 0
        free = self.free()
        share = -(-len(line) // max(1, self.ex.max_in_flight))  # a task's share of the waiting jobs
        while line and free > 0:
            cap = self.limit(line[0].workload)
            if not partial and share < cap:
                break
            batch = []
            while line and len(batch) < min(cap, share):
                batch.append(line.popleft())
                if line and line[0].workload != batch[0].workload:
                    cap = min(cap, self.limit(line[0].workload))
            taken += len(batch)
            self.submit(batch, arch)
            free -= 1
        return taken

    def deadlines(self) -> list:
        return [b.deadline for b in self.tasks.values()]

    def wait(self) -> None:
        """For a compile-only run: wait for the next result or deadline, take what came, expire what is late."""
        if self.tasks:
            timeout = max(0.0, min([d - time.monotonic() for d in self.deadlines()] + [1.0]))
            done, _ = ray.wait(list(self.tasks), num_returns=1, timeout=timeout, fetch_local=False)
            if done:
                done, _ = ray.wait(list(self.tasks), num_returns=len(self.tasks), timeout=0, fetch_local=False)
            for gen in done:
                self.handle(gen)
        self.expire()

    def handle(self, gen) -> None:
        """Take what a task has sent so far (ray.wait said the next object is there)."""
        b = self.tasks[gen]
        first = True
        while True:
            try:
                if not first and not gen.next_ready() and not gen.is_finished():
                    return
                first = False
                ref = next(gen)  # (a finished task: at once, its end or the error that ended it)
                if b.bref is None:  # a job's bundle comes first: kept as a ref (fetched by the GPU worker)
                    b.bref = ref
                    continue
                got, took = ray.get(ref)
            except StopIteration:
                self._end(gen)
                if b.i == len(b.jobs):  # every job had its result
                    return
                # The task ended early: it failed past Ray's retries, and the error took the place of the next
                # object, read as a job's bundle (it is the error, or a bundle whose result never came)
                try:
                    ray.get(b.bref) if b.bref is not None else None
                    e = RuntimeError("its compile task ended without sending this job's result")
                except ray.exceptions.RayError as err:
                    e = err
                self._lost(b, e)
                return
            except ray.exceptions.RayError as e:  # its process or node was lost past Ray's retries
                self._end(gen)
                self._lost(b, e)
                return
            job, bref = b.jobs[b.i], b.bref
            b.i += 1
            b.bref = None
            self.n_jobs -= 1
            now = time.monotonic()
            per = self.job_s.get(job.workload)
            self.job_s[job.workload] = took if per is None else 0.5 * (per + took)
            b.since, b.deadline = now, now + self.timeout_s
            self.done(job, Result.from_dict(got), bref)
            if b.i < len(b.jobs) and self.start:
                self.start(b.jobs[b.i])

    def _lost(self, b: _CBatch, e: BaseException) -> None:
        """A task that died (past Ray's retries) with jobs of its batch unanswered: charged to that job when it was
        the only one, else each is compiled again alone."""
        rest = b.jobs[b.i:]
        if len(rest) == 1:
            self.done(rest[0], _died(rest[0], e, "compile task"), None)
        else:
            self.redo.extend(([job], b.arch) for job in rest)

    def _end(self, gen) -> _CBatch:
        b = self.tasks.pop(gen)
        self.n_jobs -= len(b.jobs) - b.i
        return b

    def expire(self) -> None:
        """Cancel the tasks whose current job is past its deadline: that job is a TIMEOUT, the jobs after it (not
        begun) are compiled again, together."""
        now = time.monotonic()
        for gen, b in list(self.tasks.items()):
            if now > b.deadline:
                ray.cancel(gen, force=True)
                self._end(gen)
                job, rest = b.jobs[b.i], b.jobs[b.i + 1:]
                if rest:
                    self.redo.appendleft((rest, b.arch))
                took = now - b.since
                where = f" (job {b.i + 1} of {len(b.jobs)} in its compile task)" if len(b.jobs) > 1 else ""
                self.done(job, Result(key=job.key, status=TIMEOUT, worker="compile task",
                                      error=f"compile ran past timeout_s={self.timeout_s:g} ({took:.1f} s "
                                            f"without finishing{where}); its compile task was cancelled"), None)


def _folder_size(folder: str, excludes: list[str]) -> tuple[int, list]:
    """Bytes under `folder` without the excluded names (any path component matching a pattern), and the five
    largest top-level entries (name, bytes)."""
    import fnmatch
    top: dict[str, int] = {}
    total = 0
    for root, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if not any(fnmatch.fnmatch(d, x) for x in excludes)]
        for f in files:
            if any(fnmatch.fnmatch(f, x) for x in excludes):
                continue
            try:
                n = os.lstat(os.path.join(root, f)).st_size
            except OSError:
                continue
            total += n
            rel = os.path.relpath(os.path.join(root, f), folder).split(os.sep)[0]
            top[rel] = top.get(rel, 0) + n
    return total, sorted(top.items(), key=lambda kv: -kv[1])[:5]
