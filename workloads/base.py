"""What a workload is: a kernel plus everything needed to check and time it.

A workload module defines one `Workload` (see `workloads/vector_add/workload.py`). The farm and the benchmark
scripts only use this interface, so a user's own kernel file can declare a workload the same way (`farm run`
configs may point at a path instead of a registry name).

Arrays: `make_inputs` returns host NumPy arrays. The runner moves them to the device (or leaves them as NumPy
arrays for the interpreter), allocates outputs from `output_specs`, poisons them, and calls `launch` with a
dict of arrays of either kind; `launch` must use only `compiler` APIs that accept both.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

# Default tolerances (relative, absolute) by output dtype name: chosen for kernels that accumulate in fp32.
DEFAULT_TOL = {
    "float64": (1e-10, 1e-12),
    "float32": (1e-5, 1e-6),
    "float16": (2e-3, 1e-3),
    "bfloat16": (1.6e-2, 1e-2),
}


@dataclass(frozen=True)
class OutputSpec:
    """An output the kernel writes: name, shape and dtype name; `inplace` names an input it aliases."""

    name: str
    shape: tuple
    dtype: str
    inplace: str | None = None


@dataclass
class Workload:
    """A kernel with inputs, a float64 reference, counts for roofline figures and a default sweep.

    - `make_inputs(params, rng)` -> dict name -> np.ndarray (seeded random, never zeros).
    - `output_specs(params)` -> list[OutputSpec]; `input_specs(params)` (optional) -> list[OutputSpec] naming
      each input's shape and dtype, so the farm can compile a job without generating its inputs.
    - `launch(arrays, params, meta)` runs the kernel: arrays holds inputs and outputs by name (device arrays or
      NumPy arrays), meta holds the meta-parameters (BLOCK sizes, num_warps, num_stages).
    - `reference(inputs, params)` -> dict output name -> np.ndarray computed in float64 (or exact ints).
    - `flops(params)`, `bytes(params)`: useful work and the fewest bytes a kernel must move.
    - `params` is one point of a sweep: shape parameters (e.g. {"M": 4096, "N": 8192}) plus "dtype".
    - `torch_impl(arrays, params)`: optional baseline (runs on torch tensors) for speedups on the GPU.
    - `triton_launch(arrays, params, meta)`: optional: the same kernel source run through Triton.
    - `default_sweep`: a list of params dicts (small: the interpreter runs them in CI); `gpu_sweep`: the sizes
      worth timing on a GPU; `default_meta`: meta used when a sweep gives none.
    - `tolerance`: dtype name -> (rtol, atol) overriding DEFAULT_TOL.
    - `warmup(arrays, params, meta)`: optional, same arguments as `launch` but calls `kernel.warmup(...)` and
      returns the compiled kernel (`.asm` with "tile", "llir", "ptx"[, "cubin"]; `.metadata`) without running it
      and without a GPU. The farm's compile step (CPU workers, `farm compile`) uses it through `compile()`.
    - `baseline(inputs, params)`: optional, takes host NumPy inputs, moves them to the GPU in its own framework
      and returns a zero-argument callable that runs the reference implementation once (the farm times it for
      the speedup column). Without it, `make_baseline` wraps `torch_impl` (importing torch here, never in farm).
    """

    name: str
    description: str
    kernel: Any
    make_inputs: Callable[[dict, np.random.Generator], dict]
    output_specs: Callable[[dict], list]
    launch: Callable[[dict, dict, dict], None]
    reference: Callable[[dict, dict], dict]
    flops: Callable[[dict], float]
    bytes: Callable[[dict], float]
    input_specs: Callable[[dict], list] | None = None
    default_sweep: list = field(default_factory=list)
    gpu_sweep: list = field(default_factory=list)  # sizes worth timing only on a GPU (the benchmarks use them)
    default_meta: dict = field(default_factory=dict)
    meta_space: dict = field(default_factory=dict)
    tolerance: dict = field(default_factory=dict)
    torch_impl: Callable | None = None
    triton_launch: Callable | None = None
    source_file: str = ""
    warmup: Callable | None = None
    baseline: Callable | None = None
    gpu_meta: dict = field(default_factory=dict)  # meta for gpu_sweep (a config's `sizes: gpu`); {}: default_meta
    atol_relative: bool = False  # tolerance's atol is a fraction of max |reference| per output (the corpus's rule)

    def compile(self, arrays: dict, params: dict, meta: dict):
        """Compile for `arrays`/`params`/`meta` without running (no GPU needed); None when no `warmup` is declared."""
        if self.warmup is None:
            return None
        return self.warmup(arrays, params, meta)

    def standin_arrays(self, params: dict) -> dict | None:
        """Small arrays standing in for every input and output when compiling (only dtype and 16-byte alignment
        reach the compiled kernel); None when the workload declares no input_specs."""
        if self.input_specs is None:
            return None
        out = {}
        for spec in list(self.input_specs(params)) + list(self.output_specs(params)):
            out[spec.name] = _aligned_empty(spec.dtype)
        return out

    def make_baseline(self, inputs: dict, params: dict):
        """A zero-argument callable running the reference implementation on the GPU, or None when there is none."""
        if self.baseline is not None:
            return self.baseline(inputs, params)
        if self.torch_impl is None:
            return None
        import torch  # only workloads that declare a torch baseline pay for this import

        dev = {k: torch.from_numpy(v.copy()).cuda() for k, v in inputs.items() if isinstance(v, np.ndarray)}
        return lambda: self.torch_impl(dev, params)

    def tol(self, dtype_name: str) -> tuple:
        return self.tolerance.get(dtype_name, DEFAULT_TOL.get(dtype_name, (0.0, 0.0)))


def _aligned_empty(dtype_name: str, n: int = 64) -> np.ndarray:
    """n elements of `dtype_name` starting on a 256-byte boundary (as device allocations do)."""
    from compiler.ir.types import from_name

    dt = from_name(dtype_name).np
    raw = np.empty(n * dt.itemsize + 256, np.uint8)
    off = (-raw.ctypes.data) % 256
    return raw[off:off + n * dt.itemsize].view(dt)
