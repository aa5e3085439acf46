"""tl.dot: every dtype pair and shape class (odd sizes with masks), epilogues, batched dot and attention.

Targets: the interpreter (CI), ptxas (compile and assemble for sm_90, CI) and the GPU (marked gpu).
"""
import math

import re

import numpy as np
import pytest

import compiler
import compiler.language as tl
from compiler.ir import types as T

from ..ops.conftest import CompiledOnly
from ..ops.test_ops import TARGETS as _ALL_TARGETS, assert_close, assert_exact, poison, run  # noqa: F401
from . import kernels as K

TARGETS = _ALL_TARGETS

TOL = {"float16": 2e-3, "bfloat16": 1.6e-2, "tf32": 2e-3, "ieee": 1e-5}


def _inputs(dtype, shape, rng):
    if dtype == "int8":
        return rng.integers(-8, 8, shape, dtype=np.int8)
    return rng.uniform(-1, 1, shape).astype(T.from_name(dtype).np)


CASES = [  # (M, N, K, BM, BN, BK)
    (64, 64, 64, 64, 64, 32),
    (100, 70, 45, 32, 32, 16),     # odd sizes: masks in K, wrap in M/N, masked store
    (16, 128, 256, 16, 64, 64),
    (128, 32, 16, 64, 32, 16),
]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype,prec,out", [("float16", "ieee", "float16"), ("bfloat16", "ieee", "bfloat16"),
                                            ("float16", "ieee", "float32"), ("float32", "tf32", "float32"),
                                            ("float32", "ieee", "float32"), ("int8", "ieee", "int32")])
@pytest.mark.parametrize("case", CASES)
def test_matmul(target, dtype, prec, out, case):
    M, N, Kd, BM, BN, BK = case
    rng = np.random.default_rng(hash((dtype, prec, case)) % 2**32)
    a = _inputs(dtype, (M, Kd), rng)
    b = _inputs(dtype, (Kd, N), rng)
    c = poison((M, N), out)
    bias = np.zeros(1, np.float32)
    grid = (compiler.cdiv(M, BM) * compiler.cdiv(N, BN),)
    run(target, K.matmul_kernel, grid, [a, b, c, bias], [M, N, Kd, Kd, 1, N, 1, N, 1],
        BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK, GROUP_M=4, EPILOGUE="none", PRECISION=prec, num_warps=4)
    if dtype == "int8":
        assert_exact(c, a.astype(np.int64) @ b.astype(np.int64))
        return
    ref = a.astype(np.float64) @ b.astype(np.float64)
    tol = TOL["tf32"] if prec == "tf32" else TOL.get(out if out != "float32" else dtype, 1e-5)
    if out == "float32" and dtype in ("float16", "bfloat16"):
        tol = 1e-5
    assert_close(c, ref, out, rtol=tol, atol=tol * math.sqrt(Kd))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["int8", "uint8"])
@pytest.mark.parametrize("b_kmajor", [False, True])
@pytest.mark.parametrize("BM,BN,BK,nw", [(128, 128, 128, 8), (64, 128, 64, 4), (128, 64, 32, 4), (64, 256, 128, 4)])
def test_int8_matmul_on_wgmma(target, dtype, b_kmajor, BM, BN, BK, nw):
    """8-bit integer matmuls in a K loop on sm_90a: both operands copied by cp.async into the ring and read by
    wgmma's k32 integer instructions. wgmma reads 8-bit operands K-major only: a B stored N x K (b_kmajor, read
    through its strides) is read in its slot; a B stored K x N lands N-major and each iteration rewrites it
    transposed into scratch (rows of 4 to 16 bytes regrouped in registers, codegen/dot.py _transposing_tile). Full
    8-bit ranges; int32 results exact (no sum reaches the saturation bound)."""
    M, N, Kd = 2 * BM, 2 * BN, 4 * BK
    rng = np.random.default_rng(BM * 7 + BN + BK + nw + b_kmajor)
    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max + 1, (M, Kd), dtype=dtype)
    b = rng.integers(info.min, info.max + 1, (Kd, N), dtype=dtype)
    bs = np.ascontiguousarray(b.T) if b_kmajor else b
    sb = (1, Kd) if b_kmajor else (N, 1)
    c = poison((M, N), "int32")
    args = [M, N, Kd, Kd, 1, *sb, N, 1]
    meta = dict(BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK, GROUP_M=2, EPILOGUE="none", PRECISION="ieee", num_warps=nw,
                num_stages=3)
    run(target, K.matmul_kernel, ((M // BM) * (N // BN),), [a, bs, c, np.zeros(1, np.float32)], args, **meta)
    assert_exact(c, a.astype(np.int64) @ b.astype(np.int64))
    ptx = K.matmul_kernel.warmup(a, bs, c, np.zeros(1, np.float32), *args, grid=(1,), target="sm_90a",
                                 **meta).asm["ptx"]
    t = "s8" if dtype == "int8" else "u8"
    assert f"k32.satfinite.s32.{t}.{t}" in ptx and "mma.sync" not in ptx and "cp.async.cg.shared.global" in ptx
    assert ("st.shared.u8" in ptx or "st.shared.b8" in ptx) is False


@pytest.mark.parametrize("target", TARGETS)
def test_matmul_with_maxnreg(target):
    """The `maxnreg` launch option (Triton's) caps the registers per thread: the 128x128x32 one-warpgroup matmul
    (over 128 registers on its own) built with maxnreg=128 gives the reference result."""
    M = N = Kd = 256
    rng = np.random.default_rng(12)
    a, b = _inputs("float16", (M, Kd), rng), _inputs("float16", (Kd, N), rng)
    c = poison((M, N), "float32")
    run(target, K.matmul_kernel, ((M // 128) * (N // 128),), [a, b, c, np.zeros(1, np.float32)],
        [M, N, Kd, Kd, 1, N, 1, N, 1], BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, GROUP_M=8, EPILOGUE="none",
        PRECISION="ieee", num_warps=4, num_stages=3, maxnreg=128)
    assert_close(c, a.astype(np.float64) @ b.astype(np.float64), "float32", rtol=1e-5, atol=1e-5 * math.sqrt(Kd))


def test_maxnreg_puts_maxnreg_in_the_ptx(monkeypatch, tmp_path):
    """maxnreg=N writes `.maxnreg N` beside `.reqntid` and ptxas keeps to it; without it there is none; a value
    outside 16..255 is refused with a message that names it."""
    from compiler.codegen.ptx import find_ptxas, ptx_resources

    monkeypatch.setenv("TILEFARM_CACHE_DIR", str(tmp_path))
    a = np.zeros((256, 256), np.float16)
    c = np.zeros((256, 256), np.float32)

    def build(**opt):
        return K.matmul_kernel.warmup(a, a, c, np.zeros(1, np.float32), 256, 256, 256, 256, 1, 256, 1, 256, 1,
                                      grid=(1,), target="sm_90a", BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, GROUP_M=8,
                                      EPILOGUE="none", PRECISION="ieee", num_warps=4, num_stages=3, **opt)

    capped, free = build(maxnreg=128).asm["ptx"], build().asm["ptx"]
    assert ".reqntid 128\n.maxnreg 128\n" in capped and ".maxnreg" not in free
    if find_ptxas() is not None:
        assert ptx_resources(free, "sm_90a")["registers"] > 128 >= ptx_resources(capped, "sm_90a")["registers"]
    with pytest.raises(ValueError, match="maxnreg must be an int from 16 to 255.*300"):
        build(maxnreg=300)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("epilogue", ["bias_relu", "gelu"])
def test_matmul_epilogues(target, epilogue):
    M, N, Kd = 96, 80, 64
    rng = np.random.default_rng(4)
    a, b = _inputs("float16", (M, Kd), rng), _inputs("float16", (Kd, N), rng)
    bias = rng.uniform(-1, 1, 128).astype(np.float32)
    c = poison((M, N), "float16")
    run(target, K.matmul_kernel, (compiler.cdiv(M, 32) * compiler.cdiv(N, 32),), [a, b, c, bias],
        [M, N, Kd, Kd, 1, N, 1, N, 1], BLOCK_M=32, BLOCK_N=32, BLOCK_K=32, GROUP_M=2, EPILOGUE=epilogue,
        PRECISION="ieee")
    ref = a.astype(np.float64) @ b.astype(np.float64)
    if epilogue == "bias_relu":
        ref = np.maximum(ref + bias[:N][None, :], 0)
    else:
        ref = 0.5 * ref * (1 + np.vectorize(math.erf)(ref / math.sqrt(2)))
    assert_close(c, ref, "float16", rtol=4e-3, atol=4e-3)


@pytest.mark.parametrize("target", TARGETS)
def test_batched_dot(target):
    rng = np.random.default_rng(5)
    a = _inputs("float16", (2, 16, 32), rng)
    b = _inputs("float16", (2, 32, 16), rng)
    c = poison((2, 16, 16), "float32")
    run(target, K.batched_dot_kernel, (1,), [a, b, c], [], BB=2, BM=16, BN=16, BK=32)
    assert_close(c, np.matmul(a.astype(np.float64), b.astype(np.float64)), "float32", rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("head_dim", [64, 128])
def test_attention_fwd(target, head_dim):
    rng = np.random.default_rng(head_dim)
    H, L = 2, 128
    q, k, v = (rng.uniform(-1, 1, (H, L, head_dim)).astype(np.float16) for _ in range(3))
    o = poison((H, L, head_dim), "float16")
    scale = 1 / math.sqrt(head_dim)
    run(target, K.attention_fwd_kernel, (L // 64, H), [q, k, v, o], [scale, L, L * head_dim, head_dim],
        HEAD_DIM=head_dim, BLOCK_M=64, BLOCK_N=32)
    assert_close(o, _attention_ref(q, k, v), "float16", rtol=1e-2, atol=1e-2)


def test_dot_small_blocks_lower():
    # a dimension under 16 is no longer an error: products summed over K (values: tests/port/test_small_dot.py)
    a = np.zeros((8, 8), np.float16)
    from compiler.ir.printer import print_module

    text = print_module(K.batched_dot_kernel.lower(a, a, a, BB=2, BM=8, BN=16, BK=32))
    assert "= dot " not in text and "reduce" in text, text


def _matmul_ptx(dtype="float16", prec="ieee", out="float16", BM=128, BN=128, BK=32, nw=4, target="sm_80",
                num_stages=3):
    a = np.zeros((256, 256), T.from_name(dtype).np)
    c = np.zeros((256, 256), T.from_name(out).np)
    bias = np.zeros(1, np.float32)
    ck = K.matmul_kernel.warmup(a, a, c, bias, 256, 256, 256, 256, 1, 256, 1, 256, 1, grid=(1,), target=target,
                                BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK, GROUP_M=8, EPILOGUE="none", PRECISION=prec,
                                num_warps=nw, num_stages=num_stages)
    return ck.asm["ptx"]


@pytest.mark.parametrize("dtype,prec,out,instr", [
    ("float16", "ieee", "float16", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"),
    ("bfloat16", "ieee", "bfloat16", "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"),
    ("float32", "tf32", "float32", "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"),
    ("int8", "ieee", "int32", "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32"),
])
def test_matmul_ptx_uses_tensor_cores(dtype, prec, out, instr):
    """The matmul's PTX holds the tensor-core instruction; 16-bit operands come through ldmatrix, and the
    accumulator is never converted inside the K loop (no shared-memory round trip of it per iteration)."""
    ptx = _matmul_ptx(dtype, prec, out)
    assert instr in ptx
    if dtype in ("float16", "bfloat16"):
        assert "ldmatrix.sync.aligned.m8n8.x4" in ptx


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("BM,BN,BK,nw", [(128, 128, 64, 8), (64, 128, 32, 4), (128, 256, 64, 8)])
def test_matmul_sm90_uses_wgmma(dtype, BM, BN, BK, nw):
    """On sm_90 a kernel with a dot is built for sm_90a: 16-bit operands go to swizzled shared memory and
    the warpgroup MMA reads them through descriptors; the result assembles with ptxas -arch=sm_90a."""
    from compiler.codegen.ptx import find_ptxas, ptx_to_cubin

    ptx = _matmul_ptx(dtype, "ieee", dtype, BM, BN, BK, nw, target="sm_90")
    assert ".target sm_90a" in ptx and "wgmma.mma_async.sync.aligned.m64n" in ptx and "mma.sync" not in ptx
    assert "wgmma.wait_group.sync.aligned 0" in ptx
    if find_ptxas() is not None:
        assert ptx_to_cubin(ptx, "sm_90")


def test_matmul_loop_keeps_accumulator_in_mma_layout():
    from compiler.options import Options
    from compiler.passes import run_pipeline
    from compiler.passes.layouts import MmaLayout

    a = np.zeros((256, 256), np.float16)
    for ring in (True, False):
        mod = K.matmul_kernel.lower(a, a, a, np.zeros(1, np.float32), 256, 256, 256, 256, 1, 256, 1, 256, 1,
                                    BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, GROUP_M=8, EPILOGUE="none", PRECISION="ieee")
        m = run_pipeline(mod, Options(num_warps=4, arch="sm_80", debug_no_async_copy=not ring))
        loop = next(op for op in m.function.body.ops if op.kind == "for")
        assert isinstance(loop.attrs["_layouts"][0], MmaLayout)
        kinds = [(op.kind, str(op.attrs["_layouts"][0])) for op in loop.blocks[0].ops if op.kind == "convert_layout"]
        if ring:  # the operands come from the copy ring's slots (ldmatrix): nothing converted in the loop
            assert not kinds and "_ring" in loop.attrs, kinds
        else:  # the register pipeline: only the two operand conversions (to dot-operand layouts) remain in the loop
            assert len(kinds) == 2 and all(k[1].startswith("dot_op") for k in kinds), kinds


def test_fp32_ieee_dot_uses_fma():
    ptx = _matmul_ptx("float32", "ieee", "float32", BM=32, BN=32, BK=16)
    assert "mma.sync" not in ptx and "fma.rn.f32" in ptx


@pytest.mark.gpu
@pytest.mark.parametrize("M,N,Kd", [(1000, 1000, 1000), (4096, 64, 4096), (1, 4096, 4096), (333, 517, 77)])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_matmul_odd_shapes_gpu(M, N, Kd, dtype):
    rng = np.random.default_rng(M * 7 + N)
    a = _inputs(dtype, (M, Kd), rng)
    b = _inputs(dtype, (Kd, N), rng)
    c = poison((M, N), "float32")
    BM, BN, BK = 64, 64, 32
    run("gpu", K.matmul_kernel, (compiler.cdiv(M, BM) * compiler.cdiv(N, BN),), [a, b, c, np.zeros(1, np.float32)],
        [M, N, Kd, Kd, 1, N, 1, N, 1], BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK, GROUP_M=8, EPILOGUE="none",
        PRECISION="ieee", num_warps=4)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    assert_close(c, ref, "float32", rtol=1e-4, atol=1e-4 * math.sqrt(Kd))


@pytest.mark.gpu
@pytest.mark.parametrize("BM,BN", [(128, 256), (256, 128)])
def test_matmul_large_k_tiles_tight_ring_gpu(BM, BN):
    """BLOCK_K 128 with two warpgroups: a slot takes 96 KiB, so the loose ring's three do not fit and the K loop
    runs through the tight ring of two (ring_fit); 1000x1000x1000 (masked edges, a partial last K tile)."""
    M = N = Kd = 1000
    rng = np.random.default_rng(BM + 3 * BN)
    a, b = _inputs("float16", (M, Kd), rng), _inputs("float16", (Kd, N), rng)
    c = poison((M, N), "float16")
    run("gpu", K.matmul_kernel, (compiler.cdiv(M, BM) * compiler.cdiv(N, BN),), [a, b, c, np.zeros(1, np.float32)],
        [M, N, Kd, Kd, 1, N, 1, N, 1], BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=128, GROUP_M=8, EPILOGUE="none",
        PRECISION="ieee", num_warps=8, num_stages=3)
    assert_close(c, a.astype(np.float64) @ b.astype(np.float64), "float16", rtol=4e-3, atol=4e-3 * math.sqrt(Kd))


@pytest.mark.gpu
def test_copy_ring_reads_no_stale_shared_memory_gpu():
    """The copy ring waits for its cp.async copies and synchronizes without a proxy fence (codegen/dot.py says why):
    a race there would let a wgmma read a slot's previous contents. The 128x128x64 w8 wgmma matmul (8 K iterations
    through a 4-slot ring) and attention D=64 run 120 times each, alternating two input sets, every output
    poisoned first: each result must be bit-identical to its input set's first one (the kernels are
    deterministic), and the first ones correct. Attention D=128 in 64-row blocks runs the tight ring
    (ring_tight_multi) the same way, and D=128 128x128 w8 s2 the tight ring of two warpgroups (ring_fit) 60 times."""
    from compiler.runtime import DeviceArray, synchronize

    rng = np.random.default_rng(11)
    n, runs = 512, 120
    mats = [[DeviceArray.from_numpy(_inputs("float16", (n, n), rng)) for _ in range(2)] for _ in range(2)]
    bias = DeviceArray.from_numpy(np.zeros(1, np.float32))
    outs = [DeviceArray.from_numpy(poison((n, n), "float16")) for _ in range(runs)]
    for i, c in enumerate(outs):
        a, b = mats[i % 2]
        K.matmul_kernel[((n // 128) ** 2,)](a, b, c, bias, n, n, n, n, 1, n, 1, n, 1, BLOCK_M=128, BLOCK_N=128,
                                            BLOCK_K=64, GROUP_M=8, EPILOGUE="none", PRECISION="ieee", num_warps=8)
    H, L = 4, 1024
    attn = {"D=64": (64, _attention_runs(rng, H, L, 64, 128, runs, num_warps=4)),
            # D=128 in 64-row blocks of one warpgroup: the tight ring (ring_tight_multi), copies behind a barrier
            "D=128 tight ring": (128, _attention_runs(rng, H, L, 128, 64, runs, num_warps=4, num_stages=3)),
            # two warpgroups, two 64 KiB slots (ring_fit): the tight ring's barrier guards slots both warpgroups read
            "D=128 128x128 w8 s2": (128, _attention_runs(rng, H, L, 128, 128, runs // 2, num_warps=8,
                                                         num_stages=2, BN=128))}
    synchronize()
    for name, (D, (qkv, aouts)) in attn.items():
        for s in range(2):
            ref = _attention_ref(*(x.numpy().reshape(H, L, D) for x in qkv[s]))
            assert_close(aouts[s].numpy().reshape(H, L, D), ref, "float16", rtol=1e-2, atol=1e-2)
        for i in range(2, len(aouts)):
            assert np.array_equal(aouts[i].numpy().view(np.uint16), aouts[i % 2].numpy().view(np.uint16)), \
                f"attention {name} run {i}"
    for s in range(2):
        a, b = (m.numpy().reshape(n, n) for m in mats[s])
        assert_close(outs[s].numpy().reshape(n, n), a.astype(np.float64) @ b.astype(np.float64), "float16",
                     rtol=4e-3, atol=4e-3 * math.sqrt(n))
    for i in range(2, runs):
        assert np.array_equal(outs[i].numpy().view(np.uint16), outs[i % 2].numpy().view(np.uint16)), f"matmul run {i}"


def _attention_runs(rng, H, L, D, BM, runs, BN=64, **cfg):
    """`runs` launches of attention (BLOCK_N 64) alternating two input sets, each output poisoned first:
    (the two input sets, the outputs)."""
    from compiler.runtime import DeviceArray

    qkv = [[DeviceArray.from_numpy(rng.uniform(-1, 1, (H, L, D)).astype(np.float16)) for _ in range(3)]
           for _ in range(2)]
    outs = [DeviceArray.from_numpy(poison((H, L, D), "float16")) for _ in range(runs)]
    for i, o in enumerate(outs):
        q, k, v = qkv[i % 2]
        K.attention_fwd_kernel[(L // BM, H)](q, k, v, o, 1 / math.sqrt(D), L, L * D, D, HEAD_DIM=D, BLOCK_M=BM,
                                             BLOCK_N=BN, **cfg)
    return qkv, outs


def _attention_ref(q, k, v):
    """softmax(q k^T / sqrt(D)) v per head, in float64."""
    q, k, v = (x.astype(np.float64) for x in (q, k, v))
    s = np.einsum("hld,hmd->hlm", q, k) / math.sqrt(q.shape[-1])
    p = np.exp(s - s.max(-1, keepdims=True))
    return np.einsum("hlm,hmd->hld", p / p.sum(-1, keepdims=True), v)


def test_k_loop_loads_are_pipelined():
    """num_stages >= 2 on a target without cp.async (sm_75: the register pipeline): the K loop carries the next A/B
    tiles (loaded before this iteration's dot); the interpreter-visible IR is unchanged and num_stages=1 leaves the
    loop alone."""
    from compiler.options import Options
    from compiler.passes import run_pipeline

    def loop_of(stages):
        a = np.zeros((256, 256), np.float16)
        mod = K.matmul_kernel.lower(a, a, a, np.zeros(1, np.float32), 256, 256, 256, 256, 1, 256, 1, 256, 1,
                                    BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, GROUP_M=8, EPILOGUE="none",
                                    PRECISION="ieee")
        mod = run_pipeline(mod, Options(num_warps=4, num_stages=stages, arch="sm_75"))
        return next(op for op in mod.function.body.ops if op.kind == "for")

    piped, plain = loop_of(3), loop_of(1)
    assert len(piped.results) == len(plain.results) + 2
    body = piped.blocks[0].ops
    dot_at = next(i for i, o in enumerate(body) if o.kind == "dot")
    assert [i for i, o in enumerate(body) if o.kind == "load"] and all(
        i < dot_at for i, o in enumerate(body) if o.kind == "load")


def _piped(BM, BN, BK, nw, stages, dtype=np.float16, Kd=256, arch="sm_90a", **opts):
    from compiler.options import Options
    from compiler.passes import run_pipeline

    a = np.zeros((256, Kd), dtype)
    b = np.zeros((Kd, 256), dtype)
    mod = K_lower(a, b, Kd, BM, BN, BK)
    return run_pipeline(mod, Options(num_warps=nw, num_stages=stages, arch=arch, **opts))


def K_lower(a, b, Kd, BM, BN, BK):
    return K.matmul_kernel.lower(a, b, np.zeros((256, 256), a.dtype), np.zeros(1, np.float32), 256, 256, Kd, Kd, 1,
                                 256, 1, 256, 1, BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK, GROUP_M=8, EPILOGUE="none",
                                 PRECISION="ieee")


@pytest.mark.parametrize("BM,BN,BK,nw,stages,slots", [(128, 256, 64, 8, 3, 4), (128, 256, 64, 8, 4, 4),
                                                       (128, 64, 32, 8, 5, 6)])
def test_wgmma_operands_copied_async_into_a_ring(BM, BN, BK, nw, stages, slots):
    """On sm_90a the K loop's operand loads become cp.async copies into a ring of shared-memory slots. Two
    warpgroups where a slot less buys no block per SM (128x256x64: one block either way; 128x64x32 s5: three)
    keep num_stages + 1 slots (fewer where shared memory runs out) in the tight ring's order: the prologue fills
    slots-1 slots, each iteration waits for its slot, views it for the dot, and after the dot (its wgmma wait)
    and a barrier copies the iteration slots-1 ahead; no register tile is carried, and the ring fits."""
    from compiler.passes.pipeline import SMEM_MAX

    mod = _piped(BM, BN, BK, nw, stages)
    loop = next(op for op in mod.function.body.ops if op.kind == "for")
    ring = loop.attrs["_ring"]
    assert ring["stages"] == slots and slots * ring["stage_bytes"] <= SMEM_MAX
    assert not mod.meta.get("ring_blocks_per_sm")
    pro = [op for op in mod.function.body.ops if op.kind == "async_copy"]
    assert sorted(op.attrs["slot"] for op in pro) == sorted(list(range(slots - 1)) * 2)
    body = loop.blocks[0].ops
    kinds = [op.kind for op in body]
    assert kinds[:3] == ["async_wait", "smem_view", "smem_view"] and body[0].attrs["pending"] == slots - 2
    copies = [op for op in body if op.kind == "async_copy"]
    assert len(copies) == 2 and all(op.attrs["ahead"] == slots - 1 for op in copies)
    assert kinds.index("dot") < kinds.index("async_copy") and "load" not in kinds
    assert copies[0].attrs.get("barrier")
    dot = next(op for op in body if op.kind == "dot")
    assert [v.owner.kind for v in dot.operands[:2]] == ["smem_view", "smem_view"]
    assert len(loop.results) == 3  # acc and the two pointer tiles: no tiles carried in registers


@pytest.mark.parametrize("BM,BN,BK,nw,stages", [(128, 128, 64, 8, 3), (128, 256, 64, 8, 4), (64, 64, 16, 4, 3)])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_wgmma_ring_ptx_assembles(BM, BN, BK, nw, stages, dtype):
    """The ring's PTX: 16-byte cp.async copies (zero-filled when masked off), commit groups, a wait for the
    slot with the async-proxy fence, wgmma from descriptors; ptxas accepts it without spills."""
    from compiler.codegen.ptx import find_ptxas, ptx_resources

    ptx = _matmul_ptx(dtype, "ieee", dtype, BM, BN, BK, nw, target="sm_90", num_stages=stages)
    assert "cp.async.cg.shared.global" in ptx and "cp.async.commit_group" in ptx
    # 128x128: 3 slots, 2 groups ahead (1 may stay in flight); 128x256: 4 slots, 3 ahead; 64x64 w4: 3 slots
    assert re.search(r"cp\.async\.wait_group [12];", ptx)  # this iteration's group must have landed
    assert "cp.async.wait_group 0;" in ptx  # before shared memory is reused after the loop
    assert "wgmma.mma_async.sync.aligned" in ptx and "wgmma.wait_group.sync.aligned 1" in ptx
    assert "ld.global" not in ptx  # the operands never pass through registers (the epilogue only stores)
    if find_ptxas() is not None:
        r = ptx_resources(ptx, "sm_90a")
        assert r["spill_stores"] == 0 and r["registers"] <= 255


@pytest.mark.parametrize("BM,BN,BK,stages,slots", [(128, 128, 32, 4, 4), (64, 128, 32, 4, 4), (64, 128, 32, 2, 2),
                                                    (128, 128, 64, 3, 3)])
def test_one_warpgroup_takes_the_tight_ring(BM, BN, BK, stages, slots):
    """The tight ring: a one-warpgroup K loop keeps num_stages slots and copies num_stages - 1
    iterations ahead; the copies follow the dot (its wgmma wait) behind a barrier, since the slot they write is
    the one the previous iteration's wgmmas read. 128x128x32 w4 s4: 64 KiB of ring instead of 80."""
    mod = _piped(BM, BN, BK, 4, stages)
    loop = next(op for op in mod.function.body.ops if op.kind == "for")
    ring = loop.attrs["_ring"]
    assert ring["stages"] == slots
    pro = [op for op in mod.function.body.ops if op.kind == "async_copy"]
    assert sorted(op.attrs["slot"] for op in pro) == sorted(list(range(slots - 1)) * 2)
    body = loop.blocks[0].ops
    kinds = [op.kind for op in body]
    assert kinds[0] == "async_wait" and body[0].attrs["pending"] == slots - 2
    copies = [op for op in body if op.kind == "async_copy"]
    assert len(copies) == 2 and all(op.attrs["ahead"] == slots - 1 for op in copies)
    assert kinds.index("dot") < kinds.index("async_copy")
    assert copies[0].attrs.get("barrier") and not copies[1].attrs.get("barrier")
    assert not mod.meta.get("ring_blocks_per_sm")  # one warpgroup always takes it: no block count to hint


@pytest.mark.parametrize("BM,BN,BK,stages,tight", [(128, 128, 64, 3, True), (128, 128, 32, 4, False),
                                                   (128, 256, 64, 3, False), (128, 256, 64, 4, False),
                                                   (128, 64, 32, 5, False)])
def test_two_warpgroups_take_the_tight_ring_where_it_fits_one_more_block(BM, BN, BK, stages, tight):
    """Two warpgroups take the tight ring's num_stages slots only where the slot less fits one more block per SM by
    shared memory (128x128x64 s3: 3 x 32 KiB, two blocks, against 4 x 32 KiB, one); the module records that block
    count for ptxas (.minnctapersm). 128x256x64: 144 or 192 KiB, one block either way, and 128x64x32 s5: 60 or
    72 KiB, three blocks either way; 128x128x32 s4: three blocks against two by shared memory, but a 128x128
    fp32 accumulator over 256 threads leaves registers for two: num_stages + 1 slots (as shared memory allows),
    in the same order."""
    from compiler.passes.pipeline import blocks_per_sm

    mod = _piped(BM, BN, BK, 8, stages)
    ring = next(op for op in mod.function.body.ops if op.kind == "for").attrs["_ring"]
    assert ring["ahead"] == ring["stages"] - 1  # copies after the dot, one slot short of the ring
    got = mod.meta.get("ring_blocks_per_sm")
    if tight:
        assert got == blocks_per_sm(ring["stages"] * ring["stage_bytes"]) > blocks_per_sm(
            (stages + 1) * ring["stage_bytes"])
    else:
        assert got is None


@pytest.mark.parametrize("b_kn,tight", [(True, False), (False, True)])
def test_int8_b_transposed_in_scratch_counts_against_the_extra_block(b_kn, tight):
    """An int8 128x128x128 w8 s3 matmul: three 32 KiB slots fit two blocks per SM by shared memory, but a b stored
    [K, N] (N its contiguous dim) is copied K-major into two 16 KiB stages of scratch each iteration, which leaves
    room for one block either way: the loose ring at once (no tight ring the driver must build again when ptxas's
    registers forbid the second block). A b stored [N, K] is read in place: the tight ring."""
    from compiler.options import Options
    from compiler.passes import run_pipeline
    S = 512
    a = np.zeros((S, S), np.int8)
    b = np.zeros((S, S), np.int8)
    sbk, sbn = (S, 1) if b_kn else (1, S)
    mod = K.int8_matmul_kernel.lower(a, b, np.zeros((S, S), np.int32), S, S, S, S, 1, sbk, sbn, S, 1, BM=128,
                                     BN=128, BK=128)
    mod = run_pipeline(mod, Options(num_warps=8, num_stages=3, arch="sm_90a"))
    ring = next(op for op in mod.function.body.ops if op.kind == "for").attrs["_ring"]
    assert ring["stages"] == (3 if tight else 4)
    assert (mod.meta.get("ring_blocks_per_sm") == 2) == tight


def test_the_ring_tells_ptxas_the_blocks_per_sm_it_was_sized_for():
    """A 128x128x64 w8 s3 matmul's tight ring buys two blocks per SM by shared memory: its PTX says so to ptxas
    (`.minnctapersm 2` beside `.reqntid 256`), whose registers then fit two blocks of 256 threads (at most 128
    each); a 128x256 tile buys nothing and says nothing."""
    from compiler.codegen import ptx as P

    k = _matmul_kernel_for_ring(128, 128, 64, 8, 3)
    ptx = k.asm["ptx"]
    assert k.metadata.get("ring_blocks_per_sm") == 2 and k.metadata["shared_bytes"] == 3 * 32768
    assert re.search(r"^\.reqntid 256\n\.minnctapersm 2$", ptx, re.M)
    if P.find_ptxas() is not None:
        assert P.ptx_resources(ptx, "sm_90a")["registers"] <= 128
    wide = _matmul_kernel_for_ring(128, 256, 64, 8, 3)
    assert ".minnctapersm" not in wide.asm["ptx"] and "ring_blocks_per_sm" not in wide.metadata
    if P.find_ptxas() is not None:  # a block count no instruction's registers fit: assembled without it
        too_many = ptx.replace(".minnctapersm 2", ".minnctapersm 8")
        with pytest.raises(P.PTXASError, match="Insufficient registers"):
            P._run_ptxas(too_many, "sm_90a")
        assert P.ptx_to_cubin(too_many, "sm_90a")


def _matmul_kernel_for_ring(BM, BN, BK, nw, stages):
    a = np.zeros((256, 256), np.float16)
    return K.matmul_kernel.warmup(a, a, np.zeros((256, 256), np.float16), np.zeros(1, np.float32), 256, 256, 256,
                                  256, 1, 256, 1, 256, 1, grid=(1,), target="sm_90a", BLOCK_M=BM, BLOCK_N=BN,
                                  BLOCK_K=BK, GROUP_M=8, EPILOGUE="none", PRECISION="ieee", num_warps=nw,
                                  num_stages=stages)


def _attention_kernel(monkeypatch, tmp_path, D, nw, BM=128, stages=3, BN=64):
    """Attention (BLOCK_N 64, L 1024) compiled for sm_90a in a cache of its own; ptxas (when present) assembles
    it without spills."""
    from compiler.codegen.ptx import find_ptxas, ptx_resources
    from workloads.attention import kernel as A

    monkeypatch.setenv("TILEFARM_CACHE_DIR", str(tmp_path))
    q = np.zeros((4 * 1024, D), np.float16)
    ck = A.attention_fwd_kernel.warmup(q, q, q, q, 0.125, 1024, 1024 * D, D, grid=(1,), target="sm_90a",
                                       num_warps=nw, num_stages=stages, HEAD_DIM=D, BLOCK_M=BM, BLOCK_N=BN)
    if find_ptxas() is not None:
        assert ptx_resources(ck.asm["ptx"], "sm_90a")["spill_stores"] == 0
    return ck


def _attention_ring(D, nw, BM, stages, BN=64):
    """The copy ring the pipeline pass gives attention's loop (its attrs)."""
    from compiler.options import Options
    from compiler.passes import run_pipeline
    from workloads.attention import kernel as A

    q = np.zeros((4 * 1024, D), np.float16)
    mod = run_pipeline(A.attention_fwd_kernel.lower(q, q, q, q, 0.125, 1024, 1024 * D, D, HEAD_DIM=D, BLOCK_M=BM,
                                                    BLOCK_N=BN), Options(num_warps=nw, num_stages=stages,
                                                                         arch="sm_90a"))
    return next(op for op in mod.function.body.ops if op.kind == "for").attrs["_ring"]


def _loop_body(ptx):
    return ptx.split("$L__BB0_2:")[1].split("$L__BB0_3:")[0]


@pytest.mark.parametrize("D,BM,nw,stages,tight", [(128, 64, 4, 3, True), (128, 64, 4, 2, False),
                                                  (64, 128, 4, 3, False), (64, 64, 4, 3, False),
                                                  (128, 128, 8, 3, False)])
def test_ring_tight_multi_where_it_doubles_the_blocks_per_sm(D, BM, nw, stages, tight, monkeypatch, tmp_path):
    """Attention's loop (two dots) of one warpgroup whose loose ring leaves room for one block per SM and the tight ring for two (D=128, 64-row
    blocks: 144 KiB -> 112 at s3) keeps num_stages slots and copies num_stages - 1 iterations ahead, after the
    P.V wgmma and a second barrier (the slot they overwrite is the one the previous iteration's QK and P.V
    read). Other blocks (D=64: two or three blocks either way; two warpgroups) are unchanged. Assembles without
    spills or serialized wgmmas."""
    from compiler.codegen.ptx import find_ptxas, ptx_resources

    ring = _attention_ring(D, nw, BM, stages)
    if not tight:  # the loose ring: num_stages + 1 slots (at least 3), two iterations ahead
        assert ring["stages"] == max(3, stages + 1) and ring["ahead"] == ring["stages"] - 2
        return
    got = _attention_kernel(monkeypatch, tmp_path, D, nw, BM, stages)
    tile = (2 * 64 * D) * 2  # a K and a V tile of 64 rows, fp16
    slots = max(2, stages)
    assert ring["stages"] == slots and ring["ahead"] == slots - 1
    assert got.shared == slots * tile + BM * D * 2  # the ring and q, stored once before the loop
    assert 233472 // (got.shared + 1024) == 2 and 233472 // (got.shared + tile + 1024) == 1
    body = _loop_body(got.asm["ptx"])
    assert body.count("bar.sync") == 2 and f"cp.async.wait_group {slots - 2};" in body
    last = body.rindex("wgmma.mma_async")
    assert body.index("cp.async.cg") > last and "bar.sync" in body[last:body.index("cp.async.cg")]
    if find_ptxas() is not None:
        assert "C751" not in ptx_resources(got.asm["ptx"], "sm_90a")["log"]


def test_ring_fit_takes_the_tight_ring_where_the_loose_one_does_not_fit(monkeypatch, tmp_path):
    """Attention D=128 128x128 w8 s2 -- a K and a V tile of 128 rows take 64 KiB a
    slot, Q 32 KiB -- has no room for the loose ring's three slots; it gets the tight ring (two slots, copies one
    iteration ahead after the P.V and a second barrier) instead of loads through registers. Two warpgroups."""
    got = _attention_kernel(monkeypatch, tmp_path, 128, 8, 128, 2, BN=128)
    body = _loop_body(got.asm["ptx"])
    assert got.shared == 2 * 64 * 1024 + 32 * 1024
    assert body.count("bar.sync") == 2 and "cp.async.wait_group 0;" in body and "cp.async.cg" in body
    last = body.rindex("wgmma.mma_async")
    assert body.index("cp.async.cg") > last and "bar.sync" in body[last:body.index("cp.async.cg")]


def test_tight_ring_ptx_has_a_barrier_between_the_wgmma_wait_and_the_copies():
    """The tight ring's loop in PTX: wait for the slot, barrier, wgmmas, wgmma wait 1, barrier, then the copies
    (zero-filled when masked off) and their commit; the wait lets num_stages - 2 groups stay in flight."""
    import re

    ptx = _matmul_ptx("float16", "ieee", "float16", 128, 128, 32, 4, target="sm_90a", num_stages=4)
    body = ptx[ptx.index("cp.async.wait_group 2;"):]
    body = body[:body.index("cp.async.commit_group")]
    marks = [m.group(0) for m in re.finditer(r"bar\.sync|barrier\.sync|wgmma\.mma_async|wgmma\.wait_group\.sync"
                                             r"\.aligned 1|cp\.async\.cg", body)]
    first = lambda k: next(i for i, m in enumerate(marks) if m.startswith(k))  # noqa: E731
    wait = first("wgmma.wait")
    assert first("bar") < first("wgmma.mma") < wait < first("cp.async")
    assert any(m.startswith("bar") for m in marks[wait:first("cp.async")])


def test_ring_falls_back_to_registers():
    """Loads that cp.async cannot serve (rows not 16-byte aligned: K = 77 halfs) stay loads: on wgmma the aligned
    operand joins a ring of its own and the unaligned one loads an iteration ahead in registers; a target without
    cp.async (sm_75) keeps the register pipeline; sm_80's mma.sync loop takes the copy ring."""
    a = np.zeros((256, 77), np.float16)
    b = np.zeros((77, 256), np.float16)
    from compiler.options import Options
    from compiler.passes import run_pipeline

    mod = run_pipeline(K_lower(a, b, 77, 128, 128, 64), Options(num_warps=8, num_stages=3, arch="sm_90a"))
    loop = next(op for op in mod.function.body.ops if op.kind == "for")
    assert any(op.kind == "load" for op in loop.blocks[0].ops)  # a's unaligned rows stay a load
    assert len(loop.attrs["_ring"]["tiles"]) == 1  # b's aligned rows
    assert any(tuple(x.type.shape) == (128, 64) for x in loop.blocks[0].args[1:])  # a, an iteration ahead
    mod = _piped(128, 128, 64, 8, 3, arch="sm_75")
    loop = next(op for op in mod.function.body.ops if op.kind == "for")
    assert "_ring" not in loop.attrs
    mod = _piped(128, 128, 64, 8, 3, arch="sm_80")
    loop = next(op for op in mod.function.body.ops if op.kind == "for")
    assert loop.attrs["_ring"]["padded"] == (False, False)


@pytest.mark.parametrize("D,BN,nw", [(64, 64, 4), (128, 64, 8), (128, 32, 8)])
def test_attention_on_sm90a_copies_kv_async_and_reads_p_from_registers(D, BN, nw, monkeypatch, tmp_path):
    """Flash attention on sm_90a: K and V tiles arrive by cp.async in a ring (no loads in the loop), q is written
    to shared memory once before the loop, p feeds the second wgmma from registers, and one barrier per
    iteration remains; the PTX assembles without spills."""
    import re

    monkeypatch.setenv("TILEFARM_CACHE_DIR", str(tmp_path))

    from compiler.codegen.ptx import find_ptxas, ptx_resources
    from compiler.options import Options
    from compiler.passes import run_pipeline
    from workloads.attention import kernel as A

    q = np.zeros((4 * 1024, D), np.float16)
    args = (q, q, q, q, 0.125, 1024, 1024 * D, D)
    meta = dict(HEAD_DIM=D, BLOCK_M=128, BLOCK_N=BN)
    mod = run_pipeline(A.attention_fwd_kernel.lower(*args, **meta), Options(num_warps=nw, arch="sm_90a"))
    loop = next(op for op in mod.function.body.ops if op.kind == "for")
    kinds = [op.kind for op in loop.blocks[0].ops]
    assert loop.attrs["_ring"]["tiles"] == ((D, BN), (BN, D)) and "load" not in kinds
    ptx = A.attention_fwd_kernel.warmup(*args, grid=(1,), target="sm_90a", num_warps=nw, **meta).asm["ptx"]
    body = ptx.split("$L__BB0_2:")[1].split("$L__BB0_3:")[0]
    assert body.count("bar.sync") == 1 and body.count("cp.async.commit_group") == 1
    assert len(re.findall(r"wgmma\.mma_async[^\n]*\}, \{%r\d+,%r\d+,%r\d+,%r\d+\}, %rd\d+", body)) > 0
    assert "st.shared" not in body  # neither q nor p is stored per iteration
    if find_ptxas() is not None:
        assert ptx_resources(ptx, "sm_90a")["spill_stores"] == 0


@pytest.mark.parametrize("D,BN,nw", [(64, 64, 4), (128, 64, 8)])
def test_wgmma_defer_leaves_pv_in_flight(D, BN, nw, monkeypatch, tmp_path):
    """p is packed before one fence, the P.V wgmma group stays in flight into the next iteration (waited by the QK
    dot's wait, and at the loop's exit): no iteration ends with a wait. It assembles without spills."""
    from compiler.codegen.ptx import find_ptxas, ptx_resources
    from workloads.attention import kernel as A

    q = np.zeros((4 * 1024, D), np.float16)
    args = (q, q, q, q, 0.125, 1024, 1024 * D, D)
    meta = dict(HEAD_DIM=D, BLOCK_M=128, BLOCK_N=BN)

    monkeypatch.setenv("TILEFARM_CACHE_DIR", str(tmp_path))
    ptx = A.attention_fwd_kernel.warmup(*args, grid=(1,), target="sm_90a", num_warps=nw, **meta).asm["ptx"]
    if find_ptxas() is not None:
        assert ptx_resources(ptx, "sm_90a")["spill_stores"] == 0
    deferred = ptx.split("$L__BB0_2:")[1].split("$L__BB0_3:")[0]
    assert deferred.count("wgmma.commit_group") == 2
    assert "wgmma.wait_group" not in deferred[deferred.rindex("wgmma.commit_group"):]
    assert "wgmma.wait_group.sync.aligned 0" in ptx.split("$L__BB0_3:")[1]  # the exit waits for the last group


def test_wgmma_defer_leaves_matmul_alone(monkeypatch, tmp_path):
    monkeypatch.setenv("TILEFARM_CACHE_DIR", str(tmp_path))
    ptx = _matmul_ptx("float16", "ieee", "float16", 128, 128, 64, 8, target="sm_90")
    body = ptx.split("$L__BB0_2:")[1]
    assert "wgmma.wait_group.sync.aligned 1" in body  # the K loop keeps its own one-group-in-flight pipeline


@pytest.mark.parametrize("BM,BN", [(128, 128), (64, 256)])
def test_paired_cvt_keeps_wgmma_pipelined(BM, BN, monkeypatch, tmp_path):
    """The epilogue's float32 -> float16 rounding is one
    cvt.rn.f16x2.f32 per register pair, never a scalar cvt.rn.f16.f32 of an accumulator; ptxas then keeps the wgmma
    chain pipelined in the configs where it used to serialize it (C7514)."""
    from compiler.codegen.ptx import find_ptxas, ptx_resources

    monkeypatch.setenv("TILEFARM_CACHE_DIR", str(tmp_path))
    ptx = _matmul_ptx("float16", "ieee", "float16", BM, BN, 64, 8, target="sm_90a")
    assert "cvt.rn.f16x2.f32" in ptx and "cvt.rn.f16.f32" not in ptx
    if find_ptxas() is not None:
        log = ptx_resources(ptx, "sm_90a")["log"]
        assert "C7514" not in log and "serialized" not in log, log


def test_paired_cvt_bf16_and_older_targets(monkeypatch, tmp_path):
    """bf16 pairs too (cvt.rn.bf16x2.f32); sm_80 pairs as well; the element order is checked on a GPU (the cast
    and dot gpu tests)."""
    monkeypatch.setenv("TILEFARM_CACHE_DIR", str(tmp_path))
    bf = _matmul_ptx("bfloat16", "ieee", "bfloat16", 128, 128, 64, 8, target="sm_90a")
    assert "cvt.rn.bf16x2.f32" in bf and "cvt.rn.bf16.f32" not in bf  # no scalar rounding left to LLVM
    h = _matmul_ptx("float16", "ieee", "float16", 128, 128, 32, 4, target="sm_80")
    assert "cvt.rn.f16x2.f32" in h and "cvt.rn.f16.f32" not in h


@pytest.mark.parametrize("rows,cols", [(64, 64), (64, 128), (128, 32), (32, 16)])
def test_swizzled_py_offset_is_a_bijection_matching_descriptor_starts(rows, cols):
    """SwizzledTile.py_offset (what the ring copies' compile-time distances use) places every 16-bit element of the tile at
    its own aligned byte, keeps 16-byte chunks whole, and agrees with const_offset where the swizzle is the
    identity (rows a multiple of 8, chunk 0)."""
    from compiler.codegen.dot import SwizzledTile

    st = SwizzledTile((rows, cols), 1)
    offs = {st.py_offset(r, c) for r in range(rows) for c in range(cols)}
    assert len(offs) == rows * cols and min(offs) == 0 and max(offs) == 2 * rows * cols - 2
    for r in range(rows):
        for c in range(0, cols, 8):
            base = st.py_offset(r, c)
            assert base % 16 == 0 and [st.py_offset(r, c + i) for i in range(8)] == [base + 2 * i for i in range(8)]
    for r in range(0, rows, 8):
        for c in range(0, cols, st.block_cols):
            assert st.py_offset(r, c) == st.const_offset(r, c)


def test_ring_dst_copies_at_immediate_distances(monkeypatch, tmp_path):
    """A thread's cp.async chunks into a ring slot sit at
    distances fixed at compile time (rows a swizzle period apart), so one address per thread and slot, then
    constants."""
    import re

    from workloads.attention import kernel as A

    monkeypatch.setenv("TILEFARM_CACHE_DIR", str(tmp_path))
    q = np.zeros((4 * 1024, 64), np.float16)
    ptx = A.attention_fwd_kernel.warmup(q, q, q, q, 0.125, 1024, 1024 * 64, 64, grid=(1,), target="sm_90a",
                                        num_warps=4, HEAD_DIM=64, BLOCK_M=128, BLOCK_N=64).asm["ptx"]
    body = ptx.split("$L__BB0_2:")[1].split("$L__BB0_3:")[0]
    dsts = re.findall(r"cp\.async\.cg\.shared\.global \[(%r\d+)\]", body)
    assert len(dsts) == 8  # K and V: 4 chunks each per thread
    adds = dict(re.findall(r"add\.s32 \t(%r\d+), (%r\d+), \d+;", body))
    assert len({adds.get(r, r) for r in dsts}) == 1  # all from one address


def test_smem_convert_epilogue_moves_vectors(monkeypatch, tmp_path):
    """The matmul epilogue's layout conversion reads
    16-byte vectors back from shared memory (the accumulator side writes its 2-element runs as 32-bit stores), with rows
    padded by 16 bytes so the fragment's 8 rows per warp land in different banks (row stride 528 bytes for a 256-wide
    fp16 tile)."""
    import collections
    import re

    monkeypatch.setenv("TILEFARM_CACHE_DIR", str(tmp_path))
    ptx = _matmul_ptx("float16", "ieee", "float16", 128, 256, 64, 8, target="sm_90a")
    epi = collections.Counter(re.findall(r"\b((?:st|ld)\.shared[\w.]*)", ptx.split("$L__BB0_3:")[1]))
    assert epi == {"st.shared.b32": 64, "ld.shared.v4.b32": 16}, epi
    assert re.search(r"mul\.lo\.s32\s+%r\d+, %r\d+, 264;", ptx)  # 256 + 8 padding elements per row


def test_run_length_of_layouts():
    from compiler.codegen.reduce import _run_length
    from compiler.passes.layouts import LinearLayout

    ll = LinearLayout(shape=(16, 64), reg=((0, 1), (0, 2), (0, 4), (1, 0)), lane=((0, 8), (0, 16),
                      (0, 32), (2, 0), (4, 0)), warp=((8, 0),))
    assert _run_length(ll, 1, 8) == 8 and _run_length(ll, 1, 4) == 4 and _run_length(ll, 0, 8) == 1
    mma = LinearLayout(shape=(16, 8), reg=((0, 1), (8, 0)), lane=((0, 2), (0, 4), (1, 0), (2, 0), (4, 0)), warp=())
    assert _run_length(mma, 1, 8) == 2


def test_ring_wait_has_no_proxy_fence(monkeypatch, tmp_path):
    """The K loop waits for its copies and synchronizes without a proxy fence (as CUTLASS's cp.async + wgmma
    mainloop and Triton)."""
    monkeypatch.setenv("TILEFARM_CACHE_DIR", str(tmp_path))
    body = _matmul_ptx("float16", "ieee", "float16", 128, 128, 64, 8, target="sm_90a").split("$L__BB0_2:")[1]
    assert "fence.proxy.async" not in body.split("wgmma.fence")[0] and "cp.async.wait_group" in body


@pytest.mark.parametrize("D,nw", [(64, 4), (128, 8)])
def test_copy_late_puts_the_ring_copies_after_the_last_dot(D, nw, monkeypatch, tmp_path):
    """In the attention loop nothing but the wait and the barrier precede the QK wgmma; the copies of a later
    iteration follow the P.V wgmma. The one-dot matmul loop's copies follow its dot too (128x256: num_stages + 1
    slots in the tight ring's order). Both assemble without spills."""
    late = _loop_body(_attention_kernel(monkeypatch, tmp_path, D, nw).asm["ptx"])
    last_wgmma = late.rindex("wgmma.mma_async")
    assert "cp.async.cg" not in late[:last_wgmma] and late.count("cp.async.cg") > 0
    assert late.count("cp.async.commit_group") == 1
    mm = _matmul_ptx("float16", "ieee", "float16", 128, 256, 64, 8, target="sm_90a").split("$L__BB0_2:")[1]
    assert mm.index("wgmma.mma_async") < mm.index("cp.async.cg")


@pytest.mark.parametrize("D,nw", [(64, 4), (128, 8)])
def test_desc64_multi_builds_attention_descriptors_once_per_slot(D, nw, monkeypatch, tmp_path):
    """In a loop of several dots (attention) the wgmma descriptors of a ring slot are one 64-bit value built once
    per operand (a cvt.u64.u32 each for K and V), the k-steps 64-bit adds of constants. The one-dot matmul loop
    rebuilds each descriptor from its 32-bit address (a cvt.u64.u32 per descriptor: two per wgmma). Both assemble
    without spills."""
    wide = _loop_body(_attention_kernel(monkeypatch, tmp_path, D, nw).asm["ptx"])
    n = wide.count("wgmma.mma_async")
    assert n >= 12 and wide.count("cvt.u64.u32") == 2 and wide.count("add.s64") >= n - 4
    mm = _loop_body(_matmul_ptx("float16", "ieee", "float16", 128, 256, 64, 8, target="sm_90a"))
    assert mm.count("cvt.u64.u32") == 2 * mm.count("wgmma.mma_async") >= 8


def test_remat_blocked_keeps_prologue_index_math_out_of_shared_memory(monkeypatch, tmp_path):
    """Index vectors wanted in a blocked layout
    outside loops (the aranges of the load addresses before the K loop) are recomputed in that layout, not
    converted through shared memory: the matmul prologue has no barrier left (4 when they were converted),
    attention's keeps only those around storing q (2; 6 when converted)."""
    from workloads.attention import kernel as A

    def prologues():
        monkeypatch.setenv("TILEFARM_CACHE_DIR", str(tmp_path))
        mm = _matmul_ptx("float16", "ieee", "float16", 128, 256, 64, 8, target="sm_90a")
        q = np.zeros((4 * 1024, 64), np.float16)
        at = A.attention_fwd_kernel.warmup(q, q, q, q, 0.125, 1024, 1024 * 64, 64, grid=(1,), target="sm_90a",
                                           num_warps=4, HEAD_DIM=64, BLOCK_M=128, BLOCK_N=64).asm["ptx"]
        return [p.split("$L__BB0_2:")[0].count("bar.sync") for p in (mm, at)]

    assert prologues() == [0, 2]


def _back_edge_body(ptx):
    """The PTX between a loop's header label and its backward branch (the first loop)."""
    import re

    for m in re.finditer(r"bra(?:\.uni)?\s+(\$L__BB0_\d+);", ptx):
        at = ptx.find(m.group(1) + ":")
        if 0 <= at < m.start():
            return ptx[at:m.start()]
    raise AssertionError("no loop in the PTX")


@pytest.mark.parametrize("read_l", [False, True])
def test_lane_partial_sum_takes_the_row_sum_shuffles_out_of_the_loop(read_l, monkeypatch, tmp_path):
    """l = l * a + sum(x, 1) carried through a loop keeps per-lane partial
    sums; the sum's butterfly shuffles (3 lane bits x 4 rows here) move after the loop, the max's stay. A loop
    that reads l otherwise (READ_L) keeps them inside. The PTX assembles."""
    from compiler.codegen.ptx import find_ptxas, ptx_resources

    x = np.zeros((4, 64, 32), np.float32)
    out = np.zeros((64, 32), np.float32)
    monkeypatch.setenv("TILEFARM_CACHE_DIR", str(tmp_path))
    ptx = K.scaled_row_sums_kernel.warmup(x, x, out, 4, grid=(1,), BM=64, BN=32, READ_L=read_l, num_warps=4,
                                          num_stages=1).asm["ptx"]
    assert ptx.count("shfl.sync.bfly") == 24
    assert _back_edge_body(ptx).count("shfl.sync.bfly") == (24 if read_l else 12)
    if find_ptxas() is not None:
        assert ptx_resources(ptx, "sm_90")["spill_stores"] == 0


@pytest.mark.parametrize("nw,inside", [(8, 4), (4, 8)])
def test_attention_row_sum_shuffles_leave_the_loop(nw, inside, monkeypatch, tmp_path):
    """Attention D=64 128x64: the loop's only shuffles are the row max's (2 lane bits per row a thread holds: two
    rows at w8, four at w4); the row sum's (as many again) come after the loop."""
    got = _attention_kernel(monkeypatch, tmp_path, 64, nw)
    assert _back_edge_body(got.asm["ptx"]).count("shfl.sync.bfly") == inside


@pytest.mark.gpu
@pytest.mark.parametrize("read_l", [False, True])
@pytest.mark.parametrize("n_iter", [0, 1, 7])
def test_lane_partial_sum_gpu(n_iter, read_l):
    """The row-sum recurrence with and without per-lane partial sums against float64 (zero iterations: the start
    value comes back whole)."""
    rng = np.random.default_rng(n_iter)
    x = rng.uniform(-1, 1, (max(n_iter, 1), 64, 32)).astype(np.float32)
    a = rng.uniform(0.5, 1.0, (max(n_iter, 1), 64, 32)).astype(np.float32)
    out = poison((64, 32), "float32")
    run("gpu", K.scaled_row_sums_kernel, (1,), [x, a, out], [n_iter], BM=64, BN=32, READ_L=read_l, num_warps=4)
    l = np.full(64, 1.5)
    for i in range(n_iter):
        l = l * a[i].astype(np.float64).max(1) + x[i].astype(np.float64).sum(1)
    assert_close(out, x[0].astype(np.float64) / l[:, None], "float32", rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("BM,BN,BK,nw,stages", [(64, 64, 64, 4, 2), (128, 128, 128, 8, 2), (128, 128, 256, 8, 1)])
def test_wgmma_scratch_operands_take_one_stage_where_two_do_not_fit(BM, BN, BK, nw, stages):
    """Operands made in registers inside a K loop are written to shared memory by the dot, in two stages
    alternating by iteration (the wgmma left in flight) where two fit in a block's 227 KiB, else in one stage with
    each wgmma retired before the next iteration writes it (128x128x256 bfloat16: 2 x 128 KiB did not fit, and
    the launch failed)."""
    from compiler.passes.pipeline import SMEM_MAX

    a = np.zeros((256, 512), np.float16)
    b = np.zeros((512, 256), np.float16)
    k = K.scaled_operands_matmul_kernel.warmup(a, b, np.zeros((256, 256), np.float32), 256, 256, 512, 0.5, 2.0,
                                              grid=(1,), target="sm_90a", BM=BM, BN=BN, BK=BK, num_warps=nw,
                                              num_stages=1)
    stage = (BM * BK + BK * BN) * 2
    assert k.metadata["shared_bytes"] == stages * stage <= SMEM_MAX
    ptx = k.asm["ptx"]
    waits = re.findall(r"wgmma\.wait_group\.sync\.aligned (\d)", ptx)
    assert ("1" in waits) == (stages == 2)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("BM,BN,BK,nw", [(64, 64, 64, 4), (128, 128, 256, 8)])
def test_scaled_operands_matmul(target, BM, BN, BK, nw):
    M, N, Kd = 256, 256, 512
    rng = np.random.default_rng(BK)
    a = rng.uniform(-1, 1, (M, Kd)).astype(np.float16)
    b = rng.uniform(-1, 1, (Kd, N)).astype(np.float16)
    c = poison((M, N), "float32")
    run(target, K.scaled_operands_matmul_kernel, (M // BM, N // BN), [a, b, c], [M, N, Kd, 0.5, 2.0],
        BM=BM, BN=BN, BK=BK, num_warps=nw, num_stages=1)
    bf = lambda x: (x.astype(np.float32).view(np.uint32) + 0x7FFF + ((x.astype(np.float32).view(np.uint32) >> 16) & 1)  # noqa: E731
                    & 0xFFFF0000).view(np.float32)  # round to nearest even bfloat16
    ref = bf(a.astype(np.float32) * 0.5).astype(np.float64) @ bf(b.astype(np.float32) * 2.0).astype(np.float64)
    assert_close(c, ref, "float32", rtol=1e-5, atol=1e-5 * math.sqrt(Kd))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("M,N,Kd,w", [(64, 64, 64, 4), (64, 64, 64, 8), (32, 32, 64, 2), (8, 32, 32, 4)])
def test_int8_dot_saturates(target, M, N, Kd, w):
    """An int8 dot's int32 sum saturates at int32's range instead of wrapping, as Triton's mma.sync code does:
    .satfinite after each m16n8k32 instruction, so in K order, 32 products at a time -- a sum pushed to the bound
    and back by later products comes back from the bound (the H100 showed it: 505 of 4096 elements differ from a
    single clamp of the exact sum). On sm_90a whole warpgroups take wgmma's k32 instructions with .satfinite, the
    same 32 products per step (Triton's wgmma code wraps instead); two warps keep mma.sync. A dim under 16 sums in
    int64 and clamps once. Accumulators near both ends of the range are pushed past them; the reference applies
    those rules step by step."""
    rng = np.random.default_rng(31)
    a = rng.integers(-128, 128, (M, Kd), dtype=np.int8)
    b = rng.integers(-128, 128, (Kd, N), dtype=np.int8)
    exact = a.astype(np.int64) @ b.astype(np.int64)
    acc = rng.integers(-1000, 1000, (M, N)).astype(np.int64)
    hi, lo = exact > 0, exact < 0
    acc[::2][hi[::2]] = 2**31 - 2  # pushed over the top
    acc[1::2][lo[1::2]] = -2**31 + 1  # and under the bottom
    acc = acc.astype(np.int32)
    c = poison((M, N), "int32")
    run(target, K.int8_dot_acc_kernel, (1,), [a, b, acc, c], [], M=M, N=N, K=Kd, num_warps=w)
    step = 32 if min(M, N, Kd) >= 16 else Kd  # the small-dot path: one clamp of the int64 sum
    want = acc.astype(np.int64)
    for k0 in range(0, Kd, step):
        want = np.clip(want + a[:, k0:k0 + step].astype(np.int64) @ b[k0:k0 + step].astype(np.int64), -2**31,
                       2**31 - 1)
    assert (want == 2**31 - 1).sum() > M * N // 8 and (want == -2**31).sum() > M * N // 8
    assert_exact(c, want)
    if M >= 16:
        ptx = K.int8_dot_acc_kernel.warmup(a, b, acc, c, M=M, N=N, K=Kd, num_warps=w, grid=(1,),
                                           target="sm_90a").asm["ptx"]
        if w % 4 == 0:
            assert f"wgmma.mma_async.sync.aligned.m64n{N * 4 // w}k32.satfinite.s32.s8.s8" in ptx and "mma.sync" not in ptx
        else:
            assert "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32" in ptx


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("batch,M,N,Kd", [((2, 2), 32, 16, 32), ((2, 1, 2), 16, 32, 16), ((2, 2), 8, 16, 16)])
def test_dot_more_batch_dims(target, batch, M, N, Kd):
    """A dot of 4-D and higher blocks (the leading dims a batch, as Triton's tl.dot takes them): float16 operands
    of small integers, so every product and sum is exact; the third case goes through the small-dot path."""
    rng = np.random.default_rng(32)
    a = rng.integers(-4, 5, batch + (M, Kd)).astype(np.float16)
    b = rng.integers(-4, 5, batch + (Kd, N)).astype(np.float16)
    acc = rng.integers(-8, 9, batch + (M, N)).astype(np.float32)
    z = poison((acc.size,), "float32")
    run(target, K.dot_nd_kernel, (1,), [a.ravel(), b.ravel(), acc.ravel(), z], [], SHAPE_A=list(a.shape),
        SHAPE_B=list(b.shape), SHAPE_C=list(acc.shape), NA=a.size, NB=b.size, NC=acc.size)
    assert_exact(z.reshape(acc.shape), acc + a.astype(np.float32) @ b.astype(np.float32))


def test_dot_more_batch_dims_inner_dimension_mismatch():
    """4-D blocks whose K differ: the error names the inner dimensions, as a 2-D dot's does."""
    a = np.zeros((2, 2, 16, 32), np.float16)
    b = np.zeros((2, 2, 16, 16), np.float16)
    acc = np.zeros((2, 2, 16, 16), np.float32)
    z = np.zeros(acc.size, np.float32)
    with pytest.raises(compiler.CompilationError, match="inner dimensions differ"):
        K.dot_nd_kernel[(1,)](a.ravel(), b.ravel(), acc.ravel(), z, SHAPE_A=list(a.shape), SHAPE_B=list(b.shape),
                              SHAPE_C=list(acc.shape), NA=a.size, NB=b.size, NC=acc.size)


def test_same_run_registers_follow_constancy():
    """Registers whose elements fall in one aligned run of constant values in every thread share a value; a run
    that a thread's registers straddle, or constancy 1, keeps them apart."""
    from compiler.codegen.memory import same_run_registers
    from compiler.passes.layouts import fill_blocked, linear

    # [64, 256] fp16 tile, 256 threads: 8 halves a thread along N, threads 32 along N then warps along K, so a
    # thread's registers step along K by 8 rows
    ll = linear(fill_blocked((64, 256), [1, 8], 8, (1, 0)), (64, 256), 8)
    regs = list(range(0, ll.num_regs, 8))
    rows = [ll.reg_coord(r)[0] for r in regs]
    assert rows == sorted(rows) and rows[1] - rows[0] == 8
    shared = same_run_registers(ll, regs, (16, 16), 8)
    assert [shared[r] for r in regs] == [regs[2 * (i // 2)] for i in range(len(regs))]  # pairs of rows 8 apart
    assert same_run_registers(ll, regs, (1, 16), 8) == {r: r for r in regs}
    assert set(same_run_registers(ll, regs, (64, 256), 8).values()) == {regs[0]}


def test_ring_copies_share_predicates_within_a_constant_run():
    """A 128x256x64 fp16 K loop masked on M, N and K (K a multiple of 16): each thread's B copies lie 8 K rows apart,
    pairs in one 16-row run of the K mask, so they share size operands: fewer distinct ones than copies."""
    M = N = Kd = 512
    a = np.zeros((M, Kd), np.float16)
    b = np.zeros((Kd, N), np.float16)
    c = np.zeros((M, N), np.float16)
    ck = K.masked_dot_loop_kernel.warmup(a, b, c, M, N, Kd, Kd, 1, N, 1, N, 1, grid=(4, 2), target="sm_90a",
                                         BM=128, BN=256, BK=64, ACC=tl.float32, PRECISION="ieee", num_warps=8,
                                         num_stages=3)
    sizes = re.findall(r"cp\.async\.cg\.shared\.global \[[^]]*\], \[[^]]*\], 16, (%r\d+);", ck.asm["ptx"])
    assert sizes and len(set(sizes)) < len(sizes)


def _f64_ptx(arch, **meta):
    M = N = Kd = 256
    a, b, c = (np.zeros((M, Kd)), np.zeros((Kd, N)), np.zeros((M, N)))
    ck = K.masked_dot_loop_kernel.warmup(a, b, c, M, N, Kd, Kd, 1, N, 1, N, 1, grid=(4, 4), target=arch, BM=64, BN=64,
                                         BK=16, ACC=tl.float64, PRECISION="ieee", num_warps=4, num_stages=3, **meta)
    return ck.asm["ptx"]


def test_f64_dot_on_tensor_cores_ptx():
    """An fp64 dot runs on the fp64 mma.sync (m16n8k8) on sm_90+, on FMAs on sm_80; ptxas assembles it without
    spills."""
    from compiler.codegen.ptx import find_ptxas, ptx_resources

    assert "mma.sync" not in _f64_ptx("sm_80") and "fma.rn.f64" in _f64_ptx("sm_80")
    ptx = _f64_ptx("sm_90a")
    assert "mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64" in ptx and "fma.rn.f64" not in ptx
    assert "mma.sync" not in _f64_ptx("sm_80")
    if find_ptxas() is not None:
        assert ptx_resources(ptx, "sm_90a")["spill_stores"] == 0


@pytest.mark.gpu
@pytest.mark.parametrize("M,N,Kd,BM,BN,BK,nw,stages", [(96, 80, 96, 32, 32, 16, 4, 2), (100, 72, 77, 64, 64, 16, 4, 3),
                                                       (256, 128, 512, 64, 64, 32, 4, 3), (128, 128, 64, 128, 64, 16, 8, 1)])
@pytest.mark.parametrize("a_t", [False, True])
def test_f64_dot_on_tensor_cores_gpu(M, N, Kd, BM, BN, BK, nw, stages, a_t):
    rng = np.random.default_rng(M * 31 + Kd + a_t)
    a, b = rng.uniform(-1, 1, (M, Kd)), rng.uniform(-1, 1, (Kd, N))
    arr, (sam, sak) = (np.ascontiguousarray(a.T), (1, M)) if a_t else (a, (Kd, 1))
    c = poison((M, N), "float64")
    run("gpu", K.masked_dot_loop_kernel, (compiler.cdiv(M, BM), compiler.cdiv(N, BN)), [arr, b, c],
        [M, N, Kd, sam, sak, N, 1, N, 1], BM=BM, BN=BN, BK=BK, ACC=tl.float64, PRECISION="ieee", num_warps=nw,
        num_stages=stages)
    assert_close(c, a @ b, "float64", rtol=1e-12, atol=1e-12 * math.sqrt(Kd))


@compiler.jit
def _persistent_matmul(A, B, C, M, N, K, NUM_PROGS: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                       BK: tl.constexpr):
    tiles_n = tl.cdiv(N, BN)
    for tile in range(tl.program_id(0), tl.cdiv(M, BM) * tiles_n, NUM_PROGS):
        rm = (tile // tiles_n) * BM + tl.arange(0, BM)
        rn = (tile % tiles_n) * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k0 in range(0, K, BK):
            a = tl.load(A + rm[:, None] * K + (k0 + rk)[None, :])
            b = tl.load(B + (k0 + rk)[:, None] * N + rn[None, :])
            acc = tl.dot(a, b, acc)
        tl.store(C + rm[:, None] * N + rn[None, :], acc.to(tl.float16))


def test_a_persistent_kernels_ring_buys_no_second_block():
    """A 128x128x64 w8 s3 K loop inside a loop over tiles from the program id (a persistent kernel: one program
    per SM) keeps the loose ring's num_stages + 1 slots and no block count for ptxas, where the same loop in a
    plain matmul takes the tight ring that buys a second block per SM."""
    from compiler.options import Options
    from compiler.passes import run_pipeline

    S = 1024
    a, b, c = np.zeros((S, S), np.float16), np.zeros((S, S), np.float16), np.zeros((S, S), np.float16)
    mod = _persistent_matmul.lower(a, b, c, S, S, S, NUM_PROGS=132, BM=128, BN=128, BK=64)
    mod = run_pipeline(mod, Options(num_warps=8, num_stages=3, arch="sm_90a"))
    ring = next(op for op in mod.function.body.walk() if op.kind == "for" and "_ring" in op.attrs).attrs["_ring"]
    assert ring["stages"] == 4
    assert mod.meta.get("ring_blocks_per_sm") != 2


@compiler.jit
def _f16_acc_matmul(A, B, C, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float16)
    for k0 in range(0, K, BK):
        a = tl.load(A + rm[:, None] * K + (k0 + rk)[None, :], mask=(rm[:, None] < M) & (k0 + rk[None, :] < K), other=0.0)
        b = tl.load(B + (k0 + rk)[:, None] * N + rn[None, :], mask=(k0 + rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc, out_dtype=tl.float16)
    tl.store(C + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@pytest.mark.parametrize("target", _ALL_TARGETS)
@pytest.mark.parametrize("M,N,K,BM,BN,BK,nw", [(200, 136, 96, 64, 64, 32, 4), (256, 256, 128, 128, 128, 64, 8)])
def test_f16_accumulator_dot_loop(target, M, N, K, BM, BN, BK, nw):
    """`out_dtype=tl.float16` dots in a masked K loop, fp16 accumulator carried (on sm_90a wgmma's .f16 form,
    before it mma.sync). Checked against float64 with fp16 accumulation's tolerance."""
    rng = np.random.default_rng(M + N + K + nw)
    a = (rng.uniform(-1, 1, (M, K)) / math.sqrt(K)).astype(np.float16)
    b = rng.uniform(-1, 1, (K, N)).astype(np.float16)
    c = poison((M, N), "float16")
    run(target, _f16_acc_matmul, (compiler.cdiv(M, BM), compiler.cdiv(N, BN)), [a, b, c], [M, N, K], BM=BM, BN=BN,
        BK=BK, num_warps=nw, num_stages=3)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    assert_close(c, ref, "float16", rtol=1e-2, atol=6e-3)


def test_f16_accumulator_on_wgmma_ptx():
    """On sm_90a an fp16-accumulator dot is `wgmma ... .f16.f16.f16` with half the accumulator registers (two
    values a .b32), and ptxas assembles it without spills."""
    from compiler.codegen.ptx import find_ptxas, ptx_resources

    S = 512
    a, b, c = np.zeros((S, S), np.float16), np.zeros((S, S), np.float16), np.zeros((S, S), np.float16)
    ck = _f16_acc_matmul.warmup(a, b, c, S, S, S, grid=(4, 4), target="sm_90a", BM=128, BN=128, BK=64, num_warps=8,
                                num_stages=3)
    ptx = ck.asm["ptx"]
    assert re.search(r"wgmma\.mma_async\.sync\.aligned\.m64n128k16\.f16\.f16\.f16 \{(%r\d+,){31}%r\d+\}", ptx)
    assert "mma.sync" not in ptx
    if find_ptxas() is not None:
        assert ptx_resources(ptx, "sm_90a")["spill_stores"] == 0


@compiler.jit
def _block_table_matmul(A, B, C, TABLE, ROW_START, N, BS: tl.constexpr, BN: tl.constexpr):
    # row block r sums A[r] blocks times the B row blocks TABLE[ROW_START[r]:ROW_START[r + 1]] names (runtime trips)
    pid_m = tl.program_id(0)
    rb = tl.arange(0, BS)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros((BS, BN), dtype=tl.float32)
    for i in range(tl.load(ROW_START + pid_m), tl.load(ROW_START + pid_m + 1)):
        kb = tl.load(TABLE + i)
        a = tl.load(A + i * BS * BS + rb[:, None] * BS + rb[None, :])
        b = tl.load(B + (kb * BS + rb)[:, None] * N + rn[None, :])
        acc += tl.dot(a, b)
    tl.store(C + (pid_m * BS + rb)[:, None] * N + rn[None, :], acc)


def _block_table_case(rng, rows, kblocks, BS, N):
    counts = rng.integers(0, 4, rows)
    counts[1] = 0  # a row block with no table entries: its loop runs no iteration
    start = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    table = np.concatenate([rng.choice(kblocks, c, replace=False) for c in counts]).astype(np.int32)
    a = rng.uniform(-1, 1, (int(start[-1]), BS, BS)).astype(np.float16)
    b = rng.uniform(-1, 1, (kblocks * BS, N)).astype(np.float16)
    ref = np.zeros((rows * BS, N))
    for r in range(rows):
        for i in range(start[r], start[r + 1]):
            ref[r * BS:(r + 1) * BS] += a[i].astype(np.float64) @ b[table[i] * BS:(table[i] + 1) * BS].astype(np.float64)
    return a, b, table, start, ref


@pytest.mark.parametrize("target", _ALL_TARGETS)
@pytest.mark.parametrize("stages", [2, 3, 4])
def test_block_table_dot_loop(target, stages):
    """A K loop whose B blocks come from a table (block-sparse, MoE, paged): the copy ring issues the table loads
    of the iterations it fetches ahead, masked where the iteration does not exist (the table ends exactly at the
    last row's entries and one row has none, so an unmasked read past the end would be caught)."""
    rng = np.random.default_rng(stages)
    BS, N, rows = 64, 128, 5
    a, b, table, start, ref = _block_table_case(rng, rows, 6, BS, N)
    c = poison((rows * BS, N), "float32")
    run(target, _block_table_matmul, (rows, 1), [a, b, c, table, start], [N], BS=BS, BN=N, num_warps=4,
        num_stages=stages)
    assert_close(c, ref, "float32", rtol=2e-3, atol=2e-3)


def test_block_table_loop_takes_the_copy_ring():
    """The table loop's a and b loads become ring copies; the cloned table loads are masked."""
    from compiler.options import Options
    from compiler.passes import run_pipeline

    rng = np.random.default_rng(0)
    a, b, table, start, _ = _block_table_case(rng, 5, 6, 64, 128)
    c = np.zeros((5 * 64, 128), np.float32)
    mod = _block_table_matmul.lower(a, b, c, table, start, 128, BS=64, BN=128)
    mod = run_pipeline(mod, Options(num_warps=4, num_stages=3, arch="sm_90a"))
    loop = next(op for op in mod.function.body.walk() if op.kind == "for")
    assert "_ring" in loop.attrs
    body = loop.blocks[0].ops
    assert not [o for o in body if o.kind == "load" and o.result.type.shape]
    idx = [o for o in mod.function.body.walk() if o.kind == "load" and not o.result.type.shape
           and o.block is not mod.function.body]
    assert idx and all(o.attrs.get("has_mask") for o in idx)
