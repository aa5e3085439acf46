"""The workload registry: every bundled workload, and workloads declared in a user's own kernel file.

A bundled workload lives in `workloads/<name>/workload.py` and exposes `WORKLOAD` (a `workloads.base.Workload`).
A user's file exposes `WORKLOAD` or `WORKLOADS` (a list) the same way; `load_file` imports it by path.
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


def load_file(path) -> list[Workload]:
    """The workloads a user's kernel file declares (module-level `WORKLOAD` or `WORKLOADS`); cached per path."""
    path = pathlib.Path(path).resolve()
    if path in _FILES:
        return _FILES[path]
    if not path.is_file():
        raise FileNotFoundError(f"no such kernel file: {path}")
    # A stable module name per path, so two files with the same basename do not collide.
    name = f"_tilefarm_user_{path.stem}_{hashlib.sha1(str(path).encode()).hexdigest()[:8]}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look modules up by name
    spec.loader.exec_module(module)
    wls = _declared(module, path)
    if not wls:
        raise ValueError(f"{path} declares no workload: define WORKLOAD = Workload(...) or WORKLOADS = [...]")
    for wl in wls:
        if not wl.source_file:
            wl.source_file = str(path)
    _FILES[path] = wls
    return wls


def _declared(module, path) -> list[Workload]:
    wls = list(getattr(module, "WORKLOADS", []) or [])
    if getattr(module, "WORKLOAD", None) is not None:
        wls.insert(0, module.WORKLOAD)
    for wl in wls:
        if not isinstance(wl, Workload):
            raise TypeError(f"{path}: WORKLOAD(S) must hold workloads.base.Workload objects, got {type(wl).__name__}")
    return wls
