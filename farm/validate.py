"""Is a job's output right? Outputs are poisoned before a run (NaN for floats, a sentinel for integers) so
unwritten elements show; each output is compared with the float64 reference at the workload's (rtol, atol) for
its dtype, NaN never passing where the reference is a number; and inputs are compared bit for bit with their
pristine copies unless an output aliases them (declared in-place)."""
from __future__ import annotations

import numpy as np


def poison_value(dtype: np.dtype):
    """NaN for floats, the most negative value for signed ints, the largest for unsigned, True for bool."""
    if dtype.kind == "f" or dtype.name == "bfloat16" or dtype.kind == "V":
        return np.nan
    if dtype.kind == "i":
        return np.iinfo(dtype).min
    if dtype.kind == "u":
        return np.iinfo(dtype).max
    return True


# Elements per chunk of compare(): its float64 scratch buffers (about 5 of them) stay in a core's L2 cache.
CHUNK = 1 << 15


def compare(name: str, got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> tuple[bool, dict, str]:
    """Compare one output with its reference: (ok, {max_abs_err, max_rel_err, n_bad}, message when not ok).

    Floats (and bfloat16) pass where |got - want| <= atol + rtol * |want|, where both are NaN, or where they are
    equal (equal infinities); NaN where the reference is not NaN never passes (counted as NaN or unwritten).
    Integers and bools must be equal; the poison value where the reference has another is counted as
    unwritten. max_abs_err and max_rel_err (|got - want| / max(|want|, 1e-300)) are over the elements whose
    error is finite, computed in float64.

    Works through the flattened arrays in chunks of CHUNK elements with reused scratch buffers, so a 4096x4096
    output costs no full-size float64 temporaries; chunks where every element is within tolerance take a short
    path, the others the full rules.
    """
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return False, {}, f"{name}: shape {got.shape} but the reference has {want.shape}"
    exact = got.dtype.kind in "iub" and want.dtype.kind in "iub"
    g_flat, w_flat = got.reshape(-1), want.reshape(-1)  # views when contiguous
    n = g_flat.size
    n_bad = n_unwritten = 0
    first = -1  # flat index of the first wrong element
    any_fin = exact and n > 0  # integer errors are always finite
    max_abs = max_rel = 0.0
    if exact:
        sentinel = poison_value(got.dtype)
        for lo in range(0, n, CHUNK):
            gc, wc = g_flat[lo:lo + CHUNK], w_flat[lo:lo + CHUNK]
            bad = gc != wc
            if not bad.any():
                continue  # equal: zero error
            # got == sentinel != want implies got != want: unwritten elements are among the bad ones
            unwritten = (gc == sentinel) & (wc != sentinel)
            nb = int(np.count_nonzero(bad))
            if first < 0:
                first = lo + int(np.argmax(bad))
            n_bad += nb
            n_unwritten += int(np.count_nonzero(unwritten))
            wb = wc[bad].astype(np.float64)
            err = np.abs(gc[bad].astype(np.float64) - wb)
            with np.errstate(over="ignore"):  # |w| = 0: the relative error may overflow to inf
                rel = err / np.maximum(np.abs(wb), 1e-300)
            max_abs, max_rel = max(max_abs, float(err.max())), max(max_rel, float(rel.max()))
    else:
        m = min(n, CHUNK)
        gbuf, err, aw, thr = (np.empty(m, np.float64) for _ in range(4))
        le = np.empty(m, bool)
        with np.errstate(invalid="ignore", over="ignore"):
            for lo in range(0, n, CHUNK):
                k = min(CHUNK, n - lo)
                gc, wc = g_flat[lo:lo + k], w_flat[lo:lo + k]
                g, e, a, t, l = gbuf[:k], err[:k], aw[:k], thr[:k], le[:k]
                np.copyto(g, gc, casting="unsafe")  # as got.astype(np.float64)
                w = wc.astype(np.float64, copy=False)
                np.subtract(g, w, out=e)
                np.abs(e, out=e)
                np.abs(w, out=a)
                np.multiply(a, rtol, out=t)  # atol + rtol * |w|
                np.add(t, atol, out=t)
                np.less_equal(e, t, out=l)
                emax = e.max()
                if l.all() and np.isfinite(emax):
                    # all within tolerance (so no NaN in got where want is a number) and every error finite
                    np.maximum(a, 1e-300, out=a)
                    np.divide(e, a, out=a)
                    max_abs, max_rel, any_fin = max(max_abs, float(emax)), max(max_rel, float(a.max())), True
                    continue
                # the full rules on this chunk
                gnan, wnan = np.isnan(g), np.isnan(w)
                close = l | (gnan & wnan) | (g == w)
                unwritten = gnan & ~wnan  # NaN where a number belongs: never written, or computed NaN
                bad = ~close | unwritten
                fin = np.isfinite(e)
                if fin.any():
                    np.maximum(a, 1e-300, out=a)
                    np.divide(e, a, out=a)
                    max_abs = max(max_abs, float(e[fin].max()))
                    max_rel = max(max_rel, float(a[fin].max()))
                    any_fin = True
                nb = int(np.count_nonzero(bad))
                if nb:
                    if first < 0:
                        first = lo + int(np.argmax(bad))
                    n_bad += nb
                    n_unwritten += int(np.count_nonzero(unwritten))
    if not any_fin:
        max_abs = max_rel = float("inf") if n else 0.0
    stats = {"max_abs_err": max_abs, "max_rel_err": max_rel, "n_bad": n_bad}
    if not n_bad:
        return True, stats, ""
    idx = tuple(int(i) for i in np.unravel_index(first, got.shape))
    msg = (f"{name}: {n_bad}/{got.size} elements wrong"
           + (f" ({n_unwritten} NaN or unwritten)" if n_unwritten else "")
           + f"; first at {idx}: got {show(got[idx])}, want {show(want[idx])}"
           + ("" if exact else f"; max abs err {max_abs:.3g}, rtol={rtol:g} atol={atol:g}"))
    return False, stats, msg


def check_outputs(wl, specs, outputs: dict, ref: dict) -> tuple[bool, dict, list[str]]:
    ok, msgs = True, []
    agg = {"max_abs_err": 0.0, "max_rel_err": 0.0}
    for spec in specs:
        if spec.name not in ref:
            return False, agg, [f"the reference returned no {spec.name!r} (it has {sorted(ref)})"]
        rtol, atol = wl.tol(spec.dtype)
        if getattr(wl, "atol_relative", False):  # atol given as a fraction of the reference's largest magnitude
            r = np.asarray(ref[spec.name])
            atol *= float(np.max(np.abs(r))) if r.size and np.isfinite(r).all() else 1.0
        good, stats, msg = compare(spec.name, outputs[spec.name], ref[spec.name], rtol, atol)
        for k in agg:
            agg[k] = max(agg[k], stats.get(k, 0.0))
        if not good:
            ok = False
            msgs.append(msg)
    return ok, agg, msgs


_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _same_bytes(a: np.ndarray, b: np.ndarray) -> bool:
    """a.tobytes() == b.tobytes(), without the copies when a and b have one shape and dtype (any layout): then
    the C-order bytes are equal when every element is bitwise equal (NaN payloads and -0.0 included)."""
    u = _UINT.get(a.dtype.itemsize)
    if a.shape == b.shape and a.dtype == b.dtype and not a.dtype.hasobject and u is not None:
        return bool(np.array_equal(a.view(u), b.view(u)))
    return a.tobytes() == b.tobytes()


def _bytes_of(a: np.ndarray) -> np.ndarray:
    """a's C-order bytes as a uint8 array (a.view(np.uint8) needs a contiguous last axis)."""
    return np.ascontiguousarray(a).reshape(-1).view(np.uint8)


def check_inputs(pristine: dict, current: dict, aliased: set) -> list[str]:
    msgs = []
    for name, before in pristine.items():
        if name in aliased:
            continue
        after = np.asarray(current[name])
        if not _same_bytes(after, np.asarray(before)):
            n = int((_bytes_of(after) != _bytes_of(before)).sum()) if after.shape == before.shape else -1
            msgs.append(f"input {name!r} was modified by the kernel ({n} bytes differ) but no output declares "
                        f"it in-place")
    return msgs


def show(x) -> str:
    """One element as a message shows it (a Python scalar's repr)."""
    try:
        return repr(x.item())
    except (AttributeError, ValueError):
        return repr(x)
