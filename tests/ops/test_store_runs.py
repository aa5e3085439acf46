"""A group of memory accesses whose values meet (passes/assign_layouts.py `_group_runs`) takes at most one 16-byte
vector of its widest stored element a thread along the contiguous dim: an fp16 load whose values are stored as fp32
reads 4 halves a vector (lanes contiguous) instead of 8, and the fp32 store writes whole sectors each warp instruction
instead of two vectors a thread with lanes 32 bytes apart. Not where the stores are scalar anyway (a mask that varies
per element) nor where the group's values are scanned along that dim. Results in the interpreter, through ptxas and
on the GPU (once the A/B `store_runs`)."""
import numpy as np
import pytest

import compiler
import compiler.language as tl

from .test_ops import TARGETS, poison, run


@compiler.jit
def widen_kernel(X, S, Y, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(X + offs, mask=m, other=0.0).to(tl.float32)
    tl.store(S + offs, x * scale, mask=m)  # fp32: 4 a vector
    tl.store(Y + offs, (x + 1.0).to(tl.float16), mask=m)  # fp16: 8 a vector


@pytest.mark.parametrize("target", TARGETS)
def test_widen_results(target):
    n = 3000  # the last program is masked
    x = np.random.default_rng(12).standard_normal(n).astype(np.float16)
    s, y = poison(n, "float32"), poison(n, "float16")
    run(target, widen_kernel, (compiler.cdiv(n, 1024),), [x, s, y], [n, 0.5], BLOCK=1024, num_warps=4)
    if target != "ptxas":
        x64 = x.astype(np.float64)
        np.testing.assert_array_equal(s, (x.astype(np.float32) * np.float32(0.5)))
        np.testing.assert_allclose(y.astype(np.float64), x64 + 1.0, rtol=1e-3, atol=1e-3)


def _store_runs(kernel, n):
    """Bytes a thread holds along the contiguous dim of each stored value (its layout's run)."""
    from compiler.options import Options
    from compiler.passes import run_pipeline

    x, s, y = np.zeros(n, np.float16), np.zeros(n, np.float32), np.zeros(n, np.float16)
    mod = run_pipeline(kernel.lower(x, s, y, n, 0.5, BLOCK=1024), Options(num_warps=4, arch="sm_90a"))
    runs = []
    for op in mod.function.body.walk():
        if op.kind == "store":
            d = op.operands[1]
            lay = d.owner.attrs["_layouts"][0]
            runs.append(lay.spt[lay.order[0]] * d.type.element.bits // 8)
    return runs


def test_stores_write_one_vector_a_run():
    assert max(_store_runs(widen_kernel, 4096)) <= 16  # n a multiple of 16: the fp32 store 4 a thread, one vector


def test_scalar_stores_keep_the_run():
    # n = 4097: the mask varies per element, every store is scalar whatever the run: the group keeps the fp16
    # load's 8 a thread (32 bytes of fp32)
    assert max(_store_runs(widen_kernel, 4097)) == 32


@compiler.jit
def scanned_kernel(X, S, Y, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(X + offs, mask=m, other=0.0).to(tl.float32)
    tl.store(S + offs, x * scale, mask=m)  # fp32, in the scanned group
    tl.store(Y + offs, tl.cumsum(x, axis=0).to(tl.float16), mask=m)


def test_scanned_group_keeps_the_run():
    # the group's values are scanned along the dim: 8 a thread stay (a longer in-thread scan, fewer shuffles)
    assert max(_store_runs(scanned_kernel, 4096)) == 32


@pytest.mark.parametrize("target", TARGETS)
def test_scanned_results(target):
    n = 3000
    x = np.random.default_rng(13).integers(-8, 8, n).astype(np.float16)  # sums exact in fp32, rounded once to fp16
    s, y = poison(n, "float32"), poison(n, "float16")
    run(target, scanned_kernel, (compiler.cdiv(n, 1024),), [x, s, y], [n, 0.5], BLOCK=1024, num_warps=4)
    if target != "ptxas":
        xs = x.astype(np.float64)
        ref = np.concatenate([np.cumsum(xs[i:i + 1024]) for i in range(0, n, 1024)])
        np.testing.assert_array_equal(s, (xs * 0.5).astype(np.float32))
        np.testing.assert_array_equal(y, ref.astype(np.float16))
