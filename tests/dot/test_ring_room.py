"""A/B `ring_occupancy` (passes/pipeline.py records `ring_blocks_room`, codegen `ring_room`): a one-dot loop of two
or more warpgroups whose loose copy ring leaves shared memory (and, by the pipeline's register estimate, registers)
for two blocks an SM, but whose ptxas register count holds one, is assembled again with `.minnctapersm 2`, kept where
no loop of the SASS spills. Corpus kernels at their GPU meta-parameters: the weight-only fp8 GEMM (144 registers by
default) and SmoothQuant's W8A8 GEMM (194) take it; a matmul whose held code spills in its loop (mm_even_k, 244) and
one whose code fits already keep their PTX. Results in the interpreter under the switch (on the GPU, at the corpus's
GPU sizes, `scripts/bench_corpus.py --ab ring_occupancy` checks them against float64); the directive in the PTX and
the registers ptxas gives it."""
import numpy as np
import pytest

import workloads.corpus as corpus
from compiler.codegen.ptx import find_nvdisasm, find_ptxas

CASES = corpus.load("tilefarm")
HELD = ("w8a16_fp8_block_gemm_bf16", "smoothquant_dyn_w8a8_f16")
KEPT = ("mm_even_k_f16", "mm_w4a16_f16")


def _tools():
    try:
        if find_ptxas() is None or find_nvdisasm() is None:
            pytest.skip("needs ptxas and nvdisasm")
    except Exception as e:  # noqa: BLE001
        pytest.skip(f"needs ptxas and nvdisasm: {e}")


def _ptx(name, ab, monkeypatch, tmp_path, size="gpu"):
    monkeypatch.setenv("TILEFARM_CACHE_DIR", str(tmp_path / (ab or "default")))
    monkeypatch.setenv("TILEFARM_AB", ab)
    c = CASES[name]
    if hasattr(c.kernel, "_drop_compiled"):  # compiled kernels in memory are not keyed by the switches
        c.kernel._drop_compiled()
    small = c.params("ci")
    arrays = {**c.make_inputs(small), **c.make_outputs(small)}  # compiled only: the GPU sizes' scalars, small arrays
    meta = c.meta_for(size)
    grid, args = c.launch(c.params(size), arrays, meta)
    consts, opts = c.split_meta(meta)
    return c.kernel.warmup(*args, grid=grid, target="sm_90a", **consts, **opts)


@pytest.mark.parametrize("name", HELD)
def test_held_to_the_rings_blocks(name, monkeypatch, tmp_path):
    _tools()
    default = _ptx(name, "", monkeypatch, tmp_path)
    held = _ptx(name, "ring_occupancy", monkeypatch, tmp_path)
    assert ".minnctapersm" not in default.asm["ptx"]
    assert ".minnctapersm 2" in held.asm["ptx"]
    from compiler.resources import kernel_resources

    r = kernel_resources(held)
    assert r["regs"] <= 128 and r["blocks_per_sm"] == 2, r


@pytest.mark.parametrize("name", KEPT)
def test_kept_where_held_code_would_spill_or_fits(name, monkeypatch, tmp_path):
    _tools()
    assert _ptx(name, "ring_occupancy", monkeypatch, tmp_path).asm["ptx"] == \
        _ptx(name, "", monkeypatch, tmp_path).asm["ptx"]


@pytest.mark.parametrize("name", HELD)
def test_results_under_the_switch(name, monkeypatch):
    monkeypatch.setenv("TILEFARM_AB", "ring_occupancy")
    c = CASES[name]
    p, meta = c.params("ci"), c.meta_for("ci")
    x = c.make_inputs(p, seed=3)
    outs = c.make_outputs(p)
    c.run(c.kernel, {**x, **outs}, p, meta)
    res = c.check(p, outs, c.expected(p, x))
    assert all(v[0] for v in res.values()), res
