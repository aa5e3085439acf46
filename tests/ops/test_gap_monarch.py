"""The Monarch kernel's gap to Triton (1.38 of its time on the H200): passes/assign_layouts.py `_continued_order`
(the A/B `run_dims`, 0.775 of the time on the H100 on 2026-12-07, made the code). A 3-D tile whose pointers are `X + row * stride + b * 16 + i` (i < 16): i and b together are
one contiguous range of 256 elements, but the axis analysis sees each dim alone, so the dim after i fell to the
higher one (the rows) and a warp's access went over 16 rows (16 128-byte lines); now lanes go on along b (4 lines a
warp, Triton's order)."""
import numpy as np
import pytest

import compiler
import compiler.language as tl
from compiler.passes.layouts import BlockedLayout
from compiler.options import Options
from compiler.passes import run_pipeline

from .test_ops import TARGETS, poison, run


@compiler.jit
def monarch_like_kernel(X, R, LW, Y, M, stride_xm, stride_ym, NBLK: tl.constexpr, BLOCK_M: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rb = tl.arange(0, NBLK)
    row = rm[None, :, None].to(tl.int64)
    mask = row < M
    x = tl.load(X + row * stride_xm + rb[:, None, None] * NBLK + rb[None, None, :], mask=mask, other=0.0)
    w_offs = rb[:, None, None] * (NBLK * NBLK) + rb[None, :, None] * NBLK + rb[None, None, :]
    z = tl.dot(x, tl.load(R + w_offs))
    u = tl.permute(z.to(tl.float16), (2, 1, 0))
    y = tl.dot(u, tl.load(LW + w_offs))
    tl.store(Y + row * stride_ym + rb[:, None, None] * NBLK + rb[None, None, :], y.to(Y.dtype.element_ty), mask=mask)


@compiler.jit
def strided_copy3_kernel(X, Y, M, stride_xm, NB: tl.constexpr, NI: tl.constexpr, BLOCK_M: tl.constexpr):
    # no dot: a plain 3-D copy [b, m, i] of rows b * NI + i, stored densely
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rb, ri = tl.arange(0, NB), tl.arange(0, NI)
    row = rm[None, :, None]
    mask = row < M
    x = tl.load(X + row * stride_xm + rb[:, None, None] * NI + ri[None, None, :], mask=mask, other=0.0)
    tl.store(Y + row * (NB * NI) + rb[:, None, None] * NI + ri[None, None, :], x * 2.0, mask=mask)


def _monarch_ref(x, r, lw, M, nb):
    xb = x[:, :nb * nb].astype(np.float64).reshape(M, nb, nb)
    z = np.einsum("mbi,bij->bmj", xb, r.astype(np.float64)).astype(np.float16).astype(np.float64)
    return np.einsum("bmj,jbk->mjk", z, lw.astype(np.float64)).reshape(M, nb * nb)


@pytest.mark.parametrize("target", TARGETS)
def test_monarch_results(target):
    M, nb, stride = 40, 16, 264
    rng = np.random.default_rng(61)
    x = rng.standard_normal((M, stride)).astype(np.float16)
    r = (rng.standard_normal((nb, nb, nb)) * nb ** -0.5).astype(np.float16)
    lw = (rng.standard_normal((nb, nb, nb)) * nb ** -0.5).astype(np.float16)
    y = poison((M, nb * nb), "float16")
    run(target, monarch_like_kernel, ((M + 15) // 16,), [x, r, lw, y], [M, stride, nb * nb], NBLK=nb, BLOCK_M=16,
        num_warps=4)
    np.testing.assert_allclose(y.astype(np.float64), _monarch_ref(x, r, lw, M, nb), rtol=1e-2, atol=5e-3)


@pytest.mark.parametrize("target", TARGETS)
def test_strided_copy3_results(target):
    M, nb, ni, stride = 37, 4, 32, 136
    x = np.random.default_rng(62).standard_normal((M, stride)).astype(np.float32)
    y = poison((M, nb * ni), "float32")
    run(target, strided_copy3_kernel, ((M + 7) // 8,), [x, y], [M, stride], NB=nb, NI=ni, BLOCK_M=8, num_warps=4)
    np.testing.assert_array_equal(y, x[:, :nb * ni] * 2.0)


def _access_orders(kernel, args, meta, num_warps=4):
    m = kernel.lower(*args, **meta)
    m = run_pipeline(m, Options(num_warps=num_warps, arch="sm_90a"), upto="assign_layouts")
    out = []
    for op in m.function.body.walk():
        if op.kind in ("load", "store") and op.operands[0].type.shape and len(op.operands[0].type.shape) == 3:
            lay = (op.attrs.get("_layouts") or [None])[0] if op.kind == "load" else None
            if op.kind == "store":
                lay = op.operands[1].owner.attrs["_layouts"][0] if op.operands[1].owner is not None else None
            out.append((op.kind, tuple(op.operands[0].type.shape), lay))
    return out


def test_run_dims_lanes_continue_the_run():
    """The Monarch tile's load and store: after i, lanes go along b (whose pointers step by the 16 elements i
    spans), not along the rows: order (2, 0, 1), 16 lanes on b and 2 on i, so a warp's access covers one row's 512
    contiguous bytes. The weights' [16, 16, 16] tiles (steps 256, 16, 1) keep (2, 1, 0)."""
    f16 = np.zeros((40, 264), np.float16)
    w = np.zeros((16, 16, 16), np.float16)
    accs = _access_orders(monarch_like_kernel, (f16, w, w, f16, 40, 264, 256), {"NBLK": 16, "BLOCK_M": 64})
    x_load = [lay for k, shape, lay in accs if k == "load" and shape == (16, 64, 16)]
    w_loads = [lay for k, shape, lay in accs if k == "load" and shape == (16, 16, 16)]
    store = [lay for k, shape, lay in accs if k == "store"]
    assert x_load and w_loads and store
    for lay in x_load + store:
        assert isinstance(lay, BlockedLayout)
        assert tuple(lay.order) == (2, 0, 1) and tuple(lay.tpw) == (16, 1, 2), lay
    for lay in w_loads:
        assert tuple(lay.order) == (2, 1, 0), lay
