"""The C packing path (`Plan` in compiler/runtime/_fastlaunch.c) and the jit's C dispatcher under the fake driver:
the parameter bytes that reach cuLaunchKernel for every kind, errors, and the same results with the C extension
turned off (TILEFARM_FASTLAUNCH=0)."""
from __future__ import annotations

import json

import pytest

# Every kind the launcher packs, one value each; the fake driver records the 8-byte slot of each parameter of a
# kernel named "paramsN". Expected slot: struct.pack of the value in the kind's format, zero-padded to 8 bytes.
_KINDS_PROGRAM = r"""
import ctypes, json, struct, sys
import numpy as np
from compiler.runtime import CudaError, Launcher, fastlaunch
from compiler.runtime.launch import PARAM_FORMATS, _convert_bf16

KINDS = ["ptr", "int32", "int64", "uint32", "uint64", "float32", "float64", "float16", "bfloat16", "int8",
         "uint8", "int16", "uint16", "int1", "ptr", "int32"]
VALUES = [0x7F0012345670, -7, -(2**40) - 3, 2**32 - 1, 2**64 - 1, 2.5, -1.0 / 3, 0.333, 1.7, -128, 255, -300,
          65535, True, 0xFFFF_FFFF_FFFF_FFF0, 2**31 - 1]
N = len(KINDS)
params = ", ".join(f".param .u64 p{i}" for i in range(N))
PTX = f".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry params{N}({params})\n{{\n ret;\n}}\n"
lib = ctypes.CDLL("libcuda.so.1")

def slots(n=N):
    p = (ctypes.c_uint64 * 16)(); g = (ctypes.c_uint * 3)(); b = (ctypes.c_uint * 3)(); s = ctypes.c_uint()
    lib.fake_last_launch(p, g, b, ctypes.byref(s))
    return [struct.pack("=Q", p[i]).hex() for i in range(n)], list(g), list(b), s.value

def expected(kinds, values):
    out = []
    for k, v in zip(kinds, values):
        if k == "bfloat16":
            v = _convert_bf16(v)
        out.append(struct.pack("=" + PARAM_FORMATS[k], v).ljust(8, b"\0").hex())
    return out

res = {"c": fastlaunch.plan_type() is not None}
L = Launcher(PTX, f"params{N}", KINDS, 2, 0)
res["plan"] = L._plan is not None
L((3, 2, 1), None, VALUES)
res["launcher"] = slots()
res["expected"] = expected(KINDS, VALUES)
res["values"] = [str(v) for v in L.values()]
# the entry: one value per caller position, the kernel's at `select`
e = L.entry(tuple(range(0, 2 * N, 2)), 2 * N)
res["entry_is_c"] = type(e).__name__ == "builtin_function_or_method"
mixed = [x for v in VALUES for x in (v, "skipped")]
e(7, 0, *mixed)
res["entry"] = slots()
# objects and NumPy scalars, grid forms the C code leaves to Python: the same bytes
odd = list(VALUES)
odd[1] = np.int32(-7); odd[5] = np.float32(2.5); odd[13] = 1
L([3, 2], np.int64(0), odd)
res["odd"] = slots()
# out of range / wrong type: the Python path's errors
errs = []
for i, bad in [(1, 2**31), (3, -1), (9, 128), (0, -16), (5, 1e300), (7, 1e10), (5, "x")]:
    v = list(VALUES); v[i] = bad
    try:
        L(1, 0, v)
        errs.append("no error")
    except Exception as ex:
        errs.append(f"{type(ex).__name__}: {ex}")
try:
    L(1, 0, VALUES[:-1])
except TypeError as ex:
    errs.append(str(ex))
res["errors"] = errs
# a failed launch raises CudaError naming the kernel (grid 0 is invalid for the fake driver too)
for f in (lambda: L(0, None, VALUES), lambda: e((0, 1), None, *mixed)):
    try:
        f()
        res.setdefault("launch_errors", []).append("no error")
    except CudaError as ex:
        res.setdefault("launch_errors", []).append(str(ex))
print(json.dumps(res))
"""


def _kinds(run_fake, env=None):
    return json.loads(run_fake(_KINDS_PROGRAM, env=env).strip().splitlines()[-1])


def _check_kinds(r):
    assert r["launcher"][0] == r["expected"], r
    assert r["launcher"][1:] == [[3, 2, 1], [64, 1, 1], 0]
    assert r["entry"][0] == r["expected"] and r["entry"][1] == [7, 1, 1]
    assert r["odd"][0] == r["expected"] and r["odd"][1] == [3, 2, 1]
    assert r["values"][2] == str(-(2**40) - 3) and r["values"][8] == str(0x3FDA)  # bf16(1.7) rounds to 0x3FDA
    errs = r["errors"]
    assert errs[0].startswith("TypeError: argument 1 of params16 (int32): cannot pass 2147483648"), errs
    assert errs[1].startswith("TypeError: argument 3 of params16 (uint32): cannot pass -1"), errs
    assert errs[2].startswith("TypeError: argument 9 of params16 (int8): cannot pass 128"), errs
    assert errs[3] == "TypeError: argument 0 of params16: negative pointer -16", errs
    assert errs[4] == "OverflowError: float too large to pack with f format", errs  # as struct says it
    assert errs[5] == "OverflowError: float too large to pack with e format", errs
    assert errs[6].startswith("TypeError: argument 5 of params16 (float32): cannot pass 'x'"), errs
    assert errs[7].startswith("kernel params16 takes 16 arguments (ptr, int32, int64"), errs
    for msg in r["launch_errors"]:
        assert "cuLaunchKernel(params16, grid=(0, 1, 1)" in msg and "CUDA_ERROR_INVALID_VALUE" in msg, msg


def test_c_plan_packs_every_kind_exactly(run_fake):
    r = _kinds(run_fake)
    assert r["c"] and r["plan"] and r["entry_is_c"], r
    _check_kinds(r)


def test_python_packing_without_the_c_extension_gives_the_same_bytes(run_fake):
    r = _kinds(run_fake, env={"TILEFARM_FASTLAUNCH": "0"})
    assert not r["c"] and not r["plan"] and not r["entry_is_c"], r
    _check_kinds(r)


# The jit path: kernel[grid](...) with DeviceArrays, ints (int32 / int64 / the constant 1) and floats.
_JIT_PROGRAM = r"""
import ctypes, json, struct, sys, threading
import numpy as np
import compiler
from compiler.runtime import CudaError, DeviceArray
import runtime_jit_kernels as K
lib = ctypes.CDLL("libcuda.so.1")

def last(n):
    p = (ctypes.c_uint64 * 16)(); g = (ctypes.c_uint * 3)(); b = (ctypes.c_uint * 3)(); s = ctypes.c_uint()
    lib.fake_last_launch(p, g, b, ctypes.byref(s))
    return [struct.pack("=Q", p[i]).hex() for i in range(n)] + [list(g), b[0]]

def q(v, f):
    return struct.pack("=" + f, v).ljust(8, b"\0").hex()

x = DeviceArray.empty(1024, np.float32); y = DeviceArray.empty(1024, np.float32)
X, Y = q(x.data_ptr(), "Q"), q(y.data_ptr(), "Q")
res = {"ok": []}
def check(name, got, want):
    res["ok"].append([name, got == want, got, want])

for i in range(3):  # compile, then the cached fast path (C dispatcher where the extension is loaded)
    K.params4[(3, 2)](x, y, 1000, 2.5, BLOCK=128)
    check(f"i32 #{i}", last(4), [X, Y, q(1000, "i"), q(2.5, "f"), [3, 2, 1], 128])
res["bound"] = type(K.params4[(1,)]).__name__
k = K.params4[lambda m: (m["N"] >> 32, 2, 1)](x, y, 2**40, 0.5, BLOCK=128)
check("i64", last(4), [X, Y, q(2**40, "q"), q(0.5, "f"), [256, 2, 1], 128])
res["i64_types"] = [p["type"] for p in k.metadata["params"]]
K.params4[7](x, y, -(2**31), 1.0, BLOCK=128)
check("i32 min", last(4), [X, Y, q(-(2**31), "i"), q(1.0, "f"), [7, 1, 1], 128])
K.params4[7](x, y, 2**31, 1.0, BLOCK=128)
check("2**31 is i64", last(4), [X, Y, q(2**31, "q"), q(1.0, "f"), [7, 1, 1], 128])
for i in range(2):
    k = K.params3[5](x, y, 1, 0.75 + i)  # N == 1: a constant, dropped from the launch values
    check(f"const 1 #{i}", last(3), [X, Y, q(0.75 + i, "f"), [5, 1, 1], 128])
res["const_select"] = list(k.arg_select)
K.params3[(2, 3, 4)](Y=y, X=x, N=5, alpha=3.0, num_warps=2)  # by name, a default, num_warps
check("kwargs", last(3), [X, Y, q(5, "i"), [2, 3, 4], 64])  # the fake records 3 ("params3")
K.params3[(1,)](x, y, 6, 3.0, 64, stream=0)
check("positional constexpr + stream", last(3), [X, Y, q(6, "i"), [1, 1, 1], 128])

# the hot path runs no Python code at all once kernel[grid] is made
b = K.params4[(4,)]
b(x, y, 1000, 2.5, BLOCK=128)
calls = []
sys.setprofile(lambda frame, event, arg: calls.append(frame.f_code.co_name) if event == "call" else None)
b(x, y, 1000, 2.5, BLOCK=128)
sys.setprofile(None)
res["python_calls_in_hot_path"] = [c for c in calls if c != "<lambda>"]

# errors keep their messages
errs = []
for f in (lambda: K.params4[1](x, y, 10, 1.0, BLOCK=128, bogus=1),
          lambda: K.params4[1](x, y, 10, BLOCK=128),
          lambda: K.params4[1](x, y, 10, 1.0, 128, 5),
          lambda: K.params4[1](x, y, 10, 1.0, BLOCK=128, N=3),
          lambda: K.params4[(1, 2, 3, 4)](x, y, 10, 1.0, BLOCK=128),
          lambda: K.params4[0](x, y, 10, 1.0, BLOCK=128),
          lambda: K.params4[lambda m: (0,)](x, y, 10, 1.0, BLOCK=128),
          lambda: K.params4[lambda m: 1 / 0](x, y, 10, 1.0, BLOCK=128)):
    try:
        f()
        errs.append("no error")
    except Exception as e:
        errs.append(f"{type(e).__name__}: {e}")
res["errors"] = errs

# first launch on a thread without a current context: the launcher makes it current and retries
out = []
def worker():
    K.params4[(9,)](x, y, 1000, 2.5, BLOCK=128)
    out.append(last(4))
t = threading.Thread(target=worker); t.start(); t.join()
check("new thread", out[0], [X, Y, q(1000, "i"), q(2.5, "f"), [9, 1, 1], 128])
print(json.dumps(res))
"""


def _jit(run_fake, env=None):
    return json.loads(run_fake(_JIT_PROGRAM, env=env).strip().splitlines()[-1])


def _check_jit(r):
    bad = [c for c in r["ok"] if not c[1]]
    assert not bad, bad
    assert r["i64_types"] == ["ptr", "ptr", "int64", "float32"]
    assert r["const_select"] == [0, 1, 3]
    errs = r["errors"]
    assert errs[0] == "TypeError: params4() got unexpected argument(s): bogus", errs
    assert errs[1] == "TypeError: launch() missing 1 required positional argument: 'alpha'", errs
    assert errs[2].startswith("TypeError: launch() takes 6 positional arguments but 7 were given"), errs
    assert errs[3].startswith("TypeError: launch() got multiple values for argument 'N'"), errs
    assert errs[4] == "ValueError: grid must have 1 to 3 dimensions, got (1, 2, 3, 4)", errs
    for e in errs[5:7]:
        assert e.startswith("CudaError: cuLaunchKernel(params4, grid=(0, 1, 1), block=(128,1,1), shared=0) failed: "
                            "CUDA_ERROR_INVALID_VALUE"), errs
    assert errs[7] == "ZeroDivisionError: division by zero", errs


def test_jit_launch_through_the_c_dispatcher(run_fake):
    r = _jit(run_fake)
    assert r["bound"] == "Bound", r
    assert r["python_calls_in_hot_path"] == [], r["python_calls_in_hot_path"]
    _check_jit(r)


def test_jit_launch_without_the_c_extension(run_fake):
    r = _jit(run_fake, env={"TILEFARM_FASTLAUNCH": "0"})
    assert r["bound"] == "method", r
    _check_jit(r)


@pytest.mark.parametrize("fastlaunch", ["1", "0"])
def test_jit_launch_with_torch_like_tensors(run_fake, fastlaunch):
    """torch is stood in for by a module whose Tensor has data_ptr()/is_cuda/dtype (see scripts/bench_launch.py);
    the pointer passed is data_ptr() (storage offset included); a CPU tensor runs in the interpreter, so one beside
    a GPU tensor is refused."""
    out = run_fake("""
        import ctypes, struct, sys
        sys.path.insert(0, "scripts")
        import bench_launch
        torch = bench_launch._install_fake_torch()
        import numpy as np
        from compiler.runtime import DeviceArray
        import runtime_jit_kernels as K
        lib = ctypes.CDLL("libcuda.so.1")
        x = DeviceArray.empty(1024, np.float32); y = DeviceArray.empty(1024, np.float32)
        tx = torch.Tensor(x.data_ptr() + 64, torch.float32); ty = torch.Tensor(y.data_ptr(), torch.float32)
        for _ in range(3):
            K.params4[(2,)](tx, ty, 100, 1.5, BLOCK=128)
            p = (ctypes.c_uint64 * 16)(); g = (ctypes.c_uint * 3)(); b = (ctypes.c_uint * 3)(); s = ctypes.c_uint()
            lib.fake_last_launch(p, g, b, ctypes.byref(s))
            print(p[0] - x.data_ptr(), p[1] - y.data_ptr(), p[2])
        try:
            K.params4[(2,)](torch.Tensor(x.data_ptr(), torch.float32, False), ty, 100, 1.5, BLOCK=128)
        except TypeError as e:
            print("refused:", e)
    """, env={"TILEFARM_FASTLAUNCH": fastlaunch})
    lines = out.strip().splitlines()
    assert lines[:3] == ["64 0 100"] * 3, out
    assert lines[3].startswith("refused: params4: host arrays (NumPy, CPU tensors) run in the interpreter"), out


@pytest.mark.parametrize("fastlaunch", ["1", "0"])
def test_none_argument_takes_the_fast_path(run_fake, fastlaunch):
    """A None argument (specialized on) is a fast-path key part like an int: only the first launch of each
    specialization goes through JITFunction.run."""
    out = run_fake("""
        import ctypes, sys
        import numpy as np
        from compiler.runtime import DeviceArray
        import runtime_jit_kernels as K
        x = DeviceArray.empty(1024, np.float32); y = DeviceArray.empty(1024, np.float32)
        calls = []
        real = K.with_bias.run
        K.with_bias.run = lambda *a, **k: (calls.append(1), real(*a, **k))[1]
        for _ in range(4):
            K.with_bias[(2,)](x, None, y, 100)
        for _ in range(3):
            K.with_bias[(2,)](x, x, y, 100)
        K.with_bias[(2,)](x, None, y, 100)
        print(len(calls), len(K.with_bias._kernels))
    """, env={"TILEFARM_FASTLAUNCH": fastlaunch})
    runs, kernels = out.strip().splitlines()[-1].split()
    # the first launch of the kernel, then one per specialization as the generated launcher files it (None,
    # pointer); every later launch is on the fast path (it was 6: each None launch took JITFunction.run)
    assert runs == "3", out
