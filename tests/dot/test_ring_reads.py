"""Tiles of a copy-ring loop that ops other than dots read: a tile a dot and elementwise
math both read (chunked retention's K, scaled before it updates the state) and a tile no dot reads (attention's
bias) join the ring; the dots read the slot in shared memory, the other ops read it into registers (smem_load).
Checked on the IR the passes leave for sm_90a, through ptxas, and against float64 on every target."""
import numpy as np
import pytest

import compiler
import compiler.language as tl

from ..ops.test_ops import TARGETS, assert_close, poison, run
from .test_loop_operands import _loop, _pipeline


@compiler.jit
def _chunked_state(Q, K, V, W, O, L, D: tl.constexpr, C: tl.constexpr):
    # per chunk of C rows: o = (q k^T) v + q S, then S += (k * w)^T v; k feeds a dot (transposed) and a product
    rc = tl.arange(0, C)
    rd = tl.arange(0, D)
    w = tl.load(W + rc)
    state = tl.zeros([D, D], dtype=tl.float32)
    for start in range(0, L, C):
        rows = start + rc
        m = rows[:, None] < L
        off = rows[:, None] * D + rd[None, :]
        q = tl.load(Q + off, mask=m, other=0.0)
        k = tl.load(K + off, mask=m, other=0.0)
        v = tl.load(V + off, mask=m, other=0.0)
        s = tl.dot(q, tl.trans(k))
        o = tl.dot(s.to(tl.float16), v) + tl.dot(q, state.to(tl.float16))
        tl.store(O + off, o, mask=m)
        state = tl.dot(tl.trans((k * w[:, None]).to(tl.float16)), v, state)


def _chunked_case(rng, L, D, C):
    q, k, v = (rng.uniform(-0.5, 0.5, (L, D)).astype(np.float16) for _ in range(3))
    w = rng.uniform(0.5, 1.0, C).astype(np.float16)
    return q, k, v, w


def _chunked_ref(q, k, v, w, C):
    L, D = q.shape
    q64, k64, v64 = (x.astype(np.float64) for x in (q, k, v))
    state = np.zeros((D, D))
    out = np.zeros((L, D))
    for s0 in range(0, L, C):
        sl = slice(s0, min(L, s0 + C))
        qc, kc, vc = q64[sl], k64[sl], v64[sl]
        s = (qc @ kc.T).astype(np.float16).astype(np.float64)
        out[sl] = s @ vc + qc @ state.astype(np.float16).astype(np.float64)
        kw = (k[sl].astype(np.float32) * w[: sl.stop - s0, None].astype(np.float32)).astype(np.float16).astype(np.float64)
        state = state + kw.T @ vc
    return out


@compiler.jit
def _biased_attention(Q, K, V, B, O, N, D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    # o = softmax-free attention with an additive bias tile per key block: sum_n (q k_n^T + b_n) v_n
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rd = tl.arange(0, D)
    q = tl.load(Q + rm[:, None] * D + rd[None, :])
    acc = tl.zeros([BM, D], dtype=tl.float32)
    for n0 in range(0, N, BN):
        rn = n0 + tl.arange(0, BN)
        k = tl.load(K + rn[:, None] * D + rd[None, :], mask=rn[:, None] < N, other=0.0)
        v = tl.load(V + rn[:, None] * D + rd[None, :], mask=rn[:, None] < N, other=0.0)
        b = tl.load(B + rm[:, None] * N + rn[None, :], mask=rn[None, :] < N, other=0.0)
        s = tl.dot(q, tl.trans(k)) + b.to(tl.float32)
        acc = tl.dot(s.to(tl.float16), v, acc)
    tl.store(O + rm[:, None] * D + rd[None, :], acc)


def _in_loop(mod, kind):
    return [o for o in _loop(mod).blocks[0].walk() if o.kind == kind]


def test_a_tile_a_dot_and_a_product_read_is_one_ring_slot():
    q, k, v, w = _chunked_case(np.random.default_rng(0), 256, 64, 64)
    args = [q, k, v, w, np.zeros((256, 64), np.float32), 256]
    mod = _pipeline(_chunked_state, args, dict(D=64, C=64), nw=4, stages=2)
    assert not _in_loop(mod, "load")
    assert len(_in_loop(mod, "smem_view")) == 3 and len(_in_loop(mod, "smem_load")) == 1


def test_a_tile_no_dot_reads_joins_the_ring():
    args = [np.zeros((128, 64), np.float16)] * 3 + [np.zeros((128, 256), np.float16), np.zeros((128, 64), np.float32),
                                                    256]
    mod = _pipeline(_biased_attention, args, dict(D=64, BM=64, BN=64), nw=4, stages=3)
    assert not _in_loop(mod, "load")
    (rd,) = _in_loop(mod, "smem_load")
    assert rd.operands[0].owner.kind == "smem_view" and tuple(rd.result.type.shape) == (64, 64)


def test_ring_reads_assemble_for_sm90a():
    q, k, v, w = _chunked_case(np.random.default_rng(1), 200, 64, 64)
    ck = _chunked_state.warmup(q, k, v, w, np.zeros((200, 64), np.float32), 200, D=64, C=64, grid=(1,),
                               target="sm_90a", num_warps=4, num_stages=2)
    assert ("ld.shared" in ck.asm["ptx"]) and len(ck.asm["cubin"]) > 0
    b = np.zeros((128, 256), np.float16)
    ck = _biased_attention.warmup(q[:128], k, v, b, np.zeros((128, 64), np.float32), 200, D=64, BM=64, BN=64,
                                  grid=(2,), target="sm_90a", num_warps=4, num_stages=3)
    assert len(ck.asm["cubin"]) > 0


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("stages", [1, 2])  # 1: the loads stay in the loop
def test_chunked_state(target, stages):
    L, D, C = 200, 64, 64  # the last chunk is masked
    q, k, v, w = _chunked_case(np.random.default_rng(2), L, D, C)
    out = poison((L, D), "float32")
    run(target, _chunked_state, (1,), [q, k, v, w, out], [L], D=D, C=C, num_warps=4, num_stages=stages)
    assert_close(out, _chunked_ref(q, k, v, w, C), "float32", rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("stages", [1, 3])
def test_biased_attention(target, stages):
    rng = np.random.default_rng(3)
    M, N, D = 128, 200, 64
    q = rng.uniform(-0.5, 0.5, (M, D)).astype(np.float16)
    k, v = (rng.uniform(-0.5, 0.5, (N, D)).astype(np.float16) for _ in range(2))
    b = rng.uniform(-1, 1, (M, N)).astype(np.float16)
    out = poison((M, D), "float32")
    run(target, _biased_attention, (M // 64,), [q, k, v, b, out], [N], D=D, BM=64, BN=64, num_warps=4, num_stages=stages)
    q64, k64, v64, b64 = (x.astype(np.float64) for x in (q, k, v, b))
    s = (q64 @ k64.T + b64).astype(np.float16).astype(np.float64)
    assert_close(out, s @ v64, "float32", rtol=2e-2, atol=2e-2)


@compiler.jit
def _scaled_in_branch(Q, K, V, O, L, flag, D: tl.constexpr, C: tl.constexpr):
    # k feeds the scores (transposed) and, only when `flag` is nonzero, a product inside an `if` in the loop
    rc = tl.arange(0, C)
    rd = tl.arange(0, D)
    acc = tl.zeros([C, D], dtype=tl.float32)
    q = tl.load(Q + rc[:, None] * D + rd[None, :])
    for start in range(0, L, C):
        off = (start + rc)[:, None] * D + rd[None, :]
        k = tl.load(K + off)
        v = tl.load(V + off)
        s = tl.dot(q, tl.trans(k))
        if flag:
            v = (v * k).to(tl.float16)
        acc = tl.dot(s.to(tl.float16), v, acc)
    tl.store(O + rc[:, None] * D + rd[None, :], acc)


def test_a_slot_read_inside_a_branch_is_read_before_the_branch():
    z = np.zeros((128, 64), np.float16)
    mod = _pipeline(_scaled_in_branch, [z[:64], z, z, np.zeros((64, 64), np.float32), 128, 2], dict(D=64, C=64),
                    nw=4, stages=3)
    body = _loop(mod).blocks[0].ops
    kinds = [o.kind for o in body]
    assert "load" not in kinds and kinds.index("smem_load") < kinds.index("if")
    ck = _scaled_in_branch.warmup(z[:64], z, z, np.zeros((64, 64), np.float32), 128, 2, D=64, C=64, grid=(1,),
                                  target="sm_90a", num_warps=4, num_stages=3)
    assert len(ck.asm["cubin"]) > 0


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("flag", [0, 2])  # 2: a runtime value (an int 1 would be specialized)
def test_scaled_in_branch(target, flag):
    rng = np.random.default_rng(5)
    L, D, C = 192, 64, 64
    q = rng.uniform(-0.5, 0.5, (C, D)).astype(np.float16)
    k, v = (rng.uniform(-0.5, 0.5, (L, D)).astype(np.float16) for _ in range(2))
    out = poison((C, D), "float32")
    run(target, _scaled_in_branch, (1,), [q, k, v, out], [L, flag], D=D, C=C, num_warps=4, num_stages=3)
    ref = np.zeros((C, D))
    for s0 in range(0, L, C):
        kc, vc = k[s0:s0 + C], v[s0:s0 + C]
        s = (q.astype(np.float64) @ kc.astype(np.float64).T).astype(np.float16).astype(np.float64)
        vv = (vc.astype(np.float32) * kc.astype(np.float32)).astype(np.float16) if flag else vc
        ref += s @ vv.astype(np.float64)
    assert_close(out, ref, "float32", rtol=2e-2, atol=2e-2)


@compiler.jit
def _mm_tile_plus_scaled(A, B, T, S, C, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # acc += a @ b + t * s per K step: a 16-bit tile no dot reads (t, [BM, BN]) joins the ring and is read into
    # registers; a small per-step vector (s, [BN] fp32) is left to the register pipeline of the ring loop
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(A + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(B + (k + rk)[:, None] * BN + rn[None, :])
        t = tl.load(T + (k // BK) * BM * BN + rm[:, None] * BN + rn[None, :])
        s = tl.load(S + (k // BK) * BN + rn)
        acc += tl.dot(a, b) + t.to(tl.float32) * s[None, :]
    tl.store(C + rm[:, None] * BN + rn[None, :], acc)


def _tile_plus_scaled_args(rng, K=256, BM=64, BN=64, BK=32):
    a = rng.uniform(-1, 1, (BM, K)).astype(np.float16)
    b = rng.uniform(-1, 1, (K, BN)).astype(np.float16)
    t = rng.uniform(-1, 1, (K // BK, BM, BN)).astype(np.float16)
    s = rng.uniform(-1, 1, (K // BK, BN)).astype(np.float32)
    ref = a.astype(np.float64) @ b.astype(np.float64) + (t.astype(np.float64) * s[:, None, :]).sum(axis=0)
    return a, b, t, s, ref


def test_slot_reads_stay_after_the_wait():
    """A ring loop whose leftover small load goes through the register pipeline: the smem_load of the tile no dot
    reads stays after the iteration's async_wait (the register pipeline once moved it, an op without effects, to the
    body's front: a read of the slot before its copies landed)."""
    a, b, t, s, _ = _tile_plus_scaled_args(np.random.default_rng(0))
    mod = _pipeline(_mm_tile_plus_scaled, [a, b, t, s, np.zeros((64, 64), np.float32), 256],
                    dict(BM=64, BN=64, BK=32), 4)
    body = [o.kind for o in _loop(mod).blocks[0].ops]
    assert "async_wait" in body and "smem_load" in body
    assert body.index("smem_load") > body.index("async_wait")


@pytest.mark.parametrize("target", TARGETS)
def test_tile_plus_scaled(target):
    a, b, t, s, ref = _tile_plus_scaled_args(np.random.default_rng(1))
    c = poison((64, 64), "float32")
    run(target, _mm_tile_plus_scaled, (1,), [a, b, t, s, c], [256], BM=64, BN=64, BK=32, num_warps=4,
        num_stages=3)
    assert_close(c, ref, "float32", rtol=2e-3, atol=2e-3 * 16)
