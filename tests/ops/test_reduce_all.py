"""(A/B `reduce_all`) A reduction over every element (axis=None) of a tile of rank 2 or more as one reduce over all
axes in the tile's own layout (a thread's registers, then the lanes, then the warps), instead of one over the tile
flattened by an order-keeping reshape (which no layout of the tile holds in place: shared stores and a barrier for
a [4, 512] tile loaded as float16, 8 elements a thread). The same results, with and without the switch, in the
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


def test_no_flattening_through_shared_memory(monkeypatch):
    x = _inputs()
    counts = {}
    for ab in ("", "reduce_all"):
        monkeypatch.setenv("TILEFARM_AB", ab)
        ptx = all_kernel.warmup(x, *_outs(), grid=(1,), target="sm_90a", R=4, C=512, num_warps=4).asm["ptx"]
        counts[ab] = ptx.count("st.shared")
    assert counts["reduce_all"] < counts[""], counts


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("ab", ["", "reduce_all"])
def test_reduce_every_element(target, ab, monkeypatch):
    monkeypatch.setenv("TILEFARM_AB", ab)
    x = _inputs()
    s, m, f, a = _outs()
    run(target, all_kernel, (1,), [x, s, m, f, a], [], R=4, C=512, num_warps=4)
    np.testing.assert_allclose(s[0], x.astype(np.float64).sum(), rtol=1e-5, atol=1e-4)
    assert m[0] == x.astype(np.float32).max()
    assert_exact(f, np.array([np.flatnonzero(x > 1.5)[0] + 1], np.int32))
    q = (x.astype(np.float32) * 2.0).astype(np.int32)
    assert (q == q.max()).sum() > 1 and (q == q.min()).sum() > 1  # the ties the index order decides
    assert_exact(a, np.array([x.argmax(), x.argmin(), q.argmax(), q.argmin()], np.int32))
