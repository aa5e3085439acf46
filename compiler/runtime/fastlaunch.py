"""The C launch call (`_fastlaunch.c`), built on first use with the system C compiler and cached on disk.

`get()` returns the module's `launch(function, gx, gy, gz, block_x, shared_bytes, stream, params_address)`, or
None when it cannot be built here (no compiler or no Python headers): the launch path then calls cuda.bindings.
`plan_type()` returns its `Plan` type (pack the arguments and launch in one C call; see `_fastlaunch.c` and
`Launcher.entry`), or None likewise. `KIND_CODES` maps a parameter kind to the plan's code for it.
`loaded()` is the module once some launch loaded it (never builds): the jit's generated launchers take its
`Dispatcher` from there.
Set TILEFARM_FASTLAUNCH=0 to turn it off.
"""
from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading

_HERE = os.path.dirname(os.path.abspath(__file__))
_SRC = os.path.join(_HERE, "_fastlaunch.c")
_lock = threading.Lock()
_state: dict = {}

# Parameter kind -> the Plan's packing code (the enum in _fastlaunch.c). 0 = a value the kernel does not take.
SKIP = 0
KIND_CODES: dict[str, int] = {
    "ptr": 1,
    "int64": 2, "uint64": 3, "int32": 4, "uint32": 5, "int16": 6, "uint16": 7, "int8": 8, "uint8": 9,
    "int1": 10, "bool": 10, "i1": 10,
    "float32": 11, "fp32": 11, "float64": 12, "fp64": 12, "float16": 13, "fp16": 13,
    "bfloat16": 14,
}


def _cache_dir() -> str:
    from .cache import private_dir
    base = os.environ.get("TILEFARM_LAUNCHER_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "tilefarm", "launcher")
    return private_dir(base)  # 0700, refused when another user could write it: a planted .so would run here


def _target_path() -> str:
    with open(_SRC, "rb") as f:
        src = f.read()
    tag = hashlib.sha256(src + sys.version.encode() + sysconfig.get_platform().encode()).hexdigest()[:16]
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    return os.path.join(_cache_dir(), f"_tilefarm_fastlaunch-{tag}{suffix}")


def build() -> str:
    """Compile the extension (if not cached) and return its path; raises RuntimeError when it cannot."""
    path = _target_path()
    if os.path.exists(path):
        return path
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    include = sysconfig.get_paths().get("include")
    if not cc or not include or not os.path.exists(os.path.join(include, "Python.h")):
        raise RuntimeError("no C compiler or Python headers for the fast launcher")
    fd, tmp = tempfile.mkstemp(suffix=".so", dir=os.path.dirname(path))
    os.close(fd)
    try:
        p = subprocess.run([cc, "-O2", "-shared", "-fPIC", f"-I{include}", _SRC, "-o", tmp, "-ldl"],
                           capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(f"building the fast launcher failed: {p.stderr[-2000:]}")
        os.replace(tmp, path)  # atomic: concurrent builders both succeed
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def preload() -> None:
    """Load the launcher if it was already built on this machine (never compiles): `import compiler` calls
    this so a process whose kernels come from the disk cache pays no dlopen on its first launch."""
    if "fn" in _state or os.environ.get("TILEFARM_FASTLAUNCH", "1") in ("0", "off", "false"):
        return
    try:
        if os.path.exists(_target_path()):
            get()
    except Exception:
        pass


def get():
    """The C `launch` function, or None when unavailable (built once per machine and Python version)."""
    if "fn" in _state:
        return _state["fn"]
    with _lock:
        if "fn" in _state:
            return _state["fn"]
        fn = None
        if os.environ.get("TILEFARM_FASTLAUNCH", "1") not in ("0", "off", "false"):
            try:
                path = build()
                # Loaded only from a folder and file private to this user (an UnsafeCacheDir otherwise: the
                # launch path then calls cuda.bindings, and `_state["error"]` says why).
                from .cache import check_private_file
                check_private_file(path)
                spec = importlib.util.spec_from_file_location("_tilefarm_fastlaunch", path)
                mod = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(mod)
                fn = mod.launch
                _state["plan"] = getattr(mod, "Plan", None)
                _state["mod"] = mod
            except Exception as e:  # no compiler/headers: cuda.bindings it is
                _state["error"] = f"{type(e).__name__}: {e}"
        _state["fn"] = fn
        return fn


def plan_type():
    """The C `Plan` type, or None when the extension is unavailable (see `get`)."""
    if get() is None:
        return None
    return _state.get("plan")


def loaded():
    """The extension module if it is already loaded in this process (by `get` or `preload`), else None."""
    return _state.get("mod")
