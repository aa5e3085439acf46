"""Frontend: golden IR per kernel (after the frontend and after canonicalize), and errors at the user's source."""
import os
import pickle

import numpy as np
import pytest

import compiler
import compiler.language as tl
from compiler.ir import print_module
from compiler.passes.canonicalize import canonicalize

from . import kernels as K

GOLDEN = os.path.join(os.path.dirname(__file__), "golden")
UPDATE = os.environ.get("TILEFARM_UPDATE_GOLDEN") == "1"
KFILE = K.__file__

f32 = np.zeros(64, np.float32)  # stand-in pointers: only dtype and alignment count


def _check_golden(name, text):
    path = os.path.join(GOLDEN, name)
    if UPDATE or not os.path.exists(path):
        os.makedirs(GOLDEN, exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
        if not UPDATE:
            pytest.fail(f"golden file {name} was missing and has been written; check it and re-run")
    with open(path) as f:
        expected = f.read()
    assert text == expected, f"IR differs from {path} (TILEFARM_UPDATE_GOLDEN=1 rewrites it)"


CASES = {
    "add_kernel": (K.add_kernel, (f32, f32, f32, 1000), {"BLOCK": 1024}),
    "softmax_kernel": (K.softmax_kernel, (f32, f32, 4096, 1000), {"BLOCK": 1024}),
    "control_flow": (K.control_flow, (f32, f32, 100), {"BLOCK": 16}),
    "early_exit": (K.early_exit, (f32, 100), {"BLOCK": 32}),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_ir(name):
    """The IR after each pass of the pipeline, against a golden file per pass."""
    from compiler.options import Options
    from compiler.passes import PIPELINE

    kern, args, meta = CASES[name]
    m = kern.lower(*args, **meta)
    _check_golden(f"{name}.frontend.tile", print_module(m))
    opts = Options()
    for pass_name, fn in PIPELINE:
        m = fn(m, opts)
        _check_golden(f"{name}.{pass_name}.tile", print_module(m, with_layouts=True))


def test_specialization_in_signature():
    m = K.add_kernel.lower(f32, f32, f32[1:], 1001, BLOCK=128)
    text = print_module(m)
    assert "%X: ptr<f32> {divisibility=16}" in text
    assert "%Z: ptr<f32>," in text  # misaligned by 4 bytes: no divisibility
    assert "%N: i32)" in text
    # N == 1 is specialized away as a constant
    m1 = K.add_kernel.lower(f32, f32, f32, 1, BLOCK=128)
    assert "%N" not in print_module(m1)


def test_dtype_element_ty_and_early_return():
    m = K.early_exit.lower(np.zeros(8, np.float16), 100, BLOCK=32)
    text = print_module(m)
    assert "cast" in text and "f16" in text
    assert " if " in text or "= if" in text


def _err(kern, *args, **meta):
    with pytest.raises(compiler.CompilationError) as ei:
        kern.lower(*args, **meta)
    return ei.value


def _line_of(snippet):
    with open(KFILE) as f:
        for i, line in enumerate(f, 1):
            if snippet in line:
                return i, line.index(snippet.strip()) + 1
    raise AssertionError(snippet)


@pytest.mark.parametrize("kern,args,meta,snippet,col_of,words", [
    (K.bad_arange, (f32, 3), {"BLOCK": 16}, "offs = tl.arange(0, 100)", "tl.arange", "power of 2"),
    (K.bad_shapes, (f32, 3), {"BLOCK": 16}, "tl.store(X + (a + b), 1.0)", "a + b", "broadcast"),
    (K.bad_runtime_arange, (f32, 3), {}, "offs = tl.arange(0, N)", "tl.arange", "constexpr"),
    (K.bad_construct, (f32, 3), {}, 'with open("x"):', "with", "With"),
    (K.bad_float_bitwise, (f32, 3), {}, "tl.store(X, x & 1)", "x & 1", "integer"),
    (K.bad_in_callee, (f32,), {}, "return tl.exp(x)", "tl.exp", "floating"),
    (K.bad_loop_type, (f32, 3), {}, "for i in range(N):", "for", "changes"),
    (K.bad_undefined, (f32,), {}, "tl.store(X, undefined_name)", "undefined_name", "not defined"),
])
def test_error_locations(kern, args, meta, snippet, col_of, words):
    e = _err(kern, *args, **meta)
    line, _ = _line_of(snippet)
    with open(KFILE) as f:
        src_line = f.read().splitlines()[line - 1]
    col = src_line.index(col_of) + 1
    msg = str(e)
    assert msg.startswith(f"{KFILE}:{line}:"), msg
    assert e.loc.line == line
    if kern is not K.bad_loop_type:
        assert e.loc.col + 1 == col, msg
    assert words in msg
    assert src_line.strip() in msg and "^" in msg
    # no compiler internals in the message, and it survives pickling (it crosses Ray processes)
    assert "compiler/frontend" not in msg and "Traceback" not in msg
    e2 = pickle.loads(pickle.dumps(e))
    assert str(e2) == msg and e2.loc == e.loc


def test_wrong_argument_count():
    with pytest.raises(TypeError, match="missing argument 'N'"):
        K.add_kernel.lower(f32, f32, f32, BLOCK=16)
    with pytest.raises(TypeError, match="takes 5 arguments"):
        K.add_kernel.lower(f32, f32, f32, 1, 2, 3)



def test_calling_kernel_directly_is_an_error():
    with pytest.raises(compiler.CompilationError, match=r"add_kernel\[grid\]"):
        K.add_kernel(f32, f32, f32, 10, BLOCK=16)


def test_cache_key_covers_callees():
    key = K.control_flow.cache_key
    assert key == K.control_flow.cache_key
    assert key != K.add_kernel.cache_key
    from compiler.jit import _dependency_sources

    names = _dependency_sources(K.control_flow)
    assert any(n.endswith("._add") for n in names)


def test_launch_error_has_no_compiler_frames():
    """A user mistake found on launch is raised from the launch call itself: no frames inside compiler/."""
    import os
    import traceback

    import compiler as C

    x = np.zeros(64, np.float32)
    with pytest.raises(C.CompilationError) as ei:
        K.bad_float_bitwise[(1,)](x, 64)
    pkg = os.path.dirname(C.__file__)
    frames = [f.filename for f in traceback.extract_tb(ei.value.__traceback__)]
    assert not [f for f in frames if f.startswith(pkg)], frames
    with pytest.raises(C.CompilationError) as ei:
        K.bad_float_bitwise.warmup(x, 64, grid=(1,), target="sm_90")
    frames = [f.filename for f in traceback.extract_tb(ei.value.__traceback__)]
    assert len([f for f in frames if f.startswith(pkg)]) <= 1, frames  # at most the warmup() call itself


def test_error_names_its_function_and_position_as_triton_counts():
    """Below the caret: "at L:C: in fn", the line counted from the function's `def` (line 1) and the column from its
    indentation, the position Triton's messages give, so a Triton user finds it as before."""
    e = _err(K.bad_arange, f32, 3, BLOCK=16)
    def_line, _ = _line_of("def bad_arange(")
    line, col = _line_of("offs = tl.arange(0, 100)")
    src_line = open(KFILE).read().splitlines()[line - 1]
    rel_col = src_line.index("tl.arange")
    assert e.where == ("bad_arange", line - def_line + 1, rel_col)
    assert str(e).splitlines()[-1] == f"  at {line - def_line + 1}:{rel_col}: in bad_arange"
    # the builtin's own complaint is the cause (Triton's `__cause__`), without a traceback into the compiler
    assert e.__cause__ is not None and "power of 2" in str(e.__cause__)
    assert e.__cause__.__traceback__ is None and e.__cause__.__context__ is None


def test_error_in_a_called_function_lists_the_call_site():
    """An error inside a jit function another one calls: the first line is still where it happened; the call site
    follows ("called from here", with its own position), and the cause is the error as the callee raised it."""
    e = _err(K.bad_in_callee, f32)
    err_line, _ = _line_of("return tl.exp(x)")
    call_line, _ = _line_of("tl.store(X + tl.arange(0, 16), _helper_bad(")
    lines = str(e).splitlines()
    assert lines[0].startswith(f"{KFILE}:{err_line}:") and e.loc.line == err_line
    assert lines[3].strip().endswith("in _helper_bad")
    assert lines[4].startswith(f"{KFILE}:{call_line}:") and lines[4].endswith("called from here")
    assert lines[-1].strip().startswith("at 3:") and lines[-1].endswith("in bad_in_callee")
    assert [c[0].line for c in e.calls] == [call_line]
    inner = e.__cause__
    assert isinstance(inner, compiler.CompilationError) and inner.loc == e.loc and not inner.calls
    assert "called from here" not in str(inner) and inner.__traceback__ is None
    e2 = pickle.loads(pickle.dumps(e))
    assert str(e2) == str(e)


def test_launch_keeps_the_cause_and_static_assert_has_none():
    x = np.zeros(64, np.float32)
    with pytest.raises(compiler.CompilationError) as ei:
        K.bad_float_bitwise[(1,)](x, 64)
    assert ei.value.__cause__ is not None and ei.value.__suppress_context__

    @compiler.jit
    def asserts(X):
        tl.static_assert(X.dtype.element_ty == tl.int8, "needs int8")

    from compiler.errors import CompileTimeAssertionFailure

    with pytest.raises(CompileTimeAssertionFailure) as ei:
        asserts.lower(x)
    assert ei.value.__cause__ is None and "needs int8" in str(ei.value)


@compiler.jit
def _expand(X, AXES: tl.constexpr):
    y = tl.expand_dims(tl.arange(0, 16), AXES)
    tl.store(X + tl.reshape(tl.arange(0, 16), y.shape), y)


@pytest.mark.parametrize("axes,words", [(-3, "invalid axis -3"), (2, "invalid axis 2"), ((0, 3), "invalid axis 3"),
                                        ((0, 0), r"duplicate axes, normalized axes = \[0, 0\]"),
                                        ((0, -3), r"duplicate axes, normalized axes = \[0, 0\]")])
def test_expand_dims_names_the_axis_the_user_wrote(axes, words):
    with pytest.raises(compiler.CompilationError, match=words):
        _expand.lower(f32, AXES=axes)


@pytest.mark.parametrize("axes,shape", [(-2, [1, 16]), (-1, [16, 1]), ((0, 2), [1, 16, 1]), ((-1, 0), [1, 16, 1])])
def test_expand_dims_shapes(axes, shape):
    text = print_module(_expand.lower(f32, AXES=axes))
    assert f"<{'x'.join(map(str, shape))}xi32>" in text


def test_narrow_descriptor_block_is_refused_as_in_triton():
    @compiler.jit
    def k(X):
        d = tl.make_tensor_descriptor(X, [128, 128], [128, 1], [8, 2])
        d.store([0, 0], d.load([0, 0]))

    with pytest.raises(compiler.CompilationError, match="at least 16 bytes in the last dimension, but got 2 \\* 4 = 8"):
        k.lower(np.zeros((128, 128), np.float32))


def test_where_on_a_non_boolean_condition_warns_as_triton_does():
    @compiler.jit
    def k(X):
        c = tl.full((64,), 3, tl.uint32)
        tl.store(X + tl.arange(0, 64), tl.where(c, 1.0, 2.0))

    with pytest.warns(UserWarning, match="non-boolean condition"):
        k.lower(f32)


def test_max_num_imprecise_acc_is_checked_against_k():
    @compiler.jit
    def k(X, LIMIT: tl.constexpr):
        a = tl.full((64, 64), 1.0, tl.float8e5)
        tl.store(X + tl.arange(0, 64)[:, None] * 64 + tl.arange(0, 64)[None, :],
                 tl.dot(a, a, max_num_imprecise_acc=LIMIT))

    x = np.zeros(64 * 64, np.float32)
    with pytest.raises(compiler.CompilationError, match=r"max_num_imprecise_acc \(128\) must be <= K \(64\)"):
        k.lower(x, LIMIT=128)
    k.lower(x, LIMIT=64)


def test_constexpr_listed_in_do_not_specialize_is_an_error():
    @compiler.jit(do_not_specialize=["N"])
    def k(X, N: tl.constexpr):
        tl.store(X, N)

    with pytest.raises(compiler.CompilationError, match="N marked as constexpr and listed in do_not_specialize"):
        k.lower(f32, 5)
    with pytest.raises(compiler.CompilationError, match="N marked as constexpr and listed in do_not_specialize"):
        k[(1,)](np.zeros(1, np.float32), 5)


def test_dot_scaled_scale_shape_in_tritons_words():
    @compiler.jit
    def k(X):
        a = tl.full((32, 64), 0, tl.uint8)
        b = tl.full((64, 32), 0, tl.uint8)
        acc = tl.dot_scaled(a, tl.full((32, 4), 0, tl.uint8), "e5m2", b, tl.full((32, 2), 0, tl.uint8), "e5m2")
        tl.store(X + tl.arange(0, 32)[:, None] * 32 + tl.arange(0, 32)[None, :], acc)

    with pytest.raises(compiler.CompilationError) as ei:
        k.lower(np.zeros(32 * 32, np.float32))
    assert str(ei.value.__cause__) == "lhs_scale must be a tensor of shape [32, 2]. Got ['32', '4']"


@pytest.mark.parametrize("name", ["float8e4b8", "float8e5b16"])
def test_other_hardwares_fp8_names_exist_and_kernels_using_them_are_refused(name):
    d = getattr(tl, name)
    assert d.primitive_bitwidth == 8 and d == getattr(tl, name) and d != tl.float8e5 and d.is_fp8()

    @compiler.jit
    def computes(X, DT: tl.constexpr):
        tl.store(X + tl.arange(0, 16), tl.full((16,), 1.0, DT).to(tl.float32))

    with pytest.raises(compiler.CompilationError, match=f"tl.{name} is not supported in this architecture") as ei:
        computes.lower(np.zeros(16, np.float32), d)
    assert "in this architecture" in str(ei.value.__cause__)

    from compiler.triton_compat.runtime import reinterpret

    @compiler.jit
    def takes(X):
        tl.store(X, tl.load(X))

    with pytest.raises(compiler.CompilationError, match=f"argument X: tl.{name} is not supported"):
        takes[(1,)](reinterpret(np.zeros(16, np.uint8), d))


def test_power_of_two_shapes_in_tritons_words():
    """arange and shapes that are not powers of 2: the builtin's complaint (the cause) in Triton's exact words,
    the top-level error still at the call with its caret."""
    @compiler.jit
    def bad_range(X):
        tl.store(X + tl.arange(2, 7), 1.0)

    @compiler.jit
    def bad_full(X):
        tl.store(X + tl.arange(0, 64), tl.sum(tl.full((64, 33), 0, dtype=tl.int64), 1))

    with pytest.raises(compiler.CompilationError) as ei:
        bad_range.lower(f32)
    assert str(ei.value.__cause__) == "arange's range must be a power of 2"
    assert "tl.arange(2, 7)" in str(ei.value) and "^" in str(ei.value)
    with pytest.raises(compiler.CompilationError) as ei:
        bad_full.lower(f32)
    assert str(ei.value.__cause__) == "Shape element 1 must be a power of 2"


PLAIN_GLOBAL = 42
ANNOTATED_GLOBAL: tl.constexpr = 42
CONSTEXPR_GLOBAL = tl.constexpr(42)
POINTER_ALIAS = tl.pointer_type(tl.int32)


def _half(n):
    return n // 2


@compiler.jit
def _reads_plain_global(X):
    tl.store(X, PLAIN_GLOBAL)


@compiler.jit
def _reads_annotated_global(X):
    tl.store(X, ANNOTATED_GLOBAL)


@compiler.jit
def _reads_allowed_globals(X):
    a = POINTER_ALIAS  # noqa: F841 -- a type: allowed
    tl.store(X + tl.arange(0, _half(CONSTEXPR_GLOBAL + 22)), tl.full((32,), CONSTEXPR_GLOBAL, tl.float32))


def test_non_constexpr_globals_are_refused_as_in_triton(monkeypatch):
    """A kernel reads a module global or a closure variable only when it is a tl.constexpr (or None, a dtype, a
    module, a class, a function): a plain number, even annotated `: tl.constexpr`, is refused at its use, as Triton
    does; TRITON_ALLOW_NON_CONSTEXPR_GLOBALS=1 lets it through, as Triton's switch does."""
    monkeypatch.delenv("TRITON_ALLOW_NON_CONSTEXPR_GLOBALS", raising=False)
    for kern, name in ((_reads_plain_global, "PLAIN_GLOBAL"), (_reads_annotated_global, "ANNOTATED_GLOBAL")):
        e = _err(kern, f32)
        msg = str(e)
        assert f"Cannot access global variable {name}" in msg and "tl.constexpr" in msg
        line = next(i for i, ln in enumerate(open(__file__).read().splitlines(), 1) if f"tl.store(X, {name})" in ln)
        assert msg.startswith(f"{__file__}:{line}:") and "^" in msg
    _reads_allowed_globals.lower(f32)

    def make(v):
        @compiler.jit
        def k(X):
            tl.store(X, v)
        return k

    with pytest.raises(compiler.CompilationError, match="Cannot access closure variable v"):
        make(3).lower(f32)
    make(tl.constexpr(3)).lower(f32)

    monkeypatch.setenv("TRITON_ALLOW_NON_CONSTEXPR_GLOBALS", "1")
    _reads_plain_global.lower(f32)
    make(3).lower(f32)


def test_not_of_a_tuple_is_refused_at_the_not():
    """`not` of a tuple: Triton cannot evaluate it while compiling, and refuses it at the `not` (a construct's
    error: no cause); here too, rather than compiling Python's answer."""
    @compiler.jit
    def k(X):
        t = (0, 0)
        tl.store(X, not t)

    e = _err(k, f32)
    lines = str(e).splitlines()
    assert "`not` of a tuple is not supported" in lines[0] and lines[1].strip() == "tl.store(X, not t)"
    assert lines[2].index("^") - lines[1].index("tl.store") == len("tl.store(X, ")
    assert lines[3].strip() == "at 3:16: in k" and e.__cause__ is None
