"""Compile options that change the generated code (part of every cache key)."""
from __future__ import annotations

from dataclasses import dataclass


class OptionError(ValueError, AssertionError):
    """A compile option out of its range. A ValueError; also an AssertionError, which is what Triton raises for a
    num_warps that is not a power of 2 (its `assert`), so code written against either catches it."""


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
    # Triton's enable_reflect_ftz: float32 exp2 and rsqrt flush denormals (ex2/rsqrt.approx.ftz, Triton's default);
    # off, they keep them (the non-ftz forms). libdevice's functions keep denormals either way here.
    enable_reflect_ftz: bool = True
    # Registers per thread ptxas may use (.maxnreg): the `maxnreg` launch option (Triton's); None leaves the choice
    # to ptxas.
    maxnreg: int | None = None
    # Debugging: no dot runs on wgmma (mma.sync instead; an sm_90 kernel with a dot then stays sm_90), set by
    # TILEFARM_NO_WGMMA=1 (compile.options_for); no K loop takes the cp.async copy ring (the register pipeline).
    debug_no_wgmma: bool = False
    debug_no_async_copy: bool = False
    # No source line information (`.loc` in the PTX, a line table in the cubin: codegen/lineinfo.py), set by
    # TILEFARM_DISABLE_LINE_INFO=1 or Triton's TRITON_DISABLE_LINE_INFO=1 (compile.options_for). The machine code is
    # the same either way.
    disable_line_info: bool = False
    # The input precision of a float32 dot that names none: triton.knobs.language.fp32_default, from Triton's
    # TRITON_F32_DEFAULT ("ieee", "tf32x3", ...); None: "tf32" (compile.options_for reads it, the frontend too).
    fp32_default: str | None = None

    @property
    def wgmma(self) -> bool:
        """Whether the target has wgmma: sm_90a only (Blackwell's sm_100a has tcgen05 instead, which this compiler
        does not use: its dots run on mma.sync there)."""
        return has_wgmma(self.arch)

    @property
    def sm(self) -> int:
        """The target's compute capability as a number ("sm_90a" -> 90; 0 when the arch names none)."""
        digits = "".join(ch for ch in str(self.arch) if ch.isdigit())
        return int(digits) if digits else 0

    def __post_init__(self):
        if self.num_warps <= 0 or self.num_warps & (self.num_warps - 1) or self.num_warps > 32:
            raise OptionError(f"num_warps must be a power of 2 in 1..32, got {self.num_warps}")
        n = self.maxnreg
        if n is not None and (isinstance(n, bool) or not isinstance(n, int) or not 16 <= n <= 255):
            raise ValueError(f"maxnreg must be an int from 16 to 255 (registers per thread), got {n!r}")


def has_wgmma(arch) -> bool:
    """wgmma exists on the arch-specific Hopper target, sm_90a, and on no other."""
    return str(arch) == "sm_90a"


def ab_switches() -> frozenset:
    """The A/B switches on in TILEFARM_AB (a comma-separated list): code-changing variants that wait for a GPU
    measurement before they become the default (compile.toolchain puts them in the cache key). Read by the passes
    and the code generator alike (codegen/ptx.py lists them)."""
    import os

    return frozenset(s.strip() for s in os.environ.get("TILEFARM_AB", "").split(",")) - {""}


def ab_switch(name: str) -> bool:
    return name in ab_switches()


class Knobs:
    """A group of Triton's `triton.knobs` (the compatibility layer's `knobs.runtime`, `knobs.language`): plain
    attributes with defaults, reset (attributes a caller added dropped), snapshot and restored by the test
    fixture `fresh_knobs`."""

    _DEFAULTS: dict = {}
    _NAME = ""

    def __init__(self):
        self.reset()

    def reset(self):
        """Every knob back to its default (attributes a caller added are dropped)."""
        self.__dict__.clear()
        self.__dict__.update(self._DEFAULTS)
        return self

    def snapshot(self) -> dict:
        return dict(self.__dict__)

    def restore(self, state: dict):
        self.__dict__.clear()
        self.__dict__.update(state)

    def __repr__(self):
        return f"<triton.knobs.{self._NAME} (tilefarm) {self.__dict__}>"


class _LanguageKnobs(Knobs):
    """`triton.knobs.language`: `default_fp_fusion`, whether a launch or warmup that does not pass
    `enable_fp_fusion` lets a*b+c become one FMA (True, Triton's default); `fp32_default`, the input precision of a
    float32 `tl.dot` that names none (None: TRITON_F32_DEFAULT, else "tf32"; `fp32_default()`). Set them before
    a kernel's first launch: a kernel already compiled is not compiled again for them (as in Triton)."""

    _DEFAULTS = {"default_fp_fusion": True, "fp32_default": None}
    _NAME = "language"


language_knobs = _LanguageKnobs()


def fp32_default() -> str | None:
    """triton.knobs.language.fp32_default (TRITON_F32_DEFAULT where the program sets none): the input precision of
    a float32 `tl.dot` without `input_precision`, as in Triton; None for the default, "tf32"."""
    import os

    return language_knobs.fp32_default or os.environ.get("TRITON_F32_DEFAULT") or None
