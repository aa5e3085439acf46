"""Host-side compile speed without a change of output: the cyclic collector paused for one compile (and left as it
was found), the A/B switches of the LLVM pipeline (TILEFARM_AB) in the cache key and in llvm_to_ptx."""
from __future__ import annotations

import gc
import re

import numpy as np
import pytest

import compiler.compile as C
from compiler.codegen import ptx as P


def _kernel_file(tmp_path, body="    tl.store(Y + o, tl.load(X + o, mask=o < N) * 2.0, mask=o < N)\n"):
    src = tmp_path / "gck.py"
    src.write_text("import compiler\nimport compiler.language as tl\n\n\n@compiler.jit\n"
                   "def scale(X, Y, N, BLOCK: tl.constexpr):\n"
                   "    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n" + body)
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"gck_{abs(hash(body))}", src)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.scale


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    monkeypatch.setenv("TILEFARM_CACHE", "0")
    monkeypatch.delenv("TILEFARM_AB", raising=False)
    monkeypatch.setattr(C, "_mem_cache", {})
    monkeypatch.setattr(C, "_disk", None)
    yield tmp_path


def _shared_lines(ptx):
    return "\n".join(ln for ln in ptx.splitlines() if ".shared" in ln and ("ld." in ln or "st." in ln))


def _warm(k, n=256):
    x = np.arange(n, dtype=np.float32)
    return k.warmup(x, x, n, grid=(1,), target="sm_90", BLOCK=128)


@pytest.mark.parametrize("enabled", [True, False])
def test_collector_paused_during_a_compile_and_restored(fresh, monkeypatch, enabled):
    seen = []
    real = C.lower

    def spy(*a, **k):
        seen.append(gc.isenabled())
        return real(*a, **k)

    monkeypatch.setattr(C, "lower", spy)
    was = gc.isenabled()
    try:
        (gc.enable if enabled else gc.disable)()
        ck = _warm(_kernel_file(fresh))
        assert seen == [False]  # the compile ran with the collector off
        assert gc.isenabled() is enabled  # and left it as it found it
        assert "ld.global" in ck.asm["ptx"]
    finally:
        (gc.enable if was else gc.disable)()


def test_collector_restored_after_a_failed_compile(fresh):
    from compiler.errors import CompilationError

    k = _kernel_file(fresh, body="    tl.store(Y + o, tl.no_such_function(o))\n")
    assert gc.isenabled()
    with pytest.raises(CompilationError):
        _warm(k)
    assert gc.isenabled()


def test_collector_pause_frees_the_compiles_garbage(fresh):
    """The compile's cyclic garbage (llvmlite's IR module) is collected at its end, not left for later."""
    import llvmlite.ir as lir

    k = _kernel_file(fresh)
    _warm(k)  # modules imported, caches warm
    gc.collect()
    C._mem_cache.clear()
    _warm(k, n=512)
    left = [o for o in gc.get_objects() if isinstance(o, lir.Module)]
    assert left == []


def test_ab_switch_parses_a_comma_list(monkeypatch):
    monkeypatch.setenv("TILEFARM_AB", "other, short_ptr")
    assert P.ab_switch("short_ptr") and P.ab_switch("other") and not P.ab_switch("llvm")
    monkeypatch.setenv("TILEFARM_AB", "")
    assert not P.ab_switch("short_ptr")


def test_ab_switches_are_part_of_the_key(fresh, monkeypatch):
    """A kernel built with an A/B switch must not be served from the cache without it, and the key without any
    switch is the one it always was (no "ab" entry)."""
    k = _kernel_file(fresh)
    plain = _warm(k)
    assert "ab" not in C.toolchain()
    monkeypatch.setenv("TILEFARM_AB", "short_ptr")
    assert C.toolchain()["ab"] == ["short_ptr"]
    lean = _warm(k)
    assert lean.key != plain.key
    monkeypatch.setenv("TILEFARM_AB", " ")
    assert _warm(k).key == plain.key


def test_lean_pipeline_assembles(fresh):
    """Each A/B switch of llvm_to_ptx gives PTX that ptxas accepts, for a kernel with a loop and a libdevice call;
    no switch is the default."""
    k = _kernel_file(fresh, body=("    acc = tl.zeros([BLOCK], tl.float32)\n"
                                  "    for i in range(0, N, BLOCK):\n"
                                  "        acc += tl.load(X + i + o, mask=i + o < N, other=0.0)\n"
                                  "    tl.store(Y + o, tl.math.erf(acc) + tl.sum(acc, 0))\n"))
    ck = _warm(k)
    llir = ck.asm["llir"]
    assert P.llvm_to_ptx(llir, "sm_90", ab=frozenset()) == ck.asm["ptx"]
    variants = {sw: P.llvm_to_ptx(llir, "sm_90", ab={sw}) for sw in P.AB_SWITCHES}
    variants["all"] = P.llvm_to_ptx(llir, "sm_90", ab=set(P.AB_SWITCHES))
    for ptx in variants.values():
        assert ".entry scale" in ptx and "bra" in ptx and "shared" in ptx
    assert re.search(r"\[%rd\d+\]", _shared_lines(ck.asm["ptx"]))  # 64-bit shared addresses by default
    assert not re.search(r"\[%rd\d+", _shared_lines(variants["short_ptr"]))  # 32-bit with short_ptr
    # short_ptr: the data layout's 32-bit shared pointers stay with that switch (the LLVM option is reset)
    assert P.llvm_to_ptx(llir, "sm_90", ab=frozenset()) == ck.asm["ptx"]
    if P.find_ptxas() is None:
        pytest.skip("no ptxas (nvidia-cuda-nvcc)")
    for ptx in variants.values():
        assert P.ptx_to_cubin(ptx, "sm_90")

