"""`farm compile`: show what a kernel compiles to (tile IR, LLVM IR, PTX), without a GPU."""
from __future__ import annotations

import pathlib
from typing import Annotated

import typer

from farm import FarmError
from farm.cli.common import EXIT_FAILED, console, err_console, handle_errors

STAGES = ("tile", "llir", "ptx", "cubin")


def parse_value(text: str):
    """'1024' -> 1024, '0.5' -> 0.5, 'true' -> True, anything else stays a string."""
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return text


def parse_pairs(pairs: list[str], what: str) -> dict:
    out = {}
    for p in pairs:
        if "=" not in p:
            raise FarmError(f"{what} {p!r} should look like NAME=VALUE")
        k, v = p.split("=", 1)
        out[k.strip()] = parse_value(v.strip())
    return out


@handle_errors
def compile_(
    target: Annotated[str | None, typer.Argument(help="FILE::NAME (a workload or a @compiler.jit kernel in FILE), "
                                                      "or a registry workload name.")] = None,
    emit: Annotated[str, typer.Option(help="Stage to print: tile, llir, ptx (or cubin with --output).")] = "ptx",
    arg: Annotated[list[str] | None, typer.Option("--arg", "-a", help=(
        "For a workload: a shape parameter, e.g. --arg N=4096 --arg dtype=float16 (default: its first sweep "
        "point). For a bare kernel: each argument in order, a pointer as X=*float32, a scalar as N=4096."))] = None,
    meta: Annotated[list[str] | None, typer.Option("--meta", "-m", help=(
        "Meta-parameter, e.g. --meta BLOCK=1024 --meta num_warps=4 (default: the workload's default meta)."))] = None,
    arch: Annotated[str, typer.Option(help="Target architecture.")] = "sm_90",
    output: Annotated[str | None, typer.Option("--output", "-o", help="Write the stage to this file.")] = None,
):
    """Compile one kernel and print one stage of it: no GPU needed, nothing is run.

    Examples:

        farm compile vector_add --emit ptx --arg N=4096 --arg dtype=float32 --meta BLOCK=1024

        farm compile my_kernels.py::softmax --emit llir

        farm compile my_kernels.py::add_kernel --arg X=*float32 --arg Y=*float32 --arg Z=*float32 --arg N=4096 --meta BLOCK=256
    """
    if target is None:
        raise FarmError("say what to compile: a registry workload (`farm compile vector_add`; `farm workloads` "
                        "lists them), or FILE::NAME for a workload or @compiler.jit kernel in your file "
                        "(`farm compile my_kernels.py::add_kernel --arg X=*float32 ... --meta BLOCK=256`)")
    if emit not in STAGES:
        raise FarmError(f"--emit must be one of {', '.join(STAGES)}, not {emit!r}")
    args, metas = parse_pairs(arg or [], "--arg"), parse_pairs(meta or [], "--meta")
    try:
        compiled = _compile(target, args, metas, arch)
    except KernelFailed as e:
        err_console.print("[bold red]error:[/] ", end="")
        err_console.print(str(e), markup=False, soft_wrap=True)
        raise typer.Exit(EXIT_FAILED) from None
    asm = getattr(compiled, "asm", {}) or {}
    if emit not in asm:
        raise FarmError(f"no {emit!r} stage (have {', '.join(asm)})"
                        + ("; cubin needs ptxas (pip package nvidia-cuda-nvcc)" if emit == "cubin" else ""))
    text = asm[emit]
    if output:
        pathlib.Path(output).write_bytes(text if isinstance(text, bytes) else text.encode())
        console.print(f"wrote {emit} ({len(text)} bytes) to {output}")
    elif isinstance(text, bytes):
        raise FarmError(f"{emit} is binary: write it with --output FILE")
    else:
        print(text)


def _compile(target: str, args: dict, metas: dict, arch: str):
    import numpy as np

    from farm.inputs import host_arrays, np_dtype
    from farm.jobs import Job
    from farm.loader import describe_import_error, load_workload
    from farm.machine import is_compilation_error
    path, _, name = target.partition("::")
    kernel = None
    if path.endswith(".py") and name:
        import importlib.util
        import sys
        import workloads
        try:
            wls = {w.name: w for w in workloads.load_file(path)}
        except FileNotFoundError as e:
            raise FarmError(str(e)) from None
        except ValueError as e:  # declares no workload: maybe a bare kernel
            wls = {}
        except Exception as e:
            raise FarmError(describe_import_error(e, path)) from None
        if name not in wls:
            p = pathlib.Path(path).resolve()
            mod = sys.modules.get(next((m for m in sys.modules if m.startswith(f"_tilefarm_user_{p.stem}_")), ""))
            if mod is None:
                spec = importlib.util.spec_from_file_location(f"_tilefarm_kernel_{p.stem}", p)
                mod = importlib.util.module_from_spec(spec)
                try:
                    spec.loader.exec_module(mod)
                except Exception as e:
                    raise FarmError(describe_import_error(e, path)) from None
            kernel = getattr(mod, name, None)
            if kernel is None or not hasattr(kernel, "warmup"):
                raise FarmError(f"{path} has no workload or @compiler.jit kernel named {name!r}")
    try:
        if kernel is not None:
            vals = [np.empty(16, np_dtype(v[1:])) if isinstance(v, str) and v.startswith("*") else v
                    for v in args.values()]
            return kernel.warmup(*vals, grid=(1,), target=arch, **metas)
        wl = load_workload(target)
        if wl.warmup is None:
            raise FarmError(f"workload {wl.name} declares no warmup, so it cannot be compiled ahead")
        params = {**(wl.default_sweep[0] if wl.default_sweep else {}), **args}
        job = Job(key="0" * 64, idx=0, workload=target, name=wl.name, params=params, meta={**wl.default_meta, **metas})
        arrays = host_arrays(wl, job, np.random.default_rng(0))[0]
        return wl.compile(arrays, params, job.meta)
    except FarmError:
        raise
    except Exception as e:
        if is_compilation_error(e):
            raise KernelFailed(f"compilation failed:\n{e}") from None
        raise KernelFailed(f"{type(e).__name__}: {e}") from None


class KernelFailed(FarmError):
    """The kernel was found and compiling it failed: the work's failure (exit 1), not a usage error (exit 2)."""
