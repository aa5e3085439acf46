"""Philox random numbers against an independent plain-Python Philox (and Random123's known answers):
randint/randint4x/philox bit for bit, rand bit for bit, randn within float32 math tolerance."""
import numpy as np
import pytest

from . import random_kernels as K
from .lang_common import TARGETS, assert_close, poison, run

N = 1000
BLOCK = 256
GRID = (4,)
M32, M64 = (1 << 32) - 1, (1 << 64) - 1


def philox_ref(c, k, rounds=10, w=32):
    """Philox 4xW: W-bit words, Python ints (the published algorithm)."""
    mask = (1 << w) - 1
    ra, rb = (0xD2511F53, 0xCD9E8D57) if w == 32 else (0xD2E7470EE14C6C93, 0xCA5A826395121157)
    ka, kb = (0x9E3779B9, 0xBB67AE85) if w == 32 else (0x9E3779B97F4A7C15, 0xBB67AE8584CAA73B)
    c0, c1, c2, c3 = c
    k0, k1 = k
    for _ in range(rounds):
        pa, pb = ra * c0, rb * c2
        c0, c1, c2, c3 = ((pb >> w) ^ c1 ^ k0) & mask, pb & mask, ((pa >> w) ^ c3 ^ k1) & mask, pa & mask
        k0, k1 = (k0 + ka) & mask, (k1 + kb) & mask
    return c0, c1, c2, c3


def test_reference_matches_random123_known_answers():
    assert philox_ref((0, 0, 0, 0), (0, 0)) == (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)
    assert philox_ref((M32,) * 4, (M32, M32)) == (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)
    assert philox_ref((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0)) == \
        (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)


def _randint4x_ref(seed, offs, rounds=10):
    s = seed & M64
    return np.array([philox_ref((int(o) & M32, 0, 0, 0), (s & M32, s >> 32), rounds) for o in offs],
                    dtype=np.uint64).astype(np.uint32).T


@pytest.mark.parametrize("target", TARGETS)
def test_philox_known_answers(target):
    cs = [(0, 0, 0, 0), (M32,) * 4, (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344)]
    keys = [0, M64, 0x299F31D0_A4093822]
    for c, seed, want in zip(cs, keys, [philox_ref(c, (k & M32, k >> 32)) for c, k in zip(cs, keys)]):
        C = np.array(c * 4, np.uint32)
        Y = poison(16, "uint32")
        run(target, K.philox_kernel, (1,), [C, Y], [seed, 4], BLOCK=4)
        assert tuple(int(v) for v in Y[:4]) == want


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("seed", [0, 1234, 2**31 + 5, 2**40 + 77, -3])
def test_randint4x(target, seed):
    ys = [poison(N, "uint32") for _ in range(4)]
    run(target, K.randint4x_kernel, GRID, ys, [seed, N], BLOCK=BLOCK)
    ref = _randint4x_ref(seed, np.arange(N))
    for y, r in zip(ys, ref):
        np.testing.assert_array_equal(y, r)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("rounds", [10, 7])
def test_randint_rand_bits(target, rounds):
    seed = 98765
    y = poison(N, "uint32")
    run(target, K.random_kernel, GRID, [y], [seed, N], WHAT="randint", ROUNDS=rounds, BLOCK=BLOCK)
    words = _randint4x_ref(seed, np.arange(N), rounds)[0]
    np.testing.assert_array_equal(y, words)
    u = poison(N, "float32")
    run(target, K.random_kernel, GRID, [u], [seed, N], WHAT="rand", ROUNDS=rounds, BLOCK=BLOCK)
    x = words.view(np.int32).astype(np.int64)
    x = np.where(x < 0, -x - 1, x)
    ref = x.astype(np.float32) * np.float32(4.6566127342e-10)  # float32 product, rounded once
    np.testing.assert_array_equal(u.view(np.uint32), ref.view(np.uint32))
    assert 0 <= u.min() and u.max() < 1


@pytest.mark.parametrize("target", TARGETS)
def test_randint_64bit_offsets(target):
    # as Triton's randint4x: a 64-bit offset is the counter's first two 32-bit words (low, high), Philox 4x32
    seed = 42
    y = poison(N, "uint64")
    run(target, K.random_kernel, GRID, [y], [seed, N], WHAT="randint64", ROUNDS=10, BLOCK=BLOCK)
    ref = [philox_ref(((o + 2**40) & M32, (o + 2**40) >> 32, 0, 0), (seed, 0), 10, 32)[0] for o in range(N)]
    np.testing.assert_array_equal(y, np.array(ref, np.uint64))


@pytest.mark.parametrize("target", TARGETS)
def test_randn(target):
    seed = 7
    y = poison(N, "float32")
    run(target, K.random_kernel, GRID, [y], [seed, N], WHAT="randn", ROUNDS=10, BLOCK=BLOCK)
    w = _randint4x_ref(seed, np.arange(N))

    def unif(v):
        x = v.view(np.int32).astype(np.int64)
        return (np.where(x < 0, -x - 1, x).astype(np.float32) * np.float32(4.6566127342e-10)).astype(np.float64)
    u1, u2 = np.maximum(1e-7, unif(w[0])), unif(w[1])
    ref = np.sqrt(-2.0 * np.log(u1)) * np.cos(6.283185307179586 * u2)
    assert_close(y, ref, "float32", rtol=1e-4, atol=1e-4)
    assert abs(y.mean()) < 0.15 and 0.85 < y.std() < 1.15


@pytest.mark.parametrize("target", TARGETS)
def test_dropout(target):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(N).astype(np.float32)
    y = poison(N, "float32")
    p, seed = 0.3, 2024
    run(target, K.dropout_kernel, GRID, [x, y], [N, p, seed], BLOCK=BLOCK)
    w = _randint4x_ref(seed, np.arange(N))[0].view(np.int32).astype(np.int64)
    u = np.where(w < 0, -w - 1, w).astype(np.float32) * np.float32(4.6566127342e-10)
    keep = u > np.float32(p)
    np.testing.assert_array_equal(y != 0, keep)
    assert_close(y[keep], x[keep].astype(np.float64) / (1 - np.float32(p)), "float32", rtol=2e-6)


@pytest.mark.parametrize("seed", [np.zeros(1, np.int32), 2.3], ids=["pointer", "float"])
def test_seed_must_be_an_integer(seed):
    """A pointer or a float as the seed is a compile error at the call, as in Triton (it was read as its address /
    truncated); an integer seed compiles."""
    import compiler

    x = np.zeros(1, np.float32)
    with pytest.raises(compiler.CompilationError, match="random seed must be an integer"):
        K.rand_any_seed[(1,)](x, seed)
    K.rand_any_seed[(1,)](x, 7)
    assert 0.0 <= x[0] < 1.0
