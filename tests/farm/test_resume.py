"""The driver is killed mid-run (SIGKILL, as a crash or a lost terminal would) and the run is resumed."""
import signal
import sqlite3
import subprocess
import sys
import time

import pytest
from typer.testing import CliRunner

from farm.cli.main import app

from farm_testing import child_env, fake_config

pytestmark = pytest.mark.slow


def _count(db):
    if not db.exists():  # connecting would create an empty file, which the farm refuses as a store
        return 0
    try:
        with sqlite3.connect(db, timeout=5) as c:
            return c.execute("SELECT COUNT(*) FROM results").fetchone()[0]
    except sqlite3.OperationalError:  # not created yet
        return 0


def test_driver_killed_then_resumed_nothing_lost_or_duplicated(tmp_path, ray_session):
    cfg = fake_config(tmp_path, modes=("ok", "wrong"), ns=(10, 20, 30, 40, 50, 60), sleep=0.4)
    db = tmp_path / "farm.db"
    address = ray_session.get_runtime_context().gcs_address
    env = child_env()
    proc = subprocess.Popen([sys.executable, "-m", "farm.cli.main", "run", str(cfg), "--address", address],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while _count(db) < 3:
            assert proc.poll() is None, proc.stdout.read().decode()
            assert time.monotonic() < deadline, "the driver stored nothing in 60 s"
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    done_before = _count(db)
    assert 3 <= done_before < 12
    r = CliRunner().invoke(app, ["run", "--resume", "latest", "--store", str(db)])
    assert r.exit_code == 1, r.output  # the six "wrong" jobs are mismatches
    assert "resuming run 1" in r.output and f"{12 - done_before} jobs to run of 12" in r.output
    with sqlite3.connect(db) as c:
        n, distinct = c.execute("SELECT COUNT(*), COUNT(DISTINCT key) FROM results WHERE run_id=1").fetchone()
        planned = c.execute("SELECT COUNT(*) FROM run_jobs WHERE run_id=1").fetchone()[0]
        statuses = dict(c.execute("SELECT status, COUNT(*) FROM results GROUP BY status").fetchall())
        run_status = c.execute("SELECT status FROM runs WHERE id=1").fetchone()[0]
    assert n == distinct == planned == 12
    assert statuses == {"validated": 6, "mismatch": 6}
    assert run_status == "done"
    r = CliRunner().invoke(app, ["run", "--resume", "1", "--store", str(db)])
    assert r.exit_code == 2 and "nothing to resume" in r.output
