"""Code generation: tile IR -> LLVM IR (llvm.py) -> PTX / cubin (ptx.py).

`compile_function` runs the whole back half for one Function, so the frontend and the runtime call one thing.
"""
from __future__ import annotations

import re
import struct

from ..ir.core import Module
from ..options import Options


def compile_function(fn, options: Options | None = None, *, cubin: bool = True) -> dict:
    """PIPELINE + LLVM emission + PTX (+ cubin when ptxas exists) for `fn` (a Function or a Module).

    Returns {"llir", "ptx", "cubin" (bytes or None: with `cubin=False`, the one assembled on the way if any), "meta"};
    the stage artifacts keep their names so any one can be dumped or cached.
    """
    from ..passes import run_pipeline
    from .llvm import emit_llvm, libdevice_calls
    from .ptx import llvm_to_ptx, prefetch_libdevice, prestart_ptxas, ptx_to_cubin

    options = options or Options()
    module = fn if isinstance(fn, Module) else Module(fn)
    options = target_options(module, options)
    module = run_pipeline(module, options)
    # the assembler starts now, beside LLVM IR emission and LLVM, with the flags its run will have: the PTX's target,
    # line information as emitted, -v (register_headroom and ring_room read the resources of the first assembly;
    # every kernel's is made with -v, so the one started here serves whichever comes)
    blocks = module.meta.get("ring_blocks_per_sm")
    room = module.meta.get("ring_blocks_room") if not (options.maxnreg or blocks) else None
    prestart_ptxas(options.arch, lineinfo=not options.disable_line_info, verbose=True)
    prefetch_libdevice(libdevice_calls(module.function))  # and the libdevice functions it calls, on a thread
    llir, meta = emit_llvm(module, options)
    meta["target"] = options.arch
    ptx = llvm_to_ptx(llir, options.arch)
    if blocks and not options.maxnreg:
        # the blocks per SM a copy ring was sized for (passes/pipeline.py): ptxas fits the registers to them
        ptx = _beside_reqntid(ptx, f".minnctapersm {blocks}")
        meta["ring_blocks_per_sm"] = blocks
    if options.maxnreg:
        ptx = _with_maxnreg(ptx, options.maxnreg)
        meta["maxnreg"] = options.maxnreg
    made = None
    if room:
        ptx, made = ring_room(ptx, options.arch, meta, room)
    if made is None and not options.maxnreg and not blocks:
        ptx, made = register_headroom(ptx, options.arch, meta)
    if cubin and made is None:
        made = ptx_to_cubin(ptx, options.arch)
    # a cubin made on the way (register_headroom, ring_room) is returned even where none was asked for
    return {"llir": llir, "ptx": ptx, "cubin": made, "meta": meta}


def loop_global_loads(ptx: str) -> int:
    """The most global loads (`ld.global`, inline assembly's included) in one loop of the PTX."""
    from .ptx import ptx_loops

    return max((ptx.count("ld.global", a, b) for a, b in ptx_loops(ptx)), default=0)


def register_headroom(ptx: str, arch: str, meta: dict):
    """(PTX, cubin) of a kernel with a loop that loads from global memory twice or more an iteration, assembled with
    `.maxnreg` at the most registers that keep the blocks per SM ptxas's own choice gives.

    Without a register limit ptxas schedules a loop to a register target of its own, and a loop that would need a
    few registers more to keep its loads in flight (issued together, before the first use of one) gets them issued
    one after another, each load's latency waited for in turn; given the limit it uses the registers the occupancy
    leaves free. The kernel is assembled once (`-v`: that cubin is the kernel's where nothing changes) to learn its
    registers, spills and shared memory; where the occupancy leaves registers free and a loop of its machine code
    has a load out of flight whose registers the freed ones could half cover (codegen/sass_bin.py, read from the
    cubin: no disassembler), it is assembled again with the limit, kept only where that puts more of a loop's global
    loads in flight and takes none out of flight in another loop, and spills no more. sm_90 machine code only.
    Returns (PTX, its cubin or None: the caller assembles it); the PTX unchanged without such a loop or without a
    ptxas.

    Timed on the H100 (the A/B `nreg_headroom`, 3 rounds beside Triton, read through nvdisasm then; 2026-12-07d
    first, with the limit kept wherever it spilled no more: the 4-bit group quantizer, 4 -> 3 loads in flight, 1.124,
    hence the check of loads in flight; 2026-12-07e and h in this form, benchmarks/2026-12-07h-h100/abin4.md): the 5
    kernels it changes, the sequence max-pool 0.768 (1.28 -> 0.98 of Triton's), the smoothed cross-entropy 0.848,
    the looped Welford LayerNorm 0.997, the summed-area table 1.002, the triangular solve 1.001. Without the check of
    loads in flight (2026-12-07i) AWQ 1.130. Where the limit is ptxas's own count (no register free) union-find lost
    (1.067): those keep ptxas's choice.

    Its cost is a second ptxas run. Over the 259 corpus kernels 79 reach the first assembly's check (the assembly the
    kernel needs anyway) and 14 have a loop with a load out of flight under a limit above ptxas's count; the limit
    gained on 5 of them. On the 9 where it gained nothing the loads out of flight write 3-135 registers; where the
    limit frees fewer than half of those (colsum 12 against 2 freed, the looped softmax 11 against 2, the selective
    scan 5 against 1, the pointer-array grouped GEMM 135 against 8) ptxas did not issue them together, and those 4
    get no second run; the 5 it gained on all pass (the max-pool 4 against 3 freed, the Welford LayerNorm 8 against
    4). Nor where the limit would be 255, ptxas's own ceiling: 2 more (the spin-lock bucket stats, whose warm compile
    went 0.85 -> 1.51 of Triton's with it, and causal linear attention). 8 corpus kernels are assembled twice; the
    second run costs a warm compile 30-100 ms (the looped softmax 0.82 -> 1.47 of Triton's before this check;
    benchmarks/host-2026-12-07g, host-2026-12-07h)."""
    from ..resources import occupancy
    from .ptx import PTXASError, _assemble, ab_switch, ptx_arch
    from .sass_bin import loops_in_flight

    if loop_global_loads(ptx) < 2:
        return ptx, None
    target = ptx_arch(ptx, arch)
    cubin, log = _assemble(ptx, target, ("-v",))
    if cubin is None or not target.startswith("sm_90"):
        return ptx, cubin
    regs, shared, threads, blocks = _occupancy(log, meta, target)
    spills = _logged(log, "spill_stores")
    if not blocks:
        return ptx, cubin
    limit = regs
    while limit < 255 and occupancy(limit + 1, shared, threads, target) == blocks:
        limit += 1
    if limit == regs and ab_switch("headroom_step"):
        # (A/B `headroom_step`) no register free at ptxas's own occupancy: at the register file's whole-occupancy
        # count (32 a thread for 2048 threads) ptxas schedules to it and issues a loop's loads one after another (the
        # 4-bit group quantizer under div_quot: 2 of its 4 vector loads out of flight, 1.24 of the time of the code
        # that used 40). The limit of the next occupancy step down is tried, kept by the same checks below (more
        # loads in flight, no more spills)
        lower = occupancy(limit + 1, shared, threads, target) if limit < 255 else 0
        while lower and limit < 255 and occupancy(limit + 1, shared, threads, target) == lower:
            limit += 1
    if limit == regs or limit >= 255:
        # no register the occupancy leaves free: held to its own count, ptxas schedules to that limit instead of
        # its own target (union-find 1.067, group norm 0.952, varlen sums 0.975; H100, 2026-12-07). Or the limit
        # would be ptxas's own ceiling, 255: nothing it could not use already (the spin-lock bucket stats at 191
        # and causal linear attention at 204 registers: no load more in flight under it)
        return ptx, cubin
    try:
        before = loops_in_flight(cubin, out_of_flight=True)
    except (ValueError, struct.error):
        return ptx, cubin
    if not any(x["in_flight"] < x["loads"] and x["registers_out"] <= 2 * (limit - regs) for x in before):
        # every load of every loop in flight already, or the registers the limit frees too few against what the
        # loads out of flight would hold: no second assembly
        return ptx, cubin
    roomy = _with_maxnreg(ptx, limit)
    try:
        made, log = _assemble(roomy, target, ("-v",))
        if made is None or _logged(log, "spill_stores") > spills:  # more in flight, but spilled: not worth it
            return ptx, cubin
        if not gains_in_flight(before, loops_in_flight(made)):
            return ptx, cubin
    except (PTXASError, ValueError, struct.error):
        return ptx, cubin
    meta["nreg_headroom"] = limit
    return roomy, made


def ring_room(ptx: str, arch: str, meta: dict, room: int):
    """(PTX, cubin or None) of a kernel whose copy ring leaves shared memory (and, by passes/pipeline.py's estimate,
    registers) for `room` blocks an SM: where ptxas's own register count holds fewer, the PTX again with
    `.minnctapersm room`, kept where no loop of its machine code spills (codegen/sass_bin.py, read from the cubin: a
    spill before or after the loops is paid once a block). A weight-only fp8 GEMM, its e4m3 tile
    register-pipelined and dequantized into scratch: 144 registers, one block an SM, where the ring left room for
    two (Triton's 128, two); held to two blocks, 128 registers and 8 bytes spilled outside its loop. Unchanged where
    ptxas is missing. Measured (H100, 2026-12-07, the A/B `ring_occupancy`, 3 rounds beside Triton,
    benchmarks/2026-12-07h-h100/abin0.md) on the two corpus kernels whose code it changes: that GEMM 0.896 of the
    time (1.24 -> 1.11 of Triton's), SmoothQuant's W8A8 GEMM (194 -> 128 registers, no spill) 0.771 (0.97 -> 0.75).
    One more assembly for a kernel with a ring room (4 corpus kernels), run beside the first."""
    import threading

    from .ptx import PTXASError, _assemble, ptx_arch
    from .sass_bin import spills_in_loops

    target = ptx_arch(ptx, arch)
    if not target.startswith("sm_90"):  # the machine code read below is sm_90's
        return ptx, None
    held = _beside_reqntid(ptx, f".minnctapersm {room}")
    got: list = []

    def assemble_held():
        try:
            got.append(_assemble(held, target, ("-v",)))
        except PTXASError:
            got.append((None, ""))

    # both assemblies at once (the held one is what ptxas's own count usually asks for): the compile waits for the
    # longer one, not for both; where the first shows the count fits, the held one is left to finish on its own
    worker = threading.Thread(target=assemble_held, daemon=True)
    worker.start()
    cubin, log = _assemble(ptx, target, ("-v",))
    if cubin is None:
        return ptx, None
    regs, _shared, _threads, blocks = _occupancy(log, meta, target)
    if not regs or blocks >= room:
        return ptx, cubin
    worker.join()
    made = got[0][0] if got else None
    try:
        if made is None or spills_in_loops(made):
            return ptx, cubin
    except (ValueError, struct.error):
        return ptx, cubin
    meta["ring_blocks_per_sm"] = room
    return held, made


def _occupancy(log: str, meta: dict, target: str):
    """(registers, shared bytes, threads, blocks per SM) of a kernel from its `ptxas -v` log and metadata."""
    from ..resources import occupancy

    regs = _logged(log, "registers")
    shared = _logged(log, "shared") + int(meta.get("shared_bytes", 0))
    threads = 32 * int(meta.get("num_warps", 4))
    return regs, shared, threads, occupancy(regs, shared, threads, target) if regs else 0


def gains_in_flight(before: list, after: list) -> bool:
    """Per-loop `in_flight` lists (codegen/sass.py), matched in order: more loads in flight in one loop, fewer in
    none; False where the loops do not match one to one."""
    if len(before) != len(after):
        return False
    pairs = [(x["in_flight"], y["in_flight"]) for x, y in zip(before, after)]
    return any(y > x for x, y in pairs) and all(y >= x for x, y in pairs)


def _logged(log: str, key: str) -> int:
    """A resource of a `ptxas -v` log (compiler/codegen/ptx.py _RES), 0 where it is not reported."""
    from .ptx import _RES

    m = _RES[key].search(log)
    return int(m.group(1)) if m else 0


def _with_maxnreg(ptx: str, n: int) -> str:
    """The kernel's PTX with `.maxnreg n` beside its `.reqntid` (LLVM's NVPTX back end writes no .maxnreg)."""
    return _beside_reqntid(ptx, f".maxnreg {n}")


def _beside_reqntid(ptx: str, directive: str) -> str:
    """The kernel's PTX with a performance-tuning directive after its `.reqntid`."""
    import re

    out, k = re.subn(r"^(\.reqntid [^\n]*)$", lambda m: f"{m.group(1)}\n{directive}", ptx, count=1, flags=re.M)
    if not k:
        raise ValueError(f"the kernel's PTX has no .reqntid to put {directive.split()[0]} beside")
    return out


def _has_dot(block) -> bool:
    return any(op.kind == "dot" or any(_has_dot(b) for b in op.blocks) for op in block.ops)


def target_options(module, options: Options) -> Options:
    """sm_90 kernels that contain a dot are built for sm_90a (wgmma needs the arch-specific target); the
    metadata's "target" says which one was used. Options.debug_no_wgmma (TILEFARM_NO_WGMMA=1) keeps sm_90
    (mma.sync)."""
    import dataclasses

    if options.arch == "sm_90" and not options.debug_no_wgmma and _has_dot(module.function.body):
        return dataclasses.replace(options, arch="sm_90a")
    return options
