"""A loop of several mma.sync dots (passes/pipeline.py `_pipeline_async`; decode attention whose query heads of one
KV head fill the 16 rows of the dots: scores from K, output from V) takes the copy ring of the one-dot mma.sync
loops, num_stages - 1 slots (one at two stages, Triton's buffer count), its copies after the last dot behind the
barrier, not the register pipeline that held the next K and V tiles in registers (165 registers and 3 blocks an SM
at the corpus kernel's specialization, 128 and 4 with the ring; Triton's 96 and 5). Results in the interpreter,
through ptxas and on the GPU; the ring in the PTX."""
import numpy as np
import pytest

import compiler
import compiler.language as tl
from compiler.codegen.ptx import ptx_loops

from ..ops.test_ops import TARGETS, assert_close, poison, run


@compiler.jit
def group_decode_kernel(Q, K, V, O, n, G: tl.constexpr, BLOCK_G: tl.constexpr, D: tl.constexpr,
                        BLOCK_T: tl.constexpr):
    # one KV head per program; its G query heads are the rows of both dots (padded to BLOCK_G)
    h = tl.program_id(0)
    g = tl.arange(0, BLOCK_G)
    d = tl.arange(0, D)
    q = tl.load(Q + (h * G + g[:, None]) * D + d[None, :], mask=g[:, None] < G, other=0.0)
    m_i = tl.full([BLOCK_G], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_G], dtype=tl.float32)
    acc = tl.zeros([BLOCK_G, D], dtype=tl.float32)
    for t0 in range(0, n, BLOCK_T):
        t = t0 + tl.arange(0, BLOCK_T)
        live = t < n
        k = tl.load(K + (h * n + t[None, :]) * D + d[:, None], mask=live[None, :], other=0.0)
        s = tl.where(live[None, :], tl.dot(q, k), float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        alpha = tl.exp(m_i - m_new)
        p = tl.exp(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(V + (h * n + t[:, None]) * D + d[None, :], mask=live[:, None], other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v)
        m_i = m_new
    tl.store(O + (h * G + g[:, None]) * D + d[None, :], acc / l_i[:, None], mask=g[:, None] < G)


def _reference(q, k, v, G):
    H = k.shape[0]
    out = np.zeros(q.shape)
    for h in range(H):
        s = q[h * G:(h + 1) * G].astype(np.float64) @ k[h].astype(np.float64).T
        e = np.exp(s - s.max(axis=1, keepdims=True))
        out[h * G:(h + 1) * G] = (e @ v[h].astype(np.float64)) / e.sum(axis=1, keepdims=True)
    return out


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("stages", [2, 3])
def test_group_decode_results(target, stages):
    H, G, n, D = 3, 4, 203, 64  # a ragged last tile: its keys masked off
    rng = np.random.default_rng(11)
    q = (0.3 * rng.standard_normal((H * G, D))).astype(np.float16)
    k = rng.standard_normal((H, n, D)).astype(np.float16)
    v = rng.standard_normal((H, n, D)).astype(np.float16)
    o = poison((H * G, D), "float32")
    run(target, group_decode_kernel, (H,), [q, k, v, o], [n], G=G, BLOCK_G=16, D=D, BLOCK_T=32, num_warps=4,
        num_stages=stages)
    if target != "ptxas":
        assert_close(o, _reference(q, k, v, G), "float32", rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("stages", [2, 3])
def test_copies_in_the_loop(stages, monkeypatch, tmp_path):
    """The loop issues cp.async copies (the ring) and no global loads of its tiles."""
    monkeypatch.setenv("TILEFARM_CACHE_DIR", str(tmp_path))
    z = np.zeros((8, 64), np.float16)
    ptx = group_decode_kernel.warmup(z, z, z, np.zeros((8, 64), np.float32), 256, grid=(1,), target="sm_90a",
                                     G=4, BLOCK_G=16, D=64, BLOCK_T=32, num_warps=4, num_stages=stages).asm["ptx"]
    a, b = max(ptx_loops(ptx), key=lambda s: s[1] - s[0])
    loop = ptx[a:b]
    assert "cp.async.ca.shared.global" in loop or "cp.async.cg.shared.global" in loop
    assert "ld.global" not in loop
    assert loop.count("cp.async.commit_group") >= 1
