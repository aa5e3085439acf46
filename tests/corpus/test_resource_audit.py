"""scripts/resource_audit.py: the PTX liveness count, our shared-memory peak, the cause rules, the verdicts; and one
corpus kernel end to end (both compilers, ptxas) where Triton and ptxas are there."""
import importlib.util
import json
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts"))

import resource_audit as R  # noqa: E402

PTX = """
.visible .entry k(
	.param .u64 k_param_0
)
.reqntid 128
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<8>;
	.reg .b64 	%rd<4>;
	ld.param.b64 	%rd1, [k_param_0];
	mov.u32 	%r1, %tid.x;
	mul.wide.u32 	%rd2, %r1, 4;
	add.s64 	%rd3, %rd1, %rd2;
	ld.global.v2.b32 	{%r2, %r3}, [%rd3];
	setp.lt.u32 	%p1, %r1, 64;
	@%p1 bra 	$L__BB0_2;
	add.s32 	%r4, %r2, %r3;
	st.global.b32 	[%rd3], %r4;
$L__BB0_2:
	st.global.b32 	[%rd3], %r2;
	ret;
}
"""


def test_ptx_pressure_counts_64_bit_values_twice_and_follows_branches():
    got = R.ptx_pressure(PTX)
    # after the load: %rd3 (2), %r2, %r3, %r1 (until the compare) -> 5 live, predicates not counted
    assert got["peak"] == 5
    assert got["kinds"]["ld.global"] == 2 and got["kinds"]["64-bit address"] == 2


def test_ptx_counts():
    c = R.ptx_counts(PTX)
    assert c["ld.global"] == 1 and c["ld.global elems"] == 2 and "bar.sync" not in c


def test_smem_peak_stacks_scratch_over_a_live_ring_and_drops_it_after_its_loop():
    ring = {"use": "ring", "bytes": 1000, "base": 0}
    conv_in = {"use": "conversion", "bytes": 500, "base": 1000}  # inside the ring's loop
    conv_after = {"use": "conversion", "bytes": 1200, "base": 0}  # after it: the ring is gone
    got = R.smem_peak([ring, conv_in, conv_after])
    assert got["bytes"] == 1000 + 512 and [u["use"] for u in got["uses"]] == ["ring", "conversion"]
    got = R.smem_peak([ring, conv_after, {"use": "conversion", "bytes": 10, "base": 0}])
    assert got["bytes"] == 1200 and [u["use"] for u in got["uses"]] == ["conversion"]


def _tri(buffers=(), scratch=(), total=0):
    top = max((b["offset"] + b["bytes"] for b in buffers), default=0)
    return {"alloc": {"total": total, "buffers": list(buffers), "scratch": list(scratch), "buffer_bytes": top,
                      "scratch_bytes": max(0, total - top) if scratch else 0}}


def test_shared_cause_rules():
    ring = {"use": "ring", "bytes": 81920, "base": 0,
            "ring": {"stages": 4, "stage_bytes": 20480, "tiles": [[16, 128], [128, 64]], "ebytes": [2, 2]}}
    tri = _tri([{"shape": [3, 16, 128], "type": "f16", "bytes": 12288, "offset": 0, "stages": 3},
                {"shape": [3, 128, 64], "type": "f16", "bytes": 49152, "offset": 12288, "stages": 3}], total=61440)
    cls, det = R.shared_cause({"peak": {"uses": [ring]}}, tri, {"shared": 81920}, {"shared": 61440})
    assert cls == "ring: more stages" and "4 x 20.0 KiB" in det
    conv = {"use": "conversion", "bytes": 16400, "base": 0, "tile": "4096 float"}
    tri = _tri(scratch=[{"op": "ttg.convert_layout", "offset": 0, "tile": "4096 f32"}], total=4096)
    assert R.shared_cause({"peak": {"uses": [conv]}}, tri, {"shared": 16400}, {"shared": 4096})[0] == \
        "conversion scratch: whole tile"
    tri = _tri(scratch=[{"op": "ttg.convert_layout", "offset": 0, "tile": "4096 f32"}], total=16384)
    assert R.shared_cause({"peak": {"uses": [conv]}}, tri, {"shared": 16400}, {"shared": 16384})[0] == \
        "conversion padding"
    assert R.shared_cause({"peak": {"uses": [conv]}}, _tri(total=0), {"shared": 16400}, {"shared": 0})[0] == \
        "conversion Triton avoids"


def test_verdicts():
    row = {"name": "x", "grid": 132, "ours": {"blocks_per_sm": 1}, "triton": {"blocks_per_sm": 2}, "timing": None}
    assert R.verdict(row).startswith("moot")
    row["grid"] = 4096
    assert R.verdict(row) == "untimed"
    row["timing"] = {"ratio": 1.1}
    assert R.verdict(row) == "costs (1.10x)"
    row["timing"] = {"ratio": 0.5}
    assert R.verdict(row) == "pays (0.50x)"
    row["ours"]["blocks_per_sm"] = 2
    assert R.verdict(row) == "no block lost"


def test_notes_name_corpus_kernels():
    import _bench_host_corpus as BC

    names = set(BC.case_files())
    assert set(R.NOTES) <= names and set(R.EVIDENCE) <= set(R.NOTES)
    assert all(isinstance(v, tuple) and len(v) == 3 for v in R.NOTES.values())


def _can_run():
    if importlib.util.find_spec("triton") is None:
        return False
    from compiler.codegen.ptx import find_ptxas

    return find_ptxas() is not None


@pytest.mark.skipif(not _can_run(), reason="needs Triton 3.6 and ptxas")
@pytest.mark.parametrize("name", ["rope_interleaved_f16",
                                  # a wgmma dot whose operand goes to scratch: smem_begin with its byte range
                                  "rope_fused_causal_attn_f16"])
def test_one_kernel_end_to_end(name, tmp_path, monkeypatch):
    for var in ("TILEFARM_CACHE", "TRITON_CACHE_DIR"):  # main() sets them: restored afterwards
        monkeypatch.setenv(var, os.environ.get(var, ""))
    monkeypatch.setattr(sys, "argv", ["resource_audit.py", name, "--out", str(tmp_path),
                                      "--timings", str(tmp_path / "none")])
    R.main()
    doc = json.load(open(tmp_path / "resources.json"))
    (row,) = doc["rows"]
    assert row["name"] == name and "error" not in row, row.get("error")
    assert row["ours"]["registers"] and row["triton"]["registers"] and row["grid"]
    if name == "rope_interleaved_f16" and row["ours"]["shared"] > row["triton"]["shared"]:
        assert row["shared_cause"] == "conversion Triton avoids"
    assert f"| {name} |" in (tmp_path / "resources.md").read_text()
