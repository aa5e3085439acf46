"""In-kernel tensor descriptors beyond load/store: row gather/scatter, tile atomics, `block_shape` as a list."""
import numpy as np
import pytest

import compiler
import compiler.language as tl

from .kernels import TARGETS, poison, run


@compiler.jit
def gather_rows(Out, In, Idx, y, X, Y, BX: tl.constexpr, BY: tl.constexpr, NAN: tl.constexpr):
    idx = tl.load(Idx + tl.arange(0, BX))
    if NAN:
        desc = tl.make_tensor_descriptor(In, [X, Y], [Y, 1], [1, BY], padding_option="nan")
    else:
        desc = tl.make_tensor_descriptor(In, [X, Y], [Y, 1], [1, BY])
    tl.static_assert(desc.block_shape == [1, BY])
    tl.store(Out + tl.arange(0, BX)[:, None] * BY + tl.arange(0, BY)[None, :], desc.gather(idx, y))


@compiler.jit
def scatter_rows(Out, In, Idx, y, X, Y, BX: tl.constexpr, BY: tl.constexpr):
    idx = tl.load(Idx + tl.arange(0, BX))
    data = tl.load(In + tl.arange(0, BX)[:, None] * BY + tl.arange(0, BY)[None, :])
    desc = tl.make_tensor_descriptor(Out, [X, Y], [Y, 1], [1, BY])
    desc.scatter(data, idx, y)


@compiler.jit
def tile_atomics(Out, In, M, N, MB: tl.constexpr, NB: tl.constexpr, KIND: tl.constexpr):
    mo, no = tl.program_id(0) * MB, tl.program_id(1) * NB
    rm, rn = mo + tl.arange(0, MB)[:, None], no + tl.arange(0, NB)[None, :]
    val = tl.load(In + rm * NB * 4 + rn)
    desc = tl.make_tensor_descriptor(Out, [M, N], [N, 1], [MB, NB])
    if KIND == "add":
        desc.atomic_add([mo, no], val)
    elif KIND == "max":
        desc.atomic_max([mo, no], val)
    elif KIND == "min":
        desc.atomic_min([mo, no], val)
    else:
        desc.atomic_xor([mo, no], val)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("nan", [False, True])
def test_gather_rows(target, nan):
    rng = np.random.default_rng(1)
    X, Y, BX, BY, y = 40, 64, 16, 32, 40   # columns 40..71: the last 8 are out of bounds
    src = rng.standard_normal((X, Y)).astype(np.float32)
    idx = rng.integers(0, X, BX).astype(np.int32)
    idx[3], idx[7] = X + 2, -1             # rows out of bounds
    out = poison((BX, BY), np.float32)
    run(target, gather_rows, (1,), out, src, idx, y, X, Y, BX=BX, BY=BY, NAN=nan)
    pad = np.nan if nan else 0.0
    want = np.full((BX, BY), pad, np.float32)
    for i, r in enumerate(idx):
        if 0 <= r < X:
            want[i, :Y - y] = src[r, y:]
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("target", TARGETS)
def test_scatter_rows(target):
    rng = np.random.default_rng(2)
    X, Y, BX, BY, y = 32, 48, 16, 32, 24   # columns 24..55: the last 8 are out of bounds
    data = rng.standard_normal((BX, BY)).astype(np.float32)
    idx = rng.permutation(X)[:BX].astype(np.int32)
    idx[5] = X + 9                         # dropped
    out = rng.standard_normal((X, Y)).astype(np.float32)
    want = out.copy()
    for i, r in enumerate(idx):
        if 0 <= r < X:
            want[r, y:] = data[i, :Y - y]
    run(target, scatter_rows, (1,), out, data, idx, y, X, Y, BX=BX, BY=BY)
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("kind", ["add", "max", "xor"])
def test_tile_atomics(target, kind):
    rng = np.random.default_rng(3)
    MB, NB = 8, 16
    M, N = 2 * MB - 3, 2 * NB - 5          # the last tiles hang over the edges
    grid = (2, 2)
    dt = np.float32 if kind == "add" else np.int32
    if dt == np.float32:
        src = rng.standard_normal((2 * MB, 4 * NB)).astype(dt)
        out = rng.standard_normal((M, N)).astype(dt)
    else:
        src = rng.integers(-1000, 1000, (2 * MB, 4 * NB)).astype(dt)
        out = rng.integers(-1000, 1000, (M, N)).astype(dt)
    want = out.copy()
    v = src[:M, :N]
    want = want + v if kind == "add" else np.maximum(want, v) if kind == "max" else want ^ v
    run(target, tile_atomics, grid, out, src, M, N, MB=MB, NB=NB, KIND=kind)
    if dt == np.float32:
        np.testing.assert_allclose(out, want, rtol=1e-6)
    else:
        np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("kind", ["min", "max"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_tile_min_max_of_16_bit_floats(target, kind, dtype):
    """16-bit float min/max (PTX has them only for pairs, so each element goes by a compare-and-swap loop): the
    overlapping tiles of the grid meet on the same elements."""
    from compiler.ir import types as T

    nd = T.from_name(dtype).np
    rng = np.random.default_rng(4)
    MB, NB = 8, 16
    M, N = 2 * MB - 3, 2 * NB - 5
    src = rng.standard_normal((2 * MB, 4 * NB)).astype(np.float32).astype(nd)
    out = rng.standard_normal((M, N)).astype(np.float32).astype(nd)
    f = np.maximum if kind == "max" else np.minimum
    want = f(out.astype(np.float64), src[:M, :N].astype(np.float64))
    run(target, tile_atomics, (2, 2), out, src, M, N, MB=MB, NB=NB, KIND=kind)
    np.testing.assert_array_equal(out.astype(np.float64), want)


@pytest.mark.parametrize("kind,dtype", [("min", "float32"), ("max", "float32"), ("add", "float64"),
                                        ("add", "int64"), ("xor", "float32")])
def test_tile_atomics_take_a_tensor_reductions_types(kind, dtype):
    """A descriptor reduces with the element types a TMA tensor reduction has (no float32 min/max, no int64 add),
    so what compiles here compiles where descriptors reduce by TMA; the error names the types it takes."""
    from compiler.errors import CompilationError
    from compiler.ir import types as T

    nd = T.from_name(dtype).np
    src, out = np.zeros((16, 64), nd), np.zeros((13, 27), nd)
    with pytest.raises(CompilationError, match=f"atomic_{kind} does not take {dtype}"):
        tile_atomics[(1, 1)](out, src, 13, 27, MB=8, NB=16, KIND=kind)
