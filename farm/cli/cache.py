"""`farm cache`: the compiled-kernel cache on this machine (`info`, `trim`, `clear`)."""
from __future__ import annotations

from typing import Annotated, Optional

import typer

from farm.cli.common import FormatOpt, check_format, handle_errors, human, print_json

app = typer.Typer(name="cache", help="The compiled-kernel disk cache of this machine (TILEFARM_CACHE_DIR, default "
                                     "~/.cache/tilefarm; bounded by TILEFARM_CACHE_MAX_SIZE, default 4G): "
                                     "`info`, `trim`, `clear`.",
                  no_args_is_help=True)

DirOpt = Annotated[Optional[str], typer.Option("--dir", help="The cache folder (default: TILEFARM_CACHE_DIR, "
                                                             "else ~/.cache/tilefarm).")]


def _open(path: str | None):
    from compiler.runtime.cache import KernelCache, UnsafeCacheDir
    from farm import FarmError
    try:
        return KernelCache(path)
    except UnsafeCacheDir as e:
        raise FarmError(str(e)) from None
    except OSError as e:
        raise FarmError(f"cannot open the cache folder {path or 'TILEFARM_CACHE_DIR'}: {e.strerror or e}") from None


def _mib(n: int | None) -> str:
    return "unbounded" if n is None else f"{n / (1 << 20):,.1f} MiB"


@app.command("info")
@handle_errors
def info(dir: DirOpt = None, fmt: FormatOpt = "table"):
    """Where the cache is, how many kernels and bytes it holds, and its bound."""
    check_format(fmt, ("table", "json"))
    cache = _open(dir)
    found = cache.entries()
    used = [t for t, _, _ in found]
    data = {"dir": cache.dir, "entries": len(found), "bytes": sum(s for _, s, _ in found),
            "max_bytes": cache.max_bytes, "oldest_use": min(used) if used else None,
            "newest_use": max(used) if used else None}
    if fmt == "json":
        return print_json(data)
    say = human(fmt)
    say.print(f"{cache.dir}: {data['entries']} kernel(s), {_mib(data['bytes'])} of {_mib(cache.max_bytes)}",
              markup=False, soft_wrap=True)


@app.command("trim")
@handle_errors
def trim(
    max_size: Annotated[Optional[str], typer.Option("--max-size", help="Trim to this size instead of the bound "
                                                                       "(4G, 500M, bytes).")] = None,
    dir: DirOpt = None,
    fmt: FormatOpt = "table",
):
    """Remove the least recently used kernels until the cache is under 3/4 of its bound (or of --max-size), if it
    is over it. Compiles do this by themselves; this is for doing it now."""
    from compiler.runtime.cache import parse_size
    from farm import FarmError
    check_format(fmt, ("table", "json"))
    try:
        limit = None if max_size is None else parse_size(max_size)
    except ValueError as e:
        raise FarmError(f"--max-size: {e}") from None
    cache = _open(dir)
    _report(cache, cache.trim(limit), fmt)


@app.command("clear")
@handle_errors
def clear(dir: DirOpt = None, fmt: FormatOpt = "table"):
    """Remove every compiled kernel from the cache (the next compile of each starts from its source)."""
    check_format(fmt, ("table", "json"))
    cache = _open(dir)
    _report(cache, cache.trim(0), fmt)


def _report(cache, rep, fmt: str) -> None:
    from farm import FarmError
    if not rep.ran:
        raise FarmError(f"another process is trimming {cache.dir} now; try again when it is done")
    data = {"dir": cache.dir, "entries": rep.entries, "bytes": rep.bytes, "removed_entries": rep.removed_entries,
            "removed_bytes": rep.removed_bytes, "kept_bytes": rep.kept_bytes}
    if fmt == "json":
        return print_json(data)
    human(fmt).print(f"{cache.dir}: removed {rep.removed_entries} of {rep.entries} kernel(s) "
                     f"({_mib(rep.removed_bytes)}); {_mib(rep.kept_bytes)} kept", markup=False, soft_wrap=True)
