"""`dot` on tensor cores (mma.sync, sm_80+) or with FMAs, and the shared-memory path of its operands.

Operand registers: `DotOperandLayout` tiles (see passes/layouts.py). The layout pass converts both operands into
them; for 16-bit types that conversion (`to_dot_operand`) writes the block into a swizzled shared-memory tile
and reads the fragments back with `ldmatrix` (`.trans` when the stored inner dim is not K for a / is N for b).
Every register of every layout is found by its compile-time coordinate (`reg_coord`), so the MMA loop below
only needs the fragment shapes of the PTX ISA:

  a (m16 x k): 4 words; word j covers rows 8*(j&1) and cols 4*kw*(j>>1) + 0..kw-1 (per thread: group/thread
               offsets come from the lane bases); b (k x n8): 2 words at k rows 4*kw*j + 0..kw-1;
  c (m16 x n8): c0,c1 at row g, cols 2t, 2t+1; c2,c3 at row g+8 (f16 accumulators: two .f16x2 words).
"""
from __future__ import annotations

import llvmlite.ir as ir

from ..passes.pipeline import SMEM_MAX, mma_slot_swizzle, slot_row_pad
from ..passes.layouts import (BlockedLayout, DotOperandLayout, LinearLayout, MmaLayout, default_blocked, fill_blocked,
                              linear)
from ..passes.wgmma_loops import partial_accumulation, register_a_applies
from . import common as C
from . import tma as _tma
from .common import Tile, emits, error, shuffle


def _index(ll):
    return {ll.reg_coord(r): r for r in range(ll.num_regs)}


def _or(a, b):
    return tuple(x | y for x, y in zip(a, b))


def _at(rank, m, n, batch=0):
    return ((batch,) if rank == 3 else ()) + (m, n)


def _asm(e, text, cons, rtype, args):
    fty = ir.FunctionType(rtype, [a.type for a in args])
    return e.b.call(ir.InlineAsm(fty, text, cons), args)


def _pack(e, vals):
    """Scalars (16-bit floats, i8, or one f32) -> one i32 word (first value in the low bits)."""
    if len(vals) == 1:
        return e.b.bitcast(vals[0], C.I32)
    vt = ir.VectorType(vals[0].type, len(vals))
    v = ir.Constant(vt, ir.Undefined)
    for i, x in enumerate(vals):
        v = e.b.insert_element(v, x, e.i32(i))
    return e.b.bitcast(v, C.I32)


def _tf32_split(e, xs):
    """tf32x3's operand split of the f32 values xs: (bigs, smalls), big = tf32(x) and small = tf32(x - big), 32-bit
    patterns (every big made before the smalls)."""
    big = [_tf32(e, x) for x in xs]
    return big, [_tf32(e, e.b.fsub(x, e.b.bitcast(g, C.F32))) for x, g in zip(xs, big)]


def _tf32(e, x):
    """Round an f32 to tf32 (ties away from zero, like the interpreter); the result stays a 32-bit pattern."""
    return _asm(e, "cvt.rna.tf32.f32 $0, $1;", "=r,f", C.I32, [x])


_MMA = {  # (input class, acc class) -> (shape, ptx types, k width)
    ("f16", "f32"): ("m16n8k16", "f32.f16.f16.f32"),
    ("bf16", "f32"): ("m16n8k16", "f32.bf16.bf16.f32"),
    ("f16", "f16"): ("m16n8k16", "f16.f16.f16.f16"),
    ("tf32", "f32"): ("m16n8k8", "f32.tf32.tf32.f32"),
    # int8: the sum saturates to int32's range instead of wrapping (.satfinite, as Triton's int8 dots)
    ("s8", "s32"): ("m16n8k32", "satfinite.s32.s8.s8.s32"),
    ("u8", "s32"): ("m16n8k32", "satfinite.s32.u8.u8.s32"),
    # fp64 (sm_90+): its m16n8k8 fragments are tf32's, one double a register
    ("f64", "f64"): ("m16n8k8", "f64.f64.f64.f64"),
}


def _classes(op):
    a = op.operands[0].type.element
    r = op.result.type.element
    if a.kind == "float":
        ic = {16: "bf16" if a.name == "bfloat16" else "f16", 32: "tf32", 64: "f64"}[a.bits]
    else:
        ic = "s8" if a.kind == "int" else "u8"
    rc = {"float32": "f32", "float16": "f16", "float64": "f64"}.get(r.name, "s32")
    return ic, rc


def _mma(e, ic, rc, awords, bwords, cregs):
    shape, types = _MMA[(ic, rc)]
    if rc == "f16":  # two .f16x2 accumulator words
        text = (f"mma.sync.aligned.{shape}.row.col.{types} {{$0,$1}}, {{$2,$3,$4,$5}}, {{$6,$7}}, {{$8,$9}};")
        cons = "=r,=r,r,r,r,r,r,r,0,1"
        cw = [_pack(e, cregs[0:2]), _pack(e, cregs[2:4])]
        rt = ir.LiteralStructType([C.I32, C.I32])
        r = _asm(e, text, cons, rt, awords + bwords + cw)
        out = []
        for i in range(2):
            v = e.b.bitcast(e.b.extract_value(r, i), ir.VectorType(C.F16, 2))
            out += [e.b.extract_element(v, e.i32(0)), e.b.extract_element(v, e.i32(1))]
        return out
    t = {"f32": C.F32, "f64": C.F64}.get(rc, C.I32)
    k = {"f32": "f", "f64": "d"}.get(rc, "r")
    text = (f"mma.sync.aligned.{shape}.row.col.{types} {{$0,$1,$2,$3}}, {{$4,$5,$6,$7}}, {{$8,$9}}, "
            "{$10,$11,$12,$13};")
    cons = ",".join([f"={k}"] * 4 + ["d" if rc == "f64" else "r"] * 6 + ["0", "1", "2", "3"])
    r = _asm(e, text, cons, ir.LiteralStructType([t] * 4), awords + bwords + list(cregs))
    return [e.b.extract_value(r, i) for i in range(4)]


@emits("dot")
def _e_dot(e, op):
    lay = op.attrs["_layouts"][0]
    a, b, c = (e.get(v) for v in op.operands)
    ll = e.result_ll(op)
    if not isinstance(c, Tile):
        c = Tile(ll, [c] * ll.num_regs)
    if isinstance(lay, MmaLayout) and lay.version == 3:
        e.put(op.result, _dot_wgmma(e, op, a, b, c, ll, lay), ll)
    elif isinstance(lay, MmaLayout):
        # operands in a copy ring's slot (passes/pipeline.py): ldmatrix from a swizzled slot (16-bit), shared
        # loads from a padded one (wider elements)
        a, b = (_slot_operand(e, x.st, v) if isinstance(x, SmemOperand) else x
                for x, v in zip((a, b), op.operands[:2]))
        e.put(op.result, _dot_mma(e, op, a, b, c, ll), ll)
    else:
        # operands in a copy ring's slot (passes/pipeline.py): vector shared loads straight into the operand layouts
        a, b = (Tile(e.layout_of(v), load_swizzled(e, x.st, e.layout_of(v), C.lty(v.type.element)))
                if isinstance(x, SmemOperand) else x for x, v in zip((a, b), op.operands[:2]))
        e.put(op.result, _dot_fma(e, op, a, b, c, ll), ll)


def _slot_operand(e, st, v):
    """An mma.sync operand read from a ring slot into its dot-operand layout."""
    ll, etype = e.layout_of(v), C.lty(v.type.element)
    if st.pad or st.plain:
        return Tile(ll, load_swizzled(e, st, ll, etype))
    return Tile(ll, load_operand(e, st, ll, v.owner.attrs["_layouts"][v.index], etype, pair_k=True))


def _dot_mma(e, op, a, b, c, ll):
    rank = len(ll.shape)
    K = op.operands[0].type.shape[-1]
    ic, rc = _classes(op)
    kw = {"f16": 2, "bf16": 2, "tf32": 1, "f64": 1, "s8": 4, "u8": 4}[ic]
    ksz = 8 * kw
    prec = op.attrs.get("input_precision", "tf32")
    ai, bi = _index(a.ll), _index(b.ll)
    regs = list(c.regs)
    if rc != "f16" and c.regs and c.regs[0].type != {"f32": C.F32, "f64": C.F64}.get(rc, C.I32):
        raise error(f"dot accumulator type {c.regs[0].type} (compiler bug)", op.loc)

    def word(tile, idx, base, offs):
        vals = [tile.regs[idx[_or(base, o)]] for o in offs]
        if ic == "f64":
            return vals[0]
        if ic == "tf32":
            return _tf32(e, vals[0]) if prec != "tf32x3" else vals[0]
        return _pack(e, vals)

    def split(w):  # tf32x3: big = tf32(x), small = tf32(x - big)
        (big,), (small,) = _tf32_split(e, [w])
        return big, small

    if ic == "tf32" and prec in BF16_SPLIT_PRODUCTS:
        return _dot_mma_bf16_split(e, op, a, b, c, ll, prec)
    for r0 in range(0, ll.num_regs, 4):
        anchor = ll.reg_coord(r0)
        bat = anchor[0] if rank == 3 else 0
        m0, n0 = anchor[-2], anchor[-1]
        acc = regs[r0:r0 + 4]
        for k0 in range(0, K, ksz):
            aw = [word(a, ai, _at(rank, m0 + 8 * (j & 1), k0 + 4 * kw * (j >> 1), bat),
                       [_at(rank, 0, i) for i in range(kw)]) for j in range(4)]
            bw = [word(b, bi, _at(rank, k0 + 4 * kw * j, n0, bat), [_at(rank, i, 0) for i in range(kw)])
                  for j in range(2)]
            if ic == "tf32" and prec == "tf32x3":
                asp = [split(w) for w in aw]
                bsp = [split(w) for w in bw]
                acc = _mma(e, ic, rc, [s for _, s in asp], [x for x, _ in bsp], acc)
                acc = _mma(e, ic, rc, [x for x, _ in asp], [s for _, s in bsp], acc)
                acc = _mma(e, ic, rc, [x for x, _ in asp], [x for x, _ in bsp], acc)
            else:
                acc = _mma(e, ic, rc, aw, bw, acc)
        regs[r0:r0 + 4] = acc
    return regs


# (i, j): a's part i times b's part j (0 hi, 1 mid, 2 lo): the partial products summed before hi*hi, smallest
# first (the interpreter's _BF16_SPLIT_PRODUCTS is the same list)
BF16_SPLIT_PRODUCTS = {"bf16x3": ((1, 0), (0, 1)),
                       "bf16x6": ((1, 1), (2, 0), (0, 2), (1, 0), (0, 1))}


def _bf16_split(e, lo, hi, n):
    """Two f32 values -> n bf16x2 words: hi parts, then the parts of what is left (x - part is exact in f32).
    `lo` goes to each word's low half."""
    words = []
    asm = ir.InlineAsm(ir.FunctionType(C.I32, [C.F32, C.F32]), "cvt.rn.bf16x2.f32 $0, $1, $2;", "=r,f,f")
    for i in range(n):
        w = e.b.call(asm, [hi, lo])  # $1 -> the upper half, $2 -> the lower
        words.append(w)
        if i + 1 < n:
            lo = e.b.fsub(lo, e.b.bitcast(e.b.shl(w, e.i32(16)), C.F32))
            hi = e.b.fsub(hi, e.b.bitcast(e.b.and_(w, e.i32(-65536)), C.F32))
    return words


def _dot_mma_bf16_split(e, op, a, b, c, ll, prec):
    """float32 dot as sums of bf16 tensor-core products (m16n8k16): each operand split into 2 (bf16x3) or 3
    (bf16x6) bf16 parts, the cross products of BF16_SPLIT_PRODUCTS accumulated from zero, NaN there replaced by
    0, then hi*hi on top, then the accumulator added.

    The operands arrive in the tf32 operand layout (one f32 per register). A k16 block is two k8 blocks of it: a
    thread holds A[g, t], A[g, t+4] (rows g and g+8) of each and B[t, g], B[t+4, g]; the bf16 instruction's slots
    2t, 2t+1 (2t+8, 2t+9) are given k = t, t+4 (t+8, t+12) of the block, the same permutation of k for A and B,
    so the sum over k is unchanged."""
    rank = len(ll.shape)
    K = op.operands[0].type.shape[-1]
    if K % 16:
        raise error(f"input_precision={prec!r} needs K a multiple of 16, got {K}", op.loc)
    pairs = BF16_SPLIT_PRODUCTS[prec]
    nparts = 1 + max(max(p) for p in pairs)
    ai, bi = _index(a.ll), _index(b.ll)
    zero = ir.Constant(C.F32, 0.0)

    def v(tile, idx, m, n, bat):
        return tile.regs[idx[_at(rank, m, n, bat)]]

    out = list(c.regs)
    for r0 in range(0, ll.num_regs, 4):
        anchor = ll.reg_coord(r0)
        bat = anchor[0] if rank == 3 else 0
        m0, n0 = anchor[-2], anchor[-1]
        aw, bw = [], []  # per k16 block: [part][word]
        for k0 in range(0, K, 16):
            pa = [_bf16_split(e, v(a, ai, m0 + 8 * (j & 1), k0 + 8 * h, bat),
                              v(a, ai, m0 + 8 * (j & 1), k0 + 8 * h + 4, bat), nparts)
                  for h in range(2) for j in range(2)]
            pb = [_bf16_split(e, v(b, bi, k0 + 8 * h, n0, bat), v(b, bi, k0 + 8 * h + 4, n0, bat), nparts)
                  for h in range(2)]
            aw.append([[w[p] for w in pa] for p in range(nparts)])
            bw.append([[w[p] for w in pb] for p in range(nparts)])
        acc = [zero] * 4
        for i, j in pairs:
            for blk in range(len(aw)):
                acc = _mma(e, "bf16", "f32", aw[blk][i], bw[blk][j], acc)
        acc = [e.b.select(e.b.fcmp_unordered("uno", x, x), zero, x) for x in acc]
        for blk in range(len(aw)):
            acc = _mma(e, "bf16", "f32", aw[blk][0], bw[blk][0], acc)
        out[r0:r0 + 4] = [e.b.fadd(x, y) for x, y in zip(acc, c.regs[r0:r0 + 4])]
    return out


def _dot_fma(e, op, a, b, c, ll):
    rank = len(ll.shape)
    K = op.operands[0].type.shape[-1]
    ai, bi = _index(a.ll), _index(b.ll)
    t = c.regs[0].type
    isf = not isinstance(t, ir.IntType)
    fma = e.intrinsic(f"llvm.fma.{'f32' if t == C.F32 else 'f64'}", t, [t, t, t]) if isf else None
    sat = e.intrinsic("llvm.sadd.sat.i32", t, [t, t]) if not isf else None  # saturating, as the mma's .satfinite
    signed = op.operands[0].type.element.kind == "int"

    def widen(v):  # int8 products accumulate exactly in int32
        if isf or v.type == t:
            return v
        return e.b.sext(v, t) if signed else e.b.zext(v, t)
    # k outermost: each step reads one column of a and one row of b, which are dead after it, so the operands
    # live in registers one k at a time (with k innermost every operand stayed live across all outputs: 64x64x32
    # w4 fp32 took 255 registers and 892 bytes of spills). Each accumulator still adds its products in k order.
    coords = [ll.reg_coord(r) for r in range(ll.num_regs)]
    out = list(c.regs)
    for k in range(K):
        for r, co in enumerate(coords):
            x = widen(a.regs[ai[co[:-1] + (k,)]])
            y = widen(b.regs[bi[co[:-2] + (k, co[-1])]])
            out[r] = e.b.call(fma, [x, y, out[r]]) if isf else e.b.call(sat, [e.b.mul(x, y), out[r]])
    return out


# ---- blocked -> shared (swizzled) -> ldmatrix -> dot operand ----------------------------------------------------

def ldmatrix_applies(dst_lay, elem_bits) -> bool:
    """The ldmatrix path serves 16-bit operands of an mma.sync dot."""
    return (isinstance(dst_lay, DotOperandLayout) and isinstance(dst_lay.parent, MmaLayout)
            and dst_lay.parent.version == 2 and elem_bits == 16)


def swizzle_inner_ok(ll) -> bool:
    """The source of a conversion to an mma.sync operand runs along one of the two matrix dims (a SwizzledTile's
    rows and columns), not along a batch dim (a permuted batched accumulator's registers can): else the generic
    conversion."""
    return len(ll.shape) < 3 or _inner_dim(ll) != 0


def _inner_dim(ll):
    """The dim along which the source's first register bits run (its contiguous dim), else the last."""
    if ll.reg:
        b0 = ll.reg[0]
        dims = [d for d, x in enumerate(b0) if x]
        if len(dims) == 1 and b0[dims[0]] == 1:
            return dims[0]
    return len(ll.shape) - 1


class SwizzledTile:
    """A [batch?, rows, inner] tile of 16-bit elements in shared memory, stored as column blocks of at most 128
    bytes of the inner dim; within a block, rows of `row_bytes` whose 16-byte chunks are XOR-swizzled by the row
    (Triton's perPhase/maxPhase). That is the NVMMA / wgmma canonical swizzled layout (128B, 64B or 32B mode by
    the block width) when the tile starts on a 1024-byte boundary, and it lets the 8 rows one ldmatrix reads hit
    8 distinct bank groups while vector stores of rows stay 16 bytes wide."""

    def __init__(self, shape, inner, ebytes=2, base=0, pad=0):
        self.rank = len(shape)
        self.inner = inner
        self.outer = (2 * self.rank - 3) - inner  # the other of the two matrix dims
        self.rows = shape[self.outer]
        self.cols = shape[inner]
        self.batch = shape[0] if self.rank == 3 else 1
        self.eb = ebytes
        self.block_cols = min(self.cols, 128 // ebytes)
        self.row_bytes = self.block_cols * ebytes
        self.block_bytes = self.rows * self.row_bytes
        self.chunks = self.row_bytes // 16
        self.per_phase = max(1, 128 // self.row_bytes)
        self.max_phase = max(1, min(self.chunks, 8 // self.per_phase))
        # `pad` bytes after each row instead of the swizzle (the slots of an FMA dot's copy ring, read by vector loads
        # whose addresses then differ by constants: rows an odd number of 16-byte chunks apart hit distinct banks)
        self.pad = pad
        if pad:
            self.per_phase = self.max_phase = 1
            self.row_bytes += pad
            self.block_bytes = self.rows * self.row_bytes
        self.shift = 0  # an 8-byte mma.sync slot (mma_slot_swizzled): the phase XORs chunks << shift (mma_slot_swizzle)
        self.plain = False  # read by plain shared loads though unpadded (an 8-byte mma.sync slot)
        self.base = base
        self.dyn = None  # runtime byte offset (ring-buffer stage), an i32 value or None
        self.absolute = False  # offsets count from the start of shared memory (a copy ring's slots)
        self.nbytes = self.batch * -(-self.cols // self.block_cols) * self.block_bytes

    def transposed(self):
        """The same bytes as the tile of the matrix dims swapped: the stored rows stay the stored rows, the inner
        (contiguous) dim becomes the other matrix dim of the view."""
        shape = ([self.batch] if self.rank == 3 else []) + [0, 0]
        inner = (2 * self.rank - 3) - self.inner
        shape[inner], shape[self.inner] = self.cols, self.rows
        t = SwizzledTile(tuple(shape), inner, self.eb, base=self.base, pad=self.pad)
        t.dyn, t.absolute = self.dyn, self.absolute
        if self.plain:
            t.plain, t.per_phase, t.max_phase, t.shift = True, self.per_phase, self.max_phase, self.shift
        return t

    @property
    def swizzle_mode(self) -> int:
        """wgmma descriptor swizzle field: 1 = 128B, 2 = 64B, 3 = 32B."""
        return {128: 1, 64: 2, 32: 3}[self.row_bytes]

    def phase(self, e, row):
        p = e.b.lshr(row, e.i32(self.per_phase.bit_length() - 1)) if self.per_phase > 1 else row
        p = e.b.and_(p, e.i32(self.max_phase - 1))
        return e.b.shl(p, e.i32(self.shift)) if self.shift else p

    def offset(self, e, bat, row, col, phase=None):
        """Byte offset of element (bat, row, col) (the XOR touches chunk bits only)."""
        if phase is None:
            phase = self.phase(e, row)
        epc = 16 // self.eb
        lg = lambda n: n.bit_length() - 1  # noqa: E731
        blk = e.b.lshr(col, e.i32(lg(self.block_cols)))
        incol = e.b.and_(col, e.i32(self.block_cols - 1))
        chunk = e.b.lshr(incol, e.i32(lg(epc)))
        within = e.b.and_(incol, e.i32(epc - 1))
        sw = e.b.xor(chunk, phase)
        off = e.b.add(e.b.mul(row, e.i32(self.row_bytes)), e.b.shl(sw, e.i32(4)))
        off = e.b.add(off, e.b.mul(within, e.i32(self.eb)))
        if self.cols > self.block_cols:
            off = e.b.add(off, e.b.mul(blk, e.i32(self.block_bytes)))
        if self.rank == 3:
            off = e.b.add(off, e.b.mul(bat, e.i32(self.rows * self.cols * self.eb)))
        if self.dyn is not None:
            off = e.b.add(off, self.dyn)
        return e.b.add(off, e.i32(self.base)) if self.base else off

    def py_offset(self, row, col, bat=0):
        """`offset` for compile-time ints, without the runtime part (dyn) and the base."""
        epc = 16 // self.eb
        blk, incol = divmod(col, self.block_cols)
        chunk, within = divmod(incol, epc)
        phase = ((row // self.per_phase) & (self.max_phase - 1)) << self.shift
        off = row * self.row_bytes + ((chunk ^ phase) << 4) + within * self.eb + blk * self.block_bytes
        return off + bat * self.rows * self.cols * self.eb

    def const_offset(self, row, col):
        """Byte offset of (row, col) for a row that is a multiple of 8 and a col at a chunk-0 position of its
        block, where the swizzle is the identity (wgmma descriptor start addresses)."""
        blk, incol = divmod(col, self.block_cols)
        return self.base + blk * self.block_bytes + row * self.row_bytes + incol * self.eb


def _run_width(st, ll):
    """How many of ll's registers run along SwizzledTile st's inner dim from each multiple of it (up to 16 bytes)."""
    d = st.inner
    v = 1
    while (v.bit_length() - 1) < len(ll.reg) and ll.reg[v.bit_length() - 1] == tuple(
            v if i == d else 0 for i in range(len(ll.shape))) and v * st.eb < 16:
        v *= 2
    return v


def _swizzled_runs(e, st, ll, v):
    """(first register, shared-memory pointer) of each run of v registers of ll in SwizzledTile st, one at a time
    (each address is emitted right before its access)."""
    tc = e.thread_coords(ll)
    for r0 in range(0, ll.num_regs, v):
        rc = ll.reg_coord(r0)

        def co(dim):
            t = tc[dim]
            return e.i32(rc[dim]) if t is None else (e.b.add(t, e.i32(rc[dim])) if rc[dim] else t)
        bat = co(0) if st.rank == 3 else None
        yield r0, e.smem_ptr(st.offset(e, bat, co(st.outer), co(st.inner)), absolute=st.absolute)


def store_swizzled(e, x, st):
    """Write Tile x into SwizzledTile st with vector stores of the registers that run along the inner dim."""
    v = _run_width(st, x.ll)
    for r0, ptr in _swizzled_runs(e, st, x.ll, v):
        _store_vector(e, x.regs[r0:r0 + v], ptr, v * st.eb)


def _inner_run_bits(st, ll):
    """The register bits that step along st's inner dim by 1, 2, 4... (at most 16 bytes), wherever they sit among the
    register bits (an FMA operand holds whole K columns first, its N run after them)."""
    bits = []
    unit = lambda n: tuple(n if i == st.inner else 0 for i in range(len(ll.shape)))  # noqa: E731
    while (1 << len(bits)) * st.eb < 16 and unit(1 << len(bits)) in ll.reg:
        bits.append(ll.reg.index(unit(1 << len(bits))))
    return bits


def load_swizzled(e, st, ll, etype):
    """Read SwizzledTile st into the registers of layout ll (the mirror of store_swizzled): one vector load per run
    of registers along the tile's inner dim (up to 16 bytes). From a padded tile (an FMA dot's ring slot) the run's
    registers may be any register bits (_inner_run_bits), and every run sits at a constant distance from the first
    in every thread (_constant_deltas): one address per thread, then immediates."""
    if (st.pad or st.plain) and st.rank == 2:
        bits = _inner_run_bits(st, ll)
        if bits:
            return _load_padded(e, st, ll, etype, bits)
    v = _run_width(st, ll)
    regs = [None] * ll.num_regs
    for r0, ptr in _swizzled_runs(e, st, ll, v):
        if v == 1:
            regs[r0] = e.b.load(ptr, typ=etype, align=st.eb)
        else:
            vec = e.b.load(ptr, typ=ir.VectorType(etype, v), align=v * st.eb)
            regs[r0:r0 + v] = [e.b.extract_element(vec, e.i32(i)) for i in range(v)]
    return regs


def padded_read_plan(st, ll, bits, num_warps):
    """(starts, members, deltas) of reading layout ll from padded tile st in vectors along the register bits `bits`
    (_inner_run_bits): each vector's first register, its registers in address order, and each first register's
    byte distance from the first one's, the same in every thread (None where it is not)."""
    v = 1 << len(bits)
    mask = sum(1 << b for b in bits)
    starts = [r for r in range(ll.num_regs) if not r & mask]
    members = {r0: [r0 | sum(((i >> j) & 1) << b for j, b in enumerate(bits)) for i in range(v)] for r0 in starts}
    return starts, members, _constant_deltas(st, ll, st.inner, starts, num_warps)


def _load_padded(e, st, ll, etype, bits):
    v = 1 << len(bits)
    starts, members, deltas = padded_read_plan(st, ll, bits, e.nw)

    def address(r0):
        return st.offset(e, None, e.coord(ll, r0, st.outer), e.coord(ll, r0, st.inner))
    first = address(starts[0]) if deltas is not None else None
    regs = [None] * ll.num_regs
    for r0 in starts:
        off = (e.b.add(first, e.i32(deltas[r0])) if deltas[r0] else first) if deltas is not None else address(r0)
        ptr = e.smem_ptr(off, absolute=st.absolute)
        if v == 1:
            regs[r0] = e.b.load(ptr, typ=etype, align=st.eb)
            continue
        vec = e.b.load(ptr, typ=ir.VectorType(etype, v), align=v * st.eb)
        for i, r in enumerate(members[r0]):
            regs[r] = e.b.extract_element(vec, e.i32(i))
    return regs


def _store_vector(e, vals, ptr, align):
    """Store scalars vals at ptr as one vector (a plain store for one value)."""
    if len(vals) == 1:
        e.b.store(vals[0], ptr)
        return
    vec = ir.Constant(ir.VectorType(vals[0].type, len(vals)), ir.Undefined)
    for i, val in enumerate(vals):
        vec = e.b.insert_element(vec, val, e.i32(i))
    e.b.store(vec, ptr, align=align)


def _ldmatrix(e, n, trans, off, absolute=False):
    # ldmatrix takes a shared-window address: tf_smem's own address plus the offset (the dynamic array does not
    # start at 0 of the window: sm_90 reserves the first KiB).
    addr = e.b.ptrtoint(e.smem_ptr(off, absolute=absolute), C.I32)
    text = f"ldmatrix.sync.aligned.m8n8.x{n}{'.trans' if trans else ''}.shared.b16 " + \
        ("{$0,$1,$2,$3}, [$4];" if n == 4 else "{$0,$1}, [$2];")
    rt = ir.LiteralStructType([C.I32] * n)
    r = _asm(e, text, ",".join(["=r"] * n + ["r"]), rt, [addr])
    return [e.b.extract_value(r, i) for i in range(n)]


def load_operand(e, st, dst_ll, lay, etype, pair_k=False):
    """Read the fragments of dot-operand layout `lay` (dst_ll its linear form) from SwizzledTile st (`pair_k`: a copy
    ring's slot, whose b operand may be read two k16 steps an ldmatrix)."""
    rank = len(dst_ll.shape)
    dm, dn = rank - 2, rank - 1
    op_idx = lay.op_idx
    kdim = dn if op_idx == 0 else dm
    trans = (st.inner != kdim)
    lane = e.lane
    t8 = e.b.and_(lane, e.i32(7))
    q = e.b.lshr(lane, e.i32(3))  # which of the (up to) 4 matrices this lane addresses
    q0 = e.b.and_(q, e.i32(1))
    q1 = e.b.and_(e.b.lshr(q, e.i32(1)), e.i32(1))
    wpart = [e._bits(e.warp, dst_ll.warp, dd) for dd in range(rank)]
    phase = st.phase(e, t8)
    idx = _index(dst_ll)
    regs = [None] * dst_ll.num_regs
    shape = dst_ll.shape
    M_or_N = shape[dm] if op_idx == 0 else shape[dn]
    K = shape[dn] if op_idx == 0 else shape[dm]

    def wadd(val, dd):
        return val if wpart[dd] is None else e.b.add(val, wpart[dd])

    def put(words, coords_per_word):
        for w, cos in zip(words, coords_per_word):
            v = e.b.bitcast(w, ir.VectorType(etype, 2))
            for i, co in enumerate(cos):
                regs[idx[co]] = e.b.extract_element(v, e.i32(i))

    bats = sorted({dst_ll.reg_coord(r)[0] for r in range(dst_ll.num_regs)}) if rank == 3 else [0]
    # rows of the mn dim this thread's registers cover (reg part only; warp part added below)
    mn_dim = dm if op_idx == 0 else dn
    mn_starts = sorted({dst_ll.reg_coord(r)[mn_dim] & ~(16 - 1 if op_idx == 0 else 8 - 1)
                        for r in range(dst_ll.num_regs)})
    # b from a ring slot read two k16 steps an ldmatrix (x4: k rows k0 .. k0 + 31 of one n8 tile) where K allows,
    # as Triton's ring reads it. Measured with the ring's num_stages - 1 slots (H100, 2026-12-07, the A/Bs
    # `ldsm_x4b,sync_ring`, benchmarks/2026-12-07e-h100/abin2.md, 3 rounds beside Triton): 0.985 of the time over the
    # 10 corpus kernels they change, the decode GEMM at 16 rows 0.961, the two-warp 64x64 matmul 0.951, none slower by
    # over 2%. A b converted into its operand layout outside a ring keeps x2: the batched GEMM with a broadcast weight
    # took 1.025 with x4 (abin1.md)
    kstep = 32 if pair_k and op_idx == 1 and K % 32 == 0 else 16
    for bat in bats:
        bv = None
        if rank == 3:
            bv = e.i32(bat) if wpart[0] is None else e.b.add(wpart[0], e.i32(bat))
        for mn0 in mn_starts:
            for k0 in range(0, K, 16 if op_idx == 0 else kstep):
                if op_idx == 0:
                    # 4 matrices: j = q0 + 2*q1 -> rows m0 + 8*q0, cols k0 + 8*q1
                    mrow = wadd(e.b.add(e.b.add(e.i32(mn0), e.b.shl(q0, e.i32(3))), t8), dm)
                    kcol = e.b.add(e.i32(k0), e.b.shl(q1, e.i32(3)))
                    if not trans:
                        off = st.offset(e, bv, mrow, kcol, phase)
                    else:  # stored rows are k: lane addresses row k0 + 8*q1 + t8 at col m0 + 8*q0
                        krow = e.b.add(e.b.add(e.i32(k0), e.b.shl(q1, e.i32(3))), t8)
                        mcol = wadd(e.b.add(e.i32(mn0), e.b.shl(q0, e.i32(3))), dm)
                        off = st.offset(e, bv, krow, mcol, phase)
                    words = _ldmatrix(e, 4, trans, off, st.absolute)
                    cos = [[_at(rank, mn0 + 8 * (j & 1), k0 + 8 * (j >> 1) + i, bat) for i in range(2)]
                           for j in range(4)]
                    put(words, cos)
                elif kstep == 32:
                    # 4 matrices: j = q -> k rows k0 + 8*j, cols n0 .. n0+7 (two k16 steps)
                    kq = e.b.shl(q, e.i32(3))
                    if trans:  # stored rows are k (N inner)
                        krow = e.b.add(e.b.add(e.i32(k0), kq), t8)
                        off = st.offset(e, bv, krow, wadd(e.i32(mn0), dn), phase)
                    else:  # stored rows are n (K inner)
                        nrow = wadd(e.b.add(e.i32(mn0), t8), dn)
                        off = st.offset(e, bv, nrow, e.b.add(e.i32(k0), kq), phase)
                    words = _ldmatrix(e, 4, trans, off, st.absolute)
                    cos = [[_at(rank, k0 + 8 * j + i, mn0, bat) for i in range(2)] for j in range(4)]
                    put(words, cos)
                else:
                    # 2 matrices: j = q0 -> k rows k0 + 8*j, cols n0 .. n0+7
                    if trans:  # stored rows are k (N inner)
                        krow = e.b.add(e.b.add(e.i32(k0), e.b.shl(q0, e.i32(3))), t8)
                        ncol = wadd(e.i32(mn0), dn)
                        off = st.offset(e, bv, krow, ncol, phase)
                    else:  # stored rows are n (K inner)
                        nrow = wadd(e.b.add(e.i32(mn0), t8), dn)
                        kcol = e.b.add(e.i32(k0), e.b.shl(q0, e.i32(3)))
                        off = st.offset(e, bv, nrow, kcol, phase)
                    words = _ldmatrix(e, 2, trans, off, st.absolute)
                    cos = [[_at(rank, k0 + 8 * j + i, mn0, bat) for i in range(2)] for j in range(2)]
                    put(words, cos)
    assert all(r is not None for r in regs), "ldmatrix left registers unfilled (compiler bug)"
    del M_or_N
    return regs


def to_dot_operand(e, x, dst_ll, lay):
    """convert_layout into an mma.sync operand layout: swizzled shared tile + ldmatrix."""
    etype = x.regs[0].type
    st = SwizzledTile(dst_ll.shape, _inner_dim(x.ll))
    e.smem_begin(st.nbytes)
    store_swizzled(e, x, st)
    e.barrier()
    return Tile(dst_ll, load_operand(e, st, dst_ll, lay, etype))


# ---- Hopper warpgroup MMA (wgmma, sm_90a): operands in swizzled shared memory ----------------------------------

def _desc64(e, op) -> bool:
    """The wgmmas of `op` take 64-bit descriptors when it is a dot of a loop with several dots: attention's short
    QK and P.V chains, where the rebuilt descriptors stand between the wgmmas; measured on the H200 in three A/B
    runs, attention D=128 1.020-1.024, D=64 1.00, while the matmul loop's long n256 chains gained nothing,
    0.98-1.03 with bf16 4096^3 0.986-0.989 in both runs (docs/EXPERIMENTS.md, desc64)."""
    blk = op.block
    loop = getattr(blk, "parent", None)
    return getattr(loop, "kind", None) == "for" and sum(o.kind == "dot" for o in blk.ops) > 1


def _desc(e, st, row, col, kmajor, wide=False):
    """64-bit wgmma matrix descriptor of SwizzledTile st starting at (row, col) (compile-time ints).

    K-major (inner dim K): SBO = 8 rows; LBO unused (1). MN-major (inner dim M/N): LBO = the next block of
    block_cols MN elements, SBO = the next 8 K rows. Start addresses are the tile's own shared-window address
    plus the offset; the tile is 1024-byte aligned, so the base-offset field stays 0."""
    # The address field in 32-bit arithmetic: (window address of the tile's start + dynamic slot offset) >> 4,
    # plus the constant offset >> 4 (16-byte aligned). One base per slot and an add per k-step; computed from a
    # 64-bit pointer instead, every descriptor cost a 64-bit add, a 64-bit shift and a mask.
    # The shared window is under 256 KiB, so the 14-bit field needs no mask.
    c = st.const_offset(row, col)
    assert c % 16 == 0, c
    start = e.smem.ptrtoint(C.I32)  # a constant: tf_smem's window address
    if not st.absolute and e.smem_base:
        start = e.b.add(start, e.i32(e.smem_base))
    if st.dyn is not None:
        start = e.b.add(start, st.dyn)
    sbo = 8 * st.row_bytes
    lbo = 16 if kmajor else st.block_bytes
    hi = ((sbo >> 4) << 32) | (st.swizzle_mode << 62)
    if wide:
        # (_desc64) one 64-bit descriptor per tile and slot, and a 64-bit add
        # of the constant offset per k-step (the address field cannot carry: it stays under 2^14), so the wgmmas
        # of a chain take descriptors one uniform add apart instead of each rebuilding its high word
        base = e.b.or_(e.b.zext(e.b.add(e.b.lshr(start, e.i32(4)), e.i32((lbo >> 4) << 16)), C.I64),
                       ir.Constant(C.I64, hi))
        return e.b.add(base, ir.Constant(C.I64, c >> 4)) if c else base
    # the address (14 bits) and LBO (bits 16-29) do not overlap: one add sets both
    lo = e.b.add(e.b.lshr(start, e.i32(4)), e.i32((c >> 4) | ((lbo >> 4) << 16)))
    return e.b.or_(e.b.zext(lo, C.I64), ir.Constant(C.I64, hi))


def _asm_void(e, text):
    e.b.call(ir.InlineAsm(ir.FunctionType(C.VOID, []), text, "", side_effect=True), [])


def _wait_tied(e, regs, pending=0):
    """wgmma.wait_group `pending` with every accumulator register tied through it, so no use of a result can
    be scheduled before the wait. 16-bit accumulators (an fp16 one; loop-carried 16-bit registers travel two to a
    word too, codegen/llvm.py `_pack_plan`) are tied two to a word, the words the wgmma wrote: tied as halves, they
    are unpacked from its words before the wait, and a register of a wgmma read before its wait makes ptxas wait
    for every wgmma at once (C7517) or serialize the loop's (C7514: the fp16-accumulator matmul's four wgmmas a step
    each waited for, 1.03-1.04 of the time when only the carried registers were packed)."""
    if (regs and len(regs) % 2 == 0 and str(regs[0].type) in ("half", "bfloat", "i16")
            and all(x.type == regs[0].type for x in regs)):
        words = _wait_tied(e, [_pack(e, regs[i:i + 2]) for i in range(0, len(regs), 2)], pending)
        vt = ir.VectorType(regs[0].type, 2)
        out = []
        for w in words:
            v = e.b.bitcast(w, vt)
            out += [e.b.extract_element(v, e.i32(0)), e.b.extract_element(v, e.i32(1))]
        return out
    n = len(regs)
    types = [x.type for x in regs]
    cons = ",".join([f"={_REG_CONSTRAINT.get(str(t), 'r')}" for t in types] + [str(i) for i in range(n)])
    fty = ir.FunctionType(ir.LiteralStructType(types), types)
    r = e.b.call(ir.InlineAsm(fty, f"wgmma.wait_group.sync.aligned {pending};", cons, side_effect=True), regs)
    return [e.b.extract_value(r, i) for i in range(n)]


# inline-asm register constraint per LLVM type (accumulators tied through waits: f32, i32, f16 halves, f64)
_REG_CONSTRAINT = {"float": "f", "i32": "r", "half": "h", "double": "d"}


def _dot_wgmma(e, op, a, b, c, ll, lay):
    """Operands in shared memory already (a copy ring slot, or hoisted before the loop) are read in place; `a`
    in the accumulator layout of an earlier wgmma (attention's p) is read from registers; the others are
    written to swizzled scratch tiles first."""
    M, N = ll.shape
    K = op.operands[0].type.shape[-1]
    loop = _pipelined_loop(op)
    a = e.hoisted.get(op.operands[0].id, a)
    b = e.hoisted.get(op.operands[1].id, b)
    eb = _operand_bytes(op)
    reg_a = (isinstance(a, Tile) and eb != 4 and register_a_applies(a.ll, lay, M, K, e.nw)
             and (eb == 2 or K % 32 == 0) and op.result.type.element.name != "int32")
    if eb == 4:
        # tf32: wgmma reads 32-bit operands K-major only; one in shared memory the other way (none is today: no copy
        # ring or TMA takes 32-bit tiles, and hoist_operands stores them K-major) is read back into registers and
        # stored K-major to scratch below
        a, b = (Tile(_blocked_ll(e, x.st), load_swizzled(e, x.st, _blocked_ll(e, x.st), C.F32))
                if isinstance(x, SmemOperand) and x.st.inner != kd else x for x, kd in zip((a, b), (1, 0)))
    sta = a.st if isinstance(a, SmemOperand) else None
    stb = b.st if isinstance(b, SmemOperand) else None
    scratch = []
    if eb == 1 and stb is not None and stb.inner != 0:
        # an 8-bit b in its ring slot as loaded, N its inner dim (attention's V [keys, head dim] through a tensor
        # descriptor, a [K, N] int8 weight through pointers): wgmma reads 8-bit operands K-major only, so the slot
        # is read into registers and written transposed to scratch below (_transposing_tile)
        b = _transposing_tile(e, stb, K, N)
        stb = None
    # 8-bit and tf32 operands: wgmma reads them K-major only (b's tile is stored transposed, K its inner dim)
    x3 = eb == 4 and op.attrs.get("input_precision") == "tf32x3"  # (passes/layouts.py tf32_wgmma_applies)
    pairs = None
    if x3:
        # tf32x3: each operand as its tf32 part and the tf32 of its remainder (the mma.sync path's split), four
        # tiles in scratch; three products (small x big, big x small, big x big) in one wgmma group
        if not (isinstance(a, Tile) and isinstance(b, Tile)):
            raise error("a tf32x3 wgmma operand already in shared memory (compiler bug)", op.loc)
        parts, at = [], 0
        for x, shape, inner in ((a, (M, K), 1), (b, (K, N), 0)):
            for regs in _tf32_split(e, x.regs):
                st = SwizzledTile(shape, inner, eb, base=at)
                scratch.append((Tile(x.ll, regs), st))
                parts.append(st)
                at = (at + st.nbytes + 1023) // 1024 * 1024
        sta, stb = parts[0], parts[2]
        pairs = [(parts[1], parts[2]), (parts[0], parts[3]), (parts[0], parts[2])]
        a = b = None
    if isinstance(a, Tile) and not reg_a:
        sta = SwizzledTile((M, K), _inner_dim(a.ll) if eb == 2 else 1, eb)
        scratch.append((a, sta))
    if isinstance(b, Tile):
        base = (sta.nbytes + 1023) // 1024 * 1024 if scratch else 0
        stb = SwizzledTile((K, N), _inner_dim(b.ll) if eb == 2 else 0, eb, base=base)
        scratch.append((b, stb))
    if scratch:
        last = scratch[-1][1]
        stage = (last.base + last.nbytes + 1023) // 1024 * 1024
        if loop is not None and e.smem_base + 2 * stage > SMEM_MAX:
            # two stages do not fit in a block's shared memory (128x128x256 bfloat16 operands made in registers,
            # as dot_scaled's upcast makes them: 2 x 128 KiB): one stage, and each iteration's wgmma retired before
            # the next one writes it
            loop = None
        end = 2 * stage if loop is not None else stage
        relay = _relay_tiles(e, scratch, end) if eb == 4 else {}
        if loop is not None:
            # Accumulator carried by the K loop and used by nothing else: leave this iteration's wgmma in flight
            # (wait_group 1) while the next iteration loads its tiles, with two shared-memory stages alternating
            # by iteration parity; the loop's exit waits for the last one.
            it = _loop_iteration(e, loop)
            dyn = e.b.mul(e.b.and_(it, e.i32(1)), e.i32(stage))
            for _, st in scratch:
                st.dyn = dyn
        e.smem_begin(max([end] + [t.base + t.nbytes for t in relay.values()]))
        if relay:
            # tf32 tiles whose registers run along M or N: through a padded tile past the stages (no wgmma reads it)
            # into registers that run 4 along K, then 16-byte stores K-major
            scratch = [(_store_operand(e, x, relay[i]), st) if i in relay else (x, st)
                       for i, (x, st) in enumerate(scratch)]
            e.barrier()
            scratch = [(_relaid(e, relay[i], st.inner), st) if i in relay else (x, st)
                       for i, (x, st) in enumerate(scratch)]
        for x, st in scratch:
            _store_operand(e, x, st)
        # generic-proxy stores -> async-proxy reads (wgmma), then every thread's stores are in place
        _asm_void(e, "fence.proxy.async.shared::cta;")
        e.barrier()
    if scratch and defer_to_loop(e, op) is not None:
        raise error("a deferred wgmma with an operand in scratch shared memory (compiler bug)", op.loc)
    a_k = sta is None or sta.inner == 1
    b_k = stb.inner == 0
    return _wgmma_issue(e, op, sta, stb, a_k, b_k, c, ll, lay, loop, a if reg_a else None, pairs=pairs)


def _transposing_tile(e, st, K, N):
    """The 8-bit [K, N] tile of SwizzledTile st (N its inner dim) in registers, numbered for a K-major store: each
    thread reads blocks of kr rows x 4 bytes (one 32-bit load per row) and holds them with the registers running
    along K, so store_swizzled writes kr bytes of one column at once (kr = 16: 16 loads, 4 vector stores of 16
    bytes, the bytes regrouped by byte permutes) instead of one byte a store. A tile too small for 4 x 4 bytes a
    thread is read 16 bytes along N and stored byte by byte."""
    per = K * N // (32 * e.nw)
    if per < 16 or N < 4:
        bll = linear(default_blocked((K, N), 1, e.nw), (K, N), e.nw)
        return Tile(bll, load_swizzled(e, st, bll, C.I8))
    kr = min(16, per // 4, K)
    rows = linear(fill_blocked((K, N), (kr, 4), e.nw, (1, 0)), (K, N), e.nw)
    regs = load_swizzled(e, st, rows, C.I8)
    along_k = [b for b in rows.reg if b[0]]
    cols = LinearLayout(rows.shape, tuple(along_k + [b for b in rows.reg if not b[0]]), rows.lane, rows.warp)
    at = {rows.reg_coord(r): r for r in range(rows.num_regs)}
    return Tile(cols, [regs[at[cols.reg_coord(r)]] for r in range(cols.num_regs)])


def _operand_bytes(op) -> int:
    """Bytes per operand element of a wgmma dot: 2, 1 for fp8 (passes/fp8_dot.py) and 8-bit integers, 4 for tf32
    (passes/layouts.py tf32_wgmma_applies)."""
    return {8: 1, 32: 4}.get(op.operands[0].type.element.bits, 2)


def _blocked_ll(e, st):
    """The default blocked layout of SwizzledTile st's matrix, its registers along the stored inner dim."""
    shape = (st.rows, st.cols) if st.inner == 1 else (st.cols, st.rows)
    return linear(default_blocked(shape, st.eb, e.nw, order=(st.inner, 1 - st.inner)), shape, e.nw)


def _store_operand(e, x, st):
    """Write a wgmma operand tile into SwizzledTile st. float32 (tf32) values are rounded to tf32 first (cvt.rna,
    ties away from zero, as the mma.sync path and the interpreter round them): wgmma would otherwise drop their low
    13 bits. (Values already rounded are i32 bit patterns: _relaid's.) Storing them unrounded, as Triton's reach
    wgmma, was measured and lost (docs/EXPERIMENTS.md, tf32_trunc). Returns the tile stored."""
    if st.eb == 4 and x.regs and x.regs[0].type == C.F32:
        x = Tile(x.ll, [_tf32(e, r) for r in x.regs])
    store_swizzled(e, x, st)
    return x


def _relay_tiles(e, scratch, at):
    """{index in scratch: padded SwizzledTile} for the tf32 scratch operands whose registers run along M or N (a
    [K, N] b loaded row-major), placed from byte `at` on (past the stages, which a wgmma in flight may read), where
    they fit. Stored K-major straight from such registers, each 4-byte store of a warp hit 2 to 4 banks (lanes along
    N, one K): 16 wavefronts a store where the relay takes 1 (its stores and loads run along N) and its K-major
    stores are 16 bytes wide."""
    out = {}
    for i, (x, st) in enumerate(scratch):
        src = 1 - st.inner
        if _inner_dim(x.ll) != src or x.ll.num_regs < 4 or st.cols < 4:
            continue
        shape = x.ll.shape
        t = SwizzledTile(shape, src, 4, base=at, pad=slot_row_pad(min(shape[src], 32) * 4))
        out[i] = t
        at = (at + t.nbytes + 1023) // 1024 * 1024
    if out and e.smem_base + at > SMEM_MAX:
        return {}
    return out


def _relaid(e, tmp, kdim):
    """The tile of padded SwizzledTile tmp (K its outer dim, kdim its index) read into registers that run 4 along K
    (lanes along the inner dim, so each load of a warp reads consecutive words): i32 bit patterns."""
    shape = (tmp.rows, tmp.cols) if tmp.inner == 1 else (tmp.cols, tmp.rows)
    spt = [1, 1]
    spt[kdim] = min(4, shape[kdim])
    ll = linear(fill_blocked(shape, spt, e.nw, (1 - kdim, kdim)), shape, e.nw)
    return Tile(ll, _load_padded(e, tmp, ll, C.I32, []))


_WGMMA_TYPE = {"float16": "f16", "bfloat16": "bf16", "float8e4nv": "e4m3", "float8e5": "e5m2", "int8": "s8",
               "uint8": "u8", "float32": "tf32"}


def hoist_operands(e, loop):
    """Before a loop: write the loop-invariant operands of its wgmma dots (e.g. attention's q) to shared memory
    once, for the whole loop (e.hoisted), instead of once per iteration."""
    def dots(block):
        # the dots under an `if` of the loop body too (not a nested loop's): block-sparse attention's q was written
        # to shared memory again on every block its layout table enables, its 16 registers held across the loop
        # (132 registers, 3 blocks an SM; 128 and 4 hoisted, as Triton's: 0.876 of the time on the H200)
        for o in block.ops:
            if o.kind == "dot":
                yield o
            elif o.kind == "if":
                for blk in o.blocks:
                    yield from dots(blk)

    tiles = []
    base = e.smem_base
    off = 0
    for op in dots(loop.blocks[0]):
        lay = op.attrs["_layouts"][0]
        if not (isinstance(lay, MmaLayout) and lay.version == 3):
            continue
        M, N = op.result.type.shape
        K = op.operands[0].type.shape[-1]
        for i, v in enumerate(op.operands[:2]):
            x = e.env.get(v.id)
            if not isinstance(x, Tile) or v.id in e.hoisted or any(t[0] is v for t in tiles):
                continue
            eb = _operand_bytes(op)
            if i == 0 and eb == 2 and register_a_applies(x.ll, lay, M, K, e.nw):
                continue
            inner = _inner_dim(x.ll) if eb == 2 else 1 - i  # fp8, tf32: K-major (a: K inner, b: K rows inner)
            st = SwizzledTile((M, K) if i == 0 else (K, N), inner, eb, base=base + off)
            st.absolute = True
            off += (st.nbytes + 1023) // 1024 * 1024
            tiles.append((v, x, st))
    if not tiles:
        return
    e.smem_begin(off)
    for v, x, st in tiles:
        _store_operand(e, x, st)
        e.hoisted[v.id] = SmemOperand(st)
    _asm_void(e, "fence.proxy.async.shared::cta;")
    e.barrier()
    e.hoisted_by_loop[id(loop)] = (base, [v.id for v, _, _ in tiles])
    e.smem_base = base + off


def _wgmma_issue(e, op, sta, stb, a_k, b_k, c, ll, lay, loop, a_regs=None, pairs=None):
    """The wgmma instructions of one dot from swizzled tiles sta (or registers a_regs), stb; one commit group,
    left in flight (wait 1) when the dot is a loop's pipelined accumulator update. `pairs`: (a tile, b tile) products
    summed in order into the accumulator instead of sta x stb (tf32x3's three)."""
    M, N = ll.shape
    K = op.operands[0].type.shape[-1]
    wm, wn = lay.wpc
    instr_n = lay.instr_n
    ta, tb = (_WGMMA_TYPE[v.type.element.name] for v in op.operands[:2])
    eb = _operand_bytes(op)
    kstep = 32 // eb  # one instruction takes 32 bytes of K per row: k16 (16-bit), k32 (fp8), k8 (tf32)
    a_per = K // 2  # registers of one 16*wm-row block of a register operand (its K columns, instr_n = K)
    words = None
    MR = M // (16 * wm)
    if a_regs is not None:
        # every A word packed before the fence (tied through it): the HGMMA chain then issues back to back
        # instead of one ARRIVE per instruction between the packing
        if eb == 1:
            words = [w for mi in range(MR) for k0 in range(0, K, kstep) for w in _fp8_a_words(e, a_regs, mi * 16 * wm, k0)]
        else:
            words = [_pack(e, a_regs.regs[r0:r0 + 2]) for r0 in range(0, len(a_regs.regs), 2)]
        words = _fence_tied(e, words)
    else:
        _asm_void(e, "wgmma.fence.sync.aligned;")
    wide = _desc64(e, op)
    wg = e.b.lshr(e.warp, e.i32(2))
    nwg_m = wm // 4
    wg_m = e.b.and_(wg, e.i32(nwg_m - 1)) if nwg_m > 1 else e.i32(0)
    wg_n = e.b.lshr(wg, e.i32(nwg_m.bit_length() - 1)) if wn > 1 else e.i32(0)
    regs = list(c.regs)
    per = instr_n // 2
    NR = N // (instr_n * wn)
    n_acc = per
    dregs = "{" + ",".join(f"${i}" for i in range(n_acc)) + "}"
    integer = op.result.type.element.name == "int32"
    f16acc = op.result.type.element.name == "float16"  # .f16 D, two values a .b32 register
    if f16acc:
        n_acc = per // 2
        dregs = "{" + ",".join(f"${i}" for i in range(n_acc)) + "}"
    if integer:
        # int8/uint8: both operands K-major, no scale or transpose immediates; the int32 sum saturates after each
        # k32 instruction (.satfinite), as the mma.sync path's m16n8k32 does and the interpreter defines
        assert a_k and b_k and a_regs is None, "int8 wgmma operands must be K-major in shared memory"
        text = (f"wgmma.mma_async.sync.aligned.m64n{instr_n}k32.satfinite.s32.{ta}.{tb} {dregs}, ${n_acc}, "
                f"${n_acc + 1}, 1;")
        ins = ["l", "l"]
    elif eb == 4:  # tf32: both operands K-major in shared memory, no transpose immediates
        assert a_k and b_k and a_regs is None, "tf32 wgmma operands must be K-major in shared memory"
        text = (f"wgmma.mma_async.sync.aligned.m64n{instr_n}k8.f32.tf32.tf32 {dregs}, ${n_acc}, ${n_acc + 1}, "
                "1, 1, 1;")
        ins = ["l", "l"]
    elif a_regs is None and eb == 1:  # 8-bit types: both operands K-major, no transpose immediates
        assert a_k and b_k, "fp8 wgmma operands must be K-major"
        text = (f"wgmma.mma_async.sync.aligned.m64n{instr_n}k32.f32.{ta}.{tb} {dregs}, ${n_acc}, ${n_acc + 1}, "
                "1, 1, 1;")
        ins = ["l", "l"]
    elif a_regs is None:
        text = (f"wgmma.mma_async.sync.aligned.m64n{instr_n}k16.{'f16' if f16acc else 'f32'}.{ta}.{tb} {dregs}, "
                f"${n_acc}, ${n_acc + 1}, 1, 1, 1, {0 if a_k else 1}, {0 if b_k else 1};")
        ins = ["l", "l"]
    elif eb == 1:  # A from registers: four .b32 words of four 8-bit values each (b K-major)
        assert b_k, "fp8 wgmma operands must be K-major"
        text = (f"wgmma.mma_async.sync.aligned.m64n{instr_n}k32.f32.{ta}.{tb} {dregs}, "
                f"{{${n_acc},${n_acc + 1},${n_acc + 2},${n_acc + 3}}}, ${n_acc + 4}, 1, 1, 1;")
        ins = ["r", "r", "r", "r", "l"]
    else:  # A from registers: four .b32 words of two 16-bit values each
        text = (f"wgmma.mma_async.sync.aligned.m64n{instr_n}k16.{'f16' if f16acc else 'f32'}.{ta}.{tb} {dregs}, "
                f"{{${n_acc},${n_acc + 1},${n_acc + 2},${n_acc + 3}}}, ${n_acc + 4}, 1, 1, 1, {0 if b_k else 1};")
        ins = ["r", "r", "r", "r", "l"]
    acc_t = C.I32 if integer or f16acc else C.F32
    cons = ",".join([f"={'r' if integer or f16acc else 'f'}"] * n_acc + ins + [str(i) for i in range(n_acc)])
    fty = ir.FunctionType(ir.LiteralStructType([acc_t] * n_acc), [C.I32 if x == "r" else C.I64 for x in ins] +
                          [acc_t] * n_acc)
    asm = ir.InlineAsm(fty, text, cons, side_effect=True)

    def issue(instr, mi, ni, k0, acc, sta=sta, stb=stb):
        # per-warpgroup row/col offsets are runtime values: descriptors for each warpgroup position are selected
        # (few warpgroups, so a select chain is cheap)
        db = _select_desc(e, stb, b_k, [(k0, ni * instr_n * wn + g * instr_n) for g in range(wn)], wg_n,
                          a_is_a=False, wide=wide)
        if a_regs is None:
            da = [_select_desc(e, sta, a_k, [(mi * 16 * wm + g * 64, k0) for g in range(nwg_m)], wg_m,
                               a_is_a=True, wide=wide)]
        elif eb == 1:  # _fp8_a_words' order: per (mi, k0), four words
            w0 = (mi * (K // kstep) + k0 // kstep) * 4
            da = words[w0:w0 + 4]
        else:  # accumulator fragment order: (row g, cols 2t..), (g+8, 2t..), (g, 8+2t..), (g+8, 8+2t..)
            r0 = mi * a_per + (k0 // 16) * 8
            if words is not None:
                da = words[r0 // 2:r0 // 2 + 4]
            else:
                da = [_pack(e, a_regs.regs[r0 + 2 * w:r0 + 2 * w + 2]) for w in range(4)]
        if f16acc:  # the accumulator's values in pairs: (row g, cols 2t, 2t+1), (row g+8, ...), ... one word each
            acc = [_pack(e, acc[2 * i:2 * i + 2]) for i in range(n_acc)]
        r = e.b.call(instr, da + [db] + acc)
        out = [e.b.extract_value(r, i) for i in range(n_acc)]
        if f16acc:
            halves = []
            for w in out:
                v = e.b.bitcast(w, ir.VectorType(C.F16, 2))
                halves += [e.b.extract_element(v, e.i32(0)), e.b.extract_element(v, e.i32(1))]
            return halves
        return out

    groups = _imprecise_groups(op, K, kstep)
    if groups is not None:
        # max_num_imprecise_acc: each group of K steps accumulates from zero (scale-d 0: D = A*B) in fresh
        # registers, added to the accumulator in float32 once its wgmmas are complete
        fresh = ir.InlineAsm(fty, text.replace(", 1, 1, 1", ", 0, 1, 1", 1), cons, side_effect=True)
        undef = [ir.Constant(C.F32, ir.Undefined)] * n_acc
        for gi, ks in enumerate(groups):
            if gi:
                _asm_void(e, "wgmma.fence.sync.aligned;")
            part = []
            for mi in range(MR):
                for ni in range(NR):
                    acc = undef
                    for j, k0 in enumerate(ks):
                        acc = issue(fresh if j == 0 else asm, mi, ni, k0, acc)
                    part += acc
            _asm_void(e, "wgmma.commit_group.sync.aligned;")
            part = _wait_retiring(e, op, part, 0) if gi == len(groups) - 1 else _wait_tied(e, part, 0)
            regs = [e.b.fadd(x, y, flags=e.fp_flags) for x, y in zip(regs, part)]
        return regs
    for mi in range(MR):
        for ni in range(NR):
            t = ni + NR * mi
            acc = regs[t * per:(t + 1) * per]
            for j, (pa, pb) in enumerate(pairs or [(sta, stb)]):
                for k0 in range(0, K, kstep):
                    acc = issue(asm, mi, ni, k0, acc, pa, pb)
            regs[t * per:(t + 1) * per] = acc
    _asm_void(e, "wgmma.commit_group.sync.aligned;")
    if defer_to_loop(e, op) is not None:
        return regs  # waited by the loop's first dot in the next iteration (or at the loop's exit)
    return _wait_retiring(e, op, regs, 1 if loop is not None else 0)


def _imprecise_groups(op, K, kstep):
    """The K offsets of each group of wgmma steps an fp8 dot with `max_num_imprecise_acc` accumulates before adding
    to its accumulator in float32 (passes/wgmma_loops.py partial_accumulation): a group closes once it holds at
    least that many K elements (every step when the limit is under one step's 32), as Triton does on Hopper. None
    for other dots."""
    if not partial_accumulation(op):
        return None
    limit = op.attrs["max_num_imprecise_acc"]
    groups, cur = [], []
    for k0 in range(0, K, kstep):
        cur.append(k0)
        if len(cur) * kstep >= limit:
            groups.append(cur)
            cur = []
    return groups + [cur] if cur else groups


def _fp8_a_words(e, a, row0, k0):
    """The four .b32 words of wgmma's register A for 8-bit types at rows row0.., K columns k0..k0+31 from `a` in
    the accumulator layout of an earlier wgmma (attention's P rounded to fp8). The k32 A fragment wants, of lane
    4g + t, rows g and g + 8 at columns 4t..4t+3 and 16+4t..16+4t+3 (words in the order (g, lo), (g + 8, lo),
    (g, hi), (g + 8, hi)); the accumulator layout gives it columns 2t, 2t+1 of every 8. Each lane packs its two
    pairs of a 16-column half (columns 8j + 2t.. and 8(j+1) + 2t..) into one word; lane t reads that word from
    lanes 2t and 2t + 1 of its quad (mod 4) and keeps the low halves (t < 2) or the high halves (t >= 2)."""
    idx = _index(a.ll)
    t = e.b.and_(e.lane, e.i32(3))
    src0 = e.b.or_(e.b.and_(e.lane, e.i32(~3)), e.b.and_(e.b.shl(t, e.i32(1)), e.i32(3)))
    src1 = e.b.add(src0, e.i32(1))
    # prmt selector: bytes 0, 1 of x0 then of x1 (0x5410), or bytes 2, 3 of each (0x7632)
    sel = e.b.select(e.b.icmp_unsigned(">=", t, e.i32(2)), e.i32(0x7632), e.i32(0x5410))
    out = []
    for hb in (0, 1):
        for h in (0, 1):
            j0 = (k0 + 16 * hb) // 8
            send = _pack(e, [a.regs[idx[(row0 + 8 * h, 8 * j + c)]] for j in (j0, j0 + 1) for c in (0, 1)])
            x0, x1 = shuffle(e, "idx", send, src0), shuffle(e, "idx", send, src1)
            out.append(_asm(e, "prmt.b32 $0, $1, $2, $3;", "=r,r,r,r", C.I32, [x0, x1, sel]))
    return out


def _fence_tied(e, words):
    """wgmma.fence with the words (i32 or f32, one type) tied through it: what feeds the wgmmas after it is
    computed before it."""
    n = len(words)
    t = words[0].type
    k = "f" if t == C.F32 else "r"
    cons = ",".join([f"={k}"] * n + [str(i) for i in range(n)])
    fty = ir.FunctionType(ir.LiteralStructType([t] * n), [t] * n)
    r = e.b.call(ir.InlineAsm(fty, "wgmma.fence.sync.aligned;", cons, side_effect=True), words)
    return [e.b.extract_value(r, i) for i in range(n)]


def defer_to_loop(e, op):
    """The body index of the first dot of op's loop when op, a later wgmma dot of the same loop body, leaves its
    wgmma in flight into the next iteration (attention's P.V); None otherwise. The analysis is the pass
    compiler/passes/wgmma_loops.py's (attr `_defer_to`)."""
    return op.attrs.get("_defer_to")


def _wait_retiring(e, op, regs, pending):
    """The wait of a dot's wgmma group. After the first dot of a loop body the accumulators a later dot left in
    flight last iteration (defer_to_loop) are complete too: they are tied through the same wait (one wait_group
    0 for all; a second wait when this one leaves a group pending), so nothing reads them earlier, and the tied
    values are used from here."""
    blk = op.block
    loop = getattr(blk, "parent", None)
    deferred = []
    if (loop is not None and loop.kind == "for" and blk is loop.blocks[0]
            and next((o for o in blk.ops if o.kind == "dot"), None) is op):
        deferred = _deferred_accumulators(e, op)
    if not pending:
        e.retired_dots.add(id(op))  # none of its wgmmas left in flight past this wait (_slot_free_behind_wait)
    if pending or not deferred:
        regs = _wait_tied(e, regs, pending)
        for arg, x in deferred:
            e.env[arg.id] = Tile(x.ll, _wait_tied(e, list(x.regs), 0))
        return regs
    return _wait_all(e, regs, deferred)


def _wait_all(e, regs, deferred):
    """wait_group 0 with `regs` and the registers of the (carried argument, Tile) pairs in `deferred` tied through
    it; the arguments take their tied registers; returns the tied `regs`."""
    tied = _wait_tied(e, list(regs) + [r for _, x in deferred for r in x.regs], 0)
    at = len(regs)
    for arg, x in deferred:
        e.env[arg.id] = Tile(x.ll, tied[at:at + len(x.regs)])
        at += len(x.regs)
    return tied[:len(regs)]


def _deferred_accumulators(e, op):
    """(carried argument, its registers) for each later dot of op's loop body that left its wgmma group in flight
    into the next iteration (defer_to_loop)."""
    blk = op.block
    y = blk.terminator
    out = []
    for o in blk.ops:
        if o.kind == "dot" and o is not op and defer_to_loop(e, o) is not None:
            arg = blk.args[1 + y.operands.index(o.result)]
            x = e.env.get(arg.id)
            if isinstance(x, Tile):
                out.append((arg, x))
    return out


def _pipelined_loop(op):
    """The enclosing `for` when op's accumulator is carried by it and used only by this dot (compiler/passes/
    wgmma_loops.py, attr `_acc_carried`); else None."""
    return op.block.parent if op.attrs.get("_acc_carried") else None


def finish_loop(e, loop):
    """After a loop whose dot left a wgmma in flight: wait for it, tied to the loop's accumulator results; then
    release the loop's copy ring, if it had one."""
    if loop.attrs.get("_wgmma_in_flight"):  # compiler/passes/wgmma_loops.py
        _finish_wgmma(e, loop)
    hoisted = e.hoisted_by_loop.pop(id(loop), None)
    if hoisted is not None:  # the hoisted operands' shared memory is free again once every warp is done
        base, ids = hoisted
        for i in ids:
            e.hoisted.pop(i, None)
        e.barrier()
        e.smem_base = base
    finish_ring(e, loop)


def _finish_wgmma(e, loop):
    for r in loop.results:
        x = e.env.get(r.id)
        lay = loop.attrs["_layouts"][r.index]
        if isinstance(x, Tile) and isinstance(lay, MmaLayout) and lay.version == 3:
            e.env[r.id] = Tile(x.ll, _wait_tied(e, list(x.regs), 0))


def _select_desc(e, st, kmajor, positions, idx, a_is_a, wide=False):
    """Descriptor for the warpgroup's position (positions[idx]); positions are (m|k, k|n) pairs in the
    operand's own (dim0, dim1) coordinates."""
    descs = []
    for p0, p1 in positions:
        if a_is_a:  # a [M, K]: rows of the stored tile are m when K-major, k otherwise
            row, col = (p0, p1) if kmajor else (p1, p0)
        else:  # b [K, N]: rows are n when K-major, k otherwise
            row, col = (p1, p0) if kmajor else (p0, p1)
        descs.append(_desc(e, st, row, col, kmajor, wide))
    out = descs[0]
    for g in range(1, len(descs)):
        out = e.b.select(e.b.icmp_unsigned("==", idx, e.i32(g)), descs[g], out)
    return out


# ---- asynchronous copies into a ring of shared-memory slots (passes/pipeline.py) --------------------------------

class SmemOperand:
    """A dot operand that lives in shared memory (a ring slot) instead of registers: its SwizzledTile, with the
    slot's byte offset as the tile's runtime offset."""

    def __init__(self, st):
        self.st = st


class _Ring:
    """Code generator state of one copy ring: the swizzled tile shape of each operand (its inner dim is the one
    the copies run along, known from the first copy) and whether shared memory is held for it."""

    def __init__(self, spec):
        self.spec = spec
        self.inner = [None] * len(spec["tiles"])
        self.started = False
        self.start = 0  # where the ring begins in shared memory (1024-aligned)
        self.slot = None  # the loop's carried byte offset of this iteration's slot (ring_slot_begin)
        self.prev = []  # the slots of iterations i-1, i-2, ... carried beside it (spec["carry_prev"])


def _ring(e, op):
    spec = op.attrs["_ring"]
    r = e.rings.get(spec["id"])
    if r is None:
        r = e.rings[spec["id"]] = _Ring(spec)
    return r


def _loop_iteration(e, loop):
    """The loop's iteration number (iv - lb) / step as an i32."""
    iv = e.env[loop.blocks[0].args[0].id]
    lb, step = e.get(loop.operands[0]), e.get(loop.operands[2])
    it = e.b.sub(iv, lb)
    if not (isinstance(step, ir.Constant) and step.constant == 1):
        it = e.b.sdiv(it, step)
    return e.b.trunc(it, C.I32) if it.type != C.I32 else it


def ring_slot_begin(e, loop, pre):
    """At the loop header of a loop with a copy ring: the byte offset of the iteration's slot, carried from
    iteration to iteration (0 on entry) instead of computed from the induction variable, (iv - lb) / step % S:
    an add, a compare and a select per iteration, which ptxas keeps in uniform registers, against a division
    and a remainder by constants in vector registers. Measured against the remainder form in one process (H200,
    2026-12-02, 33 matmul and attention kernels, 3 rounds): the remainder form took 1.015x the time (mm_nobias
    1.06, mm_tutorial 1.10, mm_mask_mnk 1.04), faster on none but attn_kT_d128 (0.98)."""
    if "_ring" not in loop.attrs:
        return None
    ring = _ring(e, loop)
    ring.slot = e.b.phi(C.I32)
    ring.slot.add_incoming(e.i32(0), pre)
    ring.prev = []
    stages, sb, ahead = ring.spec["stages"], ring.spec["stage_bytes"], ring.spec.get("ahead")
    if ring.spec.get("carry_prev") and ahead and 0 < stages - ahead < stages:
        # (passes/pipeline.py decides) the copies `ahead` iterations on write the slot that iteration
        # i - (stages - ahead) read: carried from the iterations before, it is a register at the copies instead of
        # an add, a compare and a select on the way to them. Before the first iteration those are the slots after
        # the prologue's: iteration -j read slot stages - j.
        for j in range(1, stages - ahead + 1):
            p = e.b.phi(C.I32)
            p.add_incoming(e.i32((stages - j) * sb), pre)
            ring.prev.append(p)
    return ring


def ring_slot_end(e, ring):
    """The next iteration's slot offset (at the end of the body; the caller adds the incoming edge of the slot;
    the previous slots' edges are added here, from the current block)."""
    sb = ring.spec["stage_bytes"]
    for p, v in zip(ring.prev, [ring.slot] + ring.prev[:-1]):
        p.add_incoming(v, e.b.block)
    nxt = e.b.add(ring.slot, e.i32(sb))
    return e.b.select(e.b.icmp_unsigned("==", nxt, e.i32(ring.spec["stages"] * sb)), e.i32(0), nxt)


def _slot_offset(e, op, ring, ahead):
    """Byte offset of the slot of the enclosing loop's iteration + ahead (ahead <= stages)."""
    off = ring.slot
    if not ahead or ahead == ring.spec["stages"]:  # a synchronous dot's ring: the slot this iteration read
        return off
    back = ring.spec["stages"] - ahead  # the slot of iteration i + ahead is that of iteration i - back
    if 0 < back <= len(ring.prev):
        return ring.prev[back - 1]
    total = ring.spec["stages"] * ring.spec["stage_bytes"]
    w = e.b.add(off, e.i32(ahead * ring.spec["stage_bytes"]))
    return e.b.select(e.b.icmp_unsigned(">=", w, e.i32(total)), e.b.sub(w, e.i32(total)), w)


def _tile_of(ring, j, inner):
    """The SwizzledTile of ring operand j (copies run along dim `inner` of the loaded tile; 16-bit, or 8-bit
    elements of an fp8 dot's TMA operands)."""
    shape = tuple(ring.spec["tiles"][j])
    eb = ring.spec.get("ebytes", (2,) * len(ring.spec["tiles"]))[j]
    swizzled = ring.spec.get("swizzled", (False,) * len(ring.spec["tiles"]))[j]
    pad = slot_row_pad(min(shape[inner], 128 // eb) * eb) if ring.spec["padded"][j] and not swizzled else 0
    st = SwizzledTile(shape, inner, eb, base=ring.start + ring.spec["bases"][j], pad=pad)
    st.absolute = True
    if swizzled:  # an 8-byte mma.sync slot (mma_slot_swizzled): read by plain shared loads, chunks XORed by row
        st.plain = True
        st.per_phase, st.max_phase, st.shift = mma_slot_swizzle(st.row_bytes)
    return st


def _slot_free_behind_wait(e, op, ring) -> bool:
    """Whether copy op's barrier (after its loop's dots, before the copies overwrite the slot the previous iteration
    read) is one the iteration's ring wait already stands for: the copies write the previous
    iteration's slot (a wgmma ring, `ahead` one less than its slots), the ring's wait (a barrier) comes before the
    body's first dot, and every dot of the body precedes the copy and retired its wgmmas in its iteration
    (wait_group 0, none left in flight into the next: `e.retired_dots`). The previous iteration's reads of the slot
    then ended before every thread passed this iteration's ring barrier. A block-scaled GEMM's `acc += tl.dot(a, b)
    * scale` waits for its product in the iteration it is made; Triton's loop issues its copies behind the ring's
    barrier alone. The row/column-scaled fp8 GEMM: 0.973 of the time it took with the barrier (H100, 2026-12-07, 3
    rounds beside Triton, benchmarks/2026-12-07g-h100/abin5.md)."""
    if op.attrs.get("ahead") != ring.spec["stages"] - 1:
        return False
    body = op.block.ops
    if any(u.kind == "dot" for o in body for b in o.blocks for u in b.walk()):
        return False  # a dot under an `if` of the body: its wait is not one this check sees
    at = body.index(op)
    dots = [k for k, o in enumerate(body) if o.kind == "dot"]
    waits = [k for k, o in enumerate(body) if o.kind == "async_wait" and o.attrs.get("ring") == op.attrs.get("ring")]
    if not dots or not waits or waits[0] > dots[0] or dots[-1] > at:
        return False
    return all(id(body[k]) in e.retired_dots for k in dots)


@emits("async_copy")
def _e_async_copy(e, op):
    from .memory import _ai, _ld, same_run_registers, vector_width

    ring = _ring(e, op)
    j = op.attrs["operand"]
    if not ring.started:  # the ring holds stages * stage_bytes from here until its loop ends (finish_loop)
        nbytes = ring.spec["stages"] * ring.spec["stage_bytes"]
        e.smem_begin(nbytes + _tma.barrier_bytes(ring.spec))
        ring.start = e.smem_base
        e.smem_base += nbytes + _tma.barrier_bytes(ring.spec)
        ring.started = True
        if _tma.ring_has_tma(ring.spec):
            _tma.init_barriers(e, ring)
    if op.attrs.get("barrier") and not _slot_free_behind_wait(e, op, ring):
        e.barrier()
    if op.attrs.get("tma"):
        _tma_copy(e, op, ring, j)
        if op.attrs.get("commit") and not all(ring.spec["tma"]):  # closes the group of the cp.async operands
            _asm_void(e, "cp.async.commit_group;")
        return
    p = e.get(op.operands[0])
    ll = p.ll
    elem = op.operands[0].type.element.element_ty
    eb = C.elem_bytes(elem)
    vec, d = vector_width(e, ll, op.operands[0], op.operands[1], eb)
    if ring.inner[j] is None:
        ring.inner[j] = d
    elif ring.inner[j] != d:
        raise error("copies of one ring operand run along different dims (compiler bug)", op.loc)
    st = _tile_of(ring, j, d)
    if "slot" in op.attrs:
        st.dyn = e.i32(op.attrs["slot"] * ring.spec["stage_bytes"])
    else:
        st.dyn = _slot_offset(e, op, ring, op.attrs["ahead"])
    mregs = e.regs(op.operands[1])
    tc = e.thread_coords(ll)
    nbytes = vec * eb
    starts = list(range(0, ll.num_regs, vec))
    deltas = _constant_deltas(st, ll, d, starts, e.nw) if nbytes >= 4 else None
    # Chunks in one run of the mask's constancy (K rows 8 apart where K is a multiple of 16) share one predicate:
    # mm_mask_mnk 128x256's loop 141 -> 116 instructions, 33 -> 21 selects (Triton's: 21). Measured against a
    # predicate per chunk (H200, 2026-12-05, the 7 corpus kernels it changes, 3 rounds): 0.982 geomean,
    # attn_masked_d128 0.925, mm_mask_mnk 128x256 0.956, mm_scale_cast 0.978, none slower by over 2%.
    same = same_run_registers(ll, starts, _ai(e, op.operands[1]).constancy, e.nw)
    mregs = [mregs[same[r]] if r in same else m for r, m in enumerate(mregs)]
    # (passes/pipeline.py _clamp_plan) operand 2: the elements in bounds from each element on along
    # the copies' dim (a ragged edge); a chunk copies clamp(that, 0, vec) of its elements and zero-fills the rest
    rem = None
    if op.attrs.get("clamp") is not None:
        if vec > 1 and (op.attrs["clamp"] != d or vec * eb < 4):
            raise error("a clamped ring copy runs along another dim than its edge (compiler bug)", op.loc)
        rem = e.regs(op.operands[2])
    first = None
    for r0 in starts:
        rc = ll.reg_coord(r0)

        def co(dim):
            t = tc[dim]
            return e.i32(rc[dim]) if t is None else (e.b.add(t, e.i32(rc[dim])) if rc[dim] else t)
        pred = mregs[r0]
        if deltas is not None:
            # every chunk of this thread sits at a fixed distance from its first: one address, then immediates;
            # in 32-bit arithmetic from tf_smem's window address
            if first is None:
                first = e.b.add(e.smem.ptrtoint(C.I32), st.offset(e, None, co(st.outer), co(d)))
            addr = e.b.add(first, e.i32(deltas[r0])) if deltas[r0] else first
        else:
            dst = e.smem_ptr(st.offset(e, None, co(st.outer), co(d)), absolute=True)
        if nbytes >= 4:
            # src-size 0 for masked-off chunks: the copy writes zeros (the loads' `other` is zero or absent)
            cache = "cg" if nbytes == 16 else "ca"
            dst_addr = addr if deltas is not None else e.b.ptrtoint(dst, C.I32)
            if rem is None:
                size = e.b.select(pred, e.i32(nbytes), e.i32(0))
            else:  # src-size clamp((bound - first) * eb, 0, nbytes), 0 where the rest of the mask is off
                n = rem[r0]
                zero, full = ir.Constant(n.type, 0), ir.Constant(n.type, vec)
                n = e.b.select(e.b.icmp_signed("<", n, zero), zero, n)
                n = e.b.select(e.b.icmp_signed(">", n, full), full, n)
                n = e.b.trunc(n, C.I32) if n.type != C.I32 else n
                size = e.b.select(pred, e.b.mul(n, e.i32(eb)), e.i32(0))
            _asm_args(e, f"cp.async.{cache}.shared.global [$0], [$1], {nbytes}, $2;", "r,l,r",
                      [dst_addr, p.regs[r0], size])
        else:  # 2-byte chunks have no cp.async: a predicated load (zero when masked off) and a shared store
            if rem is not None:  # one element a chunk: in bounds where bound - idx > 0
                pred = e.b.and_(pred, e.b.icmp_signed(">", rem[r0], ir.Constant(rem[r0].type, 0)))
            _store_vector(e, _ld(e, p.regs[r0], elem, vec, pred, None, {}), dst, nbytes)
    if op.attrs.get("commit"):
        _asm_void(e, "cp.async.commit_group;")


def _tma_copy(e, op, ring, j):
    """A ring copy by TMA (codegen/tma.py): the tile's inner dim is its last (the descriptor's contiguous one)."""
    if ring.inner[j] is None:
        ring.inner[j] = 1
    st = _tile_of(ring, j, 1)
    stages = ring.spec["stages"]
    if "slot" in op.attrs:
        slot = e.i32(op.attrs["slot"])
    else:
        it = _loop_iteration(e, op.block.parent)
        slot = e.b.urem(e.b.add(it, e.i32(op.attrs["ahead"])), e.i32(stages))
    st.dyn = e.b.mul(slot, e.i32(ring.spec["stage_bytes"]))
    _tma.copy(e, op, ring, st, slot)


def _constant_deltas(st, ll, inner, starts, num_warps):
    """{r0: byte distance of register r0's chunk from register starts[0]'s} when that distance is the same for
    every thread of the CTA (rows a whole swizzle period apart, same columns: the XOR pattern repeats), else None.
    Checked over the CTA's threads. (Measured on the H200 with the conversions of codegen/reduce.py and the
    wait without a proxy fence, 2026-11-30: matmul 1.00-1.11x at 1024^3..8192^3, attention D=64 1.05x.)

    SwizzledTile.py_offset(row, col) is row * row_bytes + 16 * (chunk(col) ^ phase(row)) + lin(col): a thread's
    distance depends on its row only through the two phases and on its column only through the two (chunk, lin)
    pairs. So the threads' (row, col) pairs are mapped to those keys per r0 (one evaluation per distinct row and
    column) and the distance is evaluated once per distinct key pair: the same sets as evaluating every thread's
    offsets, at a fraction of the cost (256 threads x 16 registers took 1-2 ms per copy)."""
    outer = st.outer
    pairs = {(t[outer], t[inner]) for t in ll.thread_coords(num_warps)}
    rows = {r for r, _ in pairs}
    cols = {c for _, c in pairs}
    rb, pp, pmask, bc, epc, eb, bb = (st.row_bytes, st.per_phase, st.max_phase - 1, st.block_cols, 16 // st.eb,
                                      st.eb, st.block_bytes)

    def col_key(c):  # (chunk, linear part) of column c
        blk, incol = divmod(c, bc)
        chunk, within = divmod(incol, epc)
        return chunk, within * eb + blk * bb

    ref = ll.reg_coord(starts[0])
    sh = st.shift
    ref_phase = {r: (((r + ref[outer]) // pp) & pmask) << sh for r in rows}
    ref_col = {c: col_key(c + ref[inner]) for c in cols}
    out = {}
    for r0 in starts:
        rc = ll.reg_coord(r0)
        drow = (rc[outer] - ref[outer]) * rb
        pk = {r: ((((r + rc[outer]) // pp) & pmask) << sh, ref_phase[r]) for r in rows}
        ck = {c: (col_key(c + rc[inner]), ref_col[c]) for c in cols}
        ds = set()
        for (p1, p0), ((c1, l1), (c0, l0)) in {(pk[r], ck[c]) for r, c in pairs}:
            ds.add(drow + (((c1 ^ p1) - (c0 ^ p0)) << 4) + l1 - l0)
        if len(ds) != 1:
            return None
        out[r0] = ds.pop()
    return out


def _asm_args(e, text, cons, args):
    fty = ir.FunctionType(C.VOID, [a.type for a in args])
    e.b.call(ir.InlineAsm(fty, text, cons, side_effect=True), args)


@emits("async_wait")
def _e_async_wait(e, op):
    # this thread's copies of the slot have landed; wait for every other thread's. No proxy fence between the
    # cp.async writes and the wgmma reads by default. The PTX ISA's wgmma section asks for an async-proxy fence
    # between prior writes to shared memory and wgmma reads of them; CUTLASS's cp.async + wgmma mainloop and
    # Triton emit none after a cp.async wait, and the fence costs a MEMBAR.ALL.CTA per iteration (every gpu test
    # passes without it; attention D=64 about 3%; docs/EXPERIMENTS.md, cp_fence).
    ring = _ring(e, op)
    if not all(ring.spec.get("tma", ())):  # some operand comes by cp.async
        _asm_void(e, f"cp.async.wait_group {op.attrs['pending']};")
    if _tma.ring_has_tma(ring.spec):  # and the TMA operands by the slot's mbarrier
        _tma.wait(e, ring, _loop_iteration(e, op.block.parent))
    e.barrier()


@emits("smem_view")
def _e_smem_view(e, op):
    ring = _ring(e, op)
    j = op.attrs["operand"]
    if ring.inner[j] is None:
        raise error("a ring slot is read before any copy into it (compiler bug)", op.loc)
    st = _tile_of(ring, j, ring.inner[j])
    st.dyn = _slot_offset(e, op, ring, 0)
    e.env[op.result.id] = SmemOperand(st)


@emits("smem_load")
def _e_smem_load(e, op):
    # a ring slot read into registers (ops other than dots that read the loaded tile): each run of registers along
    # the slot's inner dim is one vector load at the swizzled address the copies wrote
    x = e.get(op.operands[0])
    ll = e.result_ll(op)
    e.put(op.result, load_swizzled(e, x.st, ll, C.lty(op.result.type.element)), ll)


def finish_ring(e, loop):
    """After a loop with a copy ring: copies issued for iterations past the end (masked off: zero fills) must
    land before shared memory is used for anything else."""
    if "_ring" not in loop.attrs:
        return
    ring = _ring(e, loop)
    if not all(ring.spec.get("tma", ())):
        _asm_void(e, "cp.async.wait_group 0;")
    if _tma.ring_has_tma(ring.spec):
        _tma.release(e, ring)
    e.barrier()
    e.smem_base = ring.start
