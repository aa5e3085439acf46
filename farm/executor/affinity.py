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


def pick(ready, own: str | None, busy: set) -> int:
    """Index into `ready` ((job, compiled) pairs) for a worker whose last job had inputs `own`, while other
    workers hold the inputs in `busy`: a job with `own` inputs, else one whose inputs nobody holds, else the
    first."""
    fallback = None
    for i, (job, _) in enumerate(ready):
        k = input_key(job)
        if k == own:
            return i
        if fallback is None and k not in busy:
            fallback = i
    return 0 if fallback is None else fallback
