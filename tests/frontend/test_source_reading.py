"""Reading a kernel's source without inspect's tokenizer (frontend.codegen._quick_source), and its fallback."""
import ast
import inspect

import compiler
import compiler.language as tl
from compiler.frontend.codegen import _quick_source, get_source


@compiler.jit
def _plain(X, N, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    # a comment at column 0 inside the body does not end it
    tl.store(X + offs, offs, mask=offs < N)


@compiler.jit
def _long_header(
    X,
    N,
    BLOCK: tl.constexpr,
):
    offs = tl.arange(0, BLOCK)
    tl.store(X + offs, offs, mask=offs < N)


@compiler.jit
def _string_at_column_zero(X, N, BLOCK: tl.constexpr):
    """a docstring whose second line starts at column 0
"""
    offs = tl.arange(0, BLOCK)
    tl.store(X + offs, offs, mask=offs < N)


def _same_as_inspect(jf):
    fn = jf.fn
    lines, first = inspect.getsourcelines(fn)
    got = _quick_source(fn, inspect.getsourcefile(fn))
    assert got is not None
    qlines, qfirst, tree = got
    assert qfirst == first and "".join(qlines).rstrip() == "".join(lines).rstrip()
    assert isinstance(tree.body[0], ast.FunctionDef) and tree.body[0].name == fn.__name__


def test_plain_and_multiline_header_read_directly():
    _same_as_inspect(_plain)
    _same_as_inspect(_long_header)


def test_nested_decorated_kernel_read_directly():
    @compiler.jit
    def inner(X, N, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(X + offs, offs, mask=offs < N)

    _same_as_inspect(inner)


def test_string_at_column_zero_falls_back_to_inspect():
    fn = _string_at_column_zero.fn
    assert _quick_source(fn, inspect.getsourcefile(fn)) is None
    s = get_source(fn)  # the tokenizer's answer: the whole function
    assert s.fdef.name == fn.__name__ and len(s.fdef.body) == 3
    assert s.line0 + 1 == fn.__code__.co_firstlineno
