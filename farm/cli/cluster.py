"""`farm cluster`: what a run would get: Ray nodes, CPUs, GPUs, and work queued there."""
from __future__ import annotations

from typing import Annotated

import typer

from farm.cli.common import (FormatOpt, check_format, console, handle_errors, human, messages_to_stderr, print_csv,
                              print_json)


@handle_errors
def cluster(
    address: Annotated[str | None, typer.Option(help="Ray cluster to inspect (`auto`, `ray://host:10001`); "
                                                     "without it a local Ray is started just to look.")] = None,
    num_cpus: Annotated[int | None, typer.Option(help="CPUs for the local Ray.")] = None,
    insecure_cluster: Annotated[bool, typer.Option(help="Allow joining a Ray cluster without authentication.")] = False,
    fmt: FormatOpt = "table",
):
    """Show the Ray cluster a run would use: nodes, CPUs, GPUs (kind), memory, Triton, and pending work.

    Without --address this starts a local Ray (a few seconds) and reports this machine; whether this
    process sees a GPU is shown too, since that decides between timing and interpreter-only validation.
    """
    from farm import machine
    from farm.config import Cluster
    from farm.executor import make_executor
    check_format(fmt)
    with messages_to_stderr(fmt):
        with human(fmt).status("starting Ray ..." if not address else f"joining {address} ..."):
            ex = make_executor(Cluster(address=address, num_cpus=num_cpus), address=address,
                               insecure=insecure_cluster)
        try:
            res = ex.resources()
            info = ex.details()
            # which Triton each node's processes see: where `triton` jobs can run (placement prefers those nodes)
            tri = ex.triton_nodes([n["NodeID"] for n in info["nodes"] if n["Alive"]], wait_s=30) \
                if hasattr(ex, "triton_nodes") else {}
        finally:
            ex.close()
    ok, why = machine.gpu_available()
    if fmt != "table":
        nodes = [{"address": n["NodeManagerAddress"], "node_id": n["NodeID"], "alive": n["Alive"], "cpus": n["Resources"].get("CPU", 0),
                  "gpus": n["Resources"].get("GPU", 0), "memory_gib": n["Resources"].get("memory", 0) / 2**30,
                  "object_store_gib": n["Resources"].get("object_store_memory", 0) / 2**30,
                  "triton": tri.get(n["NodeID"])} for n in info["nodes"]]
        if fmt == "csv":
            return print_csv(nodes, list(nodes[0]) if nodes else ["address"])
        return print_json({"resources": res, "available": info["available"], "nodes": nodes,
                           "this_process": {"gpu": machine.gpu_kind() if ok else None, "why_not": None if ok else why},
                           "compiler": machine.compiler_version()})
    console.print(f"Ray: {res['nodes']} node(s), {res['cpus']} CPUs, {res['gpus']} GPUs "
                  f"{', '.join(res['gpu_names'])} [dim](ready in {res['init_s']:.1f} s)[/]")
    from rich.table import Table

    t = Table(header_style="bold")
    for c in ("node", "alive", "CPUs", "GPUs", "memory GiB", "object store GiB", "Triton"):
        t.add_column(c)
    for n in info["nodes"]:
        r = n["Resources"]
        t.add_row(n["NodeManagerAddress"], str(n["Alive"]), f"{r.get('CPU', 0):g}", f"{r.get('GPU', 0):g}",
                  f"{r.get('memory', 0) / 2**30:.1f}", f"{r.get('object_store_memory', 0) / 2**30:.1f}",
                  tri.get(n["NodeID"]) or "-")
    console.print(t)
    console.print(f"available now: {info['available']}")
    console.print(f"this process: {'GPU ' + machine.gpu_kind() if ok else 'no GPU (' + why + ')'}")
    console.print(f"compiler: {machine.compiler_version()}")
