"""The tile IR: types, values and ops, a builder and a stable printer."""
from .core import Block, Function, Loc, Module, Op, Value  # noqa: F401
from .ops import Builder  # noqa: F401
from .printer import print_function, print_module  # noqa: F401
from . import types  # noqa: F401
