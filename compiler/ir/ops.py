"""The op kinds of the tile IR, what each means, and a Builder that creates them with checked result types.

The op table, compiler/ir/optable.py, declares every kind once with the facts the compiler reads (operand
count, result rule, traits, layout rule; the unary math ops completely); this docstring says what each means.

Conventions
- Every value has a TensorType: element (a dtype or pointer_type) and shape; shape () is a scalar.
- Elementwise ops require all tensor operands to have the same shape (the frontend inserts `splat` /
  `broadcast` first) and, except where noted, the same element type (the frontend inserts `cast`).
- Integer semantics are two's complement with wrap-around at the type's width; signedness of `idiv`,
  `irem`, `shr`, `cmp`, `max`, `min`, `cast` comes from the operand dtype (int* signed, uint* unsigned).
- Float ops round to the result dtype after each op (fp16/bf16 included).

Op kinds (operands -> results; attrs):
  const          () -> T                          value (python number/bool), T scalar or block (a splat constant)
  program_id     () -> i32                        axis (0..2)
  num_programs   () -> i32                        axis (0..2)
  arange         () -> <N x i32>                  start, end (end-start a power of two)
  splat          (s) -> <shape x T>               shape
  broadcast      (x) -> <shape x T>               shape (x has the same rank, size-1 dims grow)
  expand_dims    (x) -> T with a 1 inserted       axis
  reshape        (x) -> <shape x T>               shape (row-major order of elements preserved)
  permute        (x) -> T with dims permuted      order (result dim i = x dim order[i])
  add sub mul                 (a, b) -> T         ints wrap; pointers use addptr instead
  fdiv                        (a, b) -> T         float division; fp32 within 2 ulp (div.full) unless attr ieee
  idiv irem                   (a, b) -> T         integer division truncating toward zero / C remainder
  frem                        (a, b) -> T         float remainder with the sign of a (C fmod)
  and or xor                  (a, b) -> T         bitwise (int1 too)
  shl shr                     (a, b) -> T         shr is arithmetic for int*, logical for uint*
  max min                     (a, b) -> T         floats: NaN-ignoring unless attr propagate_nan
  umulhi                      (a, b) -> T         high half of the full unsigned product (32/64-bit ints, signed
                                                  ones read as unsigned, as Triton's umulhi)
  neg not                     (x) -> T            not: bitwise complement (logical for int1)
  exp exp2 log ... abs        (x) -> T            the unary math ops: optable.MATH declares each (its meaning,
                                                  operand rule, lowering); floats only except abs floor ceil
  fma            (a, b, c) -> T                   a*b+c with one rounding
  extern_elementwise (x0..xn-1) -> T              symbol: a libdevice function (`__nv_tanhf`) applied per element;
                                                  operands of one shape, each of the function's own dtype; pure
  inline_asm     (x0..xn-1) -> m values           asm, constraints, pack: tl.inline_asm_elementwise; operands and
                                                  results of one shape (any dtypes but int1); each asm instance
                                                  takes `pack` elements of each (registers: ir/inline_asm.py);
                                                  pure. `inline_asm_effects`: the same with side effects
                                                  (is_pure=False: never dropped, shared or reordered with memory
                                                  ops). The interpreter cannot run either (PTX)
  cmp            (a, b) -> int1-shaped            pred: eq ne lt le gt ge (signedness from dtype; floats ordered
                                                  except ne, which is unordered, as in C)
  select         (c, a, b) -> T                   c int1
  cast           (x) -> T'                        to: dtype; numeric conversion (float->int truncates toward
                                                  zero, int->int wraps, to int1 means != 0); rounding "rtz" (f32
                                                  -> f16/bf16 only) rounds toward zero; to/from fp8 see numerics
  bitcast        (x) -> T'                        to: dtype of equal width (or pointer<->pointer)
  addptr         (p, off) -> pointer              p + off * sizeof(element); off any int type
  ptr_to_int     (p) -> i64
  int_to_ptr     (i) -> pointer                   to: the pointer type; i an int64/uint64 address
  load           (p[, mask[, other]]) -> T        attrs: cache, eviction, volatile; masked-off lanes read `other`
                                                  (undefined when absent; the interpreter gives 0); `mask` and
                                                  `other` are present exactly when attrs has_mask / has_other
  store          (p, v[, mask]) -> ()             attrs: has_mask, cache, eviction
  atomic_rmw     (p, v[, mask]) -> T              op: add max min and or xor xchg; sem, scope; returns old value
  atomic_cas     (p, cmp, v) -> T                 sem, scope; returns old value
  reduce         (x0..xn-1) -> n values           axis; one block: args (a0..an-1, b0..bn-1), yields n values;
                                                  reduces dim `axis` (the result drops that dim)
  scan           (x0..xn-1) -> n values           axis, reverse; same combine block; inclusive scan
  for            (lb, ub, step, init...) -> n     body block: args (iv, carried...), ends with yield of n values;
                                                  iv has lb's type; iterates while iv < ub (step > 0)
  if             (cond, ) -> n                    blocks [then, else], each ends with yield of n values
  while          (init...) -> n                   blocks [before, after]; before's args are the carried values
                                                  and it ends with `condition` (c, values...); after gets those
                                                  values and yields the next carried values
  yield          (values...) -> ()                terminator
  condition      (c, values...) -> ()             terminator of a while's before block
  return         () -> ()                         terminator of the kernel body
  print          (values...) -> ()                prefix, hex; device_print (lines as print_layout says)
  assert         (c) -> ()                        msg; device_assert (checked when debug is on)
  dot            (a, b, acc) -> T                 input_precision, out_dtype (part 2)
  histogram      (x) -> int32[bins]               bins; counts of the 1-D int block x's values in [0, bins), others
                                                  not counted (tl.histogram)
  gather         (src, index) -> T[index's shape]  axis; out[.., i, ..] = src[.., index[.., i, ..], ..] along axis,
                                                  0 where the index is outside [0, src's size there) (tl.gather)
  tensormap_create (base, shape..., strides...) -> i64  block, padding, slot: the CUDA tensor map of
                                                  an in-kernel descriptor, written into the program's global scratch
                                                  (sm_90a); its address, or 0 in the interpreter

Ops that only the target passes create (never the frontend, never the interpreter):
  async_copy     (p[, mask]) -> ()                copy a dot operand tile global -> shared memory without
                                                  registers (cp.async), masked-off elements zero-filled; attrs
                                                  ring (the loop's ring attrs: id, stages, tiles), operand (0 | 1),
                                                  slot (a constant slot, before the loop) or ahead (iterations
                                                  ahead of the current one, inside it), commit (close the group),
                                                  barrier (a barrier first: the tight ring)
  async_wait     () -> ()                         ring, pending: wait until at most `pending` copy groups are in
                                                  flight, then make the copies visible to every warp
  smem_view      () -> T                          ring, operand: the operand tile of the current iteration, in
                                                  its ring slot (dots and smem_load read it)
  smem_load      (view) -> T                      a ring slot's tile read into registers, in any layout (the
                                                  loaded tile's uses other than dots)
"""
from __future__ import annotations

from .core import Block, Loc, Op, UNKNOWN_LOC, Value
from . import types as T
from .optable import MATH, OPS

# Lists the Builder checks against, read off the op table (compiler/ir/optable.py).
BINARY_SAME = tuple(k for k, d in OPS.items() if d.operands == 2 and d.result == "same")
UNARY_MATH = tuple(k for k in MATH if k != "abs")
UNARY_SAME = tuple(k for k, d in OPS.items() if d.operands == 1 and d.result == "same" and not d.has("target"))
CMP_PREDS = ("eq", "ne", "lt", "le", "gt", "ge")
ATOMIC_OPS = ("add", "max", "min", "and", "or", "xor", "xchg")
TERMINATORS = tuple(k for k, d in OPS.items() if d.has("terminator"))


class IRError(Exception):
    """An internal consistency error in IR construction (a compiler bug, not a user mistake)."""


class Builder:
    """Appends ops to the current insertion block; every method returns the result Value(s)."""

    def __init__(self, block: Block | None = None):
        self.block = block
        self.loc: Loc = UNKNOWN_LOC

    # --- plumbing ----------------------------------------------------------------------------------
    def set_insertion_block(self, block: Block) -> None:
        self.block = block

    def create(self, kind, operands=(), result_types=(), attrs=None, blocks=(), loc=None) -> Op:
        for t in result_types:  # Triton's fp8 names NVIDIA GPUs do not have: refused where a kernel computes with one
            bad = T.unsupported_element(t)
            if bad is not None:
                raise T.UnsupportedTypeError(T.unsupported_message(bad))
        op = Op(kind, operands, result_types, attrs, blocks, loc or self.loc)
        self.block.append(op)
        return op

    def _one(self, kind, operands, rtype, attrs=None) -> Value:
        return self.create(kind, operands, [rtype], attrs).result

    # --- sources -----------------------------------------------------------------------------------
    def const(self, value, ty: T.TensorType) -> Value:
        return self._one("const", [], ty, {"value": value})

    def program_id(self, axis: int) -> Value:
        return self._one("program_id", [], T.TensorType(T.int32), {"axis": axis})

    def num_programs(self, axis: int) -> Value:
        return self._one("num_programs", [], T.TensorType(T.int32), {"axis": axis})

    def arange(self, start: int, end: int) -> Value:
        return self._one("arange", [], T.TensorType(T.int32, (end - start,)), {"start": start, "end": end})

    def histogram(self, x: Value, bins: int) -> Value:
        """int32 counts of the values of the 1-D int block x in [0, bins)."""
        if len(x.type.shape) != 1:
            raise IRError("histogram of a block that is not 1-D")
        return self._one("histogram", [x], T.TensorType(T.int32, (bins,)), {"bins": bins})

    def gather(self, src: Value, index: Value, axis: int) -> Value:
        """src's elements along `axis` at index's values (index has src's shape on every other dim)."""
        s, i = src.type.shape, index.type.shape
        if len(s) != len(i) or not s or any(a != b for d, (a, b) in enumerate(zip(s, i)) if d != axis):
            raise IRError(f"gather of {list(s)} by an index of {list(i)} along {axis}")
        return self._one("gather", [src, index], T.TensorType(src.type.element, tuple(i)), {"axis": axis})

    # --- shapes ------------------------------------------------------------------------------------
    def splat(self, x: Value, shape) -> Value:
        if x.type.shape:
            raise IRError("splat of a block")
        return self._one("splat", [x], x.type.with_shape(shape), {"shape": tuple(shape)})

    def broadcast(self, x: Value, shape) -> Value:
        shape = tuple(shape)
        if len(shape) != len(x.shape) or any(a != b and a != 1 for a, b in zip(x.shape, shape)):
            raise IRError(f"broadcast {x.shape} -> {shape}")
        if shape == x.shape:
            return x
        return self._one("broadcast", [x], x.type.with_shape(shape), {"shape": shape})

    def expand_dims(self, x: Value, axis: int) -> Value:
        shape = list(x.shape)
        shape.insert(axis, 1)
        return self._one("expand_dims", [x], x.type.with_shape(shape), {"axis": axis})

    def reshape(self, x: Value, shape) -> Value:
        shape = tuple(shape)
        if x.type.with_shape(shape).numel != x.type.numel:
            raise IRError("reshape changes the element count")
        if shape == x.shape:
            return x
        return self._one("reshape", [x], x.type.with_shape(shape), {"shape": shape})

    def permute(self, x: Value, order) -> Value:
        order = tuple(order)
        if order == tuple(range(len(order))):
            return x
        shape = tuple(x.shape[i] for i in order)
        return self._one("permute", [x], x.type.with_shape(shape), {"order": order})

    # --- elementwise -------------------------------------------------------------------------------
    def binary(self, kind: str, a: Value, b: Value, **attrs) -> Value:
        if kind not in BINARY_SAME:
            raise IRError(kind)
        if a.type != b.type:
            raise IRError(f"{kind}: {a.type} vs {b.type}")
        return self._one(kind, [a, b], a.type, attrs or None)

    def unary(self, kind: str, x: Value) -> Value:
        if kind not in UNARY_SAME:
            raise IRError(kind)
        return self._one(kind, [x], x.type)

    def fma(self, a: Value, b: Value, c: Value) -> Value:
        return self._one("fma", [a, b, c], a.type)

    def extern_elementwise(self, symbol: str, operands, rtype: T.TensorType) -> Value:
        if any(v.type.shape != rtype.shape for v in operands):
            raise IRError(f"extern_elementwise {symbol}: operand shapes differ from {rtype.shape}")
        return self._one("extern_elementwise", list(operands), rtype, {"symbol": symbol})

    def inline_asm(self, asm: str, constraints: str, operands, rtypes, pure: bool, pack: int) -> list:
        shape = rtypes[0].shape
        if any(v.type.shape != shape for v in operands) or any(t.shape != shape for t in rtypes):
            raise IRError("inline_asm: operands and results of different shapes")
        kind = "inline_asm" if pure else "inline_asm_effects"
        return self.create(kind, list(operands), list(rtypes), {"asm": asm, "constraints": constraints,
                                                                "pack": int(pack)}).results

    def cmp(self, pred: str, a: Value, b: Value) -> Value:
        if a.type != b.type:
            raise IRError(f"cmp: {a.type} vs {b.type}")
        return self._one("cmp", [a, b], a.type.with_element(T.int1), {"pred": pred})

    def select(self, c: Value, a: Value, b: Value) -> Value:
        return self._one("select", [c, a, b], a.type)

    def cast(self, x: Value, to, rounding=None) -> Value:
        if x.type.element == to:
            return x
        attrs = {"to": to} if rounding is None else {"to": to, "rounding": rounding}
        return self._one("cast", [x], x.type.with_element(to), attrs)

    def bitcast(self, x: Value, to) -> Value:
        if x.type.element == to:
            return x
        return self._one("bitcast", [x], x.type.with_element(to), {"to": to})

    def addptr(self, p: Value, off: Value) -> Value:
        return self._one("addptr", [p, off], p.type)

    def ptr_to_int(self, p: Value) -> Value:
        return self._one("ptr_to_int", [p], p.type.with_element(T.int64))

    def int_to_ptr(self, i: Value, to) -> Value:
        return self._one("int_to_ptr", [i], i.type.with_element(to), {"to": to})

    # --- memory ------------------------------------------------------------------------------------
    def load(self, p: Value, mask=None, other=None, cache="", eviction="", volatile=False) -> Value:
        ops = [p] + ([mask] if mask is not None else []) + ([other] if other is not None else [])
        attrs = {"has_mask": mask is not None, "has_other": other is not None, "cache": cache,
                 "eviction": eviction, "volatile": volatile}
        return self._one("load", ops, p.type.with_element(p.type.element.element_ty), attrs)

    def store(self, p: Value, v: Value, mask=None, cache="", eviction="") -> Op:
        ops = [p, v] + ([mask] if mask is not None else [])
        return self.create("store", ops, [], {"has_mask": mask is not None, "cache": cache, "eviction": eviction})

    def atomic_rmw(self, op: str, p: Value, v: Value, mask=None, sem="acq_rel", scope="gpu") -> Value:
        ops = [p, v] + ([mask] if mask is not None else [])
        return self._one("atomic_rmw", ops, v.type, {"op": op, "has_mask": mask is not None, "sem": sem,
                                                      "scope": scope})

    def atomic_cas(self, p: Value, cmp: Value, v: Value, sem="acq_rel", scope="gpu") -> Value:
        return self._one("atomic_cas", [p, cmp, v], v.type, {"sem": sem, "scope": scope})

    # --- misc --------------------------------------------------------------------------------------
    def print(self, prefix: str, values, hex: bool = False) -> Op:
        return self.create("print", list(values), [], {"prefix": prefix, "hex": hex})

    def assert_(self, cond: Value, msg: str) -> Op:
        return self.create("assert", [cond], [], {"msg": msg})

    def yield_(self, values=()) -> Op:
        return self.create("yield", list(values), [])

    def condition(self, cond: Value, values=()) -> Op:
        return self.create("condition", [cond] + list(values), [])

    def ret(self) -> Op:
        return self.create("return", [], [])


def print_layout(prefix: str, n_values: int, shape) -> tuple:
    """How a `print` op's lines read, the same in the interpreter and on the GPU (Triton's layout):
    `pid (x, y, z) idx (i, j){label}{operand}{value}`, one line per element and per value, where label is
    " <prefix without its trailing ':' and spaces>: " (just ": " for an empty prefix), operand is "(operand k) "
    when there are several values, and each index is padded to the width of its dimension's largest index
    ("idx ()" for a scalar). Without values a line is `pid (x, y, z) <prefix>`.
    Returns (label, index widths)."""
    p = prefix.strip()
    if n_values == 0:
        return (f" {p}" if p else ""), ()
    p = p.rstrip(":").rstrip()
    label = f" {p}: " if p else ": "
    return label, tuple(len(str(max(int(n) - 1, 0))) for n in shape)

