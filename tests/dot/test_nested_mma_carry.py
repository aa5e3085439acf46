"""A/B `nested_mma_carry` (passes/assign_layouts.py `_back`, the "for" rule): an outer loop that carries a dot's
accumulator through an inner K loop (block-pointer matmuls that advance K_INNER blocks per outer step) carries it
in the inner loop's MMA layout, as Triton does. Without it the outer loop carried a blocked accumulator, converted
to the MMA layout and back through shared memory every outer iteration above the live copy ring: the corpus's
nested block-pointer matmul (2.11 of Triton's time) took 167,936 bytes of shared memory, 1 block per SM; under the
switch 98,304 bytes and 2 blocks, as Triton's (scripts/resource_audit.py, docs/RESOURCES.md).
Results checked against float64 with the switch off and on, on the interpreter (the spec: the layout pass never
runs there), ptxas and the GPU; the conversions' absence on CPU."""

import numpy as np
import pytest

import compiler
import compiler.language as tl
from compiler.ir import types as T

from ..ops.test_ops import TARGETS, assert_close, poison, run


@compiler.jit
def nested_k_kernel(A, B, C, M, N, K, stride_am, stride_bk, stride_cm, K_INNER: tl.constexpr, BM: tl.constexpr,
                    BN: tl.constexpr, BK: tl.constexpr):
    # the accumulator carried by both loops; the outer loop overruns K (masked blocks past it)
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for ko in range(0, tl.cdiv(K, BK * K_INNER)):
        for ki in range(K_INNER):
            k0 = (ko * K_INNER + ki) * BK
            a = tl.load(A + rm[:, None] * stride_am + (k0 + rk)[None, :],
                        mask=(rm[:, None] < M) & ((k0 + rk)[None, :] < K), other=0.0)
            b = tl.load(B + (k0 + rk)[:, None] * stride_bk + rn[None, :],
                        mask=((k0 + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
            acc = tl.dot(a, b, acc)
    tl.store(C + rm[:, None] * stride_cm + rn[None, :], acc.to(C.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


# (M, N, K, K_INNER, BM, BN, BK, num_warps): tails on M, N and K (outer steps partly and wholly past K)
CONFIGS = [(200, 136, 300, 2, 128, 128, 64, 8), (100, 72, 150, 3, 64, 64, 32, 4)]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("M,N,Kd,KI,BM,BN,BK,nw", CONFIGS)
def test_nested_k_loops(target, dtype, M, N, Kd, KI, BM, BN, BK, nw):
    rng = np.random.default_rng(hash((dtype, M, KI)) % 2**32)
    d = T.from_name(dtype).np
    a = rng.uniform(-1, 1, (M, Kd)).astype(d)
    b = rng.uniform(-1, 1, (Kd, N)).astype(d)
    c = poison((M, N), "float32")
    run(target, nested_k_kernel, (compiler.cdiv(M, BM), compiler.cdiv(N, BN)), [a, b, c], [M, N, Kd, Kd, N, N],
        K_INNER=KI, BM=BM, BN=BN, BK=BK, num_warps=nw, num_stages=3)
    if target == "ptxas":
        return
    ref = a.astype(np.float64) @ b.astype(np.float64)
    # 16-bit products are exact in float32: only the float32 sums round
    assert_close(c, ref, "float32", rtol=1e-4, atol=1e-3)


def _ptx():
    a = np.zeros((128, 256), np.float16)
    b = np.zeros((256, 128), np.float16)
    c = np.zeros((128, 128), np.float32)
    k = nested_k_kernel.warmup(a, b, c, 128, 128, 256, 256, 128, 128, grid=(1,), target="sm_90a", K_INNER=2, BM=128,
                               BN=128, BK=64, num_warps=8, num_stages=3)
    return k.asm["ptx"], int(k.metadata.get("shared_bytes", 0))


def test_outer_loop_carries_the_mma_layout():
    """The outer loop carries the accumulator in the inner loop's MMA layout: no 128x128 fp32 round trip through
    shared memory above the ring (which took 64 KiB + padding more and a block an SM: 0.451 of the time once gone,
    H100 2026-12-07): the shared memory is the ring's 96 KiB of slots alone, and the only shared stores are the
    epilogue's (the outer loop stores nothing to shared memory)."""
    ptx, smem = _ptx()
    assert smem == 3 * (128 * 64 + 64 * 128) * 2, smem
    from compiler.codegen.ptx import ptx_loops

    outer = max(ptx_loops(ptx), key=lambda ab: ab[1] - ab[0])
    assert "st.shared" not in ptx[outer[0]:outer[1]]
    assert ptx.count("wgmma.mma_async") >= 4
