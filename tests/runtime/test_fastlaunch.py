"""The C launch call (compiler/runtime/_fastlaunch.c) under the fake driver: it is built, used by Launcher, and
the driver sees exactly the parameters the cuda.bindings path would pass."""
from __future__ import annotations


def test_fastlaunch_builds_and_is_used(run_fake):
    out = run_fake("""
        import ctypes, struct
        from compiler.runtime import Launcher, fastlaunch
        from runtime_kernels import PARAMS4_PTX
        fn = fastlaunch.get()
        print("built", fn is not None, fastlaunch._state.get("error"))
        L = Launcher(PARAMS4_PTX, "params4", ["ptr", "ptr", "int32", "float32"], 2, 0)
        print("uses C", L._c_launch() is not None)
        L((3, 2, 1), 0, [0x7f0012345600, 0x7f0000000100, -5, 2.5])
        lib = ctypes.CDLL("libcuda.so.1")
        p = (ctypes.c_uint64 * 16)(); g = (ctypes.c_uint * 3)(); b = (ctypes.c_uint * 3)(); s = ctypes.c_uint()
        lib.fake_last_launch(p, g, b, ctypes.byref(s))
        i32 = struct.unpack("=i", struct.pack("=Q", p[2])[:4])[0]
        f32 = struct.unpack("=f", struct.pack("=Q", p[3])[:4])[0]
        print("launch", hex(p[0]), hex(p[1]), i32, f32, list(g), list(b), s.value)
    """)
    assert "built True None" in out, out
    assert "uses C True" in out, out
    assert "launch 0x7f0012345600 0x7f0000000100 -5 2.5 [3, 2, 1] [64, 1, 1] 0" in out, out


def test_fastlaunch_can_be_turned_off(run_fake):
    out = run_fake("""
        from compiler.runtime import fastlaunch
        print("fn", fastlaunch.get())
    """, env={"TILEFARM_FASTLAUNCH": "0"})
    assert "fn None" in out, out


def test_int64_and_uint64_arguments_take_their_own_builds(run_fake):
    """The launch paths' cache keys (the generated launcher's and the C dispatcher's) tell int64 values from those
    past int64 (uint64 builds): after a uint64 launch, an int64 value got the uint64 build again."""
    out = run_fake("""
        import numpy as np
        from compiler.runtime import DeviceArray
        from runtime_jit_kernels import big_int_kernel as k

        out = DeviceArray.empty((4,), np.int64)
        for v in (2 ** 63 + 5, -(2 ** 40) - 1, 2 ** 64 - 1, 2 ** 41 + 1, -7):
            k[(1,)](out, v, BLOCK=4)
        kinds = sorted({kern.metadata["params"][1]["type"] for kern in k._kernels.values()})
        print("builds", kinds)
    """)
    assert "builds ['int32', 'int64', 'uint64']" in out, out
