"""The registers of an `inline_asm` op (tl.inline_asm_elementwise): how its elements are packed into asm
operands, and the check of its constraint string. The frontend checks a call with `check` (mistakes become
errors at the call's line); the code generator emits the registers `plan` lists, in that order.

Rules (Triton's):
- One asm instance processes `pack` elements of every argument and result.
- An argument or result narrower than 32 bits has min(32 / bits, pack) elements per register (int8 with pack=4:
  one 32-bit register holding 4 bytes, the first element in the low byte; float16 with pack=2: one 32-bit
  register holding 2 halves); 32 and 64 bits (and pointers) have one element per register. So an instance has
  pack / per-register registers for each argument and each result.
- The asm's operands are numbered outputs first: result 0's registers, then result 1's, ..., then argument 0's
  registers, argument 1's, ... (`$0`, `$1`, ... in that order), as the constraint string lists them (`=r,=r,r`).
- A value narrower than its register's constraint is widened (signed integers sign-extended, everything else
  zero-extended: int8 in `r`); an output register wider than its result is truncated (`=r` for int8).
  A float register (`f` 32-bit, `d` 64-bit) takes a value of exactly its width (bits reinterpreted).
"""
from __future__ import annotations

from dataclasses import dataclass

# Register constraint letters of NVPTX inline asm -> (bits, float register)
REGISTERS = {"c": (8, False), "h": (16, False), "r": (32, False), "l": (64, False), "N": (64, False),
             "f": (32, True), "d": (64, True)}


class InlineAsmError(ValueError):
    """A call whose dtypes, pack or constraints do not fit together (the frontend reports it at the call)."""


@dataclass(frozen=True)
class Reg:
    """One asm operand: `elems` elements of argument/result `value`, `bits` wide in all (elems x element bits)."""

    value: int
    elems: int
    bits: int


def elem_bits(elem) -> int:
    return 64 if elem.is_ptr() else elem.bits


def per_reg(elem, pack: int) -> int:
    """Elements of `elem` in one asm register when an instance processes `pack` elements."""
    bits = elem_bits(elem)
    return min(32 // bits, pack) if bits < 32 else 1


def _regs(elems, pack, what):
    out = []
    for i, el in enumerate(elems):
        if not el.is_ptr() and el.is_bool():
            raise InlineAsmError(f"{what} {i} is int1: asm registers hold no single bits; convert it with "
                                 ".to(tl.int8) or .to(tl.int32)" if what == "argument" else
                                 f"{what} {i}'s dtype is int1: use tl.int8 (or tl.int32) and compare after")
        n = per_reg(el, pack)
        if pack % n or n * elem_bits(el) not in (8, 16, 32, 64):
            raise InlineAsmError(f"pack={pack} does not split {what} {i} ({el!r}, {elem_bits(el)} bits) into whole "
                                 f"registers: use a power of two")
        out += [Reg(i, n, n * elem_bits(el))] * (pack // n)
    return out


def plan(arg_elems, res_elems, pack: int):
    """(output registers, input registers) of one instance, in operand order."""
    return _regs(res_elems, pack, "result"), _regs(arg_elems, pack, "argument")


def split_constraints(text: str) -> list:
    """The comma-separated constraints, whitespace around each dropped (Triton accepts '=r,r, r')."""
    return [c.strip() for c in text.split(",")] if text.strip() else []


def letter(c: str):
    """The register letter of a constraint (`=r`, `=&r`, `r` -> 'r'), an int for a tied input (`0`), or None for
    anything else (immediates, memory, explicit registers: passed to LLVM as written)."""
    c = c.lstrip("=&*")
    if c.isdigit():
        return int(c)
    return c if c in REGISTERS else None


def _describe(reg: Reg, elems, what) -> str:
    el = elems[reg.value]
    return f"{what} {reg.value} ({reg.elems} x {el!r})" if reg.elems > 1 else f"{what} {reg.value} ({el!r})"


def check(constraints: str, arg_elems, res_elems, pack: int) -> str:
    """Check a call's constraints against the registers its dtypes and pack make; return them normalized
    (spaces dropped). Raises InlineAsmError saying what does not fit."""
    outs, ins = plan(arg_elems, res_elems, pack)
    cs = split_constraints(constraints)
    if any(c == "" for c in cs):
        raise InlineAsmError(f"constraints {constraints!r} have an empty entry")
    if any(c.startswith("+") for c in cs):
        raise InlineAsmError("a '+' (read-write) constraint is not LLVM's: use an output and an input tied to it "
                             "('=r,0')")
    operands = [c for c in cs if not c.startswith("~")]
    n_out = 0
    while n_out < len(operands) and operands[n_out].startswith("="):
        n_out += 1
    if any(c.startswith("=") for c in operands[n_out:]):
        raise InlineAsmError(f"constraints {constraints!r}: outputs ('=...') must come before the inputs")
    got_in = operands[n_out:]

    def listing(regs, elems, what, base):
        return ", ".join(f"${base + k}: {_describe(r, elems, what)}" for k, r in enumerate(regs)) or "none"

    if n_out != len(outs) or len(got_in) != len(ins):
        raise InlineAsmError(
            f"constraints {constraints!r} name {n_out} output{'s' * (n_out != 1)} and {len(got_in)} "
            f"input{'s' * (len(got_in) != 1)}, but with pack={pack} one asm instance has {len(outs)} output "
            f"register{'s' * (len(outs) != 1)} [{listing(outs, res_elems, 'result', 0)}] and {len(ins)} input "
            f"register{'s' * (len(ins) != 1)} [{listing(ins, arg_elems, 'argument', len(outs))}]")
    for k, (c, r) in enumerate(zip(operands, outs + ins)):
        out = k < len(outs)
        lt = letter(c)
        what = _describe(r, res_elems if out else arg_elems, "result" if out else "argument")
        if isinstance(lt, int):
            if out or lt >= len(outs):
                raise InlineAsmError(f"constraint {c!r} of ${k} ties to ${lt}, which is not an output")
            tied = outs[lt]
            if tied.bits != r.bits:
                raise InlineAsmError(f"${k} ({what}, {r.bits} bits) is tied to ${lt}, which has {tied.bits} bits")
            continue
        if lt is None:
            continue
        bits, is_float = REGISTERS[lt]
        if is_float and r.bits != bits:
            raise InlineAsmError(f"${k} is {what}, {r.bits} bits, in a '{lt}' register ({bits}-bit float): a "
                                 f"float register takes a value of its own width")
        if r.bits > bits:
            raise InlineAsmError(f"${k} is {what}, {r.bits} bits, in a '{lt}' register of {bits} bits"
                                 + (": use 'r'" if r.bits == 32 else ": use 'l'" if r.bits == 64 else ""))
    return ",".join(cs)


__all__ = ["REGISTERS", "InlineAsmError", "Reg", "elem_bits", "per_reg", "plan", "split_constraints", "letter",
           "check"]
