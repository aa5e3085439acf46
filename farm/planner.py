"""Config -> jobs. Each job gets a content key, so the store can tell which jobs it has already done.

The key hashes everything that changes a result: the kernel's and workload's source, the workload name (the
specialization: which kernel, which launch), shape parameters and dtype, meta-parameters, the compiler and its
version (tilefarm: a hash of its sources; triton: its release) and the target (GPU kind, "interpreter" or
"compile-only"). The plan's order is the config's order: workloads as listed, params points outer, meta points
inner, compilers innermost.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import os
from dataclasses import dataclass, field

from farm import FarmError, exprs
from farm.config import Config, ConfigError, count, iter_points
from farm.compilers import DEFAULT as DEFAULT_COMPILER
from farm.compilers import job_version, key_part
from farm.jobs import Job
from farm.loader import load_file, load_workload, source_hash
from farm.machine import compiler_version

META_KEYS = ("num_warps", "num_stages")
KNOWN_DTYPES = {"float64", "float32", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool"}


def canonical(obj) -> str:
    """Stable JSON: sorted keys, no spaces (what the key hashes)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


def job_key(src_hash: str, spec: str, params: dict, meta: dict, compiler: str, target: str) -> str:
    """`compiler`: the compiler's part of the key (farm.compilers.key_part: tilefarm's source fingerprint, or
    `triton==<version>`)."""
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
    """Every job of the config for `target`, as a list (see `iter_jobs`; `farm run` streams them instead)."""
    stats = Stats()
    jobs = list(iter_jobs(cfg, target, max_jobs=max_jobs, source=source, stats=stats))
    return Plan(jobs=jobs, skipped_by_constraint=stats.skipped, per_workload=stats.per_workload)


def check(cfg: Config, *, max_jobs: int | None = None, source: str = "") -> int:
    """Validate the whole config without keeping its jobs; returns how many there are (ConfigError if any problem)."""
    return sum(1 for _ in iter_jobs(cfg, "check", max_jobs=max_jobs, source=source))


@dataclass
class Stats:
    """What `iter_jobs` counted on the way: points skipped by constraints, jobs per workload."""

    skipped: int = 0
    per_workload: dict = field(default_factory=dict)


def iter_jobs(cfg: Config, target: str, *, max_jobs: int | None = None, source: str = "", stats: Stats | None = None,
              kinds: list[str] | None = None):
    """Expand every workload's sweep into jobs for `target`, lazily, in plan order (workloads as listed, params
    points outer, meta points inner); with `kinds` (GPU kinds), one job per point and kind, each keyed for its
    kind and placed on it (`Job.gpu_kind`), the kinds innermost; duplicates are dropped (by a 16-byte digest of the key, so a million-job
    sweep holds ~80 MB of digests, not its jobs).

    Every problem found (a workload that cannot be loaded, a sweep over the job limit, a point without a dtype,
    an unknown dtype, a meta-parameter out of range, a constraint that cannot be evaluated) is collected, one
    "field.path: problem" line each, and raised together as one ConfigError (`source`: the config's file) when
    the iteration ends; `check` runs it through once first, so a run never records a plan that fails half-way.
    The size of each sweep is counted before it is expanded, so a sweep of 10^9 points is refused at once.
    """
    limit = MAX_JOBS if max_jobs is None else max_jobs
    stats = stats if stats is not None else Stats()
    problems: list[str] = []
    seen: set[bytes] = set()
    idx = 0
    cver = compiler_version()
    total = 0
    compilers = list(getattr(cfg, "compilers", None) or [DEFAULT_COMPILER])
    keyed = {c: key_part(c, cver) for c in compilers}
    versions = {c: job_version(c) for c in compilers}
    for wi, entry, ref in _entries(cfg, problems):
        where = f"workloads.{wi}"
        try:
            wl = load_workload(ref)
        except FarmError as e:
            # A Triton-style file that tilefarm's compatibility layer cannot load (a Triton internal at import)
            # is still planned from Triton's view of it when the sweep has Triton: its tilefarm jobs then fail one
            # by one, each naming what is missing, and its Triton jobs run.
            wl = _plan_with_triton(ref) if "triton" in compilers else None
            if wl is None:
                problems.append(f"{where}.workload: {e}")
                continue
        gpu_sizes = getattr(entry, "sizes", "default") == "gpu"
        own_sweep = wl.gpu_sweep if gpu_sizes else wl.default_sweep
        base_meta = dict((getattr(wl, "gpu_meta", None) or wl.default_meta) if gpu_sizes else wl.default_meta)
        n_params = count(entry.params)
        n_meta = count(entry.meta) or 1
        n_params = len(own_sweep) if n_params is None else n_params
        k = len(compilers)
        n_kinds = len(kinds or ("",))
        total += n_params * n_meta * k * n_kinds
        if total > limit:
            axes = (f" x {k} compilers" if k > 1 else "") + (f" x {n_kinds} GPU kinds" if n_kinds > 1 else "")
            what = "jobs" if axes else "points"
            size = f"{n_params * n_meta * k * n_kinds:,} {what} ({n_params:,} params x {n_meta:,} meta{axes})"
            problems.append(f"{where}: the sweep has up to {size}, {total:,} with the workloads before it: over "
                            f"the limit of {limit:,} jobs (raise it with --max-jobs N, or FARM_MAX_JOBS)")
            continue
        src = source_hash(wl)
        points = iter_points(entry.params)
        if points is None:
            points = [dict(p) for p in own_sweep]
            if not points:
                which = "gpu sweep (`sizes: gpu`)" if gpu_sizes else "default sweep"
                problems.append(f"{where}.params: {wl.name} has no {which}; give `params:`")
                continue
        metas = iter_points(entry.meta)
        metas = [dict(base_meta)] if metas is None else list(metas)
        bad = [msg for m in metas for msg in _meta_problems({**base_meta, **m})]
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
                    m = {**base_meta, **m}
                    env = {**p, **m}
                    if not _accepted(trees, env, where):
                        stats.skipped += 1
                        continue
                    if problems:  # the plan will be refused: keep checking, stop building
                        continue
                    for comp, kind in itertools.product(compilers, kinds or ("",)):
                        # innermost: a point's jobs under each compiler (and on each kind) are neighbours
                        key = job_key(src, f"{wl.name}", p, m, keyed[comp], kind or target)
                        digest = bytes.fromhex(key[:32])
                        if digest in seen:
                            continue
                        seen.add(digest)
                        yield Job(key=key, idx=idx, workload=ref, name=wl.name, params=dict(p),
                                  meta=dict(m), seed=cfg.seed, data_bytes=_data_bytes(wl, p), compiler=comp,
                                  compiler_version=versions[comp], gpu_kind=kind)
                        idx += 1
                        n += 1
            except FarmError as e:
                problems.append(str(e))
                break
        stats.per_workload[wl.name] = stats.per_workload.get(wl.name, 0) + n
    if problems:
        raise ConfigError(problems, source)


def _plan_with_triton(ref: str):
    from farm.loader import load_for_plan

    try:
        return load_for_plan(ref)
    except FarmError:
        return None


def _entries(cfg: Config, problems: list):
    """(index, entry, workload reference) per workload of the config: `file.py::GLOB` (a name with * ? or [)
    stands for every workload of the file whose name matches, in the file's order."""
    import fnmatch

    for wi, entry in enumerate(cfg.workloads):
        path, sep, name = entry.workload.partition("::")
        if not (sep and path.endswith(".py") and any(c in name for c in "*?[")):
            yield wi, entry, entry.workload
            continue
        try:
            names = [w.name for w in load_file(path)]
        except FarmError as e:
            problems.append(f"workloads.{wi}.workload: {e}")
            continue
        hits = [n for n in names if fnmatch.fnmatchcase(n, name)]
        if not hits:
            problems.append(f"workloads.{wi}.workload: no workload of {path} matches {name!r} "
                            f"(it has {', '.join(names)})")
        for n in hits:
            yield wi, entry, f"{path}::{n}"


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
