"""Binary operators' computation types, as Triton's (semantic.computation_type_impl): float16 wins over bfloat16,
bfloat16 stays only beside bfloat16, and `/` and `%` on 16-bit floats compute in float32, so an fp16 ratio keeps
float32's precision (a PPO clip ratio exp(logp - old) / ... of fp16 values was off by 0.07% in fp16)."""
import numpy as np
import pytest

import compiler
import compiler.language as tl

from .test_ops import TARGETS, poison, run

F16, BF16, F32, I32, F8 = "float16", "bfloat16", "float32", "int32", "float8e5"


@compiler.jit
def dtype_kernel(A, B, OP: tl.constexpr, WANT: tl.constexpr, SCALAR: tl.constexpr):
    r = tl.arange(0, 4)
    a = tl.load(A + r)
    b = tl.load(B + r)
    if OP == "add":
        c = a + (2.0 if SCALAR else b)  # a literal is weakly typed: the tensor's type, unless / or % upcasts it
    elif OP == "mul":
        c = a * (2.0 if SCALAR else b)
    elif OP == "div":
        c = a / (2.0 if SCALAR else b)
    else:
        c = a % (2.0 if SCALAR else b)
    tl.static_assert(c.dtype == WANT, "computation type")


def _arr(name):
    return np.ones(4, dtype={F16: np.float16, F32: np.float32, I32: np.int32}.get(name)) if name != BF16 else \
        np.ones(4, dtype=tl.bfloat16.np)


@pytest.mark.parametrize("a,b,op,scalar,want", [
    (F16, F16, "div", False, F32), (F16, F16, "mod", False, F32), (F16, F16, "add", False, F16),
    (F16, F16, "mul", True, F16), (F16, F16, "div", True, F32), (BF16, BF16, "div", False, F32),
    (BF16, BF16, "add", False, BF16), (BF16, BF16, "div", True, F32), (F16, BF16, "add", False, F16),
    (BF16, F16, "mul", False, F16), (F16, BF16, "div", False, F32), (F16, I32, "div", False, F32),
    (F16, I32, "add", False, F16), (BF16, I32, "mul", False, F32), (F32, F16, "div", False, F32),
    (I32, I32, "div", False, F32), (F16, F32, "mul", False, F32)])
def test_computation_types(a, b, op, scalar, want):
    dtype_kernel.warmup(_arr(a), _arr(b), grid=(1,), target="sm_90a", OP=op, WANT=getattr(tl, want), SCALAR=scalar)


@compiler.jit
def ratio_kernel(A, B, Q, N, BLOCK: tl.constexpr):
    r = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = r < N
    a = tl.load(A + r, mask=m, other=1.0)
    b = tl.load(B + r, mask=m, other=1.0)
    tl.store(Q + r, a / b, mask=m)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", [F16, BF16])
def test_16bit_division_in_float32(target, dtype):
    rng = np.random.default_rng(2)
    npd = np.float16 if dtype == F16 else tl.bfloat16.np
    a = rng.uniform(0.5, 2.0, 1000).astype(npd)
    b = rng.uniform(0.5, 2.0, 1000).astype(npd)
    q = poison(1000, "float32")
    run(target, ratio_kernel, (4,), [a, b, q], [1000], BLOCK=256)
    exact = a.astype(np.float64) / b.astype(np.float64)
    np.testing.assert_allclose(q, exact, rtol=3e-7, atol=0)  # float32's rounding (div.full: 2 ulp), not fp16's
