"""The tutorials (workloads/tutorials, Triton's dialect) under our compiler: each in the interpreter at small sizes
against float64 NumPy references (CI), through ptxas for sm_90a (every kernel the wrapper launches is compiled
and assembled instead; where TMA or fp8 wgmma apply the PTX is checked to use them), and on the GPU (marked gpu)
with torch CUDA tensors at sizes where the GPU paths (TMA rings, persistent loops, wgmma) matter."""
import contextlib
import os
import re

import ml_dtypes
import numpy as np
import pytest

import compiler
from compiler.triton_compat import load_kernel_file

from tests.ops.test_ops import _have_ptxas

HERE = os.path.dirname(os.path.abspath(__file__))
TUT = os.path.join(os.path.dirname(os.path.dirname(HERE)), "workloads", "tutorials")
E4M3, E5M2 = np.dtype(ml_dtypes.float8_e4m3fn), np.dtype(ml_dtypes.float8_e5m2)
TARGETS = ["interp", pytest.param("ptxas", marks=pytest.mark.skipif(not _have_ptxas(), reason="ptxas not found")),
           pytest.param("gpu", marks=pytest.mark.gpu)]


def tut(name):
    return load_kernel_file(os.path.join(TUT, name + ".py"))


@contextlib.contextmanager
def compile_only(ptx):
    """Launches inside compile (warmup for sm_90a) and assemble instead of running; PTX texts appended to ptx."""
    orig = compiler.JITFunction.__getitem__

    def getitem(self, grid):
        def launch(*args, **kw):
            ck = self.warmup(*args, grid=grid if not callable(grid) else (1,), target="sm_90a", **kw)
            assert isinstance(ck.asm["cubin"], bytes) and len(ck.asm["cubin"]) > 0
            ptx.append(ck.asm["ptx"])
        return launch

    compiler.JITFunction.__getitem__ = getitem
    try:
        yield
    finally:
        compiler.JITFunction.__getitem__ = orig


class Arrays:
    """The arrays of one run: NumPy (interp, ptxas) or torch CUDA copies (gpu), copied back by `host`."""

    def __init__(self, target):
        self.target = target
        self.dev = {}
        if target == "gpu":
            self.torch = pytest.importorskip("torch")

    def __call__(self, a):
        if self.target != "gpu":
            return a
        t = self.torch
        if a.dtype in (E4M3, E5M2):
            d = t.from_numpy(a.view(np.uint8).copy()).cuda().view(t.float8_e4m3fn if a.dtype == E4M3 else
                                                                   t.float8_e5m2)
        else:
            d = t.from_numpy(np.ascontiguousarray(a)).cuda()
        self.dev[id(a)] = (a, d)
        return d

    def host(self):
        if self.target == "gpu":
            self.torch.cuda.synchronize()
            for a, d in self.dev.values():
                if a.dtype in (E4M3, E5M2):
                    a.view(np.uint8)[...] = d.view(self.torch.uint8).cpu().numpy()
                else:
                    a[...] = d.cpu().numpy()


def launch(target, fn, *args, expect=(), **kw):
    """Run wrapper fn(*args) for target; on ptxas compile only and check each `expect` string is in the PTX.
    Returns False when nothing ran (ptxas)."""
    if target == "ptxas":
        ptx = []
        with compile_only(ptx):
            fn(*args, **kw)
        assert ptx
        for s in expect:
            assert any(s in p for p in ptx), f"{s!r} not in the PTX"
        return False
    fn(*args, **kw)
    return True


def rng(i):
    return np.random.default_rng(100 + i)


def nan(shape, dtype=np.float32):
    return np.full(shape, np.nan, dtype)


# ------------------------------------------------------------------------------------------------ 01 .. 04
@pytest.mark.parametrize("target", TARGETS)
def test_01_vector_add(target):
    m, A = tut("t01_vector_add"), Arrays(target)
    n = 98432 if target == "gpu" else 3000
    x, y = rng(1).standard_normal(n).astype(np.float32), rng(2).standard_normal(n).astype(np.float32)
    out = nan(n)
    if launch(target, m.add, A(x), A(y), A(out)):
        A.host()
        np.testing.assert_array_equal(out, x + y)


@pytest.mark.parametrize("target", TARGETS)
def test_02_fused_softmax(target):
    m, A = tut("t02_fused_softmax"), Arrays(target)
    rows, cols = (1823, 781) if target == "gpu" else (37, 100)
    x = rng(3).standard_normal((rows, cols)).astype(np.float32) * 3
    out = nan((rows, cols))
    if launch(target, m.softmax, A(x), A(out), num_programs=132 if target == "gpu" else 5):
        A.host()
        e = np.exp(x.astype(np.float64) - x.max(1, keepdims=True))
        np.testing.assert_allclose(out, e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("activation", ["", "leaky_relu"])
def test_03_matmul(target, activation):
    m, A = tut("t03_matmul"), Arrays(target)
    M, N, K = (1000, 1016, 1040) if target != "interp" else (100, 72, 80)
    blocks = dict(BM=128, BN=128, BK=64, num_warps=8) if target != "interp" else dict(BM=32, BN=32, BK=32,
                                                                                     GROUP_SIZE_M=2, num_warps=4)
    a = (rng(4).standard_normal((M, K)) / 8).astype(np.float16)
    b = (rng(5).standard_normal((K, N)) / 8).astype(np.float16)
    c = nan((M, N), np.float16)
    if launch(target, m.matmul, A(a), A(b), A(c), activation=activation, expect=["wgmma.mma_async"], **blocks):
        A.host()
        ref = a.astype(np.float64) @ b.astype(np.float64)
        if activation:
            ref = np.where(ref >= 0, ref, 0.01 * ref)
        np.testing.assert_allclose(c.astype(np.float64), ref, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("target", TARGETS)
def test_04_dropout(target):
    m, A = tut("t04_dropout"), Arrays(target)
    n, p = 5000, 0.4
    x = rng(6).standard_normal(n).astype(np.float32) + 3.0  # never 0: a kept element is never 0
    o1, o2, o3 = nan(n), nan(n), nan(n)
    if not launch(target, m.seeded_dropout, A(x), A(o1), p, 123):
        return
    m.seeded_dropout(A(x), A(o2), p, 123)
    m.seeded_dropout(A(x), A(o3), p, 512)
    A.host()
    kept = o1 != 0
    np.testing.assert_allclose(o1[kept], x[kept] / (1 - p), rtol=1e-6)
    assert abs(kept.mean() - (1 - p)) < 0.03
    np.testing.assert_array_equal(o1, o2)  # the same seed: the same mask
    assert (kept != (o3 != 0)).mean() > 0.2  # another seed: another mask
    if target == "gpu":  # the GPU's Philox bits are the interpreter's: the same elements kept
        ref = nan(n)
        m.seeded_dropout(x, ref, p, 123)
        np.testing.assert_array_equal(o1 != 0, ref != 0)
        # x / (1 - p): the GPU's float32 division was off by 1 ulp in 13.5% of kept elements; the interpreter's is exact
        np.testing.assert_allclose(o1, ref, rtol=3e-7, atol=0)


# ------------------------------------------------------------------------------------------------ 05 layernorm
def _ln_ref(x, w, b, dy, eps):
    x64, w64, dy64 = (v.astype(np.float64) for v in (x, w, dy))
    mu = x64.mean(1, keepdims=True)
    rstd = 1 / np.sqrt(((x64 - mu) ** 2).mean(1, keepdims=True) + eps)
    xhat = (x64 - mu) * rstd
    y = xhat * w64 + b.astype(np.float64)
    N = x.shape[1]
    wdy = w64 * dy64
    dx = (wdy - (xhat * (xhat * wdy).sum(1, keepdims=True) / N + wdy.sum(1, keepdims=True) / N)) * rstd
    return y, mu[:, 0], rstd[:, 0], dx, (dy64 * xhat).sum(0), dy64.sum(0)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_05_layer_norm(target, dtype):
    m, A = tut("t05_layer_norm"), Arrays(target)
    M, N = (4096, 1536) if target == "gpu" else (40, 200)
    G = 64 if target == "gpu" else 6
    r = rng(7)
    x = (r.standard_normal((M, N)) * 2 + 0.5).astype(dtype)
    w = (1 + r.standard_normal(N) * 0.1).astype(dtype)
    b = (r.standard_normal(N) * 0.1).astype(dtype)
    dy = r.standard_normal((M, N)).astype(dtype)
    y, mean, rstd = nan((M, N), dtype), nan(M), nan(M)
    dx, dw, db = nan((M, N), dtype), nan(N, dtype), nan(N, dtype)
    pdw, pdb = nan((G, N)), nan((G, N))
    dev = [A(v) for v in (x, w, b, y, mean, rstd, dy, dx, dw, db, pdw, pdb)]
    xd, wd, bd, yd, md, rd, dyd, dxd, dwd, dbd, pdwd, pdbd = dev
    if not launch(target, m.layer_norm_fwd, xd, wd, bd, yd, md, rd, eps=1e-5, expect=[".entry"]):
        launch(target, m.layer_norm_bwd, dyd, xd, wd, md, rd, dxd, dwd, dbd, pdwd, pdbd)
        return
    m.layer_norm_bwd(dyd, xd, wd, md, rd, dxd, dwd, dbd, pdwd, pdbd)
    A.host()
    ry, rmu, rrs, rdx, rdw, rdb = _ln_ref(x, w, b, dy, 1e-5)
    tol = 1e-4 if dtype == "float32" else 1e-2
    np.testing.assert_allclose(mean, rmu, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(rstd, rrs, rtol=1e-4)
    np.testing.assert_allclose(y.astype(np.float64), ry, rtol=tol, atol=tol)
    np.testing.assert_allclose(dx.astype(np.float64), rdx, rtol=tol, atol=tol * 4)
    np.testing.assert_allclose(dw.astype(np.float64), rdw, rtol=tol, atol=tol * np.sqrt(M))
    np.testing.assert_allclose(db.astype(np.float64), rdb, rtol=tol, atol=tol * np.sqrt(M))


# ------------------------------------------------------------------------------------------------ 06 attention
def _attn_ref(q, k, v, sm_scale, causal):
    q64, k64, v64 = (decode(t) for t in (q, k, v))
    s = q64 @ np.swapaxes(k64, -1, -2) * sm_scale
    if causal:
        n = s.shape[-1]
        s = np.where(np.tril(np.ones((n, n), bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ v64


def decode(t):
    return t.astype(np.float32).astype(np.float64) if t.dtype in (E4M3, E5M2) else t.astype(np.float64)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("dtype", ["float16", "float8e5"])
def test_06_fused_attention(target, causal, dtype):
    m, A = tut("t06_fused_attention"), Arrays(target)
    Z, H, L, D = (2, 8, 1024, 64) if target != "interp" else (1, 2, 128, 64)
    blocks = dict(BLOCK_M=128, BLOCK_N=64, num_warps=8) if target != "interp" else dict(BLOCK_M=64, BLOCK_N=32,
                                                                                         num_warps=4)
    nd = np.float16 if dtype == "float16" else E5M2
    r = rng(8)
    q, k, v = ((r.standard_normal((Z, H, L, D)) * 0.5).astype(nd) for _ in range(3))
    o = nan((Z, H, L, D), np.float16) if dtype == "float16" else np.full((Z, H, L, D), 0x7F, np.uint8).view(nd)
    mm = nan(Z * H * L)
    sm_scale = 0.5
    expect = ["wgmma.mma_async"] + (["k32.f32.e5m2.e5m2"] if dtype != "float16" else [])
    if launch(target, m.attention, A(q), A(k), A(v), A(o), A(mm), sm_scale, causal=causal, expect=expect,
              **blocks):
        A.host()
        ref = _attn_ref(q, k, v, sm_scale, causal)
        tol = 2e-2 if dtype == "float16" else 1.5e-1  # fp8 P (2 mantissa bits) and an fp8 output
        np.testing.assert_allclose(decode(o), ref, rtol=tol, atol=tol)
        assert np.isfinite(mm).all()


@pytest.mark.parametrize("target", [t for t in TARGETS if t != "interp"])
@pytest.mark.parametrize("D,BM,BN,warps", [(64, 128, 64, 4), (64, 64, 32, 4), (128, 128, 64, 8), (128, 128, 128, 8)])
def test_06_fp8_attention_configs(target, D, BM, BN, warps):
    """fp8 attention at other tiles than the tutorial's: two wgmma row blocks a warpgroup (128 rows, 4 warps), k32
    A fragments of one step (BLOCK_N 32), head dim 128, a 128-key V tile through the ring."""
    m, A = tut("t06_fused_attention"), Arrays(target)
    Z, H, L = 1, 2, 512
    r = rng(9)
    q, k, v = ((r.standard_normal((Z, H, L, D)) * 0.5).astype(E5M2) for _ in range(3))
    o = np.full((Z, H, L, D), 0x7F, np.uint8).view(E5M2)
    mm = nan(Z * H * L)
    if launch(target, m.attention, A(q), A(k), A(v), A(o), A(mm), 0.5, expect=["k32.f32.e5m2.e5m2"], BLOCK_M=BM,
              BLOCK_N=BN, num_warps=warps):
        A.host()
        np.testing.assert_allclose(decode(o), _attn_ref(q, k, v, 0.5, False), rtol=1.5e-1, atol=1.5e-1)
        assert np.isfinite(mm).all()


@pytest.mark.skipif(not _have_ptxas(), reason="ptxas not found")
def test_06_fp8_attention_operands():
    """fp8 attention at the benchmark's config: V ([keys, head dim] as stored, N-major) comes through the TMA copy
    ring like K (copied transposed to scratch for the K-major-only fp8 wgmma) instead of one-byte global loads in
    the loop, and P feeds the P.V wgmma from registers (the k32 A fragment built by quad shuffles) instead of a
    shared-memory round trip. Correctness: test_06_fused_attention on the GPU."""
    m = tut("t06_fused_attention")
    Z, H, L, D = 1, 2, 256, 64
    q, k, v, o = (np.zeros((Z, H, L, D), E5M2) for _ in range(4))
    mm = np.zeros(Z * H * L, np.float32)
    ptx = []
    with compile_only(ptx):
        m.attention(q, k, v, o, mm, 0.5, BLOCK_M=128, BLOCK_N=64, num_warps=8, num_stages=3)
    (p,) = ptx
    assert p.count("cp.async.bulk.tensor") >= 6  # K and V: prologue stages and the loop's copy each
    assert len(re.findall(r"ld\.global[^\n]*\.[bu]8", p)) <= 32  # Q's tile only, loaded once before the loop
    assert len(re.findall(r"k32\.f32\.e5m2\.e5m2 \{[^}]*\}, \{", p)) == 2  # P.V: A from registers


# ------------------------------------------------------------------------------------------------ 07 .. 09
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_07_libdevice(target, dtype):
    m, A = tut("t07_libdevice"), Arrays(target)
    n = 5000
    x = rng(9).uniform(-1, 1, n).astype(dtype)
    xp = rng(10).uniform(0.1, 3, n).astype(dtype)
    y, y2 = nan(n, dtype), nan(n, dtype)
    if not launch(target, m.asin, A(x), A(y), expect=[".entry"]):
        return
    m.mixed_math(A(xp), A(y2))
    A.host()
    import math

    tol = 2e-6 if dtype == "float32" else 1e-13
    np.testing.assert_allclose(y, np.arcsin(x.astype(np.float64)), rtol=tol, atol=tol)
    x64 = xp.astype(np.float64)
    ref = np.tanh(x64) + x64 ** 2.5 * np.array([math.erfc(t) for t in x64]) + np.log1p(np.abs(x64))
    np.testing.assert_allclose(y2, ref, rtol=tol * 4, atol=tol * 4)


@pytest.mark.parametrize("target", TARGETS)
def test_08_grouped_gemm(target):
    m = tut("t08_grouped_gemm")
    shapes = [(64, 48, 40), (100, 64, 96), (32, 96, 64)] if target != "gpu" else \
        [(1024, 1024, 1024), (512, 768, 256), (1000, 200, 300), (128, 1024, 512)]
    r = rng(11)
    As = [(r.standard_normal((M, K)) / 8).astype(np.float16) for M, N, K in shapes]
    Bs = [(r.standard_normal((K, N)) / 8).astype(np.float16) for M, N, K in shapes]
    Cs = [nan((M, N), np.float16) for M, N, K in shapes]
    sizes = np.array([d for s in shapes for d in s], np.int32)
    lds = np.array([d for (M, N, K) in shapes for d in (K, N, N)], np.int32)
    blocks = dict(BM=32, BN=32, BK=32, num_warps=4) if target == "interp" else dict(BM=128, BN=128, BK=32)
    nsm = 4 if target == "interp" else 132
    if target == "gpu":
        torch = pytest.importorskip("torch")
        dA, dB, dC = ([torch.from_numpy(x).cuda() for x in xs] for xs in (As, Bs, Cs))
        ptrs = [torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64, device="cuda") for ts in (dA, dB, dC)]
        m.grouped_matmul(ptrs, torch.from_numpy(sizes).cuda(), torch.from_numpy(lds).cuda(), len(shapes), nsm,
                         **blocks)
        torch.cuda.synchronize()
        Cs = [t.cpu().numpy() for t in dC]
    else:
        ptrs = [np.array([x.__array_interface__["data"][0] for x in xs], np.int64) for xs in (As, Bs, Cs)]
        if target == "ptxas":
            launch(target, m.grouped_matmul, ptrs, sizes, lds, len(shapes), nsm, expect=["wgmma.mma_async"],
                   **blocks)
            return
        with compiler.interpreter.host_memory(*As, *Bs, *Cs):
            m.grouped_matmul(ptrs, sizes, lds, len(shapes), nsm, **blocks)
    for a, b, c in zip(As, Bs, Cs):
        np.testing.assert_allclose(c.astype(np.float64), a.astype(np.float64) @ b.astype(np.float64), rtol=1e-2,
                                   atol=1e-2)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["float16", "float8e4nv"])
def test_09_persistent_matmul(target, dtype):
    m, A = tut("t09_persistent_matmul"), Arrays(target)
    M, N, K = (1000, 1016, 1024) if target != "interp" else (160, 96, 128)
    blocks = dict(BM=128, BN=128, BK=64, num_warps=8) if target != "interp" else dict(BM=64, BN=32, BK=32,
                                                                                     GROUP_SIZE_M=2, num_warps=4)
    fp8 = dtype != "float16"
    nd = E4M3 if fp8 else np.float16
    r = rng(12)
    a = (r.standard_normal((M, K)) / (1 if fp8 else 8)).astype(nd)
    b = (r.standard_normal((N, K) if fp8 else (K, N)) / (1 if fp8 else 8)).astype(nd)
    c = nan((M, N), np.float16)
    expect = ["cp.async.bulk.tensor.2d", "mbarrier.try_wait.parity"] if not fp8 else ["k32.f32.e4m3.e4m3"]
    if launch(target, m.matmul_persistent, A(a), A(b), A(c), 132 if target != "interp" else 3, b_kmajor=fp8,
              expect=expect, **blocks):
        A.host()
        ref = decode(a) @ (decode(b).T if fp8 else decode(b))
        np.testing.assert_allclose(c.astype(np.float64), ref, rtol=1e-2, atol=1e-2 if not fp8 else 0.5)
