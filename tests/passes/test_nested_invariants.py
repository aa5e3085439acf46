"""A value a loop carries unchanged is its initial value throughout, seen through inner loops too: a block pointer
advanced only in an inner K loop keeps its base, shape and strides in the outer loop, so a stride specialized to 1
stays known to the axis analysis and the loads keep their contiguity (vector copies, the cp.async ring). Without
it the nested bf16 block-pointer matmul loaded element by element, at 255 registers with spills."""
import numpy as np

import compiler
import compiler.language as tl


@compiler.jit
def nested_kernel(A, BT, C, M, N, K, stride_am, stride_bn, stride_cm, K_INNER: tl.constexpr, BM: tl.constexpr,
                  BN: tl.constexpr, BK: tl.constexpr):
    a_blk = tl.make_block_ptr(A, shape=(M, K), strides=(stride_am, 1), offsets=(tl.program_id(0) * BM, 0),
                              block_shape=(BM, BK), order=(1, 0))
    b_blk = tl.make_block_ptr(BT, shape=(K, N), strides=(1, stride_bn), offsets=(0, tl.program_id(1) * BN),
                              block_shape=(BK, BN), order=(0, 1))
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for ko in range(0, tl.cdiv(K, BK * K_INNER)):
        for ki in range(K_INNER):
            a = tl.load(a_blk, boundary_check=(0, 1), padding_option="zero")
            b = tl.load(b_blk, boundary_check=(0, 1), padding_option="zero")
            acc = tl.dot(a, b, acc)
            a_blk = tl.advance(a_blk, (0, BK))
            b_blk = tl.advance(b_blk, (BK, 0))
    c_blk = tl.make_block_ptr(C, shape=(M, N), strides=(stride_cm, 1), offsets=(tl.program_id(0) * BM,
                              tl.program_id(1) * BN), block_shape=(BM, BN), order=(1, 0))
    tl.store(c_blk, acc.to(tl.bfloat16), boundary_check=(0, 1))


def test_strides_stay_known_through_the_inner_loop():
    from compiler.codegen.ptx import find_ptxas, ptx_resources

    bf = tl.bfloat16.np
    a, bt, c = np.zeros((512, 512), bf), np.zeros((512, 512), bf), np.zeros((512, 512), bf)
    ck = nested_kernel.warmup(a, bt, c, 512, 512, 512, 512, 512, 512, grid=(4, 4), target="sm_90a", K_INNER=4,
                              BM=128, BN=128, BK=64, num_warps=8, num_stages=3)
    ptx = ck.asm["ptx"]
    assert "cp.async" in ptx  # the copy ring: contiguous 16-byte copies along each operand's K
    if find_ptxas() is not None:
        assert ptx_resources(ptx, "sm_90a")["spill_stores"] == 0


def test_results_in_the_interpreter():
    rng = np.random.default_rng(1)
    bf = tl.bfloat16.np
    a = rng.standard_normal((50, 70)).astype(bf)
    bt = rng.standard_normal((40, 70)).astype(bf)
    c = np.zeros((50, 40), bf)
    nested_kernel[(2, 2)](a, bt, c, 50, 40, 70, 70, 70, 40, K_INNER=2, BM=32, BN=32, BK=16)
    ref = a.astype(np.float64) @ bt.astype(np.float64).T
    np.testing.assert_allclose(c.astype(np.float64), ref, rtol=2e-2, atol=5e-2)
