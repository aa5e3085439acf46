import pathlib
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


@pytest.fixture(autouse=True)
def _no_database(monkeypatch):
    """Each test starts with no tuning database and no default timer (tests set their own)."""
    import compiler.autotune as _  # noqa: F401  (the function; the module is sys.modules["compiler.autotune"])
    mod = sys.modules["compiler.autotune"]
    monkeypatch.delenv("TILEFARM_TUNING_DB", raising=False)
    mod.set_database(None)
    mod.set_default_timer(None)
    yield
    mod._databases = None
    mod.set_default_timer(None)
