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


# ---------------------------------------------------------------- the farm's structure


def _farm_graph(module_level_only):
    g = {}
    for name, path in FARM.items():
        g[name] = {}
        for mod, line, top in _imports(name, path, FARM):
            if mod in FARM and mod != name and (top or not module_level_only):
                g[name].setdefault(mod, line)
    return g


@pytest.mark.parametrize("module_level_only", [True, False], ids=["module-level", "with-function-level"])
def test_no_import_cycles_in_farm(module_level_only):
    g = _farm_graph(module_level_only)
    cycles = _cycles(g)
    assert not cycles, "import cycles:\n" + "\n\n".join(
        "\n".join(f"  {FARM[a][len(ROOT) + 1:]}:{line} imports {b}" for a in c for b, line in g[a].items() if b in c)
        for c in cycles)


def _private(name):
    return name.startswith("_") and not name.startswith("__")


def private_uses(name, path, modules):
    """["file:line: what"] for each private name of another farm module that `path` reaches: `from farm.x import
    _y`, or `x._y` where x names a farm module (imported as a module, or `from farm import x`)."""
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    rel = os.path.relpath(path, ROOT)
    out, aliases = [], {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level and _under(node.module, "farm"):
            for a in node.names:
                sub = f"{node.module}.{a.name}"
                if sub in modules:
                    aliases[a.asname or a.name] = sub
                elif _private(a.name) and node.module != name:
                    out.append(f"{rel}:{node.lineno}: from {node.module} import {a.name}")
        elif isinstance(node, ast.Import):
            for a in node.names:
                if _under(a.name, "farm") and a.asname:
                    aliases[a.asname] = a.name
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases \
                and _private(node.attr) and aliases[node.value.id] != name:
            out.append(f"{rel}:{node.lineno}: {node.value.id}.{node.attr} ({aliases[node.value.id]})")
    return out


def test_no_farm_module_uses_another_ones_private_names():
    bad = [u for name, path in FARM.items() for u in private_uses(name, path, FARM)]
    assert not bad, "a farm module reaching into another's private names (give it a public one):\n" + "\n".join(bad)


def test_the_private_name_check_finds_both_forms(tmp_path):
    p = tmp_path / "m.py"
    p.write_text("from farm.inputs import _frozen, host_arrays\nfrom farm import worker as W\n"
                 "import farm.loader as L\nW._to_device(1)\nL._user_frame(2)\nW.run_job\n")
    got = private_uses("farm.m", str(p), FARM)
    assert [g.split(": ", 1)[1] for g in got] == [
        "from farm.inputs import _frozen", "W._to_device (farm.worker)", "L._user_frame (farm.loader)"]


def test_only_the_executors_run_the_worker():
    """farm.worker is the worker process's job flow: executors call it; everything else uses the parts it is made
    of (loader, inputs, validate, timing, compiling, machine). The A/B server is the one other caller: it drives
    trees from before the split, whose farm.worker was everything."""
    bad = _offenders(FARM, lambda n: _under(n, "farm.executor", "farm.worker", "farm.ab_server"),
                     lambda m: m == "farm.worker")
    assert not bad, "\n".join(bad)


def _defs(modules, names):
    out = {}
    for mod, path in modules.items():
        with open(path) as f:
            tree = ast.parse(f.read(), path)
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name in names:
                out.setdefault(node.name, []).append(mod)
    return out


def test_version_and_gpu_kind_are_the_compilers():
    """compiler_version, normalize_kind and gpu_kind are defined once in the compiler; the farm has only
    farm.machine's thin wrappers (no GPU when the farm may not use one, "none" when the compiler is missing)."""
    names = {"compiler_version", "normalize_kind", "gpu_kind"}
    assert _defs(COMPILER, names) == {n: ["compiler.autotune"] for n in names}
    assert _defs(FARM, names) == {n: ["farm.machine"] for n in names}
    with open(FARM["farm.machine"]) as f:
        tree = ast.parse(f.read())
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name in names:
            imported = {a.name for n in ast.walk(node) if isinstance(n, ast.ImportFrom) and n.module == "compiler.autotune"
                        for a in n.names}
            assert node.name in imported, f"farm.machine.{node.name} does not call compiler.autotune's"


TIMING_FIELDS = {"warmup_ms", "rep_ms", "min_rep_ms", "max_rep_ms", "ab_rep_ms"}


def timing_literals(path):
    """["file:line: field = number"] for each timing default written as a number outside farm/timing.py: a
    keyword argument, a dict key, a class field (plain or `Field(number, ...)`), or `.get("field", number)`."""
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    rel, out = os.path.relpath(path, ROOT), []

    def num(n):
        return isinstance(n, ast.Constant) and type(n.value) in (int, float)

    def field_default(v):
        if num(v):
            return v
        if isinstance(v, ast.Call) and getattr(v.func, "id", None) == "Field" and v.args and num(v.args[0]):
            return v.args[0]
        return None

    for node in ast.walk(tree):
        hits = []
        if isinstance(node, ast.keyword) and node.arg in TIMING_FIELDS and num(node.value):
            hits.append((node.arg, node.value))
        elif isinstance(node, ast.Dict):
            hits += [(k.value, v) for k, v in zip(node.keys, node.values)
                     if isinstance(k, ast.Constant) and k.value in TIMING_FIELDS and num(v)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id in TIMING_FIELDS \
                and node.value is not None and field_default(node.value) is not None:
            hits.append((node.target.id, field_default(node.value)))
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "get" and len(node.args) == 2 \
                and isinstance(node.args[0], ast.Constant) and node.args[0].value in TIMING_FIELDS and num(node.args[1]):
            hits.append((node.args[0].value, node.args[1]))
        out += [(v.lineno, f"{rel}:{v.lineno}: {k} = {v.value}") for k, v in hits]
    return [text for _, text in sorted(out)]


def test_timing_defaults_live_in_farm_timing():
    bad = [h for name, path in FARM.items() if name != "farm.timing" for h in timing_literals(path)]
    assert not bad, "timing defaults outside farm/timing.py (make them a preset of farm.timing.Timing):\n" + \
        "\n".join(bad)


def test_the_timing_literal_check_finds_each_form(tmp_path):
    p = tmp_path / "m.py"
    p.write_text("class S:\n    warmup_ms: float = Field(10.0, gt=0)\n    rep_ms: float = 5\n"
                 "f(rep_ms=3)\nd = {'warmup_ms': 5}\nreq.get('warmup_ms', 10)\nf(rep_ms=x)\n")
    assert [h.split(": ", 1)[1] for h in timing_literals(str(p))] == [
        "warmup_ms = 10.0", "rep_ms = 5", "rep_ms = 3", "warmup_ms = 5", "warmup_ms = 10"]
