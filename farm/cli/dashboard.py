"""`farm dashboard`: build a static, offline HTML site of every run's results from the store."""
from __future__ import annotations

from typing import Annotated

import typer

from farm import FarmError
from farm.cli.common import DEFAULT_STORE, StoreOpt, console, escape, handle_errors


@handle_errors
def dashboard(
    out: Annotated[str, typer.Option("--out", "-o", help="Folder for the site (index.html and one page per "
                                                         "workload; plotly.js is copied in).")] = "farm-dashboard",
    threshold: Annotated[float, typer.Option(help="Smallest change (fraction) marked as a step.")] = 0.05,
    store: StoreOpt = DEFAULT_STORE,
):
    """Per workload and shape: time over runs and commits with the p10-p90 spread, detected steps marked,
    % of roofline, per-GPU comparison, and for every result the `farm repro ID` that rebuilds it.
    Self-contained: open index.html from disk, no network needed.

    Examples:

        farm dashboard --out site && xdg-open site/index.html
    """
    from farm import dashboard as D
    from farm.cli.common import open_store
    st = open_store(store)
    try:
        got = D.build(st, out, threshold=threshold)
    except OSError as e:
        raise FarmError(f"cannot write the dashboard to {out}: {e.strerror or e}") from None
    console.print(f"[bold]wrote[/] {escape(got['index'])}: {got['pages']} workload pages, {got['plots']} plots, "
                  f"{got['steps']} steps marked")
