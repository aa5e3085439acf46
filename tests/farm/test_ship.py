"""What `farm run` sends to a cluster's nodes: the config's folder without caches, stores or version control;
workload paths inside it named relative to it."""
import pytest

from farm import FarmError
from farm.jobs import Job


def test_folder_size_leaves_out_caches_stores_and_git(tmp_path):
    from farm.executor.ray import SHIP_EXCLUDES, _folder_size
    (tmp_path / "k.py").write_bytes(b"x" * 1000)
    for junk in (".git/objects/pack", "__pycache__", ".tilefarm", ".venv/lib"):
        (tmp_path / junk).mkdir(parents=True)
        (tmp_path / junk / "big").write_bytes(b"x" * 100_000)
    (tmp_path / "farm.db").write_bytes(b"x" * 100_000)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "table.csv").write_bytes(b"x" * 5000)
    total, largest = _folder_size(str(tmp_path), SHIP_EXCLUDES)
    assert total == 6000
    assert largest == [("data", 5000), ("k.py", 1000)]


def test_a_folder_too_big_to_send_is_refused_naming_what_fills_it(tmp_path, monkeypatch):
    from farm.executor import ray as rx
    (tmp_path / "weights").mkdir()
    (tmp_path / "weights" / "w.bin").write_bytes(b"x" * 3 * 2**20)
    (tmp_path / "k.py").write_text("pass\n")
    monkeypatch.setattr(rx, "SHIP_MAX_MB", 2.0)
    ex = rx.RayExecutor.__new__(rx.RayExecutor)  # the check comes before anything is asked of Ray
    with pytest.raises(FarmError, match=r"holds 3 MiB .*FARM_SHIP_MAX_MB=2.*weights \(3\.0 MiB\)"):
        ex.ship(str(tmp_path))


def test_workload_paths_inside_the_folder_go_relative(tmp_path):
    from farm.executor import ray as rx
    ex = rx.RayExecutor.__new__(rx.RayExecutor)
    ex._shipped = str(tmp_path)
    job = Job(key="k", idx=0, workload=f"{tmp_path}/sub/k.py::name", name="n", params={}, meta={})
    assert ex._job_for_nodes(job)["workload"] == "sub/k.py::name"
    for ref in ("vector_add", "/elsewhere/k.py"):  # a registry name; a file outside (a shared disk's path)
        assert ex._job_for_nodes(Job(key="k", idx=0, workload=ref, name="n", params={}, meta={}))["workload"] == ref
