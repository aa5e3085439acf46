"""Workloads as the farm loads them: by registry name, kernel file or file::NAME, with errors that name the
user's file and line, and the source hash that goes into every job key."""
from __future__ import annotations

import functools
import hashlib
import inspect
import os
import pathlib


@functools.lru_cache(maxsize=None)
def load_workload(ref: str, compiler: str = "tilefarm"):
    """A Workload from a registry name, a path to a kernel file, or path::NAME (cached per process:
    `load_workload.cache_clear()` forgets them), its kernel file loaded for `compiler` (farm.compilers: a file
    written with `import triton` resolves it per compiler)."""
    import workloads
    from farm import FarmError
    path, _, name = ref.partition("::")
    if path.endswith(".py"):
        wls = load_file(path, compiler)
        if name:
            by_name = {w.name: w for w in wls}
            if name not in by_name:
                raise FarmError(f"{path} declares no workload named {name!r} (it has {', '.join(by_name)})")
            return by_name[name]
        if len(wls) > 1:
            raise FarmError(f"{path} declares {len(wls)} workloads ({', '.join(w.name for w in wls)}): "
                            f"pick one with {path}::NAME")
        return wls[0]
    reg = workloads.registry()
    if ref not in reg:
        raise FarmError(f"unknown workload {ref!r}; known: {', '.join(reg) or '(none)'} "
                        "(or give a path to your own kernel file)")
    return reg[ref]


def load_for_plan(ref: str):
    """The workload `ref` loaded against the real Triton in its interpreter, for planning only (its name, sweeps,
    counts and source): what the planner uses when a Triton-style file does not load under tilefarm (it uses a
    name the compatibility layer lacks at import), so that only its tilefarm jobs fail, each naming the name.
    Never cached where jobs look: workers load their own copy for their own mode. FarmError when it fails."""
    import workloads
    from compiler.triton_compat import load_kernel_file
    from farm import FarmError, compilers
    path, _, name = ref.partition("::")
    if not path.endswith(".py") or compilers.triton_version() is None:
        raise FarmError(f"{ref}: cannot be planned without tilefarm (Triton is not installed here)")
    saved = os.environ.get("TRITON_INTERPRET")
    os.environ["TRITON_INTERPRET"] = "1"  # decorated, never launched here
    try:
        stem = hashlib.sha256(os.path.abspath(path).encode()).hexdigest()[:10]
        module = load_kernel_file(path, compiler="triton", module_name=f"_tilefarm_plan_{stem}")
        wls = workloads._declared(module, path)
    except Exception as e:
        raise FarmError(describe_import_error(e, path)) from None
    finally:
        if saved is None:
            os.environ.pop("TRITON_INTERPRET", None)
        else:
            os.environ["TRITON_INTERPRET"] = saved
    by_name = {w.name: w for w in wls}
    wl = by_name.get(name) if name else (wls[0] if len(wls) == 1 else None)
    if wl is None:
        raise FarmError(f"{path}: no single workload {name!r} among {', '.join(by_name) or 'none'}")
    if not wl.source_file:
        wl.source_file = os.path.abspath(path)
    return wl


def load_file(path: str, compiler: str = "tilefarm"):
    """workloads.load_file, with any failure (no such file, a Python error while importing it or a kernel file it
    imports) as one FarmError naming the file and line where it happened, never a traceback into the farm."""
    import workloads
    from farm import FarmError
    if not str(path).endswith(".py"):
        raise FarmError(f"{path} is not a Python file: a kernel file is a .py that declares WORKLOAD or WORKLOADS")
    try:
        # (tilefarm: the one-argument call, which a tree's older `workloads` package also answers)
        return workloads.load_file(path) if compiler == "tilefarm" else workloads.load_file(path, compiler)
    except (FileNotFoundError, ValueError, TypeError) as e:
        if e.__traceback__ is not None and _user_frame(e) is None:
            raise FarmError(str(e)) from None  # raised by load_file itself: its message names the file
        raise FarmError(describe_import_error(e, path)) from None
    except RecursionError as e:
        raise FarmError(describe_import_error(e, path)) from None
    except Exception as e:
        raise FarmError(describe_import_error(e, path)) from None
    except SystemExit as e:
        raise FarmError(f"{path}: called exit({e.code}) while being imported") from None


def _user_frame(e: BaseException):
    """The innermost traceback frame in a file outside the farm, the standard library and installed packages."""
    import sys
    import traceback
    registry = str(pathlib.Path(__file__).resolve().parents[1] / "workloads" / "__init__.py")
    farm_dir = str(pathlib.Path(__file__).resolve().parent) + os.sep
    lib = tuple({sys.base_prefix, sys.prefix, sys.exec_prefix})
    frames = [f for f in traceback.extract_tb(e.__traceback__)
              if not f.filename.startswith(("<", farm_dir, *lib)) and f.filename != registry]
    return frames[-1] if frames else None


def describe_import_error(e: BaseException, path: str) -> str:
    """"file:line:col: SyntaxError: msg" with the line and a caret, or "file:line: Error: msg" and the line."""
    if isinstance(e, SyntaxError) and e.filename:
        where = f"{e.filename}:{e.lineno}" + (f":{e.offset}" if e.offset else "")
        text = (e.text or "").rstrip("\n")
        caret = ""
        if text and e.offset:
            stripped = text.lstrip()
            caret = "\n    " + " " * max(0, e.offset - 1 - (len(text) - len(stripped))) + "^"
            text = stripped
        return f"{where}: {type(e).__name__}: {e.msg}" + (f"\n    {text}{caret}" if text else "")
    if type(e).__name__ == "TritonCompatImportError":  # already file:line:col, the line and a caret
        return f"{e}\n  (while importing {path} with `triton` resolved to tilefarm's compatibility layer)"
    frame = _user_frame(e)
    msg = f"{type(e).__name__}: {e}"
    if frame is None:
        return f"{path}: error while importing it: {msg}"
    return f"{frame.filename}:{frame.lineno}: {msg} (while importing {path})" + (
        f"\n    {frame.line}" if frame.line else "")


def source_files(wl) -> list[str]:
    """The workload's file and its kernel's source file (what the job key hashes, what `farm repro` copies)."""
    files = [wl.source_file] if wl.source_file else []
    fn = getattr(wl.kernel, "fn", None) or getattr(wl.kernel, "__wrapped__", None) or wl.kernel
    try:
        f = inspect.getsourcefile(fn)
        if f and f not in files:
            files.append(f)
    except TypeError:
        pass
    return files


def source_hash(wl) -> str:
    """sha256 of the workload's file and the kernel's source file (the kernel and what the workload checks)."""
    h = hashlib.sha256()
    for f in sorted(set(source_files(wl))):
        h.update(pathlib.Path(f).read_bytes() if os.path.isfile(f) else f.encode())
    return h.hexdigest()
