"""The blocks a copy ring leaves room for, held (passes/pipeline.py records `ring_blocks_room`, codegen/__init__.py
`ring_room`; the A/B `ring_occupancy` until 2026-12-07): a one-dot loop of two or more warpgroups whose loose copy
ring leaves shared memory (and, by the pipeline's register estimate, registers) for two blocks an SM, but whose
ptxas register count holds one, is assembled again with `.minnctapersm 2`, kept where no loop of its machine code
spills (read from the cubin: codegen/sass_bin.py).
Corpus kernels at their GPU meta-parameters: the weight-only fp8 GEMM (144 registers unheld) and SmoothQuant's W8A8
GEMM (194) take it; a matmul whose held code spills in its loop (mm_even_k, 244 registers) and W4A16 (166, 84 bytes
spilled held) keep ptxas's own count, and since 2026-12-07 (twenty-fourth session) are not assembled held at all: the
addresses of their loads (mm_even_k's B element by element, 32 a thread) leave no room in the estimate
(passes/pipeline.py `_address_regs`). Their results are the corpus tests' (tests/corpus) and, on the GPU at the
corpus's sizes, scripts/bench_corpus.py's."""
import pytest

import workloads.corpus as corpus
from compiler.codegen.ptx import find_ptxas

CASES = corpus.load("tilefarm")
HELD = ("w8a16_fp8_block_gemm_bf16", "smoothquant_dyn_w8a8_f16")
KEPT = ("mm_even_k_f16", "mm_w4a16_f16")


def _tools():
    try:
        if find_ptxas() is None:
            pytest.skip("needs ptxas")
    except Exception as e:  # noqa: BLE001
        pytest.skip(f"needs ptxas: {e}")


def _kernel(name, monkeypatch, tmp_path):
    monkeypatch.setenv("TILEFARM_CACHE_DIR", str(tmp_path))
    c = CASES[name]
    if hasattr(c.kernel, "_drop_compiled"):  # compiled again here, not the one an earlier test made in memory
        c.kernel._drop_compiled()
    small = c.params("ci")
    arrays = {**c.make_inputs(small), **c.make_outputs(small)}  # compiled only: the GPU sizes' scalars, small arrays
    meta = c.meta_for("gpu")
    grid, args = c.launch(c.params("gpu"), arrays, meta)
    consts, opts = c.split_meta(meta)
    return c.kernel.warmup(*args, grid=grid, target="sm_90a", **consts, **opts)


@pytest.mark.parametrize("name", HELD)
def test_held_to_the_rings_blocks(name, monkeypatch, tmp_path):
    _tools()
    k = _kernel(name, monkeypatch, tmp_path)
    assert ".minnctapersm 2" in k.asm["ptx"]
    from compiler.resources import kernel_resources

    r = kernel_resources(k)
    assert r["regs"] <= 128 and r["blocks_per_sm"] == 2, r


@pytest.mark.parametrize("name", KEPT)
def test_not_held_where_it_would_spill(name, monkeypatch, tmp_path):
    _tools()
    k = _kernel(name, monkeypatch, tmp_path)
    assert ".minnctapersm" not in k.asm["ptx"]
    assert "ring_blocks_room" not in k.metadata  # no held assembly tried
    from compiler.resources import kernel_resources

    assert kernel_resources(k)["regs"] > 128


def test_addresses_of_a_loop_s_loads():
    """One address pair a vector: a 64x128 fp16 tile over 256 threads whose columns are contiguous and 16-byte
    aligned takes 4 vectors a thread (8 registers); one with no contiguity 32 (64)."""
    from types import SimpleNamespace as NS

    from compiler.ir import types as T
    from compiler.passes.pipeline import _address_regs

    def load(pid):
        return NS(kind="load", result=NS(type=T.TensorType(T.float16, (64, 128))), operands=[NS(id=pid)])
    body = NS(walk=lambda: [load(1)])
    info = {1: NS(contiguity=(1, 128), divisibility=(16, 16))}
    assert _address_regs(body, info, 256) == 8
    info = {1: NS(contiguity=(1, 1), divisibility=(2, 2))}
    assert _address_regs(body, info, 256) == 64
