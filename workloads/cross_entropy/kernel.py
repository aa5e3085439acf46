"""Cross-entropy forward, loss[i] = logsumexp(logits[i, :]) - logits[i, target[i]], one program per row, an
online logsumexp over the vocabulary in BLOCK_SIZE chunks with fp32 math (each lane keeps its own running max
and sum; the lanes are combined once at the end). Only the two imports differ from Triton
(workloads._common.triton_module rewrites them to compare against Triton 3.6)."""
import compiler
import compiler.language as tl


@compiler.jit
def cross_entropy_fwd_kernel(Logits, Targets, Loss, stride, V, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)  # M * V can pass 2**31 for large vocabularies
    Logits += row * stride
    # A finite "minus infinity" for the running max: lanes that only ever see masked (-inf) logits then
    # get exp(-inf - (-3e38)) = 0 instead of exp(-inf - (-inf)) = NaN.
    m = tl.full([BLOCK_SIZE], -3.0e38, dtype=tl.float32)
    s = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, V, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        x = tl.load(Logits + cols, mask=cols < V, other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m, x)
        s = s * tl.exp(m - m_new) + tl.exp(x - m_new)
        m = m_new
    row_max = tl.max(m, axis=0)
    lse = row_max + tl.log(tl.sum(s * tl.exp(m - row_max), axis=0))
    target = tl.load(Targets + row)
    x_target = tl.load(Logits + target).to(tl.float32)
    tl.store(Loss + row, lse - x_target)
