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
    monkeypatch.setenv("TILEFARM_AB", "other, div_quot")
    assert P.ab_switch("div_quot") and P.ab_switch("other") and not P.ab_switch("llvm")
    monkeypatch.setenv("TILEFARM_AB", "")
    assert not P.ab_switch("div_quot")


def test_ab_switches_are_part_of_the_key(fresh, monkeypatch):
    """A kernel built with an A/B switch must not be served from the cache without it, and the key without any
    switch is the one it always was (no "ab" entry)."""
    k = _kernel_file(fresh)
    plain = _warm(k)
    assert "ab" not in C.toolchain()
    monkeypatch.setenv("TILEFARM_AB", "div_quot")
    assert C.toolchain()["ab"] == ["div_quot"]
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
    if P.find_ptxas() is None:
        pytest.skip("no ptxas (nvidia-cuda-nvcc)")
    for ptx in variants.values():
        assert P.ptx_to_cubin(ptx, "sm_90")



@pytest.fixture
def assembler(monkeypatch):
    """The prestarted-ptxas pool emptied for one test and emptied again after it."""
    if P.find_ptxas() is None:
        pytest.skip("no ptxas (nvidia-cuda-nvcc)")
    P._end_idle()
    monkeypatch.setattr(P, "_ran", True)
    yield P
    P._end_idle()


def _sections(cubin: bytes) -> dict:
    """{ELF section name: contents} of a cubin (64-bit little-endian ELF)."""
    import struct

    shoff, = struct.unpack_from("<Q", cubin, 0x28)
    size, num, names = struct.unpack_from("<HHH", cubin, 0x3A)
    hdrs = [struct.unpack_from("<IIQQQQIIQQ", cubin, shoff + i * size) for i in range(num)]
    base = hdrs[names][4]
    out = {}
    for h in hdrs:
        name = cubin[base + h[0]:cubin.index(b"\0", base + h[0])].decode()
        out[name] = cubin[h[4]:h[4] + h[5]] if h[1] != 8 else b""  # SHT_NOBITS: no bytes in the file
    return out


def _by_file(ptx, arch, flags):
    import subprocess

    with __import__("tempfile").TemporaryDirectory() as d:
        src, out = f"{d}/k.ptx", f"{d}/k.cubin"
        open(src, "w").write(ptx)
        subprocess.run([P.find_ptxas(), f"-arch={arch}", *flags, src, "-o", out], check=True, capture_output=True)
        return open(out, "rb").read()


@pytest.mark.parametrize("lineinfo", [False, True])
def test_prestarted_ptxas_gives_the_files_machine_code(fresh, assembler, monkeypatch, lineinfo):
    """compile_function starts ptxas before LLVM runs; the kernel's assembly takes that process. Without line
    information the cubin is byte for byte what ptxas makes from a file; with it, the machine code and line tables
    are (only the copy of the PTX text that ptxas embeds from a file is left out)."""
    if not lineinfo:
        monkeypatch.setenv("TILEFARM_DISABLE_LINE_INFO", "1")
    started = []
    real = P._Started.__init__

    def spy(self, *a):
        real(self, *a)
        started.append(self)
    monkeypatch.setattr(P._Started, "__init__", spy)
    ck = _warm(_kernel_file(fresh))
    assert len(started) == 1 and started[0].waiting()  # started during the compile, waiting for the PTX
    cubin = ck.asm["cubin"]
    assert len(started) == 1 and started[0].proc.returncode == 0  # the same process assembled it
    assert P.has_line_info(ck.asm["ptx"]) == lineinfo
    # every assembly runs with -v (its resources read where the code generator needs them; ptxas records its
    # options in the cubin, so the reference takes it too)
    ref = _by_file(ck.asm["ptx"], "sm_90", ("-lineinfo", "-v") if lineinfo else ("-v",))
    if not lineinfo:
        assert cubin == ref
    else:
        got, want = _sections(cubin), _sections(ref)
        assert ".nv_debug_ptx_txt" in want and ".nv_debug_ptx_txt" not in got
        for name in (".text.scale", ".debug_line", ".nv_debug_line_sass", ".nv.constant0.scale"):
            assert got[name] == want[name], name


def test_prestarted_ptxas_with_other_flags_is_not_taken(assembler):
    """A waiting ptxas serves only PTX that needs its arch and flags; at most _IDLE_MAX wait."""
    ptx = P.llvm_to_ptx('define void @k() { ret void }\n!nvvm.annotations = !{!0}\n!0 = !{ptr @k, !"kernel", i32 1}\n',
                        "sm_90")
    P.prestart_ptxas("sm_90a", lineinfo=False, verbose=True)
    P.prestart_ptxas("sm_90", lineinfo=True, verbose=True)
    P.prestart_ptxas("sm_90", lineinfo=False)
    assert len(P._idle) == P._IDLE_MAX  # the oldest (sm_90a) was ended
    assert not any(k[1] == "sm_90a" for k in P._idle)
    waiting = dict(P._idle)
    # every assembly runs with -v: not the waiting process without it, nor the one with -lineinfo
    assert P.ptx_to_cubin(ptx, "sm_90") == _by_file(ptx, "sm_90", ("-v",))
    assert P._idle == waiting
    P.prestart_ptxas("sm_90", lineinfo=False, verbose=True)
    res = P.ptx_resources(ptx, "sm_90")  # -v: the waiting one
    assert res["registers"] >= 0 and not any(k[2] == ("-v",) for k in P._idle)


def test_prestarted_ptxas_reports_errors_against_the_ptx(assembler):
    P.prestart_ptxas("sm_90", lineinfo=False, verbose=True)  # as compile_function starts it: every assembly is -v
    with pytest.raises(P.PTXASError) as e:
        P.ptx_to_cubin(".version 8.3\n.target sm_90\n.address_size 64\n.visible .entry k() { bogus; }\n", "sm_90")
    assert "<ptx>" in e.value.log and "/dev/stdin" not in e.value.log and not P._idle


def test_no_ptxas_prestarted_before_the_process_assembles(fresh, monkeypatch):
    """A process that only makes PTX (the interpreter's tests, a worker asked for PTX) starts no ptxas."""
    P._end_idle()
    monkeypatch.setattr(P, "_ran", False)
    ck = _warm(_kernel_file(fresh))
    assert ".entry scale" in ck.asm["ptx"] and not P._idle


def test_a_forked_child_leaves_the_parents_ptxas_alone(assembler, monkeypatch):
    P.prestart_ptxas("sm_90", lineinfo=False)
    (key, started), = P._idle.items()
    monkeypatch.setattr(P.os, "getpid", lambda: started.pid + 1)
    assert not started.waiting() and P._take(key) is None  # not served from the parent's process
    started.discard()  # nor ended
    monkeypatch.undo()
    assert started.proc.poll() is None
    P._idle[key] = started


def test_libdevice_calls_known_before_emission_and_made_on_a_thread(fresh, monkeypatch):
    """compile_function names the libdevice functions a kernel calls from its tile IR (extern calls, the op
    table's lowerings, float16 through float32) and has their bitcode made on a thread before llvm_to_ptx wants it;
    the PTX is the same as made without the thread."""
    import compiler.codegen.llvm as L

    body = ("    x = tl.load(X + o, mask=o < N)\n"
            "    h = x.to(tl.float16)\n"
            "    y = tl.math.erf(h).to(tl.float32) + libdevice.tanh(x) + tl.exp(x.to(tl.float64)).to(tl.float32)\n"
            "    tl.store(Y + o, y, mask=o < N)\n")
    k = _kernel_file(fresh, body=body.replace("libdevice.", "tl.extra.libdevice."))
    if P.find_libdevice() is None:
        pytest.skip("no libdevice (nvidia-cuda-nvcc)")
    predicted = []
    real = L.libdevice_calls
    monkeypatch.setattr(L, "libdevice_calls", lambda fn: predicted.append(real(fn)) or predicted[-1])
    monkeypatch.setattr(P, "_SUBSETS", {})
    made = []
    build = P._build_subset
    monkeypatch.setattr(P, "_build_subset", lambda names: made.append((names, __import__("threading").current_thread().name)) or build(names))
    ck = _warm(k)
    names = set(P._NV_NAME.findall(ck.asm["llir"]))
    assert predicted == [names] and names == {"__nv_erff", "__nv_tanhf", "__nv_exp"}
    assert made == [(frozenset(names), "tilefarm-libdevice")]  # once, on the thread
    monkeypatch.setattr(P, "_SUBSETS", {})
    assert P.llvm_to_ptx(ck.asm["llir"], "sm_90") == ck.asm["ptx"]  # the subset made here, without a thread: same PTX


def test_a_forked_child_does_not_hold_the_parents_ptxas_input_open(assembler):
    """A child forked while a ptxas waits (multiprocessing, a data loader) closes its copy of that ptxas's input, so
    the parent's next assembly through it finishes while the child lives on."""
    import os
    import time

    ptx = P.llvm_to_ptx('define void @k() { ret void }\n!nvvm.annotations = !{!0}\n!0 = !{ptr @k, !"kernel", i32 1}\n',
                        "sm_90")
    P.prestart_ptxas("sm_90", lineinfo=False)
    (started,) = P._idle.values()
    pid = os.fork()
    if pid == 0:  # the child: outlive the parent's assembly below, then leave without cleanup
        time.sleep(20)
        os._exit(0)
    try:
        t = time.perf_counter()
        cubin, _ = P._run_ptxas(ptx, "sm_90")
        assert cubin and started.proc.returncode == 0 and time.perf_counter() - t < 10
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
