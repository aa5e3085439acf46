"""Which ready job an idle worker takes next: the one whose inputs it already holds.

Every worker process caches each shape's inputs and float64 reference (farm.inputs.InputCache), and all the jobs of
one shape (its meta-parameter variants) share them. Handing a worker the next job of the shape it just ran, and
keeping two workers off the same shape, makes each shape's inputs be generated once per run instead of once per
worker that happens to get one of its jobs.
"""
from __future__ import annotations

import json


def input_key(job) -> str:
    """What a job's inputs depend on (as farm.inputs.input_seed): workload, shape params and seed. Kept on the job
    once made: `pick` asks it of every ready job for every job it hands out (a batch is several picks)."""
    got = getattr(job, "__dict__", {}).get("_input_key")
    if got is None:
        got = json.dumps([job.name or job.workload, job.params, job.seed], sort_keys=True, default=str)
        try:
            object.__setattr__(job, "_input_key", got)  # (Job is frozen: its fields, not this memo)
        except (AttributeError, TypeError):
            pass
    return got


def suits(info: dict | None, others: list) -> "callable":
    """Whether a worker (its `info()`: "triton" is the Triton version on its node, or None) should take a job:
    a Triton job goes to a worker whose node has Triton while any worker of the pool has it (placement prefers
    nodes with Triton; where none has it, any worker takes the job and records it as not runnable there)."""
    anywhere = any(o and o.get("triton") for o in others)
    here = info is None or bool(info.get("triton"))

    def ok(job) -> bool:
        return getattr(job, "compiler", "tilefarm") != "triton" or here or not anywhere
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
