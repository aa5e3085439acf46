"""The idiom corpus (workloads/corpus) in CI: every kernel, loaded from its `import triton` source through the
compatibility layer, compiles to PTX for sm_90a, is assembled by ptxas and runs in our interpreter at its CI size
against its float64 reference (outputs poisoned first; NaN fails). Kernels that need a language feature the
compiler lacks are strict expected failures naming that feature. The kernels of issue 16's table are also
compiled at the meta-parameters they are timed with on the H200."""
import pathlib
import re

import numpy as np
import pytest

import workloads.corpus as corpus
from compiler.codegen.ptx import find_ptxas

CASES = corpus.load("tilefarm")
TARGET = "sm_90a"
# issue 16's table: these are timed at their GPU meta-parameters, so CI compiles them at those too
TABLE = ("mm_relu_f16", "mm_bias_f16", "mm_mask_mnk_f16", "mm_mask_mn_f16", "mm_tutorial_f16", "attn_masked_d64",
         "attn_kT_d64", "attn_masked_d128", "attn_kT_d128", "transpose32_f32", "transpose64_f32",
         "saxpy_2p26p3_f32", "saxpy_2p26_f32", "argmax_rows_f32", "mm_mask_mnk_f16_128x256x64_w8s3",
         "mm_mask_mnk_f16_64x128x32_w4s4", "mm_mask_mn_f16_128x256x64_w8s3", "mm_mask_mn_f16_64x128x32_w4s4")


def _param(name):
    c = CASES[name]
    marks = [pytest.mark.xfail(strict=True, reason=c.xfail)] if c.xfail else []
    return pytest.param(name, marks=marks, id=name)


def _needs_ptxas():
    try:
        find_ptxas()
    except Exception as e:  # noqa: BLE001
        pytest.skip(f"no ptxas: {e}")


def test_corpus_shape():
    assert len(CASES) >= 40
    for path in corpus.files():
        src = path.read_text()
        assert re.search(r"^import triton$", src, re.M) and re.search(r"^import triton\.language as tl$", src, re.M), \
            f"{path.name} must import triton as Triton users do"
        assert "import compiler" not in src, path.name
    for name, c in CASES.items():
        assert c.gpu and c.ci and c.meta, name
        assert "num_warps" in c.meta, f"{name}: GPU meta without num_warps"
        p = c.params("ci")
        elems = sum(int(np.prod(s)) for s, _ in c.outputs(p).values())
        assert elems <= 200_000, f"{name}: CI size too large for the interpreter ({elems} output elements)"
        x = c.make_inputs(p)
        for k, v in x.items():  # seeded, never all zeros
            assert np.count_nonzero(np.asarray(v, dtype=np.float64)) > 0, f"{name}: input {k} is all zeros"
        again = c.make_inputs(p)
        for k in x:
            assert np.array_equal(np.asarray(x[k], np.float64), np.asarray(again[k], np.float64)), f"{name}: {k}"
    for t in TABLE:
        assert t in CASES, t


def _compile(c, p, meta, arrays):
    grid, args = c.launch(p, arrays, meta)
    consts, opts = c.split_meta(meta)
    k = c.kernel.warmup(*args, grid=grid, target=TARGET, **consts, **opts)
    ptx = k.asm["ptx"]
    assert f".target {TARGET}" in ptx
    cubin = k.asm["cubin"]
    assert isinstance(cubin, (bytes, bytearray)) and len(cubin) > 0
    return k


@pytest.mark.parametrize("name", [_param(n) for n in CASES])
def test_corpus_kernel(name):
    c = CASES[name]
    p, meta = c.params("ci"), c.meta_for("ci")
    x = c.make_inputs(p, seed=1)
    outs = c.make_outputs(p)
    arrays = {**x, **outs}
    c.run(c.kernel, arrays, p, meta)  # interpreter: NumPy arrays
    res = c.check(p, outs, c.expected(p, x))
    bad = {k: v[2] for k, v in res.items() if not v[0]}
    assert not bad, f"{name}: {bad}"
    _needs_ptxas()
    _compile(c, p, meta, arrays)


@pytest.mark.parametrize("name", [_param(n) for n in TABLE])
def test_table_kernel_compiles_at_gpu_meta(name):
    _needs_ptxas()
    c = CASES[name]
    p = c.params("ci")
    arrays = {**c.make_inputs(p), **c.make_outputs(p)}
    _compile(c, p, c.meta_for("gpu"), arrays)


def test_check_catches_wrong_outputs():
    """The corpus check fails a wrong value, a NaN and an unwritten (poisoned) output, and passes the reference."""
    c = CASES["saxpy_2p26_f32"]
    p = c.params("ci")
    x = c.make_inputs(p)
    ref = c.expected(p, x)
    good = {"out": ref["out"].astype(np.float32)}
    assert c.check(p, good, ref)["out"][0]
    wrong = {"out": good["out"].copy()}
    wrong["out"][5] += 1e-2
    assert not c.check(p, wrong, ref)["out"][0]
    nan = {"out": good["out"].copy()}
    nan["out"][0] = np.nan
    assert not c.check(p, nan, ref)["out"][0]
    assert not c.check(p, c.make_outputs(p), ref)["out"][0]
    h = CASES["histogram_i32"]
    hp = h.params("ci")
    hx = h.make_inputs(hp)
    href = h.expected(hp, hx)
    assert not h.check(hp, {"hist": href["hist"] + (np.arange(hp["bins"]) == 3)}, href)["hist"][0]
    assert not h.check(hp, {"hist": np.full(hp["bins"], np.iinfo(np.int32).min)}, href)["hist"][0]


def test_corpus_files_are_valid_python_with_cases():
    for path in corpus.files():
        assert "CASES" in pathlib.Path(path).read_text(), path.name


def test_check_in_chunks_finds_errors_anywhere():
    """Outputs larger than one check chunk (2^22 elements): an error, a NaN or an inf past the first chunk fails."""
    from workloads.corpus._case import Case

    n = (1 << 22) * 2 + 5
    c = Case("big", None, None, lambda p: {"y": ((n,), "float32")}, None, None, gpu={}, ci={}, meta={})
    r = np.random.default_rng(0).standard_normal(n)
    good = r.astype(np.float32)
    assert c.check({}, {"y": good}, {"y": r})["y"][0]
    for i, v in ((n - 1, 1.0), ((1 << 22) + 3, np.nan), (n - 2, np.inf)):
        bad = good.copy()
        bad[i] = bad[i] + v if np.isfinite(v) else v
        assert not c.check({}, {"y": bad}, {"y": r})["y"][0], (i, v)
    exact = Case("exact", None, None, lambda p: {"y": ((n,), "float32")}, None, None, gpu={}, ci={}, meta={},
                 tol={"float32": (0.0, 0.0)})
    r32 = good.astype(np.float64)
    assert exact.check({}, {"y": good}, {"y": r32})["y"][0]
    off = good.copy()
    off[n - 3] = np.nextafter(off[n - 3], np.float32(np.inf))
    assert not exact.check({}, {"y": off}, {"y": r32})["y"][0]


def test_gpu_sizes_fit_a_float64_reference():
    """Every case's GPU size leaves room for its float64 reference on the GPU node's host (the benchmark computes
    it beside both compilers' runs): no output over 2^28 elements (2 GiB as float64). A case once had 2.1e9
    (cross-entropy over R=8192 x V=256000) and the benchmark process was killed on it."""
    big = {}
    for name, c in CASES.items():
        for out, (shape, _dt) in c.outputs(c.params("gpu")).items():
            n = int(np.prod(shape))
            if n > 1 << 28:
                big[f"{name}.{out}"] = n
    assert not big, big
