import json
import numpy as np
import pytest

from farm import inputs as farm_inputs, machine, validate, worker
from farm.jobs import RunOptions

from farm_testing import FAKES


def _job(mode="ok", n=100, dtype="float32", name="fake_vec", **meta):
    from farm.jobs import Job
    return Job(key="ab" * 32, idx=0, workload=f"{FAKES}::{name}", name=name, params={"N": n, "dtype": dtype},
               meta={"mode": mode, **meta})


@pytest.mark.parametrize("mode,status,words", [
    ("ok", "validated", ""),
    ("wrong", "mismatch", "1/100 elements wrong"),
    ("unwritten", "mismatch", "50 NaN or unwritten"),
    ("nan", "mismatch", "1 NaN or unwritten"),
    ("modify", "mismatch", "input 'x' was modified"),
    ("raise", "error", "RuntimeError: kernel exploded"),
    ("compile_error", "compile_error", "fake.py:3:5"),
])
def test_modes(mode, status, words):
    res = worker.run_job(_job(mode), RunOptions())
    assert res.status == status, res.error
    assert words in (res.error or "")
    assert res.flops == 200 and res.bytes == 1200 and res.wall_s > 0
    if status == "validated":
        assert res.median_ms is None and any("timing needs a GPU" in n for n in res.notes)
        assert res.artifacts["ptx_bytes"] > 0 and res.compile_s is not None


def test_compile_only_does_not_run():
    res = worker.run_job(_job("raise"), RunOptions(compile_only=True, target="compile-only"))
    assert res.status == "compiled"


def test_inplace_declared_is_not_a_modification():
    from farm.jobs import Job
    job = Job(key="cd" * 32, idx=0, workload=f"{FAKES}::fake_inplace", name="fake_inplace",
              params={"N": 64, "dtype": "float32"}, meta={})
    res = worker.run_job(job, RunOptions())
    assert res.status == "validated", res.error


def test_inputs_are_seeded_from_seed_workload_and_params_not_the_key():
    wl = worker.load_workload(f"{FAKES}::fake_vec")

    def inputs(**change):
        job = _job().__class__(**{**_job().to_dict(), **change})
        return farm_inputs.host_arrays(wl, job, farm_inputs.input_rng(job))[1]["x"]

    a = inputs()
    assert np.array_equal(a, inputs()) and np.count_nonzero(a) == a.size  # seeded, random, never zeros
    # Another key or other meta-parameters (another candidate, tuning round or target): the same data, so
    # candidates are compared on the same inputs.
    assert np.array_equal(a, inputs(key="ef" * 32, meta={"mode": "ok", "BLOCK": 512}))
    # Another run seed, shape point or workload: other data.
    assert not np.array_equal(a, inputs(seed=1))
    assert not np.array_equal(a, inputs(params={"N": 100, "dtype": "float32", "alpha": 2}))
    assert not np.array_equal(a, inputs(name="other_vec"))
    # The params' order does not matter (canonical JSON).
    assert np.array_equal(inputs(params={"dtype": "float32", "N": 100}), a)


def test_compare_rules():
    w = np.array([1.0, 2.0, np.nan, np.inf])
    ok, stats, _ = validate.compare("o", np.array([1.0, 2.0, np.nan, np.inf], np.float32), w, 1e-5, 1e-6)
    assert ok  # NaN where the reference is NaN, and equal infinities, pass
    ok, _, msg = validate.compare("o", np.array([1.0, np.nan, 3.0, np.inf], np.float32), np.array([1.0, 2.0, 3.0, np.inf]),
                                1.0, 1.0)
    assert not ok and "NaN or unwritten" in msg  # NaN never passes, however loose the tolerance
    sentinel = np.iinfo(np.int32).min
    ok, _, msg = validate.compare("i", np.array([1, sentinel], np.int32), np.array([1, 2]), 0, 0)
    assert not ok and "1 NaN or unwritten" in msg
    ok, _, msg = validate.compare("o", np.zeros((2, 2)), np.zeros((2, 3)), 0, 0)
    assert not ok and "shape" in msg


def test_bfloat16_compare():
    import ml_dtypes
    w = np.linspace(-3, 3, 50)
    ok, _, _ = validate.compare("o", w.astype(ml_dtypes.bfloat16), w, 1.6e-2, 1e-2)
    assert ok
    assert np.isnan(validate.poison_value(farm_inputs.np_dtype("bfloat16")))


def test_poison_values():
    assert np.isnan(validate.poison_value(np.dtype("float16")))
    assert validate.poison_value(np.dtype("int8")) == -128
    assert validate.poison_value(np.dtype("uint16")) == 65535


def test_compiler_version_is_stable_and_hashes_sources():
    v = machine.compiler_version()
    assert v == machine.compiler_version() and "+" in v


def test_compile_job_with_an_arch_never_initializes_cuda(monkeypatch):
    """Compile tasks get their arch from the executor: a fresh compile process must not call into the CUDA
    driver (dozens of them doing cuInit at once made a GPU node's sweep start-up ~7 s)."""
    import compiler.compile as cc
    from compiler.runtime import cuda
    from farm.jobs import Job

    calls = []
    monkeypatch.setattr(cuda, "gpu_available", lambda *a, **k: calls.append(1) or (False, "probe"))
    monkeypatch.setenv("TILEFARM_ARCH", "sm_90")
    cc._device_arch.cache_clear()
    job = Job(key="cd" * 32, idx=0, workload="vector_add", name="vector_add",
              params={"N": 5000, "dtype": "float32"}, meta={"BLOCK": 256, "num_warps": 4})
    res = worker.compile_job(job)
    assert res.status == "compiled", res.error
    assert res.artifacts["ptx_bytes"] > 0
    assert not calls, "compile_job queried the GPU although TILEFARM_ARCH names the arch"


def test_ray_compile_tasks_receive_the_arch():
    """The executor hands its arch to every compile task, which builds for it."""
    import ray
    from farm.executor import ray as rx
    from farm.jobs import Job

    job = Job(key="ef" * 32, idx=0, workload="vector_add", name="vector_add",
              params={"N": 5000, "dtype": "float32"}, meta={"BLOCK": 256, "num_warps": 4})
    ex = rx.RayExecutor(num_cpus=1, num_gpus=0)
    try:
        ex._arch = "sm_80"
        bundle, (res, took) = ray.get(list(ex._compile([job])))  # a batch of one: its bundle, then its result
        assert took > 0
        assert res["status"] == "compiled", res.get("error")
        assert res["artifacts"]["arch"] == "sm_80"
        # the kernel itself comes back too (issue 19): its cache entry, ready to install on a GPU worker
        assert bundle["key"] == res["artifacts"]["kernel_key"]
        assert b"sm_80" in bundle["files"]["ptx"] and json.loads(bundle["files"]["metadata.json"])["arch"] == "sm_80"
    finally:
        ex.close()
