"""The tile IR's text form read back: `parse_function(text)` / `parse_module(text)` invert `print_function`.

So a pass can be tested on a small IR text (in -> pass -> printed text out) without a kernel. The grammar is the
printer's (compiler/ir/printer.py), one op per line:

    func @name(%X: ptr<f32> {divisibility=16}, %N: i32) {
      %0 = program_id {axis=0} : i32
      %1, %2 = for %lb, %ub, %step, %a, %b : i32, f32 {
      ^bb0(%i: i32, %x: i32, %y: f32):
        ...
        yield %3, %4
      }
      return
    }

Types: a dtype's short name (`f32`, `bf16`, `i1`, `u8`), `ptr<T>`, or a block `<128x64xf16>`. Attribute values:
integers, floats, `true`/`false`, `None`, quoted strings, `[...]` (tuples), dtypes and pointer types. Attributes
the printer leaves out (names starting with `_`: what passes attach for later ones) cannot be given. A `//`
starts a comment. Mistakes raise IRParseError naming the line and column.
"""
from __future__ import annotations

import re

from . import types as T
from .core import Block, Function, Module, Op, Value


class IRParseError(ValueError):
    """The IR text is not well formed: the message names the line (1-based) and column."""


_TOKEN = re.compile(r"""
    \s*(?:
      (?P<str>"(?:[^"\\]|\\.)*")
    | (?P<num>[-+]?(?:\d+\.\d*(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+|\.\d+(?:[eE][-+]?\d+)?|\d+|inf\b|nan\b))
    | (?P<val>%[A-Za-z_0-9.]+)
    | (?P<sym>@[A-Za-z_0-9.$]+)
    | (?P<bb>\^bb\d+)
    | (?P<id>[A-Za-z_][A-Za-z_0-9.]*)
    | (?P<punct>[{}()\[\]<>:,=])
    )""", re.X)


class _Line:
    """A tokenizer over one line."""

    def __init__(self, text, lineno):
        self.text, self.lineno, self.pos = text, lineno, 0

    def error(self, msg, at=None):
        col = (self.pos if at is None else at) + 1
        raise IRParseError(f"line {self.lineno}, column {col}: {msg}\n  {self.text}\n  {' ' * (col - 1)}^")

    def peek(self):
        m = _TOKEN.match(self.text, self.pos)
        if not m or m.end() == self.pos:
            return None, None, self.pos
        kind = m.lastgroup
        return kind, m.group(kind), m.start(kind)

    def next(self):
        kind, tok, at = self.peek()
        if kind is None:
            if self.text[self.pos:].strip():
                self.error(f"unexpected text {self.text[self.pos:].strip()[:20]!r}", len(self.text) -
                           len(self.text[self.pos:].lstrip()))
            self.error("unexpected end of line", len(self.text.rstrip()))
        m = _TOKEN.match(self.text, self.pos)
        self.pos = m.end()
        return kind, tok, at

    def accept(self, tok):
        kind, t, _ = self.peek()
        if t == tok and kind in ("punct", "id"):
            self.next()
            return True
        return False

    def expect(self, tok):
        kind, t, at = self.peek()
        if t != tok:
            self.error(f"expected {tok!r}, found {t!r}" if t is not None else f"expected {tok!r}", at)
        self.next()

    def at_end(self):
        return not self.text[self.pos:].strip()


def _dtype_or_none(name):
    try:
        return T.from_name(name)
    except ValueError:
        return None


def _element(ln):
    kind, tok, at = ln.next()
    if kind != "id":
        ln.error(f"expected a type, found {tok!r}", at)
    if tok == "ptr":
        ln.expect("<")
        inner = _element(ln)
        ln.expect(">")
        return T.pointer_type(inner)
    d = _dtype_or_none(tok)
    if d is None:
        ln.error(f"unknown element type {tok!r}", at)
    return d


_BLOCK_TYPE = re.compile(r"\s*<((?:\d+x)+)")


def _type(ln):
    m = _BLOCK_TYPE.match(ln.text, ln.pos)
    if m:  # <128x64xf16>: the dims with their 'x', then the element
        shape = tuple(int(d) for d in m.group(1).split("x")[:-1])
        ln.pos = m.end()
        el = _element(ln)
        ln.expect(">")
        return T.TensorType(el, shape)
    return T.TensorType(_element(ln))


def _attr_value(ln):
    kind, tok, at = ln.peek()
    if tok == "[":
        ln.next()
        items = []
        if not ln.accept("]"):
            while True:
                items.append(_attr_value(ln))
                if ln.accept("]"):
                    break
                ln.expect(",")
        return tuple(items)
    if kind == "str":
        ln.next()
        return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), tok[1:-1])
    if kind == "num":
        ln.next()
        return float(tok) if any(c in tok for c in ".eEna") else int(tok)
    if kind == "id":
        if tok in ("true", "false"):
            ln.next()
            return tok == "true"
        if tok == "None":
            ln.next()
            return None
        if tok == "ptr" or _dtype_or_none(tok) is not None:
            return _element(ln)
        ln.error(f"unknown attribute value {tok!r}", at)
    if tok == "-":
        ln.error("bad number", at)
    ln.error(f"expected an attribute value, found {tok!r}", at)


def _attrs(ln):
    """{k=v, ...} (the opening brace is next)."""
    ln.expect("{")
    out = {}
    if ln.accept("}"):
        return out
    while True:
        kind, key, at = ln.next()
        if kind != "id":
            ln.error(f"expected an attribute name, found {key!r}", at)
        if key.startswith("_"):
            ln.error(f"attribute {key!r}: names starting with '_' belong to passes and have no text form", at)
        ln.expect("=")
        out[key] = _attr_value(ln)
        if ln.accept("}"):
            return out
        ln.expect(",")


class _Parser:
    def __init__(self, text):
        self.lines = [(i + 1, ln.split("//", 1)[0].rstrip()) for i, ln in enumerate(text.splitlines())]
        self.lines = [(i, ln) for i, ln in self.lines if ln.strip()]
        self.scopes: list[dict] = []  # name -> Value, innermost last

    def lookup(self, ln, name, at):
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        ln.error(f"value {name} is not defined here", at)

    def define(self, ln, name, value, at):
        if any(name in s for s in self.scopes):
            ln.error(f"value {name} is defined twice", at)
        self.scopes[-1][name] = value

    def function(self):
        if not self.lines:
            raise IRParseError("empty IR text: expected 'func @name(...) {'")
        lineno, text = self.lines[0]
        ln = _Line(text, lineno)
        ln.expect("func")
        kind, sym, at = ln.next()
        if kind != "sym":
            ln.error(f"expected the function's @name, found {sym!r}", at)
        ln.expect("(")
        names, types, arg_attrs = [], [], {}
        if not ln.accept(")"):
            while True:
                kind, name, at = ln.next()
                if kind != "val":
                    ln.error(f"expected an argument %name, found {name!r}", at)
                ln.expect(":")
                names.append(name[1:])
                types.append(_type(ln))
                while ln.peek()[1] == "{":
                    arg_attrs.setdefault(len(names) - 1, {}).update(_attrs(ln))
                if ln.accept(")"):
                    break
                ln.expect(",")
        ln.expect("{")
        if not ln.at_end():
            ln.error("unexpected text after '{'")
        fn = Function(sym[1:], names, types)
        fn.arg_attrs = arg_attrs
        self.scopes.append({f"%{n}": v for n, v in zip(names, fn.args)})
        end = self.block_ops(fn.body, 1)
        if end != len(self.lines) - 1:
            lineno, text = self.lines[end + 1]
            _Line(text, lineno).error("text after the function's closing '}'")
        return fn

    def block_ops(self, block, i):
        """Parse ops into `block` from line i up to the '}' or '^bb' that ends it; returns that line's index."""
        while i < len(self.lines):
            lineno, text = self.lines[i]
            ln = _Line(text, lineno)
            kind, tok, _ = ln.peek()
            if tok == "}" or kind == "bb":
                return i
            i = self.op(block, ln, i)
        lineno, text = self.lines[-1]
        raise IRParseError(f"line {lineno}: missing '}}' at the end of the IR text")

    def op(self, block, ln, i):
        results = []
        if ln.peek()[0] == "val":
            while True:
                kind, name, at = ln.next()
                if kind != "val":
                    ln.error(f"expected a result %name, found {name!r}", at)
                results.append((name, at))
                if ln.accept("="):
                    break
                ln.expect(",")
        kind, op_kind, at = ln.next()
        if kind != "id":
            ln.error(f"expected an op kind, found {op_kind!r}", at)
        operands = []
        if ln.peek()[0] == "val":
            while True:
                kind, name, vat = ln.next()
                if kind != "val":
                    ln.error(f"expected an operand %name, found {name!r}", vat)
                operands.append(self.lookup(ln, name, vat))
                if not ln.accept(","):
                    break
        region = ln.text.rstrip().endswith("{")
        end = len(ln.text.rstrip()) - 1 if region else len(ln.text)
        attrs = {}
        if ln.peek()[1] == "{" and ln.peek()[2] < end:
            attrs = _attrs(ln)
        types = []
        if ln.accept(":"):
            while True:
                types.append(_type(ln))
                if not ln.accept(","):
                    break
        if region:
            ln.expect("{")
        if ln.peek()[1] in ("layout", "loc"):
            ln.error(f"'{ln.peek()[1]}(...)' is printed for reading only: layouts and locations have no text input")
        if not ln.at_end():
            ln.error("unexpected text at the end of the op")
        if len(types) != len(results):
            ln.error(f"{op_kind}: {len(results)} results but {len(types)} result types", at)
        op = Op(op_kind, operands, types, attrs)
        block.append(op)
        i += 1
        if region:
            i = self.regions(op, i)
        for (name, rat), v in zip(results, op.results):
            self.define(ln, name, v, rat)
        return i

    def regions(self, op, i):
        """The op's blocks, each introduced by ^bbN(args):, up to the closing '}'."""
        while True:
            if i >= len(self.lines):
                raise IRParseError(f"line {self.lines[-1][0]}: op '{op.kind}' is missing its closing '}}'")
            lineno, text = self.lines[i]
            ln = _Line(text, lineno)
            if ln.accept("}"):
                if not ln.at_end():
                    ln.error("unexpected text after '}'")
                if not op.blocks:
                    ln.error(f"op '{op.kind}' has a region with no ^bb block")
                return i + 1
            kind, tok, at = ln.next()
            if kind != "bb":
                ln.error(f"expected ^bb{len(op.blocks)}(...): or '}}', found {tok!r}", at)
            if tok != f"^bb{len(op.blocks)}":
                ln.error(f"expected ^bb{len(op.blocks)}, found {tok}", at)
            ln.expect("(")
            names, types = [], []
            if not ln.accept(")"):
                while True:
                    k, name, nat = ln.next()
                    if k != "val":
                        ln.error(f"expected a block argument %name, found {name!r}", nat)
                    ln.expect(":")
                    names.append((name, nat))
                    types.append(_type(ln))
                    if ln.accept(")"):
                        break
                    ln.expect(",")
            ln.expect(":")
            if not ln.at_end():
                ln.error("unexpected text after the block header")
            b = Block(types)
            b.parent = op
            op.blocks.append(b)
            self.scopes.append({})
            for (name, nat), v in zip(names, b.args):
                self.define(ln, name, v, nat)
            i = self.block_ops(b, i + 1)
            self.scopes.pop()


def parse_function(text: str) -> Function:
    """The Function the text describes (the printer's form; see the module docstring)."""
    return _Parser(text).function()


def parse_module(text: str, options=None) -> Module:
    return Module(parse_function(text), options or {})


__all__ = ["IRParseError", "parse_function", "parse_module", "Value"]
