"""`farm workloads`: what can be swept."""
from __future__ import annotations

from typing import Annotated

import typer

from farm.cli.common import FormatOpt, check_format, console, handle_errors, print_csv, print_json


@handle_errors
def workloads(
    file: Annotated[str | None, typer.Argument(help="A kernel file of your own to list instead of the registry.")] = None,
    fmt: FormatOpt = "table",
):
    """List the workloads a config can name: the bundled registry, or the ones a kernel file declares.

    A config entry `workload: NAME` picks one; `workload: path/to/file.py::NAME` picks one from your file.
    """
    check_format(fmt)
    if file:
        from farm.loader import load_file
        wls = load_file(file)
    else:
        import workloads as reg
        wls = list(reg.registry().values())
    if fmt != "table":
        rows = [{"name": w.name, "description": w.description, "params": sorted({k for p in w.default_sweep for k in p}),
                 "default_sweep": w.default_sweep, "default_meta": w.default_meta,
                 "meta_space": list(w.meta_space or []), "source_file": w.source_file} for w in wls]
        if fmt == "json":
            return print_json(rows)
        return print_csv([{**r, "params": " ".join(r["params"]), "default_meta": " ".join(
            f"{k}={v}" for k, v in r["default_meta"].items()), "meta_space": " ".join(r["meta_space"])} for r in rows],
            ["name", "description", "params", "default_meta", "meta_space", "source_file"])
    from rich import box
    from rich.table import Table

    t = Table(header_style="bold", box=box.SIMPLE_HEAD)
    t.add_column("name", no_wrap=True)
    t.add_column("description")
    t.add_column("params", no_wrap=True)
    t.add_column("meta-parameters")
    for w in wls:
        keys = sorted({k for p in w.default_sweep for k in p} - {"dtype"})
        dtypes = sorted({p.get("dtype") for p in w.default_sweep if p.get("dtype")})
        params = " ".join(keys) + (f" ({'/'.join(dtypes)})" if dtypes else "")
        metas = " ".join(f"{k}={v}" for k, v in w.default_meta.items()) or "-"
        if w.meta_space:
            metas += "; sweepable: " + ", ".join(w.meta_space)
        t.add_row(w.name, w.description, params, metas)
    if not wls:
        console.print("no workloads found")
    else:
        console.print(t)
        console.print("use one in a config as `workload: NAME`; a kernel file of yours as `workload: path/to/file.py::NAME`")
