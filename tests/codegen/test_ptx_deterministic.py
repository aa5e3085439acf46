"""The PTX of a module does not depend on what the process compiled before it: the back end's call-sequence comments
(`// callseq N`, numbered by a counter the cached target machine keeps) are numbered from 0 per module."""
import re

import numpy as np

import compiler
import compiler.language as tl
from compiler.codegen.ptx import llvm_to_ptx
from compiler.language.extra import libdevice


@compiler.jit
def calls_kernel(X, Y, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    tl.store(Y + offs, libdevice.lgamma(x) + libdevice.j0(x))  # float64: called, not inlined


def test_same_ir_same_ptx_text():
    x = np.ones(128, np.float64)
    llir = calls_kernel.warmup(x, x, grid=(1,), target="sm_90a", BLOCK=128).asm["llir"]
    first, second = llvm_to_ptx(llir, "sm_90a"), llvm_to_ptx(llir, "sm_90a")
    assert "// callseq" in first  # the kernel does call: the test would prove nothing otherwise
    assert first == second
    assert re.findall(r"// callseq (\d+)", first)[0] == "0"
