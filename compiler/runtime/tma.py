"""CUDA tensor maps for host-side TensorDescriptor arguments (compiler/tools/tensor_descriptor.py).

`expand_descriptors` turns each descriptor launch value into the parameters the kernel takes for it (the
frontend's `_descriptor_args`): the address of its tensor map in device memory (encoded by the driver's
cuTensorMapEncodeTiled; 0 where a descriptor cannot be one, and the kernel then never reads it), the base
pointer, the shape and the strides but the last. Encoded maps are kept per (address, dtype, shape, strides,
block, padding), so a descriptor made again for the same array costs no copy."""
from __future__ import annotations

from collections import OrderedDict

import numpy as np

from ..tools.tensor_descriptor import tma_applies, tma_box
from .cuda import driver, check, ensure_context

_CACHE: OrderedDict = OrderedDict()
_CACHE_MAX = 4096

_DTYPES = {  # numpy dtype name -> CUtensorMapDataType member (8-bit floats and ints travel as bytes)
    "float16": "CU_TENSOR_MAP_DATA_TYPE_FLOAT16", "bfloat16": "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16",
    "float32": "CU_TENSOR_MAP_DATA_TYPE_FLOAT32", "float64": "CU_TENSOR_MAP_DATA_TYPE_FLOAT64",
    "int32": "CU_TENSOR_MAP_DATA_TYPE_INT32", "uint32": "CU_TENSOR_MAP_DATA_TYPE_UINT32",
    "int64": "CU_TENSOR_MAP_DATA_TYPE_INT64", "uint64": "CU_TENSOR_MAP_DATA_TYPE_UINT64",
    "uint16": "CU_TENSOR_MAP_DATA_TYPE_UINT16", "int16": "CU_TENSOR_MAP_DATA_TYPE_UINT16",
    "int8": "CU_TENSOR_MAP_DATA_TYPE_UINT8", "uint8": "CU_TENSOR_MAP_DATA_TYPE_UINT8",
    "float8_e4m3fn": "CU_TENSOR_MAP_DATA_TYPE_UINT8", "float8_e5m2": "CU_TENSOR_MAP_DATA_TYPE_UINT8",
}


def encode_tiled(ptr: int, dtype, shape, strides, block_shape, padding="zero") -> bytes:
    """The 128 bytes of a tiled CUtensorMap of the row-major array at `ptr` (shape/strides in elements, the last
    stride 1), with the box and swizzle of `tma_box`."""
    d = driver()
    eb = dtype.bits // 8
    box, sw = tma_box(block_shape, eb)
    rank = len(shape)
    name = dtype.np.name if hasattr(dtype, "np") else str(dtype)
    dt = getattr(d.CUtensorMapDataType, _DTYPES[name])
    swz = {0: "CU_TENSOR_MAP_SWIZZLE_NONE", 32: "CU_TENSOR_MAP_SWIZZLE_32B", 64: "CU_TENSOR_MAP_SWIZZLE_64B",
           128: "CU_TENSOR_MAP_SWIZZLE_128B"}[sw]
    fill = ("CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA" if padding == "nan"
            else "CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE")
    gdim = [d.cuuint64_t(int(x)) for x in reversed(shape)]
    gstr = [d.cuuint64_t(int(x) * eb) for x in reversed(strides[:-1])]
    bdim = [d.cuuint32_t(int(x)) for x in reversed(box)]
    estr = [d.cuuint32_t(1)] * rank
    tmap = check(d.cuTensorMapEncodeTiled(dt, rank, ptr, gdim, gstr, bdim, estr,
                                          d.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
                                          getattr(d.CUtensorMapSwizzle, swz),
                                          d.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                          getattr(d.CUtensorMapFloatOOBfill, fill)),
                 f"cuTensorMapEncodeTiled(shape={list(shape)}, strides={list(strides)}, box={list(box)})")
    words = np.array([int(w) for w in tmap.opaque], dtype=np.uint64)
    return words.tobytes()


def tensor_map_address(desc, ptr: int, dtype) -> int:
    """Device address of the tensor map of TensorDescriptor `desc` whose base (of element type `dtype`) is at
    `ptr` (0: not a TMA descriptor: unaligned base or strides, boxes over 256)."""
    eb = dtype.bits // 8
    shape, strides = tuple(int(x) for x in desc.shape), tuple(int(x) for x in desc.strides)
    block = tuple(int(x) for x in desc.block_shape)
    if not tma_applies(block, eb, ptr % 16 == 0, strides, shape):
        return 0
    key = (ptr, dtype.name, shape, strides, block, desc.padding)
    hit = _CACHE.get(key)
    if hit is not None:
        _CACHE.move_to_end(key)
        return hit.data_ptr()
    from .memory import DeviceArray

    ensure_context()
    buf = DeviceArray.from_numpy(np.frombuffer(encode_tiled(ptr, dtype, shape, strides, block, desc.padding),
                                               np.uint8))
    _CACHE[key] = buf
    if len(_CACHE) > _CACHE_MAX:
        _CACHE.popitem(last=False)
    return buf.data_ptr()


def expand_descriptors(launch_vals):
    """The launch values with each (TensorDescriptor, base pointer, dtype) replaced by the kernel's parameters for
    it."""
    out = []
    for v in launch_vals:
        if isinstance(v, tuple) and len(v) == 3 and hasattr(v[0], "block_shape"):
            desc, ptr, dtype = v
            out += [tensor_map_address(desc, int(ptr), dtype), int(ptr)] + [int(x) for x in desc.shape] + \
                [int(x) for x in desc.strides[:-1]]
        else:
            out.append(v)
    return out
