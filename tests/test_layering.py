"""The layering, read from the imports (ast, no import runs): dependencies go downhill.

- No import cycle among compiler modules: neither through module-level imports nor through the imports inside
  functions (a lazy import is still a dependency).
- compiler/passes never imports compiler/codegen: analyses code generation needs live in passes/ and codegen
  reads them.
- compiler never imports farm, workloads, ray, typer or rich.
- In farm, only farm/executor/ray.py imports ray and only farm/cli/ imports typer.
- Code generation writes nothing into the IR (checked on every snapshot kernel by scripts/ptx_snapshot.py's
  IRGuard; the guard itself is tested here).
"""
from __future__ import annotations

import ast
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _modules(package):
    """{module name: path} of every .py file under ROOT/package."""
    out = {}
    for dirpath, dirnames, files in os.walk(os.path.join(ROOT, package)):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for f in sorted(files):
            if f.endswith(".py"):
                path = os.path.join(dirpath, f)
                name = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
                out[name[:-len(".__init__")] if name.endswith(".__init__") else name] = path
    return out


def _imports(name, path, known):
    """[(imported module, line, module_level)] of one file. `from p import x` names p.x when that is a module
    of `known`, else p; relative imports are resolved against the file's package."""
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    package = name if path.endswith("__init__.py") else name.rpartition(".")[0]
    found = []

    def visit(nodes, top):
        for node in nodes:
            if isinstance(node, ast.Import):
                found.extend((a.name, node.lineno, top) for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[:len(parts) - node.level + 1] + ([node.module] if node.module else []))
                else:
                    base = node.module
                for a in node.names:
                    sub = f"{base}.{a.name}"
                    found.append((sub if sub in known else base, node.lineno, top))
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                visit(ast.iter_child_nodes(node), False)
            else:
                visit(ast.iter_child_nodes(node), top)

    visit(tree.body, True)
    return found


COMPILER = _modules("compiler")
FARM = _modules("farm")


def _graph(module_level_only):
    g = {}
    for name, path in COMPILER.items():
        g[name] = {}
        for mod, line, top in _imports(name, path, COMPILER):
            if mod in COMPILER and mod != name and (top or not module_level_only):
                g[name].setdefault(mod, line)
    return g


def _cycles(g):
    """The strongly connected components with more than one module (Tarjan), each as a sorted list."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in g[v]:
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            strong(v)
    return out


def _describe(g, comp):
    return "\n".join(f"  {COMPILER[a][len(ROOT) + 1:]}:{line} imports {b}" for a in comp for b, line in g[a].items()
                     if b in comp)


@pytest.mark.parametrize("module_level_only", [True, False], ids=["module-level", "with-function-level"])
def test_no_import_cycles_in_compiler(module_level_only):
    g = _graph(module_level_only)
    cycles = _cycles(g)
    assert not cycles, "import cycles:\n" + "\n\n".join(_describe(g, c) for c in cycles)


def test_the_cycle_check_finds_a_cycle():
    """The check itself: a two-module cycle and a self-contained chain."""
    assert _cycles({"a": {"b": 1}, "b": {"a": 2}, "c": {"a": 3}}) == [["a", "b"]]
    assert _cycles({"a": {"b": 1}, "b": {}, "c": {"a": 3}}) == []


def _offenders(modules, allowed, banned):
    bad = []
    for name, path in modules.items():
        if allowed(name):
            continue
        for mod, line, _ in _imports(name, path, modules):
            if banned(mod):
                bad.append(f"{os.path.relpath(path, ROOT)}:{line} imports {mod}")
    return bad


def _under(mod, *roots):
    return any(mod == r or mod.startswith(r + ".") for r in roots)


def test_passes_never_import_codegen():
    bad = _offenders(COMPILER, lambda n: not _under(n, "compiler.passes"), lambda m: _under(m, "compiler.codegen"))
    assert not bad, "passes importing codegen (move the analysis into passes/):\n" + "\n".join(bad)


def test_compiler_imports_no_farm_workloads_or_cli_libraries():
    bad = _offenders(COMPILER, lambda n: False, lambda m: _under(m, "farm", "workloads", "ray", "typer", "rich"))
    assert not bad, "\n".join(bad)


def test_farm_keeps_ray_and_typer_in_their_places():
    ray = _offenders(FARM, lambda n: n == "farm.executor.ray", lambda m: _under(m, "ray"))
    typer = _offenders(FARM, lambda n: _under(n, "farm.cli"), lambda m: _under(m, "typer"))
    assert not ray, "only farm/executor/ray.py imports ray:\n" + "\n".join(ray)
    assert not typer, "only farm/cli/ imports typer:\n" + "\n".join(typer)


# ---- code generation only reads the IR ----------------------------------------------------------------------------
# scripts/ptx_snapshot.py checks it on every snapshot kernel (its IRGuard fingerprints each module before and after
# emission, every op with all its attrs), so tests/codegen/test_ptx_snapshot.py fails when an emitter writes into
# the IR; the two tests below check the guard itself, in this process.


@pytest.fixture
def snapshot(monkeypatch):
    monkeypatch.syspath_prepend(os.path.join(ROOT, "scripts"))
    import compiler.compile as C

    import ptx_snapshot as P

    for k in P._code_env():
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("TILEFARM_CACHE", "0")
    monkeypatch.setattr(C, "_mem_cache", {})
    monkeypatch.setattr(C, "_disk", False)  # no disk cache either (the process may have opened one already)
    return P


def test_codegen_leaves_the_ir_as_the_passes_made_it(snapshot):
    """The kernels whose emission once recorded state in the IR (wgmma in flight, hoisted operands) and two
    simpler ones."""
    with snapshot.IRGuard() as guard:
        for only in ("attention/D64/128x64-w4-s3/sm_90a", "matmul/float16/128x128x64-g8-w8-s3/sm_90a",
                     "tests.codegen/loop/512-f32/sm_90", "tests.codegen/if_while/128/sm_90"):
            snapshot.compute(only=only, guard=guard)
    assert guard.calls >= 4
    assert guard.changes == []


def test_the_ir_guard_sees_an_emitter_write_into_the_ir(snapshot, monkeypatch):
    from compiler.codegen import common

    orig = common.EMIT["for"]

    def writes(e, op):
        op.attrs["_emitted"] = True
        return orig(e, op)
    monkeypatch.setitem(common.EMIT, "for", writes)
    with snapshot.IRGuard() as guard:
        snapshot.compute(only="tests.codegen/loop/512-f32/sm_90", guard=guard)
    assert guard.changes == [("tests.codegen/loop/512-f32/sm_90", "op 'for': attrs _emitted written")]
