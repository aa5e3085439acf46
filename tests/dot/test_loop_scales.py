"""A K loop that rescales each tile's product before accumulating it (`acc += tl.dot(a, b) * a_s[:, None] *
b_s[None, :]`, block-scaled GEMMs), and what it led to (the first two were A/B switches until 2026-12-07):

- passes/assign_layouts.py `_hoisted`: the row scales' pointers `A_S + (offs % M) * stride + k`, read every
  iteration in the accumulator's row layout, were converted through shared memory every iteration (the `%` stops
  rematerialization); the loop-invariant part is converted once before the loop.
- codegen/dot.py `_slot_free_behind_wait`: the ring's copies into the slot the previous iteration read need no
  barrier after the dot where every dot of the body waited for its own wgmmas (wait_group 0) in its iteration: the
  ring's wait at the top of the iteration already follows those reads.

Results in the interpreter, through ptxas and on the GPU; the loop's conversions and barriers. (The A/B
`iter_barrier`, no barrier for an iteration's first shared-memory use behind a barrier of the same iteration, left:
docs/EXPERIMENTS.md.)"""
import re

import numpy as np
import pytest

import compiler
import compiler.language as tl
from compiler.codegen.ptx import ptx_loops

from ..ops.test_ops import TARGETS, assert_close, poison, run


@compiler.jit
def scaled_mm_kernel(A, B, C, A_S, B_S, M, N, K, GROUP_N: tl.constexpr, GROUP_K: tl.constexpr,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_n = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = A + offs_m[:, None] * K + offs_k[None, :]
    b_ptrs = B + offs_n[None, :] * K + offs_k[:, None]
    kg = tl.cdiv(K, GROUP_K)
    as_ptrs = A_S + offs_m * kg
    bs_ptrs = B_S + (offs_n // GROUP_N) * kg
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        g = (k * BLOCK_K) // GROUP_K
        a_s = tl.load(as_ptrs + g)
        b_s = tl.load(bs_ptrs + g)
        acc += tl.dot(a, b) * a_s[:, None] * b_s[None, :]
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    tl.store(C + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def _case(M, N, K, gn, gk, rng):
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((N, K)).astype(np.float16)
    a_s = rng.uniform(0.5, 1.5, (M, -(-K // gk))).astype(np.float32)
    b_s = rng.uniform(0.5, 1.5, (-(-N // gn), -(-K // gk))).astype(np.float32)
    sa = np.repeat(a_s.astype(np.float64), gk, axis=1)[:, :K]
    sb = np.repeat(np.repeat(b_s.astype(np.float64), gn, axis=0), gk, axis=1)[:N, :K]
    ref = (a.astype(np.float64) * sa) @ (b.astype(np.float64) * sb).T
    return a, b, a_s, b_s, ref


@pytest.mark.parametrize("target", TARGETS)
def test_scaled_mm_results(target):
    M, N, K, gn, gk = 100, 136, 200, 64, 64
    a, b, a_s, b_s, ref = _case(M, N, K, gn, gk, np.random.default_rng(7))
    c = poison((M, N), "float32")
    run(target, scaled_mm_kernel, (-(-M // 64), -(-N // 64)), [a, b, c, a_s, b_s], [M, N, K], GROUP_N=gn,
        GROUP_K=gk, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, num_warps=4, num_stages=3)
    if target != "ptxas":
        assert_close(c, ref, "float32", rtol=2e-3, atol=2e-3)


def _ptx(monkeypatch, tmp_path, ab, kernel=None):
    monkeypatch.setenv("TILEFARM_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TILEFARM_AB", ab)
    M, N, K = 256, 256, 512
    z16, z32 = np.zeros((M, K), np.float16), np.zeros((M, 8), np.float32)
    k = (kernel or scaled_mm_kernel).warmup(z16, z16, np.zeros((M, N), np.float32), z32, z32, M, N, K, grid=(1,),
                                target="sm_90a", GROUP_N=128, GROUP_K=64, BLOCK_M=64, BLOCK_N=128, BLOCK_K=64,
                                num_warps=4, num_stages=3)
    return k.asm["ptx"]


def _loop_text(ptx):
    loops = ptx_loops(ptx)
    assert loops, "no loop in the PTX"
    a, b = max(loops, key=lambda s: s[1] - s[0])
    return ptx[a:b]


def _barriers(text):
    return text.count("barrier.sync") + text.count("bar.sync")


def test_scale_pointers_leave_the_loop(monkeypatch, tmp_path):
    """No 64-bit pointer goes through shared memory in the loop (st.shared.b64 / ld.shared.b64: the row scales'
    pointers converted every iteration took two barriers); the loop's barriers are the ring's wait and the column
    scales' conversion's two."""
    t = _loop_text(_ptx(monkeypatch, tmp_path, ""))
    assert not re.findall(r"(?:st|ld)\.shared(?:\.v2)?\.[bu]64", t)
    assert _barriers(t) == 3


def test_copies_behind_the_rings_wait(monkeypatch, tmp_path):
    """The scaled product is waited for in its iteration (wait_group 0): the copies after the dot go without a barrier
    of their own; the one barrier after the dot is the column scales' conversion's (codegen/dot.py
    `_slot_free_behind_wait`)."""
    loop = _loop_text(_ptx(monkeypatch, tmp_path, ""))
    assert "wgmma.wait_group.sync.aligned 0" in loop
    after = loop[loop.index("wgmma.wait_group.sync.aligned 0"):]
    assert "cp.async" in after and _barriers(after[:after.index("cp.async")]) == 0

@compiler.jit
def carried_mm_kernel(A, B, C, A_S, B_S, M, N, K, GROUP_N: tl.constexpr, GROUP_K: tl.constexpr,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # the same tiles, the product accumulated by the dot itself: its wgmmas stay in flight into the next iteration
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = A + offs_m[:, None] * K + offs_k[None, :]
    b_ptrs = B + offs_n[None, :] * K + offs_k[:, None]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K
    tl.store(C + offs_m[:, None] * N + offs_n[None, :], acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def test_copies_keep_their_barrier_behind_a_dot_in_flight(monkeypatch, tmp_path):
    """A dot left in flight (wait_group 1: the accumulator carried by the dot) keeps the copies' barrier: a barrier
    between the wait and the copies."""
    loop = _loop_text(_ptx(monkeypatch, tmp_path, "", carried_mm_kernel))
    assert "wgmma.wait_group.sync.aligned 1" in loop
    after = loop[loop.index("wgmma.wait_group.sync.aligned 1"):]
    assert "cp.async" in after and _barriers(after[:after.index("cp.async")]) == 1


@compiler.jit
def colsum_loop_kernel(X, OUT, R, C: tl.constexpr, BLOCK_R: tl.constexpr, FENCE: tl.constexpr):
    # column sums over row blocks: each iteration's cross-warp reduction goes through shared memory
    rc = tl.arange(0, C)
    acc = tl.zeros([C], dtype=tl.float32)
    for r0 in range(0, R, BLOCK_R):
        if FENCE:
            tl.debug_barrier()
        rr = r0 + tl.arange(0, BLOCK_R)
        x = tl.load(X + rr[:, None] * C + rc[None, :], mask=rr[:, None] < R, other=0.0)
        acc += tl.sum(x, axis=0)
        acc += tl.sum(x * x, axis=0)
    tl.store(OUT + rc, acc)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fence", [False, True])
def test_colsum_results(target, fence):
    R, C = 300, 64
    x = np.random.default_rng(3).standard_normal((R, C)).astype(np.float32)
    out = poison(C, "float32")
    run(target, colsum_loop_kernel, (1,), [x, out], [R], C=C, BLOCK_R=32, FENCE=fence, num_warps=4)
    if target != "ptxas":
        x64 = x.astype(np.float64)
        assert_close(out, x64.sum(0) + (x64 * x64).sum(0), "float32", rtol=1e-5, atol=1e-4)
