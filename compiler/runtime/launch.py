"""Loading compiled kernels and launching them with as little host work per launch as possible.

Why the launch path looks the way it does: a launch's host cost is what a small kernel's end-to-end time
is made of (Triton spends ~12.5 us, torch.add ~5.9 us, a bare driver call ~2-4 us). So everything that
does not depend on the argument *values* is done once per specialization, in ``Launcher.__init__``:

* one ctypes buffer holds every parameter at an 8-byte aligned slot, and a ctypes ``void*[n]`` array
  points at the slots -- that array is the ``kernelParams`` the driver reads;
* a precompiled ``struct.Struct`` writes all the values into the buffer in ONE C call (``pack_into``),
  which also range-checks them (an int32 param given 2**31 raises, instead of silently wrapping);
* ``cuLaunchKernel`` receives the array's address as a plain int: cuda.bindings takes an int
  ``kernelParams`` as an already-built ``void**`` without any per-call conversion (its cheapest form),
  the CUfunction object as is, and ``None`` for the default stream.

A launch is then: unpack grid, ``pack_into``, one driver call, one int test of the result. Anything
unusual (wrong arity, out of range values, objects instead of pointer ints, no current context on this
thread) takes a slow path that either fixes it up or raises a clear error.

Where the C extension (fastlaunch.py) is built, the common case is cheaper still: a C ``Plan`` made once per
launcher reads the grid, the stream and each value from the Python objects, packs them by the parameter
kinds and calls the driver, in ONE call. ``Launcher.entry(select, n_in)`` hands out that call as
``entry(grid, stream, *values)`` (what the jit's generated launcher calls); whatever the plan does not handle
itself goes to the Python path above, so behaviour and error messages are the same on both.
"""

from __future__ import annotations

import ctypes
import os
import struct
import subprocess
import sys
import tempfile
from typing import Any, Sequence

import numpy as np

from .cuda import CudaError, check, device_properties, driver, ensure_context

__all__ = ["Module", "Kernel", "Launcher", "pointer_of", "PARAM_FORMATS", "find_ptxas", "ptxas_compile"]

# param kind -> struct format of one value. Every slot is 8 bytes wide and 8-byte aligned, which satisfies
# the alignment of every scalar kernel parameter; the driver copies each param from its own slot.
PARAM_FORMATS: dict[str, str] = {
    "ptr": "Q",
    "int1": "?", "bool": "?", "i1": "?",
    "int8": "b", "uint8": "B",
    "int16": "h", "uint16": "H",
    "int32": "i", "uint32": "I",
    "int64": "q", "uint64": "Q",
    "float16": "e", "fp16": "e",
    "float32": "f", "fp32": "f",
    "float64": "d", "fp64": "d",
    "bfloat16": "H",  # passed as its 16 raw bits; converted on the slow path (see _convert_bf16)
}
_SLOT = 8


def _fmt_for(kinds: Sequence[str]) -> str:
    parts = ["="]  # '=' : native byte order, standard sizes, no implicit alignment (we pad explicitly)
    for k in kinds:
        f = PARAM_FORMATS.get(k)
        if f is None:
            raise ValueError(f"unknown parameter kind {k!r}; expected 'ptr' or one of "
                             f"{sorted(set(PARAM_FORMATS) - {'ptr'})}")
        pad = _SLOT - struct.calcsize("=" + f)
        parts.append(f + (f"{pad}x" if pad else ""))
    return "".join(parts)


# --- toolchain -------------------------------------------------------------------------------------------

def find_ptxas() -> str | None:
    """Path of the ptxas kernels are assembled with (compiler.codegen.ptx.find_ptxas: one search for the whole
    compiler; imported here only when asked, so loading the runtime loads no code generator)."""
    from ..codegen.ptx import find_ptxas as search

    return search()


def ptxas_compile(ptx: str, arch: str = "sm_90", opt_level: int = 3, extra: Sequence[str] = ()) -> bytes:
    """Assemble PTX text to a cubin with ptxas. Raises RuntimeError with ptxas' log on failure or when no
    ptxas is found. (Used to explain a failed driver JIT, and by tests to validate hand-written PTX.)"""
    exe = find_ptxas()
    if exe is None:
        raise RuntimeError("ptxas not found (install nvidia-cuda-nvcc or set TILEFARM_PTXAS)")
    with tempfile.TemporaryDirectory(prefix="tilefarm-ptxas-") as d:
        src, out = os.path.join(d, "k.ptx"), os.path.join(d, "k.cubin")
        with open(src, "w") as f:
            f.write(ptx)
        p = subprocess.run([exe, f"-arch={arch}", f"-O{opt_level}", *extra, src, "-o", out],
                           capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(f"ptxas failed ({p.returncode}):\n{p.stderr or p.stdout}")
        with open(out, "rb") as f:
            return f.read()


def link_ptx(ptx: str) -> bytes:
    """Compile PTX to a cubin for the current device in-process with the driver's JIT linker (cuLink*).

    This is the driver doing what cuModuleLoadData(<ptx>) does, but it hands the machine code back, so a disk
    cache can keep it and later processes skip the JIT (a fork of ptxas costs more than the JIT itself).
    """
    import ctypes

    ensure_context()
    d = driver()
    state = check(d.cuLinkCreate(0, [], []), "cuLinkCreate")
    try:
        data = ptx.encode() + b"\0"
        check(d.cuLinkAddData(state, d.CUjitInputType.CU_JIT_INPUT_PTX, data, len(data), b"kernel.ptx", 0, [], []),
              "cuLinkAddData(<ptx>)")
        res = d.cuLinkComplete(state)
        check(res[:1], "cuLinkComplete")
        ptr, size = res[1], res[2]
        return ctypes.string_at(int(ptr), int(size))
    finally:
        try:
            d.cuLinkDestroy(state)
        except Exception:
            pass


# --- modules and kernels ---------------------------------------------------------------------------------

def _is_ptx(image: bytes | str) -> bool:
    if isinstance(image, str):
        return True
    # cubins are ELF files; anything else we were given as bytes is PTX text.
    return not image.startswith(b"\x7fELF")


class Module:
    """A loaded CUDA module (cuModuleLoadData) from a cubin (ELF bytes) or PTX text (JIT by the driver)."""

    def __init__(self, image: bytes | str):
        ensure_context()
        d = driver()
        self.is_ptx = _is_ptx(image)
        if self.is_ptx:
            text = image if isinstance(image, str) else image.decode()
            data = text.encode() + b"\0"  # the driver reads PTX as a NUL-terminated string
        else:
            data = bytes(image)
        err, mod = d.cuModuleLoadData(data)
        if int(err) != 0:
            detail = None
            if self.is_ptx:
                detail = self._ptxas_diagnosis(data[:-1].decode())
            try:
                check((err,), "cuModuleLoadData(<ptx>)" if self.is_ptx else "cuModuleLoadData(<cubin>)")
            except CudaError as e:
                raise CudaError(e.call, e.code, e.name, e.description, detail) from None
        self.handle = mod
        self._functions: dict[str, Kernel] = {}

    @staticmethod
    def _ptxas_diagnosis(ptx: str) -> str | None:
        """The driver's JIT gives no log through cuModuleLoadData; ptxas on the same text usually says why."""
        try:
            arch = device_properties().arch
            ptxas_compile(ptx, arch)
            return None
        except Exception as e:
            return str(e)

    def get_function(self, name: str) -> "Kernel":
        """The kernel called ``name`` in this module (cuModuleGetFunction), cached."""
        k = self._functions.get(name)
        if k is None:
            fn = check(driver().cuModuleGetFunction(self.handle, name.encode()), f"cuModuleGetFunction({name!r})")
            k = Kernel(self, fn, name)
            self._functions[name] = k
        return k

    def __del__(self):
        # Unloading is optional (the process's end frees everything); never raise from a finalizer.
        h = getattr(self, "handle", None)
        if h is not None and not sys.is_finalizing():
            try:
                driver().cuModuleUnload(h)
            except Exception:
                pass


class Kernel:
    """One kernel function in a loaded Module; keeps the module alive."""

    def __init__(self, module: Module, handle: Any, name: str):
        self.module = module
        self.handle = handle
        self.name = name
        self._dyn_smem_limit = 48 * 1024

    def attribute(self, attr_name: str) -> int:
        """cuFuncGetAttribute by short name, e.g. ``"NUM_REGS"``, ``"SHARED_SIZE_BYTES"``, ``"MAX_THREADS_PER_BLOCK"``."""
        d = driver()
        a = getattr(d.CUfunction_attribute, f"CU_FUNC_ATTRIBUTE_{attr_name}")
        return int(check(d.cuFuncGetAttribute(a, self.handle), f"cuFuncGetAttribute({attr_name}, {self.name})"))

    def set_carveout(self, percent: int) -> None:
        """Preferred shared-memory carveout, in percent of the SM's unified L1/shared array (100: the most)."""
        if not 0 <= percent <= 100:
            raise ValueError(f"shared-memory carveout is a percentage 0..100, got {percent}")
        d = driver()
        attr = d.CUfunction_attribute.CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT
        check(d.cuFuncSetAttribute(self.handle, attr, int(percent)),
              f"cuFuncSetAttribute(PREFERRED_SHARED_MEMORY_CARVEOUT, {percent}) for {self.name}")

    def set_max_dynamic_shared(self, nbytes: int) -> None:
        """Allow ``nbytes`` of dynamic shared memory per block (needed above the default 48 KiB): the device's
        whole opt-in is allowed, as Triton's launcher does, so the SM takes its largest shared-memory
        configuration (timed against allowing just ``nbytes`` on the H200, 2026-12-02: 0.988 over 21 matmul and
        attention kernels, none slower; docs/EXPERIMENTS.md, smem_optin).

        Raises CudaError with a readable message when the device cannot provide that much.
        """
        if nbytes <= self._dyn_smem_limit:
            return
        props = device_properties()
        static = self.attribute("SHARED_SIZE_BYTES")
        if nbytes + static > props.max_shared_per_block_optin:
            raise CudaError(f"cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES, {nbytes}) for {self.name}", 1,
                            "CUDA_ERROR_INVALID_VALUE",
                            f"kernel needs {nbytes} B dynamic + {static} B static shared memory; "
                            f"{props.name} allows {props.max_shared_per_block_optin} B per block")
        allowed = props.max_shared_per_block_optin - static
        d = driver()
        check(d.cuFuncSetAttribute(self.handle, d.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                   int(allowed)),
              f"cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES, {allowed}) for {self.name}")
        self._dyn_smem_limit = allowed


# --- pointers --------------------------------------------------------------------------------------------

def _ptr_device_array(obj) -> int:
    return obj._ptr


def _ptr_cai(obj) -> int:
    return int(obj.__cuda_array_interface__["data"][0])


def _ptr_torch(obj) -> int:
    if not obj.is_cuda:
        raise TypeError(f"a torch tensor on {obj.device} was passed as a pointer argument; it must be on a CUDA device")
    return obj.data_ptr()


# type -> resolver. Filled lazily: the first object of a new type pays an isinstance walk, later ones one
# dict lookup. (int is handled before the lookup.)
_POINTER_RESOLVERS: dict[type, Any] = {}


def pointer_of(obj: Any) -> int:
    """The device address of ``obj`` as an int.

    Accepts an int (taken as an address), a DeviceArray, a torch CUDA tensor (``data_ptr()``), or anything
    with ``__cuda_array_interface__`` (CuPy, Numba). Raises TypeError for anything else, including NumPy
    arrays and CPU tensors (host memory cannot be passed to a kernel).
    """
    t = type(obj)
    if t is int:
        return obj
    r = _POINTER_RESOLVERS.get(t)
    if r is not None:
        return r(obj)
    return _pointer_of_slow(obj)


def _pointer_of_slow(obj: Any) -> int:
    from .memory import DeviceArray

    t = type(obj)
    if isinstance(obj, bool):
        raise TypeError("a bool was passed where a device pointer is expected")
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, DeviceArray):
        r = _ptr_device_array
    else:
        torch = sys.modules.get("torch")
        if torch is not None and isinstance(obj, torch.Tensor):
            r = _ptr_torch
        elif hasattr(obj, "__cuda_array_interface__"):
            r = _ptr_cai
        elif isinstance(obj, np.ndarray):
            raise TypeError("a NumPy array (host memory) was passed where a device pointer is expected; "
                            "copy it to the GPU first, e.g. DeviceArray.from_numpy(a)")
        else:
            raise TypeError(f"cannot get a device pointer from {t.__module__}.{t.__qualname__}: expected an int "
                            "address, a DeviceArray, a torch CUDA tensor or an object with "
                            "__cuda_array_interface__")
    _POINTER_RESOLVERS[t] = r
    return r(obj)


# --- the launcher ----------------------------------------------------------------------------------------

def _convert_bf16(v: Any) -> int:
    """The 16 raw bits of ``v`` rounded to bfloat16 (round to nearest even), for a bfloat16 scalar param."""
    f32 = np.array(float(v), dtype=np.float32).view(np.uint32).item()
    if (f32 & 0x7F800000) == 0x7F800000 and (f32 & 0x7FFFFF):
        return 0x7FC0  # NaN
    return ((f32 + 0x7FFF + ((f32 >> 16) & 1)) >> 16) & 0xFFFF


_FACTORY_CODE: dict = {}  # generated launcher source -> its code object (Launcher._exec_factory)


class Launcher:
    """Launches one compiled kernel specialization; arguments are packed into prebuilt storage.

    Two ways to build one (the second is the one in docs/CONTRACTS.md)::

        Launcher(kernel, param_kinds, num_warps=4, shared_bytes=0)          # kernel: Kernel or CUfunction
        Launcher(cubin_or_ptx, name, param_kinds, num_warps=4, shared_bytes=0)

    ``param_kinds``: one entry per kernel parameter, ``"ptr"`` or a dtype name (``"int32"``, ``"float32"``...).
    Call as ``launcher(grid, stream, args)``: ``grid`` an int or a 1-3 tuple, ``stream`` None/0 (default
    stream), an int handle or a CUstream, ``args`` a sequence of ints/floats/bools, pointer params as int
    device addresses (objects accepted by ``pointer_of`` work too, through a slower path).
    """

    __slots__ = ("kernel", "function", "name", "param_kinds", "num_warps", "block", "shared_bytes",
                 "_struct", "_buf", "_params", "_params_addr", "_nparams", "_fn", "_launch", "launch",
                 "_py_launch", "_plan", "_entries")

    def __init__(self, kernel: Any, *args: Any, num_warps: int | None = None, shared_bytes: int | None = None,
                 param_kinds: Sequence[str] | None = None, name: str | None = None):
        rest = list(args)
        if isinstance(kernel, (bytes, bytearray, str)):
            # Contract form: (image, name, param_kinds, num_warps, shared_bytes).
            if name is None:
                if not rest:
                    raise TypeError("Launcher(image, name, param_kinds, ...) needs the kernel name")
                name = rest.pop(0)
            kernel = Module(kernel).get_function(name)
        if param_kinds is None:
            if not rest:
                raise TypeError("Launcher needs param_kinds")
            param_kinds = rest.pop(0)
        if rest and num_warps is None:
            num_warps = rest.pop(0)
        if rest and shared_bytes is None:
            shared_bytes = rest.pop(0)
        if rest:
            raise TypeError(f"Launcher got {len(rest)} unexpected positional arguments")
        num_warps = 4 if num_warps is None else int(num_warps)
        shared_bytes = 0 if shared_bytes is None else int(shared_bytes)

        if isinstance(kernel, Kernel):
            self.kernel = kernel
            self.function = kernel.handle
            self.name = name or kernel.name
            if shared_bytes > 48 * 1024:
                kernel.set_max_dynamic_shared(shared_bytes)
        else:  # a raw CUfunction (or an int handle): the caller set any attributes itself
            self.kernel = None
            self.function = kernel if not isinstance(kernel, int) else driver().CUfunction(kernel)
            self.name = name or "<kernel>"
        self.param_kinds = tuple(param_kinds)
        self.num_warps = num_warps
        self.block = 32 * num_warps
        self.shared_bytes = shared_bytes
        self._nparams = n = len(self.param_kinds)

        self._struct = s = struct.Struct(_fmt_for(self.param_kinds))
        # One buffer for all values; keep it and the pointer array referenced by self so their addresses
        # stay valid for the launcher's lifetime.
        self._buf = ctypes.create_string_buffer(max(s.size, 1))
        base = ctypes.addressof(self._buf)
        self._params = (ctypes.c_void_p * max(n, 1))(*[base + _SLOT * i for i in range(n)])
        self._params_addr = ctypes.addressof(self._params) if n else 0
        self._fn = self.function
        self._launch = driver().cuLaunchKernel
        self._install_fast_path()

    def _build_fast_path(self):
        """Generate ``launch(grid, stream, args)`` for this arity, with every constant bound as a local.

        Why generated: unpacking ``args`` into named locals and calling ``pack_into(buf, 0, a0, a1, ...)``
        avoids building a tuple for ``*args`` and all attribute lookups; it is ~40% of the Python-side cost.
        """
        n = self._nparams
        names = [f"a{i}" for i in range(n)]
        lines = [
            "def launch(grid, stream, args):",
            "    if type(grid) is tuple and len(grid) == 1:",
            "        gx = grid[0]; gy = 1; gz = 1",
            "    elif type(grid) is int:",
            "        gx = grid; gy = 1; gz = 1",
            "    else:",
            "        gx, gy, gz = _grid3(grid)",
        ]
        if "bfloat16" in self.param_kinds:
            lines.append("    args = _convert(args)")
        if n:
            lines += [
                "    try:",
                f"        {', '.join(names)}, = args",
                f"        _pack(_buf, 0, {', '.join(names)})",
                "    except Exception:",
                "        _pack_slow(args)",
            ]
        claunch = self._c_launch()
        if claunch is not None:
            # The C call (fastlaunch.py) takes plain integers: no per-argument conversion in cuda.bindings.
            lines += [
                "    s = stream if type(stream) is int else (0 if stream is None else int(stream))",
                f"    err = _c(_fnint, gx, gy, gz, {self.block}, {self.shared_bytes}, s, _addr)",
                "    if err:",
                "        _failed(err, (gx, gy, gz), stream)",
            ]
        else:
            lines += [
                "    if stream == 0:",
                "        stream = None",  # cuda.bindings' cheapest spelling of the legacy default stream
                f"    err = _cu(_fn, gx, gy, gz, {self.block}, 1, 1, {self.shared_bytes}, stream, _addr, 0)[0]",
                "    if err:",
                "        _failed(err, (gx, gy, gz), stream)",
            ]
        env = {"_grid3": self._grid3, "_convert": self._convert, "_pack": self._struct.pack_into, "_buf": self._buf,
               "_pack_slow": self._pack_slow, "_cu": self._launch, "_fn": self._fn, "_addr": self._params_addr,
               "_failed": self._launch_failed, "_c": claunch, "_fnint": self._fn_int()}
        return self._exec_factory(lines, env)

    def _exec_factory(self, lines, env):
        """Compile ``lines`` (one function definition) inside a factory whose parameters are ``env``'s names:
        the constants become closure cells, and LOAD_DEREF is as cheap as a local."""
        fname = lines[0].split()[1].split("(")[0]
        factory = "def _factory(" + ", ".join(env) + "):\n" + "\n".join("    " + ln for ln in lines) + \
            f"\n    return {fname}\n"
        code = _FACTORY_CODE.get(factory)  # the text depends on the arity and kinds only: compile it once
        if code is None:
            code = _FACTORY_CODE[factory] = compile(factory, "<tilefarm launcher>", "exec")
        scope: dict = {}
        exec(code, scope)
        return scope["_factory"](**env)

    def _make_plan(self, select, n_in):
        """A C Plan packing the values at positions ``select`` (increasing; None: all) of ``n_in``, or None."""
        if self._c_launch() is None:
            return None
        try:
            from . import fastlaunch

            plan_type, fn = fastlaunch.plan_type(), self._fn_int()
            if plan_type is None or fn is None:
                return None
            codes = [fastlaunch.SKIP] * n_in
            for j, i in enumerate(range(n_in) if select is None else select):
                codes[i] = fastlaunch.KIND_CODES[self.param_kinds[j]]
            return plan_type(fn, self.block, self.shared_bytes, bytes(codes), ctypes.addressof(self._buf),
                             self._py_launch, self._launch_failed, self)
        except Exception:
            return None

    def _build_plan_path(self, plan):
        """``launch(grid, stream, args)`` through the C plan: unpack ``args`` into locals, one C call."""
        names = [f"a{i}" for i in range(self._nparams)]
        if names:
            lines = [
                "def launch(grid, stream, args):",
                "    try:",
                f"        {', '.join(names)}, = args",
                "    except Exception:",
                "        return _py(grid, stream, args)",  # wrong arity or not a sequence: its messages
                f"    _plan(grid, stream, {', '.join(names)})",
            ]
        else:
            lines = ["def launch(grid, stream, args):", "    _plan(grid, stream)"]
        return self._exec_factory(lines, {"_py": self._py_launch, "_plan": plan.launch})

    def entry(self, select: Sequence[int] | None = None, n_in: int | None = None):
        """A launch callable ``entry(grid, stream, *values)`` taking ``n_in`` values, one per caller position,
        of which the kernel's parameters are those at positions ``select`` (None: all of them, and ``n_in`` is
        the parameter count). Same behaviour and errors as calling the launcher with the selected values; with
        the C extension the common case is one C call (pack + launch). Cached per (select, n_in).
        """
        n_in = self._nparams if n_in is None else int(n_in)
        sel = None if select is None else tuple(int(i) for i in select)
        if sel is None and n_in != self._nparams:
            raise ValueError(f"kernel {self.name} takes {self._nparams} arguments; entry(n_in={n_in}) needs a select")
        if sel is not None and (len(sel) != self._nparams or not all(0 <= i < n_in for i in sel)):
            raise ValueError(f"entry(select={sel}, n_in={n_in}) does not pick the {self._nparams} arguments of "
                             f"kernel {self.name}")
        key = (sel, n_in)
        e = self._entries.get(key)
        if e is None:
            plan = None
            if sel is None or list(sel) == sorted(set(sel)):
                plan = self._make_plan(sel, n_in)
            e = plan.launch if plan is not None else self._build_py_entry(sel, n_in)
            self._entries[key] = e
        return e

    def _build_py_entry(self, sel, n_in):
        vs = [f"v{i}" for i in range(n_in)]
        picked = vs if sel is None else [vs[i] for i in sel]
        lines = [f"def entry({', '.join(['grid', 'stream'] + vs)}):",
                 f"    _launch(grid, stream, [{', '.join(picked)}])"]
        return self._exec_factory(lines, {"_launch": self.launch})

    def __call__(self, grid: Any, stream: Any, args: Sequence[Any]) -> None:
        """Launch on ``grid`` blocks of ``32 * num_warps`` threads with ``args``; raise CudaError on failure.

        Errors inside the running kernel (bad addresses...) surface later, at the next synchronizing call.
        (Each instance is given a one-off subclass whose ``__call__`` IS the generated ``launch``, so this
        body only runs if that was skipped.)
        """
        self.launch(grid, stream, args)

    def _c_launch(self):
        """The C launch function when it applies: the real driver binding is in use (tests swap in fakes)."""
        try:
            if self._launch is not driver().cuLaunchKernel:
                return None
            from . import fastlaunch

            return fastlaunch.get()
        except Exception:
            return None

    def _fn_int(self):
        try:
            return int(self._fn)
        except Exception:
            return None

    def _install_fast_path(self) -> None:
        # With the C plan, the generated Python launch is only the plan's fallback (odd arguments, errors):
        # generate it on first need, not for every kernel a process loads (it was half a Launcher's making).
        built: list = []

        def py_on_demand(grid, stream, args):
            if not built:
                built.append(self._build_fast_path())
                object.__setattr__(self, "_py_launch", built[0])
            return built[0](grid, stream, args)

        object.__setattr__(self, "_py_launch", py_on_demand)
        object.__setattr__(self, "_entries", {})
        plan = self._make_plan(None, self._nparams)
        object.__setattr__(self, "_plan", plan)
        if plan is None:
            object.__setattr__(self, "_py_launch", self._build_fast_path())
        fast = self._py_launch if plan is None else self._build_plan_path(plan)
        object.__setattr__(self, "launch", fast)
        # A delegating __call__ costs one extra Python frame (~0.1 us); a per-instance subclass whose
        # __call__ is the generated function (a staticmethod: no self) removes it.
        cls = type(f"Launcher[{self.name}]", (Launcher,), {"__slots__": (), "__call__": staticmethod(fast),
                                                            "__module__": __name__})
        object.__setattr__(self, "__class__", cls)

    def __setattr__(self, name, value):
        object.__setattr__(self, name, value)
        # Tests swap in a fake cuLaunchKernel; rebuild the generated path (and forget the entries made so far)
        # so it calls the new one.
        if name == "_launch" and hasattr(self, "launch"):
            self._install_fast_path()

    # --- slow paths: correctness and messages, off the hot path -------------------------------------------

    @staticmethod
    def _grid3(grid: Any) -> tuple[int, int, int]:
        if isinstance(grid, (int, np.integer)):
            return int(grid), 1, 1
        g = tuple(int(x) for x in grid)
        if not 1 <= len(g) <= 3:
            raise ValueError(f"grid must have 1 to 3 dimensions, got {grid!r}")
        return g + (1,) * (3 - len(g))

    def _convert(self, args: Sequence[Any]) -> list:
        out = list(args)
        for i, k in enumerate(self.param_kinds):
            if k == "bfloat16" and i < len(out):
                out[i] = _convert_bf16(out[i])
        return out

    def _pack_slow(self, args: Sequence[Any]) -> None:
        """Explain why packing failed, or fix it (pointer objects -> addresses, NumPy scalars -> Python)."""
        args = list(args)
        if len(args) != self._nparams:
            raise TypeError(f"kernel {self.name} takes {self._nparams} arguments ({', '.join(self.param_kinds)}), "
                            f"got {len(args)}")
        for i, (k, v) in enumerate(zip(self.param_kinds, args)):
            if k == "ptr":
                args[i] = pointer_of(v)
                if args[i] < 0:
                    raise TypeError(f"argument {i} of {self.name}: negative pointer {args[i]}")
                continue
            fmt = PARAM_FORMATS[k]
            if isinstance(v, np.generic):
                v = v.item()
                args[i] = v
            try:
                struct.pack("=" + fmt, v)
            except struct.error as e:
                raise TypeError(f"argument {i} of {self.name} ({k}): cannot pass {v!r}: {e}") from None
        self._struct.pack_into(self._buf, 0, *args)

    def _launch_failed(self, err: Any, grid: tuple, stream: Any) -> None:
        d = driver()
        if int(err) == int(d.CUresult.CUDA_ERROR_INVALID_CONTEXT):
            # First launch from a thread where our context is not current (or another library switched it):
            # make it current and retry once.
            ensure_context(force=True)
            err = self._launch(self._fn, *grid, self.block, 1, 1, self.shared_bytes, stream, self._params_addr, 0)[0]
            if not err:
                return
        check((err,), f"cuLaunchKernel({self.name}, grid={grid}, block=({self.block},1,1), "
                      f"shared={self.shared_bytes})")

    def values(self) -> tuple:
        """The argument values currently packed in the storage (for tests and debugging)."""
        return self._struct.unpack_from(self._buf, 0)
