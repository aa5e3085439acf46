"""`farm tune`: search kernels' meta-parameter spaces per shape on the fleet and fill the tuning database."""
from __future__ import annotations

import json
from typing import Annotated

import typer

from farm import FarmError
from farm.cli.common import DEFAULT_STORE, console, handle_errors


@handle_errors
def tune(
    config: Annotated[str | None, typer.Argument(help="Tune config (YAML or TOML), e.g. configs/tune-vector-add.yaml.")] = None,
    budget: Annotated[str | None, typer.Option(help="Time budget for the search, e.g. 60s or 2m (overrides "
                                                    "search.budget_s).")] = None,
    exhaustive: Annotated[bool, typer.Option(help="Time every candidate at max_rep_ms (for comparison).")] = False,
    local: Annotated[bool, typer.Option(help="Run in this process, one job at a time, without Ray.")] = False,
    address: Annotated[str | None, typer.Option(help="Join this Ray cluster instead of starting a local one.")] = None,
    num_cpus: Annotated[int | None, typer.Option(help="CPUs for the local Ray.")] = None,
    store: Annotated[str | None, typer.Option("--store", "-s", help="Store file holding the tuning table "
                                                                   f"(default: the config's, else {DEFAULT_STORE}).")] = None,
    timer: Annotated[str | None, typer.Option(help="path.py::fn(params, meta, rep_ms) -> ms: synthetic timings "
                                                   "where there is no GPU (tests, dry runs).")] = None,
    compile_only: Annotated[bool, typer.Option(help="Only check that every candidate compiles; store nothing.")] = False,
    export: Annotated[str | None, typer.Option(help="Afterwards, export the whole tuning table to this JSON file "
                                                    "(without CONFIG: export only).")] = None,
    import_: Annotated[str | None, typer.Option("--import", help="Add the records of an exported JSON file to "
                                                                 "the store (without CONFIG: import only).")] = None,
    json_out: Annotated[str | None, typer.Option("--json", help="Write the search's summary (winners, rounds) "
                                                                "to this JSON file.")] = None,
    compilers: Annotated[str | None, typer.Option(help="Who compiles the candidates, comma-separated: tilefarm, "
                                                       "triton (overrides the config's `compilers:`); each "
                                                       "compiler's space is searched and stored on its own.")] = None,
):
    """Tune: for each shape of each workload, search the meta-parameter space (successive halving within
    the budget, or --exhaustive) and store every measured config in the tuning database, which
    `@compiler.autotune` kernels read before tuning (set TILEFARM_TUNING_DB to the store or an export).

    Examples:

        farm tune configs/tune-vector-add.yaml --budget 60s

        farm tune configs/tune-vector-add.yaml --exhaustive --store /tmp/exhaustive.db

        farm tune my_tune.yaml --compilers tilefarm,triton

        farm tune --export tuning.json --store .tilefarm/farm.db
    """
    from farm.tuning_db import TuningDB

    if config is None and export is None and import_ is None:
        raise FarmError("give a CONFIG to tune, or --export/--import to move a tuning table")
    cfg = None
    if config is not None:
        from farm.tune import load_config
        cfg, _ = load_config(config)
        if compilers is not None:
            from farm.compilers import parse_list
            try:
                cfg.compilers = parse_list(compilers)
            except ValueError as e:
                raise FarmError(str(e)) from None
    path = store or (cfg.store if cfg else None) or DEFAULT_STORE
    from farm.tune import parse_budget
    parse_budget(budget)  # a bad --budget is refused before the tuning table is opened (and created)
    db = TuningDB(path)
    try:
        if import_ is not None:
            n = db.import_json(import_)
            console.print(f"imported {n} records from {import_} into {path}")
        if cfg is not None:
            _run(cfg, db, budget, exhaustive, local, address, num_cpus, timer, compile_only, json_out, path)
        if export is not None:
            n = db.export_json(export)
            console.print(f"exported {n} records to {export}")
    finally:
        db.close()


def _run(cfg, db, budget, exhaustive, local, address, num_cpus, timer, compile_only, json_out, path):
    from farm.executor import make_executor
    from farm.tune import load_timer, parse_budget, report_dict, tune as run_tune

    if num_cpus:
        cfg.cluster.num_cpus = num_cpus
    timer_fn = load_timer(timer) if timer else None
    with console.status("starting ..."):
        executor = make_executor(cfg.cluster, local=local, address=address)
    done = {"n": 0}

    def on_event(kind, job, payload):
        if kind == "done":
            done["n"] += 1

    def on_round(r, shapes):
        console.print(f"  round: {r['jobs']} candidates timed for {r['rep_ms']:g} ms each in {r['wall_s']:.1f} s")

    try:
        rep = run_tune(cfg, executor, None if compile_only else db, exhaustive=exhaustive,
                       budget_s=parse_budget(budget), compile_only=compile_only, timer=timer_fn,
                       on_event=on_event, on_round=on_round)
    finally:
        executor.close()
    from rich import box
    from rich.table import Table

    t = Table(header_style="bold", box=box.SIMPLE_HEAD, pad_edge=False,
              title=f"{cfg.name}: {rep.strategy} on {rep.target}")
    several = len(cfg.compilers) > 1
    for c in ("workload", "shape") + (("compiler",) if several else ()) + (
            "candidates", "measured", "failed", "best config", "best ms"):
        t.add_column(c)
    for w in rep.winners():
        best = " ".join(f"{k}={v}" for k, v in (w["best"] or {}).items()) or "-"
        t.add_row(w["workload"], " ".join(f"{k}={v}" for k, v in w["params"].items()),
                  *((w["compiler"],) if several else ()), str(w["candidates"]),
                  str(w["measured"]), str(w["failures"]), best,
                  f"{w['best_ms']:.4g}" if w["best_ms"] is not None else "-")
    console.print(t, markup=False)
    for shape, meta, err in rep.errors[:5]:
        console.print(f"failed: {shape} {meta}: {(err or '').strip().splitlines()[:1]}", markup=False)
    if compile_only:
        console.print(f"compile only: {sum(r['jobs'] for r in rep.rounds)} candidates, {len(rep.errors)} failed; "
                      "nothing stored")
    else:
        extra = " (stopped by the budget)" if rep.stopped_by_budget else ""
        console.print(f"{len(rep.rounds)} round(s), {rep.records} records stored in {path} in {rep.wall_s:.1f} s"
                      f"{extra}. Use them: TILEFARM_TUNING_DB={path}")
    if json_out:
        with open(json_out, "w") as f:
            json.dump(report_dict(rep), f, indent=1, default=str)
