"""Checks that need a CUDA driver: run on the real GPU (test_runtime_gpu.py, scripts/gpu_runtime_check.py)
and under the fake libcuda on machines without one (test_runtime_fake_driver.py). Each check raises
AssertionError on failure and returns a short note."""

from __future__ import annotations

import threading

import numpy as np

from compiler.runtime import CudaError, DeviceArray, Launcher, do_bench, synchronize
from compiler.runtime.cuda import device_properties, driver_version
from compiler.runtime.launch import Module, find_ptxas, ptxas_compile
from runtime_kernels import ADD_ONE_PTX, PARAMS4_PTX


def check_device_properties() -> str:
    p = device_properties()
    assert p.name and p.sm_count > 0 and p.l2_bytes > 0 and p.cc[0] >= 7, p
    assert p.uuid.startswith("GPU-") and len(p.uuid) == 40, p.uuid
    assert p.max_shared_per_block_optin >= p.max_shared_per_block >= 48 * 1024
    assert driver_version() >= 11000
    return f"{p.name}, {p.sm_count} SMs, {p.arch}, L2 {p.l2_bytes >> 20} MiB, smem optin {p.max_shared_per_block_optin}"


def check_device_array_round_trip() -> str:
    rng = np.random.default_rng(0)
    dts = ["float32", "float16", "float64", "int8", "int32", "int64", "uint8", "bool"]
    try:
        import ml_dtypes  # noqa: F401
        dts.append("bfloat16")
    except ImportError:
        pass
    for dt in dts:
        a = (rng.standard_normal((7, 33)) * 50).astype(dt)
        d = DeviceArray.from_numpy(a)
        assert d.shape == (7, 33) and d.dtype == a.dtype and d.nbytes == a.nbytes
        assert d.data_ptr() % 256 == 0
        assert np.array_equal(d.numpy().view(np.uint8), a.view(np.uint8)), dt
        cai = d.__cuda_array_interface__
        assert cai["version"] == 3 and cai["data"][0] == d.data_ptr() and cai["shape"] == (7, 33)
    f = DeviceArray.empty(1000, np.float32).poison()
    assert np.isnan(f.numpy()).all()
    f64 = DeviceArray.empty(10, np.float64).poison()
    assert np.isnan(f64.numpy()).all()
    i = DeviceArray.empty(1000, np.int32).fill(-7)
    assert (i.numpy() == -7).all()
    h = DeviceArray.empty(9, np.float16).fill(1.5)
    assert (h.numpy() == 1.5).all()
    z = DeviceArray.zeros((3, 4), np.int64)
    assert (z.numpy() == 0).all()
    e = DeviceArray.empty((0, 5), np.float32)
    assert e.numpy().shape == (0, 5)
    c = DeviceArray.empty(1000, np.int32).copy_(i)
    assert (c.numpy() == -7).all()
    c.copy_from_numpy(np.arange(1000))
    assert (c.numpy() == np.arange(1000)).all()
    try:
        DeviceArray.empty(1 << 50, np.uint8)
        raise AssertionError("a 1 PiB allocation succeeded")
    except CudaError as err:
        assert err.name == "CUDA_ERROR_OUT_OF_MEMORY" and "cuMemAlloc" in str(err), err
        oom = err.name
    return f"{len(dts)} dtypes round-trip; fill/poison/zeros/copy ok; OOM -> {oom}"


def _run_add_one(launcher, n: int = 1000, pad: int = 64) -> None:
    x = np.arange(n, dtype=np.int32) * 3 - 500
    dx = DeviceArray.from_numpy(x)
    dy = DeviceArray.empty(n + pad, np.int32).fill_bytes(0xAA)
    block = launcher.block
    launcher(((n + block - 1) // block,), 0, [dx.data_ptr(), dy.data_ptr(), n])
    synchronize()
    y = dy.numpy()
    assert np.array_equal(y[:n], x + 1), (y[:8], x[:8] + 1)
    assert (y[n:].view(np.uint32) == 0xAAAAAAAA).all(), "kernel wrote past n"


def check_add_one_ptx() -> str:
    launcher = Launcher(ADD_ONE_PTX, "add_one", ["ptr", "ptr", "int32"], 4, 0)
    _run_add_one(launcher)
    _run_add_one(launcher, n=1, pad=3)
    return "hand-written PTX (driver JIT) add_one correct, nothing written past n"


def check_add_one_cubin() -> str:
    if find_ptxas() is None:
        return "skipped: no ptxas"
    cubin = ptxas_compile(ADD_ONE_PTX, device_properties().arch)
    launcher = Launcher(cubin, "add_one", ["ptr", "ptr", "int32"], 8, 0)
    _run_add_one(launcher, n=4097)
    return f"ptxas cubin ({len(cubin)} B) add_one correct with 8 warps"


def check_large_dynamic_shared() -> str:
    # Above 48 KiB the launch fails unless MAX_DYNAMIC_SHARED_SIZE_BYTES was raised first.
    smem = min(100 * 1024, device_properties().max_shared_per_block_optin)
    launcher = Launcher(ADD_ONE_PTX, "add_one", ["ptr", "ptr", "int32"], 4, smem)
    _run_add_one(launcher)
    return f"launch with {smem} B dynamic shared memory ok"


def check_other_thread() -> str:
    launcher = Launcher(ADD_ONE_PTX, "add_one", ["ptr", "ptr", "int32"], 4, 0)
    errors = []

    def work():
        try:
            _run_add_one(launcher, n=300)
        except BaseException as e:  # reported below
            errors.append(e)

    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert not errors, errors
    return "launch + copies from a fresh thread ok (context made current there)"


def check_unknown_kernel_name() -> str:
    m = Module(ADD_ONE_PTX)
    try:
        m.get_function("nope")
        raise AssertionError("found a kernel that does not exist")
    except CudaError as e:
        assert e.name == "CUDA_ERROR_NOT_FOUND" and "nope" in str(e), e
    return "unknown kernel name -> CUDA_ERROR_NOT_FOUND"


def check_do_bench() -> str:
    launcher = Launcher(ADD_ONE_PTX, "add_one", ["ptr", "ptr", "int32"], 4, 0)
    n = 1 << 20
    dx = DeviceArray.zeros(n, np.int32)
    dy = DeviceArray.empty(n, np.int32)
    args = [dx.data_ptr(), dy.data_ptr(), n]
    grid = ((n + 127) // 128,)
    r = do_bench(lambda: launcher(grid, 0, args), warmup_ms=5, rep_ms=20, return_samples=True)
    assert r["n"] >= 1 and len(r["samples"]) == r["n"]
    assert 0 < r["p10_ms"] <= r["median_ms"] <= r["p90_ms"], r
    r2 = do_bench(lambda: launcher(grid, 0, args), warmup_ms=2, rep_ms=10, flush_l2=False)
    assert r2["median_ms"] > 0
    return (f"do_bench add_one 4 MiB: median {r['median_ms'] * 1e3:.1f} us (p10 {r['p10_ms'] * 1e3:.1f}, "
            f"p90 {r['p90_ms'] * 1e3:.1f}, n={r['n']}); without flush {r2['median_ms'] * 1e3:.1f} us")


def check_bad_pointer() -> str:
    """Run LAST or in its own process: an illegal address poisons the CUDA context for good."""
    launcher = Launcher(ADD_ONE_PTX, "add_one", ["ptr", "ptr", "int32"], 4, 0)
    dy = DeviceArray.empty(256, np.int32)
    launcher((2,), 0, [0x10, dy.data_ptr(), 256])
    try:
        synchronize()
        raise AssertionError("a kernel reading address 0x10 did not fault")
    except CudaError as e:
        assert e.name == "CUDA_ERROR_ILLEGAL_ADDRESS" and e.code == 700, e
        assert "illegal" in str(e)
        return f"bad pointer -> {e}"


ALL = [check_device_properties, check_device_array_round_trip, check_add_one_ptx, check_add_one_cubin,
       check_large_dynamic_shared, check_other_thread, check_unknown_kernel_name, check_do_bench]


def run_all() -> list[tuple[str, str]]:
    """Run every check except the bad-pointer one; returns (name, note) pairs."""
    return [(c.__name__, c()) for c in ALL]


PARAMS4 = PARAMS4_PTX
