"""The tile IR: SSA values, operations with attributes and nested blocks, functions.

Every op carries the source location (`Loc`) of the user code that produced it, so any later stage can point
back at the kernel's file:line:col. The full list of op kinds, with their operands, attributes and meaning, is
`compiler/ir/ops.py`; the interpreter (`compiler/interpreter`) is the executable definition of each.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator

from .types import TensorType


@dataclass(frozen=True)
class Loc:
    """A place in user source: file, 1-based line, 0-based column (as Python's ast gives them)."""

    file: str = "<unknown>"
    line: int = 0
    col: int = 0

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col + 1}"


UNKNOWN_LOC = Loc()


class Value:
    """An SSA value: the result of an op, or an argument of a block."""

    __slots__ = ("type", "owner", "index", "name_hint", "id")

    _counter = 0

    def __init__(self, type: TensorType, owner=None, index: int = 0, name_hint: str | None = None):
        self.type = type
        self.owner = owner  # Op that defines it, or Block for block arguments
        self.index = index
        self.name_hint = name_hint
        Value._counter += 1
        self.id = Value._counter

    @property
    def shape(self) -> tuple:
        return self.type.shape

    @property
    def element(self):
        return self.type.element

    def __repr__(self) -> str:
        return f"%{self.name_hint or self.id}:{self.type}"


class Block:
    """A straight-line list of ops with block arguments; nested in an op's region."""

    __slots__ = ("args", "ops", "parent")

    def __init__(self, arg_types=(), arg_names=None):
        self.args = [Value(t, self, i, (arg_names[i] if arg_names else None)) for i, t in enumerate(arg_types)]
        self.ops: list[Op] = []
        self.parent: Op | None = None

    def append(self, op: "Op") -> "Op":
        op.block = self
        self.ops.append(op)
        return op

    @property
    def terminator(self) -> "Op | None":
        return self.ops[-1] if self.ops else None

    def walk(self) -> Iterator["Op"]:
        """Every op in this block and, depth first, in the blocks nested inside it (pre-order)."""
        for op in self.ops:
            yield op
            for b in op.blocks:
                yield from b.walk()


class Op:
    """One operation: `kind` (see ops.py), operands, results, attributes, nested blocks, and a location."""

    __slots__ = ("kind", "operands", "results", "attrs", "blocks", "loc", "block")

    def __init__(self, kind: str, operands=(), result_types=(), attrs=None, blocks=(), loc: Loc = UNKNOWN_LOC):
        self.kind = kind
        self.operands: list[Value] = list(operands)
        self.results: list[Value] = [Value(t, self, i) for i, t in enumerate(result_types)]
        self.attrs: dict[str, Any] = dict(attrs or {})
        self.blocks: list[Block] = list(blocks)
        for b in self.blocks:
            b.parent = self
        self.loc = loc
        self.block: Block | None = None

    @property
    def result(self) -> Value:
        assert len(self.results) == 1, f"{self.kind} has {len(self.results)} results"
        return self.results[0]

    def __repr__(self) -> str:
        return f"Op({self.kind})"


@dataclass
class Function:
    """A kernel: named arguments (the launch parameters that are not constants) and a body block."""

    name: str
    arg_names: list
    arg_types: list
    body: Block = None
    loc: Loc = UNKNOWN_LOC
    # Facts about arguments known at specialization: {arg index: {"divisibility": 16}} (ints: value divisible by
    # 16; pointers: address aligned to 16 bytes).
    arg_attrs: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.body is None:
            self.body = Block(self.arg_types, self.arg_names)

    @property
    def args(self) -> list:
        return self.body.args

    def walk(self) -> Iterator[Op]:
        return self.body.walk()


@dataclass
class Module:
    """A compiled unit: one kernel function plus the options it was built with."""

    function: Function
    options: dict = field(default_factory=dict)
    # Metadata passes attach for later stages (e.g. "shared_bytes", layouts) lives here and in op.attrs.
    meta: dict = field(default_factory=dict)


def uses(block, v) -> int:
    """How many times ops of `block` (and of the blocks nested in them) take `v` as an operand."""
    n = 0
    for o in block.ops:
        n += sum(1 for x in o.operands if x is v)
        for b in o.blocks:
            n += uses(b, v)
    return n
