"""The runtime: checked CUDA driver calls, device memory, kernel loading and launch, timing, and the
content-addressed kernel cache. Importing it needs neither a GPU nor the CUDA driver (CI has none);
the driver is loaded on first use. See docs/CONTRACTS.md for how the compiler stages use it."""

# Each name loads its module on first use (PEP 562): importing the runtime loads neither NumPy nor the CUDA
# bindings, and `import compiler` does not import the runtime at all.
_WHERE = {
    "do_bench": "bench", "launch_overhead_us": "bench",
    "KernelCache": "cache", "cache_key": "cache",
    "CudaError": "cuda", "device_properties": "cuda", "gpu_available": "cuda", "synchronize": "cuda",
    "Kernel": "launch", "Launcher": "launch", "Module": "launch", "pointer_of": "launch",
    "DeviceArray": "memory",
}

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


def __getattr__(name):
    mod = _WHERE.get(name)
    if mod is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{mod}"), name)
    globals()[name] = value
    return value
