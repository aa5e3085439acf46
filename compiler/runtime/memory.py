"""DeviceArray: the project's own minimal device array, so the farm and tests need no torch.

A DeviceArray owns (or borrows) one cuMemAlloc'd buffer, C-contiguous, with a NumPy dtype. It copies to and
from NumPy, can be filled with a byte or a value (to poison outputs before a run, so unwritten elements
show), and exposes ``__cuda_array_interface__`` (v3) so CuPy/Numba/torch can view it without copying.
"""

from __future__ import annotations

import math
import weakref
from typing import Any, Iterable

import numpy as np

from .cuda import check, driver, ensure_context

__all__ = ["DeviceArray", "resolve_dtype"]


def resolve_dtype(dtype: Any) -> np.dtype:
    """A NumPy dtype from a dtype, a type or a name; ``"bfloat16"`` (and fp8 names) via ml_dtypes."""
    if isinstance(dtype, np.dtype):
        return dtype
    try:
        return np.dtype(dtype)
    except TypeError:
        pass
    name = getattr(dtype, "name", dtype)
    if isinstance(name, str):
        try:
            import ml_dtypes  # optional: bfloat16 / float8 as NumPy dtypes
        except ImportError as e:
            raise TypeError(f"dtype {name!r} needs the ml_dtypes package") from e
        if hasattr(ml_dtypes, name):
            return np.dtype(getattr(ml_dtypes, name))
    raise TypeError(f"unknown dtype {dtype!r}")


def _free(ptr: int, device: int) -> None:
    """Finalizer: cuMemFree, tolerating a driver that is already gone (GC at interpreter shutdown)."""
    try:
        ensure_context(device)
        driver().cuMemFree(ptr)
    except Exception:
        pass  # the process is ending or the context is dead: the driver reclaims the memory anyway


class DeviceArray:
    """A C-contiguous array in GPU global memory.

    Create with ``DeviceArray.empty(shape, dtype)``, ``DeviceArray.zeros``, ``DeviceArray.from_numpy(a)``,
    or wrap foreign memory with ``DeviceArray.from_ptr``. Memory is freed when the object is collected.
    cuMemAlloc returns 256-byte aligned addresses, which every vectorised access relies on.
    """

    __slots__ = ("_ptr", "shape", "dtype", "nbytes", "_device", "_finalizer", "_owner", "__weakref__")

    def __init__(self, ptr: int, shape: tuple[int, ...], dtype: np.dtype, device: int, owner: Any = None,
                 own: bool = False):
        self._ptr = int(ptr)
        self.shape = tuple(int(s) for s in shape)
        self.dtype = dtype
        self.nbytes = math.prod(self.shape) * dtype.itemsize
        self._device = device
        self._owner = owner  # keeps a borrowed buffer's real owner alive
        if own and self._ptr:
            self._finalizer = weakref.finalize(self, _free, self._ptr, device)
            # At interpreter exit the driver may already be torn down; the OS reclaims device memory.
            self._finalizer.atexit = False
        else:
            self._finalizer = None

    # --- construction ----------------------------------------------------------------------------------

    @classmethod
    def empty(cls, shape: int | Iterable[int], dtype: Any = np.float32) -> "DeviceArray":
        """Allocate an uninitialised array (contents are whatever was in memory)."""
        from .cuda import current_device

        shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)
        if any(s < 0 for s in shape):
            raise ValueError(f"negative dimension in shape {shape}")
        dt = resolve_dtype(dtype)
        nbytes = math.prod(shape) * dt.itemsize
        ensure_context()
        dev = current_device()
        if nbytes == 0:
            return cls(0, shape, dt, dev)  # cuMemAlloc(0) is an error; an empty array needs no memory
        ptr = check(driver().cuMemAlloc(nbytes), f"cuMemAlloc({nbytes})")
        return cls(int(ptr), shape, dt, dev, own=True)

    @classmethod
    def zeros(cls, shape: int | Iterable[int], dtype: Any = np.float32) -> "DeviceArray":
        """Allocate an array filled with zero bytes."""
        a = cls.empty(shape, dtype)
        a.fill_bytes(0)
        return a

    @classmethod
    def from_numpy(cls, a: np.ndarray) -> "DeviceArray":
        """Copy a NumPy array (any layout; copied C-contiguous) to a new DeviceArray."""
        a = np.asarray(a)
        out = cls.empty(a.shape, a.dtype)
        out.copy_from_numpy(a)
        return out

    @classmethod
    def from_ptr(cls, ptr: int, shape: int | Iterable[int], dtype: Any, owner: Any = None) -> "DeviceArray":
        """Wrap existing device memory without taking ownership (``owner`` is kept alive, if given)."""
        from .cuda import current_device

        shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(shape)
        return cls(ptr, shape, resolve_dtype(dtype), current_device(), owner=owner)

    # --- properties ------------------------------------------------------------------------------------

    def data_ptr(self) -> int:
        """The device address of element 0 (an int), as torch's ``Tensor.data_ptr()``."""
        return self._ptr

    @property
    def ptr(self) -> int:
        """Same as ``data_ptr()``."""
        return self._ptr

    @property
    def size(self) -> int:
        """Number of elements."""
        return math.prod(self.shape)

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return len(self.shape)

    @property
    def itemsize(self) -> int:
        """Bytes per element."""
        return self.dtype.itemsize

    @property
    def strides(self) -> tuple[int, ...]:
        """Byte strides of the (C-contiguous) layout, as NumPy reports them."""
        st, acc = [], self.dtype.itemsize
        for s in reversed(self.shape):
            st.append(acc)
            acc *= max(s, 1)
        return tuple(reversed(st))

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d DeviceArray")
        return self.shape[0]

    def __repr__(self) -> str:
        return f"DeviceArray(shape={self.shape}, dtype={self.dtype.name}, ptr=0x{self._ptr:x})"

    @property
    def __cuda_array_interface__(self) -> dict:
        """CUDA Array Interface v3. ``strides`` None = C-contiguous. No ``stream`` key: our copies and
        fills are synchronous and launches go to the legacy default stream, which orders with everything.
        (bfloat16 has no CAI typestr of its own; it appears as ``<V2``.)"""
        return {
            "shape": self.shape,
            "typestr": self.dtype.str,
            "data": (self._ptr, False),
            "strides": None,
            "version": 3,
        }

    # --- copies and fills ------------------------------------------------------------------------------

    def numpy(self) -> np.ndarray:
        """Copy to a new NumPy array (cuMemcpyDtoH: waits for prior work on the legacy default stream)."""
        out = np.empty(self.shape, self.dtype)
        if self.nbytes:
            ensure_context()
            check(driver().cuMemcpyDtoH(out.ctypes.data, self._ptr, self.nbytes),
                  f"cuMemcpyDtoH(<host>, 0x{self._ptr:x}, {self.nbytes})")
        return out

    def copy_from_numpy(self, a: np.ndarray) -> "DeviceArray":
        """Copy a NumPy array of the same number of elements into this array (cast to our dtype)."""
        a = np.ascontiguousarray(a, dtype=self.dtype)
        if a.size != self.size:
            raise ValueError(f"size mismatch: array has {a.size} elements, DeviceArray {self.size}")
        if self.nbytes:
            ensure_context()
            check(driver().cuMemcpyHtoD(self._ptr, a.ctypes.data, self.nbytes),
                  f"cuMemcpyHtoD(0x{self._ptr:x}, <host>, {self.nbytes})")
        return self

    def copy_(self, other: "DeviceArray") -> "DeviceArray":
        """Device-to-device copy from another DeviceArray of the same byte size."""
        if other.nbytes != self.nbytes:
            raise ValueError(f"byte size mismatch: {other.nbytes} vs {self.nbytes}")
        if self.nbytes:
            ensure_context()
            check(driver().cuMemcpyDtoD(self._ptr, other._ptr, self.nbytes), "cuMemcpyDtoD")
        return self

    def fill_bytes(self, byte: int) -> "DeviceArray":
        """Set every byte to ``byte`` (0-255) with cuMemsetD8."""
        if not 0 <= int(byte) <= 255:
            raise ValueError(f"byte must be in 0..255, got {byte}")
        if self.nbytes:
            ensure_context()
            check(driver().cuMemsetD8(self._ptr, int(byte), self.nbytes),
                  f"cuMemsetD8(0x{self._ptr:x}, {byte}, {self.nbytes})")
        return self

    def fill(self, value: Any) -> "DeviceArray":
        """Set every element to ``value`` (converted to our dtype), e.g. NaN to poison a float output."""
        if not self.nbytes:
            return self
        pattern = np.array(value, dtype=self.dtype).reshape(1).view(np.uint8).tobytes()
        n = self.size
        d = driver()
        ensure_context()
        # The memset family writes 1/2/4-byte patterns on the device without a host buffer; 8- and 16-byte
        # elements use a 32-bit memset when both halves agree, else one host->device copy.
        if len(pattern) == 1:
            check(d.cuMemsetD8(self._ptr, pattern[0], n), "cuMemsetD8")
        elif len(pattern) == 2:
            check(d.cuMemsetD16(self._ptr, int.from_bytes(pattern, "little"), n), "cuMemsetD16")
        elif len(pattern) % 4 == 0 and len(set(pattern[i:i + 4] for i in range(0, len(pattern), 4))) == 1:
            check(d.cuMemsetD32(self._ptr, int.from_bytes(pattern[:4], "little"), self.nbytes // 4),
                  "cuMemsetD32")
        else:
            self.copy_from_numpy(np.full(self.shape, value, dtype=self.dtype))
        return self

    def poison(self) -> "DeviceArray":
        """Fill with a value a correct kernel never leaves behind: NaN for floats, 0xAA bytes otherwise."""
        if self.dtype.kind in "fc" or self.dtype.name in ("bfloat16",) or "float8" in self.dtype.name:
            return self.fill(float("nan"))
        return self.fill_bytes(0xAA)

    def free(self) -> None:
        """Free the memory now (later use of this array is an error the driver may not catch)."""
        if self._finalizer is not None:
            self._finalizer()
            self._finalizer = None
        self._ptr = 0
