"""The sink_loads pass (A/B switch `sink_loads`, compiler/passes/schedule.py): a block load, and a widening cast of it,
move down past the pure arithmetic before their first user, never past a layout conversion, a store or a region."""
import numpy as np
import pytest

import compiler
import compiler.language as tl
from compiler.options import Options
from compiler.passes import run_pipeline

from .test_ops import TARGETS, assert_close, poison, run

@compiler.jit
def _dropout_scale(X, OUT, N, p, seed, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < N, other=0.0).to(tl.float32)
    keep = tl.rand(seed, offs) > p
    tl.store(OUT + offs, tl.where(keep, x / (1 - p), 0.0), mask=offs < N)

def _order(monkeypatch, ab):
    monkeypatch.setenv("TILEFARM_AB", ab)
    x = np.zeros(4096, np.float16)
    mod = run_pipeline(_dropout_scale.lower(x, np.zeros(4096, np.float32), 4096, 0.1, 7, BLOCK=1024),
                       Options(num_warps=4, arch="sm_90a"))
    return [o.kind for o in mod.function.body.ops]

def test_the_load_and_its_cast_move_past_the_random_numbers(monkeypatch):
    off, on = _order(monkeypatch, ""), _order(monkeypatch, "sink_loads")
    assert off.index("load") < off.index("umulhi")
    assert on.index("load") > max(i for i, k in enumerate(on) if k == "umulhi")
    assert on[on.index("load") + 1] == "cast"
    assert sorted(off) == sorted(on)

def test_registers_under_the_switch(monkeypatch):
    """ptxas keeps the Philox key schedule in uniform registers once no load is live across it."""
    from compiler.codegen.ptx import find_ptxas, ptx_resources

    if find_ptxas() is None:
        pytest.skip("needs ptxas (pip package nvidia-cuda-nvcc)")
    x = np.zeros(4096, np.float16)
    regs = {}
    for ab in ("", "sink_loads"):
        monkeypatch.setenv("TILEFARM_AB", ab)
        ck = _dropout_scale.warmup(x, np.zeros(4096, np.float32), 4096, 0.1, 7, BLOCK=1024, grid=(4,),
                                   target="sm_90a", num_warps=4)
        regs[ab] = ptx_resources(ck.asm["ptx"], "sm_90a")["registers"]
    assert regs["sink_loads"] <= regs[""]

@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("ab", ["", "sink_loads"])
def test_dropout_scale(monkeypatch, target, ab):
    monkeypatch.setenv("TILEFARM_AB", ab)
    n = 3000
    x = np.random.default_rng(1).uniform(-1, 1, n).astype(np.float16)
    out = poison(n, "float32")
    run(target, _dropout_scale, (3,), [x, out], [n, 0.25, 11], BLOCK=1024, num_warps=4)
    kept = out != 0
    assert 0.6 < kept.mean() < 0.9
    assert_close(out[kept], x.astype(np.float64)[kept] / 0.75, "float32", rtol=1e-6, atol=1e-6)
