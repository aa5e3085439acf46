"""The kernel cache and the launcher's shared library are used only from folders private to this user: a folder
another user can write could hold a planted entry or .so (its hashes are in the same folder and prove nothing)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from compiler.runtime import KernelCache, cache_key
from compiler.runtime.cache import UnsafeCacheDir

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_cache_folders_are_created_private(tmp_path):
    c = KernelCache(str(tmp_path / "a" / "cache"))
    key = cache_key({"k": 1})
    path = c.put(key, {"ptx": "x"})
    assert os.stat(c.dir).st_mode & 0o777 == 0o700
    assert os.stat(os.path.dirname(path)).st_mode & 0o077 == 0 and os.stat(path).st_mode & 0o077 == 0


def test_a_folder_others_can_write_is_refused(tmp_path):
    d = tmp_path / "shared"
    d.mkdir()
    d.chmod(0o777)
    with pytest.raises(UnsafeCacheDir, match="writable by group and others"), pytest.warns(RuntimeWarning):
        KernelCache(str(d))
    d.chmod(0o775)
    with pytest.raises(UnsafeCacheDir, match="writable by group"), pytest.warns(RuntimeWarning, match="cache is off"):
        KernelCache(str(d))
    d.chmod(0o755)  # readable by others is not a way to plant anything
    KernelCache(str(d))


def test_an_entry_others_could_have_written_is_a_miss(tmp_path):
    c = KernelCache(str(tmp_path / "c"))
    key = cache_key({"k": 2})
    path = c.put(key, {"ptx": "x"})
    c.evict_memory()
    assert c.get(key) == {"ptx": "x"}
    c.evict_memory()
    os.chmod(path, 0o777)
    assert c.get(key) is None


def _launcher(env: dict) -> str:
    code = textwrap.dedent("""
        from compiler.runtime import fastlaunch
        fn = fastlaunch.get()
        print("fn", fn is not None, "|", fastlaunch._state.get("error"))
    """)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=REPO,
                       env={**os.environ, "PYTHONPATH": REPO, **env})
    assert p.returncode == 0, p.stderr
    return p.stdout


@pytest.mark.skipif(not (shutil.which("cc") or shutil.which("gcc")), reason="no C compiler to build the launcher")
def test_the_launcher_is_loaded_only_from_a_private_folder(tmp_path):
    d = tmp_path / "launcher"
    out = _launcher({"TILEFARM_LAUNCHER_DIR": str(d)})
    assert out.startswith("fn True"), out
    assert os.stat(d).st_mode & 0o777 == 0o700
    so = next(d.glob("_tilefarm_fastlaunch-*"))
    so.chmod(0o666)  # a library someone else could have replaced: not loaded
    out = _launcher({"TILEFARM_LAUNCHER_DIR": str(d)})
    assert out.startswith("fn False") and "refusing" in out, out
    so.chmod(0o755)
    d.chmod(0o777)
    out = _launcher({"TILEFARM_LAUNCHER_DIR": str(d)})
    assert out.startswith("fn False") and "refusing the cache folder" in out, out
