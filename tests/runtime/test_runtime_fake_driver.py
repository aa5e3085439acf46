"""The CUDA code paths under the real cuda.bindings with a fake libcuda (tests/runtime/fake_libcuda.c), so
argument spellings, handle types and error paths are exercised on machines without a GPU."""

from __future__ import annotations


def test_all_gpu_checks_under_the_fake_driver(run_fake):
    out = run_fake("""
        import runtime_gpu_checks as c
        for name, note in c.run_all():
            print(name, '|', note)
    """)
    assert out.count("|") == 8, out
    assert "Fake GPU" in out


def test_bad_pointer_under_the_fake_driver(run_fake):
    out = run_fake("import runtime_gpu_checks as c; print(c.check_bad_pointer())")
    assert "CUDA_ERROR_ILLEGAL_ADDRESS" in out and "cuCtxSynchronize" in out


def test_no_devices_under_the_fake_driver(run_fake):
    out = run_fake("import compiler.runtime as r; print(r.gpu_available())", env={"FAKE_CUDA_DEVICES": "0"})
    assert "False" in out and "no devices" in out


def test_bad_device_ordinal(run_fake):
    out = run_fake("import compiler.runtime as r; print(r.gpu_available())", env={"TILEFARM_DEVICE": "3"})
    assert "False" in out and "device 3 requested" in out


def test_launch_packs_real_values_through_the_bindings(run_fake):
    """The launcher's void** array, read back by the (fake) driver: what a real driver would copy."""
    out = run_fake("""
        import ctypes, struct
        from compiler.runtime import Launcher
        from runtime_kernels import PARAMS4_PTX
        L = Launcher(PARAMS4_PTX, "params4", ["ptr", "ptr", "int32", "float32"], 2, 0)
        L((3, 2, 1), 0, [0x7f0012345600, 0x7f0000000100, -5, 2.5])
        lib = ctypes.CDLL("libcuda.so.1")
        p = (ctypes.c_uint64 * 16)(); g = (ctypes.c_uint * 3)(); b = (ctypes.c_uint * 3)(); s = ctypes.c_uint()
        lib.fake_last_launch(p, g, b, ctypes.byref(s))
        i32 = struct.unpack("=i", struct.pack("=Q", p[2])[:4])[0]
        f32 = struct.unpack("=f", struct.pack("=Q", p[3])[:4])[0]
        print(hex(p[0]), hex(p[1]), i32, f32, list(g), list(b), s.value)
    """)
    assert out.split() == ["0x7f0012345600", "0x7f0000000100", "-5", "2.5", "[3,", "2,", "1]", "[64,", "1,", "1]", "0"]


def test_launch_overhead_with_real_bindings(run_fake):
    """Host cost of one 4-argument launch through the real cuda.bindings (the fake driver's
    cuLaunchKernel returns at once): everything but the driver's own work."""
    out = run_fake("""
        from compiler.runtime import Launcher, launch_overhead_us
        from runtime_kernels import PARAMS4_PTX
        L = Launcher(PARAMS4_PTX, "params4", ["ptr", "ptr", "int32", "float32"], 4, 0)
        args = [0x7f0012345600, 0x7f0000000100, 1 << 20, 0.5]
        grid = (1024,)
        print(launch_overhead_us(lambda: L(grid, 0, args), n=20000)["median_us"])
    """)
    us = float(out.strip())
    print(f"\nlaunch host cost through cuda.bindings, fake driver: {us:.3f} us")
    assert us < 3.0


def test_first_launch_on_a_new_thread_retries_with_the_context(run_fake):
    """The fake driver, like the real one, refuses a launch on a thread with no current context; the
    launcher's error path makes ours current and retries."""
    out = run_fake("""
        import threading, numpy as np
        from compiler.runtime import DeviceArray, Launcher, synchronize
        from runtime_kernels import ADD_ONE_PTX
        L = Launcher(ADD_ONE_PTX, "add_one", ["ptr", "ptr", "int32"], 4, 0)
        x = DeviceArray.from_numpy(np.arange(100, dtype=np.int32)); y = DeviceArray.empty(100, np.int32)
        t = threading.Thread(target=lambda: L((1,), 0, [x.data_ptr(), y.data_ptr(), 100]))
        t.start(); t.join()
        print((y.numpy() == np.arange(100) + 1).all())
    """)
    assert out.strip() == "True"


def test_device_memory_is_freed_on_gc_and_exit_is_clean(run_fake):
    out = run_fake("""
        import ctypes, gc
        import numpy as np
        from compiler.runtime import DeviceArray, do_bench
        lib = ctypes.CDLL("libcuda.so.1")
        base = lib.fake_num_live_allocs()
        arrs = [DeviceArray.empty(1000, np.float32) for _ in range(10)]
        assert lib.fake_num_live_allocs() == base + 10
        del arrs; gc.collect()
        a = DeviceArray.empty(10, np.int8); a.free(); a.free()
        print(lib.fake_num_live_allocs() - base)
        keep = DeviceArray.empty(10, np.int8)  # still alive at exit: must not crash the shutdown
    """)
    assert out.strip() == "0"
