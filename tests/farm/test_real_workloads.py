"""The bundled workloads through the farm: compiled to PTX and validated in the interpreter (no GPU)."""
import pytest
from typer.testing import CliRunner

from farm.cli.main import app

workloads = pytest.importorskip("workloads")


@pytest.fixture(scope="module")
def registry():
    try:
        reg = workloads.registry()
    except Exception as e:  # the compiler or a workload is mid-change
        pytest.skip(f"workload registry does not import: {type(e).__name__}: {e}")
    for name in ("vector_add", "softmax"):
        if name not in reg:
            pytest.skip(f"no {name} workload yet")
    return reg


def _config(tmp_path, extra=""):
    p = tmp_path / "real.yaml"
    p.write_text(f"""name: real
store: {tmp_path / 'farm.db'}
{extra}
workloads:
  - workload: vector_add
    params: {{N: [1000, 4096], dtype: [float32, float16]}}
    meta: {{BLOCK: [256, 1024], num_warps: [4]}}
  - workload: softmax
    params: {{M: [4], N: [781], dtype: [float32, bfloat16]}}
""")
    return p


def test_local_interpreter_sweep(tmp_path, registry):
    r = CliRunner().invoke(app, ["run", str(_config(tmp_path)), "--local", "--format", "csv"])
    assert r.exit_code == 0, r.output
    assert "10 validated" in r.output, r.output


@pytest.mark.slow
def test_ray_interpreter_sweep_and_compile_only(tmp_path, registry, ray_session):
    r = CliRunner().invoke(app, ["run", str(_config(tmp_path)), "--format", "none"])
    assert r.exit_code == 0, r.output
    assert "10 validated" in r.output, r.output
    r = CliRunner().invoke(app, ["run", str(_config(tmp_path)), "--compile-only", "--format", "none"])
    assert r.exit_code == 0 and "10 compiled" in r.output, r.output


def test_compile_emits_ptx(registry):
    r = CliRunner().invoke(app, ["compile", "vector_add", "--emit", "ptx", "--arg", "N=4096", "--meta", "BLOCK=256"])
    assert r.exit_code == 0, r.output
    assert ".entry" in r.output and "sm_90" in r.output
    r = CliRunner().invoke(app, ["compile", "vector_add", "--emit", "tile"])
    assert r.exit_code == 0 and r.output.strip()
