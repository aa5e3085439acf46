"""(A/B `pack_carried`) 8-bit integer registers of a loop-carried tile the loop body yields straight from a load (a
tile prefetched an iteration ahead) cross the loop's back edge four to a 32-bit word (codegen/llvm.py `_pack_plan`),
not one phi a byte; a running value computed a byte at a time stays in bytes (packing it would cost work every
iteration). The same results with and without the switch, in the interpreter, through ptxas and on the GPU."""
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


@compiler.jit
def prefetch_rows_kernel(X, Y, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    acc = tl.zeros([BLOCK], dtype=tl.int32)
    for i in range(1, n):
        nxt = tl.load(X + i * BLOCK + offs)  # the next row, loaded while this one is summed
        acc += (x.to(tl.int16) - 128).to(tl.int32)
        x = nxt
    acc += (x.to(tl.int16) - 128).to(tl.int32)
    tl.store(Y + offs, acc)


def _inputs():
    return np.random.default_rng(4).integers(0, 256, 9 * 512, dtype=np.uint8)


def _rows(x):
    return (x.astype(np.int16) - 128).reshape(9, 512)


def _phis(monkeypatch, kernel, y):
    x, phis = _inputs(), {}
    for ab in ("", "pack_carried"):
        monkeypatch.setenv("TILEFARM_AB", ab)
        ll = kernel.warmup(x, y, 9, grid=(1,), target="sm_90a", BLOCK=512, num_warps=4).asm["llir"]
        phis[ab] = (len(re.findall(r"= phi\s+i8\b", ll)), len(re.findall(r"= phi\s+i32\b", ll)))
    return phis


def test_loaded_bytes_are_words(monkeypatch):
    phis = _phis(monkeypatch, prefetch_rows_kernel, np.zeros(512, np.int32))
    assert phis[""][0] > 0 and phis["pack_carried"][0] == 0, phis
    assert phis["pack_carried"][1] - phis[""][1] == phis[""][0] // 4, phis  # four bytes a word


def test_computed_bytes_stay_bytes(monkeypatch):
    phis = _phis(monkeypatch, xor_rows_kernel, np.zeros(512, np.int8))
    assert phis[""][0] > 0 and phis["pack_carried"] == phis[""], phis


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("ab", ["", "pack_carried"])
def test_carried_bytes_results(target, ab, monkeypatch):
    monkeypatch.setenv("TILEFARM_AB", ab)
    x = _inputs()
    y, z = poison(512, "int8"), poison(512, "int32")
    run(target, xor_rows_kernel, (1,), [x, y], [9], BLOCK=512, num_warps=4)
    run(target, prefetch_rows_kernel, (1,), [x, z], [9], BLOCK=512, num_warps=4)
    if target != "ptxas":
        assert_exact(y, np.bitwise_xor.reduce(_rows(x).astype(np.int8), axis=0))
        assert_exact(z, _rows(x).sum(axis=0).astype(np.int32))
