"""The compiled kernel's surface that Triton's host code reads (the fused-softmax tutorial sizes its persistent grid
from it): `_init_handles()`, `n_regs`, `n_spills`, `n_max_threads`, `metadata.shared` / `.num_warps` by attribute;
`run(..., warmup=True)` compiling only; `next_power_of_2(0) == 0`."""
import numpy as np
import pytest

import compiler
import compiler.language as tl
from compiler.codegen.ptx import find_ptxas


@compiler.jit
def softmax_kernel(Y, X, n_cols, BLOCK_SIZE: tl.constexpr):
    cols = tl.arange(0, BLOCK_SIZE)
    x = tl.load(X + tl.program_id(0) * n_cols + cols, mask=cols < n_cols, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(Y + tl.program_id(0) * n_cols + cols, e / tl.sum(e, axis=0), mask=cols < n_cols)


def _kernel():
    x = np.zeros((4, 100), np.float32)
    return softmax_kernel.warmup(x, x, 100, BLOCK_SIZE=128, num_warps=4, num_stages=2, grid=(1,), target="sm_90a")


def test_metadata_by_attribute():
    k = _kernel()
    assert k.metadata.shared == k.metadata["shared_bytes"] and k.metadata.num_warps == 4
    with pytest.raises(AttributeError, match="no 'nope'"):
        k.metadata.nope


@pytest.mark.skipif(find_ptxas() is None, reason="ptxas not found (nvidia-cuda-nvcc)")
def test_occupancy_figures():
    k = _kernel()
    k._init_handles()  # loads the module where a GPU is present; nothing to do without one
    assert 16 <= k.n_regs <= 255 and k.n_spills == 0
    assert k.n_max_threads % 32 == 0 and 128 <= k.n_max_threads <= 1024
    # the tutorial's arithmetic: programs per SM from registers and shared memory
    occupancy = 65536 // (k.n_regs * 32 * 4)
    assert occupancy >= 1


def test_run_with_warmup_compiles_only():
    x = np.zeros((4, 100), np.float32)
    k = softmax_kernel.run(x, x, 100, BLOCK_SIZE=128, grid=(4,), warmup=True, target="sm_90a")
    assert ".entry" in k.asm["ptx"]


def test_next_power_of_2():
    assert [compiler.next_power_of_2(n) for n in (0, 1, 2, 3, 17)] == [0, 1, 2, 4, 32]


@compiler.jit
def add_half_kernel(X, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(X + offs, tl.load(X + offs) + (-n // 2))


def test_constexpr_object_as_an_argument():
    """`kernel[grid](x, tl.constexpr(3))` passes a compile-time value to a plain parameter, as in Triton (it was an
    unsupported argument type): -3 // 2 is -2 with Python's rules on the constant."""
    x = np.zeros(4, np.float32)
    add_half_kernel[(1,)](x, tl.constexpr(3), BLOCK=4)
    np.testing.assert_array_equal(x, [-2.0] * 4)
