"""Turn stored results into tables: rich (terminal), JSON, CSV and Markdown.

Derived columns: TFLOP/s and GB/s from the workload's FLOP and byte counts and the median time; % of the
roofline = the time the GPU's roofline allows (max(flops / peak compute for the dtype, bytes / memory
bandwidth)) over the measured time; speedup = the reference implementation's median over ours.
"""
from __future__ import annotations

import csv
import io
import json
import math

from rich import box
from rich.table import Table
from rich.text import Text

from farm.jobs import GOOD

# Peak numbers per GPU kind. Memory: the measured device-copy ceiling where we have one (ANCHORS.md: 4.27 TB/s
# on our H200, spec 4.8 TB/s), since no kernel beats a copy. Compute: dense tensor-core peaks (fp32: CUDA cores).
PEAKS = {
    "H200": {"bw_GBs": 4270.0, "bw_spec_GBs": 4800.0,
             "tflops": {"bfloat16": 989.0, "float16": 989.0, "float32": 67.0, "float64": 67.0, "int8": 1979.0}},
    "H100": {"bw_GBs": 3000.0, "bw_spec_GBs": 3350.0,
             "tflops": {"bfloat16": 989.0, "float16": 989.0, "float32": 67.0, "float64": 67.0, "int8": 1979.0}},
    "A100": {"bw_GBs": 1800.0, "bw_spec_GBs": 2039.0,
             "tflops": {"bfloat16": 312.0, "float16": 312.0, "float32": 19.5, "float64": 19.5, "int8": 624.0}},
}

COLUMNS = ["workload", "shape", "dtype", "meta", "median_ms", "spread_pct", "tflops", "gbs", "roofline_pct",
           "speedup", "status"]

STATUS_STYLE = {"ok": "green", "validated": "green", "compiled": "green", "pending": "dim", "mismatch": "red",
                "compile_error": "red", "error": "red", "timeout": "yellow", "worker_died": "yellow"}


def shape_str(params: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in params.items() if k != "dtype")


def meta_str(meta: dict) -> str:
    short = {"num_warps": "w", "num_stages": "s"}
    return " ".join(f"{short[k]}{v}" if k in short else f"{k}={v}" for k, v in meta.items())


def derive(row: dict, kind: str | None) -> dict:
    """A store row plus the derived columns (None where they cannot be computed)."""
    out = dict(row)
    med = row.get("median_ms")
    dtype = row["params"].get("dtype", "")
    out["shape"], out["dtype"], out["meta_text"] = shape_str(row["params"]), dtype, meta_str(row["meta"])
    out["tflops"] = out["gbs"] = out["roofline_pct"] = out["speedup"] = out["spread_pct"] = None
    if med:
        sec = med * 1e-3
        if row.get("flops"):
            out["tflops"] = row["flops"] / sec / 1e12
        if row.get("bytes"):
            out["gbs"] = row["bytes"] / sec / 1e9
        if row.get("p10_ms") is not None and row.get("p90_ms") is not None:
            out["spread_pct"] = 100.0 * (row["p90_ms"] - row["p10_ms"]) / med
        gpu = (row.get("gpu") or {}).get("name") or kind or ""
        peak = next((v for k, v in PEAKS.items() if k in gpu), None)
        if peak:
            t_mem = (row.get("bytes") or 0) / (peak["bw_GBs"] * 1e9)
            t_cmp = (row.get("flops") or 0) / (peak["tflops"].get(dtype, peak["tflops"]["float32"]) * 1e12)
            if max(t_mem, t_cmp) > 0:
                out["roofline_pct"] = 100.0 * max(t_mem, t_cmp) / sec
        if row.get("baseline_ms"):
            out["speedup"] = row["baseline_ms"] / med
    return out


def rows_for(store, run_id: int) -> list[dict]:
    info = store.run(run_id)
    kind = info["target"] if info["target"] not in ("interpreter", "compile-only") else None
    return [derive(r, kind) for r in store.rows(run_id)]


def _ident(row: dict) -> str:
    return json.dumps([row["workload"], row["params"], row["meta"]], sort_keys=True)


def attach_vs(rows: list[dict], other: list[dict]) -> list[dict]:
    """Add `vs_ms` and `vs_speedup` (other median / ours): the same workload, params and meta in another run."""
    by = {_ident(r): r for r in other}
    for r in rows:
        o = by.get(_ident(r))
        r["vs_ms"] = o.get("median_ms") if o else None
        r["vs_speedup"] = (o["median_ms"] / r["median_ms"]) if o and o.get("median_ms") and r.get("median_ms") else None
    return rows


def _num(v, fmt: str) -> str:
    return "" if v is None else format(v, fmt)


def _time(ms) -> str:
    if ms is None:
        return ""
    return f"{ms * 1e3:.1f} us" if ms < 1 else f"{ms:.3f} ms"


def _bytes(n) -> str:
    if n is None:
        return ""
    return f"{n / 1024:.1f} KiB" if n >= 1024 else f"{n} B"


# `farm report --details`: what ptxas made of each kernel (compiler.resources), stored with every result.
DETAILS = [("regs", "right", lambda r: _num(r.get("regs"), "d")),
           ("spills st/ld", "right", lambda r: "" if r.get("spill_stores") is None else
            f"{r['spill_stores']}/{r['spill_loads']} B"),
           ("smem", "right", lambda r: _bytes(r.get("shared_bytes"))),
           ("local", "right", lambda r: _bytes(r.get("local_bytes"))),
           ("blocks/SM", "right", lambda r: _num(r.get("blocks_per_sm"), "d")),
           ("ptxas", "left", lambda r: r.get("ptxas_version") or "")]


def table(rows: list[dict], title: str = "", vs: bool = False, details: bool = False) -> Table:
    """The rich table `farm run` ends with and `farm report` prints (timing columns only when something was timed;
    with `details`, the kernel's registers, spills, shared and local memory, blocks per SM and ptxas release)."""
    timed = any(r.get("median_ms") for r in rows)
    cols: list[tuple[str, str, object]] = [
        ("workload", "left", lambda r: r["workload"]), ("shape", "left", lambda r: r["shape"]),
        ("dtype", "left", lambda r: r["dtype"]), ("meta", "left", lambda r: r["meta_text"])]
    if timed:
        cols += [("median", "right", lambda r: _time(r.get("median_ms"))),
                 ("spread", "right", lambda r: f"±{r['spread_pct'] / 2:.1f}%" if r.get("spread_pct") is not None else ""),
                 ("TFLOP/s", "right", lambda r: _num(r.get("tflops"), ".2f")),
                 ("GB/s", "right", lambda r: _num(r.get("gbs"), ".0f")),
                 ("% roof", "right", lambda r: _num(r.get("roofline_pct"), ".0f"))]
        if any(r.get("speedup") for r in rows):
            cols.append(("speedup", "right", lambda r: _num(r.get("speedup"), ".2f") + ("x" if r.get("speedup") else "")))
    else:
        cols += [("compile", "right", lambda r: _num(r.get("compile_s") and r["compile_s"] * 1e3, ".0f") + (
                     " ms" if r.get("compile_s") else "")),
                 ("max rel err", "right", lambda r: _num(r.get("max_rel_err"), ".1e"))]
    if details:
        cols += DETAILS
    if vs:
        cols.append(("vs", "right", lambda r: _num(r.get("vs_speedup"), ".2f") + ("x" if r.get("vs_speedup") else "")))
    caption = None if timed or not rows else "no timings: timing needs a GPU (jobs were compiled and validated)"
    t = Table(title=title, title_justify="left", header_style="bold", caption=caption, caption_justify="left",
              box=box.SIMPLE_HEAD)
    for name, just, _ in cols:
        t.add_column(name, justify=just, no_wrap=name in ("median", "workload"))
    t.add_column("status", no_wrap=True)
    for r in rows:
        status = Text(r["status"], style=STATUS_STYLE.get(r["status"], ""))
        if r.get("reused_from"):
            status.append(f" (run {r['reused_from']})", style="dim")
        t.add_row(*[str(f(r)) for _, _, f in cols], status)
    return t


def failures(rows: list[dict]) -> list[dict]:
    return [r for r in rows if r["status"] not in GOOD and r["status"] != "pending"]


EXPORT = ["idx", "workload", "shape", "dtype", "meta_text", "status", "median_ms", "p10_ms", "p90_ms", "n_reps",
          "tflops", "gbs", "roofline_pct", "baseline_ms", "speedup", "max_abs_err", "max_rel_err", "compile_s",
          "validate_s", "bench_s", "wall_s", "worker", "error", "key", "regs", "spill_stores", "spill_loads",
          "shared_bytes", "local_bytes", "blocks_per_sm", "ptxas_version"]


def strict(obj):
    """`obj` with NaN and infinities as None: JSON has no such numbers (jq and most parsers refuse them)."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: strict(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [strict(v) for v in obj]
    return obj


def to_json(rows: list[dict], run: dict | None = None) -> str:
    keep = [{k: v for k, v in r.items() if k != "detail"} for r in rows]
    return json.dumps(strict({"run": run, "results": keep}), indent=2, default=str, allow_nan=False)


def to_csv(rows: list[dict]) -> str:
    buf = io.StringIO()
    cols = EXPORT + (["vs_ms", "vs_speedup"] if rows and "vs_ms" in rows[0] else [])
    w = csv.DictWriter(buf, fieldnames=cols, extrasaction="ignore")
    w.writeheader()
    for r in rows:
        w.writerow({k: r.get(k) for k in cols})
    return buf.getvalue()


def to_markdown(rows: list[dict], title: str = "") -> str:
    vs = bool(rows) and "vs_speedup" in rows[0]
    head = ["workload", "shape", "dtype", "meta", "median", "TFLOP/s", "GB/s", "% roof", "speedup"] + \
        (["vs"] if vs else []) + ["status"]
    lines = ([f"### {title}", ""] if title else []) + ["| " + " | ".join(head) + " |",
                                                         "|" + "---|" * len(head)]
    for r in rows:
        cells = [r["workload"], r["shape"], r["dtype"], r["meta_text"], _time(r.get("median_ms")),
                 _num(r.get("tflops"), ".2f"), _num(r.get("gbs"), ".0f"), _num(r.get("roofline_pct"), ".0f"),
                 _num(r.get("speedup"), ".2f")] + ([_num(r.get("vs_speedup"), ".2f")] if vs else []) + [r["status"]]
        lines.append("| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines) + "\n"
