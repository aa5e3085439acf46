"""The idiom corpus: kernels written as Triton users write them, each with a float64 reference (issue 16).

Every `workloads/corpus/*.py` (not starting with "_") is a kernel file with `import triton` /
`import triton.language as tl` and a `CASES` list (workloads.corpus._case.Case). `load(compiler)` imports every
file through compiler.triton_compat.load_kernel_file -- "tilefarm" resolves `triton` to our compiler for those
files only, "triton" to the real Triton -- and returns the cases by name.
"""
from __future__ import annotations

import fnmatch
import pathlib

HERE = pathlib.Path(__file__).resolve().parent


def files() -> list[pathlib.Path]:
    return sorted(p for p in HERE.glob("*.py") if not p.name.startswith("_"))


def load(compiler: str = "tilefarm", select=None, errors: dict | None = None, copy: str = "") -> dict:
    """{case name: Case} of every corpus file loaded under `compiler`; `select`: names or globs (any match).
    A file that fails to import under that compiler is recorded in `errors` ({file: message}) when given, else
    the error propagates. `copy` names a separate load of the files (modules, kernels and their compiled
    specializations of their own: an A/B of code-generation switches in one process keeps each variant's)."""
    from compiler.triton_compat import load_kernel_file

    out = {}
    for path in files():
        name = None
        if copy:
            name = "_tf_corpus_" + "".join(ch if ch.isalnum() else "_" for ch in f"{copy}_{compiler}_{path.stem}")
        try:
            mod = load_kernel_file(path, compiler=compiler, module_name=name)
        except Exception as e:  # noqa: BLE001
            if errors is None:
                raise
            errors[path.name] = f"{type(e).__name__}: {e}"
            continue
        for case in getattr(mod, "CASES", []):
            if case.name in out:
                raise ValueError(f"corpus case {case.name!r} declared twice ({path.name})")
            case.file = path.name
            out[case.name] = case
    if select:
        pats = [s for s in select if s]
        out = {n: c for n, c in out.items() if any(fnmatch.fnmatchcase(n, s) for s in pats)}
    return out
