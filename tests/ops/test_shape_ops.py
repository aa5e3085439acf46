"""join / split / interleave / cat / flip (bit-exact, NaN and -0 included), swizzle2d, assume, loads through
addresses held as integers, cache/eviction hints in the PTX; interpreter, ptxas, GPU."""
import numpy as np
import pytest

from compiler.codegen import ptx as P

from . import shape_ops_kernels as K
from .lang_common import TARGETS, poison, run

M, N = 8, 16


def _inputs(dtype):
    rng = np.random.default_rng(0)
    if dtype == "int32":
        return (rng.integers(-2**31, 2**31 - 1, (M, N), dtype=np.int32),
                rng.integers(-2**31, 2**31 - 1, (M, N), dtype=np.int32))
    a = rng.standard_normal((M, N)).astype(dtype)
    b = rng.standard_normal((M, N)).astype(dtype)
    a[0, :4] = [np.nan, -0.0, np.inf, -np.inf]
    b[1, :2] = [-0.0, np.nan]
    return a, b


def _bits(x):
    x = np.ascontiguousarray(x)
    return x.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[x.dtype.itemsize])


REFS = {
    "join": lambda a, b: np.stack([a, b], axis=-1),
    "split": lambda a, b: np.concatenate([a, b]),
    "interleave": lambda a, b: np.stack([a, b], axis=-1).reshape(M, 2 * N),
    "cat": lambda a, b: np.concatenate([a, b], axis=0),
    "flip1": lambda a, b: a[:, ::-1],
    "flip0": lambda a, b: a[::-1, :],
}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["float32", "float16", "int32"])
@pytest.mark.parametrize("what", sorted(REFS))
def test_shape_ops(target, dtype, what):
    a, b = _inputs(dtype)
    ref = REFS[what](a, b)
    y = poison(ref.size, dtype)
    run(target, K.shape_ops, (1,), [a, b, y], [], WHAT=what, M=M, N=N)
    np.testing.assert_array_equal(_bits(y), _bits(ref).reshape(-1))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("shape,dim,nw", [((4, 512), 1, 8), ((256, 8), 0, 8), ((2, 64), 1, 1), ((64, 32), 0, 4)])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_flip_across_lanes_and_warps(target, shape, dim, nw, dtype):
    """Reversing an index flips each of its bits; the partner of every bit's step may sit in the same thread, in
    another lane or in another warp (a row of 512 over 8 warps): bit-exact either way (NaN, -0)."""
    from compiler.ir import types as Ty

    nd = Ty.from_name(dtype).np
    x = np.random.default_rng(2).standard_normal(shape).astype(np.float32).astype(nd)
    x[0, :2] = [np.nan, -0.0]
    y, p = poison(x.size, dtype), poison(x.size, dtype)
    run(target, K.flip_wide, (1,), [x, y, p], [], M=shape[0], N=shape[1], DIM=dim, num_warps=nw)
    np.testing.assert_array_equal(_bits(y), _bits(np.flip(x, dim)).reshape(-1))
    np.testing.assert_array_equal(p.astype(np.float32), (np.flip(x, dim).astype(np.float32) * 2).reshape(-1))


def _swizzle_ref(i, j, si, sj, g):
    ij = i * sj + j
    group = ij // (g * sj)
    off = group * g
    gg = min(si - off, g)
    r = ij % (g * sj)
    return off + r % gg, r // gg


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("si,sj,g", [(7, 5, 3), (8, 8, 4), (5, 9, 8)])
def test_swizzle2d(target, si, sj, g):
    y = poison(2 * 128, "int32")
    run(target, K.swizzle_kernel, (1,), [y], [si, sj], GROUP=g, BLOCK=128)
    ref = np.array([_swizzle_ref(p // sj, p % sj, si, sj, g) for p in range(si * sj)]).reshape(-1)
    np.testing.assert_array_equal(y[:2 * si * sj], ref)
    assert sorted(map(tuple, ref.reshape(-1, 2))) == [(i, j) for i in range(si) for j in range(sj)]


@pytest.mark.parametrize("target", TARGETS)
def test_pointer_array_loads(target):
    n = 40
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal(n + 8 * k).astype(np.float32) for k in range(3)]
    y = poison(3 * n, "float32")
    if target == "gpu":
        from compiler.runtime import DeviceArray, synchronize

        dev = [DeviceArray.from_numpy(a) for a in arrays]
        ptrs = DeviceArray.from_numpy(np.array([d.data_ptr() for d in dev][::-1], np.int64))
        yd = DeviceArray.from_numpy(y)
        K.gather_rows[(3,)](ptrs, yd, *dev, n, BLOCK=64)
        synchronize()
        y = yd.numpy()
    else:
        ptrs = np.array([a.__array_interface__["data"][0] for a in arrays][::-1], np.int64)
        run(target, K.gather_rows, (3,), [ptrs, y, *arrays], [n], BLOCK=64)
    np.testing.assert_array_equal(y.reshape(3, n), np.stack([a[:n] * 2 for a in arrays[::-1]]))


def test_cache_hints_reach_the_ptx():
    if P.find_ptxas() is None:
        pytest.skip("ptxas not found")
    x = np.zeros(1024, np.float32)
    ck = K.hinted_copy.warmup(x, x, 512, BLOCK=256, grid=(2,), target="sm_90a")
    lines = [l for l in ck.asm["ptx"].splitlines() if "ld.global" in l or "st.global" in l]
    text = "\n".join(lines)
    assert "ld.global.cg" in text and "ld.global.L1::evict_last" in text
    assert "st.global.L1::evict_first" in text and "st.global.cs" in text


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["float32", "int32", "float16"])
@pytest.mark.parametrize("desc", [False, True])
def test_sort(target, dtype, desc):
    a, _ = _inputs(dtype)
    if dtype != "int32":
        a = np.where(np.isnan(a), 0, a).astype(dtype)  # NaN has no order
        a[2, :3] = [-0.0, 0.0, -0.0]
    a[3, :] = a[3, 0]  # ties
    y = poison(a.size, dtype)
    run(target, K.sort_kernel, (1,), [a, y], [], WHAT="sort", DESC=desc, M=M, N=N, K=N)
    ref = np.sort(a, axis=1)
    ref = ref[:, ::-1] if desc else ref
    np.testing.assert_array_equal(y.reshape(M, N), ref)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype,shape,nw", [("float32", (2, 512), 8), ("bfloat16", (4, 128), 4),
                                            ("int16", (64, 8), 8), ("uint8", (1, 256), 2)])
@pytest.mark.parametrize("desc", [False, True])
def test_sort_rows_spread_over_lanes_and_warps(target, dtype, shape, nw, desc):
    """Pairs of the network whose elements sit in one thread, in two lanes and in two warps (a row of 512 over
    8 warps): each meets its partner where it is."""
    from compiler.ir import types as Ty

    nd = Ty.from_name(dtype).np
    rng = np.random.default_rng(11)
    if dtype.startswith(("int", "uint")):
        info = np.iinfo(nd)
        a = rng.integers(info.min, info.max, shape, endpoint=True).astype(nd)
    else:
        a = (rng.standard_normal(shape) * 100).astype(np.float32).astype(nd)
    a[0, :5] = a[0, 7]  # ties
    y = poison(a.size, dtype)
    run(target, K.sort_kernel, (1,), [a, y], [], WHAT="sort", DESC=desc, M=shape[0], N=shape[1], K=shape[1],
        num_warps=nw)
    ref = np.sort(a.astype(np.float64) if a.dtype.kind == "V" or dtype == "bfloat16" else a, axis=1)
    ref = ref[:, ::-1] if desc else ref
    np.testing.assert_array_equal(y.reshape(shape).astype(ref.dtype), ref)


@pytest.mark.parametrize("target", ["interp"])
def test_sort_keeps_every_element_when_nan_is_among_them(target):
    """NaN has no order, but the network only ever exchanges the two elements of a pair, and both take the one
    decision: the result is a permutation of the row (no NaN lost, no value doubled)."""
    rng = np.random.default_rng(5)
    a = rng.standard_normal((M, N)).astype(np.float32)
    a[:, ::5] = np.nan
    y = poison(a.size, "float32")
    run(target, K.sort_kernel, (1,), [a, y], [], WHAT="sort", DESC=False, M=M, N=N, K=N)
    y = y.reshape(M, N)
    for r in range(M):
        assert np.isnan(y[r]).sum() == np.isnan(a[r]).sum()
        np.testing.assert_array_equal(np.sort(y[r][~np.isnan(y[r])]), np.sort(a[r][~np.isnan(a[r])]))


def test_sort_network_is_not_unrolled_through_shared_memory():
    """A 512-element row sorted by 8 warps: the pairs across warps meet through shared memory (one exchange
    each), the rest in registers and shuffles; the whole kernel stays a few thousand lines of PTX (moving the tile
    for every step made it tens of thousands, and minutes to compile)."""
    a = np.zeros((1, 512), np.float32)
    ck = K.sort_kernel.warmup(a, a, WHAT="sort", DESC=False, M=1, N=512, K=512, grid=(1,), num_warps=8,
                              target="sm_90")
    ptx = ck.asm["ptx"]
    assert len(ptx.splitlines()) < 4000
    assert "shfl.sync.bfly" in ptx or "shfl.sync.idx" in ptx


@pytest.mark.parametrize("target", TARGETS)
def test_topk(target):
    a = np.random.default_rng(3).permutation(M * N).astype(np.int32).reshape(M, N)
    y = poison(M * 4, "int32")
    run(target, K.sort_kernel, (1,), [a, y], [], WHAT="topk", DESC=False, M=M, N=N, K=4)
    np.testing.assert_array_equal(y.reshape(M, 4), np.sort(a, axis=1)[:, ::-1][:, :4])


@pytest.mark.parametrize("target", TARGETS)
def test_histogram(target):
    rng = np.random.default_rng(4)
    x = rng.integers(-3, 20, 200).astype(np.int32)
    y = poison(16, "int32")
    run(target, K.histogram_kernel, (1,), [x, y], [200], BINS=16, BLOCK=256)
    np.testing.assert_array_equal(y, np.bincount(x[(x >= 0) & (x < 16)], minlength=16))


@pytest.mark.parametrize("target", TARGETS)
def test_gather(target):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((16, 8)).astype(np.float32)
    x[0, 0] = np.nan
    idx = rng.integers(0, 16, (32, 8)).astype(np.int32)
    y = poison(32 * 8, "float32")
    run(target, K.gather_kernel, (1,), [x, idx, y], [], M=16, N=8, MI=32)
    np.testing.assert_array_equal(_bits(y), _bits(np.take_along_axis(x, idx, axis=0)).reshape(-1))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("n,k", [(8, 1), (16, 4), (256, 8), (64, 32), (128, 128)])
def test_topk_sizes_and_ties(target, n, k):
    """tl.topk by blocks of k and pairwise maxima (Triton's network): every n, k, with ties and -inf padding."""
    rng = np.random.default_rng(n + k)
    a = rng.standard_normal((3, n)).astype(np.float32)
    a[1, : n // 2] = a[1, 0]  # a run of equal values
    a[2, n // 2:] = -np.inf
    y = poison(3 * k, "float32")
    run(target, K.topk_rows, (3,), [a, y], [], N=n, K=k)
    np.testing.assert_array_equal(y.reshape(3, k), -np.sort(-a, axis=1)[:, :k])
