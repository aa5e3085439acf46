"""What a cubin's machine code says about its loops (nvdisasm's SASS): their bodies and how many of their global
loads are in flight.

A loop is closed by a backward branch to a label. In a loop body, walked in order, the loads "in flight" are the
global loads (LDG, generic LD) issued before the first instruction that reads or overwrites a register one of them
writes: how many loads' latencies overlap before the warp must wait. A memory-bound loop whose loads are consumed one
by one (the assembler reused the first load's destination registers for the second) waits for each load's full
latency in turn. An approximation of the hardware's scoreboard: the first register operand is taken as the
destination (none for stores, compares into predicates, branches), 64-bit operands by their `.64` suffix, IMAD.WIDE
and double-precision ops. Used by the register-headroom A/B (codegen/__init__.py `register_headroom`) and by
scripts/loads_in_flight.py, scripts/static_corpus.py and scripts/sass_compare.py."""
from __future__ import annotations

import os
import re
import subprocess
import tempfile

_ADDR = re.compile(r"/\*[0-9a-f]{4,}\*/")
_LABEL = re.compile(r"^(\.L_x_\d+):$")
_BRANCH = re.compile(r"\bBRA(?:\.\w+)*\s+(?:!?U?P\w+,\s*)?(?:`\()?(\.L_x_\d+)")  # `BRA P1, ...` too
_PRED = re.compile(r"^@!?U?P\w+\s+")
_REG = re.compile(r"(?<![\w.])R(\d+)((?:\.\w+)*)")
# opcodes without a register destination: their first register operand is read
_NO_DEST = ("ST", "STG", "STS", "STL", "RED", "REDG", "BRA", "EXIT", "BAR", "MEMBAR", "STSM", "SYNCS", "UST",
            "WARPSYNC", "BSSY", "BSYNC", "RET", "CALL", "NOP", "DEPBAR", "ERRBAR", "CCTL", "ISETP", "FSETP", "HSETP2",
            "DSETP", "PLOP3", "R2UR", "LDGDEPBAR", "LDGSTS", "FENCE", "ARRIVES", "UTMALDG", "UTMASTG")
# 64-bit register operands without a `.64` suffix (the register and the one after it)
_WIDE_OPS = ("DADD", "DMUL", "DFMA", "DSETP", "DMNMX", "F2F.F64", "F2I.F64", "I2F.F64")


class NvdisasmError(RuntimeError):
    pass


def sass(cubin: bytes, nvdisasm: str | None = None) -> list[str]:
    """The instructions of a cubin as text lines (`nvdisasm -c`), address comments removed, labels kept (they name
    branch targets)."""
    from .ptx import find_nvdisasm

    tool = nvdisasm or find_nvdisasm()
    if tool is None:
        raise NvdisasmError("nvdisasm not found (pip install nvidia-cuda-nvdisasm, or set TILEFARM_NVDISASM)")
    with tempfile.TemporaryDirectory(prefix="sass-") as d:
        path = os.path.join(d, "k.cubin")
        with open(path, "wb") as f:
            f.write(cubin)
        p = subprocess.run([tool, "-c", path], capture_output=True, text=True)  # stderr: format notes
    if p.returncode != 0:
        raise NvdisasmError(f"nvdisasm failed:\n{p.stderr}")
    lines = []
    for ln in p.stdout.splitlines():
        ln = _ADDR.sub("", ln).strip()
        # instructions and labels; not the ELF's directives (.headerflags, .section ...), which differ between
        # assembler releases for the same code
        if ln.endswith(";") and not ln.startswith(".") or ln.endswith(":"):
            lines.append(ln)
    return lines


def loop_bodies(lines) -> list[list[str]]:
    """The loop bodies of a SASS listing (`sass` lines: instructions and labels), predicates kept: every backward
    branch to a label closes the loop that starts there."""
    labels, ins = {}, []
    for ln in lines:
        m = _LABEL.match(ln)
        if m:
            labels[m.group(1)] = len(ins)
        elif ln.endswith(";"):
            ins.append(ln)
    out = []
    for i, s in enumerate(ins):
        m = _BRANCH.search(s)
        if m and labels.get(m.group(1), i + 1) < i:  # a branch to itself (the trailing `BRA` loop) is not a loop
            out.append(ins[labels[m.group(1)]:i + 1])
    return out


def is_global_load(op: str) -> bool:
    return op.startswith("LDG.") or op == "LDG" or op.startswith("LD.")


def _width(op: str) -> int:
    """Registers a load writes: .128 four, .64 two, else one."""
    return 4 if ".128" in op else 2 if ".64" in op else 1


def operands(ins: str) -> tuple[str, list[set]]:
    """(opcode, per operand the set of general registers it names) of a SASS instruction (predicate removed)."""
    body = _PRED.sub("", ins).rstrip(";").strip()
    op, _, rest = body.partition(" ")
    out = []
    for part in (rest.split(",") if rest.strip() else []):
        regs = set()
        for m in _REG.finditer(part):
            r, suf = int(m.group(1)), m.group(2)
            regs.add(r)
            if ".64" in suf or op.startswith(_WIDE_OPS):
                regs.add(r + 1)
        out.append(regs)
    return op, out


def reads_writes(ins: str) -> tuple[str, set, set]:
    """(opcode, registers read, registers written) of an instruction. The first operand is the destination unless
    the opcode has none (stores, compares into predicates, branches); a load's destination spans its width,
    IMAD.WIDE's destination and addend are register pairs."""
    op, ops = operands(ins)
    if not ops:
        return op, set(), set()
    base = op.split(".")[0]
    if base in _NO_DEST or op.startswith("ST."):
        return op, set().union(*ops), set()
    dest, srcs = set(ops[0]), ops[1:]
    if dest and (is_global_load(op) or base in ("LDS", "LDC", "LDL")):
        dest = {min(dest) + i for i in range(_width(op))}
    elif dest and base == "LDSM":
        dest = {min(dest) + i for i in range(4 if ".X4" in op else 2 if ".X2" in op else 1)}
    elif op.startswith("IMAD.WIDE") and dest:
        dest = {min(dest), min(dest) + 1}
        if len(srcs) >= 3 and srcs[2]:
            srcs = srcs[:2] + [{min(srcs[2]), min(srcs[2]) + 1}]
    reads = set().union(*srcs) if srcs else set()
    return op, reads, dest


def in_flight(body: list[str]) -> dict:
    """Global loads of a loop body, and how many of them are issued before the first instruction that reads or
    overwrites a register one of the loads issued so far writes (the first wait on a load)."""
    pending, n, loads, waited = set(), 0, 0, False
    for ins in body:
        op, reads, writes = reads_writes(ins)
        if is_global_load(op):
            loads += 1
        if waited:
            continue
        if (reads | writes) & pending:
            waited = True
            continue
        if is_global_load(op):
            n += 1
            pending |= writes
    return {"loads": loads, "in_flight": n, "instructions": len(body)}


def loops_in_flight(cubin: bytes, nvdisasm: str | None = None) -> list[dict]:
    """`in_flight` of every loop of a cubin, in the order of its code."""
    return [in_flight(b) for b in loop_bodies(sass(cubin, nvdisasm))]
