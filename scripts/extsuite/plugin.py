"""pytest plugin: run a Triton-style test suite with `triton` meaning this project's compiler.

Loaded with `-p extsuite.plugin` (scripts/ on PYTHONPATH; scripts/external_suite.py does it) before any test file
is collected:
- extsuite.boot: `import triton` is compiler.triton_compat in this process, `triton._internal_testing` is ours;
- the fixtures Triton's test suites expect from their conftest: `device` (`--device`, default from
  TILEFARM_SUITE_DEVICE), `fresh_triton_cache`, `fresh_knobs`, `with_allocator`;
- `TILEFARM_SUITE_SAMPLE=N`: keep N tests per file, picked by a hash of their ids (the same N every run);
- `TILEFARM_SUITE_SHARD=i/k`: keep the tests whose id hashes to i modulo k (one of k processes over a file);
- `TILEFARM_SUITE_RECORD=path`: one JSON line per test outcome and per collection error;
- `TILEFARM_SUITE_COMPAT=0`: leave `triton` alone (the installed Triton), to count a file's tests where ours
  cannot collect it;
- `TILEFARM_SUITE_AS_GPU=9.0`: the tests see a GPU of that compute capability (`torch.cuda`'s capability and
  properties, `is_cuda()`), so they take the branches they take on it, while tensors stay on the CPU and every
  launch runs in the interpreter (with TILEFARM_SUITE_CODEGEN, built for that GPU first);
- `TILEFARM_SUITE_CODEGEN=1`: every launch that runs in the interpreter is first compiled by the code generator
  and assembled by ptxas for the GPU (`warmup`, then the cubin), so a kernel the GPU run could not build fails
  here too: what a CPU-only run of the GPU paths can say of the code generator.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile

import pytest

from . import boot  # noqa: F401,E402  (triton is ours from here on)


def pytest_addoption(parser):
    if os.environ.get("TILEFARM_SUITE_DEVICE_OPTION", "1") != "0":  # the suite's own conftest may declare it
        parser.addoption("--device", action="store", default=os.environ.get("TILEFARM_SUITE_DEVICE", "cuda"))


def _check_codegen():
    """Wrap JITFunction.run: compile for the GPU (PTX and cubin) before the interpreter runs the launch."""
    from compiler.jit import JITFunction

    run = JITFunction.run
    if getattr(run, "_tilefarm_codegen", False):
        return

    def checked_run(self, *args, grid, **kwargs):
        opts = {k: v for k, v in kwargs.items() if k != "stream"}
        k = self.warmup(*args, grid=grid, **opts)
        if k is None:  # a knobs.runtime.jit_cache_hook skipped the compile: as on the GPU, nothing is launched
            return None
        if not k.asm["cubin"]:
            raise RuntimeError(f"{self.__name__}: ptxas is missing, the cubin could not be made")
        got = run(self, *args, grid=grid, **kwargs)
        return k if got is None else got  # as on the GPU, the launch returns the compiled kernel (.asm, .name)

    checked_run._tilefarm_codegen = True
    JITFunction.run = checked_run


def _as_gpu(cc: str):
    """torch.cuda answers as a GPU of compute capability `cc` ("9.0") would, tensors and launches staying on the
    CPU: capability, device properties (an H200's 132 SMs and 227 KiB of shared memory per block), device count,
    synchronize (nothing to wait for)."""
    import types

    import torch

    major, minor = (int(x) for x in cc.split("."))
    props = types.SimpleNamespace(name="NVIDIA H200 (as seen by the CPU run)", major=major, minor=minor,
                                  multi_processor_count=132, total_memory=141 << 30,
                                  shared_memory_per_block_optin=232448, warp_size=32)
    torch.cuda.get_device_capability = lambda device=None: (major, minor)
    torch.cuda.get_device_properties = lambda device=None: props
    torch.cuda.get_device_name = lambda device=None: props.name
    torch.cuda.synchronize = lambda device=None: None
    torch.cuda.device_count = lambda: 1
    torch.cuda.current_device = lambda: 0
    os.environ["TILEFARM_ARCH"] = f"sm_{major}{minor}"  # what the compiler builds for, as on that GPU
    from compiler.triton_compat import runtime as rt

    # an H200's figures (its driver's answers): Triton's tests size their tiles by them
    rt._DriverUtils.get_device_properties = lambda self, device=None: {
        "max_shared_mem": 232448, "multiprocessor_count": 132, "sm_clock_rate": 1980000,
        "mem_clock_rate": 2619000, "mem_bus_width": 6144, "warpSize": 32, "max_num_regs": 65536}


def pytest_configure(config):
    if os.environ.get("TILEFARM_SUITE_AS_GPU"):
        _as_gpu(os.environ["TILEFARM_SUITE_AS_GPU"])
    if os.environ.get("TILEFARM_SUITE_CODEGEN") == "1":
        _check_codegen()
    config.addinivalue_line("markers", "interpreter: the test runs under the interpreter too")
    path = os.environ.get("TILEFARM_SUITE_RECORD")
    config._tilefarm_record = open(path, "a", encoding="utf-8") if path else None


def pytest_unconfigure(config):
    f = getattr(config, "_tilefarm_record", None)
    if f is not None:
        f.close()


@pytest.fixture
def device(request):
    try:
        return request.config.getoption("--device")
    except ValueError:
        return os.environ.get("TILEFARM_SUITE_DEVICE", "cuda")


@pytest.fixture
def fresh_triton_cache():
    with tempfile.TemporaryDirectory() as d:
        old = os.environ.get("TILEFARM_CACHE_DIR")
        os.environ["TILEFARM_CACHE_DIR"] = d
        try:
            yield d
        finally:
            if old is None:
                os.environ.pop("TILEFARM_CACHE_DIR", None)
            else:
                os.environ["TILEFARM_CACHE_DIR"] = old


@pytest.fixture
def fresh_knobs():
    """Triton's `fresh_knobs`: the `triton.knobs` object (ours), its settable knobs (`knobs.runtime`'s JIT hooks)
    at their defaults for the test and as they were after it (knobs the test added are dropped)."""
    from compiler.triton_compat.modules import fresh_knobs as scope

    with scope() as knobs:
        yield knobs


@pytest.fixture
def with_allocator():
    from compiler.triton_compat.runtime import get_allocator, set_allocator

    from .internal_testing import default_alloc_fn

    before = get_allocator()
    set_allocator(default_alloc_fn)
    try:
        yield
    finally:
        set_allocator(before)


def _rank(nodeid: str) -> str:
    return hashlib.sha1(nodeid.encode()).hexdigest()


@pytest.hookimpl(trylast=True)  # after -m / -k have deselected theirs
def pytest_collection_modifyitems(session, config, items):
    shard = os.environ.get("TILEFARM_SUITE_SHARD")
    if shard:
        i, k = (int(x) for x in shard.split("/"))
        drop = [it for it in items if int(_rank(it.nodeid)[:8], 16) % k != i]
        if drop:
            config.hook.pytest_deselected(items=drop)
            items[:] = [it for it in items if int(_rank(it.nodeid)[:8], 16) % k == i]
    n = int(os.environ.get("TILEFARM_SUITE_SAMPLE", "0") or 0)
    if n <= 0:
        return
    by_file: dict = {}
    for it in items:
        by_file.setdefault(it.nodeid.split("::")[0], []).append(it)
    keep = set()
    for group in by_file.values():
        keep |= {id(it) for it in sorted(group, key=lambda it: _rank(it.nodeid))[:n]}
    drop = [it for it in items if id(it) not in keep]
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = [it for it in items if id(it) in keep]


def _crash(report) -> tuple[str, str]:
    """(exception type, first line of its message) of a failed report."""
    lr = report.longrepr
    crash = getattr(lr, "reprcrash", None)
    if crash is not None and crash.message:
        msg = crash.message.strip()
    elif isinstance(lr, tuple) and len(lr) == 3:  # a skip: (path, line, reason)
        msg = str(lr[2])
    else:
        text = str(lr or "").strip().splitlines()
        msg = next((ln[2:].strip() for ln in reversed(text) if ln.startswith("E ")), text[-1] if text else "")
    first = msg.splitlines()[0] if msg else ""
    etype, sep, rest = first.partition(": ")
    if sep and etype.replace(".", "").replace("_", "").isalnum() and " " not in etype:
        return etype, rest
    return ("Failed" if first else "?"), first


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Keep the exception's class on the report (its message alone does not always name it: `assert a == b`)."""
    outcome = yield
    rep = outcome.get_result()
    exc = call.excinfo
    if exc is not None and rep.failed:
        t = exc.type
        mod = getattr(t, "__module__", "builtins")
        rep._tilefarm_type = t.__qualname__ if mod in ("builtins", None) else f"{mod}.{t.__qualname__}"


def _write(config, rec):
    f = getattr(config, "_tilefarm_record", None)
    if f is not None:
        f.write(json.dumps(rec) + "\n")
        f.flush()


def pytest_runtest_logreport(report):
    config = getattr(report, "_tilefarm_config", None) or _CONFIG.get("c")
    if config is None:
        return
    if report.when == "call" or report.outcome != "passed":
        outcome = report.outcome
        if report.when != "call" and outcome == "failed":
            outcome = "error"
        if hasattr(report, "wasxfail"):
            outcome = "xfail" if report.skipped else "xpass"
        rec = {"nodeid": report.nodeid, "when": report.when, "outcome": outcome,
               "duration": round(report.duration, 3)}
        if report.outcome != "passed":
            rec["type"], rec["message"] = _crash(report)
            known = getattr(report, "_tilefarm_type", None)
            if known and rec["type"] != known.rsplit(".", 1)[-1] and rec["type"] != known:
                if rec["type"] not in ("Failed", "?"):
                    rec["message"] = f"{rec['type']}: {rec['message']}"
                rec["type"] = known
        _write(config, rec)


def pytest_collectreport(report):
    config = _CONFIG.get("c")
    if config is not None and report.failed:
        rec = {"nodeid": report.nodeid, "when": "collect", "outcome": "error"}
        rec["type"], rec["message"] = _crash(report)
        _write(config, rec)


_CONFIG: dict = {}


def pytest_collection_finish(session):
    """With TILEFARM_SUITE_COLLECT_ONLY=1 (and --collect-only): one record per selected test."""
    if os.environ.get("TILEFARM_SUITE_COLLECT_ONLY") == "1":
        for it in session.items:
            _write(session.config, {"nodeid": it.nodeid, "when": "collect", "outcome": "collected"})


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session):
    _CONFIG["c"] = session.config
