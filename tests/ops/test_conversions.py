"""Layout conversions a kernel pays for: only where data must move between threads. Index and mask arithmetic is
recomputed in the layout its user needs (an arange-based mask costs compares, not a trip through shared memory),
and a conversion through shared memory moves each side's elements without bank conflicts the layouts can avoid."""
import numpy as np
import pytest

import compiler
import compiler.language as tl

from .test_ops import TARGETS, poison, run


@compiler.jit
def transpose_kernel(x_ptr, y_ptr, M, N, sxm, sym, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(x_ptr + rm[:, None] * sxm + rn[None, :], mask=mask)
    tl.store(y_ptr + rn[:, None] * sym + rm[None, :], tl.trans(x), mask=tl.trans(mask))


def _lowered(fn, args, meta, nw=4):
    from compiler.options import Options
    from compiler.passes import run_pipeline

    return run_pipeline(fn.lower(*args, **meta), Options(num_warps=nw, arch="sm_90a"))


@compiler.jit
def mixed_width_kernel(h_ptr, f_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # an fp16 load (16-byte runs of 8) meets an fp32 load (runs of 4) in one sum, stored as y's element type
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    h = tl.load(h_ptr + offs, mask=m, other=0.0).to(tl.float32)
    f = tl.load(f_ptr + offs, mask=m, other=0.0)
    tl.store(y_ptr + offs, (h * 2.0 + f).to(y_ptr.dtype.element_ty), mask=m)


def test_loads_of_one_sum_share_the_longest_run():
    """Stored as fp16, the fp32 load takes the fp16 load's 8 elements per thread (two 16-byte vectors) instead of 4
    and a conversion of its tile through shared memory; stored as fp32, the group's runs stop at one fp32 vector,
    4 a thread (the fp16 load reads 8-byte vectors; tests/ops/test_store_runs.py); alone, an fp32 load keeps its
    4."""
    from compiler.passes.layouts import BlockedLayout

    h, f = np.zeros(4096, np.float16), np.zeros(4096, np.float32)
    for y, run in ((h, 8), (f, 4)):
        mod = _lowered(mixed_width_kernel, [h, f, y, 4096], dict(BLOCK=2048), nw=8)
        ops = mod.function.body.ops
        assert not [op for op in ops if op.kind == "convert_layout"]
        loads = [op.attrs["_layouts"][0] for op in ops if op.kind == "load"]
        assert [lay.spt for lay in loads] == [(run,), (run,)] and all(isinstance(x, BlockedLayout) for x in loads)
    mod = _lowered(vector_kernel, [f, f, 4096], dict(BLOCK=2048), nw=8)
    assert [op.attrs["_layouts"][0].spt for op in mod.function.body.ops if op.kind == "load"] == [(4,)]


@compiler.jit
def mixed_width_cg_kernel(h_ptr, f_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    h = tl.load(h_ptr + offs, mask=m, other=0.0).to(tl.float32)
    f = tl.load(f_ptr + offs, mask=m, other=0.0, cache_modifier=".cg")
    tl.store(y_ptr + offs, (h * 2.0 + f).to(y_ptr.dtype.element_ty), mask=m)


def test_loads_that_skip_the_l1_keep_their_run():
    """An L2-only load (.cg) lengthened to 8 fp32 per thread would fetch each 32-byte sector by two accesses:
    it keeps its 4 (and the conversion)."""
    h, f = np.zeros(4096, np.float16), np.zeros(4096, np.float32)
    mod = _lowered(mixed_width_cg_kernel, [h, f, h, 4096], dict(BLOCK=2048), nw=8)
    assert [op.attrs["_layouts"][0].spt for op in mod.function.body.ops if op.kind == "load"] == [(8,), (4,)]


@compiler.jit
def vector_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m) + 1.0, mask=m)


@pytest.mark.parametrize("target", TARGETS)
def test_mixed_width_loads(target):
    n = 5000  # the last block is masked
    rng = np.random.default_rng(3)
    h = rng.standard_normal(n).astype(np.float16)
    f = rng.standard_normal(n).astype(np.float32)
    y = poison(n, "float32")
    run(target, mixed_width_kernel, (compiler.cdiv(n, 2048),), [h, f, y], [n], BLOCK=2048, num_warps=8)
    if target != "ptxas":
        ref = h.astype(np.float64) * 2.0 + f.astype(np.float64)
        np.testing.assert_allclose(y, ref, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("B", [32, 64])
def test_transpose_converts_the_data_only(B):
    """The mask is used in the load's layout and (transposed) in the store's: it is recomputed in both, and the
    one conversion left is the tile of data itself."""
    x = np.zeros((256, 256), np.float32)
    mod = _lowered(transpose_kernel, [x, x, 256, 256, 256, 256], dict(BM=B, BN=B))
    cvs = [op for op in mod.function.body.ops if op.kind == "convert_layout"]
    assert len(cvs) == 1 and cvs[0].result.type.element.kind == "float", [str(op.result.type) for op in cvs]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("B", [32, 64])
def test_transpose_with_transposed_mask(target, B):
    M, N = 100, 75
    rng = np.random.default_rng(1)
    x = rng.standard_normal((M, N)).astype(np.float32)
    y = poison((N, M), "float32")
    run(target, transpose_kernel, (compiler.cdiv(M, B), compiler.cdiv(N, B)), [x, y], [M, N, N, M], BM=B, BN=B,
        num_warps=4)
    np.testing.assert_array_equal(y, x.T)


def _transpose_layouts(B, nw=4):
    from compiler.passes.layouts import default_blocked, linear, permute_layout

    src = default_blocked((B, B), 4, nw)
    return linear(permute_layout(src, (1, 0)), (B, B), nw), linear(src, (B, B), nw)


@pytest.mark.parametrize("B", [32, 64, 128])
def test_transpose_buffer_is_swizzled_against_bank_conflicts(B):
    """Writers holding runs down the reader's columns: no padding spreads them over the banks, an XOR swizzle of
    the 16-byte chunks does, at least halving the wavefronts of the padded buffer."""
    from compiler.codegen.reduce import _choose_swizzle, _conversion_cost

    src, dst = _transpose_layouts(B)
    swz = _choose_swizzle(src, dst, None, 4, 1, 4, 4)
    assert swz is not None
    assert 2 * _conversion_cost(src, dst, None, 4, 1, 4, 4, swz) <= _conversion_cost(src, dst, None, 4, 1, 4, 4, None)


@pytest.mark.parametrize("shape,swz", [((64, 64), (2, 7, 4)), ((32, 32), (0, 7, 4)), ((16, 128), (1, 7, 8)),
                                       ((4, 8, 32), (3, 3, 8))])
def test_swizzled_buffer_index_is_a_permutation_of_each_row(shape, swz):
    import itertools

    from compiler.codegen.reduce import _buffer_index

    rowlen = shape[-1]
    seen = {}
    for c in itertools.product(*[range(n) for n in shape]):
        i = _buffer_index(list(c), shape, 0, swz)
        row = 0
        for x, n in zip(c[:-1], shape[:-1]):
            row = row * n + x
        assert i // rowlen == row  # stays in its row
        seen[i] = c
    assert len(seen) == int(np.prod(shape))


def test_wavefronts_count_bank_conflicts():
    from compiler.codegen.reduce import _wavefronts

    assert _wavefronts([4 * i for i in range(32)], 4) == 1          # 32 banks, one word each
    assert _wavefronts([128 * i for i in range(32)], 4) == 32       # all in bank 0
    assert _wavefronts([0] * 32, 4) == 1                            # one word: a broadcast
    assert _wavefronts([16 * i for i in range(32)], 16) == 4        # 4 groups of 8 lanes x 16 bytes
    assert _wavefronts([256 * i for i in range(32)], 16) == 4 * 8   # 8 lanes of a group on the same 4 banks


@compiler.jit
def tile_atomic_add_kernel(X, Y, Old, M, N, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    offs = rm[:, None] * N + rn[None, :]
    old = tl.atomic_add(Y + offs, tl.load(X + offs, mask=mask), mask=mask)
    tl.store(Old + offs, old, mask=mask)


def test_float_atomic_add_of_contiguous_rows_is_vectorized():
    """sm_90's atom.global.add.v4.f32: four floats per atomic where the analysis that vectorizes loads allows."""
    x = np.zeros((64, 64), np.float32)
    k = tile_atomic_add_kernel.warmup(x, x, x, 64, 64, BM=32, BN=64, num_warps=4, grid=(1,), target="sm_90a")
    ptx = k.asm["ptx"]
    assert "atom.global.gpu.acq_rel.add.v4.f32" in ptx and ".add.f32" not in ptx
    assert k.asm["cubin"]
    k80 = tile_atomic_add_kernel.warmup(x, x, x, 64, 64, BM=32, BN=64, num_warps=4, grid=(1,), target="sm_80")
    assert ".v4.f32" not in k80.asm["ptx"] and "atom.global.gpu.acq_rel.add.f32" in k80.asm["ptx"]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("N", [64, 48])  # 48: the mask cuts each row of the 64-wide tile
def test_tile_atomic_add_returns_old_values(target, N):
    M = 50
    rng = np.random.default_rng(2)
    x = rng.standard_normal((M, N)).astype(np.float32)
    y0 = rng.standard_normal((M, N)).astype(np.float32)
    y = y0.copy()
    old = poison((M, N), "float32")
    run(target, tile_atomic_add_kernel, (compiler.cdiv(M, 16),), [x, y, old], [M, N], BM=16, BN=64, num_warps=4)
    np.testing.assert_array_equal(old, y0)
    np.testing.assert_allclose(y, y0 + x, rtol=1e-6)


@compiler.jit
def transpose_by_address_kernel(X, Y, M, N, BLOCK: tl.constexpr):
    offs_m = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    offs_n = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    x = tl.load(X + offs_m[:, None] * N + offs_n[None, :], mask=mask)
    tl.store(Y + offs_n[None, :] * M + offs_m[:, None], x, mask=mask)


def test_rows_of_odd_length_are_not_taken_for_aligned():
    """offs_m[:, None] * N with N odd: the product is no longer contiguous, so a run's first element being a
    multiple of 64 says nothing of the others: row starts are 2-byte aligned, and the loads take one element per
    thread along the row (a warp reads 64 contiguous bytes) instead of 8-element runs no vector can cover. The
    thread's free run goes down the column instead, the dim the stores run along: 8 rows per thread."""
    from compiler.passes import axisinfo

    x = np.zeros((8190, 6001), np.float16)
    mod = _lowered(transpose_by_address_kernel, [x, x, 8190, 6001], dict(BLOCK=64), nw=8)
    load = next(op for op in mod.function.body.ops if op.kind == "load")
    info = axisinfo.analyze(mod.function)[load.operands[0].id]
    assert info.divisibility[1] == 2 and info.contiguity[1] == 64
    assert load.attrs["_layouts"][0].spt == (8, 1)
    even = _lowered(transpose_by_address_kernel, [x, x, 8192, 6016], dict(BLOCK=64), nw=8)
    load = next(op for op in even.function.body.ops if op.kind == "load")
    assert load.attrs["_layouts"][0].spt == (1, 8)  # 16-byte rows: 8 fp16 per thread, one vector


def test_buffer_runs_along_the_writers_runs():
    """Writers holding 8 rows of one column, readers one element of consecutive rows: a buffer contiguous down the
    columns takes each writer's run as one 16-byte store (2 per thread instead of 16 scalar ones) and the model
    counts fewer wavefronts for it than for the row-major buffer."""
    from compiler.codegen.reduce import _buffer_plan, _plan_cost
    from compiler.passes.layouts import BlockedLayout, linear

    src = linear(BlockedLayout((8, 1), (1, 32), (4, 2), (1, 0)), (64, 64), 8)
    dst = linear(BlockedLayout((1, 1), (32, 1), (2, 4), (0, 1)), (64, 64), 8)
    rowmajor, colmajor = _buffer_plan(src, dst, None, 2, True, None), _buffer_plan(src, dst, (1, 0), 2, True, (1, 0))
    assert (rowmajor["vs"], colmajor["vs"]) == (1, 8)
    assert _plan_cost(src, dst, 2, colmajor) < _plan_cost(src, dst, 2, rowmajor)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["float16", "float32", "int8"])
def test_transpose_by_address_odd_sizes(target, dtype):
    """Scalar accesses on both sides, through a conversion buffer whose rows are padded by a word (the test of
    _choose_pad below): every element lands exactly."""
    M, N = 70, 45
    rng = np.random.default_rng(4)
    x = (rng.integers(-100, 100, (M, N)) if dtype == "int8" else rng.standard_normal((M, N))).astype(dtype)
    y = poison((N, M), dtype)
    run(target, transpose_by_address_kernel, (compiler.cdiv(M, 32), compiler.cdiv(N, 32)), [x, y], [M, N], BLOCK=32,
        num_warps=4)
    np.testing.assert_array_equal(y, x.T)


def test_dot_operands_with_unaligned_rows_keep_vector_stores_to_shared_memory():
    """Rows of odd length (K = 1001): global loads are scalar either way, but the tiles a dot reads keep 8-element
    runs per thread so they go to shared memory as 16-byte stores (the register pipeline carries them through
    the loop)."""
    from workloads.matmul.kernel import matmul_kernel

    M, N, K = 3001, 2999, 1001
    a = np.zeros((16, 16), np.float16)
    k = matmul_kernel.warmup(a, a, a, np.zeros(1, np.float32), M, N, K, K, 1, N, 1, N, 1, BLOCK_M=128, BLOCK_N=128,
                             BLOCK_K=64, GROUP_M=8, EPILOGUE="none", PRECISION="tf32", num_warps=8, num_stages=3,
                             grid=(1,), target="sm_90a")
    ptx = k.asm["ptx"]
    # A (rows of 1001 fp16, contiguous along K): 4 vectors of 8 per thread; B is read through offs_bn % N, whose
    # elements are not contiguous with N odd, so its tile moves as scalars either way
    assert ptx.count("st.shared.v4") >= 4 and ptx.count("st.shared.b16") <= 32


@compiler.jit
def block_ptr_matmul_kernel(A, B, C, M, N, K, sam, sak, sbk, sbn, scm, scn,
                            BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    a_blk = tl.make_block_ptr(A, shape=(M, K), strides=(sam, sak), offsets=(tl.program_id(0) * BM, 0),
                              block_shape=(BM, BK), order=(1, 0))
    b_blk = tl.make_block_ptr(B, shape=(K, N), strides=(sbk, sbn), offsets=(0, tl.program_id(1) * BN),
                              block_shape=(BK, BN), order=(1, 0))
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for _ in range(0, tl.cdiv(K, BK)):
        acc += tl.dot(tl.load(a_blk, boundary_check=(0, 1)), tl.load(b_blk, boundary_check=(0, 1)))
        a_blk = tl.advance(a_blk, (0, BK))
        b_blk = tl.advance(b_blk, (BK, 0))
    c_blk = tl.make_block_ptr(C, shape=(M, N), strides=(scm, scn), offsets=(tl.program_id(0) * BM,
                              tl.program_id(1) * BN), block_shape=(BM, BN), order=(1, 0))
    tl.store(c_blk, acc.to(tl.float16), boundary_check=(0, 1))


def test_block_pointer_loop_keeps_its_strides_and_pipelines():
    """A block pointer's base, shape and strides ride through the loop unchanged: read from the initial values,
    the stride specialized to 1 keeps the tiles contiguous, so the K loop takes the copy ring like pointer code."""
    a = np.zeros((16, 16), np.float16)
    k = block_ptr_matmul_kernel.warmup(a, a, a, 4096, 4096, 4096, 4096, 1, 4096, 1, 4096, 1, BM=128, BN=128, BK=64,
                                       num_warps=8, num_stages=3, grid=(1,), target="sm_90a")
    loop = k.asm["ptx"].split("$L__BB0_2:")[1]
    assert "cp.async.cg.shared.global" in loop and "ld.global" not in loop


@pytest.mark.parametrize("target", TARGETS)
def test_block_pointer_matmul_edges(target):
    M, N, K = 100, 72, 88
    rng = np.random.default_rng(9)
    a = rng.uniform(-1, 1, (M, K)).astype(np.float16)
    b = rng.uniform(-1, 1, (K, N)).astype(np.float16)
    c = poison((M, N), "float16")
    run(target, block_ptr_matmul_kernel, (compiler.cdiv(M, 64), compiler.cdiv(N, 64)), [a, b, c],
        [M, N, K, K, 1, N, 1, N, 1], BM=64, BN=64, BK=32, num_warps=4, num_stages=3)
    from .test_ops import assert_close
    assert_close(c, a.astype(np.float64) @ b.astype(np.float64), "float16", rtol=2e-3, atol=2e-2)


@pytest.mark.parametrize("eb", [1, 2, 4])
def test_scalar_transpose_buffer_pads_rows_by_a_word(eb):
    """Rows written along the last dim and read down the columns, one element per access on both sides: with rows
    16 bytes beyond a multiple of 128 apart, 8 of a column's 32 rows share a bank; a one-word pad gives each row a
    bank of its own, so the padding chosen by the bank model is the word and the reads take a quarter of the
    wavefronts or fewer."""
    from compiler.codegen.reduce import _choose_pad, _conversion_cost
    from compiler.passes.layouts import BlockedLayout, linear

    shape = (64, 64)
    src = linear(BlockedLayout((1, 1), (1, 32), (4, 2), (1, 0)), shape, 8)
    dst = linear(BlockedLayout((1, 1), (32, 1), (2, 4), (0, 1)), shape, 8)
    pad16 = 16 // eb
    pad = _choose_pad(src, dst, None, eb, 1, 1, pad16)
    assert pad * eb == 4
    assert 2 * _conversion_cost(src, dst, None, eb, 1, 1, pad, None) <= _conversion_cost(src, dst, None, eb, 1, 1,
                                                                                        pad16, None)


def test_vector_conversion_keeps_the_16_byte_pad():
    """Where one side moves 16-byte vectors a word pad would misalign them: the 16-byte pad stays."""
    from compiler.codegen.reduce import _choose_pad
    from compiler.passes.layouts import BlockedLayout, linear

    shape = (64, 64)
    src = linear(BlockedLayout((1, 8), (8, 4), (8, 1), (1, 0)), shape, 8)
    dst = linear(BlockedLayout((1, 1), (32, 1), (2, 4), (0, 1)), shape, 8)
    assert _choose_pad(src, dst, None, 2, 8, 1, 8) == 8


@compiler.jit
def rms_rows_kernel(x_ptr, w_ptr, y_ptr, stride, n, BLOCK: tl.constexpr):
    # RMS normalization of rows that start unaligned (stride odd): the x loads are one element per thread, the
    # weight loads (aligned) four. The accumulator is read only by the reduction after its loop, and its zero
    # tile is the same constant as the weight load's `other`.
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, n, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride + cols, mask=cols < n, other=0.0)
        acc += x * x
    r = 1.0 / tl.sqrt(tl.sum(acc, 0) / n + 1e-5)
    for off in range(0, n, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        m = cols < n
        x = tl.load(x_ptr + row * stride + cols, mask=m, other=0.0)
        w = tl.load(w_ptr + cols, mask=m, other=0.0)
        tl.store(y_ptr + row * stride + cols, x * r * w, mask=m)


def test_loop_accumulator_takes_the_layout_it_is_computed_in():
    """The carried sum of squares is carried in its load's layout (its zero made there once, before the loop),
    not the zero tile's default layout with the new terms converted through shared memory every iteration."""
    x, w = np.zeros((3, 301), np.float32), np.zeros(301, np.float32)
    mod = _lowered(rms_rows_kernel, [x, w, x, 301, 301], dict(BLOCK=1024), nw=8)
    loop = next(op for op in mod.function.body.ops if op.kind == "for")  # the first: the sum of squares
    assert not [op for op in loop.blocks[0].ops if op.kind == "convert_layout"]
    load = next(op for op in loop.blocks[0].ops if op.kind == "load")
    assert load.attrs["_layouts"][0].spt == (1,)
    assert loop.attrs["_layouts"][0] == load.attrs["_layouts"][0]


@pytest.mark.parametrize("target", TARGETS)
def test_loop_accumulator_over_unaligned_rows(target):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((3, 301)).astype(np.float32)
    w = rng.standard_normal(301).astype(np.float32)
    y = poison((3, 301), "float32")
    run(target, rms_rows_kernel, (3,), [x, w, y], (301, 301), BLOCK=128, num_warps=2)
    x64 = x.astype(np.float64)
    ref = x64 / np.sqrt((x64 ** 2).mean(axis=1, keepdims=True) + 1e-5) * w
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-6)


@compiler.jit
def channel_scale_kernel(X, W, Y, HW, n, BLOCK: tl.constexpr):
    # y = x * w[channel], the channel of element i being i // HW (a per-channel broadcast through a gather)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(X + offs, mask=m, other=0.0)
    w = tl.load(W + offs // HW, mask=m, other=0.0)
    tl.store(Y + offs, x * w, mask=m)


def test_a_channel_gather_is_computed_once_per_run():
    """`offs // HW` with HW a multiple of 16 is constant over runs of 16 (axis info), so the gather through it takes
    the group's 4 elements a thread (no conversion through shared memory) and a thread's division is computed once
    per run instead of once per element. The interpreter and the compiled kernel agree (below)."""
    from compiler.passes import axisinfo

    x = np.zeros(4096 * 4, np.float32)
    mod = _lowered(channel_scale_kernel, [x, x, x, 4096, 4096 * 4], dict(BLOCK=1024), nw=4)
    ops = list(mod.function.body.walk())
    div = next(op for op in ops if op.kind == "idiv")
    assert axisinfo.analyze(mod.function)[div.result.id].constancy[0] == 16
    assert not any(op.kind == "convert_layout" for op in ops)
    gather = [op for op in ops if op.kind == "load"][1]
    assert gather.attrs["_layouts"][0].spt == (4,)
    ck = channel_scale_kernel.warmup(x, x, x, 4096, 4096 * 4, grid=(16,), target="sm_90a", BLOCK=1024)
    # a thread's 8 elements: two runs of 4, one per 16-element channel run
    assert ck.asm["ptx"].count("div.s32") == 2
    rng = np.random.default_rng(3)
    xs, ws = rng.standard_normal(40 * 7).astype(np.float32), rng.standard_normal(40).astype(np.float32)
    y = np.full(40 * 7, np.nan, np.float32)
    channel_scale_kernel[(3,)](xs, ws, y, 7, 40 * 7, BLOCK=128)
    np.testing.assert_array_equal(y, xs * np.repeat(ws, 7))


@compiler.jit
def shifted_quotient_kernel(Y, HW, n, SHIFT: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(Y + offs, (offs + SHIFT) // HW, mask=offs < n)


@pytest.mark.parametrize("shift,const", [(16, 16), (-16, 1)])
def test_quotient_runs_need_non_negative_values(shift, const):
    """Division truncates: (offs + 16) // HW is constant over runs of 16 (HW a multiple of 16, offs from a program
    id and an arange: never negative), (offs - 16) // HW is not ((-16..-9) // 8 gives -2, -1, ...), so axis info
    claims no runs for it and no register is taken for another's."""
    from compiler.passes import axisinfo

    y = np.zeros(4096, np.int32)
    mod = _lowered(shifted_quotient_kernel, [y, 4096, 4096], dict(SHIFT=shift, BLOCK=1024), nw=4)
    div = next(op for op in mod.function.body.walk() if op.kind == "idiv")
    assert axisinfo.analyze(mod.function)[div.result.id].constancy[0] == const
    out = np.full(100, -7, np.int32)
    shifted_quotient_kernel[(1,)](out, 8, 100, SHIFT=shift, BLOCK=128)
    np.testing.assert_array_equal(out, np.trunc((np.arange(100) + shift) / 8).astype(np.int32))


@compiler.jit
def shifted_taps_kernel(X, W, Y, L, KW: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_L: tl.constexpr):
    # a causal window: tap k reads x[t - (KW - 1) + k], rows unaligned for every tap but the last
    rd = tl.program_id(0) * BLOCK_D + tl.arange(0, BLOCK_D)
    rl = tl.program_id(1) * BLOCK_L + tl.arange(0, BLOCK_L)
    acc = tl.zeros([BLOCK_D, BLOCK_L], dtype=tl.float32)
    for k in range(KW):
        t = rl - (KW - 1) + k
        m = (t[None, :] >= 0) & (t[None, :] < L)
        x = tl.load(X + rd[:, None] * L + t[None, :], mask=m, other=0.0).to(tl.float32)
        acc += tl.load(W + rd * KW + k)[:, None] * x
    tl.store(Y + rd[:, None] * L + rl[None, :], acc.to(tl.float16), mask=rl[None, :] < L)


def test_unaligned_loop_loads_take_the_accumulators_run():
    """The window's loads are contiguous along L but unaligned (scalar); the accumulator they are added to is
    stored 8 fp16 a thread. A loop-carried accumulator is one group with its initial value and the store after the
    loop, and the scalar loads take its run (8 consecutive elements a thread): no conversion in the loop (before,
    the product went through shared memory every iteration)."""
    x, w, y = np.zeros(16 * 512, np.float16), np.zeros(16 * 4, np.float32), np.zeros(16 * 512, np.float16)
    mod = _lowered(shifted_taps_kernel, [x, w, y, 512], dict(KW=4, BLOCK_D=16, BLOCK_L=256), nw=4)
    loop = next(op for op in mod.function.body.walk() if op.kind == "for")
    body = list(loop.blocks[0].walk())
    xload = next(op for op in body if op.kind == "load" and len(op.result.type.shape) == 2)
    assert xload.attrs["_layouts"][0].spt == (1, 8)
    assert [op for op in body if op.kind == "convert_layout" and len(op.result.type.shape) == 2] == []
    rng = np.random.default_rng(5)
    D, L = 4, 37
    xs = rng.standard_normal(D * L).astype(np.float16)
    ws = rng.standard_normal(D * 4).astype(np.float32)
    out = np.full(D * L, np.nan, np.float16)
    shifted_taps_kernel[(1, 3)](xs, ws, out, L, KW=4, BLOCK_D=4, BLOCK_L=16)
    xp = np.concatenate([np.zeros((D, 3)), xs.reshape(D, L).astype(np.float64)], axis=1)
    ref = sum(ws.reshape(D, 4)[:, k:k + 1].astype(np.float64) * xp[:, k:k + L] for k in range(4))
    np.testing.assert_allclose(out.reshape(D, L).astype(np.float64), ref, rtol=2e-3, atol=2e-3)


@compiler.jit
def halo_row_kernel(X, Y, W, BLOCK: tl.constexpr):
    # y[i] = x[i - 1] + 2 x[i] + x[i + 1] with zero padding: the shifted loads are unaligned (scalar)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    left = tl.load(X + offs - 1, mask=(offs >= 1) & (offs - 1 < W), other=0.0)
    mid = tl.load(X + offs, mask=offs < W, other=0.0)
    right = tl.load(X + offs + 1, mask=offs + 1 < W, other=0.0)
    tl.store(Y + offs, left + 2.0 * mid + right, mask=offs < W)


def test_unaligned_halo_loads_take_the_aligned_run_outside_loops():
    """A stencil's shifted loads (scalar: unaligned) take the 16-byte run of the aligned one they are added to,
    outside any loop too: no conversion of their values through shared memory."""
    x = np.zeros(4096, np.float32)
    mod = _lowered(halo_row_kernel, [x, x, 4096], dict(BLOCK=1024), nw=4)
    ops = list(mod.function.body.walk())
    assert not [op for op in ops if op.kind == "convert_layout"]
    assert {op.attrs["_layouts"][0].spt for op in ops if op.kind == "load"} == {(4,)}


@pytest.mark.parametrize("target", TARGETS)
def test_unaligned_halo_loads(target):
    W = 1000
    x = np.random.default_rng(6).standard_normal(W).astype(np.float32)
    y = poison(W, "float32")
    run(target, halo_row_kernel, (4,), [x, y], [W], BLOCK=256, num_warps=2)
    xp = np.concatenate([[0.0], x.astype(np.float64), [0.0]])
    np.testing.assert_allclose(y, xp[:-2] + 2 * xp[1:-1] + xp[2:], rtol=1e-6, atol=1e-6)


@compiler.jit
def row_sums_looped(X, OUT, M, N, BM: tl.constexpr, BN: tl.constexpr):
    # per row, the sum over column blocks of exp(x): a row reduction each block, accumulated across the loop
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    acc = tl.zeros([BM], dtype=tl.float32)
    for n0 in range(0, N, BN):
        rn = n0 + tl.arange(0, BN)
        m = (rm[:, None] < M) & (rn[None, :] < N)
        acc += tl.sum(tl.where(m, tl.exp(tl.load(X + rm[:, None] * N + rn[None, :], mask=m, other=0.0)), 0.0), axis=1)
    tl.store(OUT + rm, acc, mask=rm < M)


def test_a_row_reduction_carried_across_a_loop_keeps_its_layout():
    """The accumulator of per-block row sums is carried in the reduction's (slice) layout and
    converted once after the loop for the store, instead of every iteration."""
    x = np.zeros((64, 2048), np.float32)

    def in_loop(mod):
        loop = next(op for op in mod.function.body.walk() if op.kind == "for")
        return [o for o in loop.blocks[0].walk() if o.kind == "convert_layout"]

    assert not in_loop(_lowered(row_sums_looped, [x, x[:, 0].copy(), 64, 2048], dict(BM=8, BN=512), nw=4))


@pytest.mark.parametrize("target", TARGETS)
def test_row_sums_looped(target):
    M, N = 13, 700
    x = np.random.default_rng(9).uniform(-2, 2, (M, N)).astype(np.float32)
    out = poison(M, "float32")
    run(target, row_sums_looped, (compiler.cdiv(M, 8),), [x, out], [M, N], BM=8, BN=128, num_warps=4)
    np.testing.assert_allclose(out, np.exp(x.astype(np.float64)).sum(1), rtol=1e-5)
