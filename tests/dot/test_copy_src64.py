"""A copy ring's cp.async source offsets that are 32-bit values widened and scaled by one `mul.wide.s32` are written
as `cvt.s64.s32` + `shl.b64` (the same value; codegen/ptx.py `copy_src64`, was an A/B of that name), so ptxas
computes the copy addresses before the copies instead of rebuilding them at each copy from the carried base.
Checked: results against float64 on every target, the PTX form, and (with ptxas and nvdisasm) the SASS loop of a
128x128x64 matmul of 8 warps, whose copies have no IMAD.WIDE among them."""
import re

import numpy as np
import pytest

import compiler
import compiler.language as tl
from compiler.codegen import ptx as P

from ..ops.test_ops import TARGETS, assert_close, poison, run


@compiler.jit
def _mm_strided(A, B, C, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr):
    # the corpus's matmul (workloads/corpus/mm_epilogues.py): grouped tile order, rows wrapped by % M and % N,
    # K masked, runtime strides
    pid = tl.program_id(0)
    grid_m = tl.cdiv(M, BM)
    width = GROUP_M * tl.cdiv(N, BN)
    group_id = pid // width
    group_size = min(grid_m - group_id * GROUP_M, GROUP_M)
    pid_m = group_id * GROUP_M + (pid % group_size)
    pid_n = (pid % width) // group_size
    rm = (pid_m * BM + tl.arange(0, BM)) % M
    rn = (pid_n * BN + tl.arange(0, BN)) % N
    rk = tl.arange(0, BK)
    pa = A + rm[:, None] * stride_am + rk[None, :] * stride_ak
    pb = B + rk[:, None] * stride_bk + rn[None, :] * stride_bn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(pa, mask=rk[None, :] < K - k * BK, other=0.0)
        b = tl.load(pb, mask=rk[:, None] < K - k * BK, other=0.0)
        acc += tl.dot(a, b)
        pa += BK * stride_ak
        pb += BK * stride_bk
    cm = pid_m * BM + tl.arange(0, BM)
    cn = pid_n * BN + tl.arange(0, BN)
    tl.store(C + cm[:, None] * stride_cm + cn[None, :] * stride_cn, acc,
             mask=(cm[:, None] < M) & (cn[None, :] < N))


def _args(M, N, K, rng=None):
    a = np.zeros((M, K), np.float16) if rng is None else (rng.standard_normal((M, K)) * 0.5).astype(np.float16)
    b = np.zeros((K, N), np.float16) if rng is None else (rng.standard_normal((K, N)) * 0.5).astype(np.float16)
    return [a, b, poison((M, N), "float32")], [M, N, K, K, 1, N, 1, N, 1]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("K", [40, 96, 200])  # K steps: fewer than, as many as and more than the ring's slots
def test_copy_src64_results(target, K):
    M, N = 72, 80
    arrays, scalars = _args(M, N, K, np.random.default_rng(K))
    run(target, _mm_strided, (2 * 3,), arrays, scalars, BM=64, BN=32, BK=16, GROUP_M=2, num_warps=4,
        num_stages=3)
    a, b, c = arrays
    assert_close(c, a.astype(np.float64) @ b.astype(np.float64), "float16")


def _offsets_by_mul_wide(ptx):
    """The loop's cp.async source addresses `add.s64 %s, %base, %off` whose %off comes from mul.wide."""
    wide = set(re.findall(r"mul\.wide\.[su]32\s+(%rd\d+),", ptx))
    loop = re.search(r"^(\$L__BB\d+_\d+):(.*?)\bbra\S*\s+\1;", ptx, re.M | re.S)
    assert loop and "cp.async.cg" in loop.group(2), "no copy loop in the PTX"
    srcs = set(re.findall(r"cp\.async\.c[ag]\.shared\.global \[[^\]]+\], \[(%rd\d+)\]", loop.group(2)))
    adds = re.findall(r"add\.s64\s+(%rd\d+), (%rd\d+), (%rd\d+);", ptx)
    return {o for d, x, y in adds if d in srcs for o in (x, y) if o in wide}


def _build():
    arrays, scalars = _args(4096, 4096, 4096)
    return _mm_strided.warmup(*arrays, *scalars, grid=(32 * 32,), target="sm_90a", BM=128, BN=128, BK=64,
                              GROUP_M=8, num_warps=8, num_stages=3)


def test_copy_src64_ptx():
    """No copy source offset of the loop comes from a mul.wide; the LLVM back end's own PTX had them (the rewrite
    changes it), and the rewrite leaves its own output as it is."""
    ptx = _build().asm["ptx"]
    assert not _offsets_by_mul_wide(ptx)
    assert "cp.async.cg.shared.global" in ptx
    assert P.copy_src64(ptx) == ptx


def _loop_copies(sass_lines):
    """The instructions from the first to the last LDGSTS of the loop with HGMMAs (its backward branch closes it)."""
    labels, ins = {}, []
    for ln in sass_lines:
        m = re.match(r"^(\.L_x_\d+):$", ln)
        if m:
            labels[m.group(1)] = len(ins)
        elif ln.endswith(";"):
            ins.append(re.sub(r"^@!?U?P\w+\s+", "", ln))
    for i, s in enumerate(ins):
        m = re.search(r"BRA\s+`?\(?(\.L_x_\d+)", s)
        if m and labels.get(m.group(1), i + 1) < i:
            body = ins[labels[m.group(1)]:i + 1]
            if any(b.startswith("HGMMA") for b in body):
                cp = [j for j, b in enumerate(body) if b.startswith("LDGSTS")]
                return body[cp[0]:cp[-1] + 1]
    raise AssertionError("no wgmma loop in the SASS")


def test_copy_src64_sass():
    """ptxas 13.5 on the 128x128x64 w8 s3 loop: the eight copies have no IMAD.WIDE among them."""
    nvdisasm = P.find_nvdisasm()
    if P.find_ptxas() is None or nvdisasm is None:
        pytest.skip("no ptxas / nvdisasm")
    import sys, os
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts"))
    from sass_compare import sass

    copies = _loop_copies(sass(nvdisasm, _build().asm["cubin"]))
    assert sum(c.startswith("LDGSTS") for c in copies) == 8
    assert not any(c.startswith("IMAD.WIDE") for c in copies), copies
