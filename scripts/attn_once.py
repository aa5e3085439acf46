#!/usr/bin/env python3
"""One flash-attention forward launch (after a warm-up launch), ours or Triton's on the same source: a target for
Nsight Compute (`ncu -k regex:attention_fwd --launch-skip 1 --launch-count 1 ...`, see gpu_session.sh part ncu).

    python3 scripts/attn_once.py --impl ours|triton [--D 64] [--block-n 64] [--warps 4] [--stages 3]
"""
from __future__ import annotations

import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--impl", choices=("ours", "triton"), required=True)
    ap.add_argument("--D", type=int, default=64)
    ap.add_argument("--block-n", type=int, default=64)
    ap.add_argument("--warps", type=int, default=4)
    ap.add_argument("--stages", type=int, default=3)
    a = ap.parse_args()
    import torch

    from workloads._common import triton_module
    from workloads.attention import kernel as AK

    kern = AK.attention_fwd_kernel if a.impl == "ours" else triton_module(AK).attention_fwd_kernel
    BH, L, D, BM = 32, 4096, a.D, 128
    g = torch.Generator(device="cuda").manual_seed(D)
    q, k, v = (torch.randn((BH, L, D), device="cuda", generator=g).to(torch.float16) for _ in range(3))
    o = torch.empty_like(q)
    for _ in range(2):  # the first compiles and warms up; the profiler takes the second
        kern[(L // BM, BH)](q, k, v, o, 1.0 / D ** 0.5, L, L * D, D, HEAD_DIM=D, BLOCK_M=BM, BLOCK_N=a.block_n,
                            num_warps=a.warps, num_stages=a.stages)
    torch.cuda.synchronize()
    ref = torch.nn.functional.scaled_dot_product_attention(q.float()[None], k.float()[None], v.float()[None],
                                                           scale=1.0 / D ** 0.5)[0]
    print(f"{a.impl} D={D}: max |err| {float((o.float() - ref).abs().max()):.2e}")


if __name__ == "__main__":
    main()
