"""A deterministic stand-in for GPU timings (farm tune tests): fastest at BLOCK=1024 with 4 warps."""
import math


def timer(params, meta, rep_ms):
    return 1.0 + abs(math.log2(meta["BLOCK"] / 1024)) + abs(math.log2(meta["num_warps"] / 4)) * 0.5
