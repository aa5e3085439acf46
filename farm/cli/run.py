"""`farm run`: plan a config, run every job (compile, validate, time), store and show the results."""
from __future__ import annotations

import time
from typing import Annotated

import typer
from rich.console import Group
from rich.live import Live
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from farm import FarmError
from farm.cli.common import DEFAULT_STORE, console, err_console, handle_errors


@handle_errors
def run(
    config: Annotated[str | None, typer.Argument(help="Sweep config (YAML or TOML), e.g. configs/quick.yaml.")] = None,
    resume: Annotated[str | None, typer.Option(help="Finish an interrupted run (its id, `latest`, or label) "
                                                    "instead of starting one; CONFIG is not needed.")] = None,
    force: Annotated[bool, typer.Option(help="Run jobs the store already has results for (normally reused).")] = False,
    local: Annotated[bool, typer.Option(help="Run in this process, one job at a time, without Ray "
                                             "(quick to start, no timeouts, a crashing kernel ends the run).")] = False,
    address: Annotated[str | None, typer.Option(help="Join this Ray cluster (`auto`, `ray://host:10001`) "
                                                     "instead of starting a local one.")] = None,
    num_cpus: Annotated[int | None, typer.Option(help="CPUs for the local Ray (overrides cluster.num_cpus).")] = None,
    store: Annotated[str | None, typer.Option("--store", "-s", help="Results file (default: the config's "
                                                                   f"`store`, else {DEFAULT_STORE}).")] = None,
    label: Annotated[str | None, typer.Option(help="A name for this run (`farm report LABEL`).")] = None,
    compile_only: Annotated[bool, typer.Option(help="Only compile each job to PTX (no validation, no timing).")] = False,
    timeout: Annotated[float | None, typer.Option(help="Per-job limit in seconds (overrides timing.timeout_s).")] = None,
    fmt: Annotated[str, typer.Option("--format", help="Final output: table, json, csv, markdown or none.")] = "table",
):
    """Run a sweep: every workload x shape x dtype x meta point of CONFIG is compiled, checked and timed.

    Jobs the store already holds (same kernel source, shape, meta, compiler version and GPU kind) are
    reused, not rerun, unless --force. Without a GPU each job is compiled to PTX and validated in the
    interpreter, and the timing columns say they need a GPU. Results are stored as they arrive: after a
    crash or Ctrl-C, `farm run --resume latest` finishes the rest.

    Examples:

        farm run configs/quick.yaml

        farm run configs/h200-memory.yaml --address auto --label baseline

        farm run --resume latest
    """
    from farm import config as config_mod
    from farm import runner
    from farm.cli.common import open_store
    from farm.executor import make_executor

    if config is None and resume is None:
        raise FarmError("give a CONFIG file, or --resume RUN to finish an earlier run")
    if fmt not in ("table", "json", "csv", "markdown", "none"):
        raise FarmError(f"--format must be table, json, csv, markdown or none, not {fmt!r}")
    cfg = text = None
    if config is not None:
        cfg, text = config_mod.load(config)
        if compile_only:
            cfg.compile_only = True
        if timeout is not None:
            cfg.timing.timeout_s = timeout
    elif resume is not None and store is None:
        store = DEFAULT_STORE
    st = open_store(store or cfg.store, must_exist=resume is not None)

    cluster = cfg.cluster if cfg else config_mod.Cluster()
    if num_cpus:
        cluster.num_cpus = num_cpus
    t0 = time.perf_counter()
    with console.status("starting Ray ..." if not (local or cluster.executor == "local") else "starting ..."):
        executor = make_executor(cluster, local=local, address=address)
        resources = executor.resources()
    try:
        if resume is not None:
            prep = runner.resume(st, resume)
            if timeout is not None:
                prep.opts.timeout_s = timeout
        else:
            prep = runner.prepare(cfg, text, str(config), st, resources, force=force, label=label)
        _header(prep, resources, executor, time.perf_counter() - t0)
        tally = _execute(st, prep, executor, resources)
    except KeyboardInterrupt:
        err_console.print(f"[yellow]interrupted[/]: results so far are stored; finish with "
                          f"[bold]farm run --resume {prep.run_id}{_store_arg(st)}[/]")
        raise typer.Exit(130)
    finally:
        executor.close()
    _finish(st, prep, tally, fmt)


def _store_arg(st) -> str:
    return "" if str(st.path) == DEFAULT_STORE else f" --store {st.path}"


def _header(prep, resources, executor, startup_s):
    where = "in this process" if executor.name == "local" else (
        f"on Ray ({resources.get('nodes', 1)} node(s), {resources['cpus']} CPUs, {resources['gpus']} GPUs"
        + (f" {', '.join(resources['gpu_names'])}" if resources.get("gpu_names") else "") + ")")
    what = {"compile-only": "compile only", "interpreter": "no GPU: compile to PTX and validate in the "
            "interpreter; timing needs a GPU"}.get(prep.opts.target, f"validate and time on {prep.opts.target}")
    extra = []
    if prep.n_reused:
        extra.append(f"{prep.n_reused} reused from earlier runs")
    if prep.skipped_by_constraint:
        extra.append(f"{prep.skipped_by_constraint} points skipped by constraints")
    verb = "resuming run" if prep.resumed else "run"
    console.print(f"[bold]{verb} {prep.run_id}[/]: {len(prep.jobs)} jobs to run of {prep.n_planned}"
                  + (f" ({'; '.join(extra)})" if extra else "") + f" {where} [dim](ready in {startup_s:.1f} s)[/]")
    console.print(f"  {what}")


def _execute(st, prep, executor, resources):
    from farm import runner
    progress = Progress(TextColumn("[bold]jobs"), BarColumn(), MofNCompleteColumn(),
                        TextColumn("{task.fields[failed]}"), TimeElapsedColumn(), TextColumn("ETA"),
                        TimeRemainingColumn(), console=console, transient=False)
    task = progress.add_task("jobs", total=len(prep.jobs), failed="")

    def activity(tally):
        t = Table.grid(padding=(0, 2))
        for worker, job in sorted(tally.active.items())[:16]:
            t.add_row(f"[cyan]{worker}[/]", job.name, " ".join(f"{k}={v}" for k, v in job.params.items()),
                      " ".join(f"{k}={v}" for k, v in job.meta.items()))
        return t

    with Live(Group(progress), console=console, refresh_per_second=8, transient=True) as live:
        def on_event(kind, job, payload, tally):
            if kind == "done":
                failed = f"[red]{tally.failed} failed[/]" if tally.failed else ""
                progress.update(task, completed=tally.done, failed=failed)
            live.update(Group(progress, activity(tally)))
        tally = runner.execute(st, prep, executor, on_event)
    return tally


def _finish(st, prep, tally, fmt):
    from farm import report
    rows = report.rows_for(st, prep.run_id)
    info = st.run(prep.run_id)
    if fmt == "table":
        console.print(report.table(rows, title=f"run {prep.run_id} ({info['name']}, {info['target']})"))
    elif fmt == "json":
        console.print_json(report.to_json(rows, {k: v for k, v in info.items() if k != "config_text"}))
    elif fmt == "csv":
        print(report.to_csv(rows), end="")
    elif fmt == "markdown":
        print(report.to_markdown(rows), end="")
    fails = report.failures(rows)
    for r in fails[:10]:
        first = (r.get("error") or "").strip().splitlines()[:1]
        console.print(f"[red]{r['status']}[/] " + escape(f"{r['workload']} {r['shape']} {r['dtype']} "
                      f"{r['meta_text']}: {first[0] if first else ''}"), soft_wrap=True)
    if len(fails) > 10:
        console.print(f"... and {len(fails) - 10} more failures: farm report {prep.run_id} --format json")
    counts = ", ".join(f"{n} {s}" for s, n in sorted(tally.by_status.items()))
    phases = tally.phases()
    console.print(f"[bold]run {prep.run_id}[/]: {tally.done} jobs finished ({counts or 'none'}) in "
                  f"{time.monotonic() - tally.started:.1f} s" + (f" ({phases})" if phases else "") +
                  f"; stored in {st.path}. "
                  f"See it again: farm report {prep.run_id}{_store_arg(st)}")
