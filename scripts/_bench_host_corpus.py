"""The corpus half of scripts/bench_host.py: every kernel of workloads/corpus under both compilers, CPU only.

Each case is specialized as on the H200 (scripts/bench_corpus.py --compile-only does the same): GPU meta-parameters,
GPU-size integer arguments, CI-size NumPy arrays standing in for the pointers. Ours: `kernel.warmup(...,
target="sm_90a")`. Triton: its own binder (specialization of every argument, as a launch makes it; a pointer is an
object with the array's dtype and a 16-byte aligned data_ptr), `_pack_args`, then `triton.compile(ASTSource(...),
target=GPUTarget("cuda", 90, 32))` -- what `JITFunction.run` does, without a driver. The kernel file is loaded by
compiler.triton_compat.load_kernel_file for ours (`import triton` meaning our compiler) and by a plain import for
Triton (the real one), so neither side pays for the other's packages.
"""
from __future__ import annotations

import importlib.util
import json
import os
import resource
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET_OURS = "sm_90a"


def case_files(select=None) -> dict:
    """{case name: corpus file path} of the cases that load under our compiler (in the parent process)."""
    if ROOT not in sys.path:
        sys.path.insert(0, ROOT)
    import workloads.corpus as corpus

    return {n: str(corpus.HERE / c.file) for n, c in corpus.load("tilefarm", select).items() if not c.xfail}


def _load_module(path: str, which: str):
    if ROOT not in sys.path:
        sys.path.insert(0, ROOT)
    if which == "ours":
        from compiler.triton_compat import load_kernel_file

        return load_kernel_file(path, compiler="tilefarm")
    name = "_hostbench_triton_" + os.path.basename(path)[:-3]
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def cases_of(path: str, which: str) -> dict:
    return {c.name: c for c in getattr(_load_module(path, which), "CASES", [])}


def prepare(case):
    """(launch args, constexprs + options) of a case at the GPU specialization, on CI-size arrays."""
    pc, pg, meta = case.params("ci"), case.params("gpu"), case.meta_for("gpu")
    arrays = {**case.make_inputs(pc), **case.make_outputs(pc)}
    _, args = case.launch(pg, arrays, meta)
    consts, opts = case.split_meta(meta)
    return list(args), {**consts, **opts}


class _Ptr:
    """What Triton's binder needs of a tensor argument: its dtype's name and a 16-byte aligned address."""

    def __init__(self, dtype_name):
        self.dtype = dtype_name

    def data_ptr(self):
        return 1 << 20


def compile_ours(case, args, kw):
    k = case.kernel.warmup(*args, grid=(1,), target=TARGET_OURS, **kw)
    return k.asm["cubin"], k.asm["ptx"], int(k.metadata.get("shared_bytes", 0))


def compile_triton(case, args, kw):
    import numpy as np
    import triton
    from triton import knobs
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.compiler.compiler import make_backend
    from triton.runtime.autotuner import Autotuner, Heuristics
    from triton.runtime.jit import JITFunction, create_function_from_signature

    kw = dict(kw)
    fn = case.kernel
    while not isinstance(fn, JITFunction):
        if isinstance(fn, Heuristics):
            named = {**dict(zip(fn.arg_names, args)), **kw}
            for name, h in fn.values.items():
                kw[name] = named[name] = h(named)
        elif isinstance(fn, Autotuner):
            raise SystemExit(f"{case.name}: an autotuned corpus kernel (the benchmark compiles one config)")
        fn = fn.fn
    target = GPUTarget("cuda", 90, 32)
    backend = make_backend(target)
    kw["debug"] = kw.get("debug", fn.debug) or knobs.runtime.debug
    kw["instrumentation_mode"] = knobs.compilation.instrumentation_mode
    targs = [_Ptr(str(a.dtype)) if isinstance(a, np.ndarray) else a for a in args]
    binder = create_function_from_signature(fn.signature, fn.params, backend)
    bound, spec, options = binder(*targs, **kw)
    options, signature, constexprs, attrs = fn._pack_args(backend, kw, bound, spec, options)
    k = triton.compile(ASTSource(fn, signature, constexprs, attrs), target=target, options=options.__dict__)
    return k.asm["cubin"], k.asm["ptx"], int(k.metadata.shared)


def _check(which, name, cubin, ptx):
    text = ptx if isinstance(ptx, str) else ptx.decode()
    if not cubin or ".entry" not in text:
        raise SystemExit(f"{which} {name}: empty cubin or PTX")
    return text


def cpu_s() -> float:
    """CPU time so far, user + system, of this process and of the children it waited for (ptxas runs as one)."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def child(which: str, mode: str, items: list, ptx_dir: str | None) -> None:
    """fresh: import + load the case's file + compile one kernel, in this fresh process. warm: compile names[0]
    untimed, then each other name, timed (each after at least one other kernel in the process)."""
    t0, c0 = time.perf_counter(), cpu_s()
    if which == "ours":
        import compiler  # noqa: F401
    else:
        import triton  # noqa: F401
    t_import = time.perf_counter() - t0
    comp = compile_ours if which == "ours" else compile_triton
    files = dict(reversed(it.split("::", 1)) for it in items)  # "path::name"
    names = [it.split("::", 1)[1] for it in items]
    out = {"import_s": t_import, "kernels": {}}
    if mode == "fresh":
        (name,) = names
        case = cases_of(files[name], which)[name]
        args, kw = prepare(case)
        c1, t1 = cpu_s(), time.perf_counter()
        cubin, ptx, shared = comp(case, args, kw)
        t2, c2 = time.perf_counter(), cpu_s()
        text = _check(which, name, cubin, ptx)
        out["kernels"][name] = {"compile_s": t2 - t1, "fresh_s": t2 - t0, "compile_cpu_s": c2 - c1,
                                "fresh_cpu_s": c2 - c0, "cubin_bytes": len(cubin), "ptx_bytes": len(text),
                                "dyn_shared": shared}
        if ptx_dir:
            with open(os.path.join(ptx_dir, f"{name}.{which}.ptx"), "w") as f:
                f.write(text)
    else:
        loaded = {}
        for name in names:
            path = files[name]
            if path not in loaded:
                loaded[path] = cases_of(path, which)
        first = True
        for name in names:
            case = loaded[files[name]][name]
            args, kw = prepare(case)
            c1, t1 = cpu_s(), time.perf_counter()
            cubin, ptx, _ = comp(case, args, kw)
            dt, dc = time.perf_counter() - t1, cpu_s() - c1
            _check(which, name, cubin, ptx)
            if not first:
                out["kernels"][name] = {"warm_s": dt, "warm_cpu_s": dc, "warm_after": names[0]}
            first = False
    print(json.dumps(out))
