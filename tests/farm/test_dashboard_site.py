"""The dashboard's files: plotly.js only where a page plots, and every figure orders shapes by value."""
import json
import pathlib

from farm import dashboard as D
from farm.store import Store

from synthetic import add_run, sweep


def _figs(page: pathlib.Path) -> dict:
    text = page.read_text()
    start = text.index("const FIGS = ") + len("const FIGS = ")
    return json.loads(text[start:text.index(";\n", start)])


def test_no_plots_no_plotly_bundle(tmp_path):
    st = Store(tmp_path / "farm.db")
    for i in range(2):  # validated in the interpreter: nothing timed, nothing to plot
        add_run(st, sweep(status="validated"), seed=i, target="interpreter")
    got = D.build(st, tmp_path / "site")
    assert got["plots"] == 0 and got["pages"] == 2
    site = tmp_path / "site"
    assert not (site / D.PLOTLY_JS).exists()  # 4.7 MB saved
    for page in site.glob("*.html"):
        assert D.PLOTLY_JS not in page.read_text() and "Plotly.newPlot" not in page.read_text(), page.name


def test_plots_get_the_bundle_and_only_plot_pages_load_it(tmp_path):
    import plotly
    st = Store(tmp_path / "farm.db")
    for i in range(2):
        add_run(st, sweep(), seed=i)
    got = D.build(st, tmp_path / "site")
    site = tmp_path / "site"
    assert got["plots"] > 0
    shipped = pathlib.Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    assert (site / D.PLOTLY_JS).read_bytes() == shipped.read_bytes()
    assert D.PLOTLY_JS in (site / "softmax.html").read_text()
    assert D.PLOTLY_JS not in (site / "index.html").read_text()  # the index has tables only


def test_every_figure_orders_shapes_as_numbers(tmp_path):
    """A later run's new shapes came last in the per-GPU bar chart and the roofline legend, and a first run
    listing N=1048576 first kept it first: the figures follow the page's order (numbers as numbers)."""
    st = Store(tmp_path / "farm.db")
    jobs = [j for j in sweep() if j["workload"] == "softmax"]
    add_run(st, [jobs[2], jobs[0]], seed=0)   # N=1048576, N=4096
    add_run(st, [jobs[1], jobs[2], jobs[0]], seed=1)  # N=65536 first seen here
    D.build(st, tmp_path / "site")
    figs = _figs(tmp_path / "site" / "softmax.html")
    want = ["N=4096 float32 BLOCK=1024", "N=65536 float32 BLOCK=1024", "N=1048576 float32 BLOCK=1024"]
    assert figs["gpu"]["data"][0]["x"] == want
    assert [t["name"] for t in figs["roof"]["data"]] == [f"{w} (H200)" for w in want]
