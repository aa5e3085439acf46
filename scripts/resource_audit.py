#!/usr/bin/env python3
"""Registers and shared memory of the corpus kernels beside Triton's, and why ours are more (issue 24), CPU only.

    python3 scripts/resource_audit.py [NAME_OR_GLOB ...] [--out DIR] [--ab SWITCHES ...] [--timings GLOB]
                                      [--keep DIR]

Every kernel of workloads/corpus (or those named) is compiled at its GPU specialization by both compilers for
sm_90a in this one process (scripts/_bench_host_corpus.py: ours by `kernel.warmup`, Triton 3.6 by `triton.compile`
as its launcher would call it), and both PTX go through the same ptxas (`-v`): registers, spills, static shared
memory; dynamic shared memory from each compiler's metadata; resident blocks per SM from compiler/resources.py
`occupancy`, and which limit binds them (registers, shared memory, threads).

The cause of each difference comes from the compilers' own records, not from the totals:
- ours: every shared-memory use the code generator makes (`Emitter.smem_begin`, recorded with its caller: a copy
  ring with its stages and slot bytes, loop-invariant wgmma operands stored before a loop, a dot operand staged per
  iteration, a layout conversion with its tile, a reduction's or scan's cross-warp buffer, a histogram) and which
  of them are live together at the kernel's peak (rings and stored operands stay while their loop runs; the other
  uses start at the top of what is live);
- Triton: its TTGIR run through its own shared-memory allocation (the passes `make_llir` runs first) gives every
  explicit buffer (`ttg.local_alloc`: a pipeline's multi-buffered operand tiles, their count) and every scratch
  user (convert_layout, reduce, scan, ...) with its offset; scratch bytes are the total above the buffers;
- registers: ptxas's figures, beside a liveness count of each PTX (virtual registers live at once, 64-bit ones
  counted twice, the same model for both compilers) with the instruction kinds that define what is live at the
  peak. Where the PTX peaks differ as much as ptxas's figures do, the values our PTX keeps live are the cause; where
  they do not, ptxas's allocation of similar code (instruction order, uniform registers) is.
A measured GPU time ratio ours/Triton per kernel (H100) is paired with each row: the newest row for the kernel in
the `--timings` folders' JSON (`scripts/bench_corpus.py` output), the variant's time where an A/B switch it timed
became the code (docs/EXPERIMENTS.md "Made the only code"). A row with fewer blocks per SM than Triton's then
reads "pays" (ours faster by over 2%), "costs" (slower by over 2%) or "even".

`--ab SWITCHES` (repeatable) compiles ours again under TILEFARM_AB=SWITCHES for the kernels that use more than
Triton, and reports the registers / shared memory / blocks per SM under it. NOTES below holds what reading a
kernel's PTX (both compilers') found where the rules cannot say it; a note is shown beside the rule's cause.
Writes OUT/resources.json and OUT/resources.md; prints a table.
"""
from __future__ import annotations

import argparse
import collections
import datetime
import fnmatch
import glob
import json
import os
import re
import shutil
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for _p in (ROOT, os.path.join(ROOT, "scripts")):
    if _p not in sys.path:
        sys.path.insert(0, _p)

ARCH = "sm_90"  # occupancy limits (sm_90a's are sm_90's)
SMS = 132  # the H100 SXM's SMs, where the timings were taken
TIMINGS = os.path.join(ROOT, "benchmarks", "2026-12-0*-h100*")

# What reading both compilers' PTX (and ttgir) found for kernels whose rule-made cause is not the whole story.
# Shown beside the rule's cause; the audit prints "(stale note?)" when the figures it was written for changed.
# name -> (registers ours/Triton, shared ours/Triton when written, note)
# (Written 2026-12-06, sixteenth session, on tree 8e61ecf, for the 47 kernels with fewer blocks per SM.)
_RING_SYNC = ("mma.sync copy ring of num_stages slots where Triton keeps num_stages - 1 buffers (passes/pipeline.py "
              "_pipeline_async)")
_PHILOX = ("the dropout mask's Philox key schedule sits in vector registers where ptxas keeps Triton's in uniform "
           "registers (same instructions in nearly the same order; docs/EXPERIMENTS.md, sink_loads)")
NOTES: dict = {
    "adamw_step_f32": ((48, 40), None, "our PTX issues all seven loads (with their `other` moves) first; with each "
                       "load just before its first user ptxas takes 40 (docs/EXPERIMENTS.md, CPU only, no code)"),
    "bias_gelu_bwd_f16": ((39, 32), None, "GELU's derivative expanded branch-free (64 fma + 64 selp a thread) where "
                          "Triton's libdevice path branches; ptxas fits ours in 32 without spilling"),
    "blocksparse_attn_f16": ((132, 128), None, "q, a loop-invariant wgmma operand of a dot under an `if` in the loop, "
                             "is written to shared memory on every enabled block and its 16 registers held across "
                             "the loop; the pending A/B hoist_in_ifs gives 128 registers, 4 blocks (untimed)"),
    "bmm3d_bcast_w_f16acc": ((134, 99), None, "the broadcast weight's mma.sync fragments come from 64 16-bit "
                             "shared loads an iteration (Triton: ldmatrix) and 16-bit loop-carried registers take a "
                             "32-bit phi each; pack_carried16 and slice_ldmatrix, the code since, pack them (123 "
                             "registers, 4 blocks)"),
    "bucketize_left_odd_n_i64": ((48, 40), (4112, 4096), "registers bind; the 16 B over Triton's are the 1-D "
                                 "conversion buffer's row padding (a 1-D buffer has one row: never used)"),
    "col_var_f32": ((80, 64), None, "32 programs: one wave either way"),
    "cosine_rows_f64": ((80, 70), None, "fp64 rows: same PTX shape (loads, 31 shuffles against 42); ptxas's choice"),
    "decode_split_kv_f16": ((80, 72), None, "Triton's own kernel spills 8 B at 72; ours 0 at 80"),
    "desc_mm_ieee_ragged_f32": ((168, 96), (17920, 16392), "fp32 'ieee' FMA dot on tensor descriptors: both operand "
                                "tiles come by 64 scalar loads a thread and one conversion into the FMA operand "
                                "layouts (17.5 KiB), where Triton's TMA loads land in shared memory and its dot reads "
                                "them there (no ring: an FMA ring of narrow copies took 168 -> 187 registers, "
                                "docs/EXPERIMENTS.md ring_narrow)"),
    "dropout_add_layernorm_f16": ((63, 48), None, _PHILOX + "; sink_compares took it from 95 to 63 registers "
                                  "(0.944 of the time)"),
    "dropout_f32": ((40, 32), None, _PHILOX),
    "kl_div_rows_f32": ((72, 46), None, "Triton's SASS issues its 16 loads in groups between the exponentials, ours "
                        "all first (docs/EXPERIMENTS.md: peak 66 live against 38)"),
    "linear_decode_bias_m32_bf16": ((72, 64), (49152, 36864), _RING_SYNC + "; grid of 128 programs"),
    "logsumexp_dim1_bf16": ((64, 56), None, "512 programs: one wave either way"),
    "maxpool2x2_bwd_atomic_f32": ((40, 32), (8208, 8192), "the atomics' pointer and value tiles go to a "
                                  "one-a-thread layout through shared memory as in Triton's (+16 B: the 1-D buffer's "
                                  "unused row padding); registers bind"),
    "minhash_umulhi_u32": ((94, 32), None, "the [BLOCK_L, NUM_HASH] tile's layout holds the hash dim in each "
                           "thread's registers (lanes and warps along L), so a[None, :] and b[None, :] are 64 "
                           "registers each a thread, converted from their load layout through shared memory every "
                           "iteration (66 shared loads, 10 barriers); Triton spreads the hash dim over lanes (1 value "
                           "of a, b a thread) and reduces L in registers. Layout choice, not a local fix"),
    "mm_blockptr_nested_colmajor_bf16": ((128, 128), (167936, 98304), "the outer loop carries the accumulator in a "
                                         "blocked layout: converted to the MMA layout and back (128x128 fp32, 68 KiB) "
                                         "every outer iteration above the live 96 KiB ring, 1 block an SM; Triton "
                                         "carries #mma through both loops. A/B nested_mma_carry: 98304 B, 2 blocks"),
    "mm_blocksparse_csr_f16": ((94, 93), (73728, 49156), "ring of 3 slots where Triton's pipeliner keeps 2 (its "
                               "CSR index load takes a stage); index_ahead made this 0.97 of Triton's"),
    "mm_decode_m16_f16": ((72, 64), (81920, 61440), _RING_SYNC + "; grid of 128 programs"),
    "mm_desc_persistent_leaky_bf16": ((143, 93), (131072, 114712), "persistent: 132 programs, one an SM, the ring "
                                      "sized for one block (persistent_one_block)"),
    "mm_even_k_f16": ((250, 128), (98304, 65536), "B's column index through tl.where(rn < N, rn, 0) hides its "
                      "contiguity from our axis analysis: A rides the ring, B is loaded a step ahead by 64 scalar "
                      "loads a thread and staged through 32 KiB of scratch every iteration (half_ring, 0.588 of the "
                      "register pipeline's time)"),
    "mm_fp32_ieee": ((110, 96), (55296, 32768), "FMA-dot copy ring of 3 padded slots (18 KiB a stage) where Triton "
                     "keeps 2 of 16 KiB (fma_ring: 0.922 of the register pipeline's time)"),
    "mm_gelu_m32_f16": ((168, 123), (81920, 61440), _RING_SYNC),
    "mm_int8_i32": ((150, 128), (163840, 65536), "loose ring (4 slots, copies 2 ahead) with the int8 B tile "
                    "transposed into 2 x 16 KiB of scratch every iteration (int8 wgmma reads B K-major); the tight "
                    "order measured 1.041 on it (ring_deep); Triton rings A only"),
    "mm_small_tile_f64": ((168, 128), (8704, 16384), "fp64 32x32x16 on two warps, K = 1000: rows only 8-byte aligned, "
                          "no 16-byte copies, so the register pipeline (32 fp64 a thread a step ahead, converted "
                          "through shared memory: 4 barriers a step against 2); pending A/B "
                          "ring_narrow,slot128,mma_swizzle64: 95 registers, 9 blocks (Triton 8), untimed"),
    "mm_splitk_m32_f16": ((72, 56), (36864, 24576), "mma.sync copy ring of 3 slots where Triton keeps 2; grid of 256"),
    "mm_tf32": ((186, 128), (83968, 98304), "tf32 dot on wgmma: fp32 tiles do not ride the copy ring (it takes 8- "
                "and 16-bit operands), so they load a step ahead into registers (64 a thread) and are stored to "
                "shared memory every iteration; Triton rings them (cp.async). tf32_wgmma: 0.675 of the mma.sync time"),
    "rmsnorm_looped_f32": ((63, 48), (16400, 4096), "the 4096-float tile's conversion goes through a buffer of the "
                           "whole tile (16 KiB) where Triton's converts it in rounds through 4 KiB; registers bind"),
    "rope_bwd_rotate_half_inplace_f16": ((72, 54), (272, 0), "cos and sin (64 fp32) load in one slice layout and are "
                                         "converted into another, twice each (4 conversions, 7 barriers); Triton "
                                         "loads them where they are used"),
    "rope_interleaved_f16": ((47, 40), (272, 0), "the cos/sin vectors (64 fp32) load in a 1-D layout and are "
                             "converted into the 3-D tile's slice layout (3 barriers); Triton loads them in it"),
    "segmented_cumsum_flags_f32": ((109, 96), (4160, 2048), "the int8 flag tile loads 16 a thread and is converted "
                                   "whole (4x1024 i8) into the scan's 4-a-thread layout; our scan's cross-warp step "
                                   "takes 125 shuffles against 35; Triton converts the fp32 result in rounds"),
    "selective_scan_f16": ((55, 48), None, "256 programs: one wave either way"),
    "tiny_bmm16_f16": ((40, 30), (9216, 3072), "mma.sync copy ring of 4 slots of 2 KiB (num_stages + 1: the loose "
                       "ring fits) where Triton keeps 2"),
    "transpose_addr_f16": ((56, 40), (9216, 8192), "the same conversion as Triton's (64x64 fp16), padded rows "
                           "(+1 KiB) and read back by 16 scalar 16-bit loads a thread"),
    "transpose64_f32": ((40, 32), None, "the transpose's conversion stores 32 scalars and reads 8 vectors a thread "
                        "(Triton: 32 scalar reads); 12 B spilled at 32"),
    "union_find_roots_while_i32": ((55, 44), (8208, 16), "the while loop's gathers take a 4-a-thread layout while "
                                   "the loop carries one-a-thread values: 5 conversions an iteration through shared "
                                   "memory (i32 x3, i1, the pointer tile: 8 KiB), 20 barriers against 6; Triton's "
                                   "loop converts nothing"),
    "voxelize_floor_trunc_f32": ((60, 56), (8208, 8192), "the atomics' pointer, mask and value tiles converted to a "
                                 "one-a-thread layout as in Triton's (+16 B of unused 1-D padding); registers bind"),
}

# Measured A/Bs that gave one of those kernels Triton's figure and timed it on the H100 (3 rounds beside Triton):
# name -> (time with Triton's figure / time with ours, where from). Above 1.02: our extra resources pay.
EVIDENCE: dict = {
    "linear_decode_bias_m32_bf16": (1.139, "ring_sync_shallow (Triton's slot count, 6 blocks) took 1.139x: "
                                    "benchmarks/2026-12-06i-h100/ab-group-a.md"),
    "mm_decode_m16_f16": (1.105, "ring_sync_shallow took 1.105x (ab-group-a.md)"),
    "mm_splitk_m32_f16": (1.254, "ring_sync_shallow took 1.254x (ab-group-a.md)"),
    "mm_gelu_m32_f16": (0.992, "ring_sync_shallow took 0.992x (ab-group-a.md)"),
    "tiny_bmm16_f16": (1.006, "ring_sync_shallow took 1.006x (ab-group-a.md)"),
    "dropout_f32": (1.001, "sink_loads (32 registers, 16 blocks as Triton's) took 1.001x: "
                    "benchmarks/2026-12-06e-h100/ab-sink-fp8.md"),
}


# ---------------------------------------------------------------------------------------------------- PTX reading
_REG = re.compile(r"%[a-z]+\d+")
_LABEL = re.compile(r"^([$\w]+):$")
_NODEF = ("st.", "bar.", "bra", "ret", "red.", "cp.async", "fence", "wgmma.fence", "wgmma.commit", "wgmma.wait",
          "mbarrier.init", "mbarrier.arrive.expect", "mbarrier.try_wait", "membar", "prefetch", "stmatrix",
          "cp.reduce", "exit", "trap", "griddepcontrol", "setmaxnreg", "barrier.", "elect")


def _reg_width(r: str) -> int:
    """32-bit registers a PTX virtual register takes (predicates: none)."""
    k = r[1:].rstrip("0123456789")
    return {"rd": 2, "fd": 2, "p": 0}.get(k, 1)


def _instructions(ptx: str) -> list:
    """The kernel body's instructions in order: ("label", name) or ("ins", opcode, defs, uses, guard, target).
    Inline assembly's braces are flattened; a guarded instruction's definitions do not end earlier values."""
    text = ptx[ptx.index(".entry"):]
    text = text[text.index("{") + 1:]
    text = re.sub(r"//[^\n]*", "", text)
    out = []
    for raw in re.split(r";|\n", text):
        ln = raw.strip().strip("{}").strip()
        if not ln or ln.startswith("."):
            continue
        m = _LABEL.match(ln)
        if m:
            out.append(("label", m.group(1)))
            continue
        guard = None
        pm = re.match(r"@!?(%\w+)\s+(.*)", ln, re.S)
        if pm:
            guard, ln = pm.group(1), pm.group(2)
        parts = ln.split(None, 1)
        op, args = parts[0], parts[1] if len(parts) > 1 else ""
        if op.startswith(_NODEF):
            defs, uses = [], _REG.findall(args)
        else:
            m2 = re.match(r"\s*(\{[^}]*\}|[^,]+)(.*)", args, re.S)
            defs, uses = (_REG.findall(m2.group(1)), _REG.findall(m2.group(2))) if m2 else ([], [])
            if op.startswith("wgmma.mma_async"):
                uses = uses + defs  # the accumulator is read and written
        if guard:
            uses.append(guard)
        target = args.strip().split(",")[0].strip() if op.startswith("bra") else None
        out.append(("ins", op, defs, uses, guard, target))
    return out


def _kind(op: str) -> str:
    """What an instruction's result is, for the peak's breakdown."""
    if op.startswith(("ld.global", "ld.param", "ld.shared", "ld.local", "ld.const")):
        return ".".join(op.split(".")[:2])
    if op.startswith(("mma.sync", "wgmma")):
        return "mma accumulator"
    if op.startswith("cvt"):
        return "cvt"
    if op.startswith("mov"):
        return "mov (constants, phis)"
    if op.startswith("shfl"):
        return "shfl"
    return "arith"


def ptx_pressure(ptx: str) -> dict:
    """Peak of 32-bit registers live at once in the PTX (a backward liveness over its basic blocks), and what
    defined the values live there ({kind: registers}), 64-bit values counted twice."""
    ins = _instructions(ptx)
    blocks, cur, labels = [], [], {}
    for it in ins:
        if it[0] == "label":
            if cur:
                blocks.append(cur)
            cur = []
            labels[it[1]] = len(blocks)
            continue
        cur.append(it)
        if it[1].startswith(("bra", "ret", "exit")):
            blocks.append(cur)
            cur = []
    if cur:
        blocks.append(cur)
    n = len(blocks)
    succ = []
    for i, b in enumerate(blocks):
        last, s = b[-1], []
        if last[1].startswith("bra"):
            if last[5] in labels:
                s.append(labels[last[5]])
            if last[4] is not None and i + 1 < n:
                s.append(i + 1)
        elif not last[1].startswith(("ret", "exit")) and i + 1 < n:
            s.append(i + 1)
        succ.append(s)
    gen, kill = [], []
    for b in blocks:
        g, k = set(), set()
        for it in b:
            g.update(u for u in it[3] if u not in k)
            if it[4] is None:
                k.update(it[2])
        gen.append(g)
        kill.append(k)
    live_in = [set() for _ in range(n)]
    changed = True
    while changed:
        changed = False
        for i in range(n - 1, -1, -1):
            out = set().union(*(live_in[j] for j in succ[i]))
            new = gen[i] | (out - kill[i])
            if new != live_in[i]:
                live_in[i], changed = new, True
    defined = {}
    for b in blocks:
        for it in b:
            for d in it[2]:
                defined.setdefault(d, it[1])
    peak, at = 0, set()
    for i, b in enumerate(blocks):
        live = set().union(*(live_in[j] for j in succ[i]))
        for it in reversed(b):
            if it[4] is None:
                live.difference_update(it[2])
            live.update(it[3])
            w = sum(_reg_width(r) for r in live)
            if w > peak:
                peak, at = w, set(live)
    kinds = collections.Counter()
    for r in at:
        k = _kind(defined.get(r, "?"))
        if k == "arith" and r.startswith("%rd"):
            k = "64-bit address"
        kinds[k] += _reg_width(r)
    return {"peak": peak, "kinds": dict(kinds.most_common())}


def ptx_counts(ptx: str) -> dict:
    """Instruction counts that tell the kernels' code apart (static, whole kernel)."""
    ops = [it[1] for it in _instructions(ptx) if it[0] == "ins"]
    c = collections.Counter()
    for op in ops:
        if op.startswith("ld.global"):
            c["ld.global"] += 1
            m = re.search(r"\.v(\d)", op)
            c["ld.global elems"] += int(m.group(1)) if m else 1
        elif op.startswith("ld.shared"):
            c["ld.shared"] += 1
        elif op.startswith("st.shared"):
            c["st.shared"] += 1
        elif op.startswith("bar.sync") or op.startswith("barrier.sync"):
            c["bar.sync"] += 1
        elif op.startswith("mma.sync"):
            c["mma.sync"] += 1
        elif op.startswith("wgmma.mma_async"):
            c["wgmma"] += 1
        elif op.startswith("cp.async") and not op.startswith(("cp.async.wait", "cp.async.commit")):
            c["cp.async"] += 1
        elif op.startswith("shfl"):
            c["shfl"] += 1
        elif op.startswith("ldmatrix"):
            c["ldmatrix"] += 1
    m = re.search(r"\.minnctapersm\s+(\d+)", ptx)
    if m:
        c["minnctapersm"] = int(m.group(1))
    return dict(c)


# ------------------------------------------------------------------------------------------------ our compiler
_USE = {"_e_async_copy": "ring", "hoist_operands": "stored operands", "to_dot_operand": "dot operand",
        "_dot_wgmma": "dot operand", "convert": "conversion", "convert_together": "conversion",
        "_e_reduce": "reduction", "_cross_warp_scan": "scan", "_e_histogram": "histogram",
        "_broadcast_scalar": "scalar broadcast"}


class SmemRecorder:
    """Records every `Emitter.smem_begin` of our code generator while installed: its caller's kind, bytes, the
    offset it starts at (what is live below it), and for a ring its spec, for a conversion its tile."""

    def __init__(self):
        self.events = []

    def __enter__(self):
        from compiler.codegen import llvm as L

        self._cls, self._orig = L.Emitter, L.Emitter.smem_begin
        rec, orig = self, self._orig

        def smem_begin(em, nbytes):
            f = sys._getframe(1)
            name = f.f_code.co_name
            ev = {"use": _USE.get(name, name), "by": name, "bytes": int(nbytes), "base": int(em.smem_base)}
            if name == "_e_async_copy":
                sp = f.f_locals["ring"].spec
                ev["ring"] = {"stages": sp["stages"], "stage_bytes": sp["stage_bytes"],
                              "tiles": [list(t) for t in sp["tiles"]], "ebytes": list(sp["ebytes"]),
                              "padded": list(sp.get("padded", ())), "ahead": sp.get("ahead")}
            elif name == "convert":
                x = f.f_locals["x"]
                ev["tile"] = f"{'x'.join(map(str, x.ll.shape)) or 'scalar'} {x.regs[0].type}"
                ev["pad"] = f.f_locals.get("plan", {}).get("pad") if isinstance(f.f_locals.get("plan"), dict) \
                    else None
            elif name == "convert_together":
                ev["tile"] = ", ".join(f"{'x'.join(map(str, x.ll.shape))} {x.regs[0].type}"
                                       for x, _ in f.f_locals["pairs"])
            rec.events.append(ev)
            return orig(em, nbytes)

        L.Emitter.smem_begin = smem_begin
        return self

    def __exit__(self, *exc):
        self._cls.smem_begin = self._orig


def smem_peak(events: list) -> dict:
    """The uses live together at our kernel's shared-memory peak: rings and stored operands held while their loop
    runs (a later use starting at or below one's offset means its loop ended), the use on top."""
    live, best = [], None
    for ev in events:
        live = [x for x in live if x["base"] < ev["base"]]
        top = ev["base"] + -(-ev["bytes"] // 16) * 16
        if best is None or top > best[0]:
            best = (top, live + [ev])
        if ev["use"] in ("ring", "stored operands"):
            live.append(ev)
    return {"bytes": best[0] if best else 0, "uses": best[1] if best else []}


def compile_ours(case, args, kw) -> dict:
    import _bench_host_corpus as BC

    with SmemRecorder() as rec:
        _, ptx, dyn = BC.compile_ours(case, args, kw)
    ptx = ptx if isinstance(ptx, str) else ptx.decode()
    rings = [ev["ring"] | {"bytes": ev["bytes"]} for ev in rec.events if "ring" in ev]
    return {"ptx": ptx, "dyn_shared": dyn, "events": rec.events, "peak": smem_peak(rec.events), "rings": rings}


# ----------------------------------------------------------------------------------------------------- Triton
_MEMDESC = re.compile(r"!ttg\.memdesc<([0-9x]+)x([a-zA-Z0-9]+)[,>]")
_TENSOR = re.compile(r"tensor<([0-9x]+)x(!tt\.ptr<[^>]*>|[a-zA-Z0-9]+)")


def _elem_bytes(t: str) -> int:
    if "ptr" in t:
        return 8
    if t.startswith("f8") or t in ("i8", "i1"):
        return 1
    m = re.search(r"(\d+)$", t)
    return max(1, int(m.group(1)) // 8) if m else 4


def triton_allocation(ttgir: str) -> dict:
    """Triton's shared-memory plan for its TTGIR: the passes its make_llir runs up to the allocation, on a copy
    parsed from the text; every op with an offset. {"total", "buffers": [{shape, type, bytes, offset, stages}],
    "scratch": [{op, tile, offset}]}."""
    from triton._C.libtriton import ir, nvidia, passes
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import make_backend

    ctx = ir.context()
    ir.load_dialects(ctx)
    make_backend(GPUTarget("cuda", 90, 32)).load_dialects(ctx)
    with tempfile.NamedTemporaryFile("w", suffix=".ttgir", delete=False) as f:
        f.write(ttgir)
    try:
        mod = ir.parse_mlir_module(f.name, ctx)
    finally:
        os.unlink(f.name)
    mod.context = ctx
    pm = ir.pass_manager(ctx)
    passes.ttgpuir.add_combine_tensor_select_and_if(pm)
    passes.ttgpuir.add_allocate_warp_groups(pm)
    passes.convert.add_scf_to_cf(pm)
    passes.gluon.add_inliner(pm)
    nvidia.passes.ttgpuir.add_allocate_shared_memory_nv(pm, 90, 83)
    pm.run(mod, "resource_audit")
    text = str(mod)
    m = re.search(r"ttg\.shared = (\d+)", text)
    total = int(m.group(1)) if m else 0
    indexed = set(re.findall(r"ttg\.memdesc_index (%[\w.#]+)\[", text))
    buffers, scratch = [], []
    for ln in text.splitlines():
        om = re.search(r"allocation\.offset = (\d+)", ln)
        if not om:
            continue
        off = int(om.group(1))
        if "ttg.local_alloc" in ln:
            mm = _MEMDESC.search(ln.split("->")[-1]) or _MEMDESC.search(ln)
            if not mm:
                continue
            dims = [int(d) for d in mm.group(1).split("x")]
            nb = _elem_bytes(mm.group(2))
            for d in dims:
                nb *= d
            name = ln.split("=")[0].strip()
            buffers.append({"shape": dims, "type": mm.group(2), "bytes": nb, "offset": off,
                            "stages": dims[0] if len(dims) >= 2 and name in indexed else 1})
        else:
            opm = re.search(r"(?:=\s*|^\s*)\"?([a-z_]+\.[\w.]+)\"?", ln)
            tm = _TENSOR.search(ln)
            scratch.append({"op": opm.group(1) if opm else "?", "offset": off,
                            "tile": f"{tm.group(1)} {tm.group(2)}" if tm else ""})
    top = max((b["offset"] + b["bytes"] for b in buffers), default=0)
    return {"total": total, "buffers": buffers, "scratch": scratch, "buffer_bytes": top,
            "scratch_bytes": max(0, total - top) if scratch else 0}


def compile_triton(case, args, kw) -> dict:
    import _bench_host_corpus as BC
    import triton

    got = {}
    real = triton.compile

    def keep(*a, **k):
        got["k"] = real(*a, **k)
        return got["k"]

    triton.compile = keep
    try:
        _, ptx, dyn = BC.compile_triton(case, args, kw)
    finally:
        triton.compile = real
    ptx = ptx if isinstance(ptx, str) else ptx.decode()
    ttgir = got["k"].asm["ttgir"]
    try:
        alloc = triton_allocation(ttgir)
    except Exception as e:  # noqa: BLE001 -- the totals still stand without the plan
        alloc = {"error": f"{type(e).__name__}: {e}"[:200], "buffers": [], "scratch": [], "total": dyn,
                 "buffer_bytes": 0, "scratch_bytes": 0}
    return {"ptx": ptx, "dyn_shared": dyn, "alloc": alloc, "ttgir": ttgir,
            "num_stages": getattr(got["k"].metadata, "num_stages", None)}


# ------------------------------------------------------------------------------------------------ resources
def assembled(ptx: str, dyn: int) -> dict:
    """ptxas -v figures of a PTX (the ptxas ours uses, for both compilers), shared memory with the dynamic part,
    blocks per SM and the limits that bind them."""
    from compiler.codegen.ptx import ptx_resources
    from compiler.resources import occupancy

    m = re.search(r"^\.target\s+(sm_\w+)", ptx, re.M)
    r = ptx_resources(ptx, m.group(1) if m else "sm_90a")
    n = re.search(r"^\s*\.(?:reqntid|maxntid)\s+(\d+)", ptx, re.M)
    threads = int(n.group(1)) if n else 128
    regs = r.get("registers")
    shared = (r.get("shared") or 0) + (dyn or 0)
    out = {"registers": regs, "shared": shared, "static_shared": r.get("shared") or 0,
           "spill_stores": r.get("spill_stores", 0), "spill_loads": r.get("spill_loads", 0), "threads": threads}
    if regs is None:
        return out
    blocks = occupancy(regs, shared, threads, ARCH)
    by = {"registers": occupancy(regs, 0, threads, ARCH), "shared": occupancy(1, shared, threads, ARCH),
          "threads": occupancy(1, 0, threads, ARCH)}
    out["blocks_per_sm"] = blocks
    out["bound_by"] = [k for k, v in by.items() if v == blocks]
    return out


# ---------------------------------------------------------------------------------------------------- causes
def _kb(n) -> str:
    return f"{n / 1024:.1f} KiB" if n >= 1024 else f"{n} B"


def _ring_text(r) -> str:
    tiles = " + ".join("x".join(map(str, t)) for t in r["tiles"])
    return f"{r['stages']} x {_kb(r['stage_bytes'])} ({tiles})"


def shared_cause(ours: dict, tri: dict, o: dict, t: dict) -> tuple[str, str]:
    """(cause class, detail) of our larger shared memory: the part of our peak (copy ring, operands stored once
    or staged per iteration, the scratch use on top) that exceeds its counterpart in Triton's plan by the most."""
    ta = tri["alloc"]
    peak = ours["peak"]["uses"]
    tbuf = [b for b in ta["buffers"] if b["bytes"] > 64]  # not mbarriers
    t_ring = [b for b in tbuf if b["stages"] > 1]
    t_single = [b for b in tbuf if b["stages"] <= 1]
    t_ring_bytes = sum(b["bytes"] for b in t_ring)
    t_single_bytes = sum(b["bytes"] for b in t_single)
    tscr = ta["scratch_bytes"] if tbuf else ta["total"]
    parts = []  # (class, detail, bytes above Triton's counterpart)
    rings = [u for u in peak if u["use"] == "ring"]
    if rings:
        r = rings[0]["ring"]
        ring_bytes = sum(u["bytes"] for u in rings)
        t_stages = max((b["stages"] for b in t_ring), default=0)
        t_stage_bytes = sum(b["bytes"] // b["stages"] for b in t_ring)
        tb = ", ".join(f"{'x'.join(map(str, b['shape']))} {b['type']}" for b in t_ring)
        if not t_ring:
            cls, det = "ring where Triton has none", (f"our copy ring {_ring_text(r)} = {_kb(ring_bytes)}; Triton "
                                                      f"keeps no multi-buffered tile")
        elif r["stages"] > t_stages:
            cls, det = "ring: more stages", (f"ring {_ring_text(r)} = {_kb(ring_bytes)} against Triton's {tb} = "
                                             f"{_kb(t_ring_bytes)}")
        elif r["stage_bytes"] > t_stage_bytes:
            cls, det = "ring: wider slots", (f"ring {_ring_text(r)} against Triton's {tb} ({_kb(t_stage_bytes)} "
                                             f"a stage)")
        else:
            cls, det = "ring: more tiles", f"ring {_ring_text(r)} against Triton's {tb}"
        parts.append((cls, det, ring_bytes - t_ring_bytes))
    once = [u for u in peak if u["use"] in ("stored operands", "dot operand")]
    if once:
        ob = sum(u["bytes"] for u in once)
        what = " + ".join(f"{_kb(u['bytes'])} {u['use']}" for u in once)
        ts = ", ".join(f"{'x'.join(map(str, b['shape']))} {b['type']}" for b in t_single) or "none"
        cls = "dot operand staging" if any(u["use"] == "dot operand" for u in once) else "stored dot operands"
        parts.append((cls, f"{what} (wgmma operands in shared memory) against Triton's single buffers {ts} = "
                           f"{_kb(t_single_bytes)}", ob - t_single_bytes))
    top = peak[-1] if peak else None
    if top is not None and top["use"] not in ("ring", "stored operands", "dot operand"):
        what = top.get("tile", "")
        tconv = [x for x in ta["scratch"] if x["op"] == "ttg.convert_layout"]
        shape = what.split()[0].rstrip(",") if what else ""
        same = [x for x in tconv if x["tile"] and x["tile"].split()[0] == shape]
        on_top = f", on top of {_kb(top['base'])} our ring / stored operands hold" if top["base"] else ""
        # Triton's scratch for the matching use: what its plan holds above its buffers, else (placed in buffers'
        # space once they are dead) at most its whole total
        t_share = tscr if tscr else ta["total"]
        if top["use"] == "conversion":
            n_el = 1
            for d in shape.split("x") if shape and shape != "scalar" else ():
                n_el *= int(d)
            ours_eb = {"double": 8, "i64": 8, "ptr": 8, "half": 2, "bfloat": 2, "i16": 2, "i8": 1, "i1": 1}.get(
                what.split()[1] if len(what.split()) > 1 else "", 4)
            t_eb = _elem_bytes(same[0]["tile"].split()[1]) if same and len(same[0]["tile"].split()) > 1 else 0
            if not same:
                cls = "conversion Triton avoids"
                det = (f"conversion of {what} through {_kb(top['bytes'])}; Triton's kernel converts "
                       f"{', '.join(x['tile'] for x in tconv) or 'nothing'}")
            elif ours_eb > t_eb:
                cls = "conversion of a wider type"
                det = (f"conversion of {what} through {_kb(top['bytes'])}; Triton converts the tile as "
                       f"{same[0]['tile']} (after the cast)")
            elif ta["total"] < n_el * t_eb:
                cls = "conversion scratch: whole tile"
                det = (f"conversion of {what}: {_kb(top['bytes'])} (the whole tile) where Triton's converts the "
                       f"same tile in rounds (its whole plan {_kb(ta['total'])})")
            elif top["bytes"] - n_el * ours_eb <= 16 * max(1, n_el * ours_eb // 128):
                cls = "conversion padding"
                det = f"conversion of {what}: {_kb(top['bytes'])} for {_kb(n_el * ours_eb)} of data (row padding)"
            else:
                cls = "conversion scratch: more"
                det = f"conversion of {what}: {_kb(top['bytes'])} against Triton's {_kb(t_share)}"
        else:
            cls = f"{top['use']} scratch"
            det = f"{top['use']} buffer {_kb(top['bytes'])} against Triton's scratch {_kb(tscr)}"
        parts.append((cls, det + on_top, top["bytes"] - min(t_share, top["bytes"]) if not top["base"] else
                      top["bytes"] - tscr))
    if not parts:
        return "other", f"+{o['shared'] - t['shared']} B"
    parts.sort(key=lambda p: -p[2])
    return parts[0][0], "; ".join(p[1] for p in parts if p[2] > 0) or parts[0][1]


_KIND_WORDS = {"ld.shared": "values read from shared memory", "ld.global": "loaded values",
               "mma accumulator": "dot accumulators / fragments", "cvt": "converted (widened) values",
               "mov (constants, phis)": "constants and loop-carried values", "arith": "computed values",
               "ld.param": "kernel arguments", "shfl": "shuffled values", "64-bit address": "64-bit addresses"}


def at_register_cap(ptx: str, regs: int) -> dict:
    """ptxas -v of our PTX held to `regs` registers a thread (`.maxnreg`, any `.minnctapersm` taken out): whether
    ptxas fits the kernel there without spilling, i.e. whether the registers above are its choice or a need."""
    from compiler.codegen import _beside_reqntid
    from compiler.codegen.ptx import ptx_resources

    ptx = re.sub(r"^\.minnctapersm[^\n]*\n", "", ptx, flags=re.M)
    try:
        r = ptx_resources(_beside_reqntid(ptx, f".maxnreg {max(16, regs)}"), "sm_90a")
    except Exception as e:  # noqa: BLE001
        return {"error": f"{type(e).__name__}: {e}"[:200]}
    return {"registers": r.get("registers"), "spill_stores": r.get("spill_stores", 0)}


def sass_counts(ptx: str) -> dict | None:
    """SASS instructions of a PTX (same ptxas) and those on the uniform datapath (an U* opcode or an UR operand):
    values ptxas keeps once per warp instead of once per thread. None without nvdisasm."""
    from compiler.codegen.ptx import _assemble, find_nvdisasm

    nvd = find_nvdisasm()
    if nvd is None:
        return None
    from sass_compare import sass

    cubin, _ = _assemble(ptx, "sm_90a", ())
    lines = [ln for ln in sass(nvd, cubin) if ln.endswith(";")]
    uni = sum(1 for ln in lines if re.search(r"(^|\s)U[A-Z0-9]+[\s.]|\bUR\d+", re.sub(r"^@!?U?P\w+\s+", "", ln)))
    return {"instructions": len(lines), "uniform": uni}


def register_cause(ours: dict, tri: dict, o: dict, t: dict) -> tuple[str, str]:
    """(cause class, detail) of our larger register count: a dot on mma.sync where Triton's is wgmma; else whether
    ptxas fits our PTX in Triton's count without spills (then the registers are its choice: scheduling for more
    values in flight) or not (then a need: what our PTX keeps live at its peak, the uniform datapath Triton's code
    gets and ours does not)."""
    po, pt = ours["pressure"], tri["pressure"]
    co, ct = ours["counts"], tri["counts"]
    cap = ours.get("cap") or {}
    so, st = ours.get("sass"), tri.get("sass")
    dr = o["registers"] - t["registers"]
    dp = po["peak"] - pt["peak"]
    more = {k: po["kinds"].get(k, 0) - pt["kinds"].get(k, 0) for k in set(po["kinds"]) | set(pt["kinds"])}
    k, v = max(more.items(), key=lambda kv: kv[1]) if more else ("", 0)
    live = f"PTX peak {po['peak']} / {pt['peak']} live" + (f" (+{v} {_KIND_WORDS.get(k, k)})" if v > 0 else "")
    uni = ""
    if so and st:
        uni = f"uniform-datapath SASS {so['uniform']} / {st['uniform']}"
    notes = [live] + ([uni] if uni else [])
    if co.get("mma.sync") and not co.get("wgmma") and ct.get("wgmma"):
        return "dot on mma.sync", "; ".join([f"our dot runs on mma.sync ({co['mma.sync']}) where Triton's is wgmma "
                                             f"({ct['wgmma']}): operand fragments in registers"] + notes)
    if cap.get("spill_stores") == 0 and cap.get("registers") is not None:
        return "ptxas's choice (fits Triton's count)", "; ".join(
            [f"at .maxnreg {t['registers']} ptxas fits ours with no spill"] + notes)
    spill = f"at .maxnreg {t['registers']} ours spills {cap.get('spill_stores')} B"
    if so and st and st["uniform"] >= 30 and so["uniform"] * 3 < st["uniform"]:
        return "uniform datapath", "; ".join([spill, f"Triton's code keeps per-warp values in uniform registers "
                                                     f"({st['uniform']} SASS instructions against {so['uniform']})",
                                              live])
    if dp >= max(4, dr // 2) and v > 0:
        return f"PTX keeps more live: {_KIND_WORDS.get(k, k)}", "; ".join([spill] + notes)
    return "ptxas's schedule of similar PTX", "; ".join([spill] + notes)


# ---------------------------------------------------------------------------------------------------- timings
def adopted_switches() -> set:
    """The A/B switches that became the code (docs/EXPERIMENTS.md, the table under "Made the only code")."""
    path = os.path.join(ROOT, "docs", "EXPERIMENTS.md")
    out = set()
    if not os.path.exists(path):
        return out
    text = open(path).read()
    i = text.find("## Made the only code")
    for ln in text[i:].splitlines() if i >= 0 else ():
        m = re.match(r"\|\s*([a-z0-9_, ()`]+?)\s*\|", ln)
        if m and m.group(1) not in ("switch",):
            for s in re.split(r"[,\s()`]+", m.group(1)):
                if s:
                    out.add(s)
    return out


def load_timings(pattern: str) -> dict:
    """{kernel: {"ratio", "file", "date", "how"}}: the newest GPU timing of each kernel ours/Triton in the
    folders' JSON (by the file's date); an A/B row whose switches all became the code gives its variant's ratio."""
    adopted = adopted_switches()
    out = {}
    for path in sorted(glob.glob(os.path.join(pattern, "*.json"))):
        try:
            doc = json.load(open(path))
        except (OSError, ValueError):
            continue
        if not isinstance(doc, dict) or not isinstance(doc.get("rows"), list):
            continue
        date = doc.get("date", "")
        for r in doc["rows"]:
            if not isinstance(r, dict) or "name" not in r or r.get("ratio") is None:
                continue
            if not (r.get("tilefarm", {}).get("ok") and r.get("triton", {}).get("ok")):
                continue
            ratio, how = r["ratio"], "default"
            for sw, v in (r.get("ab") or {}).items():
                if set(sw.split(",")) <= adopted and v.get("vs_triton"):
                    ratio, how = v["vs_triton"], f"A/B {sw} (now the code)"
            old = out.get(r["name"])
            if old is None or date >= old["date"]:
                out[r["name"]] = {"ratio": ratio, "file": os.path.relpath(path, ROOT), "date": date, "how": how}
    return out


def verdict(row: dict) -> str:
    """For a kernel with fewer blocks per SM than Triton's: "moot" where the grid takes as many waves either way
    and fits one (a persistent grid of one program per SM), else what its measured time says (ours over Triton's
    by over 2%: "costs", under by over 2%: "pays", else "even"), or what an A/B with Triton's figure measured."""
    o, t = row["ours"], row["triton"]
    if (o.get("blocks_per_sm") or 0) >= (t.get("blocks_per_sm") or 0):
        return "no block lost"
    wo, wt = waves(row.get("grid"), o["blocks_per_sm"]), waves(row.get("grid"), t["blocks_per_sm"])
    if wo is not None and wo == wt == 1:
        return f"moot (grid {row['grid']}: one wave either way)"
    ev = EVIDENCE.get(row["name"])
    timing = row.get("timing")
    if ev and ev[0] is not None:
        return f"{'pays' if ev[0] > 1.02 else 'costs' if ev[0] < 0.98 else 'even'} (A/B {ev[0]:.3f}x)"
    if timing is None:
        return "untimed"
    r = timing["ratio"]
    return f"{'pays' if r <= 0.98 else 'costs' if r >= 1.02 else 'even'} ({r:.2f}x)"


# ------------------------------------------------------------------------------------------------------- main
def audit_one(case, tcase, ab_variants) -> dict:
    import _bench_host_corpus as BC

    args, kw = BC.prepare(case)
    grid = gpu_grid(case)
    ours = compile_ours(case, args, kw)
    targs, tkw = BC.prepare(tcase)
    tri = compile_triton(tcase, targs, tkw)
    o = assembled(ours["ptx"], ours["dyn_shared"])
    t = assembled(tri["ptx"], tri["dyn_shared"])
    for side in (ours, tri):
        side["pressure"] = ptx_pressure(side["ptx"])
        side["counts"] = ptx_counts(side["ptx"])
    if (o.get("registers") or 0) > (t.get("registers") or 0):
        ours["cap"] = at_register_cap(ours["ptx"], t["registers"])
        ours["sass"], tri["sass"] = sass_counts(ours["ptx"]), sass_counts(tri["ptx"])
    row = {"name": case.name, "file": getattr(case, "file", ""), "grid": grid, "ours": o, "triton": t,
           "ours_smem": {"peak": ours["peak"], "uses": ours["events"], "rings": ours["rings"]},
           "triton_smem": tri["alloc"], "triton_num_stages": tri["num_stages"],
           "ours_ptx": {"pressure": ours["pressure"], "counts": ours["counts"], "sass": ours.get("sass"),
                        "at_triton_registers": ours.get("cap")},
           "triton_ptx": {"pressure": tri["pressure"], "counts": tri["counts"], "sass": tri.get("sass")}}
    more_r = (o.get("registers") or 0) > (t.get("registers") or 0)
    more_s = o["shared"] > t["shared"]
    row["more"] = [w for w, f in (("registers", more_r), ("shared", more_s)) if f]
    if more_s:
        row["shared_cause"], row["shared_detail"] = shared_cause(ours, tri, o, t)
    if more_r:
        row["register_cause"], row["register_detail"] = register_cause(ours, tri, o, t)
    if row["more"] and ab_variants:
        row["ab"] = {}
        prev = os.environ.get("TILEFARM_AB")
        try:
            for sw in ab_variants:
                os.environ["TILEFARM_AB"] = sw
                v = compile_ours(case, args, kw)
                a = assembled(v["ptx"], v["dyn_shared"])
                if v["ptx"] != ours["ptx"]:  # a switch that changes nothing here is left out
                    row["ab"][sw] = {k: a.get(k) for k in ("registers", "shared", "spill_stores", "blocks_per_sm")}
                    row["ab"][sw]["ptx_changed"] = True
        finally:
            if prev is None:
                os.environ.pop("TILEFARM_AB", None)
            else:
                os.environ["TILEFARM_AB"] = prev
    return row, ours, tri


def gpu_grid(case):
    """Programs the kernel launches at its GPU size (None where the case's launch does not give a plain grid)."""
    try:
        pc, pg, meta = case.params("ci"), case.params("gpu"), case.meta_for("gpu")
        arrays = {**case.make_inputs(pc), **case.make_outputs(pc)}
        grid, _ = case.launch(pg, arrays, meta)
        if callable(grid):
            grid = grid(meta)
        n = 1
        for g in grid:
            n *= int(g)
        return n
    except Exception:  # noqa: BLE001
        return None


def waves(grid, blocks) -> int | None:
    """Rounds of resident blocks the grid takes on an H100 (132 SMs)."""
    if not grid or not blocks:
        return None
    return -(-grid // (blocks * SMS))


def _binding(o: dict, t: dict) -> str:
    """What costs our kernel its blocks: Triton's registers (with our shared memory) or Triton's shared memory
    (with our registers) would give back its blocks; "both" where only the two together do."""
    from compiler.resources import occupancy

    if (o.get("blocks_per_sm") or 0) >= (t.get("blocks_per_sm") or 0):
        return ""
    th = o["threads"]
    by_r = occupancy(min(o["registers"], t["registers"]), o["shared"], th, ARCH) > o["blocks_per_sm"]
    by_s = occupancy(o["registers"], min(o["shared"], t["shared"]), th, ARCH) > o["blocks_per_sm"]
    return "registers" if by_r and not by_s else "shared" if by_s and not by_r else \
        "either" if by_r else "both"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("select", nargs="*", help="corpus kernel names or globs (default: all)")
    ap.add_argument("--out", default=os.path.join(ROOT, "benchmarks", f"resources-{datetime.date.today()}"))
    ap.add_argument("--ab", action="append", default=[], metavar="SWITCHES",
                    help="also compile ours under TILEFARM_AB=SWITCHES (repeatable; kernels above Triton only)")
    ap.add_argument("--timings", default=TIMINGS, help="folders (a glob) of GPU corpus timings, bench_corpus JSON")
    ap.add_argument("--keep", metavar="DIR", help="keep both compilers' PTX and Triton's TTGIR here")
    a = ap.parse_args()
    os.environ["TILEFARM_CACHE"] = "0"  # the code generator must run (its shared-memory uses are recorded)
    tcache = tempfile.mkdtemp(prefix="resource-audit-triton-")
    os.environ["TRITON_CACHE_DIR"] = tcache
    import _bench_host_corpus as BC

    files = BC.case_files()
    if a.select:
        files = {n: p for n, p in files.items() if any(fnmatch.fnmatchcase(n, g) for g in a.select)}
    if not files:
        sys.exit(f"resource_audit: no corpus kernel matches {' '.join(a.select)}")
    timings = load_timings(a.timings)
    if a.keep:
        os.makedirs(a.keep, exist_ok=True)
    rows, loaded, t0 = [], {}, time.time()
    print(f"{'kernel':44s} {'regs':>9s} {'shared':>15s} {'blocks':>6s}  cause")
    for name, path in sorted(files.items()):
        for which in ("ours", "triton"):
            if (path, which) not in loaded:
                loaded[path, which] = BC.cases_of(path, which)
        try:
            row, ours, tri = audit_one(loaded[path, "ours"][name], loaded[path, "triton"][name], a.ab)
        except (Exception, SystemExit) as e:  # noqa: BLE001 -- one kernel's failure is a row, not the end
            rows.append({"name": name, "error": f"{type(e).__name__}: {e}"[:300]})
            print(f"{name:44s} error: {rows[-1]['error']}", flush=True)
            continue
        if a.keep:
            for which, side in (("ours", ours), ("triton", tri)):
                with open(os.path.join(a.keep, f"{name}.{which}.ptx"), "w") as f:
                    f.write(side["ptx"])
            with open(os.path.join(a.keep, f"{name}.triton.ttgir"), "w") as f:
                f.write(tri["ttgir"])
        o, t = row["ours"], row["triton"]
        row["binding"] = _binding(o, t)
        row["timing"] = timings.get(name)
        row["waves"] = [waves(row["grid"], o.get("blocks_per_sm")), waves(row["grid"], t.get("blocks_per_sm"))]
        row["verdict"] = verdict(row) if row["more"] else ""
        if name in EVIDENCE:
            row["evidence"] = EVIDENCE[name][1]
        note = NOTES.get(name)
        if note:
            regs, shared, text = note
            stale = (regs and regs != (o["registers"], t["registers"])) or \
                    (shared and shared != (o["shared"], t["shared"]))
            row["note"] = text + (" (stale note? figures changed)" if stale else "")
        row["cause"] = cause_text(row)
        rows.append(row)
        print(f"{name:44s} {o['registers']:4d}/{t['registers']:<4d} {o['shared']:7d}/{t['shared']:<7d} "
              f"{o.get('blocks_per_sm')!s:>2s}/{t.get('blocks_per_sm')!s:<3s} {row['cause']}", flush=True)
    doc = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "command": " ".join(["python", "scripts/resource_audit.py"] + sys.argv[1:]), "env": versions(),
           "wall_s": round(time.time() - t0, 1), "ab": a.ab, "timings": a.timings, "rows": rows}
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "resources.json"), "w") as f:
        json.dump(doc, f, indent=1, default=str)
    with open(os.path.join(a.out, "resources.md"), "w") as f:
        f.write(markdown(doc))
    shutil.rmtree(tcache, ignore_errors=True)
    print(f"wrote {os.path.relpath(a.out, os.getcwd())}/resources.md and resources.json ({doc['wall_s']} s)")


def cause_text(row) -> str:
    parts = []
    if "shared_cause" in row:
        parts.append(f"shared: {row['shared_cause']}")
    if "register_cause" in row:
        parts.append(f"registers: {row['register_cause']}")
    return "; ".join(parts) or "-"


def versions() -> dict:
    from importlib.metadata import version

    out = {}
    for mod in ("triton", "llvmlite"):
        try:
            out[mod] = version(mod)
        except Exception:  # noqa: BLE001
            out[mod] = None
    try:
        from compiler.resources import ptxas_version

        out["ptxas"] = ptxas_version()
    except Exception:  # noqa: BLE001
        out["ptxas"] = None
    try:
        import subprocess

        out["tree"] = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                                     text=True).stdout.strip()
    except OSError:
        out["tree"] = None
    return out


def markdown(doc) -> str:
    rows = [r for r in doc["rows"] if "error" not in r]
    more = [r for r in rows if r["more"]]
    fewer = [r for r in more if r["binding"]]
    env = doc["env"]
    out = [f"# Registers and shared memory beside Triton's ({doc['date']})", "",
           f"`{doc['command']}` on tree {env.get('tree')}: Triton {env.get('triton')}, llvmlite "
           f"{env.get('llvmlite')}, ptxas {env.get('ptxas')} for both compilers' PTX; sm_90a, each kernel at its GPU "
           f"specialization. {len(rows)} kernels; {len(more)} use more registers or shared memory than Triton's, "
           f"{len(fewer)} of them get fewer blocks per SM. GPU ratios ours/Triton (H100) from `{doc['timings']}`.",
           ""]
    # cause counts
    counts = collections.Counter()
    for r in more:
        for k in ("shared_cause", "register_cause"):
            if k in r:
                counts[(k.split("_")[0], r[k], bool(r["binding"]))] += 1
    out += ["## Causes", "", "| resource | cause | kernels | of them with fewer blocks |", "|---|---|---:|---:|"]
    agg = collections.defaultdict(lambda: [0, 0])
    for (res, c, f), n in counts.items():
        agg[(res, c)][0] += n
        if f:
            agg[(res, c)][1] += n
    for (res, c), (n, f) in sorted(agg.items(), key=lambda kv: (kv[0][0], -kv[1][0])):
        out.append(f"| {res} | {c} | {n} | {f} |")
    vc = collections.Counter(r["verdict"].split(" (")[0] for r in fewer)
    out += ["", "Fewer blocks per SM: " + ", ".join(f"{k} {v}" for k, v in sorted(vc.items())), ""]
    hdr = ["| kernel | registers | shared bytes | blocks/SM | lost to | GPU time ours/Triton | verdict | cause | "
           "detail |", "|---|---:|---:|---:|---|---:|---|---|---|"]

    def line(r):
        o, t = r["ours"], r["triton"]
        tm = r.get("timing")
        det = "; ".join(x for x in (r.get("note"), r.get("shared_detail"), r.get("register_detail"),
                                    r.get("evidence")) if x)
        if r.get("ab"):
            det += "; " + "; ".join(f"under {sw}: {v['registers']} regs, {v['shared']} B, {v['blocks_per_sm']} blocks"
                                    for sw, v in r["ab"].items() if v.get("ptx_changed"))
        return (f"| {r['name']} | {o['registers']}/{t['registers']} | {o['shared']}/{t['shared']} | "
                f"{o.get('blocks_per_sm')}/{t.get('blocks_per_sm')} | {r['binding'] or '-'} | "
                f"{'%.2f' % tm['ratio'] if tm else '-'} | {r['verdict']} | {r['cause']} | {det} |")
    out += ["## Fewer blocks per SM than Triton's", ""] + hdr
    out += [line(r) for r in sorted(fewer, key=lambda r: r["name"])]
    out += ["", "## More registers or shared memory, the same blocks per SM", ""] + hdr
    out += [line(r) for r in sorted(more, key=lambda r: r["name"]) if not r["binding"]]
    errs = [r for r in doc["rows"] if "error" in r]
    if errs:
        out += ["", "## Errors", ""] + [f"- {r['name']}: {r['error']}" for r in errs]
    out += ["", "Registers and spills from `ptxas -v`; shared bytes static + dynamic; blocks per SM from "
            "compiler/resources.py `occupancy`. \"lost to\": which of our figures alone costs the blocks (Triton's "
            "registers with our shared memory, or the reverse, would give them back). Timings are the newest "
            "measurement found (file and date in resources.json), not necessarily of this tree's code."]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    main()
