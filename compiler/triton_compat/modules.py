"""The stand-in modules for `triton`, `triton.language`, `triton.testing` and friends.

Each is a `CompatModule`: a module object whose attributes come from a table of names (or from a module of our
compiler it stands for) and whose missing attributes raise `TritonCompatError` naming `triton.<path>.<name>`.
They are created once per process, never placed in `sys.modules` under Triton's names.
"""
from __future__ import annotations

import contextlib
import types


class TritonCompatError(AttributeError):
    """A name a Triton kernel file uses that the compatibility layer does not provide.

    An AttributeError, so `getattr(triton, name, default)` and `hasattr` keep their meaning.
    """


_HINT = "tilefarm's Triton compatibility layer does not provide"


class CompatModule(types.ModuleType):
    """`triton.<path>` as seen by a kernel file loaded under our compiler.

    Attributes: the explicit table first, then (when `forward` is set) the module of our compiler it stands for.
    """

    def __init__(self, name: str, table: dict | None = None, forward=None, doc: str | None = None):
        super().__init__(name, doc)
        self.__dict__.update(table or {})
        object.__setattr__(self, "_compat_forward", forward)

    def __getattr__(self, attr):
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        fwd = self.__dict__.get("_compat_forward")
        if fwd is not None:
            try:
                return getattr(fwd, attr)
            except AttributeError:
                pass
        raise TritonCompatError(f"{_HINT} '{self.__name__}.{attr}'")

    def __repr__(self):
        fwd = self.__dict__.get("_compat_forward")
        over = f" over {fwd.__name__}" if fwd is not None else ""
        return f"<module '{self.__name__}' (tilefarm's Triton compatibility layer{over})>"

    def __dir__(self):
        names = set(self.__dict__)
        fwd = self.__dict__.get("_compat_forward")
        if fwd is not None:
            names |= set(dir(fwd))
        return sorted(n for n in names if not n.startswith("_compat"))


def _do_bench(fn, warmup=25, rep=100, grad_to_none=None, quantiles=None, return_mode="mean", **_ignored):
    """`triton.testing.do_bench` with Triton's signature, timed by compiler.runtime.do_bench (L2 flushed before
    every repetition, CUDA events per repetition). `quantiles` gives a list of those quantiles of the samples;
    otherwise `return_mode` ("min", "max", "mean", "median", "all") picks the statistic."""
    import numpy as np

    from ..runtime import do_bench

    r = do_bench(fn, warmup_ms=warmup, rep_ms=rep, return_samples=True)
    s = np.asarray(r["samples"], dtype=np.float64)
    if grad_to_none is not None:
        for t in grad_to_none:
            t.grad = None
    if quantiles is not None:
        q = [float(v) for v in np.quantile(s, quantiles)]
        return q[0] if len(q) == 1 else q
    if return_mode == "all":
        return [float(v) for v in s]
    if return_mode not in ("min", "max", "mean", "median"):
        raise ValueError(f"do_bench: return_mode must be min, max, mean, median or all, got {return_mode!r}")
    return float(getattr(np, return_mode)(s))


_MODULES: dict | None = None


class _NvidiaTool:
    """`triton.knobs.nvidia.<tool>`: `.path` is the tool compiler.codegen.ptx finds (find_ptxas, find_nvdisasm), looked
    up when read; RuntimeError when it is not installed, as Triton's. Triton's test_line_info reads
    `triton.knobs.nvidia.nvdisasm.path` to disassemble a cubin with its line table (`nvdisasm -g`)."""

    def __init__(self, name: str):
        self.name = name

    @property
    def path(self) -> str:
        from ..codegen import ptx

        got = getattr(ptx, f"find_{self.name}")()
        if got is None:
            raise RuntimeError(f"Cannot find {self.name} (install nvidia-cuda-nvcc / nvidia-cuda-nvdisasm, or set "
                               f"TILEFARM_{self.name.upper()})")
        return got

    def __repr__(self):
        return f"<triton.knobs.nvidia.{self.name} (tilefarm)>"


def _build() -> dict:
    import compiler
    from compiler import language as lang

    testing = CompatModule("triton.testing", {"do_bench": _do_bench})
    # libdevice and the other `triton.language.extra` parts: forwarded to our compiler's `language.extra` where
    # it has one, else every name is reported missing by name
    extra_fwd = getattr(lang, "extra", None)
    cuda_fwd = getattr(extra_fwd, "cuda", None) if extra_fwd is not None else None
    libdevice_fwd = getattr(extra_fwd, "libdevice", None) if extra_fwd is not None else None
    libdevice = CompatModule("triton.language.extra.libdevice", forward=libdevice_fwd)
    cuda = CompatModule("triton.language.extra.cuda", {"libdevice": libdevice}, forward=cuda_fwd)
    if cuda_fwd is not None and getattr(cuda_fwd, "libdevice", None) is not None:
        cuda.__dict__["libdevice"] = CompatModule("triton.language.extra.cuda.libdevice", forward=cuda_fwd.libdevice)
    extra = CompatModule("triton.language.extra", {"libdevice": libdevice, "cuda": cuda}, forward=extra_fwd)
    math = CompatModule("triton.language.math", forward=lang.math)
    language = CompatModule("triton.language", {"extra": extra, "math": math}, forward=lang)
    from compiler.tools.tensor_descriptor import TensorDescriptor

    tensor_descriptor = CompatModule("triton.tools.tensor_descriptor", {"TensorDescriptor": TensorDescriptor})
    from . import mxfp as mx

    mxfp = CompatModule("triton.tools.mxfp", {"MXFP4Tensor": mx.MXFP4Tensor, "MXScaleTensor": mx.MXScaleTensor})
    tools = CompatModule("triton.tools", {"tensor_descriptor": tensor_descriptor, "mxfp": mxfp})
    from . import runtime as rt

    rt_jit = CompatModule("triton.runtime.jit", {"TensorWrapper": rt.TensorWrapper, "reinterpret": rt.reinterpret,
                                                 "JITFunction": compiler.JITFunction, "jit": compiler.jit})
    rt_errors = CompatModule("triton.runtime.errors", {"InterpreterError": rt.InterpreterError})
    runtime = CompatModule("triton.runtime", {"jit": rt_jit, "errors": rt_errors, "driver": rt.driver,
                                              "JITFunction": compiler.JITFunction, "Autotuner": compiler.Autotuner,
                                              "Config": compiler.Config})
    from ..errors import CompileTimeAssertionFailure

    comp_errors = CompatModule("triton.compiler.errors", {"CompilationError": compiler.CompilationError,
                                                          "CompileTimeAssertionFailure": CompileTimeAssertionFailure})
    comp = CompatModule("triton.compiler", {"errors": comp_errors, "CompilationError": compiler.CompilationError,
                                            "ASTSource": rt.ASTSource, "compile": rt.compile})
    backends_compiler = CompatModule("triton.backends.compiler", {"GPUTarget": rt.GPUTarget})
    backends = CompatModule("triton.backends", {"compiler": backends_compiler})
    core = CompatModule("triton.language.core", forward=lang.core)
    language.__dict__["core"] = core
    knobs_nvidia = CompatModule("triton.knobs.nvidia", {"nvdisasm": _NvidiaTool("nvdisasm"),
                                                        "ptxas": _NvidiaTool("ptxas")})
    from compiler.jit import language_knobs, runtime_knobs

    # `knobs.runtime`: the JIT hooks (jit_cache_hook, jit_post_compile_hook), read by compiler.jit on a compile;
    # `knobs.language.default_fp_fusion`: enable_fp_fusion where a launch does not pass it
    knobs = CompatModule("triton.knobs", {"nvidia": knobs_nvidia, "runtime": runtime_knobs,
                                          "language": language_knobs})
    top = CompatModule("triton", {
        "jit": compiler.jit,
        "autotune": compiler.autotune,
        "heuristics": compiler.heuristics,
        "Config": compiler.Config,
        "cdiv": compiler.cdiv,
        "next_power_of_2": compiler.next_power_of_2,
        "JITFunction": compiler.JITFunction,
        "CompilationError": compiler.CompilationError,
        "constexpr": lang.constexpr,
        "language": language,
        "testing": testing,
        "tools": tools,
        "runtime": runtime,
        "compiler": comp,
        "backends": backends,
        "knobs": knobs,
        "reinterpret": rt.reinterpret,
        "TensorWrapper": rt.TensorWrapper,
        "TritonError": rt.TritonError,
        "set_allocator": rt.set_allocator,
        "compile": rt.compile,
        "must_use_result": compiler.must_use_result,
        "constexpr_function": compiler.constexpr_function,
        "__version__": compiler.__version__,
        "__tilefarm__": True,
    })
    mods = {"triton": top, "triton.language": language, "triton.language.math": math,
            "triton.language.extra": extra, "triton.language.extra.cuda": cuda,
            "triton.language.extra.libdevice": libdevice, "triton.testing": testing, "triton.tools": tools,
            "triton.tools.tensor_descriptor": tensor_descriptor, "triton.tools.mxfp": mxfp, "triton.runtime": runtime,
            "triton.runtime.jit": rt_jit, "triton.runtime.errors": rt_errors, "triton.compiler": comp,
            "triton.compiler.errors": comp_errors, "triton.language.core": core, "triton.backends": backends,
            "triton.backends.compiler": backends_compiler}
    mods["triton.language.extra.cuda.libdevice"] = cuda.__dict__["libdevice"]
    mods["triton.knobs"] = knobs
    # Triton's native module: of it only the cuBLAS binding its tests take reference products from
    cublas = CompatModule("triton._C.libtriton.nvidia.cublas", {"CublasLt": rt.CublasLt})
    nvidia = CompatModule("triton._C.libtriton.nvidia", {"cublas": cublas})
    mods["triton._C.libtriton"] = CompatModule("triton._C.libtriton", {"nvidia": nvidia})
    mods["triton._C"] = CompatModule("triton._C", {"libtriton": mods["triton._C.libtriton"]})
    top.__dict__["_C"] = mods["triton._C"]
    return mods


@contextlib.contextmanager
def fresh_knobs():
    """Triton's conftest `fresh_knobs`: yields the `triton.knobs` stand-in with its settable knob groups
    (`knobs.runtime`: the JIT hooks) at their defaults, and puts them back as they were after (knobs a caller
    added are dropped)."""
    knobs = compat_module("triton.knobs")
    groups = [g for g in vars(knobs).values() if callable(getattr(g, "snapshot", None))]
    saved = [(g, g.snapshot()) for g in groups]
    for g in groups:
        g.reset()
    try:
        yield knobs
    finally:
        for g, state in saved:
            g.restore(state)


def compat_module(name: str):
    """The stand-in for Triton module `name` ("triton", "triton.language", ...); TritonCompatError when the
    layer has none."""
    global _MODULES
    if _MODULES is None:
        _MODULES = _build()
    mod = _MODULES.get(name)
    if mod is None:
        raise TritonCompatError(f"{_HINT} module '{name}'")
    return mod


#: the Triton modules the layer stands in for
MAPPED = ("triton", "triton.language", "triton.language.math", "triton.language.extra",
          "triton.language.extra.cuda", "triton.language.extra.libdevice", "triton.language.extra.cuda.libdevice",
          "triton.testing", "triton.tools", "triton.tools.tensor_descriptor", "triton.tools.mxfp", "triton.runtime",
          "triton.runtime.jit", "triton.runtime.errors", "triton.compiler", "triton.compiler.errors",
          "triton.language.core", "triton.backends", "triton.backends.compiler", "triton.knobs", "triton._C",
          "triton._C.libtriton")
