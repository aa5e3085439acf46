"""Makes `triton` this project's compiler in the process that imports it (a test process of the external suite,
and, through scripts/extsuite/site/sitecustomize.py on PYTHONPATH, every Python process those tests start).

- `import triton`, `triton.language`, ... answer with compiler.triton_compat's modules, put in `sys.modules` of
  this process only, ahead of any installed Triton; a `triton.*` module the layer lacks is an ImportError naming
  it; `triton._internal_testing` is scripts/extsuite/internal_testing.py;
- exec() of a source string files the text with linecache under a name of its own (as IPython does for its
  cells), so a kernel defined by exec'd text has readable source.
TILEFARM_SUITE_COMPAT=0 leaves everything as it is.
"""
from __future__ import annotations

import builtins
import importlib.abc
import importlib.machinery
import itertools
import linecache
import os
import sys

_HINT = "tilefarm's Triton compatibility layer does not provide module"


class _NoModuleLoader(importlib.abc.Loader):
    def create_module(self, spec):
        raise ModuleNotFoundError(f"{_HINT} '{spec.name}'", name=spec.name)

    def exec_module(self, module):  # pragma: no cover - create_module always raises
        raise ModuleNotFoundError(f"{_HINT} '{module.__name__}'")


class _TritonFinder(importlib.abc.MetaPathFinder):
    """First on sys.meta_path: every `triton.*` module not already in sys.modules is one the layer lacks."""

    def find_spec(self, name, path=None, target=None):
        if name == "triton" or name.startswith("triton."):
            return importlib.machinery.ModuleSpec(name, _NoModuleLoader())
        return None


def install():
    """Put the compatibility modules in sys.modules under Triton's names (this process only)."""
    if sys.modules.get("triton") is not None and getattr(sys.modules["triton"], "__tilefarm__", False):
        return
    for name in [m for m in sys.modules if m == "triton" or m.startswith("triton.")]:
        del sys.modules[name]  # a real Triton imported before the plugin: ours from here on
    from compiler.triton_compat.modules import MAPPED, compat_module

    for name in MAPPED:
        mod = sys.modules[name] = compat_module(name)
        mod.__dict__.setdefault("__path__", [])  # a package: `import triton.x` asks the finder below for x
        if getattr(mod, "__spec__", None) is None:
            # importlib.util.find_spec("triton") raises on a module without one, and torch asks it while CUDA
            # initializes (whether Triton is installed): every GPU test would fail at its first tensor
            mod.__spec__ = importlib.machinery.ModuleSpec(name, None, is_package=True)
    from . import internal_testing

    from . import filecheck

    for name, mod in (("_internal_testing", internal_testing), ("_filecheck", filecheck)):
        sys.modules[f"triton.{name}"] = mod
        compat_module("triton").__dict__[name] = mod
    sys.meta_path.insert(0, _TritonFinder())


_real_exec = builtins.exec
_exec_count = itertools.count()


def _exec(source, globals=None, locals=None, /, **kw):
    """exec() that files a source string with linecache under a name of its own (as IPython does for its cells),
    so a function defined by exec'd text has readable source: test suites build kernel variants by exec'ing an
    edited copy of a kernel's text, and this compiler reads a kernel's source to compile it."""
    if globals is None:
        caller = sys._getframe(1)
        globals = caller.f_globals
        if locals is None:
            locals = caller.f_locals
    if isinstance(source, (str, bytes)):
        text = source.decode() if isinstance(source, bytes) else source
        fname = f"<exec-{next(_exec_count)}>"
        linecache.cache[fname] = (len(text), None, text.splitlines(keepends=True), fname)
        source = compile(text, fname, "exec", dont_inherit=True)
    return _real_exec(source, globals, locals, **kw)


if os.environ.get("TILEFARM_SUITE_COMPAT", "1") != "0":
    install()
    builtins.exec = _exec


