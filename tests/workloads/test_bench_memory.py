"""scripts/bench_memory.py's plumbing without a GPU: torch is replaced by a NumPy stand-in whose "CUDA tensors"
are host arrays (so our kernels run in the interpreter), Triton by our own compiler (the ported source then
runs through the interpreter too), and timing by one call. Checks that validation, the report and the table
work end to end, so a session on the GPU node is not lost to a typo."""
from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import sys
import types

import ml_dtypes
import numpy as np
import pytest

import compiler
import compiler.language

ROOT = pathlib.Path(__file__).resolve().parents[2]


class FakeTensor(np.ndarray):
    """A host array dressed as a CUDA torch tensor (the jit sends `interp_array` objects to the interpreter)."""

    def interp_array(self):
        return np.asarray(self)

    def cuda(self):
        return self

    def cpu(self):
        return self

    def detach(self):
        return self

    def numpy(self):
        return np.asarray(self)

    def double(self):
        return np.asarray(self).astype(np.float64).view(FakeTensor)

    def float(self):
        return np.asarray(self).astype(np.float32).view(FakeTensor)

    def to(self, dt):
        return np.asarray(self).astype(dt).view(FakeTensor)

    def abs(self):
        return np.abs(np.asarray(self)).view(FakeTensor)

    def is_floating_point(self):
        return self.dtype.kind == "f" or self.dtype.name == "bfloat16"

    def fill_(self, v):
        self.fill(v)
        return self

    @property
    def is_cuda(self):
        return True


def _t(a):
    return np.asarray(a).view(FakeTensor)


def fake_torch():
    t = types.ModuleType("torch")
    t.__version__ = "fake"
    t.float32, t.float16, t.float64 = np.dtype(np.float32), np.dtype(np.float16), np.dtype(np.float64)
    t.bfloat16 = np.dtype(ml_dtypes.bfloat16)
    t.int64, t.int32, t.int16, t.int8, t.uint8 = (np.dtype(x) for x in ("int64", "int32", "int16", "int8", "uint8"))
    t.bool = np.dtype(bool)
    t.iinfo = np.iinfo
    t.from_numpy = _t
    t.zeros = lambda *shape, dtype=np.float32, device=None: _t(np.zeros(shape, dtype))
    t.empty = lambda shape, dtype=np.float32, device=None: _t(np.empty(shape, dtype))
    t.isnan = lambda a: _t(np.isnan(np.asarray(a, dtype=np.float64)))
    t.isfinite = lambda a: _t(np.isfinite(np.asarray(a, dtype=np.float64)))
    t.nonzero = lambda a: _t(np.argwhere(np.asarray(a)))
    t.add = lambda x, y: _t(np.asarray(x) + np.asarray(y))

    def softmax(x, dim=-1):
        x = np.asarray(x, dtype=np.float32)
        e = np.exp(x - x.max(axis=dim, keepdims=True))
        return _t(e / e.sum(axis=dim, keepdims=True))

    t.softmax = softmax
    cuda = types.SimpleNamespace(
        is_available=lambda: True, init=lambda: None, synchronize=lambda: None, empty_cache=lambda: None,
        get_device_properties=lambda i: types.SimpleNamespace(name="Fake GPU", multi_processor_count=1))
    t.cuda = cuda
    t.version = types.SimpleNamespace(cuda="fake")
    return t


@pytest.fixture
def bench(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", fake_torch())
    # "Triton" is our compiler: the port rewrites the imports to triton / triton.language.
    monkeypatch.setitem(sys.modules, "triton", compiler)
    monkeypatch.setitem(sys.modules, "triton.language", compiler.language)
    spec = importlib.util.spec_from_file_location("bench_memory_under_test", ROOT / "scripts" / "bench_memory.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)

    def one_call(self, fn):
        fn()
        return {"median_ms": 1.0, "p10_ms": 0.9, "p90_ms": 1.1, "mean_ms": 1.0, "min_ms": 0.9, "n": 1}

    monkeypatch.setattr(mod.Timer, "__call__", one_call)
    # interpreter-sized versions of the GPU targets
    small = {"vector_add": {"N": 5000}, "softmax": {"M": 3}, "layernorm": {"M": 2, "N": 3000},
             "rmsnorm": {"M": 2, "N": 3000}, "cross_entropy": {"M": 3, "V": 5000}}
    targets = []
    for tgt in mod.TARGETS:
        tgt = dict(tgt)
        tgt["quick"] = small[tgt["workload"]]
        targets.append(tgt)
    monkeypatch.setattr(mod, "TARGETS", targets)
    from workloads._common import _triton_modules
    _triton_modules.clear()
    yield mod
    _triton_modules.clear()


def test_bench_memory_end_to_end(bench, tmp_path, capsys):
    rc = bench.main(["--quick", "--out", str(tmp_path), "--skip-compile", "--skip-launch"])
    out = capsys.readouterr().out
    files = sorted(os.listdir(tmp_path))
    assert any(f.endswith(".json") for f in files) and any(f.endswith(".md") for f in files), files
    report = json.loads((tmp_path / [f for f in files if f.endswith(".json")][0]).read_text())
    assert len(report["targets"]) == len(bench.TARGETS)
    for r in report["targets"]:
        assert r["ours_valid"], (r["id"], json.dumps(r, default=str)[:2000])
        tri = r["impls"]["triton"]["best"]
        assert tri and tri["valid"], (r["id"], r["impls"]["triton"])
        assert r["ratio_vs_triton"] == pytest.approx(1.0)
    assert rc == 0
    assert "| vector add fp32 N=2^28 (quick: N=5000) |" in out


def test_bench_memory_flags_a_wrong_kernel(bench, tmp_path, monkeypatch):
    from workloads import registry

    wl = registry()["softmax"]
    good = wl.launch

    def wrong(arrays, params, meta):
        good(arrays, params, meta)
        arrays["y"][0, 0] += 0.5

    monkeypatch.setattr(wl, "launch", wrong)
    rc = bench.main(["--quick", "--out", str(tmp_path), "--only", "softmax fp32 4096", "--skip-compile",
                     "--skip-launch"])
    report = json.loads(next(tmp_path.glob("*.json")).read_text())
    (r,) = report["targets"]
    assert not r["ours_valid"] and r["ratio_vs_triton"] is None
    assert rc == 1
