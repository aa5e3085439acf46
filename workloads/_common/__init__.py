"""Helpers shared by the bundled workloads (not a workload itself: it has no workload.py).

- `np_dtype`, `to_f64`: dtype names (incl. "bfloat16" through ml_dtypes) and float64 views for references.
- `KernelRunner`: turns one "arguments from (arrays, params, meta)" function into the workload's `launch`,
  `warmup` and `triton_launch`, so the three always pass the same arguments, grid and meta.
- `triton_module`: the kernel module's own source with its two imports rewritten to Triton's, loaded as a
  module, so a benchmark compares our compiler and Triton on byte-identical kernel text.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import sys
import tempfile

import numpy as np

try:  # optional (the GPU node may lack it): only bfloat16 *NumPy* arrays need it
    import ml_dtypes
    _BF16 = np.dtype(ml_dtypes.bfloat16)
except ImportError:  # pragma: no cover
    _BF16 = None

LAUNCH_OPTIONS = ("num_warps", "num_stages")


def np_dtype(name: str) -> np.dtype:
    """NumPy dtype for a dtype name; "bfloat16" is ml_dtypes' bfloat16."""
    if name == "bfloat16":
        if _BF16 is None:
            raise ImportError("bfloat16 NumPy arrays need the ml_dtypes package")
        return _BF16
    return np.dtype(name)


_ITEMSIZE = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2, "int64": 8, "int32": 4, "int16": 2,
             "int8": 1, "uint8": 1, "bool": 1}


def itemsize(name: str) -> int:
    """Bytes per element of a dtype name (no ml_dtypes needed)."""
    return _ITEMSIZE[name] if name in _ITEMSIZE else np.dtype(name).itemsize


# Row-wise kernels (softmax, layernorm, rmsnorm) share their small CI sweep and their meta space.
ROW_SWEEP = ([{"M": m, "N": n, "dtype": dt} for dt in ("float16", "bfloat16", "float32")
              for (m, n) in ((1, 1), (5, 300), (8, 1024))]
             + [{"M": 3, "N": 5000, "dtype": "float32"}])
ROW_META_SPACE = {"BLOCK_SIZE": [256, 512, 1024, 2048, 4096, 8192], "num_warps": [1, 2, 4, 8, 16]}


def normal(rng: np.random.Generator, loc, scale, shape) -> np.ndarray:
    """Seeded normal samples drawn directly in float32 (about twice as fast as float64 draws plus a cast;
    input generation is most of the host time of a large farm job)."""
    return rng.standard_normal(shape, dtype=np.float32) * np.float32(scale) + np.float32(loc)


def uniform(rng: np.random.Generator, lo, hi, shape) -> np.ndarray:
    """Seeded uniform samples in [lo, hi), drawn in float32."""
    return rng.random(shape, dtype=np.float32) * np.float32(hi - lo) + np.float32(lo)


def to_f64(a) -> np.ndarray:
    """A host array as float64 (bfloat16 goes through float32: ml_dtypes casts only to float32 exactly)."""
    a = np.asarray(a)
    if a.dtype.name == "bfloat16":
        a = a.astype(np.float32)
    return a.astype(np.float64)


def split_meta(meta: dict) -> tuple[dict, dict]:
    """(constexpr meta such as BLOCK, launch options num_warps/num_stages); `target` is left out of both."""
    consts = {k: v for k, v in meta.items() if k not in LAUNCH_OPTIONS and k != "target"}
    opts = {k: v for k, v in meta.items() if k in LAUNCH_OPTIONS and v is not None}
    return consts, opts


# ------------------------------------------------------------------------------------------ Triton port
_IMPORT_RE = [
    (re.compile(r"^import compiler\.language as tl[ \t]*$", re.M), "import triton.language as tl"),
    (re.compile(r"^import compiler[ \t]*$", re.M), "import triton as compiler"),
]
_triton_modules: dict = {}


def triton_source(module) -> str:
    """The kernel module's source with `import compiler` / `import compiler.language as tl` made Triton's."""
    with open(module.__file__, encoding="utf-8") as f:
        src = f.read()
    for rx, repl in _IMPORT_RE:
        src, n = rx.subn(repl, src)
        if n != 1:
            raise ValueError(f"{module.__file__}: expected exactly one line {rx.pattern!r}, found {n}")
    return src


def triton_module(module):
    """Load `triton_source(module)` as a real module (Triton's jit reads kernel source from its file)."""
    key = module.__name__
    mod = _triton_modules.get(key)
    if mod is not None:
        return mod
    src = triton_source(module)
    digest = hashlib.sha256(src.encode()).hexdigest()[:12]
    name = f"_tilefarm_triton_{module.__name__.replace('.', '_')}_{digest}"
    d = os.path.join(tempfile.gettempdir(), "tilefarm-triton-port")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, name + ".py")
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(src)
    os.replace(tmp, path)  # atomic: several processes may port the same module at once
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    _triton_modules[key] = mod
    return mod


# ------------------------------------------------------------------------------------------ launching
class KernelRunner:
    """launch / warmup / triton_launch for one kernel from one argument builder.

    `build(arrays, params, meta) -> (grid, args, constexpr_kwargs, launch_options)` may use only shapes from
    `params` (never array attributes), so the same code serves NumPy arrays (interpreter), torch tensors and
    compiler.runtime.DeviceArray.
    """

    def __init__(self, module, kernel_name: str, build):
        self.module = module
        self.kernel_name = kernel_name
        self.build = build

    @property
    def kernel(self):
        return getattr(self.module, self.kernel_name)

    def launch(self, arrays: dict, params: dict, meta: dict):
        """Run our compiled kernel (or the interpreter, for NumPy arrays)."""
        grid, args, consts, opts = self.build(arrays, params, meta)
        return self.kernel[grid](*args, **consts, **opts)

    def warmup(self, arrays: dict, params: dict, meta: dict):
        """Compile without launching (no GPU needed); meta may carry `target` (e.g. "sm_90")."""
        grid, args, consts, opts = self.build(arrays, params, meta)
        return self.kernel.warmup(*args, grid=grid, target=meta.get("target"), **consts, **opts)

    def triton_launch(self, arrays: dict, params: dict, meta: dict):
        """The same kernel source, arguments, grid and meta, compiled by Triton (arrays: torch CUDA tensors)."""
        grid, args, consts, opts = self.build(arrays, params, meta)
        return getattr(triton_module(self.module), self.kernel_name)[grid](*args, **consts, **opts)
