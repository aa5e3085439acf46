"""The workload registry: every bundled workload, and workloads declared in a user's own kernel file.

A bundled workload lives in `workloads/<name>/workload.py` and exposes `WORKLOAD` (a `workloads.base.Workload`).
A user's file exposes `WORKLOAD` or `WORKLOADS` (a list) the same way; `load_file` imports it by path (a file
written with `import triton` included: see load_file). A corpus file (workloads/corpus) declares `CASES`: each
case whose outputs need no zeroing is a workload.
"""
from __future__ import annotations

import hashlib
import importlib
import importlib.util
import pathlib
import sys

from workloads.base import Workload

_HERE = pathlib.Path(__file__).resolve().parent
_REGISTRY: dict | None = None
_FILES: dict = {}


def registry() -> dict[str, Workload]:
    """Name -> Workload for every `workloads/*/workload.py` (imported once per process, sorted by name)."""
    global _REGISTRY
    if _REGISTRY is None:
        found = {}
        for path in sorted(_HERE.glob("*/workload.py")):
            module = importlib.import_module(f"workloads.{path.parent.name}.workload")
            for wl in _declared(module, path):
                if not wl.source_file:
                    wl.source_file = str(path)
                found[wl.name] = wl
        _REGISTRY = dict(sorted(found.items()))
    return _REGISTRY


def load_file(path, compiler: str = "tilefarm") -> list[Workload]:
    """The workloads a user's kernel file declares (module-level `WORKLOAD` or `WORKLOADS`, or a corpus file's
    `CASES`); cached per (path, compiler).

    The file is imported through compiler.triton_compat.load_kernel_file, so one written as Triton users write it
    (`import triton`, `import triton.language as tl`) loads unchanged: under compiler="tilefarm" `triton` means
    this project's compiler inside that file only, under compiler="triton" the real Triton. A file written with
    `import compiler` loads the same way under either (its kernels are this project's)."""
    from compiler.triton_compat import load_kernel_file

    path = pathlib.Path(path).resolve()
    if (path, compiler) in _FILES:
        return _FILES[(path, compiler)]
    if not path.is_file():
        raise FileNotFoundError(f"no such kernel file: {path}")
    # A stable module name per path (and compiler), so two files with the same basename do not collide.
    name = f"_tilefarm_user_{path.stem}_{hashlib.sha1(str(path).encode()).hexdigest()[:8]}"
    module = load_kernel_file(path, compiler=compiler,
                              module_name=name if compiler == "tilefarm" else f"{name}_{compiler}")
    wls = _declared(module, path)
    if not wls:
        raise ValueError(f"{path} declares no workload: define WORKLOAD = Workload(...) or WORKLOADS = [...]")
    for wl in wls:
        if not wl.source_file:
            wl.source_file = str(path)
    _FILES[(path, compiler)] = wls
    return wls


def _declared(module, path) -> list[Workload]:
    wls = list(getattr(module, "WORKLOADS", []) or [])
    if getattr(module, "WORKLOAD", None) is not None:
        wls.insert(0, module.WORKLOAD)
    if not wls and getattr(module, "CASES", None):  # an idiom-corpus file (workloads/corpus): its cases
        wls = [w for c in module.CASES if hasattr(c, "as_workload") and (w := c.as_workload(str(path)))]
    for wl in wls:
        if not isinstance(wl, Workload):
            raise TypeError(f"{path}: WORKLOAD(S) must hold workloads.base.Workload objects, got {type(wl).__name__}")
    return wls
