"""Per-pass IR text tests: each tests/passes/<pass>/<case>.tir is IR text in, the pass, IR text out.

A case file holds the input function, then a line `// expect:`, then the function the pass must leave (both in
the printer's form, compiler/ir/printer.py; `//` comments anywhere). An optional first line `// options: k=v ...`
gives Options fields (ints, True/False, strings). The input is parsed and verified, the pass (the entry of
compiler.passes.PIPELINE named like the folder) runs alone, the result is verified -- a failure names the pass --
and printed; it must equal the expected text printed the same way (so the value numbering is the printer's).
"""
from __future__ import annotations

import glob
import os

import pytest

from compiler.ir.parser import parse_module
from compiler.ir.printer import print_module
from compiler.ir.verify import verify
from compiler.options import Options
from compiler.passes import PIPELINE

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = sorted(glob.glob(os.path.join(HERE, "*", "*.tir")))
PASSES = dict(PIPELINE)


def _options(text):
    first = text.splitlines()[0] if text else ""
    kw = {}
    if first.startswith("// options:"):
        for item in first.split(":", 1)[1].split():
            k, v = item.split("=", 1)
            kw[k] = {"True": True, "False": False}.get(v, int(v) if v.lstrip("-").isdigit() else v)
    return Options(**kw)


def split_case(path):
    with open(path) as f:
        text = f.read()
    if "\n// expect:\n" not in text:
        raise AssertionError(f"{path}: no '// expect:' line")
    given, expected = text.split("\n// expect:\n", 1)
    return _options(text), given, expected


def run_case(path):
    """(printed output, printed expectation) of one case."""
    pass_name = os.path.basename(os.path.dirname(path))
    options, given, expected = split_case(path)
    module = parse_module(given)
    verify(module, "as given (the case's input)")
    module = PASSES[pass_name](module, options)
    verify(module, f"after pass {pass_name}")
    return print_module(module), print_module(parse_module(expected))


def test_every_pass_folder_names_a_pass():
    folders = {os.path.basename(os.path.dirname(p)) for p in CASES}
    assert folders <= set(PASSES), folders - set(PASSES)
    assert len(CASES) >= 30


@pytest.mark.parametrize("path", CASES, ids=lambda p: os.path.relpath(p, HERE)[:-4])
def test_pass_case(path):
    got, want = run_case(path)
    assert got == want, f"\n--- expected\n{want}--- got\n{got}"
