"""Host-side tensor descriptors (`TensorDescriptor.from_tensor(x, block)` arguments) and their TMA lowering.

interp: the interpreter (the spec: tiles past the array's edge read zero, stores there are dropped);
ptxas: PTX for sm_90a assembled, and checked to use TMA (cp.async.bulk.tensor + mbarrier) exactly where it
applies; gpu: run on the GPU against the float64 reference (TMA's zero fill, swizzle and phases)."""
import re

import ml_dtypes
import numpy as np
import pytest

import compiler.language as tl
from compiler.codegen.dot import SwizzledTile
from compiler.tools.tensor_descriptor import TensorDescriptor, tma_applies, tma_box

from . import tma_kernels as K
from .conftest import CompiledOnly
from .test_ops import TARGETS

BF16 = np.dtype(ml_dtypes.bfloat16)


def _descs(arrays, blocks):
    return [TensorDescriptor.from_tensor(a, b) for a, b in zip(arrays, blocks)]


def run(target, kernel, grid, arrays, blocks, scalars=(), expect_tma=None, expect_store=None, **meta):
    """Launch with descriptors of `arrays` (tiles `blocks`); results copied back in place. On ptxas,
    expect_tma (True/False) checks whether the PTX copies by TMA."""
    if target == "interp":
        kernel[grid](*_descs(arrays, blocks), *scalars, **meta)
        return
    if target == "ptxas":
        ck = kernel.warmup(*_descs(arrays, blocks), *scalars, grid=grid, target="sm_90a", **meta)
        ptx = ck.asm["ptx"]
        if expect_tma is not None:
            used = "cp.async.bulk.tensor.2d.shared::cluster" in ptx and "mbarrier.try_wait.parity" in ptx
            assert used == expect_tma, f"TMA loads {'not ' if expect_tma else ''}used"
        if expect_store is not None:
            assert ("cp.async.bulk.tensor.2d.global.shared::cta" in ptx) == expect_store
        assert isinstance(ck.asm["cubin"], bytes) and len(ck.asm["cubin"]) > 0
        raise CompiledOnly()
    from compiler.runtime import DeviceArray, synchronize

    dev = [DeviceArray.from_numpy(a) for a in arrays]
    kernel[grid](*_descs(dev, blocks), *scalars, **meta)
    synchronize()
    for a, d in zip(arrays, dev):
        a[...] = d.numpy().reshape(a.shape)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_descriptor_load_store_edges(target, dtype):
    rng = np.random.default_rng(0)
    M, N, BM, BN = 100, 72, 32, 32
    x = rng.standard_normal((M, N)).astype(dtype)
    y = np.full((M, N), np.nan, dtype)
    run(target, K.desc_scale, (4, 3), [x, y], [[BM, BN], [BM, BN]], [1.5], BM=BM, BN=BN,
        expect_store=True)
    np.testing.assert_allclose(y.astype(np.float64), x.astype(np.float64) * 1.5, rtol=1e-3)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("N", [45, 64])
def test_store_stops_at_a_ragged_inner_extent(target, N):
    """y's descriptor covers the first N columns of a 96-column array: TMA stores clip at 16-byte units of the row,
    so where N * 4 bytes is not a whole number of them (N = 45) the launch specializes the store as guarded (the
    block votes on its mask; a tile over the edge takes the masked store), and the columns past N stay as poisoned
    either way."""
    rng = np.random.default_rng(4)
    M, BM, BN = 70, 32, 32
    x = rng.standard_normal((M, N)).astype(np.float32)
    wide = np.full((M, 96), np.nan, np.float32)
    grid = (-(-M // BM), -(-N // BN))
    if target == "interp":
        K.desc_scale[grid](TensorDescriptor.from_tensor(x, [BM, BN]), TensorDescriptor(wide, [M, N], [96, 1], [BM, BN]),
                           1.5, BM=BM, BN=BN)
    elif target == "ptxas":
        ck = K.desc_scale.warmup(TensorDescriptor.from_tensor(x, [BM, BN]),
                                 TensorDescriptor(wide, [M, N], [96, 1], [BM, BN]), 1.5, grid=grid, target="sm_90a",
                                 BM=BM, BN=BN)
        assert "cp.async.bulk.tensor.2d.global.shared::cta" in ck.asm["ptx"]
        assert ("bar.red.and.pred" in ck.asm["ptx"]) == (N * 4 % 16 != 0)
        assert len(ck.asm["cubin"]) > 0
        raise CompiledOnly()
    else:
        from compiler.runtime import DeviceArray, synchronize

        dx, dy = DeviceArray.from_numpy(x), DeviceArray.from_numpy(wide)
        K.desc_scale[grid](TensorDescriptor.from_tensor(dx, [BM, BN]), TensorDescriptor(dy, [M, N], [96, 1], [BM, BN]),
                           1.5, BM=BM, BN=BN)
        synchronize()
        wide = dy.numpy().reshape(M, 96)
    np.testing.assert_allclose(wide[:, :N], x * 1.5, rtol=1e-6)
    assert np.isnan(wide[:, N:]).all(), "a store wrote past the descriptor's inner extent"


@pytest.mark.parametrize("target", TARGETS)
def test_store_stops_at_the_last_row(target):
    """y's descriptor covers the first M = 70 rows of a 112-row array whose rows are whole 16-byte units (64 floats),
    so its stores go by TMA unguarded: the rows past M, in the same allocation, stay as poisoned (TMA clips the
    outer dims element by element; the inner one only at 16-byte units, test_store_stops_at_a_ragged_inner_extent)."""
    rng = np.random.default_rng(5)
    M, N, BM, BN = 70, 64, 32, 32
    x = rng.standard_normal((M, N)).astype(np.float32)
    tall = np.full((112, N), np.nan, np.float32)
    grid = (-(-M // BM), -(-N // BN))
    if target == "ptxas":
        K.desc_scale._drop_compiled()
        ck = K.desc_scale.warmup(TensorDescriptor.from_tensor(x, [BM, BN]), TensorDescriptor(tall, [M, N], [N, 1],
                                                                                            [BM, BN]),
                                 1.5, grid=grid, target="sm_90a", BM=BM, BN=BN)
        assert "cp.async.bulk.tensor.2d.global.shared::cta" in ck.asm["ptx"] and "bar.red" not in ck.asm["ptx"]
        raise CompiledOnly()
    if target == "interp":
        K.desc_scale[grid](TensorDescriptor.from_tensor(x, [BM, BN]), TensorDescriptor(tall, [M, N], [N, 1], [BM, BN]),
                           1.5, BM=BM, BN=BN)
    else:
        from compiler.runtime import DeviceArray, synchronize

        dx, dy = DeviceArray.from_numpy(x), DeviceArray.from_numpy(tall)
        K.desc_scale[grid](TensorDescriptor.from_tensor(dx, [BM, BN]), TensorDescriptor(dy, [M, N], [N, 1], [BM, BN]),
                           1.5, BM=BM, BN=BN)
        synchronize()
        tall = dy.numpy().reshape(112, N)
    np.testing.assert_allclose(tall[:M], x * 1.5, rtol=1e-6)
    assert np.isnan(tall[M:]).all(), "a store wrote past the descriptor's last row"


def _matmul_case(rng, M, N, Kd, dtype):
    a = (rng.standard_normal((M, Kd)) / 4).astype(dtype)
    b = (rng.standard_normal((Kd, N)) / 4).astype(dtype)
    c = np.full((M, N), np.nan, np.float32)
    return a, b, c, a.astype(np.float64) @ b.astype(np.float64)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["float16", BF16])
@pytest.mark.parametrize("BM,BN,BK,warps", [(64, 64, 64, 4), (128, 64, 32, 4), (64, 128, 128, 4),
                                            (128, 128, 64, 8)])
def test_tma_matmul(target, dtype, BM, BN, BK, warps):
    """Edges in M, N and K (TMA's zero fill feeds the last K step); K rows 16-byte aligned, so TMA applies."""
    rng = np.random.default_rng(1)
    M, N, Kd = 2 * BM + 24, 2 * BN - 8, 3 * BK + 40
    a, b, c, ref = _matmul_case(rng, M, N, Kd, dtype)
    grid = (-(-M // BM), -(-N // BN))
    run(target, K.desc_matmul, grid, [a, b, c], [[BM, BK], [BK, BN], [BM, BN]], [Kd], expect_tma=True,
        expect_store=True, BM=BM, BN=BN, BK=BK, num_warps=warps, num_stages=3)
    np.testing.assert_allclose(c, ref, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("target", TARGETS)
def test_unaligned_rows_fall_back(target):
    """A's row stride of 300 halfs (600 bytes) cannot be a tensor map: its loads use pointers, an iteration ahead in
    registers, while B's rows (64 halfs) ride the one-dot loop's ring by TMA; the same result. The odd rows start 8
    bytes off a 16-byte boundary, so A takes no 16-byte copies (Triton's 16-byte row contract is not assumed for a
    host descriptor whose launch saw it broken: on an H100 the copies read the wrong rows)."""
    rng = np.random.default_rng(2)
    a, b, c, ref = _matmul_case(rng, 96, 64, 300, "float16")
    run(target, K.desc_matmul, (2, 1), [a, b, c], [[64, 64], [64, 64], [64, 64]], [300], expect_tma=True,
        expect_store=True, BM=64, BN=64, BK=64)
    np.testing.assert_allclose(c, ref, rtol=1e-2, atol=1e-2)


def test_unaligned_rows_take_no_16_byte_copies():
    rng = np.random.default_rng(2)
    a, b, c, _ = _matmul_case(rng, 96, 64, 300, "float16")
    K.desc_matmul._drop_compiled()
    ck = K.desc_matmul.warmup(*_descs([a, b, c], [[64, 64]] * 3), 300, grid=(2, 1), target="sm_90a", BM=64, BN=64,
                              BK=64)
    ptx = ck.asm["ptx"]
    assert "cp.async.bulk.tensor.2d.shared::cluster" in ptx  # B by TMA
    assert not re.search(r"cp\.async\.c[ag]\.shared\.global \[%r\d+\], \[%rd\d+\], 16", ptx)
    assert not re.search(r"ld\.global(\.\w+)*\.(v4\.[bfu]32|v2\.[bfu]64)", ptx)  # nor 16-byte loads


@pytest.mark.parametrize("target", TARGETS)
def test_tma_persistent_matmul(target):
    """The ring (and its mbarriers) restarts for every tile of a persistent loop."""
    rng = np.random.default_rng(3)
    M, N, Kd, BM, BN, BK = 200, 136, 200, 64, 64, 64
    a, b, c, ref = _matmul_case(rng, M, N, Kd, "float16")
    run(target, K.desc_matmul_persistent, (5,), [a, b, c], [[BM, BK], [BK, BN], [BM, BN]], [M, N, Kd],
        expect_tma=True, BM=BM, BN=BN, BK=BK)
    np.testing.assert_allclose(c, ref, rtol=1e-2, atol=1e-2)


def _tma_smem_offset(row, col, box_cols, rows, ebytes, swizzle):
    """Byte offset in shared memory where TMA writes element (row, col) of a tile copied as boxes of box_cols
    columns side by side (the PTX ISA's swizzle modes: address bits [4, 4+log2(swizzle/16)) XOR bits [7, ...))."""
    blk, c = divmod(col, box_cols)
    off = row * box_cols * ebytes + c * ebytes
    if swizzle:
        nbits = (swizzle // 16).bit_length() - 1
        mask = (1 << nbits) - 1
        off ^= ((off >> 7) & mask) << 4
    return blk * rows * box_cols * ebytes + off


@pytest.mark.parametrize("eb", [1, 2, 4])
@pytest.mark.parametrize("shape", [(64, 64), (128, 32), (64, 16), (32, 128), (256, 64), (64, 256), (16, 8)])
def test_tma_box_matches_the_wgmma_tile(shape, eb):
    """Where TMA puts (or reads) every element, its box and swizzle from tma_box, is where the ring's and the
    TMA store's SwizzledTile (which the wgmma descriptors read) has it; for 1-, 2- and 4-byte elements."""
    rows, cols = shape
    if cols * eb < 16:
        assert not tma_applies(shape, eb, True, (cols, 1))
        return
    box, sw = tma_box(shape, eb)
    assert box[0] == rows
    st = SwizzledTile(shape, 1, eb)
    for r in range(rows):
        for c in range(cols):
            assert _tma_smem_offset(r, c, box[1], rows, eb, sw) == st.py_offset(r, c), (r, c)


def test_tma_applies():
    assert tma_applies((64, 64), 2, True, (320, 1))
    assert not tma_applies((64, 64), 2, True, (300, 1))  # 600-byte rows
    assert not tma_applies((64, 64), 2, False, (320, 1))  # unaligned base
    assert not tma_applies((512, 64), 2, True, (320, 1))  # box dims over 256
    assert not tma_applies((64, 4), 2, True, (320, 1))  # rows under 16 bytes


def test_descriptor_argument_errors():
    x = np.zeros((8, 8), np.float32)
    with pytest.raises(ValueError, match="last stride must be 1"):
        TensorDescriptor(x, [8, 8], [1, 8], [8, 8])
    with pytest.raises(ValueError, match="powers of two"):
        TensorDescriptor.from_tensor(x, [8, 6])
    with pytest.raises(ValueError, match="one shape, stride and block"):
        TensorDescriptor.from_tensor(x, [8])


@pytest.mark.gpu
def test_torch_tensor_descriptors():
    """TensorDescriptor.from_tensor on torch CUDA tensors, the Triton 3.x idiom, through the TMA matmul."""
    torch = pytest.importorskip("torch")
    from compiler.runtime import synchronize

    g = torch.Generator(device="cuda").manual_seed(0)
    M, N, Kd = 320, 192, 256
    a = torch.randn((M, Kd), device="cuda", dtype=torch.float16, generator=g)
    b = torch.randn((Kd, N), device="cuda", dtype=torch.float16, generator=g)
    c = torch.full((M, N), float("nan"), device="cuda", dtype=torch.float16)
    K.desc_matmul[(5, 3)](TensorDescriptor.from_tensor(a, [64, 64]), TensorDescriptor.from_tensor(b, [64, 64]),
                          TensorDescriptor.from_tensor(c, [64, 64]), Kd, BM=64, BN=64, BK=64)
    synchronize()
    ref = a.double() @ b.double()
    np.testing.assert_allclose(c.double().cpu().numpy(), ref.cpu().numpy(), rtol=1e-2, atol=5e-2)


def test_launch_values_of_a_descriptor(monkeypatch):
    """What the GPU launch passes for a TensorDescriptor (the frontend's parameter order), with the driver's
    encoder and the device copy stubbed: the map's address (cached per array and block; 0 when TMA cannot
    apply), the base, the shape and the strides but the last."""
    import compiler.runtime.tma as R
    from compiler.ir import types as T

    calls = []

    class Buf:
        def __init__(self, a):
            self.a = a

        def data_ptr(self):
            return 0x7000 + 128 * len(calls)

    def fake_encode(ptr, dtype, shape, strides, block, padding):
        calls.append((ptr, dtype.name, shape, strides, block, padding))
        return bytes(128)

    monkeypatch.setattr(R, "encode_tiled", fake_encode)
    monkeypatch.setattr(R, "ensure_context", lambda: None)
    monkeypatch.setattr("compiler.runtime.memory.DeviceArray.from_numpy", staticmethod(lambda a: Buf(a)))
    R._CACHE.clear()
    x = np.zeros((100, 320), np.float16)
    d = TensorDescriptor.from_tensor(x, [64, 64])
    vals = R.expand_descriptors([5, (d, 0x10000, T.float16), 7])
    assert vals[0] == 5 and vals[-1] == 7
    assert vals[2:-1] == [0x10000, 100, 320, 320] and vals[1] != 0
    assert calls == [(0x10000, "float16", (100, 320), (320, 1), (64, 64), "zero")]
    again = R.expand_descriptors([(TensorDescriptor.from_tensor(x, [64, 64]), 0x10000, T.float16)])
    assert again[0] == vals[1] and len(calls) == 1  # cached
    odd = R.expand_descriptors([(TensorDescriptor(x, [100, 300], [300, 1], [64, 64]), 0x10000, T.float16)])
    assert odd[0] == 0 and len(calls) == 1  # 600-byte rows: no tensor map


def test_tensor_map_enum_names_exist():
    """Every driver enum member encode_tiled names exists in the installed cuda-python bindings."""
    import compiler.runtime.tma as R
    from compiler.runtime.cuda import driver

    d = driver()
    for name in R._DTYPES.values():
        getattr(d.CUtensorMapDataType, name)
    for name in ("CU_TENSOR_MAP_SWIZZLE_NONE", "CU_TENSOR_MAP_SWIZZLE_32B", "CU_TENSOR_MAP_SWIZZLE_64B",
                 "CU_TENSOR_MAP_SWIZZLE_128B"):
        getattr(d.CUtensorMapSwizzle, name)
    d.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE
    d.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B
    d.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE
    d.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA
    d.cuuint64_t(5), d.cuuint32_t(5)


@pytest.mark.parametrize("target", TARGETS)
def test_unaligned_store_falls_back(target):
    """Rows of 70 halfs (140 bytes) cannot be a tensor map: the store is the masked pointer store, same result."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((50, 70)).astype(np.float16)
    y = np.full((50, 70), np.nan, np.float16)
    run(target, K.desc_scale, (2, 3), [x, y], [[32, 32], [32, 32]], [-2.0], BM=32, BN=32, expect_store=False)
    np.testing.assert_allclose(y.astype(np.float64), x.astype(np.float64) * -2.0, rtol=1e-3)
