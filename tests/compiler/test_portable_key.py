"""A kernel's cache key does not depend on where its file lies (machines of a fleet hold a shipped folder at
different paths and must find each other's kernels), except in debug builds, whose asserts print the path."""
import shutil

import numpy as np

import workloads
from tests.farm.farm_testing import REPO

EXAMPLE = REPO / "configs" / "examples" / "scaled_add.py"


def _kernel(tmp_path, sub, debug=False):
    d = tmp_path / sub
    d.mkdir()
    shutil.copy(EXAMPLE, d / "scaled_add.py")
    wl = workloads.load_file(d / "scaled_add.py")[0]
    arrays = {k: np.ones(64, np.float32) for k in ("x", "y", "out")}
    meta = {"BLOCK": 64, "num_warps": 4} | ({"debug": True} if debug else {})
    return wl.compile(arrays, {"N": 64, "dtype": "float32"}, meta)


def test_same_file_at_two_paths_has_one_key(tmp_path):
    a, b = _kernel(tmp_path, "one"), _kernel(tmp_path, "two")
    assert a.key == b.key
    assert a.asm["ptx"] == b.asm["ptx"]


def test_debug_builds_key_on_the_path(tmp_path):
    a, b = _kernel(tmp_path, "one", debug=True), _kernel(tmp_path, "two", debug=True)
    assert a.key != b.key


def test_an_edit_changes_the_key(tmp_path):
    a = _kernel(tmp_path, "one")
    d = tmp_path / "edited"
    d.mkdir()
    (d / "scaled_add.py").write_text(EXAMPLE.read_text().replace("(alpha * x + y)", "(alpha * x + y + 0.0)"))
    wl = workloads.load_file(d / "scaled_add.py")[0]
    arrays = {k: np.ones(64, np.float32) for k in ("x", "y", "out")}
    assert wl.compile(arrays, {"N": 64, "dtype": "float32"}, {"BLOCK": 64, "num_warps": 4}).key != a.key
