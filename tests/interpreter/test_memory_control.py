"""Atomics, control flow (for/if/while with carried values, early return), print, assert, memory errors."""
import numpy as np
import pytest

from compiler.errors import KernelRuntimeError
from compiler.interpreter import run
from compiler.ir import types as T

from .irb import at, function, i32, inside, offsets, ptr, region_op, tt


def test_atomic_add_histogram_counts():
    """Every program adds 1 to counts[x % NB] for its BLOCK elements; old values are distinct per bin."""
    block, nb = 128, 4
    f, b, (X, Cn, Old, N) = function("hist", [("X", ptr(T.int32)), ("C", ptr(T.int32)), ("Old", ptr(T.int32)),
                                              ("N", tt(T.int32))])
    offs = offsets(b, block)
    m = b.cmp("lt", offs, b.splat(N, (block,)))
    x = b.load(b.addptr(b.splat(X, (block,)), offs), m)
    bins = b.binary("irem", x, i32(b, nb, (block,)))
    old = b.atomic_rmw("add", b.addptr(b.splat(Cn, (block,)), bins), i32(b, 1, (block,)), m)
    b.store(b.addptr(b.splat(Old, (block,)), offs), old, m)
    b.ret()
    rng = np.random.default_rng(0)
    n = 1000
    x = rng.integers(0, 1000, n).astype(np.int32)
    counts = np.zeros(nb, np.int32)
    olds = np.full(n, -5, np.int32)
    run(f, ((n + block - 1) // block, 1, 1), [x, counts, olds, n], debug=True)
    np.testing.assert_array_equal(counts, np.bincount(x % nb, minlength=nb))
    for k in range(nb):  # old values seen by lanes hitting bin k: 0..count-1, in lane (= element) order
        np.testing.assert_array_equal(olds[x % nb == k], np.arange(counts[k]))


@pytest.mark.parametrize("kind,elem", [("max", T.int32), ("min", T.uint32), ("xchg", T.int32), ("and", T.int64),
                                       ("or", T.uint8), ("xor", T.int16), ("add", T.float32), ("add", T.float16),
                                       ("max", T.float32)])
@pytest.mark.parametrize("spread", [5, 1], ids=["5addr", "1addr"])  # 1addr: the per-address accumulate path
def test_atomic_rmw_sequential_semantics(kind, elem, spread):
    block = 64
    f, b, (P, V, Idx, Old) = function("rmw", [("P", ptr(elem)), ("V", ptr(elem)), ("I", ptr(T.int32)),
                                              ("Old", ptr(elem))])
    ar = b.arange(0, block)
    v = b.load(b.addptr(b.splat(V, (block,)), ar))
    idx = b.load(b.addptr(b.splat(Idx, (block,)), ar))
    m = b.cmp("ne", b.binary("and", ar, i32(b, 7, (block,))), i32(b, 3, (block,)))  # every 8th lane off
    old = b.atomic_rmw(kind, b.addptr(b.splat(P, (block,)), idx), v, m)
    b.store(b.addptr(b.splat(Old, (block,)), ar), old)
    b.ret()
    rng = np.random.default_rng(1)
    if elem.is_floating():
        mem0 = rng.standard_normal(5).astype(elem.np)
        vals = rng.standard_normal(block).astype(elem.np)
    else:
        info = np.iinfo(elem.np)
        mem0 = rng.integers(info.min, info.max, 5, endpoint=True, dtype=elem.np)
        vals = rng.integers(info.min, info.max, block, endpoint=True, dtype=elem.np)
    idx = rng.integers(0, spread, block).astype(np.int32)
    mem = mem0.copy()
    old = np.zeros(block, elem.np)
    run(f, (1, 1, 1), [mem, vals, idx, old], debug=True)
    ref = mem0.copy()
    ref_old = np.zeros(block, elem.np)
    with np.errstate(all="ignore"):
        for lane in range(block):
            if lane % 8 == 3:
                continue
            o = ref[idx[lane]]
            ref_old[lane] = o
            v = vals[lane]
            new = {"add": lambda: (np.float32(o) + np.float32(v)).astype(elem.np) if elem.is_floating() else o + v,
                   "max": lambda: np.fmax(o, v), "min": lambda: min(o, v), "xchg": lambda: v,
                   "and": lambda: o & v, "or": lambda: o | v, "xor": lambda: o ^ v}[kind]()
            ref[idx[lane]] = new
    np.testing.assert_array_equal(mem, ref)
    np.testing.assert_array_equal(old, ref_old)


def test_atomic_cas_lock_counter():
    """Each program: cas(lock, 0, 1) must succeed (programs run one by one), bump a counter, release."""
    f, b, (L, Cn) = function("cas", [("L", ptr(T.int32)), ("C", ptr(T.int32))])
    old = b.atomic_cas(L, i32(b, 0), i32(b, 1))
    b.store(b.addptr(Cn, i32(b, 1)), old)  # C[1] = old lock value (always 0)
    c = b.load(Cn)
    b.store(Cn, b.binary("add", c, i32(b, 1)))
    b.atomic_rmw("xchg", L, i32(b, 0))
    b.ret()
    lock = np.zeros(1, np.int32)
    cnt = np.array([0, 99], np.int32)
    run(f, (3, 2, 2), [lock, cnt])
    assert cnt.tolist() == [12, 0] and lock[0] == 0


def test_atomic_cas_vector_duplicates():
    block = 8
    f, b, (P, Cm, V, Old) = function("cas2", [("P", ptr(T.int32)), ("Cm", ptr(T.int32)), ("V", ptr(T.int32)),
                                             ("Old", ptr(T.int32))])
    ar = b.arange(0, block)
    cm = b.load(b.addptr(b.splat(Cm, (block,)), ar))
    v = b.load(b.addptr(b.splat(V, (block,)), ar))
    old = b.atomic_cas(b.splat(P, (block,)), cm, v)  # every lane hits P[0]
    b.store(b.addptr(b.splat(Old, (block,)), ar), old)
    b.ret()
    mem = np.array([5], np.int32)
    cm = np.array([1, 5, 5, 7, 7, 9, 9, 2], np.int32)
    v = np.array([0, 7, 8, 9, 3, 2, 4, 6], np.int32)
    old = np.zeros(block, np.int32)
    run(f, (1, 1, 1), [mem, cm, v, old])
    assert old.tolist() == [5, 5, 7, 7, 9, 9, 2, 2] and mem[0] == 6


def build_loop_kernel():
    """acc = sum over i in range(lb, n, step) of X[i] * i, and a while loop counting halvings of n; an if
    picks a branch per program."""
    f, b, (X, O, Nn) = function("loops", [("X", ptr(T.float32)), ("O", ptr(T.float32)), ("N", tt(T.int32))])
    pid = b.program_id(0)
    zero = b.const(0.0, tt(T.float32))
    cnt0 = i32(b, 0)
    at(b, 50)
    op, (body,) = region_op(b, "for", [pid, Nn, i32(b, 3), zero, cnt0], [tt(T.float32), tt(T.int32)],
                            [[tt(T.int32), tt(T.float32), tt(T.int32)]])
    with inside(b, body):
        iv, acc, cnt = body.args
        x = b.load(b.addptr(X, iv))
        b.yield_([b.binary("add", acc, b.binary("mul", x, b.cast(iv, T.float32))), b.binary("add", cnt, i32(b, 1))])
    acc, cnt = op.results
    # while n > 1: n = n / 2; k += 1
    wop, (before, after) = region_op(b, "while", [Nn, i32(b, 0)], [tt(T.int32), tt(T.int32)],
                                     [[tt(T.int32), tt(T.int32)], [tt(T.int32), tt(T.int32)]])
    with inside(b, before):
        n_, k_ = before.args
        b.condition(b.cmp("gt", n_, i32(b, 1)), [n_, k_])
    with inside(b, after):
        n_, k_ = after.args
        b.yield_([b.binary("idiv", n_, i32(b, 2)), b.binary("add", k_, i32(b, 1))])
    halvings = wop.results[1]
    # if pid is even: r = acc else r = -acc
    even = b.cmp("eq", b.binary("irem", pid, i32(b, 2)), i32(b, 0))
    iop, (then, els) = region_op(b, "if", [even], [tt(T.float32)], [[], []])
    with inside(b, then):
        b.yield_([acc])
    with inside(b, els):
        b.yield_([b.unary("neg", acc)])
    r = iop.results[0]
    base = b.binary("mul", pid, i32(b, 3))
    b.store(b.addptr(O, base), r)
    b.store(b.addptr(O, b.binary("add", base, i32(b, 1))), b.cast(cnt, T.float32))
    b.store(b.addptr(O, b.binary("add", base, i32(b, 2))), b.cast(halvings, T.float32))
    b.ret()
    return f


def test_for_while_if():
    rng = np.random.default_rng(2)
    n, progs = 50, 5
    x = rng.integers(1, 10, n).astype(np.float32)
    out = np.zeros(3 * progs, np.float32)
    run(build_loop_kernel(), (progs, 1, 1), [x, out, n], debug=True)
    for p in range(progs):
        ids = np.arange(p, n, 3)
        acc = float((x[ids] * ids).sum())
        assert out[3 * p] == (acc if p % 2 == 0 else -acc)
        assert out[3 * p + 1] == len(ids)
        assert out[3 * p + 2] == 5  # 50 -> 25 -> 12 -> 6 -> 3 -> 1


def test_early_return_inside_if():
    f, b, (X,) = function("early", [("X", ptr(T.int32))])
    pid = b.program_id(0)
    c = b.cmp("ge", pid, i32(b, 2))
    _, (then, els) = region_op(b, "if", [c], [], [[], []])
    with inside(b, then):
        b.ret()
    with inside(b, els):
        b.yield_([])
    b.store(b.addptr(X, pid), b.binary("add", pid, i32(b, 10)))
    b.ret()
    x = np.full(4, -1, np.int32)
    run(f, (4, 1, 1), [x])
    assert x.tolist() == [10, 11, -1, -1]


def test_print_format(capsys):
    f, b, (X,) = function("pr", [("X", ptr(T.int32))])
    v = b.load(b.addptr(b.splat(X, (2,)), b.arange(0, 2)))
    b.print(" x", [v])
    b.print("h", [v], hex=True)
    b.ret()
    run(f, (1, 1, 1), [np.array([5, -1], np.int32)])
    out = capsys.readouterr().out.splitlines()
    assert out == ["pid (0, 0, 0) idx (0) x: 5", "pid (0, 0, 0) idx (1) x: -1",
                   "pid (0, 0, 0) idx (0) h: 0x00000005", "pid (0, 0, 0) idx (1) h: 0xffffffff"]


def test_assert_only_in_debug():
    f, b, (X,) = function("as", [("X", ptr(T.int32))])
    v = b.load(b.addptr(b.splat(X, (4,)), b.arange(0, 4)))
    at(b, 77, 8)
    b.assert_(b.cmp("gt", v, i32(b, 0, (4,))), "x must be positive")
    b.ret()
    x = np.array([3, 1, -2, 4], np.int32)
    run(f, (1, 1, 1), [x])  # not checked without debug
    with pytest.raises(KernelRuntimeError) as ei:
        run(f, (1, 1, 1), [x], debug=True)
    assert "kernels.py:77:9" in str(ei.value) and "x must be positive" in str(ei.value) and "(2,)" in str(ei.value)


def scalar_access_kernel(kind, elem=T.int32):
    f, b, (X, Off) = function("acc", [("X", ptr(elem)), ("Off", tt(T.int64))])
    p = b.addptr(X, Off)
    at(b, 60, 12)
    if kind == "load":
        v = b.load(p)
        b.store(X, v)
    elif kind == "store":
        b.store(p, b.const(1, tt(elem)))
    else:
        b.atomic_rmw("add", p, b.const(1, tt(elem)))
    b.ret()
    return f


@pytest.mark.parametrize("kind", ["load", "store", "atomic"])
def test_out_of_bounds_scalar(kind):
    x = np.arange(1, 11, dtype=np.int32)
    f = scalar_access_kernel(kind)
    run(f, (1, 1, 1), [x, 9])  # last element: fine
    for off in (10, -1, 1 << 40):
        with pytest.raises(KernelRuntimeError) as ei:
            run(f, (1, 1, 1), [x, off])
        msg = str(ei.value)
        assert msg.startswith("kernels.py:60:13") and "out-of-bounds" in msg, msg
        if off == 10:
            assert "offset 40 bytes" in msg and "'X'" in msg


def test_misaligned_access():
    x = np.arange(1, 11, dtype=np.int32)
    f, b, (X, Off) = function("mis", [("X", ptr(T.int8)), ("Off", tt(T.int32))])
    p = b.bitcast(b.addptr(X, Off), T.pointer_type(T.int32))
    at(b, 61, 4)
    b.store(p, i32(b, 7))
    b.ret()
    run(f, (1, 1, 1), [x, 4])
    assert x[1] == 7
    with pytest.raises(KernelRuntimeError, match="misaligned store"):
        run(f, (1, 1, 1), [x, 2])


def test_masked_off_lanes_may_point_anywhere():
    block = 16
    f, b, (X, O) = function("mo", [("X", ptr(T.float32)), ("O", ptr(T.float32))])
    ar = b.arange(0, block)
    far = b.binary("mul", ar, i32(b, 1 << 20, (block,)))  # lanes >= 1 point far outside
    m = b.cmp("eq", ar, i32(b, 0, (block,)))
    v = b.load(b.addptr(b.splat(X, (block,)), far), m, b.const(2.5, tt(T.float32, (block,))))
    b.store(b.addptr(b.splat(O, (block,)), ar), v)
    b.store(b.addptr(b.splat(O, (block,)), far), v, m)
    b.ret()
    x = np.array([9.0], np.float32)
    o = np.zeros(block, np.float32)
    run(f, (1, 1, 1), [x, o])
    assert o.tolist() == [9.0] + [2.5] * (block - 1)


def test_two_arguments_and_aliases():
    """Lanes of one access spread over two arrays; an array passed twice (alias) is one region."""
    block = 8
    f, b, (X, Y, Z) = function("two", [("X", ptr(T.int64)), ("Y", ptr(T.int64)), ("Z", ptr(T.int64))])
    ar = b.arange(0, block)
    ybase = b.ptr_to_int(Y)
    xbase = b.ptr_to_int(X)
    delta = b.binary("idiv", b.binary("sub", ybase, xbase), b.const(8, tt(T.int64)))
    # lanes 0..3 read X[i], lanes 4..7 read Y[i-4] via X + delta + i - 4
    hi = b.cmp("ge", ar, i32(b, 4, (block,)))
    off = b.cast(ar, T.int64)
    off2 = b.binary("add", b.binary("sub", off, b.const(4, tt(T.int64, (block,)))), b.splat(delta, (block,)))
    v = b.load(b.addptr(b.splat(X, (block,)), b.select(hi, off2, off)))
    b.store(b.addptr(b.splat(Z, (block,)), ar), v)
    b.ret()
    x = np.arange(10, 14, dtype=np.int64)
    y = np.arange(20, 24, dtype=np.int64)
    z = np.zeros(8, np.int64)
    run(f, (1, 1, 1), [x, y, z])
    assert z.tolist() == [10, 11, 12, 13, 20, 21, 22, 23]
    xx = np.arange(10, 18, dtype=np.int64)
    run(f, (1, 1, 1), [xx, xx[:4], xx])  # Y aliases X, Z aliases X: reads then writes in place
    assert xx.tolist() == [10, 11, 12, 13, 10, 11, 12, 13]


def test_non_contiguous_argument():
    """A strided view: the kernel addresses it with its own stride (2 elements)."""
    block = 4
    f, b, (X, S) = function("nc", [("X", ptr(T.float32)), ("S", tt(T.int32))])
    ar = b.arange(0, block)
    p = b.addptr(b.splat(X, (block,)), b.binary("mul", ar, b.splat(S, (block,))))
    v = b.load(p)
    b.store(p, b.binary("add", v, b.const(1.0, tt(T.float32, (block,)))))
    b.ret()
    base = np.arange(8, dtype=np.float32) + 1
    view = base[::2]
    run(f, (1, 1, 1), [view, 2])
    assert base.tolist() == [2, 2, 4, 4, 6, 6, 8, 8]


@pytest.mark.parametrize("elem,acc_elem", [(T.float32, T.float32), (T.float16, T.float32), (T.int8, T.int32)],
                         ids=str)
def test_dot(elem, acc_elem):
    M, K_, Nn = 16, 32, 8
    f, b, (A, B, Cc) = function("dot", [("A", ptr(elem)), ("B", ptr(elem)), ("C", ptr(acc_elem))])
    from .irb import grid2d_offsets
    a = b.load(b.addptr(b.splat(A, (M, K_)), grid2d_offsets(b, M, K_, i32(b, K_))))
    bb = b.load(b.addptr(b.splat(B, (K_, Nn)), grid2d_offsets(b, K_, Nn, i32(b, Nn))))
    co = grid2d_offsets(b, M, Nn, i32(b, Nn))
    acc = b.load(b.addptr(b.splat(Cc, (M, Nn)), co))
    d = b.create("dot", [a, bb, acc], [tt(acc_elem, (M, Nn))], {"input_precision": "ieee", "out_dtype": acc_elem})
    b.store(b.addptr(b.splat(Cc, (M, Nn)), co), d.result)
    b.ret()
    rng = np.random.default_rng(4)
    if elem.is_floating():
        x = rng.standard_normal((M, K_)).astype(elem.np)
        y = rng.standard_normal((K_, Nn)).astype(elem.np)
        c = rng.standard_normal((M, Nn)).astype(acc_elem.np)
    else:
        x = rng.integers(-128, 128, (M, K_)).astype(elem.np)
        y = rng.integers(-128, 128, (K_, Nn)).astype(elem.np)
        c = rng.integers(-1000, 1000, (M, Nn)).astype(acc_elem.np)
    ref = x.astype(np.float64) @ y.astype(np.float64) + c
    run(f, (1, 1, 1), [x, y, c], debug=True)
    if elem.is_floating():
        np.testing.assert_allclose(c, ref, rtol=1e-5, atol=1e-5)
    else:
        np.testing.assert_array_equal(c, ref.astype(np.int64))


def test_speed_many_programs():
    """Guard against per-element Python work: 2^18 elements in 1024 programs well under a few seconds."""
    import time
    from .test_basic import build_vadd
    n = 1 << 18
    rng = np.random.default_rng(5)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    z = np.zeros(n, np.float32)
    t = time.perf_counter()
    run(build_vadd(block=256), (n // 256, 1, 1), [x, y, z, n])
    assert time.perf_counter() - t < 5.0
    np.testing.assert_array_equal(z, x + y)
