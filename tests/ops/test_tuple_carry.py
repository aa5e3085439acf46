"""Tuples reassigned in runtime loops and ifs are carried element by element, as Triton carries them (scf.while /
scf.for / scf.if over the tuple's values): `st = (lo, hi)` updated in a bisection loop kept its value from before the
loop and the loop was deleted as dead code, silently. Nested tuples and numbers inside them too; a tuple
whose length changes in the loop is refused at its line."""
import numpy as np
import pytest

import compiler
import compiler.language as tl
from compiler.errors import CompilationError

from .test_ops import TARGETS, poison, run

@compiler.jit
def tuple_loops_kernel(X, OUT, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    st = (x, x * 0.0)
    it = 0
    while it < n:                      # a while carrying a tuple of tensors
        a, b = st
        st = (a + 1.0, b + 2.0)
        it += 1
    nest = ((x, 0), x * 0.0)
    for i in range(n):                 # a for carrying a nested tuple with a number in it
        (p, c), q = nest
        nest = ((p * 2.0, c + 1), q + p)
    pr = (x, (x, 1.5))
    for i in range(n):                 # a tuple with a float number in a nested tuple
        pr = (pr[0] + 1.0, (pr[1][0] * 2.0, pr[1][1] + 0.5))
    sel = (x, x)
    if tl.program_id(0) + n > 2:       # a runtime if reassigning a tuple
        sel = (x + 100.0, x - 100.0)
    tl.store(OUT + offs, st[0] + 10.0 * st[1])
    tl.store(OUT + BLOCK + offs, nest[0][0] + nest[1] + nest[0][1])
    tl.store(OUT + 2 * BLOCK + offs, pr[0] + pr[1][0] + pr[1][1])
    tl.store(OUT + 3 * BLOCK + offs, sel[0] * sel[1])


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("n", [0, 3])
def test_tuples_carried(target, n):
    x = np.arange(8, dtype=np.float32)
    out = poison(32, "float32")
    run(target, tuple_loops_kernel, (1,), [x, out], [n], BLOCK=8)
    xd = x.astype(np.float64)
    p, c, q = xd.copy(), 0, xd * 0.0
    for _ in range(n):
        p, c, q = p * 2.0, c + 1, q + p
    a, b, f = xd.copy(), xd.copy(), 1.5
    for _ in range(n):
        a, b, f = a + 1.0, b * 2.0, f + 0.5
    s0, s1 = (xd + 100.0, xd - 100.0) if n > 2 else (xd, xd)
    want = np.concatenate([xd + n + 10.0 * 2.0 * n, p + q + c, a + b + f, s0 * s1])
    np.testing.assert_allclose(out, want, rtol=1e-6)


@compiler.jit
def tuple_grows_kernel(X, n, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    st = (x, x)
    for i in range(n):
        st = (x, x, x)
    tl.store(X + tl.arange(0, BLOCK), st[0])


def test_tuple_changing_length_is_refused():
    with pytest.raises(CompilationError, match="loop-carried tuple 'st' must keep its length"):
        tuple_grows_kernel.warmup(np.zeros(8, np.float32), 3, grid=(1,), target="sm_90a", BLOCK=8)
