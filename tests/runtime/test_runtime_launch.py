"""Argument packing, grid handling, launch errors and pointer_of -- with a fake cuLaunchKernel, no GPU."""

from __future__ import annotations

import ctypes
import struct
import time

import numpy as np
import pytest

from compiler.runtime import CudaError, DeviceArray, Launcher, pointer_of
from compiler.runtime.launch import _convert_bf16, find_ptxas, ptxas_compile
from runtime_kernels import ADD_ONE_PTX, PARAMS4_PTX


class FakeLaunch:
    """Stands in for driver.cuLaunchKernel: records the call and reads the packed params back."""

    def __init__(self, kinds, result=0):
        self.kinds = kinds
        self.calls = []
        self.result = result

    def __call__(self, f, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        # Read each param through the void** array exactly as the driver would.
        arr = (ctypes.c_void_p * len(self.kinds)).from_address(params)
        vals = []
        for k, p in zip(self.kinds, arr):
            fmt = {"ptr": "Q", "int32": "i", "int64": "q", "float32": "f", "float64": "d", "int8": "b",
                   "int1": "?", "float16": "e", "bfloat16": "H", "uint32": "I"}[k]
            vals.append(struct.unpack("=" + fmt, ctypes.string_at(p, struct.calcsize(fmt)))[0])
        self.calls.append(dict(grid=(gx, gy, gz), block=(bx, by, bz), shared=shared, stream=stream, args=vals,
                               extra=extra))
        return (self.result,)


def make(kinds, num_warps=4, shared=0, result=0):
    launcher = Launcher(0x1234, kinds, num_warps, shared)  # a raw handle: no driver is touched
    fake = FakeLaunch(kinds, result)
    launcher._launch = fake
    return launcher, fake


def test_packs_values_into_prebuilt_slots():
    kinds = ["ptr", "ptr", "int32", "float32", "int64", "float64", "int8", "int1"]
    L, fake = make(kinds, num_warps=8, shared=1024)
    buf_addr, params_addr = ctypes.addressof(L._buf), L._params_addr
    args = [0x7F0000001000, 0x7F0000002000, -7, 1.5, 2**40, -2.25, -3, True]
    L((3, 2, 1), None, args)
    c = fake.calls[-1]
    assert c["args"] == args
    assert c["grid"] == (3, 2, 1) and c["block"] == (256, 1, 1) and c["shared"] == 1024
    assert c["extra"] == 0
    # the storage is reused: same addresses, new values
    L((1,), None, [1, 2, 3, 4.0, 5, 6.0, 7, False])
    assert (ctypes.addressof(L._buf), L._params_addr) == (buf_addr, params_addr)
    assert fake.calls[-1]["args"] == [1, 2, 3, 4.0, 5, 6.0, 7, False]
    assert L.values()[2] == 3


@pytest.mark.parametrize("grid,expect", [((5,), (5, 1, 1)), ((5, 6), (5, 6, 1)), ((5, 6, 7), (5, 6, 7)),
                                         (9, (9, 1, 1)), ([4, 2], (4, 2, 1)), (np.int64(3), (3, 1, 1))])
def test_grid_forms(grid, expect):
    L, fake = make(["int32"])
    L(grid, 0, [1])
    assert fake.calls[-1]["grid"] == expect
    assert fake.calls[-1]["stream"] is None  # stream 0 goes to the driver as None (default stream)


def test_bad_grid():
    L, _ = make(["int32"])
    with pytest.raises(ValueError):
        L((1, 2, 3, 4), 0, [1])


def test_wrong_arity_names_the_kernel_and_params():
    L, _ = make(["ptr", "int32"])
    with pytest.raises(TypeError, match=r"takes 2 arguments \(ptr, int32\), got 3"):
        L((1,), 0, [1, 2, 3])


def test_out_of_range_int32_is_an_error_not_a_wrap():
    L, _ = make(["ptr", "int32"])
    with pytest.raises(TypeError, match=r"argument 1 .*int32"):
        L((1,), 0, [16, 2**31])
    with pytest.raises(TypeError, match=r"negative pointer|argument 0"):
        L((1,), 0, [-16, 1])


def test_objects_for_pointer_params_use_the_slow_path():
    L, fake = make(["ptr", "int32", "float32"])
    a = DeviceArray.from_ptr(0xABC000, (4,), np.float32)

    class CAI:
        __cuda_array_interface__ = {"data": (0xDEF000, False), "shape": (1,), "typestr": "<f4", "version": 3}

    L((1,), 0, [a, np.int32(3), np.float32(0.5)])
    assert fake.calls[-1]["args"] == [0xABC000, 3, 0.5]
    L((1,), 0, [CAI(), 4, 1])
    assert fake.calls[-1]["args"] == [0xDEF000, 4, 1.0]


def test_bfloat16_and_float16_scalars():
    L, fake = make(["bfloat16", "float16"])
    L((1,), 0, [1.0, 0.5])
    assert fake.calls[-1]["args"] == [0x3F80, 0.5]
    assert _convert_bf16(float("nan")) == 0x7FC0
    assert _convert_bf16(-2.0) == 0xC000


def test_unknown_param_kind():
    with pytest.raises(ValueError, match="unknown parameter kind"):
        Launcher(0x1, ["ptr", "complex128"], 4, 0)


def test_contract_constructor_form_needs_a_name():
    with pytest.raises(TypeError):
        Launcher(b"\x7fELF....")


def test_launch_error_raises_cuda_error_naming_the_kernel():
    from cuda.bindings import driver as d

    L, _ = make(["int32"], result=d.CUresult.CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES)
    L.name = "my_kernel"
    with pytest.raises(CudaError) as ei:
        L((1,), 0, [1])
    assert "cuLaunchKernel(my_kernel" in str(ei.value)
    assert ei.value.name == "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"


def test_invalid_context_is_fixed_and_retried(monkeypatch):
    from cuda.bindings import driver as d
    from compiler.runtime import launch as launch_mod

    L, fake = make(["int32"])
    results = [(d.CUresult.CUDA_ERROR_INVALID_CONTEXT,), (d.CUresult.CUDA_SUCCESS,)]
    calls = []
    L._launch = lambda *a: (calls.append(a), results.pop(0))[1]
    monkeypatch.setattr(launch_mod, "ensure_context", lambda **kw: calls.append("ctx"))
    L((1,), 0, [5])
    assert calls[1] == "ctx" and len(calls) == 3


def test_host_cost_of_packing_a_4_arg_launch():
    """The Python side of a launch (grid, pack, call) with a no-op cuLaunchKernel. Target: well under 5 us
    minus the driver's own ~2 us; measured ~0.3-0.6 us on a laptop-class CPU."""
    L = Launcher(0x1, ["ptr", "ptr", "int32", "float32"], 4, 0)
    ok = (0,)
    L._launch = lambda *a: ok
    args = [0x7F0000001000, 0x7F0000002000, 1 << 20, 0.5]
    grid = (1024,)
    n = 20000
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n):
            L(grid, 0, args)
        best = min(best, (time.perf_counter() - t0) / n * 1e6)
    print(f"\nhost cost of packing + fake launch, 4 args: {best:.3f} us")
    assert best < 3.0


# --- pointer_of --------------------------------------------------------------------------------------------

def test_pointer_of_accepts_ints_device_arrays_and_cai():
    assert pointer_of(0x1000) == 0x1000
    a = DeviceArray.from_ptr(0x2000, 8, "float32")
    assert pointer_of(a) == 0x2000 and pointer_of(a) == a.data_ptr()

    class Cupyish:
        def __init__(self, p):
            self.__cuda_array_interface__ = {"data": (p, False), "shape": (1,), "typestr": "<f4", "version": 3}

    assert pointer_of(Cupyish(0x3000)) == 0x3000
    assert pointer_of(Cupyish(0x4000)) == 0x4000  # the cached resolver for this type reads each object


@pytest.mark.parametrize("bad,match", [(np.zeros(3), "NumPy array"), ("0x10", "cannot get a device pointer"),
                                       (True, "bool"), (1.5, "cannot get a device pointer")])
def test_pointer_of_rejects_host_memory_and_junk(bad, match):
    with pytest.raises(TypeError, match=match):
        pointer_of(bad)


def test_pointer_of_torch_cpu_tensor_is_rejected():
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError, match="must be on a CUDA device"):
        pointer_of(torch.zeros(3))


# --- ptxas -------------------------------------------------------------------------------------------------

def test_ptxas_is_found_and_assembles_the_test_kernels():
    exe = find_ptxas()
    if exe is None:
        pytest.skip("no ptxas (install nvidia-cuda-nvcc)")
    for ptx in (ADD_ONE_PTX, PARAMS4_PTX):
        cubin = ptxas_compile(ptx, "sm_90")
        assert cubin[:4] == b"\x7fELF"


def test_ptxas_reports_errors():
    if find_ptxas() is None:
        pytest.skip("no ptxas")
    with pytest.raises(RuntimeError, match="ptxas failed"):
        ptxas_compile(ADD_ONE_PTX.replace("add.s32", "add.bogus"), "sm_90")


def test_ptxas_env_override(monkeypatch, tmp_path):
    exe = tmp_path / "ptxas"
    exe.write_text("#!/bin/sh\nexit 0\n")
    exe.chmod(0o755)
    from compiler.codegen.ptx import find_ptxas as search

    monkeypatch.setenv("TILEFARM_PTXAS", str(exe))
    search.cache_clear()
    try:
        assert find_ptxas() == str(exe) == search()  # one search for the runtime and the code generator
    finally:
        monkeypatch.delenv("TILEFARM_PTXAS")
        search.cache_clear()
