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


def test_kernel_over_48k_of_shared_memory_may_use_the_whole_opt_in():
    """A kernel over 48 KiB of shared memory is allowed the device's whole opt-in (as Triton's launcher does), so
    the SM takes its largest shared-memory configuration; a small one keeps the default."""
    import numpy as np

    import compiler
    import compiler.language as tl
    from compiler.runtime.cuda import device_properties

    @compiler.jit
    def mm(A, B, C, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        rm, rn, rk = tl.arange(0, BM), tl.arange(0, BN), tl.arange(0, BK)
        acc = tl.zeros([BM, BN], tl.float32)
        for k in range(0, K, BK):
            a = tl.load(A + rm[:, None] * K + (k + rk)[None, :])
            b = tl.load(B + (k + rk)[:, None] * BN + rn[None, :])
            acc = tl.dot(a, b, acc)
        tl.store(C + rm[:, None] * BN + rn[None, :], acc)

    @compiler.jit
    def add(X, Y, BLOCK: tl.constexpr):
        o = tl.arange(0, BLOCK)
        tl.store(Y + o, tl.load(X + o) + 1.0)

    a, b, c = np.zeros((128, 512), np.float16), np.zeros((512, 128), np.float16), np.zeros((128, 128), np.float32)
    big = mm.warmup(a, b, c, 512, grid=(1,), BM=128, BN=128, BK=64, num_warps=8, num_stages=3)
    x = np.zeros(256, np.float32)
    small = add.warmup(x, x, grid=(1,), BLOCK=256)
    assert big.metadata["shared_bytes"] > 48 * 1024 >= small.metadata["shared_bytes"]
    kb, ks = big.launcher.kernel, small.launcher.kernel
    optin = device_properties().max_shared_per_block_optin
    assert kb.attribute("MAX_DYNAMIC_SHARED_SIZE_BYTES") == optin - kb.attribute("SHARED_SIZE_BYTES")
    assert ks.attribute("MAX_DYNAMIC_SHARED_SIZE_BYTES") <= 48 * 1024
