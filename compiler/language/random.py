"""Counter-based random numbers (Philox 4x32 / 4x64), bit-identical to Triton's `tl.rand` family.

`randint4x(seed, offset)` runs Philox 4x32 on the counter (offset's low 32 bits, its high 32 bits, 0, 0) with
the key (seed's low 32 bits, high 32 bits) for `n_rounds` (10) rounds and returns the four uint32 words;
`philox` on 64-bit counters is Philox 4x64 (key (seed, 0)). Everything is built from integer ops whose bits the IR defines (umulhi, wrapping mul/add, xor), so
the interpreter and the GPU give the same words. `rand` maps a word to [0, 1) as a float32 (exact, same bits on
both); `randn` is the Box-Muller transform of two words (log/sqrt/cos: within float32 math tolerance).
"""
from __future__ import annotations

from ..ir import types as _T
from .core import _unwrap, builtin

N_ROUNDS_DEFAULT = 10

# Philox constants: the key increments (golden ratio, sqrt(3) - 1) and round multipliers, for 32 and 64 bits.
_KEY_A = {32: 0x9E3779B9, 64: 0x9E3779B97F4A7C15}
_KEY_B = {32: 0xBB67AE85, 64: 0xBB67AE8584CAA73B}
_ROUND_A = {32: 0xD2511F53, 64: 0xD2E7470EE14C6C93}
_ROUND_B = {32: 0xCD9E8D57, 64: 0xCA5A826395121157}


def _sem():
    from ..frontend import semantic

    return semantic


def _t(v):
    return _sem().to_tensor(_unwrap(v))


@builtin
def philox_impl(c0, c1, c2, c3, k0, k1, n_rounds=N_ROUNDS_DEFAULT):
    """`n_rounds` Philox rounds on the counter (c0..c3) with key (k0, k1), all uint32 or all uint64."""
    s = _sem()
    c0, c1, c2, c3, k0, k1 = (_t(v) for v in (c0, c1, c2, c3, k0, k1))
    if c0.dtype not in (_T.uint32, _T.uint64):
        from ..frontend.context import SemanticError

        raise SemanticError(f"philox_impl needs uint32 or uint64 counters, got {c0.dtype!r}")
    w = c0.dtype.bits
    for _ in range(int(_unwrap(n_rounds))):
        # in Triton's order: each high product consumed at once, the low ones (the next c1, c3) last. ptxas keeps
        # the order's live ranges: with both halves of a product made together, dropout over 8 values a thread
        # took 53 registers (9 blocks of 128 threads per SM) instead of 32 (16 blocks)
        n0 = s.xor_(s.xor_(s.umulhi(_ROUND_B[w], c2), c1), k0)
        n2 = s.xor_(s.xor_(s.umulhi(_ROUND_A[w], c0), c3), k1)
        c0, c1, c2, c3 = n0, s.mul(_ROUND_B[w], c2), n2, s.mul(_ROUND_A[w], c0)
        k0, k1 = s.add(k0, _KEY_A[w]), s.add(k1, _KEY_B[w])
    return c0, c1, c2, c3


@builtin
def philox(seed, c0, c1, c2, c3, n_rounds=N_ROUNDS_DEFAULT):
    """Philox of the counter (c0..c3) keyed by `seed`: 32-bit counters use (seed low, seed high) as the key,
    64-bit ones (seed, 0). The counters are read as unsigned (bitcast)."""
    s = _sem()
    seed = _t(seed)
    if not seed.dtype.is_int():  # as Triton: a float seed is not rounded, a pointer is not read
        from ..frontend.context import SemanticError

        raise SemanticError(f"the random seed must be an integer, got {seed.dtype!r}")
    seed = s.cast(seed, _T.uint64)
    cs = [_t(c) for c in (c0, c1, c2, c3)]
    bits = cs[0].dtype.bits
    if bits == 32:
        ut = _T.uint32
        k1 = s.cast(s.and_(s.shr(seed, 32), 0xFFFFFFFF), ut)
        k0 = s.cast(s.and_(seed, 0xFFFFFFFF), ut)
    elif bits == 64:
        ut = _T.uint64
        k0, k1 = seed, s.const(0, _T.uint64)
    else:
        from ..frontend.context import SemanticError

        raise SemanticError(f"philox needs 32- or 64-bit integer counters, got {cs[0].dtype!r}")
    cs = [s.cast(c, ut, bitcast=True) for c in cs]
    return philox_impl(*cs, k0, k1, n_rounds)


@builtin
def randint4x(seed, offset, n_rounds=N_ROUNDS_DEFAULT):
    """Four blocks of random uint32 for a scalar `seed` and a block of offsets: Philox 4x32 of the counter
    (offset's low 32 bits, its high 32 bits (0 for offsets of 32 bits or less), 0, 0), as Triton's."""
    s = _sem()
    off = _t(offset)
    lo = s.cast(off, _T.uint32)
    zero = s.mul(lo, 0)
    hi = s.cast(s.shr(off, 32), _T.uint32) if off.dtype.bits > 32 else zero
    return philox(seed, lo, hi, zero, zero, n_rounds)


@builtin
def randint(seed, offset, n_rounds=N_ROUNDS_DEFAULT):
    """One block of random uint32: the first word of `randint4x`."""
    return randint4x(seed, offset, n_rounds)[0]


@builtin
def uint_to_uniform_float(x):
    """A random 32/64-bit word -> float32 in [0, 1): the word as a signed int, folded to >= 0 (x < 0: -x - 1),
    times the largest scale that keeps the maximum below 1.0."""
    s = _sem()
    x = _t(x)
    if x.dtype.bits == 32 and x.dtype.is_int():
        x, scale = s.cast(x, _T.int32, bitcast=True), 4.6566127342e-10
    elif x.dtype.bits == 64 and x.dtype.is_int():
        x, scale = s.cast(x, _T.int64, bitcast=True), 1.0842020432385337e-19
    else:
        from ..frontend.context import SemanticError

        raise SemanticError(f"uint_to_uniform_float needs a 32- or 64-bit integer, got {x.dtype!r}")
    x = s.where(s.compare("lt", x, 0), s.sub(s.neg(x), 1), x)
    return s.mul(x, scale)


@builtin
def rand(seed, offset, n_rounds=N_ROUNDS_DEFAULT):
    """A block of random float32 in [0, 1)."""
    return uint_to_uniform_float(randint(seed, offset, n_rounds))


@builtin
def rand4x(seed, offsets, n_rounds=N_ROUNDS_DEFAULT):
    """Four blocks of random float32 in [0, 1)."""
    return tuple(uint_to_uniform_float(w) for w in randint4x(seed, offsets, n_rounds))


@builtin
def pair_uniform_to_normal(u1, u2):
    """Box-Muller: two uniform blocks -> two standard normal blocks (u1 clamped to >= 1e-7)."""
    s = _sem()
    u1 = s.maximum(1.0e-7, _t(u1))
    th = s.mul(6.283185307179586, _t(u2))
    r = s.unary("sqrt", s.mul(-2.0, s.unary("log", u1)))
    return s.mul(r, s.unary("cos", th)), s.mul(r, s.unary("sin", th))


@builtin
def randn(seed, offset, n_rounds=N_ROUNDS_DEFAULT):
    """A block of random float32 from N(0, 1)."""
    i1, i2, _, _ = randint4x(seed, offset, n_rounds)
    return pair_uniform_to_normal(uint_to_uniform_float(i1), uint_to_uniform_float(i2))[0]


@builtin
def randn4x(seed, offset, n_rounds=N_ROUNDS_DEFAULT):
    """Four blocks of random float32 from N(0, 1)."""
    u1, u2, u3, u4 = rand4x(seed, offset, n_rounds)
    return pair_uniform_to_normal(u1, u2) + pair_uniform_to_normal(u3, u4)


__all__ = ["philox", "philox_impl", "randint", "randint4x", "rand", "rand4x", "randn", "randn4x",
           "uint_to_uniform_float", "pair_uniform_to_normal"]
