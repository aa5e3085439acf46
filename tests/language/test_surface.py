"""The README's table of Triton's language surface covers every public name of triton.language (where Triton is
installed), and agrees with what compiler.language has: "no" rows name nothing we define, other rows only names
we define. libdevice: every Triton libdevice function is ours unless the README names it as not supported."""
import os
import re
import types

import pytest

import compiler.language as ours
from compiler.language.extra import libdevice as our_libdevice

README = os.path.join(os.path.dirname(__file__), "..", "..", "README.md")


def _table():
    text = open(README).read()
    start = text.index("### Triton's language surface")
    end = text.index("\n### ", start + 10)
    section = text[start:end]
    rows = {}
    for line in section.splitlines():
        if line.startswith("| `tl."):
            names_cell, status = line.strip("|").split("|", 1)
            for n in re.findall(r"`tl\.(\w+)`", names_cell):
                rows[n] = status.strip()
    return section, rows


def test_table_agrees_with_compiler_language():
    _, rows = _table()
    assert len(rows) > 100
    for name, status in rows.items():
        if status.startswith("no"):
            assert not hasattr(ours, name), f"tl.{name} is marked 'no' but compiler.language defines it"
        else:
            assert hasattr(ours, name), f"tl.{name} is marked '{status[:20]}' but compiler.language lacks it"


def test_table_covers_triton_language():
    tl = pytest.importorskip("triton.language", reason="Triton is not installed")
    _, rows = _table()
    # the public names: triton.language's __all__ and whatever else it defines, not its submodules that appear as
    # attributes once something imported them (triton.language.semantic, after a Triton compile in this process)
    exported = set(getattr(tl, "__all__", ()))
    public = [n for n in dir(tl) if not n.startswith("_")
              and (n in exported or not isinstance(getattr(tl, n), types.ModuleType))]
    missing = [n for n in public if n not in rows]
    assert not missing, f"README's language table does not cover: {missing}"


def test_libdevice_covers_triton_libdevice():
    pytest.importorskip("triton.language", reason="Triton is not installed")
    from triton.language.extra import libdevice as tld

    section, _ = _table()
    tail = section[section.index("libdevice: every function"):]
    declared_missing = set(re.findall(r"`(\w+)`", tail.split("(no)")[0]))
    theirs = [n for n in dir(tld) if not n.startswith("_") and callable(getattr(tld, n))]
    missing = [n for n in theirs if not hasattr(our_libdevice, n) and n not in declared_missing]
    assert not missing, f"libdevice functions neither supported nor listed as not supported: {missing}"
    wrong = [n for n in declared_missing if hasattr(our_libdevice, n)]
    assert not wrong, f"listed as not supported but defined: {wrong}"


def _readme_methods():
    text = open(README).read()
    para = text[text.index("Tensor methods: the "):]
    para = para[:para.index("\n\n")]
    listed = set(re.findall(r"`(\w+)\*?`", para.split(" are `x.")[0]))
    count = int(re.match(r"Tensor methods: the (\d+) functions", para).group(1))
    return para, listed, count


def test_readme_tensor_methods_agree_with_compiler_language():
    """Every method the README's paragraph names is a tl function here and a method of our tensor; its count
    (atomic_* standing for the eight atomics) is the number of names."""
    from compiler.frontend.semantic import tensor

    _, listed, count = _readme_methods()
    names = {n for n in listed if n != "atomic_"} | {n for n in dir(ours) if n.startswith("atomic_")}
    assert len(names) == count, (len(names), count)
    for n in names:
        assert hasattr(ours, n) and callable(getattr(tensor, n, None)), n


def test_readme_tensor_methods_cover_triton():
    triton_tl = pytest.importorskip("triton.language", reason="Triton is not installed")
    _, listed, count = _readme_methods()
    theirs = {n for n, v in vars(triton_tl.tensor).items() if not n.startswith("_") and callable(v)}
    # Triton's methods that are also tl functions: what the paragraph lists (the rest, `to` and the logical ones,
    # it names after the list)
    functions = {n for n in theirs if hasattr(triton_tl, n)}
    listed_all = {n for n in listed if n != "atomic_"} | {n for n in functions if n.startswith("atomic_")}
    assert functions == listed_all, (sorted(functions - listed_all), sorted(listed_all - functions))
    assert len(functions) == count
