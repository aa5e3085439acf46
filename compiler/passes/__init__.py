"""The pass pipeline: an ordered list of (name, fn(module, options) -> module), one "why here" comment each.

The "tile" artifact (golden IR) is the module after the target-independent passes, i.e. after the entries
listed in TARGET_INDEPENDENT; the rest prepare the IR for `compiler.codegen.llvm.emit_llvm`.
"""
from __future__ import annotations

import os

from ..ir.verify import verify
from .assign_layouts import assign_layouts
from .canonicalize import canonicalize, share_small_converts
from .dce import dce, dce_after_layouts
from .fp8_dot import fp8_dots
from .pipeline import pipeline_loads
from .schedule import schedule_loads
from .tensormaps import tensormaps
from .wgmma_loops import wgmma_loops


PIPELINE = [
    # Fold splatted constants, share identical pure ops, drop dead ones: later analyses see each value once.
    ("canonicalize", canonicalize),
    # Drop unused pure ops before layouts are chosen, so dead values cannot force layout conversions.
    ("dce", dce),
    # Rotate the loads of K loops with a dot (num_stages >= 2) so the next tiles load while this one's MMA runs;
    # before layouts, so the carried tiles get the loads' coalesced layouts like any loop-carried value.
    # fp8 dots that run on wgmma take their fp8 operands directly (the frontend's exact fp16 conversions dropped);
    # before the pipeliner, whose copy ring then serves their K-major descriptor loads, and before layouts.
    ("fp8_dots", fp8_dots),
    # in-kernel descriptor accesses TMA cannot serve on this target drop their tensor map, and maps
    # no access uses are not written; before the pipeliner, which rings the loads that keep one as TMA copies, and
    # after fp8_dots, which makes the fp8 dots' operands the loads themselves. A no-op without in-kernel maps.
    ("tensormaps", tensormaps),
    ("pipeline_loads", pipeline_loads),
    # Choose a distributed layout per block value (coalesced anchors, free slices), insert convert_layout where
    # layouts meet; everything after needs layouts and codegen reads them.
    ("assign_layouts", assign_layouts),
    # (A/B `convert_cse_small`) one conversion of a small value per layout, not one per user; before the DCE that
    # drops the copies.
    ("share_small_converts", share_small_converts),
    # Drop what the layout pass left unused (a value recomputed in a new layout leaves its first copy, and any
    # conversion of it, dead): a dead conversion would still cost codegen a shared-memory round trip and barriers.
    ("dce_after_layouts", dce_after_layouts),
    # Move global loads up past the layout conversions inserted above, so loads of one block are all in flight
    # before the first conversion's barrier (which ptxas never moves a load across).
    ("schedule_loads", schedule_loads),
    # Which wgmma dots stay in flight across K-loop iterations and which loops wait for them at their exit: last,
    # on the final op order and layouts; codegen reads its answers instead of deciding (and recording) them itself.
    ("wgmma_loops", wgmma_loops),
]

TARGET_INDEPENDENT = ("canonicalize", "dce")


# Verify the IR (compiler/ir/verify.py) before the first pass and after each one, naming the pass that broke it:
# on in the test suite (tests/conftest.py) and with TILEFARM_VERIFY_IR=1; off otherwise (compile time).
VERIFY = os.environ.get("TILEFARM_VERIFY_IR", "0") not in ("", "0")


def run_pipeline(module, options, upto: str | None = None):
    """Run PIPELINE in order (stopping after the pass named `upto`, if given). The module remembers the last pass
    it went through, so a later call resumes there instead of running the earlier passes again."""
    done = module.meta.get("passes_done")
    started = done is None
    if VERIFY and started:
        verify(module, "from the frontend (before the first pass)")
    for name, fn in PIPELINE:
        if started:
            module = fn(module, options)
            module.meta["passes_done"] = name
            if VERIFY:
                verify(module, f"after pass {name}")
        elif name == done:
            started = True
        if name == upto:
            break
    return module
