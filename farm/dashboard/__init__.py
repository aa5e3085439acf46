"""`farm dashboard`: a static HTML site from the store, readable offline (plotly.js is copied next to the pages
when a page has a plot; a site without timings gets no 4.7 MB bundle and no page loads it).

Pages: `index.html` (every workload and shape: latest time per GPU kind, last change, steps found) and one page
per workload with, for each shape/dtype/meta series: the median over runs with the p10-p90 spread as error bars,
one trace per GPU kind, detected steps marked (red up-triangle: got slower, green down-triangle: got faster);
the % of roofline over runs; a per-GPU bar chart of the latest medians; and a table of every result with the
`farm repro ID` command that rebuilds it.

Steps (changepoints) use the gate's own test between consecutive runs of a series: a step where the bootstrap
interval of the ratio of medians excludes 1 and the change exceeds the threshold, and the next run (when there
is one) stays at the new level -- so a one-run spike is not a step.

The pages are Jinja2 templates (templates/ beside this file) rendered with autoescaping: the Python here builds
values, never markup, and all user text (workload and kernel names, params, labels, errors) is escaped by the
template engine. Text inside the figures, which plotly renders as markup, is escaped with `esc` and reaches
plotly only inside JSON with `<`, `>` and `&` escaped, so it shows as text and never runs.
"""
from __future__ import annotations

import datetime
import html
import json
import pathlib
import re
import shutil

from farm.gate import FASTER, SLOWER, classify, ratio_ci
from farm.report import derive, meta_str, shape_str

PLOTLY_JS = "plotly.min.js"


def _write_plotly_js(dest: pathlib.Path) -> None:
    """plotly.js as shipped inside the plotly Python package (no network, no CDN), copied to `dest`."""
    import plotly
    src = pathlib.Path(plotly.__file__).parent / "package_data" / PLOTLY_JS
    if src.is_file():
        shutil.copyfile(src, dest)
        return
    from plotly.offline import get_plotlyjs
    dest.write_text(get_plotlyjs())


def _json(obj) -> str:
    """JSON safe inside <script>: no `</script>`, no HTML-significant characters."""
    return (json.dumps(obj, default=str).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def esc(s) -> str:
    return html.escape("" if s is None else str(s), quote=True)


def _slug(s: str, taken: set) -> str:
    base = re.sub(r"[^A-Za-z0-9_.-]+", "_", s).strip("_.")[:60] or "workload"
    slug, i = base, 1
    while slug in taken:
        i += 1
        slug = f"{base}_{i}"
    taken.add(slug)
    return slug


def collect(store) -> dict:
    """Every result of every run, grouped: workload -> series (shape, dtype, meta) -> GPU kind -> points by run."""
    data: dict = {}
    runs = {}
    for run_id in store.all_run_ids():
        info = store.run(run_id)
        runs[run_id] = info
        kind = info["target"]
        for r in store.rows(run_id, samples=True):
            if r["status"] == "pending":
                continue
            k = r.get("gpu_kind") or kind  # a run timed on several kinds: each row under its own
            d = derive(r, k if k not in ("interpreter", "compile-only") else None)
            d["run_id"], d["kind"] = run_id, k
            series = json.dumps([r["params"], r["meta"]], sort_keys=True, default=str)
            # each compiler its own line beside the others in a series' plots (tilefarm's keep the GPU kind's name)
            trace = trace_name(k, r.get("compiler") or "tilefarm")
            data.setdefault(r["workload"], {}).setdefault(series, {}).setdefault(trace, []).append(d)
    return {"runs": runs, "workloads": data}


def steps(points: list[dict], threshold: float = 0.05, alpha: float = 0.01) -> list[tuple[int, str, float]]:
    """Indexes into `points` (one series on one GPU kind, in run order) where the level stepped:
    (index, "slower"|"faster", ratio to the previous point)."""
    timed = [(i, p) for i, p in enumerate(points) if p.get("median_ms")]
    out = []
    for k in range(1, len(timed)):
        (_, prev), (i, cur) = timed[k - 1], timed[k]
        if prev.get("samples") and cur.get("samples"):
            ratio, lo, hi = ratio_ci(prev["samples"], cur["samples"], alpha, 500)
        else:
            ratio = cur["median_ms"] / prev["median_ms"]
            lo = (cur.get("p10_ms") or cur["median_ms"]) / (prev.get("p90_ms") or prev["median_ms"])
            hi = (cur.get("p90_ms") or cur["median_ms"]) / (prev.get("p10_ms") or prev["median_ms"])
        verdict = classify(ratio, lo, hi, threshold)
        if verdict not in (SLOWER, FASTER):
            continue
        if k >= 2:  # back to where the run before last was: the end of a one-run spike, not a step
            before = timed[k - 2][1]["median_ms"]
            if abs(cur["median_ms"] / before - 1) <= threshold:
                continue
        if k + 1 < len(timed):  # does the next run stay at the new level?
            nxt = timed[k + 1][1]["median_ms"]
            if abs(nxt - cur["median_ms"]) > abs(nxt - prev["median_ms"]):
                continue
        out.append((i, verdict, ratio))
    return out


def _run_text(info: dict) -> str:
    when = datetime.datetime.fromtimestamp(info["created"]).strftime("%Y-%m-%d %H:%M") if info.get("created") else ""
    return (f"run {info['id']}" + (f" [{info['label']}]" if info.get("label") else "")
            + f" {(info.get('git_commit') or '')[:9]} {when}")


def trace_name(kind: str, compiler: str = "tilefarm") -> str:
    """A plotted line: one GPU kind under one compiler ("H200", "H200 triton"); steps are found per line, so a
    compiler's history is only ever compared with itself."""
    return kind if compiler == "tilefarm" else f"{kind} {compiler}"


def _series_title(series: str) -> str:
    params, meta = json.loads(series)
    return " ".join(x for x in (shape_str(params), str(params.get("dtype", "")), meta_str(meta)) if x)


def _natural(value):
    """A sort key that orders numbers as numbers (4096 < 65536 < 1048576) and puts text after them."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return (1, str(value))
    return (0, value)


def series_order(series: str):
    """Sort key of a series (its JSON [params, meta]): by each parameter's value, numbers compared as numbers.
    Sorting the JSON text put N=1048576 before N=4096 and N=65536 (text order: "1" < "4" < "6")."""
    params, meta = json.loads(series)
    return tuple((k, _natural(v)) for k, v in params.items()), tuple((k, _natural(v)) for k, v in meta.items())


def _history_fig(series_pts: dict, runs: dict, title: str, threshold: float) -> tuple[dict, list]:
    traces, found = [], []
    for kind, pts in sorted(series_pts.items()):
        pts = [p for p in pts if p.get("median_ms")]
        if not pts:
            continue
        x = [p["run_id"] for p in pts]
        y = [p["median_ms"] * 1e3 for p in pts]
        up = [max(0.0, ((p.get("p90_ms") or p["median_ms"]) - p["median_ms"]) * 1e3) for p in pts]
        down = [max(0.0, (p["median_ms"] - (p.get("p10_ms") or p["median_ms"])) * 1e3) for p in pts]
        hover = [esc(_run_text(runs[p["run_id"]])) + f"<br>median {p['median_ms'] * 1e3:.2f} us" for p in pts]
        traces.append({"type": "scatter", "mode": "lines+markers", "name": esc(kind), "x": x, "y": y,
                       "error_y": {"type": "data", "symmetric": False, "array": up, "arrayminus": down},
                       "text": hover, "hoverinfo": "text"})
        for i, verdict, ratio in steps(pts, threshold):
            found.append((kind, pts[i]["run_id"], verdict, ratio))
            traces.append({"type": "scatter", "mode": "markers", "showlegend": False, "x": [x[i]], "y": [y[i]],
                           "marker": {"symbol": "triangle-up" if verdict == SLOWER else "triangle-down",
                                      "size": 14, "color": "#d62728" if verdict == SLOWER else "#2ca02c"},
                           "hoverinfo": "text", "text": [f"{verdict} {(ratio - 1) * 100:+.1f}% ({esc(kind)})"]})
    xs = sorted({x for t in traces for x in t["x"]})
    layout = {"title": {"text": esc(title), "font": {"size": 13}}, "height": 300,
              "margin": {"l": 55, "r": 10, "t": 35, "b": 40},
              "xaxis": {"title": {"text": "run"}, "type": "category", "categoryorder": "array", "categoryarray": xs},
              "yaxis": {"title": {"text": "median (us), p10-p90"}, "rangemode": "tozero"}}
    return {"data": traces, "layout": layout}, found


def _roofline_fig(series: dict, runs: dict) -> dict:
    traces = []
    for s, by_kind in sorted(series.items(), key=lambda kv: series_order(kv[0])):
        for kind, pts in sorted(by_kind.items()):
            pts = [p for p in pts if p.get("roofline_pct") is not None]
            if pts:
                traces.append({"type": "scatter", "mode": "lines+markers", "name": esc(f"{_series_title(s)} ({kind})"),
                               "x": [p["run_id"] for p in pts], "y": [p["roofline_pct"] for p in pts]})
    xs = sorted({x for t in traces for x in t["x"]})
    return {"data": traces, "layout": {"title": {"text": "% of roofline", "font": {"size": 13}}, "height": 340,
                                       "margin": {"l": 55, "r": 10, "t": 35, "b": 40},
                                       "xaxis": {"title": {"text": "run"}, "type": "category",
                                                 "categoryorder": "array", "categoryarray": xs},
                                       "yaxis": {"title": {"text": "% of roofline"}, "rangemode": "tozero"}}}


def _gpu_fig(series: dict) -> dict | None:
    kinds = sorted({k for by_kind in series.values() for k, pts in by_kind.items()
                    if any(p.get("median_ms") for p in pts)})
    if not kinds:
        return None
    ordered = sorted(series, key=series_order)  # as the page lists them: numbers as numbers
    names = [esc(_series_title(s)) for s in ordered]
    traces = []
    for kind in kinds:
        y = []
        for by_kind in (series[s] for s in ordered):
            pts = [p for p in by_kind.get(kind, []) if p.get("median_ms")]
            y.append(pts[-1]["median_ms"] * 1e3 if pts else None)
        traces.append({"type": "bar", "name": esc(kind), "x": names, "y": y})
    return {"data": traces, "layout": {"title": {"text": "latest median per GPU kind (us)", "font": {"size": 13}},
                                       "barmode": "group", "height": 340,
                                       "margin": {"l": 55, "r": 10, "t": 35, "b": 90}}}


_ENV = None


def _env():
    """The pages' Jinja2 environment: templates/ beside this file, every value HTML-escaped unless marked safe
    (only the figures' JSON, escaped for <script> by _json), an undefined name an error."""
    global _ENV
    if _ENV is None:
        import jinja2
        _ENV = jinja2.Environment(loader=jinja2.FileSystemLoader(pathlib.Path(__file__).parent / "templates"),
                                  autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True,
                                  lstrip_blocks=True, keep_trailing_newline=True)
    return _ENV


def _page(template: str, title: str, figs: dict, **values) -> str:
    """A page; it loads plotly.js (and draws `figs`) only when it has a plot."""
    from markupsafe import Markup
    return _env().get_template(template).render(title=title, figs=figs, figs_json=Markup(_json(figs)),
                                                 plotly_js=PLOTLY_JS, **values)


def build(store, out: str | pathlib.Path, threshold: float = 0.05) -> dict:
    """Write the site into `out`; returns {"index": path, "pages": n, "plots": n, "steps": n}."""
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    got = collect(store)
    runs, workloads = got["runs"], got["workloads"]
    taken: set = set()
    index_rows, n_plots, n_steps = [], 0, 0
    for wname in sorted(workloads):
        series = workloads[wname]
        slug = _slug(wname, taken)
        figs, history, step_items = {}, [], []
        for si, (s, by_kind) in enumerate(sorted(series.items(), key=lambda kv: series_order(kv[0]))):
            title = _series_title(s)
            fig, found = _history_fig(by_kind, runs, title, threshold)
            latest = {k: next((p for p in reversed(pts) if p.get("median_ms")), None) for k, pts in by_kind.items()}
            statuses = {p["status"] for pts in by_kind.values() for p in pts[-1:]}
            n_steps += len(found)
            step_items += [{"title": title, "kind": kind, "verdict": verdict, "pct": (ratio - 1) * 100,
                            "run": _run_text(runs[run_id])} for kind, run_id, verdict, ratio in found]
            index_rows.append({"slug": slug, "workload": wname, "title": title,
                               "latest": [(k, p["median_ms"] * 1e3) for k, p in sorted(latest.items()) if p],
                               "statuses": sorted(statuses),
                               "steps": [{"verdict": v, "pct": (r - 1) * 100, "run_id": rid} for _, rid, v, r in found]})
            if fig["data"]:
                figs[f"h{si}"] = fig
                history.append(f"h{si}")
                n_plots += 1
        roof = _roofline_fig(series, runs)
        if roof["data"]:
            figs["roof"] = roof
            n_plots += 1
        gpu = _gpu_fig(series)
        if gpu is not None:
            figs["gpu"] = gpu
            n_plots += 1
        results, more = _results(series, runs)
        (out / f"{slug}.html").write_text(_page("workload.html", f"farm: {wname}", figs, workload=wname,
                                                steps=step_items, history=history, results=results, more=more))
    run_rows = [{"id": i, "name": r.get("name"), "label": r.get("label") or "", "target": r["target"],
                 "commit": (r.get("git_commit") or "")[:12], "status": r["status"], "n_done": r["n_done"],
                 "n_jobs": r["n_jobs"]} for i, r in sorted(runs.items(), reverse=True)]
    (out / "index.html").write_text(_page("index.html", "farm dashboard", {}, rows=index_rows, runs=run_rows,
                                          store_path=str(store.path), threshold=threshold,
                                          built=f"{datetime.datetime.now():%Y-%m-%d %H:%M}"))
    if n_plots:
        _write_plotly_js(out / PLOTLY_JS)
    return {"index": str(out / "index.html"), "pages": len(workloads), "plots": n_plots, "steps": n_steps}


def _results(series: dict, runs: dict, limit: int = 300) -> tuple[list[dict], int]:
    """The results table of a workload page: newest run first, at most `limit` rows (and how many more)."""
    rows = [p for by_kind in series.values() for pts in by_kind.values() for p in pts]
    rows.sort(key=lambda p: (-p["run_id"], p.get("idx") or 0))
    out = []
    for p in rows[:limit]:
        rid = p.get("result_id")
        out.append({
            "run": _run_text(runs[p["run_id"]]), "kind": p["kind"], "status": p["status"],
            "title": _series_title(json.dumps([p["params"], p["meta"]], sort_keys=True, default=str)) + (
                f" [{p['compiler']}]" if p.get("compiler", "tilefarm") != "tilefarm" else ""),
            "error": (p.get("error") or "").splitlines()[0][:200] if p.get("error") else "",
            "median_us": p["median_ms"] * 1e3 if p.get("median_ms") else None,
            "spread": ((p["p10_ms"] * 1e3, p["p90_ms"] * 1e3)
                       if p.get("p10_ms") is not None and p.get("p90_ms") is not None else None),
            "roof": p.get("roofline_pct"),
            "command": f"farm repro {rid}" if rid else f"farm repro {p['run_id']}:{p['key'][:12]}"})
    return out, max(0, len(rows) - limit)
