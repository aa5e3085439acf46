"""`farm report`: one run's results as a table, JSON, CSV or Markdown, optionally against another run."""
from __future__ import annotations

from typing import Annotated

import typer

from farm import FarmError
from farm.cli.common import DEFAULT_STORE, StoreOpt, check_format, console, handle_errors


@handle_errors
def report(
    run: Annotated[str, typer.Argument(help="Run id, `latest`, `latest~1` (the one before) or a label.")] = "latest",
    vs: Annotated[str | None, typer.Option(help="Another run to compare with: adds a `vs` column "
                                                "(its median / this run's median; >1 means this run is faster).")] = None,
    fmt: Annotated[str, typer.Option("--format", "-f", help="table, json, csv or markdown.")] = "table",
    failed: Annotated[bool, typer.Option(help="Only failed jobs, with their full error messages.")] = False,
    ratio_to: Annotated[str | None, typer.Option(help="A run with several compilers: each compiler's time over "
                                                      "this compiler's, per point and as a geomean per workload "
                                                      "(default: triton when the run has it).")] = None,
    details: Annotated[bool, typer.Option("--details", help="Also the compiled kernel's registers per thread, "
                                          "spill bytes, shared and local memory, blocks per SM and ptxas release "
                                          "(always in --format json and csv).")] = False,
    store: StoreOpt = DEFAULT_STORE,
):
    """Show a stored run: workload, shape, dtype, meta, median time and spread, TFLOP/s, GB/s, % of the
    GPU's roofline, speedup against the reference implementation, status.

    Examples:

        farm report latest

        farm report 7 --vs 5

        farm report baseline --format csv > baseline.csv

        farm report latest --ratio-to triton     (a run with `compilers: [tilefarm, triton]`)
    """
    from farm import report as rep
    from farm.cli.common import open_store
    check_format(fmt, ("table", "json", "csv", "markdown"))
    st = open_store(store)
    run_id = st.resolve(run)
    info = st.run(run_id)
    rows = rep.rows_for(st, run_id)
    if vs is not None:
        rows = rep.attach_vs(rows, rep.rows_for(st, st.resolve(vs)))
    names = rep.compilers_of(rows)
    if ratio_to is not None and ratio_to not in names:
        raise FarmError(f"--ratio-to {ratio_to}: run {run_id} has no jobs compiled by {ratio_to} "
                        f"(its compilers: {', '.join(names) or 'none'})")
    if failed:
        rows = rep.failures(rows)
    title = f"run {run_id} ({info['name']}, {info['target']}, {info['status']})"
    if fmt == "table" and len(names) > 1 and not failed and vs is None and not details:
        for t in rep.compiler_tables(rows, title=title, ratio_to=ratio_to):
            console.print(t)
    elif fmt == "table":
        console.print(rep.table(rows, title=title, vs=vs is not None, details=details))
        if failed:
            for r in rows:
                comp = f" [{r.get('compiler') or 'tilefarm'}]" if len(names) > 1 else ""
                head = f"{r['workload']}{comp} {r['shape']} {r['dtype']} {r['meta_text']}: {r['status']}"
                if console.is_terminal:
                    console.rule(head)
                else:  # a rule would be as wide as the unlimited width of a pipe
                    console.print(f"--- {head}", markup=False, soft_wrap=True)
                console.print(r.get("error") or "", markup=False)
    elif fmt == "json":
        print(rep.to_json(rows, {k: v for k, v in info.items() if k != "config_text"}, ratio_to=ratio_to))
    elif fmt == "csv":
        print(rep.to_csv(rows), end="")
    elif len(names) > 1 and not failed and vs is None:
        print(rep.compiler_markdown(rows, title, ratio_to=ratio_to), end="")
    else:
        print(rep.to_markdown(rows, title), end="")
