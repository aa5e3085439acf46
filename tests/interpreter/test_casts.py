"""cast / bitcast for every dtype pair against exact references (Fractions for float rounding)."""
import math
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

from compiler.interpreter import run
from compiler.ir import types as T

from .irb import elementwise

ALL = T.ALL_DTYPES
N = 200


def finfo_max(elem):
    return float(ml_dtypes.finfo(elem.np).max)


def source_values(rng, elem):
    if elem.is_bool():
        return rng.random(N) < 0.5
    if elem.is_floating():
        mx = min(finfo_max(elem), 1e30)
        x = np.concatenate([rng.uniform(-300, 300, N // 2), rng.uniform(-mx, mx, N // 4),
                            rng.standard_normal(N - N // 2 - N // 4) * 3])
        x = x.astype(elem.np)
        x[:10] = np.array([np.nan, np.inf, -np.inf, -0.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.75]).astype(elem.np)
        return x
    info = np.iinfo(elem.np)
    x = rng.integers(info.min, info.max, N, dtype=elem.np, endpoint=True)
    small = rng.integers(max(info.min, -300), min(info.max, 300), N, endpoint=True).astype(elem.np)
    x[: N // 2] = small[: N // 2]
    x[:4] = np.array([info.min, info.max, 0, 1], dtype=elem.np)
    if elem.bits == 64:  # ints with more than 53 significant bits near rounding ties of bf16/f16/f32
        x[4] = elem.np.type((1 << 62) + (1 << 54) + 1) if elem.is_int_signed() else elem.np.type((1 << 63) + (1 << 55) + 1)
    return x


def nearest_float(v: Fraction, elem):
    """Correctly rounded (ties to even) value of the exact rational v in float type elem."""
    nd = elem.np
    with np.errstate(all="ignore"):
        guess = np.array([float(v)], np.float64).astype(np.float32 if elem.bits < 32 else nd).astype(nd)
    cands = [guess, np.nextafter(guess, np.array([np.inf], nd)), np.nextafter(guess, np.array([-np.inf], nd))]
    best = None
    for c in cands:
        cf = float(c[0])
        if math.isinf(cf):
            continue
        d = abs(Fraction(cf) - v)
        bits = int(c.view(np.dtype(f"u{nd.itemsize}"))[0])
        key = (d, bits & 1)
        if best is None or key < best[0]:
            best = (key, cf)
    mx = finfo_max(elem)
    # overflow: beyond max + half an ulp of max rounds to infinity
    ulp = mx - float(np.nextafter(np.array([mx], nd), np.array([0], nd))[0])
    if abs(v) >= Fraction(mx) + Fraction(ulp) / 2:
        return math.copysign(math.inf, v)
    return best[1]


def ref_cast(x, src, dst):
    if dst.is_bool():
        return bool(x != 0) if not (src.is_floating() and math.isnan(float(x))) else True
    if src.is_bool():
        x = int(bool(x))
    if dst.is_floating():
        if src.is_floating():
            xf = float(x)
            if math.isnan(xf) or math.isinf(xf):
                return xf
            if xf == 0:
                return xf
            return nearest_float(Fraction(xf), dst)
        return nearest_float(Fraction(int(x)), dst) if int(x) != 0 else 0.0
    info = np.iinfo(dst.np)
    if src.is_floating():
        xf = float(x)
        if math.isnan(xf):
            return 0
        if math.isinf(xf):
            return info.max if xf > 0 else info.min
        t = math.trunc(xf)
        return min(max(t, int(info.min)), int(info.max))
    v = int(x) & ((1 << dst.bits) - 1)
    if dst.is_int_signed() and v >= 1 << (dst.bits - 1):
        v -= 1 << dst.bits
    return v


@pytest.mark.parametrize("dst", ALL, ids=str)
@pytest.mark.parametrize("src", ALL, ids=str)
def test_cast(src, dst):
    rng = np.random.default_rng(src.bits * 131 + dst.bits * 7 + len(src.name) + 3 * len(dst.name))
    x = source_values(rng, src)
    f = elementwise([src], dst, lambda bd, v: bd.cast(v, dst), block=256)
    out = np.zeros(N, dst.np)
    run(f, (1, 1, 1), [x, out, N], debug=True)
    for i in range(N):
        want = ref_cast(x[i], src, dst)
        got = out[i]
        if dst.is_floating():
            g = float(got)
            ok = (math.isnan(g) and math.isnan(want)) or (g == want and math.copysign(1, g) == math.copysign(1, want))
        else:
            ok = (bool(got) == want) if dst.is_bool() else int(got) == want
        assert ok, f"cast {src}->{dst}: x={x[i]!r} got={got!r} want={want!r}"


@pytest.mark.parametrize("pair", [(T.float32, T.int32), (T.int32, T.float32), (T.float16, T.int16),
                                  (T.bfloat16, T.uint16), (T.float64, T.uint64), (T.int8, T.uint8)], ids=str)
def test_bitcast(pair):
    src, dst = pair
    rng = np.random.default_rng(11)
    x = source_values(rng, src)
    f = elementwise([src], dst, lambda bd, v: bd.bitcast(v, dst), block=256)
    out = np.zeros(N, dst.np)
    run(f, (1, 1, 1), [x, out, N], debug=True)
    assert out.tobytes() == x.view(dst.np).tobytes()
