"""Config -> jobs. Each job gets a content key, so the store can tell which jobs it has already done.

The key hashes everything that changes a result: the kernel's and workload's source, the workload name (the
specialization: which kernel, which launch), shape parameters and dtype, meta-parameters, the compiler version
(a hash of its sources) and the target (GPU kind, "interpreter" or "compile-only"). The plan's order is the
config's order: workloads as listed, params points outer, meta points inner.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

from farm import FarmError, exprs
from farm.config import Config, expand
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


@dataclass
class Plan:
    """The jobs of a config (in order), and how many sweep points the constraints skipped."""

    jobs: list[Job]
    skipped_by_constraint: int = 0
    per_workload: dict = field(default_factory=dict)


def plan(cfg: Config, target: str) -> Plan:
    """Expand every workload's sweep into jobs for `target`; raises FarmError for a point that cannot run."""
    jobs: list[Job] = []
    seen: set[str] = set()
    skipped = 0
    per = {}
    cver = compiler_version()
    for wi, entry in enumerate(cfg.workloads):
        where = f"workloads.{wi}"
        wl = load_workload(entry.workload)
        src = source_hash(wl)
        points = expand(entry.params)
        if points is None:
            points = [dict(p) for p in wl.default_sweep]
            if not points:
                raise FarmError(f"{where}: {wl.name} has no default sweep; give `params:`")
        metas = expand(entry.meta)
        if metas is None:
            metas = [dict(wl.default_meta)]
        trees = [(text, exprs.parse(text)) for text in entry.constraints]
        n = 0
        for p in points:
            if "dtype" not in p:
                raise FarmError(f"{where}.params: point {p} has no dtype (add `dtype: [float32]`)")
            if p["dtype"] not in KNOWN_DTYPES:
                raise FarmError(f"{where}.params: unknown dtype {p['dtype']!r} (known: {', '.join(sorted(KNOWN_DTYPES))})")
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
        per[wl.name] = per.get(wl.name, 0) + n
    return Plan(jobs=jobs, skipped_by_constraint=skipped, per_workload=per)


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
