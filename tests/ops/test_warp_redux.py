"""Integer reductions across a whole warp as one `redux.sync` (codegen/reduce.py `_redux`):
which reductions take it (32-bit integers, a single add/min/max/and/or/xor, all 32 lanes along the axis; lanes that
only replicate data only for the idempotent ones), and, on a GPU, that the results are the shuffle path's."""
import numpy as np
import pytest

import compiler
import compiler.language as tl

from .test_ops import TARGETS, poison, run


@compiler.jit
def int_reduce(X, Y, N: tl.constexpr, WHAT: tl.constexpr):
    x = tl.load(X + tl.arange(0, N))
    if WHAT == "sum":
        r = tl.sum(x, 0)
    elif WHAT == "min":
        r = tl.min(x, 0)
    elif WHAT == "max":
        r = tl.max(x, 0)
    elif WHAT == "or":
        r = tl.reduce_or(x, 0)
    else:
        r = tl.xor_sum(x, 0)
    tl.store(Y, r)


def _ptx(x, n, what, nw):
    return int_reduce.warmup(x, x[:1], N=n, WHAT=what, grid=(1,), target="sm_90a", num_warps=nw).asm["ptx"]


@pytest.mark.parametrize("what,form", [("sum", "add.s32"), ("min", "min.s32"), ("max", "max.s32"),
                                       ("or", "or.b32"), ("xor", "xor.b32")])
def test_whole_warp_integer_reductions_take_redux(what, form):
    x = np.zeros(256, np.int32)
    assert f"redux.sync.{form}" in _ptx(x, 256, what, 4)
    assert "redux.sync.min.u32" in _ptx(np.zeros(256, np.uint32), 256, "min", 4)
    assert "redux.sync" not in int_reduce.warmup(x, x[:1], N=256, WHAT=what, grid=(1,), target="sm_75",
                                                 num_warps=4).asm["ptx"]


@pytest.mark.parametrize("what", ["sum", "xor", "min"])
def test_replicated_lanes_keep_shuffles_where_they_would_count_twice(what):
    """16 elements over 32 lanes: lanes 16-31 repeat lanes 0-15. A sum or xor over the whole warp would count each
    element twice; min takes redux.sync anyway (idempotent)."""
    ptx = _ptx(np.zeros(16, np.int32), 16, what, 1)
    assert ("redux.sync" in ptx) == (what == "min")


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["int32", "uint32"])
@pytest.mark.parametrize("n", [16, 32, 256])
@pytest.mark.parametrize("what", ["sum", "min", "max", "or", "xor"])
def test_integer_reductions(target, dtype, n, what):
    rng = np.random.default_rng(n)
    lo = -1000 if dtype == "int32" else 0
    x = rng.integers(lo, 1000, n).astype(dtype)
    y = poison(1, dtype)
    run(target, int_reduce, (1,), [x, y], [], N=n, WHAT=what, num_warps=max(1, n // 64))
    ref = {"sum": lambda a: a.sum(dtype=dtype), "min": np.min, "max": np.max,
           "or": np.bitwise_or.reduce, "xor": np.bitwise_xor.reduce}[what](x)
    assert y[0] == ref
