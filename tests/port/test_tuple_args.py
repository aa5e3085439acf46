"""Tuples as kernel arguments (Triton 3.x): tuples and namedtuples of pointers, numbers and constexprs, nested;
comprehensions and tl.tuple over them while compiling."""
from typing import NamedTuple

import numpy as np
import pytest

import compiler
import compiler.language as tl

from .kernels import poison

TARGETS = ["interp", "ptxas"]


class Pair(NamedTuple):
    src: object
    scale: object


@compiler.jit
def _bump(values):
    return tl.tuple([v + 1 for v in values])


@compiler.jit
def tuple_kernel(Outs, srcs, pair, nested, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    loaded = tuple(tl.load(p + offs) for p in srcs)
    bumped = _bump(loaded)
    for i in tl.static_range(len(Outs)):
        tl.store(Outs[i] + offs, bumped[i] * pair.scale)
    (a, (b, c)) = nested
    tl.store(Outs[0] + BLOCK + offs, tl.load(pair.src + offs) * a + b * c)
    tl.static_assert(isinstance(srcs, tl.tuple) and len(srcs) == 2)


def _args():
    rng = np.random.default_rng(9)
    B = 32
    s0, s1, s2 = (rng.standard_normal(B).astype(np.float32) for _ in range(3))
    o0, o1 = poison(2 * B, np.float32), poison(B, np.float32)
    return B, (s0, s1, s2), (o0, o1)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("scale", [1, 2.5])   # 1: an int specialized as a constant inside the tuple
def test_tuple_arguments(target, scale):
    B, (s0, s1, s2), (o0, o1) = _args()
    args = ((o0, o1), (s0, s1), Pair(s2, scale), (3, (tl.constexpr(4), 5)))
    if target == "ptxas":
        ck = tuple_kernel.warmup(*args, BLOCK=B, grid=(1,), target="sm_90a")
        assert ck.asm["cubin"]
        return
    tuple_kernel[(1,)](*args, BLOCK=B)
    np.testing.assert_allclose(o0[:B], (s0 + 1) * scale, rtol=1e-6)
    np.testing.assert_allclose(o1, (s1 + 1) * scale, rtol=1e-6)
    np.testing.assert_allclose(o0[B:], s2 * 3 + 20, rtol=1e-6)


def test_tuple_specializations_differ():
    # a different tuple structure or element type compiles anew (the key holds both)
    B, (s0, s1, s2), (o0, o1) = _args()
    tuple_kernel[(1,)]((o0, o1), (s0, s1), Pair(s2, 2.0), (3, (4, 5)), BLOCK=B)
    first = o0.copy()
    tuple_kernel[(1,)]((o0, o1), (s0, s1), Pair(s2, 2), (3, (4, 6)), BLOCK=B)
    np.testing.assert_allclose(o0[B:], s2 * 3 + 24, rtol=1e-6)
    np.testing.assert_allclose(first[B:], s2 * 3 + 20, rtol=1e-6)


@compiler.jit
def comprehension_kernel(Out, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    parts = [offs * k for k in range(1, 4) if k != 2]      # k = 1, 3
    total = parts[0] + parts[1]
    tl.store(Out + offs, total + sum([1 for _ in range(5)]))


def test_list_comprehension():
    out = poison(16, np.int32)
    comprehension_kernel[(1,)](out, BLOCK=16)
    np.testing.assert_array_equal(out, np.arange(16) * 4 + 5)


def test_constexpr_and_specialized_ints_have_a_constexpr_type():
    """As in Triton: a constexpr parameter, and an int argument equal to 1 (specialized), are constexprs inside the
    kernel, `x.type` a tl.constexpr_type and `x.value` the value; a runtime int is a scalar tensor."""
    @compiler.jit
    def k(X, n, strides, N: tl.constexpr):
        tl.static_assert(isinstance(N.type, tl.constexpr_type) and N.value == 8)
        tl.static_assert(isinstance(strides[1].type, tl.constexpr_type) and strides[1].value == 1)
        tl.static_assert(not isinstance(strides[0].type, tl.constexpr_type))
        tl.static_assert(not isinstance(n.type, tl.constexpr_type))
        tl.store(X + tl.arange(0, N), tl.arange(0, N) * strides[0] + strides[1] + n)

    x = np.zeros(8, np.int32)
    k[(1,)](x, 5, (3, 1), N=8)
    np.testing.assert_array_equal(x, np.arange(8) * 3 + 6)
