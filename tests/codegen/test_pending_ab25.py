"""The A/B switches of the twenty-fifth session, waiting for a GPU timing (compiler/codegen/ptx.py lists them), found on
a kernel nobody here had written (the QLoRA NF4 GEMV of workloads/corpus/idioms_fresh11.py: Triton's SASS 856
instructions, ours 1032): each one's analysis or layout as its switch describes it, the default left as it was. Their
results are checked on the GPU by scripts/bench_corpus.py (every A/B side against float64). remat_iter8 came from the
other fresh kernels the same way and became the code in the twenty-sixth session, limited (scan_pred and
unaligned_group, found with it, were timed and left: docs/EXPERIMENTS.md)."""
import re

import numpy as np
import pytest

import compiler
import compiler.language as tl
from compiler.ir.core import Op
from compiler.ir.types import TensorType, int32
from compiler.passes import axisinfo
from compiler.passes.dce import _collapse_converts
from compiler.passes.layouts import BlockedLayout
from tests.codegen.test_pending_ab import _corpus as _compiled
from tests.codegen.test_pending_ab import needs_ptxas


def _corpus(name, monkeypatch, ab=""):
    """The PTX of a corpus kernel at its GPU specialization for sm_90a under switches `ab`, compiled afresh."""
    return _compiled(name, monkeypatch, ab)[0]


def _layouts(monkeypatch, ab):
    """The NF4 GEMV's final IR with layouts (the module codegen reads)."""
    import compiler.codegen.llvm as L
    from compiler.ir.printer import print_module

    seen = []
    orig = L.emit_llvm

    def keep(module, options):
        seen.append(print_module(module, with_layouts=True))
        return orig(module, options)

    monkeypatch.setattr(L, "emit_llvm", keep)
    _corpus("nf4_dequant_gemv_bf16", monkeypatch, ab)
    return seen[-1]


@compiler.jit
def _half_row_kernel(Q, Out, K, BLOCK: tl.constexpr):
    # one row of K // 2 packed bytes per program: K divisible by 16 makes every row start 8-byte aligned
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    q = tl.load(Q + row * (K // 2) + offs)
    tl.store(Out + row * BLOCK + offs, (q >> 4) + (q & 0xF))


@pytest.mark.parametrize("ab", ["", "div_quot"])
def test_div_quot_keeps_a_quotients_alignment(ab, monkeypatch):
    """`K // 2` of a K divisible by 16 is divisible by 8: the packed rows load as 8-byte vectors under the switch,
    byte by byte without it."""
    monkeypatch.setenv("TILEFARM_AB", ab)
    q = np.random.default_rng(1).integers(0, 256, (4, 1024), dtype=np.uint8)
    out = np.zeros((4, 1024), np.uint8)
    ptx = _half_row_kernel.warmup(q, out, 2048, grid=(4,), target="sm_90", BLOCK=1024).asm["ptx"]
    wide = re.search(r"ld\.global(\.\w+)*\.(v2\.b32|b64|v2\.u32|v8\.b8)", ptx)
    assert bool(wide) == (ab == "div_quot"), ptx[:2000]


def _info(contig, div, const):
    return axisinfo.AxisInfo((contig,), (div,), (const,))


def test_quotient_divisibility_only_where_the_division_is_exact():
    # every element a multiple of 16, / 4: multiples of 4; a contiguous run's elements are not all multiples of its
    # first's divisor, so nothing is kept there; a divisor above the known one keeps nothing
    assert axisinfo._quotient_div(_info(1, 16, 8), 4) == (4,)
    assert axisinfo._quotient_div(_info(8, 16, 1), 4) == (1,)
    assert axisinfo._quotient_div(_info(1, 2, 1), 4) == (1,)
    assert axisinfo._quotient_div(_info(1, axisinfo.MAX_DIV, 4), 8) == (axisinfo.MAX_DIV,)


@needs_ptxas
def test_gather_idx_lays_gathers_out_as_their_indices(monkeypatch):
    """The codebook gathers (tl.load(code + nibble)) take the packed bytes' layout: no conversion of their 64-bit
    pointers; by default the pointers are converted to the gathers' own layout."""
    pointer_cv = re.compile(r"= convert_layout %\d+ : <[\dx]+xptr<f32>>")
    assert pointer_cv.search(_layouts(monkeypatch, "div_quot"))
    assert not pointer_cv.search(_layouts(monkeypatch, "div_quot,gather_idx"))


@needs_ptxas
def test_join_regs_keeps_interleave_in_registers(monkeypatch):
    """tl.interleave's pair axis is each thread's fastest, two elements a thread: the join's inputs are not converted
    (their slice is their own layout), the [32, 256] result holds 16 consecutive columns a thread, and the 64-wide
    block sums reduce 16 elements in a thread before any shuffle."""
    text = _layouts(monkeypatch, "div_quot,gather_idx,join_regs")
    assert "reshape" in text
    assert re.search(r"select .*: <32x128x2xf32>\s+layout\(blocked<spt=\[1, 8, 2\], tpw=\[2, 16, 1\], wpc=\[4, 1, 1\], "
                     r"order=\[2, 1, 0\]>\)", text)
    assert re.search(r"reshape .*\{shape=\[32, 256\]\} : <32x256xf32>\s+layout\(blocked<spt=\[1, 16\]", text)
    assert re.search(r"reshape .*\{shape=\[32, 4, 64\]\} : <32x4x64xf32>\s+layout\(blocked<spt=\[1, 1, 16\]", text)
    default = _layouts(monkeypatch, "div_quot,gather_idx")
    assert not re.search(r"blocked<spt=\[1, 8, 2\]", default)


def _cv(v, layout):
    return Op("convert_layout", [v], [v.type], {"_layouts": [layout]})


def test_convert_chain_collapses():
    """convert(convert(x, A), B) converts x to B directly; a conversion back to x's own layout is x."""
    a = BlockedLayout((1,), (32,), (4,), (0,))
    b = BlockedLayout((2,), (32,), (4,), (0,))
    c = BlockedLayout((4,), (32,), (4,), (0,))
    t = TensorType(int32, (256,))
    src = Op("arange", [], [t], {"start": 0, "end": 256, "_layouts": [a]})
    c1 = _cv(src.result, b)
    c2 = _cv(c1.result, c)
    back = _cv(c1.result, a)
    use = Op("add", [c2.result, back.result], [t], {"_layouts": [c]})

    class _Blk:
        ops = [src, c1, c2, back, use]

    _collapse_converts(_Blk, {})
    assert c2.operands[0] is src.result
    assert use.operands[1] is src.result  # the round trip a -> b -> a is gone


@needs_ptxas
def test_loop_loads_take_their_users_layout_up_to_8_a_thread(monkeypatch):
    """The Hamming kernel's per-iteration x words (8 rows a thread in the [64, 64] tile's row slice) are loaded in
    the tile's layout (the remat_iter8 rule, the code since the twenty-sixth session): no shared memory in the kernel.
    The gated delta rule's key vector, reduced along its own axis for its L2 norm too, keeps its coalesced load and
    one conversion."""
    r = _corpus("hamming_popc_u32", monkeypatch)
    assert "st.shared" not in r and "bar.sync" not in r
    g = _corpus("gated_delta_rule_bf16", monkeypatch)
    assert "st.shared" in g