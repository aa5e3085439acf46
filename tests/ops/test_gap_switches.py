"""Code found by reading both compilers' SASS for corpus kernels above 1.10 of Triton's time (fifteenth session),
timed on the H200 in the sixteenth: results in the interpreter, through ptxas and on the GPU, and the code it makes.
- the bitonic network's compare-and-swap as (down != upper) ? y < partner : y > partner (was `sort_flip`);
- a batch-dim slice of a rank-3 mma.sync operand layout converted by ldmatrix as the rank-2 one (was
  `slice_ldmatrix`);
- loop-invariant wgmma operands of dots under an `if` in a loop written to shared memory once (was `hoist_in_ifs`);
- tl.gather's source reinterpreted as bits before its broadcast over the index dim (was `gather_cast_first`);
and of the A/Bs made the code after the H100 run of 2026-12-07 (benchmarks/2026-12-07d-h100):
- 16-bit loop-carried registers and fp16 wgmma accumulators two to a 32-bit word (was `pack_carried16`);
- a tile's vector loads all issued before any is unpacked (was `loads_first`);
and a wgmma dot onto zeros (the scores of an attention), whose A/B `zero_acc` (first wgmma with scale-d 0) left."""
import re

import numpy as np
import pytest

import compiler
import compiler.language as tl

from . import shape_ops_kernels as SK
from .test_ops import TARGETS, assert_exact, poison, run

GPU_OR_PTXAS = [t for t in TARGETS if getattr(t, "values", (t,))[0] != "interp"]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("desc", [False, True])
def test_sort_results(target, desc):
    rng = np.random.default_rng(30)
    a = rng.standard_normal((4, 64)).astype(np.float32)
    a[1, :5] = [-0.0, 0.0, -0.0, 2.0, 2.0]
    a[3, :] = a[3, 0]
    y = poison(a.size, "float32")
    run(target, SK.sort_kernel, (1,), [a, y], [], WHAT="sort", DESC=desc, M=4, N=64, K=64)
    ref = np.sort(a, axis=1)
    np.testing.assert_array_equal(y.reshape(4, 64), ref[:, ::-1] if desc else ref)


@compiler.jit
def half_carry_kernel(X, Y, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float16)
    for i in range(n):
        acc = tl.maximum(acc, tl.load(X + i * BLOCK + offs))
    tl.store(Y + offs, acc)


@pytest.mark.parametrize("target", TARGETS)
def test_half_carry_results(target):
    x = np.random.default_rng(31).standard_normal(7 * 256).astype(np.float16)
    y = poison(256, "float16")
    run(target, half_carry_kernel, (1,), [x, y], [7], BLOCK=256, num_warps=4)
    np.testing.assert_array_equal(y, np.maximum(x.reshape(7, 256).max(axis=0), np.float16(0)))


def test_half_carry_phis_are_words():
    """The fp16 running maximum crosses the loop's back edge two halves a 32-bit word: no half phi, and as many i32
    phis as the tile's registers hold words (256 halves over 128 threads: 2 a thread, one word)."""
    x, y = np.zeros(7 * 256, np.float16), np.zeros(256, np.float16)
    half_carry_kernel._drop_compiled()
    ll = half_carry_kernel.warmup(x, y, 7, grid=(1,), target="sm_90a", BLOCK=256, num_warps=4).asm["llir"]
    assert not re.search(r"= phi\s+half\b", ll)
    assert re.search(r"= phi\s+i32\b", ll)


@compiler.jit
def bmm_shared_w_kernel(X, W, Y, B: tl.constexpr, M: tl.constexpr, K: tl.constexpr, N: tl.constexpr):
    rb = tl.arange(0, B)
    rm = tl.arange(0, M)
    rk = tl.arange(0, K)
    rn = tl.arange(0, N)
    x = tl.load(X + rb[:, None, None] * (M * K) + rm[None, :, None] * K + rk[None, None, :])
    w = tl.load(W + rk[:, None] * N + rn[None, :])
    acc = tl.dot(x, tl.broadcast_to(w[None, :, :], (B, K, N)))
    tl.store(Y + rb[:, None, None] * (M * N) + rm[None, :, None] * N + rn[None, None, :], acc)


@pytest.mark.parametrize("target", TARGETS)
def test_broadcast_weight_bmm_results(target):
    rng = np.random.default_rng(32)
    x = rng.standard_normal((4, 16, 32)).astype(np.float16)
    w = rng.standard_normal((32, 32)).astype(np.float16)
    y = poison(4 * 16 * 32, "float32")
    run(target, bmm_shared_w_kernel, (1,), [x, w, y], [], B=4, M=16, K=32, N=32, num_warps=4)
    ref = x.astype(np.float64) @ w.astype(np.float64)
    np.testing.assert_allclose(y.reshape(4, 16, 32), ref, rtol=2e-3, atol=2e-3)


def test_broadcast_weight_read_by_ldmatrix():
    """The weight broadcast over the batch is read by ldmatrix as a rank-2 operand, no 16-bit shared loads."""
    x, w, y = np.zeros((4, 16, 32), np.float16), np.zeros((32, 32), np.float16), np.zeros(4 * 16 * 32, np.float32)
    ptx = bmm_shared_w_kernel.warmup(x, w, y, grid=(1,), target="sm_90a", B=4, M=16, K=32, N=32,
                                     num_warps=4).asm["ptx"]
    assert not re.findall(r"ld\.shared\.(?:u16|b16)", ptx)
    assert ptx.count("ldmatrix") > 0


@compiler.jit
def gated_attn_kernel(Q, Kt, FLAGS, O, n, D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rd = tl.arange(0, D)
    q = tl.load(Q + rm[:, None] * D + rd[None, :])
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for j in range(n):
        if tl.load(FLAGS + j) != 0:
            k = tl.load(Kt + j * D * BN + rd[:, None] * BN + rn[None, :])
            acc += tl.dot(q, k)
    tl.store(O + rm[:, None] * BN + rn[None, :], acc)


def _gated_inputs():
    rng = np.random.default_rng(33)
    q = (rng.standard_normal((64, 64)) / 4).astype(np.float16)
    kt = (rng.standard_normal((5, 64, 64)) / 4).astype(np.float16)
    flags = np.array([1, 0, 1, 1, 0], np.int32)
    return q, kt, flags


@pytest.mark.parametrize("target", TARGETS)
def test_gated_dot_results(target):
    q, kt, flags = _gated_inputs()
    o = poison(64 * 64, "float32")
    run(target, gated_attn_kernel, (1,), [q, kt, flags, o], [5], D=64, BM=64, BN=64, num_warps=4)
    ref = sum(q.astype(np.float64) @ kt[j].astype(np.float64) for j in range(5) if flags[j])
    np.testing.assert_allclose(o.reshape(64, 64), ref, rtol=1e-2, atol=1e-2)


def test_gated_dot_writes_q_before_the_loop():
    """q, read by a dot under an `if` in the loop, is written to shared memory before the loop (4 16-byte stores a
    thread), not in every iteration the flag enables."""
    q, kt, flags = _gated_inputs()
    o = np.zeros(64 * 64, np.float32)
    ptx = gated_attn_kernel.warmup(q, kt, flags, o, 5, grid=(1,), target="sm_90a", D=64, BM=64, BN=64,
                                   num_warps=4).asm["ptx"]
    first = ptx.index("$L__BB0_")  # the first label: the loop and after
    assert len(re.findall(r"\bst\.shared", ptx[:first])) >= 4


@compiler.jit
def row_gather_kernel(X, IDX, Y, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm = tl.arange(0, M)
    x = tl.sort(tl.load(X + rm[:, None] * N + tl.arange(0, N)[None, :]), dim=1)
    i = tl.load(IDX + rm[:, None] * K + tl.arange(0, K)[None, :])
    tl.store(Y + rm[:, None] * K + tl.arange(0, K)[None, :], tl.gather(x, i, 1))


def _gather_inputs():
    rng = np.random.default_rng(34)
    x = rng.standard_normal((8, 128)).astype(np.float32)
    x[2, 5] = -0.0
    idx = rng.integers(0, 128, (8, 4)).astype(np.int32)
    return x, idx


@pytest.mark.parametrize("target", TARGETS)
def test_gather_results(target):
    x, idx = _gather_inputs()
    y = poison(8 * 4, "float32")
    run(target, row_gather_kernel, (1,), [x, idx, y], [], M=8, N=128, K=4, num_warps=4)
    ref = np.take_along_axis(np.sort(x, axis=1), idx, axis=1)
    np.testing.assert_array_equal(y.reshape(8, 4).view(np.uint32), ref.view(np.uint32))


def test_gather_converts_the_source_tile():
    """The layout pass converts the source tile (8 x 128 floats, 4096 bytes), not its bits broadcast over the index
    dim (8 x 4 x 128, 16384 bytes)."""
    x, idx = _gather_inputs()
    y = np.zeros(8 * 4, np.float32)
    ck = row_gather_kernel.warmup(x, idx, y, grid=(1,), target="sm_90a", M=8, N=128, K=4, num_warps=4)
    assert ck.metadata["shared_bytes"] <= 4096 + 256, ck.metadata["shared_bytes"]


@compiler.jit
def f16acc_mm_kernel(A, B, C, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pm, pn = tl.program_id(0), tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float16)
    for k in range(0, K, BK):
        a = tl.load(A + rm[:, None] * K + (k + rk)[None, :], mask=(k + rk)[None, :] < K, other=0.0)
        b = tl.load(B + (k + rk)[:, None] * N + rn[None, :], mask=(k + rk)[:, None] < K, other=0.0)
        acc = tl.dot(a, b, acc, out_dtype=tl.float16)
    tl.store(C + rm[:, None] * N + rn[None, :], acc)


def _f16acc_inputs():
    rng = np.random.default_rng(34)
    a = (rng.integers(-4, 5, (128, 200)) / 8).astype(np.float16)  # products and sums exact in fp16
    b = (rng.integers(-4, 5, (200, 128)) / 8).astype(np.float16)
    return a, b


@pytest.mark.parametrize("target", TARGETS)
def test_f16_accumulator_loop_results(target):
    a, b = _f16acc_inputs()
    c = poison(128 * 128, "float16")
    run(target, f16acc_mm_kernel, (2, 2), [a, b, c], [128, 128, 200], BM=64, BN=64, BK=32, num_warps=4,
        num_stages=3)
    assert_exact(c.reshape(128, 128), (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float16))


def test_f16_accumulator_words_wait_before_they_are_read(monkeypatch, tmp_path):
    """An fp16 wgmma accumulator crosses the loop's back edge as the words the wgmma writes and waits for it as
    words: no register of a wgmma is read before its wait, so ptxas neither serializes the loop's wgmmas (C7514)
    nor injects a wait (C7517)."""
    from compiler.codegen.ptx import find_ptxas, ptx_resources

    monkeypatch.setenv("TILEFARM_CACHE_DIR", str(tmp_path))
    a, b = _f16acc_inputs()
    c = np.zeros(128 * 128, np.float16)
    ptx = f16acc_mm_kernel.warmup(a, b, c, 128, 128, 200, grid=(2, 2), target="sm_90a", BM=64, BN=64, BK=32,
                                  num_warps=4, num_stages=3).asm["ptx"]
    body = ptx[ptx.index("wgmma.mma_async"):ptx.index("wgmma.wait_group")]
    assert "wgmma.mma_async.sync.aligned.m64n64k16.f16.f16.f16" in body
    assert not re.search(r"mov\.b32\s+\{%rs", body), "halves unpacked between the wgmma and its wait"
    if find_ptxas() is not None:
        log = ptx_resources(ptx, "sm_90a")["log"]
        assert "C7514" not in log and "C7517" not in log, log


@compiler.jit
def scores_kernel(Q, Kt, S, D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rd = tl.arange(0, D)
    q = tl.load(Q + rm[:, None] * D + rd[None, :])
    k = tl.load(Kt + rd[:, None] * BN + rn[None, :])
    s = tl.dot(q, k)
    tl.store(S + rm[:, None] * BN + rn[None, :], tl.where(s > 0, s, s * 0.5))


@pytest.mark.parametrize("target", TARGETS)
def test_dot_onto_zeros_results(target):
    rng = np.random.default_rng(35)
    q = rng.standard_normal((64, 64)).astype(np.float16)
    kt = rng.standard_normal((64, 64)).astype(np.float16)
    s = poison(64 * 64, "float32")
    run(target, scores_kernel, (1,), [q, kt, s], [], D=64, BM=64, BN=64, num_warps=4)
    ref = q.astype(np.float64) @ kt.astype(np.float64)
    np.testing.assert_allclose(s.reshape(64, 64), np.where(ref > 0, ref, ref * 0.5), rtol=2e-3, atol=2e-3)


@compiler.jit
def colmax_kernel(X, Y, n, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    best = tl.full((BN,), float("-inf"), tl.float32)
    for i in range(0, n, BM):
        x = tl.load(X + (i + rm)[:, None] * BN + rn[None, :], mask=(i + rm)[:, None] < n, other=float("-inf"))
        best = tl.maximum(best, tl.max(x.to(tl.float32), axis=0))
    tl.store(Y + rn, best)


@pytest.mark.parametrize("target", TARGETS)
def test_colmax_results(target):
    x = np.random.default_rng(36).standard_normal((100, 64)).astype(np.float16)
    y = poison(64, "float32")
    run(target, colmax_kernel, (1,), [x, y], [100], BM=32, BN=64, num_warps=2)
    assert_exact(y, x.astype(np.float32).max(axis=0))


def test_loads_issue_every_vector_before_unpacking(monkeypatch, tmp_path):
    """A tile's vector loads are all issued before any of their words is split into halves (unpacked one by one,
    ptxas consumed each load before issuing the next)."""
    monkeypatch.setenv("TILEFARM_CACHE_DIR", str(tmp_path))
    x, y = np.zeros((100, 64), np.float16), np.zeros(64, np.float32)
    ptx = colmax_kernel.warmup(x, y, 100, grid=(1,), target="sm_90a", BM=32, BN=64, num_warps=2).asm["ptx"]
    lines = [ln for ln in ptx.splitlines() if "ld.global" in ln or re.search(r"mov\.b32\s+\{%rs", ln)]
    order = "".join("L" if "ld.global" in ln else "u" for ln in lines)
    n = order.count("L")
    assert n > 1 and order.startswith("L" * n) and "u" in order, order
