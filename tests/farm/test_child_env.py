"""Child processes the farm tests start (`python -m farm ...`, probes) import what the test process imports:
on the GPU node ray and pydantic come from a folder put on sys.path of the test process only, and a child
given PYTHONPATH=<checkout> alone could not import them."""
import os
import subprocess
import sys

from farm_testing import REPO, child_env, child_pythonpath


def test_a_folder_on_this_process_path_reaches_the_child(tmp_path, monkeypatch):
    site = tmp_path / "unpacked-site"
    site.mkdir()
    (site / "only_on_parent_path.py").write_text("WHERE = 'unpacked'\n")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delenv("PYTHONPATH", raising=False)
    code = "import only_on_parent_path, farm; print(only_on_parent_path.WHERE, farm.__file__)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, env=child_env(),
                       timeout=120)
    assert r.returncode == 0, r.stderr
    where, farm_file = r.stdout.split()
    assert where == "unpacked" and farm_file.startswith(str(REPO))
    # What the tests did before: the checkout only. The child cannot import the unpacked package.
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                       env=child_env(PYTHONPATH=str(REPO)), timeout=120)
    assert r.returncode != 0 and "only_on_parent_path" in r.stderr


def test_the_interpreters_own_folders_stay_out():
    import sysconfig
    parts = child_pythonpath().split(os.pathsep)
    assert parts[0] == str(REPO)
    assert sysconfig.get_paths()["stdlib"] not in parts and sysconfig.get_paths()["purelib"] not in parts
