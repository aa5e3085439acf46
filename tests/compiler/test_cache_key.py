"""The cache key is made in one place (compiler.compile.cache_key) from everything that changes the output: the
options (with the environment switches folded into them), the kernel, and the toolchain's versions."""
from __future__ import annotations

import ast
import dataclasses
import os
import warnings

import numpy as np
import pytest

import compiler
import compiler.compile as C
import compiler.language as tl
from compiler.codegen.ptx import find_ptxas
from compiler.options import Options

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _matmul(target="sm_90", nw=8, **over):
    from workloads.matmul import kernel as MK

    a = np.zeros((256, 256), np.float16)
    bias = np.zeros(1, np.float32)
    return MK.matmul_kernel.warmup(a, a, a, bias, 256, 256, 256, 256, 1, 256, 1, 256, 1, grid=(1,), target=target,
                                   BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, EPILOGUE="none",
                                   PRECISION="ieee", num_warps=nw, num_stages=3, **over)


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    """A disk cache of the test's own and an empty in-memory cache (restored after)."""
    monkeypatch.setenv("TILEFARM_CACHE_DIR", str(tmp_path))
    for var in ("TILEFARM_NO_WGMMA", "TILEFARM_PTXAS", "TILEFARM_EXPERIMENTS"):
        monkeypatch.delenv(var, raising=False)
    find_ptxas.cache_clear()
    monkeypatch.setattr(C, "_mem_cache", {})
    monkeypatch.setattr(C, "_disk", None)
    monkeypatch.setattr(C, "_versions", {})
    yield tmp_path
    find_ptxas.cache_clear()  # looked up again under the environment the test leaves


def test_no_wgmma_is_part_of_the_key(fresh, monkeypatch):
    """TILEFARM_NO_WGMMA=1 builds mma.sync code for sm_90: it must not be served the wgmma kernel cached without
    it (the key used to leave it out), nor the other way round, in memory or on disk."""
    plain = _matmul()
    monkeypatch.setenv("TILEFARM_NO_WGMMA", "1")
    mma = _matmul()
    assert plain.key != mma.key
    assert "wgmma.mma_async" in plain.asm["ptx"] and plain.metadata["target"] == "sm_90a"
    assert "wgmma" not in mma.asm["ptx"] and "mma.sync.aligned" in mma.asm["ptx"]
    assert mma.metadata["target"] == "sm_90"
    monkeypatch.setattr(C, "_mem_cache", {})  # a new process: only the disk cache
    assert _matmul().key == mma.key and "wgmma" not in _matmul().asm["ptx"]
    monkeypatch.setenv("TILEFARM_NO_WGMMA", "0")
    assert _matmul().asm["ptx"] == plain.asm["ptx"]


@pytest.mark.parametrize("field,present,absent", [("debug_no_wgmma", "mma.sync.aligned", "wgmma"),
                                                  ("debug_no_async_copy", "wgmma.mma_async", "cp.async")])
def test_debug_switches_are_options(field, present, absent):
    """debug_no_wgmma / debug_no_async_copy are Options fields (they were read with getattr from an Options that
    had neither, so nothing could set them): on sm_90a the first lays dots out for mma.sync, the second keeps
    wgmma with the register pipeline instead of the cp.async ring. Both assemble."""
    from compiler.codegen import compile_function
    from compiler.codegen.ptx import ptx_resources
    from workloads.matmul import kernel as MK

    a = np.zeros((256, 256), np.float16)
    mod = MK.matmul_kernel.lower(a, a, a, np.zeros(1, np.float32), 256, 256, 256, 256, 1, 256, 1, 256, 1,
                                 BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, EPILOGUE="none", PRECISION="ieee")
    opts = Options(num_warps=8, num_stages=3, arch="sm_90a", **{field: True})
    ptx = compile_function(mod, opts, cubin=False)["ptx"]
    assert present in ptx and absent not in ptx
    if find_ptxas() is not None:
        assert ptx_resources(ptx, "sm_90a")["spill_stores"] == 0


def _options_names():
    names = {f.name for f in dataclasses.fields(Options)}
    return names | {n for n, v in vars(Options).items() if isinstance(v, property)}


def test_code_reads_only_declared_options():
    """No getattr(options, "name", default) of a name Options does not declare anywhere in compiler/: such a read
    is always the default, a switch nothing can turn."""
    names = _options_names()
    bad = []
    for dirpath, _, files in os.walk(os.path.join(ROOT, "compiler")):
        for f in files:
            if not f.endswith(".py"):
                continue
            path = os.path.join(dirpath, f)
            with open(path) as fh:
                tree = ast.parse(fh.read(), path)
            for node in ast.walk(tree):
                if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "getattr"
                        and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)):
                    continue
                obj = ast.unparse(node.args[0])
                if obj.split(".")[-1] in ("options", "opts") and node.args[1].value not in names:
                    bad.append(f"{os.path.relpath(path, ROOT)}:{node.lineno}: {ast.unparse(node)}")
    assert not bad, "reads of options Options does not declare:\n" + "\n".join(bad)


def test_key_follows_options_and_toolchain(fresh, monkeypatch):
    """compile_kernel's key is cache_key's: it changes with an option and with every part of the toolchain."""
    base = _matmul()
    assert base.key == _matmul().key
    assert _matmul(debug=True).key != base.key
    real = C.toolchain()
    assert set(real) >= {"compiler", "llvmlite", "ptxas", "libdevice"} and real["llvmlite"]
    for part in ("compiler", "llvmlite", "ptxas", "libdevice"):
        monkeypatch.setattr(C, "toolchain", lambda part=part: {**real, part: real[part] + "-other"})
        monkeypatch.setattr(C, "_mem_cache", {})
        assert _matmul().key != base.key, part
    monkeypatch.setattr(C, "toolchain", lambda: real)
    monkeypatch.setattr(C, "_mem_cache", {})
    assert _matmul().key == base.key


def test_ptxas_release_is_in_the_key(fresh, monkeypatch):
    """The assembler's release (its --version line) is part of the key, asked once per file: another release
    at the same name is another key; the answer is kept beside the disk cache for later processes."""
    fake = fresh / "ptxas"

    def release(v):
        fake.write_text(f"#!/bin/sh\necho 'ptxas: NVIDIA (R) Ptx optimizing assembler'\n"
                        f"echo 'Cuda compilation tools, release {v}, V{v}.1'\n")
        fake.chmod(0o755)
        os.utime(fake, ns=(10**18 + int(v.replace(".", "")), 10**18 + int(v.replace(".", ""))))

    release("98.0")
    monkeypatch.setenv("TILEFARM_PTXAS", str(fake))
    find_ptxas.cache_clear()  # the process looks its assembler up once
    assert C.toolchain()["ptxas"] == "Cuda compilation tools, release 98.0, V98.0.1"
    k1 = _matmul().key
    release("99.0")  # same path, another release
    monkeypatch.setattr(C, "_mem_cache", {})
    assert C.toolchain()["ptxas"] == "Cuda compilation tools, release 99.0, V99.0.1"
    assert _matmul().key != k1
    assert "release 99.0" in (fresh / "toolchain.json").read_text()
    monkeypatch.delenv("TILEFARM_PTXAS")
    find_ptxas.cache_clear()
    if find_ptxas() is not None:
        assert "release" in C.toolchain()["ptxas"]


def test_retired_switch_variable_warns(fresh, monkeypatch):
    monkeypatch.setenv("TILEFARM_EXPERIMENTS", "qk_ahead,retired-for-this-test")
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        _matmul()
    assert any("TILEFARM_EXPERIMENTS" in str(w.message) and "EXPERIMENTS.md" in str(w.message) for w in got)


SCALE = tl.constexpr(3)


@compiler.jit
def _scaled(X):
    tl.store(X + tl.arange(0, 16), tl.load(X + tl.arange(0, 16)) * SCALE)


@pytest.fixture(params=["constexpr", "plain_with_switch"])
def scale_of(request, monkeypatch):
    """How the module constant is made: tl.constexpr(v) (what a kernel may read), or a plain int, which a kernel
    reads only under TRITON_ALLOW_NON_CONSTEXPR_GLOBALS=1 (as in Triton); both are part of the kernel."""
    global SCALE
    if request.param == "constexpr":
        yield tl.constexpr
    else:
        monkeypatch.setenv("TRITON_ALLOW_NON_CONSTEXPR_GLOBALS", "1")
        SCALE = 3
        yield int
    SCALE = tl.constexpr(3)


def test_module_constants_are_part_of_the_kernel(fresh, scale_of):
    """A module-level constant the kernel reads is compiled in as a value: when it changes, the key changes (the
    disk cache of another process does not hand back the old kernel) and this process's launches recompile (the
    interpreter's too) instead of running with the old value."""
    global SCALE
    SCALE = scale_of(3)
    x = np.arange(16, dtype=np.float32)
    key3 = _scaled.cache_key
    ptx3 = _scaled.warmup(x, grid=(1,), target="sm_90").asm["ptx"]
    y = x.copy()
    _scaled[(1,)](y)
    np.testing.assert_array_equal(y, x * 3)
    try:
        SCALE = scale_of(5)
        y = x.copy()
        _scaled[(1,)](y)
        np.testing.assert_array_equal(y, x * 5)
        assert _scaled.cache_key != key3
        assert _scaled.warmup(x, grid=(1,), target="sm_90").asm["ptx"] != ptx3
    finally:
        SCALE = scale_of(3)
    y = x.copy()
    _scaled[(1,)](y)
    np.testing.assert_array_equal(y, x * 3)
    assert _scaled.cache_key == key3


def test_warmup_alone_sees_a_changed_constant(fresh, scale_of):
    """Without a launch between (warmup, a farm compile worker): the key and the compiled code follow the value."""
    global SCALE
    SCALE = scale_of(3)
    x = np.arange(16, dtype=np.float32)
    key3 = _scaled.cache_key
    ptx3 = _scaled.warmup(x, grid=(1,), target="sm_90").asm["ptx"]
    try:
        SCALE = scale_of(6)
        assert _scaled.warmup(x, grid=(1,), target="sm_90").asm["ptx"] != ptx3
        assert _scaled.cache_key != key3
    finally:
        SCALE = scale_of(3)
    assert _scaled.warmup(x, grid=(1,), target="sm_90").asm["ptx"] == ptx3
