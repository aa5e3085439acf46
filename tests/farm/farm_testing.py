"""Helpers shared by the farm tests (a module of its own: every test folder has a `conftest`, so importing
"conftest" by name would pick whichever folder's was loaded first)."""
import pathlib
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]
FAKES = pathlib.Path(__file__).resolve().parent / "fake_workloads.py"
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def fake_config(tmp_path, modes=("ok",), ns=(100,), dtypes=("float32",), extra="", name="fakes", **meta):
    """Write a config sweeping the fake workload over modes x N x dtype; returns its path."""
    meta_lines = "".join(f"      {k}: {v!r}\n" for k, v in meta.items())
    text = f"""name: {name}
store: {tmp_path / 'farm.db'}
timing: {{timeout_s: 5}}
cluster: {{num_cpus: 2}}
{extra}
workloads:
  - workload: {FAKES}::fake_vec
    params:
      N: {list(ns)}
      dtype: {list(dtypes)}
    meta:
      mode: {list(modes)}
{meta_lines}"""
    p = tmp_path / f"{name}.yaml"
    p.write_text(text)
    return p
