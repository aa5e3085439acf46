"""The data that flows between planner, executors, workers and store: Job, Result and RunOptions.

All three are plain dataclasses of JSON-able values, so they pickle cheaply across Ray and store as JSON.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from farm.timing import MAX_SAMPLES, RUN  # noqa: F401  (MAX_SAMPLES: how many samples a Result keeps)

# Final states of a job. Only the "transient" ones are retried when a later run plans the same key.
OK = "ok"                        # validated and timed on a GPU
VALIDATED = "validated"          # validated in the interpreter; timing needs a GPU
COMPILED = "compiled"            # compile-only run: compiled to PTX, not validated
COMPILE_ERROR = "compile_error"  # the compiler refused the kernel (CompilationError, ptxas, resources)
MISMATCH = "mismatch"            # ran, but outputs (or untouched inputs) are wrong
ERROR = "error"                  # an exception while running (CUDA error, bad launch, interpreter fault)
TIMEOUT = "timeout"              # ran past timing.timeout_s; its worker was killed and replaced
WORKER_DIED = "worker_died"      # the worker process died under the job (segfault, os._exit, node lost)
NOT_RUNNABLE = "not_runnable"    # the job's compiler is not on the node that got it (Triton absent, another version)
STATUSES = (OK, VALIDATED, COMPILED, COMPILE_ERROR, MISMATCH, ERROR, TIMEOUT, WORKER_DIED, NOT_RUNNABLE)
GOOD = (OK, VALIDATED, COMPILED)
TRANSIENT = (TIMEOUT, WORKER_DIED, NOT_RUNNABLE)  # not runnable here may run elsewhere: planned again next time


@dataclass(frozen=True)
class Job:
    """One point of a sweep: a workload (registry name or path[::NAME]) at one params/meta point."""

    key: str          # content key (see farm.planner.job_key)
    idx: int          # position in the plan (deterministic)
    workload: str     # how to load it: registry name, /abs/path.py or /abs/path.py::NAME
    name: str         # the workload's name, for tables
    params: dict      # shape parameters plus "dtype"
    meta: dict        # BLOCK sizes, num_warps, num_stages
    seed: int = 0
    data_bytes: int = 0  # the workload's byte count: lets executors bound host memory (not part of the key)
    compiler: str = "tilefarm"   # which compiler builds the kernel (farm.compilers.COMPILERS)
    compiler_version: str = ""   # that compiler's version the key was made with ("" for tilefarm: in the key)
    gpu_kind: str = ""   # the GPU kind it must run on ("H200"; part of the key as its target), "" for any

    def to_dict(self) -> dict:
        # Shallow copies of the two point dicts (their values are scalars): dataclasses.asdict's deep copy was
        # most of the time spent recording a large plan.
        return {"key": self.key, "idx": self.idx, "workload": self.workload, "name": self.name,
                "params": dict(self.params), "meta": dict(self.meta), "seed": self.seed, "data_bytes": self.data_bytes,
                "compiler": self.compiler, "compiler_version": self.compiler_version, "gpu_kind": self.gpu_kind}

    @classmethod
    def from_dict(cls, d: dict) -> "Job":
        return cls(**{f: d[f] for f in _JOB_FIELDS if f in d})


@dataclass
class RunOptions:
    """How jobs run: what the config's `timing` and `compile_only` say, plus the target the keys were made for.

    A plain dataclass (it crosses to Ray workers with every batch); its timing defaults are farm.timing.RUN's."""

    target: str = "interpreter"   # "compile-only", "interpreter" or the GPU kind (e.g. "NVIDIA H200")
    compile_only: bool = False
    warmup_ms: float = RUN.warmup_ms
    rep_ms: float = RUN.rep_ms
    flush_l2: bool = RUN.flush_l2
    cuda_graphs: bool = RUN.cuda_graphs
    timeout_s: float = RUN.timeout_s
    baseline: bool = RUN.baseline


@dataclass
class Result:
    """What became of one job. Failures are results too: `status` says which kind, `error` says what."""

    key: str
    status: str
    median_ms: float | None = None
    p10_ms: float | None = None
    p90_ms: float | None = None
    n_reps: int | None = None
    baseline_ms: float | None = None
    flops: float | None = None
    bytes: float | None = None
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    compile_s: float | None = None
    validate_s: float | None = None
    bench_s: float | None = None
    wall_s: float | None = None
    gpu: dict | None = None
    worker: str = ""
    error: str | None = None
    detail: str | None = None
    notes: list = field(default_factory=list)
    artifacts: dict = field(default_factory=dict)
    samples: list | None = None   # per-repetition times in ms (thinned to at most MAX_SAMPLES): what `farm gate` tests
    launch: dict | None = None    # host cost of one launch: {"median_us", "p10_us", "p90_us", "n"} (GPU runs)
    provenance: dict | None = None  # the compiled kernel: regs, spill_stores, spill_loads, shared_bytes, local_bytes,
    #                                 blocks_per_sm, ptxas_version (compiler.resources; stored as columns)
    replace_worker: bool = False  # the worker's state is suspect (poisoned CUDA context): start a fresh one

    def to_dict(self) -> dict:
        # One level of copies (the values below are JSON scalars, lists and dicts that nothing mutates in place once
        # a result is done): dataclasses.asdict's deep copy was half of storing a result (0.17 of 0.35 ms/job).
        return {f: (v.copy() if isinstance(v, (dict, list)) else v)
                for f, v in ((f, getattr(self, f)) for f in _RESULT_FIELDS)}

    @classmethod
    def from_dict(cls, d: dict) -> "Result":
        # (the field names once, not dataclasses.fields per call: a result comes back per job)
        return cls(**{f: d[f] for f in _RESULT_FIELDS if f in d})


_RESULT_FIELDS = tuple(f.name for f in dataclasses.fields(Result))
_JOB_FIELDS = tuple(f.name for f in dataclasses.fields(Job))
