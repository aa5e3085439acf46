"""The scan emitter (codegen/reduce.py _e_scan) run on a model of the GPU, no GPU needed.

The emitter's builder calls are executed for every thread of the block at once (NumPy arrays over the threads):
integer arithmetic, selects, warp shuffles (exact shfl.sync semantics per warp), shared memory (a byte-addressed
store of typed values, bounded by what smem_begin reserved) and barriers. Threads run in lockstep, so a missing
barrier would go unseen; instead every shared-memory access between two barriers is recorded, and a slot that
one thread writes while another reads it, or that two threads write with different values, fails the test.

The layouts are LinearLayouts built from their bases: blocked ones, ones whose register bits along the axis lie
below, between or above the warp bits, broadcast lanes and warps, 1-D to 3-D, 1 to 16 warps. The combines are
non-commutative (composition in the symmetric group S3, and the 2-operand affine map x -> m*x + c mod a prime),
so any combine out of the scan's order changes the result; the reference is a sequential scan in Python.
"""
import contextlib
import itertools

import llvmlite.ir as ir
import numpy as np
import pytest

from compiler.codegen import common as C
from compiler.codegen import reduce as R
from compiler.codegen.common import EMIT, Tile
from compiler.passes.layouts import BlockedLayout, LinearLayout, linear

P = 2_147_483_629  # a prime below 2^31: products of two residues fit in int64


class V:
    """One LLVM value for every thread: `a` (an int64 array over the threads), `type` its LLVM type."""

    def __init__(self, a, type_):
        self.a = np.asarray(a, dtype=np.int64)
        self.type = type_


class Ptr:
    def __init__(self, addr):
        self.addr = addr  # int64 array of byte addresses
        self.type = C.PTR


def _v(nt, x):
    if isinstance(x, V):
        return x
    if isinstance(x, ir.Constant):
        return V(np.full(nt, int(x.constant)), x.type)
    raise TypeError(x)


class Builder:
    def __init__(self, emu):
        self.m = emu

    def _bin(self, f, a, b):
        a, b = _v(self.m.nt, a), _v(self.m.nt, b)
        return V(f(a.a, b.a), a.type)

    def add(self, a, b):
        return self._bin(np.add, a, b)

    def sub(self, a, b):
        return self._bin(np.subtract, a, b)

    def mul(self, a, b):
        return self._bin(np.multiply, a, b)

    def urem(self, a, b):
        return self._bin(np.remainder, a, b)

    def and_(self, a, b):
        return self._bin(np.bitwise_and, a, b)

    def or_(self, a, b):
        return self._bin(np.bitwise_or, a, b)

    def shl(self, a, b):
        return self._bin(np.left_shift, a, b)

    def lshr(self, a, b):
        a, b = _v(self.m.nt, a), _v(self.m.nt, b)
        assert (a.a >= 0).all()
        return V(a.a >> b.a, a.type)

    def not_(self, a):
        a = _v(self.m.nt, a)
        return V(1 - a.a, a.type)

    def icmp_unsigned(self, op, a, b):
        a, b = _v(self.m.nt, a), _v(self.m.nt, b)
        w = a.type.width
        ua, ub = a.a & ((1 << w) - 1), b.a & ((1 << w) - 1)
        f = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal, "==": np.equal,
             "!=": np.not_equal}[op]
        return V(f(ua, ub).astype(np.int64), C.I1)

    def select(self, c, a, b):
        c, a, b = _v(self.m.nt, c), _v(self.m.nt, a), _v(self.m.nt, b)
        assert a.type == b.type
        return V(np.where(c.a != 0, a.a, b.a), a.type)

    def bitcast(self, x, t):  # the model's values are opaque integers of the element's width
        return V(x.a, t)

    def zext(self, x, t):
        return V(x.a, t)

    def trunc(self, x, t):
        return V(x.a & ((1 << t.width) - 1), t)

    def gep(self, p, idx, source_etype):
        (i,) = idx
        i = _v(self.m.nt, i)
        return Ptr(p.addr + i.a * self.m.size(source_etype))

    def store(self, v, p):
        self.m.smem_store(_v(self.m.nt, v), p.addr)

    def load(self, p, typ):
        return self.m.smem_load(p.addr, typ)

    def ptrtoint(self, p, t):
        return V(p.addr, t)

    def call(self, fn, args):
        if fn == "llvm.nvvm.barrier.cta.sync.aligned.all":
            self.m.barrier()
            return None
        kind = fn.split(".")[4]
        x, arg = _v(self.m.nt, args[1]), _v(self.m.nt, args[2])
        return self.m.shuffle(kind, x, arg)

    @contextlib.contextmanager
    def if_then(self, pred):
        pred = _v(self.m.nt, pred)
        outer = self.m.mask
        self.m.mask = outer & (pred.a != 0)
        try:
            yield
        finally:
            self.m.mask = outer


class Emu:
    """Just what _e_scan asks of the emitter (codegen/llvm.py Emitter), for a block of nw warps."""

    def __init__(self, nw):
        self.nw, self.nt = nw, 32 * nw
        tid = np.arange(self.nt)
        self.tid, self.lane, self.warp = V(tid, C.I32), V(tid & 31, C.I32), V(tid >> 5, C.I32)
        self.b = Builder(self)
        self.mask = np.ones(self.nt, bool)
        self.smem, self.limit, self.barriers = {}, None, 0
        self.epoch_reads, self.epoch_writes = {}, {}
        self.out = {}

    def i32(self, v):
        return ir.Constant(C.I32, v)

    def size(self, t):
        return 1 if t == C.I8 else R._bytes(V(0, t))

    def intrinsic(self, name, *_):
        return name

    def smem_begin(self, nbytes):
        if self.limit is not None:
            self.barrier()
        self.limit = nbytes

    def smem_ptr(self, base):
        return Ptr(np.full(self.nt, base))

    def barrier(self):
        self.barriers += 1
        self.epoch_reads, self.epoch_writes = {}, {}

    def smem_store(self, v, addr):
        sz = self.size(v.type)
        for t in np.nonzero(self.mask)[0]:
            a = int(addr[t])
            assert 0 <= a and a + sz <= self.limit, f"shared store at {a} outside [0, {self.limit})"
            val = (v.type, int(v.a[t]))
            for other, ov in self.epoch_writes.get(a, {}).items():
                assert other == t or ov == val, f"threads {other} and {t} store different values at {a}"
            assert not (set(self.epoch_reads.get(a, ())) - {t}), f"{a} written by {t} after another read it"
            self.epoch_writes.setdefault(a, {})[t] = val
            self.smem[a] = val

    def smem_load(self, addr, typ):
        assert self.mask.all(), "shared load under a mask"
        out = np.zeros(self.nt, np.int64)
        for t in range(self.nt):
            a = int(addr[t])
            assert 0 <= a < self.limit, f"shared load at {a} outside [0, {self.limit})"
            assert not (set(self.epoch_writes.get(a, {})) - {t}), f"{a} read by {t} while another thread wrote it"
            self.epoch_reads.setdefault(a, set()).add(t)
            ty, val = self.smem[a]
            assert ty == typ, (ty, typ)
            out[t] = val
        return V(out, typ)

    def shuffle(self, kind, x, arg):
        assert self.mask.all(), "shuffle under a mask"
        lane = self.lane.a
        src = {"up": lane - arg.a, "down": lane + arg.a, "bfly": lane ^ arg.a, "idx": arg.a & 31}[kind]
        keep = (src < 0) | (src > 31)
        src = np.where(keep, lane, src)
        return V(x.a[(self.tid.a - lane) + src], x.type)

    def coord(self, ll, r, d):
        tc = np.array([c[d] for c in ll.thread_coords(self.nw)])
        return V(tc ^ ll.reg_coord(r)[d], C.I32)

    # the op's interface
    def get(self, v):
        return v

    def inline(self, blk, args):
        return blk(args)

    def put(self, res, regs, ll=None):
        self.out[res] = regs


class Op:
    def __init__(self, tiles, axis, reverse, combine):
        self.operands = tiles
        self.attrs = {"axis": axis, "reverse": reverse}
        self.blocks = [combine]
        self.results = list(range(len(tiles)))
        self.loc = None


# S3 as the 6 permutations of (0, 1, 2); compose(a, b) applies a first, then b
_PERMS = list(itertools.permutations(range(3)))
_COMPOSE = np.array([[_PERMS.index(tuple(pb[pa[i]] for i in range(3))) for pb in _PERMS] for pa in _PERMS])


def s3(args):
    a, b = args
    return [V(_COMPOSE[a.a, b.a], a.type)]


def affine(args):
    (m1, c1), (m2, c2) = args[:2], args[2:]
    return [V(m1.a * m2.a % P, m1.type), V((c1.a * m2.a + c2.a) % P, c1.type)]


def _ref(seq, combine):
    out, acc = [], None
    for x in seq:
        acc = x if acc is None else combine(acc, x)
        out.append(acc)
    return out


def run_scan(ll, nw, axis, reverse, nops, types=None):
    """Scan random data held in layout `ll` on the model; check every element every thread holds."""
    rng = np.random.default_rng(hash((ll, axis, reverse, nops)) % 2**32)
    types = types or [C.I32] * nops
    data = [rng.integers(0, 6, ll.shape)] if nops == 1 else [rng.integers(1, P, ll.shape) for _ in range(nops)]
    e = Emu(nw)
    coords = [[tuple(x ^ y for x, y in zip(ll.reg_coord(r), tc)) for tc in ll.thread_coords(nw)]
              for r in range(ll.num_regs)]
    tiles = [Tile(ll, [V([d[c] for c in coords[r]], types[k]) for r in range(ll.num_regs)])
             for k, d in enumerate(data)]
    op = Op(tiles, axis, reverse, s3 if nops == 1 else affine)
    EMIT["scan"](e, op)
    # reference: a sequential scan along the axis, in the scan's order
    if nops == 1:
        comb = lambda a, b: (int(_COMPOSE[a[0], b[0]]),)  # noqa: E731
    else:
        comb = lambda a, b: (a[0] * b[0] % P, (a[1] * b[0] + b[1]) % P)  # noqa: E731
    ref = np.empty(ll.shape + (nops,), np.int64)
    n = ll.shape[axis]
    for other in itertools.product(*[range(s) for d, s in enumerate(ll.shape) if d != axis]):
        idx = [other[:axis] + (i,) + other[axis:] for i in range(n)]
        order = idx[::-1] if reverse else idx
        for c, v in zip(order, _ref([tuple(int(d[c]) for d in data) for c in order], comb)):
            ref[c] = v
    for k in range(nops):
        got = e.out[k]
        for r in range(ll.num_regs):
            want = np.array([ref[c][k] for c in coords[r]])
            assert (got[r].a == want).all(), (k, r, np.nonzero(got[r].a != want)[0][:8])
    return e


def U(rank, d, v):
    return tuple(v if i == d else 0 for i in range(rank))


Z1, Z2, Z3 = (0,), (0, 0), (0, 0, 0)


def _blocked(shape, spt, tpw, wpc, order):
    nw = int(np.prod(wpc))
    return linear(BlockedLayout(tuple(spt), tuple(tpw), tuple(wpc), tuple(order)), tuple(shape), nw), nw


BLOCKED = [
    # 1-D: warps along the axis, reps above them; 1 to 16 warps
    ((2048,), (4,), (32,), (8,), (0,)),
    ((256,), (2,), (32,), (1,), (0,)),
    ((512,), (1,), (32,), (2,), (0,)),
    ((1024,), (2,), (32,), (4,), (0,)),
    ((4096,), (1,), (32,), (16,), (0,)),
    ((128,), (1,), (32,), (16,), (0,)),  # more threads than elements: warps broadcast
    # 2-D, both axes
    ((256, 32), (1, 4), (8, 4), (4, 1), (1, 0)),  # the corpus' cumsum_cols_f32
    ((4, 1024), (1, 4), (1, 32), (1, 4), (1, 0)),  # cumsum_rows_f32
    ((64, 64), (1, 1), (4, 8), (2, 4), (1, 0)),
    ((32, 16), (2, 1), (4, 8), (4, 2), (0, 1)),
    ((16, 64), (1, 2), (2, 16), (8, 2), (1, 0)),
    ((16, 128), (1, 4), (4, 8), (2, 1), (1, 0)),  # axis 0: more columns than threads (each scans two)
    # 3-D
    ((4, 8, 16), (1, 1, 2), (2, 2, 8), (2, 2, 1), (2, 1, 0)),
    ((8, 4, 32), (2, 1, 1), (1, 1, 32), (4, 1, 2), (2, 1, 0)),
]


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("nops", [1, 2])
@pytest.mark.parametrize("case", range(len(BLOCKED)))
def test_scan_blocked_layouts(case, nops, reverse):
    shape, spt, tpw, wpc, order = BLOCKED[case]
    ll, nw = _blocked(shape, spt, tpw, wpc, order)
    for axis in range(len(shape)):
        run_scan(ll, nw, axis, reverse, nops)


# LinearLayouts that no BlockedLayout gives: register bits along the axis between warp bits, below the lanes'
# segment as well as above, broadcast lanes/warps, other dims' bits in between
LINEAR = [
    # 1-D: lanes 1..16, then warp 32, reg 64, warp 128, reg 256
    (LinearLayout((512,), ((64,), (256,)), ((1,), (2,), (4,), (8,), (16,)), ((32,), (128,))), 4, 0),
    # like an MMA accumulator scanned down its rows: row reg bit 8 between lanes (1, 2, 4) and warps (16, 32)
    (LinearLayout((128, 16), ((0, 1), (8, 0), (0, 8), (64, 0)), ((0, 2), (0, 4), (1, 0), (2, 0), (4, 0)),
                  ((16, 0), (32, 0))), 4, 0),
    # what the compiler gives a 128x64 dot accumulator with 8 warps (sm_90): rows are lanes 1, 2, 4, reg 8,
    # warps 16, 32, 64 (the rep-major order of the code before the linear combine got these rows wrong)
    (LinearLayout((128, 64), ((0, 1), (8, 0), (0, 8), (0, 16), (0, 32)), ((0, 2), (0, 4), (1, 0), (2, 0), (4, 0)),
                  ((16, 0), (32, 0), (64, 0))), 8, 0),
    (LinearLayout((128, 64), ((0, 1), (8, 0), (0, 8), (0, 16), (0, 32)), ((0, 2), (0, 4), (1, 0), (2, 0), (4, 0)),
                  ((16, 0), (32, 0), (64, 0))), 8, 1),
    # no lanes along the axis: reg 1, warp 2, reg 4, warp 8, reg 16, warp 32; a broadcast warp and lane
    (LinearLayout((64, 32), ((1, 0), (4, 0), (0, 16), (16, 0)), ((0, 1), (0, 2), (0, 4), (0, 8), (0, 0)),
                  ((2, 0), (0, 0), (8, 0), (32, 0))), 16, 0),
    # two warps, one rep above them
    (LinearLayout((256,), ((1,), (128,)), ((2,), (4,), (8,), (16,), (32,)), ((64,),)), 2, 0),
    # warps in decreasing coordinate order along the axis
    (LinearLayout((1024,), ((1,), (512,)), ((2,), (4,), (8,), (16,), (32,)), ((256,), (128,), (64,))), 8, 0),
    # 3-D, the axis in the middle: lanes 1, 2, warp 4, reg 8; a broadcast warp
    (LinearLayout((4, 16, 8), ((0, 0, 1), (0, 8, 0), (2, 0, 0)), ((0, 1, 0), (0, 2, 0), (0, 0, 2), (0, 0, 4),
                                                                   (1, 0, 0)), ((0, 4, 0), (0, 0, 0))), 4, 1),
]


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("nops", [1, 2])
@pytest.mark.parametrize("case", range(len(LINEAR)))
def test_scan_linear_layouts(case, nops, reverse):
    ll, nw, axis = LINEAR[case]
    run_scan(ll, nw, axis, reverse, nops)


@pytest.mark.parametrize("switch", ["scan_direct", "scan_prefix"])
@pytest.mark.parametrize("case", [0, 6, 7, 11, 13])
def test_scan_both_schemes(monkeypatch, switch, case):
    """Each cross-warp scheme, forced, on layouts where the cost model picks one or the other."""
    monkeypatch.setenv("TILEFARM_AB", switch)
    shape, spt, tpw, wpc, order = BLOCKED[case]
    ll, nw = _blocked(shape, spt, tpw, wpc, order)
    for axis in range(len(shape)):
        for reverse in (False, True):
            for nops in (1, 2):
                run_scan(ll, nw, axis, reverse, nops)


def test_prefix_scheme_is_linear():
    """cumsum_cols_f32's layout (64 segments of 4 warps x 16 reps, 4 columns per thread): the prefix scheme
    reads one prefix per chunk, not one total per earlier segment."""
    ll, nw = _blocked(*BLOCKED[6])
    e = run_scan(ll, nw, 0, False, 1)
    assert e.barriers == 2


def test_scan_64_bit_operand():
    """A 64-bit operand goes through the lanes' shuffles as two halves and through shared memory whole."""
    ll, nw = _blocked(*BLOCKED[2])
    run_scan(ll, nw, 0, True, 2, types=[C.I64, C.I32])
