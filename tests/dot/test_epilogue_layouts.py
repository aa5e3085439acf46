"""Layouts of matmul epilogues and K loops written in everyday idioms: the accumulator stays in its MMA layout
through the loop and the epilogue's arithmetic, `acc += tl.dot(a, b)` accumulates in the dot, and only the final
value is converted for the store. Numbers checked in the interpreter, through ptxas and on the GPU."""
import math

import numpy as np
import pytest

import compiler

from ..ops.test_ops import TARGETS, assert_close, poison, run
from . import epilogue_kernels as E

ACTS = ["none", "relu", "bias", "bias_silu", "where"]


def _ref(a, b, bias, act):
    acc = a.astype(np.float64) @ b.astype(np.float64)
    if act == "relu":
        acc = np.maximum(acc, 0.0)
    elif act in ("bias", "bias_silu"):
        acc = acc + bias.astype(np.float64)[None, :]
        if act == "bias_silu":
            acc = acc / (1.0 + np.exp(-acc))
    elif act == "where":
        acc = np.where(acc > 0, acc, 0.1 * acc)
    return acc


def _mm_args(M, N, K, dtype, rng):
    a = rng.uniform(-1, 1, (M, K)).astype(dtype)
    b = rng.uniform(-1, 1, (K, N)).astype(dtype)
    return a, b


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("act", ACTS)
def test_matmul_activation_epilogues(target, act):
    M, N, K = 100, 72, 80  # not multiples of the blocks: masked K tail and masked stores
    rng = np.random.default_rng(7)
    a, b = _mm_args(M, N, K, np.float16, rng)
    bias = rng.uniform(-1, 1, N).astype(np.float32)
    c = poison((M, N), "float16")
    run(target, E.mm_act_kernel, (compiler.cdiv(M, 64), compiler.cdiv(N, 64)), [a, b, c, bias],
        [M, N, K, K, 1, N, 1, N, 1], BM=64, BN=64, BK=32, ACT=act, num_warps=4, num_stages=3)
    assert_close(c, _ref(a, b, bias, act), "float16", rtol=2e-3, atol=2e-3 * math.sqrt(K))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("kernel", ["plus_eq", "mask_all"])
def test_matmul_loop_idioms(target, kernel):
    M, N, K = 96, 80, 128 if kernel == "plus_eq" else 100  # plus_eq has no K mask: K a multiple of BK
    rng = np.random.default_rng(11)
    a, b = _mm_args(M, N, K, np.float16, rng)
    c = poison((M, N), "float32")
    fn = E.mm_plus_eq_kernel if kernel == "plus_eq" else E.mm_mask_all_kernel
    run(target, fn, (compiler.cdiv(M, 64), compiler.cdiv(N, 64)), [a, b, c], [M, N, K, K, 1, N, 1, N, 1],
        BM=64, BN=64, BK=32, num_warps=4, num_stages=3)
    assert_close(c, a.astype(np.float64) @ b.astype(np.float64), "float32", rtol=1e-5, atol=1e-4)


def _lowered(fn, args, meta, nw=8, stages=3):
    from compiler.options import Options
    from compiler.passes import run_pipeline

    mod = fn.lower(*args, **meta)
    return run_pipeline(mod, Options(num_warps=nw, num_stages=stages, arch="sm_90a"))


def _loop(mod):
    return next(op for op in mod.function.body.ops if op.kind == "for")


def _mm_lowered(fn, act=None, M=4096, N=4096, K=4096):
    a = np.zeros((M, K), np.float16)
    b = np.zeros((K, N), np.float16)
    c = np.zeros((M, N), np.float16)
    scal = [M, N, K, K, 1, N, 1, N, 1]
    meta = dict(BM=128, BN=128, BK=64)
    if act is not None:
        return _lowered(fn, [a, b, c, np.zeros(N, np.float32), *scal], dict(meta, ACT=act))
    return _lowered(fn, [a, b, c, *scal], meta)


@pytest.mark.parametrize("act", ACTS)
def test_epilogue_keeps_the_accumulator_in_mma_layout(act):
    """No conversion in the K loop; after it, the epilogue's arithmetic runs in the MMA layout and the one
    128x128 conversion is of the 16-bit value the store takes (a bias is converted as its 1xN row)."""
    from compiler.passes.layouts import MmaLayout

    mod = _mm_lowered(E.mm_act_kernel, act)
    loop = _loop(mod)
    assert isinstance(loop.attrs["_layouts"][0], MmaLayout)
    assert not [op for op in loop.blocks[0].ops if op.kind == "convert_layout"]
    after = mod.function.body.ops[mod.function.body.ops.index(loop) + 1:]
    for op in after:
        if op.kind in ("max", "add", "mul", "select", "exp", "exp2", "fdiv", "cast") and \
                tuple(op.results[0].type.shape) == (128, 128) and op.results[0].type.element.kind == "float":
            assert isinstance(op.attrs["_layouts"][0], MmaLayout), (op.kind, op.attrs["_layouts"])
    big = [op for op in after if op.kind == "convert_layout" and tuple(op.result.type.shape) == (128, 128)]
    assert len(big) == 1 and big[0].result.type.element.bits == 16, [str(op.result.type) for op in big]


def test_plus_eq_dot_accumulates_in_the_dot():
    """`acc += tl.dot(a, b)` becomes dot(a, b, acc): no add of 128x128 tiles in the loop."""
    loop = _loop(_mm_lowered(E.mm_plus_eq_kernel))
    body = loop.blocks[0]
    dots = [op for op in body.ops if op.kind == "dot"]
    assert len(dots) == 1 and dots[0].operands[2] is body.args[1]
    assert not [op for op in body.ops if op.kind in ("add", "convert_layout") and op.results
                and tuple(op.results[0].type.shape) == (128, 128)]


def test_plus_eq_dot_not_fused_without_fp_fusion():
    from compiler.options import Options
    from compiler.passes import run_pipeline

    a = np.zeros((256, 256), np.float16)
    c = np.zeros((256, 256), np.float32)
    mod = E.mm_plus_eq_kernel.lower(a, a, c, 256, 256, 256, 256, 1, 256, 1, 256, 1, BM=64, BN=64, BK=32)
    mod = run_pipeline(mod, Options(num_warps=4, arch="sm_90a", enable_fp_fusion=False))
    body = _loop(mod).blocks[0]
    assert [op for op in body.ops if op.kind == "add" and tuple(op.results[0].type.shape) == (64, 64)]


@pytest.mark.parametrize("act", ["none", "relu", "bias"])
def test_epilogue_costs_no_extra_shared_memory(act):
    """The epilogue's one conversion fits in the copy ring's shared memory: as much as the plain matmul."""
    a = np.zeros((4096, 4096), np.float16)
    bias = np.zeros(4096, np.float32)
    sizes = {}
    for x in ("none", act):
        k = E.mm_act_kernel.warmup(a, a, a, bias, 4096, 4096, 4096, 4096, 1, 4096, 1, 4096, 1, BM=128, BN=128,
                                   BK=64, ACT=x, num_warps=8, num_stages=3, grid=(1,), target="sm_90a")
        sizes[x] = k.metadata["shared_bytes"]
    assert sizes[act] == sizes["none"], sizes


@pytest.mark.gpu
@pytest.mark.parametrize("act", ACTS)
@pytest.mark.parametrize("shape", [(1000, 1000, 1000), (512, 768, 4096)])
def test_epilogues_at_full_tiles_gpu(act, shape):
    """128x128x64 w8 s3 (wgmma, copy ring) with each epilogue, odd sizes, against float64."""
    M, N, K = shape
    rng = np.random.default_rng(3)
    a, b = _mm_args(M, N, K, np.float16, rng)
    bias = rng.uniform(-1, 1, N).astype(np.float32)
    c = poison((M, N), "float16")
    run("gpu", E.mm_act_kernel, (compiler.cdiv(M, 128), compiler.cdiv(N, 128)), [a, b, c, bias],
        [M, N, K, K, 1, N, 1, N, 1], BM=128, BN=128, BK=64, ACT=act, num_warps=8, num_stages=3)
    assert_close(c, _ref(a, b, bias, act), "float16", rtol=2e-3, atol=2e-3 * math.sqrt(K))


@pytest.mark.gpu
@pytest.mark.parametrize("kernel", ["plus_eq", "mask_all"])
def test_loop_idioms_at_full_tiles_gpu(kernel):
    M, N = 1000, 520
    K = 1024 if kernel == "plus_eq" else 1000
    rng = np.random.default_rng(5)
    a, b = _mm_args(M, N, K, np.float16, rng)
    c = poison((M, N), "float32")
    fn = E.mm_plus_eq_kernel if kernel == "plus_eq" else E.mm_mask_all_kernel
    run("gpu", fn, (compiler.cdiv(M, 128), compiler.cdiv(N, 128)), [a, b, c], [M, N, K, K, 1, N, 1, N, 1],
        BM=128, BN=128, BK=64, num_warps=8, num_stages=3)
    assert_close(c, a.astype(np.float64) @ b.astype(np.float64), "float32", rtol=1e-5, atol=1e-3)
