"""codegen/llvm.py `_sink_compares`: each compare of a basic block is emitted just before
its first user there, so a thread's predicates are made where they are used instead of all at once; the results
stay those of the kernel as written."""
import re

import numpy as np
import pytest

import compiler
import compiler.language as tl

from .test_ops import TARGETS, assert_close, poison, run


@compiler.jit
def _dropout_like(X, Y, N, p, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m, other=0.0)
    keep = x * x > p  # a block of predicates, then other work before the select that reads it
    y = tl.where(keep, x / (1.0 - p), 0.0)
    tl.store(Y + offs, y, mask=m)


def _gaps(llir):
    """For each fcmp: how many instructions lie between it and its first user."""
    lines = [ln.strip() for ln in llir.splitlines() if ln.strip()]
    gaps = []
    for k, ln in enumerate(lines):
        m = re.match(r'(%"?[\w.]+"?) = fcmp', ln)
        if m:
            pat = re.compile(re.escape(m.group(1)) + r'(?![\w."])')
            j = next(j for j in range(k + 1, len(lines)) if pat.search(lines[j]))
            gaps.append(j - k - 1)
    return gaps


def _llir():
    x, y = np.zeros(1000, np.float32), np.zeros(1000, np.float32)
    return _dropout_like.warmup(x, y, 1000, 0.25, BLOCK=1024, num_warps=4, grid=(1,), target="sm_90a").asm["llir"]


def test_compares_next_to_their_users():
    # emitted op by op, the compares would come before the divisions; each is moved to its select
    gaps = _gaps(_llir())
    assert len(gaps) >= 8 and max(gaps) == 0


@pytest.mark.parametrize("target", TARGETS)
def test_results(target):
    rng = np.random.default_rng(3)
    n, p = 1000, 0.25
    x = rng.uniform(-1, 1, n).astype(np.float32)
    y = poison(n, "float32")
    run(target, _dropout_like, (1,), [x, y], [n, p], BLOCK=1024, num_warps=4)
    x64 = x.astype(np.float64)
    assert_close(y, np.where(x64 * x64 > p, x64 / (1 - p), 0.0), "float32")
