"""`farm repro`: write a folder that reproduces one stored result, and print the command that reruns it."""
from __future__ import annotations

from typing import Annotated

import typer

from farm.cli.common import DEFAULT_STORE, StoreOpt, console, escape, handle_errors


@handle_errors
def repro(
    row: Annotated[str, typer.Argument(help="A result id (from `farm report RUN --format json` or the dashboard) "
                                            "or RUN:KEY (a job key or a unique prefix of one).")],
    out: Annotated[str | None, typer.Option("--out", "-o", help="Folder to write (default ./repro-ROW).")] = None,
    store: StoreOpt = DEFAULT_STORE,
):
    """Write the kernel source, the one-job config, the seed, the stored result and the stage artifacts
    (tile IR, LLVM IR, PTX, cubin; compiled again) of one result into a folder, and print the command that
    reruns exactly that job.

    Examples:

        farm repro 42

        farm repro latest:3fa9c1 --out /tmp/slow-softmax
    """
    from farm import repro as R
    from farm.cli.common import open_store
    r = R.write(open_store(store), row, out)
    console.print(f"[bold]wrote[/] {escape(str(r.folder))}: {escape(', '.join(r.files))}")
    for n in r.notes:
        console.print(f"[yellow]note[/]: {escape(n)}", soft_wrap=True)
    console.print("rerun it with:")
    print(r.command)
