"""`farm dashboard` from a synthetic store, checked in headless Chromium; `farm repro` of a stored row."""
import os
import pathlib
import shutil
import subprocess

import pytest
from typer.testing import CliRunner

from farm import dashboard as D
from farm.cli.main import app
from farm.store import Store

from synthetic import add_run, sweep

EVIL = "<script>alert(1)</script>"
ARTIFACTS = pathlib.Path(__file__).resolve().parents[2] / "test-output"  # kept by CI


def _store(path):
    st = Store(path)
    base = sweep(noise=0.1) + [{"workload": f"k{EVIL}", "params": {"N": 7, "dtype": "float32"},
                                "meta": {"NAME": EVIL}, "median_ms": 0.05, "noise": 0.1}]
    for i in range(4):
        add_run(st, base, seed=i, label="nightly", commit=f"c{i}")
    slow = [dict(j) for j in base]
    slow[3]["slow"] = 1.5  # softmax N=4096 steps up from run 5 on
    for i in range(4, 7):
        add_run(st, slow, seed=i, label="nightly", commit=f"c{i}")
    add_run(st, base, seed=9, target="A100", commit="c9")
    return st


def _chromium():
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        p = shutil.which(name)
        if p:
            return p
    return None


def test_site_contents(tmp_path):
    st = _store(tmp_path / "farm.db")
    got = D.build(st, tmp_path / "site")
    assert got["pages"] == 3 and got["plots"] >= 7 and got["steps"] >= 1
    files = {p.name for p in (tmp_path / "site").iterdir()}
    assert {"index.html", "plotly.min.js", "softmax.html", "vector_add.html"} <= files
    index = (tmp_path / "site" / "index.html").read_text()
    assert EVIL not in index and "&lt;script&gt;alert(1)&lt;/script&gt;" in index
    assert "http://" not in index.replace("http://www.w3.org", "") and "cdn" not in index.lower()
    page = (tmp_path / "site" / "softmax.html").read_text()
    assert "slower +" in page and "farm repro " in page and "A100" in page
    evil_page = next(p for p in (tmp_path / "site").glob("k*.html"))
    text = evil_page.read_text()
    assert EVIL not in text and "&lt;script&gt;alert(1)" in text


def test_series_are_ordered_by_value_not_by_text(tmp_path):
    st = _store(tmp_path / "farm.db")
    D.build(st, tmp_path / "site")
    index = (tmp_path / "site" / "index.html").read_text()
    at = [index.index(f"N={n} float32") for n in (4096, 65536, 1 << 20)]
    assert at == sorted(at), at  # as text, N=1048576 sorted first
    order = sorted(['[{"N": 65536}, {}]', '[{"N": 1048576}, {}]', '[{"N": 4096}, {}]', '[{"N": "big"}, {}]'],
                   key=D.series_order)
    assert [o.split(":")[1].split("}")[0].strip() for o in order] == ["4096", "65536", "1048576", '"big"']


def test_steps_ignore_a_one_run_spike():
    pts = [{"median_ms": m} for m in (1.0, 1.0, 1.6, 1.0, 1.0)]
    assert D.steps(pts) == []
    pts = [{"median_ms": m} for m in (1.0, 1.0, 1.6, 1.6, 1.6)]
    assert [(i, v) for i, v, _ in D.steps(pts)] == [(2, "slower")]


def test_in_headless_chromium(tmp_path):
    chromium = _chromium()
    if chromium is None:
        pytest.skip("no chromium on PATH (.ci/run installs the Debian `chromium` package)")
    st = _store(tmp_path / "farm.db")
    site = tmp_path / "site"
    D.build(st, site)
    flags = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--disable-dev-shm-usage", f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=10000"]
    evil_page = next(site.glob("k*.html"))
    for page in (site / "softmax.html", evil_page):
        dom = subprocess.run(flags + ["--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120).stdout
        assert "main-svg" in dom, f"plotly did not render in {page.name}: {dom[:500]}"
        assert dom.count('class="main-svg"') >= 2
    # The kernel name with HTML in it is text in the DOM, never a <script> element.
    assert "<script>alert(1)</script>" not in dom and "&lt;script&gt;alert(1)&lt;/script&gt;" in dom
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "dashboard-softmax.png"
    subprocess.run(flags + ["--window-size=1200,1600", f"--screenshot={shot}", (site / "softmax.html").as_uri()],
                   capture_output=True, timeout=120)
    assert shot.is_file() and shot.stat().st_size > 10_000


def test_cli_dashboard_and_repro(tmp_path, fakes):
    from farm_testing import fake_config
    runner = CliRunner()
    cfg = fake_config(tmp_path, modes=("ok",), ns=(64,))
    db = tmp_path / "farm.db"
    assert runner.invoke(app, ["run", str(cfg), "--local", "--label", "nightly"]).exit_code == 0
    r = runner.invoke(app, ["dashboard", "--out", str(tmp_path / "site"), "--store", str(db)])
    assert r.exit_code == 0 and "wrote" in r.output, r.output
    r = runner.invoke(app, ["repro", "1", "--out", str(tmp_path / "r"), "--store", str(db)])
    assert r.exit_code == 0, r.output
    out = tmp_path / "r"
    assert {"job.yaml", "seed.txt", "result.json", "README.md"} <= {p.name for p in out.iterdir()}
    assert (out / "stages" / "kernel.ptx").is_file() and any(p.name.startswith("src_") for p in out.iterdir())
    cmd = r.output.strip().splitlines()[-1]
    assert cmd.startswith("farm run ") and "job.yaml" in cmd
    # the command reruns exactly that one job
    args = cmd.split()[1:]
    r = runner.invoke(app, args)
    assert r.exit_code == 0 and "1 jobs finished (1 validated)" in r.output, r.output
    r = runner.invoke(app, ["repro", "latest:zzz", "--store", str(db)])
    assert r.exit_code == 2 and "no job with key" in r.output
