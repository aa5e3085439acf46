"""`farm tune --budget`: what parse_budget reads and refuses (the table in docs/DEPENDENCIES.md, ours column)."""
import pytest

from farm import FarmError
from farm.tune import parse_budget


@pytest.mark.parametrize("text,seconds", [("60s", 60), ("2m", 120), ("1h", 3600), ("90", 90), ("500ms", 0.5),
                                          (" 2M ", 120), ("1.5m", 90), (None, None)])
def test_reads(text, seconds):
    assert parse_budget(text) == seconds


@pytest.mark.parametrize("text", ["-5s", "0", "nan", "inf", "1h30m", "1.5 hours", "soon", ""])
def test_refuses_with_the_flag_named(text):
    with pytest.raises(FarmError, match="--budget"):
        parse_budget(text)
