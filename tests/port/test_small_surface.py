"""The small surface real kernels and Triton's tests use (#22 item 6)."""
import math

import numpy as np
import pytest

import compiler
import compiler.language as tl
from compiler.ir import types as T

from .kernels import TARGETS, poison, run


@compiler.jit
def nan_kernel(X, Y, Out, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    y = tl.load(Y + offs)
    tl.store(Out + 0 * BLOCK + offs, tl.maximum(x, y, propagate_nan=tl.PropagateNan.ALL))
    tl.store(Out + 1 * BLOCK + offs, tl.minimum(x, y, propagate_nan=tl.PropagateNan.ALL))
    tl.store(Out + 2 * BLOCK + offs, tl.maximum(x, y, propagate_nan=tl.PropagateNan.NONE))
    tl.store(Out + 3 * BLOCK + offs, tl.minimum(x, y))
    tl.store(Out + 4 * BLOCK + offs, tl.clamp(x, -0.5, 0.5, propagate_nan=tl.PropagateNan.ALL))
    tl.store(Out + 5 * BLOCK + offs, tl.clamp(x, -0.5, 0.5))
    tl.store(Out + 6 * BLOCK + offs, max(x, y, propagate_nan=tl.PropagateNan.ALL))
    tl.store(Out + 7 * BLOCK + offs, min(x, y))


@pytest.mark.parametrize("target", TARGETS)
def test_propagate_nan(target):
    rng = np.random.default_rng(11)
    B = 64
    x = rng.uniform(-1, 1, B).astype(np.float32)
    y = rng.uniform(-1, 1, B).astype(np.float32)
    x[::5] = np.nan
    y[1::7] = np.nan
    out = poison(8 * B, np.float32)
    run(target, nan_kernel, (1,), x, y, out, BLOCK=B)
    o = out.reshape(8, B)
    np.testing.assert_array_equal(o[0], np.maximum(x, y))    # NaN in either -> NaN
    np.testing.assert_array_equal(o[1], np.minimum(x, y))
    np.testing.assert_array_equal(o[2], np.fmax(x, y))       # the non-NaN operand
    np.testing.assert_array_equal(o[3], np.fmin(x, y))
    np.testing.assert_array_equal(o[4], np.clip(x, -0.5, 0.5))  # NaN stays NaN
    np.testing.assert_array_equal(o[5], np.where(np.isnan(x), -0.5, np.clip(x, -0.5, 0.5)))
    np.testing.assert_array_equal(o[6], np.maximum(x, y))
    np.testing.assert_array_equal(o[7], np.fmin(x, y))


def test_propagate_nan_values():
    assert int(tl.PropagateNan.NONE) == 0 and int(tl.PropagateNan.ALL) == 0xFFFF

    @compiler.jit
    def k(X):
        tl.store(X, tl.maximum(tl.load(X), 1.0, propagate_nan="sometimes"))

    with pytest.raises(compiler.CompilationError, match="propagate_nan must be"):
        k[(1,)](np.zeros(2, np.float32))


@compiler.jit
def const_reader(X: tl.const, Y, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(Y + offs, tl.load(X + offs) + 1)


@pytest.mark.parametrize("target", TARGETS)
def test_const_pointer_loads(target):
    x = np.arange(32, dtype=np.int32)
    y = poison(32, np.int32)
    run(target, const_reader, (1,), x, y, BLOCK=32)
    np.testing.assert_array_equal(y, x + 1)


def test_const_pointer_refuses_stores():
    @compiler.jit
    def k(X: tl.const, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(X + offs, 1)

    @compiler.jit
    def a(X: "tl.const"):
        tl.atomic_add(X, 1)

    with pytest.raises(compiler.CompilationError, match="Cannot store to a constant pointer"):  # Triton's words
        k[(1,)](np.zeros(8, np.int32), BLOCK=8)
    with pytest.raises(compiler.CompilationError, match="constant data"):
        a[(1,)](np.zeros(8, np.int32))


@compiler.jit
def _selu_scalar(x, alpha):
    if x > 0:
        return x
    else:
        return alpha * (tl.exp(x) - 1)


@compiler.jit
def _clamp_count(x, lo, hi):
    n = 0
    if x < lo:
        x = lo
        n = 1
    elif x > hi:
        x = hi
        n = 2
    return x, n


@compiler.jit
def mapped(X, Out, N, ALPHA, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    tl.store(Out + offs, tl.map_elementwise(_selu_scalar, x, ALPHA))
    c, n = tl.map_elementwise(_clamp_count, x, -0.5, 0.5, pack=2)
    tl.store(Out + BLOCK + offs, c)
    tl.store(N + offs, n)


@pytest.mark.parametrize("target", TARGETS)
def test_map_elementwise(target):
    rng = np.random.default_rng(12)
    B = 128
    x = rng.uniform(-2, 2, B).astype(np.float32)
    out = poison(2 * B, np.float32)
    n = poison(B, np.int32)
    run(target, mapped, (1,), x, out, n, 1.7, BLOCK=B)
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(out[:B], np.where(x > 0, x64, 1.7 * (np.exp(x64) - 1)), rtol=2e-6, atol=1e-7)
    np.testing.assert_array_equal(out[B:], np.clip(x, -0.5, 0.5))
    np.testing.assert_array_equal(n, np.where(x < -0.5, 1, np.where(x > 0.5, 2, 0)))


def test_map_elementwise_refuses_stores_in_element_branches():
    @compiler.jit
    def f(x, P):
        if x > 0:
            tl.store(P, x)
        return x

    @compiler.jit
    def k(X, BLOCK: tl.constexpr):
        x = tl.load(X + tl.arange(0, BLOCK))
        tl.store(X + tl.arange(0, BLOCK), tl.map_elementwise(f, x, X))

    with pytest.raises(compiler.CompilationError, match="cannot store inside an if on its elements"):
        k[(1,)](np.zeros(8, np.float32), BLOCK=8)


def test_constexpr_type():
    assert tl.constexpr(5).type == tl.constexpr_type(5)
    assert tl.constexpr_type(5) != tl.constexpr_type(6)
    assert repr(tl.constexpr_type(5)) == "constexpr_type[5]"


def test_dtype_attributes():
    assert tl.float16.primitive_bitwidth == 16 and tl.int1.primitive_bitwidth == 1
    assert (tl.float16.fp_mantissa_width, tl.bfloat16.fp_mantissa_width, tl.float32.fp_mantissa_width,
            tl.float64.fp_mantissa_width) == (10, 7, 23, 52)
    assert (tl.float16.exponent_bias, tl.bfloat16.exponent_bias, tl.float64.exponent_bias) == (15, 127, 1023)
    assert tl.float32.is_floating() and tl.float32.is_standard_floating() and not tl.int8.is_floating()
    assert tl.int8.is_int_signed() and tl.uint8.is_int_unsigned() and tl.int8.is_int8() and tl.uint64.is_uint64()
    assert tl.int16.int_bitwidth == 16 and tl.int16.int_signedness == tl.dtype.SIGNEDNESS.SIGNED
    assert tl.uint16.int_signedness == tl.dtype.SIGNEDNESS.UNSIGNED
    assert tl.int8.get_int_max_value() == 127 and tl.int8.get_int_min_value() == -128
    assert tl.uint32.get_int_max_value() == 2**32 - 1
    assert tl.float16.kind() == tl.dtype.KIND.FLOATING and tl.int32.kind() == tl.dtype.KIND.INTEGRAL
    assert tl.int1.kind() == tl.dtype.KIND.BOOLEAN
    assert tl.float32.scalar is tl.float32 and not tl.float32.is_ptr() and not tl.float32.is_block()
    p = tl.pointer_type(tl.float16)
    assert p.is_ptr() and p.element_ty is tl.float16 and not p.is_const() and p.scalar is p
    assert tl.dtype.is_dtype("fp16") and not tl.dtype.is_dtype("float17")


@compiler.jit
def dtype_in_kernel(X, Out):
    x = tl.load(X)
    bits: tl.constexpr = x.dtype.primitive_bitwidth
    mant: tl.constexpr = x.dtype.fp_mantissa_width
    if x.dtype.is_floating():
        tl.store(Out, bits * 100 + mant)
    else:
        tl.store(Out, -1)


def test_dtype_attributes_in_a_kernel():
    out = np.zeros(1, np.int32)
    dtype_in_kernel[(1,)](np.zeros(1, np.float16), out)
    assert out[0] == 1610


def test_every_triton_dtype_member_exists():
    triton_tl = pytest.importorskip("triton.language")
    skip = {"to_ir"}  # Triton's MLIR builder API (present here, raising)
    for ours, theirs in ((tl.float16, triton_tl.float16), (tl.pointer_type(tl.float32),
                                                             triton_tl.pointer_type(triton_tl.float32))):
        names = sorted(n for n in dir(theirs) if not n.startswith("_"))
        missing = [n for n in names if n not in skip and not hasattr(ours, n)]
        assert not missing, f"{type(theirs).__name__} members missing here: {missing}"


@compiler.jit
def dot_prec(A, B, C, PREC: tl.constexpr, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    a = tl.load(A + r[:, None] * BLOCK + r[None, :])
    b = tl.load(B + r[:, None] * BLOCK + r[None, :])
    tl.store(C + r[:, None] * BLOCK + r[None, :], tl.dot(a, b, input_precision=PREC))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("prec", ["TF32x3", "ieee", "bf16x3"])
def test_input_precision_values(target, prec):
    rng = np.random.default_rng(13)
    a = rng.standard_normal((32, 32)).astype(np.float16)
    b = rng.standard_normal((32, 32)).astype(np.float16)
    c = poison((32, 32), np.float32)
    run(target, dot_prec, (1,), a, b, c, PREC=prec, BLOCK=32)  # fp16 inputs: the precision does not apply
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("target", TARGETS)
def test_tf32x3_is_float32_accurate(target):
    rng = np.random.default_rng(14)
    a = rng.standard_normal((32, 32)).astype(np.float32)
    b = rng.standard_normal((32, 32)).astype(np.float32)
    c = poison((32, 32), np.float32)
    run(target, dot_prec, (1,), a, b, c, PREC="tf32x3", BLOCK=32)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-5, atol=1e-4)


@compiler.jit
def dot_prec_k(A, B, C, Acc, PREC: tl.constexpr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
               BK: tl.constexpr):
    """C = Acc + A @ B for one [M, K] x [K, N] problem, over K in BK steps (a loop-carried accumulator)."""
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, BK)
    acc = tl.load(Acc + rm[:, None] * N + rn[None, :])
    for k in range(0, K, BK):
        a = tl.load(A + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(B + (k + rk)[:, None] * N + rn[None, :])
        acc = tl.dot(a, b, acc, input_precision=PREC)
    tl.store(C + rm[:, None] * N + rn[None, :], acc)


# max |got - ref| / (|A| @ |B| + |Acc|) per precision: what the precision keeps of the float32 inputs (tf32: 11
# significant bits, bf16x3: about 16, bf16x6 and tf32x3: float32's 24), plus float32 accumulation over K = 64
# (at most 64 roundings of 2**-24: 2**-18) on the GPU
_PREC_BOUND = {"tf32": 2 ** -10, "bf16x3": 2 ** -15, "bf16x6": 2 ** -18, "tf32x3": 2 ** -18, "ieee": 2 ** -18}


def _prec_error(target, prec, M=64, N=32, K=64, BK=32, seed=16):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    acc = rng.standard_normal((M, N)).astype(np.float32)
    c = poison((M, N), np.float32)
    run(target, dot_prec_k, (1,), a, b, c, acc, PREC=prec, M=M, N=N, K=K, BK=BK, num_warps=4)
    ref = acc.astype(np.float64) + a.astype(np.float64) @ b.astype(np.float64)
    scale = np.abs(acc.astype(np.float64)) + np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    assert np.all(np.isfinite(c))
    return float(np.max(np.abs(c - ref) / scale))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("prec", ["tf32", "tf32x3", "bf16x3", "bf16x6", "ieee"])
def test_float32_dot_precisions_against_float64(target, prec):
    """Every input_precision Triton 3.6 accepts, on float32 operands, against float64 within the bound of what
    the precision keeps of the inputs."""
    err = _prec_error(target, prec)
    assert err <= _PREC_BOUND[prec], f"{prec}: relative error {err:.3g} > {_PREC_BOUND[prec]:.3g}"


@pytest.mark.parametrize("target", ["interp", pytest.param("gpu", marks=pytest.mark.gpu)])
def test_bf16_splits_are_more_precise_than_tf32(target):
    """bf16x3 (two bf16 parts, three products) beats one tf32 product; bf16x6 (three parts, six) beats bf16x3."""
    tf32, x3, x6 = (_prec_error(target, p, seed=17) for p in ("tf32", "bf16x3", "bf16x6"))
    assert x3 < tf32 / 8, (x3, tf32)
    assert x6 < x3 / 4, (x6, x3)


def test_bf16_split_dot_keeps_infinities():
    """An infinite input leaves inf - inf in its lower parts: the cross products' NaN is dropped, so the result is
    the hi * hi product's inf, as a float32 dot gives (interpreter; the codegen issues the same select)."""
    M = N = K = 16
    a = np.full((M, K), 0.5, np.float32)
    a[3, 5] = np.inf
    b = np.full((K, N), 0.25, np.float32)
    for prec in ("bf16x3", "bf16x6"):
        c = poison((M, N), np.float32)
        dot_prec_k[(1,)](a, b, c, np.zeros((M, N), np.float32), PREC=prec, M=M, N=N, K=K, BK=K)
        want = a.astype(np.float64) @ b.astype(np.float64)
        np.testing.assert_array_equal(c, want.astype(np.float32))


def test_bf16_split_ptx_uses_bf16_tensor_cores():
    """bf16x3 on float32 operands: the PTX has bf16 mma.sync (m16n8k16) and no tf32 one; tf32x3 keeps tf32."""
    a = np.ones((32, 32), np.float32)
    for prec, want, not_want in (("bf16x3", "m16n8k16.row.col.f32.bf16.bf16.f32", ".tf32"),
                                 ("bf16x6", "m16n8k16.row.col.f32.bf16.bf16.f32", ".tf32"),
                                 ("tf32x3", "m16n8k8.row.col.f32.tf32.tf32.f32", ".bf16.bf16")):
        ptx = dot_prec.warmup(a, a, a, PREC=prec, BLOCK=32, grid=(1,), target="sm_90a").asm["ptx"]
        assert want in ptx and not_want not in ptx.split("mma.sync", 1)[-1], prec
    n3 = dot_prec.warmup(a, a, a, PREC="bf16x3", BLOCK=32, grid=(1,), target="sm_90a").asm["ptx"].count("mma.sync")
    n6 = dot_prec.warmup(a, a, a, PREC="bf16x6", BLOCK=32, grid=(1,), target="sm_90a").asm["ptx"].count("mma.sync")
    assert n6 == 2 * n3  # six products against three


def test_unknown_input_precision_says_so():
    a = np.ones((32, 32), np.float32)
    with pytest.raises(compiler.CompilationError, match="input_precision must be one of tf32, tf32x3, ieee, "
                                                        "bf16x3, bf16x6, got 'fp8'"):
        dot_prec[(1,)](a, a, a, PREC="fp8", BLOCK=32)


@compiler.jit
def cas16(P, Old, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(Old + offs, tl.atomic_cas(P + offs, tl.load(Old + offs), offs.to(P.dtype.element_ty) + 100))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dt", [np.int16, np.uint16, np.float16])
def test_atomic_cas_16_bit(target, dt):
    rng = np.random.default_rng(15)
    p = rng.integers(0, 50, 64).astype(dt)
    cmp = p.copy()
    cmp[::3] += dt(1)  # these do not match: left alone
    old = cmp.copy()
    p0 = p.copy()
    run(target, cas16, (1,), p, old, BLOCK=64)
    np.testing.assert_array_equal(old, p0)
    want = np.where(cmp == p0, (np.arange(64) + 100).astype(dt), p0)
    np.testing.assert_array_equal(p, want)


@pytest.mark.parametrize("expr,msg", [
    ("x + 300", "scalar 300 is out of range for type int8"),
    ("x * -129", "scalar -129 is out of range for type int8"),
    ("u - -1", "unsigned uint32 tensor with the negative scalar -1"),
    ("f & 1", "operator & needs integer operands: invalid operands of type float32 and int32"),
    ("f | x", "operator | needs integer operands: invalid operands of type float32 and int8"),
    ("f << 2", "operator << needs integer operands"),
    ("x + 2**64", "nonrepresentable integer 18446744073709551616: an integer constant is int32, uint32, int64 or "
                  "uint64"),
    ("x + (-2**63 - 1)", "nonrepresentable integer -9223372036854775809"),
])
def test_compile_time_rejections(tmp_path, expr, msg):
    src = tmp_path / "kern_reject.py"
    src.write_text(f"""
import compiler
import compiler.language as tl


@compiler.jit
def k(X, U, F, Out):
    x = tl.load(X)
    u = tl.load(U)
    f = tl.load(F)
    tl.store(Out, ({expr}).to(tl.float32))
""")
    import importlib.util

    spec = importlib.util.spec_from_file_location("kern_reject", src)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with pytest.raises(compiler.CompilationError, match=msg) as e:
        mod.k[(1,)](np.zeros(1, np.int8), np.zeros(1, np.uint32), np.zeros(1, np.float32), np.zeros(1, np.float32))
    assert "kern_reject.py:11:" in str(e.value)


@compiler.jit
def _halvings(x):
    """How many halvings take x (> 0) to at most 1: a while loop on the element's own value."""
    n = 0
    while x > 1.0:
        x = x * 0.5
        n += 1
    return x, n


@compiler.jit
def mapped_while(X, Out, N, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    y, n = tl.map_elementwise(_halvings, tl.load(X + offs))
    tl.store(Out + offs, y)
    tl.store(N + offs, n)


@pytest.mark.parametrize("target", TARGETS)
def test_map_elementwise_while(target):
    rng = np.random.default_rng(16)
    B = 64
    x = np.exp2(rng.uniform(-3, 12, B)).astype(np.float32)
    out = poison(B, np.float32)
    n = poison(B, np.int32)
    run(target, mapped_while, (1,), x, out, n, BLOCK=B)
    ref_n = np.array([0 if v <= 1 else int(np.ceil(np.log2(np.float64(v)))) for v in x])
    np.testing.assert_array_equal(n, ref_n)
    np.testing.assert_array_equal(out, x * np.exp2(-ref_n.astype(np.float32)))


def test_map_elementwise_refuses_stores_in_element_loops():
    @compiler.jit
    def f(x, P):
        while x > 1.0:
            x = x * 0.5
            tl.store(P, x)
        return x

    @compiler.jit
    def k(X, BLOCK: tl.constexpr):
        x = tl.load(X + tl.arange(0, BLOCK))
        tl.store(X + tl.arange(0, BLOCK), tl.map_elementwise(f, x, X))

    with pytest.raises(compiler.CompilationError, match="cannot store inside a while loop on its elements"):
        k[(1,)](np.ones(8, np.float32) * 4, BLOCK=8)


@compiler.jit
def const_type(Out, B, V: tl.constexpr, WANT: tl.constexpr, WITH_BOOL: tl.constexpr):
    x = V
    if WITH_BOOL:
        x = (tl.load(B) > 0) + V  # an integer meets a bool tensor: the integer's own type
    tl.static_assert(x.dtype == WANT)
    tl.store(Out, x)


@pytest.mark.parametrize("with_bool", [False, True])
@pytest.mark.parametrize("value,want", [
    (5, "int32"), (2**31 - 1, "int32"), (-2**31, "int32"), (2**31, "uint32"), (2**32 - 1, "uint32"),
    (2**32, "int64"), (-2**31 - 1, "int64"), (2**63 - 1, "int64"), (-2**63, "int64"), (2**63, "uint64"),
    (2**64 - 1, "uint64"), (1.5, "float32"), (1e38, "float32"), (1e39, "float64"), (1e-300, "float64")])
def test_python_number_types(value, want, with_bool):
    """A Python number's type as in Triton: int32 if it fits, else uint32, else int64, else uint64; a float is
    float32 unless outside float32's normal range (then float64). The value arrives unchanged."""
    dt = getattr(tl, want)
    out = np.zeros(1, T.from_name(want).np) if want != "bfloat16" else None
    b = np.full(1, -3, np.int32)  # the bool is False: x is V (+ 0)
    const_type[(1,)](out, b, V=value, WANT=dt, WITH_BOOL=with_bool)
    got = out[0].item()
    assert got == value or (isinstance(value, float) and math.isclose(got, value, rel_tol=1e-6))


def test_store_of_a_nonrepresentable_integer_is_refused():
    with pytest.raises(compiler.CompilationError, match="nonrepresentable integer 18446744073709551616"):
        const_type[(1,)](np.zeros(1, np.int64), np.ones(1, np.int32), V=2**64, WANT=tl.int64, WITH_BOOL=False)


@compiler.jit
def _through_pointer_array(Ptrs, Out, N, BLOCK: tl.constexpr):
    src = tl.load(Ptrs + tl.program_id(0)).to(tl.pointer_type(tl.float32))
    offs = tl.arange(0, BLOCK)
    tl.store(Out + tl.program_id(0) * BLOCK + offs, tl.load(src + offs, mask=offs < N, other=0.0))


def test_pointer_array_in_the_interpreter_names_host_memory():
    """Addresses read from memory (a pointer array) reach arrays that are not the launch's arguments: the
    interpreter refuses them with an error that says how to name them (compiler.interpreter.host_memory), and
    with them named the kernel runs."""
    xs = [np.arange(8, dtype=np.float32) + 10 * i for i in range(3)]
    ptrs = np.array([x.__array_interface__["data"][0] for x in xs], np.int64)
    out = np.zeros(3 * 8, np.float32)
    with pytest.raises(compiler.KernelRuntimeError, match=r"compiler\.interpreter\.host_memory\(array, \.\.\.\)"):
        _through_pointer_array[(3,)](ptrs, out, 8, BLOCK=8)
    with compiler.interpreter.host_memory(*xs):
        _through_pointer_array[(3,)](ptrs, out, 8, BLOCK=8)
    np.testing.assert_array_equal(out, np.concatenate(xs))


@compiler.jit
def _past_the_end(X, Out, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(Out + offs, tl.load(X + offs + 8))


def test_index_past_an_argument_gets_no_pointer_array_hint():
    """An index just past an argument's end is the usual out-of-bounds mistake: the error names the argument and
    the offset, without the host_memory hint meant for addresses far from every argument."""
    with pytest.raises(compiler.KernelRuntimeError) as e:
        _past_the_end[(1,)](np.zeros(8, np.float32), np.zeros(8, np.float32), BLOCK=8)
    assert "argument 'X'" in str(e.value) and "host_memory" not in str(e.value)
