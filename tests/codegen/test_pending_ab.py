"""The A/B switches of the twenty-fourth session, waiting for a GPU timing (compiler/codegen/ptx.py lists them): each
one's code as its switch describes it, on the corpus kernels it was made for (their GPU specializations, sm_90a,
through ptxas), and the default code left as it was. Their results are checked on the GPU by scripts/bench_corpus.py
(every A/B side against float64). `sqrt_approx` and `fp8_pairs_in` became the code in the twenty-fifth session
(tests/ops/test_fp8.py covers the pairs); `occ_hold` was retired, and `tf32_trunc` in the twenty-sixth."""
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


def test_sqrt_lowers_tl_sqrt_as_triton():
    """tl.sqrt is Triton's sqrt.approx.ftz (the A/B `sqrt_approx`, the code since the twenty-fifth session)."""
    x = np.abs(np.random.default_rng(3).standard_normal(1000)).astype(np.float32)
    y = np.zeros_like(x)
    ptx = _sqrt_kernel.warmup(x, y, 1000, grid=(4,), target="sm_90", BLOCK=256).asm["ptx"]
    assert "sqrt.approx.ftz.f32" in ptx and "sqrt.rn.f32" not in ptx


@needs_ptxas
def test_tf32_operands_through_registers_are_rounded(monkeypatch):
    """k-means' centroid tile reaches the tf32 wgmma through registers and is rounded by cvt.rna first, as the
    mma.sync path and the interpreter round it (storing it unrounded, the A/B `tf32_trunc`, left)."""
    d, _ = _corpus("kmeans_assign_f32", monkeypatch)
    assert d.count("cvt.rna.tf32.f32") > 0
    assert re.search(r"wgmma\.mma_async\.sync\.aligned\.m64n\d+k8\.f32\.tf32\.tf32", d)