"""`farm run`: plan a config, run every job (compile, validate, time), store and show the results."""
from __future__ import annotations

import time
from typing import Annotated

import typer

from farm import FarmError
from farm.cli.common import (DEFAULT_STORE, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, ProgressLines, check_format,
                              err_console, escape, handle_errors, human, messages_to_stderr)


@handle_errors
def run(
    config: Annotated[str | None, typer.Argument(help="Sweep config (YAML or TOML), e.g. configs/quick.yaml.")] = None,
    resume: Annotated[str | None, typer.Option(help="Finish an interrupted run (its id, `latest`, or label) "
                                                    "instead of starting one; CONFIG is not needed.")] = None,
    force: Annotated[bool, typer.Option(help="Run jobs the store already has results for (normally reused).")] = False,
    local: Annotated[bool, typer.Option(help="Run in this process, one job at a time, without Ray "
                                             "(quick to start, no timeouts, a crashing kernel ends the run).")] = False,
    address: Annotated[str | None, typer.Option(help="Join this Ray cluster (`auto`, `HOST:6379`) "
                                                     "instead of starting a local one.")] = None,
    insecure_cluster: Annotated[bool, typer.Option(help="Allow joining a Ray cluster without authentication "
                                                        "(anyone who reaches it can run code).")] = False,
    num_cpus: Annotated[int | None, typer.Option(help="CPUs for the local Ray (overrides cluster.num_cpus).")] = None,
    gpu_kind: Annotated[str | None, typer.Option(help="GPU kind(s) to time on (Ray's accelerator_type, e.g. H200): "
                                                      "one, a comma list (each job timed on each), or `each` "
                                                      "(every kind the cluster has); overrides cluster.gpu_kind.")] = None,
    wait_s: Annotated[float | None, typer.Option(help="Seconds jobs wait for a node with what they need (a GPU kind "
                                                      "no node has) before they time out; overrides "
                                                      "cluster.wait_s (600).")] = None,
    store: Annotated[str | None, typer.Option("--store", "-s", help="Results file (default: the config's "
                                                                   f"`store`, else {DEFAULT_STORE}).")] = None,
    label: Annotated[str | None, typer.Option(help="A name for this run (`farm report LABEL`).")] = None,
    compile_only: Annotated[bool, typer.Option(help="Only compile each job to PTX (no validation, no timing).")] = False,
    timeout: Annotated[float | None, typer.Option(help="Per-job limit in seconds (overrides timing.timeout_s).")] = None,
    max_jobs: Annotated[int | None, typer.Option(help="Refuse sweeps of more jobs than this (counted before "
                                                      "expanding; default 100000, env FARM_MAX_JOBS).")] = None,
    allow_outside: Annotated[bool, typer.Option(help="Allow workload files outside the config's folder "
                                                     "(`../other.py`).")] = False,
    fmt: Annotated[str, typer.Option("--format", help="Final output: table, json, csv, markdown or none "
                                                      "(with json/csv/markdown, only data on stdout).")] = "table",
    compilers: Annotated[str | None, typer.Option(help="Who compiles the kernels, comma-separated: tilefarm, "
                                                       "triton (overrides the config's `compilers:`; each is a "
                                                       "column of the sweep).")] = None,
    ratio_to: Annotated[str | None, typer.Option(help="With several compilers: the final table's ratios are "
                                                      "each compiler's time over this one's (default triton).")] = None,
):
    """Run a sweep: every workload x shape x dtype x meta point of CONFIG is compiled, checked and timed.

    Jobs the store already holds (same kernel source, shape, meta, compiler version and GPU kind) are
    reused, not rerun, unless --force. Without a GPU each job is compiled to PTX and validated in the
    interpreter, and the timing columns say they need a GPU. Results are stored as they arrive: after a
    crash or Ctrl-C, `farm run --resume latest` finishes the rest. Relative paths in CONFIG (store, workload
    files) are relative to CONFIG's folder.

    Exit codes: 0 every job succeeded; 1 some jobs failed (compile error, mismatch, timeout, ...);
    2 usage or config error (nothing run, nothing written); 130 interrupted (results so far kept).

    Examples:

        farm run configs/quick.yaml

        farm run configs/h200-memory.yaml --address auto --label baseline

        farm run --resume latest
    """
    from farm import config as config_mod
    from farm import planner
    from farm.cli.common import open_store

    if config is None and resume is None:
        raise FarmError("give a CONFIG file (e.g. `farm run configs/quick.yaml`), or --resume RUN to finish an "
                        "earlier run (`farm runs` lists them)")
    check_format(fmt, ("table", "json", "csv", "markdown", "none"))
    if timeout is not None and not timeout > 0:  # (also refuses nan)
        raise FarmError(f"--timeout must be a positive number of seconds, not {timeout}")
    if num_cpus is not None and num_cpus < 1:
        raise FarmError(f"--num-cpus must be at least 1, not {num_cpus}")
    say = human(fmt)
    cfg = text = None
    if config is not None:
        cfg, text = config_mod.load(config, allow_outside=allow_outside)
        if compile_only:
            cfg.compile_only = True
        if compilers is not None:
            from farm.compilers import parse_list
            try:
                cfg.compilers = parse_list(compilers)
            except ValueError as e:
                raise FarmError(str(e)) from None
        if timeout is not None:
            cfg.timing.timeout_s = timeout
        # Every config problem (workloads that do not load, sweeps over the limit, bad points) before anything
        # starts or is written; the plan is made again for the real target once the executor says what it is.
        planner.check(cfg, max_jobs=max_jobs, source=str(config))
    st = open_store(store or (cfg.store if cfg else None) or DEFAULT_STORE, must_exist=resume is not None,
                    write=True)
    for rid in st.stale_runs():
        say.print(f"[yellow]run {rid} was left running by a process that no longer exists[/] (killed?): marked "
                  f"interrupted; finish it with [bold]farm run --resume {rid}{_store_arg(st)}[/]")

    cluster = cfg.cluster if cfg else config_mod.Cluster()
    if num_cpus:
        cluster.num_cpus = num_cpus
    if wait_s is not None:
        if not wait_s > 0:
            raise FarmError(f"--wait-s must be a positive number of seconds, not {wait_s}")
        cluster.wait_s = wait_s
    t0 = time.perf_counter()
    with messages_to_stderr(fmt):
        prep, tally = _run(say, st, cfg, text, config, resume, timeout, force, label, max_jobs, cluster, local,
                           address, insecure_cluster, t0, gpu_kind)
    failed = _finish(say, st, prep, tally, fmt, ratio_to)
    raise typer.Exit(EXIT_FAILED if failed else EXIT_OK)


def _run(say, st, cfg, text, config, resume, timeout, force, label, max_jobs, cluster, local, address,
         insecure_cluster, t0, gpu_kind=None):
    import os

    from farm import runner
    from farm.executor import make_executor
    with say.status("starting Ray ..." if not (local or cluster.executor == "local") else "starting ..."):
        executor = make_executor(cluster, local=local, address=address, insecure=insecure_cluster)
    prep = None
    try:
        resources = executor.resources()
        if resume is not None:
            prep = runner.resume(st, resume)
            if timeout is not None:
                prep.opts.timeout_s = timeout
        else:
            prep = runner.prepare(cfg, text, str(config), st, resources, force=force, label=label,
                                  max_jobs=max_jobs, gpu_kind=gpu_kind)
        joined = (address or cluster.address) and hasattr(executor, "ship")
        cfg_path = str(config) if config is not None else st.run(prep.run_id).get("config_path")
        if joined and cfg_path:  # the nodes of a cluster get the config's folder (its workload and kernel files)
            with say.status("sending the config's folder to the cluster ..."):
                executor.ship(os.path.dirname(os.path.abspath(cfg_path)))
        _header(say, prep, resources, executor, time.perf_counter() - t0)
        if cfg is not None and cfg.compilers != ["tilefarm"]:
            from farm.compilers import triton_version
            say.print("  compilers: " + ", ".join(
                c if c != "triton" else f"triton {triton_version() or '(not installed here)'}" for c in cfg.compilers),
                markup=False)
        tally = _execute(say, st, prep, executor)
    except KeyboardInterrupt:
        if prep is None:
            err_console.print("[yellow]interrupted[/] before any job ran: nothing was stored")
        else:
            err_console.print(f"[yellow]interrupted[/]: results so far are stored; finish with "
                              f"[bold]farm run --resume {prep.run_id}{_store_arg(st)}[/]")
        raise typer.Exit(EXIT_INTERRUPTED)
    finally:
        executor.close()
    return prep, tally


def _store_arg(st) -> str:
    """` --store PATH` for the commands printed, unless the store is the one they find by default."""
    import os
    if st.url:
        return "" if st.path == DEFAULT_STORE else f" --store {st.path}"
    same = os.path.abspath(st.path) == os.path.abspath(DEFAULT_STORE)
    return "" if same else f" --store {st.path}"


def _header(say, prep, resources, executor, startup_s):
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
    if prep.rekeyed:
        extra.append(f"{prep.rekeyed} re-planned: their kernel or workload source, or the compiler, changed since "
                     "the run began")
    say.print(f"[bold]{verb} {prep.run_id}[/]: {len(prep.jobs)} jobs to run of {prep.n_planned}"
              + (f" ({'; '.join(extra)})" if extra else "") + f" {where} [dim](ready in {startup_s:.1f} s)[/]")
    say.print(f"  {what}")
    refs = prep.jobs.workloads() if hasattr(prep.jobs, "workloads") else [j.workload for j in prep.jobs]
    for f in sorted({r.partition("::")[0] for r in refs if ".py" in r}):
        say.print(f"  workload file: {f}", markup=False, soft_wrap=True)


def _execute(say, st, prep, executor):
    from farm import runner
    if not say.is_terminal:  # a pipe or a CI log: a line now and then, not a live display
        lines = ProgressLines(len(prep.jobs), say)

        def on_line(kind, job, payload, tally):
            if kind == "notice":
                say.print(f"[yellow]{escape(payload)}[/]")
            if kind == "done":
                lines.update(tally.done, tally.failed, final=tally.done == tally.total)
        return runner.execute(st, prep, executor, on_line)
    from rich.console import Group
    from rich.live import Live
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                               TimeRemainingColumn)
    from rich.table import Table

    say = getattr(say, "real", say)  # the console itself: rich's live display takes one
    progress = Progress(TextColumn("[bold]jobs"), BarColumn(), MofNCompleteColumn(),
                        TextColumn("{task.fields[failed]}"), TimeElapsedColumn(), TextColumn("ETA"),
                        TimeRemainingColumn(), console=say, transient=False)
    task = progress.add_task("jobs", total=len(prep.jobs), failed="")

    def activity(tally):
        t = Table.grid(padding=(0, 2))
        for worker, job in sorted(tally.active.items())[:16]:
            t.add_row(f"[cyan]{worker}[/]", job.name, " ".join(f"{k}={v}" for k, v in job.params.items()),
                      " ".join(f"{k}={v}" for k, v in job.meta.items()))
        return t

    with Live(Group(progress), console=say, refresh_per_second=8, transient=True) as live:
        def on_event(kind, job, payload, tally):
            if kind == "notice":
                live.console.print(f"[yellow]{escape(payload)}[/]")
            if kind == "done":
                failed = f"[red]{tally.failed} failed[/]" if tally.failed else ""
                progress.update(task, completed=tally.done, failed=failed)
            live.update(Group(progress, activity(tally)))
        tally = runner.execute(st, prep, executor, on_event)
    return tally


def _finish(say, st, prep, tally, fmt, ratio_to=None) -> int:
    """Print the results; returns how many jobs of the run did not succeed (failed, or still pending)."""
    from farm import report
    rows = report.rows_for(st, prep.run_id)
    info = st.run(prep.run_id)
    if fmt == "table":
        title = f"run {prep.run_id} ({info['name']}, {info['target']})"
        if len(report.compilers_of(rows)) > 1:
            for t in report.compiler_tables(rows, title=title, ratio_to=ratio_to):
                say.print(t)
        else:
            say.print(report.table(rows, title=title))
    elif fmt == "json":
        print(report.to_json(rows, {k: v for k, v in info.items() if k != "config_text"}, ratio_to=ratio_to))
    elif fmt == "csv":
        print(report.to_csv(rows), end="")
    elif fmt == "markdown":
        several = len(report.compilers_of(rows)) > 1
        print(report.compiler_markdown(rows, ratio_to=ratio_to) if several else report.to_markdown(rows), end="")
    fails = report.failures(rows)
    for r in fails[:10]:
        first = (r.get("error") or "").strip().splitlines()[:1]
        comp = f" [{r.get('compiler') or 'tilefarm'}]" if len(report.compilers_of(rows)) > 1 else ""
        say.print(f"[red]{r['status']}[/] " + escape(f"{r['workload']}{comp} {r['shape']} {r['dtype']} "
                      f"{r['meta_text']}: {first[0] if first else ''}"), soft_wrap=True)
    if len(fails) > 10:
        say.print(f"... and {len(fails) - 10} more failures: farm report {prep.run_id} --format json")
    counts = ", ".join(f"{n} {s}" for s, n in sorted(tally.by_status.items()))
    phases = tally.phases()
    pending = sum(r["status"] == "pending" for r in rows)
    say.print(f"[bold]run {prep.run_id}[/]: {tally.done} jobs finished ({counts or 'none'}) in "
                  f"{time.monotonic() - tally.started:.1f} s" + (f" ({phases})" if phases else "") +
                  f"; stored in {st.path}. "
                  f"See it again: farm report {prep.run_id}{_store_arg(st)}")
    if fails or pending:
        say.print(f"[red]{len(fails)} of {len(rows)} jobs failed[/]" + (f", {pending} not run" if pending else "")
                  + " (exit code 1)")
    return len(fails) + pending
