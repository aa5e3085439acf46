"""Twelve idioms on the host-side and language-level API around kernels: launch-time specialization and the
helpers users build kernels from. An EVEN_K GEMV under @triton.heuristics (EVEN_K, BLOCK_M from
triton.next_power_of_2 of a size, HAS_BIAS from `args["BIAS"] is not None`) launched on a grid lambda of META that
reads a heuristic's value, twice with different specializations; a LayerNorm + gate built from jit helpers (a
tuple-returning masked loader with constexpr defaults, a Welford combine in tl.reduce called from a helper, and
noinline helpers on scalars: an int64 row base, a (lo, hi) pair returned per constexpr KIND); a chunked
polynomial by tl.static_range (a reversed Horner range, constexpr locals, a module-level constexpr, a compile-time
`if` on the unrolled index) with tl.static_assert / tl.static_print; scalar arguments of every kind (an int64
step between 2^31 and 2^32 and one beyond 2^40, a negative int64, a Python bool, a float, an int equal to 1, a
multiple of 16, a do_not_specialize seed equal to 1, a tl.int64-annotated int equal to 1); four optional pointers passed as None and tested by `is
None` / `is not None`, also inside a helper and combined with `and`; two-output tl.inline_asm_elementwise with
pack=4 (uint8 nibbles) and pack=1 (sin / cos) behind a constexpr switch; libdevice special functions with mixed
argument types (lgamma / erfcx / j0 in float64, pow with an int32 tensor exponent, fmod / atan2 with Python
numbers, ldexp / ilogb, nextafter, rint / signbit); vector atomics whose returned old values are used (tickets per
bucket with duplicate addresses in one block, atomic_cas winners, a relaxed atomic_max of tickets); 3-D block
pointers stored with partial boundary_check and int64-offset masked stores; one kernel specialized on its
output dtype, a str activation and a float constexpr; a neighbour exchange through global scratch ordered by
tl.debug_barrier; and an RMSNorm whose eps / scale / BLOCK come from the kernel's own defaults.
"""
import numpy as np
import triton
import triton.language as tl
from triton.language.extra import libdevice

from workloads.corpus._case import Case, cdiv, erf, randn, uniform

POLY_BIAS: tl.constexpr = tl.constexpr(0.25)


# --- 1. EVEN_K GEMV under heuristics, grid lambda of META ---------------------------------------------------------
@triton.heuristics({
    "EVEN_K": lambda args: args["K"] % args["BLOCK_K"] == 0,
    "BLOCK_M": lambda args: max(16, min(64, triton.next_power_of_2(args["M"]) // 8)),
    "HAS_BIAS": lambda args: args["BIAS"] is not None,
})
@triton.jit
def heur_gemv_kernel(A, X, BIAS, Y, M, K, stride_am, BLOCK_K: tl.constexpr, EVEN_K: tl.constexpr,
                     BLOCK_M: tl.constexpr, HAS_BIAS: tl.constexpr):
    # Y = A @ x (+ bias): A [M, K] fp16 with a padded row stride, x [K] fp16, Y [M] in Y's own dtype
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    m_ok = rm < M
    acc = tl.zeros([BLOCK_M], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        if EVEN_K:
            a = tl.load(A + rm[:, None] * stride_am + rk[None, :], mask=m_ok[:, None], other=0.0)
            x = tl.load(X + rk)
        else:
            k_ok = rk < K
            a = tl.load(A + rm[:, None] * stride_am + rk[None, :], mask=m_ok[:, None] & k_ok[None, :], other=0.0)
            x = tl.load(X + rk, mask=k_ok, other=0.0)
        acc += tl.sum(a.to(tl.float32) * x.to(tl.float32)[None, :], axis=1)
    if HAS_BIAS:
        acc += tl.load(BIAS + rm, mask=m_ok, other=0.0).to(tl.float32)
    tl.store(Y + rm, acc.to(Y.dtype.element_ty), mask=m_ok)


# --- 2. LayerNorm + gate from helpers: tuples, constexpr defaults, noinline ----------------------------------------
@triton.jit
def _load_tile(ptr, rows, cols, n_rows, n_cols, stride, OTHER: tl.constexpr = 0.0, TO_F32: tl.constexpr = True):
    m = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    x = tl.load(ptr + rows[:, None] * stride + cols[None, :], mask=m, other=OTHER)
    if TO_F32:
        x = x.to(tl.float32)
    return x, m


@triton.jit
def _welford_combine(mean_a, m2_a, n_a, mean_b, m2_b, n_b):
    n = n_a + n_b
    w = tl.where(n == 0, 0.0, n_b / tl.where(n == 0, 1.0, n))
    d = mean_b - mean_a
    return mean_a + d * w, m2_a + m2_b + d * d * n_a * w, n


@triton.jit
def _row_moments(x, m):
    # helper calling a helper (the combine): per-row mean and biased variance of the masked tile
    cnt = m.to(tl.float32)
    mean, m2, n = tl.reduce((tl.where(m, x, 0.0), tl.zeros_like(x), cnt), 1, _welford_combine)
    return mean, m2 / n


@triton.jit
def _act(x, KIND: tl.constexpr):
    if KIND == "silu":
        return x * tl.sigmoid(x)
    else:
        return 0.5 * x * (1.0 + tl.math.erf(x * 0.7071067811865476))


@triton.jit(noinline=True)
def _clip_range(clip, KIND: tl.constexpr):
    # noinline functions take scalars only (Triton): a (lo, hi) pair of scalars, per constexpr KIND
    if KIND == "sym":
        return -clip, clip
    else:
        return clip * 0.0, clip


@triton.jit(noinline=True)
def _row_base(row0, stride):
    return row0.to(tl.int64) * stride


@triton.jit
def _clamp_count(x, lo, hi):
    y = tl.minimum(tl.maximum(x, lo), hi)
    return y, tl.sum(((x < lo) | (x > hi)).to(tl.int32), axis=1)


@triton.jit
def ln_gate_helpers_kernel(X, G, W, B, Y, MEAN, RSTD, NCLIP, R, C, stride, eps, clip, BLOCK_R: tl.constexpr,
                           BLOCK_C: tl.constexpr):
    row0 = tl.program_id(0) * BLOCK_R
    rows = row0 + tl.arange(0, BLOCK_R)
    cols = tl.arange(0, BLOCK_C)
    base = _row_base(row0, stride)
    x, m = _load_tile(X + base, rows - row0, cols, R - row0, C, stride)
    g, _ = _load_tile(G + base, rows - row0, cols, R - row0, C, stride, OTHER=0.0, TO_F32=True)
    mean, var = _row_moments(x, m)
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(W + cols, mask=cols < C, other=0.0).to(tl.float32)
    b = tl.load(B + cols, mask=cols < C, other=0.0).to(tl.float32)
    h = (x - mean[:, None]) * rstd[:, None] * w[None, :] + b[None, :]
    lo, hi = _clip_range(clip, "sym")
    g, nclip = _clamp_count(g, lo, hi)
    lo2, hi2 = _clip_range(clip * 4.0, KIND="pos")
    y = _act(h, "gelu") * _act(g, KIND="silu")
    y = tl.minimum(tl.maximum(y, -hi2), hi2 + lo2)
    tl.store(Y + rows[:, None] * stride + cols[None, :], y.to(tl.float16), mask=m)
    r_ok = rows < R
    tl.store(MEAN + rows, mean, mask=r_ok)
    tl.store(RSTD + rows, rstd, mask=r_ok)
    tl.store(NCLIP + rows, nclip, mask=r_ok)


# --- 3. chunked polynomial by static_range: reversed Horner, constexpr locals ---------------------------------------
@triton.jit
def poly_static_kernel(X, COEF, Y, PART, N, DEG: tl.constexpr, BLOCK: tl.constexpr, CHUNK: tl.constexpr):
    tl.static_assert(BLOCK % CHUNK == 0, "BLOCK must be a multiple of CHUNK")
    tl.static_assert(DEG >= 1 and DEG <= 8)
    NCH: tl.constexpr = BLOCK // CHUNK
    tl.static_print("poly_static_kernel: DEG", DEG, "chunks", NCH)
    pid = tl.program_id(0)
    total = tl.zeros([CHUNK], dtype=tl.float32)
    for c in tl.static_range(NCH):
        offs = pid * BLOCK + c * CHUNK + tl.arange(0, CHUNK)
        m = offs < N
        x = tl.load(X + offs, mask=m, other=0.0)
        y = tl.zeros([CHUNK], dtype=tl.float32) + tl.load(COEF + DEG)
        for d in tl.static_range(DEG - 1, -1, -1):
            y = y * x + tl.load(COEF + d)
        if c % 2 == 1:  # compile time: odd chunks get the module-level bias
            y = y + POLY_BIAS
        tl.store(Y + offs, y, mask=m)
        total += tl.where(m, y, 0.0) * (c + 1)
    tl.store(PART + pid, tl.sum(total, axis=0))


# --- 4. scalar arguments of every kind ----------------------------------------------------------------------------
@triton.jit(do_not_specialize=["seed"])
def scalar_kinds_kernel(X, OUT, HI, NEG, PG, N, step64, base64, neg64, alpha, flip, one, s16, seed,
                        page_stride: tl.int64, BLOCK: tl.constexpr):
    # OUT [N] (rows of s16) = +-alpha * X[(i * step64 + seed) % N]; HI = (base64 + i) // 1000003;
    # NEG = (neg64 - i) >> 7 (arithmetic shift of a negative int64); PG = i * page_stride * 2^22, int64 because
    # page_stride is declared tl.int64 (Triton keeps an annotated int a runtime int64 even when it equals 1)
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    idx = (offs.to(tl.int64) * step64 + seed) % N
    x = tl.load(X + idx * one, mask=m, other=0.0)
    y = x * alpha
    if flip:
        y = -y
    tl.store(OUT + (offs // s16) * s16 + offs % s16, y, mask=m)
    o64 = base64 + offs
    tl.store(HI + offs, o64 // 1000003, mask=m)
    tl.store(NEG + offs, (neg64 - offs) >> 7, mask=m)
    tl.store(PG + offs, offs * page_stride * 4194304, mask=m)


# --- 5. optional pointers passed as None ----------------------------------------------------------------------------
@triton.jit
def _maybe_scale(y, PTR, cols, c_ok):
    if PTR is not None:
        y = y * tl.load(PTR + cols, mask=c_ok, other=1.0)[None, :]
    return y


@triton.jit
def optional_ptrs_kernel(X, RESID, COLSCALE, ROWBIAS, OUT, OUT_SUM, R, C, BLOCK_R: tl.constexpr,
                         BLOCK_C: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    r_ok = rows < R
    c_ok = cols < C
    m = r_ok[:, None] & c_ok[None, :]
    offs = rows[:, None] * C + cols[None, :]
    y = tl.load(X + offs, mask=m, other=0.0).to(tl.float32)
    if RESID is not None:
        y += tl.load(RESID + offs, mask=m, other=0.0).to(tl.float32)
    if OUT_SUM is None:
        pass
    else:
        tl.store(OUT_SUM + offs, y, mask=m)
    y = _maybe_scale(y, COLSCALE, cols, c_ok)
    if ROWBIAS is not None and RESID is not None:
        y += tl.load(ROWBIAS + rows, mask=r_ok, other=0.0)[:, None]
    if not (ROWBIAS is None):
        y = y * 2.0
    tl.store(OUT + offs, y.to(tl.float16), mask=m)


# --- 6. two-output inline asm, pack=4 and pack=1, behind a constexpr switch ----------------------------------------
@triton.jit
def asm_multi_out_kernel(X, F, HI, LO, S, C, N, USE_ASM: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m, other=0)
    f = tl.load(F + offs, mask=m, other=0.0)
    if USE_ASM:
        hi, lo = tl.inline_asm_elementwise(
            "{ .reg .b32 t; shr.b32 t, $2, 4; and.b32 $0, t, 0x0F0F0F0F; and.b32 $1, $2, 0x0F0F0F0F; }",
            "=r,=r,r", [x], dtype=(tl.uint8, tl.uint8), is_pure=True, pack=4)
        s, c = tl.inline_asm_elementwise("sin.approx.f32 $0, $2; cos.approx.f32 $1, $2;", "=f,=f,f", [f],
                                         dtype=(tl.float32, tl.float32), is_pure=True, pack=1)
    else:
        hi = x >> 4
        lo = x & 0xF
        s = tl.sin(f)
        c = tl.cos(f)
    tl.store(HI + offs, hi, mask=m)
    tl.store(LO + offs, lo, mask=m)
    tl.store(S + offs, s, mask=m)
    tl.store(C + offs, c, mask=m)


# --- 7. libdevice special functions, mixed argument types ----------------------------------------------------------
@triton.jit
def libdevice_mix_kernel(X, E, OUT, OUT64, IOUT, N, BLOCK: tl.constexpr):
    # X in (0.5, 6): positive; E int32 exponents in [-3, 3]
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m, other=1.0)
    e = tl.load(E + offs, mask=m, other=0)
    xd = x.to(tl.float64)
    tl.store(OUT64 + offs * 3, libdevice.lgamma(xd), mask=m)
    tl.store(OUT64 + offs * 3 + 1, libdevice.erfcx(xd - 2.0), mask=m)
    tl.store(OUT64 + offs * 3 + 2, libdevice.j0(xd), mask=m)
    tl.store(OUT + offs * 5, libdevice.pow(x, e), mask=m)
    tl.store(OUT + offs * 5 + 1, libdevice.fmod(x * 10.0, 3.0), mask=m)
    tl.store(OUT + offs * 5 + 2, libdevice.atan2(x - 3.0, 1.5), mask=m)
    tl.store(OUT + offs * 5 + 3, libdevice.ldexp(x, e), mask=m)
    tl.store(OUT + offs * 5 + 4, libdevice.hypot(x, x - 3.0) + libdevice.rint(x * 4.0), mask=m)
    up = libdevice.nextafter(x, x + 1.0)
    tl.store(IOUT + offs * 3, libdevice.float_as_int(up) - libdevice.float_as_int(x), mask=m)
    tl.store(IOUT + offs * 3 + 1, libdevice.ilogb(x * 100.0), mask=m)
    tl.store(IOUT + offs * 3 + 2, (libdevice.signbit(x - 3.0) != 0).to(tl.int32), mask=m)


# --- 8. atomics whose old values are used: tickets, CAS winners --------------------------------------------------
@triton.jit
def atomic_olds_kernel(BUCKET, CNT, SUMOLD, MAXOLD, FLAG, WINNERS, N, NB: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    b = tl.load(BUCKET + offs, mask=m, other=NB)  # masked lanes: the spare slot NB
    old = tl.atomic_add(CNT + b, 1, mask=m)        # duplicates within the block: distinct tickets
    tl.atomic_add(SUMOLD + b, old, mask=m)
    tl.atomic_max(MAXOLD + b, old, mask=m, sem="relaxed")
    prev = tl.atomic_cas(FLAG + b, tl.zeros_like(b), tl.full([BLOCK], 1, tl.int32))  # no mask: spare slot NB
    win = (prev == 0) & m
    tl.atomic_add(WINNERS + b, win.to(tl.int32), mask=m)


# --- 9. 3-D block pointers, partial boundary checks, int64-offset masked stores --------------------------------------
@triton.jit
def bp3d_store_kernel(X, XT, RSUM, B, M, N, sxb, sxm, stb, stn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # X [B, M, N] fp16 (M a multiple of BLOCK_M) -> XT [B, N, M] = 2 X^T; RSUM [B, M, n_bn] per-tile row sums
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    bb = tl.program_id(2)
    x_bp = tl.make_block_ptr(X, shape=(B, M, N), strides=(sxb, sxm, 1), offsets=(bb, pid_m * BLOCK_M,
                             pid_n * BLOCK_N), block_shape=(1, BLOCK_M, BLOCK_N), order=(2, 1, 0))
    x = tl.load(x_bp, boundary_check=(2,), padding_option="zero")
    x2 = tl.reshape(x, [BLOCK_M, BLOCK_N])
    t_bp = tl.make_block_ptr(XT, shape=(B, N, M), strides=(stb, stn, 1), offsets=(bb, pid_n * BLOCK_N,
                             pid_m * BLOCK_M), block_shape=(1, BLOCK_N, BLOCK_M), order=(2, 1, 0))
    tl.store(t_bp, tl.reshape(tl.trans(x2 * 2.0), [1, BLOCK_N, BLOCK_M]), boundary_check=(1,))
    rows = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)
    nbn = tl.num_programs(1)
    dst = (bb.to(tl.int64) * M + rows) * nbn + pid_n
    tl.store(RSUM + dst, tl.sum(x2.to(tl.float32), axis=1), mask=rows < M)


# --- 10. one kernel, specialized on output dtype / str / float constexprs ----------------------------------------
@triton.jit
def act_cast_kernel(X, Y, N, ACT: tl.constexpr, SCALE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m, other=0.0).to(tl.float32)
    if ACT == "softplus":
        y = tl.where(x > 20.0, x, tl.log(1.0 + tl.exp(x)))
    elif ACT == "tanh":
        y = 2.0 * tl.sigmoid(2.0 * x) - 1.0
    else:
        y = x
    tl.store(Y + offs, (y * SCALE).to(Y.dtype.element_ty), mask=m)


# --- 11. neighbour exchange through global scratch, ordered by debug_barrier ----------------------------------------
@triton.jit
def scratch_exchange_kernel(X, SCRATCH, Y, N, BLOCK: tl.constexpr):
    # Y[i] = x[i-1] + 2 x[i] + x[i+1] within each block of BLOCK (circular inside the block), x = X^2, through a
    # per-program scratch row: every thread's stores before any thread's shifted loads
    pid = tl.program_id(0)
    r = tl.arange(0, BLOCK)
    offs = pid * BLOCK + r
    m = offs < N
    x = tl.load(X + offs, mask=m, other=0.0)
    x = x * x
    base = SCRATCH + pid.to(tl.int64) * BLOCK
    tl.store(base + r, x)
    tl.debug_barrier()
    left = tl.load(base + (r + BLOCK - 1) % BLOCK)
    right = tl.load(base + (r + 1) % BLOCK)
    tl.store(Y + offs, left + 2.0 * x + right, mask=m)


# --- 12. RMSNorm on the kernel's own defaults -------------------------------------------------------------------------
@triton.jit
def _rms(x, n, ACC: tl.constexpr = tl.float32, KEEP: tl.constexpr = False):
    ms = tl.sum(x.to(ACC) * x.to(ACC), axis=1, keep_dims=KEEP) / n
    return ms


@triton.jit
def rmsnorm_defaults_kernel(X, W, Y, R, C, eps=1e-6, scale=1.0, BLOCK_R: tl.constexpr = 4,
                            BLOCK_C: tl.constexpr = 128):
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.arange(0, BLOCK_C)
    m = (rows[:, None] < R) & (cols[None, :] < C)
    x = tl.load(X + rows[:, None] * C + cols[None, :], mask=m, other=0.0).to(tl.float32)
    ms = _rms(x, C, KEEP=True)
    w = tl.load(W + cols, mask=cols < C, other=0.0).to(tl.float32)
    y = x * tl.rsqrt(ms + eps) * w[None, :] * scale
    tl.store(Y + rows[:, None] * C + cols[None, :], y.to(tl.float16), mask=m)


# --- host side --------------------------------------------------------------------------------------------------------
def _f16(a):
    return np.asarray(a, np.float64).astype(np.float16).astype(np.float64)


# 1. heuristics GEMV
def gv_inputs(p, rng):
    M, K = p["M"], p["K"]
    return {"a": randn(rng, (M, K + p["pad"]), "float16"), "x": randn(rng, (K,), "float16", K ** -0.5),
            "bias": randn(rng, (M,), "float16")}


def gv_ref(p, x):
    y = x["a"][:, :p["K"]] @ x["x"]
    if p["bias"]:
        y = y + x["bias"]
    return {"y": y}


def gv_launch(p, a, m):
    M, K = p["M"], p["K"]
    grid = lambda META: (triton.cdiv(M, META["BLOCK_M"]),)  # noqa: E731
    return grid, [a["a"], a["x"], a["bias"] if p["bias"] else None, a["y"], M, K, K + p["pad"]]


# 2. LayerNorm + gate
def lg_inputs(p, rng):
    R, C = p["R"], p["C"]
    return {"x": randn(rng, (R, C), "float16", 1.5, 0.3), "g": randn(rng, (R, C), "float16"),
            "w": uniform(rng, (C,), 0.5, 1.5, "float16"), "b": randn(rng, (C,), "float16", 0.1)}


def lg_ref(p, x):
    v = x["x"]
    mean = v.mean(axis=1)
    var = v.var(axis=1)
    rstd = 1.0 / np.sqrt(var + p["eps"])
    h = (v - mean[:, None]) * rstd[:, None] * x["w"] + x["b"]
    c = p["clip"]
    g = np.clip(x["g"], -c, c)
    y = 0.5 * h * (1.0 + erf(h / np.sqrt(2.0))) * g / (1.0 + np.exp(-g))
    y = np.clip(y, -4.0 * c, 4.0 * c)
    return {"y": y, "mean": mean, "rstd": rstd, "nclip": ((x["g"] < -c) | (x["g"] > c)).sum(axis=1)}


def lg_launch(p, a, m):
    R, C = p["R"], p["C"]
    return (cdiv(R, m["BLOCK_R"]),), [a["x"], a["g"], a["w"], a["b"], a["y"], a["mean"], a["rstd"], a["nclip"], R, C,
                                      C, p["eps"], p["clip"]]


# 3. polynomial
def poly_inputs(p, rng):
    return {"x": uniform(rng, (p["N"],), -1.2, 1.2), "coef": randn(rng, (p["DEG"] + 1,), "float32", 0.7)}


def poly_ref(p, x):
    N, BLOCK, CHUNK, DEG = p["N"], p["BLOCK"], p["CHUNK"], p["DEG"]
    y = np.polyval(x["coef"][::-1], x["x"])
    c = (np.arange(N) % BLOCK) // CHUNK
    y = y + np.where(c % 2 == 1, 0.25, 0.0)
    nb = cdiv(N, BLOCK)
    wy = np.zeros(nb * BLOCK)
    wy[:N] = y * (c + 1)
    return {"y": y, "part": wy.reshape(nb, BLOCK).sum(axis=1)}


def poly_launch(p, a, m):
    assert (m["DEG"], m["BLOCK"], m["CHUNK"]) == (p["DEG"], p["BLOCK"], p["CHUNK"])
    N = p["N"]
    return (lambda META: (triton.cdiv(N, META["BLOCK"]),)), [a["x"], a["coef"], a["y"], a["part"], N]


# 4. scalar kinds
def sk_inputs(p, rng):
    return {"x": randn(rng, (p["N"],))}


def sk_out(p):
    N = p["N"]
    return {"out": ((N,), "float32"), "hi": ((N,), "int64"), "neg": ((N,), "int64"), "pg": ((N,), "int64")}


def sk_ref(p, x):
    N = p["N"]
    i = np.arange(N, dtype=object)
    idx = np.array([(int(k) * p["step64"] + p["seed"]) % N for k in range(N)])
    y = (x["x"][idx].astype(np.float32) * np.float32(p["alpha"])).astype(np.float64)
    if p["flip"]:
        y = -y
    out = y
    hi = np.array([(p["base64"] + int(k)) // 1000003 for k in i], dtype=np.int64)
    neg = np.array([(p["neg64"] - int(k)) >> 7 for k in i], dtype=np.int64)
    return {"out": out, "hi": hi, "neg": neg, "pg": np.arange(N, dtype=np.int64) * 4194304}


def sk_launch(p, a, m):
    N = p["N"]
    return (cdiv(N, m["BLOCK"]),), [a["x"], a["out"], a["hi"], a["neg"], a["pg"], N, p["step64"], p["base64"],
                                    p["neg64"], p["alpha"], p["flip"], 1, p["s16"], p["seed"], 1]


# 5. optional pointers
def op_inputs(p, rng):
    R, C = p["R"], p["C"]
    return {"x": randn(rng, (R, C), "float16"), "resid": randn(rng, (R, C), "float16"),
            "colscale": uniform(rng, (C,), 0.5, 1.5), "rowbias": randn(rng, (R,))}


def op_ref(p, x):
    y = x["x"] + (x["resid"] if p["resid"] else 0.0)
    out = {"out_sum": y} if p["out_sum"] else {}
    if p["colscale"]:
        y = y * x["colscale"][None, :]
    if p["rowbias"] and p["resid"]:
        y = y + x["rowbias"][:, None]
    if p["rowbias"]:
        y = y * 2.0
    out["out"] = y
    return out


def op_out(p):
    o = {"out": ((p["R"], p["C"]), "float16")}
    if p["out_sum"]:
        o["out_sum"] = ((p["R"], p["C"]), "float32")
    return o


def op_launch(p, a, m):
    R, C = p["R"], p["C"]
    opt = lambda k: a[k] if p[k] else None  # noqa: E731
    grid = lambda META: (triton.cdiv(R, META["BLOCK_R"]), triton.cdiv(C, META["BLOCK_C"]))  # noqa: E731
    return grid, [a["x"], opt("resid"), opt("colscale"), opt("rowbias"), a["out"], opt("out_sum"), R, C]


# 6. inline asm
def asm_inputs(p, rng):
    N = p["N"]
    return {"x": rng.integers(0, 256, N).astype(np.uint8), "f": uniform(rng, (N,), -3.0, 3.0)}


def asm_ref(p, x):
    v = x["x"].astype(np.int64)
    return {"hi": v >> 4, "lo": v & 15, "s": np.sin(x["f"]), "c": np.cos(x["f"])}


def asm_out(p):
    N = p["N"]
    return {"hi": ((N,), "uint8"), "lo": ((N,), "uint8"), "s": ((N,), "float32"), "c": ((N,), "float32")}


def asm_launch(p, a, m):
    N = p["N"]
    return (cdiv(N, m["BLOCK"]),), [a["x"], a["f"], a["hi"], a["lo"], a["s"], a["c"], N]


# 7. libdevice
def ld_inputs(p, rng):
    N = p["N"]
    x = uniform(rng, (N,), 0.5, 6.0)
    x[:4] = (1.0, 2.0, 3.0, 0.75)
    return {"x": x, "e": rng.integers(-3, 4, N).astype(np.int32)}


def ld_ref(p, x):
    import math

    v = x["x"]
    v32 = v.astype(np.float32)
    e = x["e"].astype(np.int64)
    f = np.stack([v ** e, np.fmod(np.float64(np.float32(v32 * np.float32(10.0))), 3.0),
                  np.arctan2(np.float64(v32 - np.float32(3.0)), 1.5), np.ldexp(v, e),
                  np.hypot(v, np.float64(v32 - np.float32(3.0))) + np.rint(np.float64(v32 * np.float32(4.0)))],
                 axis=1)
    t = np.arange(64) * (2.0 * np.pi / 64)  # J0(x) = mean of cos(x sin t) over a period (trapezoid: exact here)
    j0 = np.cos(v[:, None] * np.sin(t)[None, :]).mean(axis=1)
    erfcx = np.exp((v - 2.0) ** 2) * np.vectorize(math.erfc)(v - 2.0)
    d = np.stack([np.vectorize(math.lgamma)(v), erfcx, j0], axis=1)
    i = np.stack([np.ones_like(e), np.floor(np.log2(np.float64(v32 * np.float32(100.0)))).astype(np.int64),
                  (v32 - np.float32(3.0) < 0).astype(np.int64)], axis=1)
    return {"out": f, "out64": d, "iout": i}


def ld_out(p):
    N = p["N"]
    return {"out": ((N, 5), "float32"), "out64": ((N, 3), "float64"), "iout": ((N, 3), "int32")}


def ld_launch(p, a, m):
    N = p["N"]
    return (cdiv(N, m["BLOCK"]),), [a["x"], a["e"], a["out"], a["out64"], a["iout"], N]


# 8. atomic old values
def ao_inputs(p, rng):
    N, NB = p["N"], p["NB"]
    b = rng.integers(0, NB, N).astype(np.int32)
    b[b == NB - 1] = 0  # one empty bucket
    return {"bucket": b}


def ao_ref(p, x):
    NB = p["NB"]
    cnt = np.bincount(x["bucket"].astype(np.int64), minlength=NB + 1)[:NB + 1].astype(np.int64)
    cnt[NB] = 0
    return {"cnt": cnt, "sumold": cnt * (cnt - 1) // 2, "maxold": np.maximum(cnt - 1, 0),
            "winners": (cnt > 0).astype(np.int64)}


def ao_out(p):
    NB = p["NB"]
    return {"cnt": ((NB + 1,), "int32"), "sumold": ((NB + 1,), "int32"), "maxold": ((NB + 1,), "int32"),
            "flag": ((NB + 1,), "int32"), "winners": ((NB + 1,), "int32")}


def ao_launch(p, a, m):
    assert m["NB"] == p["NB"]
    return (cdiv(p["N"], m["BLOCK"]),), [a["bucket"], a["cnt"], a["sumold"], a["maxold"], a["flag"], a["winners"],
                                         p["N"]]


# 9. 3-D block pointers
def bp_inputs(p, rng):
    return {"x": randn(rng, (p["B"], p["M"], p["N"]), "float16")}


def bp_ref(p, x):
    B, M, N, BN = p["B"], p["M"], p["N"], p["BLOCK_N"]
    v = x["x"]
    nbn = cdiv(N, BN)
    pad = np.zeros((B, M, nbn * BN))
    pad[:, :, :N] = v
    return {"xt": 2.0 * v.transpose(0, 2, 1), "rsum": pad.reshape(B, M, nbn, BN).sum(axis=3)}


def bp_out(p):
    B, M, N = p["B"], p["M"], p["N"]
    return {"xt": ((B, N, M), "float16"), "rsum": ((B, M, cdiv(N, p["BLOCK_N"])), "float32")}


def bp_launch(p, a, m):
    B, M, N = p["B"], p["M"], p["N"]
    assert M % m["BLOCK_M"] == 0 and m["BLOCK_N"] == p["BLOCK_N"]
    return (M // m["BLOCK_M"], cdiv(N, m["BLOCK_N"]), B), [a["x"], a["xt"], a["rsum"], B, M, N, M * N, N, N * M, M]


# 10. activation + cast, two specializations
def ac_inputs(p, rng):
    return {"x": randn(rng, (p["N"],), "float32", 3.0)}


def ac_ref(p, x):
    v = x["x"]
    if p["ACT"] == "softplus":
        y = np.where(v > 20.0, v, np.log1p(np.exp(v)))
    elif p["ACT"] == "tanh":
        y = np.tanh(v)
    else:
        y = v
    return {"y": y * p["SCALE"]}


def ac_launch(p, a, m):
    assert (m["ACT"], m["SCALE"]) == (p["ACT"], p["SCALE"])
    N = p["N"]
    return (lambda META: (triton.cdiv(N, META["BLOCK"]),)), [a["x"], a["y"], N]


# 11. scratch exchange
def sx_inputs(p, rng):
    return {"x": randn(rng, (p["N"],)), "scratch": randn(rng, (cdiv(p["N"], p["BLOCK"]) * p["BLOCK"],))}


def sx_ref(p, x):
    N, BLOCK = p["N"], p["BLOCK"]
    nb = cdiv(N, BLOCK)
    v = np.zeros(nb * BLOCK)
    v[:N] = x["x"] ** 2
    t = v.reshape(nb, BLOCK)
    y = np.roll(t, 1, axis=1) + 2.0 * t + np.roll(t, -1, axis=1)
    return {"y": y.reshape(-1)[:N]}


def sx_launch(p, a, m):
    assert m["BLOCK"] == p["BLOCK"]
    return (cdiv(p["N"], m["BLOCK"]),), [a["x"], a["scratch"], a["y"], p["N"]]


def sx_out(p):
    return {"y": ((p["N"],), "float32")}


# 12. RMSNorm on defaults (eps 1e-6, scale 1.0, BLOCK_R 4, BLOCK_C 128)
def rd_inputs(p, rng):
    R, C = p["R"], p["C"]
    return {"x": randn(rng, (R, C), "float16"), "w": uniform(rng, (C,), 0.5, 1.5, "float16")}


def rd_ref(p, x):
    v = x["x"]
    return {"y": v / np.sqrt((v * v).mean(axis=1, keepdims=True) + 1e-6) * x["w"][None, :]}


def rd_launch(p, a, m):
    R, C = p["R"], p["C"]
    assert C <= 128
    return (cdiv(R, 4),), [a["x"], a["w"], a["y"], R, C]


SK_GPU = {"N": 1 << 22, "step64": 3_000_000_019, "base64": (1 << 41) + 12345, "neg64": -(1 << 35) - 3,
          "alpha": -0.75, "flip": True, "s16": 48, "seed": 7}
SK_CI = {"N": 1000, "step64": 3_000_000_019, "base64": (1 << 41) + 12345, "neg64": -(1 << 35) - 3,
         "alpha": -0.75, "flip": True, "s16": 16, "seed": 1}
OP_FLAGS_A = {"resid": True, "colscale": False, "rowbias": True, "out_sum": False}
OP_FLAGS_B = {"resid": False, "colscale": True, "rowbias": True, "out_sum": True}

CASES = [
    Case("heur_evenk_gemv_lambda_grid_f16", heur_gemv_kernel, gv_inputs, lambda p: {"y": ((p["M"],), "float32")},
         gv_ref, gv_launch,
         gpu={"M": 16384, "K": 4096, "pad": 64, "bias": True}, ci={"M": 300, "K": 100, "pad": 12, "bias": True},
         meta={"BLOCK_K": 128, "num_warps": 4}, ci_meta={"BLOCK_K": 32, "num_warps": 4},
         tol={"float32": (2e-3, 2e-4)},
         flops=lambda p: 2.0 * p["M"] * p["K"], bytes=lambda p: 2.0 * p["M"] * p["K"],
         idiom="@triton.heuristics computing EVEN_K (K % BLOCK_K == 0: unmasked K loads), BLOCK_M from "
               "triton.next_power_of_2(M) and HAS_BIAS from `args['BIAS'] is not None`, launched on a grid lambda "
               "of META that reads the heuristic's BLOCK_M; a padded row stride; ragged K at the CI size"),
    Case("heur_evenk_gemv_nobias_f16out", heur_gemv_kernel, gv_inputs, lambda p: {"y": ((p["M"],), "float16")},
         gv_ref, gv_launch,
         gpu={"M": 8192, "K": 8192, "pad": 0, "bias": False}, ci={"M": 90, "K": 96, "pad": 0, "bias": False},
         meta={"BLOCK_K": 256, "num_warps": 8}, ci_meta={"BLOCK_K": 32, "num_warps": 2},
         tol={"float16": (5e-3, 2e-3)},
         flops=lambda p: 2.0 * p["M"] * p["K"], bytes=lambda p: 2.0 * p["M"] * p["K"],
         idiom="the same heuristics kernel specialized again in one process: EVEN_K true, BIAS=None, an fp16 "
               "output (Y.dtype.element_ty), a stride equal to K, another BLOCK_M"),
    Case("ln_gate_helpers_noinline_f16", ln_gate_helpers_kernel, lg_inputs,
         lambda p: {"y": ((p["R"], p["C"]), "float16"), "mean": ((p["R"],), "float32"),
                    "rstd": ((p["R"],), "float32"), "nclip": ((p["R"],), "int32")}, lg_ref, lg_launch,
         gpu={"R": 32768, "C": 1000, "eps": 1e-5, "clip": 1.5}, ci={"R": 37, "C": 50, "eps": 1e-5, "clip": 1.5},
         meta={"BLOCK_R": 4, "BLOCK_C": 1024, "num_warps": 8}, ci_meta={"BLOCK_R": 4, "BLOCK_C": 64, "num_warps": 4},
         tol={"float16": (5e-3, 2e-3), "float32": (1e-4, 1e-5)},
         flops=lambda p: 20.0 * p["R"] * p["C"], bytes=lambda p: 6.0 * p["R"] * p["C"],
         idiom="LayerNorm + gelu(h) * silu(clamp(g)) built from jit helpers: a masked tile loader returning (x, mask) with "
               "constexpr defaults (OTHER, TO_F32) passed by keyword and not at all; a helper calling tl.reduce with "
               "a 3-tuple Welford combine helper; an activation helper called with two constexpr KINDs; noinline "
               "helpers on scalars (Triton's rule): an int64 row base, and a (lo, hi) scalar pair per constexpr KIND "
               "called positionally and by keyword; a helper returning a (clamped tile, per-row count) tuple"),
    Case("poly_static_range_horner_f32", poly_static_kernel, poly_inputs,
         lambda p: {"y": ((p["N"],), "float32"), "part": ((cdiv(p["N"], p["BLOCK"]),), "float32")},
         poly_ref, poly_launch,
         gpu={"N": 1 << 24, "DEG": 7, "BLOCK": 2048, "CHUNK": 512},
         ci={"N": 1000, "DEG": 5, "BLOCK": 256, "CHUNK": 64},
         meta={"DEG": 7, "BLOCK": 2048, "CHUNK": 512, "num_warps": 4},
         ci_meta={"DEG": 5, "BLOCK": 256, "CHUNK": 64, "num_warps": 2},
         tol={"float32": (2e-5, 2e-6)},
         flops=lambda p: 2.0 * p["N"] * p["DEG"], bytes=lambda p: 8.0 * p["N"],
         idiom="tl.static_range over BLOCK // CHUNK chunks (a constexpr local NCH: tl.constexpr = BLOCK // CHUNK), "
               "a reversed tl.static_range(DEG - 1, -1, -1) Horner loop of scalar coefficient loads, a compile-time "
               "`if c % 2 == 1` on the unrolled index adding a module-level tl.constexpr, (c + 1) weights, "
               "tl.static_assert on constexpr arithmetic and tl.static_print, a grid lambda of META"),
    Case("scalar_kinds_i64_bool_one_dns_f32", scalar_kinds_kernel, sk_inputs, sk_out, sk_ref, sk_launch,
         gpu=SK_GPU, ci=SK_CI, meta={"BLOCK": 1024, "num_warps": 4}, ci_meta={"BLOCK": 128, "num_warps": 2},
         tol={"float32": (0.0, 0.0)},
         flops=lambda p: 2.0 * p["N"], bytes=lambda p: 24.0 * p["N"],
         idiom="scalar arguments of every kind: an int64 step between 2^31 and 2^32 in a gather index "
               "(i * step) % N, base64 = 2^41 + 12345 and a negative int64 in // and >> arithmetic, a Python float "
               "and a Python bool (`if flip:` on an i1 argument), an int equal to 1 (specialized) as a stride, a "
               "row stride that is a multiple of 16, a do_not_specialize seed equal to 1 at the CI size, a `page_stride: tl.int64` "
               "annotated parameter equal to 1 in an int64 product past 2^31"),
    Case("optional_ptrs_none_resid_rowbias_f16", optional_ptrs_kernel, op_inputs, op_out, op_ref, op_launch,
         gpu={"R": 8192, "C": 4096, **OP_FLAGS_A}, ci={"R": 37, "C": 50, **OP_FLAGS_A},
         meta={"BLOCK_R": 16, "BLOCK_C": 128, "num_warps": 4}, ci_meta={"BLOCK_R": 8, "BLOCK_C": 32, "num_warps": 2},
         tol={"float16": (5e-3, 2e-3)},
         flops=lambda p: 4.0 * p["R"] * p["C"], bytes=lambda p: 6.0 * p["R"] * p["C"],
         idiom="optional pointers passed as None: `if RESID is not None`, `if OUT_SUM is None: pass else: store`, "
               "a None pointer tested inside a helper, `ROWBIAS is not None and RESID is not None`, "
               "`not (ROWBIAS is None)`; grid lambda of META"),
    Case("optional_ptrs_none_colscale_outsum_f16", optional_ptrs_kernel, op_inputs, op_out, op_ref, op_launch,
         gpu={"R": 8192, "C": 4096, **OP_FLAGS_B}, ci={"R": 37, "C": 50, **OP_FLAGS_B},
         meta={"BLOCK_R": 16, "BLOCK_C": 128, "num_warps": 4}, ci_meta={"BLOCK_R": 8, "BLOCK_C": 32, "num_warps": 2},
         tol={"float16": (5e-3, 2e-3), "float32": (1e-5, 1e-6)},
         flops=lambda p: 4.0 * p["R"] * p["C"], bytes=lambda p: 10.0 * p["R"] * p["C"],
         idiom="the same kernel with the other pointers None (RESID None, COLSCALE and OUT_SUM given)"),
    Case("asm_two_outputs_pack4_u8", asm_multi_out_kernel, asm_inputs, asm_out, asm_ref, asm_launch,
         gpu={"N": 1 << 24}, ci={"N": 1000},
         meta={"USE_ASM": True, "BLOCK": 1024, "num_warps": 4},
         ci_meta={"USE_ASM": False, "BLOCK": 256, "num_warps": 4},
         tol={"float32": (2e-6, 2e-6)},
         flops=lambda p: 4.0 * p["N"], bytes=lambda p: 14.0 * p["N"],
         idiom="tl.inline_asm_elementwise with two outputs: uint8 nibbles by pack=4 PTX on 32-bit registers "
               "(=r,=r,r; a scoped .reg) and sin.approx / cos.approx by pack=1 (=f,=f,f), behind a USE_ASM "
               "constexpr (the interpreter runs the tl fallback)"),
    Case("libdevice_mixed_args_f32_f64", libdevice_mix_kernel, ld_inputs, ld_out, ld_ref, ld_launch,
         gpu={"N": 1 << 22}, ci={"N": 1000},
         meta={"BLOCK": 512, "num_warps": 4}, ci_meta={"BLOCK": 128, "num_warps": 4},
         tol={"float32": (4e-6, 1e-6), "float64": (1e-12, 1e-13)},
         flops=lambda p: 40.0 * p["N"], bytes=lambda p: 60.0 * p["N"],
         idiom="libdevice with mixed argument types: lgamma / erfcx / j0 on float64 tiles, pow(f32, int32 "
               "tensor) (powif), fmod / atan2 with Python floats, ldexp(f32, int32), hypot + rint, nextafter's "
               "bit distance through float_as_int, ilogb and signbit as int32"),
    Case("atomic_olds_tickets_cas_i32", atomic_olds_kernel, ao_inputs, ao_out, ao_ref, ao_launch,
         gpu={"N": 1 << 20, "NB": 64}, ci={"N": 1000, "NB": 16},
         meta={"NB": 64, "BLOCK": 1024, "num_warps": 4}, ci_meta={"NB": 16, "BLOCK": 256, "num_warps": 4},
         zero=("cnt", "sumold", "maxold", "flag", "winners"),
         flops=lambda p: 0.0, bytes=lambda p: 4.0 * p["N"],
         idiom="vector atomics whose returned old values are used: per-bucket tickets from tl.atomic_add with "
               "many lanes of one block on one address (distinct olds), the tickets summed by atomic_add and "
               "maxed by a relaxed atomic_max, an unmasked vector tl.atomic_cas(flag, zeros, ones) whose single "
               "winner per bucket is counted (padded lanes aimed at a spare slot)"),
    Case("blockptr3d_partial_bc_i64_store_f16", bp3d_store_kernel, bp_inputs, bp_out, bp_ref, bp_launch,
         gpu={"B": 16, "M": 2048, "N": 2000, "BLOCK_N": 64}, ci={"B": 3, "M": 64, "N": 50, "BLOCK_N": 16},
         meta={"BLOCK_M": 64, "BLOCK_N": 64, "num_warps": 4}, ci_meta={"BLOCK_M": 16, "BLOCK_N": 16, "num_warps": 4},
         tol={"float16": (0.0, 0.0), "float32": (1e-5, 1e-6)},
         flops=lambda p: 2.0 * p["B"] * p["M"] * p["N"], bytes=lambda p: 4.0 * p["B"] * p["M"] * p["N"],
         idiom="3-D tl.make_block_ptr with a unit batch block: loaded with boundary_check=(2,) only (M a multiple "
               "of BLOCK_M), reshaped to 2-D, transposed and stored through a second 3-D block pointer with "
               "boundary_check=(1,) only; per-tile row sums stored through int64 offsets with a mask"),
    Case("act_cast_softplus_f16out", act_cast_kernel, ac_inputs, lambda p: {"y": ((p["N"],), "float16")}, ac_ref,
         ac_launch,
         gpu={"N": 1 << 24, "ACT": "softplus", "SCALE": 0.5}, ci={"N": 1000, "ACT": "softplus", "SCALE": 0.5},
         meta={"ACT": "softplus", "SCALE": 0.5, "BLOCK": 1024, "num_warps": 4, "num_stages": 2},
         ci_meta={"ACT": "softplus", "SCALE": 0.5, "BLOCK": 128, "num_warps": 2, "num_stages": 2},
         flops=lambda p: 4.0 * p["N"], bytes=lambda p: 6.0 * p["N"],
         idiom="one kernel specialized on a str constexpr, a float constexpr and the output pointer's dtype "
               "(Y.dtype.element_ty): here softplus, SCALE 0.5, fp16 out; num_warps / num_stages keywords"),
    Case("act_cast_tanh_f32out", act_cast_kernel, ac_inputs, lambda p: {"y": ((p["N"],), "float32")}, ac_ref,
         ac_launch,
         gpu={"N": 1 << 24, "ACT": "tanh", "SCALE": 2.0}, ci={"N": 1000, "ACT": "tanh", "SCALE": 2.0},
         meta={"ACT": "tanh", "SCALE": 2.0, "BLOCK": 1024, "num_warps": 8, "num_stages": 4},
         ci_meta={"ACT": "tanh", "SCALE": 2.0, "BLOCK": 256, "num_warps": 4, "num_stages": 3},
         tol={"float32": (2e-6, 1e-6)},
         flops=lambda p: 4.0 * p["N"], bytes=lambda p: 8.0 * p["N"],
         idiom="the same kernel again in one process: tanh, SCALE 2.0, fp32 out, other launch options"),
    Case("scratch_exchange_debug_barrier_f32", scratch_exchange_kernel, sx_inputs, sx_out, sx_ref, sx_launch,
         gpu={"N": 1 << 24, "BLOCK": 1024}, ci={"N": 1000, "BLOCK": 128},
         meta={"BLOCK": 1024, "num_warps": 4}, ci_meta={"BLOCK": 128, "num_warps": 4},
         tol={"float32": (1e-6, 1e-7)},
         flops=lambda p: 4.0 * p["N"], bytes=lambda p: 16.0 * p["N"],
         idiom="a neighbour exchange through a per-program global scratch row: every thread's stores, "
               "tl.debug_barrier(), then loads shifted by one lane each way (circular in the block)"),
    Case("rmsnorm_kernel_defaults_f16", rmsnorm_defaults_kernel, rd_inputs, lambda p: {"y": ((p["R"], p["C"]),
                                                                                           "float16")},
         rd_ref, rd_launch,
         gpu={"R": 65536, "C": 128}, ci={"R": 37, "C": 100},
         meta={"num_warps": 4}, ci_meta={"num_warps": 2},
         flops=lambda p: 4.0 * p["R"] * p["C"], bytes=lambda p: 4.0 * p["R"] * p["C"],
         idiom="a kernel launched without its defaulted arguments: runtime eps=1e-6 and scale=1.0 and constexpr "
               "BLOCK_R = 4, BLOCK_C = 128 from the signature; a helper with a dtype constexpr default and a "
               "keep_dims constexpr passed by keyword"),
]
