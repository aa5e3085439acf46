"""Autotune as libraries call it (#22 item 5): early_config_prune gets the call's kwargs; host arrays and CPU
tensors tune and run in the interpreter without the GPU driver."""
import numpy as np
import pytest

import compiler
import compiler.language as tl


@pytest.fixture
def no_driver(monkeypatch):
    """Any use of the CUDA driver fails the test."""
    from compiler.runtime import cuda

    def boom(*a, **k):
        raise AssertionError("the CUDA driver was touched")

    for name in ("driver", "_init", "ensure_context", "device_arch", "gpu_available"):
        monkeypatch.setattr(cuda, name, boom)
    import compiler.compile as cc

    if hasattr(cc, "_device_arch"):
        monkeypatch.setattr(cc, "_device_arch", boom)


def _make(prune):
    @compiler.autotune(configs=[compiler.Config({"BLOCK": 32}, num_warps=1), compiler.Config({"BLOCK": 64}),
                                compiler.Config({"BLOCK": 128}, num_warps=8)],
                       key=["N"], prune_configs_by={"early_config_prune": prune}, use_database=False)
    @compiler.jit
    def scale(X, Y, N, ALPHA, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < N
        tl.store(Y + offs, tl.load(X + offs, mask=m) * ALPHA, mask=m)

    return scale


def test_early_config_prune_gets_the_call_kwargs(no_driver):
    seen = []

    def prune(configs, named_args, **kwargs):
        seen.append((sorted(named_args), dict(kwargs)))
        n_ctx = kwargs["N"]  # a shape read from kwargs, as a widely used attention kernel does
        return [c for c in configs if c.kwargs["BLOCK"] <= n_ctx // 4]

    k = _make(prune)
    rng = np.random.default_rng(9)
    x = rng.standard_normal(300).astype(np.float32)
    y = np.full_like(x, np.nan)
    k[lambda m: (compiler.cdiv(300, m["BLOCK"]),)](x, y, N=300, ALPHA=2.5)
    np.testing.assert_allclose(y, x.astype(np.float64) * 2.5, rtol=1e-6)
    assert seen and seen[0][1]["N"] == 300 and seen[0][1]["ALPHA"] == 2.5
    assert {"X", "Y", "N"} <= set(seen[0][0])
    assert k.best_config.kwargs["BLOCK"] == 32  # the first config left runs first in the interpreter


class _FakeTorchDtype:
    def __init__(self, name):
        self.name = name

    def __str__(self):
        return self.name

    def __hash__(self):
        return hash(self.name)

    def __eq__(self, o):
        return isinstance(o, _FakeTorchDtype) and o.name == self.name


class Tensor:
    """Stands in for a CPU torch.Tensor (torch is not a dependency): what the launcher reads of one."""

    __module__ = "torch"
    is_cuda = False

    def __init__(self, arr):
        self._arr = arr
        self.dtype = _FakeTorchDtype(f"torch.{arr.dtype.name}")

    def detach(self):
        return self

    def numpy(self):
        return self._arr

    def data_ptr(self):
        return self._arr.__array_interface__["data"][0]

    def zero_(self):
        self._arr[...] = 0

    def clone(self):
        return Tensor(self._arr.copy())


def test_cpu_tensors_run_in_the_interpreter(no_driver):
    k = _make(lambda configs, named, **kw: configs)
    rng = np.random.default_rng(10)
    xa = rng.standard_normal(200).astype(np.float32)
    ya = np.full_like(xa, np.nan)
    k[lambda m: (compiler.cdiv(200, m["BLOCK"]),)](Tensor(xa), Tensor(ya), 200, -1.5)
    np.testing.assert_allclose(ya, xa.astype(np.float64) * -1.5, rtol=1e-6)
    assert not k.configs_errors  # every config ran (in the interpreter)
    # a plain jit kernel too
    ya[:] = np.nan
    k.base_fn[(4,)](Tensor(xa), Tensor(ya), 200, 3.0, BLOCK=64)
    np.testing.assert_allclose(ya, xa.astype(np.float64) * 3.0, rtol=1e-6)


def test_early_config_prune_without_kwargs(no_driver):
    k = _make(lambda configs, named_args: configs[1:])
    x = np.ones(100, np.float32)
    y = np.full_like(x, np.nan)
    k[lambda m: (compiler.cdiv(100, m["BLOCK"]),)](x, y, N=100, ALPHA=2.0)
    assert (y == 2.0).all() and k.best_config.kwargs["BLOCK"] == 64
