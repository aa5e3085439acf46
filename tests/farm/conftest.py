"""Shared fixtures: one Ray instance per test session, the fake workloads file, a fresh store per test."""
import os
import pathlib
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
FAKES = pathlib.Path(__file__).resolve().parent / "fake_workloads.py"
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
# The fake kernels are NumPy: keep the farm off any GPU this machine has (GPU paths are tested on the node).
os.environ["FARM_FORCE_NO_GPU"] = "1"


@pytest.fixture(scope="session")
def ray_session():
    """A local Ray with 2 CPUs for the whole session (ray.init costs seconds; pay it once)."""
    import logging

    import ray
    paths = os.environ.get("PYTHONPATH", "")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), paths) if p)
    ray.init(num_cpus=2, num_gpus=0, include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR)
    yield ray
    ray.shutdown()


@pytest.fixture
def fakes():
    return str(FAKES)


@pytest.fixture
def store(tmp_path):
    from farm.store import Store
    s = Store(tmp_path / "farm.db")
    yield s
    s.close()


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
