"""A job's inputs and float64 reference: seeded from the run's seed, the workload's name and the shape params,
and cached per process.

The seed leaves out the meta-parameters, options and target: every candidate (and every tuning round) of one
shape is validated, and timed, on the same data, so a worker makes the pristine inputs and the reference of a
(workload, params, seed) once and reuses them for every later job of that shape (a float64 4096^3 matmul
reference takes about a second; a tuning sweep times dozens of candidates per shape). Cached arrays are
read-only and never reach a kernel: the caller gives the interpreter copies and a GPU device uploads. The cache
is bounded in bytes (TILEFARM_WORKER_CACHE_MB, default 2048; 0 turns it off) and evicts the least recently used
entries.
"""
from __future__ import annotations

import collections
import hashlib
import json
import os
import threading
import time
from dataclasses import dataclass

import numpy as np

from farm.jobs import Job


def np_dtype(name: str) -> np.dtype:
    if name == "bfloat16":
        import ml_dtypes
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def canonical(obj) -> str:
    """Stable JSON (sorted keys, no spaces), as farm.planner.canonical."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


def input_seed(job: Job) -> list[int]:
    """The seed of a job's inputs: the run's seed, the workload's name and the canonical shape params.

    Not the job's key: meta-parameters, run options and the target stay out, so every candidate (and every
    tuning round) of one shape is validated, and timed, on the same data, and the worker can reuse it.
    """
    ident = canonical({"workload": job.name or job.workload, "params": job.params})
    return [int(job.seed), int(hashlib.sha256(ident.encode()).hexdigest()[:15], 16)]


def input_rng(job: Job) -> np.random.Generator:
    """The generator `make_inputs` gets for `job` (see input_seed)."""
    return np.random.default_rng(input_seed(job))


def host_arrays(wl, job: Job, rng) -> tuple[dict, dict, list, set]:
    """Host arrays for one launch, made afresh (not cached): (arrays for launch, pristine input copies, output
    specs, names of inputs aliased by in-place outputs). Outputs are uninitialized; compiling, key capture and
    the A/B server use it."""
    params = dict(job.params)
    inputs = wl.make_inputs(params, rng)
    specs = list(wl.output_specs(params))
    pristine = {k: np.array(v, copy=True) for k, v in inputs.items() if isinstance(v, np.ndarray)}
    arrays = dict(inputs)
    aliased = set()
    for spec in specs:
        if spec.inplace:
            aliased.add(spec.inplace)
            arrays[spec.name] = arrays[spec.inplace]
        else:
            arrays[spec.name] = np.empty(spec.shape, np_dtype(spec.dtype))
    return arrays, pristine, specs, aliased


# ---------------------------------------------------------------- the per-process cache

CACHE_ENV = "TILEFARM_WORKER_CACHE_MB"
DEFAULT_CACHE_MB = 2048.0


def cache_limit_bytes() -> int:
    """The input cache's bound: TILEFARM_WORKER_CACHE_MB (MiB, may be fractional; 0 turns the cache off)."""
    text = os.environ.get(CACHE_ENV, "").strip()
    if not text:
        return int(DEFAULT_CACHE_MB * 2**20)
    try:
        mb = float(text)
    except ValueError:
        raise ValueError(f"{CACHE_ENV}={text!r} is not a number of MiB (0 turns the input cache off)") from None
    return max(0, int(mb * 2**20))


@dataclass
class CacheEntry:
    wl: object      # keeps the workload alive, so its id() in the key cannot be reused by another object
    inputs: dict    # name -> pristine input (read-only arrays; other values as make_inputs gave them)
    ref: dict       # output name -> reference (read-only arrays)
    nbytes: int
    make_s: float   # seconds make_inputs + reference took


def _frozen(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


def _nbytes(*dicts) -> int:
    seen, n = set(), 0
    for d in dicts:
        for v in d.values():
            if isinstance(v, np.ndarray) and id(v) not in seen:
                seen.add(id(v))
                n += v.nbytes
    return n


class InputCache:
    """LRU of (pristine inputs, reference outputs) by (workload file and content, canonical params, seed),
    bounded by the bytes of its arrays. One per worker process (`INPUT_CACHE`); jobs of a shape share an entry."""

    def __init__(self, limit_bytes: int | None = None):
        self._limit = limit_bytes  # None: read TILEFARM_WORKER_CACHE_MB at every use
        self._entries: collections.OrderedDict[tuple, CacheEntry] = collections.OrderedDict()
        self._lock = threading.Lock()
        self.nbytes = 0
        self.hits = self.misses = self.evictions = 0

    def limit(self) -> int:
        return cache_limit_bytes() if self._limit is None else self._limit

    def get(self, key: tuple) -> CacheEntry | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return entry

    def put(self, key: tuple, entry: CacheEntry) -> bool:
        """Keep `entry`, evicting the least recently used ones to stay within the bound; False when it does
        not fit at all (or the cache is off)."""
        limit = self.limit()
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self.nbytes -= old.nbytes
            if entry.nbytes > limit:  # used by its job, not kept (and nothing evicted for it)
                return False
            while self._entries and self.nbytes + entry.nbytes > limit:
                _, gone = self._entries.popitem(last=False)
                self.nbytes -= gone.nbytes
                self.evictions += 1
            self._entries[key] = entry
            self.nbytes += entry.nbytes
            return True

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.nbytes = 0
            self.hits = self.misses = self.evictions = 0

    def __len__(self) -> int:
        return len(self._entries)

    def stats(self) -> dict:
        with self._lock:
            return {"entries": len(self._entries), "bytes": self.nbytes, "limit_bytes": self.limit(),
                    "hits": self.hits, "misses": self.misses, "evictions": self.evictions}


INPUT_CACHE = InputCache()


def input_cache_stats() -> dict:
    """This process's input cache: entries, bytes, limit_bytes, hits, misses, evictions."""
    return INPUT_CACHE.stats()


def clear_input_cache() -> None:
    INPUT_CACHE.clear()


def _cache_key(wl, job: Job, params: dict) -> tuple:
    """A workload loaded from a file is known by its path and its sources' hash (farm.loader.source_hash, the
    job key's), so the jobs of one shape share an entry whoever compiles them (the file is loaded once per
    compiler: two objects, the same make_inputs and reference); a workload without a file, by the object itself
    (the entry keeps it alive)."""
    from farm.loader import source_hash

    path = getattr(wl, "source_file", "") or ""
    ident = ("file", path, source_hash(wl)) if path and os.path.isfile(path) else ("object", id(wl))
    return (*ident, getattr(wl, "name", ""), canonical(params), tuple(input_seed(job)))


def inputs_and_reference(wl, job: Job, params: dict) -> tuple[dict, dict, dict | None, bool, float]:
    """(pristine inputs, reference, fresh inputs or None, cache hit, seconds make_inputs + reference took) for
    a job (on a hit, the seconds of the job that made them).

    The pristine inputs and the reference are read-only and may be shared with later jobs: never hand them to
    a kernel. `fresh` is what make_inputs returned on a miss (nobody else holds it: the kernel may have it);
    on a hit it is None and the caller copies what the kernel may write.
    """
    if cache_limit_bytes() > 0:  # also reports a bad TILEFARM_WORKER_CACHE_MB before any work
        key = _cache_key(wl, job, params)
        entry = INPUT_CACHE.get(key)
        if entry is not None:
            return entry.inputs, entry.ref, None, True, entry.make_s
    else:
        key = None
    t0 = time.perf_counter()
    fresh = wl.make_inputs(params, input_rng(job))
    pristine = {k: _frozen(np.array(v, copy=True)) if isinstance(v, np.ndarray) else v for k, v in fresh.items()}
    ref = wl.reference({k: v for k, v in pristine.items() if isinstance(v, np.ndarray)}, params)
    ref = {k: _frozen(np.asarray(v)) for k, v in ref.items()}
    make_s = time.perf_counter() - t0
    if key is not None:
        INPUT_CACHE.put(key, CacheEntry(wl, pristine, ref, _nbytes(pristine, ref), make_s))
    return pristine, ref, fresh, False, make_s
