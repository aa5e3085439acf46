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
                "compile_error": "red", "error": "red", "timeout": "yellow", "worker_died": "yellow",
                "not_runnable": "yellow"}


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
        gpu = (row.get("gpu") or {}).get("name") or row.get("gpu_kind") or kind or ""
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
    # the compiler and the GPU kind too: a run with several compilers or timed on several kinds has one row per
    # compiler and kind, and neither is compared with another
    return json.dumps([row["workload"], row["params"], row["meta"], row.get("compiler") or "tilefarm",
                       row.get("gpu_kind") or ""], sort_keys=True)


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
    if len({r.get("gpu_kind") or "" for r in rows}) > 1:  # a sweep timed on several GPU kinds: say which row is which
        cols.insert(0, ("gpu", "left", lambda r: r.get("gpu_kind") or ""))
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
    if compilers_of(rows) not in ([], ["tilefarm"]):
        cols.insert(1, ("compiler", "left", lambda r: r.get("compiler") or "tilefarm"))
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
          "shared_bytes", "local_bytes", "blocks_per_sm", "ptxas_version", "compiler", "gpu_kind"]


def strict(obj):
    """`obj` with NaN and infinities as None: JSON has no such numbers (jq and most parsers refuse them)."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: strict(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [strict(v) for v in obj]
    return obj


def to_json(rows: list[dict], run: dict | None = None, ratio_to: str | None = None) -> str:
    """{"run", "results" (every job, each with its `compiler`), "compilers" (the side-by-side view: see
    `side_by_side`)}."""
    keep = [{k: v for k, v in r.items() if k != "detail"} for r in rows]
    doc = {"run": run, "results": keep, "compilers": side_by_side(rows, ratio_to)}
    return json.dumps(strict(doc), indent=2, default=str, allow_nan=False)


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
    several = len(compilers_of(rows)) > 1
    head = ["workload"] + (["compiler"] if several else []) + ["shape", "dtype", "meta", "median", "TFLOP/s",
                                                               "GB/s", "% roof", "speedup"] + \
        (["vs"] if vs else []) + ["status"]
    kinds = len({r.get("gpu_kind") or "" for r in rows}) > 1  # several GPU kinds: a column says which
    head = (["gpu"] if kinds else []) + head
    lines = ([f"### {title}", ""] if title else []) + ["| " + " | ".join(head) + " |",
                                                         "|" + "---|" * len(head)]
    for r in rows:
        cells = [r["workload"]] + ([r.get("compiler") or "tilefarm"] if several else []) + [
                 r["shape"], r["dtype"], r["meta_text"], _time(r.get("median_ms")),
                 _num(r.get("tflops"), ".2f"), _num(r.get("gbs"), ".0f"), _num(r.get("roofline_pct"), ".0f"),
                 _num(r.get("speedup"), ".2f")] + ([_num(r.get("vs_speedup"), ".2f")] if vs else []) + [r["status"]]
        cells = ([r.get("gpu_kind") or ""] if kinds else []) + cells
        lines.append("| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- compilers side by side


def compilers_of(rows: list[dict]) -> list[str]:
    """The compilers a run's rows use, in plan order (rows from before compilers were an axis: tilefarm)."""
    return list(dict.fromkeys(r.get("compiler") or "tilefarm" for r in rows))


def default_ratio_to(names: list[str]) -> str | None:
    """The compiler ratios are taken against when none is asked for: triton when the run has it beside
    another, else none."""
    return "triton" if "triton" in names and len(names) > 1 else None


def _geomean(vals: list[float]) -> float | None:
    vals = [v for v in vals if v and v > 0 and math.isfinite(v)]
    return math.exp(sum(math.log(v) for v in vals) / len(vals)) if vals else None


def side_by_side(rows: list[dict], ratio_to: str | None = None) -> dict:
    """The run's jobs grouped by point (workload, params, meta), one entry per compiler.

    {"names": compilers in plan order, "ratio_to": the compiler ratios are taken against (None: no ratios),
     "points": [{"workload", "shape", "dtype", "meta", "params", "by": {compiler: {"status", "median_ms",
                 "compile_s", "result_id", "error"}}, "ratio": {compiler: its median / ratio_to's median}}],
     "geomean": {workload: {compiler: {"ratio": geomean of its ratios, "n": points with both timed}}},
     "overall": {compiler: {"ratio", "n"}}}
    A ratio is only formed where both compilers timed the point successfully (status ok)."""
    names = compilers_of(rows)
    ref = ratio_to if ratio_to is not None else default_ratio_to(names)
    if ref is not None and ref not in names:
        ref = None
    points: dict[str, dict] = {}
    for r in rows:
        ident = json.dumps([r["workload"], r["params"], r["meta"]], sort_keys=True, default=str)
        p = points.setdefault(ident, {"workload": r["workload"], "shape": r.get("shape", shape_str(r["params"])),
                                      "dtype": r["params"].get("dtype", ""),
                                      "meta": r.get("meta_text", meta_str(r["meta"])), "params": r["params"],
                                      "by": {}, "ratio": {}})
        p["by"][r.get("compiler") or "tilefarm"] = {
            "status": r["status"], "median_ms": r.get("median_ms") if r["status"] == "ok" else None,
            "compile_s": r.get("compile_s"), "compile_cache": (r.get("artifacts") or {}).get("compile_cache"),
            "result_id": r.get("result_id"), "error": r.get("error")}
    per_wl: dict[str, dict[str, list]] = {}
    for p in points.values():
        base = p["by"].get(ref, {}).get("median_ms") if ref else None
        for c, e in p["by"].items():
            if ref and c != ref and base and e.get("median_ms"):
                p["ratio"][c] = e["median_ms"] / base
                per_wl.setdefault(p["workload"], {}).setdefault(c, []).append(p["ratio"][c])
    geo = {w: {c: {"ratio": _geomean(v), "n": len(v)} for c, v in d.items()} for w, d in per_wl.items()}
    allv: dict[str, list] = {}
    for d in per_wl.values():
        for c, v in d.items():
            allv.setdefault(c, []).extend(v)
    overall = {c: {"ratio": _geomean(v), "n": len(v)} for c, v in allv.items()}
    return {"names": names, "ratio_to": ref, "points": list(points.values()), "geomean": geo, "overall": overall}


def _compile_cell(e: dict | None) -> str:
    """A compile time, and whether it was a cold compile or a cache load where the compiler said."""
    cs = (e or {}).get("compile_s")
    if not cs:
        return ""
    state = (e or {}).get("compile_cache")
    return f"{cs * 1e3:.0f} ms" + (f" ({state})" if state else "")


def _cell(e: dict | None) -> Text:
    if e is None:
        return Text("-", style="dim")
    if e.get("median_ms"):
        return Text(_time(e["median_ms"]))
    return Text(e["status"], style=STATUS_STYLE.get(e["status"], ""))


def compiler_tables(rows: list[dict], title: str = "", ratio_to: str | None = None) -> list[Table]:
    """The side-by-side tables of a run with several compilers: per point each compiler's time (or status)
    and compile time, and each compiler's time over `ratio_to`'s; then the geomean of those ratios per
    workload (only points both timed)."""
    sbs = side_by_side(rows, ratio_to)
    names, ref = sbs["names"], sbs["ratio_to"]
    others = [c for c in names if c != ref] if ref else []
    t = Table(title=title, title_justify="left", header_style="bold", box=box.SIMPLE_HEAD,
              caption=None if any(e.get("median_ms") for p in sbs["points"] for e in p["by"].values())
              else "no timings: timing needs a GPU (jobs were compiled and validated)", caption_justify="left")
    for c in ("workload", "shape", "dtype", "meta"):
        t.add_column(c, no_wrap=c == "workload")
    for c in names:
        t.add_column(c, justify="right", no_wrap=True)
        t.add_column(f"{c} compile", justify="right")
    for c in others:
        t.add_column(f"{c}/{ref}", justify="right")
    for p in sbs["points"]:
        cells = [Text(str(x)) for x in (p["workload"], p["shape"], p["dtype"], p["meta"])]
        for c in names:
            e = p["by"].get(c)
            cells.append(_cell(e))
            cells.append(Text(_compile_cell(e)))
        for c in others:
            cells.append(Text(_num(p["ratio"].get(c), ".2f")))
        t.add_row(*cells)
    out = [t]
    if others and sbs["overall"]:
        g = Table(title=f"geomean of time / {ref}'s time, per workload (points timed under both)",
                  title_justify="left", header_style="bold", box=box.SIMPLE_HEAD)
        g.add_column("workload")
        for c in others:
            g.add_column(f"{c}/{ref}", justify="right")
            g.add_column("n", justify="right")
        for w in dict.fromkeys(p["workload"] for p in sbs["points"]):
            d = sbs["geomean"].get(w, {})
            g.add_row(w, *[x for c in others for x in (_num(d.get(c, {}).get("ratio"), ".3f"),
                                                       str(d.get(c, {}).get("n", 0)))])
        g.add_row(Text("all", style="bold"), *[x for c in others for x in (
            _num(sbs["overall"].get(c, {}).get("ratio"), ".3f"), str(sbs["overall"].get(c, {}).get("n", 0)))])
        out.append(g)
    return out


def compiler_markdown(rows: list[dict], title: str = "", ratio_to: str | None = None) -> str:
    """The side-by-side tables of `compiler_tables` as Markdown."""
    sbs = side_by_side(rows, ratio_to)
    names, ref = sbs["names"], sbs["ratio_to"]
    others = [c for c in names if c != ref] if ref else []
    head = ["workload", "shape", "dtype", "meta"] + [x for c in names for x in (c, f"{c} compile")] + \
        [f"{c}/{ref}" for c in others]
    out = ([f"### {title}", ""] if title else []) + ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for p in sbs["points"]:
        cells = [p["workload"], p["shape"], p["dtype"], p["meta"]]
        for c in names:
            e = p["by"].get(c) or {}
            cells.append(_time(e.get("median_ms")) if e.get("median_ms") else e.get("status", "-"))
            cells.append(_compile_cell(e))
        cells += [_num(p["ratio"].get(c), ".3f") for c in others]
        out.append("| " + " | ".join(str(x).replace("|", "\\|") for x in cells) + " |")
    if others and sbs["overall"]:
        out += ["", f"geomean of time / {ref}'s time (points timed under both):", "",
                "| workload | " + " | ".join(f"{c}/{ref} | n" for c in others) + " |",
                "|" + "---|" * (1 + 2 * len(others))]
        for w, d in list(sbs["geomean"].items()) + [("**all**", sbs["overall"])]:
            out.append(f"| {w} | " + " | ".join(f"{_num(d.get(c, {}).get('ratio'), '.3f')} | {d.get(c, {}).get('n', 0)}"
                                                for c in others) + " |")
    return "\n".join(out) + "\n"
