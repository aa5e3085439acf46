"""`load_kernel_file`: import a user's kernel file with `triton` resolved for that file only.

Under compiler="tilefarm" the module gets a `__builtins__` of its own whose `__import__` answers `triton` and
`triton.*` with the compatibility modules (compiler.triton_compat.modules) and passes every other import to the
real `__import__`. Functions defined in the file keep those builtins, so an `import triton` inside one of them
resolves the same way. Nothing changes for any other module: `sys.modules["triton"]`, when a real Triton is
imported, stays the real one. Under compiler="triton" the file is imported as it is, against the real Triton.
"""
from __future__ import annotations

import builtins
import hashlib
import importlib.util
import os
import sys
import threading

from .modules import TritonCompatError, compat_module

COMPILERS = ("tilefarm", "triton")


class TritonCompatImportError(ImportError):
    """An `import triton...` / `from triton... import name` the compatibility layer cannot answer."""


def _where(frame) -> str:
    """file:line:col of the statement `frame` is executing, with the line and a caret under the column."""
    import linecache

    if frame is None:
        return ""
    code = frame.f_code
    line, col = frame.f_lineno, None
    try:
        pos = list(code.co_positions())[frame.f_lasti // 2]
        if pos[0] is not None:
            line, col = pos[0], pos[2]
    except (AttributeError, IndexError):
        pass
    head = f"{code.co_filename}:{line}:{(col or 0) + 1}: " if col is not None else f"{code.co_filename}:{line}: "
    text = linecache.getline(code.co_filename, line).rstrip("\n")
    tail = f"\n    {text}\n    {' ' * (col or 0)}^" if text else ""
    return head, tail


def _fail(msg: str, frame):
    where = _where(frame)
    if not where:
        return TritonCompatImportError(msg)
    head, tail = where
    return TritonCompatImportError(f"{head}{msg}{tail}")


def compat_import(real_import=None):
    """An `__import__` that answers `triton` / `triton.*` from the compatibility layer, everything else from
    `real_import` (default: the builtin one)."""
    real = real_import or builtins.__import__

    def __import__(name, globals=None, locals=None, fromlist=(), level=0):
        if level != 0 or not (name == "triton" or name.startswith("triton.")):
            return real(name, globals, locals, fromlist, level)
        frame = sys._getframe(1)
        try:
            mod = compat_module(name)
        except TritonCompatError as e:
            raise _fail(str(e), frame) from None
        if not fromlist:
            return compat_module("triton")
        for n in fromlist:
            if n == "*":
                continue
            try:
                compat_module(f"{name}.{n}")
                continue
            except TritonCompatError:
                pass
            try:
                getattr(mod, n)
            except TritonCompatError as e:
                raise _fail(str(e), frame) from None
        return mod

    __import__.__tilefarm_compat__ = True
    return __import__


_lock = threading.Lock()
_loaded: dict = {}


def _module_name(path: str, compiler: str) -> str:
    stem = os.path.splitext(os.path.basename(path))[0]
    stem = "".join(c if c.isalnum() or c == "_" else "_" for c in stem)
    digest = hashlib.sha256(path.encode()).hexdigest()[:10]
    return f"_tilefarm_kernels_{compiler}_{stem}_{digest}"


def load_kernel_file(path, compiler: str = "tilefarm", module_name: str | None = None):
    """Import the kernel file at `path` as a fresh module, with `triton` meaning our compiler (compiler="tilefarm",
    through the compatibility layer) or the real Triton (compiler="triton").

    The same file may be loaded under both in one process: the two modules are separate (each its own name in
    sys.modules, needed by inspect and pickling), and so are their kernels. Loading again an unchanged file under
    the same compiler returns the module loaded before.
    """
    if compiler not in COMPILERS:
        raise ValueError(f"load_kernel_file: compiler must be one of {', '.join(COMPILERS)}, got {compiler!r}")
    path = os.path.abspath(os.fspath(path))
    try:
        st = os.stat(path)
    except OSError as e:
        raise FileNotFoundError(f"kernel file {path}: {e.strerror}") from None
    if compiler == "triton":
        try:
            import triton  # noqa: F401
        except ImportError as e:
            raise ImportError(f"compiler='triton' needs Triton installed in this environment ({e})") from None
    name = module_name or _module_name(path, compiler)
    key = (path, compiler, name)
    stamp = (st.st_mtime_ns, st.st_size)
    with _lock:
        hit = _loaded.get(key)
        if hit is not None and hit[0] == stamp and sys.modules.get(name) is hit[1]:
            return hit[1]
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ImportError(f"kernel file {path}: not a Python source file")
        mod = importlib.util.module_from_spec(spec)
        if compiler == "tilefarm":
            b = dict(builtins.__dict__)
            b["__import__"] = compat_import(builtins.__import__)
            mod.__dict__["__builtins__"] = b
        sys.modules[name] = mod
        try:
            spec.loader.exec_module(mod)
        except BaseException:
            sys.modules.pop(name, None)
            raise
        _loaded[key] = (stamp, mod)
        return mod
