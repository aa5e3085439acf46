"""A/B `convert_cse_small` (passes/canonicalize.py `share_small_converts`): conversions of one value to one layout made
once where each holds at most 4 elements a thread. The layout pass converts a value once per user: a fused GPT-J
RoPE + KV write converts its cos / sin rows for each use. The corpus kernel's PTX under both (sm_90a, through ptxas
where installed): fewer shared-memory round trips and barriers with the switch, the same arithmetic; a large tile
(more than 4 elements a thread) is never shared."""
import re

import pytest

from compiler.ir.core import Block, Op
from compiler.ir.types import TensorType, float32
from compiler.passes.canonicalize import _share_small_converts
from compiler.passes.layouts import BlockedLayout
from tests.codegen.test_pending_ab import _corpus, needs_ptxas


@needs_ptxas
def test_rope_row_conversions_shared(monkeypatch):
    d, _ = _corpus("rope_gptj_split_join_kv_write_f16", monkeypatch)
    s, _ = _corpus("rope_gptj_split_join_kv_write_f16", monkeypatch, "convert_cse_small")
    bars = [len(re.findall(r"\bbar(?:rier)?\.sync", p)) for p in (d, s)]
    assert bars[1] < bars[0], bars
    assert s.count("st.shared") < d.count("st.shared")
    assert d.count("fma.rn") == s.count("fma.rn")


def _convert(src, lay):
    return Op("convert_layout", [src], [src.type], {"_layouts": [lay]})


@pytest.mark.parametrize("n, shared", [(512, True), (2048, False)])
def test_only_small_conversions_shared(n, shared):
    """Two conversions of one value to one layout: shared where the layout holds 4 elements a thread (512 over 128
    threads), not where it holds 16 (2048)."""
    src = Op("const", [], [TensorType(float32, (n,))], {"value": 1.0})
    lay = BlockedLayout((1,), (32,), (4,), (0,))
    a, b = _convert(src.result, lay), _convert(src.result, lay)
    use = Op("add", [a.result, b.result], [src.result.type], {"_layouts": [lay]})
    blk = Block.__new__(Block)
    blk.ops = [src, a, b, use]
    mapping: dict = {}
    _share_small_converts(blk, {}, mapping, 4)
    assert (mapping == {b.result.id: a.result}) == shared
