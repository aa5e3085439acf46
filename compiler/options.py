"""Compile options that change the generated code (part of every cache key)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Options:
    """Per-compile knobs: threads per program (num_warps * 32), software-pipeline depth, target, debug checks.

    `debug` turns device asserts on (they compile to nothing otherwise).
    """

    num_warps: int = 4
    num_stages: int = 3
    arch: str = "sm_90"
    debug: bool = False
    enable_fp_fusion: bool = True  # let a*b+c become one FMA (Triton's default)
    # Code-generation changes not yet measured on a GPU, by name (comma-separated; TILEFARM_EXPERIMENTS sets them
    # for compile_kernel). Part of the cache key like every option. Known: "wgmma_defer" (see codegen/dot.py).
    experiments: str = ""

    def experiment(self, name: str) -> bool:
        return name in self.experiments.split(",")

    def __post_init__(self):
        if self.num_warps <= 0 or self.num_warps & (self.num_warps - 1) or self.num_warps > 32:
            raise ValueError(f"num_warps must be a power of two in 1..32, got {self.num_warps}")
