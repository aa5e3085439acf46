"""`farm gate`: is a run slower than its baseline? Job by job, on the samples, without failing on noise.

Jobs are matched on what they measure, not on their content key (which also hashes the kernel source and the
compiler version, the very things a change changes): workload name, shape parameters with dtype, meta-parameters,
the compiler that built the kernel (tilefarm with tilefarm, triton with triton: never across) and the GPU kind
(both runs must have the same target).

The statistic: a bootstrap confidence interval of the ratio of medians (new / baseline), from the stored
per-repetition samples. We use it rather than a Mann-Whitney U test because the question is about an effect
size ("more than 5% slower?"), and an interval in the threshold's own units answers it directly, while a rank
test only says "different" -- with a thousand samples per side, it says that of a 0.5% clock wobble too. The
resampling is in blocks (length ~ n^(1/3)), since consecutive repetitions are correlated (clocks and
temperature drift), which would make a plain bootstrap too confident. The block length is chosen from each
side's own autocorrelation (Politis & White's rule), never shorter than n^(1/3): with strongly correlated
samples n^(1/3) blocks were far too short (at lag-1 correlation 0.9 the 99% interval excluded 1 for 12% of
equal pairs; scripts/eval_stats_libs.py).

A job is *suspect* when its interval lies wholly above 1 (significant) and its ratio exceeds 1 + threshold
(large enough to matter). Samples within one run cannot see run-to-run swings (another tenant, a different
clock state: 10-30% on shared machines), so a suspect is re-measured back to back -- baseline and new code
alternating on the same GPU (A, B, A, B, ...) -- through a `remeasure(base_row, new_row) -> (samples_a,
samples_b)` callable, and fails only if the A/B interval says the same. Without a way to re-measure, a suspect
fails ("not re-measured").

Also gated: correctness (a job good in the baseline and not good now fails), compile time (per job, against
`compile_threshold` and an absolute floor; sub-`compile_min_s` times are disk-cache hits and not compared) and
the host cost of a launch (when both runs recorded it). Stores older than the samples column fall back to the
recorded p10/p90: a regression there needs the new p10 above the old p90.
"""
from __future__ import annotations

import html
import json
import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from farm import FarmError
from farm.config import GateConfig
from farm.jobs import GOOD, TRANSIENT
from farm.report import meta_str, shape_str
from farm.timing import AB

Remeasure = Callable[[dict, dict], "tuple[list[float], list[float]] | None"]

# Verdicts: the ones in FAILING fail the gate.
SAME, FASTER, SLOWER, NOISE = "same", "faster", "slower", "noise"
BROKEN, STILL_FAILING, FIXED = "broken", "still failing", "fixed"
NEW, MISSING, NOT_RUN, NO_TIMING = "new", "missing", "not run", "no timing"
COMPILE_SLOWER, LAUNCH_SLOWER = "compile slower", "launch slower"
FAILING = (SLOWER, BROKEN, NOT_RUN, COMPILE_SLOWER, LAUNCH_SLOWER)


class GateInputError(FarmError):
    """The gate cannot compare what it was given (unknown run, different GPU kinds, nothing in common): exit 2."""


# ---------------------------------------------------------------- statistics


def ratio_ci(base, new, alpha: float = 0.01, n_boot: int = 2000, seed: int = 0) -> tuple[float, float, float]:
    """(median(new) / median(base), lower, upper): a moving-block bootstrap interval of level 1 - alpha.

    Each side is resampled on its own in blocks of `block_length` consecutive samples (keeps the correlation
    of neighbouring repetitions); the interval is the percentile interval of the resampled ratios.
    """
    a, b = np.asarray(base, dtype=np.float64), np.asarray(new, dtype=np.float64)
    if a.size == 0 or b.size == 0:
        raise ValueError("ratio_ci needs samples on both sides")
    rng = np.random.default_rng(seed)
    ratio = float(np.median(b) / np.median(a))
    meds = [_block_medians(x, n_boot, rng) for x in (a, b)]
    boots = meds[1] / meds[0]
    lo, hi = np.quantile(boots, [alpha / 2, 1 - alpha / 2])
    return ratio, float(lo), float(hi)


def block_length(x) -> int:
    """The moving-block bootstrap's block length for the samples `x`: Politis & White's (2004) automatic choice,
    with Patton, Politis & White's (2009) constant for overlapping blocks, never below round(n^(1/3)) (the rule
    used alone before) nor above min(3 sqrt(n), n / 3).

    The rule: find the first lag m after which K consecutive autocorrelations are insignificant
    (|rho| < 2 sqrt(log10(n) / n), K = max(5, sqrt(log10 n))); over lags |k| <= M = 2m, weigh the
    autocovariances R(k) with the flat-top window w (1 up to M/2, then falling linearly to 0 at M); then
    L = (2 G^2 / D)^(1/3) n^(1/3) with G = sum w |k| R(k) and D = 4/3 (sum w R(k))^2.
    """
    x = np.asarray(x, dtype=np.float64)
    n = x.size
    floor = max(1, int(round(n ** (1 / 3))))
    if n < 8:
        return floor
    ceiling = max(floor, int(math.ceil(min(3 * math.sqrt(n), n / 3))))
    d = x - x.mean()
    r0 = float(d @ d) / n
    if r0 <= 0:
        return floor
    kn = max(5, int(math.ceil(math.sqrt(math.log10(n)))))
    m_max = int(math.ceil(math.sqrt(n))) + kn
    lags = min(n - 1, m_max + kn)
    r = np.array([r0] + [float(d[:-k] @ d[k:]) / n for k in range(1, lags + 1)])
    bound = 2 * math.sqrt(math.log10(n) / n)
    small = np.abs(r[1:] / r0) < bound  # small[k - 1]: lag k insignificant
    m = next((k for k in range(0, lags - kn + 1) if small[k:k + kn].all()), m_max)
    M = min(2 * max(m, 1), lags)
    k = np.arange(1, M + 1)
    t = k / M
    w = np.where(t <= 0.5, 1.0, 2 * (1 - t))
    g = 2 * float(np.sum(w * k * r[1:M + 1]))
    s = r0 + 2 * float(np.sum(w * r[1:M + 1]))
    if s <= 0 or g == 0:
        return floor
    L = (2 * g * g / (4 / 3 * s * s)) ** (1 / 3) * n ** (1 / 3)
    return int(min(ceiling, max(floor, round(L))))


def _block_medians(x: np.ndarray, n_boot: int, rng) -> np.ndarray:
    n = x.size
    if n == 1:
        return np.full(n_boot, x[0])
    L = block_length(x)
    nb = math.ceil(n / L)
    starts = rng.integers(0, n - L + 1, size=(n_boot, nb))
    idx = (starts[:, :, None] + np.arange(L)).reshape(n_boot, -1)[:, :n]
    return np.median(x[idx], axis=1)


def classify(ratio: float, lo: float, hi: float, threshold: float) -> str:
    """SLOWER when significant (interval above 1) and larger than the threshold; FASTER the mirror; else SAME."""
    if lo > 1.0 and ratio > 1.0 + threshold:
        return SLOWER
    if hi < 1.0 and ratio < 1.0 / (1.0 + threshold):
        return FASTER
    return SAME


# ---------------------------------------------------------------- the comparison


@dataclass
class JobVerdict:
    """One matched job: what was compared, the numbers, and the verdict (fails when verdict is in FAILING)."""

    workload: str
    shape: str
    dtype: str
    meta: str
    verdict: str
    base_ms: float | None = None
    new_ms: float | None = None
    ratio: float | None = None
    lo: float | None = None
    hi: float | None = None
    threshold: float = 0.0
    ab_ratio: float | None = None
    ab_lo: float | None = None
    ab_hi: float | None = None
    method: str = ""
    notes: list = field(default_factory=list)
    base_result: int | None = None
    new_result: int | None = None
    resource_changes: list = field(default_factory=list)  # regs/spills/shared memory that changed (a regression)
    compiler: str = "tilefarm"

    @property
    def failed(self) -> bool:
        return self.verdict in FAILING

    @property
    def label(self) -> str:
        """The workload, and the compiler when it is not the default one."""
        return self.workload + (f" [{self.compiler}]" if self.compiler != "tilefarm" else "")

    @property
    def name(self) -> str:
        return " ".join(x for x in (self.label, self.shape, self.dtype, self.meta) if x)

    def change(self) -> str:
        return "" if self.ratio is None else f"{(self.ratio - 1) * 100:+.1f}%"

    def interval(self) -> str:
        if self.lo is None:
            return ""
        return f"[{(self.lo - 1) * 100:+.1f}, {(self.hi - 1) * 100:+.1f}]%"

    def ab(self) -> str:
        if self.ab_ratio is None:
            return ""
        return f"{(self.ab_ratio - 1) * 100:+.1f}% [{(self.ab_lo - 1) * 100:+.1f}, {(self.ab_hi - 1) * 100:+.1f}]"


@dataclass
class GateResult:
    """The whole verdict: per-job lines, and whether the gate passes."""

    run_id: int
    baseline_id: int
    target: str
    jobs: list[JobVerdict]
    alpha: float = 0.01
    remeasured: int = 0
    shift: float = 1.0  # run-wide drift (median ratio over matched jobs)

    @property
    def failures(self) -> list[JobVerdict]:
        return [j for j in self.jobs if j.failed]

    @property
    def passed(self) -> bool:
        return not self.failures

    def counts(self) -> dict:
        out: dict[str, int] = {}
        for j in self.jobs:
            out[j.verdict] = out.get(j.verdict, 0) + 1
        return out

    def summary(self) -> str:
        c = ", ".join(f"{n} {v}" for v, n in sorted(self.counts().items()))
        head = "PASS" if self.passed else f"FAIL ({len(self.failures)} failing)"
        return (f"{head}: run {self.run_id} vs baseline {self.baseline_id} on {self.target}: {c or 'no jobs'}"
                + (f"; {self.remeasured} re-measured A/B" if self.remeasured else ""))


def ident(row: dict, target: str = "") -> str:
    """What a job measures, minus everything run-specific (source, compiler version, seed, run). The compiler is
    part of it: a compiler's job is only ever compared with the same compiler's (tilefarm with tilefarm, triton
    with triton), never across. So is the GPU kind: the job's own in a run timed on several kinds, else the
    run's `target` (a single-kind run's jobs name their kind or none, and match either way)."""
    return json.dumps([row["workload"], row["params"], row["meta"], row.get("compiler") or "tilefarm",
                       row.get("gpu_kind") or target], sort_keys=True, default=str)


def resolve_baseline(store, run_id: int, ref: str) -> int:
    """The baseline run for `run_id`: an id, `latest` (the newest other run on the same GPU kind) or a label
    (the newest run with that label on the same GPU kind, other than `run_id`)."""
    target = store.run(run_id)["target"]
    ref = str(ref)
    if ref.isdigit():
        return store.resolve(ref)
    if ref == "latest":
        rid = store.find_run(target=target, other_than=run_id)
        if rid is None:
            raise GateInputError(f"no other run on {target} in {store.path} to compare run {run_id} with")
        return rid
    if ref.startswith("latest~"):
        return store.resolve(ref)
    rid = store.find_run(label=ref, target=target, other_than=run_id)
    if rid is None:
        raise GateInputError(f"no run labelled {ref!r} on {target} other than run {run_id} in {store.path} "
                             "(see `farm runs`)")
    return rid


def compare(store, run_id: int, baseline_id: int, cfg: GateConfig | None = None,
            remeasure: Remeasure | None = None, threshold: float | None = None) -> GateResult:
    """Gate run `run_id` against `baseline_id` (see the module docstring). `threshold` overrides the config's
    global kernel-time threshold (per-workload overrides still apply)."""
    cfg = cfg or GateConfig()
    if threshold is not None:
        cfg = cfg.model_copy(update={"threshold": threshold})
    info, binfo = store.run(run_id), store.run(baseline_id)
    if info["target"] != binfo["target"]:
        raise GateInputError(f"run {run_id} ran on {info['target']} but baseline {baseline_id} on "
                             f"{binfo['target']}: timings only compare on the same GPU kind")
    new_rows = store.rows(run_id, samples=True)
    target = info["target"]  # the baseline's too (checked above)
    base_rows = {ident(r, target): r for r in store.rows(baseline_id, samples=True)}
    result = GateResult(run_id, baseline_id, info["target"], [], alpha=cfg.alpha)
    result.shift = run_shift(base_rows, new_rows, target)
    seen = set()
    for r in new_rows:
        k = ident(r, target)
        seen.add(k)
        b = base_rows.get(k)
        result.jobs.append(_judge(b, r, cfg, remeasure, result))
    for k, b in base_rows.items():
        if k not in seen:
            result.jobs.append(_verdict(b, MISSING, notes=["in the baseline, not in this run (sweep changed?)"]))
    if not any(j.verdict not in (NEW, MISSING) for j in result.jobs) and result.jobs:
        raise GateInputError(f"run {run_id} and baseline {baseline_id} have no job in common")
    return result


def run_shift(base_rows: dict, new_rows: list, target: str = "") -> float:
    """The whole run's speed shift: the median over matched timed jobs of new/baseline medians (1.0 with fewer
    than 3 such jobs). Most jobs of a sweep do not change, so this is the machine's drift between the runs."""
    ratios = [r["median_ms"] / base_rows[ident(r, target)]["median_ms"] for r in new_rows
              if r.get("median_ms") and base_rows.get(ident(r, target), {}).get("median_ms")]
    return float(np.median(ratios)) if len(ratios) >= 3 else 1.0


def _verdict(row: dict, verdict: str, **kw) -> JobVerdict:
    return JobVerdict(row["workload"], shape_str(row["params"]), str(row["params"].get("dtype", "")),
                      meta_str(row["meta"]), verdict, compiler=row.get("compiler") or "tilefarm", **kw)


def _good(status: str) -> bool:
    return status in GOOD


def _judge(b: dict | None, r: dict, cfg: GateConfig, remeasure: Remeasure | None, result: GateResult) -> JobVerdict:
    lim = cfg.limits(r["workload"])
    v = _verdict(r, SAME, threshold=lim["threshold"], new_result=r.get("result_id"),
                 base_result=b.get("result_id") if b else None)
    if b is None:
        v.verdict = NEW
        return v
    bs, ns = b["status"], r["status"]
    v.base_ms, v.new_ms = b.get("median_ms"), r.get("median_ms")
    # Correctness first: a job that was good and is not any more fails whatever its speed.
    if ns == "pending":
        if _good(bs):
            v.verdict, v.notes = NOT_RUN, ["no result in this run (interrupted? `farm run --resume`)"]
        else:
            v.verdict = STILL_FAILING
        return v
    if _good(bs) and not _good(ns):
        v.verdict = BROKEN
        first = (r.get("error") or "").strip().splitlines()[:1]
        v.notes = [f"{bs} in the baseline, {ns} now" + (f": {first[0]}" if first else "")]
        if ns in TRANSIENT:
            v.notes.append("a hang or crash counts as broken")
        return v
    if not _good(bs):
        v.verdict = FIXED if _good(ns) else STILL_FAILING
        return v
    _judge_time(b, r, v, lim["threshold"], cfg, remeasure, result)
    if v.verdict in (SAME, FASTER, NOISE, NO_TIMING):
        _judge_compile(b, r, v, lim["compile_threshold"], cfg)
    if v.verdict in (SAME, FASTER, NOISE, NO_TIMING):
        _judge_launch(b, r, v, lim["launch_threshold"], cfg, remeasure, result)
    if v.failed:  # what ptxas made of the kernel differently: the usual first lead on a regression
        v.resource_changes = resource_changes(b, r)
        if v.resource_changes:
            v.notes.append("the kernel changed: " + "; ".join(v.resource_changes))
    return v


def _kib(n: int) -> str:
    return f"{n / 1024:.1f} KiB" if n >= 1024 else f"{n} B"


def resource_changes(b: dict, r: dict) -> list[str]:
    """The differences in registers, spills, shared memory, local memory and blocks per SM between a baseline
    row and a new row (both as the store gives them), spills first; [] where either has none recorded."""
    out = []

    def both(k):
        x, y = b.get(k), r.get(k)
        return (x, y) if x is not None and y is not None and x != y else None

    st, ld = both("spill_stores"), both("spill_loads")
    if st or ld:
        out.append(f"spills {b.get('spill_stores')}/{b.get('spill_loads')} -> {r.get('spill_stores')}/"
                   f"{r.get('spill_loads')} B stored/loaded per thread")
    for key, name, fmt in (("regs", "registers per thread", str), ("shared_bytes", "shared memory", _kib),
                           ("local_bytes", "local memory", _kib), ("blocks_per_sm", "blocks per SM", str)):
        d = both(key)
        if d:
            out.append(f"{name} {fmt(d[0])} -> {fmt(d[1])}")
    if b.get("ptxas_version") and r.get("ptxas_version") and b["ptxas_version"] != r["ptxas_version"]:
        out.append(f"ptxas {b['ptxas_version']} -> {r['ptxas_version']}")
    return out


def _judge_time(b, r, v: JobVerdict, threshold: float, cfg: GateConfig, remeasure, result: GateResult):
    if not (b.get("median_ms") and r.get("median_ms")):
        v.verdict = NO_TIMING
        return
    sa, sb = b.get("samples"), r.get("samples")
    if sa and sb:
        v.ratio, v.lo, v.hi = ratio_ci(sa, sb, cfg.alpha, cfg.n_boot)
        v.method = "bootstrap"
    else:  # an older store: only the recorded spread
        v.ratio = r["median_ms"] / b["median_ms"]
        v.method = "p10/p90"
        if None not in (b.get("p10_ms"), b.get("p90_ms"), r.get("p10_ms"), r.get("p90_ms")):
            v.lo, v.hi = r["p10_ms"] / b["p90_ms"], r["p90_ms"] / b["p10_ms"]
        else:
            v.lo = v.hi = v.ratio
        v.notes.append("no samples stored: compared on p10/p90")
    v.verdict = classify(v.ratio, v.lo, v.hi, threshold)
    shift = result.shift
    if v.verdict != SLOWER and shift < 1.0:
        # The run as a whole got faster (machine drift): a job slower *relative to the rest* is a suspect too,
        # or a real regression could hide behind the drift. The A/B re-measurement decides.
        if classify(v.ratio / shift, v.lo / shift, v.hi / shift, threshold) == SLOWER:
            v.verdict = SLOWER
            v.notes.append(f"slower than the rest of the run ({(v.ratio / shift - 1) * 100:+.1f}% after the "
                           f"run-wide shift of {(shift - 1) * 100:+.1f}%)")
    if v.verdict != SLOWER:
        return
    # A suspect: re-measure both sides back to back before failing it.
    if remeasure is None or not cfg.remeasure:
        v.notes.append("not re-measured (no GPU re-measurement available)")
        return
    if result.remeasured >= cfg.max_remeasure:
        v.notes.append(f"not re-measured (max_remeasure={cfg.max_remeasure} reached)")
        return
    try:
        got = remeasure(b, r)
    except Exception as e:  # a failed re-measurement leaves the first verdict standing, saying why
        v.notes.append(f"re-measurement failed: {type(e).__name__}: {e}")
        return
    if got is None:
        why = getattr(remeasure, "why", None)
        v.notes.append(f"not re-measured ({why or 'a side cannot be rebuilt here'})")
        return
    result.remeasured += 1
    v.ab_ratio, v.ab_lo, v.ab_hi = ratio_ci(got[0], got[1], cfg.alpha, cfg.n_boot)
    if classify(v.ab_ratio, v.ab_lo, v.ab_hi, threshold) == SLOWER:
        v.notes.append("confirmed by A/B re-measurement")
    else:
        v.verdict = NOISE
        v.notes.append("A/B re-measurement shows no regression: run-to-run noise")


def _judge_compile(b, r, v: JobVerdict, threshold: float, cfg: GateConfig):
    cb, cn = b.get("compile_s"), r.get("compile_s")
    if cb is None or cn is None or cb < cfg.compile_min_s or cn < cfg.compile_min_s:
        return  # one side was a cache hit (or not compiled): nothing to compare
    if cn > cb * (1 + threshold) and cn - cb > cfg.compile_floor_s:
        v.verdict = COMPILE_SLOWER
        v.notes.append(f"compile {cb:.2f} s -> {cn:.2f} s ({(cn / cb - 1) * 100:+.0f}%, limit "
                       f"{threshold * 100:.0f}%)")


def _launch_slower(mb: float, mn: float, threshold: float, cfg: GateConfig) -> bool:
    return mn > mb * (1 + threshold) and mn - mb > cfg.launch_floor_us


def _judge_launch(b, r, v: JobVerdict, threshold: float, cfg: GateConfig, remeasure=None,
                  result: GateResult | None = None):
    lb, ln = b.get("launch"), r.get("launch")
    if not lb or not ln or not lb.get("median_us") or not ln.get("median_us"):
        return
    mb, mn = lb["median_us"], ln["median_us"]
    separated = ln.get("p10_us", mn) > lb.get("p90_us", mb)  # spreads do not overlap
    if not (_launch_slower(mb, mn, threshold, cfg) and separated):
        return
    note = f"launch {mb:.1f} us -> {mn:.1f} us ({(mn / mb - 1) * 100:+.0f}%, limit {threshold * 100:.0f}%)"
    # Host timings of one run swing with whatever else the host does at that moment: a suspect is timed again,
    # both sides alternating on this machine, before it fails.
    ab = getattr(remeasure, "launch", None)
    if ab is not None and cfg.remeasure and (result is None or result.remeasured < cfg.max_remeasure):
        try:
            got = ab(b, r)
        except Exception as e:
            got = None
            note += f"; launch re-measurement failed: {type(e).__name__}: {e}"
        if got is not None:
            if result is not None:
                result.remeasured += 1
            ma, mn2 = float(np.median(got[0])), float(np.median(got[1]))
            if not _launch_slower(ma, mn2, threshold, cfg):
                v.notes.append(note + f"; A/B re-measurement {ma:.1f} us -> {mn2:.1f} us: host noise")
                return
            note += f"; confirmed by A/B re-measurement ({ma:.1f} us -> {mn2:.1f} us)"
    v.verdict = LAUNCH_SLOWER
    v.notes.append(note)


# ---------------------------------------------------------------- outputs


def _ms(x) -> str:
    if x is None:
        return ""
    return f"{x * 1e3:.1f} us" if x < 1 else f"{x:.3f} ms"


VERDICT_STYLE = {SAME: "green", FASTER: "bold green", NOISE: "yellow", FIXED: "green", NEW: "dim", MISSING: "dim",
                 NO_TIMING: "dim", STILL_FAILING: "yellow"}


def table(res: GateResult, all_rows: bool = True):
    """A rich table of the verdicts (failures first)."""
    from rich import box
    from rich.table import Table
    from rich.text import Text
    t = Table(title=res.summary(), title_justify="left", header_style="bold", box=box.SIMPLE_HEAD)
    for c, j in (("workload", "left"), ("shape", "left"), ("dtype", "left"), ("meta", "left"),
                 ("baseline", "right"), ("new", "right"), ("change", "right"),
                 (f"{(1 - res.alpha) * 100:.0f}% interval", "right"), ("A/B", "right"), ("limit", "right"),
                 ("verdict", "left"), ("why", "left")):
        t.add_column(c, justify=j, no_wrap=c in ("workload", "verdict", "baseline", "new"))
    rows = sorted(res.jobs, key=lambda j: (not j.failed, j.verdict == SAME))
    for j in rows if all_rows else [j for j in rows if j.verdict != SAME]:
        style = "bold red" if j.failed else VERDICT_STYLE.get(j.verdict, "")
        # Text() everywhere: kernel names and messages are shown as typed, never read as rich markup.
        t.add_row(*(Text(x) for x in (j.label, j.shape, j.dtype, j.meta, _ms(j.base_ms), _ms(j.new_ms),
                                      j.change(), j.interval(), j.ab(), f"{j.threshold * 100:.0f}%")),
                  Text(j.verdict, style=style), Text("; ".join(j.notes)))
    return t


def _md(s: str) -> str:
    """Markdown table cell: HTML-escaped (a PR comment renders HTML) and pipes escaped."""
    return html.escape(str(s)).replace("|", "\\|").replace("\n", " ")


def to_markdown(res: GateResult, max_rows: int = 50) -> str:
    """A pull-request comment: the summary line, then a table of everything that is not unchanged."""
    icon = ":white_check_mark:" if res.passed else ":x:"
    lines = [f"### {icon} farm gate: {'pass' if res.passed else 'fail'}", "", _md(res.summary()), ""]
    shown = sorted([j for j in res.jobs if j.verdict != SAME], key=lambda j: not j.failed)
    head = ["", "workload", "shape", "dtype", "meta", "baseline", "new", "change",
            f"{(1 - res.alpha) * 100:.0f}% interval", "A/B", "limit", "verdict", "why"]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for j in shown[:max_rows]:
        cells = [_md(c) for c in (j.label, j.shape, j.dtype, j.meta, _ms(j.base_ms), _ms(j.new_ms), j.change(),
                                  j.interval(), j.ab(), f"{j.threshold * 100:.0f}%")]
        verdict = f"**{j.verdict}**" if j.failed else j.verdict
        lines.append("| " + " | ".join([":x:" if j.failed else "", *cells, verdict, _md("; ".join(j.notes))]) + " |")
    if len(shown) > max_rows:
        lines.append(f"\n... and {len(shown) - max_rows} more")
    n_same = sum(j.verdict == SAME for j in res.jobs)
    lines += ["", f"{n_same} jobs unchanged. A job fails when its slowdown is significant (the "
              f"{(1 - res.alpha) * 100:.0f}% bootstrap interval of the ratio of medians lies above 1), larger "
              "than its limit, and confirmed by an A/B re-measurement on the same GPU."]
    return "\n".join(lines) + "\n"


def to_junit(res: GateResult) -> str:
    """JUnit XML: one testcase per job (classname = workload), failures for failing verdicts."""
    suite = ET.Element("testsuite", name=f"farm gate run {res.run_id} vs {res.baseline_id}",
                       tests=str(len(res.jobs)), failures=str(len(res.failures)), errors="0",
                       skipped=str(sum(j.verdict in (NEW, MISSING, NO_TIMING) for j in res.jobs)))
    for j in res.jobs:
        case = ET.SubElement(suite, "testcase", classname=f"farm.{j.workload}",
                             name=" ".join(x for x in (j.shape, j.dtype, j.meta) if x) + (
                                 f" [{j.compiler}]" if j.compiler != "tilefarm" else "") or j.workload)
        msg = f"{j.verdict}: {j.change()} {j.interval()}".strip() + (f"; {'; '.join(j.notes)}" if j.notes else "")
        if j.failed:
            f = ET.SubElement(case, "failure", message=msg, type=j.verdict)
            f.text = (f"baseline {_ms(j.base_ms)} (result {j.base_result}), new {_ms(j.new_ms)} "
                      f"(result {j.new_result}); A/B {j.ab() or 'not run'}; limit {j.threshold * 100:.0f}%")
        elif j.verdict in (NEW, MISSING, NO_TIMING):
            ET.SubElement(case, "skipped", message=msg)
        else:
            ET.SubElement(case, "system-out").text = msg
    suites = ET.Element("testsuites")
    suites.append(suite)
    ET.indent(suites)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"


# ---------------------------------------------------------------- A/B re-measurement on this machine's GPU


class ABRemeasure:
    """The real `remeasure`: times the baseline's job and the new job alternately (A B B A A B ...) on this
    machine's GPU, each with its own code.

    A side whose job key matches what this checkout would plan (same kernel source, compiler and target) runs
    from this checkout; otherwise from its run's git commit, extracted once (`git archive`) under `workdir`.
    A side whose commit is unknown or was dirty cannot be rebuilt: the call returns None ("not re-measured").
    Each tree gets one long-lived `farm/ab_server.py` process, so every CUDA context stays warm.
    """

    def __init__(self, store, cfg: GateConfig | None = None, workdir: str | None = None, timeout_s: float = 300):
        import pathlib
        import tempfile
        self.store, self.cfg, self.timeout_s = store, cfg or GateConfig(), timeout_s
        self.workdir = pathlib.Path(workdir or tempfile.mkdtemp(prefix="farm-ab-"))
        self.here = pathlib.Path(__file__).resolve().parents[1]  # this checkout's root
        self.servers: dict[str, object] = {}
        self.log: list[str] = []
        self.why: str | None = None  # why the last call returned None

    # -- which tree runs a side

    def _tree(self, row: dict) -> "tuple[str, dict] | None":
        from farm.planner import job_key
        from farm.loader import load_workload, source_hash
        from farm.machine import compiler_version
        run = self.store.run(row["run_id"])
        job = dict(row["job"])
        try:
            wl = load_workload(job["workload"])
            from farm.compilers import key_part
            here_key = job_key(source_hash(wl), wl.name, job["params"], job["meta"],
                               key_part(job.get("compiler") or "tilefarm", compiler_version()),
                               job.get("gpu_kind") or run["target"])  # a multi-kind run keys each job by its kind
        except Exception:
            here_key = None
        if here_key == row["key"]:
            return str(self.here), job
        commit = run.get("git_commit") or ""
        if not commit or commit.endswith("-dirty"):
            self.why = (f"run {row['run_id']}'s code differs from this checkout and its commit "
                        f"({commit or 'unknown'}) cannot be rebuilt")
            self.log.append(self.why)
            return None
        tree = self.workdir / commit[:12]
        if not tree.exists():
            self._extract(commit, tree)
        ref = job["workload"]
        if ref.startswith(str(self.here) + "/"):
            job["workload"] = str(tree) + ref[len(str(self.here)):]
        return str(tree), job

    def _extract(self, commit: str, tree):
        import subprocess
        tmp = tree.with_name(tree.name + ".tmp")
        tmp.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "-C", str(self.here), "archive", "--format=tar", commit],
                                 capture_output=True, timeout=120)
        if archive.returncode:
            raise FarmError(f"git archive {commit}: {archive.stderr.decode(errors='replace').strip()}")
        subprocess.run(["tar", "-x", "-C", str(tmp)], input=archive.stdout, check=True, timeout=120)
        tmp.rename(tree)

    # -- the servers

    def _server(self, tree: str):
        import sys
        import os
        import subprocess
        srv = self.servers.get(tree)
        if srv is None:
            env = dict(os.environ, PYTHONPATH=tree)
            srv = subprocess.Popen([sys.executable, str(self.here / "farm" / "ab_server.py")], cwd=tree, env=env,
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                   text=True, bufsize=1)
            self.servers[tree] = srv
            self._read(srv)  # {"ready": ...}
        return srv

    def _read(self, srv) -> dict:
        import select
        ready, _, _ = select.select([srv.stdout], [], [], self.timeout_s)
        line = srv.stdout.readline() if ready else ""
        if not line:
            raise FarmError(f"A/B server {'timed out' if not ready else 'exited'} (exit code {srv.poll()})")
        out = json.loads(line)
        if "error" in out:
            raise FarmError(f"A/B server: {out['error']}")
        return out

    def _ask(self, srv, req: dict) -> dict:
        srv.stdin.write(json.dumps(req) + "\n")
        srv.stdin.flush()
        return self._read(srv)

    def _load(self, base_row: dict, new_row: dict):
        """The A/B servers with each side's job loaded as "a" and "b", or None when a side cannot be rebuilt (or
        was timed on another GPU kind than this machine's: kinds are never compared)."""
        kind = (new_row.get("job") or {}).get("gpu_kind") or ""
        if kind:
            from farm.machine import gpu_kind
            here = gpu_kind()
            if here != kind:
                self.why = f"this job was timed on {kind}; this machine's GPU is {here}: not re-measured here"
                self.log.append(self.why)
                return None
        sides = [self._tree(base_row), self._tree(new_row)]
        if None in sides:
            return None
        srvs = []
        for name, (tree, job) in zip("ab", sides):
            srv = self._server(tree)
            self._ask(srv, {"op": "load", "id": name, "job": job})
            srvs.append(srv)
        return srvs

    def __call__(self, base_row: dict, new_row: dict):
        srvs = self._load(base_row, new_row)
        if srvs is None:
            return None
        opts = self.store.run(new_row["run_id"])["options"]
        side = AB.model_copy(update={"rep_ms": self.cfg.ab_rep_ms, "flush_l2": opts.get("flush_l2", AB.flush_l2)})
        samples: tuple[list, list] = ([], [])
        for i in range(self.cfg.ab_rounds):
            order = (0, 1) if i % 2 == 0 else (1, 0)  # A B, B A, A B, ...: linear drift cancels
            for s in order:
                got = self._ask(srvs[s], {"op": "bench", "id": "ab"[s], **side.bench_request()})
                samples[s].extend(got["samples"])
        return samples

    def launch(self, base_row: dict, new_row: dict):
        """Host cost of one launch of each side, alternating (A B B A ...): (medians of A, medians of B) in
        microseconds, or None when a side cannot be rebuilt."""
        srvs = self._load(base_row, new_row)
        if srvs is None:
            return None
        out: tuple[list, list] = ([], [])
        for i in range(self.cfg.ab_rounds):
            for s in ((0, 1) if i % 2 == 0 else (1, 0)):
                out[s].append(self._ask(srvs[s], {"op": "launch", "id": "ab"[s]})["median_us"])
        return out

    def close(self):
        for srv in self.servers.values():
            try:
                srv.stdin.close()
                srv.wait(timeout=10)
            except Exception:
                srv.kill()
        self.servers.clear()
