"""What the assembler made of a compiled kernel, known without a GPU: registers per thread, spill bytes, shared
memory, local (stack) bytes, resident blocks per SM, and the ptxas release that decided them.

    from compiler.resources import kernel_resources
    kernel_resources(kernel.warmup(..., grid=(1,)))
    # {"regs": 40, "spill_stores": 0, "spill_loads": 0, "shared_bytes": 8192, "local_bytes": 0,
    #  "blocks_per_sm": 6, "ptxas_version": "13.5.37"}

The numbers come from `ptxas -v` on the kernel's PTX (the run that makes its cubin: the cubin is kept in the
kernel's artifacts and disk cache, so asking costs no extra assembly when the cubin was not made yet).
`shared_bytes` is the static shared memory ptxas reports plus the dynamic shared memory the kernel launches with.
`blocks_per_sm` is the occupancy the limits of the target give for that register and shared-memory use and
the kernel's block size (`occupancy`); on a GPU the driver's occupancy calculator says the same for these
targets.
"""
from __future__ import annotations

import functools
import re
import subprocess

__all__ = ["kernel_resources", "occupancy", "parse_ptxas_log", "ptxas_version", "LIMITS"]

# Per-SM limits by target (CUDA programming guide, "compute capabilities" table): max resident blocks, threads,
# 32-bit registers, shared memory for blocks, the largest block allocation, the per-block reservation the
# runtime takes, and the allocation units (registers per warp, shared bytes).
LIMITS = {
    "sm_80": dict(blocks=32, threads=2048, regs=65536, smem=167936, smem_block=166912, reserved=1024,
                  reg_unit=256, smem_unit=128, max_regs=255),
    "sm_86": dict(blocks=16, threads=1536, regs=65536, smem=102400, smem_block=101376, reserved=1024,
                  reg_unit=256, smem_unit=128, max_regs=255),
    "sm_89": dict(blocks=24, threads=1536, regs=65536, smem=102400, smem_block=101376, reserved=1024,
                  reg_unit=256, smem_unit=128, max_regs=255),
    "sm_90": dict(blocks=32, threads=2048, regs=65536, smem=233472, smem_block=232448, reserved=1024,
                  reg_unit=256, smem_unit=128, max_regs=255),
}

_RES = {
    "regs": re.compile(r"Used (\d+) registers"),
    "static_shared": re.compile(r"(\d+) bytes smem"),
    "spill_stores": re.compile(r"(\d+) bytes spill stores"),
    "spill_loads": re.compile(r"(\d+) bytes spill loads"),
    "local_bytes": re.compile(r"(\d+) bytes stack frame"),
}


def parse_ptxas_log(log: str) -> dict:
    """The numbers `ptxas -v` prints for one kernel (0 for a line it did not print: ptxas omits zero smem)."""
    out = {}
    for k, rx in _RES.items():
        m = rx.search(log)
        out[k] = int(m.group(1)) if m else 0
    if not _RES["regs"].search(log):
        raise ValueError("no resource usage in ptxas' output (was it run with -v?)")
    return out


@functools.lru_cache(maxsize=None)
def ptxas_version(exe: str | None = None) -> str | None:
    """The release of the ptxas that assembles kernels ("13.5.37"), or None when there is none."""
    from .codegen.ptx import find_ptxas

    exe = exe or find_ptxas()
    if exe is None:
        return None
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"V(\d+\.\d+\.\d+)", out) or re.search(r"release (\d+\.\d+)", out)
    return m.group(1) if m else None


def _base_arch(arch: str) -> str:
    m = re.match(r"sm_(\d+)", arch)
    return f"sm_{m.group(1)}" if m else arch


def occupancy(regs: int, shared_bytes: int, threads: int, arch: str = "sm_90") -> int:
    """Resident blocks per SM for a kernel using `regs` registers per thread and `shared_bytes` of shared memory
    per block of `threads` threads: the smallest of the block, warp, register and shared-memory limits. 0 when
    one block does not fit at all."""
    lim = LIMITS.get(_base_arch(arch))
    if lim is None:
        raise ValueError(f"no occupancy limits known for {arch} (known: {', '.join(LIMITS)})")
    if threads <= 0 or threads > 1024 or regs > lim["max_regs"]:
        return 0
    warps = -(-threads // 32)
    by_threads = lim["threads"] // (warps * 32)
    regs_per_warp = -(-max(regs, 1) * 32 // lim["reg_unit"]) * lim["reg_unit"]
    # The register file is four partitions (one per warp scheduler); a warp's registers live in one of them,
    # so whole warps are counted per partition (what the driver's occupancy calculator does).
    by_regs = ((lim["regs"] // 4) // regs_per_warp * 4) // warps
    limits = [lim["blocks"], by_threads, by_regs]
    if shared_bytes > lim["smem_block"]:
        return 0
    if shared_bytes:
        per_block = -(-(shared_bytes + lim["reserved"]) // lim["smem_unit"]) * lim["smem_unit"]
        limits.append(lim["smem"] // per_block)
    return max(0, min(limits))


def kernel_resources(kernel) -> dict | None:
    """Resources of a CompiledKernel (see the module docstring); None when no ptxas can be found. Raises the
    compiler's PTXASError when ptxas rejects the PTX (as assembling it would)."""
    from .codegen.ptx import _assemble, find_ptxas, ptx_arch

    asm, meta = kernel.asm, kernel.metadata
    # Only the compiler's own artifacts (StageArtifacts): a hand-made asm dict is not known to be real PTX.
    if find_ptxas() is None or not hasattr(asm, "cached") or asm.cached("ptx") is None:
        return None
    arch = ptx_arch(asm["ptx"], meta.get("arch", "sm_90"))
    cubin, log = _assemble(asm["ptx"], arch, ("-v",))
    if cubin is None:
        return None
    if hasattr(asm, "cached") and asm.cached("cubin") is None:
        asm.set_cubin(cubin)  # this run made the cubin: kept (and saved to the disk cache), not assembled again
    r = parse_ptxas_log(log)
    threads = int(meta.get("num_warps", 4)) * 32
    shared = r.pop("static_shared") + int(meta.get("shared_bytes", 0) or 0)
    out = {"regs": r["regs"], "spill_stores": r["spill_stores"], "spill_loads": r["spill_loads"],
           "shared_bytes": shared, "local_bytes": r["local_bytes"],
           "blocks_per_sm": occupancy(r["regs"], shared, threads, arch) if _base_arch(arch) in LIMITS else None,
           "ptxas_version": ptxas_version()}
    return out
