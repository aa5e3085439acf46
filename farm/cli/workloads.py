"""`farm workloads`: what can be swept."""
from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from farm.cli.common import console, handle_errors


@handle_errors
def workloads(
    file: Annotated[str | None, typer.Argument(help="A kernel file of your own to list instead of the registry.")] = None,
):
    """List the workloads a config can name: the bundled registry, or the ones a kernel file declares.

    A config entry `workload: NAME` picks one; `workload: path/to/file.py::NAME` picks one from your file.
    """
    from farm import FarmError
    if file:
        import workloads as reg
        try:
            wls = reg.load_file(file)
        except (FileNotFoundError, ValueError, TypeError) as e:
            raise FarmError(str(e)) from None
    else:
        import workloads as reg
        wls = list(reg.registry().values())
    t = Table(header_style="bold")
    for c in ("name", "description", "default sweep", "default meta", "checks"):
        t.add_column(c)
    for w in wls:
        sweep = ", ".join(" ".join(f"{k}={v}" for k, v in p.items()) for p in w.default_sweep[:3])
        if len(w.default_sweep) > 3:
            sweep += f", ... ({len(w.default_sweep)} points)"
        extras = [x for x, ok in (("warmup", w.warmup), ("baseline", w.baseline or w.torch_impl)) if ok]
        t.add_row(w.name, w.description, sweep, " ".join(f"{k}={v}" for k, v in w.default_meta.items()),
                  ", ".join(extras))
    if not wls:
        console.print("no workloads found")
    else:
        console.print(t)
