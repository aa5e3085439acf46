"""LLVM IR text -> PTX (llvmlite's NVPTX backend) -> cubin (ptxas), plus resource reports.

The target machine and the parsed libdevice are created once per process (compile time matters); libdevice is
linked only into modules that call `__nv_*` functions, then internalized so unused functions are dropped.
"""
from __future__ import annotations

import atexit
import collections
import functools
import os
import sys
import re
import shutil
import subprocess
import tempfile
import threading

import llvmlite.binding as llvm

from ..options import ab_switch, ab_switches  # noqa: F401 (the switches' reader: codegen imports them from here)

_LOCK = threading.Lock()  # LLVM objects are not thread-safe; compiles from threads serialize here


class PTXASError(Exception):
    """ptxas rejected the PTX; `.log` holds its message."""

    def __init__(self, log: str, arch: str = ""):
        super().__init__(f"ptxas failed for {arch}:\n{log}")
        self.log = log
        self.arch = arch


@functools.lru_cache(maxsize=None)
def _init():
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    return True


AB_SWITCHES: tuple = ()  # the ones llvm_to_ptx reads (none in progress)
# Switches read elsewhere: `scan_direct` / `scan_prefix` (codegen/reduce.py _cross_warp_scan) are settled, not
# pending: forcing either of the two cross-warp schemes against the cost model's choice measured direct 1.022,
# prefix 0.989 over the three corpus scans (H200, 2026-12-02, benchmarks/2026-12-02b/abin1.md), within noise, so the
# model decides; they stay as hooks the scan tests use to run both schemes on every layout (in the cache key).
# (Decided on the H100 on 2026-12-05, docs/EXPERIMENTS.md: the old 8-byte dot store `store_direct` lost and left;
# `fma_no_prefetch`, `convert_narrow` and `reduce_interleave` won and are the code; 2026-12-05, sixth session, H100:
# `pad16` lost and left, `fma_ring` won and is the code; 2026-12-06, H100: `f64_mma` (mm_fp64 0.237), `ring_deep`
# (0.962) and `occ_hint` (0.981) won and are the code; `cp_ignore_src` (1.003, mixed again), `store_split` (1.019) and
# `gather_run` (0.996) lost and left: docs/EXPERIMENTS.md.)
# 2026-12-06, eighth session, H100: `gather_dedupe` won (0.993 over 26, GroupNorm 0.875) and is the code.
# 2026-12-06, ninth session, H100 (benchmarks/2026-12-06c-h100): `unaligned_run` (causal conv1d 0.755),
# `persistent_one_block` (0.886; the persistent tutorials 0.82), `wgmma_f16acc` (mm_fp16_acc 0.380) and `index_ahead`
# (block-sparse matmul 0.860) won and are the code; `sqrt_approx` tied (0.999 over 4) and left: tl.sqrt stays IEEE.
# 2026-12-06, tenth session, H100 (benchmarks/2026-12-06d-h100): `redux` (top-k 0.90), `broadcast_operands` (fused
# linear + cross-entropy 0.94), `free_reshape` (top-k 0.96), `carried_mma` (linear + cross-entropy 0.93) and
# `carried_slice` (paged decode 0.86, split-KV decode 0.95) won and are the code; `no_hoist` won (column variance
# 0.235, split-KV decode 0.868): the hoist_conversions pass left (docs/EXPERIMENTS.md).
# Then `ring_reads` (the copy ring takes 16-bit tiles other ops read: smem_load; chunked retention 0.766, attention
# with a bias tile 0.901) and `ring_rest` (a ring loop's small leftover loads an iteration ahead in registers;
# attention backward dK/dV 0.945) won and are the code.
# 2026-12-06, eleventh session, H100 (benchmarks/2026-12-06e-h100): `fp8_pairs` (fp8 casts two registers a cvt;
# per-token fp8 quantization 0.944) won and is the code; `sink_loads` (loads moved down past long arithmetic to their
# first users) changed nothing measurable (1.001 over the 8 kernels it changed) and left (docs/EXPERIMENTS.md).
# Then `prev_slot` (a copy ring's copies write the slot an earlier iteration read, carried in registers): 0.979 over
# the 36 one-dot loops, 1.004 over the 17 of several dots: the code for one-dot loops (passes/pipeline.py).
# 2026-12-06, twelfth session, H100 (benchmarks/2026-12-06f-h100): `sink_compares` (compares emitted at their
# first users past other work; fused residual + dropout + LayerNorm 95 -> 63 registers) 0.996 over the 45 kernels
# whose SASS it or `remat_loads` changes, dropout + LayerNorm 0.944, none slower by over 2%: the code
# (codegen/llvm.py `_sink_compares`). `histogram_smem` (tl.histogram as one op counted by shared-memory atomics): MoE
# alignment 0.146 of the time (6.5 -> 0.96 of Triton's): the code. `hoist_dot_operands` (a dot operand defined before
# its loop converted once before it): k-means 0.866: the code. `free_no_vote` (constants do not vote for an
# elementwise op's layout): N-body 0.848 but the AWQ int4 GEMM 1.488 and sort + gather 1.209: removed
# (docs/EXPERIMENTS.md).
# 2026-12-06, thirteenth session, H100 (benchmarks/2026-12-06g-h100): `remat_loads` (a load of at most one element a
# thread takes its users' layout; selective scan 0.879, attention backward dK/dV 0.930, W4A16 0.932; split-KV decode
# 0.999 since settle_small_loads; none slower by over 1.1%), `tf32_wgmma` (fp32 "tf32" dots on wgmma: k-means 0.691,
# mm_tf32 0.675) and `hoist_in_dot_loops` (loop-invariant conversions of any op in a loop with a dot go before it:
# SmoothQuant 0.972) won and are the code. `remat_wide` (the direct NCHW convolution 1.180), `half_ring` (AWQ 3.18x,
# SmoothQuant wrong; mm_even_k 0.642, W4A16 0.831) and `desc_delta` (0.985 over 54, but int8 1.053, 64x128x32 masked
# 1.022, mm_even_k 1.020) lost and left (docs/EXPERIMENTS.md).
# Then `mma_ring` (one-dot loops on mma.sync take the copy ring; the six skinny GEMMs of idioms_skinny.py and the
# batched 16x16 dots: 0.848, fp16 GELU at 32 rows 0.578, two warps 0.642, decode at 16 rows 0.805; fp64 1.014) and
# `minmax_axis` (min / max keep contiguity and divisibility: split-K at 32 rows 0.960, 0.855 with mma_ring) won and
# are the code (benchmarks/2026-12-06g-h100/ab-mma-ring.md).
# Then `reduce_spread` (a reduction across warps combines the warps' partials spread over the block where that saves
# 64 instructions or more): the fresh column argmax over a tuple 0.954, argmin over columns 0.981: the code.
# `remat_vec` (small loads of at most 4 vector loads a thread in their users' layout): SmoothQuant 1.015, the
# persistent scaled matmul 0.980: removed (docs/EXPERIMENTS.md).
# 2026-12-06, fifteenth session, H100 (benchmarks/2026-12-06i-h100): `ring_sync_shallow` (an mma.sync ring of
# num_stages - 1 slots: 1.057 over the 12 skinny GEMMs, split-K at 32 rows 1.254) and `ring_narrow` (8- and 4-byte
# copies into padded ring slots: the fp64 32x32x16 GEMM 1.115) lost and left (docs/EXPERIMENTS.md).
# Then (the same run) `half_ring` (a one-dot wgmma loop with one operand cp.async cannot serve rings the other:
# mm_even_k 0.588, W4A16 0.903, AWQ 0.919, SmoothQuant 0.976), `cvt_sat` (float -> int casts as one cvt.rzi: SmoothQuant
# 0.929, the 4-bit group quantizer 0.916), `carry_body_layout` + `gather_group_layout` (loop-carried values keep their
# body's blocked layout, gathers their group's: bucketize 0.471 and 0.389, the ragged fp32 "ieee" descriptor matmul
# 0.019, its spills gone), `reshape_split` (trailing-dim reshapes across registers, lanes and warps: the 4-bit group
# quantizer 0.471, flip + sort + gather 0.769) and `linear_reshape` (MMA accumulators reshaped in place, LinearEncoding:
# the persistent descriptor matmul's subtiled epilogue 0.901) won, none slower by over 2% on the kernels each changes,
# and are the code; together on the 19 corpus kernels whose PTX they change: benchmarks/2026-12-06i-h100.
# 2026-12-06, sixteenth session, H200 (benchmarks/2026-12-06k-h200, 3 rounds beside Triton, each switch on the corpus
# kernels whose PTX it changes): `sort_flip` (bitonic compare-and-swap without selecting lo and hi) 0.834 over the four
# sorting kernels, `gather_cast_first` (tl.gather's source bitcast before its broadcast: flip + sort + gather's shared
# memory 16896 -> 4224 bytes) 0.998, `hoist_in_ifs` (wgmma operands of dots under an `if` hoisted) block-sparse
# attention 0.876, `ring_narrow` + `slot128` + `mma_swizzle64` (the fp64 GEMMs' mma.sync ring: narrow copies, 128-byte
# slots, XOR-swizzled 8-byte slots) 0.748 (mm_fp64 0.786, the 32x32x16 GEMM 0.711), `slice_ldmatrix` (a broadcast
# weight's batch slice read by ldmatrix) 0.985 (the batched GEMM with a broadcast weight 0.908): none slower by over
# 2%; the code. `convert_cse` (identical conversions computed once after layout assignment) 0.995 over 32 kernels but
# the complex split/join/cat tiles 1.148 (1.049 on the H100: a value held across all its users, 164 -> 186
# registers): removed (docs/EXPERIMENTS.md).
# 2026-12-07, seventeenth session, H100 (benchmarks/2026-12-07-h100, 3 rounds beside Triton, each switch alone on the
# corpus kernels whose PTX it changes): `nested_mma_carry` (the nested block-pointer matmul 0.451), `while_carry`
# (union-find 0.767), `broadcast_layout` (0.709 over 6: MinHash 0.332, n-body 0.518, NMS 0.836, none slower),
# `stride_lanes` (libdevice on mixed arguments 0.526, the voxelizer 0.975), `run_dims` (Monarch 0.775), `pack_carried`
# (the gathered W8A8 GEMM 0.797), `desc_ring` (the ragged fp32 descriptor matmul 0.770) and `desc_tma` (in-kernel
# tensor maps: the persistent descriptor matmul 0.763, the ragged one's stores 0.970; with desc_ring 0.771) won and
# are the code; their gpu tests passed there. `neg_axis` (a negated value keeps its divisibility: the 5-point
# stencil 0.989, 0.987 with nreg_headroom) gained nothing and left (docs/EXPERIMENTS.md).
# 2026-12-07, eighteenth session (CPU): `scatter_lanes` is the code, limited to stores whose offsets are affine along
# the lanes' dim (passes/assign_layouts.py `_spread_scatter`): it then changes one corpus kernel, the paged KV append,
# whose PTX is the one timed at 0.623 of the default's (H100, 2026-12-07, abin3.md); stream compaction (1.099 under
# the first form), whose offsets come from a scan, no longer changes. `store_runs` is the code too, limited to
# stores that can write a vector and to groups not scanned along the dim (passes/assign_layouts.py `_group_runs`):
# it then changes 12 corpus kernels, each with the PTX timed at 0.824-0.998 of the default's (0.927 over them; H100,
# 2026-12-07, abin12.md); the two it slowed (bucketize over an odd N 1.129, stick-breaking 1.043) no longer change.
# `short_ptr` left (docs/EXPERIMENTS.md).
# 2026-12-07, twentieth session, H100 (benchmarks/2026-12-07d-h100, 3 rounds beside Triton, each switch alone on the
# corpus kernels whose PTX or SASS it changes): `sort_keys` (floats sorted as total-order integer keys, 0.839 over the
# 4 sorting kernels), `remat_not` (not/neg recomputed in a user's layout: top-p 0.866, sort + gather 0.942; with
# sort_keys 0.775 over the 4), `partial_add` (`acc += tl.sum(x, axis)` kept per lane: 0.995 over 6, W8A8 0.972),
# `reduce_all` (axis=None over a 2-D tile in its own layout: LSE + argmax 0.834), `loads_first` (a tile's loads all
# issued before any is unpacked: 0.914 over the 4 kernels whose SASS it changes) and `pack_carried16` (16-bit
# carried registers and wgmma accumulators two to a word: 0.955 over 7, 6 faster) won, none slower by over 2%, and
# are the code. `convert_chain` (0.999 over 5) and `fma_occ` (1.016 on its one kernel) gained nothing and left
# (docs/EXPERIMENTS.md).
# 2026-12-08, twenty-sixth session, H100 (benchmarks/2026-12-08-h100, 2 rounds beside Triton, each switch on the
# corpus kernels whose PTX it changes): `zero_acc`, `iter_barrier`, `remat_feed`, `tf32_trunc`, `scan_pred` and
# `unaligned_group`, each timed at least once before, stayed faster on some kernels and slower on others, with no
# rule found that tells the two apart, and left (docs/EXPERIMENTS.md has each one's idea and figures).
# Still A/Bs in progress:
# `scan_direct`, `scan_prefix`: test hooks (see the top of this comment).
# From a kernel nobody here wrote (the NF4 GEMV of workloads/corpus/idioms_fresh11.py, SASS 1032 -> 576 instructions
# with all four, Triton's 856): `div_quot` (passes/axisinfo.py `_quotient_div`: x // 2^k and x >> k keep x's
# divisibility / 2^k where the division is exact), `gather_idx` (passes/assign_layouts.py `_group_runs`: a gather's
# values join its addresses' group, laid out as its indices were loaded), `convert_chain` (passes/dce.py
# `_collapse_converts`: a conversion of a conversion converts the source), `join_regs` (passes/assign_layouts.py
# `_register_axis`: tl.join / tl.interleave's pair axis in registers). Timed together (H100, 2026-12-08, 2 rounds,
# benchmarks/2026-12-08-h100/abin3.md): 0.947 over 12 kernels, the NF4 GEMV 0.453 (1.29 -> 0.59 of Triton's), but the
# 4-bit group quantizer 1.238 (0.73 -> 0.91 of Triton's): div_quot alone changes its PTX, only its packed-byte stores
# (st.global.b8 x16 -> st.global.b32 x4, the same layout, fewer registers); why the wider stores are slower there is
# not read yet. The NF4 GEMV's gain needs div_quot and convert_chain together (SASS 1056 -> 576; either alone 1040+).
# `remat_iter8` (passes/assign_layouts.py `_crowded`: a small load in a loop body whose value is not carried takes
# its users' layout up to 8 elements a thread) was timed on its 6 kernels (H100, 2026-12-08, abin1.md: Hamming 0.867,
# the gated delta rule 1.058, whose key vector a reduction of its own axis reads too) and became the code limited to
# loads no such reduction reads: its PTX then changes on the other 5, each as timed (SHA-1), none slower by over 2%.
# `data_vote` (passes/assign_layouts.py, the elementwise rule; twenty-sixth session, untimed): an elementwise op
# takes its layout from its computed operands where one has a layout, not from operands built from constants,
# aranges and splats (tl.split's lane mask [1, .., 1, 2], whose own default put lanes on dim 0: the FFT of
# idioms_fresh13.py, reshape / permute / split / join butterflies, had its data replicated 8 times across lanes).
# `headroom_step` (codegen/__init__.py `register_headroom`; twenty-sixth session, untimed): where ptxas's own count is
# the whole register file's for the block count (32 a thread for 2048 threads: no register free at that occupancy),
# the limit of the next occupancy step down is tried under register_headroom's checks (more of a loop's loads in flight,
# no more spills). The 4-bit group quantizer under div_quot (1.238 of the time, 2 of 4 loads issued late at 32
# registers): all 4 in flight at 40. Changes 10 corpus kernels by default (memory-bound loops at full occupancy).
# `gather_smem` (frontend/semantic.py `gather`, codegen/reduce.py `_e_gather`; twenty-sixth session, untimed): tl.gather
# as one op through shared memory (the source stored once, each result element loaded at its index) instead of the
# comparison of every index with every source position along the axis (index size x source size: a block-local MoE
# sort's [64, 256] int8 row gather 73000 SASS instructions and 76 KB of spills against Triton's 1744).
# `convert_cse_small` (passes/canonicalize.py `share_small_converts`; twenty-sixth session, untimed): conversions of
# one value to one layout made once where each holds at most 4 elements a thread (RoPE's cos / sin rows, index
# vectors converted for two users), the small form of the retired convert_cse (whose loss was a large tile held).
# `remat_div` (passes/assign_layouts.py `_remat`; twenty-sixth session, untimed): integer divisions and remainders by a
# constant or a splat scalar are recomputed in a user's layout like the other cheap arithmetic (an im2col's
# `j // BK`, `j % BK` were converted through shared memory every iteration of the conv1d's loop).
OTHER_AB_SWITCHES = ("scan_direct", "scan_prefix", "div_quot", "gather_idx", "convert_chain", "join_regs",
                     "data_vote", "headroom_step", "gather_smem", "convert_cse_small", "remat_div")


@functools.lru_cache(maxsize=None)
def _target_machine(arch: str, opt: int = 3, short_ptr: bool = False):
    _init()
    target = llvm.Target.from_triple("nvptx64-nvidia-cuda")
    # PTX 8.3 is understood by every ptxas that knows sm_90 features we use; newer archs need newer PTX.
    ptx = {"sm_90": "+ptx83", "sm_90a": "+ptx83"}.get(arch, "")
    if not short_ptr:
        return target.create_target_machine(cpu=arch, features=ptx, opt=opt, codemodel="default")
    # 32-bit pointers for shared/const/local memory (LLVM IR written for them, as Triton's is: scripts/llvm_profile.py
    # runs Triton's IR through this LLVM): a process-wide LLVM option, read when a target machine is made (it sets
    # the data layout), so on just for this one. Our own code keeps 64-bit ones (the A/B `short_ptr` lost:
    # docs/EXPERIMENTS.md).
    llvm.set_option("", "--nvptx-short-ptr=true")
    try:
        return target.create_target_machine(cpu=arch, features=ptx, opt=opt, codemodel="default")
    finally:
        llvm.set_option("", "--nvptx-short-ptr=false")


def _pkg_dirs(more=()):
    """Roots of NVIDIA's pip packages (nvidia-cuda-nvcc / cu13, and the modules `more` names) that may hold
    bin/ptxas and nvvm/libdevice."""
    out = []
    for modname in ("nvidia.cu13", "nvidia.cuda_nvcc", "nvidia.cu12", *more):
        try:
            mod = __import__(modname, fromlist=["_"])
        except Exception:
            continue
        for p in list(getattr(mod, "__path__", [])) + ([os.path.dirname(mod.__file__)] if getattr(mod, "__file__", None) else []):
            if p not in out:
                out.append(p)
    return out


@functools.lru_cache(maxsize=None)
def find_ptxas() -> str | None:
    """ptxas from TILEFARM_PTXAS, the pip package, CUDA_HOME or CUDA_PATH /bin, beside the Python executable,
    /usr/local/cuda/bin, or PATH (None: absent). Found once per process (`find_ptxas.cache_clear()` to look again)."""
    return _find_tool("ptxas", "TILEFARM_PTXAS")


@functools.lru_cache(maxsize=None)
def find_nvdisasm() -> str | None:
    """nvdisasm (the cubin's SASS; `-g` adds the source lines of its line table), looked for as find_ptxas looks
    for ptxas: TILEFARM_NVDISASM, the pip package (nvidia-cuda-nvdisasm), CUDA_HOME ... PATH. None: absent."""
    return _find_tool("nvdisasm", "TILEFARM_NVDISASM", ("nvidia.cuda_nvdisasm",))


def _find_tool(name: str, var: str, more_pkgs=()) -> str | None:
    env = os.environ.get(var)
    if env and os.path.isfile(env) and os.access(env, os.X_OK):
        return env
    cands = [os.path.join(d, "bin", name) for d in _pkg_dirs(more_pkgs)]
    for home in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(home):
            cands.append(os.path.join(os.environ[home], "bin", name))
    cands.append(os.path.join(os.path.dirname(sys.executable), name))
    cands.append(f"/usr/local/cuda/bin/{name}")
    for c in cands:
        if os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return shutil.which(name)


@functools.lru_cache(maxsize=None)
def find_libdevice() -> str | None:
    """libdevice.10.bc from TILEFARM_LIBDEVICE, the pip package, CUDA_HOME or /usr/local/cuda (None: absent)."""
    env = os.environ.get("TILEFARM_LIBDEVICE")
    if env and os.path.isfile(env):
        return env
    roots = [os.path.join(d, "nvvm") for d in _pkg_dirs()]
    if os.environ.get("CUDA_HOME"):
        roots.append(os.path.join(os.environ["CUDA_HOME"], "nvvm"))
    roots.append("/usr/local/cuda/nvvm")
    for r in roots:
        p = os.path.join(r, "libdevice", "libdevice.10.bc")
        if os.path.isfile(p):
            return p
    return None


@functools.lru_cache(maxsize=None)
def _libdevice_bitcode() -> bytes:
    p = find_libdevice()
    if p is None:
        raise FileNotFoundError("libdevice.10.bc not found (set TILEFARM_LIBDEVICE or install nvidia-cuda-nvcc)")
    with open(p, "rb") as f:
        return f.read()




_NV_NAME = re.compile(r'@"?(__nv_\w+)"?\(')


_SUBSETS: dict = {}  # frozenset(names) -> the bitcode of that libdevice subset (at most _SUBSETS_MAX, oldest dropped)
_SUBSETS_MAX = 64
_PENDING: dict = {}  # frozenset(names) -> the thread building that subset (prefetch_libdevice)
_PENDING_LOCK = threading.Lock()


def _libdevice_subset(names: frozenset) -> bytes:
    """Bitcode of just the libdevice functions `names` need, made once per set in a process (parsing all of
    libdevice takes 30-60 ms, the subset well under 1). The caller holds _LOCK."""
    got = _SUBSETS.get(names)
    if got is None:
        got = _SUBSETS[names] = _build_subset(names)
        while len(_SUBSETS) > _SUBSETS_MAX:
            _SUBSETS.pop(next(iter(_SUBSETS)))
    return got


def _build_subset(names: frozenset) -> bytes:
    lib = llvm.parse_bitcode(_libdevice_bitcode())
    for f in lib.functions:
        if not f.is_declaration and f.name not in names:
            f.linkage = llvm.Linkage.internal
    for g in lib.global_variables:
        if not g.is_declaration:
            g.linkage = llvm.Linkage.internal
    pb = llvm.create_pass_builder(_target_machine("sm_90"), llvm.create_pipeline_tuning_options(speed_level=0))
    mpm = llvm.create_new_module_pass_manager()
    mpm.add_global_dead_code_eliminate_pass()
    mpm.run(lib, pb)
    return lib.as_bitcode()


def prefetch_libdevice(names) -> None:
    """Make the libdevice subset of `names` on a thread, while the caller emits LLVM IR in Python: llvmlite's calls
    into LLVM release the GIL, so the 40-80 ms of a first parse (mm_gelu_erf_f16 of the corpus) run beside
    emission instead of after it. Nothing where the set is made or being made already, or where there is no
    libdevice. llvm_to_ptx waits for it; a failure here is left for llvm_to_ptx to meet and report."""
    names = frozenset(names)
    if not names or find_libdevice() is None:
        return
    with _PENDING_LOCK:
        if names in _SUBSETS or names in _PENDING:
            return
        t = _PENDING[names] = threading.Thread(target=_prefetch, args=(names,), daemon=True,
                                               name="tilefarm-libdevice")
    t.start()


def _prefetch(names: frozenset) -> None:
    try:
        with _LOCK:  # LLVM's global context: one user at a time
            _libdevice_subset(names)
    except Exception:
        pass
    finally:
        with _PENDING_LOCK:
            _PENDING.pop(names, None)


def _await_prefetch() -> None:
    """Wait for libdevice subsets being made (before taking _LOCK: their threads need it)."""
    with _PENDING_LOCK:
        threads = list(_PENDING.values())
    for t in threads:
        t.join()


def _link_libdevice(mod, tm, names):
    lib = llvm.parse_bitcode(_libdevice_subset(frozenset(names)))
    lib.triple = mod.triple
    lib.data_layout = mod.data_layout
    keep = {f.name for f in mod.functions if not f.is_declaration}
    mod.link_in(lib)
    # __nvvm_reflect("__CUDA_FTZ") in libdevice reads as 0 without the nvvm-reflect-ftz flag: denormals kept.
    # Internalize everything but our own definitions, so the optimizer inlines and drops libdevice code.
    for f in mod.functions:
        if not f.is_declaration and f.name not in keep:
            f.linkage = llvm.Linkage.internal
    for g in mod.global_variables:
        if not g.is_declaration:
            g.linkage = llvm.Linkage.internal


def _optimize(mod, tm, level: int = 3):
    pto = llvm.create_pipeline_tuning_options(speed_level=level)
    pb = llvm.create_pass_builder(tm, pto)
    mpm = pb.getModulePassManager()
    mpm.run(mod, pb)


# The optimization levels: (module pipeline, NVPTX back end). O1 instead of O3 and the back end's default level
# instead of aggressive, which there means EarlyCSE instead of two GVN runs after its address reassociation.
# LLVM CPU time 0.83x over the 70 corpus kernels, the same SASS for 58 of them; the other 12 timed on the H200
# against O3 / aggressive in one process (2026-12-02, 5 rounds, benchmarks/2026-12-02d/ab-llvm-lean.md): 0.999 of
# O3's time, none faster or slower by over 2% (mm_tf32 1.018, attn_kT_d64 0.984). (The O2 module pipeline with
# the aggressive back end gave byte-identical PTX on all 70 but only 0.98x; O2 with the default back end 0.97x,
# one kernel's SASS changed; O1 with the aggressive back end 0.88x, eight changed.)
_LEVELS = (1, 2)


def llvm_to_ptx(llir: str, arch: str = "sm_90", *, ab: frozenset | None = None) -> str:
    """Verify, optimize (the levels of _LEVELS) and lower LLVM IR text to PTX for `arch`.

    `ab`: the A/B switches to apply (default: those on in TILEFARM_AB, `ab_switches()`)."""
    ab = ab_switches() if ab is None else frozenset(ab)  # other names are other stages' switches
    level, cg_level = _LEVELS
    names = set(_NV_NAME.findall(llir))
    if names:
        _await_prefetch()
    with _LOCK:
        tm = _target_machine(arch, cg_level)
        mod = llvm.parse_assembly(llir)
        mod.triple = "nvptx64-nvidia-cuda"
        mod.data_layout = str(tm.target_data)
        if names:
            _link_libdevice(mod, tm, names)
        mod.verify()
        _optimize(mod, tm, level)
        ptx = tm.emit_assembly(mod)
    ptx = _renumbered_callseqs(ptx)
    ptx = copy_src64(ptx)
    if has_line_info(ptx):
        ptx = _without_debug_labels(ptx)
        # `.target sm_90a, debug` makes ptxas build unoptimized code. LLVM writes it for full or line-tables-only
        # debug info, not for the line directives of codegen/lineinfo.py: this only keeps it out should that change.
        if ", debug" in ptx[:2000]:
            ptx = _DEBUG_TARGET.sub(r"\1", ptx, count=1)
    return ptx


_CALLSEQ = re.compile(r"// callseq (\d+)")


def _renumbered_callseqs(ptx: str) -> str:
    """The back end numbers each call sequence it writes (`// callseq N` comments) with a counter of the target
    machine, which lives as long as the process: the same kernel's PTX text then depended on the kernels compiled
    before it. Comments only (the machine code is the same): numbered from 0 per module, in order of appearance."""
    if "// callseq" not in ptx:
        return ptx
    ids: dict = {}
    return _CALLSEQ.sub(lambda m: f"// callseq {ids.setdefault(m.group(1), len(ids))}", ptx)


_CP_ASYNC_SRC = re.compile(r"cp\.async\.c[ag]\.shared\.global \[[^\]]+\], \[(%rd\d+)\]")
_LOOP_LABEL = re.compile(r"^(\$L__BB\d+_\d+):", re.M)
_BRANCH = re.compile(r"\bbra(?:\.uni)?\s+(\$L__BB\d+_\d+);")


def ptx_loops(ptx: str) -> list:
    """(start, end) character spans of the PTX's loops: from a block's label to a later branch back to it."""
    at = {m.group(1): m.end() for m in _LOOP_LABEL.finditer(ptx)}
    return [(at[b.group(1)], b.start()) for b in _BRANCH.finditer(ptx)
            if b.group(1) in at and b.start() > at[b.group(1)]]
_ADD64 = re.compile(r"^\s*add\.s64\s+(%rd\d+), (%rd\d+), (%rd\d+);", re.M)
_MUL_WIDE = re.compile(r"^(\s*)mul\.wide\.([su])32\s+(%rd\d+), (%r\d+), (\d+);$", re.M)


def copy_src64(ptx: str) -> str:
    """A cp.async source address in a one-dot wgmma loop, `base + offset`, whose offset is a 32-bit value widened and
    scaled in one `mul.wide.s32 %rd, %r, 2^k` gets that offset as `cvt.s64.s32` + `shl.b64` instead (the same value;
    Triton's PTX form). From the first, ptxas keeps the 32-bit value and rebuilds the address at the copy
    (IMAD.WIDE from the carried base, which it first moves into registers an earlier copy of the iteration reads:
    the warp waits for that LDGSTS to read them, among its copies); from the second it keeps the 64-bit offset
    and computes the addresses before the first copy (mm_nobias: the eight LDGSTS span 19 -> 13 instructions,
    IMAD.WIDE / moves among them 4 / 2 -> 0 / 0). Measured against the back end's form (H100, 3 rounds beside
    Triton, each of the 33 corpus kernels it changes; was the A/B `copy_src64`): the 12 fp16 matmuls 0.937
    (2026-12-07, benchmarks/2026-12-07d-h100/copy_src64.md: masks on M, N and K 0.839, on M and N 0.897, block
    pointers 0.894, A transposed 0.901), the other 21 0.963 (benchmarks/2026-12-07e-h100/abin5.md: 128x256 masked
    0.832, B transposed 0.853, persistent 0.877, broadcast bmm 0.902); none slower by over 2%."""
    # loops of one wgmma dot (one wgmma group committed an iteration): in loops of several dots (attention's) the
    # 64-bit offsets, live through the softmax, cost registers and spills (attention D=128 12 -> 40 bytes)
    if "wgmma.commit_group" not in ptx or "cp.async" not in ptx:
        return ptx
    loops = [(a, b) for a, b in ptx_loops(ptx) if ptx.count("wgmma.commit_group", a, b) == 1]
    srcs = {m.group(1) for m in _CP_ASYNC_SRC.finditer(ptx) if any(a < m.start() < b for a, b in loops)}
    if not srcs:
        return ptx
    offsets = set()
    for m in _ADD64.finditer(ptx):
        if m.group(1) in srcs:
            offsets.update((m.group(2), m.group(3)))

    def widen(m):
        ind, sign, dst, src, scale = m.groups()
        n = int(scale)
        if dst not in offsets or n <= 0 or n & (n - 1):
            return m.group(0)
        cvt = f"{ind}cvt.{sign}64.{sign}32 \t{dst}, {src};"
        return cvt if n == 1 else f"{cvt}\n{ind}shl.b64 \t{dst}, {dst}, {n.bit_length() - 1};"
    return _MUL_WIDE.sub(widen, ptx)


_DEBUG_TARGET = re.compile(r"^(\s*\.target\s+[^\n,]+), debug", re.M)
_DEBUG_LABEL = re.compile(r"^(\$L__(?:func_begin|func_end|tmp)\d+):\n", re.M)
_DEBUG_LABEL_NAME = re.compile(r"\$L__(?:func_begin|func_end|tmp)\d+")


def _without_debug_labels(ptx: str) -> str:
    """PTX without the labels LLVM's debug info writes around a function's code (`$L__func_begin0`, `$L__tmp0`
    after the parameter loads, ...) that nothing refers to: with line directives only there is no DWARF section to
    refer to them. ptxas does not ignore a label: on mm_fp32_ieee of the corpus the two before the body gave an
    epilogue scheduled otherwise (same instructions, other order and registers); without them the SASS of all 70
    corpus kernels is the same as without line info."""
    names = collections.Counter(_DEBUG_LABEL_NAME.findall(ptx))
    if not names:
        return ptx
    return _DEBUG_LABEL.sub(lambda m: m.group(0) if names[m.group(1)] > 1 else "", ptx)


def has_line_info(ptx: str) -> bool:
    """Whether the PTX carries source line information (`.loc` directives: codegen/lineinfo.py)."""
    return "\t.loc\t" in ptx


# What line information adds to PTX (codegen/lineinfo.py): `.loc` / `.file` directives, the labels LLVM brackets a
# function's code with for debug info, and DWARF sections (`.section .debug_* { ... }`, one line when empty).
_LINE_INFO = re.compile(r"^[ \t]*(?:\.loc|\.file)[ \t][^\n]*\n|^\$L__(?:func_begin|func_end|tmp)\d+:\n"
                        r"|^[ \t]*\.section[ \t]+\.debug_\w+\s*\{[^}]*\}[ \t]*\n", re.M)


def strip_line_info(ptx: str) -> str:
    """The PTX without its line information: what the same kernel compiled with TILEFARM_DISABLE_LINE_INFO=1 gives
    (the PTX snapshot hashes this, so a kernel whose source lines move keeps its hash)."""
    if not has_line_info(ptx) and "\t.section\t.debug_" not in ptx:
        return ptx
    return _LINE_INFO.sub("", ptx)


# ptxas started before its PTX exists. A ptxas process spends about 5 ms starting and 10 more setting up before it
# reads its input (sm_90a, 2-core machine: 19 ms for an empty kernel, 22 for saxpy's); started while the LLVM
# stages run, it has done that by the time the PTX is ready (8 and 12 ms after the input arrives). It reads the PTX
# from its standard input (every assembly does, started ahead or not), so the same process serves whichever kernel
# comes next with the same flags. The cubin is byte for byte the one from a file without line information; with it,
# the machine code and line tables are too, but ptxas does not embed its copy of the PTX text (.nv_debug_ptx_txt,
# Nsight's PTX source view), which it reads back only from a file. At most _IDLE_MAX wait at a time (about 20 MB
# each, asleep on a read); they are ended at exit, and end on their own when the process that started them goes
# (their input closes).
_STDIN = "/dev/stdin"
_IDLE_MAX = 2
_idle: dict = {}  # (ptxas, arch, flags) -> _Started, oldest first
_IDLE_LOCK = threading.Lock()
_ran = False  # whether this process has run ptxas


class _Started:
    """One ptxas process waiting for its PTX on standard input, and where it will write the cubin."""

    __slots__ = ("proc", "dir", "out", "pid", "arch")

    def __init__(self, ptxas: str, arch: str, flags: tuple):
        self.dir = tempfile.mkdtemp(prefix="tilefarm-")
        self.out = os.path.join(self.dir, "k.cubin")
        self.pid = os.getpid()
        self.arch = arch
        try:
            self.proc = subprocess.Popen([ptxas, f"-arch={arch}", *flags, _STDIN, "-o", self.out],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        except BaseException:
            shutil.rmtree(self.dir, ignore_errors=True)
            raise

    def waiting(self) -> bool:
        return self.pid == os.getpid() and self.proc.poll() is None

    def assemble(self, ptx: str):
        """(cubin, ptxas's messages); PTXASError where ptxas rejects the PTX."""
        try:
            out, err = self.proc.communicate(ptx.encode())
            log = err.decode(errors="replace") + out.decode(errors="replace")
            if self.proc.returncode != 0:
                raise PTXASError(log.replace(_STDIN, "<ptx>"), self.arch)
            with open(self.out, "rb") as f:
                return f.read(), log
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)

    def discard(self) -> None:
        if self.pid != os.getpid():  # a forked child's copy: the parent's process, not ours to end
            return
        try:
            self.proc.kill()
            self.proc.communicate()
        except OSError:
            pass
        shutil.rmtree(self.dir, ignore_errors=True)


def _flags(lineinfo: bool, extra=()) -> tuple:
    return ("-lineinfo", *extra) if lineinfo else tuple(extra)


def prestart_ptxas(arch: str, *, lineinfo: bool, verbose: bool = False) -> None:
    """Start a ptxas for PTX about to be made (`-arch=arch`; -lineinfo where the PTX will carry line information;
    -v for a caller that reads the resources), unless one with those flags waits already or there is no ptxas.
    `_run_ptxas` with the same arch and flags takes it."""
    ptxas = find_ptxas()
    if ptxas is None or not _ran or not os.path.exists(_STDIN):
        return
    key = (ptxas, arch, _flags(lineinfo, ("-v",) if verbose else ()))
    with _IDLE_LOCK:
        got = _idle.get(key)
        if got is not None and got.waiting():
            return
        _idle.pop(key, None)
        try:
            _idle[key] = _Started(*key)
        except OSError:
            return
        while len(_idle) > _IDLE_MAX:
            _idle.pop(next(iter(_idle))).discard()


def _take(key):
    with _IDLE_LOCK:
        got = _idle.pop(key, None)
    return got if got is not None and got.waiting() else None


@atexit.register
def _end_idle() -> None:
    with _IDLE_LOCK:
        while _idle:
            _idle.popitem()[1].discard()


def _after_fork_in_child() -> None:
    """In a child made by fork (multiprocessing, a data loader's workers): let go of the parent's waiting ptxas
    processes -- close the child's copies of their pipes, or a child that outlives the parent's next assembly keeps
    that ptxas's input open and the parent waits for it -- and start with fresh locks (a thread of the parent may
    have held one at the fork; it does not exist here)."""
    global _IDLE_LOCK, _PENDING_LOCK, _LOCK
    for started in list(_idle.values()):
        for f in (started.proc.stdin, started.proc.stdout, started.proc.stderr):
            try:
                if f is not None:
                    f.close()
            except OSError:
                pass
    _idle.clear()
    _PENDING.clear()
    _IDLE_LOCK, _PENDING_LOCK, _LOCK = threading.Lock(), threading.Lock(), threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _run_ptxas(ptx: str, arch: str, extra=()):
    """(cubin, ptxas's messages); (None, "") without a ptxas. PTX with line information is assembled with -lineinfo,
    so the cubin has the line table (the machine code is the same); without, with nothing that adds one. Takes a
    ptxas started ahead with these flags (prestart_ptxas), else starts one now."""
    ptxas = find_ptxas()
    if ptxas is None:
        return None, ""
    global _ran
    _ran = True
    flags = _flags(has_line_info(ptx), extra)
    started = _take((ptxas, arch, flags))
    if started is None and os.path.exists(_STDIN):
        started = _Started(ptxas, arch, flags)
    if started is not None:
        return started.assemble(ptx)
    with tempfile.TemporaryDirectory(prefix="tilefarm-") as d:  # no /dev/stdin: the PTX through a file
        src = os.path.join(d, "k.ptx")
        out = os.path.join(d, "k.cubin")
        with open(src, "w") as f:
            f.write(ptx)
        p = subprocess.run([ptxas, f"-arch={arch}", *flags, src, "-o", out], capture_output=True, text=True)
        if p.returncode != 0:
            raise PTXASError((p.stderr or p.stdout).replace(src, "<ptx>"), arch)
        with open(out, "rb") as f:
            return f.read(), p.stderr + p.stdout


_TARGET = re.compile(r"^\s*\.target\s+(sm_\w+)", re.M)


def ptx_arch(ptx: str, arch: str) -> str:
    """The arch to assemble for: the PTX's own `.target` when it is the arch-specific variant of `arch`
    (sm_90a PTX for an sm_90 request: kernels with wgmma), else `arch`."""
    m = _TARGET.search(ptx)
    if m and m.group(1) == arch + "a":
        return m.group(1)
    return arch


def ptx_to_cubin(ptx: str, arch: str = "sm_90") -> bytes | None:
    """Assemble PTX with ptxas (-O3); None when no ptxas can be found. Raises PTXASError on rejection. With -v, as
    every assembly of a compile (codegen compile_function reads the resources of the first): the ptxas it started
    ahead serves whichever comes."""
    cubin, _ = _assemble(ptx, ptx_arch(ptx, arch), ("-v",))
    return cubin


_MIN_BLOCKS = re.compile(r"^\.minnctapersm \d+\n", re.M)


def _assemble(ptx: str, arch: str, flags=()):
    """_run_ptxas; a kernel whose `.minnctapersm` (the blocks per SM its copy ring was sized for) leaves some
    instruction too few registers is assembled again without it, at one block fewer than hoped rather than not
    at all."""
    try:
        return _run_ptxas(ptx, arch, flags)
    except PTXASError as e:
        if "Insufficient registers" not in str(e) or not _MIN_BLOCKS.search(ptx):
            raise
        return _run_ptxas(_MIN_BLOCKS.sub("", ptx, count=1), arch, flags)


_RES = {
    "registers": re.compile(r"Used (\d+) registers"),
    "shared": re.compile(r"(\d+) bytes smem"),
    "spill_stores": re.compile(r"(\d+) bytes spill stores"),
    "spill_loads": re.compile(r"(\d+) bytes spill loads"),
    "stack": re.compile(r"(\d+) bytes stack frame"),
    "cmem": re.compile(r"(\d+) bytes cmem\[0\]"),
}


def ptx_resources(ptx: str, arch: str = "sm_90") -> dict:
    """Resources ptxas reports (`ptxas -v`): registers, static shared bytes, spill stores/loads, stack frame.
    Empty dict when ptxas is absent."""
    cubin, log = _assemble(ptx, ptx_arch(ptx, arch), ("-v",))
    if cubin is None:
        return {}
    out = {}
    for k, rx in _RES.items():
        m = rx.search(log)
        out[k] = int(m.group(1)) if m else 0
    out["log"] = log
    return out
