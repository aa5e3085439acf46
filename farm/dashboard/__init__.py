"""`farm dashboard`: a static HTML site from the store, readable offline (plotly.js is copied next to the pages).

Pages: `index.html` (every workload and shape: latest time per GPU kind, last change, steps found) and one page
per workload with, for each shape/dtype/meta series: the median over runs with the p10-p90 spread as error bars,
one trace per GPU kind, detected steps marked (red up-triangle: got slower, green down-triangle: got faster);
the % of roofline over runs; a per-GPU bar chart of the latest medians; and a table of every result with the
`farm repro ID` command that rebuilds it.

Steps (changepoints) use the gate's own test between consecutive runs of a series: a step where the bootstrap
interval of the ratio of medians excludes 1 and the change exceeds the threshold, and the next run (when there
is one) stays at the new level -- so a one-run spike is not a step.

All user text (workload and kernel names, params, labels, errors) is HTML-escaped in the pages and reaches
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


def _plotly_js() -> str:
    """plotly.js as shipped inside the plotly Python package (no network, no CDN)."""
    from plotly.offline import get_plotlyjs
    return get_plotlyjs()


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
            d = derive(r, kind if kind not in ("interpreter", "compile-only") else None)
            d["run_id"], d["kind"] = run_id, kind
            series = json.dumps([r["params"], r["meta"]], sort_keys=True, default=str)
            # each compiler its own trace beside the others in a series' plots (tilefarm's keep the GPU kind's name)
            trace = trace_name(kind, r.get("compiler") or "tilefarm")
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
    for s, by_kind in series.items():
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
    names = [esc(_series_title(s)) for s in series]
    traces = []
    for kind in kinds:
        y = []
        for by_kind in series.values():
            pts = [p for p in by_kind.get(kind, []) if p.get("median_ms")]
            y.append(pts[-1]["median_ms"] * 1e3 if pts else None)
        traces.append({"type": "bar", "name": esc(kind), "x": names, "y": y})
    return {"data": traces, "layout": {"title": {"text": "latest median per GPU kind (us)", "font": {"size": 13}},
                                       "barmode": "group", "height": 340,
                                       "margin": {"l": 55, "r": 10, "t": 35, "b": 90}}}


PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body {{ font: 14px system-ui, sans-serif; margin: 1.5em; color: #222; }}
table {{ border-collapse: collapse; margin: 1em 0; }} td, th {{ padding: 3px 8px; border-bottom: 1px solid #ddd; text-align: left; }}
th {{ background: #f4f4f4; }} code {{ background: #f4f4f4; padding: 1px 4px; }} .slower {{ color: #c00; }} .faster {{ color: #080; }}
.plot {{ width: 100%; max-width: 1100px; }} .muted {{ color: #777; }}
</style>
<script src="{js}"></script></head>
<body>
{body}
<script>
const FIGS = {figs};
for (const [id, fig] of Object.entries(FIGS)) {{
  Plotly.newPlot(id, fig.data, fig.layout, {{responsive: true, displaylogo: false}});
}}
</script>
</body></html>
"""


def build(store, out: str | pathlib.Path, threshold: float = 0.05) -> dict:
    """Write the site into `out`; returns {"index": path, "pages": n, "plots": n, "steps": n}."""
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / PLOTLY_JS).write_text(_plotly_js())
    got = collect(store)
    runs, workloads = got["runs"], got["workloads"]
    taken: set = set()
    index_rows, n_plots, n_steps = [], 0, 0
    for wname in sorted(workloads):
        series = workloads[wname]
        slug = _slug(wname, taken)
        figs, body = {}, [f"<p><a href='index.html'>&larr; all workloads</a></p><h1>{esc(wname)}</h1>"]
        step_lines = []
        for si, (s, by_kind) in enumerate(sorted(series.items(), key=lambda kv: series_order(kv[0]))):
            title = _series_title(s)
            fig, found = _history_fig(by_kind, runs, title, threshold)
            latest = {k: next((p for p in reversed(pts) if p.get("median_ms")), None) for k, pts in by_kind.items()}
            last = [f"{esc(k)}: {p['median_ms'] * 1e3:.2f} us" for k, p in sorted(latest.items()) if p]
            statuses = {p["status"] for pts in by_kind.values() for p in pts[-1:]}
            n_steps += len(found)
            for kind, run_id, verdict, ratio in found:
                step_lines.append(f"<li class='{verdict}'>{esc(title)} on {esc(kind)}: {verdict} "
                                  f"{(ratio - 1) * 100:+.1f}% at {esc(_run_text(runs[run_id]))}</li>")
            index_rows.append(f"<tr><td><a href='{slug}.html'>{esc(wname)}</a></td><td>{esc(title)}</td>"
                              f"<td>{'; '.join(last) or '<span class=muted>not timed</span>'}</td>"
                              f"<td>{esc(', '.join(sorted(statuses)))}</td>"
                              + "<td>" + " ".join(f"<span class='{v}'>{v} {(r - 1) * 100:+.0f}% (run {rid})</span>"
                                                  for _, rid, v, r in found) + "</td></tr>")
            if fig["data"]:
                figs[f"h{si}"] = fig
                body.append(f"<div id='h{si}' class='plot'></div>")
                n_plots += 1
        if step_lines:
            body.insert(1, "<h2>Steps</h2><ul>" + "".join(step_lines) + "</ul>")
        roof = _roofline_fig(series, runs)
        if roof["data"]:
            figs["roof"] = roof
            body.append("<h2>% of roofline</h2><div id='roof' class='plot'></div>")
            n_plots += 1
        gpu = _gpu_fig(series)
        if gpu is not None:
            figs["gpu"] = gpu
            body.append("<h2>Per GPU kind</h2><div id='gpu' class='plot'></div>")
            n_plots += 1
        body.append(_results_table(series, runs))
        (out / f"{slug}.html").write_text(PAGE.format(title=esc(f"farm: {wname}"), js=PLOTLY_JS,
                                                       body="\n".join(body), figs=_json(figs)))
    n_runs = len(runs)
    run_rows = "".join(f"<tr><td>{i}</td><td>{esc(r.get('name'))}</td><td>{esc(r.get('label') or '')}</td>"
                       f"<td>{esc(r['target'])}</td><td>{esc((r.get('git_commit') or '')[:12])}</td>"
                       f"<td>{esc(r['status'])}</td><td>{r['n_done']}/{r['n_jobs']}</td></tr>"
                       for i, r in sorted(runs.items(), reverse=True)[:50])
    body = (f"<h1>farm dashboard</h1><p class='muted'>{n_runs} runs in {esc(store.path)}; built "
            f"{datetime.datetime.now():%Y-%m-%d %H:%M}. Steps: a significant change above "
            f"{threshold * 100:.0f}% that the next run confirms.</p>"
            "<h2>Workloads</h2><table><tr><th>workload</th><th>shape dtype meta</th><th>latest median</th>"
            "<th>latest status</th><th>steps</th></tr>" + "".join(index_rows) + "</table>"
            "<h2>Runs</h2><table><tr><th>id</th><th>name</th><th>label</th><th>GPU kind</th><th>commit</th>"
            "<th>status</th><th>done</th></tr>" + run_rows + "</table>")
    (out / "index.html").write_text(PAGE.format(title="farm dashboard", js=PLOTLY_JS, body=body, figs="{}"))
    return {"index": str(out / "index.html"), "pages": len(workloads), "plots": n_plots, "steps": n_steps}


def _results_table(series: dict, runs: dict, limit: int = 300) -> str:
    rows = [p for by_kind in series.values() for pts in by_kind.values() for p in pts]
    rows.sort(key=lambda p: (-p["run_id"], p.get("idx") or 0))
    out = ["<h2>Results and reproducers</h2><table><tr><th>run</th><th>GPU kind</th><th>shape dtype meta</th>"
           "<th>status</th><th>median</th><th>p10-p90</th><th>% roof</th><th>reproduce</th></tr>"]
    for p in rows[:limit]:
        med = f"{p['median_ms'] * 1e3:.2f} us" if p.get("median_ms") else ""
        spread = (f"{p['p10_ms'] * 1e3:.2f}-{p['p90_ms'] * 1e3:.2f} us"
                  if p.get("p10_ms") is not None and p.get("p90_ms") is not None else "")
        roof = f"{p['roofline_pct']:.0f}%" if p.get("roofline_pct") is not None else ""
        rid = p.get("result_id")
        cmd = f"farm repro {rid}" if rid else f"farm repro {p['run_id']}:{p['key'][:12]}"
        err = f"<br><span class='muted'>{esc((p.get('error') or '').splitlines()[0][:200])}</span>" if p.get("error") else ""
        out.append(f"<tr><td>{esc(_run_text(runs[p['run_id']]))}</td><td>{esc(p['kind'])}</td>"
                   f"<td>{esc(_series_title(json.dumps([p['params'], p['meta']], sort_keys=True, default=str)))}"
                   f"{esc(' [' + p['compiler'] + ']' if p.get('compiler', 'tilefarm') != 'tilefarm' else '')}</td>"
                   f"<td>{esc(p['status'])}{err}</td><td>{med}</td><td>{spread}</td><td>{roof}</td>"
                   f"<td><code>{esc(cmd)}</code></td></tr>")
    if len(rows) > limit:
        out.append(f"<tr><td colspan=8 class=muted>... {len(rows) - limit} older results not listed</td></tr>")
    return "".join(out) + "</table>"
