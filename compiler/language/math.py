"""`tl.math`: the math functions, also reachable as `tl.exp` etc."""
from .core import (  # noqa: F401
    abs, ceil, cos, div_rn, erf, exp, exp2, fdiv, floor, fma, log, log2, rsqrt, sigmoid, sin, sqrt, sqrt_rn, umulhi,
)
