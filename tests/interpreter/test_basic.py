import numpy as np
import pytest

from compiler.errors import KernelRuntimeError
from compiler.interpreter import run
from compiler.ir import types as T

from .irb import at, function, i32, offsets, ptr, tt


def build_vadd(elem=T.float32, block=128):
    f, b, (X, Y, Z, N) = function("vadd", [("X", ptr(elem)), ("Y", ptr(elem)), ("Z", ptr(elem)),
                                            ("N", tt(T.int32))])
    offs = offsets(b, block)
    mask = b.cmp("lt", offs, b.splat(N, (block,)))
    at(b, 10, 8)
    x = b.load(b.addptr(b.splat(X, (block,)), offs), mask)
    at(b, 11, 8)
    y = b.load(b.addptr(b.splat(Y, (block,)), offs), mask)
    at(b, 12, 4)
    b.store(b.addptr(b.splat(Z, (block,)), offs), b.binary("add", x, y), mask)
    b.ret()
    return f


def test_vector_add_odd_n():
    rng = np.random.default_rng(0)
    n = 1000 + 37
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    z = np.full(n, 7.0, np.float32)
    f = build_vadd()
    run(f, ((n + 127) // 128, 1, 1), [x, y, z, n], debug=True)
    np.testing.assert_array_equal(z, x + y)


def test_vector_add_out_of_bounds_names_location():
    rng = np.random.default_rng(1)
    n = 1000
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    z = np.zeros(n, np.float32)
    f = build_vadd()
    with pytest.raises(KernelRuntimeError) as ei:
        run(f, ((n + 127) // 128, 1, 1), [x, y, z, n + 5])  # mask lets 5 lanes past the end
    msg = str(ei.value)
    assert "kernels.py:10:9" in msg
    assert "out-of-bounds load" in msg
    assert "'X'" in msg and "4000 bytes" in msg
