"""Config -> jobs. Each job gets a content key, so the store can tell which jobs it has already done.

The key hashes everything that changes a result: the kernel's and workload's source, the workload name (the
specialization: which kernel, which launch), shape parameters and dtype, meta-parameters, the compiler version
(a hash of its sources) and the target (GPU kind, "interpreter" or "compile-only"). The plan's order is the
config's order: workloads as listed, params points outer, meta points inner.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field

from farm import FarmError, exprs
from farm.config import Config, ConfigError, count, iter_points
from farm.jobs import Job
from farm.worker import compiler_version, load_workload, source_hash

META_KEYS = ("num_warps", "num_stages")
KNOWN_DTYPES = {"float64", "float32", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool"}


def canonical(obj) -> str:
    """Stable JSON: sorted keys, no spaces (what the key hashes)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


def job_key(src_hash: str, spec: str, params: dict, meta: dict, compiler: str, target: str) -> str:
    return hashlib.sha256(canonical({"src": src_hash, "spec": spec, "params": params, "meta": meta,
                                     "compiler": compiler, "target": target}).encode()).hexdigest()


MAX_JOBS = int(os.environ.get("FARM_MAX_JOBS", "100000"))  # `farm run --max-jobs` raises it
MAX_TILE = 2**20  # elements in one block-size meta-parameter: Triton's limit on a tensor's elements
MAX_WARPS = 32    # 1024 threads, the most a block can have


@dataclass
class Plan:
    """The jobs of a config (in order), and how many sweep points the constraints skipped."""

    jobs: list[Job]
    skipped_by_constraint: int = 0
    per_workload: dict = field(default_factory=dict)


def plan(cfg: Config, target: str, *, max_jobs: int | None = None, source: str = "") -> Plan:
    """Expand every workload's sweep into jobs for `target`.

    Every problem found (a workload that cannot be loaded, a sweep over the job limit, a point without a dtype,
    an unknown dtype, a meta-parameter out of range, a constraint that cannot be evaluated) is collected, one
    "field.path: problem" line each, and raised together as one ConfigError (`source`: the config's file).
    The size of each sweep is counted before it is expanded, so a sweep of 10^9 points is refused at once.
    """
    limit = MAX_JOBS if max_jobs is None else max_jobs
    problems: list[str] = []
    jobs: list[Job] = []
    seen: set[str] = set()
    skipped = 0
    per = {}
    cver = compiler_version()
    total = 0
    for wi, entry in enumerate(cfg.workloads):
        where = f"workloads.{wi}"
        try:
            wl = load_workload(entry.workload)
        except FarmError as e:
            problems.append(f"{where}.workload: {e}")
            continue
        n_params = count(entry.params)
        n_meta = count(entry.meta) or 1
        n_params = len(wl.default_sweep) if n_params is None else n_params
        total += n_params * n_meta
        if total > limit:
            problems.append(f"{where}: the sweep has up to {n_params * n_meta:,} points ({n_params:,} params x "
                            f"{n_meta:,} meta), {total:,} with the workloads before it: over the limit of "
                            f"{limit:,} jobs (raise it with --max-jobs N, or FARM_MAX_JOBS)")
            continue
        src = source_hash(wl)
        points = iter_points(entry.params)
        if points is None:
            points = [dict(p) for p in wl.default_sweep]
            if not points:
                problems.append(f"{where}.params: {wl.name} has no default sweep; give `params:`")
                continue
        metas = iter_points(entry.meta)
        metas = [dict(wl.default_meta)] if metas is None else list(metas)
        bad = [msg for m in metas for msg in _meta_problems({**wl.default_meta, **m})]
        if bad:
            problems += [f"{where}.meta: {msg}" for msg in dict.fromkeys(bad)]
            continue
        trees = [(text, exprs.parse(text)) for text in entry.constraints]
        n = 0
        for p in points:
            if "dtype" not in p:
                problems.append(f"{where}.params: point {p} has no dtype (add `dtype: [float32]`)")
                break
            if p["dtype"] not in KNOWN_DTYPES:
                problems.append(f"{where}.params.dtype: unknown dtype {p['dtype']!r} "
                                f"(known: {', '.join(sorted(KNOWN_DTYPES))})")
                break
            try:
                for m in metas:
                    m = {**wl.default_meta, **m}
                    env = {**p, **m}
                    if not _accepted(trees, env, where):
                        skipped += 1
                        continue
                    key = job_key(src, f"{wl.name}", p, m, cver, target)
                    if key in seen:
                        continue
                    seen.add(key)
                    jobs.append(Job(key=key, idx=len(jobs), workload=entry.workload, name=wl.name, params=dict(p),
                                    meta=dict(m), seed=cfg.seed, data_bytes=_data_bytes(wl, p)))
                    n += 1
            except FarmError as e:
                problems.append(str(e))
                break
        per[wl.name] = per.get(wl.name, 0) + n
    if problems:
        raise ConfigError(problems, source)
    return Plan(jobs=jobs, skipped_by_constraint=skipped, per_workload=per)


def _meta_problems(meta: dict) -> list[str]:
    """What is wrong with one meta point (the compiler would reject it later, one job at a time, or spend
    minutes on a tile no GPU can hold)."""
    out = []
    for k, v in meta.items():
        is_int = isinstance(v, int) and not isinstance(v, bool)
        if k == "num_warps" and not (is_int and 0 < v <= MAX_WARPS and v & (v - 1) == 0):
            out.append(f"num_warps: expected a power of two from 1 to {MAX_WARPS}, got {v!r}")
        elif k == "num_stages" and not (is_int and 0 < v <= 16):
            out.append(f"num_stages: expected an integer from 1 to 16, got {v!r}")
        elif k.upper().startswith("BLOCK") and is_int and not 0 < v <= MAX_TILE:
            out.append(f"{k}: {v} is outside 1..{MAX_TILE} (2^20 elements, the most one tile may hold)")
    return out


def _data_bytes(wl, params: dict) -> int:
    try:
        return int(wl.bytes(dict(params)))
    except Exception:  # a count that fails here fails again, visibly, in the worker
        return 0


def _accepted(trees, env: dict, where: str) -> bool:
    for i, (text, tree) in enumerate(trees):
        try:
            if not exprs.evaluate(tree, env):
                return False
        except exprs.ExprError as e:
            raise FarmError(f"{where}.constraints.{i}: {e}") from None
        except (ArithmeticError, TypeError, ValueError, KeyError) as e:
            raise FarmError(f"{where}.constraints.{i}: {text!r} failed at {env}: {type(e).__name__}: {e}") from None
    return True
