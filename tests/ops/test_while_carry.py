"""A while loop's carried values are one value each across the loop for the layout pass's
grouping of memory accesses (passes/assign_layouts.py `_group_runs`), as a for loop's are: the gathers of a loop that
follows pointers (union-find roots) take the run of the contiguous accesses their values meet, and the loop carries
them without a layout conversion (union-find roots: 0.767 of the time of the converting form on the H100, 2026-12-07).
Results in the interpreter, through ptxas and on the GPU; the loop has no conversion."""
import numpy as np
import pytest

import compiler
import compiler.language as tl

from .test_ops import TARGETS, assert_exact, poison, run


@compiler.jit
def roots_kernel(PARENT, ROOT, DEPTH, N, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    cur = tl.where(m, offs, 0)
    par = tl.load(PARENT + cur, mask=m, other=0)
    depth = tl.zeros([BLOCK], dtype=tl.int32)
    while tl.max((par != cur).to(tl.int32), axis=0) > 0:
        depth += (par != cur).to(tl.int32)
        cur = par
        par = tl.load(PARENT + cur, mask=m, other=0)
    tl.store(ROOT + offs, cur, mask=m)
    tl.store(DEPTH + offs, depth, mask=m)


def _forest(n, seed=11):
    """Parent pointers of a random forest: each node points at a smaller index or at itself (a root)."""
    rng = np.random.default_rng(seed)
    parent = np.arange(n, dtype=np.int32)
    for i in range(1, n):
        if rng.random() < 0.8:
            parent[i] = rng.integers(0, i)
    return parent


def _ref(parent):
    n = len(parent)
    root, depth = np.empty(n, np.int32), np.zeros(n, np.int32)
    for i in range(n):
        j = i
        while parent[j] != j:
            j = parent[j]
            depth[i] += 1
        root[i] = j
    return root, depth


@pytest.mark.parametrize("target", TARGETS)
def test_roots_results(target):
    n = 1000  # the last program is masked
    parent = _forest(n)
    root, depth = poison(n, "int32"), poison(n, "int32")
    run(target, roots_kernel, (compiler.cdiv(n, 256),), [parent, root, depth], [n], BLOCK=256, num_warps=4)
    if target != "ptxas":
        r, d = _ref(parent)
        assert_exact(root, r)
        assert_exact(depth, d)


def test_while_loop_carries_without_conversions():
    """No convert_layout is left in the kernel: the gathers, their indices and the stores all take 4 elements a
    thread (the while loop's carried values grouped apart from them converted 8 times an iteration)."""
    from compiler.options import Options
    from compiler.passes import run_pipeline

    parent, out = np.zeros(1000, np.int32), np.zeros(1000, np.int32)
    mod = run_pipeline(roots_kernel.lower(parent, out, out, 1000, BLOCK=256), Options(num_warps=4, arch="sm_90a"))
    assert sum(op.kind == "convert_layout" for op in mod.function.body.walk()) == 0
