"""Distributed layouts: which thread (lane, warp) and which register holds which element of a block value.

A layout is shape-agnostic (like Triton's encodings): `BlockedLayout(size_per_thread, threads_per_warp,
warps_per_cta, order)` tiles a shape with a CTA tile of spt*tpw*wpc per dim; a dim larger than its tile wraps
(more registers per thread), a smaller one replicates (several threads hold the same element).
`SliceLayout(dim, parent)` is the layout of a value that lost dim `dim` of a parent-layout value (a reduction
result, or a 1-D value that `expand_dims(dim)` turns back into the parent for free).

For code generation every (layout, shape) pair is flattened into a `LinearLayout`: since all sizes are powers of
two, element coordinates are the XOR of per-bit basis vectors of the register index, the lane id and the warp
id. A zero basis vector means that bit only replicates data. Everything downstream (register enumeration,
vector widths, reductions, shuffles, conversions, duplicate masking) reads these bases, so a new layout kind
only needs a `linear()` rule.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from ..options import has_wgmma


def log2(n: int) -> int:
    """Exact log2 of a power of two (shapes, tiles and warp counts all are)."""
    if n <= 0 or n & (n - 1):
        raise ValueError(f"{n} is not a power of two")
    return n.bit_length() - 1


@dataclass(frozen=True)
class BlockedLayout:
    """Each thread holds spt contiguous elements per dim; tpw threads of a warp and wpc warps tile each dim;
    `order` lists dims fastest-varying first (lanes and registers are numbered along order[0] first)."""

    spt: tuple
    tpw: tuple
    wpc: tuple
    order: tuple

    @property
    def rank(self) -> int:
        return len(self.spt)

    def __str__(self) -> str:
        return f"blocked<spt={list(self.spt)}, tpw={list(self.tpw)}, wpc={list(self.wpc)}, order={list(self.order)}>"


@dataclass(frozen=True)
class SliceLayout:
    """The layout of `parent` with dim `dim` removed (every holder of the removed dim keeps a copy)."""

    dim: int
    parent: object

    @property
    def rank(self) -> int:
        return self.parent.rank - 1

    def __str__(self) -> str:
        return f"slice<dim={self.dim}, {self.parent}>"


@dataclass(frozen=True)
class MmaLayout:
    """Tensor-core accumulator layout of a dot result [..., M, N].

    version 2 (mma.sync m16n8): each warp computes 16x8 tiles; lane = 4*group + t holds rows group and group+8,
    columns 2t and 2t+1 (registers: col bit first, then row+8). Warps tile (wpc[-2], wpc[-1]) tiles of 16x8,
    repetitions wrap over the shape (N reps before M reps in the register order).
    version 3 (wgmma m64nNk16): a warpgroup of 4 warps stacks four 16-row slices; each warp's fragment is the
    version-2 fragment repeated along N up to `instr_n` columns (those come first among the repetitions).
    A leading batch dim (rank 3) gets warps first, as Triton does.
    """

    version: int
    wpc: tuple
    instr_n: int = 8

    @property
    def rank(self) -> int:
        return len(self.wpc)

    def __str__(self) -> str:
        return f"mma<v{self.version}, wpc={list(self.wpc)}, n={self.instr_n}>"


@dataclass(frozen=True)
class DotOperandLayout:
    """Layout of operand `op_idx` (0: a [.., M, K], 1: b [.., K, N]) of a dot whose result has layout `parent`.

    MMA parent: the registers of an mma.sync fragment (`kwidth` consecutive K elements per 32-bit register:
    2 for 16-bit types, 4 for int8, 1 for tf32), replicated across the warps of the other operand's dim.
    Blocked parent (FMA dot): every thread holds the whole K extent of the rows (a) / columns (b) of the result
    elements it owns.
    """

    op_idx: int
    parent: object
    kwidth: int = 0

    @property
    def rank(self) -> int:
        return self.parent.rank

    def __str__(self) -> str:
        return f"dot_op<{self.op_idx}, {self.parent}, k={self.kwidth}>"


@dataclass(frozen=True)
class LinearEncoding:
    """A layout given by its linear form (register, lane and warp bases over `shape`): what a reshape or permute of
    another layout is where no blocked layout keeps every element in the thread and register that held it (an MMA
    accumulator split into halves for a subtiled epilogue). Applied to a shape smaller along a dim (a slice's
    parent), bases past it replicate (lanes, warps) or drop (registers); to a larger one, the missing high bits
    repeat in registers."""

    shape: tuple
    reg: tuple
    lane: tuple
    warp: tuple

    @property
    def rank(self) -> int:
        return len(self.shape)

    def __str__(self) -> str:
        return f"linear<{list(self.shape)}, reg={list(self.reg)}, lane={list(self.lane)}, warp={list(self.warp)}>"


def linear_encoding(ll) -> "LinearEncoding":
    """The layout object of a LinearLayout."""
    return LinearEncoding(tuple(ll.shape), tuple(ll.reg), tuple(ll.lane), tuple(ll.warp))


def reshaped_encoding(ll, shape: tuple):
    """LinearEncoding of reshape(x) (row-major, power-of-two dims) that keeps every element where x's LinearLayout
    `ll` holds it: each basis's flat offset taken to the new shape's coordinates."""
    def recoord(b):
        f = 0
        for c, n in zip(b, ll.shape):
            f = f * n + c
        out = []
        for n in reversed(shape):
            out.append(f % n)
            f //= n
        return tuple(reversed(out))
    return LinearEncoding(tuple(shape), tuple(map(recoord, ll.reg)), tuple(map(recoord, ll.lane)),
                          tuple(map(recoord, ll.warp)))


@dataclass(frozen=True)
class LinearLayout:
    """Bases of a (layout, shape): element coordinate = XOR of the bases of the set bits of (reg, lane, warp).

    `reg` has one basis per register-index bit (registers never hold duplicates), `lane` 5, `warp`
    log2(num_warps). Each basis is a tuple of per-dim coordinates (one power of two, or all zero).
    """

    shape: tuple
    reg: tuple
    lane: tuple
    warp: tuple

    @property
    def num_regs(self) -> int:
        return 1 << len(self.reg)

    def reg_coord(self, r: int) -> tuple:
        """Compile-time part of the coordinate of register r."""
        return self._span("reg")[r & ((1 << len(self.reg)) - 1)]

    def thread_coord(self, lane: int, warp: int) -> tuple:
        """Thread-dependent part of every element's coordinate, for one (lane, warp), as Python ints (the
        emitter's thread_coords builds the same as LLVM values)."""
        a = self._span("lane")[lane & ((1 << len(self.lane)) - 1)]
        b = self._span("warp")[warp & ((1 << len(self.warp)) - 1)]
        return tuple(x ^ y for x, y in zip(a, b))

    def thread_coords(self, num_warps: int) -> list:
        """[thread_coord(lane, warp) for warp in range(num_warps) for lane in range(32)], built once."""
        self._span("lane")
        cache = self.__dict__["_spans"]
        out = cache.get(("threads", num_warps))
        if out is None:
            out = [self.thread_coord(lane, w) for w in range(num_warps) for lane in range(32)]
            cache[("threads", num_warps)] = out
        return out

    def _span(self, which: str) -> list:
        """The coordinates of every index of one input (reg, lane or warp): entry i is the XOR of the bases of
        i's set bits. Built once per layout by doubling (the table is not part of the value: eq and hash
        ignore it), so the emitter's per-register and per-thread lookups cost an index, not a walk of the
        bases."""
        cache = self.__dict__.get("_spans")
        if cache is None:
            cache = {}
            object.__setattr__(self, "_spans", cache)
        out = cache.get(which)
        if out is None:
            out = [(0,) * len(self.shape)]
            for b in getattr(self, which):
                out += [tuple(x ^ y for x, y in zip(c, b)) for c in out]
            cache[which] = out
        return out

    def _xor_bases(self, pairs) -> tuple:
        c = [0] * len(self.shape)
        for bases, idx in pairs:
            for i, b in enumerate(bases):
                if idx >> i & 1:
                    c = [x ^ y for x, y in zip(c, b)]
        return tuple(c)

    def lane_repl_mask(self) -> int:
        """Lane-id bits that only replicate data (their holders are duplicates)."""
        return sum(1 << i for i, b in enumerate(self.lane) if not any(b))

    def warp_repl_mask(self) -> int:
        return sum(1 << i for i, b in enumerate(self.warp) if not any(b))


def _unit(rank: int, d: int, v: int) -> tuple:
    c = [0] * rank
    c[d] = v
    return tuple(c)


@lru_cache(maxsize=None)
def linear(layout, shape: tuple, num_warps: int) -> LinearLayout:
    """Flatten `layout` applied to `shape` into bases (cached: layouts and shapes are hashable)."""
    shape = tuple(shape)
    nlw = log2(num_warps)
    if not shape:
        return LinearLayout((), (), ((),) * 5, ((),) * nlw)
    if isinstance(layout, SliceLayout):
        pshape = shape[: layout.dim] + (1,) + shape[layout.dim:]
        p = linear(layout.parent, pshape, num_warps)
        drop = lambda bs: tuple(b[: layout.dim] + b[layout.dim + 1:] for b in bs)  # noqa: E731
        return LinearLayout(shape, drop(p.reg), drop(p.lane), drop(p.warp))
    if isinstance(layout, MmaLayout):
        return _mma_linear(layout, shape, num_warps)
    if isinstance(layout, DotOperandLayout):
        return _dot_operand_linear(layout, shape, num_warps)
    if isinstance(layout, LinearEncoding):
        return _encoding_linear(layout, shape)
    if not isinstance(layout, BlockedLayout):
        raise TypeError(f"no linear form for layout {layout}")
    rank = len(shape)
    assert layout.rank == rank, (layout, shape)
    n = [log2(s) for s in shape]
    a = [log2(x) for x in layout.spt]
    b = [log2(x) for x in layout.tpw]
    c = [log2(x) for x in layout.wpc]
    assert sum(b) == 5 and sum(c) == nlw, (layout, num_warps)

    def basis(d, bit):  # coordinate bit `bit` of dim d, or zero when the dim is smaller (replication)
        return _unit(rank, d, 1 << bit) if bit < n[d] else (0,) * rank

    reg = [basis(d, i) for d in layout.order for i in range(min(a[d], n[d]))]
    reg += [basis(d, i) for d in layout.order for i in range(a[d] + b[d] + c[d], n[d])]
    lane = [basis(d, a[d] + i) for d in layout.order for i in range(b[d])]
    warp = [basis(d, a[d] + b[d] + i) for d in layout.order for i in range(c[d])]
    return LinearLayout(shape, tuple(reg), tuple(lane), tuple(warp))


def default_blocked(shape: tuple, elem_bytes: int, num_warps: int, order=None, max_vec: int | None = None,
                    run: int | None = None):
    """Triton-like default: 16 bytes per thread along the fastest dim (`run` elements instead where given; fewer
    when the block is small, so all threads get work), lanes then warps filled along `order`, leftovers on the
    slowest dim."""
    rank = len(shape)
    order = tuple(order) if order is not None else tuple(range(rank - 1, -1, -1))
    numel = 1
    for s in shape:
        numel *= s
    threads = 32 * num_warps
    vec = run if run is not None else max(1, 16 // max(1, elem_bytes))
    if max_vec is not None:
        vec = min(vec, max(1, max_vec))
    vec = min(vec, shape[order[0]], max(1, numel // threads))
    spt = [1] * rank
    spt[order[0]] = vec
    return fill_blocked(shape, spt, num_warps, order)


def fill_blocked(shape: tuple, spt, num_warps: int, order):
    """The BlockedLayout with these elements per thread: lanes then warps filled along `order`, leftovers on the
    slowest dim."""
    rank = len(shape)
    spt = list(spt)
    tpw = [1] * rank
    rem = 32
    for d in order[:-1]:
        t = min(rem, max(1, shape[d] // spt[d]))
        tpw[d] = t
        rem //= t
    tpw[order[-1]] = rem
    wpc = [1] * rank
    rem = num_warps
    for d in order[:-1]:
        w = min(rem, max(1, shape[d] // (spt[d] * tpw[d])))
        wpc[d] = w
        rem //= w
    wpc[order[-1]] = rem
    return BlockedLayout(tuple(spt), tuple(tpw), tuple(wpc), tuple(order))


def _encoding_linear(enc, shape):
    rank = len(shape)
    fits = lambda b: all(c < n for c, n in zip(b, shape))  # noqa: E731
    zero = (0,) * rank
    reg = [b for b in enc.reg if fits(b)]
    lane = tuple(b if fits(b) else zero for b in enc.lane)
    warp = tuple(b if fits(b) else zero for b in enc.warp)
    for d in range(rank):  # high bits of a dim larger than the encoding's: repeated in registers
        have = {b[d] for b in tuple(reg) + lane + warp if b[d]}
        for i in range(log2(shape[d])):
            if (1 << i) not in have:
                reg.append(_unit(rank, d, 1 << i))
    return LinearLayout(tuple(shape), tuple(reg), lane, warp)


def permute_layout(layout, order: tuple):
    """Layout of permute(x, order) that keeps every element in the thread/register that held it (free)."""
    if isinstance(layout, BlockedLayout):
        inv = [0] * len(order)
        for i, o in enumerate(order):
            inv[o] = i
        return BlockedLayout(tuple(layout.spt[o] for o in order), tuple(layout.tpw[o] for o in order),
                             tuple(layout.wpc[o] for o in order), tuple(inv[o] for o in layout.order))
    if isinstance(layout, LinearEncoding):
        pick = lambda bs: tuple(tuple(b[o] for o in order) for b in bs)  # noqa: E731
        return LinearEncoding(tuple(layout.shape[o] for o in order), pick(layout.reg), pick(layout.lane),
                              pick(layout.warp))
    return None


def _clip(basis, shape):
    """A basis that points past the shape only replicates: zero it."""
    return basis if all(c < s for c, s in zip(basis, shape)) else (0,) * len(shape)


def _warp_bases(wpc, shape, unit_m, unit_n, nlw):
    """Warp bases: batch dim first, then M (steps of unit_m), then N (steps of unit_n)."""
    rank = len(shape)
    out = []
    if rank == 3:
        out += [_unit(rank, 0, 1 << i) for i in range(log2(wpc[0]))]
    out += [_unit(rank, rank - 2, unit_m << i) for i in range(log2(wpc[-2]))]
    out += [_unit(rank, rank - 1, unit_n << i) for i in range(log2(wpc[-1]))]
    assert len(out) == nlw, (wpc, nlw)
    return [_clip(b, shape) for b in out]


def _reps(rank, d, start, size):
    """Register bases that repeat a tile of `start` along dim d up to `size`."""
    out, v = [], start
    while v < size:
        out.append(_unit(rank, d, v))
        v *= 2
    return out


def _mma_linear(lay, shape, num_warps):
    rank = len(shape)
    dm, dn = rank - 2, rank - 1
    M, N = shape[dm], shape[dn]
    nlw = log2(num_warps)
    if lay.version == 2:
        reg = [_unit(rank, dn, 1), _unit(rank, dm, 8)]
        warp = _warp_bases(lay.wpc, shape, 16, 8, nlw)
        tile_m, tile_n = 16 * lay.wpc[dm], 8 * lay.wpc[dn]
        reg += _reps(rank, dn, tile_n, N) + _reps(rank, dm, tile_m, M)
    else:  # wgmma: warps 0..3 of a warpgroup take 16-row slices; more warpgroups along M then N
        reg = [_unit(rank, dn, 1), _unit(rank, dm, 8)] + _reps(rank, dn, 8, min(lay.instr_n, N))
        wm, wn = lay.wpc[dm], lay.wpc[dn]
        warp = _warp_bases(lay.wpc, shape, 16, lay.instr_n, nlw)
        tile_m, tile_n = 16 * wm, lay.instr_n * wn
        reg += _reps(rank, dn, tile_n, N) + _reps(rank, dm, tile_m, M)
    lane = [_unit(rank, dn, 2), _unit(rank, dn, 4), _unit(rank, dm, 1), _unit(rank, dm, 2), _unit(rank, dm, 4)]
    if rank == 3:
        reg += _reps(rank, 0, lay.wpc[0], shape[0])
    return _finish(shape, reg, lane, warp)


def _finish(shape, reg, lane, warp):
    """Register bases past the shape are dropped (a slice's size-1 dim), lane/warp ones only replicate."""
    reg = [b for b in reg if all(c < s for c, s in zip(b, shape))]
    return LinearLayout(shape, tuple(reg), tuple(_clip(b, shape) for b in lane), tuple(_clip(b, shape) for b in warp))


def _dot_operand_linear(lay, shape, num_warps):
    rank = len(shape)
    nlw = log2(num_warps)
    par = lay.parent
    if isinstance(par, BlockedLayout):
        # FMA dot: take the parent's bases for the kept dims (M for a, N for b), K wholly in registers.
        if lay.op_idx == 0:
            pshape = shape[:-1] + (1,)
        else:
            pshape = shape[:-2] + (1, shape[-1])
        p = linear(par, pshape, num_warps)
        kd = rank - 1 if lay.op_idx == 0 else rank - 2
        kreg = _reps(rank, kd, 1, shape[kd])
        reg = kreg + [b for b in p.reg if any(b)]
        return LinearLayout(shape, tuple(reg), p.lane, p.warp)
    if par.version != 2:
        raise TypeError(f"no register dot-operand layout for {par}")
    kw = lay.kwidth
    dm, dn = rank - 2, rank - 1
    kbits = [1 << i for i in range(log2(kw))]
    wpc = par.wpc
    if lay.op_idx == 0:  # a [.., M, K]
        M, K = shape[dm], shape[dn]
        reg = [_unit(rank, dn, k) for k in kbits] + [_unit(rank, dm, 8), _unit(rank, dn, 4 * kw)]
        lane = [_unit(rank, dn, kw), _unit(rank, dn, 2 * kw), _unit(rank, dm, 1), _unit(rank, dm, 2),
                _unit(rank, dm, 4)]
        reg += _reps(rank, dn, 8 * kw, K) + _reps(rank, dm, 16 * wpc[dm], M)
        warp = _warp_bases(wpc, shape[:dm] + (M, 1), 16, 8, nlw)
        warp = [b if any(b) else (0,) * rank for b in warp]
    else:  # b [.., K, N]
        K, N = shape[dm], shape[dn]
        reg = [_unit(rank, dm, k) for k in kbits] + [_unit(rank, dm, 4 * kw)]
        lane = [_unit(rank, dm, kw), _unit(rank, dm, 2 * kw), _unit(rank, dn, 1), _unit(rank, dn, 2),
                _unit(rank, dn, 4)]
        reg += _reps(rank, dm, 8 * kw, K) + _reps(rank, dn, 8 * wpc[dn], N)
        warp = _warp_bases(wpc, shape[:dm] + (1, N), 16, 8, nlw)
    if rank == 3:
        reg += _reps(rank, 0, wpc[0], shape[0])
    return _finish(shape, reg, lane, warp)


def mma_warps(shape, num_warps, version=2, instr_n=8):
    """Warps per CTA for a dot result of `shape` (Triton's warpsPerTileV2 idea: grow M while it has more
    16-row tiles per warp than N has 16-column ones, else N; a batch dim takes warps first)."""
    rank = len(shape)
    M, N = shape[-2], shape[-1]
    rem = num_warps
    wb = 1
    if rank == 3:
        wb = min(shape[0], rem)
        rem //= wb
    if version == 3:
        wm, rem = 4, rem // 4
        while rem > 1 and M // (16 * wm) > 1:
            wm, rem = wm * 2, rem // 2
        wn = rem
        return ((wb,) if rank == 3 else ()) + (wm, wn)
    wm = wn = 1
    while wm * wn < rem:
        if M // (16 * wm) >= N // (16 * wn):
            if wm < max(1, M // 16):
                wm *= 2
            else:
                wn *= 2
        else:
            if wn < max(1, N // 8):
                wn *= 2
            else:
                wm *= 2
    return ((wb,) if rank == 3 else ()) + (wm, wn)


def tf32_wgmma_applies(op) -> bool:
    """A 2-D float32 x float32 -> float32 dot of input_precision "tf32" with K a multiple of 8 runs on wgmma's k8 tf32
    form, both operands K-major in shared memory (wgmma reads 32-bit operands K-major only; codegen/dot.py), as Triton
    runs it on Hopper. Its operand tiles (4 bytes an element) must fit one stage of scratch beside the rest: at most
    128 KiB together ("tf32x3": twice the bytes, below). Other precisions ("ieee", "bf16x3"...) keep their paths.
    Measured against mma.sync m16n8k8 (H100, 2026-12-06, 2 rounds beside Triton): k-means assignment 0.691 of the
    time (1.61 -> 1.12 of Triton's), mm_tf32 0.675 (0.87 -> 0.59), none of the other 30 kernels of the run slower by over 2%."""
    a, b = (v.type for v in op.operands[:2])
    prec = op.attrs.get("input_precision")
    # "tf32x3" too: each operand's tf32 part and remainder written to scratch (twice the bytes), three products an
    # iteration (codegen/dot.py _dot_wgmma), as Triton runs it on Hopper: the tf32x3 GEMM 0.890 of the time of
    # mma.sync m16n8k8's (H100, 2026-12-07, 3 rounds, benchmarks/2026-12-07g-h100/abin3.md)
    x3 = prec == "tf32x3"
    return (len(a.shape) == 2 and a.element.name == "float32"
            and b.element.name == "float32" and op.result.type.element.name == "float32"
            and (prec == "tf32" or x3) and a.shape[-1] % 8 == 0
            and 4 * (a.numel + b.numel) * (2 if x3 else 1) <= 128 * 1024)


def wgmma_applies(op, options, num_warps) -> tuple | None:
    """(wpc, instr_n) when this dot can run on wgmma (sm_90a, 2-D fp16/bf16/fp8 -> fp32 or int8/uint8 -> int32,
    float32 of input_precision "tf32" (tf32_wgmma_applies), whole warpgroups, M a multiple of
    64 per warpgroup tile, instruction N a multiple of 8 up to 256 -- of 16 above 32 for integers), else None."""
    if not has_wgmma(getattr(options, "arch", "")) or num_warps % 4:
        return None
    a = op.operands[0].type
    el = a.element
    integer = el.kind in ("int", "uint") and el.bits == 8
    tf32 = el.kind == "float" and el.bits == 32 and tf32_wgmma_applies(op)
    if len(a.shape) != 2 or not (integer or tf32 or (el.kind == "float" and el.bits in (8, 16))):
        return None
    if el.bits == 8 and a.shape[-1] % 32:  # fp8 (passes/fp8_dot.py) and int8: k32 instructions
        return None
    rname = op.result.type.element.name
    # fp16 x fp16 -> fp16 accumulators (`out_dtype=tl.float16`) on wgmma's .f16 form too (H100, 2026-12-06:
    # mm_fp16_acc 0.380 of its time on mma.sync, 1.05 of Triton's)
    f16acc = rname == "float16" and el.name == "float16" and op.operands[1].type.element.name == "float16"
    if rname != ("int32" if integer else "float32") and not f16acc:
        return None
    if integer and op.operands[1].type.element.name != el.name:
        return None
    M, N = op.result.type.shape
    wm, wn = mma_warps((M, N), num_warps, version=3)
    if M % (16 * wm) or N % wn:
        return None
    instr_n = N // wn
    while instr_n > 256:
        instr_n //= 2
    # warpgroups side by side along N start their b at instr_n columns apart: a whole swizzle block for an MN-major
    # 16-bit b; 8-bit and tf32 operands are K-major (N their rows), so any multiple of 8 rows is a descriptor's start
    if instr_n % 8 or (wn > 1 and instr_n % 64 and el.bits == 16) or (integer and instr_n > 32 and instr_n % 16):
        return None
    return (wm, wn), instr_n
