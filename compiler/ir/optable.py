"""The op table: every op kind of the tile IR, declared once, with the facts the rest of the compiler reads.

`OPS[kind]` is an `OpDef`: how many operands, the rule that gives the result type, and traits:
  pure         no effect beyond its results: shared when equal (canonicalize), dropped when unused (dce)
  effects      writes memory, synchronizes, prints/asserts, or is control flow: never dropped
  elementwise  each result element depends only on the operand elements at its position, so a layout passes
               through it unchanged (assign_layouts)
  commutative  f(a, b) == f(b, a) (the interpreter's reduction fast path)
  reads_memory reads global or shared memory
  region       has nested blocks
  terminator   ends a block
  target       created only by the target passes (never by the frontend, never run by the interpreter)
`layout` is the op's rule in passes/assign_layouts.py: "elementwise" (the default of elementwise ops: operands
and result share one layout), "source" (materialized directly in the layout its users want), "anchor" (a
memory access: a coalesced layout from the pointer's axis info), "own" (a rule of its own there: dot, shape ops,
reductions, loops), None (no rule: scalar-only ops, ops without block results, and smem_view, a ring slot that
dots read from shared memory; smem_load, which reads one into registers, is a source).
Who reads it: ir/ops.py (the Builder's op lists), ir/verify.py (operand counts and the "same" result rule),
passes/canonicalize.py and passes/dce.py (pure, effects), passes/assign_layouts.py (elementwise),
interpreter/evaluator.py (commutative) and, for the unary math ops, everything below.

`MATH[kind]` is a `MathDef` (an OpDef with result rule "same"): one unary math op completely, so that adding
one (say `tl.erfc`) is one entry here. From it
  - compiler/language/core.py makes `tl.<name>` (and tl.math.<name>), with `doc` as its docstring; when
    `method`, frontend/semantic.py also makes it a tensor method `x.<name>()`;
  - frontend/semantic.py checks the operand (`ints`: "error" rejects integers, "identity" returns an integer
    operand unchanged, "abs" is abs's own integer rule; fp8 is computed in float32 and rounded back);
  - interpreter/numerics.py evaluates it: `ref(np, x)` is the float64 meaning. `exact` ops (correctly rounded
    in any dtype: sqrt floor ceil abs) run in the operand dtype (16-bit floats through float32, which is exact
    for them); the others run in float64 and are rounded once to the result dtype (`ref_ftz`, when given,
    replaces `ref` for float32 and narrower: the GPU instruction flushes denormals);
  - codegen/llvm.py lowers it by `lower[dtype name]`: "__nv_<f>" calls libdevice, "llvm.<f>" an LLVM
    intrinsic on the operand's type, "asm:<ptx>" a one-operand float32 PTX instruction, "@<name>" a routine
    of codegen/llvm.py (`ROUTINES`). A 16-bit float without its own entry is computed in float32 and rounded
    back once;
  - passes see an elementwise pure op, the verifier a one-operand op of its result's type.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True, kw_only=True)
class OpDef:
    """One op kind. `operands`: the operand count (None: any number). `result`: "same" (one result of every
    operand's type), "i1" (one int1 result of the operands' shape), "none" (no results), or "op" (the builder
    gives it; see ir/ops.py for the rule)."""

    name: str
    operands: int | None
    result: str
    traits: frozenset = frozenset()
    layout: str | None = None

    def __post_init__(self):
        if self.layout is None and "elementwise" in self.traits:
            object.__setattr__(self, "layout", "elementwise")

    def has(self, trait: str) -> bool:
        return trait in self.traits


@dataclass(frozen=True, kw_only=True)
class MathDef(OpDef):
    """A unary math op: everything from the frontend to the lowering (see the module docstring)."""

    operands: int = 1
    result: str = "same"
    traits: frozenset = frozenset(("pure", "elementwise"))
    doc: str
    ref: Callable
    lower: dict
    exact: bool = False
    ints: str = "error"
    ref_ftz: Callable | None = None
    method: bool = True


OPS: dict[str, OpDef] = {}
MATH: dict[str, MathDef] = {}


def _op(names: str, operands, result, traits: str = "", layout=None) -> None:
    for n in names.split():
        OPS[n] = OpDef(name=n, operands=operands, result=result, traits=frozenset(traits.split()), layout=layout)


def _math(name: str, doc: str, ref, lower: dict, **kw) -> None:
    MATH[name] = OPS[name] = MathDef(name=name, doc=doc, ref=ref, lower=lower, **kw)


def _scalar(fn):
    """A Python float function applied per element, in float64 (for functions NumPy lacks)."""
    return lambda np, x: np.frompyfunc(fn, 1, 1)(x).astype(np.float64)


def _exp2_ftz(np, x):
    y = np.exp2(x)
    return np.where(np.abs(y) < _F32_TINY, 0.0, y)


def _rsqrt_ftz(np, x):
    x = np.where(np.abs(x) < _F32_TINY, np.copysign(0.0, x), x)
    with np.errstate(divide="ignore", invalid="ignore"):
        return 1.0 / np.sqrt(x)


_F32_TINY = 2.0 ** -126  # the smallest normal float32

# ---- sources and shapes --------------------------------------------------------------------------------------
_op("const arange", 0, "op", "pure", layout="source")
_op("program_id num_programs", 0, "op", "pure")
_op("splat", 1, "op", "pure", layout="source")
_op("broadcast expand_dims reshape permute", 1, "op", "pure", layout="own")

# ---- elementwise arithmetic ------------------------------------------------------------------------------------
_COMMUTATIVE = "add mul and or xor max min umulhi".split()
for _n in "add sub mul fdiv idiv irem frem and or xor shl shr max min umulhi".split():
    _op(_n, 2, "same", "pure elementwise" + (" commutative" if _n in _COMMUTATIVE else ""))
_op("neg not", 1, "same", "pure elementwise")

# The unary math ops. f32 fast paths are Triton's choices: exp2 and rsqrt flush denormals (.ftz), as Triton's do
# (the non-ftz forms cost ptxas two FMULs and a compare around every MUFU, a third of the softmax ALU work of an
# attention loop); tl.exp keeps denormals (ex2.approx.f32 of x*log2(e)).
_math("exp", "e**x", lambda np, x: np.exp(x), {"float32": "@exp_approx", "float64": "__nv_exp"})
_math("exp2", "2**x", lambda np, x: np.exp2(x),
      {"float32": "asm:ex2.approx.ftz.f32 $0, $1;", "float64": "__nv_exp2"}, ref_ftz=_exp2_ftz)
# tl.log / tl.log2 on float32: libdevice's logf / log2f (within 1 ulp), as Triton 3.6 lowers them; the lg2.approx
# instruction (2^-21.41 absolute error near 1, where log itself is tiny) is what the libdevice functions avoid.
_math("log", "natural logarithm", lambda np, x: np.log(x), {"float32": "__nv_logf", "float64": "__nv_log"})
_math("log2", "base-2 logarithm", lambda np, x: np.log2(x), {"float32": "__nv_log2f", "float64": "__nv_log2"})
# tl.sqrt: Triton's is a fast approximation (float32 sqrt.approx); here IEEE rounded: Triton's instruction took
# 0.999 of the time over the four corpus kernels it changed (H100, 2026-12-06), so the exact result costs nothing.
_math("sqrt", "square root (float32: IEEE rounded; Triton's tl.sqrt is an approximation within about 1 ulp)",
      lambda np, x: np.sqrt(x), {"float32": "@sqrt", "float64": "llvm.sqrt"}, exact=True)
_math("sqrt_rn", "square root, IEEE round to nearest", lambda np, x: np.sqrt(x),
      {"float32": "llvm.sqrt", "float64": "llvm.sqrt"}, exact=True)
_math("rsqrt", "1/sqrt(x)", lambda np, x: 1.0 / np.sqrt(x),
      {"float32": "asm:rsqrt.approx.ftz.f32 $0, $1;", "float64": "__nv_rsqrt"}, ref_ftz=_rsqrt_ftz)
_math("sin", "sine", lambda np, x: np.sin(x), {"float32": "__nv_sinf", "float64": "__nv_sin"})
_math("cos", "cosine", lambda np, x: np.cos(x), {"float32": "__nv_cosf", "float64": "__nv_cos"})
_math("erf", "error function", _scalar(math.erf), {"float32": "__nv_erff", "float64": "__nv_erf"})
_math("erfc", "complementary error function, 1 - erf(x) without its cancellation for large x", _scalar(math.erfc),
      {"float32": "__nv_erfcf", "float64": "__nv_erfc"})
_math("floor", "round down", lambda np, x: np.floor(x), {"float32": "llvm.floor", "float64": "llvm.floor"},
      exact=True, ints="identity")
_math("ceil", "round up", lambda np, x: np.ceil(x), {"float32": "llvm.ceil", "float64": "llvm.ceil"},
      exact=True, ints="identity")
# fabs on 16-bit floats is a sign-bit clear (exact): native, not through float32.
_math("abs", "absolute value (ints too)", lambda np, x: np.abs(x),
      {t: "llvm.fabs" for t in ("float32", "float64", "float16", "bfloat16")}, exact=True, ints="abs")

_op("fma", 3, "same", "pure elementwise")
_op("extern_elementwise", None, "op", "pure elementwise")
_op("cmp", 2, "i1", "pure elementwise")
_op("select", 3, "op", "pure elementwise")
_op("cast bitcast ptr_to_int int_to_ptr", 1, "op", "pure elementwise")
_op("addptr", 2, "op", "pure elementwise")
# tl.inline_asm_elementwise (several results; ir/inline_asm.py packs them into registers). is_pure=True is pure
# (shared when equal, dropped when unused); is_pure=False is `inline_asm_effects`: it may read and write memory,
# so it is never dropped, shared, or moved past another memory access.
_op("inline_asm", None, "op", "pure elementwise")
_op("inline_asm_effects", None, "op", "reads_memory effects elementwise")

# ---- memory ------------------------------------------------------------------------------------------------------
_op("load", None, "op", "reads_memory", layout="anchor")
_op("store", None, "none", "effects", layout="anchor")
_op("atomic_rmw", None, "op", "reads_memory effects", layout="anchor")
_op("atomic_cas", 3, "op", "reads_memory effects", layout="anchor")

# ---- regions, terminators, the rest ----------------------------------------------------------------------------
_op("reduce scan", None, "op", "pure region", layout="own")
_op("for if while", None, "op", "effects region", layout="own")
_op("yield condition return", None, "none", "effects terminator")
_op("print assert", None, "none", "effects")
_op("barrier", 0, "none", "effects")  # tl.debug_barrier
_op("dot", 3, "op", "pure", layout="own")
# tl.histogram: int32 counts of a 1-D block's values in [0, bins) (others not counted); its result is made in
# whatever layout its users want, its operand read in its own
_op("histogram", 1, "op", "pure", layout="source")
# tl.gather through shared memory (the A/B `gather_smem`): src's elements along `axis` picked by index; the result is
# made in the index's layout, src read in its own (codegen/reduce.py)
_op("gather", 2, "op", "pure", layout="own")
# the CUDA tensor map of an in-kernel tensor descriptor written into the program's global scratch:
# (base, shape..., strides but the last...) -> its int64 address; attrs block, padding, slot. Writes memory and
# synchronizes the block, so never dropped or moved; the interpreter gives 0 (its loads read through pointers).
_op("tensormap_create", None, "op", "effects")

# ---- made by the target passes ---------------------------------------------------------------------------------
_op("convert_layout", 1, "same", "elementwise target")
_op("async_copy", None, "none", "reads_memory effects target", layout="anchor")
_op("async_wait", 0, "none", "effects target")
_op("smem_view", 0, "op", "reads_memory target")
_op("smem_load", 1, "op", "reads_memory target", layout="source")


def kinds(*traits: str, without: tuple = ()) -> frozenset:
    """The op kinds that have every one of `traits` and none of `without`."""
    return frozenset(k for k, d in OPS.items() if all(d.has(t) for t in traits) and not any(d.has(t) for t in without))


def with_layout(rule: str) -> frozenset:
    """The op kinds whose layout rule is `rule`."""
    return frozenset(k for k, d in OPS.items() if d.layout == rule)


def lookup(kind: str) -> OpDef | None:
    return OPS.get(kind)


del _n

__all__ = ["OpDef", "MathDef", "OPS", "MATH", "kinds", "with_layout", "lookup"]
