"""Scans in many layouts: every number of warps from 1 to 16, 1-D to 3-D tiles, every axis, forward and reverse,
one and two operands, against exact and float64 references, in the interpreter, compiled to PTX and assembled
(ptxas target), and on the GPU (gpu target, marked gpu).

The warps of a tile spread along the scanned axis or across it, so the scan's cross-warp combine
(codegen/reduce.py _cross_warp_scan) runs with 1 to 16 warps and 1 to many reps per warp, under each of its
schemes (the cost model's choice, TILEFARM_AB=scan_direct, TILEFARM_AB=scan_prefix). The 2-operand combine is
the composition of affine maps on int32 (wrapping), which is associative and not commutative: a combine out of
the scan's order gives other integers.
"""
import numpy as np
import pytest

from . import scan_kernels as K
from .test_ops import TARGETS, TOL, assert_close, assert_exact, poison, run

SCHEMES = ["model", "scan_direct", "scan_prefix"]


def _inputs(shape, op, rng):
    if op == "affine":
        x = rng.integers(-2**31, 2**31, shape, dtype=np.int64).astype(np.int32)
        m = rng.integers(-2**31, 2**31, shape, dtype=np.int64).astype(np.int32)
    elif op == "cumsum_int":
        x = rng.integers(-2**31, 2**31, shape, dtype=np.int64).astype(np.int32)
        m = np.zeros(shape, np.int32)
    else:
        x = rng.uniform(-1, 1, shape).astype(np.float32)
        m = np.zeros(shape, np.int32)
    return x, m


def _reference(x, m, axis, op, reverse):
    """(y, z): the scan of x (and m, for the affine maps) in the scan's order, in float64 or exact integers."""
    if reverse:
        x, m = np.flip(x, axis), np.flip(m, axis)
    if op == "cumsum":
        y, z = np.cumsum(x.astype(np.float64), axis=axis), m
    elif op == "cumsum_int":
        y, z = (np.cumsum(x.astype(np.int64), axis=axis) & 0xFFFFFFFF).astype(np.uint32).view(np.int32), m
    elif op == "cummax":
        y, z = np.maximum.accumulate(x, axis=axis), m
    else:
        xs, ms = np.moveaxis(x.astype(np.int64), axis, 0), np.moveaxis(m.astype(np.int64), axis, 0)
        cy, cz = np.empty_like(xs), np.empty_like(ms)
        c, mm = xs[0], ms[0]
        cy[0], cz[0] = c, mm
        for i in range(1, xs.shape[0]):
            # (m1, c1) then (m2, c2) = (m1*m2, c1*m2 + c2), modulo 2^32
            mm, c = (mm * ms[i]) & 0xFFFFFFFF, (c * ms[i] + xs[i]) & 0xFFFFFFFF
            cy[i], cz[i] = c, mm
        y = np.moveaxis(cy, 0, axis).astype(np.uint32).view(np.int32)
        z = np.moveaxis(cz, 0, axis).astype(np.uint32).view(np.int32)
    if reverse:
        y, z = np.flip(y, axis), np.flip(z, axis)
    return y, z


def _check(y, z, x, m, axis, op, reverse):
    ry, rz = _reference(x, m, axis, op, reverse)
    if op == "cumsum":
        n = x.shape[axis]
        assert_close(y, ry, "float32", rtol=TOL["float32"] * n, atol=TOL["float32"] * n)
    else:
        assert_exact(y, ry)
    assert_exact(z, rz)


def _go(target, kernel, shape, axis, op, reverse, scheme, monkeypatch, **meta):
    if scheme != "model":
        if target == "interp":
            pytest.skip("the interpreter has no code generation schemes")
        monkeypatch.setenv("TILEFARM_AB", scheme)
    rng = np.random.default_rng(hash((shape, axis, op, reverse, meta.get("num_warps"))) % 2**32)
    x, m = _inputs(shape, op, rng)
    y = poison(shape, "float32" if op in ("cumsum", "cummax") else "int32")
    z = poison(shape, "int32")
    kop = "cumsum" if op == "cumsum_int" else op
    run(target, kernel, (1,), [x, m, y, z], [], AXIS=axis, OP=kop, REVERSE=reverse, **meta)
    _check(y, z, x, m, axis, op, reverse)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("op", ["cumsum", "cumsum_int", "cummax", "affine"])
@pytest.mark.parametrize("nw,n", [(1, 256), (2, 512), (4, 1024), (8, 2048), (16, 4096), (8, 64), (16, 512)])
def test_scan_1d(target, scheme, reverse, op, nw, n, monkeypatch):
    _go(target, K.scan1d_kernel, (n,), 0, op, reverse, scheme, monkeypatch, N=n, num_warps=nw)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("op", ["cumsum", "affine"])
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("nw,bm,bn", [(1, 16, 64), (2, 64, 16), (4, 256, 32), (4, 4, 1024), (8, 128, 64),
                                      (16, 64, 128), (8, 32, 8)])
def test_scan_2d(target, scheme, reverse, op, axis, nw, bm, bn, monkeypatch):
    _go(target, K.scan2d_kernel, (bm, bn), axis, op, reverse, scheme, monkeypatch, BM=bm, BN=bn, num_warps=nw)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("op", ["cumsum", "affine"])
@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("nw,shape", [(4, (8, 16, 32)), (8, (4, 64, 8)), (2, (16, 4, 16))])
def test_scan_3d(target, reverse, op, axis, nw, shape, monkeypatch):
    _go(target, K.scan3d_kernel, shape, axis, op, reverse, "model", monkeypatch, B0=shape[0], B1=shape[1],
        B2=shape[2], num_warps=nw)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("nw,bm,bn", [(4, 64, 64), (8, 128, 64), (4, 128, 128)])
def test_scan_of_dot_accumulator(target, reverse, axis, nw, bm, bn):
    """The accumulator's MMA layout has a register bit along the rows between the lanes' and the warps'."""
    bk = 32
    rng = np.random.default_rng(bm * 7 + bn + axis + reverse)
    a = rng.uniform(-1, 1, (bm, bk)).astype(np.float16)
    b = rng.uniform(-1, 1, (bk, bn)).astype(np.float16)
    y = poison((bm, bn), "float32")
    run(target, K.dot_scan_kernel, (1,), [a, b, y], [], AXIS=axis, REVERSE=reverse, BM=bm, BN=bn, BK=bk,
        num_warps=nw)
    acc = a.astype(np.float64) @ b.astype(np.float64)
    ref = np.flip(np.cumsum(np.flip(acc, axis), axis=axis), axis) if reverse else np.cumsum(acc, axis=axis)
    n = acc.shape[axis]
    # fp16 products are exact in fp32; the dot's and the scan's fp32 sums round
    assert_close(y, ref, "float32", rtol=1e-5 * n, atol=1e-5 * n)
