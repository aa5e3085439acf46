"""Suite-wide test setup: gpu-marked tests skip, saying why, when no NVIDIA GPU is usable; the IR verifier runs
before and after every pass of every compile (TILEFARM_VERIFY_IR, compiler/passes/__init__.py)."""
import os

import pytest

os.environ.setdefault("TILEFARM_CACHE_DIR", os.path.join(os.environ.get("TMPDIR", "/tmp"), "tilefarm-test-cache"))
os.environ.setdefault("TILEFARM_VERIFY_IR", "1")
# The suite's cache outlives the run (later runs of the same tree reuse it); every tree's entries are new keys, so
# bound it below the default, for machines whose /tmp is small.
os.environ.setdefault("TILEFARM_CACHE_MAX_SIZE", "2G")


def pytest_configure(config):
    import compiler.passes

    compiler.passes.VERIFY = os.environ["TILEFARM_VERIFY_IR"] not in ("", "0")


def _gpu_reason():
    try:
        from compiler.runtime import gpu_available
    except Exception as e:  # pragma: no cover - runtime missing entirely
        return f"compiler.runtime unavailable: {e}"
    ok, reason = gpu_available()
    return None if ok else reason


def pytest_collection_modifyitems(config, items):
    gpu_items = [i for i in items if "gpu" in i.keywords]
    if not gpu_items:
        return
    reason = _gpu_reason()
    if reason is None:
        return
    skip = pytest.mark.skip(reason=f"needs an NVIDIA GPU: {reason}")
    for item in gpu_items:
        item.add_marker(skip)


def skip_reasons(reports):
    """[(count, reason)] of skipped test reports, one entry per distinct reason, most frequent first. A reason is
    what the skip said (its "file:line: " prefix dropped), so 1,300 GPU tests skipped for want of a GPU are one
    line, not a screen of them."""
    counts: dict = {}
    for rep in reports:
        longrepr = getattr(rep, "longrepr", None)
        reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
        reason = reason[len("Skipped: "):] if reason.startswith("Skipped: ") else reason
        counts[reason] = counts.get(reason, 0) + 1
    return sorted(((n, r) for r, n in counts.items()), key=lambda x: (-x[0], x[1]))


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    skipped = terminalreporter.stats.get("skipped", [])
    if not skipped:
        return
    terminalreporter.section("skipped, by reason")
    for n, reason in skip_reasons(skipped):
        terminalreporter.write_line(f"{n:6d}  {reason}")


@pytest.fixture
def snapshot(monkeypatch):
    """scripts/ptx_snapshot.py with this process's environment and kernel caches restored afterwards."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    monkeypatch.syspath_prepend(os.path.join(root, "scripts"))
    import compiler.compile as C

    import ptx_snapshot as P

    for k in P._code_env():
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("TILEFARM_CACHE", "0")
    monkeypatch.setattr(C, "_mem_cache", {})
    monkeypatch.setattr(C, "_disk", False)  # no disk cache either (the process may have opened one already)
    return P
