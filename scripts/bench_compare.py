"""Micro-benchmark of farm.validate.compare (the output check the worker runs twice per GPU job) and
_check_inputs' bitwise comparison: the current code against the straightforward implementation it replaced
(kept in tests/farm/test_compare.py as the reference), best of --reps, on outputs that pass and on a poisoned
(never written, all NaN) output.

    .venv/bin/python scripts/bench_compare.py [--sizes 1024,4096] [--reps 3]
"""
import argparse
import importlib.util
import pathlib
import sys
import time

import numpy as np

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from farm import inputs as farm_inputs, validate  # noqa: E402


def _reference():
    spec = importlib.util.spec_from_file_location("test_compare", REPO / "tests/farm/test_compare.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.compare_reference


def best(fn, reps):
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        out = fn()
        ts.append(time.perf_counter() - t)
    return min(ts), out


def old_check_inputs(pristine, current):
    return [k for k, v in pristine.items() if np.asarray(current[k]).tobytes() != v.tobytes()]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1024,4096")
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    ref = _reference()
    rng = np.random.default_rng(0)
    print(f"{'case':34s} {'before_s':>9s} {'after_s':>9s} {'speedup':>8s}  verdict")
    for n in (int(s) for s in args.sizes.split(",")):
        w = rng.standard_normal((n, n))
        wi = rng.integers(-1000, 1000, size=(n, n))
        cases = [("float16", w.astype(np.float16), w, 1e-2, 1e-2),
                 ("float32", w.astype(np.float32), w, 1e-5, 1e-6),
                 ("bfloat16", w.astype(farm_inputs.np_dtype("bfloat16")), w, 1.6e-2, 1e-2),
                 ("int32 vs int64 ref", wi.astype(np.int32), wi, 0, 0),
                 ("float16 poisoned (all NaN)", np.full((n, n), np.nan, np.float16), w, 1e-2, 1e-2)]
        for label, g, want, rtol, atol in cases:
            t_old, r_old = best(lambda: ref("o", g, want, rtol, atol), args.reps)
            t_new, r_new = best(lambda: validate.compare("o", g, want, rtol, atol), args.reps)
            assert r_new == r_old, (r_new, r_old)
            print(f"{f'{n}x{n} {label}':34s} {t_old:9.4f} {t_new:9.4f} {t_old / t_new:7.1f}x  "
                  f"{'ok' if r_new[0] else 'mismatch'} n_bad={r_new[1]['n_bad']}")
        a, b = w.astype(np.float16), np.ascontiguousarray(w.T, np.float16)  # C order, as make_inputs gives
        pristine, current = {"a": a, "b": b}, {"a": a.copy(), "b": b.copy()}
        t_old, r_old = best(lambda: old_check_inputs(pristine, current), args.reps)
        t_new, r_new = best(lambda: validate.check_inputs(pristine, current, set()), args.reps)
        assert r_old == [] and r_new == []
        print(f"{f'{n}x{n} _check_inputs 2 x float16':34s} {t_old:9.4f} {t_new:9.4f} {t_old / t_new:7.1f}x")


if __name__ == "__main__":
    main()
