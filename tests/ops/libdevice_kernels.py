"""Kernels calling libdevice functions by name (a constexpr string), at the import paths Triton users write."""
import compiler
import compiler.language as tl
from compiler.language.extra import libdevice
from compiler.language.extra.cuda import libdevice as cuda_libdevice


@compiler.jit
def ld_unary(X, Y, N, FN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m, other=1)
    y = getattr(libdevice, FN)(x)
    tl.store(Y + offs, y, mask=m)


@compiler.jit
def ld_binary(X, Z, Y, N, FN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m, other=1)
    z = tl.load(Z + offs, mask=m, other=1)
    y = getattr(libdevice, FN)(x, z)
    tl.store(Y + offs, y, mask=m)


@compiler.jit
def ld_ternary(X, Z, W, Y, N, FN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m, other=1)
    z = tl.load(Z + offs, mask=m, other=1)
    w = tl.load(W + offs, mask=m, other=1)
    y = getattr(libdevice, FN)(x, z, w)
    tl.store(Y + offs, y, mask=m)


@compiler.jit
def ld_paths(X, Y, N, BLOCK: tl.constexpr):
    """tanh through tl.extra.cuda.libdevice, erf through the imported cuda module, pow with a Python scalar."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m, other=1)
    a = tl.extra.cuda.libdevice.tanh(x)
    b = cuda_libdevice.erf(x)
    c = libdevice.pow(x, 2)  # (float32, int32): __nv_powif
    d = libdevice.pow(x, 0.5)  # (float32, float32): __nv_powf
    tl.store(Y + offs, a + b + c + d, mask=m)


@compiler.jit
def ld_scalar(Y, alpha):
    """A libdevice call on a scalar argument."""
    tl.store(Y, libdevice.exp(alpha) + libdevice.fast_expf(alpha.to(tl.float32)))


@compiler.jit
def barrier_kernel(X, Y, BLOCK: tl.constexpr):
    """Each program writes a block, waits on the barrier, then reads it back reversed (another thread's write)."""
    offs = tl.arange(0, BLOCK)
    base = tl.program_id(0) * BLOCK
    x = tl.load(X + base + offs)
    tl.store(Y + base + offs, x * 2)
    tl.debug_barrier()
    y = tl.load(Y + base + (BLOCK - 1 - offs))
    tl.store(Y + base + offs, y + 1)


@compiler.jit
def scale_f64(X, Y, alpha: tl.float64, N, BLOCK: tl.constexpr):
    """y = x * alpha with alpha a float64 parameter: the product is float64 (alpha is not rounded to float32)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    tl.store(Y + offs, tl.load(X + offs, mask=m) * alpha, mask=m)


@compiler.jit
def annotated_int64(Y, k: "tl.int64"):
    tl.store(Y, k * 3)


@compiler.jit
def ld_bessel_y(X, Y0, Y1, YN, n, N, BLOCK: tl.constexpr):
    """y0, y1 and yn(n, .) of one input in one kernel (n an int32 scalar parameter)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m, other=1)
    tl.store(Y0 + offs, libdevice.y0(x), mask=m)
    tl.store(Y1 + offs, libdevice.y1(x), mask=m)
    tl.store(YN + offs, libdevice.yn(n, x), mask=m)
