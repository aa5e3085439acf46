"""Matrix-product kernels written the way Triton users write them (only the imports differ).

The grouped matmul and the flash-attention forward are the bundled workloads' kernels themselves, so the tests
check exactly what the farm and the benchmarks run."""
import compiler
import compiler.language as tl
from workloads.attention.kernel import attention_fwd_kernel  # noqa: F401
from workloads.matmul.kernel import matmul_kernel  # noqa: F401


@compiler.jit
def batched_dot_kernel(A, B, C, BB: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rb = tl.arange(0, BB)[:, None, None]
    a = tl.load(A + rb * BM * BK + tl.arange(0, BM)[None, :, None] * BK + tl.arange(0, BK)[None, None, :])
    b = tl.load(B + rb * BK * BN + tl.arange(0, BK)[None, :, None] * BN + tl.arange(0, BN)[None, None, :])
    c = tl.dot(a, b)
    tl.store(C + rb * BM * BN + tl.arange(0, BM)[None, :, None] * BN + tl.arange(0, BN)[None, None, :], c)
