"""Runtime test setup: skip gpu-marked tests (saying why) when there is no GPU, and build the fake libcuda
that lets the CUDA code paths run under the real cuda.bindings on machines without a GPU."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


@pytest.fixture(autouse=True)
def _skip_without_gpu(request):
    """Tests marked ``@pytest.mark.gpu`` run only where ``gpu_available()`` says yes."""
    if request.node.get_closest_marker("gpu") is not None:
        from compiler.runtime import gpu_available

        ok, reason = gpu_available()
        if not ok:
            pytest.skip(f"needs a GPU: {reason}")


@pytest.fixture(scope="session")
def fake_driver_dir(tmp_path_factory):
    """A directory holding the fake libcuda.so.1 built from fake_libcuda.c (skips when there is no gcc)."""
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler to build the fake libcuda")
    d = tmp_path_factory.mktemp("fakecuda")
    out = d / "libcuda.so.1"
    p = subprocess.run([cc, "-shared", "-fPIC", "-O2", "-o", str(out), os.path.join(HERE, "fake_libcuda.c"),
                        "-ldl", "-lpthread"], capture_output=True, text=True)
    if p.returncode != 0:
        pytest.skip(f"could not build the fake libcuda: {p.stderr[-500:]}")
    return str(d)


@pytest.fixture
def run_fake(fake_driver_dir):
    """Run a Python snippet in a fresh process whose libcuda is the fake one; returns its stdout.

    A fresh process because a process loads libcuda once, and the fake must not leak into other tests.
    """

    def run(code: str, env: dict | None = None, timeout: float = 120) -> str:
        e = dict(os.environ)
        e["LD_LIBRARY_PATH"] = fake_driver_dir + os.pathsep + e.get("LD_LIBRARY_PATH", "")
        e["PYTHONPATH"] = os.pathsep.join([REPO, HERE, e.get("PYTHONPATH", "")])
        e.pop("TILEFARM_DEVICE", None)
        e.update(env or {})
        p = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                           env=e, timeout=timeout, cwd=REPO)
        if p.returncode != 0:
            raise AssertionError(f"subprocess failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
        return p.stdout

    return run
