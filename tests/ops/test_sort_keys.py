"""tl.sort, tl.topk and bitonic merges of floats run on integer keys in the floats' total order
(-NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN): one integer compare decides each compare-and-swap (two float
compares did before, so that a NaN could not make a pair's two elements decide differently: the A/B `sort_keys`, 0.839
of that time over the corpus's 4 sorting kernels, H100 2026-12-07). The result is the bit-exact total-order sort
(NaNs at the ends, -0 before +0) in the interpreter, through ptxas and on the GPU, for float32, float16, bfloat16
and integer tiles; every element survives; one select a step."""
import numpy as np
import pytest

import compiler
import compiler.language as tl

from . import shape_ops_kernels as SK
from .test_ops import TARGETS, assert_exact, poison, run

try:
    import ml_dtypes
except ImportError:  # pragma: no cover
    ml_dtypes = None


def _total_order_key(a):
    """The keys the sort orders by, computed in NumPy: signed integers of the float's width, negative values'
    magnitude bits flipped."""
    w = a.dtype.itemsize * 8
    s = a.view(np.dtype(f"int{w}")).astype(np.int64)
    return np.where(s < 0, s ^ ((1 << (w - 1)) - 1), s)


def _special(dtype):
    rng = np.random.default_rng(41)
    a = rng.standard_normal((4, 64)).astype(np.float32)
    a[0, :8] = [np.nan, -np.nan, -0.0, 0.0, np.inf, -np.inf, -0.0, 2.0]
    a[1, :] = a[1, 0]  # all ties
    a[2, ::3] = 0.0
    a[2, 1::3] = -0.0
    a[3, :4] = [-np.nan, 1.0, -0.0, np.nan]
    return a.astype(dtype)


DTYPES = ["float32", "float16"] + (["bfloat16"] if ml_dtypes is not None else [])


def _np_dtype(name):
    return np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(name)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("desc", [False, True])
def test_sort_total_order(target, dtype, desc):
    a = _special(_np_dtype(dtype))
    y = poison(a.size, dtype)
    run(target, SK.sort_kernel, (1,), [a, y], [], WHAT="sort", DESC=desc, M=4, N=64, K=64)
    order = np.argsort(_total_order_key(a), axis=1, kind="stable")
    ref = np.take_along_axis(a, order, axis=1)
    if desc:
        ref = ref[:, ::-1]
    w = a.dtype.itemsize * 8
    assert_exact(y.reshape(4, 64).view(f"uint{w}"), ref.view(f"uint{w}"))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_topk_total_order(target, dtype):
    a = _special(np.dtype(dtype))
    y = poison(4 * 8, dtype)
    run(target, SK.sort_kernel, (1,), [a, y], [], WHAT="topk", DESC=True, M=4, N=64, K=8)
    ref = np.take_along_axis(a, np.argsort(_total_order_key(a), axis=1, kind="stable"), axis=1)[:, ::-1][:, :8]
    w = a.dtype.itemsize * 8
    assert_exact(y.reshape(4, 8).view(f"uint{w}"), ref.view(f"uint{w}"))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["int32", "uint8", "int16"])
def test_sort_integers(target, dtype):
    info = np.iinfo(dtype)
    a = np.random.default_rng(42).integers(info.min, info.max, (4, 64), endpoint=True).astype(dtype)
    a[1, :] = a[1, 0]
    for desc in (False, True):
        y = poison(a.size, dtype)
        run(target, SK.sort_kernel, (1,), [a, y], [], WHAT="sort", DESC=desc, M=4, N=64, K=64)
        ref = np.sort(a, axis=1)
        assert_exact(y.reshape(4, 64), ref[:, ::-1] if desc else ref)


@pytest.mark.parametrize("target", TARGETS)
def test_sort_bools(target):
    """Bools sort as uint8 keys (False before True), the top-k of a bool row its True first."""
    a = np.random.default_rng(43).random((4, 64)) < 0.3
    a[1, :] = True
    for what, desc, k in (("sort", False, 64), ("sort", True, 64), ("topk", True, 8)):
        y = poison(4 * k, "int1")
        run(target, SK.sort_kernel, (1,), [a, y], [], WHAT=what, DESC=desc, M=4, N=64, K=k)
        ref = np.sort(a, axis=1)
        ref = ref[:, ::-1] if desc else ref
        assert_exact(y.reshape(4, k), ref[:, :k])


def test_one_select_a_step():
    """A 64-element sort has 1 + 2 + ... + 6 = 21 compare-and-swap steps: one select each, and no float compare (the
    keys are integers)."""
    a = np.zeros((4, 64), np.float32)
    mod = SK.sort_kernel.lower(a, a, WHAT="sort", DESC=False, M=4, N=64, K=64)
    ops = list(mod.function.body.walk())
    assert sum(op.kind == "select" for op in ops) == 21
    assert not [op for op in ops if op.kind == "cmp" and op.operands[0].type.element.is_floating()]


def test_interpreter_ir_is_kept_per_switch_set(monkeypatch):
    """The interpreter's IR of a kernel is kept per specialization and per set of A/B switches (TILEFARM_AB), which
    the frontend may read: a process that ran under one set lowers the kernel again under another (a stale IR was
    reused before)."""
    a = _special(np.dtype("float32"))
    SK.sort_kernel._ir_cache.clear()
    for ab in ("", "div_quot"):
        monkeypatch.setenv("TILEFARM_AB", ab)
        y = poison(a.size, "float32")
        run("interp", SK.sort_kernel, (1,), [a, y], [], WHAT="sort", DESC=False, M=4, N=64, K=64)
    assert sorted(sw for _, sw in SK.sort_kernel._ir_cache) == [frozenset(), frozenset({"div_quot"})]
    ref = np.take_along_axis(a, np.argsort(_total_order_key(a), axis=1, kind="stable"), axis=1)
    assert_exact(y.reshape(4, 64).view("uint32"), ref.view("uint32"))
