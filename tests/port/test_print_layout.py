"""device_print / print lines as Triton lays them out (pid, padded indices, one line per value, "(operand k)"),
in the interpreter; the GPU's printf formats come from the same layout (compiler.ir.ops.print_layout)."""
import numpy as np
import pytest

import compiler
import compiler.language as tl
from compiler.ir.ops import print_layout


@compiler.jit
def printer(X, BLOCK: tl.constexpr, WHAT: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    if WHAT == "prefix":
        tl.device_print("x ", x)
    elif WHAT == "py":
        print("v:", x)
    elif WHAT == "two":
        print("", x, x + 1)
    elif WHAT == "hex":
        tl.device_print("h", x.to(tl.int16), hex=True)
    elif WHAT == "scalar":
        print("s", tl.sum(x, 0))
    else:
        print("no values")


@pytest.mark.parametrize("what, lines", [
    ("prefix", ["pid (0, 0, 0) idx ( 0) x: 0", "pid (0, 0, 0) idx ( 9) x: 9", "pid (0, 0, 0) idx (15) x: -3"]),
    ("py", ["pid (0, 0, 0) idx ( 1) v: 1"]),
    ("two", ["pid (0, 0, 0) idx ( 2): (operand 0) 2", "pid (0, 0, 0) idx ( 2): (operand 1) 3"]),
    ("hex", ["pid (0, 0, 0) idx (15) h: 0xfffd", "pid (0, 0, 0) idx ( 4) h: 0x0004"]),
    ("scalar", ["pid (0, 0, 0) idx () s: 102"]),
    ("none", ["pid (0, 0, 0) no values"]),
])
def test_print_lines(capfd, what, lines):
    x = np.arange(16, dtype=np.int32)
    x[15] = -3
    printer[(1,)](x, BLOCK=16, WHAT=what)
    out = capfd.readouterr().out.splitlines()
    for ln in lines:
        assert ln in out, (ln, out[:6])
    if what in ("prefix", "py", "hex"):
        assert len(out) == 16
    elif what == "two":
        assert len(out) == 32


def test_layout_rule_and_ptx():
    assert print_layout("x:", 1, (128,)) == (" x: ", (3,))
    assert print_layout("", 2, (4, 32)) == (": ", (1, 2))
    assert print_layout("no arg", 0, ()) == (" no arg", ())
    x = np.zeros(16, np.int32)
    ptx = printer.warmup(x, BLOCK=16, WHAT="two", grid=(1,), target="sm_90a").asm["ptx"]
    strings = set()
    for line in ptx.splitlines():  # the printf formats, as the byte arrays PTX holds them in
        if ".b8 tf_str" in line and "{" in line:
            strings.add(bytes(int(b) for b in line.split("{")[1].split("}")[0].split(",")).rstrip(b"\0").decode())
    assert strings == {"pid (%d, %d, %d) idx (%2d): (operand 0) %d\n", "pid (%d, %d, %d) idx (%2d): (operand 1) %d\n"}
    assert printer.warmup(x, BLOCK=16, WHAT="hex", grid=(1,), target="sm_90a").asm["cubin"]
