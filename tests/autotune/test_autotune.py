"""Autotune semantics in the interpreter: chosen, reused per key, re-tuned for a new key, reset_to_zero,
restore_value, pruning, heuristics, grids that see the chosen meta."""
import numpy as np
import pytest

import compiler
import compiler.language as tl
from compiler import Config

from .kernels import add_kernel, atomic_sum_kernel, inc_kernel

CONFIGS = [Config({"BLOCK": b}, num_warps=w) for b in (32, 64, 128) for w in (1, 2)]


class Timer:
    """Injected do_bench: runs the trial once and returns a made-up time from a table (default 10 ms)."""

    def __init__(self, table=None, default=10.0):
        self.table, self.default, self.seen = table or {}, default, []

    def __call__(self, fn):
        fn()
        cfg = self.current
        self.seen.append(cfg)
        return self.table.get(cfg, self.default)


def timed(at, timer):
    """Let the timer know which config each trial belongs to (wrap the autotuner's trial runner)."""
    orig = at.fn.run

    def run(*args, grid, **kw):
        timer.current = Config({k: v for k, v in kw.items() if k not in ("num_warps", "num_stages")},
                               num_warps=kw["num_warps"], num_stages=kw["num_stages"])
        return orig(*args, grid=grid, **kw)

    at.fn = type("Wrapped", (), {"run": staticmethod(run), "warmup": at.fn.warmup, "fn": at.fn,
                                 "__getitem__": lambda self, g: lambda *a, **k: run(*a, grid=g, **k)})()
    return at


def arrays(n, dtype=np.float32):
    rng = np.random.default_rng(n)
    return rng.random(n).astype(dtype), rng.random(n).astype(dtype), np.zeros(n, dtype)


def grid_for(n):
    return lambda meta: (compiler.cdiv(n, meta["BLOCK"]),)


def test_chosen_reused_and_retuned_per_key():
    t = Timer({CONFIGS[3]: 1.0})  # BLOCK 64, 2 warps is the fastest
    at = compiler.autotune(CONFIGS, key=["N"], do_bench=t)(add_kernel)
    at = timed(at, t)
    x, y, z = arrays(1000)
    at[grid_for(1000)](x, y, z, 1000)
    assert at.best_config == CONFIGS[3] and len(t.seen) == 6 and at.tune_count == 1
    assert np.allclose(z, x + y)
    # same key: no benchmarking, through the generated launcher
    z[:] = 0
    at[grid_for(1000)](x, y, z, 1000)
    assert len(t.seen) == 6 and np.allclose(z, x + y) and at.tune_count == 1
    # a new key value: tuned again
    x2, y2, z2 = arrays(3000)
    t.table = {CONFIGS[5]: 0.5}
    at[grid_for(3000)](x2, y2, z2, 3000)
    assert len(t.seen) == 12 and at.best_config == CONFIGS[5] and at.tune_count == 2
    assert np.allclose(z2, x2 + y2)
    # the first key still uses its own winner
    at[grid_for(1000)](x, y, z, 1000)
    assert at.best_config == CONFIGS[3] and len(t.seen) == 12
    # another dtype with the same N is another key (as in Triton: dtypes are part of the key)
    xd, yd, zd = arrays(1000, np.float64)
    at[grid_for(1000)](xd, yd, zd, 1000)
    assert at.tune_count == 3 and np.allclose(zd, xd + yd)
    assert len(at.cache) == 3 and at.configs == CONFIGS


def test_interpreter_rule_first_config_that_runs_wins():
    bad = Config({"BLOCK": 100})  # not a power of two: arange refuses it (CompilationError)
    at = compiler.autotune([bad] + CONFIGS[2:4], key=["N"])(add_kernel)
    x, y, z = arrays(500)
    at[grid_for(500)](x, y, z, 500)
    assert at.best_config == CONFIGS[2]
    assert at.configs_timings[bad] == float("inf") and isinstance(at.configs_errors[bad], compiler.CompilationError)
    assert at.configs_timings[CONFIGS[2]] == 1.0 and at.configs_timings[CONFIGS[3]] == 2.0
    assert np.allclose(z, x + y)


def test_all_configs_fail_is_an_error():
    at = compiler.autotune([Config({"BLOCK": 100}), Config({"BLOCK": 48})], key=["N"])(add_kernel)
    x, y, z = arrays(64)
    with pytest.raises(RuntimeError, match="no config compiled and ran"):
        at[grid_for(64)](x, y, z, 64)


def test_reset_to_zero_honoured():
    x = np.arange(1, 301, dtype=np.float32)
    out = np.zeros(1, np.float32)
    at = compiler.autotune(CONFIGS, key=["N"], reset_to_zero=["Out"])(atomic_sum_kernel)
    at[grid_for(300)](x, out, 300)
    assert out[0] == x.sum()  # 6 trials and the real call, each from zero
    # without reset_to_zero every trial adds on top (the failure mode the option exists for)
    out2 = np.zeros(1, np.float32)
    at2 = compiler.autotune(CONFIGS, key=["N"])(atomic_sum_kernel)
    at2[grid_for(300)](x, out2, 300)
    assert out2[0] == 7 * x.sum()
    # later calls: no trials, the user zeroes as usual
    out[:] = 0
    at[grid_for(300)](x, out, 300)
    assert out[0] == x.sum()


def test_restore_value_honoured():
    x0 = np.arange(200, dtype=np.float32)
    x = x0.copy()
    at = compiler.autotune(CONFIGS, key=["N"], restore_value=["X"])(inc_kernel)
    at[grid_for(200)](x, 200)
    assert np.array_equal(x, x0 + 1)  # 6 trials undone, then the user's call
    x1 = x0.copy()
    at2 = compiler.autotune(CONFIGS, key=["N"])(inc_kernel)
    at2[grid_for(200)](x1, 200)
    assert np.array_equal(x1, x0 + 7)


def test_prune_honoured():
    t = Timer()
    seen_prune = []

    def early(configs, named, **kw):
        seen_prune.append(named["N"])
        return [c for c in configs if c.kwargs["BLOCK"] <= named["N"] // 8]

    def perf_model(**kw):
        return kw["num_warps"]  # fewer warps "look" faster

    at = timed(compiler.autotune(CONFIGS, key=["N"], do_bench=t,
                                 prune_configs_by={"early_config_prune": early, "perf_model": perf_model,
                                                   "top_k": 2})(add_kernel), t)
    x, y, z = arrays(512)
    at[grid_for(512)](x, y, z, 512)
    assert seen_prune == [512]
    # early prune keeps BLOCK <= 64 (4 configs); perf model keeps the 2 with 1 warp
    assert sorted(t.seen, key=repr) == [Config({"BLOCK": 32}, num_warps=1), Config({"BLOCK": 64}, num_warps=1)]
    assert np.allclose(z, x + y)
    assert set(at.configs_timings) == set(t.seen)
    # a float top_k is a fraction
    at3 = compiler.autotune(CONFIGS, key=["N"], prune_configs_by={"perf_model": perf_model, "top_k": 0.5},
                            do_bench=lambda fn: (fn(), 1.0)[1])(add_kernel)
    at3[grid_for(512)](x, y, z, 512)
    assert len(at3.configs_timings) == 3


def test_single_config_runs_without_benchmarking():
    calls = []
    at = compiler.autotune([CONFIGS[0]], key=["N"], do_bench=lambda fn: calls.append(1) or 1.0)(add_kernel)
    x, y, z = arrays(100)
    at[grid_for(100)](x, y, z, 100)
    assert calls == [] and at.best_config == CONFIGS[0] and np.allclose(z, x + y)


def test_grid_sees_chosen_meta_and_conflicts_raise():
    metas = []
    at = compiler.autotune(CONFIGS[:2], key=["N"])(add_kernel)
    x, y, z = arrays(100)

    def grid(meta):
        metas.append(dict(meta))
        return (compiler.cdiv(100, meta["BLOCK"]),)

    at[grid](x, y, z, 100)
    at[grid](x, y, z, 100)  # the generated launcher
    assert metas[-1]["BLOCK"] == 32 and metas[-1]["num_warps"] == 1 and metas[-1]["N"] == 100
    with pytest.raises(ValueError, match="Conflicting meta-parameters: BLOCK"):
        at[grid](x, y, z, 100, BLOCK=64)
    with pytest.raises(ValueError, match="not a parameter"):
        compiler.autotune(CONFIGS, key=["M"])(add_kernel)


def test_keyword_arguments_and_pre_hook():
    hooked = []
    cfgs = [Config({"BLOCK": 32}, pre_hook=lambda a: hooked.append(a["BLOCK"])), Config({"BLOCK": 64})]
    at = compiler.autotune(cfgs, key=["N"])(add_kernel)
    x, y, z = arrays(100)
    at[grid_for(100)](x, y, Z=z, N=100)
    assert np.allclose(z, x + y) and at.best_config == cfgs[0]
    assert hooked == [32, 32]  # its trial and the launch
    at[grid_for(100)](x, y, z, 100)  # same key positionally: no re-tune, pre_hook runs again
    assert at.tune_count == 1 and hooked == [32, 32, 32]


def test_heuristics_alone_and_under_autotune():
    hk = compiler.heuristics({"BLOCK": lambda a: compiler.next_power_of_2(a["N"])})(add_kernel)
    x, y, z = arrays(77)
    hk[(1,)](x, y, z, 77)
    assert np.allclose(z, x + y)
    # autotune over num_warps only; BLOCK comes from a heuristic that sees the config's meta
    seen = []

    def block(a):
        seen.append(a["num_warps"])
        return 32 * a["num_warps"]

    at = compiler.autotune([Config({}, num_warps=1), Config({}, num_warps=4)], key=["N"])(
        compiler.heuristics({"BLOCK": block})(add_kernel))
    x, y, z = arrays(1000)
    at[lambda m: (compiler.cdiv(1000, 32 * m["num_warps"]),)](x, y, z, 1000)
    assert np.allclose(z, x + y) and 1 in seen and 4 in seen
    assert at.best_config.num_warps == 1


def test_launch_after_tuning_goes_straight_to_the_jit_launcher(monkeypatch):
    at = compiler.autotune(CONFIGS[:2], key=["N"])(add_kernel)
    x, y, z = arrays(64)
    at[grid_for(64)](x, y, z, 64)
    runs = []
    monkeypatch.setattr(type(at), "run", lambda self, *a, **k: runs.append(1))
    at[grid_for(64)](x, y, z, 64)
    assert runs == []  # the known key never went through Autotuner.run
    at[grid_for(65)](x, y, z, 65)
    assert runs == [1]  # a new key does


def test_user_constexpr_after_a_tuned_one():
    from .kernels import scale_kernel

    at = compiler.autotune(CONFIGS[:3], key=["N"])(scale_kernel)
    x, _, z = arrays(300)
    at[grid_for(300)](x, z, 300, SCALE=3)
    assert np.allclose(z, 3 * x)
    z[:] = 0
    at[grid_for(300)](x, z, 300, SCALE=2)  # the generated launcher passes SCALE by keyword
    assert np.allclose(z, 2 * x) and at.tune_count == 1
    z[:] = 0
    at[grid_for(300)](x, z, N=300, SCALE=5)
    assert np.allclose(z, 5 * x) and at.tune_count == 1


# --- an autotuner over heuristics: the grid reads a heuristic's value ------------------------------------------------

@compiler.autotune(configs=[compiler.Config({"SCALE": 1.0}), compiler.Config({"SCALE": 2.0})], key=["N"],
                   do_bench=lambda fn, quantiles=None: (fn(), 1.0)[1])
@compiler.heuristics({"BLOCK": lambda args: compiler.next_power_of_2(args["N"]) // 2})
@compiler.jit
def _heuristic_block_kernel(X, N, SCALE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(X + offs, offs.to(tl.float32) * SCALE, mask=offs < N)


def test_grid_reads_a_value_heuristics_add():
    """As in Triton, a grid lambda sees the values an @heuristics below the autotuner computes (the grid is
    evaluated by the JIT function, after every wrapper added its own): META["BLOCK"] was a KeyError."""
    for n in (10, 100):
        x = np.full(n, -1.0, np.float32)
        _heuristic_block_kernel[lambda META: (compiler.cdiv(n, META["BLOCK"]),)](x, n)
        scale = _heuristic_block_kernel.best_config.kwargs["SCALE"]
        np.testing.assert_array_equal(x, np.arange(n, dtype=np.float32) * scale)
