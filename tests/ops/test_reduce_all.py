"""A reduction over every element (axis=None) of a tile of rank 2 or more is one reduce over all axes in the tile's own
layout (a thread's registers, then the lanes, then the warps), not one over the tile flattened by an order-keeping
reshape (which no layout of the tile holds in place: shared stores and a barrier for a [4, 512] tile loaded as
float16, 8 elements a thread; the A/B `reduce_all`: LSE + argmax 0.834 of that time, H100 2026-12-07). Results in the
interpreter, through ptxas and on the GPU: sums, maxima with keep_dims, argmax and argmin over the whole tile (the
row-major index of the first extreme), and a combine of the user's (the smallest nonzero value: associative and
commutative, as a reduction over every element needs, since Triton's too may combine them in any order)."""
import numpy as np
import pytest

import compiler
import compiler.language as tl

from .test_ops import TARGETS, assert_exact, poison, run


@compiler.jit
def all_kernel(X, S, M, F, A, R: tl.constexpr, C: tl.constexpr):
    rr = tl.arange(0, R)
    rc = tl.arange(0, C)
    x = tl.load(X + rr[:, None] * C + rc[None, :]).to(tl.float32)  # float16: 8 elements in a row a thread
    tl.store(S, tl.sum(x))
    m = tl.max(x, axis=None, keep_dims=True)
    tl.store(M + rr[:, None] * 0 + rc[None, :] * 0, m)
    xi = (x > 1.5).to(tl.int32) * (rr[:, None] * C + rc[None, :] + 1)
    tl.store(F, tl.reduce(xi, None, _min_nonzero))
    tl.store(A, tl.argmax(x, axis=None))
    tl.store(A + 1, tl.argmin(x, axis=None))
    q = (x * 2.0).to(tl.int32)  # ties: the first in row-major order
    tl.store(A + 2, tl.argmax(q, axis=None))
    tl.store(A + 3, tl.argmin(q, axis=None))


@compiler.jit
def _min_nonzero(a, b):
    return tl.where(a == 0, b, tl.where(b == 0, a, tl.minimum(a, b)))


def _inputs():
    rng = np.random.default_rng(21)
    return rng.standard_normal(4 * 512).astype(np.float16)


def _outs():
    return poison(1, "float32"), poison(1, "float32"), poison(1, "int32"), poison(4, "int32")


def test_no_flattening_through_shared_memory():
    """Shared memory only for the cross-warp step: one store a reduced value (the sum, the maximum, the user's
    combine, and value and index of each of the four arg-reductions: 11), none for moving the tile."""
    x = _inputs()
    all_kernel._drop_compiled()
    ptx = all_kernel.warmup(x, *_outs(), grid=(1,), target="sm_90a", R=4, C=512, num_warps=4).asm["ptx"]
    assert ptx.count("st.shared") == 11


@pytest.mark.parametrize("target", TARGETS)
def test_reduce_every_element(target):
    x = _inputs()
    s, m, f, a = _outs()
    run(target, all_kernel, (1,), [x, s, m, f, a], [], R=4, C=512, num_warps=4)
    np.testing.assert_allclose(s[0], x.astype(np.float64).sum(), rtol=1e-5, atol=1e-4)
    assert m[0] == x.astype(np.float32).max()
    assert_exact(f, np.array([np.flatnonzero(x > 1.5)[0] + 1], np.int32))
    q = (x.astype(np.float32) * 2.0).astype(np.int32)
    assert (q == q.max()).sum() > 1 and (q == q.min()).sum() > 1  # the ties the index order decides
    assert_exact(a, np.array([x.argmax(), x.argmin(), q.argmax(), q.argmin()], np.int32))
