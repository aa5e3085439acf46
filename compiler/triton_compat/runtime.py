"""`triton.runtime` as kernel and test files use it: `reinterpret` / `TensorWrapper` (a tensor's bits read as
another dtype of the same width, how unsigned and fp8 data reach a kernel from torch), `driver.active` (the
current GPU as a target) and the error classes of `triton.runtime.errors` / `triton.compiler.errors`.
"""
from __future__ import annotations

from collections import namedtuple

from ..errors import CompilationError, CompilerError, KernelRuntimeError
from ..ir import types as T


class TensorWrapper:
    """`base` (a torch tensor, NumPy array or any array this compiler takes) seen as elements of `dtype`.

    A kernel argument of this type is a pointer to `dtype`; the launch passes `base`'s memory unchanged.
    """

    def __init__(self, base, dtype):
        dtype = _language_dtype(dtype)
        if not isinstance(dtype, T.dtype):
            raise TypeError(f"reinterpret: dtype must be a language dtype (tl.uint32, ...), got {dtype!r}")
        bits = _element_bits(base)
        if bits is not None and bits != dtype.bits:
            raise TypeError(f"reinterpret: a tensor of {bits}-bit elements cannot be read as {dtype.name} "
                            f"({dtype.bits} bits)")
        self.base = base
        self.data = base
        self.dtype = dtype
        self.device = getattr(base, "device", "cpu")
        self.shape = tuple(base.shape)

    # what tests and kernels ask of an array
    def data_ptr(self):
        return self.base.data_ptr()

    def stride(self, *i):
        return self.base.stride(*i)

    def numel(self):
        return self.base.numel()

    def element_size(self):
        return self.dtype.bits // 8 if self.dtype.bits >= 8 else 1

    def dim(self):
        return len(self.shape)

    @property
    def is_cuda(self):
        return bool(getattr(self.base, "is_cuda", False))

    def interp_array(self):
        """The elements as a NumPy array of `dtype` (a view of the host memory: results written in place)."""
        from ..jit import _torch_cpu_numpy, _is_cpu_torch_tensor

        b = self.base
        if _is_cpu_torch_tensor(b):
            import torch

            b = b.detach()
            if b.dtype == torch.bfloat16:
                b = b.view(torch.int16)
            elif b.dtype == torch.bool:
                b = b.view(torch.uint8)
            elif str(b.dtype).startswith("torch.float8"):
                b = b.view(torch.uint8)
            arr = _torch_cpu_numpy(b, None)
        elif hasattr(b, "interp_array"):
            arr = b.interp_array()
        else:
            arr = b
        return arr.view(self.dtype.np)

    def cpu(self):
        return TensorWrapper(self.base.cpu(), self.dtype)

    def to(self, device):
        return TensorWrapper(self.base.to(device), self.dtype)

    def clone(self):
        return TensorWrapper(self.base.clone(), self.dtype)

    def copy_(self, other):
        self.base.copy_(other.base if isinstance(other, TensorWrapper) else other)
        return self

    def new_empty(self, sizes):
        return TensorWrapper(self.base.new_empty(sizes), self.dtype)

    def __repr__(self):
        return f"TensorWrapper[{self.dtype.name}]({self.base!r})"


def _element_bits(a):
    size = getattr(a, "element_size", None)
    if callable(size):
        try:
            s = int(size())
            return 1 if str(getattr(a, "dtype", "")) == "torch.bool" else 8 * s
        except Exception:  # noqa: BLE001 - not a torch-like array: nothing to check
            return None
    itemsize = getattr(getattr(a, "dtype", None), "itemsize", None)
    return None if itemsize is None else 8 * int(itemsize)


def _language_dtype(dtype):
    """A torch dtype (torch.float8_e4m3fn, ...) as the language's (Triton takes both in `reinterpret`)."""
    if isinstance(dtype, T.dtype):
        return dtype
    from ..jit import _TORCH_DTYPES

    return _TORCH_DTYPES.get(str(dtype), dtype) if type(dtype).__module__ == "torch" else dtype


def reinterpret(tensor, dtype):
    """`tensor`'s memory read as `dtype` (a language dtype, or a torch one; same element width); a wrapper of a
    wrapper unwraps; reinterpreting to the base's own dtype gives the base back."""
    dtype = _language_dtype(dtype)
    if isinstance(tensor, TensorWrapper):
        if dtype == _base_dtype(tensor.base):
            return tensor.base
        return TensorWrapper(tensor.base, dtype)
    if dtype == _base_dtype(tensor):
        return tensor
    return TensorWrapper(tensor, dtype)


def _base_dtype(a):
    from ..jit import _TORCH_DTYPES

    d = _TORCH_DTYPES.get(str(getattr(a, "dtype", "")))
    if d is not None:
        return d
    try:
        return T.from_numpy(a.dtype)
    except Exception:  # noqa: BLE001
        return None


class ASTSource:
    """`triton.compiler.ASTSource(fn, signature, constexprs)`: a jit function with its parameters' types given
    as Triton's strings ("*fp32", "i32", "fp16", "constexpr", ...) and its constexpr values, for `compile`."""

    def __init__(self, fn, signature, constexprs=None, attrs=None):
        if not getattr(fn, "__tilefarm_jit__", False):
            raise TypeError(f"ASTSource needs a @jit function, got {fn!r}")
        self.fn, self.signature, self.constexprs, self.attrs = fn, dict(signature), dict(constexprs or {}), attrs

    def params(self):
        names = self.fn.arg_names
        const = {}
        for k, v in self.constexprs.items():  # keyed by name, or (as Triton's) by a tuple of the index
            if isinstance(k, tuple) and len(k) == 1:
                k = k[0]
            const[names[k] if isinstance(k, int) else k] = v
        out = []
        for i, n in enumerate(names):
            ty = self.signature.get(n, self.signature.get(i))
            if n in const or ty == "constexpr":
                out.append(("const", const.get(n)))
            elif ty is None:
                raise TypeError(f"ASTSource: the signature has no type for parameter '{n}'")
            elif ty.startswith("*"):
                elem = ty[1:]
                is_const = elem.startswith("k")
                elem = T.from_name(elem[1:] if is_const else elem)
                out.append(("arg", T.TensorType(T.pointer_type(elem, const=is_const)), {}))
            else:
                out.append(("arg", T.TensorType(T.from_name(ty)), {}))
        return out


def compile(src, target=None, options=None, _env_vars=None):  # noqa: A001 - Triton's name
    """`triton.compile(ASTSource(...))`: compile without launching (for `target`, a GPUTarget, else the GPU's
    arch or sm_90); the CompiledKernel has `.asm` ("tile", "llir", "ptx", "cubin")."""
    from ..compile import compile_kernel

    if not isinstance(src, ASTSource):
        raise TypeError(f"compile takes an ASTSource, got {type(src).__name__}")
    opts = dict(options or {})
    arch = None
    if target is not None:
        a = str(getattr(target, "arch", target))
        arch = a if a.startswith("sm_") else f"sm_{a}"
        if a.isdigit() and int(a) >= 100:
            arch += "a"  # Triton builds Blackwell and later for the arch-specific target (sm_100a ...)
    try:
        return compile_kernel(src.fn, src.params(), num_warps=opts.get("num_warps", 4),
                              num_stages=opts.get("num_stages", 3), debug=bool(opts.get("debug", False)), arch=arch)
    except CompilationError as e:
        raise e.with_traceback(None) from e.__cause__


def set_allocator(allocator):
    """`triton.set_allocator(fn)`: the allocator of global scratch memory, `fn(size, alignment, stream)` returning
    an object with `data_ptr()`, as Triton's. Only kernels that write in-kernel tensor maps (sm_90a: in-kernel
    tensor descriptors whose accesses TMA serves) ask it, at each launch, for grid programs x their bytes a program (compiler/runtime/scratch.py);
    without one those launches use a device buffer the runtime keeps."""
    from ..runtime import scratch

    scratch.set_allocator(allocator)


def get_allocator():
    from ..runtime import scratch

    return scratch.get_allocator()


GPUTarget = namedtuple("GPUTarget", ["backend", "arch", "warp_size"])


class _DriverUtils:
    """`driver.active.utils`: the device's limits under Triton's names."""

    def get_device_properties(self, device=None):
        from ..runtime.cuda import device_properties

        p = device_properties(None if device is None else int(device))
        return {"max_shared_mem": p.max_shared_per_block_optin, "multiprocessor_count": p.sm_count,
                "sm_clock_rate": p.clock_khz, "mem_clock_rate": p.memory_clock_khz,
                "mem_bus_width": p.memory_bus_width, "warpSize": p.warp_size, "max_num_regs": 65536}


class _ActiveDriver:
    """`triton.runtime.driver.active`: the CUDA GPU this process launches on."""

    utils = _DriverUtils()

    def get_current_target(self):
        from ..compile import default_arch

        arch = default_arch()  # the GPU's own arch, else sm_90 (TILEFARM_ARCH names it)
        digits = "".join(c for c in str(arch) if c.isdigit())
        return GPUTarget("cuda", int(digits), 32)

    def get_current_device(self):
        import torch

        return torch.cuda.current_device()

    def get_device_interface(self):
        import torch

        return torch.cuda

    def get_active_torch_device(self):
        import torch

        return torch.device("cuda", torch.cuda.current_device())

    def get_current_stream(self, device=None):
        import torch

        return torch.cuda.current_stream(device).cuda_stream


class _Driver:
    active = _ActiveDriver()


driver = _Driver()


#: Triton's base error class: the base of this compiler's kernel errors
TritonError = CompilerError


#: in Triton's interpreter, a kernel's errors are InterpreterError; here the interpreter and the compiler share
#: one frontend, so a kernel mistake is the same CompilationError (or KernelRuntimeError while it runs)
InterpreterError = (CompilationError, KernelRuntimeError)


class CublasLt:
    """`triton._C.libtriton.nvidia.cublas.CublasLt(workspace)`: Triton's cuBLASLt binding, which Triton's tests
    use for reference products. `matmul(A, B, C)` writes C = A @ B^T (A [M, K], B [N, K], as the binding takes
    them) in C's dtype; here torch computes it in float32 (cuBLAS underneath on a GPU), so fp8 inputs work too.
    `workspace` is taken and not used."""

    def __init__(self, workspace=None):
        self.workspace = workspace

    def matmul(self, A, B, C):
        if A.shape[-1] != B.shape[-1] or tuple(C.shape) != (A.shape[0], B.shape[0]):
            raise ValueError(f"CublasLt.matmul: A {tuple(A.shape)} and B {tuple(B.shape)} (B as [N, K]) do not make "
                             f"C {tuple(C.shape)}")
        C.copy_((A.float() @ B.float().T).to(C.dtype))
