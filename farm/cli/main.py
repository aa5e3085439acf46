"""The `farm` app: registers one command per module in farm/cli/."""
from __future__ import annotations

import typer

from farm.cli import cluster, compile as compile_cmd, dashboard, gate, repro, report, run, runs, tune, workloads

app = typer.Typer(
    name="farm",
    help=("Compile, validate and time tile-language kernels over shape sweeps, on this machine or a Ray "
          "cluster, and keep every result.\n\n"
          "Start with `farm run configs/quick.yaml`; then `farm runs` and `farm report latest`. "
          "`farm workloads` lists what you can sweep; `farm compile` shows what a kernel compiles to."),
    no_args_is_help=True,
    rich_markup_mode="markdown",
    pretty_exceptions_enable=False,
)
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

if __name__ == "__main__":
    app()
