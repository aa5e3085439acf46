"""`farm runs`: the history of runs in a store."""
from __future__ import annotations

import datetime
from typing import Annotated

import typer
from rich import box
from rich.table import Table

from farm.cli.common import DEFAULT_STORE, StoreOpt, console, handle_errors


@handle_errors
def runs(
    limit: Annotated[int, typer.Option("--limit", "-n", help="How many recent runs to show.")] = 20,
    store: StoreOpt = DEFAULT_STORE,
):
    """List recent runs with their provenance (git commit, host, GPUs, compiler version) and progress.

    A run that says `interrupted` or `running` (its driver was killed) can be finished with
    `farm run --resume ID`.
    """
    from farm.cli.common import open_store
    st = open_store(store)
    t = Table(header_style="bold", box=box.SIMPLE_HEAD, pad_edge=False)
    for c in ("id", "when", "name", "target", "jobs", "done", "failed", "status", "commit"):
        t.add_column(c, no_wrap=c != "name", min_width=6 if c == "name" else None)
    for r in st.runs(limit):
        when = datetime.datetime.fromtimestamp(r["created"]).strftime("%m-%d %H:%M")
        name = (r["name"] or "") + (f" [{r['label']}]" if r["label"] else "")
        t.add_row(str(r["id"]), when, name, r["target"], str(r["n_jobs"]), str(r["n_done"]), str(r["n_failed"]),
                  r["status"], (r["git_commit"] or "")[:7],
                  style="dim" if r["status"] == "done" and not r["n_failed"] else None)
    console.print(t, markup=False)
    console.print("host, GPUs, compiler version and config of a run: farm report ID --format json")
