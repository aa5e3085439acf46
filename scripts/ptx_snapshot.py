#!/usr/bin/env python3
"""The generated PTX of the benchmark and test kernels, as sha256 per kernel and config (no GPU needed).

    python3 scripts/ptx_snapshot.py            # compile every case, compare with the snapshot, list what changed
    python3 scripts/ptx_snapshot.py --update   # write the snapshot anew (a commit that changes codegen on purpose)
    python3 scripts/ptx_snapshot.py --show KEY # print one case's PTX

The cases: our matmul (workloads/matmul) at every config of scripts/bench_matmul.py (fp16 and bf16, sm_90a: wgmma,
and two at sm_80: mma.sync), attention (workloads/attention) at every config of bench_matmul's wide list (sm_90a)
and one at sm_80, the memory-bound workloads at the metas of scripts/bench_memory.py (sm_90: what the H200 gets),
the kernels of tests/dot/kernels.py and the IR-built kernels of tests/codegen/kernels.py at representative configs,
scripts/bench_idioms.py's matmul idioms (tests/dot/epilogue_kernels.py) at its config, and the idiom corpus's timed
table (workloads/corpus, tests/corpus/test_corpus.py TABLE) at its GPU meta-parameters.
Pointers are stood in by small 16-byte-aligned NumPy arrays, so a parameter specializes as it does in the benchmark
(dtype, alignment, integers divisible by 16). The snapshot is tests/codegen/ptx_snapshot.json, checked by
tests/codegen/test_ptx_snapshot.py: a change in code generation shows there at once, and a commit that means it
regenerates the snapshot with --update. Code-changing environment switches are cleared and the kernel caches are
off while the cases compile, so the snapshot is always of the default code, freshly built. The hash is of the PTX
without its source line information (`.loc` / `.file` directives, codegen/ptx.py strip_line_info): a kernel moved
within its file keeps its hash, and line info on or off hashes the same. Every run also checks that code generation
only reads the IR (IRGuard): a case whose IR differs after its emission fails the run.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SNAPSHOT = os.path.join(ROOT, "tests", "codegen", "ptx_snapshot.json")
for p in (ROOT, os.path.join(ROOT, "scripts"), os.path.join(ROOT, "tests", "codegen")):
    if p not in sys.path:
        sys.path.insert(0, p)

def _code_env():
    """Environment switches that change generated code (compiler.compile.ENV_OPTIONS, and the target)."""
    from compiler.compile import ENV_OPTIONS

    return tuple(ENV_OPTIONS) + ("TILEFARM_ARCH",)


def _clean_env():
    for k in _code_env():
        os.environ.pop(k, None)
    os.environ["TILEFARM_CACHE"] = "0"  # no disk cache: every case is built now


def _arr(np, dtype, n=64):
    """A small array whose data is 16-byte aligned (what a pointer parameter's specialization looks at)."""
    buf = np.zeros(n * np.dtype(dtype).itemsize + 16, np.uint8)
    off = (-buf.ctypes.data) % 16
    return buf[off:off + n * np.dtype(dtype).itemsize].view(dtype)


def cases() -> dict:
    """{key: thunk returning PTX text}, in a fixed order."""
    import numpy as np

    out = {}
    _matmul_cases(out, np)
    _attention_cases(out, np)
    _memory_cases(out, np)
    _dot_test_cases(out, np)
    _idiom_cases(out, np)
    _corpus_cases(out)
    _codegen_test_cases(out)
    return out


def _matmul_cases(out, np):
    import bench_matmul as BM
    from workloads._common import np_dtype
    from workloads.matmul import kernel as MK

    S = 4096
    bias = _arr(np, np.float32)

    def thunk(dt, cfg, arch):
        BMk, BN, BK, GM, nw, ns = cfg
        a = _arr(np, np_dtype(dt))
        return lambda: MK.matmul_kernel.warmup(
            a, a, a, bias, S, S, S, S, 1, S, 1, S, 1, grid=(1,), target=arch, BLOCK_M=BMk, BLOCK_N=BN, BLOCK_K=BK,
            GROUP_M=GM, EPILOGUE="none", PRECISION="tf32", num_warps=nw, num_stages=ns).asm["ptx"]

    for dt in ("float16", "bfloat16"):
        for cfg in BM.MATMUL_CONFIGS:
            out[f"matmul/{dt}/{_mm_name(cfg)}/sm_90a"] = thunk(dt, cfg, "sm_90a")
    for cfg in BM.MATMUL_CONFIGS[:1] + BM.MATMUL_CONFIGS[4:5]:
        out[f"matmul/float16/{_mm_name(cfg)}/sm_80"] = thunk("float16", cfg, "sm_80")


def _mm_name(cfg):
    BMk, BN, BK, GM, nw, ns = cfg
    return f"{BMk}x{BN}x{BK}-g{GM}-w{nw}-s{ns}"


def _attention_cases(out, np):
    import bench_matmul as BM
    from workloads.attention import kernel as AK

    BH, L = 32, 4096

    def thunk(D, cfg, arch):
        BMk, BN, nw, ns = cfg
        q = _arr(np, np.float16)
        return lambda: AK.attention_fwd_kernel.warmup(
            q, q, q, q, 1.0 / D ** 0.5, L, L * D, D, grid=(1,), target=arch, HEAD_DIM=D, BLOCK_M=BMk, BLOCK_N=BN,
            num_warps=nw, num_stages=ns).asm["ptx"]

    seen = set()
    for D, cfgs in list(BM.ATTN_WIDE.items()) + list(BM.ATTN_SMALL.items()):
        for cfg in cfgs:
            key = f"attention/D{D}/{cfg[0]}x{cfg[1]}-w{cfg[2]}-s{cfg[3]}/sm_90a"
            if key not in seen:
                seen.add(key)
                out[key] = thunk(D, cfg, "sm_90a")
    out["attention/D64/128x64-w4-s3/sm_80"] = thunk(64, (128, 64, 4, 3), "sm_80")
    del BH


def _memory_cases(out, np):
    import bench_memory as BMm
    import workloads
    from workloads._common import np_dtype

    reg = workloads.registry()
    for t in BMm.TARGETS:
        w = reg[t["workload"]]
        params = t["params"]
        for meta in t["metas"]:
            name = "-".join(f"{k}{v}" for k, v in sorted(meta.items())) or "default"
            key = f"{t['workload']}/{_params_name(params)}/{name}/sm_90"

            def thunk(w=w, params=params, meta=meta):
                arrays = {s.name: _arr(np, np_dtype(s.dtype)) for s in w.input_specs(params) + w.output_specs(params)}
                return _warm(w, arrays, params, {**meta, "target": "sm_90"})
            out[key] = thunk


def _warm(w, arrays, params, meta):
    """Compile a workload's kernel the way its launch would (its RUNNER's argument builder), without launching."""
    import importlib

    mod = importlib.import_module(w.kernel.fn.__module__.rsplit(".", 1)[0] + ".workload")
    return mod.RUNNER.warmup(arrays, params, meta).asm["ptx"]


def _params_name(params):
    return "-".join(f"{k}{v}" for k, v in params.items())


def _dot_test_cases(out, np):
    sys.path.insert(0, os.path.join(ROOT, "tests", "dot"))
    try:
        import importlib.util

        spec = importlib.util.spec_from_file_location("_dot_kernels", os.path.join(ROOT, "tests", "dot", "kernels.py"))
        K = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(K)
    finally:
        sys.path.pop(0)
    x = _arr(np, np.float16, 4096)
    f32 = _arr(np, np.float32, 4096)
    for arch in ("sm_90a", "sm_80"):
        out[f"tests.dot/batched_dot/BB2-BM16-BN16-BK32/{arch}"] = (
            lambda arch=arch: K.batched_dot_kernel.warmup(x, x, f32, grid=(1,), target=arch, BB=2, BM=16, BN=16,
                                                          BK=32).asm["ptx"])
    for read_l in (False, True):
        out[f"tests.dot/scaled_row_sums/BM64-BN32-READ_L{int(read_l)}-w4/sm_90"] = (
            lambda read_l=read_l: K.scaled_row_sums_kernel.warmup(f32, f32, f32, 7, grid=(1,), target="sm_90",
                                                                  BM=64, BN=32, READ_L=read_l, num_warps=4
                                                                  ).asm["ptx"])


def _idiom_cases(out, np):
    """scripts/bench_idioms.py's matmul idioms (tests/dot/epilogue_kernels.py) at its config, 4096^3."""
    from tests.dot import epilogue_kernels as E

    S = 4096
    a = _arr(np, np.float16)
    bias = _arr(np, np.float32)
    meta = dict(BM=128, BN=128, BK=64, num_warps=8, num_stages=3)
    scal = (S, S, S, S, 1, S, 1, S, 1)
    for act in ("none", "relu", "bias", "bias_silu", "where"):
        out[f"idioms/mm_{act}/128x128x64-w8-s3/sm_90a"] = (
            lambda act=act: E.mm_act_kernel.warmup(a, a, a, bias, *scal, grid=(1,), target="sm_90a", ACT=act,
                                                   **meta).asm["ptx"])
    c32 = _arr(np, np.float32)
    for name in ("mm_plus_eq", "mm_mask_all"):
        out[f"idioms/{name}/128x128x64-w8-s3/sm_90a"] = (
            lambda name=name: getattr(E, f"{name}_kernel").warmup(a, a, c32, *scal, grid=(1,), target="sm_90a",
                                                                  **meta).asm["ptx"])


def _corpus_cases(out):
    """The idiom corpus's timed table (tests/corpus/test_corpus.py TABLE) at the meta-parameters they are timed
    with, on their CI-size inputs (the specialization CI compiles them with)."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "corpus"))
    try:
        import importlib.util

        spec = importlib.util.spec_from_file_location("_corpus_test", os.path.join(ROOT, "tests", "corpus",
                                                                                   "test_corpus.py"))
        T = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(T)
    finally:
        sys.path.pop(0)
    for name in T.TABLE:
        c = T.CASES[name]

        def thunk(c=c):
            p, meta = c.params("ci"), c.meta_for("gpu")
            grid, args = c.launch(p, {**c.make_inputs(p), **c.make_outputs(p)}, meta)
            consts, opts = c.split_meta(meta)
            return c.kernel.warmup(*args, grid=grid, target="sm_90a", **consts, **opts).asm["ptx"]
        out[f"corpus/{name}/gpu-meta/sm_90a"] = thunk


def _codegen_test_cases(out):
    import kernels as K

    from compiler.ir import types as T

    def ir(build, arch="sm_90", **opts):
        def run():
            from compiler.codegen import compile_function
            from compiler.options import Options

            return compile_function(build(), Options(arch=arch, **opts), cubin=False)["ptx"]
        return run

    def unaligned_add():
        fn = K.add_kernel(1024)
        fn.arg_attrs = {}
        return fn

    c = "tests.codegen"
    out[f"{c}/add/1024-f32/sm_90"] = ir(lambda: K.add_kernel(1024))
    out[f"{c}/add/1024-f32-unaligned/sm_90"] = ir(unaligned_add)
    for dt in (T.float32, T.float16, T.bfloat16):
        out[f"{c}/softmax/1024-{dt.name}/sm_90"] = ir(lambda dt=dt: K.softmax_kernel(1024, dt))
    out[f"{c}/softmax/1024-f32-w8/sm_90"] = ir(lambda: K.softmax_kernel(1024), num_warps=8)
    out[f"{c}/row_normalize_2d/4x256-f32/sm_90"] = ir(lambda: K.row_normalize_2d())
    out[f"{c}/cumsum/1024-f32/sm_90"] = ir(lambda: K.cumsum_kernel(1024))
    out[f"{c}/cumsum/1024-f32-reverse/sm_90"] = ir(lambda: K.cumsum_kernel(1024, reverse=True))
    out[f"{c}/cumsum/256-f16/sm_90"] = ir(lambda: K.cumsum_kernel(256, T.float16))
    out[f"{c}/argmax/1024-f32/sm_90"] = ir(lambda: K.argmax_kernel(1024))
    for op in ("add", "max", "xchg"):
        out[f"{c}/atomics/256-f32-{op}/sm_90"] = ir(lambda op=op: K.atomics_kernel(256, T.float32, op))
    out[f"{c}/loop/512-f32/sm_90"] = ir(lambda: K.loop_kernel(512))
    out[f"{c}/if_while/128/sm_90"] = ir(lambda: K.if_while_kernel(128))
    out[f"{c}/transpose/64x32-f32/sm_90"] = ir(lambda: K.transpose_kernel())
    for kind, dt in (("exp", T.float32), ("log", T.float32), ("sqrt", T.float32), ("rsqrt", T.float32),
                     ("erf", T.float32), ("exp", T.float16), ("abs", T.bfloat16)):
        out[f"{c}/unary/{kind}-{dt.name}/sm_90"] = ir(lambda kind=kind, dt=dt: K.unary_kernel(kind, dt))
    for src, dst in ((T.float32, T.float16), (T.float32, T.bfloat16), (T.float16, T.float32), (T.int32, T.float32)):
        out[f"{c}/cast/{src.name}-{dst.name}/sm_90"] = ir(lambda src=src, dst=dst: K.cast_kernel(src, dst))
    for kind, dt in (("add", T.float16), ("fdiv", T.float32), ("max", T.float32), ("idiv", T.int32),
                     ("shr", T.int32)):
        out[f"{c}/binary/{kind}-{dt.name}/sm_90"] = ir(lambda kind=kind, dt=dt: K.binary_kernel(kind, dt))


def digest(ptx: str) -> str:
    """sha256 of the PTX without its source line information (`.loc` / `.file`: codegen/lineinfo.py), so moving a
    kernel in its file keeps the hash: the snapshot is of the code."""
    from compiler.codegen.ptx import strip_line_info

    return hashlib.sha256(strip_line_info(ptx).encode()).hexdigest()


def ir_fingerprint(fn) -> list:
    """Every op of a Function as (depth, kind, operand ids, results, all attrs incl. the passes' private ones)."""
    out = []

    def block(b, depth):
        out.append((depth, "^block", tuple((a.id, str(a.type)) for a in b.args), (), ()))
        for op in b.ops:
            out.append((depth, op.kind, tuple(v.id for v in op.operands),
                        tuple((r.id, str(r.type)) for r in op.results),
                        tuple(sorted((k, repr(v)) for k, v in op.attrs.items()))))
            for nb in op.blocks:
                block(nb, depth + 1)

    block(fn.body, 0)
    return out


def _first_change(before, after) -> str:
    for a, b in zip(before, after):
        if a != b:
            if a[:4] == b[:4]:
                da, db = dict(a[4]), dict(b[4])
                keys = sorted(k for k in set(da) | set(db) if da.get(k) != db.get(k))
                return f"op '{a[1]}': attrs {', '.join(keys)} written"
            return f"op '{a[1]}' became '{b[1]}' (or its operands/results changed)"
    return f"{len(after) - len(before):+d} ops"


class IRGuard:
    """While active, every `compiler.codegen.llvm.emit_llvm` call fingerprints the module's IR before and after
    emission; `changes` lists (case, what changed) where code generation wrote into the IR (it must only read
    it: analyses belong to compiler/passes)."""

    def __init__(self):
        self.key = None
        self.calls = 0
        self.changes = []

    def __enter__(self):
        from compiler.codegen import llvm

        self._llvm, self._orig = llvm, llvm.emit_llvm

        def guarded(module, options):
            before = ir_fingerprint(module.function)
            try:
                return self._orig(module, options)
            finally:
                self.calls += 1
                after = ir_fingerprint(module.function)
                if after != before:
                    self.changes.append((self.key, _first_change(before, after)))
        llvm.emit_llvm = guarded
        return self

    def __exit__(self, *exc):
        self._llvm.emit_llvm = self._orig
        return False


def compute(only=None, guard=None) -> dict:
    """{key: sha256 of the PTX} for every case (or those whose key contains `only`); with an IRGuard, each case's
    emission is checked for writes into the IR."""
    _clean_env()
    got = {}
    for key, thunk in cases().items():
        if only and only not in key:
            continue
        if guard is not None:
            guard.key = key
        got[key] = digest(thunk())
    return got


def versions() -> dict:
    import llvmlite

    return {"llvmlite": llvmlite.__version__}


def load() -> dict:
    with open(SNAPSHOT) as f:
        return json.load(f)


def compare(want: dict, got: dict) -> list[str]:
    """Lines naming each changed, new and missing case (empty when the two agree)."""
    lines = []
    for k in sorted(set(want) | set(got)):
        if k not in got:
            lines.append(f"  missing now: {k}")
        elif k not in want:
            lines.append(f"  new case:    {k}")
        elif want[k] != got[k]:
            lines.append(f"  PTX changed: {k}")
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--update", action="store_true", help="write the snapshot from the current code")
    ap.add_argument("--show", metavar="KEY", help="print the PTX of one case")
    ap.add_argument("--list", action="store_true", help="list the cases")
    args = ap.parse_args(argv)
    if args.list:
        print("\n".join(cases()))
        return 0
    if args.show:
        _clean_env()
        print(cases()[args.show]())
        return 0
    with IRGuard() as guard:
        got = compute(guard=guard)
    if guard.changes:
        print(f"code generation wrote into the IR of {len(guard.changes)} cases (it must only read it; move the "
              "analysis into compiler/passes):\n" + "\n".join(f"  {k}: {w}" for k, w in guard.changes))
        return 1
    if args.update:
        with open(SNAPSHOT, "w") as f:
            json.dump({"versions": versions(), "ptx_sha256": got}, f, indent=1, sort_keys=True)
            f.write("\n")
        print(f"wrote {len(got)} cases to {os.path.relpath(SNAPSHOT, ROOT)}")
        return 0
    snap = load()
    diff = compare(snap["ptx_sha256"], got)
    if not diff:
        print(f"PTX of all {len(got)} cases as in the snapshot")
        return 0
    print(f"{len(diff)} of {len(got)} cases differ from {os.path.relpath(SNAPSHOT, ROOT)}:\n" + "\n".join(diff))
    if snap.get("versions") != versions():
        print(f"(the snapshot was made with {snap.get('versions')}, this run has {versions()})")
    print("If code generation changed on purpose: python scripts/ptx_snapshot.py --update, in the same commit.")
    return 1


if __name__ == "__main__":
    sys.exit(main())
