"""Element types, pointer types and tensor types of the tile IR.

The same objects are the user-visible dtypes (`tl.float32` is `compiler.ir.types.float32`), so a dtype read
off a pointer inside a kernel (`X.dtype.element_ty`) is the one the IR uses.
"""
from __future__ import annotations

from dataclasses import dataclass

# NumPy and ml_dtypes are loaded on first use (`dtype.np`, `from_numpy`): compiling a kernel needs neither, and
# `import compiler` should not pay for them (ml_dtypes 0.7.0's extension alone took ~450 ms to import).
_BF16_NP = None  # ml_dtypes' bfloat16 NumPy dtype, once `_bf16_np` has looked for it (False: not installed)
_NP: dict = {}


class _Kind(str):
    """A dtype's kind: the string the compiler compares ('int', 'uint', 'float', 'bool', 'ptr'), and, called as
    Triton's `dtype.kind()`, its KIND."""

    __slots__ = ()

    def __call__(self):
        return TritonDtypeAPI.KIND.FLOATING if self == "float" else (
            TritonDtypeAPI.KIND.BOOLEAN if self == "bool" else TritonDtypeAPI.KIND.INTEGRAL)


# Triton's names for the fp8 formats, with their mantissa bits and exponent biases.
_FP8 = {"fp8e4nv": (3, 7), "fp8e5": (2, 15), "fp8e4b15": (3, 15), "fp8e4b8": (3, 8), "fp8e5b16": (2, 16)}
_FP_FORMAT = {"float16": (10, 15), "bfloat16": (7, 127), "float32": (23, 127), "float64": (52, 1023)}


class TritonDtypeAPI:
    """The attributes and predicates of Triton's `tl.dtype` that kernels and tests read (`is_floating()`,
    `primitive_bitwidth`, `fp_mantissa_width`, `int_signedness`, `get_int_max_value()`, ...), shared by element
    and pointer types. One difference: int1 is `is_bool()` and neither signed nor unsigned here."""

    __slots__ = ()

    import enum as _enum

    class SIGNEDNESS(_enum.Enum):
        SIGNED = 0
        UNSIGNED = 1

    class KIND(_enum.Enum):
        BOOLEAN = 0
        INTEGRAL = 1
        FLOATING = 2

    del _enum
    SINT_TYPES = ["int8", "int16", "int32", "int64"]
    UINT_TYPES = ["int1", "uint8", "uint16", "uint32", "uint64"]
    FP_TYPES = ["fp8e4b15", "fp8e4nv", "fp8e4b8", "fp8e5", "fp8e5b16", "fp16", "bf16", "fp32", "fp64"]
    STANDARD_FP_TYPES = ["fp16", "bf16", "fp32", "fp64"]
    OTHER_TYPES = ["void"]

    @staticmethod
    def is_dtype(type_str) -> bool:
        t = TritonDtypeAPI
        return type_str in t.SINT_TYPES + t.UINT_TYPES + t.FP_TYPES + t.OTHER_TYPES

    def _triton_name(self):
        return getattr(self, "short_triton", None) or str(self)

    def _is(self, *names):
        return not self.is_ptr() and self.name in names

    def is_int1(self):
        return self._is("int1")

    def is_int8(self):
        return self._is("int8")

    def is_int16(self):
        return self._is("int16")

    def is_int32(self):
        return self._is("int32")

    def is_int64(self):
        return self._is("int64")

    def is_uint8(self):
        return self._is("uint8")

    def is_uint16(self):
        return self._is("uint16")

    def is_uint32(self):
        return self._is("uint32")

    def is_uint64(self):
        return self._is("uint64")

    def is_fp16(self):
        return self._is("float16")

    def is_bf16(self):
        return self._is("bfloat16")

    def is_fp32(self):
        return self._is("float32")

    def is_fp64(self):
        return self._is("float64")

    def is_standard_floating(self):
        return self._is("float16", "bfloat16", "float32", "float64")

    def is_fp8(self):
        return self.is_floating() and self.bits == 8

    def _fp8_named(self, triton_name):
        return self.is_fp8() and triton_name in (self.name, str(self), getattr(self, "short", None))

    def is_fp8e4nv(self):
        return self._fp8_named("fp8e4nv") or self._fp8_named("float8e4nv")

    def is_fp8e5(self):
        return self._fp8_named("fp8e5") or self._fp8_named("float8e5")

    def is_fp8e4b15(self):
        return self._fp8_named("fp8e4b15") or self._fp8_named("float8e4b15")

    def is_fp8e4b8(self):
        return self._fp8_named("fp8e4b8") or self._fp8_named("float8e4b8")

    def is_fp8e5b16(self):
        return self._fp8_named("fp8e5b16") or self._fp8_named("float8e5b16")

    def is_void(self):
        return False

    def is_block(self):
        return False

    def is_const(self):
        return False

    @property
    def scalar(self):
        return self

    @property
    def int_bitwidth(self) -> int:
        if not self.is_int():
            raise AttributeError(f"{self!r} is not an integer type: no int_bitwidth")
        return self.bits

    @property
    def int_signedness(self):
        if not self.is_int():
            raise AttributeError(f"{self!r} is not an integer type: no int_signedness")
        return self.SIGNEDNESS.SIGNED if self.is_int_signed() else self.SIGNEDNESS.UNSIGNED

    def _fp_format(self):
        if not self.is_floating():
            raise AttributeError(f"{self!r} is not a floating-point type")
        f = _FP_FORMAT.get(self.name)
        if f is None:
            for k, v in _FP8.items():
                if self._fp8_named(k) or self._fp8_named("float8" + k[3:]):
                    return v
            raise AttributeError(f"the format of {self!r} is not known")
        return f

    @property
    def fp_mantissa_width(self) -> int:
        return self._fp_format()[0]

    @property
    def exponent_bias(self) -> int:
        return self._fp_format()[1]

    def get_int_max_value(self) -> int:
        if self.is_bool():
            return 1
        if self.is_int_signed():
            return 2 ** (self.bits - 1) - 1
        if self.is_int_unsigned():
            return 2 ** self.bits - 1
        raise AttributeError(f"{self!r} is not an integer type")

    def get_int_min_value(self) -> int:
        if self.is_int_signed():
            return -(2 ** (self.bits - 1))
        if self.is_int_unsigned() or self.is_bool():
            return 0
        raise AttributeError(f"{self!r} is not an integer type")

    def with_element_ty(self, element_ty):
        return element_ty

    def cache_key_part(self) -> str:
        return str(self)

    def codegen_name(self) -> str:
        return str(self)

    def mangle(self) -> str:
        return str(self)

    def to_ir(self, builder=None):
        raise NotImplementedError("dtype.to_ir is Triton's MLIR builder API; this compiler builds its own IR")


class dtype(TritonDtypeAPI):
    """A scalar element type: `kind` is 'int', 'uint', 'float' or 'bool' (int1)."""

    __slots__ = ("name", "kind", "bits", "short")

    # the names of Triton's dtype lists (`tl.dtype.SINT_TYPES`, ...), of the dtypes this compiler has
    SINT_TYPES = ["int8", "int16", "int32", "int64"]
    UINT_TYPES = ["int1", "uint8", "uint16", "uint32", "uint64"]
    FP_TYPES = ["fp8e4nv", "fp8e5", "fp16", "bf16", "fp32", "fp64"]
    STANDARD_FP_TYPES = ["fp16", "bf16", "fp32", "fp64"]

    def __new__(cls, name: str, kind: str | None = None, bits: int = 0, short: str = ""):
        if kind is None:  # `tl.dtype("int8")`, as in Triton: the dtype of that name
            return from_name(name)
        return super().__new__(cls)

    def __init__(self, name: str, kind: str | None = None, bits: int = 0, short: str = ""):
        if kind is None:
            return  # from_name's instance, already made
        self.name, self.kind, self.bits, self.short = name, _Kind(kind), bits, short

    # --- classification -------------------------------------------------------------------------
    def is_floating(self) -> bool:
        return self.kind == "float"

    def is_int(self) -> bool:
        return self.kind in ("int", "uint", "bool")

    def is_int_signed(self) -> bool:
        return self.kind == "int"

    def is_int_unsigned(self) -> bool:
        return self.kind == "uint"

    def is_bool(self) -> bool:
        return self.kind == "bool"

    def is_ptr(self) -> bool:
        return False

    def is_bf16(self) -> bool:
        return self.name == "bfloat16"

    def is_fp16(self) -> bool:
        return self.name == "float16"

    def is_fp32(self) -> bool:
        return self.name == "float32"

    def is_fp64(self) -> bool:
        return self.name == "float64"

    def is_fp8(self) -> bool:
        """float8e4nv (e4m3, bias 7, no inf, max 448) or float8e5 (e5m2, bias 15, IEEE-like, max 57344)."""
        return self.kind == "float" and self.bits == 8

    def is_fp8e4nv(self) -> bool:
        return self.name == "float8e4nv"

    def is_fp8e5(self) -> bool:
        return self.name == "float8e5"

    @property
    def primitive_bitwidth(self) -> int:
        return self.bits

    @property
    def itemsize(self) -> int:
        return max(1, self.bits // 8)

    @property
    def np(self):
        """The NumPy dtype that stores this type (bfloat16: ml_dtypes' if present, else uint16 bits)."""
        if self.name == "bfloat16":
            import numpy as np

            return _bf16_np() or np.dtype(np.uint16)
        if self.bits == 8 and self.kind == "float":
            return _fp8_np(self.name)
        return (_NP or _np_table())[self.name]

    def __repr__(self) -> str:
        return self.name

    def __str__(self) -> str:
        return self.short

    def __reduce__(self):
        return (from_name, (self.name,))


class pointer_type(TritonDtypeAPI):
    """A pointer to global memory holding elements of `element_ty`; `const` (a `tl.const` parameter) refuses
    stores and atomics through it and is otherwise the same type (equal, same IR)."""

    __slots__ = ("element_ty", "address_space", "const")

    def __init__(self, element_ty, address_space: int = 1, const: bool = False):
        self.element_ty = element_ty
        self.address_space = address_space
        self.const = bool(const)

    name = "pointer"
    kind = _Kind("ptr")
    bits = 64

    def is_const(self) -> bool:
        return self.const

    @property
    def scalar(self):
        return self

    def is_ptr(self) -> bool:
        return True

    def is_floating(self) -> bool:
        return False

    def is_int(self) -> bool:
        return False

    def is_bool(self) -> bool:
        return False

    def is_int_signed(self) -> bool:
        return False

    def is_int_unsigned(self) -> bool:
        return False

    @property
    def itemsize(self) -> int:
        return 8

    def __eq__(self, other) -> bool:
        return isinstance(other, pointer_type) and other.element_ty == self.element_ty

    def __hash__(self) -> int:
        return hash(("ptr", self.element_ty))

    def __repr__(self) -> str:
        return f"pointer<{self.element_ty!r}>"

    def __str__(self) -> str:
        return f"ptr<{self.element_ty}>"


int1 = dtype("int1", "bool", 1, "i1")
int8 = dtype("int8", "int", 8, "i8")
int16 = dtype("int16", "int", 16, "i16")
int32 = dtype("int32", "int", 32, "i32")
int64 = dtype("int64", "int", 64, "i64")
uint8 = dtype("uint8", "uint", 8, "u8")
uint16 = dtype("uint16", "uint", 16, "u16")
uint32 = dtype("uint32", "uint", 32, "u32")
uint64 = dtype("uint64", "uint", 64, "u64")
float16 = dtype("float16", "float", 16, "f16")
bfloat16 = dtype("bfloat16", "float", 16, "bf16")
float32 = dtype("float32", "float", 32, "f32")
float64 = dtype("float64", "float", 64, "f64")
float8e4nv = dtype("float8e4nv", "float", 8, "fp8e4nv")
float8e5 = dtype("float8e5", "float", 8, "fp8e5")
# float8e4b15: Triton's software format (4 exponent bits biased by 15 -- float16's -- and 3 mantissa bits, no inf or
# NaN, largest 1.75 at 0x7E), converted by bit arithmetic (no NVIDIA instruction has it); its NumPy storage is the
# raw uint8 bits (ml_dtypes has no such format)
float8e4b15 = dtype("float8e4b15", "float", 8, "fp8e4b15")
FP8_DTYPES = [float8e4nv, float8e5, float8e4b15]
# Triton's fp8 formats that NVIDIA GPUs do not have (AMD's fnuz pair): the names exist, so code that names, compares
# or reinterprets them runs, and a kernel that computes with one is refused ("not supported in this architecture",
# Triton's words on NVIDIA GPUs).
float8e4b8 = dtype("float8e4b8", "float", 8, "fp8e4b8")
float8e5b16 = dtype("float8e5b16", "float", 8, "fp8e5b16")
UNSUPPORTED_FP8 = frozenset((float8e4b8, float8e5b16))


def unsupported_element(t):
    """The unsupported fp8 dtype a type holds or points to (see UNSUPPORTED_FP8), else None."""
    e = getattr(t, "element", t)
    while isinstance(e, pointer_type):
        e = e.element_ty
    return e if e in UNSUPPORTED_FP8 else None


def unsupported_message(d) -> str:
    return (f"tl.{d.name} is not supported in this architecture: NVIDIA GPUs have the fp8 formats tl.float8e4nv and "
            "tl.float8e5 (and Triton's software format tl.float8e4b15)")


class UnsupportedTypeError(ValueError):
    """A kernel computes with a dtype this target does not have (unsupported_message says which)."""

ALL_DTYPES = [int1, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16, bfloat16, float32, float64]
_BY_NAME = {d.name: d for d in ALL_DTYPES}
_BY_NAME.update({"bool": int1, "i1": int1, "fp16": float16, "bf16": bfloat16, "fp32": float32, "fp64": float64})
for _d in ALL_DTYPES + FP8_DTYPES + sorted(UNSUPPORTED_FP8, key=lambda d: d.name):
    _BY_NAME[_d.name] = _BY_NAME[_d.short] = _d
_BY_NAME.update({"fp8e4m3": float8e4nv, "e4m3": float8e4nv, "fp8e5m2": float8e5, "e5m2": float8e5})

_NP_NAMES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "float32",
             "float64")


def _np_table() -> dict:
    """`_NP` (tile dtype name -> NumPy dtype, bfloat16 left out: see `_bf16_np`), importing NumPy once."""
    if not _NP:
        import numpy as np

        table = {"int1": np.dtype(np.bool_)}
        table.update((name, np.dtype(name)) for name in _NP_NAMES)
        _NP.update(table)
    return _NP


def _bf16_np():
    """ml_dtypes' bfloat16 NumPy dtype, imported on first use; False when ml_dtypes is not installed."""
    global _BF16_NP
    if _BF16_NP is None:
        try:  # ml_dtypes gives NumPy a real bfloat16; without it the interpreter rounds through float32 by hand.
            import ml_dtypes as _ml_dtypes  # type: ignore
            import numpy as np

            _BF16_NP = np.dtype(_ml_dtypes.bfloat16)
        except Exception:  # pragma: no cover - optional
            _BF16_NP = False
    return _BF16_NP

def _fp8_np(name):
    """ml_dtypes' NumPy dtype of an fp8 type (float8_e4m3fn / float8_e5m2), imported on first use."""
    try:
        import ml_dtypes as _ml_dtypes  # type: ignore
        import numpy as np
    except Exception as e:  # pragma: no cover - ml_dtypes is a dependency
        raise RuntimeError(f"{name} arrays need ml_dtypes") from e
    if name == "float8e4b15":
        return np.dtype(np.uint8)  # its bits (see float8e4b15)
    if name not in ("float8e4nv", "float8e5"):
        raise UnsupportedTypeError(unsupported_message(from_name(name)))
    return np.dtype(_ml_dtypes.float8_e4m3fn if name == "float8e4nv" else _ml_dtypes.float8_e5m2)


def from_name(name: str) -> dtype:
    """Look a dtype up by any of its names ('float32', 'fp32', 'f32', 'bf16', 'bool' ...)."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise ValueError(f"unknown dtype {name!r}; known: {', '.join(d.name for d in ALL_DTYPES)}") from None


_FROM_NP_CACHE: dict = {}


def from_numpy(np_dtype) -> dtype:
    """The tile dtype of a NumPy (or ml_dtypes) dtype (memoized: it sits on the launch path)."""
    try:
        return _FROM_NP_CACHE[np_dtype]
    except (KeyError, TypeError):
        pass
    d = _from_numpy(np_dtype)
    try:
        _FROM_NP_CACHE[np_dtype] = d
    except TypeError:
        pass
    return d


def _from_numpy(np_dtype) -> dtype:
    import numpy as np

    nd = np.dtype(np_dtype)
    if nd.name == "bfloat16":  # ml_dtypes' (a bfloat16 array exists, so ml_dtypes is loaded already)
        return bfloat16
    if nd.name == "float8_e4m3fn":
        return float8e4nv
    if nd.name == "float8_e5m2":
        return float8e5
    for name, d in (_NP or _np_table()).items():
        if d == nd:
            return _BY_NAME[name]
    raise ValueError(f"NumPy dtype {nd} has no tile dtype")


def has_numpy_bfloat16() -> bool:
    return bool(_bf16_np())


@dataclass(frozen=True)
class TensorType:
    """The type of an IR value: an element type (dtype or pointer_type) and a shape; shape () is a scalar."""

    element: object
    shape: tuple = ()

    @property
    def is_block(self) -> bool:
        return len(self.shape) > 0

    @property
    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def element_ty(self):
        """Triton's `x.type.element_ty`: a block's element type; for a scalar pointer (whose type Triton spells
        as the pointer type itself) the type it points to."""
        if self.shape:
            return self.element
        if isinstance(self.element, pointer_type):
            return self.element.element_ty
        raise AttributeError(f"a scalar of type {self.element} has no element_ty (only blocks and pointers do)")

    def scalar(self) -> "TensorType":
        return TensorType(self.element, ())

    def with_shape(self, shape) -> "TensorType":
        return TensorType(self.element, tuple(shape))

    def with_element(self, element) -> "TensorType":
        return TensorType(element, self.shape)

    def __str__(self) -> str:
        if not self.shape:
            return str(self.element)
        return f"<{'x'.join(str(s) for s in self.shape)}x{self.element}>"
