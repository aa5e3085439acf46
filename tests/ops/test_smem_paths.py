"""A shared-memory use starts with a barrier only where an earlier use may reach it (codegen/llvm.py `smem_begin`, was
the A/B `smem_paths`). Loops always do (the next iteration's use follows this one's); each path of an `if` starts
from the uses before the `if`, so the first use of a kernel under an early `return` (the rest of the kernel is one
branch) and the first use on the else path of an `if` whose then path used shared memory get none, and a use after
the `if` does. Results in the interpreter, through ptxas and on the GPU; the barriers in the PTX."""
import numpy as np
import pytest

import compiler
import compiler.language as tl

from .test_ops import TARGETS, poison, run


@compiler.jit
def early_return_kernel(IDX, X, Y, n, BLOCK: tl.constexpr):
    # a gather of a row per program, skipped where the program's index is negative; X's rows transposed into Y's
    # columns (a layout conversion: the kernel's first shared-memory use sits under the early return)
    pid = tl.program_id(0)
    row = tl.load(IDX + pid)
    if row < 0:
        return
    r = tl.arange(0, BLOCK)
    x = tl.load(X + row * BLOCK * BLOCK + r[:, None] * BLOCK + r[None, :])
    tl.store(Y + pid * BLOCK * BLOCK + r[None, :] * BLOCK + r[:, None], x * 2.0)


@compiler.jit
def two_paths_kernel(X, Y, flip, BLOCK: tl.constexpr):
    # both paths of a uniform branch use shared memory (a transposed store; a column maximum across warps): the
    # else path's use needs no barrier before it, the column sum after the `if` does
    r = tl.arange(0, BLOCK)
    x = tl.load(X + r[:, None] * BLOCK + r[None, :])
    if flip > 2:
        tl.store(Y + r[None, :] * BLOCK + r[:, None], x + 1.0)
    else:
        tl.store(Y + r, tl.max(x, axis=0))
    s = tl.sum(x, axis=0)
    tl.store(Y + BLOCK * BLOCK + r, s)


def _early_return_args(rng):
    idx = np.array([2, -1, 0, 1, -3, 2], np.int32)
    x = rng.standard_normal(3 * 32 * 32).astype(np.float32)
    return idx, x


@pytest.mark.parametrize("target", TARGETS)
def test_early_return_results(target):
    idx, x = _early_return_args(np.random.default_rng(41))
    y = poison(len(idx) * 32 * 32, "float32")
    run(target, early_return_kernel, (len(idx),), [idx, x, y], [3], BLOCK=32, num_warps=4)
    y = y.reshape(len(idx), 32, 32)
    xs = x.reshape(3, 32, 32).astype(np.float64)
    for p, row in enumerate(idx):
        if row < 0:
            assert np.isnan(y[p]).all()  # skipped programs write nothing
        else:
            np.testing.assert_array_equal(y[p], (2.0 * xs[row].T).astype(np.float32))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("flip", [2, 5])  # (not 1: a constant there)
def test_two_paths_results(target, flip):
    x = np.random.default_rng(42).standard_normal(64 * 64).astype(np.float32)
    y = poison(64 * 64 + 64, "float32")
    run(target, two_paths_kernel, (1,), [x, y], [flip], BLOCK=64, num_warps=4)
    xs = x.reshape(64, 64)
    if flip > 2:
        np.testing.assert_array_equal(y[:64 * 64].reshape(64, 64), (xs + 1.0).T)
    else:
        np.testing.assert_array_equal(y[:64], xs.max(axis=0))
        assert np.isnan(y[64:64 * 64]).all()
    np.testing.assert_allclose(y[64 * 64:], xs.astype(np.float64).sum(axis=0), rtol=1e-5, atol=1e-5)


def _ptx(kernel, args, monkeypatch, tmp_path, **meta):
    monkeypatch.setenv("TILEFARM_CACHE_DIR", str(tmp_path))
    return kernel.warmup(*args, grid=(1,), target="sm_90a", **meta).asm["ptx"]


def _uses(ptx):
    """Per shared-memory use (a run of st.shared with no ld.shared between), whether a bar.sync comes between it and
    the previous use's last shared access (or the kernel's start)."""
    out, last, barrier = [], "start", False
    for line in ptx.splitlines():
        if "bar.sync" in line:
            barrier = True
        elif "st.shared" in line:
            if last != "st":
                out.append(barrier)
            last, barrier = "st", False
        elif "ld.shared" in line:
            last, barrier = "ld", False
    return out


def test_early_return_first_use_has_no_barrier(monkeypatch, tmp_path):
    idx, x = _early_return_args(np.random.default_rng(41))
    ptx = _ptx(early_return_kernel, (idx, x, np.zeros(len(idx) * 32 * 32, np.float32), 3), monkeypatch, tmp_path,
               BLOCK=32, num_warps=4)
    assert ptx[:ptx.index("st.shared")].count("bar.sync") == 0
    assert ptx.count("bar.sync") >= 1  # the conversion's own barrier, between its writes and its reads


def test_else_path_starts_from_the_uses_before_the_if(monkeypatch, tmp_path):
    args = (np.zeros(64 * 64, np.float32), np.zeros(64 * 64 + 64, np.float32), 5)
    ptx = _ptx(two_paths_kernel, args, monkeypatch, tmp_path, BLOCK=64, num_warps=4)
    # three uses in program order: the then path's conversion, the else path's reduction, the sum after the if;
    # only the last follows an earlier use
    assert _uses(ptx) == [False, False, True], _uses(ptx)
