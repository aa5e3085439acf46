"""Stable text form of the tile IR (the "tile" stage artifact and the golden-test format).

Values are numbered in order of definition, so the text depends only on the program, not on object ids:

    func @add_kernel(%X: ptr<f32> {div=16}, %N: i32) {
      %0 = program_id {axis=0} : i32
      ...
    }
"""
from __future__ import annotations

from .core import Block, Function, Module, Op, Value


def _fmt_attr(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, str):
        # one line per op: newlines and tabs (multi-line inline asm) escaped, as the parser reads them back
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t") + '"'
    if isinstance(v, tuple):
        return "[" + ", ".join(_fmt_attr(x) for x in v) + "]"
    return str(v)


class Printer:
    def __init__(self, with_locs: bool = False, with_layouts: bool = False):
        self.names: dict[int, str] = {}
        self.count = 0
        self.with_locs = with_locs
        self.with_layouts = with_layouts

    def name(self, v: Value) -> str:
        n = self.names.get(v.id)
        if n is None:
            n = f"%{self.count}"
            self.count += 1
            self.names[v.id] = n
        return n

    def function(self, f: Function) -> str:
        args = []
        for i, (n, v) in enumerate(zip(f.arg_names, f.args)):
            self.names[v.id] = f"%{n}"
            extra = "".join(f" {{{k}={_fmt_attr(x)}}}" for k, x in sorted(f.arg_attrs.get(i, {}).items()))
            args.append(f"%{n}: {v.type}{extra}")
        lines = [f"func @{f.name}({', '.join(args)}) {{"]
        self.block_body(f.body, 1, lines)
        lines.append("}")
        return "\n".join(lines) + "\n"

    def block_body(self, b: Block, depth: int, lines: list) -> None:
        for op in b.ops:
            self.op(op, depth, lines)

    def op(self, op: Op, depth: int, lines: list) -> None:
        ind = "  " * depth
        res = ", ".join(self.name(r) for r in op.results)
        lhs = f"{res} = " if res else ""
        operands = ", ".join(self.name(o) for o in op.operands)
        attrs = {k: v for k, v in op.attrs.items() if not k.startswith("_")}
        astr = (" {" + ", ".join(f"{k}={_fmt_attr(attrs[k])}" for k in sorted(attrs)) + "}") if attrs else ""
        tys = ", ".join(str(r.type) for r in op.results)
        tstr = f" : {tys}" if tys else ""
        loc = f"  loc({op.loc})" if self.with_locs else ""
        if self.with_layouts and any(x is not None for x in op.attrs.get("_layouts") or ()):
            loc = "  layout(" + ", ".join(str(x) for x in op.attrs["_layouts"]) + ")" + loc
        if not op.blocks:
            lines.append(f"{ind}{lhs}{op.kind}{(' ' + operands) if operands else ''}{astr}{tstr}{loc}")
            return
        lines.append(f"{ind}{lhs}{op.kind}{(' ' + operands) if operands else ''}{astr}{tstr} {{{loc}")
        for i, b in enumerate(op.blocks):
            bargs = ", ".join(f"{self.name(a)}: {a.type}" for a in b.args)
            lines.append(f"{ind}^bb{i}({bargs}):")
            self.block_body(b, depth + 1, lines)
        lines.append(f"{ind}}}")


def print_function(f: Function, with_locs: bool = False, with_layouts: bool = False) -> str:
    return Printer(with_locs, with_layouts).function(f)


def print_module(m: Module, with_locs: bool = False, with_layouts: bool = False) -> str:
    """The stable text of a module; with_layouts shows each op's result layouts (after assign_layouts)."""
    return print_function(m.function, with_locs, with_layouts)
