"""Host-side tensor descriptors (Triton's `triton.tools.tensor_descriptor.TensorDescriptor`).

`TensorDescriptor.from_tensor(x, block_shape)` describes a row-major array (the last stride 1) read and written
in `block_shape` tiles; a kernel parameter given one is a `tl.tensor_descriptor` (`desc.load([i, j])`,
`desc.store([i, j], tile)`), with the semantics of `tl.make_tensor_descriptor` (out-of-bounds elements read as
zero, or NaN with padding="nan", and are not written).

On the GPU the launch also passes a CUDA tensor map (`cuTensorMapEncodeTiled`, 128 bytes in device memory, kept
per descriptor value), which the loads the code generator serves by TMA read (see codegen/tma.py); every other
access goes through the base pointer, shape and strides, which are passed as well."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class TensorDescriptor:
    base: Any
    shape: list
    strides: list
    block_shape: list
    padding: str = "zero"
    _tmap: dict = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self):
        self.shape, self.strides, self.block_shape = list(self.shape), list(self.strides), list(self.block_shape)
        rank = len(self.shape)
        if not 1 <= rank <= 5 or len(self.strides) != rank or len(self.block_shape) != rank:
            raise ValueError(f"TensorDescriptor needs one shape, stride and block size per dim (1-5 dims), got "
                             f"{len(self.shape)}, {len(self.strides)} and {len(self.block_shape)}")
        if int(self.strides[-1]) != 1:
            raise ValueError(f"TensorDescriptor's last stride must be 1, got {self.strides[-1]}")
        for b in self.block_shape:
            b = int(b)
            if b < 1 or b & (b - 1):
                raise ValueError(f"TensorDescriptor's block sizes must be powers of two, got {self.block_shape}")
        if self.padding not in ("zero", "nan"):
            raise ValueError(f"TensorDescriptor's padding must be 'zero' or 'nan', got {self.padding!r}")

    @staticmethod
    def from_tensor(tensor: Any, block_shape, padding: str = "zero") -> "TensorDescriptor":
        """The descriptor of a whole array (torch tensor, NumPy array, DeviceArray, ...) with its own shape and
        strides (in elements)."""
        shape = list(tensor.shape)
        st = tensor.stride() if callable(getattr(tensor, "stride", None)) else None
        if st is None:
            st = getattr(tensor, "strides", None)
            isz = getattr(getattr(tensor, "dtype", None), "itemsize", None)
            if st is not None and isz:
                st = [s // isz for s in st]
            else:  # C-contiguous arrays without strides (compiler.runtime.DeviceArray)
                st, n = [], 1
                for d in reversed(shape):
                    st.insert(0, n)
                    n *= int(d)
        return TensorDescriptor(tensor, shape, list(st), list(block_shape), padding)


def tma_box(block_shape, ebytes: int):
    """(box, swizzle) of the TMA copies of a `block_shape` tile of `ebytes`-byte elements: the box (outermost dim
    first) is the tile with its last dim cut to what one swizzle span holds (at most 128 bytes), and the swizzle
    (128, 64 or 32 bytes; 0: none) is that span. A tile wider than 128 bytes is copied as several boxes side by
    side, each a column block of the shared-memory layout wgmma reads (codegen/dot.py's SwizzledTile, whose rows
    of min(width, 128) bytes are XOR-swizzled exactly as TMA's 128B/64B/32B modes write them)."""
    inner = int(block_shape[-1]) * ebytes
    sw = 128 if inner >= 128 else inner if inner in (32, 64) else 0
    cols = sw // ebytes if sw else int(block_shape[-1])
    return tuple(int(b) for b in block_shape[:-1]) + (cols,), sw


def tma_applies(block_shape, ebytes: int, base_aligned: bool, strides, shape=None) -> bool:
    """Whether a descriptor can be a CUDA tensor map: a 16-byte aligned base, strides (but the last) of whole
    16-byte multiples, box dims of at most 256 elements, rows of at least 16 bytes."""
    box, _ = tma_box(block_shape, ebytes)
    return (base_aligned and all(int(s) * ebytes % 16 == 0 for s in strides[:-1]) and all(b <= 256 for b in box)
            and box[-1] * ebytes % 16 == 0 and len(block_shape) <= 5
            and (shape is None or all(0 < int(d) < 2 ** 32 for d in shape)))


# The element types of tensormap.replace's `elemtype` field (PTX ISA, "Tensormap new_val validity"; Triton's
# TMA_ELEMENT_TYPES): .u8 0, .u16 1, .u32 2, .s32 3, .u64 4, .s64 5, .f16 6, .f32 7, .f32.ftz 8, .f64 9, .bf16 10. Not
# CUtensorMapDataType's numbering, which differs from f64 on. 8-bit floats and ints travel as bytes, 16-bit ints as
# u16, as the host's maps do (runtime/tma.py).
_ELEMTYPES = {"float16": 6, "bfloat16": 10, "float32": 7, "float64": 9}


def tma_elemtype(el):
    """tensormap.replace's element type number for IR element type `el`, or None where TMA has none (int1,
    pointers)."""
    if el.name in _ELEMTYPES:
        return _ELEMTYPES[el.name]
    kind, bits = str(getattr(el, "kind", "")), getattr(el, "bits", 0)
    if kind == "float" and bits == 8 or kind in ("int", "uint") and bits in (8, 16):
        return {8: 0, 16: 1}[bits]  # UINT8, UINT16
    if kind in ("int", "uint") and bits in (32, 64):
        return {(32, "uint"): 2, (32, "int"): 3, (64, "uint"): 4, (64, "int"): 5}[bits, kind]
    return None
