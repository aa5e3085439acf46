"""(A/B `pack_carried`) 8-bit integer registers of a loop-carried tile cross the loop's back edge four to a 32-bit
word (codegen/llvm.py `_pack_plan`): a tile prefetched by the register pipeline or an int8 running value is not
split into one phi a byte. The same results with and without the switch, in the interpreter, through ptxas and on
the GPU; under it the loop's phis are words."""
import re

import numpy as np
import pytest

import compiler
import compiler.language as tl

from .test_ops import TARGETS, assert_exact, poison, run


@compiler.jit
def xor_rows_kernel(X, Y, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.int8)
    for i in range(n):
        x = tl.load(X + i * BLOCK + offs)
        acc = acc ^ (x.to(tl.int16) - 128).to(tl.int8)
    tl.store(Y + offs, acc)


def _inputs():
    return np.random.default_rng(4).integers(0, 256, 9 * 512, dtype=np.uint8)


def _ref(x):
    v = (x.astype(np.int16) - 128).astype(np.int8).reshape(9, 512)
    return np.bitwise_xor.reduce(v, axis=0)


def test_carried_bytes_are_words(monkeypatch):
    x, y = _inputs(), np.zeros(512, np.int8)
    phis = {}
    for ab in ("", "pack_carried"):
        monkeypatch.setenv("TILEFARM_AB", ab)
        ll = xor_rows_kernel.warmup(x, y, 9, grid=(1,), target="sm_90a", BLOCK=512, num_warps=4).asm["llir"]
        phis[ab] = (len(re.findall(r"= phi\s+i8\b", ll)), len(re.findall(r"= phi\s+i32\b", ll)))
    assert phis[""][0] > 0 and phis["pack_carried"][0] == 0, phis
    assert phis["pack_carried"][1] >= phis[""][0] // 4, phis


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("ab", ["", "pack_carried"])
def test_carried_bytes_results(target, ab, monkeypatch):
    monkeypatch.setenv("TILEFARM_AB", ab)
    x = _inputs()
    y = poison(512, "int8")
    run(target, xor_rows_kernel, (1,), [x, y], [9], BLOCK=512, num_warps=4)
    assert_exact(y, _ref(x))
