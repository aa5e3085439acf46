"""Shared fixtures: one Ray instance per test session, the fake workloads file, a fresh store per test."""
import os

import pytest

from farm_testing import FAKES, REPO, child_pythonpath, fake_config  # noqa: F401  (re-exported for older imports)

# The fake kernels are NumPy: keep the farm off any GPU this machine has (GPU paths are tested on the node).
os.environ["FARM_FORCE_NO_GPU"] = "1"


@pytest.fixture(scope="session")
def ray_session():
    """A local Ray with 2 CPUs for the whole session (ray.init costs seconds; pay it once)."""
    import logging

    import ray

    from farm.executor.ray import _init_local, _remove_session, _session_dir
    os.environ["PYTHONPATH"] = child_pythonpath()  # Ray's workers import what this process imports
    _init_local(num_cpus=2, num_gpus=0, include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR)
    session = _session_dir()
    yield ray
    again = _session_dir()  # test_fleet.py stops this Ray for its cluster and starts it again after
    ray.shutdown()
    for path in {session, again} - {None}:
        _remove_session(path)


@pytest.fixture
def fakes():
    return str(FAKES)


@pytest.fixture(params=["sqlite", "postgresql"])
def store_target(request, tmp_path):
    """Where a test's store lives: a SQLite file, or a new database on a real PostgreSQL server (tests/farm/pg.py;
    skipped, saying why, where no server can be started)."""
    if request.param == "sqlite":
        return str(tmp_path / "farm.db")
    import pg
    if pg.server() is None:
        pytest.skip(f"PostgreSQL store tests: {pg.why()}")
    return pg.new_database()


@pytest.fixture
def store(store_target):
    from farm.store import Store
    s = Store(store_target)
    yield s
    s.close()


