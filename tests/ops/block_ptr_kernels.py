"""Kernels through block pointers (tl.make_block_ptr / tl.advance) with boundary checks and padding."""
import compiler
import compiler.language as tl


@compiler.jit
def copy2d(X, Y, M, N, sxm, sxn, sym, syn, PAD: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    """Y[tile] = X[tile] + 1 over an M x N array; the edge tiles read the padding and are masked on the store."""
    pm, pn = tl.program_id(0), tl.program_id(1)
    xp = tl.make_block_ptr(X, shape=(M, N), strides=(sxm, sxn), offsets=(pm * BM, pn * BN), block_shape=(BM, BN),
                           order=(1, 0))
    yp = tl.make_block_ptr(Y, (M, N), (sym, syn), (pm * BM, pn * BN), (BM, BN), (1, 0))
    x = tl.load(xp, boundary_check=(0, 1), padding_option=PAD)
    tl.store(yp, x + 1, boundary_check=(0, 1))


@compiler.jit
def padded_sum(X, Y, M, N, PAD: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    """Sum of one tile that hangs over the array's edge: the padding shows (0 keeps the sum, NaN poisons it)."""
    xp = tl.make_block_ptr(X, (M, N), (N, 1), (0, 0), (BM, BN), (1, 0))
    x = tl.load(xp, boundary_check=(0, 1), padding_option=PAD)
    tl.store(Y, tl.sum(tl.sum(x, axis=1), axis=0))


@compiler.jit
def matmul_block_ptr(A, B, C, M, N, K, sam, sak, sbk, sbn, scm, scn, BM: tl.constexpr, BN: tl.constexpr,
                     BK: tl.constexpr):
    """C = A @ B with block pointers advanced along K in a runtime loop (Triton's block-pointer matmul)."""
    pm, pn = tl.program_id(0), tl.program_id(1)
    a_ptr = tl.make_block_ptr(A, (M, K), (sam, sak), (pm * BM, 0), (BM, BK), (1, 0))
    b_ptr = tl.make_block_ptr(B, (K, N), (sbk, sbn), (0, pn * BN), (BK, BN), (1, 0))
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr, boundary_check=(0, 1))
        b = tl.load(b_ptr, boundary_check=(0, 1))
        acc += tl.dot(a, b)
        a_ptr = tl.advance(a_ptr, (0, BK))
        b_ptr = tl.advance(b_ptr, [BK, 0])
    c_ptr = tl.make_block_ptr(C, (M, N), (scm, scn), (pm * BM, pn * BN), (BM, BN), (1, 0))
    tl.store(c_ptr, acc, boundary_check=(0, 1))


@compiler.jit
def row_walk(X, Y, M, N, BN: tl.constexpr):
    """A 1-D block pointer walked with a while loop: Y[row] = sum of X[row, :]."""
    row = tl.program_id(0)
    p = tl.make_block_ptr(X + row * N, (N,), (1,), (0,), (BN,), (0,))
    acc = tl.zeros((BN,), dtype=tl.float32)
    i = 0
    while i < N:
        acc += tl.load(p, boundary_check=(0,))
        p = tl.advance(p, (BN,))
        i += BN
    tl.store(Y + row, tl.sum(acc, axis=0))


@compiler.jit
def bad_mask_on_block_ptr(X, N):
    p = tl.make_block_ptr(X, (N,), (1,), (0,), (16,), (0,))
    tl.load(p, mask=tl.arange(0, 16) < N)  # MARK mask


@compiler.jit
def bad_boundary_on_plain(X, N):
    tl.load(X + tl.arange(0, 16), boundary_check=(0,))  # MARK plain


@compiler.jit
def desc_matmul(A, B, C, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """C = A @ B through in-kernel tensor descriptors (Triton 3.x style), edges handled by the descriptors."""
    a_desc = tl.make_tensor_descriptor(A, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    b_desc = tl.make_tensor_descriptor(B, [K, N], [N, 1], [BK, BN])
    c_desc = tl.make_tensor_descriptor(C, [M, N], [N, 1], [BM, BN])
    om, on = tl.program_id(0) * BM, tl.program_id(1) * BN
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = a_desc.load([om, k])
        b = tl.load_tensor_descriptor(b_desc, [k, on])
        acc = tl.dot(a, b, acc)
    c_desc.store([om, on], acc)


@compiler.jit
def desc_nan_pad(X, Y, M, N):
    d = tl.make_tensor_descriptor(X, [M, N], [N, 1], [8, 16], padding_option="nan")
    tl.store(Y + tl.arange(0, 8)[:, None] * 16 + tl.arange(0, 16)[None, :], d.load([0, 0]))
