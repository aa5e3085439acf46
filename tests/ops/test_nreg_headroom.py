"""compiler/codegen/__init__.py `register_headroom`: a kernel with a loop of two or more global loads gets `.maxnreg` at
the most registers that keep ptxas's blocks per SM, where that is above ptxas's own count and the registers it frees
cover at least half of what the loads out of flight write, kept only where it puts more of a loop's loads in flight
and none fewer (read from the cubin: compiler/codegen/sass_bin.py) and spills no more, and not where the limit would
be 255. Results (interpreter, through ptxas, on the GPU); on corpus kernels (where ptxas is installed) the limit it keeps and the ones it drops: the sequence max-pool's loop
1 -> 2 of 2 loads in flight (kept: 0.768 of the time on the H100, 2026-12-07), the 4-bit group quantizer (4 -> 3 of 4
when it was held: 1.124), union-find (1.067) and the row KL divergence (10 -> 9 of 16), each with the limit at
ptxas's own count: dropped. And codegen/sass_bin.py against nvdisasm's listing (where nvdisasm is installed)."""
import os
import re
import sys

import numpy as np
import pytest

import compiler
import compiler.language as tl

from .test_ops import TARGETS, poison, run

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@compiler.jit
def maxpool_kernel(X, LENS, MAXV, ARG, MEAN, T, D, BLOCK_T: tl.constexpr, BLOCK_D: tl.constexpr):
    # per (b, d): max, first argmax and mean over t < LENS[b] of X [B, T, D]; the tiles carried through the loop
    b = tl.program_id(0)
    n = tl.load(LENS + b)
    rd = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    d_ok = rd < D
    best = tl.full([BLOCK_T, BLOCK_D], float("-inf"), tl.float16)
    bidx = tl.zeros([BLOCK_T, BLOCK_D], dtype=tl.int32)
    tot = tl.zeros([BLOCK_T, BLOCK_D], dtype=tl.float32)
    for t0 in range(0, n, BLOCK_T):
        t = t0 + tl.arange(0, BLOCK_T)
        m = (t[:, None] < n) & d_ok[None, :]
        x = tl.load(X + (b * T + t[:, None]).to(tl.int64) * D + rd[None, :], mask=m, other=float("-inf"))
        take = x > best
        best = tl.where(take, x, best)
        bidx = tl.where(take, t[:, None], bidx)
        tot += tl.where(m, x.to(tl.float32), 0.0)
    mx = tl.max(best, axis=0)
    arg = tl.min(tl.where(best == mx[None, :], bidx, 2147483647), axis=0)
    tl.store(MAXV + b * D + rd, mx, mask=d_ok)
    tl.store(ARG + b * D + rd, arg, mask=d_ok)
    tl.store(MEAN + b * D + rd, tl.sum(tot, axis=0) / n, mask=d_ok)


B, T, D = 3, 80, 72  # D: a masked second column block; lengths leave a partial and a single tile


def _inputs():
    rng = np.random.default_rng(41)
    x = rng.standard_normal((B, T, D)).astype(np.float16)
    x[0, 5, :] = x[0, 9, :]  # ties: the first index wins
    lens = np.array([80, 37, 1], np.int32)
    return x, lens


def _outputs():
    return poison(B * D, "float16"), poison(B * D, "int32"), poison(B * D, "float32")


@pytest.mark.parametrize("target", TARGETS)
def test_results(target):
    x, lens = _inputs()
    mx, arg, mean = _outputs()
    run(target, maxpool_kernel, (B, 2), [x, lens, mx, arg, mean], [T, D], BLOCK_T=32, BLOCK_D=64, num_warps=4)
    for i, n in enumerate(lens):
        seg = x[i, :n].astype(np.float64)
        np.testing.assert_array_equal(mx.reshape(B, D)[i], seg.max(axis=0).astype(np.float16))
        np.testing.assert_array_equal(arg.reshape(B, D)[i], seg.argmax(axis=0))
        np.testing.assert_allclose(mean.reshape(B, D)[i], seg.mean(axis=0), rtol=1e-5, atol=1e-5)


def _compiled():
    x, lens = _inputs()
    return maxpool_kernel.warmup(x, lens, *_outputs(), 4096, 4096, grid=(1,), target="sm_90a", BLOCK_T=32,
                                 BLOCK_D=64, num_warps=4)


def test_loop_loads_counted_in_the_ptx(monkeypatch):
    from compiler.codegen import loop_global_loads

    assert loop_global_loads(_compiled().asm["ptx"]) == 2  # two 16-byte loads an iteration
    assert loop_global_loads(".entry k()\n{\n\tld.global.b32 %r1, [%rd1];\n\tret;\n}\n") == 0  # not in a loop


def _ptxas():
    from compiler.codegen.ptx import find_ptxas

    return find_ptxas()


def _nvdisasm():
    from compiler.codegen.ptx import find_nvdisasm

    return find_nvdisasm()


def test_gains_in_flight():
    from compiler.codegen import gains_in_flight

    def f(*ns):
        return [{"in_flight": n} for n in ns]
    assert gains_in_flight(f(1), f(2)) and gains_in_flight(f(2, 3), f(2, 4))
    assert not gains_in_flight(f(4), f(3)) and not gains_in_flight(f(1, 4), f(2, 3))
    assert not gains_in_flight(f(2), f(2)) and not gains_in_flight(f(1), f(2, 2))


def _corpus(name, monkeypatch, ab=""):
    """(PTX, cubin, shared bytes) of a corpus kernel at its GPU specialization for sm_90a, under switches `ab`."""
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    import _bench_host_corpus as BC

    monkeypatch.setenv("TILEFARM_AB", ab)
    monkeypatch.setenv("TILEFARM_CACHE", "0")
    case = BC.cases_of(BC.case_files()[name], "ours")[name]
    args, kw = BC.prepare(case)
    k = case.kernel
    while not hasattr(k, "_drop_compiled") and hasattr(k, "fn"):
        k = k.fn
    k._drop_compiled()
    cubin, ptx, smem = BC.compile_ours(case, args, kw)
    return ptx, cubin, smem


@pytest.mark.skipif(_ptxas() is None, reason="needs ptxas (nvidia-cuda-nvcc)")
def test_limit_kept_where_it_puts_loads_in_flight(monkeypatch):
    """The max-pool's loop: 1 of 2 loads in flight without the limit (its PTX assembled without the directive), 2 of
    2 with it, at the same blocks per SM, the limit above ptxas's own count. The 4-bit group quantizer, union-find and
    the row KL divergence (the limit would be ptxas's own count): no limit."""
    from compiler.codegen.ptx import _assemble, ptx_resources
    from compiler.codegen.sass_bin import loops_in_flight
    from compiler.resources import occupancy

    ptx1, cubin1, smem = _corpus("seq_maxpool_argmax_tile_where_f16", monkeypatch)
    limit = int(re.search(r"^\.maxnreg (\d+)$", ptx1, re.M).group(1))
    ptx0 = re.sub(r"^\.maxnreg \d+\n", "", ptx1, flags=re.M)
    assert ptx1.count(".maxnreg") == 1
    cubin0, _ = _assemble(ptx0, "sm_90a", ())
    assert [lp["in_flight"] for lp in loops_in_flight(cubin0)] == [1]
    assert [lp["loads"] for lp in loops_in_flight(cubin0)] == [2]
    assert [lp["in_flight"] for lp in loops_in_flight(cubin1)] == [2]
    r0 = ptx_resources(ptx0, "sm_90a")["registers"]
    threads = 32 * 4
    assert r0 < limit and ptx_resources(ptx1, "sm_90a")["registers"] <= limit
    assert occupancy(limit, smem, threads, "sm_90a") == occupancy(r0, smem, threads, "sm_90a")
    for name in ("q4_group_quant_pack_u8", "union_find_roots_while_i32", "kl_div_rows_f32"):
        assert ".maxnreg" not in _corpus(name, monkeypatch)[0], name


@pytest.mark.skipif(_ptxas() is None, reason="needs ptxas (nvidia-cuda-nvcc)")
@pytest.mark.parametrize("name, second", [("colsum_f16", False), ("softmax_looped_f32", False),
                                          ("seq_maxpool_argmax_tile_where_f16", True)])
def test_second_assembly_only_where_the_freed_registers_could_cover(name, second, monkeypatch):
    """The column sum's loop has 3 of 4 loads out of flight (12 registers) and the limit would free 2; the looped
    softmax 11 against 2: assembled once. The max-pool 4 against 3: assembled twice (and the limit kept)."""
    from compiler.codegen import ptx as P

    calls = []
    real = P._assemble

    def counting(*a, **k):
        calls.append(1)
        return real(*a, **k)
    import compiler.compile as C

    monkeypatch.setattr(C, "_mem_cache", {})  # compiled afresh, not taken from an earlier test's compile
    monkeypatch.setattr(P, "_assemble", counting)
    ptx = _corpus(name, monkeypatch)[0]
    assert len(calls) == (2 if second else 1)
    assert (".maxnreg" in ptx) == second


@pytest.mark.skipif(_ptxas() is None or _nvdisasm() is None,
                    reason="needs ptxas and nvdisasm (nvidia-cuda-nvcc; nvidia-cuda-nvdisasm, the `sass` extra)")
@pytest.mark.parametrize("name", ["seq_maxpool_argmax_tile_where_f16", "grouped_gemm_ptrs_f16", "kl_div_rows_f32",
                                  "union_find_roots_while_i32", "awq_gemm_int4_f16", "libdevice_mixed_args_f32_f64",
                                  "gae_revscan_axis0_f32", "mm_fp64", "attn_bwd_dkdv_d64"])
def test_machine_code_read_as_nvdisasm_reads_it(name, monkeypatch):
    """Loops and loads in flight from the cubin's words (sass_bin) equal codegen/sass.py's on nvdisasm's listing:
    loops of masked, 64- and 128-bit, predicated-branch (`BRA P1, ...`), double-precision and wgmma code."""
    from compiler.codegen import sass, sass_bin

    _, cubin, _ = _corpus(name, monkeypatch, "")
    listing = [{k: v for k, v in d.items() if k != "instructions"} for d in sass.loops_in_flight(cubin)]
    assert sass_bin.loops_in_flight(cubin) == listing


def test_machine_code_words():
    """Loads in flight on hand-made words: two 128-bit loads then a use, a use between them, an unknown opcode
    between them (a wait); the branch offset as the cubin encodes it."""
    from compiler.codegen import sass_bin as SB

    ldg = 0x981 | (8 << 16) | (2 << 24)  # LDG.E.128 R8, [R2.64]
    ldg2 = 0x981 | (12 << 16) | (4 << 24)  # LDG.E.128 R12, [R4.64]
    use = 0x221 | (20 << 16) | (8 << 24) | (9 << 32)  # FADD R20, R8, R9
    size128 = 6 << 9
    assert SB.in_flight([(ldg, size128), (ldg2, size128), (use, 0)]) == {"loads": 2, "in_flight": 2}
    assert SB.in_flight([(ldg, size128), (use, 0), (ldg2, size128)]) == {"loads": 2, "in_flight": 1}
    assert SB.in_flight([(ldg, size128), (0xFFF, 0), (ldg2, size128)]) == {"loads": 2, "in_flight": 1}
    # the registers the loads out of flight write: none, then the second load's four
    assert SB.registers_out_of_flight([(ldg, size128), (ldg2, size128), (use, 0)]) == 0
    assert SB.registers_out_of_flight([(ldg, size128), (use, 0), (ldg2, size128)]) == 4
    assert SB.registers_out_of_flight([(ldg, size128), (0xFFF, 0), (ldg2, 0)]) == 1
    off = -16  # four instructions back from the one after the branch: 16 units of 4 bytes
    bra = 0x947 | ((off % 64) << 16) | (((off // 64) & 0xFFFFFFFF) << 32)
    assert SB.branch_target(3, bra) == 0
    code = b"".join(lo.to_bytes(8, "little") + hi.to_bytes(8, "little") for lo, hi in [(ldg, 0), (bra, 0)])
    assert SB.instructions(code) == [(ldg, 0), (bra, 0)]


@pytest.mark.skipif(_ptxas() is None, reason="needs ptxas (nvidia-cuda-nvcc)")
def test_headroom_step_below_whole_occupancy(monkeypatch):
    """A/B `headroom_step`: the 4-bit group quantizer under div_quot (its packed bytes stored as words) lands on 32
    registers, the whole register file's count for 2048 threads, and ptxas then issues 2 of its loop's 4 vector loads
    late; the limit of the next occupancy step down (40 registers, 12 blocks of 128 threads) puts all 4 in flight. The
    default keeps no limit there."""
    from compiler.codegen.sass_bin import loops_in_flight

    ptx0, cubin0, _ = _corpus("q4_group_quant_pack_u8", monkeypatch, "div_quot")
    ptx1, cubin1, _ = _corpus("q4_group_quant_pack_u8", monkeypatch, "div_quot,headroom_step")
    assert ".maxnreg" not in ptx0 and re.search(r"^\.maxnreg 40$", ptx1, re.M)
    before, after = loops_in_flight(cubin0), loops_in_flight(cubin1)
    assert [lp["loads"] for lp in before] == [lp["loads"] for lp in after] == [4]
    assert before[0]["in_flight"] < 4 == after[0]["in_flight"]
