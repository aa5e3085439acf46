"""On PYTHONPATH of the external suite's test processes (scripts/external_suite.py puts it there): a Python
process such a test starts (a helper script run with sys.executable) gets `triton` resolved to this project's
compiler too."""
import os

if os.environ.get("TILEFARM_SUITE_COMPAT", "1") != "0":
    import extsuite.boot  # noqa: F401
