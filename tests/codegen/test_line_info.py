"""Source line information (compiler/codegen/lineinfo.py): the LLVM IR carries a DILocation per op, the PTX `.loc`
directives naming the kernel's own lines, the cubin a line table that `nvdisasm -g` reads; TILEFARM_DISABLE_LINE_INFO=1
(or Triton's TRITON_DISABLE_LINE_INFO=1) turns it off, in the cache key too, and the machine code is the same
either way. The expected lines are found by the marker comments of line_info_kernels.py and line_info_helpers.py,
not written here.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
import line_info_helpers as H  # noqa: E402
import line_info_kernels as K  # noqa: E402

import compiler.compile as C  # noqa: E402
from compiler.codegen.ptx import (find_nvdisasm, find_ptxas, has_line_info, strip_line_info,  # noqa: E402
                                  _without_debug_labels)

KFILE = os.path.abspath(K.__file__)
HFILE = os.path.abspath(H.__file__)
SWITCHES = ("TILEFARM_DISABLE_LINE_INFO", "TRITON_DISABLE_LINE_INFO")
needs_tools = pytest.mark.skipif(find_ptxas() is None or find_nvdisasm() is None,
                                 reason="needs ptxas and nvdisasm (nvidia-cuda-nvcc, nvidia-cuda-nvdisasm)")


def line_of(path, marker):
    """The 1-based line of `path` that ends with the comment `# marker`."""
    with open(path) as f:
        hits = [i for i, ln in enumerate(f, 1) if ln.rstrip().endswith(f"# {marker}")]
    assert len(hits) == 1, (path, marker, hits)
    return hits[0]


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    """A disk cache of the test's own, an empty in-memory cache, and line info at its default (on)."""
    monkeypatch.setenv("TILEFARM_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("TILEFARM_CACHE", raising=False)
    for var in SWITCHES:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(C, "_mem_cache", {})
    monkeypatch.setattr(C, "_disk", None)
    return tmp_path


def copy_kernel():
    x = np.zeros(128, np.float32)
    return K.copy_kernel.warmup(x, x, BLOCK=128, grid=(1,), target="sm_90")


def helpers_kernel():
    x = np.zeros(128, np.float32)
    return K.helpers_kernel.warmup(x, x, 2.0, BLOCK=128, grid=(1,), target="sm_90")


def ptx_locs(ptx):
    """[(file path, line)] of the PTX's `.loc` directives in order, each with the instruction lines after it:
    [((path, line), [instruction, ...]), ...]."""
    files = {int(n): p for n, p in re.findall(r'^\s*\.file\s+(\d+)\s+"([^"]*)"', ptx, re.M)}
    out, cur = [], None
    for ln in ptx.splitlines():
        m = re.match(r"\s*\.loc\s+(\d+)\s+(\d+)\s+(\d+)", ln)
        if m:
            cur = ((files[int(m.group(1))], int(m.group(2))), [])
            out.append(cur)
        elif cur is not None and ln.strip() and not ln.strip().startswith("//"):
            cur[1].append(ln.strip())
    return out


def line_of_instruction(ptx, pattern):
    """The (file, line) of the `.loc` in force at the first instruction matching `pattern`."""
    for where, instrs in ptx_locs(ptx):
        if any(re.search(pattern, i) for i in instrs):
            return where
    raise AssertionError(f"no instruction matching {pattern!r} after a .loc")


def test_ptx_names_the_load_and_store_lines(fresh):
    """The global load sits under the `.loc` of the kernel's tl.load line, the store under its tl.store line, and
    every `.loc` of the kernel's file is one of the kernel's own lines."""
    k = copy_kernel()
    ptx = k.asm["ptx"]
    load, store = line_of(KFILE, "LOAD"), line_of(KFILE, "STORE")
    assert line_of_instruction(ptx, r"\bld\.global") == (KFILE, load)
    assert line_of_instruction(ptx, r"\bst\.global") == (KFILE, store)
    import inspect

    first = inspect.getsourcelines(K.copy_kernel.fn)[1]
    lines = {line for (path, line), _ in ptx_locs(ptx) if path == KFILE}
    assert {load, store} <= lines <= set(range(first, store + 1)), (lines, first, store)
    # nothing that would change the machine code: no `.target ..., debug`, no debug-only labels
    assert not re.search(r"^\s*\.target[^\n]*debug", ptx, re.M)
    assert "$L__tmp" not in ptx and "$L__func_begin" not in ptx


def test_llvm_ir_has_line_tables_and_verifies(fresh):
    """A compile unit with line directives only, the kernel's DISubprogram on its definition, DILocations of the
    kernel's lines on the instructions, the module flags, a DILexicalBlockFile for the helper of another file; and
    the IR passes LLVM's verifier on its own (llvm_to_ptx verifies it too)."""
    import llvmlite.binding as llvm

    copy, helpers = copy_kernel().asm["llir"], helpers_kernel().asm["llir"]
    for llir in (copy, helpers):
        assert "distinct !DICompileUnit(" in llir and "emissionKind: DebugDirectivesOnly" in llir
        assert re.search(r'^define ptx_kernel void @"\w+"\([^\n]*\) #0 !dbg !\d+', llir, re.M)
        assert '!"Debug Info Version", i32 3' in llir and '!"Dwarf Version", i32 2' in llir
        llvm.parse_assembly(llir).verify()
    for marker in ("LOAD", "STORE"):
        assert re.search(r"!DILocation\(column: \d+, line: %d, scope: !\d+\)" % line_of(KFILE, marker), copy)
    assert re.search(r"= !DILexicalBlockFile\(.*file: (!\d+)", helpers)
    assert '!DIFile(directory: "%s", filename: "line_info_helpers.py")' % os.path.dirname(HFILE) in helpers


def test_inlined_helpers_keep_their_lines(fresh):
    """A jit helper of the kernel's file keeps its own line; one of another file is named by that file and line
    (a DILexicalBlockFile scope: the PTX gets a second `.file`)."""
    ptx = helpers_kernel().asm["ptx"]
    where = {w for w, _ in ptx_locs(ptx)}
    assert (KFILE, line_of(KFILE, "SAME_FILE_HELPER")) in where
    assert (HFILE, line_of(HFILE, "OTHER_FILE_HELPER")) in where
    assert (KFILE, line_of(KFILE, "HELPERS_LOAD")) in where and (KFILE, line_of(KFILE, "HELPERS_STORE")) in where
    assert {p for p, _ in where} == {KFILE, HFILE}


@pytest.mark.parametrize("var", SWITCHES)
def test_switch_turns_it_off_and_is_part_of_the_key(fresh, monkeypatch, var):
    """With the switch there is no `.loc`, `.file` or `!dbg`; the PTX is the line-info PTX without those lines;
    the keys differ, in memory and on disk: neither setting is served the other's kernel."""
    on = copy_kernel()
    monkeypatch.setenv(var, "1")
    off = copy_kernel()
    assert on.key != off.key
    assert has_line_info(on.asm["ptx"]) and not has_line_info(off.asm["ptx"])
    assert ".file" not in off.asm["ptx"] and "!dbg" not in off.asm["llir"] and "DICompileUnit" not in off.asm["llir"]
    assert strip_line_info(on.asm["ptx"]) == off.asm["ptx"]
    hits = C.stats()["disk_hits"]
    for want, setting in ((off, "1"), (on, "0")):  # a new process: only the disk cache holds them
        monkeypatch.setenv(var, setting)
        monkeypatch.setattr(C, "_mem_cache", {})
        got = copy_kernel()
        assert got.key == want.key and got.asm["ptx"] == want.asm["ptx"]
    assert C.stats()["disk_hits"] == hits + 2


def test_both_names_give_one_key(fresh, monkeypatch):
    monkeypatch.setenv("TILEFARM_DISABLE_LINE_INFO", "1")
    a = copy_kernel().key
    monkeypatch.delenv("TILEFARM_DISABLE_LINE_INFO")
    monkeypatch.setattr(C, "_mem_cache", {})
    monkeypatch.setenv("TRITON_DISABLE_LINE_INFO", "1")
    assert copy_kernel().key == a
    assert C.options_for().disable_line_info


def nvdisasm(cubin, *flags):
    import tempfile

    with tempfile.TemporaryDirectory(prefix="lineinfo-") as d:
        path = os.path.join(d, "k.cubin")
        with open(path, "wb") as f:
            f.write(cubin)
        p = subprocess.run([find_nvdisasm(), *flags, path], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return p.stdout


def sass_text(listing):
    """The instructions and labels of `nvdisasm -c` output, address comments removed."""
    lines = [re.sub(r"/\*[0-9a-f]{4,}\*/", "", ln).strip() for ln in listing.splitlines()]
    return [ln for ln in lines if (ln.endswith(";") and not ln.startswith(".")) or ln.endswith(":")]


def cubin_lines(cubin):
    """{(file, line)} that `nvdisasm -g` prints (`//## File "path", line N`)."""
    return {(f, int(n)) for f, n in re.findall(r'## File "([^"]*)", line (\d+)', nvdisasm(cubin, "-g"))}


@needs_tools
def test_cubin_line_table_names_the_kernel_lines(fresh, monkeypatch):
    """`nvdisasm -g` of the cubin names the load and store lines of the kernel's file, and the helper file's line;
    without line info it names nothing."""
    lines = cubin_lines(copy_kernel().asm["cubin"])
    assert (KFILE, line_of(KFILE, "LOAD")) in lines and (KFILE, line_of(KFILE, "STORE")) in lines
    lines = cubin_lines(helpers_kernel().asm["cubin"])
    assert (HFILE, line_of(HFILE, "OTHER_FILE_HELPER")) in lines
    monkeypatch.setenv("TILEFARM_DISABLE_LINE_INFO", "1")
    assert cubin_lines(copy_kernel().asm["cubin"]) == set()


@needs_tools
def test_machine_code_is_the_same(fresh, monkeypatch):
    """Line info changes no instruction: `nvdisasm -c` of the two cubins, address comments removed, is the same
    (all 70 corpus kernels compared the same way when this was built)."""
    on = [copy_kernel(), helpers_kernel()]
    monkeypatch.setenv("TILEFARM_DISABLE_LINE_INFO", "1")
    off = [copy_kernel(), helpers_kernel()]
    for a, b in zip(on, off):
        sa, sb = sass_text(nvdisasm(a.asm["cubin"], "-c")), sass_text(nvdisasm(b.asm["cubin"], "-c"))
        assert sa and sa == sb


def test_ptxas_gets_lineinfo_for_ptx_with_line_info(fresh, monkeypatch):
    """ptxas runs with -lineinfo for PTX with `.loc` directives (the line table in the cubin), without it for PTX
    without (where it would add a PTX-level line table of its own)."""
    import compiler.codegen.ptx as P

    on = copy_kernel().asm["ptx"]
    monkeypatch.setenv("TILEFARM_DISABLE_LINE_INFO", "1")
    off = copy_kernel().asm["ptx"]
    seen = []

    class Run:  # ptxas reads the PTX from its standard input (codegen/ptx.py _Started)
        returncode = 1

        def __init__(self, cmd, **kw):
            seen.append(cmd)
            self.args = cmd

        def poll(self):
            return None

        def communicate(self, data=None):
            return b"", b"stop here"

    P._end_idle()
    monkeypatch.setattr(P, "find_ptxas", lambda: "/bin/ptxas")
    monkeypatch.setattr(P.subprocess, "Popen", Run)
    for ptx in (on, off):
        with pytest.raises(P.PTXASError):
            P.ptx_to_cubin(ptx, "sm_90")
    assert "-lineinfo" in seen[0] and "-lineinfo" not in seen[1]


def test_unreferenced_debug_labels_go_referenced_stay():
    """The labels LLVM's debug info writes are dropped unless something refers to them (a DWARF section would);
    ptxas schedules around a label, so one left in changed the SASS of a corpus kernel."""
    ptx = ("\t.loc\t1 3 0\n$L__func_begin0:\n\tld.param.b64 %rd1, [k_param_0];\n$L__tmp0:\n\tret;\n$L__tmp1:\n"
           "$L__func_end0:\n$L__BB0_1:\n}\n.section .debug_info {\n.b64 $L__tmp1\n}\n")
    got = _without_debug_labels(ptx)
    assert "$L__func_begin0:" not in got and "$L__tmp0:" not in got and "$L__func_end0:" not in got
    assert "$L__tmp1:" in got and "$L__BB0_1:" in got and ".b64 $L__tmp1" in got


def test_strip_line_info():
    ptx = ('.target sm_90\n{\n\t.loc\t1 3 0\n\tret;\n\t.loc\t2 7 11\n}\n\t.section\t.debug_macinfo\t{\t}\n'
           '\t.file\t1 "/a/k.py"\n\t.file\t2 "/a/h.py"\n')
    assert strip_line_info(ptx) == ".target sm_90\n{\n\tret;\n}\n"
    assert strip_line_info(".target sm_90\n\tret;\n") == ".target sm_90\n\tret;\n"


def test_triton_knobs_nvdisasm_path():
    """Triton's test_line_info finds nvdisasm by `triton.knobs.nvidia.nvdisasm.path`."""
    from compiler.triton_compat import compat_module

    knobs = compat_module("triton").knobs
    assert compat_module("triton.knobs") is knobs
    if find_nvdisasm() is None:
        with pytest.raises(RuntimeError, match="nvdisasm"):
            knobs.nvidia.nvdisasm.path
    else:
        assert knobs.nvidia.nvdisasm.path == find_nvdisasm() and os.access(knobs.nvidia.nvdisasm.path, os.X_OK)
