"""Which compiler builds a job's kernel: `tilefarm` (this project's) or `triton` (the real Triton on the node).

A config's `compilers: [tilefarm, triton]` (or `farm run --compilers tilefarm,triton`) makes every sweep point one
job per compiler. The job carries the compiler's name, and its content key that compiler's version: tilefarm's
source fingerprint (the key tilefarm jobs always had), `triton==<version>` for Triton. Everything else a job does
-- seeded inputs, poisoned outputs, the float64 reference, tolerances, the timing method -- is the farm's, the
same for either compiler (farm.worker). What differs is here:

- Loading: a kernel file written as Triton users write it (`import triton`, `import triton.language as tl`) is
  imported per compiler through compiler.triton_compat.load_kernel_file: under `tilefarm` `triton` resolves to
  this project's compiler for that file only (nothing named `triton` is put on the path or in sys.modules); under
  `triton` the file is imported as it is, against the real Triton. A file written against `import compiler` runs
  under tilefarm only: its triton jobs are recorded as not runnable, saying why.
- Arrays: tilefarm kernels get NumPy arrays (interpreter) or compiler.runtime.DeviceArray (GPU); Triton kernels
  get torch tensors (CPU tensors sharing the NumPy arrays' memory in Triton's interpreter, CUDA tensors on a GPU).
- The interpreter: without a GPU, Triton's jobs run in Triton's interpreter. Triton picks its interpreter when a
  kernel is decorated (`TRITON_INTERPRET`), so the worker process sets it before it imports Triton or loads a
  Triton kernel file; a farm worker process is either a GPU worker or an interpreter worker, never both, so the
  setting holds for the process's life. Compile tasks never import Triton (Triton compiles on the GPU worker,
  for the device it runs on), so a pooled CPU worker process can never hold a Triton of the wrong mode.
- Where Triton is absent (or is another version than the plan's), its jobs become NOT_RUNNABLE results naming
  the node and the reason; they are planned again by a later run (a transient status), never dropped. On Ray
  they go to a node that has the plan's Triton whenever a live node has it (farm.executor.ray asks each node).
"""
from __future__ import annotations

import functools
import os
import socket

COMPILERS = ("tilefarm", "triton")
DEFAULT = "tilefarm"


def triton_version() -> str | None:
    """The installed Triton's version, read from its package metadata (Triton is not imported), or None.

    Test hook: TILEFARM_NO_TRITON=1 in a process's environment makes it answer None, as a node without Triton
    would (tests/farm/test_triton_placement.py gives one node of a Ray cluster on one machine that setting)."""
    if os.environ.get("TILEFARM_NO_TRITON", "") not in ("", "0"):
        return None
    return _installed_triton()


@functools.lru_cache(maxsize=None)
def _installed_triton() -> str | None:
    from importlib import metadata

    try:
        return metadata.version("triton")
    except metadata.PackageNotFoundError:
        return None


def job_version(compiler: str) -> str:
    """What a job records as its compiler's version when planned here ("" for tilefarm: its key holds it)."""
    if compiler == "triton":
        return triton_version() or ""
    return ""


def key_part(compiler: str, tilefarm_version: str) -> str:
    """The compiler's part of a job's content key. tilefarm jobs keep the key they always had (the compiler's
    source fingerprint), so results stored before compilers were a sweep axis are still found."""
    if compiler == "tilefarm":
        return tilefarm_version
    if compiler == "triton":
        return f"triton=={triton_version() or 'absent'}"
    raise ValueError(f"unknown compiler {compiler!r} (known: {', '.join(COMPILERS)})")


def parse_list(text: str) -> list[str]:
    """`--compilers tilefarm,triton` -> ["tilefarm", "triton"]; ValueError naming what is wrong."""
    names = [t.strip() for t in text.split(",") if t.strip()]
    if not names:
        raise ValueError(f"--compilers: give one or more of {', '.join(COMPILERS)} (comma-separated)")
    bad = [n for n in names if n not in COMPILERS]
    if bad:
        raise ValueError(f"--compilers: unknown compiler {bad[0]!r} (known: {', '.join(COMPILERS)})")
    if len(set(names)) != len(names):
        raise ValueError(f"--compilers: {text!r} names a compiler twice")
    return names


# ---------------------------------------------------------------- the worker side


def prepare_process(compiler: str, on_gpu: bool) -> None:
    """Set what `compiler` reads when it is imported or decorates a kernel, before either happens in this process:
    Triton's interpreter without a GPU (and, where it needs it, the interpreter's scalar-index repair below), its
    compiler with one."""
    if compiler == "triton":
        os.environ["TRITON_INTERPRET"] = "0" if on_gpu else "1"
        if not on_gpu:
            repair_interpreter_index()


# Triton's interpreter holds every scalar as a one-element 1-D NumPy array, and a tensor's `__index__` (what
# `range(0, N, BLOCK)` calls on a runtime `N`) converts that array with int(). NumPy 2.4 made int() of an array
# with ndim > 0 a TypeError (deprecated since 1.25), so under Triton 3.6 and NumPy >= 2.4 every kernel with a `for`
# loop over a runtime bound fails in the interpreter. Triton 3.7 converts the element instead. The repair does
# the same, only in a process that runs Triton's interpreter (prepare_process above), only where the defect is
# seen (a probe, not a version list), and only for the duration of each interpreted launch: the interpreter sets
# its tensor attributes per launch in a scope it restores afterwards, and the repaired `__index__` is set in that
# same scope. docs/DEPENDENCIES.md says why this rather than a NumPy pin.
_INDEX_REPAIRED = "_tilefarm_index_repair"


def _scalar_index(self) -> int:
    data = self.handle.data
    if data.size != 1:
        raise TypeError(f"only a scalar can be used as an index (this tensor holds {data.size} elements)")
    return int(data.item())


def interpreter_index_works() -> bool | None:
    """Whether Triton's interpreter turns a scalar tensor into an index in this process (None: no Triton, or
    one whose interpreter is not built the way the probe knows, so nothing is repaired)."""
    try:
        import operator

        import numpy as np
        import triton.language as tl
        from triton.runtime import interpreter as ti

        scope = ti._LangPatchScope()
        try:
            ti._patch_lang_tensor(tl.core.tensor, scope)
            t = tl.core.tensor(ti.TensorHandle(np.array([3], dtype=np.int32), tl.int32), tl.int32)
            return operator.index(t) == 3
        except TypeError:
            return False
        finally:
            scope.restore()
    except Exception:  # not installed, or internals the probe does not know: leave Triton as it is
        return None


def repair_interpreter_index() -> bool:
    """Repair `__index__` in Triton's interpreter in this process when the probe shows it broken (see above);
    True when the repair is in place (now or before)."""
    try:
        from triton.runtime import interpreter as ti
    except Exception:
        return False
    if getattr(ti._patch_lang_tensor, _INDEX_REPAIRED, False):
        return True
    if interpreter_index_works() is not False:
        return False
    original = ti._patch_lang_tensor

    def patch_lang_tensor(tensor, scope):
        original(tensor, scope)
        scope.set_attr(tensor, "__index__", _scalar_index)

    setattr(patch_lang_tensor, _INDEX_REPAIRED, True)
    ti._patch_lang_tensor = patch_lang_tensor
    if not interpreter_index_works():
        ti._patch_lang_tensor = original  # not the defect the repair knows: Triton as it was
        return False
    return True


def not_runnable(compiler: str, planned_version: str) -> str | None:
    """Why a job of `compiler` cannot run in this process (None when it can)."""
    if compiler == "tilefarm":
        return None
    host = socket.gethostname()
    have = triton_version()
    if have is None:
        return (f"Triton is not installed on {host}" +
                (f" (the plan asked for Triton {planned_version})" if planned_version else ""))
    if not planned_version:
        return (f"the plan was made where Triton is not installed, so no Triton version is in the job's key; plan "
                f"the run on a machine with Triton (Triton {have} is on {host})")
    if have != planned_version:
        return f"Triton {have} on {host}, but the plan was made for Triton {planned_version}"
    return None


def foreign_kernel(compiler: str, kernel) -> str | None:
    """Why the workload's kernel, loaded for `compiler`, is not that compiler's kernel (None when it is): a kernel
    file written against `import compiler` has tilefarm kernels whoever loads it."""
    if compiler != "triton":
        return None
    mod = type(kernel).__module__ or ""
    if mod == "triton" or mod.startswith("triton."):
        return None
    return ("its kernel file is written for tilefarm's own API (`import compiler`); under triton only kernel files "
            "written with `import triton` / `import triton.language as tl` run")


def tilefarm_cache_state(compiled, since: float) -> str | None:
    """How a tilefarm compile went: "cold" when it wrote the kernel's disk-cache entry (at or after `since`, a
    time.time()), "cached" when the entry was there before (loaded from disk, or from this process's memory);
    None when it cannot be told (disk cache off, no key)."""
    key = getattr(compiled, "key", None)
    if not key or os.environ.get("TILEFARM_CACHE", "1") in ("0", "off", "false"):
        return None
    try:
        from compiler.runtime.cache import KernelCache

        mtime = os.stat(KernelCache().path_of(key)).st_mtime
    except Exception:  # no entry (not written), an unusable cache directory, an unexpected key
        return None
    return "cold" if mtime >= since - 0.01 else "cached"


class triton_compile_state:
    """`with triton_compile_state() as st: kernel.warmup(...)`, then `st.state`: "cold" (Triton compiled), "cached"
    (loaded from Triton's disk cache) or "memory" (this process had it: Triton's compile was not called), from
    Triton's compilation listener (restored afterwards)."""

    def __enter__(self):
        from triton import knobs

        self._knobs, self._saved, self._hits = knobs, knobs.compilation.listener, []
        saved = self._saved

        def listen(*args, cache_hit=False, **kw):
            self._hits.append(bool(cache_hit))
            if saved is not None:
                saved(*args, cache_hit=cache_hit, **kw)
        knobs.compilation.listener = listen
        return self

    def __exit__(self, *exc):
        self._knobs.compilation.listener = self._saved
        return False

    @property
    def state(self) -> str:
        if not self._hits:
            return "memory"
        return "cached" if all(self._hits) else "cold"


class NumpyArrays:
    """tilefarm's arrays in the interpreter: the NumPy arrays themselves."""

    def wrap(self, a):
        return a


class TorchArrays:
    """Triton's arrays: torch tensors. `wrap` gives a CPU tensor sharing a NumPy array's memory (Triton's
    interpreter writes through it into the array the farm checks); on a GPU, `to_device`, `empty` and `host` move
    data as compiler.runtime.DeviceArray does for tilefarm."""

    def __init__(self):
        import torch  # Triton's launcher and interpreter both take torch tensors

        self.torch = torch

    def dtype(self, np_dtype):
        import numpy as np

        t = self.torch
        if np_dtype.name == "bfloat16":
            return t.bfloat16
        return {np.dtype(np.float64): t.float64, np.dtype(np.float32): t.float32, np.dtype(np.float16): t.float16,
                np.dtype(np.int64): t.int64, np.dtype(np.int32): t.int32, np.dtype(np.int16): t.int16,
                np.dtype(np.int8): t.int8, np.dtype(np.uint8): t.uint8, np.dtype(np.bool_): t.bool,
                np.dtype(np.uint16): t.uint16, np.dtype(np.uint32): t.uint32,
                np.dtype(np.uint64): t.uint64}[np.dtype(np_dtype)]

    def wrap(self, a):
        import numpy as np

        if not isinstance(a, np.ndarray):
            return a
        if a.dtype.name == "bfloat16":  # torch reads no ml_dtypes array: the same bits, viewed
            return self.torch.from_numpy(a.view(np.int16)).view(self.torch.bfloat16)
        return self.torch.from_numpy(a)

    def to_device(self, a):
        import warnings

        import numpy as np

        with warnings.catch_warnings():  # the farm's cached inputs are read-only: torch only reads them here
            warnings.simplefilter("ignore", UserWarning)
            return self.wrap(np.ascontiguousarray(a)).to("cuda")

    def empty(self, shape, np_dtype):
        return self.torch.empty(tuple(shape), dtype=self.dtype(np_dtype), device="cuda")

    def host(self, t):
        import numpy as np

        t = t.detach().cpu()
        if t.dtype == self.torch.bfloat16:
            import ml_dtypes

            return t.view(self.torch.int16).numpy().view(np.dtype(ml_dtypes.bfloat16))
        return t.numpy()

    def sync(self):
        self.torch.cuda.synchronize()


def release(compiler: str) -> None:
    """After a job on a GPU: give the memory torch's allocator keeps cached for Triton's tensors back to the
    driver, so the next job (of either compiler) finds the GPU as empty as the farm left it."""
    import sys

    torch = sys.modules.get("torch")
    if compiler == "triton" and torch is not None:
        try:
            torch.cuda.empty_cache()
        except Exception:
            pass


def arrays_for(compiler: str):
    """The array adapter of `compiler` (NumpyArrays for tilefarm, whose GPU path is the farm's DeviceArray)."""
    return TorchArrays() if compiler == "triton" else NumpyArrays()
