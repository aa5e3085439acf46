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


@compiler.jit
def scaled_row_sums_kernel(X, A, Out, n_iter, BM: tl.constexpr, BN: tl.constexpr, READ_L: tl.constexpr):
    """l = l * max(a_i, 1) + sum(x_i, 1) over n_iter tiles (attention's row-sum recurrence), then x_0 / l[:, None]
    stored (l used the way attention uses it); READ_L also reads l inside the loop (then it cannot stay per-lane
    partial)."""
    rows = tl.arange(0, BM)
    cols = tl.arange(0, BN)
    tile = rows[:, None] * BN + cols[None, :]
    l = tl.zeros([BM], dtype=tl.float32) + 1.5
    for i in range(0, n_iter):
        x = tl.load(X + i * BM * BN + tile)
        a = tl.max(tl.load(A + i * BM * BN + tile), 1)
        if READ_L:
            a = a + l * 0.0
        l = l * a + tl.sum(x, 1)
    tl.store(Out + tile, tl.load(X + tile) / l[:, None])


@compiler.jit
def scaled_operands_matmul_kernel(A, B, C, M, N, K, sa, sb, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """C = (A * sa) @ (B * sb) with both operands scaled in float32 and rounded to bfloat16 in registers before the
    dot (as dot_scaled's upcast makes them): operands a copy ring cannot bring, written to shared memory by the dot."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(A + rm[:, None] * K + (k + rk)[None, :]).to(tl.float32) * sa
        b = tl.load(B + (k + rk)[:, None] * N + rn[None, :]).to(tl.float32) * sb
        acc = tl.dot(a.to(tl.bfloat16), b.to(tl.bfloat16), acc)
    tl.store(C + rm[:, None] * N + rn[None, :], acc)


@compiler.jit
def int8_dot_acc_kernel(A, B, ACC, C, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    """C = ACC + A @ B on one block (int8 operands, int32 accumulator)."""
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(A + rm[:, None] * K + rk[None, :])
    b = tl.load(B + rk[:, None] * N + rn[None, :])
    acc = tl.load(ACC + rm[:, None] * N + rn[None, :])
    tl.store(C + rm[:, None] * N + rn[None, :], tl.dot(a, b, acc))


@compiler.jit
def dot_nd_kernel(X, Y, ACC, Z, SHAPE_A: tl.constexpr, SHAPE_B: tl.constexpr, SHAPE_C: tl.constexpr,
                  NA: tl.constexpr, NB: tl.constexpr, NC: tl.constexpr):
    """Z = ACC + X @ Y over blocks of any rank (the leading dims a batch), loaded flat and reshaped."""
    x = tl.load(X + tl.arange(0, NA)).reshape(SHAPE_A)
    y = tl.load(Y + tl.arange(0, NB)).reshape(SHAPE_B)
    acc = tl.load(ACC + tl.arange(0, NC)).reshape(SHAPE_C)
    tl.store(Z + tl.arange(0, NC), tl.dot(x, y, acc).reshape([NC]))


@compiler.jit
def masked_dot_loop_kernel(A, B, C, M, N, K, sam, sak, sbk, sbn, scm, scn, BM: tl.constexpr, BN: tl.constexpr,
                           BK: tl.constexpr, ACC: tl.constexpr, PRECISION: tl.constexpr):
    """C = A @ B over any strides, masks on M, N and K, offsets recomputed every iteration, `acc += dot`."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros([BM, BN], dtype=ACC)
    for k in range(0, K, BK):
        rk = k + tl.arange(0, BK)
        a = tl.load(A + rm[:, None] * sam + rk[None, :] * sak, mask=(rm[:, None] < M) & (rk[None, :] < K), other=0)
        b = tl.load(B + rk[:, None] * sbk + rn[None, :] * sbn, mask=(rk[:, None] < K) & (rn[None, :] < N), other=0)
        acc += tl.dot(a, b, input_precision=PRECISION)
    tl.store(C + rm[:, None] * scm + rn[None, :] * scn, acc.to(C.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


@compiler.jit
def int8_matmul_kernel(A, B, C, M, N, K, sam, sak, sbk, sbn, scm, scn, BM: tl.constexpr, BN: tl.constexpr,
                       BK: tl.constexpr):
    """int8 x int8 -> int32 over a K loop, K masked, pointers advanced (b's strides decide its order)."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = A + rm[:, None] * sam + rk[None, :] * sak
    b_ptrs = B + rk[:, None] * sbk + rn[None, :] * sbn
    acc = tl.zeros((BM, BN), dtype=tl.int32)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptrs, mask=rk[None, :] < K - k * BK, other=0)
        b = tl.load(b_ptrs, mask=rk[:, None] < K - k * BK, other=0)
        acc += tl.dot(a, b)
        a_ptrs += BK * sak
        b_ptrs += BK * sbk
    tl.store(C + rm[:, None] * scm + rn[None, :] * scn, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))
