"""`tl.math`: the math functions, also reachable as `tl.exp` etc. (the unary ones are the op table's,
compiler/ir/optable.py MATH)."""
from . import core as _core
from ..ir import optable as _optable
from .core import div_rn, fdiv, fma, sigmoid, sqrt_rn, umulhi  # noqa: F401

globals().update({_n: getattr(_core, _n) for _n in _optable.MATH})
