"""In-kernel tensor descriptors (`tl.make_tensor_descriptor`) served by TMA: the kernel writes a CUDA
tensor map per creating call site into per-program global scratch (tensormap.replace, the tensormap proxy fences;
codegen/tensormap.py), and its wgmma ring loads and 2-D stores then use it exactly as a host-side descriptor's map.

(The A/B `desc_tma`, made the code after the H100 run of 2026-12-07, where these tests first passed on the GPU.)
interp: the interpreter's results (the spec: zero fill, clipped stores) against the float64 NumPy reference;
ptxas: PTX for sm_90a with tensormap.replace + cp.async.bulk.tensor, assembled;
gpu: run against the float64 NumPy reference (ragged M, N, K: TMA's zero fill);
the launcher's scratch (sizes, reuse, set_allocator) is checked on the CPU with the allocation mocked."""
import ml_dtypes
import numpy as np
import pytest

import compiler
import compiler.language as tl

from .conftest import CompiledOnly
from .test_ops import TARGETS

BF16 = np.dtype(ml_dtypes.bfloat16)


@compiler.jit
def desc_mm(A, B, C, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    a_d = tl.make_tensor_descriptor(A, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    b_d = tl.make_tensor_descriptor(B, shape=[K, N], strides=[N, 1], block_shape=[BK, BN])
    c_d = tl.make_tensor_descriptor(C, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    om = tl.program_id(0) * BM
    on = tl.program_id(1) * BN
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = a_d.load([om, k * BK])
        b = b_d.load([k * BK, on])
        acc = tl.dot(a, b, acc)
    c_d.store([om, on], acc)


@compiler.jit
def desc_mm_persistent(A, B, C, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                       NUM_SMS: tl.constexpr):
    # C = A @ B^T (B is [N, K], nn.Linear's weight); the descriptors are made once, before the persistent loop
    a_d = tl.make_tensor_descriptor(A, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    b_d = tl.make_tensor_descriptor(B, shape=[N, K], strides=[K, 1], block_shape=[BN, BK])
    c_d = tl.make_tensor_descriptor(C, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    num_n = tl.cdiv(N, BN)
    for tile in tl.range(tl.program_id(0), tl.cdiv(M, BM) * num_n, NUM_SMS):
        om = (tile // num_n) * BM
        on = (tile % num_n) * BN
        acc = tl.zeros([BM, BN], dtype=tl.float32)
        for ki in range(tl.cdiv(K, BK)):
            a = a_d.load([om, ki * BK])
            b = b_d.load([on, ki * BK])
            acc = tl.dot(a, b.T, acc)
        c_d.store([om, on], acc.to(C.dtype.element_ty))


@compiler.jit
def desc_store_scale(X, Y, M, N, ldy, s, BM: tl.constexpr, BN: tl.constexpr):
    # plain masked loads, a store through an in-kernel descriptor (the ragged edge clipped)
    y_d = tl.make_tensor_descriptor(Y, shape=[M, N], strides=[ldy, 1], block_shape=[BM, BN])
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    m = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(X + rm[:, None] * N + rn[None, :], mask=m, other=0.0)
    y_d.store([tl.program_id(0) * BM, tl.program_id(1) * BN], (x * s).to(Y.dtype.element_ty))


@compiler.jit
def desc_mm_runtime_last_stride(A, B, C, M, N, K, sk, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # A's last stride is a runtime value: no tensor map can be proved for it (B's and C's still get one)
    a_d = tl.make_tensor_descriptor(A, shape=[M, K], strides=[K, sk], block_shape=[BM, BK])
    b_d = tl.make_tensor_descriptor(B, shape=[K, N], strides=[N, 1], block_shape=[BK, BN])
    c_d = tl.make_tensor_descriptor(C, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    om = tl.program_id(0) * BM
    on = tl.program_id(1) * BN
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        acc = tl.dot(a_d.load([om, k * BK]), b_d.load([k * BK, on]), acc)
    c_d.store([om, on], acc)


def _matmul_case(rng, M, N, K, dtype, b_nk=False):
    a = (rng.standard_normal((M, K)) / 4).astype(dtype)
    b = (rng.standard_normal((N, K) if b_nk else (K, N)) / 4).astype(dtype)
    ref = a.astype(np.float64) @ (b.astype(np.float64).T if b_nk else b.astype(np.float64))
    return a, b, ref


def _run(target, kernel, grid, arrays, scalars, expect=None, **meta):
    """Launch: the interpreter on NumPy arrays, ptxas (compile for sm_90a, check the PTX for the strings in `expect`
    {string: present?}, assemble), or the GPU on device copies (copied back)."""
    if hasattr(kernel, "_drop_compiled"):
        kernel._drop_compiled()
    if target == "interp":
        kernel[grid](*arrays, *scalars, **meta)
        return None
    if target == "ptxas":
        ck = kernel.warmup(*arrays, *scalars, grid=grid, target="sm_90a", **meta)
        ptx = ck.asm["ptx"]
        for s, present in (expect or {}).items():
            assert (s in ptx) == present, f"{s!r} {'missing from' if present else 'in'} the PTX"
        assert isinstance(ck.asm["cubin"], bytes) and len(ck.asm["cubin"]) > 0
        raise CompiledOnly()
    from compiler.runtime import DeviceArray, synchronize

    dev = [DeviceArray.from_numpy(a) for a in arrays]
    kernel[grid](*dev, *scalars, **meta)
    synchronize()
    for a, d in zip(arrays, dev):
        a[...] = d.numpy().reshape(a.shape)
    return None


TMA_PTX = {"tensormap.replace.tile.global_address.global.b1024.b64": True,
           "fence.proxy.tensormap::generic.release.gpu": True, "fence.proxy.tensormap::generic.acquire.gpu": True,
           "cp.async.bulk.tensor.2d.shared::cluster": True, "mbarrier.try_wait.parity": True}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["float16", BF16])
@pytest.mark.parametrize("BM,BN,BK,warps", [(64, 64, 64, 4), (128, 128, 64, 8), (64, 128, 32, 4)])
def test_desc_tma_matmul(target, dtype, BM, BN, BK, warps):
    """Ragged M, N and K (TMA's zero fill feeds the last K step and the edge tiles; the fp32 store is clipped)."""
    rng = np.random.default_rng(1)
    M, N, K = 2 * BM + 24, 2 * BN - 8, 3 * BK + 40
    a, b, ref = _matmul_case(rng, M, N, K, dtype)
    c = np.full((M, N), np.nan, np.float32)
    expect = dict(TMA_PTX, **{"cp.async.bulk.tensor.2d.global.shared::cta": True})
    _run(target, desc_mm, (-(-M // BM), -(-N // BN)), [a, b, c], [M, N, K], expect=expect,
         BM=BM, BN=BN, BK=BK, num_warps=warps, num_stages=3)
    np.testing.assert_allclose(c, ref, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["float16", BF16])
def test_desc_tma_persistent(target, dtype):
    """Maps made once before the persistent loop (three call sites: three maps a program), the ring restarted for
    every tile."""
    rng = np.random.default_rng(3)
    M, N, K, BM, BN, BK = 200, 136, 200, 64, 64, 64
    a, b, ref = _matmul_case(rng, M, N, K, dtype, b_nk=True)
    c = np.full((M, N), np.nan, dtype)
    _run(target, desc_mm_persistent, (5,), [a, b, c], [M, N, K], expect=TMA_PTX,
         BM=BM, BN=BN, BK=BK, NUM_SMS=5, num_warps=4, num_stages=3)
    np.testing.assert_allclose(c.astype(np.float64), ref, rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["float16", "float32"])
@pytest.mark.parametrize("N", [80, 72])
def test_desc_tma_store(target, dtype, N):
    """A store through an in-kernel descriptor is a TMA store. TMA clips a store at 16-byte units of the row, so where
    the inner extent is not proved a whole number of them (N = 72; N = 80 is, the launch specializes it as a
    multiple of 16) the block votes on its mask first and a tile over the edge takes the masked store. The ragged
    edge dropped either way: y's columns past N (a wider array) stay as poisoned."""
    rng = np.random.default_rng(2)
    M, BM, BN = 100, 32, 32
    x = rng.standard_normal((M, N)).astype(dtype)
    y = np.full((M, 96), np.nan, dtype)
    expect = {"tensormap.replace.tile.global_address": True, "cp.async.bulk.tensor.2d.global.shared::cta": True,
              "bar.red.and.pred": N % 16 != 0}
    _run(target, desc_store_scale, (4, 3), [x, y], [M, N, 96, 1.5], expect=expect, BM=BM, BN=BN)
    np.testing.assert_allclose(y[:, :N].astype(np.float64), x.astype(np.float64) * 1.5, rtol=1e-3)
    assert np.isnan(y[:, N:].astype(np.float64)).all(), "a store wrote past the descriptor's inner extent"


def test_persistent_maps_made_once():
    """Three maps, written before the persistent loop (no tensormap.replace after its first branch back), 384 bytes
    of scratch a program, the scratch pointer the kernel's last parameter."""
    a = np.zeros((200, 200), np.float16)
    c = np.zeros((200, 136), np.float16)
    desc_mm_persistent._drop_compiled()
    ck = desc_mm_persistent.warmup(a, a, c, 200, 136, 200, BM=64, BN=64, BK=64, NUM_SMS=5, grid=(5,),
                                   target="sm_90a", num_warps=4, num_stages=3)
    ptx = ck.asm["ptx"]
    assert ptx.count("tensormap.replace.tile.global_address") == 3
    assert ptx.count("fence.proxy.tensormap::generic.acquire.gpu") == 3
    first_loop = ptx.index("bra.uni") if "bra.uni" in ptx else len(ptx)
    assert ptx.rindex("tensormap.replace") < first_loop
    assert ck.metadata["global_scratch_size"] == 384 and ck.metadata["global_scratch_align"] == 128
    assert ck.metadata["params"][-1] == {"name": "global_scratch", "type": "ptr", "abi": "ptr"}


def test_fallbacks():
    """Where a map cannot be proved (a runtime last stride) or TMA cannot serve (only sm_90a has tensormap.replace;
    an fp32 "ieee" dot's loads), the accesses keep the pointer path and no map for them is written."""
    a = np.zeros((100, 64), np.float16)
    b = np.zeros((64, 64), np.float16)
    c = np.zeros((100, 64), np.float32)
    desc_mm_runtime_last_stride._drop_compiled()
    ck = desc_mm_runtime_last_stride.warmup(a, b, c, 100, 64, 64, 3, BM=64, BN=64, BK=64, grid=(2, 1),
                                            target="sm_90a")
    assert ck.asm["ptx"].count("tensormap.replace.tile.global_address") == 2  # B's and C's, not A's
    assert ck.metadata["global_scratch_size"] == 256
    desc_mm._drop_compiled()  # A's base specialized as 2 bytes off a 16-byte boundary: A keeps its pointers
    ck = desc_mm.warmup(np.zeros(100 * 64 + 1, np.float16)[1:], b, c, 100, 64, 64, BM=64, BN=64, BK=64, grid=(2, 1),
                        target="sm_90a")
    assert ck.asm["ptx"].count("tensormap.replace.tile.global_address") == 2
    desc_mm._drop_compiled()
    ck = desc_mm.warmup(a, b, c, 100, 64, 64, BM=64, BN=64, BK=64, grid=(2, 1), target="sm_80")
    assert "tensormap" not in ck.asm["ptx"] and "global_scratch_size" not in ck.metadata
    assert len(ck.asm["cubin"]) > 0
    desc_store_scale._drop_compiled()  # no dot: built for sm_90 itself, which has no tensormap.replace
    ck = desc_store_scale.warmup(c, c, 100, 64, 64, 1.5, BM=32, BN=32, grid=(4, 2), target="sm_90")
    assert "tensormap" not in ck.asm["ptx"] and "cp.async.bulk.tensor" not in ck.asm["ptx"]
    assert len(ck.asm["cubin"]) > 0
    f32 = np.zeros((100, 64), np.float32)
    desc_mm._drop_compiled()
    ck = desc_mm.warmup(f32, np.zeros((64, 64), np.float32), c, 100, 64, 64, BM=64, BN=64, BK=64, grid=(2, 1),
                        target="sm_90a")
    ptx = ck.asm["ptx"]
    assert "cp.async.bulk.tensor.2d.shared::cluster" not in ptx  # fp32 loads: no TMA ring
    assert ptx.count("tensormap.replace.tile.global_address") == 1  # only C's store map


def test_tma_elemtype():
    from compiler.ir import types as T
    from compiler.tools.tensor_descriptor import tma_elemtype

    assert [tma_elemtype(T.from_name(n)) for n in ("float16", "bfloat16", "float32", "float64", "int8", "uint16",
                                                   "int32", "uint32", "int64", "uint64")] == \
        [6, 10, 7, 9, 0, 1, 3, 2, 5, 4]
    assert tma_elemtype(T.int1) is None


# ---- the launcher's scratch (CPU: allocations mocked) ---------------------------------------------------------

@pytest.fixture
def scratch(monkeypatch):
    from compiler.runtime import scratch as S

    S.clear()
    monkeypatch.setattr(S, "_ALLOCATOR", [None])
    yield S
    S.clear()


def test_scratch_uses_set_allocator(scratch):
    from compiler.triton_compat import runtime as triton_compat  # `triton.set_allocator` in a loaded kernel file

    calls = []

    class Buf:
        def __init__(self, n):
            self.n = n

        def data_ptr(self):
            return 0x10000 + 128 * len(calls)

    def alloc(size, alignment, stream):
        calls.append((size, alignment, stream))
        return Buf(size)

    triton_compat.set_allocator(alloc)
    assert triton_compat.get_allocator() is alloc
    assert scratch.scratch_pointer((4, 3, 2), 384, 128, stream=7) == 0x10000 + 128
    assert calls == [(4 * 3 * 2 * 384, 128, 7)]
    assert scratch.scratch_pointer(10, 128) == 0x10000 + 256 and calls[-1] == (1280, 128, None)
    assert scratch._LAST[0].n == 1280  # kept alive until the next launch

    def bad(size, alignment, stream):
        return 0x10040

    triton_compat.set_allocator(bad)
    with pytest.raises(RuntimeError, match="aligned"):
        scratch.scratch_pointer(1, 128)
    with pytest.raises(TypeError):
        triton_compat.set_allocator(5)


def test_scratch_buffer_reused_and_grown(scratch, monkeypatch):
    import compiler.runtime.cuda as cuda
    import compiler.runtime.memory as memory

    made = []

    class FakeArray:
        def __init__(self, n):
            self.nbytes = n
            self.ptr = 0x100000 * (len(made) + 1)

        def data_ptr(self):
            return self.ptr

    def empty(shape, dtype):
        made.append(int(shape))
        return FakeArray(int(shape))

    monkeypatch.setattr(memory.DeviceArray, "empty", staticmethod(empty))
    monkeypatch.setattr(cuda, "current_device", lambda: 0)
    p1 = scratch.scratch_pointer((132,), 384)  # 50688 bytes -> a 64 KiB buffer
    assert made == [65536]
    assert scratch.scratch_pointer((100, 1), 384) == p1 and made == [65536]  # fits: reused
    assert scratch.scratch_pointer((200,), 384) != p1 and made == [65536, 131072]  # grown
    assert scratch.scratch_pointer((200,), 384, stream=5) and made[-1] == 131072 and len(made) == 3  # per stream
    assert scratch.scratch_pointer((1,), 0) == 0 and len(made) == 3


def test_compiled_kernel_launch_appends_scratch(scratch, monkeypatch):
    """CompiledKernel.launch passes the scratch pointer as the hidden last argument, sized by the grid."""
    from compiler.compile import CompiledKernel

    seen = []
    monkeypatch.setattr(scratch, "_ALLOCATOR", [lambda size, align, stream: (seen.append((size, align)), 4096)[1]])
    ck = CompiledKernel("k", {}, {"name": "k", "params": [], "global_scratch_size": 256, "global_scratch_align": 128},
                        "key")
    calls = []
    ck._launcher = lambda grid, stream, args: calls.append((grid, stream, list(args)))
    ck.launch((3, 2), None, [11, 22])
    assert calls == [((3, 2), 0, [11, 22, 4096])] and seen == [(3 * 2 * 256, 128)]
    plain = CompiledKernel("k", {}, {"name": "k", "params": []}, "key")
    plain._launcher = lambda grid, stream, args: calls.append((grid, stream, list(args)))
    plain.launch(4, None, [1])
    assert calls[-1] == (4, 0, [1])


def test_fast_path_entry_goes_through_launch(scratch):
    """The jit's bound launch entry of a scratch kernel calls its `launch` (which adds the pointer), never the
    packed launcher directly."""
    from compiler.compile import CompiledKernel
    from compiler.jit import _bind_entry

    ck = CompiledKernel("k", {}, {"name": "k", "params": [], "global_scratch_size": 128}, "key")
    got = []
    ck.launch = lambda grid, stream, args: got.append((grid, stream, args))
    assert _bind_entry(ck, 2)
    ck._tf_entry((1,), None, 5, 6)
    assert got == [((1,), None, [5, 6])]


def test_global_stride_in_bytes_for_the_installed_ptxas(monkeypatch):
    """tensormap.replace's global_stride is given in bytes (ptxas 13.5 shifts it into the map's 16-byte units
    itself); only assemblers before 12.7 get it pre-shifted (Triton's workaround for them)."""
    from compiler.codegen import tensormap as TM

    for text, shift in (("Cuda compilation tools, release 13.5, V13.5.37", 0),
                        ("Cuda compilation tools, release 12.4, V12.4.131", 4), ("", 0)):
        monkeypatch.setattr(TM, "ptxas_version", lambda path, text=text: text)
        assert TM.stride_shift() == shift
