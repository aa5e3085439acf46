"""Kernels written as Triton's users write them (ported by changing imports), and the shared launch helper."""
import numpy as np
import pytest

import compiler
import compiler.language as tl

from .conftest import CompiledOnly


def _have_ptxas():
    from compiler.codegen.ptx import find_ptxas

    return find_ptxas() is not None


# interp: the NumPy interpreter; ptxas: PTX assembled for sm_90a (no GPU); gpu: run on it
TARGETS = ["interp", pytest.param("ptxas", marks=pytest.mark.skipif(not _have_ptxas(), reason="ptxas not found")),
           pytest.param("gpu", marks=pytest.mark.gpu)]


def run(target, kernel, grid, *args, **meta):
    """Launch with NumPy arrays (interpreter) or device copies (GPU, copied back in place); for ptxas compile
    and assemble, then stop the test (a pass: see conftest.py)."""
    if target == "interp":
        return kernel[grid](*args, **meta)
    if target == "ptxas":
        ck = kernel.warmup(*args, grid=grid, target="sm_90a", **meta)
        cubin = ck.asm["cubin"]
        assert isinstance(cubin, bytes) and len(cubin) > 0
        raise CompiledOnly()
    from compiler.runtime import DeviceArray, synchronize

    copies = {}  # one device copy per array, so an array passed twice (out aliased as acc) stays one buffer
    for a in args:
        if isinstance(a, np.ndarray) and id(a) not in copies:
            copies[id(a)] = DeviceArray.from_numpy(a)
    dev = [copies.get(id(a), a) for a in args]
    kernel[grid](*dev, **meta)
    synchronize()
    for a, d in zip(args, dev):
        if isinstance(a, np.ndarray):
            a[...] = d.numpy().reshape(a.shape)


def poison(shape, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return np.full(shape, np.nan, dtype)
    return np.full(shape, np.iinfo(dtype).max // 3 + 7, dtype)


# ---- loops with a runtime step ---------------------------------------------------------------------------
@compiler.jit
def persistent_scale(X, Y, n_tiles, N, BLOCK: tl.constexpr):
    """Each program walks tiles pid, pid + nprog, ... (Triton's persistent-kernel loop)."""
    for t in range(tl.program_id(0), n_tiles, tl.num_programs(0)):
        offs = t * BLOCK + tl.arange(0, BLOCK)
        m = offs < N
        tl.store(Y + offs, tl.load(X + offs, mask=m) * 2.0 + t, mask=m)


@compiler.jit
def persistent_rowsum(X, Y, M, N, STEP, BLOCK: tl.constexpr):
    """tl.range with a runtime start and step, and a carried accumulator."""
    cols = tl.arange(0, BLOCK)
    for row in tl.range(tl.program_id(0), M, STEP * tl.num_programs(0), num_stages=2):
        acc = 0.0
        for c in range(0, N, BLOCK):
            m = c + cols < N
            acc += tl.sum(tl.load(X + row * N + c + cols, mask=m, other=0.0))
        tl.store(Y + row, acc)


@compiler.jit
def count_down(Y, START, END, STEP: tl.constexpr, BLOCK: tl.constexpr):
    """A constant negative step counts down (start, start + step, ... while > end)."""
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), tl.int32)
    k = 0
    for i in range(START, END, STEP):
        acc += tl.where(offs == k, i, 0)
        k += 1
    tl.store(Y + offs, acc)


# ---- None arguments ----------------------------------------------------------------------------------------
@compiler.jit
def add_bias(X, Bias, Y, N, SCALE: tl.constexpr = None, BLOCK: tl.constexpr = 128):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m)
    if Bias is not None:
        x += tl.load(Bias + offs, mask=m)
    if SCALE is not None:
        x = x * SCALE
    tl.store(Y + offs, x, mask=m)


# ---- returns -----------------------------------------------------------------------------------------------
@compiler.jit
def _select(x, label, IGNORE: tl.constexpr):
    """Several returns, under runtime ifs at two depths (a tuple, with a constant in it)."""
    if label == IGNORE:
        return x * 0.0, 0
    else:
        if x > 2.0:
            return x * 2.0, 1
        y = x + 1.0
    return y, 2


@compiler.jit
def early_exit_loss(X, L, Y, K, IGNORE: tl.constexpr):
    pid = tl.program_id(0)
    label = tl.load(L + pid)
    if label == IGNORE:
        tl.store(Y + pid, -1.0)
        return
    x = tl.load(X + pid)
    if x < 0.5:
        if label == 0:
            tl.store(Y + pid, -2.0)
            return
    v, k = _select(x, label, IGNORE)
    tl.store(Y + pid, v)
    tl.store(K + pid, k)


@compiler.jit
def _clamp_index(i, n):
    if i >= n:
        return n - 1
    return i


@compiler.jit
def gather_clamped(X, Y, N, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    for j in range(0, BLOCK):
        idx = _clamp_index(pid * BLOCK + j, N)
        tl.store(Y + pid * BLOCK + j, tl.load(X + idx))


# ---- Python numbers become scalar tensors once assigned ------------------------------------------------------
@compiler.jit
def assigned_numbers(X8, H, Out32, OutF, Flags, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    acc = 0
    acc = acc.to(tl.int64)                 # a method on an assigned number
    two = 2
    x = tl.load(X8 + offs, mask=m)          # int8
    tl.store(Out32 + offs, x * two, mask=m)  # int32 * int8 -> int32 (no int8 wrap-around), as in Triton
    scale = 0.1
    h = tl.load(H + offs, mask=m)           # float16
    tl.store(OutF + offs, h * scale, mask=m)  # fp32 scalar tensor * fp16 -> fp32, as in Triton
    for i in range(0, N):
        acc += i                            # loop-carried int64
    half: tl.constexpr = BLOCK // 2         # a constexpr name stays a Python value
    tl.store(Flags + tl.program_id(0), acc + tl.sum(tl.arange(0, half)))
    if tl.program_id(0) == 0:
        tl.store(Flags + tl.num_programs(0), 1)   # a Python number stored
        tl.store(Flags + tl.num_programs(0) + 1, two * 16)


@compiler.jit
def persistent_matmul(A, B, C, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """Tiles walked by a runtime-step tl.range, a dot K loop inside (Triton's persistent matmul, pointer loads)."""
    num_m = tl.cdiv(M, BM)
    num_n = tl.cdiv(N, BN)
    for tile in tl.range(tl.program_id(0), num_m * num_n, tl.num_programs(0), flatten=True):
        pm = tile // num_n
        pn = tile % num_n
        rm = pm * BM + tl.arange(0, BM)
        rn = pn * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, K, BK):
            a = tl.load(A + rm[:, None] * K + (k + rk)[None, :], mask=(rm[:, None] < M) & ((k + rk)[None, :] < K),
                        other=0.0)
            b = tl.load(B + (k + rk)[:, None] * N + rn[None, :], mask=((k + rk)[:, None] < K) & (rn[None, :] < N),
                        other=0.0)
            acc = tl.dot(a, b, acc)
        tl.store(C + rm[:, None] * N + rn[None, :], acc.to(tl.float16), mask=(rm[:, None] < M) & (rn[None, :] < N))


@compiler.jit
def _first_above(X, t, N: tl.constexpr):
    """The index of the first of N values above t (N when none): a return inside tl.static_range."""
    for i in tl.static_range(N):
        if tl.load(X + i) > t:
            return i
    return N


@compiler.jit
def first_above(X, T, Out, N: tl.constexpr):
    pid = tl.program_id(0)
    tl.store(Out + pid, _first_above(X + pid * N, tl.load(T + pid), N))


# A cross-entropy forward+backward in the style of a widely used library of LLM-training kernels: an early
# return (with a loop before it) for ignored labels, assigned numbers carried through loops, tensor methods.
@compiler.jit
def ce_kernel(X_ptr, X_stride, Y_ptr, loss_ptr, n_cols, ignore_index, BLOCK_SIZE: tl.constexpr):
    program_id = tl.program_id(0).to(tl.int64)
    Y_ptr += program_id
    y = tl.load(Y_ptr)
    X_ptr += program_id * X_stride
    if y == ignore_index:
        for i in range(0, n_cols, BLOCK_SIZE):
            X_offsets = i + tl.arange(0, BLOCK_SIZE)
            tl.store(X_ptr + X_offsets, 0.0, mask=X_offsets < n_cols)
        return
    loss_ptr += program_id
    m = float("-inf")
    d = 0.0
    ori_X_y = tl.load(X_ptr + y).cast(tl.float32)
    for i in range(0, n_cols, BLOCK_SIZE):
        X_offsets = i + tl.arange(0, BLOCK_SIZE)
        X_block = tl.load(X_ptr + X_offsets, mask=X_offsets < n_cols, other=float("-inf")).cast(tl.float32)
        block_max = tl.max(X_block)
        m_new = tl.maximum(m, block_max)
        d = d * tl.exp(m - m_new) + tl.sum(tl.exp(X_block - m_new))
        m = m_new
    lse = m + tl.log(d)
    for i in range(0, n_cols, BLOCK_SIZE):
        X_offsets = i + tl.arange(0, BLOCK_SIZE)
        X_block = tl.load(X_ptr + X_offsets, mask=X_offsets < n_cols, other=float("-inf")).cast(tl.float32)
        X_block = tl.exp(X_block - m) / d
        X_block = tl.where(X_offsets != y, X_block, X_block - 1)
        tl.store(X_ptr + X_offsets, X_block, mask=X_offsets < n_cols)
    tl.store(loss_ptr, lse - ori_X_y)


@compiler.jit
def sum_range(Out, lo, hi, iv: tl.constexpr):
    acc = 0
    acc = acc.to(tl.int64)
    for i in range(lo, hi, iv):
        acc += i
    tl.store(Out, acc)


@compiler.jit
def exit_early(ExitEarly, Out, cond: tl.constexpr, mode: tl.constexpr):
    if mode == "dynamic":
        if tl.load(ExitEarly):
            tl.store(Out, 0)
            return
    else:
        if cond:
            tl.store(Out, 0)
            return
    tl.store(Out, 1)


@compiler.jit
def nested_return(Cond1, Cond2, Cond3, Val1, Val2, Val3, Out):
    val = 0
    if tl.load(Cond1):
        if tl.load(Cond2):
            val = tl.load(Val1)
        else:
            return
    else:
        if tl.load(Cond3):
            val = tl.load(Val2)
        else:
            val = tl.load(Val3)
    tl.store(Out, val)


# ---- values assigned in runtime ifs: equal constants, descriptors and block pointers ----------------------
@compiler.jit
def same_constant_both_branches(X, n):
    """A constant given the same value on both paths of a runtime if holds after it (it used to keep its old one)."""
    x = 1
    if n > 0:
        x = 2
        y = 5
    else:
        x = 2
        y = 5
    tl.store(X, x * 10 + y)


@compiler.jit
def descriptor_switched_in_loop(A, B, M, N, MB: tl.constexpr, NB: tl.constexpr):
    """A descriptor re-made in a runtime if inside a loop (so the loop carries it), then a second loop that switches
    it between two arrays: tiles of rows pid*MB of A get +10 while column tile % 3 != 0, and those of B +20
    on the others (persistent kernels re-make descriptors per tile this way)."""
    m0 = tl.program_id(0) * MB
    d = tl.make_tensor_descriptor(A, shape=[M, N], strides=[N, 1], block_shape=[MB, NB])
    for i in range(0, N, NB):
        if (i // NB) % 3 == 0:
            d = tl.make_tensor_descriptor(B, shape=[M, N], strides=[N, 1], block_shape=[MB, NB])
        else:
            d = tl.make_tensor_descriptor(A, shape=[M, N], strides=[N, 1], block_shape=[MB, NB])
        t = d.load([m0, i])
        add = 10.0
        if (i // NB) % 3 == 0:
            add = 20.0
        d.store([m0, i], t + add)


@compiler.jit
def block_ptr_switched_in_if(A, B, N, flag, BLOCK: tl.constexpr):
    """A block pointer chosen by a runtime if, then advanced in a loop."""
    p = tl.make_block_ptr(A, shape=[N], strides=[1], offsets=[0], block_shape=[BLOCK], order=[0])
    if flag > 0:
        p = tl.make_block_ptr(B, shape=[N], strides=[1], offsets=[0], block_shape=[BLOCK], order=[0])
    for i in range(0, N, BLOCK):
        x = tl.load(p, boundary_check=[0])
        tl.store(p, x * 2.0, boundary_check=[0])
        p = tl.advance(p, [BLOCK])
