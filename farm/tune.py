"""`farm tune`: search a kernel's meta-parameter space for each shape of a sweep on the fleet, and write every
measurement to the tuning database (farm.tuning_db) that `@compiler.autotune` reads first.

```yaml
name: tune-vector-add
store: .tilefarm/farm.db            # the tuning table lives in the farm's store file
search:
  strategy: halving                 # or exhaustive (every candidate at max_rep_ms)
  budget_s: 60                      # no new round starts that would end past this (halving)
  eta: 3                            # keep the best 1/eta of each shape's candidates per round
  min_rep_ms: 10                    # the first round's timing budget per candidate; x eta per round
  max_rep_ms: 100                   # ... up to this
  warmup_ms: 10
  max_candidates: null              # per shape: a seeded sample of the space when it is larger
  timer: null                       # path.py::fn(params, meta, rep_ms) -> ms: synthetic times without a GPU
timing: {flush_l2: true, timeout_s: 120}
cluster: {address: null}
compilers: [tilefarm]               # and/or triton: each shape's space is searched once per compiler
workloads:
  - workload: vector_add            # a registry name, path.py or path.py::NAME (as in `farm run`)
    key: [N]                        # the autotune key the kernel is used with (default: its int arguments)
    params: {N: [65536, 1048576], dtype: [float32]}
    space:                          # the meta-parameter space: a sweep, as `meta:` in `farm run`
      BLOCK: [256, 512, 1024, 2048, 4096]
      num_warps: [1, 2, 4, 8]
    constraints: ["BLOCK >= 32 * num_warps"]
```

Successive halving per shape: round 0 times every candidate briefly (min_rep_ms), each later round keeps the
best ceil(n/eta) and times them eta times longer, until one is left (or the budget says stop: the best of the
last round wins). All shapes' candidates of a round run as one batch on the executor (Ray: compile as CPU
tasks, validate and time on GPU actors that stay warm between rounds), and every result is validated against
the workload's reference, so a config that computes wrong answers is never recorded.

The database key of each shape is computed the way the autotuner computes it at launch
(`compiler.autotune.key_json`), from the arguments the workload's launch passes to the kernel
(`compiler.autotune.capture_call`): the key arguments' values and the arguments' dtypes. The kernel is
identified by its source hash (`JITFunction.cache_key`).

Compilers (`compilers: [tilefarm, triton]`, `farm tune --compilers`): a Triton-style kernel file is searched under
each compiler on its own (its own candidates' timings, its own rounds, its own winner), since the best
meta-parameters of one compiler are not the other's. Triton's measurements are stored apart: their `kernel` is
`triton:` + the source hash and their version `triton==<version>`, so `@compiler.autotune` (which looks a kernel
up by its hash) never launches with a config another compiler was timed with, and a tuning table's summary shows
each compiler's best on its own line. A synthetic timer may take a `compiler` keyword to time them differently.
"""
from __future__ import annotations

import dataclasses
import importlib.util
import inspect
import math
import random
import time
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from pydantic import Field

from farm import FarmError, compilers as C, exprs
from farm.config import Cluster, Compilers, ConfigError, Constraint, Model, SweepSpec, expand, format_errors, read_data
from farm.jobs import COMPILED, OK, VALIDATED, Job, Result, RunOptions
from farm.planner import job_key
from farm.tuning_db import TuningDB, make_record
from farm.inputs import host_arrays
from farm.loader import load_workload, source_hash
from farm.machine import compiler_version, normalize_kind
from farm.timing import RUN, TUNE, Timing


class Search(Model):
    """How the space is searched."""

    strategy: Literal["halving", "exhaustive"] = "halving"
    budget_s: float = Field(60.0, gt=0, description="no halving round starts that would end past this")
    eta: int = Field(3, ge=2, description="keep the best 1/eta per round; the next round times eta x longer")
    min_rep_ms: float = Field(TUNE.rep_ms, gt=0, description="the first round's timing budget per candidate")
    max_rep_ms: float = Field(RUN.rep_ms, gt=0, description="the last round's: as long as a `farm run` job")
    warmup_ms: float = Field(TUNE.warmup_ms, gt=0)
    max_candidates: int | None = Field(None, ge=1, description="per shape: a seeded sample when the space is larger")
    seed: int = 0
    timer: str | None = Field(None, description="path.py::fn(params, meta, rep_ms) -> ms, for runs without a GPU")


class TuneEntry(Model):
    workload: str
    key: list[str] | None = None
    params: SweepSpec | None = None
    space: SweepSpec | None = None
    constraints: list[Constraint] = Field(default_factory=list)


class TuneConfig(Model):
    name: str = "tune"
    workloads: list[TuneEntry] = Field(min_length=1)
    search: Search = Field(default_factory=Search)
    timing: Timing = Field(default_factory=Timing)
    cluster: Cluster = Field(default_factory=Cluster)
    store: str | None = None  # relative to the config's folder; left out: the default store of every command
    seed: int = 0
    compilers: Compilers = Field(
        default_factory=lambda: ["tilefarm"], min_length=1,
        description="each shape's space is searched once per compiler, and stored per compiler (farm.compilers)")


def load_config(path) -> tuple[TuneConfig, str]:
    """Read and validate a tune config (YAML or TOML); workload and timer paths resolve against its folder."""
    import os
    import pathlib

    from pydantic import ValidationError

    p = pathlib.Path(path)
    if not p.is_file():
        raise ConfigError([f"(file): no such config file: {p}"])
    text = p.read_text()
    try:
        data = read_data(text, "toml" if p.suffix == ".toml" else "yaml")
    except ConfigError as e:
        raise ConfigError(e.lines, str(p)) from None
    try:
        cfg = TuneConfig.model_validate(data)
    except ValidationError as e:
        raise ConfigError(format_errors(e), str(p)) from None
    if cfg.store is not None and "://" not in cfg.store:  # a URL (postgresql://...) is not a path
        cfg.store = os.path.normpath(p.parent.resolve() / os.path.expanduser(cfg.store))
    for entry in cfg.workloads:
        entry.workload = _resolve(entry.workload, p.parent)
    if cfg.search.timer:
        cfg.search.timer = _resolve(cfg.search.timer, p.parent)
    return cfg, text


def _resolve(ref: str, base) -> str:
    import pathlib

    path, sep, rest = ref.partition("::")
    if path.endswith(".py") and not pathlib.Path(path).is_absolute():
        return str((pathlib.Path(base) / path).resolve()) + sep + rest
    return ref


def load_timer(ref: str):
    """A synthetic timer from "path.py::fn" or "module:fn"."""
    if "::" in ref:
        path, _, name = ref.partition("::")
        spec = importlib.util.spec_from_file_location(f"_tilefarm_timer_{abs(hash(path))}", path)
        if spec is None:
            raise FarmError(f"timer: cannot load {path}")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    else:
        modname, _, name = ref.partition(":")
        mod = importlib.import_module(modname)
    fn = getattr(mod, name, None)
    if not callable(fn):
        raise FarmError(f"timer: {ref} is not a function")
    return fn


# ------------------------------------------------------------------------------------------------- shapes
@dataclass
class Shape:
    """One shape point of one workload entry, with its database key and its live candidates."""

    entry: int
    wl: object
    workload: str
    params: dict
    kernel_hash: str
    kernel_name: str
    key: str
    candidates: list
    src: str
    data_bytes: int = 0
    compiler: str = C.DEFAULT
    measured: dict = field(default_factory=dict)  # meta json -> {round: ms}
    best: dict | None = None
    best_ms: float | None = None
    failures: int = 0

    @property
    def label(self) -> str:
        text = " ".join(f"{k}={v}" for k, v in self.params.items())
        return text if self.compiler == C.DEFAULT else f"{text} [{self.compiler}]"


def _jit_of(kernel):
    while not hasattr(kernel, "constexpr_mask"):
        kernel = kernel.fn
    return kernel


def _key_names(entry: TuneEntry, wl, named: dict) -> list[str]:
    if entry.key is not None:
        jf = _jit_of(wl.kernel)
        bad = [k for k in entry.key if k not in jf.arg_names]
        if bad:
            raise FarmError(f"key {bad} names no parameter of {jf.__name__} ({', '.join(jf.arg_names)})")
        return list(entry.key)
    if hasattr(wl.kernel, "key") and isinstance(wl.kernel.key, list):
        return list(wl.kernel.key)
    jf = _jit_of(wl.kernel)
    return [n for n, c in zip(jf.arg_names, jf.constexpr_mask) if not c and type(named.get(n)) is int]


def shape_key(wl, params: dict, meta: dict, entry: TuneEntry, seed: int = 0) -> tuple[str, str, str]:
    """(kernel source hash, kernel name, database key text) for one shape, from the arguments the workload's
    launch passes to its kernel (captured: nothing is compiled or run)."""
    import compiler.autotune as _  # noqa: F401
    import sys

    at = sys.modules["compiler.autotune"]
    jf = _jit_of(wl.kernel)
    job = Job(key="0" * 64, idx=0, workload="", name=wl.name, params=dict(params), meta=dict(meta), seed=seed)
    arrays = host_arrays(wl, job, np.random.default_rng(seed))[0]
    with at.capture_call(jf) as named:
        if wl.warmup is not None:
            wl.compile(arrays, dict(params), dict(meta))
        else:
            wl.launch(arrays, dict(params), dict(meta))
    if not named:
        raise FarmError(f"{wl.name}: its launch did not call {jf.__name__} (cannot compute the autotune key)")
    return jf.cache_key, jf.__name__, at.key_json(named, _key_names(entry, wl, named))


def _meta_id(meta: dict) -> str:
    import json

    return json.dumps(meta, sort_keys=True, separators=(",", ":"), default=str)


def record_kernel(kernel_hash: str, compiler: str) -> str:
    """The tuning table's `kernel` of a compiler's measurements (see the module doc): the source hash for
    tilefarm, which its autotuner looks up; `triton:` + the hash for Triton."""
    return kernel_hash if compiler == C.DEFAULT else f"{compiler}:{kernel_hash}"


def plan_shapes(cfg: TuneConfig) -> list[Shape]:
    shapes = []
    if "triton" in cfg.compilers and C.triton_version() is None:
        raise FarmError("compilers: triton: Triton is not installed where farm tune plans (each measurement "
                        "records Triton's version); install it here (pip install triton) or tune tilefarm only")
    for ei, entry in enumerate(cfg.workloads):
        where = f"workloads.{ei}"
        wl = load_workload(entry.workload)
        src = source_hash(wl)
        points = expand(entry.params)
        if points is None:
            points = [dict(p) for p in wl.default_sweep]
        space = expand(entry.space)
        if space is None:
            ms = getattr(wl, "meta_space", None) or {}
            if not ms:
                raise FarmError(f"{where}: {wl.name} declares no meta_space; give `space:`")
            from farm.config import Sweep
            space = list(Sweep(product=dict(ms)).expand())
        trees = [(t, exprs.parse(t)) for t in entry.constraints]
        for p in points:
            cands = []
            for m in space:
                m = {**wl.default_meta, **m}
                env = {**p, **m}
                try:
                    if all(exprs.evaluate(tree, env) for _, tree in trees):
                        cands.append(m)
                except (exprs.ExprError, ArithmeticError, TypeError, ValueError, KeyError) as e:
                    raise FarmError(f"{where}.constraints: {e} at {env}") from None
            if not cands:
                raise FarmError(f"{where}: no candidate of the space satisfies the constraints at {p}")
            if cfg.search.max_candidates and len(cands) > cfg.search.max_candidates:
                rng = random.Random(f"{cfg.search.seed}:{_meta_id(p)}")
                cands = rng.sample(cands, cfg.search.max_candidates)
            try:
                kh, kname, key = shape_key(wl, p, cands[0], entry, cfg.seed)
            except FarmError:
                raise
            except Exception as e:
                raise FarmError(f"{where}: cannot compute the key at {p}: {type(e).__name__}: {e}") from None
            try:
                nbytes = int(wl.bytes(dict(p)))
            except Exception:
                nbytes = 0
            for comp in cfg.compilers:
                shapes.append(Shape(entry=ei, wl=wl, workload=entry.workload, params=dict(p),
                                    kernel_hash=record_kernel(kh, comp), kernel_name=kname, key=key,
                                    candidates=list(cands), src=src, data_bytes=nbytes, compiler=comp))
    return shapes


# ------------------------------------------------------------------------------------------------- search
@dataclass
class TuneReport:
    shapes: list
    rounds: list  # {"rep_ms", "jobs", "wall_s"}
    wall_s: float
    records: int
    target: str
    strategy: str
    stopped_by_budget: bool = False
    compile_only: bool = False
    errors: list = field(default_factory=list)

    def winners(self) -> list[dict]:
        return [{"workload": s.wl.name, "params": s.params, "compiler": s.compiler, "key": s.key, "best": s.best,
                 "best_ms": s.best_ms, "candidates": len(s.candidates), "measured": len(s.measured),
                 "failures": s.failures} for s in self.shapes]


def target_for(resources: dict, compile_only: bool) -> str:
    if compile_only:
        return "compile-only"
    if resources.get("gpus") and resources.get("gpu_kind"):
        return resources["gpu_kind"]
    return "interpreter"


def tune(cfg: TuneConfig, executor, db: TuningDB | None, *, exhaustive: bool = False, budget_s: float | None = None,
         compile_only: bool = False, timer=None, on_event=None, on_round=None) -> TuneReport:
    """Search every shape's space on `executor` and add each measured config to `db` (see the module doc)."""
    t_start = time.monotonic()
    s = cfg.search
    strategy = "exhaustive" if exhaustive else s.strategy
    budget = budget_s if budget_s is not None else s.budget_s
    if timer is None and s.timer:
        timer = load_timer(s.timer)
    if hasattr(executor, "keep_pool"):
        executor.keep_pool = True  # GPU actors stay warm from round to round
    resources = executor.resources()
    target = target_for(resources, compile_only)
    if target == "interpreter" and timer is None:
        raise FarmError("no GPU here, so nothing can be timed: run on a GPU node, give a synthetic timer "
                        "(search.timer or --timer path.py::fn), or --compile-only to only check that every "
                        "candidate compiles")
    shapes = plan_shapes(cfg)
    cver = compiler_version()
    keyed = {c: C.key_part(c, cver) for c in cfg.compilers}  # a job's and a record's compiler version
    versions = {c: C.job_version(c) for c in cfg.compilers}
    timer_by_compiler = timer is not None and "compiler" in _parameters(timer)
    live = {i: list(sh.candidates) for i, sh in enumerate(shapes)}
    rep = s.max_rep_ms if strategy == "exhaustive" else min(s.min_rep_ms, s.max_rep_ms)
    rounds, n_records, stopped, errors = [], 0, False, []
    while True:
        jobs, owner = [], {}
        for i, metas in live.items():
            sh = shapes[i]
            for m in metas:
                key = job_key(sh.src, f"{sh.wl.name}:tune", sh.params, m, keyed[sh.compiler], f"{target}:{rep:g}")
                job = Job(key=key, idx=len(jobs), workload=sh.workload, name=sh.wl.name, params=dict(sh.params),
                          meta=dict(m), seed=cfg.seed, data_bytes=sh.data_bytes, compiler=sh.compiler,
                          compiler_version=versions[sh.compiler])
                if key in owner:
                    continue
                owner[key] = (i, m)
                jobs.append(job)
        opts = RunOptions(target=target, compile_only=compile_only, warmup_ms=min(s.warmup_ms, max(rep, 1.0)),
                          rep_ms=rep, flush_l2=cfg.timing.flush_l2, timeout_s=cfg.timing.timeout_s, baseline=False)
        results: dict[str, Result] = {}

        def handle(kind, job, payload):
            if kind == "done":
                results[job.key] = payload
            if on_event:
                on_event(kind, job, payload)

        t0 = time.monotonic()
        executor.run(jobs, opts, handle)
        wall = time.monotonic() - t0
        rounds.append({"rep_ms": rep, "jobs": len(jobs), "wall_s": wall})
        if compile_only:
            for key, (i, m) in owner.items():
                r = results.get(key)
                if r is None or r.status != COMPILED:
                    shapes[i].failures += 1
                    errors.append((shapes[i].label, m, (r.error if r else "no result") or ""))
            break
        recs = []
        timed: dict[int, list] = {i: [] for i in live}
        for key, (i, m) in owner.items():
            r = results.get(key)
            sh = shapes[i]
            ms = None
            if r is not None and r.status == OK and r.median_ms is not None:
                ms, p10, p90, n = r.median_ms, r.p10_ms, r.p90_ms, r.n_reps
                gpu = normalize_kind(r.gpu["name"]) if r.gpu and r.gpu.get("name") else target
            elif r is not None and r.status == VALIDATED and timer is not None:
                ms = float(timer(dict(sh.params), dict(m), rep, compiler=sh.compiler) if timer_by_compiler
                           else timer(dict(sh.params), dict(m), rep))
                p10 = p90 = ms
                n, gpu = 1, "interpreter"
            if ms is None:
                sh.failures += 1
                errors.append((sh.label, m, (r.error if r else "no result") or r.status))
                continue
            timed[i].append((ms, m))
            sh.measured.setdefault(_meta_id(m), {})[len(rounds) - 1] = ms
            cfg_d = {"kwargs": {k: v for k, v in m.items() if k not in ("num_warps", "num_stages")},
                     "num_warps": m.get("num_warps", 4), "num_stages": m.get("num_stages", 3)}
            recs.append(make_record(kernel=sh.kernel_hash, kernel_name=sh.kernel_name, key=sh.key, config=cfg_d,
                                    gpu=gpu, compiler_version=keyed[sh.compiler], median_ms=ms, p10_ms=p10,
                                    p90_ms=p90, n=n,
                                    rep_ms=rep, source=f"farm tune {cfg.name}"))
        if db is not None and recs:
            n_records += db.add(recs)
        for i in list(live):
            ranked = sorted(timed[i], key=lambda t: t[0])
            if ranked:
                shapes[i].best_ms, shapes[i].best = ranked[0][0], ranked[0][1]
            keep = max(1, math.ceil(len(ranked) / s.eta))
            live[i] = [m for _, m in ranked[:keep]]
            if not live[i]:
                del live[i]
        if on_round:
            on_round(rounds[-1], shapes)
        if strategy == "exhaustive" or all(len(v) <= 1 for v in live.values()):
            break
        live = {i: v for i, v in live.items() if len(v) > 1}
        nxt = min(rep * s.eta, s.max_rep_ms)
        n_next = sum(len(v) for v in live.values())
        est = wall * (n_next / max(1, len(jobs))) * max(1.0, (nxt + opts.warmup_ms) / (rep + opts.warmup_ms))
        if time.monotonic() - t_start + est > budget:
            stopped = True
            break
        rep = nxt
    return TuneReport(shapes=shapes, rounds=rounds, wall_s=time.monotonic() - t_start, records=n_records,
                      target=target, strategy=strategy, stopped_by_budget=stopped, compile_only=compile_only,
                      errors=errors)


def _parameters(fn) -> set:
    try:
        return set(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return set()


def report_dict(rep: TuneReport) -> dict:
    return {"target": rep.target, "strategy": rep.strategy, "wall_s": rep.wall_s, "records": rep.records,
            "stopped_by_budget": rep.stopped_by_budget, "rounds": rep.rounds, "winners": rep.winners(),
            "errors": [{"shape": a, "meta": m, "error": e[:500]} for a, m, e in rep.errors]}


def parse_budget(text: str | None) -> float | None:
    """"60s", "2m", "90" -> seconds."""
    if text is None:
        return None
    t = text.strip().lower()
    mult = 1.0
    if t.endswith("ms"):
        t, mult = t[:-2], 1e-3
    elif t.endswith("s"):
        t = t[:-1]
    elif t.endswith("m"):
        t, mult = t[:-1], 60.0
    elif t.endswith("h"):
        t, mult = t[:-1], 3600.0
    try:
        v = float(t) * mult
    except ValueError:
        raise FarmError(f"--budget: cannot read {text!r} (use e.g. 60s, 2m)") from None
    if not math.isfinite(v) or v <= 0:  # float() reads "nan" and "inf": neither is a budget
        raise FarmError(f"--budget must be a positive, finite time, not {text!r}")
    return v


__all__ = ["TuneConfig", "Search", "TuneEntry", "load_config", "tune", "plan_shapes", "shape_key", "TuneReport",
           "report_dict", "parse_budget"]
