"""The bundled memory-bound workloads: each kernel run through the interpreter at its small default sweep and
compared with the float64 reference; each kernel compiled for sm_90 (and assembled when ptxas is present);
the Workload contract (counts, specs, Triton port) checked without a GPU."""
from __future__ import annotations

import numpy as np
import pytest

from workloads import registry
from workloads._common import np_dtype, triton_source

from .conftest import OURS, assert_close, poison


def _cases(extra_meta=False):
    out = []
    for name in OURS:
        wl = registry()[name]
        for p in wl.default_sweep:
            ident = name + "-" + "-".join(f"{k}{v}" for k, v in p.items())
            out.append(pytest.param(name, p, {}, id=ident))
    return out


# Meta points that exercise the chunked loops (BLOCK_SIZE < row length) and the masked tails.
CHUNKED = [
    ("vector_add", {"N": 3000, "dtype": "float32"}, {"BLOCK": 256}),
    ("vector_add", {"N": 3000, "dtype": "float16"}, {"BLOCK": 128, "num_warps": 1}),
    ("softmax", {"M": 3, "N": 100, "dtype": "float32"}, {"BLOCK_SIZE": 512}),
    ("layernorm", {"M": 3, "N": 1000, "dtype": "float32"}, {"BLOCK_SIZE": 128}),
    ("layernorm", {"M": 4, "N": 777, "dtype": "float16"}, {"BLOCK_SIZE": 256}),
    ("layernorm", {"M": 4, "N": 777, "dtype": "bfloat16"}, {"BLOCK_SIZE": 256}),
    ("rmsnorm", {"M": 3, "N": 1000, "dtype": "float32"}, {"BLOCK_SIZE": 128}),
    ("rmsnorm", {"M": 4, "N": 777, "dtype": "bfloat16"}, {"BLOCK_SIZE": 256}),
    ("cross_entropy", {"M": 5, "V": 3001, "dtype": "float32"}, {"BLOCK_SIZE": 512}),
    ("cross_entropy", {"M": 5, "V": 100, "dtype": "bfloat16"}, {"BLOCK_SIZE": 128}),
    ("cross_entropy", {"M": 3, "V": 70, "dtype": "float16"}, {"BLOCK_SIZE": 64}),
]


def _arrays(wl, params, seed=0):
    inputs = wl.make_inputs(params, np.random.default_rng(seed))
    arrays = dict(inputs)
    for spec in wl.output_specs(params):
        arrays[spec.name] = arrays[spec.inplace] if spec.inplace else poison(spec.shape, spec.dtype)
    return inputs, arrays


def _run_and_check(name, params, meta):
    wl = registry()[name]
    inputs, arrays = _arrays(wl, params)
    pristine = {k: v.copy() for k, v in inputs.items()}
    wl.launch(arrays, params, {**wl.default_meta, **meta})
    ref = wl.reference(pristine, params)
    for spec in wl.output_specs(params):
        rtol, atol = wl.tol(spec.dtype)
        assert_close(f"{name}.{spec.name}", arrays[spec.name], ref[spec.name], rtol, atol)
    for k, v in pristine.items():
        assert inputs[k].tobytes() == v.tobytes(), f"{name}: input {k} was modified"


@pytest.mark.parametrize("name,params,meta", _cases())
def test_interpreter_default_sweep(name, params, meta):
    _run_and_check(name, params, meta)


@pytest.mark.parametrize("name,params,meta", [pytest.param(*c, id=f"{c[0]}-{c[2]}-{c[1]}") for c in CHUNKED])
def test_interpreter_chunked(name, params, meta):
    _run_and_check(name, params, meta)


def test_interpreter_bench_like_shapes():
    """Rows as long as the benchmark's (few of them): softmax 8192 columns, cross-entropy V=32000, ..."""
    from .test_workloads_gpu import MEDIUM

    for name, params, meta in MEDIUM:
        p = dict(params)
        if "M" in p:
            p["M"] = min(p["M"], 4)
        _run_and_check(name, p, meta)


# ------------------------------------------------------------------------------------------ compile (no GPU)
COMPILE_CASES = [
    ("vector_add", {"N": 4096, "dtype": "float32"}, {}),
    ("vector_add", {"N": 4099, "dtype": "bfloat16"}, {}),
    ("softmax", {"M": 4, "N": 1024, "dtype": "float32"}, {}),
    ("softmax", {"M": 4, "N": 781, "dtype": "bfloat16"}, {}),
    ("softmax", {"M": 4, "N": 8192, "dtype": "float16"}, {}),
    ("layernorm", {"M": 4, "N": 8192, "dtype": "float16"}, {}),
    ("layernorm", {"M": 4, "N": 1000, "dtype": "float32"}, {"BLOCK_SIZE": 256}),
    ("rmsnorm", {"M": 4, "N": 4096, "dtype": "bfloat16"}, {}),
    ("cross_entropy", {"M": 4, "V": 32000, "dtype": "bfloat16"}, {}),
    ("cross_entropy", {"M": 4, "V": 1000, "dtype": "float32"}, {}),
]


@pytest.mark.parametrize("name,params,meta", [pytest.param(*c, id=f"{c[0]}-{c[1]}-{c[2]}") for c in COMPILE_CASES])
def test_compiles_for_sm90(name, params, meta):
    wl = registry()[name]
    _, arrays = _arrays(wl, params)
    compiled = wl.warmup(arrays, params, {**wl.default_meta, **meta, "target": "sm_90"})
    asm = compiled.asm
    for stage in ("tile", "llir", "ptx"):
        assert asm.get(stage), f"{name}: no {stage!r} stage in compiled.asm ({sorted(asm)})"
    ptx = asm["ptx"]
    assert ".target sm_90" in ptx, ptx[:400]
    assert ".entry" in ptx
    if "cubin" in asm:  # ptxas was found: the PTX assembled
        assert len(asm["cubin"]) > 0


# ------------------------------------------------------------------------------------------ the contract
@pytest.mark.parametrize("name", OURS)
def test_workload_contract(name):
    wl = registry()[name]
    assert wl.name == name and wl.description
    assert wl.default_sweep, "needs a small default sweep"
    assert wl.warmup is not None and wl.triton_launch is not None and wl.torch_impl is not None
    dtypes = {p["dtype"] for p in wl.default_sweep}
    assert {"float32", "bfloat16", "float16"} <= dtypes
    for p in list(wl.default_sweep) + list(getattr(wl, "gpu_sweep", [])):
        assert wl.flops(p) > 0 and wl.bytes(p) > 0
    for p in wl.default_sweep:
        inputs = wl.make_inputs(p, np.random.default_rng(1))
        again = wl.make_inputs(p, np.random.default_rng(1))
        for k, v in inputs.items():
            assert v.tobytes() == again[k].tobytes(), f"{k}: inputs not seeded"
            if v.dtype.kind == "f" or v.dtype.name == "bfloat16":
                assert np.isfinite(v.astype(np.float32)).all()
                assert (v.astype(np.float32) != 0).mean() > 0.99, f"{k}: mostly zeros"
        # bytes: each input read once, each output written once
        want = sum(v.nbytes for v in inputs.values())
        want += sum(int(np.prod(s.shape)) * np_dtype(s.dtype).itemsize for s in wl.output_specs(p))
        assert wl.bytes(p) == want, (p, wl.bytes(p), want)


@pytest.mark.parametrize("name", OURS)
def test_triton_port_source(name):
    """The Triton port is the same text with only the two import lines changed."""
    wl = registry()[name]
    import importlib

    mod = importlib.import_module(wl.kernel.__module__)
    ours = open(mod.__file__, encoding="utf-8").read().splitlines()
    theirs = triton_source(mod).splitlines()
    diff = [(a, b) for a, b in zip(ours, theirs) if a != b]
    assert len(ours) == len(theirs)
    assert sorted(b for _, b in diff) == ["import triton as compiler", "import triton.language as tl"], diff
