"""The tile language, used as `import compiler.language as tl` (Triton kernels port by changing imports)."""
from .core import *  # noqa: F401,F403
from .core import (  # noqa: F401
    constexpr, dtype, pointer_type, builtin, static_range, range, static_assert, static_print,
    int1, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16, bfloat16, float32, float64,
    float8e4nv, float8e5, float8e4b15, float8e4b8, float8e5b16, bool_,
    sum, max, min, abs, const, constexpr_type, PropagateNan,
)
from . import extra, math, random  # noqa: F401
from .random import *  # noqa: F401,F403

import builtins as _builtins


class _TupleMeta(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, _builtins.tuple)


class tuple(_builtins.tuple, metaclass=_TupleMeta):  # noqa: A001 - Triton's name
    """`tl.tuple(iterable)`: a tuple of tensors and constants. Tuples in this language are Python tuples (indexed,
    unpacked, compared and concatenated while compiling), so this makes one; `isinstance(t, tl.tuple)` is true of
    any tuple."""

    __tilefarm_builtin__ = True

    def __new__(cls, values=()):
        return _builtins.tuple(values)


def __getattr__(name):
    if name in ("tensor", "block_ptr"):  # the semantics' value types, on first use (importing loads no frontend)
        from .core import __getattr__ as _lazy

        return _lazy(name)
    # Names Triton has and this compiler does not (tl.sort, tl.float8e4b15 ...): say so, also outside kernels.
    if name.startswith("__"):
        raise AttributeError(name)
    raise AttributeError(f"tl.{name} is not supported by this compiler (module compiler.language has no '{name}')")
