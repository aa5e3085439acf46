"""One corpus kernel's description: inputs, float64 reference, tolerance, sizes and launch.

A corpus file is a kernel file as a Triton user writes it (`import triton`, `import triton.language as tl`) that
also declares `CASES = [Case(...), ...]`. Everything a case holds is plain Python and NumPy, so the file loads
unchanged under our compiler (compiler.triton_compat.load_kernel_file) and under the real Triton.

    Case(name, kernel,
         inputs(p, rng) -> {name: NumPy array}        seeded, never zeros; in their storage dtypes
         outputs(p) -> {name: (shape, dtype)}        poisoned (NaN / a sentinel) before every run
         reference(p, x) -> {name: float64 array}    x: the inputs as float64 (after rounding to their dtype)
         launch(p, a, meta) -> (grid, args)          a: inputs + outputs (NumPy or torch); shapes from p only
         gpu=..., ci=...                             the problem sizes (p) for the H200 and for CI
         meta=..., ci_meta=...                       constexprs + num_warps / num_stages (ci_meta: default meta)
         flops(p), bytes(p)                          for reporting
         tol={dtype: (rtol, atol)}                   |got - ref| <= rtol*|ref| + atol*max|ref|, NaN fails
         zero=("out",)                               outputs that accumulate (atomics): start at zero instead
         xfail="..."                                 a missing language feature: a strict expected failure
    )
"""
from __future__ import annotations

import concurrent.futures
import contextlib
import os
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

try:
    import ml_dtypes
    BF16 = np.dtype(ml_dtypes.bfloat16)
except ImportError:  # pragma: no cover
    BF16 = None

LAUNCH_OPTIONS = ("num_warps", "num_stages")

#: (rtol, atol relative to max|ref|) per output dtype
DEFAULT_TOL = {"float16": (5e-3, 2e-3), "bfloat16": (2e-2, 1e-2), "float32": (1e-4, 1e-5),
               "float64": (1e-12, 1e-12)}


class BF16Bits(np.ndarray):
    """bfloat16 values held as their uint16 bit patterns, where NumPy has no bfloat16 (no ml_dtypes: the GPU node
    may lack it). Only the benchmark's host side sees these: it moves them to the GPU as torch.bfloat16 bits."""


def dtype(name: str) -> np.dtype:
    if name == "bfloat16":
        if BF16 is None:
            raise ImportError("bfloat16 arrays need the ml_dtypes package")
        return BF16
    return np.dtype(name)


def is_bf16(a) -> bool:
    return isinstance(a, BF16Bits) or (BF16 is not None and getattr(a, "dtype", None) == BF16)


def cast(a: np.ndarray, dt: str) -> np.ndarray:
    """float32 `a` rounded to dtype `dt` (bfloat16: ml_dtypes when present, else BF16Bits, rounded to nearest even)."""
    if dt != "bfloat16" or BF16 is not None:
        return a.astype(dtype(dt))
    bits = np.ascontiguousarray(a, np.float32).view(np.uint32)
    r = (bits + (((bits >> 16) & 1) + np.uint32(0x7FFF))) >> 16
    r = np.where(np.isnan(a), np.uint32(0x7FC0), r)
    return r.astype(np.uint16).view(BF16Bits)


def randn(rng, shape, dt="float32", scale=1.0, loc=0.0) -> np.ndarray:
    """Seeded normal samples in dtype `dt` (drawn in float32)."""
    a = rng.standard_normal(shape, dtype=np.float32) * np.float32(scale) + np.float32(loc)
    return cast(a, dt)


def uniform(rng, shape, lo, hi, dt="float32") -> np.ndarray:
    a = rng.random(shape, dtype=np.float32) * np.float32(hi - lo) + np.float32(lo)
    return cast(a, dt)


def f64(a) -> np.ndarray:
    if isinstance(a, BF16Bits):
        return (np.asarray(a).view(np.uint16).astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    a = np.asarray(a)
    if a.dtype == BF16:
        a = a.astype(np.float32)
    return a.astype(np.float64)


def itemsize(dt: str) -> int:
    return 2 if dt == "bfloat16" else np.dtype(dt).itemsize


def pmap(fn, n: int):
    """[fn(i) for i in range(n)] on a thread pool (NumPy releases the GIL: references of large batched problems
    run on every core)."""
    workers = min(n, os.cpu_count() or 1)
    if workers <= 1:
        return [fn(i) for i in range(n)]
    with concurrent.futures.ThreadPoolExecutor(workers) as ex:
        return list(ex.map(fn, range(n)))


def erf(x) -> np.ndarray:
    """erf in float64 over whole arrays, to 1.5e-7 absolute (Abramowitz & Stegun 7.1.26): far inside every tolerance
    of the kernels that use it, and vectorized (math.erf element by element took a minute at a GPU size)."""
    ax = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * ax)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return np.sign(x) * (1.0 - poly * np.exp(-ax * ax))


def cdiv(a: int, b: int) -> int:
    return (a + b - 1) // b


def philox_word0(seed: int, offsets: np.ndarray) -> np.ndarray:
    """tl.randint(seed, offsets) on the host: the first word of ten Philox-4x32 rounds of (offset, 0, 0, 0) under
    the seed's two 32-bit halves, as uint32."""
    c0 = offsets.astype(np.uint64)
    c1 = np.zeros_like(c0)
    c2 = np.zeros_like(c0)
    c3 = np.zeros_like(c0)
    k0, k1 = np.uint64(seed & 0xFFFFFFFF), np.uint64((seed >> 32) & 0xFFFFFFFF)
    m32 = np.uint64(0xFFFFFFFF)
    A, B = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
    for _ in range(10):
        pa, pb = A * c0, B * c2
        c0, c1, c2, c3 = ((pb >> np.uint64(32)) ^ c1 ^ k0) & m32, pb & m32, ((pa >> np.uint64(32)) ^ c3 ^ k1) & m32, \
            pa & m32
        k0, k1 = (k0 + np.uint64(0x9E3779B9)) & m32, (k1 + np.uint64(0xBB67AE85)) & m32
    return c0.astype(np.uint32)


def philox_uniform(seed: int, offsets: np.ndarray) -> np.ndarray:
    """tl.rand(seed, offsets) on the host, for references: ten Philox-4x32 rounds of (offset, 0, 0, 0) under the
    seed's two 32-bit halves, the first word as a signed int folded to non-negative and scaled by 2^-31 in float32
    (the same bits as the kernels' numbers)."""
    s = philox_word0(seed, offsets).view(np.int32).astype(np.int64)
    s = np.where(s < 0, -s - 1, s)
    return s.astype(np.float32) * np.float32(4.6566127342e-10)


@dataclass
class Case:
    name: str
    kernel: object
    inputs: Callable
    outputs: Callable
    reference: Callable
    launch: Callable
    gpu: dict
    ci: dict
    meta: dict
    flops: Callable = lambda p: 0.0
    bytes: Callable = lambda p: 0.0
    ci_meta: dict | None = None
    tol: dict = field(default_factory=dict)
    zero: tuple = ()
    xfail: str | None = None
    idiom: str = ""
    # the kernel reaches arrays through addresses stored in other arrays (pointer arrays), not only as arguments:
    # our interpreter is then told every array of the launch is the kernel's memory (compiler.interpreter.host_memory)
    addresses: bool = False

    def meta_for(self, size: str) -> dict:
        return dict(self.ci_meta if size == "ci" and self.ci_meta is not None else self.meta)

    def params(self, size: str) -> dict:
        return dict(self.ci if size == "ci" else self.gpu)

    def split_meta(self, meta: dict) -> tuple[dict, dict]:
        consts = {k: v for k, v in meta.items() if k not in LAUNCH_OPTIONS}
        opts = {k: v for k, v in meta.items() if k in LAUNCH_OPTIONS}
        return consts, opts

    def make_inputs(self, p: dict, seed: int = 0) -> dict:
        rng = np.random.default_rng(seed)
        return self.inputs(p, rng)

    def make_outputs(self, p: dict) -> dict:
        """Output arrays, poisoned: NaN for floats, a sentinel for integers; zeros for `zero` outputs."""
        out = {}
        for n, (shape, dt) in self.outputs(p).items():
            if dt == "bfloat16" and BF16 is None:
                out[n] = cast(np.full(shape, 0.0 if n in self.zero else np.nan, np.float32), dt)
                continue
            d = dtype(dt)
            if n in self.zero:
                out[n] = np.zeros(shape, d)
            elif np.issubdtype(np.dtype(d) if d != BF16 else np.float32, np.floating):
                out[n] = np.full(shape, np.nan, d)
            else:  # an integer no kernel of the corpus writes
                info = np.iinfo(d)
                out[n] = np.full(shape, info.min if np.issubdtype(d, np.signedinteger) else info.max, d)
        return out

    def run(self, kernel, arrays: dict, p: dict, meta: dict):
        """Launch `kernel` (this case's kernel as one compiler loaded it) on `arrays` (inputs + outputs)."""
        grid, args = self.launch(p, arrays, meta)
        consts, opts = self.split_meta(meta)
        with self.memory(kernel, arrays):
            return kernel[grid](*args, **consts, **opts)

    def memory(self, kernel, arrays: dict):
        """The context to launch `kernel` on `arrays` in: for a case whose kernel reads addresses from pointer
        arrays (`addresses`), our interpreter told that every array of the launch is the kernel's memory."""
        if self.addresses and type(kernel).__module__.split(".")[0] == "compiler" and \
                all(isinstance(v, np.ndarray) for v in arrays.values()):
            from compiler.interpreter import host_memory

            return host_memory(*arrays.values())
        return contextlib.nullcontext()

    def as_workload(self, source_file: str = ""):
        """This case as a farm workload (workloads.base.Workload), or None for a case whose outputs accumulate
        (`zero`: atomics), which the farm's poisoned outputs cannot hold.

        The farm's checks apply, not `check`: its seeded inputs (this case's `inputs` with the farm's generator),
        outputs poisoned before every run, the float64 `reference`, this case's tolerances (atol relative to the
        largest |reference|, as here). Params: the case's sizes plus "dtype" (its first output's: the farm keys
        and reports a point by it); `default_sweep` is the CI size with the CI meta, `gpu_sweep` / `gpu_meta`
        the H200 size and meta (a config's `sizes: gpu`)."""
        from workloads.base import OutputSpec, Workload

        if self.zero:
            return None
        case = self

        def plain(p):
            return {k: v for k, v in p.items() if k != "dtype"}

        first = next(iter(self.outputs(self.ci).values()))[1]
        specimen = {k: v for k, v in self.make_inputs(self.ci, seed=0).items() if isinstance(v, np.ndarray)}
        in_dtypes = {k: ("bfloat16" if is_bf16(v) else v.dtype.name) for k, v in specimen.items()}
        tol = {dt: self.tol.get(dt, DEFAULT_TOL[dt]) for dt in DEFAULT_TOL}

        def launch(arrays, p, meta):
            case.run(case.kernel, arrays, plain(p), meta)

        def warmup(arrays, p, meta):
            grid, args = case.launch(plain(p), arrays, meta)
            consts, opts = case.split_meta(meta)
            return case.kernel.warmup(*args, grid=grid, **consts, **opts)

        return Workload(
            name=self.name, description=self.idiom or self.name, kernel=self.kernel,
            make_inputs=lambda p, rng: case.inputs(plain(p), rng),
            output_specs=lambda p: [OutputSpec(n, tuple(shape), dt)
                                    for n, (shape, dt) in case.outputs(plain(p)).items()],
            input_specs=lambda p: [OutputSpec(n, (), dt) for n, dt in in_dtypes.items()],
            launch=launch, warmup=warmup,
            reference=lambda x, p: case.reference(plain(p), {k: f64(v) for k, v in x.items()}),
            flops=lambda p: float(case.flops(plain(p))), bytes=lambda p: float(case.bytes(plain(p))),
            default_sweep=[{**self.ci, "dtype": first}], gpu_sweep=[{**self.gpu, "dtype": first}],
            default_meta=self.meta_for("ci"), gpu_meta=self.meta_for("gpu"), tolerance=tol, atol_relative=True,
            source_file=source_file)

    def expected(self, p: dict, inputs: dict) -> dict:
        return self.reference(p, {k: f64(v) for k, v in inputs.items()})

    def check(self, p: dict, got: dict, ref: dict) -> dict:
        """{output: (ok, worst ratio of error to allowance, message)}; NaN fails, integers must be exact.

        Large outputs are checked in chunks on a thread pool (NumPy releases the GIL): GPU-size outputs of 10^8
        elements would otherwise cost more than the kernels' whole benchmark."""
        res = {}
        specs = self.outputs(p)
        for n, r in ref.items():
            dt = specs[n][1]
            g = got[n]
            r = np.asarray(r)
            if np.shape(g) != r.shape:
                res[n] = (False, float("inf"), f"shape {np.shape(g)} != reference {r.shape}")
                continue
            if dt not in DEFAULT_TOL:  # integers and bool: exact
                g = np.asarray(g)
                bad = int(np.count_nonzero(g.astype(np.int64) != r.astype(np.int64)))
                res[n] = (bad == 0, float(bad), f"{bad} of {g.size} differ" if bad else "exact")
                continue
            rtol, atol = self.tol.get(dt, DEFAULT_TOL[dt])
            gf, rf = _flat(g), np.ravel(r)
            chunks = _chunks(rf.size)
            scale = max((float(np.max(np.abs(rf[a:b]))) for a, b in chunks), default=0.0)
            parts = pmap(lambda i: _check_chunk(gf[chunks[i][0]:chunks[i][1]], rf[chunks[i][0]:chunks[i][1]],
                                                rtol, atol * max(scale, 1e-30)), len(chunks))
            nonfinite = sum(q[0] for q in parts)
            err = max((q[1] for q in parts), default=0.0)
            worst = max((q[2] for q in parts), default=0.0)
            if nonfinite:
                res[n] = (False, float("inf"), f"{nonfinite} non-finite values")
            else:
                res[n] = (worst <= 1.0, worst, f"max err {err:.3g} (allowance ratio {worst:.3g})")
        return res


def _flat(a) -> np.ndarray:
    """A float view/array of `a`, flattened, without a float64 copy of the whole (chunks convert their part)."""
    if isinstance(a, BF16Bits):
        return np.ravel(a)
    return np.ravel(np.asarray(a))


def _chunks(n: int, size: int = 1 << 22) -> list:
    return [(a, min(a + size, n)) for a in range(0, n, size)] or [(0, 0)]


def _check_chunk(g, r, rtol: float, atol_abs: float):
    """(non-finite count, max |err|, max err/allowance) of one chunk; allowance rtol*|r| + atol_abs."""
    g = f64(g)
    r = np.asarray(r, np.float64)
    if not g.size:
        return 0, 0.0, 0.0
    nonfinite = int(np.count_nonzero(np.isnan(g) | (np.isinf(g) & (g != r))))  # NaN never passes
    if nonfinite:
        return nonfinite, float("inf"), float("inf")
    same = g == r  # also inf == inf, whose difference would be NaN
    with np.errstate(invalid="ignore"):
        np.subtract(g, r, out=g)
    np.abs(g, out=g)
    g[same] = 0.0
    err = float(g.max())
    allow = np.abs(r)
    allow *= rtol
    allow += atol_abs
    zero = allow <= 0
    if zero.any() and bool((g[zero] > 0).any()):
        return 0, err, float("inf")
    np.divide(g, allow, out=g, where=~zero)
    g[zero] = 0.0
    return 0, err, float(g.max())
