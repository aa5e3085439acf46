"""An mma.sync dot's b operand read from a copy ring's slot takes four 8x8 matrices an ldmatrix (x4: k rows k0 ..
k0 + 31 of one n8 tile) instead of two (x2: one k16 step) wherever K is a multiple of 32: half the ldmatrix
instructions for b, as Triton's PTX has (codegen/dot.py `load_operand`, was the A/B `ldsm_x4b`, adopted with
`sync_ring`). A b converted into its operand layout outside a ring keeps x2 (a batched GEMM's broadcast weight took
1.025 of the time with x4). The interpreter does not run this code: the results are checked on the GPU (and the PTX
assembled by ptxas), with b stored k-major (ldmatrix .trans) and n-major (b read transposed through its strides),
16- and 32-row tiles, fp16 and bf16, a batch dim; K = 16 keeps x2. The ldmatrix forms are checked in the PTX."""
import re

import numpy as np
import pytest

import compiler
import compiler.language as tl

from ..ops.test_ops import TARGETS, assert_close, poison, run


@compiler.jit
def _mm_small_m(A, B, C, M, N, K, sbk, sbn, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # a decode-style matmul: few rows a block (mma.sync: wgmma needs 64), K loop, b through runtime strides
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(A + rm[:, None] * K + (k + rk[None, :]), mask=rm[:, None] < M, other=0.0)
        b = tl.load(B + (k + rk[:, None]) * sbk + rn[None, :] * sbn)
        acc = tl.dot(a, b, acc)
    tl.store(C + rm[:, None] * N + rn[None, :], acc, mask=rm[:, None] < M)


@compiler.jit
def _bmm(A, B, C, NB: tl.constexpr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rb = tl.arange(0, NB)
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(A + rb[:, None, None] * (M * K) + rm[None, :, None] * K + rk[None, None, :])
    b = tl.load(B + rb[:, None, None] * (K * N) + rk[None, :, None] * N + rn[None, None, :])
    tl.store(C + rb[:, None, None] * (M * N) + rm[None, :, None] * N + rn[None, None, :], tl.dot(a, b))


def _small_m_args(M, N, K, dtype, nmajor, rng):
    a = (rng.standard_normal((M, K)) * 0.5).astype(dtype)
    b = (rng.standard_normal((K, N)) * 0.5).astype(dtype)
    bmem = np.ascontiguousarray(b.T) if nmajor else b  # n-major: element (k, n) at n * K + k
    strides = (1, K) if nmajor else (N, 1)
    return a, b, bmem, strides


def _dt(name):
    import ml_dtypes

    return {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16}[name]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("nmajor", [False, True])
@pytest.mark.parametrize("dtype,BM,BK", [("float16", 16, 64), ("bfloat16", 32, 128), ("float16", 16, 16)])
def test_small_m_results(target, nmajor, dtype, BM, BK):
    M, N, K = 40, 128, 256
    a, b, bmem, (sbk, sbn) = _small_m_args(M, N, K, _dt(dtype), nmajor, np.random.default_rng(BM + BK))
    c = poison((M, N), "float32")
    run(target, _mm_small_m, (compiler.cdiv(M, BM), N // 64), [a, bmem, c], [M, N, K, sbk, sbn],
        BM=BM, BN=64, BK=BK, num_warps=4)
    if target != "ptxas":
        ref = a.astype(np.float64) @ b.astype(np.float64)
        assert_close(c, ref, dtype)


@pytest.mark.parametrize("target", TARGETS)
def test_batched_results(target):
    rng = np.random.default_rng(44)
    a = (rng.standard_normal((2, 16, 64)) * 0.5).astype(np.float16)
    b = (rng.standard_normal((2, 64, 32)) * 0.5).astype(np.float16)
    c = poison((2, 16, 32), "float32")
    run(target, _bmm, (1,), [a, b, c], [], NB=2, M=16, N=32, K=64, num_warps=2)
    if target != "ptxas":
        assert_close(c, np.matmul(a.astype(np.float64), b.astype(np.float64)), "float16")


def _forms(ptx):
    return sorted(set(re.findall(r"ldmatrix\.sync\.aligned\.m8n8\.(x\d(?:\.trans)?)", ptx)))


def _small_m_ptx(monkeypatch, tmp_path, nmajor=False, BK=64):
    monkeypatch.setenv("TILEFARM_CACHE_DIR", str(tmp_path))
    M, N, K = 40, 128, 256
    a, b, bmem, (sbk, sbn) = _small_m_args(M, N, K, np.float16, nmajor, np.random.default_rng(0))
    return _mm_small_m.warmup(a, bmem, np.zeros((M, N), np.float32), M, N, K, sbk, sbn, grid=(1,),
                              target="sm_90a", BM=16, BN=64, BK=BK, num_warps=4).asm["ptx"]


@pytest.mark.parametrize("nmajor", [False, True])
def test_ring_b_reads_four_matrices(nmajor, monkeypatch, tmp_path):
    """16 x 64 x 64 from the ring: a's fragments and b's four matrices an ldmatrix (.trans where b is k-major), no
    x2."""
    ptx = _small_m_ptx(monkeypatch, tmp_path, nmajor)
    assert _forms(ptx) == (["x4", "x4.trans"] if not nmajor else ["x4"]), _forms(ptx)


def test_k16_keeps_two_matrices(monkeypatch, tmp_path):
    assert "x2.trans" in _forms(_small_m_ptx(monkeypatch, tmp_path, BK=16))


def test_converted_b_keeps_two_matrices(monkeypatch, tmp_path):
    """A b converted into its operand layout (no ring: one dot, no loop) is read one k16 step an ldmatrix."""
    monkeypatch.setenv("TILEFARM_CACHE_DIR", str(tmp_path))
    a, b, c = np.zeros((2, 16, 64), np.float16), np.zeros((2, 64, 32), np.float16), np.zeros((2, 16, 32), np.float32)
    ptx = _bmm.warmup(a, b, c, grid=(1,), target="sm_90a", NB=2, M=16, N=32, K=64, num_warps=2).asm["ptx"]
    assert "x2.trans" in _forms(ptx), _forms(ptx)
