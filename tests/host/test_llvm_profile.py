"""scripts/llvm_profile.py reads LLVM's pass timing reports: both shapes LLVM writes (a system-time column or none) and
the module pipeline's report that lists every pass twice."""
from __future__ import annotations

import importlib.util
import os

import pytest

_PATH = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "llvm_profile.py")


@pytest.fixture(scope="module")
def lp():
    spec = importlib.util.spec_from_file_location("llvm_profile_under_test", _PATH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


_HEAD = """===-------------------------------------------------------------------------===
                          Pass execution timing report
===-------------------------------------------------------------------------===
  Total Execution Time: 0.0834 seconds (0.1684 wall clock)

"""


def test_back_end_report_with_system_column(lp):
    rep = _HEAD + """   ---User Time---   --System Time--   --User+System--   ---Wall Time---  --- Name ---
   0.0381 ( 47.2%)   0.0000 (  0.0%)   0.0381 ( 45.7%)   0.0660 ( 39.2%)  Straight line strength reduction
   0.0138 ( 17.1%)   0.0002 (  6.3%)   0.0140 ( 16.7%)   0.0209 ( 12.4%)  NVPTX DAG->DAG Pattern Instruction Selection
   0.0016 (  2.0%)   0.0000 (  0.0%)   0.0016 (  2.0%)   0.0023 (  1.4%)  Early CSE
   0.0010 (  1.0%)   0.0000 (  0.0%)   0.0010 (  1.0%)   0.0013 (  1.0%)  Early CSE #2
   0.0834 (100.0%)   0.0002 (100.0%)   0.0836 (100.0%)   0.1684 (100.0%)  Total
"""
    t = lp._timers(rep)
    assert t["Straight line strength reduction"] == pytest.approx(0.0381)
    assert t["NVPTX DAG->DAG Pattern Instruction Selection"] == pytest.approx(0.0138)
    assert t["Early CSE"] == pytest.approx(0.0026)  # instances merged
    assert "Total" not in t


def test_back_end_report_without_system_column(lp):
    rep = _HEAD + """   ---User Time---   --User+System--   ---Wall Time---  --- Name ---
   0.1161 ( 78.3%)   0.1161 ( 78.3%)   0.3398 ( 82.6%)  Straight line strength reduction
   0.0206 ( 13.9%)   0.0206 ( 13.9%)   0.0401 (  9.8%)  NVPTX DAG->DAG Pattern Instruction Selection
"""
    t = lp._timers(rep)
    assert t["Straight line strength reduction"] == pytest.approx(0.1161)
    assert t["NVPTX DAG->DAG Pattern Instruction Selection"] == pytest.approx(0.0206)


def test_module_pipeline_report_lists_each_pass_twice(lp):
    rep = _HEAD + """   ---User Time---   --System Time--   --User+System--   ---Wall Time---  --- Name ---
   0.0303 ( 32.5%)   0.0000 (  0.0%)   0.0303 ( 32.5%)   0.0561 ( 34.0%)  InstCombinePass
   0.0302 ( 32.5%)   0.0000 (  0.0%)   0.0302 ( 32.4%)   0.0561 ( 33.9%)  InstCombinePass
   0.0073 (  7.9%)   0.0000 (  0.0%)   0.0073 (  7.8%)   0.0090 (  5.0%)  EarlyCSEPass
   0.0073 (  7.9%)   0.0000 (  0.0%)   0.0073 (  7.8%)   0.0090 (  5.0%)  EarlyCSEPass
"""
    t = lp._timers(rep)
    assert t["InstCombinePass"] == pytest.approx(0.03025)
    assert t["EarlyCSEPass"] == pytest.approx(0.0073)


def test_only_the_first_table(lp):
    rep = _HEAD + """   ---User Time---   --User+System--   ---Wall Time---  --- Name ---
   0.0100 ( 50.0%)   0.0100 ( 50.0%)   0.0100 ( 50.0%)  Straight line strength reduction
""" + _HEAD + """   ---User Time---   --User+System--   ---Wall Time---  --- Name ---
   0.5000 ( 50.0%)   0.5000 ( 50.0%)   0.5000 ( 50.0%)  Straight line strength reduction
"""
    assert lp._timers(rep)["Straight line strength reduction"] == pytest.approx(0.01)
