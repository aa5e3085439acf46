"""Triton's tensor methods (#22 item 1): `x.exp()`, `x.sum(0)`, `x.cast(dt)`... are the tl functions of the same
name, one definition for both forms."""
import numpy as np
import pytest

import compiler
import compiler.language as tl

from .kernels import TARGETS, poison, run


@compiler.jit
def _add(a, b):
    return a + b


@compiler.jit
def methods_kernel(X, I, Out, Outi, Cnt, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs)                       # in (0.5, 2)
    i = tl.load(I + offs)                       # int32
    y = x.exp() + x.exp2() + x.log() + x.log2() + x.sqrt() + x.sqrt_rn() + x.rsqrt()
    y += x.sin() + x.cos() + x.erf() + x.floor() + x.ceil() + (-x).abs() + x.sigmoid()
    y += x.cast(tl.float16).to(tl.float32) + x.cumsum(0) + x.cumprod(0) * 0.0
    y += x.softmax() + x.reshape(BLOCK // 2, 2).sum(1).reshape(BLOCK // 2).broadcast_to(2, BLOCK // 2).view(BLOCK)
    y += x.expand_dims(0).trans().permute(1, 0).ravel() + x.reduce(0, _add) + x.associative_scan(0, _add)
    y += x.max(0) + x.min(0) + x.argmax(0) + x.argmin(0)
    (Out + offs).store(y)
    (Outi + offs).store(i.cdiv(3) + i.xor_sum(0) + i.reduce_or(0) + i.sum(0, keep_dims=True).item())
    (Cnt + offs % 2).atomic_add(1)
    Cnt.atomic_max(0)
    Cnt.atomic_min(100)
    (Cnt + 2).atomic_or(4)
    (Cnt + 2).atomic_and(6)
    (Cnt + 2).atomic_xor(1)
    (Cnt + 3).atomic_xchg(9)
    (Cnt + 4).atomic_cas(0, 5)


def _ref(x, i):
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max())
    from math import erf
    y = (np.exp(x64) + np.exp2(x64) + np.log(x64) + np.log2(x64) + 2 * np.sqrt(x64) + 1 / np.sqrt(x64)
         + np.sin(x64) + np.cos(x64) + np.vectorize(erf)(x64) + np.floor(x64) + np.ceil(x64) + x64
         + 1 / (1 + np.exp(-x64)) + x.astype(np.float16).astype(np.float64) + np.cumsum(x64)
         + e / e.sum() + np.tile(x64.reshape(-1, 2).sum(1), 2) + x64 + x64.sum() + np.cumsum(x64)
         + x64.max() + x64.min() + np.argmax(x64) + np.argmin(x64))
    xs = np.bitwise_xor.reduce(i)
    ors = np.bitwise_or.reduce(i)
    yi = -(-i // 3) + xs + ors + i.sum()
    return y, yi.astype(np.int32)


@pytest.mark.parametrize("target", TARGETS)
def test_tensor_methods(target):
    rng = np.random.default_rng(7)
    BLOCK = 64
    x = rng.uniform(0.5, 2.0, BLOCK).astype(np.float32)
    i = rng.integers(0, 1000, BLOCK).astype(np.int32)
    out = poison(BLOCK, np.float32)
    outi = poison(BLOCK, np.int32)
    cnt = np.zeros(8, np.int32)
    run(target, methods_kernel, (1,), x, i, out, outi, cnt, BLOCK=BLOCK)
    y, yi = _ref(x, i)
    np.testing.assert_allclose(out, y, rtol=2e-5)
    np.testing.assert_array_equal(outi, yi)
    assert list(cnt[:5]) == [BLOCK // 2, BLOCK // 2, (4 & 6) ^ 1, 9, 5]


def test_methods_are_the_tl_functions(monkeypatch):
    """A method is tl.<name> looked up when called: replacing the function changes the method."""
    calls = []

    @tl.builtin
    def fake_exp(x):
        calls.append(x)
        return x

    monkeypatch.setattr(tl, "exp", fake_exp)

    @compiler.jit
    def k(X):
        tl.store(X, tl.load(X).exp())

    k[(1,)](np.ones(1, np.float32))
    assert len(calls) == 1


def test_method_of_a_missing_op_says_so(monkeypatch):
    monkeypatch.delattr(tl, "flip", raising=False)

    @compiler.jit
    def k(X, BLOCK: tl.constexpr):
        tl.store(X + tl.arange(0, BLOCK), tl.load(X + tl.arange(0, BLOCK)).flip(0))

    with pytest.raises(compiler.CompilationError, match=r"tl.flip is not supported .*\.flip\(\)"):
        k[(1,)](np.ones(8, np.float32), BLOCK=8)


def test_every_triton_tensor_method_exists():
    triton_tl = pytest.importorskip("triton.language")
    names = sorted(n for n, v in vars(triton_tl.tensor).items() if not n.startswith("_") and callable(v))
    assert len(names) > 40
    missing = [n for n in names if not callable(getattr(tl.tensor, n, None))]
    assert not missing, f"Triton tensor methods missing here: {missing}"


@compiler.jit
def element_ty_kernel(A, C, N: tl.constexpr):
    x = tl.load(A + tl.arange(0, N))
    tl.static_assert(x.type.element_ty == tl.float16)          # a block's element type
    tl.static_assert(C.type.element_ty == C.dtype.element_ty)  # a scalar pointer's: what it points to
    acc = tl.zeros((N,), dtype=C.type.element_ty)
    tl.store(C + tl.arange(0, N), acc + x.to(C.type.element_ty))


@pytest.mark.parametrize("target", TARGETS)
def test_type_element_ty(target):
    """`ptr.type.element_ty` of a scalar pointer argument (Triton's matmul epilogues cast with it) and of a block."""
    a = np.random.default_rng(0).standard_normal(16).astype(np.float16)
    c = poison(16, "float32")
    run(target, element_ty_kernel, (1,), a, c, N=16)
    np.testing.assert_array_equal(c, a.astype(np.float32))


def test_scalar_type_has_no_element_ty():
    from compiler.ir.types import TensorType, float32

    with pytest.raises(AttributeError, match="no element_ty"):
        TensorType(float32, ()).element_ty
