"""`farm runs`: the history of runs in a store."""
from __future__ import annotations

import datetime
from typing import Annotated

import typer

from farm import FarmError
from farm.cli.common import (DEFAULT_STORE, FormatOpt, StoreOpt, check_format, console, handle_errors, human,
                              print_csv, print_json)


@handle_errors
def runs(
    limit: Annotated[int, typer.Option("--limit", "-n", help="How many recent runs to show.")] = 20,
    fmt: FormatOpt = "table",
    store: StoreOpt = DEFAULT_STORE,
):
    """List recent runs with their provenance (git commit, host, GPUs, compiler version) and progress.

    A run that says `interrupted` or `running` (its driver was killed) can be finished with
    `farm run --resume ID`.
    """
    from farm.cli.common import open_store
    check_format(fmt)
    if limit < 1:
        raise FarmError(f"--limit must be at least 1, not {limit}")
    st = open_store(store)
    for rid in st.stale_runs():
        human(fmt).print(f"run {rid} was left running by a process that no longer exists (killed?): marked "
                         f"interrupted; finish it with farm run --resume {rid}", markup=False, soft_wrap=True)
    if fmt != "table":
        rows = [{**{k: v for k, v in r.items() if k not in ("config_text", "options")},
                 "created": datetime.datetime.fromtimestamp(r["created"]).isoformat(timespec="seconds")}
                for r in st.runs(limit)]
        if fmt == "json":
            return print_json(rows)
        return print_csv(rows, ["id", "created", "name", "label", "target", "status", "n_jobs", "n_reused", "n_done",
                                "n_failed", "git_commit", "host", "compiler_version", "farm_version"])
    from rich import box
    from rich.table import Table

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
