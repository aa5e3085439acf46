#!/usr/bin/env python3
"""The idiom corpus (workloads/corpus) under our compiler and under Triton, from the same source file, in one
process (issue 16).

    python3 scripts/bench_corpus.py [--out DIR] [--select 'mm_*,attn_*'] [--rounds 5] [--rep-ms 25] [--shard 1/2]
    python3 scripts/bench_corpus.py --interpret [--select ...]   # no GPU: both interpreters at the CI sizes
    python3 scripts/bench_corpus.py --compile-only [--select ...]  # no GPU: ours at the H200 specialization, ptxas
    python3 scripts/bench_corpus.py --table DIR/corpus-<date>.json  # re-render a stored run
    python3 scripts/bench_corpus.py --ab 'div_quot;scan_direct,div_quot' [--select ...]  # A/B in one process

Every corpus file is loaded twice through compiler.triton_compat.load_kernel_file: `triton` resolved to our
compiler, and to the real Triton. Per kernel, at its GPU size and meta-parameters (the same for both): seeded
inputs, the float64 NumPy reference, then for each compiler a first call on NaN-poisoned outputs (compiles;
its wall time is recorded as the compile time) checked against the reference. A kernel that fails to compile,
to run or the check under one compiler is recorded with the error and never timed for that compiler (and never
counted as a win). Each side is first run untimed for --settle-ms (100 ms, in turn): a dense matmul's first ~100 ms
of load run ~15% faster than the rest on the H100/H200 (clocks fall to the power limit), and without this the
sides timed first in a round would meet the faster clock. Then N interleaved rounds (the order alternating): each
side timed with
compiler.runtime.do_bench (L2 flushed before every repetition, median of CUDA-event times); the ratio ours/Triton
is taken round by round and its median reported. The table prints time per side, the ratio (min-max over rounds),
TFLOP/s or GB/s, and the geomean of the ratios of kernels correct under both; DIR/corpus-<date>.json and .md
keep every number. Outputs that accumulate (atomics: split-K, histogram, scatter-add) are zeroed before the
checked call only; timed calls keep accumulating (the work per call is the same).

--ab 'V1;V2,...': an A/B of code-generation switches (compiler/codegen/ptx.py AB_SWITCHES) in the same process
and the same rounds: each variant (a comma list of switches, TILEFARM_AB while it compiles) is one more side,
its own load of the corpus files (its own kernels), on the same inputs and reference, checked the same way and
timed interleaved with the default and Triton. Reported per kernel: variant / default and variant / Triton
(medians of per-round ratios), and their geomeans. Inputs and references are made once for all sides. The
pseudo-switch `ptxas128` in a variant assembles its kernels with the ptxas bundled with Triton (TILEFARM_PTXAS
while it compiles) instead of ours, `ptxas130` with the CUDA toolkit's (/usr/local/cuda): the toolchain A/B of
issue 24, same PTX, other assembler.

--interpret (TRITON_INTERPRET=1, torch on the CPU for Triton's interpreter): every kernel at its CI size in our
interpreter and in Triton's, both checked against the float64 reference: proof that the corpus is valid Triton
as written, and that both compilers agree with the reference.
"""
from __future__ import annotations

import argparse
import contextlib
import concurrent.futures
import datetime
import json
import math
import os
import platform
import sys
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402

SIDES = ("tilefarm", "triton")
AB_PREFIX = "ab:"  # a side of --ab: "ab:<switches>", our compiler with TILEFARM_AB=<switches> while it compiles


def triton_ptxas() -> str:
    """The ptxas bundled with Triton's wheel (what its kernels are assembled with)."""
    import triton

    p = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "ptxas")
    if not os.access(p, os.X_OK):
        raise RuntimeError(f"ptxas128: no ptxas bundled with Triton at {p}")
    return p


def cuda_ptxas() -> str:
    """The ptxas of the CUDA toolkit installed on the machine (/usr/local/cuda or CUDA_HOME)."""
    p = os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "ptxas")
    if not os.access(p, os.X_OK):
        raise RuntimeError(f"ptxas130: no ptxas at {p}")
    return p


PTXAS_VARIANTS = {"ptxas128": triton_ptxas, "ptxas130": cuda_ptxas}  # pseudo-switches of --ab: the assembler


def _clear_ptxas():
    from compiler.codegen.ptx import find_ptxas

    find_ptxas.cache_clear()


def base(side: str) -> str:
    """The compiler a side runs: an A/B variant is ours."""
    return "tilefarm" if side.startswith(AB_PREFIX) else side


def ab_sides(cases) -> list:
    return [s for s in cases if s.startswith(AB_PREFIX)]
# what Triton's own interpreter cannot run (reported as such by --interpret, not as a corpus error)
TRITON_INTERPRETER_GAPS = {
    "bfloat16 tl.dot": "Triton's interpreter multiplies bfloat16 bit patterns in tl.dot (triton-lang/triton#11584)",
    "libdevice": "libdevice calls evaluate to None in Triton 3.6's interpreter (they run on the GPU)",
}


def log(*a):
    print(*a, file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------------------------- host <-> torch
def torch_dtype(torch, name):
    return {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32,
            "float64": torch.float64, "int32": torch.int32, "int64": torch.int64, "int16": torch.int16,
            "int8": torch.int8, "uint8": torch.uint8, "bool": torch.bool}[name]


def to_torch(torch, a, device):
    from workloads.corpus._case import is_bf16

    if is_bf16(a):  # ml_dtypes bfloat16 or BF16Bits: moved as their bits (torch cannot read either directly)
        return torch.from_numpy(np.ascontiguousarray(np.asarray(a).view(np.int16))).view(torch.bfloat16).to(device)
    return torch.from_numpy(np.ascontiguousarray(a)).to(device)


def to_host(torch, t, dt_name):
    from workloads.corpus._case import BF16, BF16Bits

    t = t.detach().cpu()
    if dt_name == "bfloat16":
        bits = t.view(torch.int16).numpy()
        return bits.view(BF16) if BF16 is not None else bits.view(np.uint16).view(BF16Bits)
    return t.numpy()


def split_err(res: dict) -> tuple[bool, str]:
    ok = all(v[0] for v in res.values())
    msg = "; ".join(f"{k}: {v[2]}" for k, v in res.items())
    return ok, msg


def short(e: BaseException) -> str:
    s = f"{type(e).__name__}: {e}"
    return s if len(s) < 600 else s[:600] + " ..."


# ----------------------------------------------------------------------------------------------- GPU run
def bench(fn, rep_ms, warmup_ms):
    from compiler.runtime import do_bench

    return do_bench(fn, warmup_ms=warmup_ms, rep_ms=rep_ms)["median_ms"]


class CudaDevice:
    """Inputs as torch CUDA tensors shared by both compilers; do_bench timing."""
    size = "gpu"

    def __init__(self, args):
        import torch

        self.torch, self.args = torch, args

    def inputs(self, host):
        return {k: to_torch(self.torch, v, "cuda") for k, v in host.items()}

    def side_inputs(self, side, dev):
        return dev

    def outputs(self, side, host_outs):
        return {k: to_torch(self.torch, v, "cuda") for k, v in host_outs.items()}

    def back(self, side, t, dt):
        return to_host(self.torch, t, dt)

    def sync(self):
        self.torch.cuda.synchronize()

    def time(self, fn):
        return bench(fn, self.args.rep_ms, self.args.warmup_ms)

    def sustain(self, fn, seconds):
        """`fn` back to back for `seconds` (no L2 flush) while nvidia-smi samples the board every 50 ms: the time
        per call under sustained load and the power and SM clock it settles at (the samples of the first half
        second dropped). A kernel that draws more power for the same work runs at lower clocks once the board
        reaches its power limit."""
        import subprocess

        smi = subprocess.Popen(["nvidia-smi", "--query-gpu=power.draw,clocks.sm,temperature.gpu",
                                "--format=csv,noheader,nounits", "-lms", "50"], stdout=subprocess.PIPE, text=True)
        try:
            t0 = time.perf_counter()
            calls = 0
            half = None
            while time.perf_counter() - t0 < seconds:
                for _ in range(16):
                    fn()
                self.torch.cuda.synchronize()
                calls += 16
                if half is None and time.perf_counter() - t0 >= seconds / 2:
                    half = (time.perf_counter(), calls)
            t1 = time.perf_counter()
        finally:
            smi.terminate()
            out, _ = smi.communicate(timeout=5)
        rows = [[float(x) for x in ln.split(",")] for ln in out.strip().splitlines() if ln.count(",") == 2]
        rows = rows[10:] or rows
        got = {"calls": calls, "ms_per_call": (t1 - t0) * 1e3 / calls}
        if half is not None and calls > half[1]:
            got["ms_per_call_2nd_half"] = (t1 - half[0]) * 1e3 / (calls - half[1])
        if rows:
            got.update(power_w=float(np.mean([r[0] for r in rows])), sm_mhz=float(np.mean([r[1] for r in rows])),
                       temp_c=float(np.max([r[2] for r in rows])))
        return got

    def settle(self, fns, ms):
        """Run the sides' calls in turn, untimed, for about `ms` each: the GPU reaches the clocks it holds under
        sustained load (a heavy kernel's first ~100 ms run faster than the rest) before the first timed round, so
        the rounds compare the sides in one state instead of the first sides timed in a cooler one."""
        for fn in fns * 2:
            t0 = time.perf_counter()
            while (time.perf_counter() - t0) * 1e3 < ms / 2:
                for _ in range(8):
                    fn()
                self.torch.cuda.synchronize()

    def release(self):
        self.torch.cuda.empty_cache()


class DryDevice:
    """--dry-run, no GPU: the same flow at the CI sizes, ours in our interpreter (NumPy arrays), Triton in its
    interpreter (torch CPU tensors); "times" are wall-clock medians of a few calls (they mean nothing)."""
    size = "ci"

    def __init__(self, args):
        try:
            import torch
        except ImportError:
            torch = None
        self.torch, self.args = torch, args

    def inputs(self, host):
        return host

    def side_inputs(self, side, dev):
        if base(side) == "tilefarm":
            return dev
        if self.torch is None:
            raise ImportError("--dry-run needs torch for Triton's interpreter")
        return {k: to_torch(self.torch, v, "cpu") for k, v in dev.items()}

    def outputs(self, side, host_outs):
        return host_outs if base(side) == "tilefarm" else self.side_inputs(side, host_outs)

    def back(self, side, t, dt):
        return t if base(side) == "tilefarm" else to_host(self.torch, t, dt)

    def sync(self):
        pass

    def settle(self, fns, ms):
        pass

    def sustain(self, fn, seconds):
        return {}

    def time(self, fn):
        ts = []
        for _ in range(3):
            t0 = time.perf_counter()
            fn()
            ts.append((time.perf_counter() - t0) * 1e3)
        return float(np.median(ts))

    def release(self):
        pass


_WORKER_CASES: dict = {}


def _reference_job(name: str, size: str):
    """(--prepare-ahead, in a worker process) the float64 reference of corpus case `name` at `size` from its
    seeded inputs: the same arrays the timing process makes (make_inputs(p, seed=0)), so the same reference. The
    case comes from our compiler's load of the corpus (no GPU, no CUDA context in the worker), or Triton's where
    ours has no such case."""
    import workloads.corpus as corpus

    if not _WORKER_CASES:
        for side in ("triton", "tilefarm"):  # ours last: it wins where both load the case
            _WORKER_CASES.update(corpus.load(side, None, errors={}))
    c = _WORKER_CASES[name]
    p = c.params(size)
    return c.expected(p, c.make_inputs(p, seed=0))


class _Ahead:
    """--prepare-ahead N: the references of the next N kernels computed in N worker processes (spawned, their
    BLAS threads limited so that the timing process keeps its cores) while the current kernel compiles and is
    timed; N = 0 computes each reference on a thread beside its own compiles, as before."""

    def __init__(self, names, size, n):
        self.names, self.size, self.n, self.futures = list(names), size, n, {}
        self.pool = None
        if n > 0:
            import multiprocessing

            per = str(max(1, (os.cpu_count() or 2) // (2 * n)))
            for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
                os.environ.setdefault(k, per)  # read by the workers' NumPy at import (this process's is set)
            self.pool = concurrent.futures.ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("spawn"))

    def take(self, i):
        """The future of kernel i's reference (None: compute it here), after queueing those up to i + n."""
        if self.pool is None:
            return None
        for j in range(i, min(i + self.n + 1, len(self.names))):
            if j not in self.futures:
                self.futures[j] = self.pool.submit(_reference_job, self.names[j], self.size)
        return self.futures.pop(i)

    def close(self):
        if self.pool is not None:
            for f in self.futures.values():
                f.cancel()
            self.pool.shutdown(wait=True, cancel_futures=True)


def run_gpu(names, cases, args, device=None):
    dev = device or CudaDevice(args)
    rows = []
    sides = list(SIDES) + ab_sides(cases)
    ahead = _Ahead(names, dev.size, getattr(args, "prepare_ahead", 0))
    budget = getattr(args, "budget_s", 0) or 0
    t0 = time.time()
    try:
        for i, name in enumerate(names):
            if budget and time.time() - t0 > budget:  # the rest left out; the table and JSON say which
                log(f"--budget-s {budget:g} spent after {i} of {len(names)} kernels: not run: {', '.join(names[i:])}")
                args.not_run = list(names[i:])
                break
            _run_one(i, name, cases, sides, args, dev, ahead, rows)
    finally:
        ahead.close()
    return rows


def _run_one(i, name, cases, sides, args, dev, ahead, rows):
    """One kernel of run_gpu: inputs, every side's first call, the check against the reference, the timed rounds;
    its row appended to rows."""
    pair = {s: cases[s].get(name) for s in sides}
    c = pair["tilefarm"] or pair["triton"]
    p, meta = c.params(dev.size), c.meta_for(dev.size)
    row = {"name": name, "file": getattr(c, "file", ""), "idiom": c.idiom, "params": p,
           "meta": meta, "flops": float(c.flops(p)), "bytes": float(c.bytes(p))}
    if c.xfail:
        row["xfail"] = c.xfail
    t0 = time.time()
    try:
        host = c.make_inputs(p, seed=0)
        dev_in = dev.inputs(host)
    except Exception as e:  # noqa: BLE001
        row["error"] = f"inputs: {short(e)}"
        rows.append(row)
        log(f"{name}: {row['error']}")
        return
    # the float64 reference is computed on a thread while both compilers compile and run the kernel once
    # (NumPy releases the GIL); nothing runs beside the timed rounds, unless --prepare-ahead computes the next
    # kernels' references in worker processes
    pool = concurrent.futures.ThreadPoolExecutor(1)
    ref_future = ahead.take(i) or pool.submit(c.expected, p, host)
    pending = {}
    for side in sides:
        ent = row[side] = {}
        case = pair[side]
        if case is None:
            ent["error"] = cases["errors"][side].get(c.file, f"not loaded under {side}")
            continue
        saved_ab = os.environ.get("TILEFARM_AB")
        saved_ptxas = os.environ.get("TILEFARM_PTXAS")
        if side.startswith(AB_PREFIX):  # read while the first call compiles (and in its cache key)
            switches = side[len(AB_PREFIX):].split(",")
            os.environ["TILEFARM_AB"] = ",".join(x for x in switches if x not in PTXAS_VARIANTS)
            for x in switches:
                if x in PTXAS_VARIANTS:
                    os.environ["TILEFARM_PTXAS"] = PTXAS_VARIANTS[x]()
                    _clear_ptxas()
        elif len(sides) > len(SIDES):  # an in-process A/B: the default side is the code without switches
            os.environ.pop("TILEFARM_AB", None)
        try:
            outs = dev.outputs(side, case.make_outputs(p))  # poisoned (NaN / sentinel), or zero (atomics)
            arrays = {**dev.side_inputs(side, dev_in), **outs}
            grid, a = case.launch(p, arrays, meta)
            consts, opts = case.split_meta(meta)
            kern = case.kernel
            dev.sync()
            t1 = time.time()
            with case.memory(kern, arrays):
                kern[grid](*a, **consts, **opts)
            dev.sync()
            ent["first_call_s"] = round(time.time() - t1, 3)  # compile (cold or cached) + one run
            pending[side] = (case, kern, grid, a, {**consts, **opts}, outs, case.memory(kern, arrays))
        except Exception as e:  # noqa: BLE001
            ent["ok"] = False
            ent["error"] = short(e)
            if args.verbose:
                traceback.print_exc()
        finally:
            if saved_ab is None:
                os.environ.pop("TILEFARM_AB", None)
            else:
                os.environ["TILEFARM_AB"] = saved_ab
            if os.environ.get("TILEFARM_PTXAS") != saved_ptxas:
                if saved_ptxas is None:
                    os.environ.pop("TILEFARM_PTXAS", None)
                else:
                    os.environ["TILEFARM_PTXAS"] = saved_ptxas
                _clear_ptxas()
    try:
        ref = ref_future.result()
    except Exception as e:  # noqa: BLE001
        row["error"] = f"reference: {short(e)}"
        ref = None
    pool.shutdown()
    del host
    row["prepare_s"] = round(time.time() - t0, 2)  # inputs, both first calls, the reference
    fns = {}
    for side, (case, kern, grid, a, kw, outs, mem) in pending.items():
        ent = row[side]
        if ref is None:
            ent["ok"], ent["check"] = False, "no reference"
            continue
        try:
            specs = case.outputs(p)
            got = {k: dev.back(side, outs[k], specs[k][1]) for k in ref}
            ok, msg = split_err(case.check(p, got, ref))
            ent["ok"], ent["check"] = ok, msg
            if ok and isinstance(mem, contextlib.nullcontext):
                fns[side] = (lambda kern=kern, grid=grid, a=a, kw=kw: kern[grid](*a, **kw))
            elif ok:  # an interpreted launch that reads pointer arrays (Case.memory)
                fns[side] = (lambda kern=kern, grid=grid, a=a, kw=kw, mem=mem: _within(mem, kern[grid], a, kw))
        except Exception as e:  # noqa: BLE001
            ent["ok"] = False
            ent["error"] = short(e)
    del pending
    del ref
    if fns:
        samples = {s: [] for s in fns}
        order = list(fns)
        if args.settle_ms > 0:
            dev.settle(list(fns.values()), args.settle_ms)
        for r in range(args.rounds):
            for s in (order if r % 2 == 0 else order[::-1]):
                if row[s].get("ok"):
                    try:
                        samples[s].append(dev.time(fns[s]))
                    except Exception as e:  # noqa: BLE001
                        row[s]["error"] = f"timing: {short(e)}"
                        row[s]["ok"] = False
        for s, v in samples.items():
            if v and row[s].get("ok"):
                row[s]["rounds_ms"] = v
                row[s]["ms"] = float(np.median(v))
        if all(row[s].get("ms") for s in SIDES):
            ratios = [a / b for a, b in zip(row["tilefarm"]["rounds_ms"], row["triton"]["rounds_ms"])]
            row["ratio"] = float(np.median(ratios))
            row["ratio_min"], row["ratio_max"] = float(min(ratios)), float(max(ratios))
        if args.sustain_s > 0:
            for s in order:
                if row[s].get("ok"):
                    row[s]["sustain"] = dev.sustain(fns[s], args.sustain_s)
        for s in sides[len(SIDES):]:  # A/B variants: per-round ratios to the default and to Triton
            got = {}
            for ref_side, label in (("tilefarm", "vs_default"), ("triton", "vs_triton")):
                if row[s].get("ms") and row[ref_side].get("ms"):
                    rs = [a / b for a, b in zip(row[s]["rounds_ms"], row[ref_side]["rounds_ms"])]
                    got[label] = float(np.median(rs))
                    got[label + "_min"], got[label + "_max"] = float(min(rs)), float(max(rs))
            row.setdefault("ab", {})[s[len(AB_PREFIX):]] = got
    del fns, dev_in
    dev.release()
    row["wall_s"] = round(time.time() - t0, 2)
    rows.append(row)
    log(line(row))


# ----------------------------------------------------------------------------------------------- interpreters
def interpreter_gap(case):
    """Which of TRITON_INTERPRETER_GAPS the kernel runs into, if any: tl.dot on a bfloat16 input, libdevice."""
    import inspect

    from workloads.corpus._case import is_bf16

    fn = getattr(case.kernel, "fn", case.kernel)
    try:
        src = inspect.getsource(fn)
        module_src = inspect.getsource(inspect.getmodule(fn))  # jit helpers it calls live there too
    except (OSError, TypeError):
        return None
    # the kernel and the jit helpers it calls (by name, transitively) in its module
    mod = inspect.getmodule(fn)
    helpers = {n: getattr(getattr(mod, n), "fn", None) for n in dir(mod)}
    seen, todo, texts = set(), [src], [src]
    while todo:
        text = todo.pop()
        for n, h in helpers.items():
            if h is not None and n not in seen and f"{n}(" in text:
                seen.add(n)
                try:
                    hs = inspect.getsource(h)
                except (OSError, TypeError):
                    continue
                texts.append(hs)
                todo.append(hs)
    if any("libdevice." in t for t in texts):
        return "libdevice"
    x = case.make_inputs(case.params("ci"), seed=1)
    if "tl.dot(" in module_src:
        if any(is_bf16(v) for v in x.values()):
            return "bfloat16 tl.dot"
    return None


def run_interpret(names, cases, args):
    import torch

    rows = []
    for name in names:
        row = {"name": name}
        for side in SIDES:
            case = cases[side].get(name)
            ent = row[side] = {}
            if case is None:
                ent["error"] = cases["errors"][side].get(getattr(cases["tilefarm"].get(name), "file", ""),
                                                         "not loaded")
                continue
            p, meta = case.params("ci"), case.meta_for("ci")
            try:
                x = case.make_inputs(p, seed=1)
                ref = case.expected(p, x)
                outs = case.make_outputs(p)
                if side == "tilefarm":
                    arrays = {**x, **outs}
                    case.run(case.kernel, arrays, p, meta)
                    got = outs
                else:
                    tin = {k: to_torch(torch, v, "cpu") for k, v in {**x, **outs}.items()}
                    case.run(case.kernel, tin, p, meta)
                    specs = case.outputs(p)
                    got = {k: to_host(torch, tin[k], specs[k][1]) for k in outs}
                ent["ok"], ent["check"] = split_err(case.check(p, got, ref))
            except Exception as e:  # noqa: BLE001
                ent["ok"], ent["error"] = False, short(e)
            xf = getattr(case, "xfail", None)
            if xf and side == "tilefarm":
                row["xfail"] = xf
            if side == "triton" and not ent.get("ok"):
                gap = interpreter_gap(case)
                if gap:
                    ent["gap"] = TRITON_INTERPRETER_GAPS[gap]
        rows.append(row)
        log(f"{name:32s} " + "  ".join(f"{s}: {'ok' if row[s].get('ok') else 'FAIL ' + row[s].get('error', row[s].get('check', ''))[:160]}"
                                      for s in SIDES))
    return rows


def run_compile_only(names, cases, args):
    """Our compiler only, no GPU: each kernel specialized exactly as on the H200 (GPU-size integer arguments,
    GPU meta-parameters; CI-size arrays stand in for the pointers, nothing is launched), compiled for
    --target and assembled by ptxas."""
    rows = []
    for name in names:
        case = cases["tilefarm"].get(name)
        row = {"name": name, "tilefarm": {}}
        if case is None:
            row["tilefarm"] = {"ok": False, "error": "not loaded"}
            rows.append(row)
            continue
        pc, pg, meta = case.params("ci"), case.params("gpu"), case.meta_for("gpu")
        t0 = time.time()
        try:
            arrays = {**case.make_inputs(pc), **case.make_outputs(pc)}
            grid, a = case.launch(pg, arrays, meta)
            consts, opts = case.split_meta(meta)
            k = case.kernel.warmup(*a, grid=grid, target=args.target, **consts, **opts)
            row["tilefarm"] = {"ok": len(k.asm["cubin"]) > 0, "compile_s": round(time.time() - t0, 2)}
        except Exception as e:  # noqa: BLE001
            row["tilefarm"] = {"ok": False, "error": short(e)}
        if case.xfail:
            row["xfail"] = case.xfail
        rows.append(row)
        e = row["tilefarm"]
        log(f"{name:32s} {'ok ' + str(e['compile_s']) + ' s' if e.get('ok') else 'FAIL ' + e.get('error', '')[:200]}")
    return rows


# ----------------------------------------------------------------------------------------------- table
def rate(row, side):
    ms = row.get(side, {}).get("ms")
    if not ms:
        return ""
    if row.get("flops", 0) >= 20 * row.get("bytes", 1):  # compute-bound: TFLOP/s
        return f"{row['flops'] / ms / 1e9:.0f} TF/s"
    return f"{row['bytes'] / ms / 1e6:.0f} GB/s"


def status(row, side):
    e = row.get(side, {})
    if "ms" in e:
        return f"{e['ms'] * 1e3:9.1f}"
    if e.get("error"):
        return "    ERROR"
    if e.get("ok") is False:
        return "    WRONG"
    return "        -"


def line(row):
    r = row.get("ratio")
    rr = f"{r:5.2f} ({row['ratio_min']:.2f}-{row['ratio_max']:.2f})" if r else "    -            "
    return (f"{row['name']:32s} {status(row, 'tilefarm')} {status(row, 'triton')}  {rr}  "
            f"{rate(row, 'tilefarm'):>10s} {rate(row, 'triton'):>10s}")


def geomean(vals):
    vals = [v for v in vals if v and v > 0]
    return math.exp(sum(math.log(v) for v in vals) / len(vals)) if vals else None


def table(rows) -> str:
    out = [f"{'kernel':32s} {'ours us':>9s} {'triton us':>9s}  {'ours/triton (min-max)':17s}  {'ours':>10s} "
           f"{'triton':>10s}"]
    out += [line(r) for r in rows]
    ratios = [r["ratio"] for r in rows if r.get("ratio")]
    g = geomean(ratios)
    out.append("")
    if g:
        worst = max((r for r in rows if r.get("ratio")), key=lambda r: r["ratio"])
        out.append(f"geomean ours/triton over {len(ratios)} kernels correct under both: {g:.3f}; "
                   f"slowest {worst['name']} {worst['ratio']:.2f}; "
                   f"> 1.10: {sum(1 for v in ratios if v > 1.10)}; < 1.00: {sum(1 for v in ratios if v < 1.0)}")
    for r in rows:
        for s in SIDES:
            e = r.get(s, {})
            if e.get("error") or e.get("ok") is False:
                known = f" [known gap, a strict xfail in CI: {r['xfail']}]" if s == "tilefarm" and r.get("xfail") else ""
                out.append(f"  {r['name']} [{s}]{known}: {e.get('error') or 'wrong: ' + e.get('check', '')}")
        if r.get("error"):
            out.append(f"  {r['name']}: {r['error']}")
    out += ab_table(rows)
    return "\n".join(out)


def ab_table(rows) -> list:
    """The --ab variants: per kernel variant / default (min-max over rounds) and variant / Triton; geomeans."""
    variants = []
    for r in rows:
        for v in r.get("ab", {}):
            if v not in variants:
                variants.append(v)
    if not variants:
        return []
    out = ["", "A/B: time of each variant (TILEFARM_AB) / time of the default, and / Triton's (medians of per-round "
           "ratios)", f"{'kernel':32s} " + " ".join(f"{v[:24]:>26s}" for v in variants)]
    for r in rows:
        cells = []
        for v in variants:
            a = r.get("ab", {}).get(v, {})
            cells.append(f"{a['vs_default']:5.3f} ({a['vs_default_min']:.2f}-{a['vs_default_max']:.2f}) "
                         f"{a.get('vs_triton', float('nan')):5.2f}" if "vs_default" in a else f"{'-':>26s}")
        out.append(f"{r['name']:32s} " + " ".join(f"{c:>26s}" for c in cells))
    for v in variants:
        d = [r["ab"][v]["vs_default"] for r in rows if "vs_default" in r.get("ab", {}).get(v, {})]
        t = [r["ab"][v]["vs_triton"] for r in rows if "vs_triton" in r.get("ab", {}).get(v, {})]
        wrong = [r["name"] for r in rows if r.get(AB_PREFIX + v, {}).get("ok") is False]
        gd, gt = geomean(d), geomean(t)
        vs_d = (f"geomean / default {gd:.3f} over {len(d)} kernels (faster on {sum(1 for x in d if x < 0.98)}, "
                f"slower on {sum(1 for x in d if x > 1.02)} by over 2%)" if gd else "no kernel timed")
        vs_t = f"/ Triton {gt:.3f} over {len(t)}" if gt else "/ Triton: none timed"
        out.append(f"variant {v}: {vs_d}; {vs_t}; wrong or failing: {wrong or 'none'}")
        for r in rows:
            e = r.get(AB_PREFIX + v, {})
            if e.get("error") or e.get("ok") is False:
                out.append(f"  {r['name']} [{v}]: {e.get('error') or 'wrong: ' + e.get('check', '')}")
    return out


def markdown(doc) -> str:
    rows = doc["rows"]
    md = [f"# Idiom corpus: ours vs Triton ({doc['date']})", "",
          f"GPU: {doc['env'].get('gpu', '?')}; torch {doc['env'].get('torch')}; triton {doc['env'].get('triton')}; "
          f"{doc['rounds']} interleaved rounds of do_bench (rep {doc['rep_ms']} ms, L2 flushed"
          f"{'; each side run %g ms untimed first' % doc['settle_ms'] if doc.get('settle_ms') else ''}); ratio = median of "
          "per-round ours/Triton time ratios.", "",
          "| kernel | idiom | ours us | Triton us | ours/Triton | min-max | ours | Triton |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        rt = r.get("ratio")
        span = f"{r['ratio_min']:.2f}-{r['ratio_max']:.2f}" if rt else "-"
        md.append(f"| {r['name']} | {r.get('idiom', '')} | {status(r, 'tilefarm').strip()} | "
                  f"{status(r, 'triton').strip()} | {f'{rt:.2f}' if rt else '-'} | "
                  f"{span} | {rate(r, 'tilefarm')} | "
                  f"{rate(r, 'triton')} |")
    md += ["", "```", table(rows), "```"]
    if doc.get("not_run"):
        md += ["", f"Not run (--budget-s spent): {', '.join(doc['not_run'])}"]
    sus = [r for r in rows if r.get("tilefarm", {}).get("sustain") and r.get("triton", {}).get("sustain")]
    if sus:
        md += ["", "Sustained load (each side back to back, no L2 flush; board power and SM clock from nvidia-smi):", "",
               "| kernel | ours ms/call | Triton ms/call | ours/Triton | ours W | Triton W | ours MHz | Triton MHz |",
               "|---|---|---|---|---|---|---|---|"]
        for r in sus:
            a, b = r["tilefarm"]["sustain"], r["triton"]["sustain"]
            ka = "ms_per_call_2nd_half" if "ms_per_call_2nd_half" in a and "ms_per_call_2nd_half" in b \
                else "ms_per_call"
            md.append(f"| {r['name']} | {a[ka]:.4f} | {b[ka]:.4f} | {a[ka] / b[ka]:.3f} | "
                      f"{a.get('power_w', 0):.0f} | {b.get('power_w', 0):.0f} | {a.get('sm_mhz', 0):.0f} | "
                      f"{b.get('sm_mhz', 0):.0f} |")
    return "\n".join(md) + "\n"


# ----------------------------------------------------------------------------------------------- main
def _within(mem, launch, args, kw):
    with mem:
        launch(*args, **kw)


def shard(names, k, n):
    """The k-th (1-based) of n interleaved shares of the kernel names in name order: every n-th name from the k-th,
    so each share mixes the corpus's files and kinds alike."""
    return [x for i, x in enumerate(sorted(names)) if i % n == k - 1]


def load_both(select, ab=()):
    import workloads.corpus as corpus

    sides = list(SIDES) + [AB_PREFIX + v for v in ab]
    errors = {s: {} for s in sides}
    cases = {s: corpus.load(base(s), select, errors=errors[s], copy=s if s not in SIDES else "") for s in sides}
    cases["errors"] = errors
    for s in sides:
        for f, e in errors[s].items():
            log(f"{f} does not load under {s}: {e}")
    names = sorted(set(cases["tilefarm"]) | set(cases["triton"]))
    return names, cases


def env_info():
    info = {"python": platform.python_version(), "host": platform.node()}
    for mod in ("torch", "triton", "numpy"):
        try:
            info[mod] = __import__(mod).__version__
        except Exception:  # noqa: BLE001
            info[mod] = None
    try:
        import torch
        if torch.cuda.is_available():
            info["gpu"] = torch.cuda.get_device_name(0)
    except Exception:  # noqa: BLE001
        pass
    import compiler
    info["tilefarm"] = compiler.__version__
    return info


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=None, help="directory for corpus-<date>.json and .md")
    ap.add_argument("--select", default="", help="comma-separated kernel names or globs (default: all)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--rep-ms", type=float, default=25.0)
    ap.add_argument("--warmup-ms", type=float, default=5.0)
    ap.add_argument("--sustain-s", type=float, default=0.0,
                    help="per kernel, after the rounds: each side run back to back this long while nvidia-smi "
                         "samples power and SM clock (row[side]['sustain'] in the JSON)")
    ap.add_argument("--settle-ms", type=float, default=100.0,
                    help="per kernel, before its first round: each side run untimed about this long, in turn twice, "
                         "so every round finds the GPU at its sustained clocks")
    ap.add_argument("--interpret", action="store_true", help="no GPU: both interpreters at the CI sizes")
    ap.add_argument("--prepare-ahead", type=int, default=0, metavar="N",
                    help="compute the next N kernels' float64 references in N worker processes while the current "
                         "one compiles and is timed (0: each beside its own compiles, nothing beside the timing)")
    ap.add_argument("--dry-run", action="store_true",
                    help="no GPU: the benchmark's own flow (checks, rounds, table, JSON) at the CI sizes in both "
                         "interpreters; its times mean nothing")
    ap.add_argument("--compile-only", action="store_true",
                    help="no GPU: our compiler only, each kernel specialized as on the H200, PTX + ptxas")
    ap.add_argument("--target", default="sm_90a", help="--compile-only's target")
    ap.add_argument("--table", default=None, help="re-render a stored JSON")
    ap.add_argument("--list", action="store_true", help="list the kernels and exit")
    ap.add_argument("--ab", default="", help="A/B variants in the same run: semicolon-separated, each a comma list "
                                             "of TILEFARM_AB switches (e.g. 'div_quot;scan_direct,div_quot')")
    ap.add_argument("--shard", default="", metavar="K/N",
                    help="only the K-th of N interleaved shares of the selected kernels (by name order): a whole-corpus "
                         "run split over calls that each stay under the device's time limit")
    ap.add_argument("--budget-s", type=float, default=0.0, metavar="S",
                    help="start no new kernel after S seconds (GPU runs): what ran is written, the rest listed as not run")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args(argv)
    if args.table:
        with open(args.table) as f:
            print(table(json.load(f)["rows"]))
        return 0
    if args.interpret or args.dry_run:
        os.environ["TRITON_INTERPRET"] = "1"  # before Triton is imported: its jit then builds interpreted kernels
    select = [s.strip() for s in args.select.split(",") if s.strip()] or None
    t0 = time.time()
    ab = [v.strip() for v in args.ab.split(";") if v.strip()]
    if ab and (args.interpret or args.compile_only):
        log("--ab times variants: it runs on the GPU or with --dry-run")
        return 2
    names, cases = load_both(select, ab)
    if args.shard:
        try:
            k, n = (int(x) for x in args.shard.split("/"))
            assert 1 <= k <= n
        except (ValueError, AssertionError):
            log(f"--shard {args.shard!r}: want K/N with 1 <= K <= N, e.g. 1/2")
            return 2
        names = shard(names, k, n)
    if args.list:
        for n in names:
            c = cases["tilefarm"].get(n) or cases["triton"][n]
            print(f"{n:32s} {c.file:18s} {c.idiom}")
        return 0
    if not names:
        log("no corpus kernel matches --select")
        return 2
    log(f"{len(names)} kernels")
    if args.compile_only:
        rows = run_compile_only(names, cases, args)
        bad = [r["name"] for r in rows if not r["tilefarm"].get("ok") and not r.get("xfail")]
        known = [r["name"] for r in rows if not r["tilefarm"].get("ok") and r.get("xfail")]
        print(f"{len(rows)} kernels compiled for {args.target} at their GPU specialization; failing: {bad or 'none'}; "
              f"known gaps (strict xfails in CI): {known or 'none'}")
        return 1 if bad else 0
    if args.interpret:
        rows = run_interpret(names, cases, args)
    else:
        rows = run_gpu(names, cases, args, DryDevice(args) if args.dry_run else None)
    doc = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "mode": "interpret" if args.interpret else "dry-run" if args.dry_run else "gpu", "rounds": args.rounds, "rep_ms": args.rep_ms, "settle_ms": args.settle_ms,
           "env": env_info(), "wall_s": round(time.time() - t0, 1), "rows": rows,
           "not_run": getattr(args, "not_run", [])}
    if args.interpret:
        bad = [r["name"] for r in rows
               if not (r["tilefarm"].get("ok") or r.get("xfail")) or not (r["triton"].get("ok") or r["triton"].get("gap"))]
        print(f"{len(rows)} kernels; failing under either interpreter (not expected): {bad or 'none'}")
        for r in rows:
            for s in SIDES:
                if not r[s].get("ok"):
                    why = r["triton"].get("gap") if s == "triton" else r.get("xfail")
                    print(f"  {r['name']} [{s}]{' (expected: ' + why + ')' if why else ''}: "
                          f"{(r[s].get('error') or r[s].get('check', ''))[:300]}")
    else:
        g = geomean([r.get("ratio") for r in rows])
        doc["geomean"] = g
        print(table(rows))
    print(f"wall {doc['wall_s']} s")
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        tag = "-interpret" if args.interpret else "-dry-run" if args.dry_run else ""
        stem = os.path.join(args.out, f"corpus{tag}-"
                                      f"{datetime.date.today().isoformat()}")
        with open(stem + ".json", "w") as f:
            json.dump(doc, f, indent=1, default=str)
        if not args.interpret:
            with open(stem + ".md", "w") as f:
                f.write(markdown(doc))
        log(f"wrote {stem}.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
