"""Targets other than the H200's: a dot for sm_100a / sm_120 runs on mma.sync (wgmma is sm_90a's alone: it used to
be emitted for any arch-specific target, and ptxas refused it for sm_100a); Triton's GPUTarget for Blackwell builds
the arch-specific target, as Triton does."""
import numpy as np
import pytest

import compiler
import compiler.language as tl

from .kernels import _have_ptxas

pytestmark = pytest.mark.skipif(not _have_ptxas(), reason="ptxas not found")


@compiler.jit
def _dot64(A, B, C):
    r = tl.arange(0, 64)
    a = tl.load(A + r[:, None] * 64 + r[None, :])
    b = tl.load(B + r[:, None] * 64 + r[None, :])
    tl.store(C + r[:, None] * 64 + r[None, :], tl.dot(a, b).to(tl.float16))


@pytest.mark.parametrize("arch,wgmma", [("sm_90", True), ("sm_90a", True), ("sm_100", False), ("sm_100a", False),
                                        ("sm_120", False)])
def test_dot_instruction_per_target(arch, wgmma):
    x = np.zeros(64 * 64, np.float16)
    k = _dot64.warmup(x, x, x, grid=(1,), target=arch, num_warps=4)
    ptx = k.asm["ptx"]
    assert ("wgmma.mma_async" in ptx) == wgmma and ("mma.sync" in ptx) != wgmma
    assert k.asm["cubin"]


def test_triton_gpu_target_for_blackwell_is_arch_specific():
    from compiler.triton_compat.modules import compat_module

    triton = compat_module("triton")
    backends = compat_module("triton.backends.compiler")

    @compiler.jit
    def add(a, b, c):
        idx = tl.arange(0, 32)
        tl.store(c + idx, tl.load(a + idx) + tl.load(b + idx))

    src = triton.compiler.ASTSource(fn=add, signature={"a": "*fp32", "b": "*fp32", "c": "*fp32"}, constexprs={})
    k = triton.compile(src, target=backends.GPUTarget("cuda", 100, 32))
    assert ".target sm_100a" in k.asm["ptx"] and k.asm["cubin"]
