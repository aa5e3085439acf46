"""Kernels over host-side tensor descriptors (compiler.tools.tensor_descriptor.TensorDescriptor arguments)."""
import compiler
import compiler.language as tl


@compiler.jit
def desc_scale(X, Y, alpha, BM: tl.constexpr, BN: tl.constexpr):
    """y tile = x tile * alpha: loads past the array's edge read zero and stores there are dropped."""
    pm, pn = tl.program_id(0), tl.program_id(1)
    x = X.load([pm * BM, pn * BN])
    Y.store([pm * BM, pn * BN], (x.to(tl.float32) * alpha).to(Y.dtype))


@compiler.jit
def desc_matmul(A, B, C, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """C = A @ B over descriptors; the K loop's loads are served by TMA on sm_90a when the descriptors allow."""
    pm, pn = tl.program_id(0), tl.program_id(1)
    acc = tl.zeros([BM, BN], tl.float32)
    for k in range(0, K, BK):
        a = A.load([pm * BM, k])
        b = B.load([k, pn * BN])
        acc = tl.dot(a, b, acc)
    C.store([pm * BM, pn * BN], acc.to(C.dtype))


@compiler.jit
def desc_matmul_persistent(A, B, C, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """Persistent: each program walks tiles tile_id, tile_id + num_programs, ...; a copy ring per tile."""
    start = tl.program_id(0)
    tiles_n = tl.cdiv(N, BN)
    n_tiles = tl.cdiv(M, BM) * tiles_n
    for t in range(start, n_tiles, tl.num_programs(0)):
        pm = t // tiles_n
        pn = t % tiles_n
        acc = tl.zeros([BM, BN], tl.float32)
        for k in range(0, K, BK):
            a = A.load([pm * BM, k])
            b = B.load([k, pn * BN])
            acc = tl.dot(a, b, acc)
        C.store([pm * BM, pn * BN], acc.to(C.dtype))
