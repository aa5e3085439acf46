"""The runtime: checked CUDA driver calls, device memory, kernel loading and launch, timing, and the
content-addressed kernel cache. Importing it needs neither a GPU nor the CUDA driver (CI has none);
the driver is loaded on first use. See docs/CONTRACTS.md for how the compiler stages use it."""

from .bench import do_bench, launch_overhead_us
from .cache import KernelCache, cache_key
from .cuda import CudaError, device_properties, gpu_available, synchronize
from .launch import Kernel, Launcher, Module, pointer_of
from .memory import DeviceArray

__all__ = [
    "CudaError",
    "DeviceArray",
    "gpu_available",
    "device_properties",
    "synchronize",
    "do_bench",
    "launch_overhead_us",
    "KernelCache",
    "cache_key",
    "Launcher",
    "Module",
    "Kernel",
    "pointer_of",
]
