"""The stage driver: frontend -> passes -> LLVM IR -> PTX -> cubin, with a content-addressed cache.

Each stage's artifact is kept under its name in `CompiledKernel.asm` ("tile", "llir", "ptx", "cubin"), so any
stage can be inspected, cached or diffed. The cache key (`cache_key`, the one place it is computed) hashes
everything that changes the output: the source of the kernel and of every jit function it calls, the
specialization of each parameter, the options (with the environment switches `options_for` folds into them,
and the target), and the toolchain (`toolchain`: the compiler's version and sources, llvmlite, ptxas,
libdevice).
"""
from __future__ import annotations

import contextlib
import functools
import gc
import hashlib
import json
import os
import threading

from .version import __version__
from .errors import CompilationError
from .frontend.codegen import lower
from .ir.printer import print_module

_mem_cache: dict = {}
_lock = threading.Lock()
_disk = None
# What this process did to get its kernels (`stats()`): a farm GPU worker shows with it that it compiled nothing.
_stats = {"compiled": 0, "assembled": 0, "disk_hits": 0, "installed": 0}


def stats() -> dict:
    """Counts for this process: kernels `compiled` (frontend to PTX), `assembled` (PTX to machine code: ptxas, or
    the driver's JIT at first launch), found in the disk cache (`disk_hits`), and `installed` from artifacts made
    elsewhere (`install`)."""
    return dict(_stats)


_disk_env = None  # (TILEFARM_CACHE, TILEFARM_CACHE_DIR) when _disk was opened


def _disk_cache():
    """The disk cache this process uses: the one TILEFARM_CACHE / TILEFARM_CACHE_DIR name now (a change of either
    in the process, as a test fixture's fresh cache folder makes, opens the one it names), or None when off."""
    global _disk, _disk_env
    env = (os.environ.get("TILEFARM_CACHE", "1"), os.environ.get("TILEFARM_CACHE_DIR"))
    if _disk is not None and _disk_env is not None and env != _disk_env:
        _disk = None
    if _disk is None:
        _disk_env = env
        if os.environ.get("TILEFARM_CACHE", "1") in ("0", "off", "false"):
            _disk = False
        else:
            try:
                from .runtime.cache import KernelCache

                _disk = KernelCache()
            except Exception:  # pragma: no cover - a cache that cannot be opened is not fatal
                _disk = False
    return _disk or None


@functools.lru_cache(maxsize=None)
def _device_arch() -> str | None:
    try:
        from .runtime import cuda

        ok, _ = cuda.gpu_available()
        if ok:
            return cuda.device_arch()
    except Exception:
        pass
    return None


def default_arch() -> str:
    """The GPU's own arch when there is one, else sm_90 (TILEFARM_ARCH overrides)."""
    env = os.environ.get("TILEFARM_ARCH")
    if env:
        return env
    return _device_arch() or "sm_90"


@functools.lru_cache(maxsize=None)
def source_fingerprint() -> str:
    """The compiler's version plus a hash of its own sources (.py and .c): any change to the compiler gives new
    cache keys, so a warm disk cache never serves code built by an older compiler."""
    root = os.path.dirname(os.path.abspath(__file__))
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for f in sorted(filenames):
            if f.endswith((".py", ".c")):
                path = os.path.join(dirpath, f)
                h.update(os.path.relpath(path, root).encode())
                with open(path, "rb") as fh:
                    h.update(fh.read())
    return f"{__version__}+{h.hexdigest()[:12]}"


@functools.lru_cache(maxsize=None)
def _warn_retired_switches(value: str) -> None:
    import warnings

    warnings.warn(f"TILEFARM_EXPERIMENTS={value!r} is not read: code generation has no switches any more (each one "
                  "was made the only code or retired; docs/EXPERIMENTS.md says which and where its code is)",
                  stacklevel=3)


def lower_kernel(jitfn, params):
    """Frontend only: the kernel's IR Module for one specialization."""
    try:
        return lower(jitfn, params, {}, name=kernel_name(jitfn, params))
    except CompilationError as e:
        raise e.with_traceback(None) from e.__cause__


def _params_repr(params) -> str:
    parts = []
    for p in params:
        if p[0] == "const":
            parts.append(f"c:{p[1]!r}")
        elif p[0] == "desc":
            parts.append(f"d:{p[1:]!r}")
        elif p[0] == "tuple":
            parts.append(f"t:{p[1].__module__}.{p[1].__qualname__}({_params_repr(p[2])})")
        else:
            parts.append(f"a:{p[1]}:{sorted(p[2].items())}")
    return "|".join(parts)


class StageArtifacts(dict):
    """The stage artifacts by name. "cubin" is assembled by ptxas on first access when it is not cached yet (the
    GPU launch path too; only where no ptxas is installed does it load PTX through the driver's JIT)."""

    def __init__(self, *a, arch="sm_90", on_cubin=None, **kw):
        super().__init__(*a, **kw)
        self._arch = arch
        self._on_cubin = on_cubin

    def _make_cubin(self):
        from .codegen.ptx import ptx_to_cubin

        cubin = ptx_to_cubin(self["ptx"], self._arch)
        _stats["assembled"] += 1
        if cubin:
            dict.__setitem__(self, "cubin", cubin)
            if self._on_cubin is not None:
                self._on_cubin(cubin)
        return cubin

    def __missing__(self, key):
        if key == "cubin" and "ptx" in self:
            cubin = self._make_cubin()
            if cubin:
                return cubin
        raise KeyError(key)

    def __contains__(self, key):
        if key == "cubin" and not dict.__contains__(self, "cubin") and dict.__contains__(self, "ptx"):
            from .codegen.ptx import find_ptxas

            return find_ptxas() is not None
        return dict.__contains__(self, key)

    def get(self, key, default=None):
        try:
            return self[key]
        except KeyError:
            return default

    def keys(self):
        ks = list(dict.keys(self))
        if "cubin" not in ks and "cubin" in self:
            ks.append("cubin")
        return ks

    def __iter__(self):
        return iter(self.keys())

    def set_cubin(self, cubin: bytes) -> None:
        """Record a cubin made elsewhere (the driver's JIT) and save it to the disk cache."""
        dict.__setitem__(self, "cubin", cubin)
        if self._on_cubin is not None:
            self._on_cubin(cubin)

    def cached(self, key):
        """The artifact if it is already made (never runs ptxas)."""
        return dict.get(self, key)


class KernelMetadata(dict):
    """A compiled kernel's metadata: a dict, also read by attribute as Triton's is (`kernel.metadata.shared`,
    `.num_warps`); `shared` is the dynamic shared memory in bytes."""

    def __getattr__(self, name):
        if name == "shared":
            return self.get("shared_bytes", 0)
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"kernel metadata has no {name!r} (it has {', '.join(sorted(self))})") from None


class CompiledKernel:
    """One compiled specialization: stage artifacts, metadata, and (on first launch) a loaded GPU function."""

    def __init__(self, name, asm: dict, metadata: dict, key: str):
        self.name = name
        self.asm = asm
        self.metadata = KernelMetadata(metadata)
        self.key = key
        self._launcher = None
        self.arg_select = None  # set by the jit: indices of the launch values this kernel takes
        self.num_warps = metadata.get("num_warps", 4)
        self.shared = metadata.get("shared_bytes", 0)

    def __repr__(self):
        return f"CompiledKernel({self.name}, warps={self.num_warps}, shared={self.shared})"

    # Triton's CompiledKernel surface that host code reads (the fused-softmax tutorial sizes its persistent grid
    # from these): registers, spills and the largest block the registers allow, from ptxas's report of the
    # machine code that launches; _init_handles loads the module where a GPU is present.
    def _resources(self) -> dict:
        got = self.__dict__.get("_res")
        if got is None:
            from .codegen.ptx import ptx_resources

            got = self.__dict__["_res"] = ptx_resources(self.asm["ptx"], self.metadata.get("arch") or "sm_90") or {}
        return got

    @property
    def n_regs(self) -> int:
        return int(self._resources().get("registers", 0))

    @property
    def n_spills(self) -> int:
        return int(self._resources().get("spill_stores", 0))

    @property
    def n_max_threads(self) -> int:
        """Threads per block the registers allow: 64K registers an SM, allocated 256 a warp at a time."""
        regs = max(1, self.n_regs)
        per_warp = -(-regs * 32 // 256) * 256
        return int(min(1024, (65536 // per_warp) * 32))

    def _init_handles(self):
        from .runtime import gpu_available

        if gpu_available()[0]:
            self.launcher  # noqa: B018 (loads the module and function)

    @property
    def launcher(self):
        if self._launcher is None:
            from .runtime.launch import Launcher

            asm = self.asm
            # ptxas where it is installed: the assembler CI checks every kernel with, whose -v figures the farm
            # records, and what compile workers ship to GPU nodes. The driver's JIT of the same PTX is not the
            # same machine code: on the H200 (driver 580.159.04) it gave a 128x128x64 GELU matmul 203 registers
            # (one block per SM) where ptxas 13.0 and 13.5 give 127 (two).
            try:
                image = asm.get("cubin")
            except Exception:  # a ptxas that rejects the PTX (too old for it?): the driver may still take it
                image = None
            if image is None:  # no ptxas: the driver's JIT
                image = asm["ptx"]
                try:  # JIT in-process and keep the machine code, so the next process loads it directly
                    from .runtime.launch import link_ptx

                    image = link_ptx(asm["ptx"])
                    _stats["assembled"] += 1
                    if isinstance(asm, StageArtifacts):
                        asm.set_cubin(image)
                except Exception:
                    image = asm["ptx"]  # the plain load below reports any real problem with the PTX
            kinds = [p["type"] for p in self.metadata["params"]]
            self._launcher = Launcher(image, self.metadata["name"], kinds, self.num_warps, self.shared)
            if not self.metadata.get("global_scratch_size"):
                self.launch = self._launcher  # later launches go straight to the packed-argument launcher
        return self._launcher

    def launch(self, grid, stream, args):
        """Launch on `grid` (int or 1-3 tuple) with the runtime arguments' values (pointers as ints). A kernel
        with `global_scratch_size` in its metadata (in-kernel tensor maps) also gets its hidden
        last argument: grid programs x that many bytes of scratch (runtime/scratch.py)."""
        launcher = self._launcher or self.launcher
        per = self.metadata.get("global_scratch_size")
        if per:
            from .runtime.scratch import scratch_pointer

            args = list(args) + [scratch_pointer(grid, per, self.metadata.get("global_scratch_align", 128),
                                                 stream)]
        launcher(grid, stream or 0, args)

    def __getitem__(self, grid):
        from .runtime.launch import pointer_of

        def run(*args, stream=None):
            vals = [a if isinstance(a, (int, float, bool)) else pointer_of(a) for a in args]
            self.launch(grid, stream, vals)

        return run


# Environment variables that change the generated code, and the option each one sets: read here only (options_for),
# so the options -- and with them the cache key -- say everything. TILEFARM_ARCH is read by default_arch (the target
# is an option too); TILEFARM_PTXAS names the assembler (toolchain). The line-info switches change the PTX's `.loc`
# directives and the cubin's line table, not its machine code; TRITON_DISABLE_LINE_INFO is Triton's name.
ENV_OPTIONS = {"TILEFARM_NO_WGMMA": "debug_no_wgmma", "TILEFARM_DISABLE_LINE_INFO": "disable_line_info",
               "TRITON_DISABLE_LINE_INFO": "disable_line_info"}


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "0").strip().lower() not in ("", "0", "false", "off", "no")


def options_for(num_warps=4, num_stages=3, debug=False, arch=None, enable_fp_fusion=True, maxnreg=None,
                enable_reflect_ftz=True):
    """The Options of a compile: the launch's own, the target (default_arch when none), and the environment
    switches of ENV_OPTIONS."""
    from .options import Options

    if os.environ.get("TILEFARM_EXPERIMENTS"):
        _warn_retired_switches(os.environ["TILEFARM_EXPERIMENTS"])
    from .options import fp32_default

    env = {field: True for var, field in ENV_OPTIONS.items() if _env_flag(var)}
    return Options(num_warps=num_warps, num_stages=num_stages, arch=arch or default_arch(), debug=debug,
                   enable_fp_fusion=enable_fp_fusion, maxnreg=maxnreg, fp32_default=fp32_default(),
                   enable_reflect_ftz=enable_reflect_ftz, **env)


def toolchain() -> dict:
    """What else the output depends on: the compiler (version and a hash of its sources), llvmlite (it pins the
    LLVM that emits the PTX), ptxas (its release, and the path TILEFARM_PTXAS names: a cubin from another
    assembler is not the same artifact) and libdevice (linked into kernels that call math functions)."""
    import llvmlite

    from .codegen.ptx import find_libdevice, find_ptxas

    out = {"compiler": source_fingerprint(), "llvmlite": llvmlite.__version__,
           "ptxas": _file_version(find_ptxas(), "ptxas"), "ptxas_named": os.environ.get("TILEFARM_PTXAS", ""),
           "libdevice": _file_version(find_libdevice(), "libdevice")}
    from .options import ab_switches

    ab = sorted(ab_switches())
    if ab:  # A/B switches of code generation (codegen.ptx.ab_switch); absent when none, so keys stay as they were
        out["ab"] = ab
    return out


def _triton_type(t) -> str:
    """A parameter's type as Triton's signature strings write it ("i32", "u64", "fp32", "bf16", "*fp16")."""
    from .ir import types as T

    e = t.element
    if e.is_ptr():
        return "*" + _triton_type(T.TensorType(e.element_ty))
    if e.is_bool():
        return "i1"
    if e.kind == "float":
        return "bf16" if e.name == "bfloat16" else e.short if e.bits == 8 else f"fp{e.bits}"
    return ("u" if e.kind == "uint" else "i") + str(e.bits)


def kernel_name(jitfn, params) -> str:
    """The compiled kernel's name: the function's, or what its `repr=` function (Triton's) makes of the
    specialization: `.signature` {parameter: Triton type string, "constexpr" for constants} and `.constants`
    {parameter: value} of the compile-time ones (constexprs and ints specialized as 1). Characters PTX does not
    allow in a name become '_'."""
    fn = getattr(jitfn, "repr", None)
    if fn is None:
        return jitfn.fn.__name__
    import re
    from types import SimpleNamespace

    sig, consts = {}, {}
    for name, p in zip(jitfn.arg_names, params):
        if p[0] == "arg":
            sig[name] = _triton_type(p[1])
        elif p[0] == "const":
            sig[name], consts[name] = "constexpr", p[1]
        else:
            sig[name] = p[0]
    got = str(fn(SimpleNamespace(signature=sig, constants=consts)))
    name = re.sub(r"[^A-Za-z0-9_$]", "_", got)
    return name if name and not name[0].isdigit() else f"_{name}"


def cache_key(jitfn, params, options) -> str:
    """The kernel cache key of one specialization: sha256 over the kernel's source (and its jit callees'), its
    name, the parameters' specialization, the options and the toolchain. The only place a key is made."""
    from .runtime.cache import cache_key as digest

    desc = {"kernel": jitfn.cache_key, "name": kernel_name(jitfn, params), "params": _params_repr(params),
            "options": options, "toolchain": toolchain()}
    if getattr(options, "debug", False):  # device asserts carry the kernel file's path
        import inspect

        desc["file"] = inspect.getsourcefile(jitfn.fn) or ""
    return digest(desc)


_versions: dict = {}


def _file_version(path, kind) -> str:
    """A tool's identity that is the same on every machine with the same release: ptxas's `--version` line
    (asked once per file: kept in memory and beside the disk cache), libdevice's sha256; "" when absent."""
    if not path:
        return ""
    try:
        st = os.stat(path)
    except OSError:
        return ""
    stamp = f"{kind}:{os.path.realpath(path)}:{st.st_size}:{st.st_mtime_ns}"
    got = _versions.get(stamp)
    if got is not None:
        return got
    disk = _disk_cache()
    memo = os.path.join(disk.dir, "toolchain.json") if disk is not None else None
    known = {}
    if memo:
        try:
            with open(memo) as f:
                known = json.load(f)
        except (OSError, ValueError):
            known = {}
    got = known.get(stamp)
    if got is None:
        got = _ptxas_release(path) if kind == "ptxas" else _sha256_file(path)
        if memo:
            try:  # written whole, then renamed: a reader sees the old or the new file
                tmp = f"{memo}.{os.getpid()}.tmp"
                with open(tmp, "w") as f:
                    json.dump({**known, stamp: got}, f)
                os.replace(tmp, memo)
            except OSError:
                pass
    _versions[stamp] = got
    return got


def _ptxas_release(path) -> str:
    import subprocess

    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return _sha256_file(path)
    got = "; ".join(ln.strip() for ln in out.splitlines() if "release" in ln or ln.strip().startswith("Build"))
    return got or _sha256_file(path)


def _sha256_file(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


@contextlib.contextmanager
def _collector_paused():
    """Python's cyclic garbage collector off for one compile, and one collection of the young objects after it.

    A compile allocates some 10^4-10^5 objects that live until it ends (tile IR, layouts, llvmlite's IR module,
    which is full of reference cycles); with the collector on, every 700 allocations start a collection that walks
    them again, and the older generations are walked when they fill. That was 20-35% of the Python side of a
    compile (frontend, passes and LLVM-IR emission of the 70 corpus kernels, collection after each compile
    included: 3.3-5.3 s against 2.5-3.1 s, interleaved). The one collection at the end frees the compile's
    cyclic garbage, so memory is what it was, and its cost stays inside the compile. Nested or concurrent compiles
    leave the collector as the outermost one found it."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
            gc.collect(0)


def compile_kernel(jitfn, params, num_warps=4, num_stages=3, debug=False, arch=None,
                   enable_fp_fusion=True, maxnreg=None, enable_reflect_ftz=True) -> CompiledKernel:
    """Compile one specialization through every stage, using the memory and disk caches."""
    options = options_for(num_warps=num_warps, num_stages=num_stages, debug=debug, arch=arch,
                          enable_fp_fusion=enable_fp_fusion, maxnreg=maxnreg, enable_reflect_ftz=enable_reflect_ftz)
    arch = options.arch
    key = cache_key(jitfn, params, options)
    k = _mem_cache.get(key)
    if k is not None:
        return k
    disk = _disk_cache()
    if disk is not None:
        hit = disk.get(key)
        if hit is not None and "metadata.json" in hit:
            _stats["disk_hits"] += 1
            k = _from_entry(key, hit, arch, disk)
            _mem_cache[key] = k
            return k
    _stats["compiled"] += 1
    try:
        with _collector_paused():
            module = lower(jitfn, params, {}, name=kernel_name(jitfn, params))
            module.options = options
            from .passes import run_pipeline

            module = run_pipeline(module, options, upto="dce")  # the "tile" artifact: after target-independent passes
            tile = print_module(module)
            from .codegen import compile_function

            out = compile_function(module, options, cubin=False)
    except CompilationError as e:
        raise e.with_traceback(None) from e.__cause__
    meta = dict(out["meta"])
    meta.setdefault("name", module.function.name)
    meta["arch"] = arch
    arts = {"tile": tile.encode(), "llir": out["llir"].encode(), "ptx": out["ptx"].encode(),
            "metadata.json": json.dumps(meta, default=str).encode()}
    asm = StageArtifacts({"tile": tile, "llir": out["llir"], "ptx": out["ptx"]}, arch=arch,
                         on_cubin=_cubin_saver(disk, key, arts) if disk is not None else None)
    if out.get("cubin"):  # assembled already (the code generator read its resources): kept, not made again
        dict.__setitem__(asm, "cubin", out["cubin"])
        arts["cubin"] = out["cubin"]
        _stats["assembled"] += 1
    k = CompiledKernel(meta["name"], asm, meta, key)
    if disk is not None:
        try:
            disk.put(key, arts)
        except Exception:
            pass
    _mem_cache[key] = k
    return k


def _from_entry(key, hit: dict, arch, disk) -> CompiledKernel:
    meta = json.loads(_txt(hit["metadata.json"]))
    asm = StageArtifacts({"tile": _txt(hit.get("tile")), "llir": _txt(hit.get("llir")),
                          "ptx": _txt(hit.get("ptx"))}, arch=meta.get("arch", arch),
                         on_cubin=_cubin_saver(disk, key, hit) if disk is not None else None)
    if hit.get("cubin"):
        dict.__setitem__(asm, "cubin", hit["cubin"])
    return CompiledKernel(meta["name"], asm, meta, key)


def export(kernel: CompiledKernel) -> dict:
    """A compiled kernel's cache entry as bytes by artifact name ("tile", "llir", "ptx", "metadata.json" and, where
    ptxas is present, "cubin", assembled now if it was not yet): what `install` takes on another machine."""
    asm = kernel.asm
    out = {}
    for name in ("tile", "llir", "ptx"):
        v = asm.cached(name) if isinstance(asm, StageArtifacts) else asm.get(name)
        if v is not None:
            out[name] = v.encode() if isinstance(v, str) else bytes(v)
    cubin = asm.get("cubin")  # StageArtifacts: runs ptxas on first access when it is installed
    if cubin:
        out["cubin"] = bytes(cubin)
    out["metadata.json"] = json.dumps(kernel.metadata, default=str).encode()
    return out


def cached(key: str) -> bool:
    """Whether this process can load the kernel `key` without compiling (in memory, or in the disk cache)."""
    if key in _mem_cache:
        return True
    disk = _disk_cache()
    return disk is not None and disk.get(key, ("metadata.json",)) is not None


def install(key: str, artifacts: dict) -> CompiledKernel:
    """File a kernel compiled elsewhere (`export`'s artifacts) under its cache key, in memory and in the disk
    cache, so the launches of this process that specialize to `key` load it instead of compiling. The key is the
    compiling machine's (`cache_key`): it matches here when this machine's compiler and toolchain are the same."""
    with _lock:
        k = _mem_cache.get(key)
        if k is not None:
            return k
    disk = _disk_cache()
    hit = {n: (v if n == "cubin" else _txt(v)) for n, v in artifacts.items()}
    k = _from_entry(key, hit, None, disk)
    if disk is not None:
        try:
            disk.put(key, {n: (v.encode() if isinstance(v, str) else v) for n, v in hit.items()})
        except Exception:
            pass  # the disk cache is only a cache
    _stats["installed"] += 1
    _mem_cache[key] = k
    return k


def _txt(b):
    if b is None:
        return None
    return b.decode() if isinstance(b, (bytes, bytearray)) else b


def _cubin_saver(disk, key, arts):
    """Store a cubin made later (by ptxas on first access) into the kernel's disk-cache entry."""
    def save(cubin):
        if disk is None:
            return
        try:
            full = {k: (v.encode() if isinstance(v, str) else v) for k, v in arts.items()}
            full["cubin"] = cubin
            disk.put(key, full, replace=True)
        except Exception:
            pass

    return save
