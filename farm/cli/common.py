"""What every command shares: the consoles, exit codes and error handling, the store option.

Exit codes (documented in `farm --help` and the README, as pytest documents its own):
  0  every job succeeded (`farm gate`: no regression)
  1  the work ran and some jobs failed (`farm gate`: a regression)
  2  usage or config error: bad option, bad config, unknown run, unusable store; nothing was run or written
  130  interrupted (Ctrl-C): results so far are kept, the resume command is printed
"""
from __future__ import annotations

import functools
import os
import sys
import time
from typing import Annotated

import typer

from farm import FarmError

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
EXIT_CODES_HELP = ("Exit codes: 0 every job succeeded; 1 some jobs failed; 2 usage or config error (nothing "
                   "run); 130 interrupted (Ctrl-C; results kept, resume with `farm run --resume RUN`).")
_NO_LIMIT = 100_000  # columns when the output is not a terminal: a log keeps every value whole


@functools.lru_cache(maxsize=None)
def _console_class():
    from rich.console import Console, ConsoleDimensions

    class _Console(Console):
        """A rich console as wide as its terminal, and without a width limit when the output is a pipe or a file
        (rich would use 80 columns and cut table cells; a CI log must hold every value). COLUMNS still wins."""

        @property
        def size(self) -> ConsoleDimensions:
            if not self.is_terminal and "COLUMNS" not in os.environ and self._width is None:
                return ConsoleDimensions(_NO_LIMIT, 25)
            return Console.size.fget(self)

        @size.setter
        def size(self, new_size):
            Console.size.fset(self, new_size)

    return _Console


class _LazyConsole:
    """A rich console made on its first use: importing the commands (what `farm --help` does) loads no rich
    console. Attribute access goes to the console; `.real` is the console itself, for rich objects that take one."""

    def __init__(self, **kwargs):
        self._kwargs = kwargs
        self._console = None

    @property
    def real(self):
        if self._console is None:
            self._console = _console_class()(**self._kwargs)
        return self._console

    def __getattr__(self, name):
        if name.startswith("__") or name in ("_kwargs", "_console"):  # before __init__ ran (copy, pickle)
            raise AttributeError(name)
        return getattr(self.real, name)


console = _LazyConsole(highlight=False)
err_console = _LazyConsole(stderr=True, highlight=False)

DEFAULT_STORE = os.environ.get("FARM_STORE", ".tilefarm/farm.db")
StoreOpt = Annotated[str, typer.Option("--store", "-s", help="Results store: a SQLite file, or a postgresql://user@host/db URL "
                                                                "(env FARM_STORE).",
                                       show_default=True)]
FormatOpt = Annotated[str, typer.Option("--format", "-f", help="table (for people), json or csv (data only on "
                                                                "stdout; messages go to stderr).")]


def escape(text: str) -> str:
    """rich.markup.escape, imported on first use (rich's markup module is ~25 ms of a CLI call's start)."""
    from rich.markup import escape as _escape
    return _escape(text)


def human(fmt: str) -> _LazyConsole:
    """Where messages for people go: stdout for a table, stderr when stdout carries data (json, csv, ...)."""
    return console if fmt == "table" else err_console


def messages_to_stderr(fmt: str):
    """While the work runs, anything printed to stdout (Ray prints its workers' error messages there, from a
    thread; a workload may print) goes to stderr when stdout carries data; the data is printed after."""
    import contextlib
    import sys
    return contextlib.nullcontext() if fmt == "table" else contextlib.redirect_stdout(sys.stderr)


def check_format(fmt: str, allowed=("table", "json", "csv")) -> None:
    if fmt not in allowed:
        raise FarmError(f"--format must be {', '.join(allowed[:-1])} or {allowed[-1]}, not {fmt!r}")


def print_json(data) -> None:
    """JSON on stdout, nothing else (a pipe into `python -m json.tool` or `jq` must work)."""
    import json

    from farm.report import strict
    print(json.dumps(strict(data), indent=2, default=str, allow_nan=False))


def print_csv(rows: list[dict], columns: list[str]) -> None:
    import csv
    import sys
    w = csv.DictWriter(sys.stdout, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow(r)


class _NotLoaded(Exception):
    """Stands for farm.config.ConfigError while farm.config (pydantic) is not imported: nothing can raise it."""


def _config_error():
    """farm.config's ConfigError once something imported it, else a class nothing raises (evaluated when an
    exception reaches `handle_errors`, so `farm --help` and the commands that read no config never load pydantic)."""
    cfg = sys.modules.get("farm.config")
    return cfg.ConfigError if cfg is not None else _NotLoaded


def handle_errors(fn):
    """Config errors list each field and usage/domain errors print one red line, both exit 2; Ctrl-C exits 130."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except _config_error() as e:
            where = f" in {e.source}" if e.source else ""
            n = len(e.lines)
            err_console.print(f"[bold red]config error{where}[/]" + (f" ({n} problems)" if n > 1 else ""))
            for line in e.lines:
                err_console.print(f"  {line}", markup=False, soft_wrap=True)
            raise typer.Exit(EXIT_USAGE)
        except FarmError as e:
            err_console.print("[bold red]error:[/] ", end="")
            err_console.print(str(e), soft_wrap=True, markup=False)
            raise typer.Exit(EXIT_USAGE)
        except KeyboardInterrupt:
            err_console.print("[yellow]interrupted[/]")
            raise typer.Exit(EXIT_INTERRUPTED)
        finally:
            while _opened:  # closed here, so SQLite removes its -wal/-shm files whatever the outcome
                _opened.pop().close()
    return wrapper


_opened: list = []


def open_store(path: str, must_exist: bool = True, write: bool = False):
    """The store at `path`; FarmError (exit 2) when it is missing (`must_exist`), corrupt, or not writable."""
    if must_exist and "://" not in str(path) and not os.path.exists(path):
        raise FarmError(f"no results store at {path} (run `farm run CONFIG` first, or pass --store)")
    from farm.store import Store  # SQLAlchemy: ~200 ms of import, paid only when there is a store to open
    st = Store(path, write=write)
    _opened.append(st)
    return st


class ProgressLines:
    """Without a terminal (a pipe, a CI log) a line now and then instead of a live bar, as pip and pytest do:
    jobs done / total, failures, rate, time left. Every FARM_PROGRESS_S seconds (default 30; 0: every job)."""

    def __init__(self, total: int, out: Console):
        self.total, self.out = total, out
        self.every = float(os.environ.get("FARM_PROGRESS_S", "30"))
        self.t0 = self.last = time.monotonic()

    def update(self, done: int, failed: int, final: bool = False) -> None:
        now = time.monotonic()
        if not final and now - self.last < self.every:
            return
        self.last = now
        el = now - self.t0
        rate = done / el if el > 0 else 0.0
        left = (self.total - done) / rate if rate > 0 else None
        self.out.print(f"jobs {done}/{self.total}, {failed} failed, {rate:.2f} jobs/s, {el:.0f} s elapsed"
                       + (f", ~{left:.0f} s left" if left is not None and done < self.total else ""),
                       markup=False, soft_wrap=True)
