"""Run jobs in this process, one at a time: no start-up cost, easy to debug (pdb works), no fault isolation.

A job that hangs hangs the run and a job that kills its process kills the run: use the Ray executor for
untrusted kernels. Timeouts are not enforced here.
"""
from __future__ import annotations

from farm import worker
from farm.jobs import Job, RunOptions


class LocalExecutor:
    """In-process executor (see farm.executor)."""

    name = "local"

    def resources(self) -> dict:
        has_gpu = worker.gpu_available()[0]
        return {"cpus": 1, "gpus": int(has_gpu), "gpu_kind": worker.gpu_kind() if has_gpu else None,
                "gpu_names": [worker.gpu_info()["name"]] if has_gpu else [], "init_s": 0.0, "nodes": 1}

    def run(self, jobs: list[Job], opts: RunOptions, on_event) -> None:
        for job in jobs:
            on_event("start", job, "local")
            on_event("done", job, worker.run_job(job, opts))

    def close(self):
        pass
