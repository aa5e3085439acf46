"""The user-visible tile language: `tensor`, `constexpr`, dtypes and the builtins (`tl.load`, `tl.sum`, ...).

Builtins build IR through the code generator active on this thread; called outside a kernel they raise.
Their meaning is written once in compiler/frontend/semantic.py (typing) and in the interpreter (values).
"""
from __future__ import annotations

import builtins as _py
import enum as _enum

from ..ir import optable as _optable, types as _T
from ..ir.types import (  # noqa: F401  (re-exported as tl.float32 ...)
    TensorType, bfloat16, dtype, float16, float32, float64, float8e4nv, float8e5, float8e4b15, float8e4b8, float8e5b16,
    int1, int8, int16, int32, int64,
    pointer_type, uint8, uint16, uint32, uint64,
)

from .values import _unwrap, constexpr  # noqa: F401,E402
from .aggregate import _aggregate  # noqa: F401,E402  (tl.core._aggregate, as Triton names it)

bool_ = int1


class constexpr_type:
    """The type of a constexpr value (`tl.constexpr(5).type == tl.constexpr_type(5)`), as in Triton."""

    def __init__(self, value):
        self.value = _unwrap(value)

    def __eq__(self, other):
        return isinstance(other, constexpr_type) and self.value == other.value

    def __hash__(self):
        return hash(self.value)

    def __repr__(self):
        return f"constexpr_type[{self.value}]"

    def mangle(self) -> str:
        return repr(self)


constexpr.type = property(lambda self: constexpr_type(self.value))


class const:
    """Annotation of a pointer parameter to constant data (`X: tl.const`): loads as usual; a store or an atomic
    through it (or a pointer computed from it) is a compile error."""


class PropagateNan(_enum.IntEnum):
    """`propagate_nan=` of maximum/minimum/clamp: NONE returns the non-NaN operand, ALL returns NaN."""

    NONE = 0
    ALL = 0xFFFF


def _propagates(propagate_nan) -> bool:
    v = _unwrap(propagate_nan)
    if isinstance(v, str):
        v = v.upper()
        if v not in ("NONE", "ALL"):
            from ..frontend.context import SemanticError

            raise SemanticError(f"propagate_nan must be tl.PropagateNan.NONE or .ALL, got {v!r}")
        return v == "ALL"
    if v in (None, False, PropagateNan.NONE):
        return False
    if v is True or v == PropagateNan.ALL:
        return True
    from ..frontend.context import SemanticError

    raise SemanticError(f"propagate_nan must be tl.PropagateNan.NONE or .ALL, got {v!r}")


class assigned_number(constexpr):
    """A Python number assigned to a name inside a kernel (`acc = 0`). As in Triton it is a scalar tensor of the
    number's dtype (int32, int64 or uint64 by range, float32, int1) wherever it meets a tensor in an operator or
    a tensor method is called on it (`acc.to(tl.int64)`); where a compile-time constant is needed it is still
    the number (a superset of Triton, which asks for `x: tl.constexpr = ...` there)."""

    def __init__(self, value=None, scalar_dtype=None):
        super().__init__(value)
        # the scalar tensor's type it stands for (None: by the number's range, as Triton's to_tensor picks); set
        # by arithmetic on assigned numbers, which folds with that type's semantics (semantic.fold_numbers)
        self.scalar_dtype = scalar_dtype

    def __repr__(self):
        return repr(self.value)


def builtin(fn):
    """Mark a function as a tile-language builtin (the frontend calls it directly, with constexprs unwrapped).
    It also takes Triton's internal keywords `_semantic=` and `_generator=` and ignores them, so Python code written
    against Triton's builtins (an aggregate's constructor calling `tl.arange(0, 4, _semantic=_semantic)`) runs."""
    import functools

    @functools.wraps(fn)
    def call(*args, _semantic=None, _generator=None, **kwargs):
        return fn(*args, **kwargs)

    call.__tilefarm_builtin__ = True
    return call


def _sem():
    from ..frontend import semantic  # on first use: importing the language loads no frontend

    return semantic


def __getattr__(name):
    if name in ("tensor", "block_ptr"):  # the value types are the semantics' (compiler/frontend/semantic.py)
        return getattr(_sem(), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class tensor_descriptor:
    """An in-kernel tensor descriptor (`tl.make_tensor_descriptor`): a strided `shape` array at `base` read and
    written in `block_shape` tiles at element offsets. Out-of-bounds elements of a tile read as zero (or NaN with
    padding_option="nan") and are not written, as with TMA. Lowered to masked pointer accesses (no TMA)."""

    def __init__(self, base, shape, strides, block_shape, padding):
        self.base, self.shape, self.strides = base, list(shape), list(strides)
        self.block_shape, self.padding = list(block_shape), padding  # a list, as Triton's
        self.tmap = None  # a host-side descriptor's tensor map address (int64 value) where TMA can read it
        self.own_map = False  # tmap is a map this kernel writes (make_tensor_descriptor)
        # Triton's contract for make_tensor_descriptor (a 16-byte aligned base, strides but the last whole 16-byte
        # multiples), taken as facts about its rows; a host-side descriptor's holds only where its launch saw it
        self.contract = True
        # whether its inner extent is a whole number of 16-byte units, the units TMA stores clip at (past a ragged
        # extent a TMA store writes the row's elements up to the next unit): a host-side descriptor's launch knows;
        # an in-kernel one's is proved or not by passes/tensormaps.py. A store without it goes by TMA only where its
        # tile is wholly in bounds (codegen/tma_store.py `tma_guard`)
        self.whole_units = True

    @property
    def dtype(self):
        return self.base.dtype.element_ty

    def _carried_map(self):
        # an in-kernel descriptor's map is not carried: assigned in a runtime if or a loop, it reads through pointers
        # (every TMA user of a written map then takes the tensormap_create's result itself)
        return None if self.own_map else self.tmap

    # A descriptor assigned in a runtime if or carried by a loop travels as its runtime parts (the frontend merges
    # them like tensors); its element type, block shape, padding and TMA-ness must stay the same.
    def parts(self):
        tmap = self._carried_map()
        return [self.base] + self.shape + self.strides + ([tmap] if tmap is not None else [])

    def with_parts(self, parts):
        r = len(self.block_shape)
        d = tensor_descriptor(parts[0], parts[1:1 + r], parts[1 + r:1 + 2 * r], self.block_shape, self.padding)
        d.tmap = parts[1 + 2 * r] if self._carried_map() is not None else None
        d.contract, d.whole_units = self.contract, self.whole_units
        return d

    def same_structure(self, other):
        return (isinstance(other, tensor_descriptor) and other.block_shape == self.block_shape
                and other.padding == self.padding and other.base.dtype == self.base.dtype
                and len(other.shape) == len(self.shape)
                and (other.contract, other.whole_units) == (self.contract, self.whole_units)
                and (other._carried_map() is None) == (self._carried_map() is None))

    def _at(self, offsets):
        offsets = list(_unwrap(offsets))
        if len(offsets) != len(self.block_shape):
            from ..frontend.context import SemanticError

            raise SemanticError(f"a tensor descriptor of rank {len(self.block_shape)} needs {len(self.block_shape)} "
                                f"offsets, got {len(offsets)}")
        p = _sem().make_block_ptr(self.base, self.shape, self.strides, offsets, self.block_shape,
                                  list(_py.range(len(self.block_shape)))[::-1])
        p.contract = self.contract  # the contract as axis facts (frontend/semantic.py _block_ptr_addresses)
        return p

    @builtin
    def load(self, offsets):
        """The tile at `offsets` (out-of-bounds elements: zero, or NaN with padding_option="nan")."""
        p = self._at(offsets)
        out = _sem().load_block_ptr(p, None, None, tuple(_py.range(len(self.block_shape))), self.padding, "", "",
                                    False)
        op = getattr(out.handle, "owner", None)
        if self.tmap is not None and getattr(op, "kind", None) == "load" and self.padding == "zero":
            # a host-side descriptor: the load also carries its tensor map and the tile's start, so a K loop's
            # pipeliner can serve it by TMA (passes/pipeline.py tma_served); everything else ignores them
            starts = [_sem().cast(_sem().to_tensor(x), int32).handle for x in p.offsets]
            op.operands += [self.tmap.handle] + starts
            op.attrs["tma"] = len(starts)
        return out

    @builtin
    def store(self, offsets, value):
        """Write `value` (a tile of block_shape) at `offsets`; out-of-bounds elements are not written."""
        p = self._at(offsets)
        from ..frontend.context import current

        blk = current().builder.block
        n = len(blk.ops)
        out = _sem().store_block_ptr(p, value, None, tuple(_py.range(len(self.block_shape))), "", "")
        op = blk.ops[-1] if len(blk.ops) > n else None
        if self.tmap is not None and getattr(op, "kind", None) == "store":
            # a host-side descriptor: the store also carries its tensor map and the tile's start, so the code
            # generator can write the tile by TMA (codegen/tma.py store); everything else ignores them
            starts = [_sem().cast(_sem().to_tensor(x), int32).handle for x in p.offsets]
            blk.ops.remove(op)  # the casts go before the store
            blk.ops.append(op)
            op.operands += [self.tmap.handle] + starts
            op.attrs["tma"] = len(starts)
            if not self.whole_units:
                op.attrs["tma_guard"] = True
        return out

    # The element types a descriptor's reduction takes: those of the tensor reductions a TMA unit does
    # (cp.reduce.async.bulk.tensor), so a kernel written here also compiles where descriptors reduce by TMA.
    _REDUCE_TYPES = {"add": ("uint32", "int32", "uint64", "float32", "float16", "bfloat16"),
                     "min": ("uint32", "int32", "uint64", "int64", "float16", "bfloat16"),
                     "max": ("uint32", "int32", "uint64", "int64", "float16", "bfloat16"),
                     "and": ("uint32", "int32", "uint64", "int64"),
                     "or": ("uint32", "int32", "uint64", "int64"),
                     "xor": ("uint32", "int32", "uint64", "int64")}

    def _atomic(self, op, offsets, value):
        """`op` of the tile at `offsets` with `value`, element by element, atomically; out-of-bounds elements are
        left alone."""
        s = _sem()
        elem = self.base.dtype.element_ty
        ok = self._REDUCE_TYPES[op]
        if elem.name not in ok:
            from ..frontend.context import SemanticError

            raise SemanticError(f"tensor descriptor atomic_{op} does not take {elem.name} (a tensor reduction's "
                                f"types: {', '.join(ok)})")
        ptrs, m = s._block_ptr_addresses(self._at(offsets), tuple(_py.range(len(self.block_shape))))
        return s.atomic(op, ptrs, value, m)

    @builtin
    def atomic_add(self, offsets, value):
        """tile += value, atomically per element (returns the old values)."""
        return self._atomic("add", offsets, value)

    @builtin
    def atomic_min(self, offsets, value):
        return self._atomic("min", offsets, value)

    @builtin
    def atomic_max(self, offsets, value):
        return self._atomic("max", offsets, value)

    @builtin
    def atomic_and(self, offsets, value):
        return self._atomic("and", offsets, value)

    @builtin
    def atomic_or(self, offsets, value):
        return self._atomic("or", offsets, value)

    @builtin
    def atomic_xor(self, offsets, value):
        return self._atomic("xor", offsets, value)

    def _rows(self, x_offsets, y_offset, what):
        """(pointers, in-bounds mask) of rows `x_offsets` (a 1-D block of row indices), columns y_offset ..
        y_offset + block_shape[1] - 1, of a 2-D descriptor whose block_shape is [1, N]."""
        s = _sem()
        from ..frontend.context import SemanticError

        if len(self.block_shape) != 2 or self.block_shape[0] != 1:
            raise SemanticError(f"tensor descriptor {what} needs a 2-D descriptor with block_shape [1, N], got "
                                f"{list(self.block_shape)}")
        rows = s.to_tensor(_unwrap(x_offsets))
        if len(rows.type.shape) != 1 or not rows.dtype.is_int():
            raise SemanticError(f"tensor descriptor {what}: x_offsets must be a 1-D block of integers, got "
                                f"{rows.type}")
        cols = s.add(s.to_tensor(_unwrap(y_offset)), s.arange(0, self.block_shape[1]))
        r = s.expand_dims(s.cast(rows, int64), 1)
        c = s.expand_dims(s.cast(cols, int64), 0)
        ptrs = s.addptr(s.addptr(self.base, s.mul(r, self.strides[0])), s.mul(c, self.strides[1]))
        inb = s.and_(s.and_(s.compare("ge", r, 0), s.compare("lt", r, self.shape[0])),
                     s.and_(s.compare("ge", c, 0), s.compare("lt", c, self.shape[1])))
        shape = [rows.type.shape[0], self.block_shape[1]]
        return s.broadcast_to(ptrs, shape), s.broadcast_to(inb, shape)

    @builtin
    def gather(self, x_offsets, y_offset):
        """Rows `x_offsets` (a 1-D block), columns `y_offset` onward, of a descriptor with block_shape [1, N]: a
        [len(x_offsets), N] block; out-of-bounds elements read as zero (NaN with padding_option="nan")."""
        ptrs, m = self._rows(x_offsets, y_offset, "gather")
        return _sem().load(ptrs, m, float("nan") if self.padding == "nan" else 0)

    @builtin
    def scatter(self, value, x_offsets, y_offset):
        """Write the [len(x_offsets), N] block `value` to rows `x_offsets`, columns `y_offset` onward;
        out-of-bounds elements are not written."""
        ptrs, m = self._rows(x_offsets, y_offset, "scatter")
        return _sem().store(ptrs, value, m)

    def __repr__(self):
        return f"tensor_descriptor<{self.dtype!r}, {list(self.block_shape)}>"


# ----------------------------------------------------------------------------------------------------
# builtins
# ----------------------------------------------------------------------------------------------------
@builtin
def program_id(axis):
    """The index of this program along grid axis 0, 1 or 2 (int32)."""
    axis = _unwrap(axis)
    if axis not in (0, 1, 2):
        from ..frontend.context import SemanticError

        raise SemanticError(f"program_id axis must be 0, 1, or 2 but got {axis!r}")
    from ..frontend.context import current

    return _sem().tensor(current().builder.program_id(axis), TensorType(int32))


@builtin
def num_programs(axis):
    """The number of programs along grid axis 0, 1 or 2 (int32)."""
    axis = _unwrap(axis)
    if axis not in (0, 1, 2):
        from ..frontend.context import SemanticError

        raise SemanticError(f"num_programs axis must be 0, 1, or 2 but got {axis!r}")
    from ..frontend.context import current

    return _sem().tensor(current().builder.num_programs(axis), TensorType(int32))


@builtin
def arange(start, end):
    """int32 block [start, end); end - start must be a power of two."""
    return _sem().arange(start, end)


@builtin
def full(shape, value, dtype):
    """A block of `shape` filled with `value` of `dtype`."""
    return _sem().full(shape, value, dtype)


@builtin
def zeros(shape, dtype):
    """A block of zeros."""
    return _sem().full(shape, 0, dtype)


@builtin
def zeros_like(input):
    """Zeros with the shape and dtype of `input`."""
    t = _sem().to_tensor(input)
    return _sem().full(t.type.shape or [1], 0, t.dtype) if t.type.shape else _sem().const(0, t.dtype)


@builtin
def full_like(input, value):
    t = _sem().to_tensor(input)
    return _sem().full(t.type.shape, value, t.dtype) if t.type.shape else _sem().const(value, t.dtype)


@builtin
def load(pointer, mask=None, other=None, boundary_check=(), padding_option="", cache_modifier="",
         eviction_policy="", volatile=False):
    """Load from `pointer` (scalar or block of pointers); lanes where `mask` is false take `other`.

    Through a block pointer: `boundary_check` names the dims masked to the array, whose out-of-bounds elements
    read `padding_option` ("zero", the default, or "nan")."""
    pointer = _unwrap(pointer)
    if isinstance(pointer, _sem().block_ptr):
        return _sem().load_block_ptr(pointer, mask, other, _unwrap(boundary_check), _unwrap(padding_option),
                                     _unwrap(cache_modifier), _unwrap(eviction_policy), _unwrap(volatile))
    _sem().check_no_boundary_check(_unwrap(boundary_check), _unwrap(padding_option))
    return _sem().load(pointer, mask, other, _unwrap(cache_modifier), _unwrap(eviction_policy), _unwrap(volatile))


@builtin
def store(pointer, value, mask=None, boundary_check=(), cache_modifier="", eviction_policy=""):
    """Store `value` at `pointer` where `mask` is true; the value is cast to the pointer's element type.
    Through a block pointer, `boundary_check` names the dims whose out-of-bounds elements are not written."""
    pointer = _unwrap(pointer)
    if isinstance(pointer, _sem().block_ptr):
        return _sem().store_block_ptr(pointer, value, mask, _unwrap(boundary_check), _unwrap(cache_modifier),
                                      _unwrap(eviction_policy))
    _sem().check_no_boundary_check(_unwrap(boundary_check), "")
    return _sem().store(pointer, value, mask, _unwrap(cache_modifier), _unwrap(eviction_policy))


@builtin
def make_block_ptr(base, shape, strides, offsets, block_shape, order):
    """A block pointer: the `block_shape` window at `offsets` of the array at `base` with `shape` and `strides`
    (elements); `order` (the dims from fastest to slowest) is accepted as a hint."""
    return _sem().make_block_ptr(base, shape, strides, offsets, block_shape, order)


@builtin
def make_tensor_descriptor(base, shape, strides, block_shape, padding_option="zero"):
    """A tensor descriptor of the array at `base` (`shape`, `strides` in elements, the last stride 1) for tiles of
    `block_shape`; load/store tiles with `desc.load([i, j])` / `desc.store([i, j], x)`."""
    from ..frontend.context import SemanticError

    base = _unwrap(base)
    if not isinstance(base, _sem().tensor) or not base.dtype.is_ptr() or base.type.shape:
        raise SemanticError("make_tensor_descriptor needs a scalar pointer base")
    shape, strides, block_shape = list(_unwrap(shape)), list(_unwrap(strides)), list(_unwrap(block_shape))
    if not (len(shape) == len(strides) == len(block_shape)) or not 1 <= len(shape) <= 5:
        raise SemanticError(f"make_tensor_descriptor needs one shape, stride and block size per dim (1-5 dims), got "
                            f"{len(shape)}, {len(strides)} and {len(block_shape)}")
    last = _unwrap(strides[-1])
    if not isinstance(last, _sem().tensor) and last != 1:
        raise SemanticError(f"make_tensor_descriptor's last stride must be 1, got {last}")
    pad = _unwrap(padding_option)
    if pad not in ("zero", "nan"):
        raise SemanticError(f"padding_option must be 'zero' or 'nan', got {pad!r}")
    # A TMA box's rows are at least 16 bytes; Triton refuses narrower ones, so a kernel written here ports back.
    inner, bits = _unwrap(block_shape[-1]), base.dtype.element_ty.primitive_bitwidth
    if isinstance(inner, int) and inner * bits < 128:
        raise SemanticError(f"Descriptor block shape must have at least 16 bytes in the last dimension, but got "
                            f"{inner} * {bits // 8 if bits >= 8 else bits / 8} = {inner * bits / 8:g} bytes")
    block_shape = [_unwrap(b) for b in block_shape]
    desc = tensor_descriptor(base, shape, strides, block_shape, pad)
    desc.tmap = _in_kernel_tensor_map(base, shape, strides, block_shape, pad)
    desc.own_map = desc.tmap is not None
    return desc


def _in_kernel_tensor_map(base, shape, strides, block_shape, pad):
    """The address (an int64 tensor) of the CUDA tensor map the kernel writes for an in-kernel
    descriptor (a `tensormap_create` op: codegen/tensormap.py writes it into the program's global scratch on sm_90a),
    or None where the descriptor's facts cannot make one: an element type TMA lacks, a block dim over 256 (a box),
    rows of a box that are not whole 16-byte multiples, a last stride not the constant 1, a constant stride that is
    not a whole 16-byte multiple or a constant dim out of range. Runtime strides and the base's alignment are taken
    on Triton's contract for make_tensor_descriptor (a 16-byte aligned base, strides but the last multiples of 16
    bytes). Its loads and stores then carry the map as a host-side descriptor's do, and TMA serves the ones it can
    (passes/pipeline.py tma_served, codegen/tma_store.py); the code generator writes no map that none uses.
    Measured against masked pointer accesses (H100, 2026-12-07, 3 rounds beside Triton): the persistent descriptor
    matmul 0.763 of the time (0.84 of Triton's), the ragged fp32 descriptor matmul's TMA stores 0.970
    (benchmarks/2026-12-07-h100/abin4.md, abin5.md)."""
    from ..tools.tensor_descriptor import tma_box, tma_elemtype

    el = base.dtype.element_ty
    if tma_elemtype(el) is None or not all(isinstance(b, int) and not isinstance(b, bool) for b in block_shape):
        return None
    eb = el.primitive_bitwidth // 8
    box, _ = tma_box(block_shape, eb)
    if any(b > 256 for b in box) or box[-1] * eb % 16:
        return None
    s = _sem()
    vals = [_unwrap(x) for x in list(shape) + list(strides)]
    r = len(block_shape)
    if isinstance(vals[-1], s.tensor) or vals[-1] != 1:
        return None
    for i, v in enumerate(vals[:-1]):
        if isinstance(v, s.tensor):
            if not v.dtype.is_int() or v.type.shape:
                return None
        elif not isinstance(v, int) or isinstance(v, bool):
            return None
        elif i < r and not 0 < v < 2 ** 31 or i >= r and (v <= 0 or v * eb % 16 or v * eb >= 2 ** 40):
            return None
    from ..frontend.context import current

    ops = [base.handle] + [s.cast(s.to_tensor(d), int32).handle for d in vals[:r]] + \
        [s.cast(s.to_tensor(x), int64).handle for x in vals[r:-1]]
    v = current().builder.create("tensormap_create", ops, [_T.TensorType(int64)],
                                 {"block": tuple(block_shape), "padding": pad}).result
    return s.tensor(v, v.type)


@builtin
def load_tensor_descriptor(desc, offsets):
    """`desc.load(offsets)`."""
    return desc.load(offsets)


@builtin
def store_tensor_descriptor(desc, offsets, value):
    """`desc.store(offsets, value)`."""
    return desc.store(offsets, value)


@builtin
def advance(base, offsets):
    """The block pointer `base` moved by `offsets` (one per dim)."""
    return _sem().advance(base, offsets)


@builtin
def broadcast_to(input, *shape):
    if len(shape) == 1 and isinstance(_unwrap(shape[0]), (list, tuple)):
        shape = _unwrap(shape[0])
    return _sem().broadcast_to(_sem().to_tensor(input), tuple(_unwrap(s) for s in shape))


@builtin
def broadcast(input, other):
    a, b = _sem().to_tensor(input), _sem().to_tensor(other)
    shape = _sem().broadcast_shapes(a.type.shape, b.type.shape)
    return _sem().broadcast_to(a, shape), _sem().broadcast_to(b, shape)


@builtin
def expand_dims(input, axis):
    return _sem().expand_dims(input, axis)


@builtin
def reshape(input, *shape, can_reorder=False):
    if len(shape) == 1 and isinstance(_unwrap(shape[0]), (list, tuple)):
        shape = _unwrap(shape[0])
    return _sem().reshape(input, shape)


view = reshape


@builtin
def trans(input, *dims):
    return _sem().trans(input, *dims)


@builtin
def permute(input, *dims):
    if len(dims) == 1 and isinstance(_unwrap(dims[0]), (list, tuple)):
        dims = _unwrap(dims[0])
    return _sem().permute(input, dims)


@builtin
def join(a, b):
    """a and b stacked along a new minor dim of size 2 (shape [..., 2])."""
    return _sem().join(a, b)


@builtin
def split(a):
    """The two halves of a's minor dim of size 2: (a[..., 0], a[..., 1])."""
    return _sem().split(a)


@builtin
def interleave(a, b):
    """a and b interleaved along the last dim: [a0, b0, a1, b1, ...]."""
    return _sem().interleave(a, b)


@builtin
def cat(input, other, can_reorder=False, dim=0):
    """input and other (one shape) concatenated along dim 0, in order (so also correct when can_reorder)."""
    if _unwrap(dim) != 0:
        from ..frontend.context import SemanticError

        raise SemanticError(f"tl.cat along dim {_unwrap(dim)} is not supported (dim 0 is)")
    return _sem().cat(input, other)


@builtin
def flip(x, dim=None):
    """x reversed along `dim` (the last dim when None)."""
    return _sem().flip(x, dim)


@builtin
def sort(x, dim=None, descending=False):
    """x sorted along its last dim (ascending unless `descending`)."""
    return _sem().sort(x, dim, descending)


@builtin
def bitonic_merge(x, dim=None, descending=False):
    """A bitonic sequence along the last dim merged into order (ascending unless `descending`)."""
    return _sem().bitonic_merge(x, dim, descending)


@builtin
def topk(x, k, dim=None):
    """The k largest elements along the last dim, largest first."""
    return _sem().topk(x, k, dim)


@builtin
def histogram(input, num_bins, mask=None):
    """int32 counts of the values of the 1-D int block `input` in [0, num_bins)."""
    return _sem().histogram(input, num_bins, mask)


@builtin
def gather(src, index, axis):
    """src gathered along `axis` at `index` (index has src's shape in the other dims)."""
    return _sem().gather(src, index, axis)


@builtin
def swizzle2d(i, j, size_i, size_j, size_g):
    """Map row-major grid indices (i, j) of a size_i x size_j grid to the grouped order (groups of size_g rows,
    column-major within a group), for L2-friendly tile orders."""
    return _sem().swizzle2d(i, j, size_i, size_j, size_g)


@builtin
def assume(cond):
    """A promise that `cond` holds (accepted as a hint; a compile-time False is an error)."""
    c = _unwrap(cond)
    if not isinstance(c, _sem().tensor) and not c:
        from ..frontend.context import SemanticError

        raise SemanticError("tl.assume of a condition that is False at compile time")
    return None


TRITON_MAX_TENSOR_NUMEL = 1048576  # the largest block Triton allows (the same limit applies here)


@builtin
def add(x, y, sanitize_overflow=True):
    """x + y (pointers too)."""
    return _sem().add(x, y)


@builtin
def sub(x, y, sanitize_overflow=True):
    """x - y."""
    return _sem().sub(x, y)


@builtin
def mul(x, y, sanitize_overflow=True):
    """x * y."""
    return _sem().mul(x, y)


@builtin
def ravel(x, can_reorder=False):
    """x as a 1-D block (row-major order)."""
    t = _sem().to_tensor(x)
    return _sem().reshape(t, (t.type.numel,))


@builtin
def reduce_or(input, axis, keep_dims=False):
    """Bitwise or along `axis`."""
    return _sem().reduce_simple(input, axis, "or", _unwrap(keep_dims))


@builtin
def where(condition, x, y):
    """Elementwise `x` where `condition` else `y` (broadcast together)."""
    return _sem().where(condition, x, y)


@builtin
def maximum(x, y, propagate_nan=PropagateNan.NONE):
    """Elementwise maximum; with propagate_nan=tl.PropagateNan.ALL a NaN operand gives NaN."""
    return _sem().maximum(x, y, _propagates(propagate_nan))


@builtin
def minimum(x, y, propagate_nan=PropagateNan.NONE):
    """Elementwise minimum; with propagate_nan=tl.PropagateNan.ALL a NaN operand gives NaN."""
    return _sem().minimum(x, y, _propagates(propagate_nan))


@builtin
def clamp(x, min, max, propagate_nan=PropagateNan.NONE):
    """min(max(x, min), max); with PropagateNan.ALL a NaN in x stays NaN (NONE gives `min`, as Triton's)."""
    pn = _propagates(propagate_nan)
    return _sem().minimum(_sem().maximum(x, min, pn), max, pn)


@builtin
def cast(input, dtype, fp_downcast_rounding=None, bitcast=False):
    """Convert `input` to `dtype` (bitcast: reinterpret the bits); fp_downcast_rounding "rtne" (default) or "rtz"
    (float32 -> float16/bfloat16)."""
    return _sem().cast(input, _unwrap(dtype), bitcast=_unwrap(bitcast),
                       fp_downcast_rounding=_unwrap(fp_downcast_rounding))


@builtin
def fma(x, y, z):
    return _sem().fma(x, y, z)


@builtin
def fdiv(x, y, ieee_rounding=False):
    """x / y; fp32 division is approximate (2 ulp) unless ieee_rounding."""
    return _sem().truediv(x, y, ieee=bool(_unwrap(ieee_rounding)))


@builtin
def div_rn(x, y):
    """x / y rounded to nearest (IEEE)."""
    return _sem().truediv(x, y, ieee=True)


@builtin
def umulhi(x, y):
    return _sem().umulhi(x, y)


@builtin
def cdiv(x, div):
    """Ceiling division, on tensors or constexprs."""
    x, div = _unwrap(x), _unwrap(div)
    if not isinstance(x, _sem().tensor) and not isinstance(div, _sem().tensor):
        return (x + div - 1) // div
    return _sem().floordiv(_sem().sub(_sem().add(x, div), 1), div)


def _unary(kind, doc):
    def fn(x):
        return _sem().unary(kind, x)

    fn.__name__ = fn.__qualname__ = kind
    fn.__doc__ = doc
    return builtin(fn)


# tl.exp, tl.sqrt, tl.abs ...: one function per unary math op of the op table (compiler/ir/optable.py MATH).
for _name, _d in _optable.MATH.items():
    globals()[_name] = _unary(_name, _d.doc)
del _name, _d


@builtin
def sigmoid(x):
    """1 / (1 + exp(-x))."""
    x = _sem().to_tensor(x)
    return _sem().truediv(1.0, _sem().add(1.0, _sem().unary("exp", _sem().neg(x))))


@builtin
def softmax(x, dim=None, keep_dims=False, ieee_rounding=False):
    """exp(x - max) / sum(exp(x - max)) along `dim` (axis 0 when None, as in Triton)."""
    s = _sem()
    x = s.to_tensor(x)
    ax = 0 if _unwrap(dim) is None else _unwrap(dim)
    keep = _unwrap(keep_dims)
    z = s.sub(x, s.reduce_simple(x, ax, "max", keep_dims=keep))
    num = s.unary("exp", z)
    return s.truediv(num, s.reduce_simple(num, ax, "add", keep_dims=keep), ieee=bool(_unwrap(ieee_rounding)))


# --- reductions ------------------------------------------------------------------------------------
@builtin
def sum(input, axis=None, keep_dims=False, dtype=None):
    """Sum along `axis` (all axes when None); small ints sum in int32, fp16/bf16 in fp32 unless `dtype` given."""
    return _sem().reduce_simple(input, axis, "add", _unwrap(keep_dims), dtype)


def _minmax_input(input, with_indices):
    """What Triton's max/min reduce: bfloat16 as float32 always; without indices, floats under 32 bits as float32
    and integers under 32 bits (bool too) as int32 -- so `tl.max(x) - tl.min(x)` of int16 or uint8 values does
    not wrap, and the result's dtype is Triton's."""
    x = _sem().to_tensor(input)
    d = x.dtype
    if d.is_ptr():
        return x
    if d.is_bf16() or (not with_indices and d.bits < 32):
        return _sem().cast(x, _T.float32 if d.is_floating() else _T.int32)
    return x


@builtin
def max(input, axis=None, return_indices=False, return_indices_tie_break_left=True, keep_dims=False):
    """Maximum along `axis`; with return_indices also the index of the first maximum. Types under 32 bits widen
    as Triton's do (_minmax_input)."""
    if _unwrap(return_indices):
        return _sem().arg_reduce(_minmax_input(input, True), axis, "gt", _unwrap(keep_dims),
                                 _unwrap(return_indices_tie_break_left))
    return _sem().reduce_simple(_minmax_input(input, False), axis, "max", _unwrap(keep_dims))


@builtin
def min(input, axis=None, return_indices=False, return_indices_tie_break_left=True, keep_dims=False):
    """Minimum along `axis`; with return_indices also the index of the first minimum. Types under 32 bits widen
    as Triton's do (_minmax_input)."""
    if _unwrap(return_indices):
        return _sem().arg_reduce(_minmax_input(input, True), axis, "lt", _unwrap(keep_dims),
                                 _unwrap(return_indices_tie_break_left))
    return _sem().reduce_simple(_minmax_input(input, False), axis, "min", _unwrap(keep_dims))


@builtin
def argmax(input, axis, tie_break_left=True, keep_dims=False):
    """Index of the maximum along `axis` (the first one on ties)."""
    return _sem().arg_reduce(input, axis, "gt", _unwrap(keep_dims), _unwrap(tie_break_left))[1]


@builtin
def argmin(input, axis, tie_break_left=True, keep_dims=False):
    """Index of the minimum along `axis` (the first one on ties)."""
    return _sem().arg_reduce(input, axis, "lt", _unwrap(keep_dims), _unwrap(tie_break_left))[1]


@builtin
def xor_sum(input, axis=None, keep_dims=False):
    return _sem().reduce_simple(input, axis, "xor", _unwrap(keep_dims))


@builtin
def item(input):
    """The one element of a one-element block, as a scalar."""
    x = _sem().to_tensor(input)
    if x.type.numel != 1:
        from ..frontend.context import SemanticError

        raise SemanticError(f"item() needs a block of one element, got shape {list(x.type.shape)}")
    if not x.type.shape:
        return x
    return _sem().reduce_simple(x, None, "max")  # the reduction of one element is that element


@builtin
def reduce(input, axis, combine_fn, keep_dims=False):
    """Reduce with a jit `combine_fn(a..., b...) -> values`; `input` may be a tuple of tensors."""
    from ..frontend.context import current

    gen = current()
    inputs = tuple(input) if isinstance(input, (tuple, list)) else input
    return _sem().reduce(inputs, axis, lambda *a: gen.call_function(combine_fn, list(a), {}), _unwrap(keep_dims))


@builtin
def map_elementwise(scalar_fn, *args, pack=1):
    """Apply the jit function `scalar_fn` to each element of the broadcast `args` (one or a tuple of results).

    Each element takes its own branch of the function's `if`s and its own trip count of its `while`s: the
    function is built once on the blocks, its ifs on element values select per element (both sides are
    computed) and its whiles run while any element's condition holds, an element keeping its values once its
    own is false; so these must not write memory. `pack` (elements per call) does not change the result."""
    from ..frontend.context import SemanticError, current

    if _unwrap(pack) < 1:
        raise SemanticError(f"map_elementwise's pack must be >= 1, got {_unwrap(pack)}")
    s = _sem()
    ts = [s.to_tensor(a) for a in args]
    if not ts:
        raise SemanticError("map_elementwise needs at least one tensor argument")
    shape = ()
    for t in ts:
        shape = s.broadcast_shapes(shape, t.type.shape)
    ts = [s.broadcast_to(t, shape) for t in ts]
    gen = current()
    prev = gen.elementwise
    gen.elementwise = True
    try:
        return gen.call_function(scalar_fn, ts, {})
    finally:
        gen.elementwise = prev


@builtin
def inline_asm_elementwise(asm, constraints, args, dtype, is_pure, pack):
    """Run inline PTX `asm` over the elements of `args` (tensors or numbers, broadcast to one shape, each keeping
    its dtype): one result per dtype of `dtype` (a tuple of dtypes gives a tuple of results), of that shape.

    Each asm instance processes `pack` elements: of an argument or result narrower than 32 bits, min(32 / bits,
    pack) elements share one 32-bit register (int8 with pack=4: four bytes, the first in the low byte; float16
    with pack=2: two halves); wider ones take a register per element. `constraints` is LLVM's inline-asm syntax,
    outputs first, one entry per register in the order $0, $1, ...: result 0's registers, result 1's, ..., then
    argument 0's, ... (`"=r,=r,r,r"`; `h` 16-bit, `r` 32-bit, `l` 64-bit, `f` float32, `d` float64 registers;
    a narrower value is widened into its register, signed ints sign-extended). The elements of one instance
    are `pack` consecutive elements of a thread's registers (consecutive along the fastest dim where the layout
    gives a thread that many; which elements share an instance is not specified in Triton either, so the asm must
    treat each element of a pack on its own); a thread holding fewer fills the rest of its last instance with
    undefined values whose results are dropped. `is_pure=False` marks side effects (memory reads or writes):
    such asm is never removed, merged with an equal one or reordered with memory accesses, and runs once in every
    thread holding an element (a tile smaller than the program's threads has several). PTX runs only on the GPU:
    in the interpreter a kernel using it is an error at this call."""
    return _sem().inline_asm(asm, constraints, args, dtype, is_pure, pack)


@builtin
def associative_scan(input, axis, combine_fn, reverse=False):
    """Inclusive scan with a jit `combine_fn`; `input` may be a tuple of tensors."""
    from ..frontend.context import current

    gen = current()
    inputs = tuple(input) if isinstance(input, (tuple, list)) else input
    return _sem().scan(inputs, axis, lambda *a: gen.call_function(combine_fn, list(a), {}), reverse)


@builtin
def cumsum(input, axis=0, reverse=False, dtype=None):
    """Inclusive prefix sum along `axis` (small ints in int32, fp16/bf16 in fp32 unless `dtype`)."""
    s = _sem()
    x = s.to_tensor(input)
    x = s.cast(x, s.sum_dtype(x.dtype, dtype))
    return s.scan(x, axis, s._combine_binary("add"), reverse)


@builtin
def cumprod(input, axis=0, reverse=False):
    """Inclusive prefix product along `axis`."""
    s = _sem()
    return s.scan(s.to_tensor(input), axis, s._combine_binary("mul"), reverse)


# --- matrix product --------------------------------------------------------------------------------
@builtin
def dot(input, other, acc=None, input_precision=None, allow_tf32=None, max_num_imprecise_acc=None,
        out_dtype=float32):
    """input @ other (+ acc) on 2-D blocks (or 3-D batched); fp16/bf16 and tf32 on tensor cores, int8 -> int32.
    `max_num_imprecise_acc` (fp8 operands, at most K): where the dot runs on fp8 wgmma (sm_90a), whose float32
    accumulation keeps fewer bits, at most that many K elements are accumulated by the tensor cores before their
    partial sum is added to the accumulator in full float32 (Triton's Hopper behaviour; 0: after every instruction).
    Elsewhere fp8 products are exact in float32's accumulation already and the limit changes nothing."""
    limit = _unwrap(max_num_imprecise_acc)
    a = _unwrap(input)
    if limit is not None and isinstance(a, _sem().tensor) and a.dtype.is_fp8() and a.type.shape:
        k = a.type.shape[-1]
        if limit > k:
            from ..frontend.context import SemanticError

            raise SemanticError(f"max_num_imprecise_acc ({limit}) must be <= K ({k})")
    else:
        limit = None
    return _sem().dot(input, other, acc, input_precision, allow_tf32, out_dtype, max_num_imprecise_acc=limit)


@builtin
def dot_scaled(lhs, lhs_scale, lhs_format, rhs, rhs_scale, rhs_format, acc=None, fast_math=False, lhs_k_pack=True,
               rhs_k_pack=True, out_dtype=float32):
    """acc + lhs @ rhs of microscaled (OCP MX) blocks: formats "e2m1" (fp4, two per uint8 along K, the first in
    the low bits), "e4m3", "e5m2" (fp8 bits in uint8), "bf16", "fp16"; scales e8m0 in uint8, one per 32 along K
    ([M, K/32] for lhs, [N, K/32] for rhs), or None. Upcast to bfloat16 (float16 when one operand is fp16) and
    multiplied on the tensor cores with float32 accumulation."""
    return _sem().dot_scaled(lhs, lhs_scale, lhs_format, rhs, rhs_scale, rhs_format, acc, fast_math, lhs_k_pack,
                             rhs_k_pack, out_dtype)


# --- atomics ---------------------------------------------------------------------------------------
def _atomic(op):
    def fn(pointer, val, mask=None, sem=None, scope=None):
        return _sem().atomic(op, pointer, val, mask, _unwrap(sem), _unwrap(scope))

    fn.__name__ = f"atomic_{op}"
    fn.__doc__ = f"Atomically apply {op} at `pointer` where `mask`; returns the old values."
    return builtin(fn)


atomic_add = _atomic("add")
atomic_max = _atomic("max")
atomic_min = _atomic("min")
atomic_and = _atomic("and")
atomic_or = _atomic("or")
atomic_xor = _atomic("xor")
atomic_xchg = _atomic("xchg")


@builtin
def atomic_cas(pointer, cmp, val, sem=None, scope=None):
    """Compare-and-swap at `pointer`: store `val` where the old value equals `cmp`; returns the old values."""
    return _sem().atomic_cas(pointer, cmp, val, _unwrap(sem), _unwrap(scope))


# --- debugging and hints ---------------------------------------------------------------------------
@builtin
def device_print(prefix, *args, hex=False):
    """Print from the device (each program, each element), like Triton's device_print."""
    from ..frontend.context import current

    vals = [_sem().to_tensor(a) for a in args]
    current().builder.print(str(_unwrap(prefix)), [v.handle for v in vals], bool(_unwrap(hex)))


@builtin
def device_assert(cond, msg=""):
    """Check `cond` on the device when compiled with debug=True."""
    from ..frontend.context import current

    c = _sem().to_tensor(cond)
    if not c.dtype.is_bool():
        c = _sem().compare("ne", c, 0)
    current().builder.assert_(c.handle, str(_unwrap(msg)))


@builtin
def multiple_of(input, values):
    """Hint that `input` is a multiple of `values` (accepted; the compiler's own analysis is used)."""
    return input


@builtin
def max_contiguous(input, values):
    """Hint that `input` has runs of `values` contiguous elements (accepted; analysis is used)."""
    return input


@builtin
def max_constancy(input, values):
    return input


@builtin
def debug_barrier():
    """A barrier across the program's threads."""
    from ..frontend.context import current

    current().builder.create("barrier", [], [])


class static_range:
    """`for i in tl.static_range(...)`: the loop is unrolled at compile time; `i` is a constexpr."""

    def __init__(self, arg1, arg2=None, step=None):
        if arg2 is None:
            self.start, self.end = 0, _unwrap(arg1)
        else:
            self.start, self.end = _unwrap(arg1), _unwrap(arg2)
        self.step = 1 if step is None else _unwrap(step)


class range:
    """`for i in tl.range(...)`: a runtime loop. `num_stages` is this loop's own pipelining depth (the launch's
    num_stages otherwise; below 2, its loads are not pipelined); the other hints (loop_unroll_factor, flatten,
    warp_specialize, disallow_acc_multi_buffer) are accepted and left to the compiler."""

    def __init__(self, arg1, arg2=None, step=None, num_stages=None, loop_unroll_factor=None, flatten=False,
                 warp_specialize=False, disallow_acc_multi_buffer=False):
        if arg2 is None:
            self.start, self.end = 0, arg1
        else:
            self.start, self.end = arg1, arg2
        self.step = 1 if step is None else step
        stages = _unwrap(num_stages)
        if stages is not None and (isinstance(stages, bool) or not isinstance(stages, int) or stages < 0):
            from ..frontend.context import SemanticError

            raise SemanticError(f"tl.range's num_stages must be a non-negative int, got {stages!r}")
        self.num_stages = stages


# static_assert / static_print are handled by the frontend itself (they need the source location).
@builtin
def static_assert(cond, msg=""):
    from ..frontend.context import StaticAssertError

    if not _unwrap(cond):
        raise StaticAssertError(f"static_assert failed: {_unwrap(msg)}" if _unwrap(msg) else "static_assert failed")


@builtin
def static_print(*values, sep=" ", end="\n", file=None, flush=False):
    import sys

    print(sep.join(str(_unwrap(v)) for v in values), end=end, file=file or sys.stdout, flush=flush)


# Tensor methods (x.exp(), x.sum(0), x.cast(dt), ...): Triton's functions that are also methods of its tensor,
# installed on the value type from TENSOR_METHODS in compiler/frontend/semantic.py (one definition serves both
# forms: the method is the tl function of the same name).
