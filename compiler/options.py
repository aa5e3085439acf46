"""Compile options that change the generated code (part of every cache key)."""
from __future__ import annotations

from dataclasses import dataclass


# On by default since measured on the H200 (every gpu test passes with them; A/B-timed in one process):
# "wgmma_defer" (codegen/dot.py; 2026-11-29) -- attention D=128 419.5 -> 440.2 TFLOP/s, D=64 unchanged, matmul
# untouched. "paired_cvt" (codegen/llvm.py), "ring_dst" (codegen/dot.py) and "smem_convert" (codegen/reduce.py)
# together with the copy ring's wait without a proxy fence (2026-11-30) -- matmul 1.00-1.11x at 1024^3..8192^3
# (2048^3 1.07x), attention D=64 1.05x, D=128 1.01x. "copy_late" (passes/pipeline.py; 2026-11-30) -- attention
# D=64 1.02x, D=128 1.03x (loops of several dots only; the matmul loop lost up to 4% with it). "remat_blocked"
# (passes/assign_layouts.py; 2026-11-30) -- attention D=64 1.03x, D=128 1.01x, matmul 0.98-1.03x (noise).
# "desc64_multi" (codegen/dot.py; 2026-11-30) -- attention D=128 1.02x in three A/B runs, D=64 1.00x.
# "ring_tight_multi" (passes/pipeline.py; 2026-11-30) -- attention D=128 64x64 w4 s3 1.31x (one block per SM -> two).
# "ring_fit" (passes/pipeline.py; 2026-11-30) -- attention D=128 128x128 w8 s2 327 -> 432 TFLOP/s, matmul 128x256x128
# w8 s3 1.22x (the loose ring did not fit: no ring before). "lane_partial_sum" (codegen/reduce.py; 2026-11-30) --
# attention D=64 1.032-1.037x in three A/B runs (128x64 w8 s3), D=128 1.002-1.013x.
DEFAULT_ON = frozenset({"wgmma_defer", "paired_cvt", "ring_dst", "smem_convert", "copy_late", "remat_blocked",
                        "ring_tight", "desc64_multi", "ring_tight_multi", "ring_fit", "lane_partial_sum"})


@dataclass(frozen=True)
class Options:
    """Per-compile knobs: threads per program (num_warps * 32), software-pipeline depth, target, debug checks.

    `debug` turns device asserts on (they compile to nothing otherwise).
    """

    num_warps: int = 4
    num_stages: int = 3
    arch: str = "sm_90"
    debug: bool = False
    enable_fp_fusion: bool = True  # let a*b+c become one FMA (Triton's default)
    # Code-generation switches by name (comma-separated; TILEFARM_EXPERIMENTS sets them for compile_kernel), part of the
    # cache key like every option. A change not yet measured on a GPU ships off and is turned on by its name; one
    # measured and made default (DEFAULT_ON) is turned off by "no_<name>": "wgmma_defer" (attention's P.V wgmma stays in
    # flight into the next iteration); "paired_cvt" (codegen/llvm.py: float32 -> float16/bfloat16 casts as cvt.rn.*x2
    # pairs; ends ptxas's C7514 serialization of 128x128x64 and 64x256x64 w8 matmul); "ring_dst" (codegen/dot.py: a
    # thread's cp.async chunks of one ring slot addressed from one register plus compile-time distances, in 32-bit
    # arithmetic); "smem_convert" (codegen/reduce.py: layout conversions through shared memory with 16-byte row padding
    # against bank conflicts and vector accesses for register runs); "copy_late" (passes/pipeline.py: in a loop of
    # several dots the ring copies follow the last dot instead of preceding the first); "remat_blocked"
    # (passes/assign_layouts.py: index vectors wanted in a blocked layout outside loops are recomputed there, not
    # converted through shared memory); "ring_tight" (passes/pipeline.py: a one-warpgroup, one-dot loop's copy ring
    # keeps num_stages slots, loads num_stages - 1 iterations ahead, and copies after the dot's wgmma wait and a
    # second barrier: more blocks per SM); "ring_tight_multi" (passes/pipeline.py: ring_tight for a one-warpgroup loop
    # of several dots, attention's, where it turns one block per SM into two: D=128 64x64 s3 in 112 KiB instead of
    # 144); "desc64_multi" (codegen/dot.py: "desc64" below for the dots of loops with
    # several dots, attention's); "ring_fit" (passes/pipeline.py: the tight ring, for any number of warps, where the
    # loose ring's three slots do not fit in shared memory, instead of no ring); "lane_partial_sum" (codegen/reduce.py:
    # a loop-carried l = l * a + sum(x, axis) kept as per-lane partial sums, the sum's lane shuffles once after the
    # loop instead of every iteration -- attention's row sum). Off: "cp_fence" (codegen/dot.py: a proxy fence after
    # each copy-ring wait, the conservative reading of the PTX proxy rules, which CUTLASS's cp.async + wgmma
    # mainloop and Triton both omit);
    # "smem_carveout" (codegen/llvm.py + runtime/launch.py: a kernel over 48 KiB of shared memory asks for the largest
    # carveout, as Triton's launcher does; measured: no difference); "stmatrix" (codegen/reduce.py: a layout
    # conversion from MMA accumulator fragments of 16-bit values stores them with stmatrix.m8n8.x4, one per four
    # 8x8 blocks: the matmul epilogue's 64 st.shared.b32 per thread become 16; every gpu test passes with it, and
    # A/B-timed on the H200 it changes nothing beyond the noise, 0.99-1.01); "ring_tight_all" (ring_tight for
    # blocks of two warpgroups too: 128x128x64 w8 s3 in 96 KiB, two blocks per SM; measured 1-8% slower at
    # 4096^3, +10% at 2048^3); "qk_ahead" (passes/pipeline.py + codegen/dot.py: attention's QK of the next
    # iteration issues right after the accumulator's rescale and computes during the softmax's exponentials; every
    # gpu test passes with it; measured on the H200: attention D=64 w4 0.92 of the default (the QK copy-out costs
    # 64 moves per thread and 254 registers), D=128 1.00; the step after it would issue the previous P.V beside
    # the QK and rescale after the P.V wait, as FlashAttention-3 does); "desc64" (codegen/dot.py: wgmma
    # descriptors as one 64-bit base per tile and slot plus a 64-bit constant add per k-step; every gpu test
    # passes with it; two A/B runs on the H200: attention D=128 1.020-1.021, D=64 1.00, matmul 0.98-1.03 with
    # bf16 4096^3 0.986-0.989 in both runs, so only loops of several dots take it by default, desc64_multi);
    # "occupancy" (compile.py: one-warpgroup attention built again for one more block per SM -- tight ring, and
    # where registers are in the way .maxnreg with no P.V in flight across iterations -- kept when ptxas takes it
    # cleanly; every gpu test passes with it; D=64 128x64 w4 s3 three blocks per SM instead of two, but ours with
    # it / without it 0.997-0.999 per round in three A/B runs of the benchmark); "reduce_tree" (codegen/reduce.py:
    # the in-thread part of a reduction as a tree, log2(n) dependent steps instead of a chain; every gpu test passes
    # with it; attention D=64 1.00, D=128 0.97-0.98, w4 0.975); "mbar_ring" (passes/pipeline.py + codegen/dot.py:
    # attention's copy ring hands slots over through full/empty mbarriers instead of a block barrier per
    # iteration, so warpgroups of a block may drift apart; every gpu test passes with it; attention D=64 w8 0.98,
    # w4 0.93, D=128 1.00, a few two-warpgroup configs up to 1.09).
    experiments: str = ""
    # Registers per thread ptxas may use (.maxnreg): the `maxnreg` launch option (Triton's), or the "occupancy"
    # switch's variant (compile.py); None leaves the choice to ptxas.
    maxnreg: int | None = None

    def experiment(self, name: str) -> bool:
        named = self.experiments.split(",")
        return name in named or (name in DEFAULT_ON and f"no_{name}" not in named)

    @property
    def sm(self) -> int:
        """The target's compute capability as a number ("sm_90a" -> 90; 0 when the arch names none)."""
        digits = "".join(ch for ch in str(self.arch) if ch.isdigit())
        return int(digits) if digits else 0

    def __post_init__(self):
        if self.num_warps <= 0 or self.num_warps & (self.num_warps - 1) or self.num_warps > 32:
            raise ValueError(f"num_warps must be a power of two in 1..32, got {self.num_warps}")
        n = self.maxnreg
        if n is not None and (isinstance(n, bool) or not isinstance(n, int) or not 16 <= n <= 255):
            raise ValueError(f"maxnreg must be an int from 16 to 255 (registers per thread), got {n!r}")
