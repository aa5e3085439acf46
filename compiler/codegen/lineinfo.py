"""Source line information: every LLVM instruction emitted for a tile-IR op carries a `!dbg` DILocation made from
the op's `loc`, so the PTX has `.file` / `.loc` directives and ptxas (`-lineinfo`, codegen/ptx.py) puts a line
table into the cubin: Nsight Compute's source view, compute-sanitizer and `nvdisasm -g` then name the kernel's
Python lines. On by default, as in Triton; TILEFARM_DISABLE_LINE_INFO=1 (or Triton's TRITON_DISABLE_LINE_INFO=1)
turns it off (Options.disable_line_info, part of the cache key). The machine code is the same either way.

Debug info of the module: one DICompileUnit, one DIFile per source file, a DISubprogram for the kernel (attached
to the function) and a DILocation per distinct (file, line, column), made once. The compile unit's emission kind
is DebugDirectivesOnly, what clang uses for optimized CUDA device code with line info: LLVM's NVPTX back end then
writes only the `.file` / `.loc` directives. With LineTablesOnly (Triton's) it also writes DWARF sections and
`.target sm_90a, debug`, and that `debug` makes ptxas build unoptimized code (other SASS), so Triton removes it
from the PTX text afterwards; here it is never written (llvm_to_ptx still removes it should it appear). The labels
LLVM puts around the function's code for debug info (`$L__func_begin0`, `$L__tmp0`) are removed too (llvm_to_ptx,
`_without_debug_labels`): nothing refers to them, and ptxas schedules around a label (one corpus kernel's SASS
changed with them). Measured over the 70 corpus kernels: identical SASS for all, identical PTX once the `.loc` /
`.file` lines are removed, LLVM and ptxas CPU time 1.03x, the whole compile 1.04x.

Scopes: a DILocation's file is its scope's. Ops of the kernel's own file (the kernel and jit functions inlined from
the same file) are scoped to the kernel's DISubprogram; ops of an inlined jit function from another file are
scoped to a DILexicalBlockFile of that file inside the kernel's DISubprogram (the IR keeps no call site, so there
is no `inlinedAt`): `nvdisasm -g` names that file and line. Ops without a location (line 0, "<unknown>") get none.
Paths are absolute, the compiling machine's; the cache key does not depend on where the file lies (a fleet shares
kernels), so a kernel from a shared cache names the paths of the machine that compiled it.
"""
from __future__ import annotations

import os

import llvmlite.ir as ir

from . import common as C

# Module flags: behavior 2 = Warning, 7 = Max (as clang writes them). NVPTX writes DWARF 2 whatever this says;
# 2 is what clang sets for CUDA device code.
DEBUG_INFO_VERSION = 3
DWARF_VERSION = 2


class LineInfo:
    """The debug info of one kernel module; `at(loc)` is the DILocation (or None) for an op's location."""

    __slots__ = ("mod", "kernel_file", "sp", "_files", "_scopes", "_locs")

    def __init__(self, mod: ir.Module, kfn: ir.Function, name: str, file: str, line: int):
        self.mod = mod
        self.kernel_file = file
        self._files: dict = {}
        self._locs: dict = {}
        difile = self._file(file)
        cu = mod.add_debug_info("DICompileUnit", {
            "language": ir.DIToken("DW_LANG_Python"), "file": difile, "producer": "tilefarm", "isOptimized": True,
            "runtimeVersion": 0, "emissionKind": ir.DIToken("DebugDirectivesOnly")}, is_distinct=True)
        mod.add_named_metadata("llvm.dbg.cu", cu)
        mod.add_named_metadata("llvm.module.flags", [ir.Constant(C.I32, 2), "Debug Info Version",
                                                     ir.Constant(C.I32, DEBUG_INFO_VERSION)])
        mod.add_named_metadata("llvm.module.flags", [ir.Constant(C.I32, 7), "Dwarf Version",
                                                     ir.Constant(C.I32, DWARF_VERSION)])
        fty = mod.add_debug_info("DISubroutineType", {"types": mod.add_metadata([])})
        self.sp = mod.add_debug_info("DISubprogram", {
            "name": name, "linkageName": name, "scope": difile, "file": difile, "line": line, "type": fty,
            "scopeLine": line, "spFlags": ir.DIToken("DISPFlagDefinition | DISPFlagOptimized"), "unit": cu},
            is_distinct=True)
        kfn.set_metadata("dbg", self.sp)
        self._scopes: dict = {file: self.sp}

    @classmethod
    def for_function(cls, mod: ir.Module, kfn: ir.Function, fn) -> "LineInfo | None":
        """Debug info for tile-IR Function `fn` emitted as `kfn`; None when neither the function nor any of its
        ops has a source location (kernels built directly in IR)."""
        loc = fn.loc
        if not _known(loc):
            loc = next((op.loc for op in fn.walk() if _known(op.loc)), None)
            if loc is None:
                return None
        return cls(mod, kfn, fn.name, loc.file, loc.line)

    def _file(self, path: str):
        f = self._files.get(path)
        if f is None:
            d, base = os.path.split(path)
            f = self._files[path] = self.mod.add_debug_info("DIFile", {"filename": base, "directory": d})
        return f

    def _scope(self, path: str):
        s = self._scopes.get(path)
        if s is None:  # an inlined jit function of another file
            s = self._scopes[path] = self.mod.add_debug_info("DILexicalBlockFile", {
                "scope": self.sp, "file": self._file(path), "discriminator": 0})
        return s

    def at(self, loc):
        """The DILocation of source location `loc` (columns 1-based, as DWARF counts; Loc's are 0-based), made
        once per (file, line, column); None for an unknown location."""
        if loc is None:
            return None
        key = (loc.file, loc.line, loc.col)
        try:
            return self._locs[key]
        except KeyError:
            pass
        md = None
        if _known(loc):
            md = self.mod.add_debug_info("DILocation", {"line": loc.line, "column": loc.col + 1,
                                                        "scope": self._scope(loc.file)})
        self._locs[key] = md
        return md


def _known(loc) -> bool:
    return loc is not None and loc.line > 0 and bool(loc.file) and not loc.file.startswith("<")
