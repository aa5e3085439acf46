"""On a real GPU: DeviceArray, hand-written PTX launches, errors, do_bench. Skipped (saying why) without one."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import runtime_gpu_checks as checks

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("check", checks.ALL, ids=lambda c: c.__name__)
def test_gpu_check(check):
    print(check())


def test_bad_pointer_raises_cuda_error_in_its_own_process():
    # In a subprocess: the illegal-address fault would poison this process's context for the other tests.
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([REPO, HERE, os.environ.get("PYTHONPATH", "")]))
    p = subprocess.run([sys.executable, "-c", "import runtime_gpu_checks as c; print(c.check_bad_pointer())"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "CUDA_ERROR_ILLEGAL_ADDRESS" in p.stdout
