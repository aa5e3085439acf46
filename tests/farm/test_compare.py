"""farm.validate.compare (chunked, with a short path for chunks within tolerance) against the straightforward
implementation it replaced, kept here as the reference: the same verdicts, the same statistics (bit for bit)
and the same messages, on tricky hand-made inputs and on random ones across many seeds; and check_inputs'
bitwise comparison."""
import numpy as np
import pytest

from farm import inputs as farm_inputs, validate


def compare_reference(name, got, want, rtol, atol):
    """The old compare: full-size float64 temporaries, one pass per rule."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return False, {}, f"{name}: shape {got.shape} but the reference has {want.shape}"
    exact = got.dtype.kind in "iub" and want.dtype.kind in "iub"
    if exact:
        bad = got != want
        sentinel = validate.poison_value(got.dtype)
        unwritten = (got == sentinel) & (want != sentinel)
        err = np.abs(got.astype(np.float64) - want.astype(np.float64))
        with np.errstate(over="ignore"):  # (the old code warned here; compare no longer does)
            rel = err / np.maximum(np.abs(want.astype(np.float64)), 1e-300)
    else:
        g, w = got.astype(np.float64), want.astype(np.float64)
        gnan, wnan = np.isnan(g), np.isnan(w)
        with np.errstate(invalid="ignore", over="ignore"):
            err = np.abs(g - w)
            close = (err <= atol + rtol * np.abs(w)) | (gnan & wnan) | (g == w)
            rel = err / np.maximum(np.abs(w), 1e-300)
        unwritten = gnan & ~wnan
        bad = ~close | unwritten
    fin = np.isfinite(err)
    stats = {
        "max_abs_err": float(err[fin].max()) if fin.any() else (float("inf") if err.size else 0.0),
        "max_rel_err": float(rel[fin].max()) if fin.any() else (float("inf") if err.size else 0.0),
        "n_bad": int(bad.sum()),
    }
    if not bad.any():
        return True, stats, ""
    first = tuple(int(i) for i in np.argwhere(bad)[0])
    msg = (f"{name}: {stats['n_bad']}/{bad.size} elements wrong"
           + (f" ({int(unwritten.sum())} NaN or unwritten)" if unwritten.any() else "")
           + f"; first at {first}: got {validate.show(got[first])}, want {validate.show(want[first])}"
           + ("" if exact else f"; max abs err {stats['max_abs_err']:.3g}, rtol={rtol:g} atol={atol:g}"))
    return False, stats, msg


def same(got, want, rtol, atol, name="o"):
    """compare and the reference agree exactly (verdict, statistics, message); returns compare's answer."""
    new = validate.compare(name, got, want, rtol, atol)
    old = compare_reference(name, got, want, rtol, atol)
    assert new == old, (new, old)
    for k, v in new[1].items():  # == and the types: floats stay floats, n_bad an int
        assert type(v) is type(old[1][k]), k
    return new


@pytest.fixture(params=[None, 7, 64], ids=["chunk=default", "chunk=7", "chunk=64"])
def chunk(request, monkeypatch):
    """Small chunks put chunk boundaries (and many chunks) into small arrays."""
    if request.param is not None:
        monkeypatch.setattr(validate, "CHUNK", request.param)
    return validate.CHUNK


def _bf16():
    import ml_dtypes
    return np.dtype(ml_dtypes.bfloat16)


# ---------------------------------------------------------------- hand-made cases

def test_nan_inf_rules(chunk):
    w = np.array([1.0, 2.0, np.nan, np.inf, -np.inf, 0.0, 5.0, np.inf, -np.inf, np.nan, 3.0, 0.0])
    g = np.array([1.0, 2.0, np.nan, np.inf, -np.inf, 0.0, 5.0, -np.inf, np.inf, 1.0, np.inf, -0.0], np.float32)
    ok, stats, msg = same(g, w, 1e-5, 1e-6)
    # inf vs -inf passes under the old rules too (err = inf <= atol + rtol * inf): pinned, not endorsed
    assert not ok and stats["n_bad"] == 2 and "2/12 elements wrong" in msg and "NaN or unwritten" not in msg
    same(g[:10], w[:10], 0.0, 1e-6)  # rtol = 0: inf <= atol + 0 * inf (NaN) is false
    for tol in [(1e-5, 1e-6), (0.0, 0.0), (1.0, 1.0), (0, 0)]:
        ok, _, msg = same(np.array([1.0, np.nan, 3.0, np.inf], np.float32), np.array([1.0, 2.0, 3.0, np.inf]), *tol)
        assert not ok and "(1 NaN or unwritten)" in msg
    # all NaN where numbers belong (a poisoned, never written output)
    ok, stats, msg = same(np.full((3, 5), np.nan, np.float16), np.ones((3, 5)), 1e-2, 1e-2)
    assert not ok and stats == {"max_abs_err": float("inf"), "max_rel_err": float("inf"), "n_bad": 15}
    assert "15/15 elements wrong (15 NaN or unwritten); first at (0, 0)" in msg
    # NaN in both everywhere: passes, no finite error
    assert same(np.full(9, np.nan, np.float32), np.full(9, np.nan), 0, 0)[:2] == (
        True, {"max_abs_err": float("inf"), "max_rel_err": float("inf"), "n_bad": 0})
    # a number where the reference is NaN: wrong, not "unwritten"
    ok, _, msg = same(np.array([1.0, 2.0], np.float32), np.array([1.0, np.nan]), 1.0, 1.0)
    assert not ok and "1/2 elements wrong; first at (1,)" in msg
    # inf where the reference is finite
    ok, _, _ = same(np.array([np.inf, 1.0], np.float16), np.array([60000.0, 1.0]), 1.0, 1.0)
    assert not ok
    # a finite value where the reference is inf, with rtol > 0: passes under the old rules (pinned)
    assert same(np.array([65504.0], np.float16), np.array([np.inf]), 1e-3, 1e-3)[0]
    assert not same(np.array([65504.0], np.float16), np.array([np.inf]), 0.0, 1e-3)[0]


def test_exactly_at_tolerance(chunk):
    # dyadic values: atol + rtol * |w| and |got - want| are exact in float64
    rtol, atol = 0.5, 0.25
    w = np.array([1.0, -2.0, 4.0, 0.0, 8.0, -8.0, 0.5])
    thr = atol + rtol * np.abs(w)
    ok, stats, _ = same((w + thr).astype(np.float32), w, rtol, atol)
    assert ok and stats["max_abs_err"] == 4.25
    ok, stats, _ = same((w - thr).astype(np.float16), w, rtol, atol)
    assert ok
    over = w + thr
    over[[2, 5]] = np.nextafter(over[[2, 5]], np.inf)  # one ulp (float64) over on two elements
    ok, stats, msg = same(over, w, rtol, atol)
    assert not ok and stats["n_bad"] == 1 and "first at (2,)" in msg  # -8 + 4.25, one ulp up, is inside
    ok, _, _ = same(np.array([1.0, 2.0], np.float32), np.array([1.0, 2.0]), 0, 0)  # equal, zero tolerance
    assert ok


def test_relative_error_overflow_and_tiny_reference(chunk):
    # |w| below 1e-300, and w = 0 with a large error: the relative error overflows to inf, still "finite error"
    w = np.array([0.0, 1e-310, 0.0, 1.0])
    g = np.array([1e-3, 0.0, 1e10, 1.0])
    ok, stats, _ = same(g, w, 0.0, 1e20)
    assert ok and stats["max_rel_err"] == float("inf") and stats["max_abs_err"] == 1e10


def test_integers_are_exact(chunk):
    sentinel = np.iinfo(np.int32).min
    w = np.arange(20, dtype=np.int64) - 7
    g = w.astype(np.int32)
    assert same(g, w, 0, 0) == (True, {"max_abs_err": 0.0, "max_rel_err": 0.0, "n_bad": 0}, "")
    g[[3, 11]] = sentinel
    g[15] += 1
    ok, stats, msg = same(g, w, 1.0, 1.0)  # tolerances do not apply to integers
    assert not ok and stats["n_bad"] == 3 and "3/20 elements wrong (2 NaN or unwritten); first at (3,)" in msg
    assert "max abs err" not in msg
    # the sentinel where the reference has it too is not "unwritten"
    same(np.array([sentinel, 1], np.int32), np.array([sentinel, 2], np.int32), 0, 0)
    for dt in (np.uint8, np.uint16, np.int8, np.uint64, np.int64, bool):
        rng = np.random.default_rng(3)
        w = rng.integers(0, 2 if dt is bool else 100, size=(5, 13)).astype(dt)
        g = w.copy()
        g[1, 2] = validate.poison_value(np.dtype(dt))
        g[4, 12] = not g[4, 12] if dt is bool else g[4, 12] + 1
        same(g, w, 0, 0)
        same(w, w, 0, 0)
    # int64 extremes: float64 errors, as the reference computes them
    big = np.array([np.iinfo(np.int64).max, np.iinfo(np.int64).min, 0], np.int64)
    same(big, big[::-1].copy(), 0, 0)
    # integer output, float reference: the float rules
    same(np.array([1, 2, 3], np.int32), np.array([1.0, 2.5, np.nan]), 0.1, 0.1)


def test_bfloat16(chunk):
    bf16 = _bf16()
    w = np.linspace(-3, 3, 50)
    ok, _, _ = same(w.astype(bf16), w, 1.6e-2, 1e-2)
    assert ok
    g = w.astype(bf16)
    g[7] = np.nan
    g[30] = g[30] * 2
    ok, stats, msg = same(g, w, 1.6e-2, 1e-2)
    assert not ok and stats["n_bad"] == 2 and "(1 NaN or unwritten)" in msg


@pytest.mark.parametrize("shape", [(), (1,), (0,), (0, 5), (17,), (3, 0, 2), (5, 9), (2, 3, 11)])
def test_shapes(chunk, shape):
    rng = np.random.default_rng(sum(shape) + len(shape))
    w = rng.standard_normal(shape)
    same(w.astype(np.float16), w, 1e-2, 1e-2)
    same(w.astype(np.float16), w, 0, 0)
    same(np.full(shape, np.nan, np.float32), w, 1e-2, 1e-2)
    same(np.full(shape, -128, np.int8), np.zeros(shape, np.int8), 0, 0)
    same(np.zeros(shape, np.int8), np.zeros(shape, np.int8), 0, 0)


def test_shape_mismatch_and_views():
    assert validate.compare("o", np.zeros((2, 2)), np.zeros((2, 3)), 0, 0) == compare_reference(
        "o", np.zeros((2, 2)), np.zeros((2, 3)), 0, 0)
    rng = np.random.default_rng(0)
    w = rng.standard_normal((40, 60))
    g = w.astype(np.float32)
    g[5, 7] = np.nan
    same(g.T, w.T, 1e-3, 1e-3)  # non-contiguous
    same(g[::3, 1::2], w[::3, 1::2], 1e-3, 1e-3)
    same(g, np.broadcast_to(w[:1], w.shape), 1e-3, 1e-3)
    same(g.astype(np.float64), w.astype(np.float32), 1e-3, 1e-3)  # a float32 reference
    same(list(g[0]), list(w[0]), 1e-3, 1e-3)  # not arrays at all


def test_large_default_chunk():
    # several default-size chunks, with the wrong elements in a later one
    rng = np.random.default_rng(11)
    w = rng.standard_normal((300, 333))
    g = w.astype(np.float16)
    assert same(g, w, 1e-2, 1e-2)[0]
    g[250, 3] = np.nan
    g[299, 332] += 1
    ok, stats, msg = same(g, w, 1e-2, 1e-2)
    assert not ok and stats["n_bad"] == 2 and "first at (250, 3)" in msg


# ---------------------------------------------------------------- random cases

FLOATS = ["float16", "float32", "float64", "bfloat16"]


def _random_case(rng):
    shape = [(), (int(rng.integers(0, 40)),), (int(rng.integers(1, 9)), int(rng.integers(1, 30))),
             (2, int(rng.integers(1, 6)), int(rng.integers(1, 12)))][int(rng.integers(0, 4))]
    kind = rng.choice(["float", "float", "float", "int", "int_vs_float"])
    w = rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 4)
    if kind == "float":
        dt = farm_inputs.np_dtype(str(rng.choice(FLOATS)))
        rtol, atol = [(1e-2, 1e-2), (1.6e-2, 1e-2), (1e-5, 1e-6), (0.0, 0.0), (0.5, 0.25), (0, 1e-3)][
            int(rng.integers(0, 6))]
        g = (w + rng.standard_normal(shape) * atol * rng.choice([0.0, 0.5, 3.0])).astype(dt)
        flat_g, flat_w = g.reshape(-1), w.reshape(-1)
        for _ in range(int(rng.integers(0, 4))):  # specials, sometimes in both at the same place
            if not flat_g.size:
                break
            i = int(rng.integers(0, flat_g.size))
            special = rng.choice([np.nan, np.inf, -np.inf, 0.0])
            where = rng.integers(0, 3)
            if where != 1:
                flat_g[i] = special
            if where != 0:
                flat_w[i] = special if rng.random() < 0.7 else rng.choice([np.nan, np.inf, -np.inf])
        if rng.random() < 0.2 and flat_g.size:  # a poisoned tail
            flat_g[int(rng.integers(0, flat_g.size)):] = validate.poison_value(dt)
        if rng.random() < 0.2 and flat_g.size:  # exactly on the tolerance, and an ulp past it
            i = int(rng.integers(0, flat_g.size))
            flat_w[i] = 2.0
            flat_g[i] = np.float64(2.0 + atol + rtol * 2.0).astype(dt)
        return g, w, rtol, atol
    idt = np.dtype(str(rng.choice(["int8", "int32", "int64", "uint8", "uint32", "bool"])))
    lo, hi = (0, 2) if idt.kind == "b" else ((0, 200) if idt.kind == "u" else (-100, 100))
    wi = rng.integers(lo, hi, size=shape).astype(idt)
    g = wi.copy()
    flat = g.reshape(-1)
    for _ in range(int(rng.integers(0, 4))):
        if flat.size:
            flat[int(rng.integers(0, flat.size))] = validate.poison_value(idt) if rng.random() < 0.5 else \
                rng.integers(lo, hi)
    want = wi.astype(np.float64) if kind == "int_vs_float" else wi.astype(rng.choice([idt, np.int64]))
    return g, want, 0, 0


@pytest.mark.parametrize("seed", range(300))
def test_random_against_reference(seed, monkeypatch):
    rng = np.random.default_rng(seed)
    monkeypatch.setattr(validate, "CHUNK", int(rng.choice([1, 5, 16, 100, 1 << 15])))
    g, w, rtol, atol = _random_case(rng)
    same(g, w, rtol, atol)


# ---------------------------------------------------------------- check_inputs

def testcheck_inputs_bitwise():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((33, 7)).astype(np.float16)
    b = rng.integers(0, 255, size=13, dtype=np.uint8)
    pristine = {"a": a, "b": b, "c": np.zeros(8)}
    assert validate.check_inputs(pristine, {k: v.copy() for k, v in pristine.items()}, set()) == []
    cur = {k: v.copy() for k, v in pristine.items()}
    cur["a"][5, 2] = -cur["a"][5, 2]  # a sign bit: one byte
    cur["b"][12] ^= 1
    cur["c"][0] = -0.0  # equal as numbers, not as bytes
    msgs = validate.check_inputs(pristine, cur, set())
    assert msgs == [f"input {k!r} was modified by the kernel (1 bytes differ) but no output declares it in-place"
                    for k in "abc"]
    assert validate.check_inputs(pristine, cur, {"a", "b", "c"}) == []
    # NaN payloads differ: bitwise, not numeric
    n1 = np.array([np.nan], np.float32)
    n2 = n1.view(np.uint32).copy()
    n2 += 1
    assert validate.check_inputs({"n": n1}, {"n": n2.view(np.float32)}, set())
    assert validate.check_inputs({"n": n1}, {"n": n1.copy()}, set()) == []
    # non-contiguous or other dtype: the bytes of the C-order copies, as before
    m = rng.standard_normal((6, 4))
    assert validate.check_inputs({"m": m}, {"m": np.asfortranarray(m)}, set()) == []
    assert validate.check_inputs({"m": m}, {"m": m.view(np.int64)}, set()) == []
    assert validate.check_inputs({"m": m}, {"m": m.reshape(4, 6).copy()}, set()) == []


def testcheck_inputs_layouts_and_dtypes():
    rng = np.random.default_rng(2)
    f = np.asfortranarray(rng.standard_normal((5, 6)).astype(np.float32))  # np.array(v, copy=True) keeps F order
    assert validate.check_inputs({"f": f}, {"f": f.copy(order="C")}, set()) == []
    g = f.copy(order="C")
    g[4, 5] = np.nextafter(g[4, 5], np.inf)
    assert validate.check_inputs({"f": f}, {"f": g}, set()) == [
        "input 'f' was modified by the kernel (1 bytes differ) but no output declares it in-place"]
    bf = rng.standard_normal(10).astype(_bf16())
    assert validate.check_inputs({"x": bf}, {"x": bf.copy()}, set()) == []
    c = rng.standard_normal(4) + 1j  # itemsize 16: bytes, as before
    d = c.copy()
    assert validate.check_inputs({"c": c}, {"c": d}, set()) == []
    d[3] += 1
    assert "bytes differ)" in validate.check_inputs({"c": c}, {"c": d}, set())[0]
    z = np.array(3.5)  # 0-d
    assert validate.check_inputs({"z": z}, {"z": np.array(3.5)}, set()) == []
    assert validate.check_inputs({"z": z}, {"z": np.array(-3.5)}, set())
