"""RMSNorm forward in the style of the Triton LayerNorm tutorial: one program per row, two passes over the row
in BLOCK_SIZE chunks (mean of squares, then scale by rstd and weight), fp32 math; writes Rstd for the backward
pass. Only the two imports differ from Triton (workloads._common.triton_module rewrites them to compare
against Triton 3.6)."""
import compiler
import compiler.language as tl


@compiler.jit
def rms_norm_fwd_kernel(X, Y, W, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    Y += row * stride
    X += row * stride
    _sq = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        x = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        _sq += x * x
    rstd = tl.rsqrt(tl.sum(_sq, axis=0) / N + eps)
    tl.store(Rstd + row, rstd)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        mask = cols < N
        w = tl.load(W + cols, mask=mask).to(tl.float32)
        x = tl.load(X + cols, mask=mask, other=0.).to(tl.float32)
        y = x * rstd * w
        tl.store(Y + cols, y.to(Y.dtype.element_ty), mask=mask)
