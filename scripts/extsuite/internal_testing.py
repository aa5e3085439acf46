"""The helpers Triton-style test files import from `triton._internal_testing`, written for this project.

Dtype name lists, random NumPy inputs, host <-> device conversion (torch tensors; unsigned and fp8 dtypes through
`triton.reinterpret` wrappers), and the predicates that tell a test which machine it runs on. The machine is the
one the harness was started for: `TRITON_INTERPRET=1` (CPU, this project's interpreter) or a CUDA GPU, asked for
through torch.
"""
from __future__ import annotations

import os
import re

import numpy as np

int_dtypes = ["int8", "int16", "int32", "int64"]
uint_dtypes = ["uint8", "uint16", "uint32", "uint64"]
integral_dtypes = int_dtypes + uint_dtypes
float_dtypes = ["float16", "float32", "float64"]
float_dtypes_with_bfloat16 = float_dtypes + ["bfloat16"]
dtypes = integral_dtypes + float_dtypes
dtypes_with_bfloat16 = dtypes + ["bfloat16"]
torch_float8_dtypes = ["float8_e4m3fn", "float8_e5m2"]
torch_dtypes = ["bool"] + int_dtypes + ["uint8"] + float_dtypes + ["bfloat16"]
tma_dtypes = sorted(set(dtypes_with_bfloat16) - {"int64", "uint64", "float64"})

# names tests spell dtypes with -> the language's dtype names
_CANON = {"bool": "int1", "bool_": "int1", "float8_e4m3fn": "float8e4nv", "float8e4m3fn": "float8e4nv",
          "float8_e5m2": "float8e5", "float8e5m2": "float8e5", "half": "float16", "float": "float32",
          "double": "float64"}


def is_interpreter() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0") == "1"


def _capability():
    if is_interpreter():
        return None
    if os.environ.get("TILEFARM_SUITE_AS_GPU"):  # a CPU run answering as that GPU (plugin.py `_as_gpu`)
        return tuple(int(x) for x in os.environ["TILEFARM_SUITE_AS_GPU"].split("."))
    try:
        import torch

        if not torch.cuda.is_available():
            return None
        return torch.cuda.get_device_capability()
    except Exception:  # noqa: BLE001 - no usable GPU: every predicate below says no
        return None


def get_current_target():
    if is_interpreter():
        return None
    from compiler.triton_compat.runtime import driver

    return driver.active.get_current_target()


def is_cuda() -> bool:
    return _capability() is not None


def _major():
    cap = _capability()
    return None if cap is None else cap[0]


def is_ampere_or_newer():
    return is_cuda() and _major() >= 8


def is_hopper_or_newer():
    return is_cuda() and _major() >= 9


def is_hopper():
    return is_cuda() and _major() == 9


def is_blackwell():
    return is_cuda() and _major() == 10


def is_sm12x():
    return is_cuda() and _major() == 12


def is_sm(major=None, minor=None):
    cap = _capability()
    return cap is not None and (major is None or cap[0] == major) and (minor is None or cap[1] == minor)


def _false(*_a, **_k):
    return False


# this project targets NVIDIA GPUs only
is_hip = is_hip_cdna = is_hip_cdna2 = is_hip_cdna3 = is_hip_cdna4 = _false
is_hip_gfx11 = is_hip_gfx12 = is_hip_gfx1250 = is_xpu = _false


def get_hip_lds_size():
    return 65536


def get_arch() -> str:
    t = get_current_target()
    return "" if t is None else str(t.arch)


def supports_tma(byval_only=False):
    return is_interpreter() or is_hopper_or_newer()


def supports_ws():
    return is_interpreter() or is_hopper_or_newer()


def tma_skip_msg(byval_only=False):
    return "needs TMA (an NVIDIA GPU of compute capability 9.0 or newer)"


def _requires_tma():
    import pytest

    return pytest.mark.skipif(not supports_tma(), reason=tma_skip_msg())


requires_tma = _requires_tma()


def numpy_random(shape, dtype_str, rs=None, low=None, high=None):
    """Seeded random values of `dtype_str` (integers never 0, so division tests are defined)."""
    if isinstance(shape, int):
        shape = (shape,)
    if rs is None:
        rs = np.random.RandomState(seed=17)
    if dtype_str in integral_dtypes:
        info = np.iinfo(getattr(np, dtype_str))
        lo = info.min if low is None else max(low, info.min)
        hi = info.max if high is None else min(high, info.max)
        x = rs.randint(lo, hi, shape, dtype=getattr(np, dtype_str))
        x[x == 0] = 1
        return x
    if dtype_str and "float8" in dtype_str:
        return rs.randint(20, 40, shape, dtype=np.int8)
    if dtype_str in float_dtypes:
        return rs.normal(0, 1, shape).astype(dtype_str)
    if dtype_str == "bfloat16":
        bits = rs.normal(0, 1, shape).astype("float32").view("uint32") & np.uint32(0xFFFF0000)
        return bits.view("float32")
    if dtype_str in ("bool", "int1", "bool_"):
        return rs.normal(0, 1, shape) > 0.0
    raise RuntimeError(f"numpy_random: unknown dtype {dtype_str!r}")


def _tl():
    from compiler import language as tl

    return tl


def to_triton(x, device, dst_type=None):
    """A torch tensor on `device` holding `x`; unsigned and fp8 data as a `reinterpret` wrapper of the same bits
    (torch has no arithmetic on those dtypes)."""
    import torch

    from compiler.triton_compat.runtime import reinterpret

    name = x.dtype.name
    if name in uint_dtypes:
        signed = x.astype(getattr(np, name[1:]))
        return reinterpret(torch.tensor(signed, device=device), getattr(_tl(), name))
    if dst_type and "float8" in dst_type:
        return reinterpret(torch.tensor(x, device=device), str_to_triton_dtype(dst_type))
    if name == "float32" and dst_type == "bfloat16":
        return torch.tensor(x, device=device).bfloat16()
    return torch.tensor(x, device=device)


def str_to_triton_dtype(x: str):
    from compiler.ir import types as T

    return T.from_name(_CANON.get(x, x))


def torch_dtype_name(dtype) -> str:
    from compiler.ir import types as T

    if isinstance(dtype, T.dtype):
        return dtype.name
    m = re.match(r"^torch\.(\w+)$", str(dtype))
    if m is None:
        raise TypeError(f"not a language or torch dtype: {type(dtype)}")
    return m.group(1)


def to_numpy(x):
    import torch

    from compiler.triton_compat.runtime import TensorWrapper

    if isinstance(x, TensorWrapper):
        return x.base.cpu().numpy().astype(getattr(np, torch_dtype_name(x.dtype)))
    if isinstance(x, torch.Tensor):
        if x.dtype is torch.bfloat16:
            return x.cpu().float().numpy()
        return x.cpu().numpy()
    raise ValueError(f"not a tensor the tests can read back: {x!r}")


def unwrap_tensor(t):
    from compiler.triton_compat.runtime import TensorWrapper

    return t.base if isinstance(t, TensorWrapper) else t


def default_alloc_fn(size: int, align: int, _stream):
    import torch

    return torch.empty(size, dtype=torch.int8, device="cuda")
