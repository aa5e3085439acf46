#!/usr/bin/env python3
"""One launch of flash-attention forward or matmul (after a warm-up launch), ours or Triton's on the same source: a
target for Nsight Compute (`ncu -k regex:attention_fwd|matmul --launch-skip 1 --launch-count 1 ...`, see
gpu_session.sh part ncu). Checks the result against torch so a profile of a wrong kernel is not mistaken for one.

    python3 scripts/ncu_once.py attention --impl ours|triton [--D 64] [--block-n 64] [--warps 4] [--stages 3]
    python3 scripts/ncu_once.py matmul --impl ours|triton [--size 2048] [--block 128,256,64] [--warps 8] [--stages 3]
    python3 scripts/ncu_once.py corpus --impl ours|triton --case mm_gelu_tanh_f16   (an idiom corpus case, GPU size)
"""
from __future__ import annotations

import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


def attention(torch, a, impl_of) -> str:
    from workloads.attention import kernel as AK

    kern = impl_of(AK).attention_fwd_kernel
    BH, L, D, BM = 32, 4096, a.D, 128
    g = torch.Generator(device="cuda").manual_seed(D)
    q, k, v = (torch.randn((BH, L, D), device="cuda", generator=g).to(torch.float16) for _ in range(3))
    o = torch.full_like(q, float("nan"))
    for _ in range(2):  # the first compiles and warms up; the profiler takes the second
        kern[(L // BM, BH)](q, k, v, o, 1.0 / D ** 0.5, L, L * D, D, HEAD_DIM=D, BLOCK_M=BM, BLOCK_N=a.block_n,
                            num_warps=a.warps, num_stages=a.stages)
    torch.cuda.synchronize()
    ref = torch.nn.functional.scaled_dot_product_attention(q.float()[None], k.float()[None], v.float()[None],
                                                           scale=1.0 / D ** 0.5)[0]
    return f"attention D={D}: max |err| {float((o.float() - ref).abs().max()):.2e}"


def matmul(torch, a, impl_of) -> str:
    from workloads.matmul import kernel as MK

    kern = impl_of(MK).matmul_kernel
    n = a.size
    BM, BN, BK = (int(x) for x in a.block.split(","))
    g = torch.Generator(device="cuda").manual_seed(n)
    x, y = (torch.randn((n, n), device="cuda", generator=g).to(torch.float16) for _ in range(2))
    c = torch.full((n, n), float("nan"), device="cuda", dtype=torch.float16)
    bias = torch.zeros(n, device="cuda", dtype=torch.float32)
    grid = (-(-n // BM) * -(-n // BN),)
    for _ in range(2):
        kern[grid](x, y, c, bias, n, n, n, x.stride(0), x.stride(1), y.stride(0), y.stride(1), c.stride(0),
                   c.stride(1), BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK, GROUP_M=8, EPILOGUE="none", PRECISION="tf32",
                   num_warps=a.warps, num_stages=a.stages)
    torch.cuda.synchronize()
    ref = x.double() @ y.double()
    err = float(((c.double() - ref).abs().max() / ref.abs().max()))
    return f"matmul {n}^3 {BM}x{BN}x{BK}: max rel err {err:.2e}"


def corpus(torch, a, impl_of) -> str:
    import importlib.util

    import workloads.corpus as W

    spec = importlib.util.spec_from_file_location("bench_corpus", os.path.join(ROOT, "scripts", "bench_corpus.py"))
    bc = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bc)
    case = W.load("tilefarm" if a.impl == "ours" else "triton", select=[a.case])[a.case]
    p, meta = case.params("gpu"), case.meta_for("gpu")
    host = case.make_inputs(p, seed=0)
    outs = {k: bc.to_torch(torch, v, "cuda") for k, v in case.make_outputs(p).items()}
    arrays = {**{k: bc.to_torch(torch, v, "cuda") for k, v in host.items()}, **outs}
    grid, args = case.launch(p, arrays, meta)
    consts, opts = case.split_meta(meta)
    for _ in range(2):  # the first compiles and warms up; the profiler takes the second
        case.kernel[grid](*args, **consts, **opts)
    torch.cuda.synchronize()
    ref = case.expected(p, host)
    specs = case.outputs(p)
    got = {k: bc.to_host(torch, outs[k], specs[k][1]) for k in ref}
    return f"{a.case}: check {case.check(p, got, ref)}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("workload", choices=("attention", "matmul", "corpus"))
    ap.add_argument("--case", default="mm_gelu_tanh_f16")
    ap.add_argument("--impl", choices=("ours", "triton"), required=True)
    ap.add_argument("--D", type=int, default=64)
    ap.add_argument("--block-n", type=int, default=64)
    ap.add_argument("--size", type=int, default=2048)
    ap.add_argument("--block", default="128,256,64")
    ap.add_argument("--warps", type=int, default=4)
    ap.add_argument("--stages", type=int, default=3)
    a = ap.parse_args()
    import torch

    from workloads._common import triton_module

    impl_of = (lambda mod: mod) if a.impl == "ours" else triton_module
    print(a.impl, {"attention": attention, "matmul": matmul, "corpus": corpus}[a.workload](torch, a, impl_of))


if __name__ == "__main__":
    main()
