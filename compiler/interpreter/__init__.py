"""The tile-IR interpreter: the executable specification of every op, evaluated with NumPy on the CPU.

    from compiler.interpreter import run
    run(function, grid=(n, 1, 1), args=[x, y, out, N])

- `function`: a compiler.ir.core.Function; `grid`: an int or up to 3 ints (missing ones are 1); `args` in
  `function.arg_names` order.
- Pointer arguments: NumPy arrays (any shape; C-contiguous, or at least the byte range spanned by the view is
  memory the kernel may touch). The pointer value is the array's real address
  (`arr.__array_interface__['data'][0]`); loads/stores go straight into the arrays' memory, so results appear
  in place. Objects with an `.interp_array()` method (e.g. a future device tensor type) are asked for such an
  array first. A plain int is taken as a raw address (only useful if it lies inside another argument).
- Scalar arguments: Python or NumPy numbers, converted to the argument's dtype (ints wrap).
- Programs run one after another, in order z, y, x with x fastest (so pid (1,0,0) runs before (0,1,0)); each
  program runs to completion, so atomics are trivially atomic, and a kernel that waits for another program
  (spin on a flag written by a later program) never finishes.
- Errors: out-of-bounds or misaligned accesses on active lanes, non-terminating `for` steps, and (with
  debug=True) failed device_asserts raise compiler.errors.KernelRuntimeError whose message starts with the op's
  kernel source location `file:line:col`. With debug=True every op result is also checked against its IR type.
- device_print writes to sys.stdout.

The numeric rules are in compiler/interpreter/numerics.py (module docstring); memory in memory.py; the op table
and control flow in evaluator.py.
"""
from __future__ import annotations

import numpy as np

from compiler.errors import KernelRuntimeError

from . import numerics
from .evaluator import OPS, Interpreter
from .memory import Memory

__all__ = ["run", "Interpreter", "Memory", "OPS", "KernelRuntimeError"]


def _as_array(x):
    if hasattr(x, "interp_array"):
        return x.interp_array()
    return x


def _bind_args(function, args, memory: Memory) -> list:
    if len(args) != len(function.arg_names):
        raise TypeError(f"{function.name} takes {len(function.arg_names)} arguments "
                        f"({', '.join(function.arg_names)}), got {len(args)}")
    vals = []
    for i, (name, v, a) in enumerate(zip(function.arg_names, function.args, args)):
        elem = v.type.element
        a = _as_array(a)
        if elem.is_ptr():
            if isinstance(a, np.ndarray):
                addr = memory.register(a, name)
            elif isinstance(a, (int, np.integer)):
                addr = int(a) & 0xFFFFFFFFFFFFFFFF
            else:
                raise TypeError(f"argument {name!r} is a pointer: pass a NumPy array, got {type(a).__name__}")
            div = function.arg_attrs.get(i, {}).get("divisibility")
            if div and addr % div:
                raise ValueError(f"argument {name!r} was specialized as {div}-byte aligned but its address "
                                 f"0x{addr:x} is not")
            vals.append(np.asarray(addr, np.uint64))
        else:
            if isinstance(a, np.ndarray) and a.ndim:
                raise TypeError(f"argument {name!r} is a scalar of type {elem!r}, got an array")
            if elem.is_floating():
                val = numerics.const_array(float(a), elem, ())
            else:
                val = numerics.const_array(int(a) if not isinstance(a, (bool, np.bool_)) else bool(a), elem, ())
            div = function.arg_attrs.get(i, {}).get("divisibility")
            if div and not elem.is_floating() and int(a) % div:
                raise ValueError(f"argument {name!r} was specialized as divisible by {div} but is {int(a)}")
            vals.append(val)
    return vals


_HOST_MEMORY: list = []


class host_memory:
    """`with compiler.interpreter.host_memory(a, b, ...):` -- interpreted launches inside may also access these
    NumPy arrays, which a kernel reaches only through addresses stored in other arrays (pointer arrays: grouped
    GEMM's per-group A/B/C), not as arguments. On the GPU every address is memory already; here the interpreter
    must be told which host memory is the kernel's."""

    def __init__(self, *arrays):
        self.arrays = [_as_array(a) for a in arrays]

    def __enter__(self):
        _HOST_MEMORY.append(self.arrays)
        return self

    def __exit__(self, *exc):
        _HOST_MEMORY.remove(self.arrays)
        return False


def run(function, grid, args, *, debug: bool = False) -> None:
    """Run `function` over `grid` on the CPU; writes go into the argument arrays in place."""
    grid = (grid,) if isinstance(grid, (int, np.integer)) else tuple(grid)
    grid = tuple(int(g) for g in grid) + (1,) * (3 - len(grid))
    memory = Memory()
    for group in _HOST_MEMORY:
        for i, a in enumerate(group):
            memory.register(a, f"host_memory[{i}]")
    with np.errstate(all="ignore"):
        vals = _bind_args(function, list(args), memory)
        interp = Interpreter(function, grid, memory, debug=debug)
        gx, gy, gz = grid
        for z in range(gz):
            for y in range(gy):
                for x in range(gx):
                    interp.run_program((x, y, z), vals)
