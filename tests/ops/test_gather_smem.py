"""A/B `gather_smem` (frontend/semantic.py `gather`, codegen/reduce.py `_e_gather`): tl.gather as one op through
shared memory (the source stored once, each result element loaded at its index), not the comparison of every index
with every source position along the axis. Results under both, in the interpreter, through ptxas and on the GPU:
1-D, 2-D along either axis with an index longer or shorter than the source, 3-D along the middle axis; int8, fp16,
bf16, fp32, int64 and bool sources; int32, int64 and uint8 indices; indices outside the axis (negative or too large)
give 0 under both. And the code: one barrier and no comparison of every pair."""
import numpy as np
import pytest

import compiler
import compiler.language as tl

from .test_ops import TARGETS, assert_exact, npdt, poison, run

AB = ["", "gather_smem"]


@compiler.jit
def gather2d_kernel(S, I, O, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, AX: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    src = tl.load(S + rm[:, None] * N + rn[None, :])
    if AX == 0:  # index [K, N]
        idx = tl.load(I + rk[:, None] * N + rn[None, :])
        tl.store(O + rk[:, None] * N + rn[None, :], tl.gather(src, idx, 0))
    else:  # index [M, K]
        idx = tl.load(I + rm[:, None] * K + rk[None, :])
        tl.store(O + rm[:, None] * K + rk[None, :], tl.gather(src, idx, 1))


@compiler.jit
def gather1d_kernel(S, I, O, N: tl.constexpr, K: tl.constexpr):
    src = tl.load(S + tl.arange(0, N))
    idx = tl.load(I + tl.arange(0, K))
    tl.store(O + tl.arange(0, K), tl.gather(src, idx, 0))


@compiler.jit
def gather3d_kernel(S, I, O, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr, K: tl.constexpr):
    ra = tl.arange(0, A)[:, None, None]
    rb = tl.arange(0, B)[None, :, None]
    rk = tl.arange(0, K)[None, :, None]
    rc = tl.arange(0, C)[None, None, :]
    src = tl.load(S + ra * B * C + rb * C + rc)
    idx = tl.load(I + ra * K * C + rk * C + rc)
    tl.store(O + ra * K * C + rk * C + rc, tl.gather(src, idx, 1))


def _src(shape, dtype, rng):
    if dtype == "int1":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype in ("int8", "int64"):
        return rng.integers(-100, 100, shape).astype(npdt(dtype))
    return (rng.standard_normal(shape) * 4).astype(npdt(dtype))


def _idx(shape, n, dtype, rng, outside=True):
    hi = 255 if dtype == "uint8" else n + 3
    lo = 0 if dtype == "uint8" else -3
    i = rng.integers(0 if not outside else lo, n if not outside else hi, shape)
    return i.astype(np.dtype(dtype))


def _ref(src, idx, axis):
    n = src.shape[axis]
    i = idx.astype(np.int64)
    ok = (i >= 0) & (i < n)
    got = np.take_along_axis(src, np.where(ok, i, 0), axis)
    return np.where(ok, got, np.zeros((), src.dtype))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("ab", AB)
@pytest.mark.parametrize("axis, M, N, K", [(0, 64, 32, 16), (0, 16, 32, 64), (1, 16, 64, 128), (1, 32, 16, 16)])
@pytest.mark.parametrize("dtype, itype", [("int8", "int32"), ("float16", "int64"), ("float32", "uint8"),
                                          ("int1", "int32"), ("int64", "int32"), ("bfloat16", "int32")])
def test_gather_2d(target, ab, axis, M, N, K, dtype, itype, monkeypatch):
    monkeypatch.setenv("TILEFARM_AB", ab)
    rng = np.random.default_rng(M * 7 + K + axis)
    src = _src((M, N), dtype, rng)
    ishape = (K, N) if axis == 0 else (M, K)
    idx = _idx(ishape, (M, N)[axis], itype, rng)
    out = poison(ishape, dtype)
    run(target, gather2d_kernel, (1,), [src, idx, out], [], M=M, N=N, K=K, AX=axis, num_warps=4)
    if target != "ptxas":
        assert_exact(out, _ref(src, idx, axis))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("ab", AB)
def test_gather_1d_and_3d(target, ab, monkeypatch):
    monkeypatch.setenv("TILEFARM_AB", ab)
    rng = np.random.default_rng(5)
    src = _src((16,), "float32", rng)
    idx = _idx((256,), 16, "int32", rng, outside=False)
    out = poison((256,), "float32")
    run(target, gather1d_kernel, (1,), [src, idx, out], [], N=16, K=256, num_warps=4)
    if target != "ptxas":
        assert_exact(out, _ref(src, idx, 0))
    src3 = _src((4, 8, 32), "float16", rng)
    idx3 = _idx((4, 16, 32), 8, "int32", rng)
    out3 = poison((4, 16, 32), "float16")
    run(target, gather3d_kernel, (1,), [src3, idx3, out3], [], A=4, B=8, C=32, K=16, num_warps=4)
    if target != "ptxas":
        assert_exact(out3, _ref(src3, idx3, 1))


def test_gather_smem_code(monkeypatch, tmp_path):
    """Under the switch: one barrier, the source stored once, a load a result element; by default the [64, 32] source
    compared with every index (its PTX over ten times longer)."""
    monkeypatch.setenv("TILEFARM_CACHE_DIR", str(tmp_path))
    args = (np.zeros((64, 32), np.int8), np.zeros((16, 32), np.int32), np.zeros((16, 32), np.int8))
    ptx = {}
    for ab in AB:
        monkeypatch.setenv("TILEFARM_AB", ab)
        ptx[ab] = gather2d_kernel.warmup(*args, grid=(1,), target="sm_90a", M=64, N=32, K=16, AX=0,
                                         num_warps=4).asm["ptx"]
    s = ptx["gather_smem"]
    assert s.count("bar.sync") + s.count("barrier.sync") == 1
    assert len(s.splitlines()) * 10 < len(ptx[""].splitlines())
