"""Provenance in every row: a real workload compiled by `farm run` (no GPU) stores its kernel's registers, spills,
shared memory, blocks per SM and ptxas release; `farm report --details` shows them, `--format json` and csv carry
them."""
import csv
import io
import json

import pytest
from typer.testing import CliRunner

from compiler.codegen.ptx import find_ptxas
from farm.cli.main import app

runner = CliRunner()


@pytest.mark.skipif(find_ptxas() is None, reason="ptxas not installed (nvidia-cuda-nvcc)")
def test_compiled_rows_carry_kernel_resources(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("name: prov\nstore: farm.db\nworkloads:\n  - workload: vector_add\n"
                   "    params: {N: [4096], dtype: [float32]}\n    meta: {BLOCK: [256, 8192], num_warps: [4]}\n")
    r = runner.invoke(app, ["run", str(cfg), "--local", "--compile-only", "--format", "none"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["report", "latest", "--store", str(tmp_path / "farm.db"), "--format", "json"])
    assert r.exit_code == 0, r.output
    rows = json.loads(r.stdout)["results"]
    assert len(rows) == 2
    small, big = sorted(rows, key=lambda x: x["meta"]["BLOCK"])
    for row in rows:
        assert row["status"] == "compiled" and row["ptxas_version"][0].isdigit()
        assert row["provenance"]["regs"] == row["regs"] > 0 and row["spill_stores"] == 0
        assert row["blocks_per_sm"] >= 1 and row["shared_bytes"] is not None
    assert big["regs"] > small["regs"] and big["blocks_per_sm"] < small["blocks_per_sm"]
    r = runner.invoke(app, ["report", "latest", "--store", str(tmp_path / "farm.db"), "--details"])
    assert r.exit_code == 0, r.output
    assert "regs" in r.output and "blocks/SM" in r.output and big["ptxas_version"] in r.output
    assert f" {big['regs']} " in r.output
    r = runner.invoke(app, ["report", "latest", "--store", str(tmp_path / "farm.db")])
    assert "blocks/SM" not in r.output  # only with --details
    r = runner.invoke(app, ["report", "latest", "--store", str(tmp_path / "farm.db"), "--format", "csv"])
    got = list(csv.DictReader(io.StringIO(r.stdout)))
    assert sorted(int(x["regs"]) for x in got) == sorted([small["regs"], big["regs"]])
