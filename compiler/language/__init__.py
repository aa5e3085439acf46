"""The tile language, used as `import compiler.language as tl` (Triton kernels port by changing imports)."""
from .core import *  # noqa: F401,F403
from .core import (  # noqa: F401
    constexpr, dtype, pointer_type, builtin, static_range, range, static_assert, static_print,
    int1, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16, bfloat16, float32, float64,
    float8e4nv, float8e5, bool_,
    sum, max, min, abs, const, constexpr_type, PropagateNan,
)
from . import extra, math, random  # noqa: F401
from .random import *  # noqa: F401,F403


def __getattr__(name):
    if name in ("tensor", "block_ptr"):  # the semantics' value types, on first use (importing loads no frontend)
        from .core import __getattr__ as _lazy

        return _lazy(name)
    # Names Triton has and this compiler does not (tl.sort, tl.float8e4b15 ...): say so, also outside kernels.
    if name.startswith("__"):
        raise AttributeError(name)
    raise AttributeError(f"tl.{name} is not supported by this compiler (module compiler.language has no '{name}')")
