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
        c = [0] * len(self.shape)
        for i, b in enumerate(self.reg):
            if r >> i & 1:
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


def default_blocked(shape: tuple, elem_bytes: int, num_warps: int, order=None, max_vec: int | None = None):
    """Triton-like default: 16 bytes per thread along the fastest dim (fewer when the block is small, so all
    threads get work), lanes then warps filled along `order`, leftovers on the slowest dim."""
    rank = len(shape)
    order = tuple(order) if order is not None else tuple(range(rank - 1, -1, -1))
    numel = 1
    for s in shape:
        numel *= s
    threads = 32 * num_warps
    vec = max(1, 16 // max(1, elem_bytes))
    if max_vec is not None:
        vec = min(vec, max(1, max_vec))
    vec = min(vec, shape[order[0]], max(1, numel // threads))
    spt = [1] * rank
    spt[order[0]] = vec
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
    return BlockedLayout(tuple(spt), tuple(tpw), tuple(wpc), order)


def permute_layout(layout, order: tuple):
    """Layout of permute(x, order) that keeps every element in the thread/register that held it (free)."""
    if isinstance(layout, BlockedLayout):
        inv = [0] * len(order)
        for i, o in enumerate(order):
            inv[o] = i
        return BlockedLayout(tuple(layout.spt[o] for o in order), tuple(layout.tpw[o] for o in order),
                             tuple(layout.wpc[o] for o in order), tuple(inv[o] for o in layout.order))
    return None
