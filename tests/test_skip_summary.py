"""The suite reports skips once per reason (tests/conftest.py), not one line per skipped test."""
import subprocess
import sys
import textwrap

from .conftest import skip_reasons


class _Rep:
    def __init__(self, reason, where="tests/x.py"):
        self.longrepr = (where, 3, f"Skipped: {reason}")


def test_skip_reasons_are_grouped_and_counted():
    reps = [_Rep("needs an NVIDIA GPU: none"), _Rep("needs an NVIDIA GPU: none", "tests/y.py"), _Rep("no torch")]
    assert skip_reasons(reps) == [(2, "needs an NVIDIA GPU: none"), (1, "no torch")]


def test_a_run_prints_each_skip_reason_once(tmp_path):
    (tmp_path / "conftest.py").write_text("from tests.conftest import pytest_terminal_summary  # noqa: F401\n")
    (tmp_path / "test_k.py").write_text(textwrap.dedent("""
        import pytest

        @pytest.mark.parametrize("i", range(5))
        def test_a(i):
            pytest.skip("needs an NVIDIA GPU: none here")

        def test_b():
            pytest.skip("needs torch")
    """))
    import os

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
                         capture_output=True, text=True, cwd=root, env={**os.environ, "PYTHONPATH": root}).stdout
    assert "skipped, by reason" in out
    assert out.count("needs an NVIDIA GPU: none here") == 1 and "     5  needs an NVIDIA GPU: none here" in out
    assert out.count("needs torch") == 1
