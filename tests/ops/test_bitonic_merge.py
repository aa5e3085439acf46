"""tl.bitonic_merge: a bitonic sequence along the last dim merged into order, by the network of Triton's
(highest index bit first, swap where (left > right) differs from `descending`), so any input, bitonic or not,
comes out as Triton's does. Checked against np.sort on bitonic rows and against a NumPy model of the network on
arbitrary rows, on every target."""
import numpy as np
import pytest

import compiler
import compiler.language as tl
from compiler.errors import CompilationError

from .test_ops import TARGETS, poison, run


@compiler.jit
def _merge(X, Y, M: tl.constexpr, N: tl.constexpr, DESC: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    tl.store(Y + offs, tl.bitonic_merge(tl.load(X + offs), descending=DESC))


def _network(a, desc):
    """The merge network on the rows of a (NumPy): for index bit b from the highest down, each pair (j, j | 2**b)
    swapped where (a[j] > a[j | 2**b]) != desc."""
    a = a.copy()
    n = a.shape[-1]
    for b in range(n.bit_length() - 2, -1, -1):
        j = np.array([i for i in range(n) if not i >> b & 1])
        p = j | (1 << b)
        left, right = a[:, j].copy(), a[:, p].copy()
        sw = (left > right) != desc
        a[:, j] = np.where(sw, right, left)
        a[:, p] = np.where(sw, left, right)
    return a


def _bitonic_rows(rng, m, n, dtype):
    rows = []
    for i in range(m):
        v = np.sort(rng.integers(-50, 50, n)).astype(dtype)
        k = rng.integers(1, n)
        r = np.concatenate([v[:k], v[k:][::-1]])  # up then down
        rows.append(np.roll(r, rng.integers(0, n)) if i % 2 else r)  # a rotation is bitonic too
    return np.stack(rows)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["float32", "int32"])
@pytest.mark.parametrize("desc", [False, True])
def test_bitonic_rows_come_out_sorted(target, dtype, desc):
    rng = np.random.default_rng(7)
    a = _bitonic_rows(rng, 8, 64, dtype)
    y = poison(a.size, dtype)
    run(target, _merge, (1,), [a, y], [], M=8, N=64, DESC=desc, num_warps=4)
    ref = np.sort(a, axis=1)
    np.testing.assert_array_equal(y.reshape(a.shape), ref[:, ::-1] if desc else ref)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("desc", [False, True])
def test_any_rows_as_the_network(target, desc):
    a = np.random.default_rng(8).standard_normal((4, 128)).astype(np.float32)
    y = poison(a.size, "float32")
    run(target, _merge, (1,), [a, y], [], M=4, N=128, DESC=desc, num_warps=4)
    np.testing.assert_array_equal(y.reshape(a.shape), _network(a, desc))


def test_only_along_the_last_dim():
    @compiler.jit
    def along_rows(X, Y):
        offs = tl.arange(0, 4)[:, None] * 4 + tl.arange(0, 4)[None, :]
        tl.store(Y + offs, tl.bitonic_merge(tl.load(X + offs), dim=0))

    x = np.zeros(16, np.float32)
    with pytest.raises(CompilationError, match="last dim"):
        along_rows.warmup(x, x, grid=(1,), target="sm_90a")
