"""Python AST -> tile IR.

One `CodeGenerator` walks one function's AST (the kernel, or an inlined jit callee) with a scope of names bound
to `tensor`s (runtime values) or plain Python values (constexprs). Control flow on constexprs is resolved while
walking; on runtime values it becomes structured `for` / `if` / `while` ops whose loop-carried and merged values
are the names the body assigns. Any failure becomes a CompilationError at the user's file:line:col.
"""
from __future__ import annotations

import ast
import builtins
import inspect
import math
import os
import textwrap
import types as _pytypes

from ..errors import CompilationError, CompileTimeAssertionFailure
from ..ir import types as T
from ..ir.core import Block, Function, Loc, Module
from ..ir.ops import Builder
from ..ir.types import TensorType
from ..language import core as lang
from ..language.core import constexpr, tensor, _unwrap
from ..language.aggregate import BoundJitMethod, is_composite as _is_composite


def _runtime_leaves(v) -> list:
    """The runtime parts of a tuple (or namedtuple) a runtime if or loop carries: its tensors and numbers, its
    block pointers', descriptors' and aggregates' parts, its nested tuples' parts; other elements (constexprs,
    dtypes, None, strings) are its structure."""
    out = []
    for e in v:
        if isinstance(e, tensor) or (sem.is_number(e) and not isinstance(e, constexpr)) or \
                isinstance(e, lang.assigned_number):
            out.append(e)
        elif _is_composite(e):
            out.extend(e.parts())
        elif isinstance(e, tuple):
            out.extend(_runtime_leaves(e))
    return out


def _carried_tuple(v) -> bool:
    return isinstance(v, tuple) and bool(_runtime_leaves(v))


def _composite(v) -> bool:
    """A value a runtime if or loop carries part by part: a block pointer, a tensor descriptor, an aggregate, or a
    tuple holding runtime values (`st = (lo, hi)` reassigned in a loop)."""
    return _is_composite(v) or _carried_tuple(v)


def _parts(v) -> list:
    return list(v.parts()) if _is_composite(v) else _runtime_leaves(v)


def _with_parts(v, parts):
    it = iter(parts)

    def rebuild(x):
        if isinstance(x, tensor) or (sem.is_number(x) and not isinstance(x, constexpr)) or \
                isinstance(x, lang.assigned_number):
            return next(it)
        if _is_composite(x):
            return x.with_parts([next(it) for _ in builtins.range(len(x.parts()))])
        if isinstance(x, tuple):
            vals = [rebuild(e) for e in x]
            return type(x)(*vals) if hasattr(x, "_fields") else tuple(vals)
        return x
    return rebuild(v)


def _same_structure(a, b) -> bool:
    """Whether b has a's structure: the same composite kinds, tuple lengths and compile-time elements (runtime
    parts may differ in value and, for tuples, in type: the loop or if settles those as it does for names)."""
    if _is_composite(a):
        return a.same_structure(b)
    if isinstance(a, tuple):
        return isinstance(b, tuple) and len(a) == len(b) and type(a) is type(b) and \
            all(_same_structure(x, y) for x, y in zip(a, b))
    runtime = lambda x: isinstance(x, (tensor, lang.assigned_number)) or (  # noqa: E731
        sem.is_number(x) and not isinstance(x, constexpr))
    if runtime(a) or runtime(b):
        return runtime(a) and runtime(b)
    return type(a) is type(b) and (a is b or a == b)
from . import context, semantic as sem
from .context import SemanticError

MAX_INLINE_DEPTH = 32


class _Source:
    """A function's dedented source, its AST, and the offsets that map AST positions to the real file."""

    __slots__ = ("file", "line0", "col0", "tree", "fdef", "globals", "closure", "cells")

    def __init__(self, fn):
        self.file = inspect.getsourcefile(fn) or "<unknown>"
        got = _quick_source(fn, self.file)
        if got is None:
            try:
                lines, first = inspect.getsourcelines(fn)
            except (OSError, TypeError):
                raise CompilationError(f"cannot read the source of {fn.__qualname__} (a kernel must be defined in "
                                       "a file, not in exec() or an interactive prompt)") from None
            tree = ast.parse(textwrap.dedent("".join(lines)))
        else:
            lines, first, tree = got
        self.col0 = len(lines[0]) - len(lines[0].lstrip()) if lines else 0
        self.line0 = first - 1
        self.tree = tree
        fdef = self.tree.body[0]
        if not isinstance(fdef, (ast.FunctionDef, ast.AsyncFunctionDef)):
            raise CompilationError("a jit function must be defined with def", Loc(self.file, first, 0))
        self.fdef = fdef
        self._bind(fn)

    def _bind(self, fn):
        """The function's own globals and closure values (functions made from one code object, e.g. by a
        factory called with different values, share everything else)."""
        self.globals = fn.__globals__
        self.cells = fn.__closure__
        self.closure = {}
        if fn.__closure__:
            for name, cell in zip(fn.__code__.co_freevars, fn.__closure__):
                try:
                    self.closure[name] = cell.cell_contents
                except ValueError:
                    pass

    def rebind(self, fn) -> "_Source":
        s = object.__new__(_Source)
        for k in ("file", "line0", "col0", "tree", "fdef"):
            setattr(s, k, getattr(self, k))
        s._bind(fn)
        return s

    def loc(self, node) -> Loc:
        return Loc(self.file, self.line0 + getattr(node, "lineno", 1), self.col0 + getattr(node, "col_offset", 0))

    def where(self, loc):
        """(function name, line, column) of `loc` as Triton counts them: the `def` is line 1, columns from the
        function's own indentation; None when `loc` is not in this function."""
        if loc is None or loc.file != self.file:
            return None
        first = self.line0 + self.fdef.lineno
        last = self.line0 + (getattr(self.fdef, "end_lineno", None) or self.fdef.lineno)
        if not first <= loc.line <= last:
            return None
        return (self.fdef.name, loc.line - first + 1, loc.col - self.col0)


def _quick_source(fn, file):
    """(lines, first line, AST) of fn's definition read straight from the file: from its first line (decorators
    included) to the last line indented past it. None when that text is not exactly one function definition
    ending there (e.g. a multi-line string reaching column 0), and inspect's tokenizer decides instead: it is
    right in every case but slower (its first use compiles large regular expressions, ~6 ms of a cold compile)."""
    try:
        import linecache

        code = fn.__code__
        text = linecache.getlines(file, fn.__globals__)
        first = code.co_firstlineno
        if not text or first > len(text):
            return None
        head = text[first - 1]
        indent = len(head) - len(head.lstrip())
        d = first - 1  # the `def` line, after any decorators
        while d < len(text) and not text[d].lstrip().startswith(("def ", "async def ")):
            d += 1
        end = d + 1
        for i in range(d + 1, len(text)):  # text[i] is line i + 1
            ln = text[i]
            body = ln.strip()
            if not body or body.startswith("#"):
                continue
            if len(ln) - len(ln.lstrip()) <= indent and body[0] not in ")]}":
                break
            end = i + 1
        lines = text[first - 1:end]
        tree = ast.parse(textwrap.dedent("".join(lines)))
        fdef = tree.body[0] if len(tree.body) == 1 else None
        if not isinstance(fdef, (ast.FunctionDef, ast.AsyncFunctionDef)) or fdef.name != code.co_name:
            return None
        return lines, first, tree
    except (SyntaxError, ValueError, OSError, TypeError, IndexError):
        return None


_SOURCE_CACHE: dict = {}


def get_source(fn) -> _Source:
    key = fn.__code__
    s = _SOURCE_CACHE.get(key)
    if s is None:
        s = _Source(fn)
        _SOURCE_CACHE[key] = s
    elif s.cells is not fn.__closure__ or s.globals is not fn.__globals__:
        s = s.rebind(fn)  # the same code with other closure values (or globals): parse once, bind each
    return s


def is_jit(obj) -> bool:
    return getattr(obj, "__tilefarm_jit__", False)


def is_builtin(obj) -> bool:
    return getattr(obj, "__tilefarm_builtin__", False)


def _assigned_names(stmts) -> list:
    """Names a statement list stores to (in first-store order), looking inside nested blocks."""
    out: list = []

    def add(n):
        if n not in out:
            out.append(n)

    class V(ast.NodeVisitor):
        def visit_Name(self, node):
            if isinstance(node.ctx, ast.Store):
                add(node.id)

        def visit_FunctionDef(self, node):
            pass

        visit_Lambda = visit_FunctionDef

    for s in stmts:
        V().visit(s)
    return out


class _BindConstexpr(ast.stmt):
    """`target = value` for an unrolled tl.static_range copy (value a compile-time int)."""

    _fields = ()

    def __init__(self, target, value):
        super().__init__()
        self.target, self.value = target, value


def _contains_return(stmts) -> bool:
    """Whether a return statement appears in `stmts` (nested blocks included, nested functions excluded)."""
    return _first_return(stmts) is not None


def _first_return(stmts):
    class V(ast.NodeVisitor):
        found = None

        def visit_Return(self, node):
            if self.found is None:
                self.found = node

        def visit_FunctionDef(self, node):
            pass

        visit_Lambda = visit_AsyncFunctionDef = visit_FunctionDef

    v = V()
    for st in stmts:
        v.visit(st)
    return v.found


def _is_python_value(v) -> bool:
    return not isinstance(v, tensor)


_PY_CMP = {ast.Lt: lambda a, b: a < b, ast.LtE: lambda a, b: a <= b, ast.Gt: lambda a, b: a > b,
           ast.GtE: lambda a, b: a >= b, ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b}


def _captured_value_ok(v) -> bool:
    """Whether a kernel may read `v` through a global or closure name (Triton's rule): a compile-time value made
    so explicitly (tl.constexpr(...), None, a dtype), or code and namespaces (modules, classes, jit functions,
    builtins, Python helpers), or a language object (an aggregate). A plain number, string, tuple, list or other
    object is not: its value would be frozen into the kernel without the user having said it is a constant
    (Triton refuses these; `x: tl.constexpr = 42` at module level is still a plain int)."""
    if v is None or isinstance(v, (constexpr, T.TritonDtypeAPI, _pytypes.ModuleType, type)) or callable(v):
        return True
    if getattr(v, "__tilefarm_aggregate__", False):
        return True
    mod = type(v).__module__ or ""
    return mod.startswith(("compiler.language", "compiler.ir.types", "compiler.triton_compat"))


ALLOW_NON_CONSTEXPR_GLOBALS_ENV = "TRITON_ALLOW_NON_CONSTEXPR_GLOBALS"


def _captured(name, v, kind):
    if _captured_value_ok(v) or os.environ.get(ALLOW_NON_CONSTEXPR_GLOBALS_ENV, "0") == "1":
        return v
    raise SemanticError(f"Cannot access {kind} variable {name} from within a jit function: a kernel reads only "
                        f"{kind} variables made constants with tl.constexpr (`{name} = tl.constexpr(...)`); an "
                        f"annotation (`{name}: tl.constexpr = ...`) does not make one. "
                        f"{ALLOW_NON_CONSTEXPR_GLOBALS_ENV}=1 lets kernels read the others as constants too")


class CodeGenerator(ast.NodeVisitor):
    def __init__(self, source: _Source, builder: Builder, scope: dict, depth: int = 0, root=None):
        self.src = source
        self.builder = builder
        self.scope = scope
        self.depth = depth
        self.root = root or self
        # inside tl.map_elementwise: runtime ifs on blocks select per element (see _select_if)
        self.elementwise = False
        self.static_prints: list = []
        self.return_value = None
        self.returned = False
        self.return_node = None  # the return statement that gave return_value (errors about it point there)

    # ------------------------------------------------------------------------------------------------
    # infrastructure
    # ------------------------------------------------------------------------------------------------
    def visit(self, node):
        loc = self.src.loc(node) if hasattr(node, "lineno") else None
        saved = self.builder.loc
        if loc is not None:
            self.builder.loc = loc
        try:
            return super().visit(node)
        except CompilationError as e:
            if e.where is None and e.loc is not None and not e.calls:
                e.locate_in(self.src.where(e.loc))
            raise
        except SemanticError as e:
            if isinstance(e, context.StaticAssertError):  # Triton's: no cause, the assertion is the error
                raise CompileTimeAssertionFailure(str(e), loc, where=self.src.where(loc)) from None
            err = CompilationError(str(e), loc, where=self.src.where(loc), cause=e)
            raise err from err.__cause__
        except (TypeError, ValueError, AttributeError, IndexError, KeyError, ZeroDivisionError,
                OverflowError, NotImplementedError) as e:
            msg = str(e) if isinstance(e, T.UnsupportedTypeError) else f"{type(e).__name__}: {e}"
            err = CompilationError(msg, loc, where=self.src.where(loc), cause=e)
            raise err from err.__cause__
        except RecursionError:
            raise CompilationError("recursion too deep while compiling (recursive jit calls?)", loc,
                                   where=self.src.where(loc)) from None
        finally:
            self.builder.loc = saved

    def generic_visit(self, node):
        raise SemanticError(f"unsupported Python construct in a kernel: {type(node).__name__}")

    def lookup(self, name):
        if name in self.scope:
            return self.scope[name]
        if name in self.src.closure:
            return _captured(name, self.src.closure[name], "closure")
        if name in self.src.globals:
            return _captured(name, self.src.globals[name], "global")
        if hasattr(builtins, name):
            return getattr(builtins, name)
        raise SemanticError(f"name '{name}' is not defined")

    # ------------------------------------------------------------------------------------------------
    # statements
    # ------------------------------------------------------------------------------------------------
    def visit_stmts(self, stmts):
        """Visit a statement list. An `if` that returns somewhere inside takes the rest of the list into both of
        its branches (the code after it runs only where the branch did not return), so every return ends its
        function and a runtime `if` merges what its two branches return. Code after a return is dead and, as in
        Python and Triton, never looked at."""
        stmts = list(stmts)
        for i, s in enumerate(stmts):
            if isinstance(s, ast.For) and _contains_return([s]):
                unrolled = self._unroll_static_range(s)
                if unrolled is not None:  # a return in a tl.static_range loop: the unrolled copies, then the rest
                    self.visit_stmts(unrolled + stmts[i + 1:])
                    return
            if isinstance(s, ast.If) and i + 1 < len(stmts) and _contains_return([s]):
                rest = stmts[i + 1:]
                new_if = ast.If(test=s.test, body=list(s.body) + rest, orelse=list(s.orelse) + rest)
                ast.copy_location(new_if, s)
                self.visit(new_if)
                return
            self.visit(s)
            if self.returned:
                return

    def _unroll_static_range(self, node):
        """The statements of a `for ... in tl.static_range(...)` loop unrolled (the loop variable bound before each
        copy of the body), or None for any other loop."""
        it = node.iter
        if node.orelse or not isinstance(it, ast.Call) or self.visit(it.func) is not lang.static_range:
            return None
        r = lang.static_range(*[self.visit(a) for a in it.args], **{k.arg: self.visit(k.value) for k in it.keywords})
        if not all(isinstance(_unwrap(v), int) for v in (r.start, r.end, r.step)):
            raise SemanticError("tl.static_range bounds must be constexpr ints")
        out = []
        for i in builtins.range(r.start, r.end, r.step):
            out.append(ast.copy_location(_BindConstexpr(node.target, i), node))
            out.extend(node.body)
        return out

    def visit__BindConstexpr(self, node):
        self._assign(node.target, node.value, as_constexpr=True)

    def visit_Module(self, node):
        self.visit_stmts(node.body)

    def visit_Pass(self, node):
        pass

    def visit_Expr(self, node):
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # docstring
        if isinstance(node.value, ast.Call) and isinstance(node.value.func, (ast.Name, ast.Attribute)):
            fn = _unwrap(self.visit(node.value.func))  # a name or attribute: looking it up twice changes nothing
            why = getattr(fn, "_must_use_result", False) if is_jit(fn) else False
            if why:
                extra = f" {why}" if isinstance(why, str) else ""
                raise SemanticError(f"The result of {fn.__name__} is not being used.{extra}")
        self.visit(node.value)

    def visit_Return(self, node):
        value = self.visit(node.value) if node.value is not None else None
        self.return_value = value
        self.returned = True
        self.return_node = node

    def _assign(self, target, value, as_constexpr=False):
        if isinstance(target, ast.Name):
            if isinstance(value, lang.assigned_number) and not as_constexpr:
                self.scope[target.id] = value
                return
            if isinstance(value, constexpr):
                value = value.value
            if not as_constexpr and isinstance(value, (bool, int, float)):
                value = lang.assigned_number(value)  # a scalar tensor once assigned, as in Triton
            self.scope[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            value = _unwrap(value)
            if not isinstance(value, (tuple, list)):
                raise CompilationError(f"cannot unpack {type(value).__name__} into {len(target.elts)} names",
                                       self.src.loc(target))
            if len(value) != len(target.elts):
                raise CompilationError(f"expected {len(target.elts)} values to unpack, got {len(value)}",
                                       self.src.loc(target))
            for t, v in zip(target.elts, value):
                self._assign(t, v, as_constexpr)
        else:
            raise CompilationError("only names and tuples of names can be assigned in a kernel "
                                   "(use tl.store to write memory)", self.src.loc(target))

    def visit_Assign(self, node):
        value = self.visit(node.value)
        for t in node.targets:
            self._assign(t, value)

    def visit_AnnAssign(self, node):
        if node.value is None:
            return
        value = self.visit(node.value)
        ann = _unwrap(self.visit(node.annotation)) if node.annotation is not None else None
        is_c = ann is constexpr
        if is_c and isinstance(_unwrap(value), tensor):
            raise SemanticError("a tl.constexpr name needs a compile-time value, got a runtime tensor")
        self._assign(node.target, value, as_constexpr=is_c)

    def visit_AugAssign(self, node):
        if not isinstance(node.target, ast.Name):
            raise CompilationError("augmented assignment needs a plain name", self.src.loc(node.target))
        cur = self.lookup(node.target.id)
        rhs = self.visit(node.value)
        self._assign(node.target, self._binop(node.op, cur, rhs))

    def visit_Assert(self, node):
        cond = self.visit(node.test)
        msg = self.visit(node.msg) if node.msg is not None else ""
        if isinstance(cond, tensor):
            lang.device_assert(cond, str(_unwrap(msg)))
        elif not _unwrap(cond):
            raise SemanticError(f"assertion failed: {_unwrap(msg)}" if msg else "assertion failed")

    def visit_Break(self, node):
        raise SemanticError("break is not supported in kernels; use a while loop with a condition")

    def visit_Continue(self, node):
        raise SemanticError("continue is not supported in kernels; use if/else inside the loop")

    def visit_Global(self, node):
        raise SemanticError("global statements are not supported in kernels")

    visit_Nonlocal = visit_Global

    def visit_FunctionDef(self, node):
        raise SemanticError("nested function definitions are not supported; define a @compiler.jit function "
                            "at module level")

    # --- if ---------------------------------------------------------------------------------------
    def visit_If(self, node):
        cond = self.visit(node.test)
        if not isinstance(cond, tensor):
            branch = node.body if _unwrap(cond) else node.orelse
            self.visit_stmts(branch)
            return
        if cond.type.shape and not self.elementwise:
            raise SemanticError(f"if needs a scalar condition, got a block of shape {list(cond.type.shape)}; "
                                "use tl.where for elementwise choice")
        if not cond.dtype.is_bool():
            cond = sem.compare("ne", cond, 0)
        if self.elementwise:
            self._select_if(cond, node)
            return
        self._runtime_if(cond, node)

    _EFFECTS = frozenset(("store", "atomic_rmw", "atomic_cas", "print", "assert", "barrier"))

    def _select_if(self, cond, node):
        """An `if` in a function mapped by tl.map_elementwise, where each element takes its own branch: both
        branches are built and what they assign (or return) is chosen per element with where. The branches
        must not write memory (each would run for every element)."""
        b = self.builder
        before = dict(self.scope)
        results = []
        for stmts in (node.body, node.orelse):
            start = len(b.block.ops)
            self.scope = dict(before)
            self.returned, self.return_value = False, None
            self.visit_stmts(stmts)
            for op in self._walk_ops(b.block.ops[start:]):
                if op.kind in self._EFFECTS:
                    raise SemanticError(f"a function mapped by tl.map_elementwise cannot {op.kind} inside an if "
                                        "on its elements")
            results.append((self.scope, self.returned, self.return_value))
        (ts, tr, tv), (es, er, ev) = results
        self.scope = dict(before)
        if tr or er:
            ft, fe = self._flat_return(_unwrap(tv)), self._flat_return(_unwrap(ev))
            if (ft is None) != (fe is None) or (ft is not None and len(ft) != len(fe)):
                raise SemanticError(f"the two branches of this if return different things "
                                    f"({self._ret_desc(_unwrap(tv))} and {self._ret_desc(_unwrap(ev))})")
            self.returned = True
            if ft is None:
                self.return_value = None
                return
            out = [self._select(cond, x, y, f"return value {i}") for i, (x, y) in enumerate(zip(ft, fe))]
            self.return_value = tuple(out) if isinstance(_unwrap(tv), (tuple, list)) else out[0]
            return
        for n in dict.fromkeys(list(ts) + list(es)):
            x, y = ts.get(n, before.get(n)), es.get(n, before.get(n))
            if n not in ts or n not in es:
                if n not in before:
                    continue  # assigned in one branch only and not defined before: not visible after the if
            if x is y:
                self.scope[n] = x
                continue
            self.scope[n] = self._select(cond, x, y, f"'{n}'")

    def _select_while(self, node):
        """A `while` on element values in a function mapped by tl.map_elementwise: the loop runs while the condition
        holds for any element; an element whose condition is false keeps its values (the loop carries the
        per-element condition, and each update is a where on it). The body must not write memory."""
        b = self.builder
        before = dict(self.scope)
        carried = self._carried(node.body)
        types = [before[n].type if isinstance(before[n], tensor)
                 else TensorType(sem.scalar_dtype_of_python(before[n])) for n in carried]
        live_t = None
        for attempt in builtins.range(6):
            parent = b.block
            all_t = types + ([live_t] if live_t is not None else [])
            inits = [self._coerce(before[n], t, n) for n, t in zip(carried, types)]
            if live_t is not None:
                inits.append(sem.const(True, T.int1, live_t.shape))
            bef = Block(all_t)
            b.set_insertion_block(bef)
            self.scope = dict(before)
            for n, a in zip(carried, bef.args):
                self.scope[n] = tensor(a, a.type)
            cond = self.visit(node.test)
            if not isinstance(cond, tensor):
                raise SemanticError("the condition of this while loop stopped depending on the elements")
            if not cond.dtype.is_bool():
                cond = sem.compare("ne", cond, 0)
            if live_t is None or cond.type != live_t:  # now the condition's shape is known: build it again
                live_t = cond.type
                b.set_insertion_block(parent)
                continue
            anyc = sem.compare("ne", sem.reduce_simple(sem.cast(cond, T.int32), None, "max"), 0)
            b.condition(anyc.handle, list(bef.args[:-1]) + [cond.handle])
            aft = Block(all_t)
            b.set_insertion_block(aft)
            self.scope = dict(before)
            for n, a in zip(carried, aft.args):
                self.scope[n] = tensor(a, a.type)
            live = tensor(aft.args[-1], aft.args[-1].type)
            self.visit_stmts(node.body)
            for op in self._walk_ops(aft.ops):
                if op.kind in self._EFFECTS:
                    raise SemanticError(f"a function mapped by tl.map_elementwise cannot {op.kind} inside a while "
                                        "loop on its elements")
            outs = [self._select(live, self.scope[n], tensor(a, a.type), f"'{n}'")
                    for n, a in zip(carried, aft.args)]
            new_types = [o.type if isinstance(o, tensor) else t for o, t in zip(outs, types)]
            if new_types != types:
                types = new_types
                b.set_insertion_block(parent)
                continue
            b.yield_([self._coerce(o, t, n).handle for o, t, n in zip(outs, types, carried)] + [live.handle])
            b.set_insertion_block(parent)
            op = b.create("while", [v.handle for v in inits], all_t, {}, [bef, aft])
            self.scope = dict(before)
            for n, r in zip(carried, op.results):
                self.scope[n] = tensor(r, r.type)
            return
        raise SemanticError("could not settle the types of the loop-carried values")

    @classmethod
    def _walk_ops(cls, ops):
        for op in ops:
            yield op
            for blk in op.blocks:
                yield from cls._walk_ops(blk.ops)

    @staticmethod
    def _select(cond, x, y, what):
        ux, uy = _unwrap(x), _unwrap(y)
        if not isinstance(ux, tensor) and not isinstance(uy, tensor):
            if type(ux) is type(uy) and ux == uy:
                return x
            if not (sem.is_number(ux) and sem.is_number(uy)):
                raise SemanticError(f"{what} gets different compile-time values in the two branches of an if")
        return sem.where(cond, ux, uy)

    def _run_branch(self, block, stmts, before):
        self.builder.set_insertion_block(block)
        self.scope = dict(before)
        self.returned, self.return_value, self.return_node = False, None, None
        self.visit_stmts(stmts)
        return self.scope, self.returned, self.return_value

    def _runtime_if(self, cond, node):
        b = self.builder
        parent = b.block
        before = dict(self.scope)
        then_b, else_b = Block(), Block()
        then_scope, then_ret, then_val = self._run_branch(then_b, node.body, before)
        then_node = self.return_node
        else_scope, else_ret, else_val = self._run_branch(else_b, node.orelse, before)
        else_node = self.return_node
        b.set_insertion_block(parent)
        if then_ret or else_ret:
            # The if ends its function (visit_stmts gave it the rest): a branch that did not return fell off the
            # end, which returns None. What the branches return is the if's result. Where they disagree, the
            # error points at the second return (the else branch's), as Triton's does.
            self.return_node = else_node or then_node
            try:
                self._returning_if(cond, node, then_b, else_b, then_val, else_val)
            except SemanticError as e:
                if self.return_node is None:
                    raise
                loc = self.src.loc(self.return_node)
                err = CompilationError(str(e), loc, where=self.src.where(loc), cause=e)
                raise err from err.__cause__
            return
        # block pointers and descriptors assigned in a branch merge part by part ("n#i", as loops carry them)
        composites = {}
        for n in dict.fromkeys(list(then_scope) + list(else_scope)):
            if n not in before and not (n in then_scope and n in else_scope):
                continue  # assigned in one branch only and not defined before: not visible after the if
            tv, ev = then_scope.get(n, before.get(n)), else_scope.get(n, before.get(n))
            if tv is ev or not (_composite(tv) or _composite(ev)):
                continue
            if not (_composite(tv) and _same_structure(tv, ev)):
                raise SemanticError(f"'{n}' gets different kinds of value in the two branches of a runtime if "
                                    f"({tv!r} and {ev!r}): a block pointer, descriptor or aggregate must keep "
                                    "its structure (element type, block shape, constexpr fields)")
            composites[n] = tv
            for sc, v in ((then_scope, tv), (else_scope, ev)):
                for i, part in enumerate(_parts(v)):
                    sc[f"{n}#{i}"] = part
            if _composite(before.get(n)) and _same_structure(before[n], tv):
                for i, part in enumerate(_parts(before[n])):
                    before[f"{n}#{i}"] = part
        names, same = [], {}
        for n in list(then_scope) + list(else_scope):
            if n in names or n in composites:
                continue
            in_then, in_else = n in then_scope, n in else_scope
            tv, ev = then_scope.get(n), else_scope.get(n)
            changed = (n in before and (tv is not before[n] or ev is not before[n])) or \
                      (n not in before and in_then and in_else)
            if not changed:
                continue
            if not isinstance(tv, tensor) and not isinstance(ev, tensor):
                if tv is ev or (type(tv) is type(ev) and tv == ev):
                    same[n] = tv  # the same compile-time value on both paths: it holds after the if
                    continue
                if not (sem.is_number(tv) and sem.is_number(ev)):
                    if n in before:
                        raise SemanticError(f"'{n}' gets different compile-time values in the two branches of a "
                                            "runtime if")
                    continue
            names.append(n)
        # unify types: python numbers become tensors; mismatched dtypes promote
        types = []
        for n in names:
            tv, ev = then_scope[n], else_scope[n]
            tt = tv.type if isinstance(tv, tensor) else None
            et = ev.type if isinstance(ev, tensor) else None
            if tt is None and et is None:
                d = sem.promote_dtypes(sem.scalar_dtype_of_python(tv), sem.scalar_dtype_of_python(ev))
                ty = TensorType(d)
            elif tt is None:
                ty = et
            elif et is None:
                ty = tt
            elif tt == et:
                ty = tt
            elif tt.shape == et.shape and not tt.element.is_ptr() and not et.element.is_ptr():
                ty = tt.with_element(sem.promote_dtypes(tt.element, et.element))
            else:
                raise SemanticError(f"'{n}' has type {tt} in the then-branch but {et} in the else-branch")
            types.append(ty)
        for blk, sc in ((then_b, then_scope), (else_b, else_scope)):
            b.set_insertion_block(blk)
            vals = [self._coerce(sc[n], ty, n).handle for n, ty in zip(names, types)]
            b.yield_(vals)
        b.set_insertion_block(parent)
        op = b.create("if", [cond.handle], types, {}, [then_b, else_b])
        self.scope = dict(before)
        self.scope.update(same)
        for n, r in zip(names, op.results):
            self.scope[n] = tensor(r, r.type)
        for n, proto in composites.items():
            parts = [self.scope.pop(f"{n}#{i}", then_scope[f"{n}#{i}"]) for i in builtins.range(len(_parts(proto)))]
            self.scope[n] = _with_parts(proto, parts)
        for k in [k for k in self.scope if "#" in k and k.split("#")[0] in composites]:
            del self.scope[k]

    def _returning_if(self, cond, node, then_b, else_b, then_val, else_val):
        b = self.builder
        parent = b.block
        tv, ev = _unwrap(then_val), _unwrap(else_val)
        flat_t, flat_e = self._flat_return(tv), self._flat_return(ev)
        if (flat_t is None) != (flat_e is None) or (flat_t is not None and len(flat_t) != len(flat_e)):
            raise SemanticError(f"the two branches of this runtime if return different things "
                                f"({self._ret_desc(tv)} and {self._ret_desc(ev)})")
        flat_t, flat_e = flat_t or [], flat_e or []
        types, consts = [], {}
        for i, (a, c) in enumerate(zip(flat_t, flat_e)):
            a, c = _unwrap(a), _unwrap(c)
            if a is None and c is None:
                consts[i] = None
                continue
            if not isinstance(a, tensor) and not isinstance(c, tensor):
                if type(a) is type(c) and a == c:
                    consts[i] = a
                    continue
                if not (sem.is_number(a) and sem.is_number(c)):
                    raise SemanticError(f"the two branches of this runtime if return different compile-time "
                                        f"values ({a!r} and {c!r})")
            types.append(self._merge_type(f"return value {i}", a, c))
        for blk, flat in ((then_b, flat_t), (else_b, flat_e)):
            b.set_insertion_block(blk)
            vals = [self._coerce(v, ty, "the return value").handle
                    for v, ty in zip((v for i, v in enumerate(flat) if i not in consts), types)]
            b.yield_(vals)
        b.set_insertion_block(parent)
        op = b.create("if", [cond.handle], types, {}, [then_b, else_b])
        results = iter(tensor(r, r.type) for r in op.results)
        out = [consts[i] if i in consts else next(results) for i in builtins.range(len(flat_t))]
        self.returned = True
        if isinstance(tv, (tuple, list)):
            self.return_value = tuple(out)
        else:
            self.return_value = out[0] if out else None

    @staticmethod
    def _flat_return(v):
        if v is None:
            return None
        if isinstance(v, (tuple, list)):
            return list(v)
        return [v]

    @staticmethod
    def _ret_desc(v):
        if v is None:
            return "nothing"
        if isinstance(v, (tuple, list)):
            return f"a tuple of {len(v)}"
        return "a tensor" if isinstance(v, tensor) else repr(v)

    @staticmethod
    def _merge_type(name, tv, ev) -> TensorType:
        """The type both branches' values become (numbers become tensors; mismatched dtypes promote)."""
        tt = tv.type if isinstance(tv, tensor) else None
        et = ev.type if isinstance(ev, tensor) else None
        if tt is None and et is None:
            return TensorType(sem.promote_dtypes(sem.scalar_dtype_of_python(tv), sem.scalar_dtype_of_python(ev)))
        if tt is None:
            return et
        if et is None or tt == et:
            return tt
        if tt.shape == et.shape and not tt.element.is_ptr() and not et.element.is_ptr():
            return tt.with_element(sem.promote_dtypes(tt.element, et.element))
        if not tt.shape or not et.shape:
            shape = tt.shape or et.shape
            if tt.element == et.element:
                return TensorType(tt.element, shape)
            if not tt.element.is_ptr() and not et.element.is_ptr():
                return TensorType(sem.promote_dtypes(tt.element, et.element), shape)
        raise SemanticError(f"{name} has type {tt} in the then-branch but {et} in the else-branch")

    def _coerce(self, v, ty: TensorType, name: str) -> tensor:
        """Make `v` a tensor of type `ty` (numbers become constants; dtypes cast; scalars splat)."""
        if not isinstance(v, tensor):
            if not sem.is_number(v):
                raise SemanticError(f"'{name}' must be a number or tensor here, got {type(v).__name__}")
            v = sem.const(_unwrap(v), ty.element)
        if v.type.shape != ty.shape:
            if not v.type.shape:
                v = sem.broadcast_to(v, ty.shape)
            else:
                raise SemanticError(f"'{name}' changes shape from {list(ty.shape)} to {list(v.type.shape)} "
                                    "inside control flow")
        if v.dtype != ty.element:
            v = sem.cast(v, ty.element)
        return v

    # --- for --------------------------------------------------------------------------------------
    def _no_return_in_loop(self, node):
        r = _first_return(node.body)
        if r is not None:
            raise CompilationError("Cannot have `return` statements inside `while` or `for` statements in triton, "
                                   "nor here (a tl.static_range loop may return): set a flag and test it, or end "
                                   "the loop with its condition", self.src.loc(r), where=self.src.where(self.src.loc(r)))

    def visit_For(self, node):
        if node.orelse:
            raise SemanticError("for/else is not supported")
        self._no_return_in_loop(node)
        it = node.iter
        if not isinstance(it, ast.Call):
            raise SemanticError("for loops must iterate over range(...), tl.range(...) or tl.static_range(...)")
        fn = self.visit(it.func)
        args = [self.visit(a) for a in it.args]
        kwargs = {k.arg: self.visit(k.value) for k in it.keywords}
        if fn is lang.static_range:
            r = lang.static_range(*args, **kwargs)
            for name_v in (r.start, r.end, r.step):
                if not isinstance(_unwrap(name_v), int):
                    raise SemanticError("tl.static_range bounds must be constexpr ints")
            for i in builtins.range(r.start, r.end, r.step):
                self._assign(node.target, i, as_constexpr=True)
                self.visit_stmts(node.body)
            return
        if fn is builtins.range:
            r = lang.range(*args)
        elif fn is lang.range:
            r = lang.range(*args, **kwargs)
        else:
            raise SemanticError("for loops must iterate over range(...), tl.range(...) or tl.static_range(...)")
        if not isinstance(node.target, ast.Name):
            raise SemanticError("the loop variable must be a single name")
        lb, ub, step = _unwrap(r.start), _unwrap(r.end), _unwrap(r.step)
        for what, v in (("start", lb), ("end", ub), ("step", step)):
            if isinstance(v, tensor):
                if v.type.shape or not v.dtype.is_int() or v.dtype.is_bool():
                    raise SemanticError(f"the loop {what} must be an integer scalar, got {v.type}")
            elif isinstance(v, bool) or not isinstance(v, int):
                raise SemanticError(f"the loop {what} must be an int, got {v!r}")
        # A constant negative step counts down as Triton does: the loop runs upwards over the swapped bounds with
        # the step's magnitude and the body sees start + end - iv. A runtime step must be positive (Triton's
        # loops assume it; the interpreter reports a non-positive one).
        down = False
        if not isinstance(step, tensor):
            if step == 0:
                raise SemanticError("the loop step must not be zero")
            if step < 0:
                down, step, lb, ub = True, -step, ub, lb
        iv_dtype = T.int32
        for v in (lb, ub, step):
            vt = v.dtype if isinstance(v, tensor) else sem.scalar_dtype_of_python(v)
            iv_dtype = sem.promote_dtypes(iv_dtype, vt)
        lb_t, ub_t, st_t = (sem.cast(sem.to_tensor(v, iv_dtype if not isinstance(v, tensor) else None), iv_dtype)
                            for v in (lb, ub, step))
        iv_map = None
        if down:
            def iv_map(iv):
                return sem.add(sem.sub(ub_t, iv), lb_t)
        attrs = {"num_stages": r.num_stages} if getattr(r, "num_stages", None) is not None else {}
        self._runtime_loop(node, node.target.id, lb_t, ub_t, st_t, iv_dtype, iv_map, attrs)

    def _carried(self, body_stmts, extra_exclude=()):
        names = [n for n in _assigned_names(body_stmts) if n in self.scope and n not in extra_exclude]
        out = []
        for n in names:
            v = self.scope[n]
            if isinstance(v, tensor) or (sem.is_number(v)):
                out.append(n)
            elif _composite(v):
                # a block pointer or tensor descriptor is carried as its scalar parts, named "n#i" (not valid
                # Python names)
                for i, part in enumerate(_parts(v)):
                    self.scope[f"{n}#{i}"] = part
                    out.append(f"{n}#{i}")
        return out

    def _composite_in(self, carried):
        """Rebuild carried block pointers and descriptors from their parts "n#i" (just bound to block arguments or
        results)."""
        for n in {c.split("#")[0] for c in carried if "#" in c}:
            old = self.scope[n]
            self.scope[n] = _with_parts(old, [self.scope[f"{n}#{i}"] for i in builtins.range(len(_parts(old)))])

    def _composite_out(self, carried, before):
        """Export the parts of carried block pointers and descriptors after the loop body (their structure must not
        change)."""
        for n in {c.split("#")[0] for c in carried if "#" in c}:
            v = self.scope[n]
            if not _same_structure(before[n], v):
                if isinstance(before[n], lang.block_ptr):
                    raise SemanticError(f"loop-carried block pointer '{n}' must keep its element type and block "
                                        "shape in the loop (use tl.advance)")
                if isinstance(before[n], tuple):
                    raise SemanticError(f"loop-carried tuple '{n}' must keep its length and its compile-time "
                                        f"elements in the loop ({before[n]!r} became {v!r})")
                raise SemanticError(f"loop-carried tensor descriptor '{n}' must keep its element type, block "
                                    "shape and padding in the loop")
            for i, part in enumerate(_parts(v)):
                self.scope[f"{n}#{i}"] = part

    def _runtime_loop(self, node, ivname, lb, ub, step, iv_dtype, iv_map=None, attrs=None):
        b = self.builder
        carried = self._carried(node.body, (ivname,))
        before = dict(self.scope)
        init_types = []
        for n in carried:
            v = before[n]
            if isinstance(v, tensor):
                init_types.append(v.type)
            else:
                init_types.append(TensorType(sem.scalar_dtype_of_python(v)))
        for attempt in builtins.range(3):
            parent = b.block
            inits = [self._coerce(before[n], t, n) for n, t in zip(carried, init_types)]
            body = Block([TensorType(iv_dtype)] + init_types)
            b.set_insertion_block(body)
            self.scope = dict(before)
            iv = tensor(body.args[0], body.args[0].type)
            self.scope[ivname] = iv_map(iv) if iv_map is not None else iv
            for n, a in zip(carried, body.args[1:]):
                self.scope[n] = tensor(a, a.type)
            self._composite_in(carried)
            self.visit_stmts(node.body)
            self._composite_out(carried, before)
            if self.returned:
                raise SemanticError("return inside a loop is not supported")
            new_types = []
            for n, t in zip(carried, init_types):
                v = self.scope[n]
                if isinstance(v, tensor) and v.type != t:
                    if v.type.shape == t.shape and not v.dtype.is_ptr() and not t.element.is_ptr():
                        new_types.append(t.with_element(sem.promote_dtypes(t.element, v.dtype)))
                    elif not t.shape and v.type.shape:
                        new_types.append(v.type if t.element == v.dtype else
                                         v.type.with_element(sem.promote_dtypes(t.element, v.dtype)))
                    else:
                        raise SemanticError(f"loop-carried '{n}' changes type from {t} to {v.type} in the loop body")
                else:
                    new_types.append(t)
            if new_types != init_types:
                # retry with the wider types (the body was built into a discarded block)
                init_types = new_types
                b.set_insertion_block(parent)
                continue
            vals = [self._coerce(self.scope[n], t, n).handle for n, t in zip(carried, init_types)]
            b.yield_(vals)
            b.set_insertion_block(parent)
            op = b.create("for", [lb.handle, ub.handle, step.handle] + [v.handle for v in inits], init_types,
                          dict(attrs or {}),
                          [body])
            self.scope = dict(before)
            for n, r in zip(carried, op.results):
                self.scope[n] = tensor(r, r.type)
            self._composite_in(carried)
            return
        raise SemanticError("could not settle the types of the loop-carried values")

    # --- while ------------------------------------------------------------------------------------
    def visit_While(self, node):
        if node.orelse:
            raise SemanticError("while/else is not supported")
        self._no_return_in_loop(node)
        b = self.builder
        carried = self._carried(node.body)
        before = dict(self.scope)
        init_types = [before[n].type if isinstance(before[n], tensor)
                      else TensorType(sem.scalar_dtype_of_python(before[n])) for n in carried]
        for attempt in builtins.range(3):
            parent = b.block
            inits = [self._coerce(before[n], t, n) for n, t in zip(carried, init_types)]
            bef = Block(init_types)
            b.set_insertion_block(bef)
            self.scope = dict(before)
            for n, a in zip(carried, bef.args):
                self.scope[n] = tensor(a, a.type)
            self._composite_in(carried)
            cond = self.visit(node.test)
            if not isinstance(cond, tensor):
                b.set_insertion_block(parent)
                self.scope = dict(before)
                if _unwrap(cond):
                    raise SemanticError("while loop condition is a compile-time True: the loop never ends")
                return
            if cond.type.shape:
                if self.elementwise:
                    b.set_insertion_block(parent)
                    self.scope = dict(before)
                    self._select_while(node)
                    return
                raise SemanticError("while needs a scalar condition")
            if not cond.dtype.is_bool():
                cond = sem.compare("ne", cond, 0)
            b.condition(cond.handle, list(bef.args))
            aft = Block(init_types)
            b.set_insertion_block(aft)
            self.scope = dict(before)
            for n, a in zip(carried, aft.args):
                self.scope[n] = tensor(a, a.type)
            self._composite_in(carried)
            self.visit_stmts(node.body)
            self._composite_out(carried, before)
            if self.returned:
                raise SemanticError("return inside a loop is not supported")
            new_types = []
            for n, t in zip(carried, init_types):
                v = self.scope[n]
                if isinstance(v, tensor) and v.type != t:
                    if v.type.shape == t.shape and not v.dtype.is_ptr():
                        new_types.append(t.with_element(sem.promote_dtypes(t.element, v.dtype)))
                    else:
                        raise SemanticError(f"loop-carried '{n}' changes type from {t} to {v.type} in the loop body")
                else:
                    new_types.append(t)
            if new_types != init_types:
                init_types = new_types
                b.set_insertion_block(parent)
                continue
            b.yield_([self._coerce(self.scope[n], t, n).handle for n, t in zip(carried, init_types)])
            b.set_insertion_block(parent)
            op = b.create("while", [v.handle for v in inits], init_types, {}, [bef, aft])
            self.scope = dict(before)
            for n, r in zip(carried, op.results):
                self.scope[n] = tensor(r, r.type)
            self._composite_in(carried)
            return
        raise SemanticError("could not settle the types of the loop-carried values")

    # ------------------------------------------------------------------------------------------------
    # expressions
    # ------------------------------------------------------------------------------------------------
    def visit_Constant(self, node):
        return node.value

    def visit_Name(self, node):
        return self.lookup(node.id)

    def visit_Attribute(self, node):
        obj = self.visit(node.value)
        if isinstance(obj, constexpr) and not isinstance(obj, lang.assigned_number) and node.attr in ("type",
                                                                                                     "value"):
            return getattr(obj, node.attr)  # a constexpr's own: constexpr_type(v), and v (as in Triton)
        raw, obj = obj, _unwrap(obj)
        if isinstance(obj, (bool, int, float)) and not hasattr(obj, node.attr) and hasattr(tensor, node.attr):
            obj = sem.to_tensor(raw)  # `acc = 0; acc.to(tl.int64)`: a number is a scalar tensor here
        try:
            v = getattr(obj, node.attr)
        except AttributeError:
            mod = getattr(obj, "__name__", "") if isinstance(obj, _pytypes.ModuleType) else ""
            for root in ("compiler.language", "triton.language"):  # ours, or the Triton compatibility layer's
                if mod == root or mod.startswith(root + "."):
                    alias = "tl" + mod[len(root):]
                    raise SemanticError(f"{alias}.{node.attr} is not supported by this compiler") from None
            what = "a tensor" if isinstance(obj, tensor) else repr(obj)
            raise SemanticError(f"{what} has no attribute '{node.attr}'") from None
        if is_jit(v) and getattr(obj, "__tilefarm_aggregate__", False) and not isinstance(obj, type):
            return BoundJitMethod(v, obj)  # obj.method(...): the jit method with obj as self
        return v

    def visit_Tuple(self, node):
        return tuple(self.visit(e) for e in node.elts)

    def visit_List(self, node):
        return [self.visit(e) for e in node.elts]

    def visit_ListComp(self, node):
        """`[f(v) for v in xs if c]` over compile-time iterables (tuples of tensors, ranges, lists): unrolled
        while compiling, as Triton does; each `if` must be a compile-time condition."""
        out = []
        saved = dict(self.scope)

        def walk(gens):
            if not gens:
                out.append(self.visit(node.elt))
                return
            g = gens[0]
            if getattr(g, "is_async", 0):
                raise SemanticError("async comprehensions are not supported in a kernel")
            it = _unwrap(self.visit(g.iter))
            if isinstance(it, (lang.static_range, lang.range)):
                it = builtins.range(*(_unwrap(v) for v in (it.start, it.end, it.step)))
            if isinstance(it, tensor):
                raise SemanticError("a comprehension needs a compile-time iterable (a tuple, list or range), not a "
                                    "tensor")
            try:
                items = list(it)
            except TypeError:
                raise SemanticError(f"cannot iterate over {it!r} while compiling") from None
            for v in items:
                self._assign(g.target, v, as_constexpr=True)
                keep = True
                for cond in g.ifs:
                    c = _unwrap(self.visit(cond))
                    if isinstance(c, tensor):
                        raise SemanticError("a comprehension's 'if' must be a compile-time condition")
                    keep = keep and bool(c)
                if keep:
                    walk(gens[1:])

        try:
            walk(node.generators)
        finally:
            self.scope = saved
        return out

    def visit_GeneratorExp(self, node):
        return tuple(self.visit_ListComp(node))

    def visit_Slice(self, node):
        lo = self.visit(node.lower) if node.lower else None
        hi = self.visit(node.upper) if node.upper else None
        st = self.visit(node.step) if node.step else None
        return slice(lo, hi, st)

    def visit_Subscript(self, node):
        obj = _unwrap(self.visit(node.value))
        idx = self.visit(node.slice)
        if isinstance(obj, tensor):
            return sem.getitem(obj, idx)
        getitem = getattr(type(obj), "__getitem__", None) if getattr(obj, "__tilefarm_aggregate__", False) else None
        if is_jit(getitem):
            return self.call_jit(getitem, [obj, idx], {})
        idx = _unwrap(idx)
        if isinstance(idx, tensor):
            raise SemanticError("cannot index a Python sequence with a runtime value")
        return obj[idx]

    def visit_JoinedStr(self, node):
        parts = []
        for v in node.values:
            if isinstance(v, ast.Constant):
                parts.append(str(v.value))
            else:
                val = _unwrap(self.visit(v.value))
                if isinstance(val, tensor):
                    raise SemanticError("f-strings can only format constexprs")
                parts.append(format(val, self.visit(v.format_spec) if v.format_spec else ""))
        return "".join(parts)

    def visit_FormattedValue(self, node):
        return str(_unwrap(self.visit(node.value)))

    def visit_IfExp(self, node):
        cond = self.visit(node.test)
        if not isinstance(cond, tensor):
            return self.visit(node.body) if _unwrap(cond) else self.visit(node.orelse)
        return sem.where(cond, self.visit(node.body), self.visit(node.orelse))

    _BINOPS = {
        ast.Add: ("add", lambda a, b: a + b), ast.Sub: ("sub", lambda a, b: a - b),
        ast.Mult: ("mul", lambda a, b: a * b), ast.Div: ("truediv", lambda a, b: a / b),
        ast.FloorDiv: ("floordiv", lambda a, b: a // b), ast.Mod: ("mod", lambda a, b: a % b),
        ast.BitAnd: ("and_", lambda a, b: a & b), ast.BitOr: ("or_", lambda a, b: a | b),
        ast.BitXor: ("xor_", lambda a, b: a ^ b), ast.LShift: ("shl", lambda a, b: a << b),
        ast.RShift: ("shr", lambda a, b: a >> b), ast.Pow: (None, lambda a, b: a ** b),
    }

    @staticmethod
    def _materialize(a, b):
        """Unwrap two operands; an assigned number beside a tensor becomes a scalar tensor (Triton's promotion
        then treats it as a tensor, not as a Python scalar)."""
        na, nb = isinstance(a, lang.assigned_number), isinstance(b, lang.assigned_number)
        ra, rb = a, b
        a, b = _unwrap(a), _unwrap(b)
        if na and isinstance(b, tensor):
            a = sem.to_tensor(ra)  # of its scalar type (an assigned number arithmetic gave one keeps it)
        if nb and isinstance(a, tensor):
            b = sem.to_tensor(rb)
        return a, b

    def _binop(self, op, a, b):
        na, nb = isinstance(a, lang.assigned_number), isinstance(b, lang.assigned_number)
        ta = sem.scalar_dtype_of_python(a) if na else None
        tb = sem.scalar_dtype_of_python(b) if nb else None
        a, b = self._materialize(a, b)
        name, py = self._BINOPS.get(type(op), (None, None))
        if py is None:
            raise SemanticError(f"operator {type(op).__name__} is not supported")
        if not isinstance(a, tensor) and not isinstance(b, tensor):
            if (na or nb) and name is not None and sem.is_number(a) and sem.is_number(b):
                # an assigned number is a scalar tensor in Triton: the operation has its type's semantics (int32
                # // truncates, uint32 * wraps), folded here, the result still usable as a compile-time value
                got = sem.fold_numbers(name, a, ta, b, tb)
                if got is None:
                    return getattr(sem, name)(sem.to_tensor(a, ta), sem.to_tensor(b, tb))
                return lang.assigned_number(got[0], got[1])
            return py(a, b)
        if name is None:
            raise SemanticError("** is not supported on tensors; use tl.exp2/tl.log2 or multiply")
        return getattr(sem, name)(a, b)

    def visit_BinOp(self, node):
        return self._binop(node.op, self.visit(node.left), self.visit(node.right))

    def visit_UnaryOp(self, node):
        raw = self.visit(node.operand)
        if isinstance(raw, lang.assigned_number) and isinstance(node.op, (ast.USub, ast.Invert)) \
                and sem.is_number(raw.value) and not isinstance(raw.value, bool):
            got = sem.fold_unary("neg" if isinstance(node.op, ast.USub) else "invert", raw.value,
                                 sem.scalar_dtype_of_python(raw))
            if got is not None:
                return lang.assigned_number(got[0], got[1])
        v = _unwrap(raw)
        if isinstance(node.op, ast.Not) and isinstance(v, (tuple, list)):
            # Triton cannot evaluate `not` of a tuple while compiling either: refused at the `not`, a language
            # construct's error (no builtin's complaint as the cause)
            loc = self.src.loc(node)
            raise CompilationError(f"`not` of a {type(v).__name__} is not supported in a kernel (test its length "
                                   "with len(), or its elements one by one)", loc,
                                   where=self.src.where(loc)) from None
        if not isinstance(v, tensor):
            return {ast.USub: lambda x: -x, ast.UAdd: lambda x: +x, ast.Not: lambda x: not x,
                    ast.Invert: lambda x: ~x}[type(node.op)](v)
        if isinstance(node.op, ast.USub):
            return sem.neg(v)
        if isinstance(node.op, ast.UAdd):
            return v
        if isinstance(node.op, ast.Invert):
            return sem.invert(v)
        return sem.logical_not(v)

    _CMPS = {ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq", ast.NotEq: "ne"}

    def visit_Compare(self, node):
        left = self.visit(node.left)
        result = None
        for op, comp in zip(node.ops, node.comparators):
            right = self.visit(comp)
            if isinstance(op, (ast.Is, ast.IsNot)):
                a, b = _unwrap(left), _unwrap(right)
            else:
                a, b = self._materialize(left, right)
            if isinstance(op, (ast.Is, ast.IsNot)):
                # Decided while compiling, as in Triton: a tensor is never None, so `if Bias is not None:` on a
                # pointer argument keeps its branch exactly when the launch passed a pointer (None arguments
                # are specialized on).
                r = (a is b) if isinstance(op, ast.Is) else (a is not b)
            elif isinstance(op, (ast.In, ast.NotIn)):
                if isinstance(a, tensor) or isinstance(b, tensor):
                    raise SemanticError("'in' only works on constexprs")
                r = (a in b) if isinstance(op, ast.In) else (a not in b)
            elif not isinstance(a, tensor) and not isinstance(b, tensor):
                r = _PY_CMP[type(op)](a, b)
            else:
                r = sem.compare(self._CMPS[type(op)], a, b)
            result = r if result is None else self._and(result, r)
            left = right
        return result

    def _and(self, a, b):
        a, b = _unwrap(a), _unwrap(b)
        if not isinstance(a, tensor) and not isinstance(b, tensor):
            return a and b
        return sem.and_(self._truth(a), self._truth(b))

    def _truth(self, v):
        if isinstance(v, tensor):
            return v if v.dtype.is_bool() else sem.compare("ne", v, 0)
        return bool(v)

    def visit_BoolOp(self, node):
        is_and = isinstance(node.op, ast.And)
        result = _unwrap(self.visit(node.values[0]))
        for vnode in node.values[1:]:
            if not isinstance(result, tensor):
                # Python short-circuit on constexprs
                if is_and and not result:
                    return result
                if not is_and and result:
                    return result
                result = _unwrap(self.visit(vnode))
                continue
            v = _unwrap(self.visit(vnode))
            a, b = self._truth(result), self._truth(v)
            result = sem.and_(a, b) if is_and else sem.or_(a, b)
        return result

    def visit_Call(self, node):
        fn = _unwrap(self.visit(node.func))
        args = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                args.extend(_unwrap(self.visit(a.value)))
            else:
                args.append(self.visit(a))
        kwargs = {}
        for k in node.keywords:
            if k.arg is None:
                kwargs.update(_unwrap(self.visit(k.value)))
            else:
                kwargs[k.arg] = self.visit(k.value)
        return self.call_function(fn, args, kwargs)

    _PY_OK = {builtins.min, builtins.max, builtins.len, builtins.int, builtins.float, builtins.bool,
              builtins.isinstance, builtins.abs, builtins.tuple, builtins.list, builtins.str, builtins.getattr,
              builtins.hasattr, builtins.round, builtins.divmod, builtins.enumerate, builtins.zip, builtins.range}

    @staticmethod
    def tl_function(name):
        """The tile language's function `tl.<name>`, or None (tensor methods are these functions)."""
        from .. import language

        fn = getattr(language, name, None)
        return fn if callable(fn) else None

    def call_function(self, fn, args, kwargs):
        if is_jit(fn):
            return self.call_jit(fn, args, kwargs)
        if isinstance(fn, BoundJitMethod):
            return self.call_jit(fn.fn, [fn.obj] + list(args), kwargs)
        if getattr(fn, "__tilefarm_aggregate__", False) or getattr(fn, "__tilefarm_aggregate_fn__", False):
            # an aggregate's constructor or one of its plain methods: Python run while compiling, on the values
            # as they are (tensors included)
            return fn(*args, **kwargs)
        if is_builtin(fn):
            try:
                return fn(*args, **kwargs)
            except TypeError:
                try:  # a call the builtin's signature rejects (an unknown keyword...): say so, at the call
                    inspect.signature(fn).bind(*args, **kwargs)
                except TypeError as e:
                    raise SemanticError(f"tl.{fn.__name__}: {e} (not supported by this compiler)") from None
                raise
        if fn is builtins.print:  # as in Triton, print in a kernel is device_print (its first string: the prefix)
            first = _unwrap(args[0]) if args else ""
            if isinstance(first, str):
                return lang.device_print(first, *args[1:])
            return lang.device_print("", *args)
        if fn in (builtins.min, builtins.max) and any(isinstance(_unwrap(a), tensor) for a in args):
            op = lang.minimum if fn is builtins.min else lang.maximum
            bad = set(kwargs) - {"propagate_nan"}
            if bad:
                raise SemanticError(f"{fn.__name__}() on tensors takes only propagate_nan=, got {sorted(bad)}")
            if len(args) < 2:
                raise SemanticError(f"{fn.__name__}() on tensors needs at least two values")
            out = _unwrap(args[0])
            for a in args[1:]:
                out = op(out, a, **kwargs)
            return out
        if isinstance(fn, type) and issubclass(fn, (lang.static_range, lang.range)):
            return fn(*args, **kwargs)
        if fn in (builtins.isinstance, builtins.hasattr, builtins.getattr, builtins.type):
            # introspection is decided while compiling, tensors included (`isinstance(x, tl.tensor)`)
            return fn(*[_unwrap(a) for a in args], **{k: _unwrap(v) for k, v in kwargs.items()})
        if fn in self._PY_OK or getattr(fn, "__tilefarm_constexpr_fn__", False) or isinstance(fn, (T.dtype,
                                                                                                   type)):
            uargs = [_unwrap(a) for a in args]
            if any(isinstance(a, tensor) for a in uargs):
                raise SemanticError(f"{getattr(fn, '__name__', fn)}() cannot take a runtime tensor")
            if fn in (builtins.min, builtins.max):
                # Python's min/max and the GPU's differ on NaN and on -0.0 (Python keeps the first of equal
                # values): refused while compiling, as Triton does, so a constant means the same on both
                vals = uargs[0] if len(uargs) == 1 and isinstance(uargs[0], (tuple, list)) else uargs
                for v in vals:
                    if isinstance(v, float) and (v != v or (v == 0.0 and math.copysign(1.0, v) < 0)):
                        raise SemanticError(f"{fn.__name__}() of compile-time values with {v!r} is ambiguous (the "
                                            "GPU's and Python's answers differ): use tl.minimum/tl.maximum on "
                                            "tensors, or other values")
            if fn in (builtins.int, builtins.float, builtins.bool) or isinstance(fn, type):
                return fn(*uargs, **{k: _unwrap(v) for k, v in kwargs.items()})
            return fn(*uargs, **{k: _unwrap(v) for k, v in kwargs.items()})
        if callable(fn) and all(not isinstance(_unwrap(a), tensor) for a in list(args) + list(kwargs.values())):
            # Plain Python helpers (e.g. compiler.cdiv, next_power_of_2) on constexprs run at compile time.
            return fn(*[_unwrap(a) for a in args], **{k: _unwrap(v) for k, v in kwargs.items()})
        name = getattr(fn, "__name__", repr(fn))
        raise SemanticError(f"cannot call '{name}' inside a kernel: only @compiler.jit functions, tl builtins and "
                            "Python helpers on constexprs")

    def call_jit(self, jitfn, args, kwargs):
        if self.depth >= MAX_INLINE_DEPTH:
            raise SemanticError(f"jit calls nested more than {MAX_INLINE_DEPTH} deep (recursion is not supported)")
        fn = jitfn.fn
        sig = jitfn.signature
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as e:
            raise SemanticError(f"bad call to {fn.__name__}: {e}") from None
        bound.apply_defaults()
        scope = {}
        for name, v in bound.arguments.items():
            if name in jitfn.constexpr_names and isinstance(_unwrap(v), tensor):
                raise SemanticError(f"argument '{name}' of {fn.__name__} is a tl.constexpr but got a runtime value")
            if name in jitfn.constexpr_names or not isinstance(v, lang.assigned_number):
                v = _unwrap(v)
            scope[name] = v
        src = get_source(fn)
        gen = CodeGenerator(src, self.builder, scope, self.depth + 1, self.root)
        gen.elementwise = self.elementwise
        prev = context.push(gen)
        try:
            gen.visit_stmts(src.fdef.body)
        except CompilationError as e:  # seen from this call site too, the callee's error as its cause
            call = self.builder.loc
            err = e.called_from(call, self.src.where(call))
            raise err from err.__cause__
        finally:
            context.pop(prev)
        return gen.return_value


def _descriptor_args(pname, p):
    """The kernel parameters a host-side TensorDescriptor argument stands for, as (name, type, attrs): the CUDA
    tensor map's address (int64; 0 in the interpreter), the base pointer, the shape (int32) and the strides but
    the last (int64; the last is 1)."""
    _, dt, aligned, block, _pad, strides16 = p[:6]
    args = [(f"{pname}_tmap", TensorType(T.int64), {}),
            (f"{pname}_base", TensorType(T.pointer_type(dt)), {"divisibility": 16} if aligned else {})]
    args += [(f"{pname}_shape{i}", TensorType(T.int32), {}) for i in range(len(block))]
    args += [(f"{pname}_stride{i}", TensorType(T.int64), {"divisibility": 16} if d16 else {})
             for i, d16 in enumerate(strides16)]
    return args


def _descriptor_value(p, vals):
    from ..language.core import tensor_descriptor

    _, dt, aligned, block, pad, strides16, tma, contract, inner16 = p
    r = len(block)
    desc = tensor_descriptor(vals[1], vals[2:2 + r], vals[2 + r:] + [1], list(block), pad)
    desc.tmap = vals[0] if tma else None  # the loads of a TMA-able descriptor may be served by TMA
    desc.contract = contract  # rows 16-byte aligned: only where the launch saw it (jit._desc_handler)
    desc.whole_units = inner16  # the inner extent in whole 16-byte units, which TMA stores clip at
    return desc


def _tuple_leaves(pname, p):
    """(name, type, attrs) of the runtime leaves of a tuple parameter ("tuple", type, element params)."""
    out = []
    for i, sub in enumerate(p[2]):
        if sub[0] == "tuple":
            out += _tuple_leaves(f"{pname}_{i}", sub)
        elif sub[0] == "arg":
            out.append((f"{pname}_{i}", sub[1], sub[2]))
    return out


def _tuple_value(p, args):
    """The tuple (or namedtuple) a tuple parameter is inside the kernel, its runtime leaves taken from `args`."""
    items = []
    for sub in p[2]:
        if sub[0] == "tuple":
            items.append(_tuple_value(sub, args))
        elif sub[0] == "arg":
            a = next(args)
            items.append(tensor(a, a.type))
        else:
            items.append(constexpr(sub[1]))  # a constexpr, or an int specialized (== 1): constexpr_type(v)
    cls = p[1]
    return cls(*items) if cls is not tuple and hasattr(cls, "_fields") else tuple(items)


def lower(jitfn, params: list, constants: dict, name: str | None = None) -> Module:
    """Build the kernel's IR.

    params: for each kernel parameter in order, either ("const", value) — constexprs and specialized constants
    — or ("arg", TensorType, attrs) — a runtime argument.
    """
    fn = jitfn.fn
    src = get_source(fn)
    for pname in jitfn.arg_names:  # Triton's check: a constexpr is always specialized
        if pname in jitfn.constexpr_names and pname in getattr(jitfn, "do_not_specialize", ()):
            loc = src.loc(src.fdef)
            raise CompilationError(f"{pname} marked as constexpr and listed in do_not_specialize", loc,
                                   where=src.where(loc))
    arg_names, arg_types, arg_attrs = [], [], {}
    for pname, p in zip(jitfn.arg_names, params):
        if p[0] in ("desc", "tuple"):
            for aname, aty, attrs in (_descriptor_args if p[0] == "desc" else _tuple_leaves)(pname, p):
                if attrs:
                    arg_attrs[len(arg_names)] = attrs
                arg_names.append(aname)
                arg_types.append(aty)
        elif p[0] == "arg":
            if p[2]:
                arg_attrs[len(arg_names)] = dict(p[2])
            arg_names.append(pname)
            arg_types.append(p[1])
    for aname, aty in zip(arg_names, arg_types):
        bad = T.unsupported_element(aty)
        if bad is not None:
            loc = src.loc(src.fdef)
            raise CompilationError(f"argument {aname}: {T.unsupported_message(bad)}", loc, where=src.where(loc))
    func = Function(name or fn.__name__, arg_names, arg_types, loc=src.loc(src.fdef))
    func.arg_attrs = arg_attrs
    builder = Builder(func.body)
    scope = {}
    ai = 0
    for pname, p in zip(jitfn.arg_names, params):
        if p[0] == "desc":
            n = len(_descriptor_args(pname, p))
            scope[pname] = _descriptor_value(p, [tensor(a, a.type) for a in func.args[ai:ai + n]])
            ai += n
        elif p[0] == "tuple":
            n = len(_tuple_leaves(pname, p))
            scope[pname] = _tuple_value(p, iter(func.args[ai:ai + n]))
            ai += n
        elif p[0] == "arg":
            a = func.args[ai]
            scope[pname] = tensor(a, a.type)
            ai += 1
        else:
            scope[pname] = constexpr(p[1])  # constexprs and specialized ints: `N.type` is constexpr_type(N)
    gen = CodeGenerator(src, builder, scope)
    prev = context.push(gen)
    try:
        gen.visit_stmts(src.fdef.body)
        if gen.return_value is not None:
            raise CompilationError("a kernel cannot return a value (store results through pointers)",
                                   src.loc(src.fdef))
        builder.set_insertion_block(func.body)
        builder.loc = src.loc(src.fdef)
        builder.ret()
    finally:
        context.pop(prev)
    return Module(func, meta={"static_prints": gen.static_prints})
