"""`farm store`: move a store's history between back ends (`farm store migrate SRC DST`)."""
from __future__ import annotations

from typing import Annotated

import typer

from farm.cli.common import FormatOpt, check_format, handle_errors, human, print_json

app = typer.Typer(name="store", help="Results stores: `farm store migrate SRC DST` copies a history into "
                                     "another store (a SQLite file into a fleet's PostgreSQL).",
                  no_args_is_help=True)


@app.command("migrate")
@handle_errors
def migrate(
    src: Annotated[str, typer.Argument(help="The store to copy from: a SQLite file (or a URL). Its history is left as it is.")],
    dst: Annotated[str, typer.Argument(help="The store to copy into: postgresql://user@host/db (or a file).")],
    append: Annotated[bool, typer.Option(help="Into a destination that already has runs: add the source's runs "
                                              "under new ids, skipping those migrated before.")] = False,
    fmt: FormatOpt = "table",
):
    """Copy every run, plan, result and tuning record of SRC into DST, in one transaction.

    Into an empty DST every run and result keeps its id. A DST that already has runs is refused (nothing copied)
    unless --append: then the copied runs get new ids (printed), and runs already copied earlier are skipped, so
    running it again adds nothing twice.

        farm store migrate .tilefarm/farm.db postgresql://farm@db.internal/farm
    """
    import os

    from farm import FarmError
    from farm.db import display
    from farm.store_migrate import migrate as run_migrate
    check_format(fmt, ("table", "json"))
    if "://" not in src and not os.path.exists(src):
        raise FarmError(f"no results store at {src}")
    out = run_migrate(src, dst, append=append)
    if fmt == "json":
        return print_json({**out, "renumbered": {str(k): v for k, v in out["renumbered"].items()}})
    say = human(fmt)
    say.print(f"copied {out['runs']} run(s), {out['run_jobs']} planned job(s), {out['results']} result(s) and "
              f"{out['tuning']} tuning record(s) into {display(dst)}"
              + (f"; {out['skipped']} run(s) already there, skipped" if out["skipped"] else ""),
              markup=False, soft_wrap=True)
    if out["renumbered"]:
        say.print("new run ids: " + ", ".join(f"{k} -> {v}" for k, v in out["renumbered"].items()), markup=False,
                  soft_wrap=True)
