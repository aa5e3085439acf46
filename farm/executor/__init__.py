"""Executors run planned jobs and report each result as it completes.

Both executors have the same shape:
- `resources()` -> {"cpus", "gpus", "gpu_kind", "gpu_names"}: what the run can use (the plan's target
  depends on it);
- `run(jobs, opts, on_event)`: runs every job once, calling `on_event("start", job, worker)` and
  `on_event("done", job, result)` from the driver thread, in completion order; never raises for a job's
  failure (failures are results);
- `close()`.
`local.LocalExecutor` runs in this process, one job at a time (for tests, debugging, `--local`);
`ray.RayExecutor` runs on Ray (the only module that imports ray).
"""
from __future__ import annotations


def make_executor(cluster, local: bool = False, address: str | None = None, insecure: bool = False):
    """The executor a config's `cluster` section (and the CLI's --local/--address/--insecure-cluster) asks for."""
    if local or (cluster.executor == "local" and not address):
        from farm.executor.local import LocalExecutor
        return LocalExecutor()
    from farm.executor.ray import RayExecutor
    return RayExecutor(address=address or cluster.address, num_cpus=cluster.num_cpus, num_gpus=cluster.num_gpus,
                       max_in_flight=cluster.max_in_flight, insecure=insecure, wait_s=cluster.wait_s,
                       retries=cluster.retries)
