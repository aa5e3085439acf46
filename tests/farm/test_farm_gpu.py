"""The farm on a real GPU: a small sweep validated and timed, in-process and through Ray actors."""
import pytest
from typer.testing import CliRunner

from farm.cli.main import app
from farm.store import Store

pytestmark = pytest.mark.gpu


def _config(tmp_path):
    p = tmp_path / "gpu.yaml"
    p.write_text(f"""name: gpu-smoke
store: {tmp_path / 'farm.db'}
timing: {{warmup_ms: 5, rep_ms: 20, flush_l2: true, timeout_s: 120}}
workloads:
  - workload: vector_add
    params: {{N: [1048576, 1000003], dtype: [float32, bfloat16]}}
    meta: {{BLOCK: [1024], num_warps: [4]}}
  - workload: softmax
    params: {{M: [1024], N: [1000, 4096], dtype: [float32]}}
    meta: {{num_warps: [4, 8]}}
""")
    return p


def _check_store(tmp_path, n):
    store = Store(tmp_path / "farm.db")
    rows = store.rows(store.resolve("latest"))
    assert len(rows) == n, rows
    for r in rows:
        assert r["status"] == "ok", r  # validated and timed
        assert r["median_ms"] is not None and r["median_ms"] > 0, r
        assert r["p10_ms"] <= r["median_ms"] <= r["p90_ms"], r


def test_local_gpu_sweep(tmp_path):
    env = {"FARM_FORCE_NO_GPU": ""}
    r = CliRunner().invoke(app, ["run", str(_config(tmp_path)), "--local", "--format", "none"], env=env)
    assert r.exit_code == 0, r.output
    _check_store(tmp_path, 8)


def test_ray_gpu_sweep(tmp_path):
    env = {"FARM_FORCE_NO_GPU": ""}
    r = CliRunner().invoke(app, ["run", str(_config(tmp_path)), "--format", "none"], env=env)
    assert r.exit_code == 0, r.output
    _check_store(tmp_path, 8)
