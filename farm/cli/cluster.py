"""`farm cluster`: what a run would get: Ray nodes, CPUs, GPUs, and work queued there."""
from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from farm.cli.common import console, handle_errors


@handle_errors
def cluster(
    address: Annotated[str | None, typer.Option(help="Ray cluster to inspect (`auto`, `ray://host:10001`); "
                                                     "without it a local Ray is started just to look.")] = None,
    num_cpus: Annotated[int | None, typer.Option(help="CPUs for the local Ray.")] = None,
):
    """Show the Ray cluster a run would use: nodes, CPUs, GPUs (kind), memory, and pending work.

    Without --address this starts a local Ray (a few seconds) and reports this machine; whether this
    process sees a GPU is shown too, since that decides between timing and interpreter-only validation.
    """
    from farm import worker
    from farm.config import Cluster
    from farm.executor import make_executor
    with console.status("starting Ray ..." if not address else f"joining {address} ..."):
        ex = make_executor(Cluster(address=address, num_cpus=num_cpus), address=address)
    try:
        res = ex.resources()
        info = ex.details()
    finally:
        ex.close()
    ok, why = worker.gpu_available()
    console.print(f"Ray: {res['nodes']} node(s), {res['cpus']} CPUs, {res['gpus']} GPUs "
                  f"{', '.join(res['gpu_names'])} [dim](ready in {res['init_s']:.1f} s)[/]")
    t = Table(header_style="bold")
    for c in ("node", "alive", "CPUs", "GPUs", "memory GiB", "object store GiB"):
        t.add_column(c)
    for n in info["nodes"]:
        r = n["Resources"]
        t.add_row(n["NodeManagerAddress"], str(n["Alive"]), f"{r.get('CPU', 0):g}", f"{r.get('GPU', 0):g}",
                  f"{r.get('memory', 0) / 2**30:.1f}", f"{r.get('object_store_memory', 0) / 2**30:.1f}")
    console.print(t)
    console.print(f"available now: {info['available']}")
    console.print(f"this process: {'GPU ' + worker.gpu_kind() if ok else 'no GPU (' + why + ')'}")
    console.print(f"compiler: {worker.compiler_version()}")
