"""`farm --help`, `farm runs` and `farm report` in a fresh interpreter load neither Ray, NumPy, the compiler,
the workloads nor the config's pydantic models (sys.modules checked, not timed). Into a pipe, `farm --help` loads
no rich console and no rich help formatter either, and a command that finds no store does not load SQLAlchemy."""
import json
import subprocess
import sys

import pytest

NEVER = ["ray", "numpy", "compiler", "llvmlite", "workloads", "plotly", "yaml", "farm.config", "farm.worker"]
LIGHT = ["pydantic", "rich.console", "typer.rich_utils", "sqlalchemy"]  # also spared by `--help` into a pipe

PROBE = """
import json, sys
from farm.cli.main import app
code = 0
try:
    app(sys.argv[1:], prog_name="farm")
except SystemExit as e:
    code = e.code
print(json.dumps({"exit": code, "loaded": {n: n in sys.modules for n in %r}}), file=sys.stderr)
"""


def _probe(*args):
    out = subprocess.run([sys.executable, "-c", PROBE % (NEVER + LIGHT), *args], capture_output=True,
                         text=True, timeout=120)
    return json.loads(out.stderr.strip().splitlines()[-1])


def test_help_loads_nothing_heavy():
    r = _probe("--help")
    assert r["exit"] == 0
    assert [n for n, v in r["loaded"].items() if v] == []  # pydantic included: nothing reads a config


def test_missing_store_loads_no_sqlalchemy(tmp_path):
    r = _probe("runs", "--store", str(tmp_path / "none.db"))
    assert r["exit"] == 2 and not r["loaded"]["sqlalchemy"]


@pytest.mark.parametrize("args", [("runs",), ("report", "latest"), ("runs", "--help"), ("report", "--help")])
def test_store_commands_load_nothing_heavy(tmp_path, args):
    from farm.store import Store

    db = tmp_path / "farm.db"
    Store(str(db))  # an empty store: `runs` lists nothing, `report latest` says there is no run
    r = _probe(*args, *(("--store", str(db)) if "--help" not in args else ()))
    assert r["exit"] in (0, 2)  # `report latest` on an empty store: no run, a usage error (exit 2)
    # (typer itself imports pydantic to coerce a command's parameters, so it is not checked here)
    assert [n for n in NEVER if r["loaded"][n]] == []
