"""Checked CUDA driver calls, lazy driver initialisation, the current context and device properties.

Nothing here touches the driver at import time: CI machines have neither a GPU nor libcuda, and
``import compiler.runtime`` must still work there. The driver bindings (``cuda.bindings.driver``, or
``cuda.cuda`` from cuda-python < 12.6) are imported on first use, and ``cuInit`` runs on first use.

Context model (deliberately simple): one device per process, chosen by ``TILEFARM_DEVICE`` (default 0), or
torch's current device when torch is already imported and has initialised CUDA. We use that device's
*primary* context -- the same one the CUDA runtime (torch, CuPy) uses -- so pointers are shared with them
without any context juggling. A context is current per thread, so ``ensure_context()`` makes it current
on the calling thread the first time that thread needs it.
"""

from __future__ import annotations

import os
import sys
import threading
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

__all__ = [
    "CudaError",
    "driver",
    "check",
    "call",
    "gpu_available",
    "ensure_context",
    "current_device",
    "synchronize",
    "DeviceProperties",
    "device_properties",
    "driver_version",
]


class CudaError(RuntimeError):
    """A CUDA driver call failed.

    Attributes: ``call`` (what was called, e.g. ``"cuMemAlloc(1024)"``), ``code`` (the CUresult as an int),
    ``name`` (e.g. ``"CUDA_ERROR_OUT_OF_MEMORY"``) and ``description`` (the driver's sentence for it).
    Picklable, so it crosses process boundaries (Ray workers) intact.
    """

    def __init__(self, call: str, code: int, name: str | None = None, description: str | None = None,
                 detail: str | None = None):
        self.call = call
        self.code = int(code)
        self.name = name or f"CUresult {self.code}"
        self.description = description or ""
        self.detail = detail
        msg = f"{call} failed: {self.name} ({self.code})"
        if self.description:
            msg += f": {self.description}"
        if detail:
            msg += f"\n{detail}"
        super().__init__(msg)

    def __reduce__(self):
        # RuntimeError pickles only .args; rebuild from our own fields instead.
        return (CudaError, (self.call, self.code, self.name, self.description, self.detail))


# Descriptions for the errors we are most likely to meet, used when the driver itself cannot be asked
# (no libcuda, or the failure happened while loading it). The driver's own text wins when available.
_FALLBACK_DESCRIPTIONS = {
    1: "invalid argument",
    2: "out of memory",
    3: "initialization error",
    4: "driver shutting down",
    100: "no CUDA-capable device is detected",
    101: "invalid device ordinal",
    200: "device kernel image is invalid",
    201: "invalid device context",
    209: "no kernel image is available for execution on the device",
    218: "a PTX JIT compilation failed",
    222: "the provided PTX was compiled with an unsupported toolchain",
    400: "invalid resource handle",
    500: "named symbol not found",
    700: "an illegal memory access was encountered",
    701: "too many resources requested for launch",
    719: "unspecified launch failure",
    999: "unknown error",
}


_driver_mod = None
_driver_lock = threading.Lock()


def driver():
    """The CUDA driver bindings module (``cuda.bindings.driver``, or ``cuda.cuda`` for old cuda-python).

    Importing it does not load libcuda; calling a function does. Raises ImportError with a clear message
    when cuda-python is not installed.
    """
    global _driver_mod
    if _driver_mod is None:
        try:
            from cuda.bindings import driver as mod
        except ImportError:
            try:
                from cuda import cuda as mod  # cuda-python < 12.6 spelled it this way
            except ImportError as e:
                raise ImportError("compiler.runtime needs cuda-python (pip install cuda-python)") from e
        _driver_mod = mod
    return _driver_mod


def _error_name(code: int) -> tuple[str, str]:
    """(name, description) for a CUresult, asking the driver when possible."""
    name = desc = None
    try:
        d = driver()
        enum_val = d.CUresult(code)
        try:
            err, s = d.cuGetErrorName(enum_val)
            if int(err) == 0 and s:
                name = s.decode() if isinstance(s, bytes) else str(s)
            err, s = d.cuGetErrorString(enum_val)
            if int(err) == 0 and s:
                desc = s.decode() if isinstance(s, bytes) else str(s)
        except Exception:  # no libcuda: fall back to the enum's own name
            pass
        if name is None:
            name = enum_val.name
    except Exception:
        pass
    return name or f"CUresult {code}", desc or _FALLBACK_DESCRIPTIONS.get(code, "")


def check(result: Any, call: str = "CUDA driver call") -> Any:
    """Unwrap a cuda-python result tuple ``(CUresult, *values)``; raise CudaError unless it is CUDA_SUCCESS.

    Returns None when the call returns no values, the value when it returns one, else the tuple of values.
    ``call`` names the call in the error message (e.g. ``"cuMemAlloc(4096)"``).
    """
    if isinstance(result, tuple):
        err = result[0]
        rest = result[1:]
    else:
        err, rest = result, ()
    code = int(err)
    if code != 0:
        name, desc = _error_name(code)
        raise CudaError(call, code, name, desc)
    if not rest:
        return None
    if len(rest) == 1:
        return rest[0]
    return rest


def call(fn_name: str, *args: Any) -> Any:
    """Call ``driver().<fn_name>(*args)`` (initialising the driver first) and ``check`` its result."""
    _init()
    return check(getattr(driver(), fn_name)(*args), _describe(fn_name, args))


def _describe(fn_name: str, args: tuple) -> str:
    parts = []
    for a in args:
        r = repr(a)
        parts.append(r if len(r) <= 40 else r[:37] + "...")
    return f"{fn_name}({', '.join(parts)})"


# --- initialisation and availability -------------------------------------------------------------------

_init_done = False
_init_error: BaseException | None = None


def _init() -> None:
    """cuInit once per process. Raises CudaError (or the loader's error, wrapped) when there is no driver."""
    global _init_done, _init_error
    if _init_done:
        return
    with _driver_lock:
        if _init_done:
            return
        if _init_error is not None:
            raise _init_error
        try:
            d = driver()
            check(d.cuInit(0), "cuInit(0)")
        except CudaError as e:
            _init_error = e
            raise
        except Exception as e:  # libcuda missing: cuda.pathfinder raises its own error type
            _init_error = CudaError("cuInit(0)", 3, "CUDA_ERROR_NOT_INITIALIZED",
                                    "the CUDA driver library could not be loaded",
                                    detail=f"{type(e).__name__}: {e}")
            raise _init_error from e
        _init_done = True


_available: tuple[bool, str] | None = None


def gpu_available() -> tuple[bool, str]:
    """``(True, "<device name>")`` when a CUDA GPU can be used, else ``(False, reason)``. Never raises.

    The answer is computed once per process (the driver, devices and TILEFARM_DEVICE do not change).
    """
    global _available
    if _available is not None:
        return _available
    try:
        driver()
    except ImportError as e:
        _available = (False, str(e))
        return _available
    try:
        _init()
        n = check(driver().cuDeviceGetCount(), "cuDeviceGetCount()")
        if n == 0:
            _available = (False, "the CUDA driver reports no devices")
            return _available
        dev = _device_ordinal()
        if dev >= n:
            _available = (False, f"device {dev} requested (TILEFARM_DEVICE) but only {n} present")
            return _available
        # the name and the arch only (3 driver queries): the full device_properties() costs ~1 ms, which a
        # process whose first kernel comes from the disk cache would otherwise pay on its first launch
        _available = (True, f"{_device_name(cu_device(dev))} (device {dev}, {device_arch(dev)})")
    except CudaError as e:
        reason = f"{e.name}: {e.description}" if e.description else e.name
        if e.detail:
            reason += f" [{e.detail.splitlines()[0]}]"
        _available = (False, f"no usable CUDA driver/GPU: {reason}")
    except Exception as e:  # anything odd in the bindings: report, never raise
        _available = (False, f"no usable CUDA driver/GPU: {type(e).__name__}: {e}")
    return _available


# --- device and context ---------------------------------------------------------------------------------

def _device_ordinal() -> int:
    """The device this process uses: torch's current device if torch has initialised CUDA, else
    TILEFARM_DEVICE, else 0. (Checked without importing torch.)"""
    torch = sys.modules.get("torch")
    if torch is not None:
        try:
            if torch.cuda.is_initialized():
                return int(torch.cuda.current_device())
        except Exception:
            pass
    try:
        return int(os.environ.get("TILEFARM_DEVICE", "0"))
    except ValueError:
        return 0


_ctx_lock = threading.Lock()
_primary: dict[int, Any] = {}  # device ordinal -> (CUdevice, CUcontext)
_tls = threading.local()


def current_device() -> int:
    """Ordinal of the device whose primary context this process uses (see module docstring)."""
    dev = getattr(_tls, "device", None)
    return dev if dev is not None else _device_ordinal()


def ensure_context(device: int | None = None, force: bool = False):
    """Make the primary context of ``device`` (default: ``current_device()``) current on this thread.

    Cheap after the first call on a thread (one thread-local lookup). ``force`` sets it current again even
    if we did so before (another library may have switched this thread's context). Returns the CUcontext.
    """
    if device is None:
        ctx = getattr(_tls, "ctx", None)
        if ctx is not None and not force:
            return ctx
        device = getattr(_tls, "device", None)
        if device is None:
            device = _device_ordinal()
    elif getattr(_tls, "device", None) == device and not force:
        return _tls.ctx
    _init()
    d = driver()
    with _ctx_lock:
        entry = _primary.get(device)
        if entry is None:
            cu_dev = check(d.cuDeviceGet(device), f"cuDeviceGet({device})")
            # Retain (never release): the primary context lives as long as the process, like torch's.
            ctx = check(d.cuDevicePrimaryCtxRetain(cu_dev), f"cuDevicePrimaryCtxRetain({device})")
            entry = (cu_dev, ctx)
            _primary[device] = entry
    check(d.cuCtxSetCurrent(entry[1]), f"cuCtxSetCurrent(device {device})")
    _tls.device = device
    _tls.ctx = entry[1]
    return entry[1]


def cu_device(device: int | None = None):
    """The CUdevice handle for ``device`` (default: the current one); ensures its context exists."""
    ensure_context(device)
    return _primary[current_device() if device is None else device][0]


def synchronize() -> None:
    """Wait for all work on the current context (cuCtxSynchronize); surfaces asynchronous kernel faults."""
    ensure_context()
    check(driver().cuCtxSynchronize(), "cuCtxSynchronize()")


def driver_version() -> int:
    """The driver's CUDA version as an int, e.g. 13000 for CUDA 13.0."""
    _init()
    return int(check(driver().cuDriverGetVersion(), "cuDriverGetVersion()"))


@dataclass(frozen=True)
class DeviceProperties:
    """Facts about one GPU that the compiler, the benchmark and the farm's records need."""

    ordinal: int
    name: str
    uuid: str
    cc: tuple[int, int]               # compute capability (major, minor)
    sm_count: int
    l2_bytes: int
    max_shared_per_block: int         # without opt-in (48 KiB)
    max_shared_per_block_optin: int   # with cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)
    max_threads_per_block: int
    warp_size: int
    clock_khz: int
    memory_clock_khz: int
    memory_bus_width: int
    total_memory: int
    driver_version: int

    @property
    def arch(self) -> str:
        """The ``sm_XY`` target name for this device (``sm_90`` on H100/H200)."""
        return f"sm_{self.cc[0]}{self.cc[1]}"


def _device_name(dev) -> str:
    raw = check(driver().cuDeviceGetName(256, dev), "cuDeviceGetName")
    if isinstance(raw, (bytes, bytearray)):
        raw = bytes(raw).split(b"\0", 1)[0].decode(errors="replace")
    return raw


@lru_cache(maxsize=None)
def device_properties(device: int | None = None) -> DeviceProperties:
    """Query (once) and return the DeviceProperties of ``device`` (default: the current device)."""
    if device is None:
        device = current_device()
    d = driver()
    dev = cu_device(device)
    A = d.CUdevice_attribute

    def attr(name: str, default: int = 0) -> int:
        a = getattr(A, name, None)
        if a is None:  # an attribute this bindings version does not know
            return default
        err, v = d.cuDeviceGetAttribute(a, dev)
        return int(v) if int(err) == 0 else default

    raw_name = _device_name(dev)
    try:
        u = check(d.cuDeviceGetUuid(dev), "cuDeviceGetUuid")
        b = bytes(u.bytes) if not isinstance(u.bytes, str) else u.bytes.encode("latin-1")
        h = b.hex()
        uuid = f"GPU-{h[0:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"
    except Exception:
        uuid = ""
    try:
        total = int(check(d.cuDeviceTotalMem(dev), "cuDeviceTotalMem"))
    except Exception:
        total = 0
    return DeviceProperties(
        ordinal=device,
        name=str(raw_name).strip(),
        uuid=uuid,
        cc=(attr("CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR"), attr("CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR")),
        sm_count=attr("CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT"),
        l2_bytes=attr("CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE"),
        max_shared_per_block=attr("CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK", 48 * 1024),
        max_shared_per_block_optin=attr("CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN", 48 * 1024),
        max_threads_per_block=attr("CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK", 1024),
        warp_size=attr("CU_DEVICE_ATTRIBUTE_WARP_SIZE", 32),
        clock_khz=attr("CU_DEVICE_ATTRIBUTE_CLOCK_RATE"),
        memory_clock_khz=attr("CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE"),
        memory_bus_width=attr("CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH"),
        total_memory=total,
        driver_version=driver_version(),
    )


@lru_cache(maxsize=None)
def device_arch(device: int | None = None) -> str:
    """The ``sm_XY`` target of ``device`` from two attribute queries (the compile path needs only this)."""
    if device is None:
        device = current_device()
    d = driver()
    dev = cu_device(device)
    A = d.CUdevice_attribute
    major = int(check(d.cuDeviceGetAttribute(A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), "cuDeviceGetAttribute"))
    minor = int(check(d.cuDeviceGetAttribute(A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev), "cuDeviceGetAttribute"))
    return f"sm_{major}{minor}"


def _reset_for_tests() -> None:
    """Forget cached availability/init state (tests only)."""
    global _available, _init_done, _init_error
    _available = None
    _init_done = False
    _init_error = None
    _primary.clear()
    for k in ("ctx", "device"):
        if hasattr(_tls, k):
            delattr(_tls, k)
    device_properties.cache_clear()
    device_arch.cache_clear()
