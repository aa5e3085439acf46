"""Kernel timing the careful way: warm up by time, flush L2 between repetitions, CUDA events per repetition,
report median and spread. Needs only cuda-python (no torch).

Modelled on Triton's ``triton.testing.do_bench``: estimate one call's cost, derive warm-up and repetition
counts from the time budgets, then time each repetition with its own pair of events so the spread is real.
"""

from __future__ import annotations

import sys
import time
from typing import Any, Callable, Sequence

import numpy as np

from .cuda import check, device_properties, driver, ensure_context

__all__ = ["do_bench", "launch_overhead_us", "L2Flusher", "summarize"]


class L2Flusher:
    """Evicts the L2 cache by writing a buffer several times its size (cuMemsetD32Async).

    Sized from the device's L2 (4x, at least 32 MiB): H200's 60 MiB L2 gets a 240 MiB buffer. Writing
    rather than reading leaves L2 holding dirty lines of *this* buffer, none of the kernel's data.
    """

    def __init__(self, nbytes: int | None = None):
        ensure_context()
        if nbytes is None:
            l2 = device_properties().l2_bytes or (50 << 20)
            nbytes = max(4 * l2, 32 << 20)
        self.nbytes = (nbytes + 3) // 4 * 4
        self.ptr = check(driver().cuMemAlloc(self.nbytes), f"cuMemAlloc({self.nbytes}) for the L2 flush buffer")

    def __call__(self, stream: Any = None) -> None:
        """Enqueue the flush on ``stream`` (default stream when None)."""
        check(driver().cuMemsetD32Async(self.ptr, 0, self.nbytes // 4, stream), "cuMemsetD32Async(L2 flush)")

    def close(self) -> None:
        """Free the buffer now (skipped at interpreter shutdown: the driver may be gone; the OS frees it)."""
        if self.ptr is not None and not sys.is_finalizing():
            try:
                driver().cuMemFree(self.ptr)
            except Exception:
                pass
            self.ptr = None

    def __del__(self):
        self.close()


_flushers: dict[int, L2Flusher] = {}


def _flusher() -> L2Flusher:
    # One buffer per process and device: allocating 240 MiB per do_bench call would dominate short runs.
    from .cuda import current_device

    dev = current_device()
    f = _flushers.get(dev)
    if f is None:
        f = _flushers[dev] = L2Flusher()
    return f


class _Events:
    """A pool of CUDA events (created once per do_bench call, destroyed at the end)."""

    def __init__(self, n: int):
        d = driver()
        flags = d.CUevent_flags.CU_EVENT_DEFAULT
        self.events = [check(d.cuEventCreate(flags), "cuEventCreate") for _ in range(n)]

    def close(self) -> None:
        d = driver()
        for e in self.events:
            try:
                d.cuEventDestroy(e)
            except Exception:
                pass
        self.events = []


def summarize(samples_ms: Sequence[float]) -> dict:
    """median/p10/p90/mean/min/max (ms) and n of a list of timings."""
    a = np.asarray(samples_ms, dtype=np.float64)
    return {
        "median_ms": float(np.median(a)),
        "p10_ms": float(np.quantile(a, 0.1)),
        "p90_ms": float(np.quantile(a, 0.9)),
        "mean_ms": float(a.mean()),
        "min_ms": float(a.min()),
        "max_ms": float(a.max()),
        "n": int(a.size),
    }


def do_bench(fn: Callable[[], Any], warmup_ms: float = 25, rep_ms: float = 100, flush_l2: bool = True,
             return_samples: bool = False, stream: Any = None, max_reps: int = 100_000) -> dict:
    """Time ``fn()`` (which enqueues GPU work on ``stream``, default: the legacy default stream).

    Returns ``{"median_ms", "p10_ms", "p90_ms", "mean_ms", "min_ms", "max_ms", "n"}`` (+ ``"samples"``, the
    per-repetition times in ms, when ``return_samples``). Each repetition is bracketed by its own pair of
    CUDA events; with ``flush_l2`` the L2 is flushed before each one, outside the events.
    """
    ensure_context()
    d = driver()
    flush = _flusher() if flush_l2 else None

    fn()  # first call: compiles/loads lazily in many callers; never timed
    check(d.cuStreamSynchronize(stream), "cuStreamSynchronize")

    # Estimate one repetition (including the flush, which costs wall time even though it is not timed).
    ev = _Events(2)
    try:
        start, end = ev.events
        n_est = 5
        check(d.cuEventRecord(start, stream), "cuEventRecord")
        for _ in range(n_est):
            if flush is not None:
                flush(stream)
            fn()
        check(d.cuEventRecord(end, stream), "cuEventRecord")
        check(d.cuEventSynchronize(end), "cuEventSynchronize")
        est_ms = max(float(check(d.cuEventElapsedTime(start, end), "cuEventElapsedTime")) / n_est, 1e-4)
    finally:
        ev.close()

    n_warmup = max(1, int(warmup_ms / est_ms))
    n_rep = max(1, min(int(rep_ms / est_ms), max_reps))

    # Warm up by time: enough calls to fill warmup_ms (clocks ramp up, caches/TLBs settle).
    for _ in range(n_warmup):
        if flush is not None:
            flush(stream)
        fn()

    ev = _Events(2 * n_rep)
    try:
        evs = ev.events
        record = d.cuEventRecord
        for i in range(n_rep):
            if flush is not None:
                flush(stream)
            record(evs[2 * i], stream)
            fn()
            record(evs[2 * i + 1], stream)
        check(d.cuEventSynchronize(evs[-1]), "cuEventSynchronize")
        samples = []
        for i in range(n_rep):
            samples.append(float(check(d.cuEventElapsedTime(evs[2 * i], evs[2 * i + 1]), "cuEventElapsedTime")))
    finally:
        ev.close()
    out = summarize(samples)
    if return_samples:
        out["samples"] = samples
    return out


def launch_overhead_us(launch: Callable[[], Any], n: int = 10_000, batch: int = 100) -> dict:
    """Host cost of one call of ``launch()`` in microseconds, without synchronizing per launch.

    Times batches of ``batch`` calls with ``perf_counter`` and synchronizes (untimed) between batches so the
    driver's launch queue never fills up -- a full queue would make us time the GPU, not the host.
    Returns ``{"median_us", "p10_us", "p90_us", "min_us", "n"}`` over per-batch means.
    """
    ensure_context()
    d = driver()
    for _ in range(min(batch, n)):
        launch()
    check(d.cuCtxSynchronize(), "cuCtxSynchronize")
    per = []
    pc = time.perf_counter
    for _ in range(max(1, n // batch)):
        t0 = pc()
        for _ in range(batch):
            launch()
        t1 = pc()
        per.append((t1 - t0) * 1e6 / batch)
        check(d.cuCtxSynchronize(), "cuCtxSynchronize")
    a = np.asarray(per)
    return {"median_us": float(np.median(a)), "p10_us": float(np.quantile(a, 0.1)),
            "p90_us": float(np.quantile(a, 0.9)), "min_us": float(a.min()), "n": int(a.size * batch)}
