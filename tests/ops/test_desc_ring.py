"""A K loop whose dot operands come from tensor-descriptor loads (or boundary-checked block-pointer
loads) takes the cp.async copy ring: Triton's contract for make_tensor_descriptor (16-byte aligned base, leading
strides multiples of 16 bytes) makes the rows 16-byte aligned (frontend/semantic.py, passes/axisinfo.py), and a
ragged edge along the contiguous dim is served by each 16-byte copy's source size clamped to the bytes in bounds
(passes/pipeline.py _clamp_plan, codegen/dot.py _e_async_copy), the rest zero-filled. Padding "nan" keeps the old
path. (The A/B `desc_ring`, made the code after the H100 run of 2026-12-07: the ragged fp32 descriptor matmul 0.770 of
the time of its tiles held in registers.) Results in the interpreter, through ptxas (sm_90a) and on the GPU, on ragged
shapes (M, N, K not multiples of the blocks, K not a multiple of 4)."""
import re

import numpy as np
import pytest

import compiler
import compiler.language as tl

from .conftest import CompiledOnly
from .test_ops import TARGETS, poison, run


@compiler.jit
def desc_mm(A, B, C, M, N, K, lda, ldb, ldc, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
            IEEE: tl.constexpr, PAD: tl.constexpr, STAGES: tl.constexpr):
    """C[:M, :N] = A[:M, :K] @ B[:K, :N] through in-kernel descriptors whose row strides (lda, ldb, ldc) may exceed
    the shapes (a padded leading dim: K need not be a multiple of 4 while the strides keep Triton's 16 bytes)."""
    a_desc = tl.make_tensor_descriptor(A, shape=[M, K], strides=[lda, 1], block_shape=[BM, BK], padding_option=PAD)
    b_desc = tl.make_tensor_descriptor(B, shape=[K, N], strides=[ldb, 1], block_shape=[BK, BN], padding_option=PAD)
    c_desc = tl.make_tensor_descriptor(C, shape=[M, N], strides=[ldc, 1], block_shape=[BM, BN])
    om = tl.program_id(0) * BM
    on = tl.program_id(1) * BN
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k in tl.range(0, K, BK, num_stages=STAGES):
        a = a_desc.load([om, k])
        b = b_desc.load([k, on])
        if IEEE:
            acc = tl.dot(a, b, acc, input_precision="ieee")
        else:
            acc = tl.dot(a, b, acc)
    c_desc.store([om, on], acc)


@compiler.jit
def desc_mm64(A, B, C, M, N, K, lda, ldb, ldc, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """desc_mm on float64 (mma.sync's fp64 dot): 16-byte chunks are 2 elements, so an odd K is ragged."""
    a_desc = tl.make_tensor_descriptor(A, shape=[M, K], strides=[lda, 1], block_shape=[BM, BK])
    b_desc = tl.make_tensor_descriptor(B, shape=[K, N], strides=[ldb, 1], block_shape=[BK, BN])
    c_desc = tl.make_tensor_descriptor(C, shape=[M, N], strides=[ldc, 1], block_shape=[BM, BN])
    om = tl.program_id(0) * BM
    on = tl.program_id(1) * BN
    acc = tl.zeros([BM, BN], dtype=tl.float64)
    for k in tl.range(0, K, BK, num_stages=3):
        acc = tl.dot(a_desc.load([om, k]), b_desc.load([k, on]), acc)
    c_desc.store([om, on], acc)


@compiler.jit
def bptr_mm(A, B, C, M, N, K, lda, ldb, ldc, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """The same through boundary-checked block pointers advanced along K (no descriptor contract: the strides'
    alignment is what the launch specializes, 16-divisible here)."""
    pm, pn = tl.program_id(0), tl.program_id(1)
    a_ptr = tl.make_block_ptr(A, (M, K), (lda, 1), (pm * BM, 0), (BM, BK), (1, 0))
    b_ptr = tl.make_block_ptr(B, (K, N), (ldb, 1), (0, pn * BN), (BK, BN), (1, 0))
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in tl.range(0, K, BK, num_stages=3):
        a = tl.load(a_ptr, boundary_check=(0, 1))
        b = tl.load(b_ptr, boundary_check=(0, 1))
        acc = tl.dot(a, b, acc, input_precision="ieee")
        a_ptr = tl.advance(a_ptr, (0, BK))
        b_ptr = tl.advance(b_ptr, (BK, 0))
    c_ptr = tl.make_block_ptr(C, (M, N), (ldc, 1), (pm * BM, pn * BN), (BM, BN), (1, 0))
    tl.store(c_ptr, acc, boundary_check=(0, 1))


_CLAMPED_COPY = re.compile(r"cp\.async\.cg\.shared\.global \[%r\d+\], \[%rd\d+\], 16, %r\d+;")


def _ld(n, eb):
    """A leading dim of at least n elements that is a multiple of 16 bytes."""
    q = 16 // eb
    return -(-n // q) * q


def _operands(M, N, K, dtype, seed, lda=None, ldb=None):
    """A [M, lda] and B [K, ldb] with the columns past K and N (the padding of the leading dim) NaN: a copy that
    read past the edge would poison the result."""
    rng = np.random.default_rng(seed)
    eb = np.dtype(dtype).itemsize
    lda, ldb = lda or _ld(K, eb), ldb or _ld(N, eb)
    a = np.full((M, lda), np.nan, dtype)
    b = np.full((K, ldb), np.nan, dtype)
    a[:, :K] = rng.standard_normal((M, K)).astype(dtype)
    b[:, :N] = rng.standard_normal((K, N)).astype(dtype)
    return a, b


def _launch(target, kernel, a, b, c, M, N, K, meta, ring=True):
    """Run (interpreter, GPU) or assemble (ptxas, sm_90a); `ring`: the PTX has clamped copies (else none at all)."""
    grid = (compiler.cdiv(M, meta["BM"]), compiler.cdiv(N, meta["BN"]))
    scalars = [M, N, K, a.shape[1], b.shape[1], c.shape[1]]
    if target == "ptxas":  # assembled for sm_90a (wgmma and the copy ring), built under this test's switches
        kernel._drop_compiled()
        ck = kernel.warmup(a, b, c, *scalars, grid=grid, target="sm_90a", **meta)
        assert ".entry" in ck.asm["ptx"]
        assert bool(_CLAMPED_COPY.search(ck.asm["ptx"])) == ring
        assert isinstance(ck.asm["cubin"], bytes) and len(ck.asm["cubin"]) > 0
        raise CompiledOnly()
    run(target, kernel, grid, [a, b, c], scalars, **meta)


def _check(c, a, b, M, N, K, rtol, atol):
    ref = a[:M, :K].astype(np.float64) @ b[:K, :N].astype(np.float64)
    got = c[:M, :N].astype(np.float64)
    assert not np.isnan(got).any(), "NaN in output (a read past the edge, or an unwritten element)"
    np.testing.assert_allclose(got, ref, rtol=rtol, atol=atol)
    if c.shape[1] > N:  # the padding columns of C are never written
        assert np.isnan(c[:, N:]).all()


FP32_CASES = [  # (M, N, K, lda, ldb): K not a multiple of 4 (a padded leading dim), or a multiple of 4 not of BK
    (72, 45, 37, None, None),
    (70, 44, 36, 36, 44),
    (33, 61, 50, None, None),
]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("shape", FP32_CASES)
@pytest.mark.parametrize("stages", [2, 3])
def test_fp32_fma_dot_on_descriptors(target, shape, stages):
    M, N, K, lda, ldb = shape
    a, b = _operands(M, N, K, np.float32, 5, lda, ldb)
    c = poison((M, _ld(N, 4)), "float32")
    meta = dict(BM=32, BN=32, BK=16, IEEE=True, PAD="zero", STAGES=stages, num_warps=4)
    _launch(target, desc_mm, a, b, c, M, N, K, meta)
    _check(c, a, b, M, N, K, 1e-5, 1e-5)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("cfg", ["wgmma", "mma_sync"])
def test_fp16_tensor_core_dot_on_descriptors(target, cfg):
    """fp16 operands, fp32 accumulator: 64-row blocks of 4 warps run on wgmma (sm_90a), their tiles brought by TMA
    from the tensor maps the kernel writes (codegen/tensormap.py), 32-row ones on mma.sync by clamped copies."""
    M, N, K = 83, 70, 45  # K: not a multiple of 8 halves (16 bytes) nor of BK
    a, b = _operands(M, N, K, np.float16, 9)
    c = poison((M, _ld(N, 4)), "float32")
    bm = 64 if cfg == "wgmma" else 32
    meta = dict(BM=bm, BN=64, BK=32, IEEE=False, PAD="zero", STAGES=3, num_warps=4)
    _launch(target, desc_mm, a, b, c, M, N, K, meta, ring=cfg != "wgmma")
    _check(c, a, b, M, N, K, 2e-3, 2e-3)


@pytest.mark.parametrize("target", TARGETS)
def test_fp64_mma_dot_on_descriptors(target):
    """fp64 operands (mma.sync): 16-byte copies clamped at the odd K and N (not narrow 8-byte ones)."""
    M, N, K = 40, 37, 29
    a, b = _operands(M, N, K, np.float64, 6)
    c = poison((M, _ld(N, 8)), "float64")
    _launch(target, desc_mm64, a, b, c, M, N, K, dict(BM=32, BN=32, BK=16, num_warps=4))
    _check(c, a, b, M, N, K, 1e-12, 1e-12)


@pytest.mark.parametrize("target", TARGETS)
def test_nan_padding_keeps_its_path(target):
    """padding "nan": out-of-bounds rows of A and columns of B read NaN (K a multiple of BK, so only outputs past M
    and N, never stored, see them); these loads stay off the ring."""
    M, N, K = 50, 37, 64
    a, b = _operands(M, N, K, np.float32, 3)
    c = poison((M, _ld(N, 4)), "float32")
    meta = dict(BM=32, BN=32, BK=16, IEEE=True, PAD="nan", STAGES=2, num_warps=4)
    _launch(target, desc_mm, a, b, c, M, N, K, meta, ring=False)
    _check(c, a, b, M, N, K, 1e-5, 1e-5)


@pytest.mark.parametrize("target", TARGETS)
def test_block_pointer_matmul_ragged_k(target):
    """Boundary-checked block pointers whose leading dims the launch specializes as multiples of 16 (lda 64, ldb
    48) over a ragged K = 37 and N = 45: the ring serves them too (no descriptor needed)."""
    M, N, K = 70, 45, 37
    a, b = _operands(M, N, K, np.float32, 4, lda=64, ldb=48)
    c = poison((M, 48), "float32")
    meta = dict(BM=32, BN=32, BK=16, num_warps=4)
    _launch(target, bptr_mm, a, b, c, M, N, K, meta)
    _check(c, a, b, M, N, K, 1e-5, 1e-5)


# ---- the code property ------------------------------------------------------------------------------------------

def _ptx(kernel, a, b, c, M, N, K, **meta):
    kernel._drop_compiled()
    ck = kernel.warmup(a, b, c, M, N, K, a.shape[1], b.shape[1], c.shape[1], grid=(1,), target="sm_90a", **meta)
    return ck.asm["ptx"]


def _ring_ops(kernel, a, b, c, M, N, K, **meta):
    from compiler.options import Options
    from compiler.passes import run_pipeline

    opts = {k: meta.pop(k) for k in ("num_warps",) if k in meta}
    mod = run_pipeline(kernel.lower(a, b, c, M, N, K, a.shape[1], b.shape[1], c.shape[1], **meta),
                       Options(arch="sm_90a", **opts))
    return [op for op in mod.function.body.walk() if op.kind == "async_copy"]


def test_descriptor_tiles_land_by_clamped_copies():
    """The gpu corpus shape (fp32 "ieee", M, N, K = 4100, 4092, 1028, 64x64x32 on 4 warps): every operand element
    comes by a 16-byte cp.async whose source size is a register (the clamp), and the kernel has no ld.global at all
    (its epilogue only stores; the register pipeline loaded A and B by scalar ld.global)."""
    M, N, K = 4100, 4092, 1028
    a, b, c = np.zeros((8, K), np.float32), np.zeros((8, N), np.float32), np.zeros((8, N), np.float32)
    meta = dict(BM=64, BN=64, BK=32, IEEE=True, PAD="zero", STAGES=2, num_warps=4)
    ptx = _ptx(desc_mm, a, b, c, M, N, K, **meta)
    assert "ld.global" not in ptx
    copies = _CLAMPED_COPY.findall(ptx)
    assert copies and len(copies) == ptx.count("cp.async.cg.shared.global")
    # 2 stages: 2 slots loaded 2 iterations ahead (the FMA dot reads its slot itself: tests/dot/test_sync_ring.py);
    # A 64x32 and B 32x64 fp32 over 128 threads: 4 + 4 copies a thread, the prologue's two iterations and the loop's
    assert len(copies) == 24
    # the copies' ring ops: both operands clamped along their contiguous dim (1)
    ops = _ring_ops(desc_mm, a, b, c, M, N, K, **meta)
    assert ops and all(op.attrs.get("clamp") == 1 for op in ops)


def test_nan_padding_takes_no_clamp():
    M, N, K = 4100, 4092, 1028
    a, b, c = np.zeros((8, K), np.float32), np.zeros((8, N), np.float32), np.zeros((8, N), np.float32)
    meta = dict(BM=64, BN=64, BK=32, IEEE=True, STAGES=2, num_warps=4)
    assert not _ring_ops(desc_mm, a, b, c, M, N, K, PAD="nan", **meta)


@pytest.mark.parametrize("cfg", ["wgmma", "mma_sync"])
def test_fp16_descriptor_tiles_take_the_ring(cfg):
    """fp16 descriptors over K = 1000, N = 4004 (not multiples of 16): both operands on the ring, by TMA from the
    kernel's tensor maps for wgmma (TMA clips the ragged edge itself), by clamped copies for mma.sync."""
    M, N, K = 4096, 4004, 1000
    a, b, c = np.zeros((8, K), np.float16), np.zeros((8, N), np.float16), np.zeros((8, N), np.float32)
    meta = dict(BM=64 if cfg == "wgmma" else 32, BN=64, BK=32, IEEE=False, PAD="zero", STAGES=3, num_warps=4)
    ops = _ring_ops(desc_mm, a, b, c, M, N, K, **meta)
    assert {op.attrs["operand"] for op in ops} == {0, 1}
    ptx = _ptx(desc_mm, a, b, c, M, N, K, **meta)
    assert "ld.global" not in ptx
    if cfg == "wgmma":
        assert all(op.attrs.get("tma") for op in ops)
        assert "wgmma.mma_async" in ptx and "cp.async.bulk.tensor" in ptx and not _CLAMPED_COPY.search(ptx)
    else:
        assert all(op.attrs.get("clamp") == 1 for op in ops)
        assert "mma.sync" in ptx and "wgmma" not in ptx and _CLAMPED_COPY.search(ptx)


def test_block_pointer_tiles_take_the_ring():
    """Block pointers over K = 1000, N = 4004 whose leading dims (1024, 4096) the launch specializes: the rows are
    aligned, the masks ragged along both operands' contiguous dims: both operands by clamped copies."""
    M, N, K = 4096, 4004, 1000
    a, b, c = np.zeros((8, 1024), np.float32), np.zeros((8, 4096), np.float32), np.zeros((8, 4096), np.float32)
    meta = dict(BM=64, BN=64, BK=32, num_warps=4)
    ops = _ring_ops(bptr_mm, a, b, c, M, N, K, **meta)
    assert {op.attrs["operand"] for op in ops} == {0, 1} and all(op.attrs.get("clamp") == 1 for op in ops)


def test_frontend_ir_records_the_contract():
    """The frontend's IR (what the interpreter runs) carries the descriptor contract as attributes only: a base
    16-byte aligned, the leading strides multiples of 16 bytes."""
    from compiler.ir.printer import print_module

    a, b, c = np.zeros((8, 40), np.float32), np.zeros((8, 48), np.float32), np.zeros((8, 48), np.float32)
    meta = dict(BM=32, BN=32, BK=16, IEEE=True, PAD="zero", STAGES=2)
    text = print_module(desc_mm.lower(a, b, c, 70, 45, 37, 40, 48, 48, **meta))
    assert "{base_align=16}" in text and "{stride_div=4}" in text


@compiler.jit
def ptr_mm(A, B, C, M, N, K, lda, ldb, ldc, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # plain pointers and 32-bit masks (no descriptor): rows aligned where the launch specializes lda and ldb as
    # multiples of 16, K ragged
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(A + rm[:, None] * lda + (k + rk)[None, :], mask=(rm[:, None] < M) & ((k + rk)[None, :] < K),
                    other=0.0)
        b = tl.load(B + (k + rk)[:, None] * ldb + rn[None, :], mask=((k + rk)[:, None] < K) & (rn[None, :] < N),
                    other=0.0)
        acc = tl.dot(a, b, acc, input_precision="ieee")
    tl.store(C + rm[:, None] * ldc + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@pytest.mark.parametrize("target", TARGETS)
def test_int32_masks_clamped_in_64_bits(target):
    """A user's own 32-bit K mask at a ragged edge takes the clamped copies too; the copies' in-bounds count
    (bound - idx) is computed in 64 bits, so it cannot wrap. Results against float64, NaN past the edge."""
    M, N, K = 70, 45, 37
    a, b = _operands(M, N, K, np.float32, 8, lda=48, ldb=48)
    c = poison((M, 48), "float32")
    _launch(target, ptr_mm, a, b, c, M, N, K, dict(BM=32, BN=32, BK=16, num_warps=4))
    _check(c, a, b, M, N, K, 1e-5, 1e-5)


def test_int32_mask_clamp_is_64_bit():
    a, b, c = np.zeros((8, 1024), np.float32), np.zeros((8, 4096), np.float32), np.zeros((8, 4096), np.float32)
    ops = _ring_ops(ptr_mm, a, b, c, 4096, 4004, 1000, BM=64, BN=64, BK=32, num_warps=4)
    clamped = [op for op in ops if op.attrs.get("clamp") is not None]
    assert {op.attrs["operand"] for op in clamped} == {0, 1}
    for op in clamped:
        rem = op.operands[2].owner
        while rem.kind == "broadcast":
            rem = rem.operands[0].owner
        assert rem.kind == "sub" and rem.result.type.element.bits == 64
        assert all(x.owner.kind == "cast" and x.owner.operands[0].type.element.bits == 32 for x in rem.operands)
