"""What every command shares: the console, error handling (exit 1 domain, 2 config), the store option."""
from __future__ import annotations

import functools
import os
import sys
from typing import Annotated

import typer
from rich.console import Console

from farm import FarmError

console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)

DEFAULT_STORE = os.environ.get("FARM_STORE", ".tilefarm/farm.db")
StoreOpt = Annotated[str, typer.Option("--store", "-s", help="SQLite results file (env FARM_STORE).",
                                       show_default=True)]


class _NotLoaded(Exception):
    """Stands for farm.config.ConfigError while farm.config (pydantic) is not imported: nothing can raise it."""


def _config_error():
    """farm.config's ConfigError once something imported it, else a class nothing raises (evaluated when an
    exception reaches `handle_errors`, so `farm --help` and the commands that read no config never load pydantic)."""
    cfg = sys.modules.get("farm.config")
    return cfg.ConfigError if cfg is not None else _NotLoaded


def handle_errors(fn):
    """Domain errors become one red line and exit 1; config errors list each field and exit 2."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except _config_error() as e:
            where = f" in {e.source}" if e.source else ""
            err_console.print(f"[bold red]config error{where}[/]")
            for line in e.lines:
                err_console.print(f"  {line}", markup=False)
            raise typer.Exit(2)
        except FarmError as e:
            err_console.print(f"[bold red]error:[/] {e}", soft_wrap=True)
            raise typer.Exit(1)
    return wrapper


def open_store(path: str, must_exist: bool = True):
    from farm.store import Store
    if must_exist and not os.path.exists(path):
        raise FarmError(f"no results store at {path} (run `farm run CONFIG` first, or pass --store)")
    return Store(path)
