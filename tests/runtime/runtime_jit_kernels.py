"""@jit kernels for the launch-path tests under the fake driver. The fake libcuda records the 8-byte parameter
slots of a kernel named "paramsN" (its first N parameters), so these are named for their parameter counts."""
import compiler
import compiler.language as tl


@compiler.jit
def params4(X, Y, N, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    tl.store(Y + offs, tl.load(X + offs, mask=m) * alpha, mask=m)


@compiler.jit
def params3(X, Y, N, alpha, BLOCK: tl.constexpr = 128):
    """Called with N == 1 (a constant, not a parameter of the compiled kernel): three parameters."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    tl.store(Y + offs, tl.load(X + offs, mask=m) * alpha, mask=m)


@compiler.jit
def with_bias(X, Bias, Y, N, BLOCK: tl.constexpr = 128):
    """Launched with Bias=None and with a pointer: None is specialized on (not a kernel parameter)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m)
    if Bias is not None:
        x += tl.load(Bias + offs, mask=m)
    tl.store(Y + offs, x, mask=m)


@compiler.jit
def big_int_kernel(OUT, big, BLOCK: tl.constexpr):
    # an int argument of any range: int32, int64 and uint64 builds (tests/runtime/test_fastlaunch.py)
    offs = tl.arange(0, BLOCK)
    tl.store(OUT + offs, (big // 3 + offs).to(tl.int64))
