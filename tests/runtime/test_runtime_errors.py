"""Import without a driver, CudaError messages, gpu_available's answers, and errors when there is no GPU."""

from __future__ import annotations

import pickle
import subprocess
import sys
import types

import pytest

from compiler.runtime import CudaError, cuda as rt_cuda


def test_import_does_not_load_the_driver():
    code = ("import sys, compiler.runtime as r; "
            "print('cuda.bindings.driver' in sys.modules, 'cuda.cuda' in sys.modules, 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False", "False"]


def test_check_returns_values():
    from cuda.bindings import driver as d

    ok = d.CUresult.CUDA_SUCCESS
    assert rt_cuda.check((ok,)) is None
    assert rt_cuda.check((ok, 42)) == 42
    assert rt_cuda.check((ok, 1, 2)) == (1, 2)
    assert rt_cuda.check(ok) is None


def test_check_raises_cuda_error_with_name_and_call():
    from cuda.bindings import driver as d

    with pytest.raises(CudaError) as ei:
        rt_cuda.check((d.CUresult.CUDA_ERROR_OUT_OF_MEMORY, None), "cuMemAlloc(1099511627776)")
    e = ei.value
    assert e.code == 2 and e.name == "CUDA_ERROR_OUT_OF_MEMORY"
    assert "cuMemAlloc(1099511627776)" in str(e)
    assert "CUDA_ERROR_OUT_OF_MEMORY" in str(e) and "out of memory" in str(e)


def test_cuda_error_illegal_address_message_and_pickle():
    from cuda.bindings import driver as d

    with pytest.raises(CudaError) as ei:
        rt_cuda.check((d.CUresult.CUDA_ERROR_ILLEGAL_ADDRESS,), "cuCtxSynchronize()")
    e2 = pickle.loads(pickle.dumps(ei.value))
    assert isinstance(e2, CudaError)
    assert (e2.call, e2.code, e2.name) == ("cuCtxSynchronize()", 700, "CUDA_ERROR_ILLEGAL_ADDRESS")
    assert str(e2) == str(ei.value)
    assert "illegal memory access" in str(e2)


def test_unknown_code_still_readable():
    e = CudaError("cuFoo()", 12345)
    assert "cuFoo()" in str(e) and "12345" in str(e)


class _BrokenDriver(types.SimpleNamespace):
    """A driver module whose loading fails the way cuda.pathfinder fails without libcuda."""

    def cuInit(self, flags):
        raise RuntimeError('"cuda" is an NVIDIA driver library and can only be found via system search')


@pytest.fixture
def broken_driver(monkeypatch):
    rt_cuda._reset_for_tests()
    monkeypatch.setattr(rt_cuda, "_driver_mod", _BrokenDriver())
    yield
    rt_cuda._reset_for_tests()


def test_gpu_available_without_driver_says_why(broken_driver):
    ok, reason = rt_cuda.gpu_available()
    assert ok is False
    assert "could not be loaded" in reason and "system search" in reason


def test_allocation_without_driver_raises_cuda_error(broken_driver):
    from compiler.runtime import DeviceArray

    with pytest.raises(CudaError) as ei:
        DeviceArray.empty(16, "float32")
    assert ei.value.call == "cuInit(0)" and ei.value.name == "CUDA_ERROR_NOT_INITIALIZED"
    # the failure is remembered: the second attempt says the same, without retrying the loader
    with pytest.raises(CudaError):
        DeviceArray.empty(16, "float32")


def test_gpu_available_no_devices(monkeypatch):
    from cuda.bindings import driver as d

    class NoDevices(types.SimpleNamespace):
        CUresult = d.CUresult

        def cuInit(self, flags):
            return (d.CUresult.CUDA_SUCCESS,)

        def cuDeviceGetCount(self):
            return (d.CUresult.CUDA_SUCCESS, 0)

    rt_cuda._reset_for_tests()
    monkeypatch.setattr(rt_cuda, "_driver_mod", NoDevices())
    try:
        assert rt_cuda.gpu_available() == (False, "the CUDA driver reports no devices")
    finally:
        rt_cuda._reset_for_tests()


def test_gpu_available_never_raises():
    ok, reason = rt_cuda.gpu_available()
    assert isinstance(ok, bool) and isinstance(reason, str) and reason


def test_real_no_driver_machine():
    """On a machine with no libcuda (CI), the real loader failure becomes (False, reason)."""
    code = ("import compiler.runtime as r; ok, why = r.gpu_available(); print(ok); print(why)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    ok = out.splitlines()[0] == "True"
    if ok:
        pytest.skip("this machine has a working CUDA driver")
    assert "no usable CUDA driver/GPU" in out
