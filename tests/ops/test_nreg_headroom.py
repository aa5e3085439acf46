"""A/B `nreg_headroom` (compiler/codegen/__init__.py `register_headroom`): a kernel with a loop of two or more global
loads gets `.maxnreg` at the most registers that keep ptxas's blocks per SM. Results with and without it (interpreter,
through ptxas, on the GPU), the limit it sets, and the loads it puts in flight (scripts/loads_in_flight.py on the
machine code, where nvdisasm is installed)."""
import os
import re
import sys

import numpy as np
import pytest

import compiler
import compiler.language as tl

from .test_ops import TARGETS, poison, run

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@compiler.jit
def maxpool_kernel(X, LENS, MAXV, ARG, MEAN, T, D, BLOCK_T: tl.constexpr, BLOCK_D: tl.constexpr):
    # per (b, d): max, first argmax and mean over t < LENS[b] of X [B, T, D]; the tiles carried through the loop
    b = tl.program_id(0)
    n = tl.load(LENS + b)
    rd = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    d_ok = rd < D
    best = tl.full([BLOCK_T, BLOCK_D], float("-inf"), tl.float16)
    bidx = tl.zeros([BLOCK_T, BLOCK_D], dtype=tl.int32)
    tot = tl.zeros([BLOCK_T, BLOCK_D], dtype=tl.float32)
    for t0 in range(0, n, BLOCK_T):
        t = t0 + tl.arange(0, BLOCK_T)
        m = (t[:, None] < n) & d_ok[None, :]
        x = tl.load(X + (b * T + t[:, None]).to(tl.int64) * D + rd[None, :], mask=m, other=float("-inf"))
        take = x > best
        best = tl.where(take, x, best)
        bidx = tl.where(take, t[:, None], bidx)
        tot += tl.where(m, x.to(tl.float32), 0.0)
    mx = tl.max(best, axis=0)
    arg = tl.min(tl.where(best == mx[None, :], bidx, 2147483647), axis=0)
    tl.store(MAXV + b * D + rd, mx, mask=d_ok)
    tl.store(ARG + b * D + rd, arg, mask=d_ok)
    tl.store(MEAN + b * D + rd, tl.sum(tot, axis=0) / n, mask=d_ok)


B, T, D = 3, 80, 72  # D: a masked second column block; lengths leave a partial and a single tile


def _inputs():
    rng = np.random.default_rng(41)
    x = rng.standard_normal((B, T, D)).astype(np.float16)
    x[0, 5, :] = x[0, 9, :]  # ties: the first index wins
    lens = np.array([80, 37, 1], np.int32)
    return x, lens


def _outputs():
    return poison(B * D, "float16"), poison(B * D, "int32"), poison(B * D, "float32")


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("ab", ["", "nreg_headroom"])
def test_results(target, ab, monkeypatch):
    monkeypatch.setenv("TILEFARM_AB", ab)
    x, lens = _inputs()
    mx, arg, mean = _outputs()
    run(target, maxpool_kernel, (B, 2), [x, lens, mx, arg, mean], [T, D], BLOCK_T=32, BLOCK_D=64, num_warps=4)
    for i, n in enumerate(lens):
        seg = x[i, :n].astype(np.float64)
        np.testing.assert_array_equal(mx.reshape(B, D)[i], seg.max(axis=0).astype(np.float16))
        np.testing.assert_array_equal(arg.reshape(B, D)[i], seg.argmax(axis=0))
        np.testing.assert_allclose(mean.reshape(B, D)[i], seg.mean(axis=0), rtol=1e-5, atol=1e-5)


def _compiled(ab, monkeypatch):
    monkeypatch.setenv("TILEFARM_AB", ab)
    x, lens = _inputs()
    return maxpool_kernel.warmup(x, lens, *_outputs(), 4096, 4096, grid=(1,), target="sm_90a", BLOCK_T=32,
                                 BLOCK_D=64, num_warps=4)


def test_loop_loads_counted_in_the_ptx(monkeypatch):
    from compiler.codegen import loop_global_loads

    assert loop_global_loads(_compiled("", monkeypatch).asm["ptx"]) == 2  # two 16-byte loads an iteration
    assert loop_global_loads(".entry k()\n{\n\tld.global.b32 %r1, [%rd1];\n\tret;\n}\n") == 0  # not in a loop


def _ptxas():
    from compiler.codegen.ptx import find_ptxas

    return find_ptxas()


@pytest.mark.skipif(_ptxas() is None, reason="ptxas not found (nvidia-cuda-nvcc)")
def test_limit_keeps_the_blocks_per_sm(monkeypatch):
    """The switch's PTX has `.maxnreg` above ptxas's own count, at the same blocks per SM; the default has none."""
    from compiler.codegen.ptx import ptx_resources
    from compiler.resources import occupancy

    base, roomy = _compiled("", monkeypatch), _compiled("nreg_headroom", monkeypatch)
    assert ".maxnreg" not in base.asm["ptx"]
    limit = int(re.search(r"^\.maxnreg (\d+)$", roomy.asm["ptx"], re.M).group(1))
    assert roomy.metadata["nreg_headroom"] == limit
    r0 = ptx_resources(base.asm["ptx"], "sm_90a")["registers"]
    r1 = ptx_resources(roomy.asm["ptx"], "sm_90a")["registers"]
    smem = base.metadata["shared_bytes"]
    assert r0 < limit and r1 <= limit
    assert occupancy(limit, smem, 128, "sm_90a") == occupancy(r0, smem, 128, "sm_90a")
    assert occupancy(limit + 1, smem, 128, "sm_90a") < occupancy(r0, smem, 128, "sm_90a")


def _nvdisasm():
    from compiler.codegen.ptx import find_nvdisasm

    return find_nvdisasm()


@pytest.mark.skipif(_ptxas() is None or _nvdisasm() is None,
                    reason="needs ptxas and nvdisasm (nvidia-cuda-nvcc; nvidia-cuda-nvdisasm, the `sass` extra)")
def test_both_loads_in_flight(monkeypatch):
    """With the limit both loads of an iteration are issued before the first use of either (ptxas 13: one without)."""
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    import loads_in_flight as L

    got = {}
    for ab in ("", "nreg_headroom"):
        (loop,) = L.side_loops(L.sass_of(_compiled(ab, monkeypatch).asm["cubin"], _nvdisasm()))
        got[ab] = (loop["in_flight"], loop["loads"])
    assert got["nreg_headroom"] == (2, 2), got
    assert got[""][0] <= got["nreg_headroom"][0], got
