"""Layout choices found by reading both compilers' SASS for the two corpus kernels furthest above Triton's time
(timed on the H100, 2026-12-07, and made the code): results in the interpreter, through ptxas and on the GPU, and
the code each one makes.
- `broadcast_layout`: a value made only to be broadcast ([M, 1] or [1, N] from expand_dims) takes the layout of the
  shape it is broadcast to, not one chosen for its own shape with size-1 dims (MinHash signatures: the [64, 64]
  uint32 hash tile held twice over, 64 elements a thread where 32 hold it; 0.332 of that form's time);
- `stride_lanes`: a group of accesses with one through pointers a constant stride of 2 or more elements apart takes
  one element a thread along that dim, so a warp's strided access spans one stride a lane (libdevice with mixed
  argument types: its stores at strides 3 and 5; 0.526 of the time of 4 elements a thread)."""
import re

import numpy as np
import pytest

import compiler
import compiler.language as tl
from compiler.language.extra import libdevice

from .test_ops import TARGETS, poison, run


@compiler.jit
def col_min_hash_kernel(TOK, LENS, HA, HB, SIG, BUCKET, FP, stride_t, n_buckets, H: tl.constexpr,
                        BLOCK_L: tl.constexpr):
    # per row: sig[j] = min over its tokens t of mix(t * a_j + b_j) in uint32, bucket[j] = umulhi(sig[j], n),
    # fp = xor of the tokens
    row = tl.program_id(0)
    length = tl.load(LENS + row)
    hj = tl.arange(0, H)
    a = tl.load(HA + hj)
    b = tl.load(HB + hj)
    lanes = tl.arange(0, BLOCK_L)
    best = tl.full([H], 0xFFFFFFFF, dtype=tl.uint32)
    fp = tl.zeros([BLOCK_L], dtype=tl.int32)
    for start in range(0, length, BLOCK_L):
        idx = start + lanes
        ok = idx < length
        t = tl.load(TOK + row.to(tl.int64) * stride_t + idx, mask=ok, other=0)
        fp ^= t
        h = t.to(tl.uint32)[:, None] * a[None, :] + b[None, :]
        h ^= h >> 16
        h *= 0x45D9F3B
        h ^= h >> 16
        h = tl.where(ok[:, None], h, 0xFFFFFFFF)
        best = tl.minimum(best, tl.min(h, axis=0))
    tl.store(SIG + row * H + hj, best)
    tl.store(BUCKET + row * H + hj, tl.umulhi(best, n_buckets.to(tl.uint32)).to(tl.int32))
    tl.store(FP + row, tl.xor_sum(fp, axis=0))


def _hash_inputs(R, L, H, seed=40):
    rng = np.random.default_rng(seed)
    tok = rng.integers(0, 50000, (R, L), dtype=np.int32)
    lens = rng.integers(1, L + 1, R).astype(np.int32)
    lens[0], lens[-1] = L, 0
    ha = (rng.integers(0, 2 ** 32, H, dtype=np.uint64) | 1).astype(np.uint32)
    hb = rng.integers(0, 2 ** 32, H, dtype=np.uint64).astype(np.uint32)
    return tok, lens, ha, hb


def _hash_ref(tok, lens, ha, hb, n_buckets):
    R, H = tok.shape[0], ha.shape[0]
    m32 = np.uint64(0xFFFFFFFF)
    sig = np.full((R, H), 0xFFFFFFFF, np.uint64)
    fp = np.zeros(R, np.int32)
    for r in range(R):
        t = tok[r, :lens[r]].astype(np.uint64)
        if len(t):
            h = (t[:, None] * ha.astype(np.uint64)[None, :] + hb.astype(np.uint64)[None, :]) & m32
            h ^= h >> np.uint64(16)
            h = (h * np.uint64(0x45D9F3B)) & m32
            h ^= h >> np.uint64(16)
            sig[r] = h.min(axis=0)
            fp[r] = np.bitwise_xor.reduce(tok[r, :lens[r]])
    bucket = ((sig * np.uint64(n_buckets)) >> np.uint64(32)).astype(np.int32)
    return sig.astype(np.uint32), bucket, fp


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("H,BLOCK_L,nw", [(64, 64, 4), (16, 32, 2)])
def test_col_min_hash_results(target, H, BLOCK_L, nw):
    R, L, n_buckets = 5, 150, 1000003
    tok, lens, ha, hb = _hash_inputs(R, L, H)
    sig, bucket, fp = poison(R * H, "uint32"), poison(R * H, "int32"), poison(R, "int32")
    run(target, col_min_hash_kernel, (R,), [tok, lens, ha, hb, sig, bucket, fp], [L, n_buckets], H=H,
        BLOCK_L=BLOCK_L, num_warps=nw)
    rs, rb, rf = _hash_ref(tok, lens, ha, hb, n_buckets)
    np.testing.assert_array_equal(sig.reshape(R, H), rs)
    np.testing.assert_array_equal(bucket.reshape(R, H), rb)
    np.testing.assert_array_equal(fp, rf)


def test_col_min_hash_tile_held_once():
    """The [64, 64] hash tile in 128 threads: each thread multiplies its share, 4096 / 128 = 32 elements, by the
    mixing constant (64 in the layout of the [64, 1] token column, every lane and warp on its 64 rows, which held
    each row in two threads and all 64 columns in each), and the column minimum takes no warp-wide minimum
    instruction (redux.sync.min: one per column in that layout)."""
    tok, lens, ha, hb = _hash_inputs(5, 150, 64)
    outs = [np.zeros(5 * 64, np.uint32), np.zeros(5 * 64, np.int32), np.zeros(5, np.int32)]
    ptx = col_min_hash_kernel.warmup(tok, lens, ha, hb, *outs, 150, 1000003, grid=(5,), target="sm_90a", H=64,
                                     BLOCK_L=64, num_warps=4).asm["ptx"]
    got = (len(re.findall(r"mul\.lo\.[su]32\s[^;]*, 73244475;", ptx)), ptx.count("redux.sync.min"))
    assert got == (32, 0), got


@compiler.jit
def strided_out_kernel(X, E, OUT, OUT64, N, BLOCK: tl.constexpr):
    # every element's results interleaved: three float64 at stride 3, two float32 at stride 2
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m, other=1.0)
    e = tl.load(E + offs, mask=m, other=0)
    xd = x.to(tl.float64)
    tl.store(OUT64 + offs * 3, xd * 0.5, mask=m)
    tl.store(OUT64 + offs * 3 + 1, xd - 2.0, mask=m)
    tl.store(OUT64 + offs * 3 + 2, libdevice.lgamma(xd), mask=m)
    tl.store(OUT + offs * 2, libdevice.ldexp(x, e), mask=m)
    tl.store(OUT + offs * 2 + 1, x * 4.0 + e.to(tl.float32), mask=m)


def _strided_inputs(n=1000):
    rng = np.random.default_rng(41)
    return rng.uniform(0.5, 6.0, n).astype(np.float32), rng.integers(-3, 4, n).astype(np.int32)


@pytest.mark.parametrize("target", TARGETS)
def test_strided_out_results(target):
    x, e = _strided_inputs()
    n = x.size
    out, out64 = poison(2 * n, "float32"), poison(3 * n, "float64")
    run(target, strided_out_kernel, (2,), [x, e, out, out64], [n], BLOCK=512, num_warps=4)
    xd = x.astype(np.float64)
    o64, o = out64.reshape(n, 3), out.reshape(n, 2)
    np.testing.assert_array_equal(o64[:, 0], xd * 0.5)
    np.testing.assert_array_equal(o64[:, 1], xd - 2.0)
    import math
    np.testing.assert_allclose(o64[:, 2], [math.lgamma(v) for v in xd], rtol=1e-13, atol=1e-13)
    np.testing.assert_array_equal(o[:, 0], np.ldexp(x, e).astype(np.float32))
    np.testing.assert_array_equal(o[:, 1], x * np.float32(4.0) + e.astype(np.float32))


def test_strided_out_one_element_a_thread():
    """Every store of the kernel holds one element a thread (lanes one stride apart: a warp's float64 store at
    stride 3 spans 768 bytes, where 4 elements a thread spanned 3072), and the contiguous loads are 4 scalar loads a
    thread instead of one 16-byte vector."""
    from compiler.compile import options_for
    from compiler.passes import run_pipeline

    x, e = _strided_inputs(1024)  # n divisible by 16: the mask is constant over a thread's 4 elements
    out, out64 = np.zeros(2 * x.size, np.float32), np.zeros(3 * x.size, np.float64)
    mod = strided_out_kernel.lower(x, e, out, out64, x.size, BLOCK=512)
    mod.options = options_for(num_warps=4, arch="sm_90a")
    mod = run_pipeline(mod, mod.options, upto="assign_layouts")
    stores = [op for op in mod.function.body.walk() if op.kind == "store"]
    assert len(stores) == 5
    assert {op.attrs["_anchor"].spt for op in stores} == {(1,)}
    ptx = strided_out_kernel.warmup(x, e, out, out64, x.size, grid=(2,), target="sm_90a", BLOCK=512,
                                    num_warps=4).asm["ptx"]
    assert len(re.findall(r"ld\.global(?:\.nc)?\.v4\.", ptx)) == 0
    assert len(re.findall(r"ld\.global(?:\.nc)?\.b32", ptx)) == 8
