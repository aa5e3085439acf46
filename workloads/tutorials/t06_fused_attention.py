"""Tutorial 06: fused attention forward (flash attention): per block of BLOCK_M queries, the keys and values
stream through in blocks of BLOCK_N with an online softmax in base 2 (running max m_i, sum l_i); Q, K, V and
O are host-side tensor descriptors over [Z * H * N_CTX, HEAD_DIM] views. Causal masking optional. In fp8
(float8e5 Q, K, V), the probabilities are rounded to fp8 for the P @ V product, as Triton's tutorial does."""
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor


@triton.jit
def _attn_fwd(sm_scale, M, Z, H, desc_q, desc_k, desc_v, desc_o, N_CTX,
              HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    dtype = desc_q.dtype
    start_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    offset_y = off_hz * N_CTX
    qo_offset_y = offset_y + start_m * BLOCK_M
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504  # 1/log(2)
    q = desc_q.load([qo_offset_y, 0])
    if CAUSAL:
        hi = tl.minimum((start_m + 1) * BLOCK_M, N_CTX)
    else:
        hi = N_CTX
    for start_n in range(0, hi, BLOCK_N):
        k = desc_k.load([offset_y + start_n, 0])
        qk = tl.dot(q, k.T)
        if CAUSAL:
            keep = offs_m[:, None] >= (start_n + offs_n[None, :])
            qk = qk * qk_scale + tl.where(keep, 0, -1.0e6)
            m_ij = tl.maximum(m_i, tl.max(qk, 1))
            qk -= m_ij[:, None]
        else:
            m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
            qk = qk * qk_scale - m_ij[:, None]
        p = tl.math.exp2(qk)
        alpha = tl.math.exp2(m_i - m_ij)
        l_ij = tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = desc_v.load([offset_y + start_n, 0])
        acc = tl.dot(p.to(dtype), v, acc)
        l_i = l_i * alpha + l_ij
        m_i = m_ij
    m_i += tl.math.log2(l_i)
    acc = acc / l_i[:, None]
    tl.store(M + off_hz * N_CTX + offs_m, m_i)
    desc_o.store([qo_offset_y, 0], acc.to(desc_o.dtype))


def attention(q, k, v, o, m, sm_scale, causal=False, BLOCK_M=128, BLOCK_N=64, num_warps=8, num_stages=3):
    """q, k, v: [Z, H, N_CTX, HEAD_DIM]; o the same shape (float16, or q's dtype); m: float32 [Z * H * N_CTX]
    (the log2-sum-exp2 per row, for a backward pass). N_CTX must be a multiple of BLOCK_M and BLOCK_N."""
    Z, H, N_CTX, D = q.shape
    rows = Z * H * N_CTX
    dq = TensorDescriptor.from_tensor(q.reshape(rows, D), [BLOCK_M, D])
    dk = TensorDescriptor.from_tensor(k.reshape(rows, D), [BLOCK_N, D])
    dv = TensorDescriptor.from_tensor(v.reshape(rows, D), [BLOCK_N, D])
    do = TensorDescriptor.from_tensor(o.reshape(rows, D), [BLOCK_M, D])
    grid = (triton.cdiv(N_CTX, BLOCK_M), Z * H)
    _attn_fwd[grid](sm_scale, m, Z, H, dq, dk, dv, do, N_CTX, HEAD_DIM=D, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N,
                    CAUSAL=causal, num_warps=num_warps, num_stages=num_stages)
    return o
