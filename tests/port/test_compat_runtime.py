"""What Triton-style kernel and test files reach for beyond the language: `triton.reinterpret` (unsigned and fp8
data through torch), `JITFunction.src` / `_unsafe_update_src`, `tl.dtype(name)`, Triton's error classes, and the
names of dtypes this compiler does not have."""
import re
import textwrap

import numpy as np
import pytest

import compiler
import compiler.language as tl
from compiler.errors import CompileTimeAssertionFailure, CompilerError
from compiler.triton_compat import load_kernel_file
from compiler.triton_compat.runtime import TensorWrapper, reinterpret

from .kernels import TARGETS, poison, run


@compiler.jit
def add_one(X, Y, N, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < N
    tl.store(Y + offs, tl.load(X + offs, mask=m) + 1, mask=m)


@pytest.mark.parametrize("target", TARGETS)
def test_reinterpret_numpy_as_unsigned(target):
    # int32 storage read as uint32: -1 is 0xffffffff, and +1 wraps to 0 (as unsigned arithmetic must)
    rng = np.random.default_rng(5)
    x = rng.integers(-(2**31), 2**31, 100, dtype=np.int64).astype(np.int32)
    x[:4] = [-1, 0, 2**31 - 1, -(2**31)]
    y = poison(100, np.int32)
    wx, wy = reinterpret(x, tl.uint32), reinterpret(y, tl.uint32)
    assert isinstance(wx, TensorWrapper) and wx.dtype is tl.uint32
    if target == "ptxas":
        k = add_one.warmup(wx, wy, 100, BLOCK=128, grid=(1,), target="sm_90a")
        assert ".u32" in k.asm["ptx"] or "add.s32" in k.asm["ptx"]
        assert "u32" in k.asm["tile"]
        return
    run(target, add_one, (1,), wx, wy, 100, BLOCK=128)
    want = (x.view(np.uint32).astype(np.uint64) + 1) % 2**32
    np.testing.assert_array_equal(y.view(np.uint32), want.astype(np.uint32))


def test_reinterpret_cpu_torch_tensor():
    torch = pytest.importorskip("torch")
    x = torch.tensor([-1, 5, -2**15, 2**15 - 1], dtype=torch.int16)
    y = torch.full((4,), 7, dtype=torch.int16)
    add_one[(1,)](reinterpret(x, tl.uint16), reinterpret(y, tl.uint16), 4, BLOCK=4)
    np.testing.assert_array_equal(y.numpy().view(np.uint16), (x.numpy().view(np.uint16).astype(np.int64) + 1)
                                  .astype(np.uint16))


def test_reinterpret_takes_torch_dtypes():
    """Triton's `reinterpret(t, torch.float16)` (its conversion tests pass torch dtypes): the same as the language
    dtype; a torch tensor reinterpreted to its own torch dtype is itself."""
    torch = pytest.importorskip("torch")
    x = torch.tensor([-1, 5, -2**15, 2**15 - 1], dtype=torch.int16)
    w = reinterpret(x, torch.float16)
    assert w.dtype is tl.float16 and w.base is x
    assert reinterpret(x, torch.int16) is x
    with pytest.raises(TypeError, match="cannot be read as float32"):
        reinterpret(x, torch.float32)


def test_reinterpret_rules():
    x = np.zeros(4, np.int32)
    assert reinterpret(reinterpret(x, tl.uint32), tl.int32) is x  # back to the base's own dtype: the base
    assert reinterpret(x, tl.int32) is x
    with pytest.raises(TypeError, match="16-bit.*cannot be read as uint32|32-bit elements cannot be read as uint16"):
        reinterpret(x, tl.uint16)


@compiler.jit
def template(X, Y, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    tl.store(Y + offs, OP)  # noqa: F821 - replaced before it is compiled


def test_unsafe_update_src():
    k = compiler.JITFunction(template.fn)
    assert k.src.startswith("def template(")
    k._unsafe_update_src(k.src.replace("OP", "x * 3 - 1"))
    x = np.random.default_rng(2).standard_normal(32).astype(np.float32)
    y = poison(32, np.float32)
    k[(1,)](x, y, BLOCK=32)
    np.testing.assert_allclose(y, x * 3 - 1, rtol=1e-6)
    assert "x * 3 - 1" in k.src
    # a mistake in the new text is reported at its line, with the line shown
    bad = compiler.JITFunction(template.fn)
    bad._unsafe_update_src(bad.src.replace("OP", "x << 2"))
    with pytest.raises(compiler.CompilationError, match=r"tilefarm-src-\d+:template>:4:\d+: .*integer") as e:
        bad[(1,)](x, y, BLOCK=32)
    assert "x << 2" in str(e.value)


def test_device_caches_and_line_info_switch(monkeypatch, tmp_path):
    """Triton's `kernel.device_caches.clear()` exists and empties the handle; a warmup after TRITON_DISABLE_LINE_INFO
    is set compiles without line information (the switch is part of the compiled kernel's key)."""
    pytest.importorskip("llvmlite")
    monkeypatch.setenv("TILEFARM_CACHE_DIR", str(tmp_path))
    k = compiler.JITFunction(static_check.fn)  # a handle of its own
    x = np.zeros(32, np.float32)
    first = k.warmup(x, BLOCK=32, grid=(1,), target="sm_90a")
    assert ".loc" in first.asm["ptx"]
    k.device_caches.clear()
    assert len(k.device_caches) == 0 and list(k.device_caches) == []
    monkeypatch.setenv("TRITON_DISABLE_LINE_INFO", "1")
    again = k.warmup(x, BLOCK=32, grid=(1,), target="sm_90a")
    assert again is not first and ".loc" not in again.asm["ptx"]


@pytest.mark.gpu
def test_device_caches_clear_drops_launched_kernels():
    """After a launch the handle holds the compiled kernel; clear() drops it and the next launch compiles (or loads
    from the disk cache) again and still computes the right thing."""
    k = compiler.JITFunction(static_check.fn)
    y = poison(32, np.float32)
    run("gpu", k, (1,), y, BLOCK=32)
    assert len(k.device_caches) == 1 and len(k.device_caches[0][0]) == 1
    k.device_caches.clear()
    assert len(k.device_caches) == 0
    y = poison(32, np.float32)
    run("gpu", k, (1,), y, BLOCK=32)
    assert len(k.device_caches) == 1
    np.testing.assert_array_equal(y, np.ones(32, np.float32))


def test_dtype_by_name():
    assert tl.dtype("int8") is tl.int8 and tl.dtype("fp16") is tl.float16 and tl.dtype("bf16") is tl.bfloat16
    assert [tl.dtype(n) for n in tl.dtype.SINT_TYPES] == [tl.int8, tl.int16, tl.int32, tl.int64]
    assert tl.dtype(tl.dtype.UINT_TYPES[0]) is tl.int1
    with pytest.raises(ValueError, match="unknown dtype"):
        tl.dtype("int7")


@compiler.jit
def static_check(X, BLOCK: tl.constexpr):
    tl.static_assert(BLOCK % 32 == 0, "BLOCK must be a multiple of 32")
    tl.store(X + tl.arange(0, BLOCK), 1.0)


def test_static_assert_class():
    with pytest.raises(CompileTimeAssertionFailure, match="BLOCK must be a multiple of 32"):
        static_check[(1,)](np.zeros(16, np.float32), BLOCK=16)
    assert issubclass(CompileTimeAssertionFailure, compiler.CompilationError)
    assert issubclass(compiler.CompilationError, CompilerError)
    assert issubclass(compiler.KernelRuntimeError, CompilerError)


KERNELS = '''
import triton
import triton.language as tl
from triton.runtime.errors import InterpreterError
from triton.compiler.errors import CompilationError, CompileTimeAssertionFailure


@triton.jit
def uses_fp8b8(X, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    tl.store(X + tl.arange(0, BLOCK), x.to(tl.float8e4b8).to(tl.float32))


@triton.jit
def uses_missing(X, BLOCK: tl.constexpr):
    tl.store(X + tl.arange(0, BLOCK), tl.no_such_function(BLOCK))


@triton.jit
def bad_bitwise(X, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    tl.store(X + tl.arange(0, BLOCK), x | x)
'''


def test_compat_names(tmp_path):
    p = tmp_path / "k.py"
    p.write_text(textwrap.dedent(KERNELS))
    m = load_kernel_file(p)
    x = np.ones(8, np.float32)
    tl_compat = m.tl
    assert repr(tl_compat.float8e4b8) == "float8e4b8" and tl_compat.float8e4b8 != tl_compat.float8e5
    with pytest.raises(compiler.CompilationError, match=r"k\.py:\d+:\d+: tl\.float8e4b8 is not supported in this architecture"):
        m.uses_fp8b8[(1,)](x, BLOCK=8)
    with pytest.raises(compiler.CompilationError, match=r"tl\.no_such_function is not supported by this compiler"):
        m.uses_missing[(1,)](x, BLOCK=8)
    # Triton's error classes catch ours
    with pytest.raises(m.triton.TritonError, match="invalid operands of type"):
        m.bad_bitwise[(1,)](x, BLOCK=8)
    with pytest.raises(m.InterpreterError):
        m.bad_bitwise[(1,)](x, BLOCK=8)
    assert m.CompileTimeAssertionFailure is CompileTimeAssertionFailure
    t = m.triton.runtime.driver.active.get_current_target()
    assert t.backend == "cuda" and t.warp_size == 32 and t.arch >= 70


@compiler.jit
def fp8_to_f32(X, Y, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(Y + offs, tl.load(X + offs).to(tl.float32))


@pytest.mark.parametrize("name", ["float8_e4m3fn", "float8_e5m2"])
def test_cpu_torch_fp8_argument(name):
    torch = pytest.importorskip("torch")
    vals = torch.tensor([0.5, -1.75, 3.0, 0.0, 448.0 if name == "float8_e4m3fn" else 57344.0, -0.125, 2.5, 10.0])
    x = vals.to(getattr(torch, name))
    y = torch.full((8,), float("nan"))
    fp8_to_f32[(1,)](x, y, BLOCK=8)
    assert torch.equal(y, x.to(torch.float32))


@compiler.jit
def scalar_pointer_indexed(Z, X, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK)[:, None] * BLOCK + tl.arange(0, BLOCK)[None, :])
    z = tl.sum(tl.sum(x, axis=1, keep_dims=True), axis=0, keep_dims=True)   # [1, 1]
    tl.store(Z[None, None, :], z)   # a ':' past the rank keeps nothing, as in Triton


@compiler.jit
def bounded_slice(X):
    X[10:]


def test_indexing_rules():
    x = np.random.default_rng(0).standard_normal((8, 8)).astype(np.float32)
    z = np.full(1, np.nan, np.float32)
    scalar_pointer_indexed[(1,)](z, x, BLOCK=8)
    np.testing.assert_allclose(z[0], x.astype(np.float64).sum(), rtol=1e-5)
    with pytest.raises(compiler.CompilationError, match="unsupported tensor index 10:"):
        bounded_slice[(1,)](np.zeros(16, np.float32))


def _make_scaled_store(scale, dtype):
    scale = tl.constexpr(scale)  # a kernel reads a closure's number only as a constexpr (as in Triton)

    @compiler.jit
    def k(X, Y, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(Y + offs, (tl.load(X + offs) * scale).to(dtype))

    return k


@pytest.mark.parametrize("target", TARGETS)
def test_kernels_of_one_factory_keep_their_closures(target):
    # one code object, different closure values: each kernel compiles with its own (in memory and on disk)
    x = np.arange(8, dtype=np.float32) + 0.25
    for scale, dt, npdt in [(2.0, tl.float32, np.float32), (3.0, tl.float16, np.float16), (5.0, tl.int32, np.int32)]:
        k = _make_scaled_store(scale, dt)
        if target == "ptxas":
            # the output pointer's dtype is the argument's; the closure shows in the constant and the cast
            ck = k.warmup(x, np.zeros(8, np.float32), BLOCK=8, grid=(1,), target="sm_90a")
            tile = ck.asm["tile"]
            assert f"value={scale}" in tile
            assert (f"{{to={dt}}}" in tile) == (dt != tl.float32)
            assert ck.asm["cubin"]
            continue
        y = poison(8, npdt)
        run(target, k, (1,), x, y, BLOCK=8)
        np.testing.assert_array_equal(y, (x * scale).astype(npdt))


@compiler.must_use_result("Assign it.")
@compiler.jit
def cube(x):
    return x * x * x


@compiler.jit
def discards_cube(X, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    cube(x)


@compiler.jit
def uses_cube(X, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    tl.store(X + tl.arange(0, BLOCK), cube(x))


def test_must_use_result():
    x = np.arange(4, dtype=np.float32)
    with pytest.raises(compiler.CompilationError, match=r":\d+:\d+: The result of cube is not being used\. Assign it\."):
        discards_cube[(1,)](x, BLOCK=4)
    uses_cube[(1,)](x, BLOCK=4)
    np.testing.assert_array_equal(x, np.arange(4, dtype=np.float32) ** 3)


def test_compile_astsource():
    from compiler.triton_compat.runtime import ASTSource, GPUTarget, compile

    @compiler.jit
    def k(X, Y, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(Y + offs, tl.load(X + offs, mask=offs < n).to(tl.float16), mask=offs < n)

    ck = compile(ASTSource(k, {"X": "*fp32", "Y": "*fp16", "n": "i32"}, {"BLOCK": 64}),
                 target=GPUTarget("cuda", 90, 32))
    assert "ptr<f32>" in ck.asm["tile"] and "ptr<f16>" in ck.asm["tile"] and ".target sm_90" in ck.asm["ptx"]
    ck2 = compile(ASTSource(k, {0: "*kfp32", 1: "*fp16", 2: "i64", 3: "constexpr"}, {(3,): 32}))
    assert "%n: i64" in ck2.asm["tile"]

    @compiler.jit
    def bad():
        a += 1  # noqa: F821

    with pytest.raises(compiler.CompilationError, match="is not defined"):
        compile(ASTSource(bad, {}, {}))


# --- Triton's JIT hooks (triton.knobs.runtime), JITFunction.preload and the fresh_knobs fixture ---------------------

class _FakeGPUArray:
    """A GPU array by `__cuda_array_interface__` only: specialized like a device tensor (a 16-byte aligned float32
    pointer), so a launch takes the compiled kernel's path without a GPU (the kernel's `launch` is replaced)."""

    def __init__(self, n=32):
        self.__cuda_array_interface__ = {"data": (0x10000, False), "typestr": "<f4", "shape": (n,), "version": 3}


@pytest.fixture
def no_compile_caches(monkeypatch):
    """compile_kernel's memory cache empty and the disk cache off: compile.stats()["compiled"] counts every compile."""
    import compiler.compile as C

    pytest.importorskip("llvmlite")
    monkeypatch.setenv("TILEFARM_CACHE", "0")
    monkeypatch.setattr(C, "_mem_cache", {})
    return C


def test_knobs_runtime_is_the_jits():
    from compiler.jit import runtime_knobs
    from compiler.triton_compat.modules import compat_module

    knobs = compat_module("triton.knobs")
    assert knobs.runtime is runtime_knobs
    assert knobs.runtime.jit_cache_hook is None and knobs.runtime.jit_post_compile_hook is None


def test_jit_cache_hook_once_per_new_specialization(monkeypatch, no_compile_caches):
    import json

    from compiler.jit import JitFunctionInfo, runtime_knobs

    calls = []
    monkeypatch.setattr(runtime_knobs, "jit_cache_hook", lambda **kw: calls.append(kw))
    k = compiler.JITFunction(static_check.fn)
    x = np.zeros(32, np.float32)
    w = k.warmup(x, BLOCK=32, grid=(1,), target="sm_90a")
    assert w is not None and len(calls) == 1
    kw = calls[0]
    assert set(kw) == {"key", "repr", "fn", "compile", "is_manual_warmup", "already_compiled"}
    assert isinstance(kw["fn"], JitFunctionInfo) and kw["fn"].name == "static_check" and kw["fn"].jit_function is k
    assert kw["is_manual_warmup"] is True and kw["already_compiled"] is False
    assert kw["compile"]["key"] == kw["key"] and kw["compile"]["constants"] == {"BLOCK": 32}
    assert kw["compile"]["signature"] == {"X": "*fp32", "BLOCK": "constexpr"}
    data = json.loads(kw["compile"]["specialization_data"])
    assert data["name"] == "static_check" and data["source_hash"] == k.cache_key
    assert data["options"]["num_warps"] == 4 and data["options"]["target"] == "sm_90a"
    assert "static_check[num_warps=4" in kw["repr"]
    k.warmup(x, BLOCK=32, grid=(1,), target="sm_90a")  # filed: no hook
    assert len(calls) == 1
    k.warmup(x, BLOCK=64, grid=(1,), target="sm_90a")  # another specialization
    assert len(calls) == 2
    k.device_caches[0][0].clear()  # as Triton's tests do: the next warmup is a new specialization again
    k.warmup(x, BLOCK=32, grid=(1,), target="sm_90a")
    assert len(calls) == 3


def test_jit_cache_hook_truthy_skips_the_compile(monkeypatch, no_compile_caches):
    from compiler.jit import runtime_knobs

    C = no_compile_caches
    monkeypatch.setattr(runtime_knobs, "jit_cache_hook", lambda **kw: True)
    posted = []
    monkeypatch.setattr(runtime_knobs, "jit_post_compile_hook", lambda **kw: posted.append(kw))
    k = compiler.JITFunction(static_check.fn)
    before = C.stats()["compiled"]
    assert k.warmup(np.zeros(32, np.float32), BLOCK=32, grid=(1,), target="sm_90a") is None
    assert k[(1,)](_FakeGPUArray(), BLOCK=32) is None  # a launch: nothing compiled, nothing launched
    assert C.stats()["compiled"] == before and len(k.device_caches[0][0]) == 0 and posted == []


def test_jit_post_compile_hook_runs_after_the_compile(monkeypatch, no_compile_caches):
    from compiler.jit import runtime_knobs

    order = []
    k = compiler.JITFunction(static_check.fn)
    monkeypatch.setattr(runtime_knobs, "jit_cache_hook", lambda **kw: order.append(("cache", len(k.device_caches[0][0]))))

    def post(**kw):
        order.append(("post", len(k.device_caches[0][0])))
        assert kw["compile"]["specialization_data"] and kw["fn"].jit_function is k

    monkeypatch.setattr(runtime_knobs, "jit_post_compile_hook", post)
    assert k.warmup(np.zeros(32, np.float32), BLOCK=32, grid=(1,), target="sm_90a") is not None
    assert order == [("cache", 0), ("post", 1)]


def test_preload_gives_warmups_kernel_and_fills_the_cache(monkeypatch, no_compile_caches):
    from compiler.jit import runtime_knobs

    C = no_compile_caches
    datas = []
    monkeypatch.setattr(runtime_knobs, "jit_cache_hook",
                        lambda **kw: datas.append(kw["compile"]["specialization_data"]))
    k = compiler.JITFunction(static_check.fn)
    w = k.warmup(np.zeros(32, np.float32), BLOCK=32, grid=(1,))  # the current device's target, as a launch's
    assert len(datas) == 1 and w.hash == w.key
    k.device_caches[0][0].clear()
    C._mem_cache.clear()
    before = C.stats()["compiled"]
    p = k.preload(datas[0])
    assert p is not None and p.hash == w.hash and C.stats()["compiled"] == before + 1
    assert len(datas) == 2  # preload compiles a new specialization: the hook sees it, as in Triton
    launched = []
    p.launch = lambda grid, stream, args: launched.append((grid, args))
    got = k[(1,)](_FakeGPUArray(), BLOCK=32)
    assert got is p and launched == [((1,), [0x10000])]
    assert C.stats()["compiled"] == before + 1 and len(datas) == 2  # the launch compiled nothing
    # a fresh handle of the same source takes the data too
    q = compiler.JITFunction(static_check.fn).preload(datas[0])
    assert q.hash == w.hash


def test_preload_refuses_data_of_an_edited_or_other_kernel(monkeypatch, no_compile_caches):
    from compiler.jit import runtime_knobs

    datas = []
    monkeypatch.setattr(runtime_knobs, "jit_cache_hook",
                        lambda **kw: datas.append(kw["compile"]["specialization_data"]))
    k = compiler.JITFunction(static_check.fn)
    k.warmup(np.zeros(32, np.float32), BLOCK=32, grid=(1,), target="sm_90a")
    edited = compiler.JITFunction(static_check.fn)
    edited._unsafe_update_src(edited.src.replace("1.0", "2.0"))
    with pytest.raises(RuntimeError, match="another version of the kernel's source"):
        edited.preload(datas[0])
    with pytest.raises(RuntimeError, match="Specialization data is for static_check but trying to preload for add_one"):
        add_one.preload(datas[0])
    with pytest.raises(RuntimeError, match="not specialization data"):
        k.preload('{"name": "static_check"}')


@compiler.jit
def _nested_tuple_kernel(x):
    for _ in range(1):
        tl.static_assert(x[1][0] == 2)


def test_preload_of_a_nested_tuple_with_a_constexpr(monkeypatch, no_compile_caches):
    """Triton's test_passing_nested_tuple_with_constexpr_and_jit_hook, without the suite's harness."""
    from compiler.jit import runtime_knobs

    datas = []
    monkeypatch.setattr(runtime_knobs, "jit_cache_hook",
                        lambda **kw: datas.append(kw["compile"]["specialization_data"]))
    _nested_tuple_kernel.device_caches[0][0].clear()
    w = _nested_tuple_kernel.warmup(((1,), (tl.constexpr(2),)), grid=(1,))
    assert w is not None and len(datas) == 1
    assert _nested_tuple_kernel.preload(datas[0]).hash == w.hash


def test_fresh_knobs_resets_and_restores(monkeypatch):
    """What the external-suite harness's `fresh_knobs` fixture (scripts/extsuite/plugin.py) yields."""
    from compiler.jit import runtime_knobs
    from compiler.triton_compat.modules import fresh_knobs

    def mine(**kw):
        return None

    monkeypatch.setattr(runtime_knobs, "jit_post_compile_hook", mine)
    with fresh_knobs() as knobs:
        assert knobs.runtime is runtime_knobs and knobs.runtime.jit_post_compile_hook is None
        knobs.runtime.jit_cache_hook = mine
        knobs.runtime.override_arch = "sm80"
        knobs.runtime.some_knob_we_lack = 1  # dropped after the test
    assert runtime_knobs.jit_post_compile_hook is mine and runtime_knobs.jit_cache_hook is None
    assert runtime_knobs.override_arch is None and not hasattr(runtime_knobs, "some_knob_we_lack")


@compiler.jit
def _mul_add(data, BLOCK: tl.constexpr):
    ptrs = data + tl.arange(0, BLOCK)
    tl.store(ptrs, tl.load(ptrs) * 1.5 + 1.0)


def _has_fma(ck) -> bool:
    return re.search(r"(mad|fma)\.r[nzmp]\.(ftz\.)?f32", ck.asm["ptx"]) is not None


def test_enable_fp_fusion_is_honoured_by_warmup_and_knobs():
    """enable_fp_fusion=False (a launch option, or knobs.language.default_fp_fusion where a launch does not pass
    it) keeps a*b+c a multiply and an add, as Triton: it was accepted and ignored (an FMA was made anyway)."""
    from compiler.triton_compat.modules import compat_module, fresh_knobs

    x = np.zeros(128, np.float32)
    assert _has_fma(_mul_add.warmup(x, BLOCK=128, grid=(1,), target="sm_90"))
    off = _mul_add.warmup(x, BLOCK=128, grid=(1,), target="sm_90", enable_fp_fusion=False)
    assert not _has_fma(off) and re.search(r"mul(\.rn)?\.f32", off.asm["ptx"])
    with fresh_knobs() as knobs:
        assert knobs is compat_module("triton.knobs") and knobs.language.default_fp_fusion is True
        knobs.language.default_fp_fusion = False
        assert not _has_fma(_mul_add.warmup(x, BLOCK=128, grid=(1,), target="sm_90"))
        assert _has_fma(_mul_add.warmup(x, BLOCK=128, grid=(1,), target="sm_90", enable_fp_fusion=True))
    assert knobs.language.default_fp_fusion is True


@compiler.jit
def _exp2_rsqrt(data, BLOCK: tl.constexpr):
    ptrs = data + tl.arange(0, BLOCK)
    tl.store(ptrs, tl.math.exp2(tl.load(ptrs)) + tl.math.rsqrt(tl.load(ptrs)))


def test_enable_reflect_ftz_keeps_denormals_when_off():
    """Triton's enable_reflect_ftz (default on): float32 exp2 and rsqrt flush denormals (ex2/rsqrt.approx.ftz);
    enable_reflect_ftz=False keeps them (the forms without .ftz), a separate compile. It was refused as an unknown
    argument."""
    x = np.zeros(128, np.float32)
    on = _exp2_rsqrt.warmup(x, BLOCK=128, grid=(1,), target="sm_90")
    off = _exp2_rsqrt.warmup(x, BLOCK=128, grid=(1,), target="sm_90", enable_reflect_ftz=False)
    assert "ex2.approx.ftz.f32" in on.asm["ptx"] and "rsqrt.approx.ftz.f32" in on.asm["ptx"]
    assert "ex2.approx.f32" in off.asm["ptx"] and "rsqrt.approx.f32" in off.asm["ptx"]
    assert ".ftz" not in off.asm["ptx"] and off.asm["cubin"]
    assert _exp2_rsqrt.warmup(x, BLOCK=128, grid=(1,), target="sm_90", enable_reflect_ftz=True) is on


@compiler.jit
def _f32_dot(A, B, C, N: tl.constexpr):
    r = tl.arange(0, N)
    a = tl.load(A + r[:, None] * N + r[None, :])
    b = tl.load(B + r[:, None] * N + r[None, :])
    tl.store(C + r[:, None] * N + r[None, :], tl.dot(a, b))


def test_fp32_default_sets_the_precision_of_dots_that_name_none(monkeypatch):
    """TRITON_F32_DEFAULT / triton.knobs.language.fp32_default, as in Triton: the input precision of a float32 dot
    without input_precision ("ieee": full float32 products), part of the compile options; a value that is not a
    precision is a compile error naming the knob."""
    from compiler.compile import options_for
    from compiler.ir.printer import print_module
    from compiler.triton_compat.modules import fresh_knobs

    rng = np.random.default_rng(3)
    a = (1 + rng.random((16, 16)) * 2 ** -12).astype(np.float32)  # mantissa bits a tf32 product drops
    b = np.ones((16, 16), np.float32)
    ref = a.astype(np.float64) @ b.astype(np.float64)

    def prec_and_error():
        ir = print_module(_f32_dot.lower(a, b, a, N=16))
        c = np.zeros((16, 16), np.float32)
        _f32_dot[(1,)](a, b, c, N=16)  # NumPy arrays: the interpreter
        return re.search(r'input_precision="(\w+)"', ir).group(1), np.abs(c - ref).max()

    prec, err = prec_and_error()
    assert prec == "tf32" and err > 1e-4 and options_for().fp32_default is None
    monkeypatch.setenv("TRITON_F32_DEFAULT", "ieee")
    with fresh_knobs() as knobs:
        assert knobs.language.fp32_default is None and options_for().fp32_default == "ieee"  # from the variable
        _f32_dot._ir_cache.clear()
        prec, err = prec_and_error()
        assert prec == "ieee" and err < 1e-5
        knobs.language.fp32_default = "bogus"
        _f32_dot._ir_cache.clear()
        with pytest.raises(CompilerError, match="fp32_default"):
            _f32_dot.lower(a, b, a, N=16)
    monkeypatch.delenv("TRITON_F32_DEFAULT")
    assert options_for().fp32_default is None
    with fresh_knobs() as knobs:
        knobs.language.fp32_default = "tf32x3"
        assert options_for().fp32_default == "tf32x3"


def test_tritons_other_launch_options_accepted_or_refused_clearly(monkeypatch):
    """launch_pdl, sanitize_overflow and default_dot_input_precision are accepted (they change nothing a kernel here
    can tell); launch_cooperative_grid=True and an instrumentation mode are refused by name (they were 'unexpected
    arguments')."""
    monkeypatch.setenv("TILEFARM_INTERPRET", "1")
    x = np.ones(128, np.float32)
    _mul_add[(1,)](x, BLOCK=128, launch_pdl=True, sanitize_overflow=True, default_dot_input_precision="ieee",
                   launch_cooperative_grid=False)
    np.testing.assert_allclose(x, 2.5)
    k = _mul_add.warmup(x, BLOCK=128, grid=(1,), target="sm_90", launch_pdl=True)
    assert ".entry" in k.asm["ptx"]
    with pytest.raises(TypeError, match="launch_cooperative_grid=True is not supported"):
        _mul_add[(1,)](x, BLOCK=128, launch_cooperative_grid=True)
    with pytest.raises(TypeError, match="instrumentation_mode"):
        _mul_add.warmup(x, BLOCK=128, grid=(1,), instrumentation_mode="warp")
    with pytest.raises(TypeError, match="default_dot_input_precision must be one of"):
        _mul_add[(1,)](x, BLOCK=128, default_dot_input_precision="fp64")


def test_arch_option_and_override_arch_name_the_target(monkeypatch):
    """Triton's `arch` option (warmup(..., arch="sm80")), knobs.runtime.override_arch and TRITON_OVERRIDE_ARCH name
    the compile target as Triton spells it; a name that is no compute capability is refused."""
    from compiler.triton_compat.modules import fresh_knobs

    x = np.ones(128, np.float32)
    assert _mul_add.warmup(x, BLOCK=128, grid=(1,), arch="sm80").metadata["arch"] == "sm_80"
    assert ".target sm_80" in _mul_add.warmup(x, BLOCK=128, grid=(1,), arch="sm_80").asm["ptx"]
    with fresh_knobs() as knobs:
        knobs.runtime.override_arch = "sm90"
        assert _mul_add.warmup(x, BLOCK=128, grid=(1,)).metadata["arch"] == "sm_90"
    monkeypatch.setenv("TRITON_OVERRIDE_ARCH", "sm89")
    assert _mul_add.warmup(x, BLOCK=128, grid=(1,)).metadata["arch"] == "sm_89"
    with pytest.raises(TypeError, match="arch must name"):
        _mul_add.warmup(x, BLOCK=128, grid=(1,), arch="gfx942")


def test_num_warps_not_a_power_of_2_is_refused_as_triton_refuses_it():
    """num_warps=3: the error is a ValueError and, as Triton's (an `assert`), an AssertionError, saying 'must be a
    power of 2'; 1, 2 and 4 compile."""
    x = np.zeros(128, np.float32)
    for exc in (AssertionError, ValueError):
        with pytest.raises(exc, match="must be a power of 2"):
            _mul_add.warmup(x, BLOCK=128, grid=(1,), target="sm_90", num_warps=3)
    for w in (1, 2, 4):
        assert _mul_add.warmup(x, BLOCK=128, grid=(1,), target="sm_90", num_warps=w).asm["ptx"]


def test_num_ctas_above_1_needs_hopper():
    """num_ctas > 1 (Triton's thread-block clusters) is taken and ignored on sm_90 (one block a program computes
    the same results); for an older target it is a ValueError, as Triton's."""
    x = np.zeros(128, np.float32)
    with pytest.raises(ValueError, match=r"num_ctas > 1 requires NVIDIA SM90\+ \(Hopper\)"):
        _mul_add.warmup(x, BLOCK=128, grid=(1,), num_ctas=2, arch="sm80")
    assert _mul_add.warmup(x, BLOCK=128, grid=(1,), num_ctas=2, target="sm_90a").asm["ptx"]


def test_cublas_binding_of_triton_tests():
    """`from triton._C.libtriton import nvidia; nvidia.cublas.CublasLt(ws).matmul(A, B, C)`: Triton's tests take
    reference products from it (test_warp_specialization imports it at module level on Hopper, so the whole file
    failed to import). C = A @ B^T, B given [N, K], in C's dtype."""
    torch = pytest.importorskip("torch")
    from compiler.triton_compat.modules import compat_module

    nvidia = compat_module("triton._C.libtriton").nvidia
    assert compat_module("triton")._C.libtriton.nvidia is nvidia
    cublas = nvidia.cublas.CublasLt(torch.empty(1024, dtype=torch.uint8))
    g = torch.Generator().manual_seed(5)
    a, b = torch.randn((32, 48), generator=g), torch.randn((16, 48), generator=g)
    c = torch.empty((32, 16), dtype=torch.float16)
    cublas.matmul(a.half(), b.half(), c)
    ref = a.half().double() @ b.half().double().T
    assert torch.allclose(c.double(), ref, rtol=2e-3, atol=2e-3)
    with pytest.raises(ValueError, match=r"B as \[N, K\]"):
        cublas.matmul(a, b.T.contiguous(), c)


@compiler.jit
def _scaled(X, Out, scale, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(Out + offs, tl.load(X + offs) * scale)


def test_numpy_float64_scalar_is_a_float32_argument_as_in_triton():
    """numpy.float64 is a Python float (a subclass): Triton 3.6 specializes it as fp32, like 0.125 (`1 /
    np.sqrt(D)` as an attention scale); it was typed float64 here, which made float64 arithmetic of everything
    it touched. numpy.float32 / float16 scalars keep their own types (Triton refuses those)."""
    x = np.arange(16, dtype=np.float32)
    for s in (0.125, np.float64(0.125)):
        k = _scaled.warmup(x, x, s, BLOCK=16, grid=(1,), target="sm_90")
        assert ".f64" not in k.asm["ptx"]
        out = np.zeros(16, np.float32)
        _scaled[(1,)](x, out, s, BLOCK=16)
        np.testing.assert_array_equal(out, x * np.float32(0.125))
    assert ".f16" in _scaled.warmup(x, x, np.float16(0.125), BLOCK=16, grid=(1,), target="sm_90").asm["ptx"]
