"""A store whose pointer is contiguous along no dim but affine along its lanes' dim (a paged KV cache's value
scatter, stride block_size along the head dim) of a value laid out several elements a thread along that dim takes its
pointer's one-a-thread layout: a warp's lanes store adjacent elements (fewer 128-byte lines a warp-wide store); a
scatter to positions read from memory keeps the data's layout. Results in the interpreter, through ptxas and on the
GPU (passes/assign_layouts.py `_spread_scatter`, once the A/B `scatter_lanes`)."""
import re

import numpy as np
import pytest

import compiler
import compiler.language as tl

from .test_ops import TARGETS, assert_exact, run


@compiler.jit
def kv_append_kernel(KEY, VALUE, SLOTS, KCACHE, VCACHE, H, BLOCK_SIZE, D: tl.constexpr, X: tl.constexpr,
                     BLOCK_H: tl.constexpr):
    # KEY, VALUE [T, H, D]; KCACHE [NB, H, D // X, BLOCK_SIZE, X]; VCACHE [NB, H, D, BLOCK_SIZE]; slot -1: skipped
    tok = tl.program_id(0)
    slot = tl.load(SLOTS + tok).to(tl.int64)
    if slot < 0:
        return
    blk = slot // BLOCK_SIZE
    off = slot % BLOCK_SIZE
    rh = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
    rd = tl.arange(0, D)
    h_ok = rh[:, None] < H
    src = tok.to(tl.int64) * H * D + rh[:, None] * D + rd[None, :]
    k = tl.load(KEY + src, mask=h_ok)
    v = tl.load(VALUE + src, mask=h_ok)
    kdst = (((blk * H + rh[:, None]) * (D // X) + rd[None, :] // X) * BLOCK_SIZE + off) * X + rd[None, :] % X
    tl.store(KCACHE + kdst, k, mask=h_ok)
    vdst = ((blk * H + rh[:, None]) * D + rd[None, :]) * BLOCK_SIZE + off
    tl.store(VCACHE + vdst, v, mask=h_ok)


_KV = dict(T=9, H=10, D=64, NB=4, BS=16, X=8)
_KV_META = dict(D=64, X=8, BLOCK_H=8, num_warps=2)


def _kv_case():
    T_, H, D, NB, BS, X = (_KV[k] for k in ("T", "H", "D", "NB", "BS", "X"))
    rng = np.random.default_rng(36)
    slots = rng.permutation(NB * BS)[:T_].astype(np.int64)
    slots[[2, 5]] = -1
    key = rng.standard_normal((T_, H, D)).astype(np.float16)
    value = rng.standard_normal((T_, H, D)).astype(np.float16)
    kref = np.zeros((NB, H, D // X, BS, X), np.float16)
    vref = np.zeros((NB, H, D, BS), np.float16)
    for t, s in enumerate(slots):
        if s >= 0:
            kref[s // BS, :, :, s % BS, :] = key[t].reshape(H, D // X, X)
            vref[s // BS, :, :, s % BS] = value[t]
    return key, value, slots, kref, vref


@pytest.mark.parametrize("target", TARGETS)
def test_scatter_lanes_results(target):
    key, value, slots, kref, vref = _kv_case()
    kc, vc = np.zeros_like(kref), np.zeros_like(vref)
    kc.reshape(-1)[:] = 7  # the slots no token writes keep what was there
    vc.reshape(-1)[:] = 7
    written_k, written_v = np.zeros(kref.shape, bool), np.zeros(vref.shape, bool)
    for s in slots[slots >= 0]:
        written_k[s // _KV["BS"], :, :, s % _KV["BS"], :] = True
        written_v[s // _KV["BS"], :, :, s % _KV["BS"]] = True
    run(target, kv_append_kernel, (_KV["T"], 2), [key, value, slots, kc, vc], [_KV["H"], _KV["BS"]], **_KV_META)
    assert_exact(kc, np.where(written_k, kref, np.float16(7)))
    assert_exact(vc, np.where(written_v, vref, np.float16(7)))


def test_scatter_lanes_puts_lanes_on_adjacent_elements(monkeypatch):
    """The value-cache store, whose pointer is contiguous along no dim (a stride of BLOCK_SIZE
    along the head dim), holds one element a thread along its fastest dim, so a warp's 32 lanes store 32 adjacent
    head-dim elements (8 x 128-byte lines at BLOCK_SIZE = 16 halves; the loaded layout, 8 elements a thread, puts
    them 8 apart: 32 lines). The key-cache store stays a 16-byte vector store along X."""
    from compiler.options import Options
    from compiler.passes import run_pipeline

    key, value, slots, kref, vref = _kv_case()
    meta = {k: v for k, v in _KV_META.items() if k != "num_warps"}
    mod = run_pipeline(kv_append_kernel.lower(key, value, slots, kref, vref, _KV["H"], _KV["BS"], **meta),
                       Options(num_warps=2, arch="sm_90a"))
    stores = [op for op in mod.function.body.walk() if op.kind == "store" and op.operands[0].type.shape]
    assert len(stores) == 2
    kst, vst = stores
    lay = vst.attrs["_layouts"] if vst.attrs.get("_layouts") else None
    anc = vst.attrs["_anchor"]
    d = anc.order[0]
    assert d == 1 and anc.spt[d] == 1 and anc.tpw[d] == 32, (anc, lay)
    assert kst.attrs["_anchor"].spt[1] == 8
    ptx = kv_append_kernel.warmup(key, value, slots, kref, vref, _KV["H"], _KV["BS"], grid=(1, 1), target="sm_90a",
                                  **_KV_META).asm["ptx"]
    assert len(re.findall(r"st\.global(?:\.[a-z0-9]+)*\.v4\.b32", ptx)) >= 1  # the key: 8 halves a store


@compiler.jit
def scatter_by_index_kernel(X, POS, Y, BH: tl.constexpr, D: tl.constexpr):
    # every element to its own position, read from POS: a scatter whose offsets come from loaded data
    rh = tl.arange(0, BH)
    rd = tl.arange(0, D)
    src = rh[:, None] * D + rd[None, :]
    tl.store(Y + tl.load(POS + src), tl.load(X + src))


def test_scatter_by_loaded_positions_keeps_its_layout(monkeypatch, tmp_path):
    """A store's lanes are spread only where its offsets are affine along that dim (a constant or runtime stride
    apart: the paged cache above), not where they come from data (a permutation; a stream compaction's scan
    positions, mostly consecutive along a thread's run already): the store keeps the value's loaded layout, 8
    halves a thread along D."""
    from compiler.options import Options
    from compiler.passes import run_pipeline

    monkeypatch.setenv("TILEFARM_CACHE_DIR", str(tmp_path))
    rng = np.random.default_rng(37)
    x = rng.standard_normal(16 * 64).astype(np.float16)
    pos = rng.permutation(16 * 64).astype(np.int32)
    y = np.zeros_like(x)
    mod = run_pipeline(scatter_by_index_kernel.lower(x, pos, y, BH=16, D=64), Options(num_warps=2, arch="sm_90a"))
    st = [op for op in mod.function.body.walk() if op.kind == "store"]
    assert len(st) == 1 and st[0].attrs["_anchor"].spt[1] == 8, st[0].attrs["_anchor"]
    scatter_by_index_kernel[(1,)](x, pos, y, BH=16, D=64, num_warps=2)
    ref = np.zeros_like(x)
    ref[pos] = x
    assert_exact(y, ref)
