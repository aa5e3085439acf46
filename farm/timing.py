"""How a job is timed on a GPU: the one `Timing` model, the presets its callers start from, and the adapters to
the compiler's `do_bench` and launch-cost probe.

Every timing default of the farm is here. The callers differ on purpose, each as a named preset of `Timing`:

- `RUN`: `farm run` (a config's `timing:`, `RunOptions`' defaults, `farm repro`'s one-job config): 25 ms of
  warm-up, then about 100 ms measured per job.
- `TUNE`: the first round of `farm tune`'s successive halving: 10 ms warm-up, 10 ms per candidate; each later
  round times eta x longer, up to `RUN.rep_ms` (the last round measures as long as a `farm run` job).
- `AB`: one side of one round of `farm gate`'s A/B re-measurement: 5 ms warm-up (the server's kernel is warm:
  it ran the round before), 50 ms measured; sides alternate for `ab_rounds` rounds.

The A/B server (`farm/ab_server.py`) has no defaults of its own: every bench request carries the client's
`warmup_ms`, `rep_ms` and `flush_l2`.
"""
from __future__ import annotations

import inspect

from pydantic import BaseModel, ConfigDict, Field

MAX_SAMPLES = 2000  # samples kept per result: enough for a bootstrap, small enough to store (~20 kB)


class Timing(BaseModel):
    """How each job is timed on a GPU (ignored without one)."""

    model_config = ConfigDict(extra="forbid")

    warmup_ms: float = Field(25.0, gt=0, description="warm-up by time before measuring")
    rep_ms: float = Field(100.0, gt=0, description="measure for about this long")
    flush_l2: bool = Field(True, description="flush L2 between repetitions")
    cuda_graphs: bool = Field(False, description="replay launches from a CUDA graph (less launch overhead)")
    timeout_s: float = Field(120.0, gt=0, description="a job running longer is killed and recorded as a timeout")
    baseline: bool = Field(True, description="also time the workload's reference implementation for speedups")

    def bench_request(self) -> dict:
        """What one `do_bench` call needs: warmup_ms, rep_ms, flush_l2 (the A/B server's bench request)."""
        return {"warmup_ms": self.warmup_ms, "rep_ms": self.rep_ms, "flush_l2": self.flush_l2}


RUN = Timing()
TUNE = Timing(warmup_ms=10.0, rep_ms=10.0, baseline=False)
AB = Timing(warmup_ms=5.0, rep_ms=50.0, baseline=False)


def bench(fn, opts) -> dict:
    """compiler.runtime.do_bench with `opts`' warmup_ms, rep_ms, flush_l2 and cuda_graphs (a Timing or a
    RunOptions): {"median_ms", "p10_ms", "p90_ms", "n", "samples", ...}."""
    from compiler.runtime import do_bench
    kwargs = dict(warmup_ms=opts.warmup_ms, rep_ms=opts.rep_ms, flush_l2=opts.flush_l2, return_samples=True)
    if opts.cuda_graphs and "cuda_graphs" in inspect.signature(do_bench).parameters:
        kwargs["cuda_graphs"] = True
    return do_bench(fn, **kwargs)


def thin(samples, n: int = MAX_SAMPLES) -> list[float] | None:
    """At most `n` samples, evenly spaced in time order (drift within the run stays visible), rounded to 6
    significant digits: what the store keeps for `farm gate`."""
    if not samples:
        return None
    import numpy as np  # here, not at the top: the store's commands import this module and never need NumPy
    idx = np.linspace(0, len(samples) - 1, min(n, len(samples))).round().astype(int)
    return [float(f"{samples[i]:.6g}") for i in idx]


def launch_cost(fn) -> dict | None:
    """Host cost of one launch (`compiler.runtime.launch_overhead_us`), a short measurement; None if unavailable."""
    try:
        from compiler.runtime import launch_overhead_us
    except ImportError:
        return None
    # 1000 launches in batches of 50 (20 batch means, so p10/p90 mean something): ~10 ms for launch-bound kernels,
    # which is where the host cost matters (the caller skips it for long kernels, whose repeated runs would
    # dominate the job's time).
    return launch_overhead_us(fn, n=1000, batch=50)
