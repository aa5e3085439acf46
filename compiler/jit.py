"""`@compiler.jit`: specialization, the compile cache, launching on the GPU, and the interpreter.

Launch path (kept short on purpose, it is paid per launch): bind the arguments, compute a specialization key
from each argument with a handler chosen by its Python type, look the compiled kernel up in a dict, and hand
the already-resolved argument values to the kernel's Launcher, which packs them into prebuilt storage.
"""
from __future__ import annotations

import dataclasses
import functools
import json
import hashlib
import types
import typing
import inspect
import itertools
import os
import sys
import textwrap
from types import MethodType as _MethodType

from .errors import CompilationError
from .options import Knobs, language_knobs
from .ir import types as T
from .ir.types import TensorType

INTERPRET_ENV = "TILEFARM_INTERPRET"


def _interpret_forced() -> bool:
    return os.environ.get(INTERPRET_ENV, "0") not in ("", "0", "false", "False")


# The generated fast launch path reads this once per process (an os.environ lookup costs ~0.7 us per launch);
# `JITFunction.run` and `warmup` still read the variable on every call.
_INTERPRET_AT_IMPORT = _interpret_forced()


def _interpret_at_import() -> bool:
    return _INTERPRET_AT_IMPORT


# ----------------------------------------------------------------------------------------------------
# argument handlers: type -> fn(arg) -> (spec_key, launch_value, kind)
#   kind: 'ptr' (device pointer), 'host' (NumPy array: interpreter), 'int', 'float', 'bool', 'const'
# ----------------------------------------------------------------------------------------------------
_TORCH_DTYPES = {
    "torch.float32": T.float32, "torch.float16": T.float16, "torch.bfloat16": T.bfloat16, "torch.float64": T.float64,
    "torch.int8": T.int8, "torch.int16": T.int16, "torch.int32": T.int32, "torch.int64": T.int64,
    "torch.uint8": T.uint8, "torch.uint16": T.uint16, "torch.uint32": T.uint32, "torch.uint64": T.uint64,
    "torch.bool": T.int1, "torch.float8_e4m3fn": T.float8e4nv, "torch.float8_e5m2": T.float8e5,
}
_torch_dtype_cache: dict = {}


def _torch_handler(a):
    dt = _torch_dtype_cache.get(a.dtype)
    if dt is None:
        dt = _TORCH_DTYPES.get(str(a.dtype))
        if dt is None:
            raise TypeError(f"torch dtype {a.dtype} is not supported")
        _torch_dtype_cache[a.dtype] = dt
    p = a.data_ptr()
    if not a.is_cuda:  # a CPU tensor runs in the interpreter, like a NumPy array (results written in place)
        return (dt, (p & 15) == 0), a, "host"
    return (dt, (p & 15) == 0), p, "ptr"


def _torch_cpu_numpy(a, dt):
    """A NumPy view of a CPU torch tensor's memory (bfloat16 and fp8 through their bits)."""
    try:
        a = a.detach()
        if dt == T.bfloat16:
            import torch

            return a.view(torch.int16).numpy().view(T.bfloat16.np)
        if dt is not None and dt.is_fp8():
            import torch

            return a.view(torch.uint8).numpy().view(dt.np)
        return a.numpy()
    except (AttributeError, TypeError, RuntimeError) as e:
        raise TypeError(f"a CPU torch tensor runs in the interpreter, which could not read it as a NumPy array "
                        f"({type(e).__name__}: {e})") from None


def _is_cpu_torch_tensor(a) -> bool:
    t = type(a)
    return t.__module__.startswith("torch") and t.__name__ in ("Tensor", "Parameter") and not a.is_cuda


def _numpy_handler(a):
    dt = T.from_numpy(a.dtype)
    p = a.__array_interface__["data"][0]
    return (dt, (p & 15) == 0), a, "host"


def _device_array_handler(a):
    dt = T.from_numpy(a.dtype)
    p = a.data_ptr()
    return (dt, (p & 15) == 0), p, "ptr"


def _cai_handler(a):
    cai = a.__cuda_array_interface__
    p = cai["data"][0]
    dt = T.from_numpy(cai["typestr"])
    return (dt, (p & 15) == 0), p, "ptr"


def _int_handler(a):
    if a == 1:
        return ("c1",), 1, "const"
    if -(2**31) <= a < 2**31:
        return ("i32", (a & 15) == 0), a, "int"
    if -(2**63) <= a < 2**63:
        return ("i64", (a & 15) == 0), a, "int"
    if 0 <= a < 2**64:
        return ("u64", (a & 15) == 0), a, "int"
    raise OverflowError(f"integer argument {a} does not fit in 64 bits (int64 or uint64), as Triton requires")


def _float_handler(a):
    return ("fp32",), a, "float"


def _bool_handler(a):
    return ("i1",), a, "bool"


def _none_handler(a):
    return ("none",), None, "const"


def _np_scalar_handler(a):
    """A NumPy scalar: integers as Python ints; a numpy.float64, which is a Python float (a subclass), as Triton
    takes it: float32, like any float; the other float types (float32, float16, ...) as their own type."""
    dt = T.from_numpy(a.dtype)
    if dt.is_int() and not dt.is_bool():
        return _int_handler(int(a))
    if isinstance(a, float):
        return _float_handler(float(a))
    return (dt.name,), a.item(), "typed"


def _tuple_handler(a):
    """A tuple (or namedtuple) argument: each element is specialized as an argument of its own; the key holds
    the tuple's type and its elements' keys, the launch value its elements' (leaf value, kind) pairs."""
    from .language.values import constexpr

    keys, leaves = [], []
    for e in a:
        if isinstance(e, constexpr) or getattr(e, "__tilefarm_jit__", False):  # compile-time values
            keys.append(("constexpr", ("k", e if _hashable(e) else repr(e)), e))
            leaves.append((e, "constexpr"))
            continue
        h = _HANDLERS.get(type(e)) or _handler_for(e)
        if h is None:  # a dtype: a compile-time value
            keys.append(("constexpr", ("k", e), e))
            leaves.append((e, "constexpr"))
            continue
        k, lv, kind = h(e)
        if kind in ("desc", "hostdesc"):
            raise TypeError("a tensor descriptor inside a tuple argument is not supported")
        keys.append((kind, k, lv if kind == "const" else None))
        leaves.append((lv, kind))
    return ("tuple", type(a), tuple(keys)), tuple(leaves), "tuple"


def _leaves(lv, kind):
    """The (value, kind) leaves of one argument (a tuple's, recursively; anything else is its own leaf)."""
    if kind != "tuple":
        yield lv, kind
        return
    for v, k in lv:
        yield from _leaves(v, k)


def _wrapper_handler(a):
    """`reinterpret(tensor, dtype)` (compiler.triton_compat.runtime.TensorWrapper): a pointer to `a.dtype` at the
    base array's memory; on the host the interpreter reads it through the wrapper's `interp_array()`."""
    base = a.base
    bh = _HANDLERS.get(type(base)) or _handler_for(base)
    bk, bv, bkind = bh(base) if bh is not None else (None, None, None)
    if bkind not in ("ptr", "host"):
        raise TypeError(f"a reinterpreted tensor's base must be an array, got {type(base).__name__}")
    return (a.dtype, bk[1]), (a if bkind == "host" else bv), bkind


class _PointerStandIn:
    """A pointer parameter known only by its element dtype (warmup's `kernel.warmup(torch.float32, ...)`)."""

    __slots__ = ("dtype",)

    def __init__(self, dtype):
        self.dtype = dtype


def _dtype_of(v):
    """The element dtype a warmup argument names (a tl dtype, a torch dtype), else None."""
    if isinstance(v, T.dtype):
        return v
    if type(v).__module__ == "torch" and type(v).__name__ == "dtype":
        return _TORCH_DTYPES.get(str(v))
    return None


def _stand_in_handler(a):
    return (a.dtype, True), a, "ptr"


def _desc_handler(a):
    """A host-side TensorDescriptor: specialized on its base's dtype and 16-byte alignment, its block shape and
    padding, which strides (all but the last, which is 1) are multiples of 16, whether TMA can read it, whether it
    keeps Triton's contract (a 16-byte aligned base, strides but the last whole 16-byte multiples: its rows are
    16-byte aligned) and whether its inner extent is a whole number of 16-byte units (TMA stores clip at 16-byte
    units of the row: a store past a ragged inner extent would write the elements up to the next unit); the launch
    value is (descriptor, base pointer or host array, element dtype)."""
    base = a.base
    bh = _HANDLERS.get(type(base)) or _handler_for(base)
    bk, bv, bkind = bh(base) if bh is not None else (None, None, None)
    if bkind not in ("ptr", "host"):
        raise TypeError(f"a TensorDescriptor's base must be an array (GPU tensor, DeviceArray, NumPy array), got "
                        f"{type(base).__name__}")
    dt, aligned = bk
    strides = tuple(int(x) & 15 == 0 for x in a.strides[:-1])
    from .tools.tensor_descriptor import tma_applies

    block = tuple(int(b) for b in a.block_shape)
    eb = max(1, dt.bits // 8)
    tma = tma_applies(block, eb, aligned, a.strides, a.shape)
    contract = bool(aligned) and all(int(x) * eb % 16 == 0 for x in a.strides[:-1])
    inner16 = int(a.shape[-1]) * eb % 16 == 0
    key = ("desc", dt, aligned, block, a.padding, strides, tma, contract, inner16)
    return key, (a, bv, dt), "hostdesc" if bkind == "host" else "desc"


# NumPy is not imported here (`import compiler` does not load it): a NumPy argument means the caller loaded it,
# and `_handler_for` files np.ndarray under `_numpy_handler` on first sight.
_HANDLERS: dict = {int: _int_handler, float: _float_handler, bool: _bool_handler, type(None): _none_handler}


def _is_constexpr_object(v) -> bool:
    from .language.values import constexpr

    return isinstance(v, constexpr)


def _handler_for(a):
    t = type(a)
    h = _HANDLERS.get(t)
    if h is not None:
        return h
    mod = t.__module__
    np = sys.modules.get("numpy")
    if np is not None and t is np.ndarray:
        h = _numpy_handler
    elif mod.startswith("torch") and t.__name__ in ("Tensor", "Parameter"):
        h = _torch_handler
    elif isinstance(a, tuple):
        h = _tuple_handler
    elif t.__name__ == "TensorWrapper" and hasattr(a, "base") and isinstance(getattr(a, "dtype", None), T.dtype):
        h = _wrapper_handler
    elif hasattr(a, "interp_array") and not hasattr(a, "__cuda_array_interface__"):
        h = lambda x: _numpy_handler(x.interp_array())  # noqa: E731
    elif t.__name__ == "DeviceArray" and hasattr(a, "data_ptr"):
        h = _device_array_handler
    elif hasattr(a, "__cuda_array_interface__"):
        h = _cai_handler
    elif np is not None and isinstance(a, np.generic):
        h = _np_scalar_handler
    elif isinstance(a, bool):
        h = _bool_handler
    elif isinstance(a, int):
        h = _int_handler
    elif isinstance(a, float):
        h = _float_handler
    elif t is _PointerStandIn:
        h = _stand_in_handler
    elif isinstance(a, (T.dtype, T.pointer_type)):
        return None
    elif t.__name__ == "TensorDescriptor" and hasattr(a, "block_shape") and hasattr(a, "base"):
        h = _desc_handler
    else:
        raise TypeError(f"unsupported kernel argument of type {t.__module__}.{t.__name__}: pass a GPU tensor "
                        "(torch, CuPy, compiler.runtime.DeviceArray), a NumPy array (interpreter), or a scalar")
    _HANDLERS[t] = h
    return h


def _param_from_key(name, key, value, kind, do_not_specialize):
    """("arg", TensorType, attrs) or ("const", value) for one runtime argument's specialization key."""
    if kind == "const":
        return ("const", value)
    if kind == "tuple":  # ("tuple", type, element params)
        _, cls, elems = key
        subs = [("const", v) if k == "constexpr" or k == "const" else
                _param_from_key(name, ek, None, k, do_not_specialize) for k, ek, v in elems]
        return ("tuple", cls, subs)
    if kind in ("desc", "hostdesc"):
        return ("desc",) + tuple(key[1:])
    if kind in ("ptr", "host"):
        dt, aligned = key
        return ("arg", TensorType(T.pointer_type(dt)), {"divisibility": 16} if aligned else {})
    if kind == "int":
        dt = {"i32": T.int32, "i64": T.int64, "u64": T.uint64}[key[0]]
        attrs = {"divisibility": 16} if key[1] and name not in do_not_specialize else {}
        return ("arg", TensorType(dt), attrs)
    if kind == "float":
        return ("arg", TensorType(T.float32), {})
    if kind == "bool":
        return ("arg", TensorType(T.int1), {})
    if kind == "typed":
        return ("arg", TensorType(T.from_name(key[0])), {})
    raise AssertionError(kind)


# ----------------------------------------------------------------------------------------------------
_LAUNCH_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg", "debug", "stream", "enable_fp_fusion",
                   "enable_reflect_ftz", "launch_pdl", "launch_cooperative_grid", "sanitize_overflow",
                   "instrumentation_mode", "default_dot_input_precision", "arch")


def _arch_option(opts: dict) -> str | None:
    """The compile target Triton's `arch` launch option, `triton.knobs.runtime.override_arch` or
    TRITON_OVERRIDE_ARCH name ("sm80", "sm_90a", 90), as this compiler spells it ("sm_80", "sm_90a"); None: none."""
    a = opts.get("arch") or runtime_knobs.override_arch or os.environ.get("TRITON_OVERRIDE_ARCH")
    if a is None or a == "":
        return None
    text = str(a).strip().lower()
    digits = text[2:].lstrip("_") if text.startswith("sm") else text
    if not digits[:-1 if digits.endswith("a") else None].isdigit():
        raise TypeError(f"arch must name an NVIDIA compute capability ('sm80', 'sm_90a', 90), got {a!r}")
    return f"sm_{digits}"


def _check_launch_options(name: str, opts: dict) -> None:
    """Triton's other launch options: accepted where they change nothing here, refused where they would.
    `launch_pdl` (programmatic dependent launch): the kernel is launched after the previous one as usual, which a
    kernel without griddepcontrol (tl.extra.cuda.gdc_*, not supported here) cannot tell apart; `sanitize_overflow`:
    debug-mode overflow checks; `default_dot_input_precision`: Triton's tl.dot does not read it (it fills
    input_precision from knobs.language.fp32_default first). `launch_cooperative_grid=True` is refused: these
    launches do not guarantee every block of the grid is resident at once, which a grid-wide barrier needs."""
    if opts.get("launch_cooperative_grid"):
        raise TypeError(f"{name}: launch_cooperative_grid=True is not supported by this compiler (its launches do "
                        "not guarantee that every block of the grid is resident at once)")
    if opts.get("instrumentation_mode"):
        raise TypeError(f"{name}: instrumentation_mode={opts['instrumentation_mode']!r} is not supported by this "
                        "compiler (Triton's Proton instrumentation)")
    prec = opts.get("default_dot_input_precision")
    if prec is not None:
        from .frontend.semantic import _DOT_PRECISIONS

        if str(prec).lower() not in _DOT_PRECISIONS:
            raise TypeError(f"{name}: default_dot_input_precision must be one of {', '.join(_DOT_PRECISIONS)}, "
                            f"got {prec!r}")


class _DeviceCaches:
    """JITFunction.device_caches: a mapping from a device to (compiled kernels by specialization,) whose clear()
    drops the function's compiled kernels. One set serves every device here (a kernel is compiled for the
    architecture, loaded per device by the runtime)."""

    def __init__(self, fn):
        self._fn = fn

    def clear(self):
        self._fn._drop_compiled()

    def __getitem__(self, device):
        return (self._fn._kernels,)

    def __len__(self):
        return 1 if self._fn._kernels else 0

    def __iter__(self):
        return iter((0,) if self._fn._kernels else ())

    def __contains__(self, device):
        return bool(self._fn._kernels)


class JITFunction:
    """A kernel (or a device function called from kernels). Launch with `kernel[grid](*args, **meta)`."""

    __tilefarm_jit__ = True

    def __init__(self, fn, debug=None, do_not_specialize=(), noinline=False, repr=None, launch_metadata=None):
        self.fn = fn
        self.__name__ = fn.__name__
        self.__qualname__ = getattr(fn, "__qualname__", fn.__name__)
        self.__doc__ = fn.__doc__
        self.__module__ = fn.__module__
        self.__wrapped__ = fn
        self.signature = inspect.signature(fn)
        self.params = list(self.signature.parameters.values())
        self.arg_names = [p.name for p in self.params]
        self._param_set = frozenset(self.arg_names)
        self.constexpr_names = {p.name for p in self.params if _is_constexpr_annotation(p.annotation)}
        self.constexpr_mask = [p.name in self.constexpr_names for p in self.params]
        # `alpha: tl.float64` types a scalar parameter (as in Triton); without it a Python float is float32.
        self.annotated_dtypes = {p.name: d for p in self.params
                                 if (d := _dtype_annotation(p.annotation)) is not None}
        self.const_names = {p.name for p in self.params if _is_const_annotation(p.annotation)}
        self.defaults = {p.name: p.default for p in self.params if p.default is not inspect.Parameter.empty}
        dns = do_not_specialize or ()
        self.do_not_specialize = {self.arg_names[d] if isinstance(d, int) else d for d in dns}
        # Triton's `repr=`: a function of the specialization (`.signature`, `.constants`) that names the compiled
        # kernel (its PTX entry and CompiledKernel.name); compile.kernel_name calls it
        self.repr = repr
        self.debug = debug
        self._kernels: dict = {}
        self._ir_cache: dict = {}
        self._src_hash = None
        self._used_globals = ()  # (name, globals dict, value) of the constants the compiled kernels read
        self._fast = None
        self._fast_c = None  # the generated launcher that has a C dispatcher, and that dispatcher's `bind`
        self._fast_bind = None

    # --- identity ---------------------------------------------------------------------------------
    @property
    def cache_key(self) -> str:
        """sha256 of this function's source and of every jit function it calls (transitively), and of the values
        of the module-level constants they read (looked at again on every call: warmup and compile read it)."""
        if self._used_globals:
            self._globals_changed()
        if self._src_hash is None:
            h = hashlib.sha256()
            used = []
            # the code alone (each fingerprint holds its function's name and qualified name), not the module names,
            # which for a user's file depend on where it lies: machines of a fleet hold it at different paths
            for fp in sorted(_dependency_sources(self, used=used).values()):
                h.update(fp)
            self._src_hash = h.hexdigest()
            self._used_globals = tuple(used)
        return self._src_hash

    @property
    def device_caches(self) -> "_DeviceCaches":
        """Triton's handle on a kernel's in-process compiled kernels: `kernel.device_caches.clear()` drops them, so
        the next launch or warmup compiles again (through the disk cache, whose key holds the options and the
        environment switches: what a test that flips TRITON_DISABLE_LINE_INFO relies on). `[device][0]` is the
        dict of compiled kernels by specialization, as Triton's first entry is."""
        return _DeviceCaches(self)

    def _drop_compiled(self):
        self._kernels = {}
        self._ir_cache = {}
        self._fast = self._fast_c = self._fast_bind = None

    def _globals_changed(self) -> bool:
        """Whether a module-level constant the compiled kernels read has another value now: then they are dropped
        (and the key recomputed), so the next launch compiles with the new value instead of running the old."""
        for n, g, v in self._used_globals:
            cur = g.get(n, _MISSING)
            if cur is not v and not (type(cur) is type(v) and cur == v):
                self._src_hash = None
                self._used_globals = ()
                self._drop_compiled()
                return True
        return False

    def __repr__(self):
        return f"JITFunction({self.__module__}:{self.__qualname__})"

    # --- source -----------------------------------------------------------------------------------
    @property
    def src(self) -> str:
        """The function's source text from its `def` line on (decorators left out), dedented, as in Triton."""
        try:
            text = inspect.getsource(self.fn)
        except (OSError, TypeError):
            raise CompilationError(f"cannot read the source of {self.__qualname__}") from None
        lines = textwrap.dedent(text).splitlines(keepends=True)
        start = next((i for i, ln in enumerate(lines) if ln.lstrip().startswith(("def ", "async def "))), 0)
        return "".join(lines[start:])

    def _unsafe_update_src(self, new_src: str):
        """Replace the function by the one `new_src` defines (Triton's API for tests that patch a kernel's text):
        the text is compiled as a file of its own, registered with linecache so errors show its lines, in the
        function's globals plus the values its closure held. Compiled kernels of the old text are dropped."""
        fn = self.fn
        if not isinstance(new_src, str):
            raise TypeError(f"_unsafe_update_src takes the new source text, got {type(new_src).__name__}")
        scope = dict(fn.__globals__)
        if fn.__closure__:
            for n, cell in zip(fn.__code__.co_freevars, fn.__closure__):
                try:
                    scope[n] = cell.cell_contents
                except ValueError:
                    pass
        new = _define_from_source(textwrap.dedent(new_src), fn.__name__, scope)
        self.__init__(new, debug=self.debug, do_not_specialize=tuple(self.do_not_specialize), repr=self.repr)

    def __call__(self, *args, **kwargs):
        raise CompilationError(f"{self.__name__} is a kernel: launch it as {self.__name__}[grid](...), or call it "
                               "from inside another @compiler.jit function")

    def __getitem__(self, grid):
        if self._used_globals:
            self._globals_changed()
        fast = self._fast
        if fast is None:
            if not self._kernels:
                # The first launch in this process compiles (or loads from the disk cache) and usually loads the C
                # launch extension, after which the generated launcher would be made again: go straight to `run`
                # and generate it from the second launch on, once, knowing what is loaded.
                return functools.partial(_first_launch(), self.run, grid)
            fast = self._fast = _make_fast_launch(self)
        if fast is self._fast_c:
            return self._fast_bind(grid)  # C: binds the arguments and launches without a Python frame
        if grid is None:
            return functools.partial(fast, grid)
        # `fast` bound to `grid` as a method: cheaper to make than a partial, and calling it prepends `grid`
        # without copying the arguments (~60 ns less per launch)
        return _MethodType(fast, grid)

    # --- binding ----------------------------------------------------------------------------------
    def _bind(self, args, kwargs):
        """Return (all argument values in parameter order, launch options)."""
        opts = {}
        for k in _LAUNCH_OPTIONS:
            if k in kwargs:
                # A parameter of the same name (`num_warps: tl.constexpr`) takes the value too, as in Triton.
                opts[k] = kwargs[k] if k in self._param_set else kwargs.pop(k)
        n = len(self.arg_names)
        if len(args) > n:
            raise TypeError(f"{self.__name__} takes {n} arguments but {len(args)} were given")
        if not kwargs and len(args) == n:
            return list(args), opts
        vals = list(args)
        for name in self.arg_names[len(args):]:
            if name in kwargs:
                vals.append(kwargs.pop(name))
            elif name in self.defaults:
                vals.append(self.defaults[name])
            else:
                raise TypeError(f"{self.__name__}() missing argument '{name}'")
        if kwargs:
            bad = ", ".join(sorted(kwargs))
            raise TypeError(f"{self.__name__}() got unexpected argument(s): {bad}")
        return vals, opts

    def _specialize(self, vals):
        """(key, launch values for runtime params, per-param key parts, kinds, host mode)."""
        keys = []
        launch_vals = []
        host = False
        kinds = []
        dns = self.do_not_specialize
        for i, (v, is_c) in enumerate(zip(vals, self.constexpr_mask)):
            if is_c:
                keys.append(v if _hashable(v) else ("unhashable", repr(v)))
                kinds.append("constexpr")
                continue
            if _is_constexpr_object(v):  # `kernel[grid](x, tl.constexpr(3))`: a compile-time value, as in Triton
                keys.append(("k", v.value if _hashable(v.value) else repr(v.value)))
                kinds.append("constexpr")
                continue
            h = _HANDLERS.get(type(v)) or _handler_for(v)
            if h is None:  # a dtype passed to a non-constexpr parameter: treat as constexpr
                keys.append(("k", v))
                kinds.append("constexpr")
                continue
            k, lv, kind = h(v)
            if kind == "const" and k[0] == "c1" and (self.arg_names[i] in dns or
                                                     self.arg_names[i] in self.annotated_dtypes):
                # not specialized on (do_not_specialize), or typed by its annotation (`n: tl.int64`, as Triton's
                # binder keeps the annotated type): 1 is passed like any other int
                k, kind = ("i32", False), "int"
            keys.append(k)
            kinds.append(kind)
            if kind == "tuple":
                for leaf, lk in _leaves(lv, kind):
                    host = host or lk == "host"
                    if lk not in ("const", "constexpr"):
                        launch_vals.append(leaf)
                continue
            if kind in ("host", "hostdesc"):
                host = True
            if kind != "const":
                launch_vals.append(lv)
        return tuple(keys), launch_vals, kinds, host

    def _params(self, vals, keys, kinds):
        params = []
        for name, v, k, kind in zip(self.arg_names, vals, keys, kinds):
            if kind == "constexpr":
                params.append(("const", v))
            elif name in self.annotated_dtypes and kind in ("int", "float", "bool", "typed"):
                params.append(("arg", TensorType(self.annotated_dtypes[name]), {}))
            else:
                p = _param_from_key(name, k, v, kind, self.do_not_specialize)
                if name in self.const_names and p[0] == "arg" and p[1].element.is_ptr():
                    ptr = p[1].element
                    p = ("arg", TensorType(T.pointer_type(ptr.element_ty, ptr.address_space, const=True)), p[2])
                params.append(p)
        return params

    # --- launching --------------------------------------------------------------------------------
    def run(self, *args, grid, warmup=False, **kwargs):
        """Launch on `grid` (the general path; `kernel[grid](...)` takes a generated fast path first); with
        warmup=True compile only and return the kernel, as Triton's run does for wrappers that call it so."""
        if warmup:
            return self.warmup(*args, grid=grid, **kwargs)
        if self._used_globals:
            self._globals_changed()
        vals, opts = self._bind(args, kwargs)
        _check_launch_options(self.__name__, opts)
        keys, launch_vals, kinds, host = self._specialize(vals)
        if host or _interpret_forced():
            return self._interpret(vals, keys, kinds, grid, opts.get("debug", self.debug))
        co = _CompileOpts.of(opts, self.debug, None)
        kkey = co.key(keys)
        kernel = self._kernels.get(kkey)
        if kernel is None:
            kernel = self._compile_new(kkey, vals, keys, kinds, co, False)
            if kernel is None:  # a jit_cache_hook said not to compile: nothing is launched, as in Triton
                return None
        if callable(grid):
            grid = grid(self._meta(vals))
        if "desc" in kinds:
            from .runtime.tma import expand_descriptors

            launch_vals = expand_descriptors(launch_vals)
        kernel.launch(grid, opts.get("stream"), launch_vals)
        return kernel

    def _meta(self, vals):
        return dict(zip(self.arg_names, vals))

    def warmup(self, *args, grid=None, target=None, **kwargs):
        """Compile for `target` (default: the GPU's arch, else sm_90) without launching; needs no GPU.

        NumPy arrays stand in for pointers (their dtype and 16-byte alignment are what count). Returns the
        CompiledKernel, whose `.asm` maps stage names to text ("tile", "llir", "ptx", and "cubin" where an
        assembler is available).
        """
        vals, opts = self._bind(args, kwargs)
        _check_launch_options(self.__name__, opts)
        co = _CompileOpts.of(opts, self.debug, target)
        # As in Triton, a dtype (torch.float32, tl.float16) given for a pointer parameter stands for a 16-byte
        # aligned array of that dtype
        vals = [_PointerStandIn(_dtype_of(v)) if not const and _dtype_of(v) is not None else v
                for v, const in zip(vals, self.constexpr_mask)]
        keys, launch_vals, kinds, host = self._specialize(vals)
        kinds = ["ptr" if k == "host" else "desc" if k == "hostdesc" else k for k in kinds]
        kkey = co.key(keys)
        try:
            try:
                known = kkey in self._kernels
            except TypeError:  # an unhashable part: compiled, never filed
                known, kkey = True, None
            if not known:  # a new specialization: the JIT hooks see it, and it is filed for launches
                return self._compile_new(kkey, vals, keys, kinds, co, True)
            # known: still through compile_kernel's memory and disk caches (a test that moves the cache folder
            # sees the kernel compiled again there), which give the same kernel when nothing changed
            return _with_hash(self._compile(vals, keys, kinds, co))
        except CompilationError as e:
            raise e.with_traceback(None) from e.__cause__  # the user's mistake, shown from this call, not our internals

    def _compile(self, vals, keys, kinds, co: "_CompileOpts"):
        from .compile import compile_kernel

        params = self._params(vals, keys, kinds)
        return compile_kernel(self, params, num_warps=co.num_warps, num_stages=co.num_stages, debug=bool(co.debug),
                              arch=co.target, maxnreg=co.maxnreg, enable_fp_fusion=co.fusion,
                              enable_reflect_ftz=co.ftz)

    # --- new specializations: Triton's JIT hooks and preload ------------------------------------------
    def _compile_new(self, kkey, vals, keys, kinds, co: "_CompileOpts", is_warmup):
        """Compile a specialization this function has not filed yet (a launch's or warmup's miss, or preload),
        file it under `kkey` (None: not filed) and return it. `knobs.runtime.jit_cache_hook` is called first
        and a truthy answer skips the compile (None is returned); `jit_post_compile_hook` is called after."""
        knobs = runtime_knobs
        hook_kw = None
        if knobs.jit_cache_hook is not None:
            hook_kw = self._hook_kwargs(kkey, vals, keys, kinds, co, is_warmup)
            if knobs.jit_cache_hook(**hook_kw):
                return None
        kernel = _with_hash(self._compile(vals, keys, kinds, co))
        # which of the non-constexpr parameters the compiled kernel takes (ints equal to 1 are constants)
        rt = [i for i, kind in enumerate(k for k in kinds if k != "constexpr") if kind != "const"]
        kernel.arg_select = None if len(rt) == sum(1 for k in kinds if k != "constexpr") else tuple(rt)
        if "tuple" in kinds:
            kernel.arg_select = None  # launched with its leaves (run's launch values), never by the fast path
        if kkey is not None:
            self._kernels[kkey] = kernel
        if knobs.jit_post_compile_hook is not None:
            if hook_kw is None:
                hook_kw = self._hook_kwargs(kkey, vals, keys, kinds, co, is_warmup)
            knobs.jit_post_compile_hook(**hook_kw)
        return kernel

    def _hook_kwargs(self, kkey, vals, keys, kinds, co: "_CompileOpts", is_warmup):
        """The keyword arguments Triton's JIT hooks take (key, repr, fn, compile, is_manual_warmup,
        already_compiled); compile["specialization_data"] is the JSON string `preload` takes."""
        signature = {n: _signature_of(kind, k) for n, k, kind in zip(self.arg_names, keys, kinds)}
        constants = {n: v for n, v, kind in zip(self.arg_names, vals, kinds) if kind in ("constexpr", "const")}
        data = self._specialization_data(vals, keys, kinds, co)
        device = _current_device()
        arg_reprs = ", ".join(f"{n}: {signature[n]}" for n in self.arg_names)
        rep = (f"{self.__qualname__}[num_warps={co.num_warps}, num_ctas=1, num_stages={co.num_stages}, "
               f"enable_fp_fusion={co.fusion}, launch_cooperative_grid=False]({arg_reprs})")
        compile_kw = {"key": kkey, "signature": signature, "device": device, "constants": constants,
                      "num_warps": co.num_warps, "num_ctas": 1, "num_stages": co.num_stages,
                      "enable_fp_fusion": co.fusion, "enable_reflect_ftz": co.ftz, "launch_cooperative_grid": False,
                      "extern_libs": None,
                      "debug": co.debug, "maxnreg": co.maxnreg, "target": co.target, "configs": [{}],
                      "specialization_data": data, "is_warmup": is_warmup}
        return {"key": kkey, "repr": rep, "fn": JitFunctionInfo(self.__module__, self.__qualname__, self),
                "compile": compile_kw, "is_manual_warmup": is_warmup, "already_compiled": False}

    def _specialization_data(self, vals, keys, kinds, co: "_CompileOpts") -> str:
        """The JSON text that names one specialization for `preload`: this function's name and source hash (of
        it and the jit functions it calls), each argument's kind, specialization key and (constexprs and
        constants) value, and the compile options. Values JSON cannot hold are written as {"opaque": repr}:
        such data is refused by preload."""
        args = [{"name": n, "kind": kind, "key": _spec_encode(k),
                 "value": _spec_encode(v) if kind in ("constexpr", "const") else None}
                for n, v, k, kind in zip(self.arg_names, vals, keys, kinds)]
        obj = {"format": _SPEC_FORMAT, "name": self.__qualname__, "module": self.__module__,
               "source_hash": self.cache_key, "args": args,
               "options": {"num_warps": co.num_warps, "num_stages": co.num_stages, "debug": _spec_encode(co.debug),
                           "maxnreg": co.maxnreg, "target": co.target, "enable_fp_fusion": co.fusion,
                           "enable_reflect_ftz": co.ftz}}
        return json.dumps(obj)

    def preload(self, specialization_data):
        """Compile the specialization a JIT hook's `compile["specialization_data"]` names (the JSON text, or its
        parsed dict) into this function's cache, as Triton's preload: the next launch (or warmup) with such
        arguments compiles nothing. Returns the compiled kernel (the one warmup gives: same `.hash`), or None when
        a jit_cache_hook skips it. RuntimeError when the data is for another function, for another version of
        this one's source (or of a jit function it calls), or holds a value that cannot be rebuilt."""
        data = json.loads(specialization_data) if isinstance(specialization_data, (str, bytes)) \
            else specialization_data
        if not isinstance(data, dict) or data.get("format") != _SPEC_FORMAT:
            raise RuntimeError(f"preload({self.__qualname__}): not specialization data of this compiler (expected "
                               f"the JSON text a jit_cache_hook receives as compile['specialization_data'])")
        if data.get("name") != self.__qualname__:
            raise RuntimeError(f"Specialization data is for {data.get('name')} but trying to preload for "
                               f"{self.__qualname__}")
        if data.get("source_hash") != self.cache_key:
            raise RuntimeError(f"preload({self.__qualname__}): the specialization data was recorded for another "
                               f"version of the kernel's source (or of a jit function it calls): source hash "
                               f"{str(data.get('source_hash'))[:16]}... there, {self.cache_key[:16]}... now; record "
                               "it again from the current source")
        names = [a.get("name") for a in data["args"]]
        if names != self.arg_names:
            raise RuntimeError(f"preload({self.__qualname__}): the data's parameters {names} are not the "
                               f"kernel's {self.arg_names}")
        vals, keys, kinds = [], [], []
        for a in data["args"]:
            try:
                keys.append(_spec_decode(a["key"]))
                vals.append(_spec_decode(a["value"]))
            except _SpecUndecodable as e:
                raise RuntimeError(f"preload({self.__qualname__}): argument '{a['name']}' cannot be rebuilt from "
                                   f"the specialization data: {e}") from None
            kinds.append(a["kind"])
        keys = tuple(keys)
        o = data["options"]
        co = _CompileOpts(o["num_warps"], o["num_stages"], _spec_decode(o.get("debug")), o.get("target"),
                          o.get("maxnreg"), bool(o.get("enable_fp_fusion", True)),
                          bool(o.get("enable_reflect_ftz", True)))
        try:
            return self._compile_new(co.key(keys), vals, keys, kinds, co, True)
        except CompilationError as e:
            raise e.with_traceback(None) from e.__cause__

    def rewrite(self):
        """Triton's interpreter API: read the function's source and say where its `def` is
        (`self.rewriter.def_file_lineno`, 1-based, in `self.rewriter.filename`). Returns the rewriter."""
        from types import SimpleNamespace

        from .frontend.codegen import get_source

        src = get_source(self.fn)
        self.rewriter = SimpleNamespace(filename=src.file, def_file_lineno=src.line0 + src.fdef.lineno)
        return self.rewriter

    def lower(self, *args, **kwargs):
        """The frontend's IR Module for these arguments (for inspection and tests)."""
        vals, opts = self._bind(args, kwargs)
        keys, _, kinds, _ = self._specialize(vals)
        from .compile import lower_kernel

        return lower_kernel(self, self._params(vals, keys, kinds))

    def _interpret(self, vals, keys, kinds, grid, debug):
        from .compile import lower_kernel
        from . import interpreter

        from .options import ab_switches

        ikey = (keys, ab_switches())  # the A/B switches the frontend reads (TILEFARM_AB) change the IR too
        fn = self._ir_cache.get(ikey)
        if fn is None:
            self.cache_key  # noqa: B018 -- notes the constants the kernel reads, so a change is seen (_globals_changed)
            fn = lower_kernel(self, self._params(vals, keys, kinds)).function
            self._ir_cache[ikey] = fn
        if callable(grid):
            grid = grid(self._meta(vals))
        grid = _grid3(grid)
        run_args = []
        flat = []
        for v, kind in zip(vals, kinds):
            if kind == "tuple":
                _, lv, _ = _tuple_handler(v)
                flat += [(leaf, lk) for leaf, lk in _leaves(lv, kind)]
            else:
                flat.append((v, kind))
        for v, kind in flat:
            if kind in ("ptr", "desc"):
                raise TypeError(f"{self.__name__}: host arrays (NumPy, CPU tensors) run in the interpreter, which "
                                f"needs every array on the host; got a GPU array ({type(v).__name__}): copy it to "
                                "the host, or pass GPU arrays only")
        for v, kind in flat:
            if kind in ("constexpr", "const"):
                continue
            if kind == "host":
                if hasattr(v, "interp_array"):
                    v = v.interp_array()
                elif _is_cpu_torch_tensor(v):
                    v = _torch_cpu_numpy(v, _torch_handler(v)[0][0])
                run_args.append(v)
            elif kind == "hostdesc":  # the parameters a descriptor stands for (lower's): tmap, base, shape, strides
                base = v.base.interp_array() if hasattr(v.base, "interp_array") else (
                    _torch_cpu_numpy(v.base, _torch_handler(v.base)[0][0]) if _is_cpu_torch_tensor(v.base) else v.base)
                run_args += [0, base] + [int(x) for x in v.shape] + [int(x) for x in v.strides[:-1]]
            else:
                run_args.append(v)
        interpreter.run(fn, grid, run_args, debug=bool(debug))
        return None


def _grid3(grid):
    if isinstance(grid, int):
        return (grid, 1, 1)
    g = tuple(int(x) for x in grid)
    if not 1 <= len(g) <= 3:
        raise ValueError(f"grid must have 1 to 3 dimensions, got {grid!r}")
    return g + (1,) * (3 - len(g))


def _hashable(v) -> bool:
    try:
        hash(v)
        return True
    except TypeError:
        return False


def _dtype_annotation(ann):
    """The scalar dtype a parameter annotation names (`tl.float64`, "tl.int64", "float64"), else None."""
    if isinstance(ann, T.dtype):
        return ann
    if isinstance(ann, str):
        try:
            return T.from_name(ann.split(".")[-1])
        except Exception:
            return None
    return None


def _is_const_annotation(ann) -> bool:
    """`X: tl.const` (or the string "tl.const" / "const")."""
    from .language.core import const

    if ann is const:
        return True
    return isinstance(ann, str) and ann.split(".")[-1] == "const"


def _is_constexpr_annotation(ann) -> bool:
    from .language.core import constexpr

    if ann is constexpr:
        return True
    if isinstance(ann, str):
        return ann.split(".")[-1] == "constexpr"
    return False


def _code_fingerprint(code) -> bytes:
    """Bytes that change whenever the function's code does: marshalled code object (nested code included).

    Cheaper than reading and parsing the source (this sits on the path of a disk-cache hit in a fresh process);
    line numbers are part of it, so moving a kernel in its file recompiles it, which keeps error locations exact.
    """
    import marshal

    return marshal.dumps(_without_path(code))


def _without_path(code):
    """`code` with its file name (and its nested code's) blanked: the same kernel compiles to the same code
    wherever its file lies (a debug build, which writes the path into asserts, keys on the path separately)."""
    consts = tuple(_without_path(c) if isinstance(c, types.CodeType) else c for c in code.co_consts)
    return code.replace(co_filename="", co_consts=consts)


_SRC_COUNT = itertools.count()


def _define_from_source(text: str, name: str, scope: dict):
    """The function `name` that `text` defines, compiled under a file name of its own that linecache knows (so
    its source can be read back, and errors show its lines)."""
    import linecache

    fname = f"<tilefarm-src-{next(_SRC_COUNT)}:{name}>"
    lines = text.splitlines(keepends=True)
    linecache.cache[fname] = (len(text), None, lines, fname)
    ns: dict = {}
    exec(compile(text, fname, "exec"), scope, ns)
    fn = ns.get(name)
    if fn is None:
        fn = next((v for v in ns.values() if callable(v)), None)
    if fn is None:
        raise ValueError(f"_unsafe_update_src: the new source defines no function {name!r}")
    fn = getattr(fn, "fn", fn)  # the text kept its @jit decorator: the plain function under it
    return fn


def _value_fingerprint(v) -> str:
    """What a closure value contributes to a kernel's cache key: its repr for numbers, strings, dtypes,
    constexprs and tuples of them (the same in every process); for anything else its type (and a module's or
    function's qualified name)."""
    from .language.values import constexpr

    if isinstance(v, constexpr):
        v = v.value
    if v is None or isinstance(v, (bool, int, float, str, T.dtype, T.pointer_type)):
        return f"{type(v).__name__}:{v!r}"
    if isinstance(v, tuple) and len(v) <= 64:
        return "(" + ",".join(_value_fingerprint(x) for x in v) + ")"
    if inspect.ismodule(v):
        return f"module:{v.__name__}"
    if callable(v):
        return f"callable:{getattr(v, '__module__', '')}.{getattr(v, '__qualname__', type(v).__name__)}"
    return f"object:{type(v).__module__}.{type(v).__qualname__}"


_MISSING = object()


def _plain_value(v) -> bool:
    """A global a kernel reads as a compile-time value: a number, string, dtype, constexpr or a tuple of them."""
    from .language.values import constexpr

    if isinstance(v, constexpr):
        return True
    if isinstance(v, (bool, int, float, str, T.dtype, T.pointer_type)):
        return True
    return isinstance(v, tuple) and len(v) <= 64 and all(_plain_value(x) for x in v)


def _dependency_sources(jitfn, seen=None, used=None) -> dict:
    """{qualified name: code fingerprint} for jitfn and every jit function it names (through globals/attrs), and
    the values of the module-level constants their code reads (a kernel compiled with BLOCK = 64 is not the one
    for BLOCK = 128). `used` collects (name, globals dict, value) of those constants."""
    if seen is None:
        seen = {}
    fn = jitfn.fn
    name = f"{fn.__module__}.{fn.__qualname__}"
    if name in seen:
        return seen
    code = fn.__code__
    g = fn.__globals__
    closure = {}
    if fn.__closure__:
        for n, cell in zip(code.co_freevars, fn.__closure__):
            try:
                closure[n] = cell.cell_contents
            except ValueError:
                pass
    # the closure's values are part of the kernel (a factory's kernels share one code object)
    seen[name] = _code_fingerprint(code) + repr(sorted((n, _value_fingerprint(v)) for n, v in closure.items()
                                                       if not getattr(v, "__tilefarm_jit__", False))).encode()
    names = set(code.co_names) | set(code.co_freevars)
    for c in code.co_consts:  # nested code (comprehensions)
        if hasattr(c, "co_names"):
            names |= set(c.co_names)
    for n in sorted(names):
        obj = closure.get(n, g.get(n))
        if obj is None:
            continue
        if n not in closure and n in g and _plain_value(obj):
            seen[f"{name}:global:{n}"] = _value_fingerprint(obj).encode()
            if used is not None:
                used.append((n, g, obj))
        if getattr(obj, "__tilefarm_jit__", False):
            if obj is not jitfn:
                _dependency_sources(obj, seen, used)
        elif isinstance(obj, type) and getattr(obj, "__tilefarm_aggregate__", False):
            _aggregate_sources(obj, seen, used)
        elif inspect.ismodule(obj):
            for attr in names:
                sub = getattr(obj, attr, None)
                if sub is not None and getattr(sub, "__tilefarm_jit__", False) and sub is not jitfn:
                    _dependency_sources(sub, seen, used)
    return seen


def _aggregate_sources(cls, seen, used=None) -> None:
    """An aggregate class a kernel names: its constructor and plain methods (code, run while compiling) and its
    jit methods (with what they call) are part of the kernel."""
    key = f"{cls.__module__}.{cls.__qualname__}"
    if key in seen:
        return
    seen[key] = repr(cls.__tilefarm_fields__).encode()
    for m in cls.__tilefarm_methods__:
        m = getattr(m, "__func__", m)  # staticmethod / classmethod
        if getattr(m, "__tilefarm_jit__", False):
            _dependency_sources(m, seen, used)
        elif hasattr(m, "__code__"):
            seen[f"{key}.{m.__name__}"] = _code_fingerprint(m.__code__)


# ----------------------------------------------------------------------------------------------------
# Triton's JIT hooks (`triton.knobs.runtime`) and the specialization data `JITFunction.preload` takes
class _RuntimeKnobs(Knobs):
    """`triton.knobs.runtime`: `jit_cache_hook(key=, repr=, fn=, compile=, is_manual_warmup=, already_compiled=)`
    is called when a JITFunction is about to compile a specialization it has not filed (a launch, `warmup` or
    `preload`); a truthy return skips the compile (the launch or warmup returns None). `jit_post_compile_hook`
    is called the same way after the compile. Both are looked at only on such a miss, never on a cached launch.
    `override_arch` ("sm80", ...; else TRITON_OVERRIDE_ARCH): the target of compiles that name none."""

    _DEFAULTS = {"jit_cache_hook": None, "jit_post_compile_hook": None, "override_arch": None}
    _NAME = "runtime"


runtime_knobs = _RuntimeKnobs()


def _fp_fusion(opts) -> bool:
    got = opts.get("enable_fp_fusion")
    return bool(language_knobs.default_fp_fusion if got is None else got)


@dataclasses.dataclass
class JitFunctionInfo:
    """The `fn=` a JIT hook gets: the function's module (name), qualified name and the JITFunction."""

    module: str
    name: str
    jit_function: "JITFunction"


_SPEC_FORMAT = "tilefarm-specialization/1"


class _SpecUndecodable(Exception):
    pass


class _CompileOpts(typing.NamedTuple):
    """The options of one compile a launch, warmup or preload asks for (what compile_kernel takes beyond the
    specialization), built once and passed along."""

    num_warps: int = 4
    num_stages: int = 3
    debug: object = None
    target: str | None = None  # None: the GPU's own (else sm_90)
    maxnreg: int | None = None  # Triton's: registers per thread ptxas may use (Options checks it)
    fusion: bool = True  # Triton's enable_fp_fusion: a*b+c may become one FMA
    ftz: bool = True  # Triton's enable_reflect_ftz: float32 exp2/rsqrt flush denormals (Options.enable_reflect_ftz)

    @classmethod
    def of(cls, opts: dict, debug, target) -> "_CompileOpts":
        """From a launch's options (`_bind`'s): `debug` where they name none, `target` (warmup's) before Triton's
        arch option and override knobs."""
        target = target or _arch_option(opts)
        if (opts.get("num_ctas") or 1) > 1:  # taken and ignored (one block a program) where clusters exist
            from .compile import default_arch
            from .options import Options

            if Options(arch=target or default_arch()).sm < 90:
                raise ValueError(f"num_ctas > 1 requires NVIDIA SM90+ (Hopper): the target is "
                                 f"{target or default_arch()}")
        return cls(opts.get("num_warps", 4), opts.get("num_stages", 3), opts.get("debug", debug), target,
                   opts.get("maxnreg"), _fp_fusion(opts), bool(opts.get("enable_reflect_ftz", True)))

    def key(self, keys: tuple) -> tuple:
        """The key a JITFunction files the compiled specialization under: the specialization, num_warps,
        num_stages, debug, and the others where they are not the default."""
        rest = ((self.maxnreg,) if self.maxnreg else ()) + ((("target", self.target),) if self.target else ())
        rest += (("fp_fusion", False),) if not self.fusion else ()
        rest += (("reflect_ftz", False),) if not self.ftz else ()
        return keys + (self.num_warps, self.num_stages, self.debug) + rest


def _with_hash(kernel):
    """Triton's `CompiledKernel.hash`: the compile cache key (equal for the same specialization and options)."""
    if kernel is not None and getattr(kernel, "hash", None) is None:
        try:
            kernel.hash = kernel.key
        except AttributeError:
            pass
    return kernel


def _current_device() -> int:
    torch = sys.modules.get("torch")
    try:
        if torch is not None and torch.cuda.is_initialized():
            return torch.cuda.current_device()
    except Exception:
        pass
    return 0


def _signature_of(kind, key):
    """Triton's signature string of one argument ("*fp32", "i32", "constexpr", a tuple's nested tuple ...)."""
    if kind in ("constexpr", "const"):
        return "constexpr"
    if kind in ("ptr", "host"):
        return "*" + _triton_dtype_name(key[0])
    if kind == "typed":
        return _triton_dtype_name(T.from_name(key[0]))
    if kind in ("int", "float", "bool"):
        return key[0]  # "i32", "i64", "u64", "fp32", "i1"
    if kind == "tuple":
        return tuple(_signature_of(k, ek) if k not in ("constexpr", "const") else "constexpr"
                     for k, ek, _ in key[2])
    if kind in ("desc", "hostdesc"):
        return f"tensordesc<{_triton_dtype_name(key[1])}{list(key[3])}>"
    return str(kind)


def _triton_dtype_name(dt) -> str:
    """Triton's short name of a dtype in signatures: fp32, bf16, i32, u8, fp8e4nv."""
    s = getattr(dt, "short", None) or str(dt)
    return "fp" + s[1:] if s in ("f16", "f32", "f64") else s


def _spec_encode(v):
    """One specialization key part or constexpr value as JSON (tuples as lists; `_spec_decode` inverts it)."""
    from .language.values import constexpr

    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, tuple) and type(v) is tuple:
        return [_spec_encode(e) for e in v]
    if isinstance(v, list):
        return {"list": [_spec_encode(e) for e in v]}
    if isinstance(v, T.pointer_type):
        return {"ptr": _spec_encode(v.element_ty), "as": v.address_space, "const": v.const}
    if isinstance(v, T.dtype):
        return {"dtype": v.name}
    if isinstance(v, constexpr):
        return {"constexpr": _spec_encode(v.value)}
    if isinstance(v, type):
        return {"class": f"{v.__module__}:{v.__qualname__}"}
    if getattr(v, "__tilefarm_jit__", False) and isinstance(v, JITFunction):
        return {"jit": f"{v.__module__}:{v.__qualname__}"}
    if isinstance(v, tuple):  # a namedtuple value
        return {"namedtuple": _spec_encode(type(v)), "items": [_spec_encode(e) for e in v]}
    return {"opaque": repr(v)}


def _spec_global(path: str):
    mod, _, qual = path.partition(":")
    if "<locals>" in qual:
        raise _SpecUndecodable(f"{path} is defined inside a function, where it cannot be looked up by name")
    import importlib

    try:
        obj = importlib.import_module(mod)
        for part in qual.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as e:
        raise _SpecUndecodable(f"cannot find {path} ({e})") from None
    return obj


def _spec_decode(v):
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, list):
        return tuple(_spec_decode(e) for e in v)
    if "list" in v:
        return [_spec_decode(e) for e in v["list"]]
    if "ptr" in v:
        return T.pointer_type(_spec_decode(v["ptr"]), v.get("as", 1), v.get("const", False))
    if "dtype" in v:
        return T.from_name(v["dtype"])
    if "constexpr" in v:
        from .language.values import constexpr

        return constexpr(_spec_decode(v["constexpr"]))
    if "class" in v:
        return _spec_global(v["class"])
    if "jit" in v:
        return _spec_global(v["jit"])
    if "namedtuple" in v:
        return _spec_decode(v["namedtuple"])(*[_spec_decode(e) for e in v["items"]])
    if "opaque" in v:
        raise _SpecUndecodable(f"the value {v['opaque']} was recorded by its repr only")
    raise _SpecUndecodable(f"unknown entry {v!r}")


def jit(fn=None, *, debug=None, do_not_specialize=(), noinline=False, repr=None, **kwargs):
    """Decorate a kernel or device function written in the tile language. `repr=`: Triton's kernel-naming
    function of the specialization (compile.kernel_name)."""
    def wrap(f):
        return JITFunction(f, debug=debug, do_not_specialize=do_not_specialize, noinline=noinline, repr=repr)

    return wrap(fn) if fn is not None else wrap


def must_use_result(fn, reason=True):
    """Mark a jit function whose result must be used: a call to it as a statement of its own (result
    discarded) is a CompilationError. `@must_use_result("extra words")` adds words to the message."""
    if isinstance(fn, str):
        return lambda f: must_use_result(f, fn)
    fn._must_use_result = reason
    return fn


def constexpr_function(fn):
    """A plain Python function kernels may call while compiling on compile-time values (Triton's
    `triton.constexpr_function`): inside a kernel its arguments are unwrapped constexprs and its result is a
    compile-time value (`BLOCK: tl.constexpr = pick_block(N)`); a runtime tensor argument is an error. Called from
    Python it is the function itself."""
    fn.__tilefarm_constexpr_fn__ = True
    return fn


def cdiv(x: int, y: int) -> int:
    """Ceiling division of two ints."""
    return (x + y - 1) // y


def next_power_of_2(n: int) -> int:
    """The smallest power of two >= n; 0 for 0, as Triton's."""
    n = int(n)
    return 0 if n == 0 else 1 if n < 1 else 1 << (n - 1).bit_length()


_FAST = object()  # first element of keys made by the generated launcher's inline type checks
_FIRST = None


def _first_launch():
    """`first(run, grid, *args, **kwargs)`: a kernel's first launch, straight through `JITFunction.run`; a user
    error is raised from generated code (like the generated launcher's), so no compiler frame shows."""
    global _FIRST
    if _FIRST is None:
        from .errors import KernelRuntimeError

        src = ("def first(run, grid, *args, **kwargs):\n"
               "    try:\n"
               "        return run(*args, grid=grid, **kwargs)\n"
               "    except _USER_ERRORS as _e:\n"
               "        raise _e.with_traceback(None) from _e.__cause__\n")
        env = {"_USER_ERRORS": (CompilationError, KernelRuntimeError)}
        exec(compile(src, "<tilefarm launcher>", "exec"), env)
        _FIRST = env["first"]
    return _FIRST


def _make_fast_launch(jf: JITFunction):
    """Generate `launch(grid, <params>, num_warps=4, ...)` for this kernel's parameter list.

    The generated function reads each runtime argument with inline type checks for the common kinds (torch
    CUDA tensors, DeviceArray, int, float), builds one flat specialization key, finds the compiled kernel in a
    dict and launches it. Anything else (first call, NumPy arrays, other array types, unhashable constexprs,
    interpreter mode) takes `JITFunction.run`, which compiles; the kernel is then also filed under the flat key,
    with its launch entry bound once (`_bind_entry`): the launch itself is one call, `entry(grid, stream,
    <one value per runtime param>)`, which with the C extension packs and launches in C.
    """
    names = jf.arg_names
    reserved = {"grid", *_LAUNCH_OPTIONS}
    if reserved & set(names) or any(n.startswith("_") for n in names):
        return lambda grid, *args, **kwargs: jf.run(*args, grid=grid, **kwargs)
    sig = [f"{n}=_d{i}" if n in jf.defaults else n for i, n in enumerate(names)]
    allargs = f"({', '.join(names)},)"
    lines = [f"def launch(grid, {', '.join(sig + ['*', 'num_warps=4', 'num_stages=3', 'debug=None', 'stream=None'])}, "
             "**_extra):",
             "    if _extra or _FORCED:",
             "        try:",
             f"            return _slow(None, grid, {allargs}, _extra, num_warps, num_stages, debug, stream)",
             "        except _USER_ERRORS as _e:",
             "            raise _e.with_traceback(None) from _e.__cause__"]
    torch = sys.modules.get("torch")  # never import torch for the user: only recognise it once it is loaded
    tt = getattr(torch, "Tensor", None)
    if not isinstance(tt, type):
        tt = type("_NoTorch", (), {})
    try:
        from .runtime.memory import DeviceArray as da
    except Exception:  # pragma: no cover
        da = type("_NoDeviceArray", (), {})
    dispatcher = _make_dispatcher(jf, tt, da)
    dispatch = None if dispatcher is None else dispatcher.dispatch
    if dispatch is not None:
        # The C dispatcher does everything below for the common kinds (same key, same dict, same entry call)
        # and returns the kernel; None means it did not launch, and the Python below decides as before.
        lines += [f"    _r = _dispatch({', '.join(['grid', 'stream', 'num_warps', 'num_stages', 'debug'] + names)})",
                  "    if _r is not None:",
                  "        return _r"]
    keyparts, vals = ["_FAST"], []
    for i, a in enumerate(names):
        if jf.constexpr_mask[i]:
            keyparts.append(a)
            continue
        lines += [
            f"    _t = type({a})",
            f"    if _t is _TT and {a}.is_cuda:",
            f"        _v{i} = {a}.data_ptr(); _k{i} = {a}.dtype; _a{i} = not _v{i} & 15",
            "    elif _t is _DA:",
            f"        _v{i} = {a}._ptr; _k{i} = {a}.dtype; _a{i} = not _v{i} & 15",
            "    elif _t is int:",
            f"        _v{i} = {a}; _a{i} = not {a} & 15",
            # 2: int32, 3: int64, 6: past int64 (uint64): three builds (_int_handler), so three keys
            f"        _k{i} = 1 if {a} == 1 else (2 if -2147483648 <= {a} <= 2147483647 else "
            f"(3 if -9223372036854775808 <= {a} <= 9223372036854775807 else 6))",
            "    elif _t is float:",
            f"        _v{i} = {a}; _k{i} = 4; _a{i} = False",
            f"    elif {a} is None:",  # specialized on (not a parameter of the kernel: arg_select drops it)
            f"        _v{i} = None; _k{i} = 5; _a{i} = False",
            "    else:",
            "        try:",
            f"            return _slow(None, grid, {allargs}, {{}}, num_warps, num_stages, debug, stream)",
            "        except _USER_ERRORS as _e:",
            "            raise _e.with_traceback(None) from _e.__cause__",
        ]
        keyparts += [f"_k{i}", f"_a{i}"]
        vals.append(f"_v{i}")
    n_rt = len(vals)
    lines += [
        f"    _key = ({', '.join(keyparts + ['num_warps', 'num_stages', 'debug'])},)",
        "    try:",
        "        _kernel = _kernels.get(_key)",
        "    except TypeError:",
        "        try:",
        f"            return _slow(None, grid, {allargs}, {{}}, num_warps, num_stages, debug, stream)",
        "        except _USER_ERRORS as _e:",
        "            raise _e.with_traceback(None) from _e.__cause__",
        "    if _kernel is None:",
        "        try:",
        f"            return _slow(_key, grid, {allargs}, {{}}, num_warps, num_stages, debug, stream)",
        "        except _USER_ERRORS as _e:",
        "            raise _e.with_traceback(None) from _e.__cause__",
        "    if type(grid) is not tuple:",
        f"        grid = grid(dict(zip(_names, {allargs}))) if callable(grid) else grid",
        f"    _kernel._tf_entry({', '.join(['grid', 'stream'] + vals)})",
        "    return _kernel",
    ]
    src = "\n".join(lines)

    def slow(fast_key, grid, args, extra, num_warps, num_stages, debug, stream):
        kw = dict(extra)
        kw.update(num_warps=num_warps, num_stages=num_stages, stream=stream)
        if debug is not None:
            kw["debug"] = debug
        kernel = jf.run(*args, grid=grid, **kw)
        if fast_key is not None and kernel is not None and _bind_entry(kernel, n_rt):
            jf._kernels[fast_key] = kernel
        if torch is None and "torch" in sys.modules:
            jf._fast = None  # torch was imported after this launcher was made: regenerate to know its tensors
        elif dispatch is None and kernel is not None and _dispatcher_loadable():
            jf._fast = None  # the C extension was loaded by this launch: regenerate to use its dispatcher
        return kernel

    from .errors import KernelRuntimeError

    env = {"_USER_ERRORS": (CompilationError, KernelRuntimeError), "_kernels": jf._kernels, "_slow": slow, "_FORCED": _interpret_at_import(), "_names": names, "_FAST": _FAST,
           "_TT": tt, "_DA": da, "_dispatch": dispatch}
    for i, n in enumerate(names):
        if n in jf.defaults:
            env[f"_d{i}"] = jf.defaults[n]
    exec(compile(src, f"<tilefarm launcher for {jf.__name__}>", "exec"), env)
    launch = env["launch"]
    if dispatcher is not None:
        dispatcher.set_fallback(launch)
        jf._fast_c, jf._fast_bind = launch, dispatcher.bind
    return launch


def _make_dispatcher(jf: JITFunction, tt, da):
    """The C dispatcher for this function's generated launcher, or None (no C extension loaded,
    interpreter mode, or TILEFARM_FASTLAUNCH=0). Never builds the extension: the first GPU launch does, and
    the launcher is then regenerated (see `slow` in `_make_fast_launch`)."""
    if _interpret_at_import():
        return None
    try:
        from .runtime import fastlaunch

        mod = fastlaunch.loaded()
        if mod is None or not hasattr(mod, "Dispatcher"):
            return None
        defaults = tuple(jf.defaults.get(n, _FAST) for n in jf.arg_names)
        return mod.Dispatcher(_FAST, jf._kernels, tt, da, tuple(jf.arg_names), bytes(jf.constexpr_mask), defaults)
    except Exception:
        return None


def _dispatcher_loadable() -> bool:
    try:
        from .runtime import fastlaunch

        return getattr(fastlaunch.loaded(), "Dispatcher", None) is not None
    except Exception:
        return False


def _bind_entry(kernel, n_rt: int) -> bool:
    """Give `kernel` (just launched by `JITFunction.run`) the `_tf_entry(grid, stream, *values)` the generated
    launcher calls, with one value per runtime (non-constexpr) parameter; the entry drops those the kernel does
    not take (`arg_select`). Returns False when it cannot be attached (the fast path then never files it)."""
    entry = getattr(kernel, "_tf_entry", None)
    if entry is not None and getattr(kernel, "_tf_entry_for", None) == (kernel.arg_select, n_rt):
        return True
    sel = kernel.arg_select
    try:
        if getattr(kernel, "metadata", {}).get("global_scratch_size"):
            raise LookupError  # its `launch` adds the scratch pointer (compile.CompiledKernel.launch)
        entry = kernel.launcher.entry(sel, n_rt)
    except Exception:  # not a Launcher-backed kernel, or one taking scratch: go through its `launch`
        if sel is None:
            def entry(grid, stream, *vals):
                kernel.launch(grid, stream, list(vals))
        else:
            def entry(grid, stream, *vals):
                kernel.launch(grid, stream, [vals[i] for i in sel])
    try:
        kernel._tf_entry = entry
        kernel._tf_entry_for = (sel, n_rt)
    except AttributeError:
        return False
    return True


def _handler_for_fast(a):
    h = _handler_for(a)
    if h is None:  # a dtype passed to a non-constexpr parameter
        return lambda x: (("k", x), x, "constexpr")
    return h
