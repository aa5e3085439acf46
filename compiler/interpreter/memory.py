"""Global memory for the interpreter: the byte ranges of the kernel's argument arrays, and the one place where
addresses are checked and turned into array elements.

A pointer value is a real host address (uint64). `Memory.register(array, name)` records the array's byte range
[lo, hi); overlapping or touching ranges of different arguments (aliases, views of one buffer) are merged into
one region. Every access converts addresses to (region, byte offset), checks that each *active* lane (mask
true, or no mask) lies wholly inside one region and is aligned to the element size, and then reads/writes a
typed NumPy view of the region's bytes. A bad lane raises KernelRuntimeError naming the op's source location,
the kind of access, the address, the lane and the nearest argument with the offset relative to it.
"""
from __future__ import annotations

import bisect
import ctypes

import numpy as np

from compiler.errors import KernelRuntimeError

U64 = np.dtype(np.uint64)
BOOL = np.dtype(np.bool_)


def _flat(x, shape, nd):
    """x as a flat array of dtype nd with the elements of `shape` (broadcasting only when needed)."""
    x = np.asarray(x)
    if x.dtype != nd:
        x = x.astype(nd)
    if x.shape != shape:
        x = np.broadcast_to(x, shape)
    return x.reshape(-1)


def _byte_bounds(a: np.ndarray) -> tuple[int, int]:
    lo = a.__array_interface__["data"][0]
    if a.flags.c_contiguous or a.flags.f_contiguous:
        return lo, lo + a.nbytes
    hi = lo
    for n, st in zip(a.shape, a.strides):
        if st < 0:
            lo += (n - 1) * st
        else:
            hi += (n - 1) * st
    return lo, hi + a.itemsize


# Added to an out-of-bounds address farther from every argument than the nearest one's size: more likely an address
# read from memory (a pointer array) than an index past an argument's end.
_HOST_HINT = ("; the interpreter reaches only the launch's arrays: an address read from memory (a pointer array) "
              "needs its array named by `with compiler.interpreter.host_memory(array, ...):` around the launch")


class Region:
    """A contiguous byte range of host memory with typed views of it."""

    __slots__ = ("lo", "hi", "names", "keep", "bytes", "_views", "_checkers")

    def __init__(self, lo: int, hi: int, names: list, keep: list):
        self.lo, self.hi, self.names, self.keep = lo, hi, names, keep
        self.bytes = None
        self._views: dict = {}
        self._checkers: dict = {}

    def checker(self, nd: np.dtype):
        """(view, lo, max_index, shift, 64 - shift) as NumPy uint64 scalars for the fast address check, or None
        when the region start is not aligned for nd (then the general path is used)."""
        c = self._checkers.get(nd, False)
        if c is False:
            view = self.view(nd)
            size = nd.itemsize
            if view is None or self.hi - self.lo < size:
                c = None
            else:
                shift = size.bit_length() - 1
                c = (view, np.uint64(self.lo), np.uint64((self.hi - self.lo - size) // size),
                     np.uint64(shift) if shift else None, np.uint64(64 - shift))
            self._checkers[nd] = c
        return c

    def byte_view(self) -> np.ndarray:
        if self.bytes is None:
            # One writable uint8 view of the whole range, made from the address (works for views, aliases and
            # non-contiguous arrays alike); `keep` holds the owning arrays alive.
            n = self.hi - self.lo
            buf = (ctypes.c_uint8 * n).from_address(self.lo)
            self.bytes = np.ctypeslib.as_array(buf)
        return self.bytes

    def view(self, nd: np.dtype):
        """A 1-D array of `nd` elements starting at `lo` (None if lo is not aligned to nd's size)."""
        v = self._views.get(nd)
        if v is None:
            size = nd.itemsize
            if self.lo % size:
                return None
            b = self.byte_view()
            v = b[: (len(b) // size) * size].view(nd)
            self._views[nd] = v
        return v


class Memory:
    """The registry of argument memory; `load` / `store` / `atomic` / `cas` are the only accessors."""

    def __init__(self):
        self._ranges: list[tuple[int, int, str, object]] = []
        self.regions: list[Region] = []
        self._los: list[int] = []
        self._last = None

    # --- registration ---------------------------------------------------------------------------------------
    def register(self, array: np.ndarray, name: str) -> int:
        """Record `array`'s memory under argument `name`; returns its address (the pointer value)."""
        addr = array.__array_interface__["data"][0]
        if array.size == 0:
            return addr
        lo, hi = _byte_bounds(array)
        self._ranges.append((lo, hi, name, array))
        self._build()
        return addr

    def _build(self) -> None:
        rs = sorted(self._ranges, key=lambda r: r[0])
        regions: list[Region] = []
        for lo, hi, name, arr in rs:
            if regions and lo < regions[-1].hi:  # only real overlaps (aliases) merge
                r = regions[-1]
                r.hi = max(r.hi, hi)
                r.names.append((name, lo, hi))
                r.keep.append(arr)
            else:
                regions.append(Region(lo, hi, [(name, lo, hi)], [arr]))
        self.regions = regions
        self._los = [r.lo for r in regions]
        self._last = None

    # --- address translation --------------------------------------------------------------------------------
    def _region_of(self, addr: int):
        i = bisect.bisect_right(self._los, addr) - 1
        if i >= 0 and addr < self.regions[i].hi:
            return self.regions[i]
        return None

    def describe(self, addr: int) -> str:
        """Where `addr` is relative to the nearest argument, for error messages."""
        best = None
        for r in self.regions:
            for name, lo, hi in r.names:
                if lo <= addr < hi:
                    return f"offset {addr - lo} bytes into argument '{name}' of {hi - lo} bytes"
                d = lo - addr if addr < lo else addr - hi + 1
                if best is None or d < best[0]:
                    best = (d, name, lo, hi)
        if best is None:
            return "no memory is registered (no array arguments)" + _HOST_HINT
        d, name, lo, hi = best
        hint = _HOST_HINT if d > hi - lo else ""  # farther from every argument than the nearest one's own size
        if addr < lo:
            return f"{lo - addr} bytes before argument '{name}' ({hi - lo} bytes at 0x{lo:x})" + hint
        return f"offset {addr - lo} bytes from the start of argument '{name}' of {hi - lo} bytes (at 0x{lo:x})" + hint

    def _fail(self, addr_flat, bad, size, kind, elem_name, loc):
        lanes = np.flatnonzero(bad)
        lane = int(lanes[0])
        a = int(addr_flat[lane])
        if a % size and self._region_of(a) is not None and self._region_of(a + size - 1) is not None:
            what = f"misaligned {kind} of {elem_name} ({size} bytes) at address 0x{a:x}"
        else:
            what = f"out-of-bounds {kind} of {elem_name} ({size} bytes) at address 0x{a:x}"
        more = f" ({len(lanes)} bad lanes, first is lane {lane})" if len(lanes) > 1 else f" (lane {lane})"
        raise KernelRuntimeError(f"{what}{more}: {self.describe(a)}", loc)

    def translate(self, addr, active, nd: np.dtype, kind: str, elem_name: str, loc):
        """Check flat uint64 addresses (lanes where `active` is True, or all if None) and split them by region.

        Returns a list of (region_view, element_index, lane_selector) where lane_selector is None when every lane
        belongs to that single region (the fast path) or a boolean mask of the lanes in that region.
        Inactive lanes get index 0 (a valid element of the region), so gathers need no masking.
        """
        size = nd.itemsize
        n = addr.shape[0]
        if n == 0:
            return []
        # Guess the region from the first active lane (most accesses touch one argument).
        if active is None:
            first = 0
        else:
            first = int(active.argmax())
            if not active[first]:
                return []
        reg = self._region_of(int(addr[first]))
        if reg is not None:
            c = reg.checker(nd)
            if c is not None:
                view, lo, max_idx, s, rs = c
                off = addr - lo  # wraps for addresses below lo: caught by the range test
                if s is None:
                    idx = off
                else:  # rotate right by log2(size): misaligned offsets get high bits set and fail the range test
                    idx = (off >> s) | (off << rs)
                bad = idx > max_idx
                if active is not None:
                    bad &= active
                if not bad.any():  # the fast path: one region, typed view
                    idx = idx.view(np.intp)
                    if active is not None:
                        idx = np.where(active, idx, 0)
                    return [(view, idx, None)]
        return self._translate_general(addr, active, nd, kind, elem_name, loc)

    def _translate_general(self, addr, active, nd, kind, elem_name, loc):
        size = nd.itemsize
        act = np.ones(addr.shape, bool) if active is None else active
        if not self.regions:
            self._fail(addr, act, size, kind, elem_name, loc)
        los = np.array(self._los, dtype=U64)
        his = np.array([r.hi for r in self.regions], dtype=U64)
        rid = np.searchsorted(los, addr, side="right").astype(np.intp) - 1
        rid_c = np.maximum(rid, 0)
        inside = (rid >= 0) & (addr + np.uint64(size) <= his[rid_c]) & (addr >= los[rid_c])
        aligned = (addr % np.uint64(size)) == 0 if size > 1 else True
        bad = act & ~(inside & aligned)
        if bad.any():
            self._fail(addr, bad, size, kind, elem_name, loc)
        out = []
        for r in np.unique(rid[act]):
            reg = self.regions[int(r)]
            sel = act & (rid == r)
            view = reg.view(nd)
            if view is None:  # region start not aligned for nd: take an aligned view from the first aligned byte
                b = reg.byte_view()
                skip = (-reg.lo) % size
                view = b[skip: skip + ((len(b) - skip) // size) * size].view(nd)
                base = reg.lo + skip
            else:
                base = reg.lo
            idx = np.where(sel, (addr - np.uint64(base)) // np.uint64(size), np.uint64(0)).astype(np.intp)
            out.append((view, idx, sel))
        return out

    # --- accesses ---------------------------------------------------------------------------------------------
    def load(self, addr, mask, other, nd: np.dtype, elem_name: str, loc):
        """Gather elements of dtype nd at `addr` (any shape); lanes with mask False read `other` (or 0)."""
        addr = np.asarray(addr)
        shape = addr.shape
        a = addr.reshape(-1)
        m = None if mask is None else _flat(mask, shape, BOOL)
        parts = self.translate(a, m, nd, "load", elem_name, loc)
        if len(parts) == 1 and parts[0][2] is None:
            view, idx, _ = parts[0]
            res = view[idx]
        else:
            res = np.zeros(a.shape, nd)
            for view, idx, sel in parts:
                res = np.where(sel, view[idx], res) if sel is not None else view[idx]
        if m is not None:
            if other is None:
                res = np.where(m, res, nd.type(0))
            else:
                res = np.where(m, res, _flat(other, shape, nd))
        return res.reshape(shape)

    def store(self, addr, value, mask, nd: np.dtype, elem_name: str, loc) -> None:
        """Scatter `value` to `addr`; lanes with mask False are skipped. Duplicate addresses: the last lane wins."""
        addr = np.asarray(addr)
        shape = addr.shape
        a = addr.reshape(-1)
        v = _flat(value, shape, nd)
        m = None if mask is None else _flat(mask, shape, BOOL)
        for view, idx, sel in self.translate(a, m, nd, "store", elem_name, loc):
            keep = sel if sel is not None else m
            if keep is None:
                view[idx] = v
            else:
                view[idx[keep]] = v[keep]

    def rmw(self, addr, mask, nd, elem_name, loc, update, kind="atomic", vals=None, accumulate=None):
        """Sequential read-modify-write over lanes in lane order: for each active lane, old = mem; mem =
        new. `update(old, lanes)` is vectorized over a set of lanes with distinct addresses and returns the new
        values. Returns the old values (0 for inactive lanes) in addr's shape.

        Lanes are applied in rounds: round k handles the k-th lane (in lane order) of every address, so lanes
        hitting one address see each other's effects in order, as a GPU serialising them would. When few
        addresses get many lanes and `accumulate` is given (accumulate(seq)[k] = mem after applying
        seq[1..k] to seq[0], with `vals` the flat lane operands), each address is done with one NumPy call.
        """
        a = np.asarray(addr, U64).reshape(-1)
        m = None if mask is None else np.broadcast_to(np.asarray(mask, bool), np.shape(addr)).reshape(-1)
        old = np.zeros(a.shape, nd)
        for view, idx, sel in self.translate(a, m, nd, kind, elem_name, loc):
            act = sel if sel is not None else m
            lanes = np.arange(len(a)) if act is None else np.flatnonzero(act)
            li = idx[lanes]
            if len(lanes) < 2 or len(np.unique(li)) == len(li):
                rounds = [lanes]
            else:
                order = np.argsort(li, kind="stable")
                s = li[order]
                start = np.r_[True, s[1:] != s[:-1]]
                starts = np.flatnonzero(start)
                gstart = np.maximum.accumulate(np.where(start, np.arange(len(s)), 0))
                rank = np.arange(len(s)) - gstart
                counts = np.bincount(rank)
                if accumulate is not None and vals is not None and len(counts) > 4 * len(starts):
                    ends = np.r_[starts[1:], len(s)]
                    for g0, g1 in zip(starts, ends):
                        ln = lanes[order[g0:g1]]  # lanes of one address, in lane order
                        i = idx[ln[0]]
                        acc = accumulate(np.concatenate([view[i:i + 1], vals[ln]]))
                        old[ln] = acc[:-1]
                        view[i] = acc[-1]
                    continue
                by_rank = np.argsort(rank, kind="stable")
                rounds = np.split(lanes[order][by_rank], np.cumsum(counts)[:-1])
            for ln in rounds:
                i = idx[ln]
                o = view[i]
                old[ln] = o
                view[i] = update(o, ln)
        return old.reshape(np.shape(addr))
