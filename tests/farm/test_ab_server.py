"""farm/ab_server.py as `farm gate` drives it: every bench request carries the client's timing (farm.timing.AB),
and the current checkout's server still drives a tree from before farm.worker was split into modules."""
import json
import os
import subprocess
import sys

import pytest

from farm import gate as G
from farm.config import GateConfig
from farm.timing import AB

from farm_testing import REPO, child_env

SERVER = REPO / "farm" / "ab_server.py"


def _job(tree):
    return {"key": "0" * 64, "idx": 0, "workload": f"{tree}/tests/farm/fake_workloads.py::fake_vec",
            "name": "fake_vec", "params": {"N": 64, "dtype": "float32"}, "meta": {"mode": "ok", "BLOCK": 64}}


def _talk(tree, requests):
    env = child_env(FARM_FORCE_NO_GPU="1", PYTHONPATH=str(tree))
    r = subprocess.run([sys.executable, str(SERVER)], cwd=tree, env=env, capture_output=True, text=True, timeout=300,
                       input="".join(json.dumps(q) + "\n" for q in requests))
    return [json.loads(line) for line in r.stdout.splitlines()]


def test_a_bench_request_must_carry_its_timing():
    out = _talk(REPO, [{"op": "load", "id": "a", "job": _job(REPO)},
                       {"op": "bench", "id": "a", "rep_ms": 2},
                       {"op": "bench", "id": "a", **AB.model_copy(update={"rep_ms": 2}).bench_request()}])
    assert out[0]["ready"] and out[1] == {"ok": True}
    assert "without warmup_ms, flush_l2" in out[2]["error"]
    assert len(out[3]["samples"]) >= 3


def test_gate_sends_the_ab_preset(store, monkeypatch):
    sent = []
    ab = G.ABRemeasure(store, GateConfig(ab_rounds=2, ab_rep_ms=7))
    monkeypatch.setattr(ab, "_load", lambda base, new: ["A", "B"])
    monkeypatch.setattr(ab, "_ask", lambda srv, req: sent.append((srv, req)) or {"samples": [1.0]})
    monkeypatch.setattr(store, "run", lambda run_id: {"options": {"flush_l2": False}})
    assert ab({"run_id": 1}, {"run_id": 2}) == ([1.0, 1.0], [1.0, 1.0])
    assert [s for s, _ in sent] == ["A", "B", "B", "A"]
    assert all(req == {"op": "bench", "id": req["id"], "warmup_ms": AB.warmup_ms, "rep_ms": 7, "flush_l2": False}
               for _, req in sent)


def _pre_split_commit():
    """The commit before farm/machine.py was added (or HEAD while it is not committed yet)."""
    def git(*args):
        return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True, timeout=60)
    if git("rev-parse", "--git-dir").returncode:
        return None
    added = git("log", "--diff-filter=A", "--format=%H", "--", "farm/machine.py").stdout.split()
    return f"{added[-1]}^" if added else "HEAD"


def test_the_server_drives_a_tree_from_before_the_split(tmp_path):
    commit = _pre_split_commit()
    if commit is None:
        pytest.skip("not a git checkout: no older tree to extract")
    tree = tmp_path / "old"
    tree.mkdir()
    archive = subprocess.run(["git", "-C", str(REPO), "archive", "--format=tar", commit, "farm", "workloads", "compiler",
                              "tests/farm/fake_workloads.py"], capture_output=True, timeout=120)
    assert archive.returncode == 0, archive.stderr
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True, timeout=120)
    if (tree / "farm" / "machine.py").exists():
        pytest.skip(f"{commit} already has the split layout")
    out = _talk(tree, [{"op": "load", "id": "a", "job": _job(tree)},
                       {"op": "bench", "id": "a", **AB.model_copy(update={"rep_ms": 2}).bench_request()},
                       {"op": "launch", "id": "a"}])
    assert out[0]["ready"] and out[1] == {"ok": True}, out
    assert len(out[2]["samples"]) >= 3 and out[3]["median_us"] > 0
    assert os.fspath(tree) not in str(REPO)
