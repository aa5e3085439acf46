"""The worker's per-process cache of (pristine inputs, reference outputs): one make_inputs and one reference
per (workload, params, seed), whatever the meta-parameters; bounded in bytes; never handed to a kernel."""
import dataclasses
import os
import pathlib

import numpy as np
import pytest

from farm import inputs as farm_inputs, loader, worker
from farm.jobs import Job, RunOptions

from farm_testing import FAKES

VEC = f"{FAKES}::fake_vec"
INPLACE = f"{FAKES}::fake_inplace"


@pytest.fixture(autouse=True)
def fresh_cache(monkeypatch):
    monkeypatch.delenv(farm_inputs.CACHE_ENV, raising=False)
    farm_inputs.clear_input_cache()
    yield
    farm_inputs.clear_input_cache()


@pytest.fixture
def counted(monkeypatch):
    """Counting copies of the fake workloads, loaded under their usual refs; returns the call counts."""
    calls = {"make_inputs": 0, "reference": 0}
    real = worker.load_workload
    made = {}

    def counting(ref):
        if ref not in made:
            wl = real(ref)

            def make_inputs(params, rng, _f=wl.make_inputs):
                calls["make_inputs"] += 1
                return _f(params, rng)

            def reference(inputs, params, _f=wl.reference):
                calls["reference"] += 1
                return _f(inputs, params)

            made[ref] = dataclasses.replace(wl, make_inputs=make_inputs, reference=reference)
            # Compile from stand-ins, as the bundled workloads do (their input_specs): the counts are validation's.
            made[ref].standin_arrays = lambda params: {"x": np.empty(1, np.float32), "y": np.empty(1, np.float32),
                                                       "out": np.empty(1, np.float32)}
        return made[ref]

    monkeypatch.setattr(worker, "load_workload", counting)
    return calls


def _job(ref=VEC, n=100, mode="ok", block=128, key=None, seed=0):
    name = ref.rpartition("::")[2]
    meta = {} if ref == INPLACE else {"mode": mode, "BLOCK": block}
    key = key or f"{abs(hash((ref, n, mode, block, seed))):064x}"[-64:]
    return Job(key=key, idx=0, workload=ref, name=name, params={"N": n, "dtype": "float32"}, meta=meta, seed=seed)


def _made(ref, params, job):
    """Inputs made afresh for `job` by the (uncounted) workload."""
    return loader.load_workload(ref).make_inputs(params, farm_inputs.input_rng(job))


def _run(job):
    return worker.run_job(job, RunOptions())


def test_candidates_of_a_shape_share_one_make_inputs_and_reference(counted):
    first = _run(_job(block=128))
    assert first.status == "validated", first.error
    assert first.artifacts["inputs_cached"] is False and first.artifacts["inputs_s"] >= 0
    for block in (256, 512, 1024):
        r = _run(_job(block=block))
        assert r.status == "validated", r.error
        assert r.artifacts["inputs_cached"] is True
        assert r.artifacts["inputs_make_s"] == pytest.approx(first.artifacts["inputs_make_s"])
        assert r.validate_s is not None and r.validate_s >= r.artifacts["inputs_s"]
    assert counted == {"make_inputs": 1, "reference": 1}
    assert farm_inputs.input_cache_stats()["hits"] == 3 and farm_inputs.input_cache_stats()["misses"] == 1
    # A hit gives the very arrays made on the miss (read-only), equal to freshly made, seeded inputs.
    wl = worker.load_workload(VEC)
    inputs, ref, fresh, hit, _ = farm_inputs.inputs_and_reference(wl, _job(block=64), {"N": 100, "dtype": "float32"})
    assert fresh is None and hit
    again = _made(VEC, {"N": 100, "dtype": "float32"}, _job(block=2))
    for k in ("x", "y"):
        assert np.array_equal(inputs[k], again[k]) and not inputs[k].flags.writeable
    assert not ref["out"].flags.writeable
    np.testing.assert_array_equal(ref["out"], again["x"].astype(np.float64) + 2 * again["y"].astype(np.float64))
    # Other params or another run seed: another entry.
    _run(_job(n=200))
    _run(_job(seed=7))
    assert counted == {"make_inputs": 3, "reference": 3}


def test_one_file_loaded_twice_shares_an_entry_and_an_edited_file_does_not(tmp_path):
    """A sweep under two compilers loads the workload file once per compiler (two objects): the jobs of a shape
    still make their inputs and reference once. Keyed by the file's content: an edited file is made again."""
    src = tmp_path / "fakes.py"
    src.write_text(pathlib.Path(FAKES).read_text())
    ref, params = f"{src}::fake_vec", {"N": 100, "dtype": "float32"}
    loader.load_workload.cache_clear()
    first = loader.load_workload(ref)
    second = dataclasses.replace(first)  # the other compiler's load of the same file: another object
    a = farm_inputs.inputs_and_reference(first, _job(ref), params)
    b = farm_inputs.inputs_and_reference(second, _job(ref, block=256), params)
    assert a[3] is False and b[3] is True and b[0]["x"] is a[0]["x"]
    src.write_text(src.read_text() + "\n# edited\n")
    os.utime(src, ns=(1, 1))  # another mtime, whatever the clock's resolution
    c = farm_inputs.inputs_and_reference(dataclasses.replace(first), _job(ref), params)
    assert c[3] is False and c[0]["x"] is not a[0]["x"]
    loader.load_workload.cache_clear()


def test_byte_bound_evicts_least_recently_used(counted, monkeypatch):
    n = 20_000  # x, y float32 and a float64 reference: 320 kB an entry
    entry = n * 4 * 2 + n * 8
    monkeypatch.setenv(farm_inputs.CACHE_ENV, str(2.5 * entry / 2**20))  # room for two entries
    for size in (n, n + 1, n, n + 2):  # n+2 evicts n+1 (n was used more recently)
        assert _run(_job(n=size)).status == "validated"
    st = farm_inputs.input_cache_stats()
    assert st["entries"] == 2 and st["evictions"] == 1 and st["bytes"] <= st["limit_bytes"]
    assert counted["make_inputs"] == 3
    _run(_job(n=n))
    assert counted["make_inputs"] == 3  # still there
    _run(_job(n=n + 1))
    assert counted["make_inputs"] == 4  # was evicted: made again
    # An entry larger than the whole bound is used for its job but neither kept nor the cause of evictions.
    big = 3 * n
    before = counted["make_inputs"]
    assert _run(_job(n=big)).status == "validated"
    assert _run(_job(n=big, block=256)).status == "validated"
    assert counted["make_inputs"] == before + 2
    st = farm_inputs.input_cache_stats()
    assert st["entries"] == 2 and st["evictions"] == 2 and st["bytes"] <= st["limit_bytes"]
    _run(_job(n=n))
    assert counted["make_inputs"] == before + 2  # still cached


def test_zero_turns_the_cache_off(counted, monkeypatch):
    monkeypatch.setenv(farm_inputs.CACHE_ENV, "0")
    for block in (128, 256):
        r = _run(_job(block=block))
        assert r.status == "validated" and r.artifacts["inputs_cached"] is False
    assert counted == {"make_inputs": 2, "reference": 2} and len(farm_inputs.INPUT_CACHE) == 0


def test_bad_cache_setting_is_reported(monkeypatch):
    monkeypatch.setenv(farm_inputs.CACHE_ENV, "lots")
    r = _run(_job())
    assert r.status == "error" and farm_inputs.CACHE_ENV in r.error


def test_inplace_workload_validates_on_every_cached_job(counted):
    wl = worker.load_workload(INPLACE)
    for i in range(4):
        r = _run(_job(INPLACE, n=64, key=f"{i:064x}"))
        assert r.status == "validated", r.error
        assert r.artifacts["inputs_cached"] is (i > 0)
    assert counted == {"make_inputs": 1, "reference": 1}
    # The kernel's x += 1 went to copies: the cached x is still what make_inputs made.
    inputs, ref, _, _, _ = farm_inputs.inputs_and_reference(wl, _job(INPLACE, n=64), {"N": 64, "dtype": "float32"})
    made = _made(INPLACE, {"N": 64, "dtype": "float32"}, _job(INPLACE, n=64))
    np.testing.assert_array_equal(inputs["x"], made["x"])
    np.testing.assert_allclose(ref["x"], made["x"].astype(np.float64) + 1)


def test_kernel_writing_its_inputs_is_caught_on_a_hit_and_does_not_corrupt_the_cache(counted):
    assert _run(_job(mode="ok")).status == "validated"
    bad = _run(_job(mode="modify"))  # x[0] = 42 on a cache hit
    assert bad.artifacts["inputs_cached"] is True
    assert bad.status == "mismatch" and "input 'x' was modified" in bad.error
    again = _run(_job(mode="ok", block=256))
    assert again.status == "validated" and again.artifacts["inputs_cached"] is True, again.error
    wl = worker.load_workload(VEC)
    inputs = farm_inputs.inputs_and_reference(wl, _job(), {"N": 100, "dtype": "float32"})[0]
    made = _made(VEC, {"N": 100, "dtype": "float32"}, _job())
    assert inputs["x"][0] != 42 and np.array_equal(inputs["x"], made["x"])
    assert counted["make_inputs"] == 1


def test_gpu_path_uploads_cached_arrays_without_host_copies(counted, monkeypatch):
    """The GPU path with stand-ins for device arrays: uploads read the cached arrays directly (no host copy),
    the kernel only sees the uploads, and a kernel writing its inputs is still caught."""
    uploads = []

    def to_device(a):
        uploads.append(a)
        return np.array(a, copy=True)  # a "device" copy the kernel may write

    def bench(fn, opts):
        for _ in range(3):
            fn()
        return {"median_ms": 1.0, "p10_ms": 0.9, "p90_ms": 1.1, "n": 3, "samples": [0.9, 1.0, 1.1]}

    monkeypatch.setattr(worker, "_to_device", to_device)
    monkeypatch.setattr(worker, "_device_empty", lambda shape, dtype: np.empty(shape, dtype))
    monkeypatch.setattr(worker, "_do_bench", bench)
    monkeypatch.setattr(worker, "_sync", lambda: None)
    monkeypatch.setattr(worker, "gpu_info", lambda: {"name": "stand-in GPU"})
    wl = worker.load_workload(VEC)
    params = {"N": 100, "dtype": "float32"}
    seen = []
    real_launch = wl.launch

    def launch(arrays, params, meta):
        seen.append(dict(arrays))
        real_launch(arrays, params, meta)

    wl.launch = launch  # the counting copy is this test's own object
    results = []
    for mode in ("ok", "ok", "modify", "ok"):
        job = _job(mode=mode)
        res = worker.Result(key=job.key, status="compiled")
        worker._validate_and_time(wl, job, RunOptions(target="H200"), res, dict(job.params), dict(job.meta), True)
        results.append(res)
    assert [r.status for r in results] == ["ok", "ok", "mismatch", "ok"], [r.error for r in results]
    assert "input 'x' was modified" in results[2].error
    assert counted == {"make_inputs": 1, "reference": 1}
    cached, _, _, _, _ = farm_inputs.inputs_and_reference(wl, _job(), params)
    # Every upload after the first job read the cached arrays themselves; no kernel ever got one of them.
    assert all(any(u is c for c in cached.values()) for u in uploads)
    assert not any(a is c for arrays in seen for a in arrays.values() for c in cached.values())
    made = _made(VEC, params, _job())
    assert np.array_equal(cached["x"], made["x"])


def test_farm_tune_reuses_inputs_across_candidates_and_rounds():
    """`farm tune` runs candidates through run_job: one make_inputs + reference per shape for all rounds (the
    rounds' job keys differ: rep_ms is part of them)."""
    pytest.importorskip("workloads")
    try:
        from farm.executor.local import LocalExecutor
        from farm.tune import TuneConfig, tune
        cfg = TuneConfig.model_validate({
            "name": "cache", "search": {"eta": 2, "min_rep_ms": 1, "max_rep_ms": 4, "warmup_ms": 1},
            "workloads": [{"workload": "vector_add", "key": ["N"], "params": {"N": [1000, 4096], "dtype": ["float32"]},
                           "space": {"BLOCK": [256, 512, 1024, 2048], "num_warps": [4]}}]})
        rep = tune(cfg, LocalExecutor(), None, timer=lambda params, meta, rep_ms: 1.0 / meta["BLOCK"])
    except Exception as e:  # the compiler or a workload mid-change (others edit compiler/)
        if "compiler" in type(e).__module__ or "workloads" in str(e):
            pytest.skip(f"vector_add does not tune here: {type(e).__name__}: {e}")
        raise
    jobs = sum(rd["jobs"] for rd in rep.rounds)
    assert [rd["jobs"] for rd in rep.rounds] == [8, 4] and not rep.errors
    st = farm_inputs.input_cache_stats()
    assert st["misses"] == 2 and st["hits"] == jobs - 2, st  # two shapes, every other job a hit
