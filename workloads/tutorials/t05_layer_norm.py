"""Tutorial 05: layer normalization, forward and backward.

Forward: one program per row; mean and 1/std are kept for the backward pass. Backward: dx per row fused with
partial sums of dw and db: program g takes rows g, g + G, g + 2G, ... and writes its partial sums to row g of
a [G, N] buffer (no locks: deterministic); a second kernel sums the G partial rows per column block."""
import triton
import triton.language as tl


@triton.jit
def _layer_norm_fwd_fused(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    Y += row * stride
    X += row * stride
    _mean = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        a = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        _mean += a
    mean = tl.sum(_mean, axis=0) / N
    _var = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        x = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        x = tl.where(cols < N, x - mean, 0.)
        _var += x * x
    var = tl.sum(_var, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        mask = cols < N
        w = tl.load(W + cols, mask=mask)
        b = tl.load(B + cols, mask=mask)
        x = tl.load(X + cols, mask=mask, other=0.).to(tl.float32)
        x_hat = (x - mean) * rstd
        y = x_hat * w + b
        tl.store(Y + cols, y.to(Y.dtype.element_ty), mask=mask)


@triton.jit
def _layer_norm_bwd_dx_fused(DX, DY, DW, DB, X, W, Mean, Rstd, stride, M, N, BLOCK_SIZE_N: tl.constexpr):
    g = tl.program_id(0)
    G = tl.num_programs(0)
    cols = tl.arange(0, BLOCK_SIZE_N)
    mask = cols < N
    w = tl.load(W + cols, mask=mask).to(tl.float32)
    partial_dw = tl.zeros([BLOCK_SIZE_N], dtype=tl.float32)
    partial_db = tl.zeros([BLOCK_SIZE_N], dtype=tl.float32)
    for row in range(g, M, G):
        x = tl.load(X + row * stride + cols, mask=mask, other=0).to(tl.float32)
        dy = tl.load(DY + row * stride + cols, mask=mask, other=0).to(tl.float32)
        mean = tl.load(Mean + row)
        rstd = tl.load(Rstd + row)
        xhat = (x - mean) * rstd
        wdy = w * dy
        xhat = tl.where(mask, xhat, 0.)
        wdy = tl.where(mask, wdy, 0.)
        c1 = tl.sum(xhat * wdy, axis=0) / N
        c2 = tl.sum(wdy, axis=0) / N
        dx = (wdy - (xhat * c1 + c2)) * rstd
        tl.store(DX + row * stride + cols, dx.to(DX.dtype.element_ty), mask=mask)
        partial_dw += dy * xhat
        partial_db += dy
    tl.store(DW + g * N + cols, partial_dw, mask=mask)
    tl.store(DB + g * N + cols, partial_db, mask=mask)


@triton.jit
def _layer_norm_bwd_dwdb(DW, DB, FINAL_DW, FINAL_DB, M, N, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr):
    pid = tl.program_id(0)
    cols = pid * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    dw = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    db = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for i in range(0, M, BLOCK_SIZE_M):
        rows = i + tl.arange(0, BLOCK_SIZE_M)
        mask = (rows[:, None] < M) & (cols[None, :] < N)
        offs = rows[:, None] * N + cols[None, :]
        dw += tl.load(DW + offs, mask=mask, other=0.)
        db += tl.load(DB + offs, mask=mask, other=0.)
    sum_dw = tl.sum(dw, axis=0)
    sum_db = tl.sum(db, axis=0)
    tl.store(FINAL_DW + cols, sum_dw.to(FINAL_DW.dtype.element_ty), mask=cols < N)
    tl.store(FINAL_DB + cols, sum_db.to(FINAL_DB.dtype.element_ty), mask=cols < N)


def layer_norm_fwd(x, w, b, y, mean, rstd, eps=1e-5, num_warps=8):
    M, N = x.shape
    esize = x.element_size() if callable(getattr(x, "element_size", None)) else x.itemsize
    BLOCK_SIZE = min(triton.next_power_of_2(N), 65536 // esize)
    _layer_norm_fwd_fused[(M,)](x, y, w, b, mean, rstd, N, N, eps, BLOCK_SIZE=BLOCK_SIZE, num_warps=num_warps)
    return y


def layer_norm_bwd(dy, x, w, mean, rstd, dx, dw, db, partial_dw, partial_db, num_warps=8):
    """partial_dw/partial_db: float32 [G, N] scratch (G programs of the first kernel)."""
    M, N = x.shape
    G = partial_dw.shape[0]
    BLOCK_SIZE_N = triton.next_power_of_2(N)
    _layer_norm_bwd_dx_fused[(G,)](dx, dy, partial_dw, partial_db, x, w, mean, rstd, N, M, N,
                                   BLOCK_SIZE_N=BLOCK_SIZE_N, num_warps=num_warps)
    _layer_norm_bwd_dwdb[(triton.cdiv(N, 128),)](partial_dw, partial_db, dw, db, G, N, BLOCK_SIZE_M=32,
                                                  BLOCK_SIZE_N=128)
    return dx, dw, db
