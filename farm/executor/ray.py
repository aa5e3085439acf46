"""Run jobs on Ray (the only farm module that imports ray).

- Compile runs as Ray CPU tasks (`_compile_task`): kernels are built on CPU workers into the compiler's
  content-addressed cache, so GPU workers only load them. A compile-only run is nothing but these tasks.
- Validation and timing run in a pool of actors (`_Worker`): with GPUs one actor per GPU (`num_gpus=1`, a
  warm CUDA context); without GPUs one actor per CPU slot, validating in the interpreter (compile included,
  one round trip per job).
- An idle actor takes the ready job whose inputs it already holds (affinity.py), else one no other actor is on.
- In-flight work is bounded (compile tasks: the CPU slots; actors: one job each, so a job's deadline starts
  when it starts) and results are handled in completion order with `ray.wait`.
- Faults are data: an actor past the job's timeout is killed and replaced (TIMEOUT); an actor or task whose
  process died (segfault, os._exit, node lost) gives WORKER_DIED and the actor is replaced; a result that
  says its CUDA context is poisoned gets its actor replaced too. The sweep goes on.
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
from farm.executor.affinity import input_key, pick, suits
from farm.jobs import COMPILED, ERROR, TIMEOUT, WORKER_DIED, Job, Result, RunOptions

_REPO = str(pathlib.Path(__file__).resolve().parents[2])


@ray.remote(num_cpus=1, max_retries=0)
def _compile_task(job: dict, arch: str | None = None) -> dict:
    # The target arch comes from the executor (a GPU worker's device, or the driver's): a compile process never
    # initializes CUDA itself. On a GPU node dozens of fresh compile processes each calling cuInit at once took
    # ~7 s apiece, which was most of a sweep's start-up.
    if arch:
        os.environ["TILEFARM_ARCH"] = arch
    from farm import worker
    job = Job.from_dict(job)
    try:
        return worker.compile_job(job).to_dict()
    except Exception as e:  # e.g. the workload cannot be loaded on this node
        return Result(key=job.key, status=ERROR, error=f"{type(e).__name__}: {e}", worker=worker.worker_name()).to_dict()


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
                      "triton": triton_version()}  # placement: Triton jobs prefer workers that have it
        if self._info["gpu"]:
            from compiler.compile import default_arch
            self._info["arch"] = default_arch()

    def info(self) -> dict:
        return self._info

    def run(self, job: dict, opts: dict, compiled: dict | None) -> dict:
        return self._worker.run_job(Job.from_dict(job), RunOptions(**opts),
                                    Result.from_dict(compiled) if compiled else None).to_dict()


def _died(job: Job, e: BaseException, where: str) -> Result:
    kind = type(e).__name__
    if isinstance(e, ray.exceptions.RayTaskError):  # the task itself raised (not expected: workers catch)
        return Result(key=job.key, status=ERROR, error=str(e).strip().splitlines()[-1], worker=where)
    return Result(key=job.key, status=WORKER_DIED, worker=where,
                  error=f"the worker process died while running this job ({kind}); it was replaced",
                  detail=str(e)[-2000:])


class RayExecutor:
    """Ray executor (see farm.executor). Joins `address` or starts a local Ray; reuses one already running."""

    name = "ray"

    def __init__(self, address: str | None = None, num_cpus: int | None = None, num_gpus: int | None = None,
                 max_in_flight: int | None = None, insecure: bool = False):
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
                # Workers on other nodes import farm/workloads/compiler from the same path (a shared checkout).
                kwargs["runtime_env"] = {"env_vars": {"PYTHONPATH": _REPO}}
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
        self.max_in_flight = max_in_flight or self.cpus
        self._gpu_names: list[str] | None = None
        # keep_pool: actors survive between run() calls (farm tune runs one call per search round), closed by close()
        self.keep_pool = False
        self._pools: dict = {}
        # the arch compile tasks build for: TILEFARM_ARCH, else the first GPU worker's device (GPU runs) or
        # this process's default (compile-only runs); found once, then passed to every compile task
        self._arch: str | None = os.environ.get("TILEFARM_ARCH") or None

    def resources(self) -> dict:
        res = ray.cluster_resources()
        kinds = sorted(k.split(":", 1)[1] for k in res if k.startswith("accelerator_type:"))
        return {"cpus": self.cpus, "gpus": self.gpus, "gpu_kind": kinds[0] if kinds else ("GPU" if self.gpus else None),
                "gpu_names": kinds, "init_s": self.init_s, "nodes": len([n for n in ray.nodes() if n["Alive"]])}

    def details(self) -> dict:
        """Nodes (as ray.nodes() gives them) and the CPUs/GPUs free right now (the rest is busy or queued)."""
        avail = ray.available_resources()
        return {"nodes": ray.nodes(), "available": {k: avail.get(k, 0) for k in ("CPU", "GPU")}}

    def _compile(self, job: Job):
        """Submit a compile task; big jobs reserve host memory (inputs are built to specialize the kernel)."""
        need = 4 * job.data_bytes  # inputs, outputs and float64 temporaries of make_inputs, roughly
        if need > 256 * 2**20:
            cap = 0.5 * ray.cluster_resources().get("memory", need * 2)
            return _compile_task.options(memory=int(min(need, cap))).remote(job.to_dict(), self._arch)
        return _compile_task.remote(job.to_dict(), self._arch)

    # ------------------------------------------------------------ actors

    def _new_actor(self, use_gpu: bool):
        if use_gpu:
            return _Worker.options(num_gpus=1, num_cpus=0).remote(False)
        return _Worker.options(num_cpus=1).remote(True)

    # ------------------------------------------------------------ run

    def run(self, jobs: list[Job], opts: RunOptions, on_event) -> None:
        if opts.compile_only:
            return self._run_compile_only(jobs, opts, on_event)
        use_gpu = self.gpus > 0 and opts.target != "interpreter"
        self._run_pool(jobs, opts, on_event, use_gpu)

    def _run_compile_only(self, jobs, opts, on_event):
        if self._arch is None:
            from compiler.compile import default_arch
            self._arch = default_arch()
        queue = _Queue(jobs)
        inflight: dict = {}  # ref -> (job, deadline)
        while queue or inflight:
            while queue and len(inflight) < self.max_in_flight:
                job = queue.popleft()
                inflight[self._compile(job)] = (job, time.monotonic() + opts.timeout_s)
                on_event("start", job, "cpu")
            self._drain(inflight, on_event, _next_deadline(inflight), opts.timeout_s)

    def _drain(self, inflight: dict, on_event, timeout: float, limit: float):
        done, _ = ray.wait(list(inflight), num_returns=1, timeout=timeout)
        if done:
            # Take everything that is ready now, not just one, to keep the loop's overhead per job small.
            done, _ = ray.wait(list(inflight), num_returns=len(inflight), timeout=0)
        for ref in done:
            job, _ = inflight.pop(ref)
            try:
                res = Result.from_dict(ray.get(ref))
            except ray.exceptions.RayError as e:
                res = _died(job, e, "cpu task")
            on_event("done", job, res)
        _expire_compiles(inflight, limit, "cpu task", on_event)

    def _run_pool(self, jobs, opts, on_event, use_gpu: bool):
        n = self.gpus if use_gpu else self.cpus
        n = max(1, min(n, len(jobs)))
        if not jobs:
            return
        actors = self._pools.pop(use_gpu, None)
        warming: dict = {}  # info() ref -> slot: actors still starting (imports, CUDA context)
        if actors is None or len(actors) < n:
            for a in actors or []:
                ray.kill(a, no_restart=True)
            # The actors warm up while the first compile tasks run: a slot takes jobs once its process is ready.
            actors = [self._new_actor(use_gpu) for _ in range(n)]
            warming = {a.info.remote(): i for i, a in enumerate(actors)}
        elif use_gpu and self._arch is None:
            self._arch = ray.get(actors[0].info.remote()).get("arch")
        n = len(actors)
        infos: list = [None] * n  # each actor's info() once it is up (None: not known, takes any job)
        label = "gpu" if use_gpu else "cpu"
        idle = collections.deque(i for i in range(n) if i not in warming.values())
        slot_key: list = [None] * n  # the inputs each worker last ran with (kept in its cache): see affinity.py
        ready: collections.deque = collections.deque()  # (job, compiled result dict or None)
        compiling: dict = {}
        running: dict = {}  # ref -> (slot, job, deadline)
        queue = _Queue(jobs)
        opts_d = vars(opts).copy()
        try:
            while queue or compiling or ready or running:
                if use_gpu:  # compile ahead on CPUs while the GPUs work (once the arch is known)
                    while queue and len(compiling) < self.max_in_flight and (self._arch or not warming):
                        job = queue.popleft()
                        compiling[self._compile(job)] = (job, time.monotonic() + opts.timeout_s)
                else:
                    while queue and len(ready) < len(idle):
                        ready.append((queue.popleft(), None))
                for _ in range(len(idle)):
                    if not ready:
                        break
                    slot = idle.popleft()
                    busy = {slot_key[s] for s, _, _ in running.values()}
                    i = pick(ready, slot_key[slot], busy, suits(infos[slot], infos))
                    if i < 0:  # nothing here for this worker (Triton jobs wait for a worker with Triton)
                        idle.append(slot)
                        continue
                    ready.rotate(-i)
                    job, compiled = ready.popleft()
                    ready.rotate(i)
                    slot_key[slot] = input_key(job)
                    ref = actors[slot].run.remote(job.to_dict(), opts_d, compiled)
                    running[ref] = (slot, job, time.monotonic() + opts.timeout_s)
                    on_event("start", job, f"{label}{slot}")
                waiting = list(running) + list(compiling) + list(warming)
                if not waiting:
                    continue
                deadline = min([d for _, _, d in running.values()] + [d for _, d in compiling.values()] +
                               [time.monotonic() + 1.0])
                done, _ = ray.wait(waiting, num_returns=1, timeout=max(0.0, min(deadline - time.monotonic(), 1.0)))
                if done:
                    done, _ = ray.wait(waiting, num_returns=len(waiting), timeout=0)
                for ref in done:
                    if ref in warming:
                        got = ray.get(ref)  # an actor that cannot start fails the run, as a pool start always did
                        infos[warming[ref]] = got
                        idle.append(warming.pop(ref))
                        if use_gpu and self._arch is None:
                            self._arch = got.get("arch")
                        continue
                    if ref in compiling:
                        job, _ = compiling.pop(ref)
                        try:
                            res = ray.get(ref)
                        except ray.exceptions.RayError as e:
                            on_event("done", job, _died(job, e, "compile task"))
                            continue
                        if res["status"] == COMPILED:
                            ready.append((job, res))
                        else:
                            on_event("done", job, Result.from_dict(res))
                        continue
                    slot, job, _ = running.pop(ref)
                    try:
                        res = Result.from_dict(ray.get(ref))
                    except ray.exceptions.RayError as e:
                        res = _died(job, e, f"{label}{slot}")
                        actors[slot] = self._replace(actors[slot], use_gpu)
                    else:
                        if res.replace_worker:
                            actors[slot] = self._replace(actors[slot], use_gpu)
                    idle.append(slot)
                    on_event("done", job, res)
                now = time.monotonic()
                for ref, (slot, job, deadline) in list(running.items()):
                    if now > deadline:
                        del running[ref]
                        actors[slot] = self._replace(actors[slot], use_gpu)
                        idle.append(slot)
                        on_event("done", job, Result(
                            key=job.key, status=TIMEOUT, worker=f"{label}{slot}",
                            error=f"ran past timeout_s={opts.timeout_s:g}; its worker was killed and replaced"))
                _expire_compiles(compiling, opts.timeout_s, "compile task", on_event)
        finally:
            if self.keep_pool and not running:
                self._pools[use_gpu] = actors
            else:
                for a in actors:
                    ray.kill(a, no_restart=True)

    def _replace(self, actor, use_gpu: bool):
        ray.kill(actor, no_restart=True)
        new = self._new_actor(use_gpu)
        ray.get(new.info.remote())
        return new

    def close(self):
        for actors in self._pools.values():
            for a in actors:
                ray.kill(a, no_restart=True)
        self._pools = {}
        if self.started_ray:
            ray.shutdown()
            self.started_ray = False
            if self._session_dir:
                _remove_session(self._session_dir)


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


def _expire_compiles(inflight: dict, limit: float, worker: str, on_event) -> None:
    """Cancel the compile tasks past their deadline (ref -> (job, deadline)); each becomes a TIMEOUT result."""
    now = time.monotonic()
    for ref, (job, deadline) in list(inflight.items()):
        if now > deadline:
            ray.cancel(ref, force=True)
            del inflight[ref]
            on_event("done", job, Result(key=job.key, status=TIMEOUT, worker=worker,
                                         error=f"compile ran past timeout_s={limit:g}"))


def _next_deadline(inflight: dict) -> float:
    if not inflight:
        return 0.0
    return max(0.0, min(min(d for _, d in inflight.values()) - time.monotonic(), 1.0))
