"""K loops whose operands reach their dots in forms users write: fp8 bytes passed as uint8 and reinterpreted
(`.to(tl.float8e4nv, bitcast=True)`), `acc += tl.dot(a, b)` on fp8 (not folded into the dot, as Triton on sm_90),
a tile two dots read (attention backward's K), a tile two dots of an 8-warp loop read (LoRA's x), comparisons of
broadcasts and row statistics read in an MMA layout. Each is checked on the IR the passes leave and against float64 on every target."""
import numpy as np
import pytest

import compiler
import compiler.language as tl
from compiler.options import Options
from compiler.passes import run_pipeline

from ..ops.test_ops import TARGETS, assert_close, poison, run


def _pipeline(fn, args, meta, nw, stages=3, arch="sm_90a"):
    return run_pipeline(fn.lower(*args, **meta), Options(num_warps=nw, num_stages=stages, arch=arch))


def _loop(mod):
    return next(op for op in mod.function.body.walk() if op.kind == "for")


E4M3_ONE_HALF_BITS = (0x38, 0x30)  # 1.0 and 0.5 in e4m3


@compiler.jit
def _fp8_bytes_matmul(A, B, C, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # A [M, K], B [N, K] as uint8 bytes of e4m3 values; C = A @ B^T in float32
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        a = tl.load(A + rm[:, None] * K + (k0 + rk)[None, :], mask=(rm[:, None] < M) & (k0 + rk[None, :] < K),
                    other=0)
        b = tl.load(B + rn[None, :] * K + (k0 + rk)[:, None], mask=(k0 + rk[:, None] < K) & (rn[None, :] < N),
                    other=0)
        acc += tl.dot(a.to(tl.float8e4nv, bitcast=True), b.to(tl.float8e4nv, bitcast=True))
    tl.store(C + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def _e4m3_bytes(rng, shape):
    # e4m3 bytes of small integers and halves (exact products and sums in float32): sign, exponent 6..8, 2 bits
    sign = rng.integers(0, 2, shape) << 7
    exp = rng.integers(6, 9, shape) << 3
    man = rng.integers(0, 4, shape) << 1
    return (sign | exp | man).astype(np.uint8)


def _e4m3_values(b):
    b = b.astype(np.int64)
    sign = np.where(b >> 7, -1.0, 1.0)
    exp, man = (b >> 3) & 15, b & 7
    return sign * np.where(exp == 0, man / 8 * 2.0 ** -6, (1 + man / 8) * 2.0 ** (exp - 7))


def test_fp8_bytes_reach_the_copy_ring_and_the_add_stays():
    """The uint8 loads reinterpreted as fp8 are ring copies (no load left in the loop; the views are fp8), and
    `acc += dot` keeps its float32 add (the fp8 tensor-core sums are not float32-precise on sm_90)."""
    z = np.zeros((256, 256), np.uint8)
    c = np.zeros((256, 256), np.float32)
    mod = _pipeline(_fp8_bytes_matmul, [z, z, c, 256, 256, 256], dict(BM=128, BN=128, BK=128), nw=8)
    loop = _loop(mod)
    assert "_ring" in loop.attrs
    body = loop.blocks[0].ops
    assert not [o for o in body if o.kind in ("load", "bitcast") and o.result.type.shape]
    views = [o for o in body if o.kind == "smem_view"]
    assert [v.result.type.element.name for v in views] == ["float8e4nv", "float8e4nv"]
    dot = next(o for o in body if o.kind == "dot")
    assert dot.operands[2].owner.kind == "const"  # from zero: the add below does the accumulation
    assert any(o.kind == "add" and dot.result in o.operands for o in body)


def test_fp16_acc_plus_dot_still_folds():
    """The same loop on fp16 operands accumulates in the dot (the fold applies: fp16 products sum in float32)."""
    @compiler.jit
    def k16(A, B, C, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        rm, rn, rk = tl.arange(0, BM), tl.arange(0, BN), tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k0 in range(0, 4 * BK, BK):
            acc += tl.dot(tl.load(A + rm[:, None] * 4 * BK + (k0 + rk)[None, :]),
                          tl.load(B + (k0 + rk)[:, None] * BN + rn[None, :]))
        tl.store(C + rm[:, None] * BN + rn[None, :], acc)

    a = np.zeros((64, 256), np.float16)
    mod = _pipeline(k16, [a, a, np.zeros((64, 64), np.float32)], dict(BM=64, BN=64, BK=64), nw=4)
    body = _loop(mod).blocks[0].ops
    dot = next(o for o in body if o.kind == "dot")
    assert getattr(dot.operands[2].owner, "kind", None) != "const"  # the carried accumulator
    assert not any(o.kind == "add" and dot.result in o.operands for o in body)


@pytest.mark.parametrize("target", TARGETS)
def test_fp8_bytes_matmul(target):
    rng = np.random.default_rng(8)
    M, N, K = 96, 80, 160
    a, b = _e4m3_bytes(rng, (M, K)), _e4m3_bytes(rng, (N, K))
    c = poison((M, N), "float32")
    run(target, _fp8_bytes_matmul, (2, 2), [a, b, c], [M, N, K], BM=64, BN=64, BK=32, num_warps=4, num_stages=3)
    ref = _e4m3_values(a) @ _e4m3_values(b).T
    assert_close(c, ref, "float32", rtol=1e-6, atol=1e-6)


@compiler.jit
def _attn_bwd_dq(Q, K, V, DO, LSE, DELTA, DQ, L, D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rd = tl.arange(0, D)
    q = tl.load(Q + rm[:, None] * D + rd[None, :])
    do = tl.load(DO + rm[:, None] * D + rd[None, :])
    lse = tl.load(LSE + rm)
    delta = tl.load(DELTA + rm)
    dq = tl.zeros((BM, D), dtype=tl.float32)
    for n0 in range(0, L, BN):
        rn = n0 + tl.arange(0, BN)
        k = tl.load(K + rn[:, None] * D + rd[None, :])
        v = tl.load(V + rn[:, None] * D + rd[None, :])
        p = tl.exp(tl.dot(q, tl.trans(k)) - lse[:, None])
        ds = p * (tl.dot(do, tl.trans(v)) - delta[:, None])
        dq = tl.dot(ds.to(tl.float16), k, dq)
    tl.store(DQ + rm[:, None] * D + rd[None, :], dq)


def _attn_case(rng, L, D):
    q, k, v, do = (rng.uniform(-1, 1, (L, D)).astype(np.float16) for _ in range(4))
    s = q.astype(np.float64) @ k.astype(np.float64).T
    lse = np.log(np.exp(s).sum(1)).astype(np.float32)
    delta = rng.uniform(-1, 1, L).astype(np.float32)
    return q, k, v, do, lse, delta


def test_a_tile_two_dots_read_is_one_ring_slot():
    """K feeds the scores (transposed) and dQ: one ring slot for it (and one for V), no load left in the loop."""
    rng = np.random.default_rng(0)
    q, k, v, do, lse, delta = _attn_case(rng, 256, 64)
    mod = _pipeline(_attn_bwd_dq, [q, k, v, do, lse, delta, np.zeros((256, 64), np.float32), 256],
                    dict(D=64, BM=128, BN=64), nw=8, stages=2)
    loop = _loop(mod)
    body = list(loop.blocks[0].walk())
    assert "_ring" in loop.attrs and len([o for o in body if o.kind == "smem_view"]) == 2
    assert not [o for o in body if o.kind == "load"]


@pytest.mark.parametrize("target", TARGETS)
def test_attention_backward_dq(target):
    rng = np.random.default_rng(1)
    L, D = 192, 64
    q, k, v, do, lse, delta = _attn_case(rng, L, D)
    dq = poison((L, D), "float32")
    run(target, _attn_bwd_dq, (L // 64,), [q, k, v, do, lse, delta, dq], [L], D=D, BM=64, BN=64, num_warps=4,
        num_stages=2)
    f = [x.astype(np.float64) for x in (q, k, v, do)]
    p = np.exp(f[0] @ f[1].T - lse[:, None].astype(np.float64))
    ds = p * (f[3] @ f[2].T - delta[:, None])
    ref = ds.astype(np.float16).astype(np.float64) @ f[1]
    assert_close(dq, ref, "float32", rtol=2e-2, atol=2e-2)


@compiler.jit
def _two_dot_matmul(X, W, A, Y, XA, K, N: tl.constexpr, R: tl.constexpr, BM: tl.constexpr, BK: tl.constexpr):
    # x @ W and x @ A over the same K tiles of x (a LoRA layer's frozen and down-projection dots)
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn, rr, rk = tl.arange(0, N), tl.arange(0, R), tl.arange(0, BK)
    acc = tl.zeros((BM, N), dtype=tl.float32)
    xa = tl.zeros((BM, R), dtype=tl.float32)
    for k0 in range(0, K, BK):
        x = tl.load(X + rm[:, None] * K + (k0 + rk)[None, :])
        acc = tl.dot(x, tl.load(W + (k0 + rk)[:, None] * N + rn[None, :]), acc)
        xa = tl.dot(x, tl.load(A + (k0 + rk)[:, None] * R + rr[None, :]), xa)
    tl.store(Y + rm[:, None] * N + rn[None, :], acc)
    tl.store(XA + rm[:, None] * R + rr[None, :], xa)


def test_an_eight_warp_two_dot_loop_takes_the_tight_ring_where_it_buys_a_block():
    """128x128x64 w8 s3, x read by both dots: 3 slots of 34 KiB (two blocks per SM) instead of 4 (one)."""
    z = np.zeros((256, 256), np.float16)
    mod = _pipeline(_two_dot_matmul, [z, z, z[:, :16].copy(), np.zeros((256, 128), np.float32),
                                      np.zeros((256, 16), np.float32), 256], dict(N=128, R=16, BM=128, BK=64), nw=8)
    ring = _loop(mod).attrs["_ring"]
    assert ring["stages"] == 3 and mod.meta.get("ring_blocks_per_sm") == 2


@pytest.mark.parametrize("target", TARGETS)
def test_two_dot_matmul(target):
    rng = np.random.default_rng(2)
    M, K, N, R = 128, 192, 64, 16
    x = rng.uniform(-1, 1, (M, K)).astype(np.float16)
    w = rng.uniform(-1, 1, (K, N)).astype(np.float16)
    a = rng.uniform(-1, 1, (K, R)).astype(np.float16)
    y, xa = poison((M, N), "float32"), poison((M, R), "float32")
    run(target, _two_dot_matmul, (M // 64,), [x, w, a, y, xa], [K], N=N, R=R, BM=64, BK=64, num_warps=4,
        num_stages=3)
    f = x.astype(np.float64)
    assert_close(y, f @ w.astype(np.float64), "float32", rtol=1e-3, atol=1e-3)
    assert_close(xa, f @ a.astype(np.float64), "float32", rtol=1e-3, atol=1e-3)


@compiler.jit
def _picked_scores(X, W, T, OUT, H, BM: tl.constexpr, BV: tl.constexpr, BH: tl.constexpr, V: tl.constexpr):
    # per row, the sum over vocabulary blocks of the score at the row's target column (a fused cross-entropy's
    # target logit): the comparison of a loaded row index with the block's columns, read in the MMA layout
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    t = tl.load(T + rm)
    got = tl.zeros([BM], dtype=tl.float32)
    for v0 in range(0, V, BV):
        rv = v0 + tl.arange(0, BV)
        s = tl.zeros((BM, BV), dtype=tl.float32)
        for h0 in range(0, H, BH):
            rh = h0 + tl.arange(0, BH)
            s = tl.dot(tl.load(X + rm[:, None] * H + rh[None, :]), tl.trans(tl.load(W + rv[:, None] * H + rh[None, :])),
                       s)
        got += tl.sum(tl.where(rv[None, :] == t[:, None], s, 0.0), axis=1)
    tl.store(OUT + rm, got)


def _picked_case(rng, M, V, H):
    x = rng.uniform(-1, 1, (M, H)).astype(np.float16)
    w = rng.uniform(-1, 1, (V, H)).astype(np.float16)
    t = rng.integers(0, V, M).astype(np.int32)
    ref = np.einsum("mh,mh->m", x.astype(np.float64), w[t].astype(np.float64))
    return x, w, t, ref


def test_a_comparison_of_broadcasts_converts_its_narrow_operand():
    """`rv[None, :] == t[:, None]` wanted in the MMA layout is rebuilt there from its operands (the column indices
    recomputed, the 64 targets converted from the load that made them) instead of the 64x128 comparison converted
    every iteration."""
    rng = np.random.default_rng(3)
    x, w, t, _ = _picked_case(rng, 128, 256, 128)
    args = [x, w, t, np.zeros(128, np.float32), 128]
    meta = dict(BM=64, BV=128, BH=64, V=256)

    def in_loops(mod):
        outer = _loop(mod)
        return [o for o in outer.blocks[0].walk() if o.kind == "convert_layout"]

    # the 64 targets (a small load) are loaded straight in the layout the comparison wants: nothing converted
    assert not in_loops(_pipeline(_picked_scores, args, meta, nw=4))


@pytest.mark.parametrize("target", TARGETS)
def test_picked_scores(target):
    rng = np.random.default_rng(4)
    x, w, t, ref = _picked_case(rng, 64, 256, 64)
    out = poison(64, "float32")
    run(target, _picked_scores, (2,), [x, w, t, out], [64], BM=32, BV=128, BH=32, V=256, num_warps=4,
        num_stages=2)
    assert_close(out, ref, "float32", rtol=2e-3, atol=2e-3)


@compiler.jit
def _blockwise_lse(X, W, OUT, H, BM: tl.constexpr, BV: tl.constexpr, BH: tl.constexpr, V: tl.constexpr):
    # logsumexp over the vocabulary of x @ W^T, one block of logits at a time from a K loop, folded into a running
    # max and sum (a fused linear + cross-entropy's statistics)
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    m = tl.full([BM], float("-inf"), dtype=tl.float32)
    s = tl.zeros([BM], dtype=tl.float32)
    for v0 in range(0, V, BV):
        rv = v0 + tl.arange(0, BV)
        z = tl.zeros((BM, BV), dtype=tl.float32)
        for h0 in range(0, H, BH):
            rh = h0 + tl.arange(0, BH)
            z = tl.dot(tl.load(X + rm[:, None] * H + rh[None, :]), tl.trans(tl.load(W + rv[:, None] * H + rh[None, :])),
                       z)
        m_new = tl.maximum(m, tl.max(z, axis=1))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(z - m_new[:, None]), axis=1)
        m = m_new
    tl.store(OUT + rm, m + tl.log(s))


def test_statistics_carried_across_an_outer_loop_stay_in_the_mma_rows():
    """The running max and sum of an outer loop whose logits come from an inner K loop are carried
    in the MMA rows' layout (nothing converted inside either loop) instead of a blocked layout converted to and from
    those rows every iteration."""
    x = np.zeros((128, 128), np.float16)
    args = [x, np.zeros((256, 128), np.float16), np.zeros(128, np.float32), 128]
    meta = dict(BM=64, BV=128, BH=64, V=256)

    def converts_in_loop(mod):
        return [o for o in _loop(mod).blocks[0].walk() if o.kind == "convert_layout"]

    assert not converts_in_loop(_pipeline(_blockwise_lse, args, meta, nw=4))


@pytest.mark.parametrize("target", TARGETS)
def test_blockwise_lse(target):
    rng = np.random.default_rng(5)
    M, V, H = 64, 256, 64
    x = rng.uniform(-1, 1, (M, H)).astype(np.float16)
    w = rng.uniform(-1, 1, (V, H)).astype(np.float16)
    out = poison(M, "float32")
    run(target, _blockwise_lse, (2,), [x, w, out], [H], BM=32, BV=128, BH=32, V=V, num_warps=4, num_stages=2)
    z = x.astype(np.float64) @ w.astype(np.float64).T
    ref = np.log(np.exp(z).sum(1))
    assert_close(out, ref, "float32", rtol=1e-4, atol=1e-4)
