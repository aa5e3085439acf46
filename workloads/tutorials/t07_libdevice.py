"""Tutorial 07: libdevice math (`triton.language.extra.libdevice`): elementwise asin, and a few more functions
of the same module, float32 and float64."""
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def asin_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(y_ptr + offsets, libdevice.asin(x), mask=mask)


@triton.jit
def mixed_math_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    """y = tanh(x) + pow(x, 2.5) * erfc(x) + log1p(|x|) (x > 0 for pow)."""
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=1.0)
    y = libdevice.tanh(x) + libdevice.pow(x, 2.5) * libdevice.erfc(x) + libdevice.log1p(tl.abs(x))
    tl.store(y_ptr + offsets, y, mask=mask)


def asin(x, y, BLOCK_SIZE=1024):
    n = x.shape[0]
    asin_kernel[(triton.cdiv(n, BLOCK_SIZE),)](x, y, n, BLOCK_SIZE=BLOCK_SIZE)
    return y


def mixed_math(x, y, BLOCK_SIZE=1024):
    n = x.shape[0]
    mixed_math_kernel[(triton.cdiv(n, BLOCK_SIZE),)](x, y, n, BLOCK_SIZE=BLOCK_SIZE)
    return y
