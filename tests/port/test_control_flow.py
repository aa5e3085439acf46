"""Control flow as Triton's kernels use it: runtime-step loops, None arguments, returns (#20, #22).

Each test runs in the interpreter, through ptxas for sm_90a, and on the GPU (marked gpu).
"""
import numpy as np
import pytest

import compiler
import compiler.language as tl

from . import kernels as K
from .kernels import TARGETS, poison, run


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("programs", [1, 3, 7])
def test_persistent_loop_runtime_step(target, programs):
    rng = np.random.default_rng(1)
    N, BLOCK = 1000, 128
    tiles = compiler.cdiv(N, BLOCK)
    x = rng.standard_normal(N).astype(np.float32)
    y = poison(N, np.float32)
    run(target, K.persistent_scale, (programs,), x, y, tiles, N, BLOCK=BLOCK)
    ref = x.astype(np.float64) * 2 + np.arange(N) // BLOCK
    np.testing.assert_allclose(y, ref, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("step", [1, 2])
def test_tl_range_runtime_start_and_step(target, step):
    rng = np.random.default_rng(2)
    M, N = 37, 300
    x = rng.standard_normal((M, N)).astype(np.float32)
    y = poison(M, np.float32)
    run(target, K.persistent_rowsum, (4,), x, y, M, N, step, BLOCK=128)
    ref = x.astype(np.float64).sum(1)
    done = np.zeros(M, bool)
    for p in range(4):
        done[p::4 * step] = True
    np.testing.assert_allclose(y[done], ref[done], rtol=1e-5, atol=1e-5)
    assert np.isnan(y[~done]).all()  # rows no program visits stay untouched


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("start,end,step", [(10, 0, -1), (10, 1, -3), (5, 5, -1), (3, -4, -2), (0, 9, 4)])
def test_constant_step_any_sign(target, start, end, step):
    y = poison(16, np.int32)
    run(target, K.count_down, (1,), y, start, end, STEP=step, BLOCK=16)
    want = list(range(start, end, step))
    assert list(y[:len(want)]) == want and (y[len(want):] == 0).all()


def test_zero_step_is_refused():
    with pytest.raises(compiler.CompilationError, match="step must not be zero"):
        K.count_down[(1,)](np.zeros(16, np.int32), 0, 4, STEP=0, BLOCK=16)


def test_runtime_non_positive_step_is_reported_by_the_interpreter():
    x = np.zeros(128, np.float32)
    y = np.zeros(128, np.float32)

    @compiler.jit
    def k(X, Y, n, step, BLOCK: tl.constexpr):
        for t in range(0, n, step):
            tl.store(Y + t, tl.load(X + t))

    with pytest.raises(compiler.KernelRuntimeError, match="non-positive step"):
        k[(1,)](x, y, 8, -1, BLOCK=16)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("with_bias", [True, False])
@pytest.mark.parametrize("scale", [None, 3.0])
def test_none_pointer_and_constexpr_specialized(target, with_bias, scale):
    rng = np.random.default_rng(3)
    N = 1000
    x = rng.standard_normal(N).astype(np.float32)
    b = rng.standard_normal(N).astype(np.float32) if with_bias else None
    y = poison(N, np.float32)
    run(target, K.add_bias, (compiler.cdiv(N, 128),), x, b, y, N, SCALE=scale)
    ref = x.astype(np.float64) + (b if with_bias else 0)
    if scale is not None:
        ref = ref * scale
    np.testing.assert_allclose(y, ref, rtol=1e-6, atol=1e-6)


def test_none_is_part_of_the_specialization():
    x = np.ones(128, np.float32)
    b = np.full(128, 2.0, np.float32)
    k1 = K.add_bias.warmup(x, b, x, 128, grid=(1,), target="sm_90a")
    k2 = K.add_bias.warmup(x, None, x, 128, grid=(1,), target="sm_90a")
    assert k1.asm["ptx"] != k2.asm["ptx"]
    assert k2.asm["ptx"].count("ld.global") < k1.asm["ptx"].count("ld.global")
    # a None argument is not a kernel parameter
    assert len(k2.asm["tile"].split("(", 1)[1].split(")", 1)[0].split(",")) == 3


@pytest.mark.parametrize("target", TARGETS)
def test_returns_under_runtime_ifs_and_in_helpers(target):
    rng = np.random.default_rng(4)
    n = 256
    x = rng.uniform(0, 4, n).astype(np.float32)
    label = rng.integers(0, 4, n).astype(np.int32)
    y = poison(n, np.float32)
    k = poison(n, np.int32)
    k0 = k.copy()
    run(target, K.early_exit_loss, (n,), x, label, y, k, IGNORE=3)
    early = (x < 0.5) & (label == 0)
    ref_y = np.where(label == 3, -1.0, np.where(early, -2.0, np.where(x > 2, 2 * x.astype(np.float64), x + 1.0)))
    ref_k = np.where((label == 3) | early, k0, np.where(x > 2, 1, 2))
    np.testing.assert_allclose(y, ref_y, rtol=1e-6)
    np.testing.assert_array_equal(k, ref_k)


@pytest.mark.parametrize("target", TARGETS)
def test_helper_with_returns_called_in_a_loop(target):
    rng = np.random.default_rng(5)
    N, BLOCK = 50, 16
    x = rng.standard_normal(N).astype(np.float32)
    y = poison(4 * BLOCK, np.float32)
    run(target, K.gather_clamped, (4,), x, y, N, BLOCK=BLOCK)
    np.testing.assert_array_equal(y, x[np.minimum(np.arange(4 * BLOCK), N - 1)])


def test_return_inside_a_loop_is_refused():
    """It used to be accepted and act as `continue` (later iterations still stored)."""
    @compiler.jit
    def k(X, n):
        for i in range(n):
            if i == 3:
                return
            tl.store(X + i, i)

    with pytest.raises(compiler.CompilationError, match="Cannot have `return` statements inside `while` or `for` statements") as e:
        k[(1,)](np.zeros(8, np.int32), 8)
    lines = str(e.value).splitlines()
    assert "test_control_flow.py" in lines[0] and lines[1].strip() == "return" and lines[2].strip() == "^"
    assert lines[3].strip() == "at 4:12: in k"  # Triton's count: the def is line 1, columns from its indent

    @compiler.jit
    def w(X, n):
        i = 0
        while i < n:
            if i == 3:
                return
            i += 1

    with pytest.raises(compiler.CompilationError, match="Cannot have `return` statements inside `while` or `for` statements"):
        w[(1,)](np.zeros(8, np.int32), 8)


def test_mismatched_returns_are_refused():
    @compiler.jit
    def h(x):
        if x > 0:
            return x
        return x, x

    @compiler.jit
    def k(X):
        v = h(tl.load(X))
        tl.store(X, v)

    with pytest.raises(compiler.CompilationError, match="return different things"):
        k[(1,)](np.zeros(8, np.float32))


@compiler.jit
def _returns_by_runtime_branch(N):
    if N == 0:
        return tl.arange(0, 4)
    else:
        return tl.arange(0, 8)


def test_returns_of_different_types_point_at_the_second_return():
    """A runtime if whose branches return different types: the error is at the second return (the else branch's),
    where Triton's is, and from the call site the callee's error is the cause, as it raised it."""
    @compiler.jit
    def k(X, N):
        tl.store(X + tl.arange(0, 4), _returns_by_runtime_branch(N))

    with pytest.raises(compiler.CompilationError) as ei:
        k.lower(np.zeros(8, np.int32), 5)
    e = ei.value
    ret_line = next(i for i, ln in enumerate(open(__file__).read().splitlines(), 1)
                    if "return tl.arange(0, 8)" in ln)
    lines = str(e).splitlines()
    assert lines[0].startswith(f"{__file__}:{ret_line}:9: ") and "<4xi32>" in lines[0] and "<8xi32>" in lines[0]
    assert lines[1].strip() == "return tl.arange(0, 8)" and lines[2].strip() == "^"
    assert lines[3].strip() == "at 5:8: in _returns_by_runtime_branch"  # Triton's count, as its test checks
    assert "at 5:8:" in str(e.__cause__) and str(e).endswith("at 2:34: in k")  # the call site follows


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("num_stages", [1, 3])
def test_persistent_matmul(target, num_stages):
    rng = np.random.default_rng(6)
    M, N, KD = 200, 136, 96
    a = rng.standard_normal((M, KD)).astype(np.float16)
    b = rng.standard_normal((KD, N)).astype(np.float16)
    c = poison((M, N), np.float16)
    run(target, K.persistent_matmul, (5,), a, b, c, M, N, KD, BM=64, BN=64, BK=32, num_stages=num_stages)
    np.testing.assert_allclose(c.astype(np.float64), a.astype(np.float64) @ b.astype(np.float64), rtol=1e-2,
                               atol=1e-2)


@pytest.mark.parametrize("target", TARGETS)
def test_return_inside_static_range(target):
    rng = np.random.default_rng(7)
    P, N = 32, 6
    x = rng.standard_normal((P, N)).astype(np.float32)
    t = rng.uniform(0, 2, P).astype(np.float32)
    out = poison(P, np.int32)
    run(target, K.first_above, (P,), x, t, out, N=N)
    above = x > t[:, None]
    np.testing.assert_array_equal(out, np.where(above.any(1), above.argmax(1), N))


@pytest.mark.parametrize("target", TARGETS)
def test_library_style_cross_entropy(target):
    rng = np.random.default_rng(8)
    R, C = 8, 300
    x = rng.standard_normal((R, C)).astype(np.float32)
    x0 = x.astype(np.float64)
    y = rng.integers(0, C, R).astype(np.int64)
    y[2] = y[5] = -100
    loss = poison(R, np.float32)
    run(target, K.ce_kernel, (R,), x, C, y, loss, C, -100, BLOCK_SIZE=128)
    lse = np.log(np.exp(x0).sum(1))
    for r in range(R):
        if y[r] == -100:
            assert (x[r] == 0).all() and np.isnan(loss[r])
        else:
            np.testing.assert_allclose(loss[r], lse[r] - x0[r, y[r]], rtol=1e-5, atol=1e-5)
            g = np.exp(x0[r] - lse[r])
            g[y[r]] -= 1
            np.testing.assert_allclose(x[r], g, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("lo,hi,iv", [(2**35, 2**35 + 20, 1), (2**35, 2**35 + 20, 3), (15, -16, -1), (15, -16, -3),
                                      (-18, -22, -1), (22, 18, -1)])
def test_int64_bounds_and_negative_steps(target, lo, hi, iv):
    out = poison(1, np.int64)
    run(target, K.sum_range, (1,), out, lo, hi, iv)
    assert out[0] == sum(range(lo, hi, iv))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("early", [True, False])
@pytest.mark.parametrize("mode", ["dynamic", "static"])
def test_exit_early(target, early, mode):
    out = poison(1, np.int32)
    run(target, K.exit_early, (1,), np.array([early], np.int32), out, early, mode)
    assert out[0] == (0 if early else 1)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("c1,c2,c3", [(a, b, c) for a in (0, 1) for b in (0, 1) for c in (0, 1)])
def test_nested_if_else_return(target, c1, c2, c3):
    out = np.full(1, -1, np.int32)
    run(target, K.nested_return, (1,), *[np.array([v], np.int32) for v in (c1, c2, c3, 1, 2, 3)], out)
    assert out[0] == (-1 if (c1 and not c2) else (1 if c1 else (2 if c3 else 3)))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("n", [3, -3])
def test_equal_constants_in_both_branches_hold_after_the_if(target, n):
    x = poison(1, np.int32)
    run(target, K.same_constant_both_branches, (1,), x, n)
    assert x[0] == 25


@pytest.mark.parametrize("target", TARGETS)
def test_descriptor_reassigned_in_runtime_if_and_loop(target):
    rng = np.random.default_rng(7)
    M, N, MB, NB = 16, 200, 8, 32  # N not a multiple of NB: the last tiles are partly out of bounds
    a = rng.standard_normal((M, N)).astype(np.float32)
    b = rng.standard_normal((M, N)).astype(np.float32)
    ra, rb = a.astype(np.float64), b.astype(np.float64)
    for j in range(0, N, NB):
        if (j // NB) % 3 == 0:
            rb[:, j:j + NB] += 20
        else:
            ra[:, j:j + NB] += 10
    run(target, K.descriptor_switched_in_loop, (M // MB,), a, b, M, N, MB=MB, NB=NB)
    np.testing.assert_allclose(a, ra, rtol=1e-6)
    np.testing.assert_allclose(b, rb, rtol=1e-6)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("flag", [0, 2])  # not 1: an int equal to 1 is specialized as a constant
def test_block_pointer_chosen_by_runtime_if(target, flag):
    rng = np.random.default_rng(8)
    N = 300
    a = rng.standard_normal(N).astype(np.float32)
    b = rng.standard_normal(N).astype(np.float32)
    ra, rb = a.copy(), b.copy()
    (rb if flag else ra)[:] *= 2
    run(target, K.block_ptr_switched_in_if, (1,), a, b, N, flag, BLOCK=64)
    np.testing.assert_array_equal(a, ra)
    np.testing.assert_array_equal(b, rb)


def test_descriptor_must_keep_its_block_shape_across_an_if():
    @compiler.jit
    def k(A, N, flag):
        d = tl.make_tensor_descriptor(A, shape=[N], strides=[1], block_shape=[32])
        if flag > 0:
            d = tl.make_tensor_descriptor(A, shape=[N], strides=[1], block_shape=[64])
        d.store([0], d.load([0]))

    with pytest.raises(compiler.CompilationError, match="'d' gets different kinds of value"):
        k[(1,)](np.zeros(64, np.float32), 64, 2)  # not 1: an int equal to 1 is specialized as a constant
