"""The A/B switches of the twenty-fourth session, waiting for a GPU timing (compiler/codegen/ptx.py lists them): each
one's code as its switch describes it, on the corpus kernels it was made for (their GPU specializations, sm_90a,
through ptxas), and the default code left as it was. Their results are checked on the GPU by scripts/bench_corpus.py
(every A/B side against float64) and, for `fp8_pairs_in`, by tests/ops/test_fp8.py."""
import os
import re
import sys

import numpy as np
import pytest

import compiler
import compiler.language as tl

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _ptxas():
    from compiler.codegen.ptx import find_ptxas

    return find_ptxas()


needs_ptxas = pytest.mark.skipif(_ptxas() is None, reason="needs ptxas (nvidia-cuda-nvcc)")


def _corpus(name, monkeypatch, ab=""):
    """(PTX, cubin) of a corpus kernel at its GPU specialization for sm_90a under switches `ab`, compiled afresh."""
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    import _bench_host_corpus as BC
    import compiler.compile as CC

    monkeypatch.setenv("TILEFARM_AB", ab)
    monkeypatch.setenv("TILEFARM_CACHE", "0")
    monkeypatch.setattr(CC, "_mem_cache", {})
    case = BC.cases_of(BC.case_files()[name], "ours")[name]
    args, kw = BC.prepare(case)
    cubin, ptx, _ = BC.compile_ours(case, args, kw)
    return ptx, cubin


def _resources(ptx):
    from compiler.codegen.ptx import ptx_resources

    return ptx_resources(ptx, "sm_90a")


@compiler.jit
def _sqrt_kernel(X, Y, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(Y + offs, tl.sqrt(tl.load(X + offs, mask=m)), mask=m)


@pytest.mark.parametrize("ab, instr", [("", "sqrt.rn.f32"), ("sqrt_approx", "sqrt.approx.ftz.f32")])
def test_sqrt_approx_lowers_tl_sqrt_as_triton(ab, instr, monkeypatch):
    monkeypatch.setenv("TILEFARM_AB", ab)
    x = np.abs(np.random.default_rng(3).standard_normal(1000)).astype(np.float32)
    y = np.zeros_like(x)
    ptx = _sqrt_kernel.warmup(x, y, 1000, grid=(4,), target="sm_90", BLOCK=256).asm["ptx"]
    assert instr in ptx
    assert ("sqrt.approx" in ptx) == (ab == "sqrt_approx")


@needs_ptxas
def test_tf32_trunc_stores_operands_unrounded(monkeypatch):
    """k-means' centroid tile reaches the tf32 wgmma through registers: rounded by cvt.rna by default, stored as it is
    under the switch (wgmma reads the float32 bits, as Triton's operands reach it); the dots are the same."""
    d, _ = _corpus("kmeans_assign_f32", monkeypatch)
    t, _ = _corpus("kmeans_assign_f32", monkeypatch, "tf32_trunc")
    assert d.count("cvt.rna.tf32.f32") > 0 and t.count("cvt.rna.tf32.f32") == 0
    wg = re.compile(r"wgmma\.mma_async\.sync\.aligned\.m64n\d+k8\.f32\.tf32\.tf32")
    assert len(wg.findall(d)) == len(wg.findall(t)) > 0


@needs_ptxas
def test_occ_hold_buys_a_block_without_spills(monkeypatch):
    """Dropout over float32 (40 registers by ptxas's own count, 12 blocks of 128 threads an SM): held at the most
    registers of 16 blocks, with no spill; the default PTX has no limit."""
    from compiler.resources import occupancy

    d, _ = _corpus("dropout_f32", monkeypatch)
    h, _ = _corpus("dropout_f32", monkeypatch, "occ_hold")
    assert ".maxnreg" not in d
    limit = int(re.search(r"^\.maxnreg (\d+)$", h, re.M).group(1))
    rd, rh = _resources(d), _resources(h)
    threads = int(re.search(r"^\.reqntid (\d+)", d, re.M).group(1))
    assert rh["registers"] <= limit < rd["registers"]
    assert rh["spill_stores"] == rh["spill_loads"] == 0
    assert occupancy(rh["registers"], rh["shared"], threads, "sm_90a") > occupancy(rd["registers"], rd["shared"],
                                                                                  threads, "sm_90a")


@needs_ptxas
def test_occ_hold_leaves_dots_and_roomless_kernels(monkeypatch):
    """A kernel with a dot (the plain fp16 matmul) and one whose registers are not what bounds its blocks keep their
    code under the switch."""
    for name in ("mm_nobias_f16", "act_cast_tanh_f32out"):
        assert _corpus(name, monkeypatch, "occ_hold")[0] == _corpus(name, monkeypatch)[0], name
