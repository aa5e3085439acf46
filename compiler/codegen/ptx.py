"""LLVM IR text -> PTX (llvmlite's NVPTX backend) -> cubin (ptxas), plus resource reports.

The target machine and the parsed libdevice are created once per process (compile time matters); libdevice is
linked only into modules that call `__nv_*` functions, then internalized so unused functions are dropped.
"""
from __future__ import annotations

import functools
import os
import sys
import re
import shutil
import subprocess
import tempfile
import threading

import llvmlite.binding as llvm

_LOCK = threading.Lock()  # LLVM objects are not thread-safe; compiles from threads serialize here


class PTXASError(Exception):
    """ptxas rejected the PTX; `.log` holds its message."""

    def __init__(self, log: str, arch: str = ""):
        super().__init__(f"ptxas failed for {arch}:\n{log}")
        self.log = log
        self.arch = arch


@functools.lru_cache(maxsize=None)
def _init():
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    return True


@functools.lru_cache(maxsize=None)
def _target_machine(arch: str):
    _init()
    target = llvm.Target.from_triple("nvptx64-nvidia-cuda")
    # PTX 8.3 is understood by every ptxas that knows sm_90 features we use; newer archs need newer PTX.
    ptx = {"sm_90": "+ptx83", "sm_90a": "+ptx83"}.get(arch, "")
    return target.create_target_machine(cpu=arch, features=ptx, opt=3, codemodel="default")


def _pkg_dirs():
    """Roots of NVIDIA's pip packages (nvidia-cuda-nvcc / cu13) that may hold bin/ptxas and nvvm/libdevice."""
    out = []
    for modname in ("nvidia.cu13", "nvidia.cuda_nvcc", "nvidia.cu12"):
        try:
            mod = __import__(modname, fromlist=["_"])
        except Exception:
            continue
        for p in list(getattr(mod, "__path__", [])) + ([os.path.dirname(mod.__file__)] if getattr(mod, "__file__", None) else []):
            if p not in out:
                out.append(p)
    return out


@functools.lru_cache(maxsize=None)
def find_ptxas() -> str | None:
    """ptxas from TILEFARM_PTXAS, the pip package, CUDA_HOME or CUDA_PATH /bin, beside the Python executable,
    /usr/local/cuda/bin, or PATH (None: absent). Found once per process (`find_ptxas.cache_clear()` to look again)."""
    env = os.environ.get("TILEFARM_PTXAS")
    if env and os.path.isfile(env) and os.access(env, os.X_OK):
        return env
    cands = [os.path.join(d, "bin", "ptxas") for d in _pkg_dirs()]
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            cands.append(os.path.join(os.environ[var], "bin", "ptxas"))
    cands.append(os.path.join(os.path.dirname(sys.executable), "ptxas"))
    cands.append("/usr/local/cuda/bin/ptxas")
    for c in cands:
        if os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return shutil.which("ptxas")


@functools.lru_cache(maxsize=None)
def find_libdevice() -> str | None:
    """libdevice.10.bc from TILEFARM_LIBDEVICE, the pip package, CUDA_HOME or /usr/local/cuda (None: absent)."""
    env = os.environ.get("TILEFARM_LIBDEVICE")
    if env and os.path.isfile(env):
        return env
    roots = [os.path.join(d, "nvvm") for d in _pkg_dirs()]
    if os.environ.get("CUDA_HOME"):
        roots.append(os.path.join(os.environ["CUDA_HOME"], "nvvm"))
    roots.append("/usr/local/cuda/nvvm")
    for r in roots:
        p = os.path.join(r, "libdevice", "libdevice.10.bc")
        if os.path.isfile(p):
            return p
    return None


@functools.lru_cache(maxsize=None)
def _libdevice_bitcode() -> bytes:
    p = find_libdevice()
    if p is None:
        raise FileNotFoundError("libdevice.10.bc not found (set TILEFARM_LIBDEVICE or install nvidia-cuda-nvcc)")
    with open(p, "rb") as f:
        return f.read()




_NV_NAME = re.compile(r'@"?(__nv_\w+)"?\(')


@functools.lru_cache(maxsize=64)
def _libdevice_subset(names: frozenset) -> bytes:
    """Bitcode of just the libdevice functions `names` need (cached per set: parsing all of libdevice costs
    ~100 ms, the subset well under 1 ms)."""
    lib = llvm.parse_bitcode(_libdevice_bitcode())
    for f in lib.functions:
        if not f.is_declaration and f.name not in names:
            f.linkage = llvm.Linkage.internal
    for g in lib.global_variables:
        if not g.is_declaration:
            g.linkage = llvm.Linkage.internal
    pb = llvm.create_pass_builder(_target_machine("sm_90"), llvm.create_pipeline_tuning_options(speed_level=0))
    mpm = llvm.create_new_module_pass_manager()
    mpm.add_global_dead_code_eliminate_pass()
    mpm.run(lib, pb)
    return lib.as_bitcode()


def _link_libdevice(mod, tm, names):
    lib = llvm.parse_bitcode(_libdevice_subset(frozenset(names)))
    lib.triple = mod.triple
    lib.data_layout = mod.data_layout
    keep = {f.name for f in mod.functions if not f.is_declaration}
    mod.link_in(lib)
    # __nvvm_reflect("__CUDA_FTZ") in libdevice reads as 0 without the nvvm-reflect-ftz flag: denormals kept.
    # Internalize everything but our own definitions, so the optimizer inlines and drops libdevice code.
    for f in mod.functions:
        if not f.is_declaration and f.name not in keep:
            f.linkage = llvm.Linkage.internal
    for g in mod.global_variables:
        if not g.is_declaration:
            g.linkage = llvm.Linkage.internal


def _optimize(mod, tm):
    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    pb = llvm.create_pass_builder(tm, pto)
    mpm = pb.getModulePassManager()
    mpm.run(mod, pb)


def llvm_to_ptx(llir: str, arch: str = "sm_90") -> str:
    """Verify, optimize (O3) and lower LLVM IR text to PTX for `arch`."""
    with _LOCK:
        tm = _target_machine(arch)
        mod = llvm.parse_assembly(llir)
        mod.triple = "nvptx64-nvidia-cuda"
        mod.data_layout = str(tm.target_data)
        names = set(_NV_NAME.findall(llir))
        if names:
            _link_libdevice(mod, tm, names)
        mod.verify()
        _optimize(mod, tm)
        return tm.emit_assembly(mod)


def _run_ptxas(ptx: str, arch: str, extra=()):
    ptxas = find_ptxas()
    if ptxas is None:
        return None, ""
    with tempfile.TemporaryDirectory(prefix="tilefarm-") as d:
        src = os.path.join(d, "k.ptx")
        out = os.path.join(d, "k.cubin")
        with open(src, "w") as f:
            f.write(ptx)
        p = subprocess.run([ptxas, f"-arch={arch}", *extra, src, "-o", out], capture_output=True, text=True)
        if p.returncode != 0:
            raise PTXASError((p.stderr or p.stdout).replace(src, "<ptx>"), arch)
        with open(out, "rb") as f:
            return f.read(), p.stderr + p.stdout


_TARGET = re.compile(r"^\s*\.target\s+(sm_\w+)", re.M)


def ptx_arch(ptx: str, arch: str) -> str:
    """The arch to assemble for: the PTX's own `.target` when it is the arch-specific variant of `arch`
    (sm_90a PTX for an sm_90 request: kernels with wgmma), else `arch`."""
    m = _TARGET.search(ptx)
    if m and m.group(1) == arch + "a":
        return m.group(1)
    return arch


def ptx_to_cubin(ptx: str, arch: str = "sm_90") -> bytes | None:
    """Assemble PTX with ptxas (-O3); None when no ptxas can be found. Raises PTXASError on rejection."""
    cubin, _ = _run_ptxas(ptx, ptx_arch(ptx, arch))
    return cubin


_RES = {
    "registers": re.compile(r"Used (\d+) registers"),
    "shared": re.compile(r"(\d+) bytes smem"),
    "spill_stores": re.compile(r"(\d+) bytes spill stores"),
    "spill_loads": re.compile(r"(\d+) bytes spill loads"),
    "stack": re.compile(r"(\d+) bytes stack frame"),
    "cmem": re.compile(r"(\d+) bytes cmem\[0\]"),
}


def ptx_resources(ptx: str, arch: str = "sm_90") -> dict:
    """Resources ptxas reports (`ptxas -v`): registers, static shared bytes, spill stores/loads, stack frame.
    Empty dict when ptxas is absent."""
    cubin, log = _run_ptxas(ptx, ptx_arch(ptx, arch), ("-v",))
    if cubin is None:
        return {}
    out = {}
    for k, rx in _RES.items():
        m = rx.search(log)
        out[k] = int(m.group(1)) if m else 0
    out["log"] = log
    return out
