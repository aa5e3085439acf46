"""`farm gate`: fail a run that is slower (significantly, and by more than a threshold) than its baseline."""
from __future__ import annotations

import pathlib
from typing import Annotated

import typer

from farm import FarmError
from farm.cli.common import (DEFAULT_STORE, FormatOpt, StoreOpt, check_format, console, err_console, escape,
                              handle_errors, human, messages_to_stderr, print_csv, print_json)


@handle_errors
def gate(
    run: Annotated[str, typer.Argument(help="The run to judge: id, `latest` or a label.")] = "latest",
    baseline: Annotated[str, typer.Option("--baseline", "-b", help="Run id, `latest` (the newest other run on the "
                                          "same GPU kind) or a label (its newest run on the same GPU kind).")] = "main",
    threshold: Annotated[str | None, typer.Option(help="Kernel-time limit, e.g. 5% (default: the gate config's; "
                                                       "per-workload overrides still apply).")] = None,
    config: Annotated[str | None, typer.Option("--config", "-c", help="Gate config (thresholds, per-workload "
                                                                     "overrides), e.g. configs/gates.yaml.")] = None,
    markdown: Annotated[str | None, typer.Option(help="Write a Markdown summary (a PR comment) to this file.")] = None,
    junit: Annotated[str | None, typer.Option(help="Write JUnit XML (one test case per job) to this file.")] = None,
    remeasure: Annotated[bool, typer.Option(help="Re-measure suspects A/B on this machine's GPU before failing "
                                                 "them (off, or without a GPU: suspects fail as they stand).")] = True,
    show_all: Annotated[bool, typer.Option("--all", help="List unchanged jobs too.")] = False,
    fmt: FormatOpt = "table",
    store: StoreOpt = DEFAULT_STORE,
):
    """Compare RUN with a baseline job by job; exit 1 on a regression, 2 on input that cannot be compared.

    A job fails when its slowdown is significant (a bootstrap interval of the ratio of medians, from the
    stored samples, lies above 1) and larger than its threshold, and an A/B re-measurement on the same GPU
    confirms it; also when it was correct in the baseline and is not now, or its compile time or launch
    cost grew past their limits.

    Examples:

        farm gate latest --baseline main

        farm gate pr-123 --baseline nightly --config configs/gates.yaml --markdown gate.md --junit gate.xml
    """
    from farm import gate as G
    from farm.cli.common import open_store
    from farm.config import ConfigError, load_gate, percent
    check_format(fmt)
    say = human(fmt)
    try:
        cfg = load_gate(config)
        limit = None
        if threshold is not None:
            try:
                limit = percent(threshold)
            except ValueError as e:
                raise FarmError(f"--threshold: {e}") from None
        st = open_store(store)
        run_id = st.resolve(run)
        base_id = G.resolve_baseline(st, run_id, baseline)
        ab = None
        if remeasure and cfg.remeasure:
            from farm.machine import gpu_available
            ok, why = gpu_available()
            if ok:
                ab = G.ABRemeasure(st, cfg)
            else:
                say.print(f"[yellow]no A/B re-measurement[/]: {escape(why)}", soft_wrap=True)
        try:
            with messages_to_stderr(fmt):
                res = G.compare(st, run_id, base_id, cfg, remeasure=ab, threshold=limit)
        finally:
            if ab is not None:
                ab.close()
    except ConfigError:
        raise  # listed field by field by handle_errors (exit 2)
    except FarmError as e:  # bad input is not a regression: exit 2 so CI can tell them apart
        err_console.print(f"[bold red]error:[/] {escape(str(e))}", soft_wrap=True)
        raise typer.Exit(2)
    if fmt == "table":
        console.print(G.table(res, all_rows=show_all))
    else:
        rows = [{"workload": j.workload, "shape": j.shape, "dtype": j.dtype, "meta": j.meta, "verdict": j.verdict,
                 "failed": j.failed, "baseline_ms": j.base_ms, "new_ms": j.new_ms, "ratio": j.ratio,
                 "interval_lo": j.lo, "interval_hi": j.hi, "ab_ratio": j.ab_ratio, "threshold": j.threshold,
                 "resource_changes": j.resource_changes if fmt == "json" else "; ".join(j.resource_changes),
                 "notes": "; ".join(j.notes)} for j in res.jobs if show_all or j.verdict != G.SAME]
        if fmt == "json":
            print_json({"passed": res.passed, "run": res.run_id, "baseline": res.baseline_id, "target": res.target,
                        "summary": res.summary(), "jobs": rows})
        else:
            print_csv(rows, ["workload", "shape", "dtype", "meta", "verdict", "failed", "baseline_ms", "new_ms",
                             "ratio", "interval_lo", "interval_hi", "ab_ratio", "threshold", "notes"])
    if markdown:
        pathlib.Path(markdown).write_text(G.to_markdown(res))
    if junit:
        pathlib.Path(junit).write_text(G.to_junit(res))
    say.print(("[bold green]" if res.passed else "[bold red]") + escape(res.summary()) + "[/]")
    raise typer.Exit(0 if res.passed else 1)
