"""Kernels used by the frontend tests (in a file so that their source, and error locations, are real)."""
import compiler
import compiler.language as tl


@compiler.jit
def add_kernel(X, Y, Z, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    tl.store(Z + offs, tl.load(X + offs, mask=m) + tl.load(Y + offs, mask=m), mask=m)


@compiler.jit
def softmax_kernel(Out, In, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(In + row * stride + offs, mask=offs < n_cols, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    tl.store(Out + row * stride + offs, e / tl.sum(e, axis=0), mask=offs < n_cols)


@compiler.jit
def _add(a, b):
    return a + b


@compiler.jit
def control_flow(X, Y, N, BLOCK: tl.constexpr):
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for i in range(0, N, BLOCK):
        offs = i + tl.arange(0, BLOCK)
        acc += tl.load(X + offs, mask=offs < N, other=0.0)
    s = tl.reduce(acc, 0, _add)
    if s > 0:
        s = s * 2
    else:
        s = s - 1
    k = 0
    while k < 3:
        k += 1
    tl.store(Y, s + k)


@compiler.jit
def early_exit(X, N, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    if pid * BLOCK >= N:
        return
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(X + offs, offs.to(X.dtype.element_ty), mask=offs < N)


@compiler.jit
def bad_arange(X, N, BLOCK: tl.constexpr):
    offs = tl.arange(0, 100)
    tl.store(X + offs, 1.0)


@compiler.jit
def bad_shapes(X, N, BLOCK: tl.constexpr):
    a = tl.arange(0, BLOCK)
    b = tl.arange(0, 2 * BLOCK)
    tl.store(X + (a + b), 1.0)


@compiler.jit
def bad_runtime_arange(X, N):
    offs = tl.arange(0, N)
    tl.store(X + offs, 1.0)


@compiler.jit
def bad_construct(X, N):
    with open("x"):
        pass


@compiler.jit
def bad_float_bitwise(X, N):
    x = tl.load(X)
    tl.store(X, x & 1)


@compiler.jit
def _helper_bad(x):
    return tl.exp(x)


@compiler.jit
def bad_in_callee(X):
    x = tl.load(X + tl.arange(0, 16))
    tl.store(X + tl.arange(0, 16), _helper_bad(x.to(tl.int32)))


@compiler.jit
def bad_loop_type(X, N):
    acc = tl.zeros([16], dtype=tl.float32)
    for i in range(N):
        acc = tl.zeros([32], dtype=tl.float32)
    tl.store(X + tl.arange(0, 16), acc)


@compiler.jit
def bad_undefined(X):
    tl.store(X, undefined_name)  # noqa: F821
