"""Loops and loads in flight read straight from an sm_90 cubin's machine code, without nvdisasm (whose every run
costs about 0.3 s of CPU, more than most kernels' whole compile): the same answers as codegen/sass.py's
`loops_in_flight` on nvidia's listing, for the code generator's decisions at compile time.

An sm_90 instruction is 128 bits; the low 12 bits of its first 64-bit word are the opcode. Register operands sit in
fixed fields (d: bits 16-23, a: 24-31, b: 32-39 of the first word; c: bits 0-7 of the second; 255 is RZ); which
fields of an opcode hold registers, and its mnemonic, come from sass_sm90.json, made by scripts/sass_table.py from
the corpus's cubins and nvdisasm's listing of them. A branch (BRA, opcode 0x947) jumps by a signed count of 4-byte
units: bits 16-23 plus 64 times the signed high 32 bits of the first word; a branch back closes a loop. Widths: a
load's destination by its size field (bits 9-11 of the second word: 5 is 64 bits, 6 is 128), global addresses and
double-precision operands in register pairs, IMAD.WIDE's destination and addend pairs, an MMA's accumulator a run of
registers. An opcode the table lacks counts as a wait on every load in flight (fewer in flight, never more). Also
whether a loop spills (codegen `ring_room`)."""
from __future__ import annotations

import functools
import json
import os
import struct

from .sass import _NO_DEST

RZ = 255
_BRA = 0x947
_LDG = 0x981
_PAIRS = ("DADD", "DMUL", "DFMA", "DSETP", "DMMA")
_MMA = ("HGMMA", "IGMMA", "QGMMA", "HMMA", "DMMA")


@functools.lru_cache(maxsize=None)
def _table() -> dict:
    with open(os.path.join(os.path.dirname(__file__), "sass_sm90.json")) as f:
        return {int(k, 16): (v[0], v[1]) for k, v in json.load(f).items()}


def text_sections(blob: bytes) -> dict:
    """{function name: its machine code} of a 64-bit little-endian ELF cubin, in the order of its sections."""
    if blob[:4] != b"\x7fELF" or blob[4] != 2 or blob[5] != 1:
        raise ValueError("not a 64-bit little-endian ELF")
    shoff = struct.unpack_from("<Q", blob, 0x28)[0]
    entsize, num, strndx = struct.unpack_from("<HHH", blob, 0x3A)
    secs = [struct.unpack_from("<IIQQQQ", blob, shoff + i * entsize) for i in range(num)]
    names = secs[strndx][4]
    out = {}
    for name, _typ, _flags, _addr, offset, size in secs:
        nm = blob[names + name:blob.index(b"\0", names + name)].decode()
        if nm.startswith(".text."):
            out[nm[6:]] = blob[offset:offset + size]
    return out


def instructions(code: bytes) -> list[tuple[int, int]]:
    """The (first, second) 64-bit words of each 128-bit instruction."""
    return [(int.from_bytes(code[i:i + 8], "little"), int.from_bytes(code[i + 8:i + 16], "little"))
            for i in range(0, len(code) - 15, 16)]


def fields(lo: int, hi: int) -> dict:
    return {"d": (lo >> 16) & 0xFF, "a": (lo >> 24) & 0xFF, "b": (lo >> 32) & 0xFF, "c": hi & 0xFF}


def reads_writes(lo: int, hi: int):
    """(mnemonic, registers read, registers written, whether a global load) of an instruction; None for an opcode
    the table lacks."""
    op = lo & 0xFFF
    got = _table().get(op)
    if got is None:
        return None
    name, regfields = got
    vals = fields(lo, hi)
    size = (hi >> 9) & 7
    dest = name not in _NO_DEST and not name.startswith("ST")
    reads, writes = set(), set()
    for f in regfields:
        r = vals[f]
        if r == RZ:
            continue
        n = 1
        if f == "d" and name in ("LDG", "LDS", "LDL"):
            n = {5: 2, 6: 4}.get(size, 1)
        elif f == "a" and name in ("LDG", "STG", "ATOMG", "REDG"):
            n = 2
        elif f == "b" and name in ("STG", "STS", "STL"):
            n = {5: 2, 6: 4}.get(size, 1)
        elif name in _PAIRS or (name == "IMAD" and op in (0x225, 0x825) and f in "dc"):
            n = 2
        elif name in _MMA:
            n = 64 if f in "dc" else 4
        regs = set(range(r, min(r + n, RZ)))
        if f == "d" and dest:
            writes |= regs
        else:
            reads |= regs
    return name, reads, writes, op == _LDG


def branch_target(i: int, lo: int) -> int:
    """The index of the instruction a branch at index i jumps to."""
    high = lo >> 32
    if high >= 1 << 31:
        high -= 1 << 32
    return i + 1 + (((lo >> 16) & 0xFF) + 64 * high) // 4


def loop_bodies(blob: bytes) -> list[list[tuple[int, int]]]:
    """Every loop body of the cubin (instructions from a backward branch's target to the branch), in code order."""
    out = []
    for code in text_sections(blob).values():
        ins = instructions(code)
        for i, (lo, _hi) in enumerate(ins):
            if lo & 0xFFF != _BRA:
                continue
            j = branch_target(i, lo)
            if 0 <= j < i:
                out.append(ins[j:i + 1])
    return out


def _walk(body) -> tuple[int, int, int]:
    """(global loads, loads issued before the first instruction that reads or overwrites a register one of the loads
    so far writes, registers the loads issued after that write) of a loop body."""
    pending, n, loads, out, waited = set(), 0, 0, 0, False
    for lo, hi in body:
        got = reads_writes(lo, hi)
        if got is None:
            waited = waited or bool(pending)
            continue
        _name, reads, writes, load = got
        loads += load
        if not waited and (reads | writes) & pending:
            waited = True
        if load and waited:
            out += len(writes)
        elif load:
            n += 1
            pending |= writes
    return loads, n, out


def in_flight(body) -> dict:
    """Global loads of a loop body and how many are issued before the first instruction that reads or overwrites a
    register one of the loads so far writes (codegen/sass.py `in_flight`, on machine words)."""
    loads, n, _ = _walk(body)
    return {"loads": loads, "in_flight": n}


def registers_out_of_flight(body) -> int:
    """The registers the global loads of a loop body write that `in_flight` leaves out of flight (issued after the
    first wait): what ptxas would have to hold besides the loads in flight to issue them together."""
    return _walk(body)[2]


def spills_in_loops(cubin: bytes) -> bool:
    """Whether a loop of the cubin stores to or loads from local memory (STL / LDL: register spills)."""
    table = _table()
    return any(table.get(lo & 0xFFF, ("",))[0] in ("STL", "LDL") for body in loop_bodies(cubin) for lo, _hi in body)


def loops_in_flight(cubin: bytes, out_of_flight: bool = False) -> list[dict]:
    """`in_flight` of every loop of an sm_90 cubin, in the order of its code; with `out_of_flight`, each also with
    "registers_out": `registers_out_of_flight`."""
    out = []
    for b in loop_bodies(cubin):
        loads, n, regs = _walk(b)
        out.append({"loads": loads, "in_flight": n, **({"registers_out": regs} if out_of_flight else {})})
    return out
