"""Which ready job an idle worker takes next: the one whose inputs it already holds.

Every worker process caches each shape's inputs and float64 reference (farm.inputs.InputCache), and all the jobs of
one shape (its meta-parameter variants) share them. Handing a worker the next job of the shape it just ran, and
keeping two workers off the same shape, makes each shape's inputs be generated once per run instead of once per
worker that happens to get one of its jobs.
"""
from __future__ import annotations

import json


def input_key(job) -> str:
    """What a job's inputs depend on (as farm.inputs.input_seed): workload, shape params and seed."""
    return json.dumps([job.name or job.workload, job.params, job.seed], sort_keys=True, default=str)


ASKING = "asking"  # a node's Triton while the executor is still asking it (farm.executor.ray.RayExecutor.triton_nodes)


def triton_fits(version, job) -> bool:
    """Whether a node whose processes see Triton `version` (None: no Triton) can run the Triton job `job`: the
    version its plan recorded (any Triton for a job planned without one)."""
    if not version or version == ASKING:
        return False
    return not job.compiler_version or version == job.compiler_version


def suits(info: dict | None, nodes: dict) -> "callable":
    """Whether a worker (its `info()`: "triton" is the Triton version its node's processes see, or None) should
    take a job. `nodes`: node id -> Triton version (None, or ASKING while not known yet) of the live nodes that
    can hold a worker of this pool. A Triton job goes to a worker that has its Triton; while any node has it (or
    may have it: still being asked) it waits for one there; where none has it, any worker takes it and records it
    as not runnable, saying why."""
    here = info.get("triton") if info else None
    asking = None

    def ok(job) -> bool:
        nonlocal asking
        if getattr(job, "compiler", "tilefarm") != "triton" or triton_fits(here, job):
            return True
        if asking is None:
            asking = any(v == ASKING for v in nodes.values())
        if asking:
            return False
        return not any(triton_fits(v, job) for v in nodes.values())
    return ok


def pick(ready, own: str | None, busy: set, can=None) -> int:
    """Index into `ready` ((job, compiled) pairs) for a worker whose last job had inputs `own`, while other
    workers hold the inputs in `busy`: a job with `own` inputs, else one whose inputs nobody holds, else the
    first; only among the jobs `can(job)` accepts (-1 when it accepts none)."""
    fallback = first = None
    for i, (job, _) in enumerate(ready):
        if can is not None and not can(job):
            continue
        if first is None:
            first = i
        k = input_key(job)
        if k == own:
            return i
        if fallback is None and k not in busy:
            fallback = i
    if fallback is not None:
        return fallback
    if first is None:
        return 0 if can is None else -1
    return first
