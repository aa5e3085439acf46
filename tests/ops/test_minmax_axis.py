"""min / max in the axis analysis (passes/axisinfo.py `_minmax`): they keep contiguity and divisibility. Checked
against a brute-force definition of the three facts over every element (for operands built from runs of known
facts), on a split-K loop whose K mask runs against `min(k_start + chunk, K)` (its loads vectorize only with the
facts kept), and against float64 on every target."""
import itertools

import numpy as np
import pytest

import compiler
import compiler.language as tl
from compiler.passes import axisinfo
from compiler.passes.axisinfo import AxisInfo

from .test_ops import TARGETS, assert_close, run


def _facts(x):
    """(contiguity, divisibility, constancy) of a 1-D int array, by their definitions (largest powers of two)."""
    n = len(x)

    def runs(step):
        best = 1
        L = 2
        while L <= n:
            if all(all(x[i + j] == x[i] + step * j for j in range(L)) for i in range(0, n, L)):
                best = L
            L *= 2
        return best
    contig, const = runs(1), runs(0)
    firsts = x[::contig]
    div = 1 << 30
    for v in firsts:
        v = int(v)
        div = min(div, (v & -v) if v else 1 << 30)
    return contig, div, const


def _array(rng, n, contig, div, const):
    """An int array of n elements with (at least) these facts: runs of `contig` consecutive values starting at
    multiples of `div`, or runs of `const` equal values (multiples of `div`)."""
    if contig > 1:
        starts = rng.integers(1, 50, n // contig) * div
        return np.concatenate([s + np.arange(contig) for s in starts])
    vals = rng.integers(1, 50, n // const) * div
    return np.repeat(vals, const)


CASES = [(c, d, 1) for c in (1, 2, 8, 16) for d in (1, 4, 16, 64)] + [(1, d, k) for d in (1, 8, 32) for k in (2, 16)]


@pytest.mark.parametrize("op", ["min", "max"])
def test_facts_hold_for_every_element(op):
    """The facts _minmax gives are true of min / max of arrays with the operands' facts, whatever the values."""
    rng = np.random.default_rng(0)
    f = np.minimum if op == "min" else np.maximum
    n = 64
    for (ca, da, ka), (cb, db, kb) in itertools.product(CASES, CASES):
        got = axisinfo._minmax(None, AxisInfo((ca,), (da,), (ka,)), AxisInfo((cb,), (db,), (kb,)))
        for _ in range(4):
            a, b = _array(rng, n, ca, da, ka), _array(rng, n, cb, db, kb)
            if cb > 1 and ca > 1:  # both contiguous: offset one by a constant so either side may be smaller
                b = b + rng.integers(-3, 4) * db
            c, d, k = _facts(f(a, b))
            assert c >= got.contiguity[0] and k >= got.constancy[0], ((ca, da, ka), (cb, db, kb))
            assert all(int(v) % got.divisibility[0] == 0 for v in f(a, b)[::got.contiguity[0]]), \
                ((ca, da, ka), (cb, db, kb), got)


def test_chunk_end_keeps_its_divisibility():
    """min(k_start + chunk, K) with both sides multiples of 64 and 16: divisible by 16."""
    a, b = AxisInfo((1,), (64,), (1,)), AxisInfo((1,), (16,), (1,))
    assert axisinfo._minmax(None, a, b).divisibility == (16,)
    # a contiguous run against a constant: not contiguous, and only what divides every element of the run
    got = axisinfo._minmax(None, AxisInfo((64,), (64,), (1,)), AxisInfo((1,), (64,), (64,)))
    assert got.contiguity == (1,) and got.divisibility == (1,) and got.constancy == (1,)


@compiler.jit
def _splitk(A, B, C, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, SPLIT: tl.constexpr):
    pid_n = tl.program_id(0)
    pid_k = tl.program_id(1)
    chunk = tl.cdiv(tl.cdiv(K, SPLIT), BK) * BK
    k_start = pid_k * chunk
    k_end = min(k_start + chunk, K)
    rm = tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(k_start, k_end, BK):
        a = tl.load(A + rm[:, None] * K + (k + rk)[None, :], mask=(rm[:, None] < M) & (k + rk[None, :] < k_end),
                    other=0.0)
        b = tl.load(B + (k + rk)[:, None] * N + rn[None, :], mask=(k + rk[:, None] < k_end) & (rn[None, :] < N),
                    other=0.0)
        acc += tl.dot(a, b)
    tl.atomic_add(C + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def _ptx():
    a, b, c = np.zeros((32, 1024), np.float16), np.zeros((1024, 256), np.float16), np.zeros((32, 256), np.float32)
    ck = _splitk.warmup(a, b, c, 32, 256, 1024, grid=(4, 3), target="sm_90a", BM=32, BN=64, BK=64, SPLIT=3,
                        num_warps=4, num_stages=3)
    return ck.asm["ptx"]


def test_split_k_loads_vectorize():
    """The K mask against k_end is constant over 16 bytes: a's loads (K its fast dim) go to the copy ring as 16-byte
    copies (a mask constant over one element only left them 2-byte loads in registers, and no ring)."""
    ptx = _ptx()
    assert "cp.async.cg.shared.global" in ptx and "ld.global.b16" not in ptx


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("K", [1024, 1000, 200])
def test_split_k_results(target, K):
    rng = np.random.default_rng(K)
    M, N, SPLIT = 24, 200, 3
    a = rng.uniform(-1, 1, (M, K)).astype(np.float16)
    b = rng.uniform(-1, 1, (K, N)).astype(np.float16)
    c = np.zeros((M, N), np.float32)
    run(target, _splitk, (4, SPLIT), [a, b, c], [M, N, K], BM=32, BN=64, BK=64, SPLIT=SPLIT, num_warps=4,
        num_stages=3)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    assert_close(c, ref, "float32", rtol=2e-3, atol=2e-3 * np.sqrt(K))
