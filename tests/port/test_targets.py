"""Targets other than the H200's: a dot for sm_100a / sm_120 runs on mma.sync (wgmma is sm_90a's alone: it used to
be emitted for any arch-specific target, and ptxas refused it for sm_100a); Triton's GPUTarget for Blackwell builds
the arch-specific target, as Triton does."""
import re

import numpy as np
import pytest

import compiler
import compiler.language as tl

from .kernels import _have_ptxas

pytestmark = pytest.mark.skipif(not _have_ptxas(), reason="ptxas not found")


@compiler.jit
def _dot64(A, B, C):
    r = tl.arange(0, 64)
    a = tl.load(A + r[:, None] * 64 + r[None, :])
    b = tl.load(B + r[:, None] * 64 + r[None, :])
    tl.store(C + r[:, None] * 64 + r[None, :], tl.dot(a, b).to(tl.float16))


@pytest.mark.parametrize("arch,wgmma", [("sm_90", True), ("sm_90a", True), ("sm_100", False), ("sm_100a", False),
                                        ("sm_120", False)])
def test_dot_instruction_per_target(arch, wgmma):
    x = np.zeros(64 * 64, np.float16)
    k = _dot64.warmup(x, x, x, grid=(1,), target=arch, num_warps=4)
    ptx = k.asm["ptx"]
    assert ("wgmma.mma_async" in ptx) == wgmma and ("mma.sync" in ptx) != wgmma
    assert k.asm["cubin"]


def test_triton_gpu_target_for_blackwell_is_arch_specific():
    from compiler.triton_compat.modules import compat_module

    triton = compat_module("triton")
    backends = compat_module("triton.backends.compiler")

    @compiler.jit
    def add(a, b, c):
        idx = tl.arange(0, 32)
        tl.store(c + idx, tl.load(a + idx) + tl.load(b + idx))

    src = triton.compiler.ASTSource(fn=add, signature={"a": "*fp32", "b": "*fp32", "c": "*fp32"}, constexprs={})
    k = triton.compile(src, target=backends.GPUTarget("cuda", 100, 32))
    assert ".target sm_100a" in k.asm["ptx"] and k.asm["cubin"]


@compiler.jit
def _dot_store(A, B, C, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(A + rm[:, None] * K + rk[None, :])
    b = tl.load(B + rk[:, None] * N + rn[None, :])
    tl.store(C + rm[:, None] * N + rn[None, :], tl.dot(a, b))


@pytest.mark.parametrize("dt,M,N,K,w", [(np.float16, 64, 64, 64, 4), (np.float32, 64, 64, 32, 4),
                                        (np.float16, 128, 128, 64, 8)])
def test_dot_result_stored_16_bytes_a_thread(dt, M, N, K, w):
    """A dot's result is converted to the pointer's coalesced layout and stored with st.global.v4, as Triton does
    (its test_dot asserts it), not st.global.v2 straight from the MMA fragments."""
    a, b, c = np.zeros(M * K, dt), np.zeros(K * N, dt), np.zeros(M * N, np.float32)
    wide = _dot_store.warmup(a, b, c, M=M, N=N, K=K, grid=(1,), target="sm_90", num_warps=w)
    assert "st.global.v4" in wide.asm["ptx"] and "st.global.v2" not in wide.asm["ptx"] and wide.asm["cubin"]


@pytest.mark.gpu
@pytest.mark.parametrize("dt", [np.float16, np.float32])
def test_dot_store_results(dt):
    from .kernels import poison, run

    rng = np.random.default_rng(12)
    a = rng.standard_normal((64, 64)).astype(dt)
    b = rng.standard_normal((64, 64)).astype(dt)
    c = poison((64, 64), np.float32)
    run("gpu", _dot_store, (1,), a, b, c, M=64, N=64, K=64, num_warps=4)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=2e-2, atol=2e-2)


@compiler.jit
def _dot_residual(A, B, R, C, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(A + rm[:, None] * K + rk[None, :])
    b = tl.load(B + rk[:, None] * N + rn[None, :])
    r = tl.load(R + rm[:, None] * N + rn[None, :]).to(tl.float32) * 0.5
    tl.store(C + rm[:, None] * N + rn[None, :], tl.dot(a, b) + r)


@pytest.mark.parametrize("M,N,K,w", [(64, 64, 64, 4), (128, 128, 64, 8)])
def test_convert_narrow_converts_the_float16_residual(M, N, K, w):
    """A residual tile loaded as float16 and widened to float32 is converted to the dot's layout as float16 (then
    widened and scaled there), not as float32."""
    from compiler.options import Options
    from compiler.passes import run_pipeline
    from compiler.passes.layouts import MmaLayout

    def after_layouts():
        a, b, r = np.zeros(M * K, np.float16), np.zeros(K * N, np.float16), np.zeros(M * N, np.float16)
        mod = _dot_residual.lower(a, b, r, np.zeros(M * N, np.float32), M=M, N=N, K=K)
        mod = run_pipeline(mod, Options(num_warps=w, arch="sm_90a"))
        ops = []

        def walk(block):
            for op in block.ops:
                ops.append(op)
                for bl in op.blocks:
                    walk(bl)
        walk(mod.function.body)
        return [op.result.type.element.name for op in ops if op.kind == "convert_layout"  # into the dot's layout
                and op.result.type.numel == M * N and isinstance(op.attrs["_layouts"][0], MmaLayout)]

    assert after_layouts() == ["float16"]
    a, b, r = np.zeros(M * K, np.float16), np.zeros(K * N, np.float16), np.zeros(M * N, np.float16)
    ck = _dot_residual.warmup(a, b, r, np.zeros(M * N, np.float32), M=M, N=N, K=K, grid=(1,), target="sm_90a",
                              num_warps=w)
    assert ck.asm["cubin"]


@pytest.mark.gpu
def test_convert_narrow_results():
    from .kernels import poison, run

    rng = np.random.default_rng(13)
    a, b = (rng.standard_normal((64, 64)).astype(np.float16) for _ in range(2))
    r = rng.standard_normal((64, 64)).astype(np.float16)
    c = poison((64, 64), np.float32)
    run("gpu", _dot_residual, (1,), a, b, r, c, M=64, N=64, K=64, num_warps=4)
    ref = a.astype(np.float64) @ b.astype(np.float64) + r.astype(np.float64) * 0.5
    np.testing.assert_allclose(c, ref, rtol=2e-2, atol=2e-2)


@compiler.jit
def _argmin_cols(X, OUT, M, N, BM: tl.constexpr, BN: tl.constexpr):
    rn = tl.arange(0, BN)
    rm = tl.arange(0, BM)
    x = tl.load(X + rm[:, None] * N + rn[None, :], mask=rm[:, None] < M, other=float("inf"))
    tl.store(OUT + rn, tl.argmin(x, axis=0))


def _first_combines(ptx, n):
    """The loads' register groups, and the registers the first n float compares of the reduction read as new values."""
    loads = [set(re.findall(r"%r\d+", m)) for m in re.findall(r"ld\.global\.v4\.b32 \{([^}]*)\}", ptx)]
    news = re.findall(r"setp\.le\.f32\s+%p\d+, %r\d+, (%r\d+);", ptx)[:n]
    return loads, news


def test_reduce_consumes_each_load_together():
    """The in-thread reduction chains of a thread's outputs advance together, a load's values consumed one after
    another, instead of one output's chain through every load before the next output's (a column argmin of 512x16
    tiles: ptxas kept all 64 loaded values live that way, 72 registers against Triton's 32; 40 now)."""
    x, o = np.zeros(512 * 16, np.float32), np.zeros(16, np.int32)
    inter = _argmin_cols.warmup(x, o, 512, 16, BM=512, BN=16, grid=(1,), target="sm_90a", num_warps=4)
    loads, news = _first_combines(inter.asm["ptx"], 4)
    assert len(loads) == 16
    assert len({next(i for i, g in enumerate(loads) if r in g) for r in news}) == 1 and inter.asm["cubin"]
