"""The README's path from a user's kernel file to a table: configs/examples/scaled_add.{py,yaml}."""
import os
import shutil

from typer.testing import CliRunner

from farm.cli.main import app

HERE = os.path.dirname(os.path.abspath(__file__))
EX = os.path.join(HERE, "..", "..", "configs", "examples")


def test_user_kernel_example(tmp_path):
    for f in ("scaled_add.py", "scaled_add.yaml"):
        shutil.copy(os.path.join(EX, f), tmp_path / f)
    cfg = tmp_path / "scaled_add.yaml"
    cfg.write_text(cfg.read_text().replace("store: ../../.tilefarm/farm.db", f"store: {tmp_path / 'farm.db'}"))
    r = CliRunner().invoke(app, ["run", str(cfg), "--local", "--format", "csv"])
    assert r.exit_code == 0, r.output
    assert "6 validated" in r.output, r.output
