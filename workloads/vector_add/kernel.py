"""z = x + y, the Triton tutorial's first kernel. Written as a Triton user would: only these two imports
differ from Triton (workloads._common.triton_module rewrites them to compare against Triton 3.6)."""
import compiler
import compiler.language as tl


@compiler.jit
def add_kernel(X, Y, Z, N, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N
    x = tl.load(X + offs, mask=mask)
    y = tl.load(Y + offs, mask=mask)
    tl.store(Z + offs, x + y, mask=mask)
