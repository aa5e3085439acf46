import json

import pytest
from typer.testing import CliRunner

from farm.cli.main import app

from farm_testing import FAKES, fake_config

runner = CliRunner()


def invoke(*args):
    r = runner.invoke(app, [str(a) for a in args])
    return r


def test_help_teaches():
    r = invoke("--help")
    assert r.exit_code == 0
    for cmd in ("run", "compile", "workloads", "report", "runs", "cluster"):
        assert cmd in r.output
    r = invoke("run", "--help")
    assert "--resume" in r.output and "farm run configs/quick.yaml" in r.output


def test_local_run_report_runs(tmp_path):
    cfg = fake_config(tmp_path, modes=("ok", "wrong", "raise"), ns=(64, 128))
    db = tmp_path / "farm.db"
    r = invoke("run", cfg, "--local")
    assert r.exit_code == 1, r.output  # some jobs failed
    assert "run 1" in r.output and "2 validated" in r.output and "2 mismatch" in r.output
    assert "timing needs a GPU" in r.output
    # run again: everything is reused
    r = invoke("run", cfg, "--local")
    assert r.exit_code == 1 and "0 jobs to run of 6" in r.output and "6 reused" in r.output
    r = invoke("report", "latest", "--store", db, "--format", "json")
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert len(data["results"]) == 6 and all(x["reused_from"] == 1 for x in data["results"])
    r = invoke("report", "1", "--store", db, "--format", "csv")
    assert r.output.splitlines()[0].startswith("idx,workload,shape") and len(r.output.splitlines()) == 7
    r = invoke("report", "1", "--store", db, "--format", "markdown", "--vs", "2")
    assert r.output.count("\n") >= 8 and "| vs |" in r.output
    r = invoke("report", "1", "--store", db, "--failed")
    assert "RuntimeError: kernel exploded" in r.output
    r = invoke("runs", "--store", db)
    assert r.exit_code == 0 and "fakes" in r.output


def test_usage_errors_exit_2(tmp_path):
    r = invoke("report", "99", "--store", tmp_path / "none.db")
    assert r.exit_code == 2 and "no results store" in r.output
    cfg = fake_config(tmp_path)
    invoke("run", cfg, "--local")
    r = invoke("report", "99", "--store", tmp_path / "farm.db")
    assert r.exit_code == 2 and "no run '99'" in r.output and "Traceback" not in r.output
    r = invoke("run")
    assert r.exit_code == 2 and "give a CONFIG" in r.output
    p = tmp_path / "unknown.yaml"
    p.write_text(f"store: {tmp_path / 'farm.db'}\nworkloads: [{{workload: not_a_workload}}]\n")
    r = invoke("run", p, "--local")
    assert r.exit_code == 2 and "unknown workload 'not_a_workload'" in r.output
    assert "workloads.0.workload" in r.output and str(p) in r.output


def test_compile_command():
    r = invoke("compile", f"{FAKES}::fake_vec", "--emit", "ptx", "--arg", "N=4096")
    assert r.exit_code == 0, r.output
    assert ".version" in r.output
    r = invoke("compile", f"{FAKES}::fake_vec", "--emit", "llir", "--meta", "mode=compile_error")
    assert r.exit_code == 1 and "compilation failed" in r.output and "fake.py:3:5" in r.output
    r = invoke("compile", f"{FAKES}::fake_vec", "--emit", "sass")
    assert r.exit_code == 2 and "--emit must be one of" in r.output
    r = invoke("compile", f"{FAKES}::nothing")
    assert r.exit_code == 2 and "no workload or @compiler.jit kernel named 'nothing'" in r.output


def test_workloads_command_lists_a_file():
    r = invoke("workloads", FAKES)
    assert r.exit_code == 0 and "fake_vec" in r.output and "fake_inplace" in r.output


@pytest.mark.slow
def test_ray_run_through_cli(tmp_path, ray_session):
    cfg = fake_config(tmp_path, modes=("ok", "die", "hang"), ns=(64,))
    r = invoke("run", cfg, "--timeout", "3", "--format", "json")
    assert r.exit_code == 1, r.output  # two of the three jobs failed
    assert "1 timeout" in r.stderr and "1 worker_died" in r.stderr and "1 validated" in r.stderr
    got = json.loads(r.stdout)  # on Ray too, nothing but the data on stdout (Ray's own messages included)
    assert sorted(x["status"] for x in got["results"]) == ["timeout", "validated", "worker_died"]


def test_ctrl_c_shuts_the_executor_down(tmp_path, monkeypatch):
    """Ctrl-C while jobs run: the executor (Ray) is closed, the run is marked interrupted, resume is printed."""
    import farm.executor
    closed = []

    class Interrupted:
        name = "ray"

        def resources(self):
            return {"cpus": 2, "gpus": 0, "gpu_kind": None, "gpu_names": [], "nodes": 1}

        def run(self, jobs, opts, on_event):
            for job in jobs:
                on_event("start", job, "cpu0")
                raise KeyboardInterrupt

        def close(self):
            closed.append(True)

    monkeypatch.setattr(farm.executor, "make_executor", lambda *a, **k: Interrupted())
    r = invoke("run", fake_config(tmp_path, ns=(64, 128)))
    assert r.exit_code == 130 and closed == [True], r.output
    assert "farm run --resume 1" in r.output
    r = invoke("runs", "--store", tmp_path / "farm.db", "--format", "json")
    assert json.loads(r.stdout)[0]["status"] == "interrupted"


@pytest.mark.slow
def test_cluster_command(ray_session):
    r = invoke("cluster")
    assert r.exit_code == 0, r.output
    assert "CPUs" in r.output and "no GPU" in r.output


def test_cache_info_trim_clear(tmp_path):
    from compiler.runtime.cache import KernelCache, cache_key
    d = tmp_path / "cache"
    c = KernelCache(str(d), max_bytes=None)
    for i in range(6):
        c.put(cache_key(i), {"ptx": ".entry k {}\n" * (200 + i), "cubin": bytes(4000 + i)})
    total = sum(s for _, s, _ in c.entries())
    r = invoke("cache", "info", "--dir", d, "--format", "json")
    assert r.exit_code == 0, r.output
    info = json.loads(r.stdout)
    assert info["entries"] == 6 and info["bytes"] == total and info["dir"] == str(d)
    r = invoke("cache", "trim", "--dir", d, "--max-size", total // 2, "--format", "json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["removed_entries"] == 4 and out["kept_bytes"] <= total // 2 * 3 // 4 + 1
    r = invoke("cache", "trim", "--dir", d, "--max-size", "half")
    assert r.exit_code == 2 and "--max-size" in r.output and "not a size" in r.output
    r = invoke("cache", "clear", "--dir", d)
    assert r.exit_code == 0 and "removed 2 of 2 kernel(s)" in r.output
    assert KernelCache(str(d)).entries() == []
