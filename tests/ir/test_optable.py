"""The op table (compiler/ir/optable.py) is the one list of op kinds: what the interpreter runs, what codegen emits
and what the language offers are read off it, and nothing exists outside it."""
from __future__ import annotations

import numpy as np
import pytest

import compiler.language as tl
from compiler.codegen import common, dot, llvm, memory, reduce  # noqa: F401  (register every emitter)
from compiler.frontend import semantic
from compiler.interpreter import evaluator
from compiler.ir import optable
from compiler.ir import types as T
from compiler.ir.ops import BINARY_SAME, TERMINATORS, UNARY_SAME


def test_every_op_the_interpreter_or_codegen_knows_is_in_the_table():
    assert not set(evaluator.OPS) - set(optable.OPS), "interpreted ops missing from the op table"
    assert not set(common.EMIT) - set(optable.OPS), "emitted ops missing from the op table"


def test_every_op_of_the_table_is_interpreted_and_emitted():
    # terminators are the interpreter's block plans' own ends, not ops it evaluates
    frontend_ops = {k for k, d in optable.OPS.items() if not d.has("target") and not d.has("terminator")}
    assert not frontend_ops - set(evaluator.OPS), "ops the interpreter cannot run"
    assert not set(optable.OPS) - set(common.EMIT), "ops codegen cannot emit"


def test_traits_are_consistent():
    for k, d in optable.OPS.items():
        assert not (d.has("pure") and d.has("effects")), k
        assert not d.has("terminator") or d.has("effects"), k
        assert not d.has("commutative") or (d.operands == 2 and d.result == "same"), k
        assert d.result in ("same", "i1", "none", "op"), k
        assert d.layout in ("elementwise", "source", "anchor", "own", None), k
        assert (d.layout == "elementwise") == d.has("elementwise"), k
    assert set(TERMINATORS) == {"yield", "condition", "return"}
    assert "add" in BINARY_SAME and "sub" in BINARY_SAME and "cmp" not in BINARY_SAME
    assert {"neg", "not"} | set(optable.MATH) == set(UNARY_SAME)


@pytest.mark.parametrize("name", sorted(optable.MATH))
def test_a_math_op_is_everywhere_from_its_entry(name):
    d = optable.MATH[name]
    f = getattr(tl, name)
    assert f.__doc__ == d.doc and getattr(tl.math, name) is f
    assert (name in semantic.TENSOR_METHODS) == d.method
    assert d.ints in ("error", "identity", "abs")
    for dt in ("float32", "float64"):
        assert (name, dt) in llvm.MATH, f"{name} has no {dt} lowering"
    assert llvm.UNARY[name] is llvm._math


@pytest.mark.parametrize("name", sorted(optable.MATH))
def test_a_math_ops_meaning_is_rounded_once_from_float64(name):
    """The interpreter's float32 result is the float64 reference rounded once (or exact ops in float32)."""
    from compiler.interpreter import numerics as N

    d = optable.MATH[name]
    rng = np.random.default_rng(7)
    x = rng.uniform(0.1, 3.0, 257).astype(np.float32)
    got = N.unary_fn(name, T.float32)(x)
    assert got.dtype == np.float32
    want = (d.ref_ftz or d.ref)(np, x.astype(np.float64)).astype(np.float32)
    np.testing.assert_array_equal(got, want)


def test_an_unknown_lowering_is_named():
    with pytest.raises(ValueError, match="unknown lowering 'nv_erff'"):
        llvm._lowering("nv_erff")
