"""The `farm` app: registers one command per module in farm/cli/."""
from __future__ import annotations

import sys
from typing import Annotated

import typer

from farm.cli import cache, cluster, compile as compile_cmd, dashboard, gate, repro, report, run, runs, store, tune, workloads

from farm.cli.common import EXIT_CODES_HELP

app = typer.Typer(
    name="farm",
    help=("Compile, validate and time tile-language kernels over shape sweeps, on this machine or a Ray "
          "cluster, and keep every result.\n\n"
          "Start with `farm run configs/quick.yaml`; then `farm runs` and `farm report latest`. "
          "`farm workloads` lists what you can sweep; `farm compile` shows what a kernel compiles to.\n\n"
          "`--format json` (or csv) on run, report, runs, workloads, cluster and gate prints only data on "
          "stdout; messages go to stderr.\n\n" + EXIT_CODES_HELP),
    no_args_is_help=True,
    # rich's help panels for a terminal; plain text into a pipe or a log, where the panels' box characters only get
    # in the way and loading rich's help formatter (typer.rich_utils: ~140 ms) was most of a `farm --help`
    rich_markup_mode="markdown" if sys.stdout.isatty() else None,
    pretty_exceptions_enable=False,
)


def _version(value: bool):
    if value:
        import pathlib

        import farm
        from farm.store import git_commit
        from farm.machine import compiler_version
        commit = git_commit(str(pathlib.Path(farm.__file__).resolve().parents[1])) or "unknown (not a git checkout)"
        print(f"farm {farm.__version__}\ncompiler {compiler_version()}\ncommit {commit}")
        raise typer.Exit()


@app.callback()
def _main(version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                                help="Print the farm's version, the compiler's (version and "
                                                     "source hash) and the git commit, and exit.")] = False):
    pass


app.command("run")(run.run)
app.command("compile")(compile_cmd.compile_)
app.command("workloads")(workloads.workloads)
app.command("report")(report.report)
app.command("runs")(runs.runs)
app.command("cluster")(cluster.cluster)
app.command("tune")(tune.tune)
app.command("gate")(gate.gate)
app.command("dashboard")(dashboard.dashboard)
app.command("repro")(repro.repro)
app.add_typer(store.app)
app.add_typer(cache.app)

if __name__ == "__main__":
    app()
