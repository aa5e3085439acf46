"""Run jobs in this process, one at a time: no start-up cost, easy to debug (pdb works), no fault isolation.

A job that hangs hangs the run and a job that kills its process kills the run: use the Ray executor for
untrusted kernels. Timeouts are not enforced here.
"""
from __future__ import annotations

from farm import worker
from farm.jobs import ERROR, Job, Result, RunOptions


class LocalExecutor:
    """In-process executor (see farm.executor)."""

    name = "local"

    def resources(self) -> dict:
        has_gpu = worker.gpu_available()[0]
        return {"cpus": 1, "gpus": int(has_gpu), "gpu_kind": worker.gpu_kind() if has_gpu else None,
                "gpu_names": [worker.gpu_info()["name"]] if has_gpu else [], "init_s": 0.0, "nodes": 1,
                "gpu_kinds": {worker.gpu_kind(): 1} if has_gpu else {}}

    def run(self, jobs: list[Job], opts: RunOptions, on_event) -> None:
        here = worker.gpu_kind() if worker.gpu_available()[0] else ""
        for job in jobs:
            on_event("start", job, "local")
            if job.gpu_kind and job.gpu_kind != here and opts.target != "interpreter":
                # timed here it would be stored as another kind's timing
                on_event("done", job, Result(key=job.key, status=ERROR, worker="local",
                                             error=f"this job is for GPU kind {job.gpu_kind}; this machine's GPU is "
                                                   f"{here or 'none'}: run it on a cluster that has one"))
                continue
            on_event("done", job, worker.run_job(job, opts))

    def close(self):
        pass
