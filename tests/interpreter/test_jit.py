"""End to end: kernels written with compiler.language, lowered by the frontend, run by the interpreter."""
import numpy as np
import pytest

import compiler

from . import jit_kernels as K


def kernel_line(text):
    with open(K.__file__) as f:
        return next(i for i, s in enumerate(f.read().splitlines(), 1) if text in s)


def test_histogram_atomics():
    rng = np.random.default_rng(0)
    n, nb = 5000, 8
    x = rng.integers(0, 1 << 20, n).astype(np.int32)
    counts = np.zeros(nb, np.int32)
    K.histogram[(triton_cdiv(n, 512),)](x, counts, n, NB=nb, BLOCK=512)
    np.testing.assert_array_equal(counts, np.bincount(x % nb, minlength=nb))


def triton_cdiv(a, b):
    return (a + b - 1) // b


def test_argmax_first_on_ties():
    rng = np.random.default_rng(1)
    rows, cols = 9, 100
    x = rng.integers(0, 6, (rows, cols)).astype(np.float32)
    out = np.zeros(rows, np.int32)
    K.row_argmax[(rows,)](x, out, cols, cols, BLOCK=128)
    np.testing.assert_array_equal(out, np.argmax(x, axis=1))


@pytest.mark.parametrize("reverse", [False, True])
def test_cumsum(reverse):
    rng = np.random.default_rng(2)
    rows, cols = 5, 60
    x = rng.integers(-1000, 1000, (rows, cols)).astype(np.int32)
    out = np.zeros_like(x)
    K.row_cumsum[(rows,)](x, out, cols, cols, REVERSE=reverse, BLOCK=64)
    ref = np.flip(np.cumsum(np.flip(x, 1), 1), 1) if reverse else np.cumsum(x, 1)
    np.testing.assert_array_equal(out, ref)


def test_device_assert_needs_debug():
    x = np.array([3, 2, -1, 5], np.int32)
    K.checked[(1,)](x, 4, BLOCK=4)
    with pytest.raises(compiler.KernelRuntimeError) as ei:
        K.checked[(1,)](x, 4, BLOCK=4, debug=True)
    msg = str(ei.value)
    assert f"jit_kernels.py:{kernel_line('tl.device_assert(x > 0')}:" in msg and "x must be positive" in msg


def test_device_print(capsys):
    K.printer[(2,)](np.array([7, 8], np.int32))
    lines = capsys.readouterr().out.splitlines()
    assert lines == ["pid (0, 0, 0) idx (0) x: 7", "pid (0, 0, 0) idx (1) x: 8",
                     "pid (1, 0, 0) idx (0) x: 7", "pid (1, 0, 0) idx (1) x: 8"]


def test_oob_2d_location_and_offset():
    x = np.ones((8, 8), np.float32)
    K.oob_2d[(1,)](x, 8, BLOCK=8)
    assert (x == 2).all()
    with pytest.raises(compiler.KernelRuntimeError) as ei:
        K.oob_2d[(1,)](x, 9, BLOCK=8)  # stride too large: the last rows run past the array
    msg = str(ei.value)
    assert f"jit_kernels.py:{kernel_line('x = tl.load(X + r * stride + c)')}:" in msg
    assert "out-of-bounds load" in msg and "'X'" in msg and "256 bytes" in msg

