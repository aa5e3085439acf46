"""tl.core._aggregate (Triton's aggregate classes), constexpr functions and compile-time values as Triton has them.

Kernels run in the interpreter, through ptxas for sm_90a, and on the GPU (marked gpu)."""
import numpy as np
import pytest

import compiler
import compiler.language as tl
from compiler.language.core import _aggregate

from .kernels import TARGETS, poison, run


@_aggregate
class Pair:
    first: tl.tensor
    second: tl.tensor
    scale: tl.constexpr

    def __init__(self, first, second, scale=1):
        self.first = first
        self.second = second
        self.scale = scale

    @compiler.jit
    def total(self):
        return (self.first + self.second) * self.scale

    def swapped(self):  # plain Python, run while compiling
        return Pair(self.second, self.first, self.scale)

    @staticmethod
    def of(x, _semantic=None):  # Triton's builtin-style helper: builtins take _semantic too
        return Pair(x, tl.full(x.shape, 1.0, tl.float32, _semantic=_semantic))

    @compiler.jit
    def __getitem__(self, i):
        return self.first if i == 0 else self.second


@compiler.jit
def pair_kernel(X, Y, n, S: tl.constexpr):
    offs = tl.arange(0, 16)
    p = Pair(tl.load(X + offs), tl.load(Y + offs), S)
    for i in range(n):  # carried by the loop, swapped under a runtime if
        if i % 2 == 0:
            p = p.swapped()
        p = Pair(p.first + 1.0, p.second, p.scale)
    q = Pair.of(p[1])
    tl.store(X + offs, p.total())
    tl.store(Y + offs, q.total())


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("n", [0, 5])
def test_aggregate_methods_loops_and_ifs(target, n):
    rng = np.random.default_rng(3)
    x = rng.standard_normal(16).astype(np.float32)
    y = rng.standard_normal(16).astype(np.float32)
    f, s = x.astype(np.float64), y.astype(np.float64)
    for i in range(n):
        if i % 2 == 0:
            f, s = s, f
        f = f + 1
    run(target, pair_kernel, (1,), x, y, n, S=3)
    np.testing.assert_allclose(x, (f + s) * 3, rtol=1e-6)
    np.testing.assert_allclose(y, s + 1, rtol=1e-6)


def test_aggregate_fields_are_checked():
    with pytest.raises(AttributeError, match="did not initialize attribute 'second'"):
        @_aggregate
        class Half:
            first: tl.constexpr
            second: tl.constexpr

            def __init__(self):
                self.first = 1

        Half()
    with pytest.raises(AttributeError, match="has no attribute 'third'"):
        @_aggregate
        class Extra:
            first: tl.constexpr

            def __init__(self):
                self.first = 1
                self.third = 2

        Extra()


def test_aggregate_is_immutable_in_a_kernel_and_keeps_its_constexprs():
    @compiler.jit
    def assigns(X):
        p = Pair(tl.arange(0, 4), tl.arange(0, 4))
        p.first = tl.arange(4, 8)
        tl.store(X + tl.arange(0, 4), p.first)

    with pytest.raises(compiler.CompilationError, match="only names and tuples of names can be assigned"):
        assigns.lower(np.zeros(4, np.int32))

    @compiler.jit
    def changes_constexpr(X, n):
        p = Pair(tl.arange(0, 4), tl.arange(0, 4), 2)
        if n > 0:
            p = Pair(p.first, p.second, 3)
        tl.store(X + tl.arange(0, 4), p.total())

    with pytest.raises(compiler.CompilationError, match="gets different kinds of value"):
        changes_constexpr.lower(np.zeros(4, np.int32), 5)


def test_aggregate_methods_are_in_the_cache_key():
    from compiler.jit import _dependency_sources

    names = _dependency_sources(pair_kernel)
    for m in ("Pair.__init__", "Pair.total", "Pair.swapped", "Pair.of", "Pair.__getitem__"):
        assert any(n.endswith(m) for n in names), (m, sorted(names))


@compiler.constexpr_function
def _block_for(n):
    return max(16, compiler.next_power_of_2(n))


@pytest.mark.parametrize("target", TARGETS)
def test_constexpr_function(target):
    @compiler.jit
    def k(X, N: tl.constexpr):
        B: tl.constexpr = _block_for(N)
        offs = tl.arange(0, B)
        tl.store(X + offs, offs * 2, mask=offs < N)

    x = poison(20, np.int32)
    run(target, k, (1,), x, N=20)
    np.testing.assert_array_equal(x, np.arange(20) * 2)
    assert _block_for(20) == 32  # from Python, the function itself


def test_constexpr_arithmetic_and_ambiguous_min_max():
    a, b = tl.constexpr(6), tl.constexpr(4)
    assert isinstance(a * b, tl.constexpr) and (a * b).value == 24 and (a - 1).value == 5 and (2 ** b).value == 16
    assert (a > b) and not (a < b) and (-a).value == -6

    @compiler.jit
    def k(X, A: tl.constexpr, B: tl.constexpr):
        tl.store(X, min(A, B))

    x = np.zeros(1, np.float32)
    k[(1,)](x, 2.0, 3.0)
    assert x[0] == 2.0
    for bad in (float("nan"), -0.0):
        with pytest.raises(compiler.CompilationError, match="ambiguous"):
            k.lower(x, 1.0, bad)


def test_rewrite_names_the_def_line():
    import inspect

    lines, first = inspect.getsourcelines(pair_kernel.fn)
    expected = first + next(i for i, line in enumerate(lines) if line.lstrip().startswith("def "))
    assert pair_kernel.rewrite().def_file_lineno == expected == pair_kernel.rewriter.def_file_lineno
