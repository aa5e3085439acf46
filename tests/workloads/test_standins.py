"""Compiling a farm job from stand-in arrays gives the very kernel a GPU worker will look up."""
import numpy as np
import pytest

from compiler.ir.types import from_name, from_numpy
from workloads import registry
from workloads.base import _aligned_empty

REG = registry()


def _aligned_copy(a):
    out = _aligned_empty(from_numpy(a.dtype).name, a.size)
    out[...] = a.reshape(-1)
    return out.reshape(a.shape)


@pytest.mark.parametrize("name", sorted(REG))
def test_input_specs_match_inputs_and_compile_keys(name):
    wl = REG[name]
    if wl.input_specs is None:
        pytest.skip(f"{name} declares no input_specs")
    for params in wl.default_sweep[:3]:
        params = dict(params)
        inputs = wl.make_inputs(params, np.random.default_rng(0))
        specs = {s.name: s for s in wl.input_specs(params)}
        assert set(specs) == set(inputs)
        for k, v in inputs.items():
            assert tuple(v.shape) == tuple(specs[k].shape) and v.dtype == from_name(specs[k].dtype).np, k
        # device allocations are 256-byte aligned: compare against real inputs placed the same way
        real = {k: _aligned_copy(v) for k, v in inputs.items()}
        for s in wl.output_specs(params):
            real[s.name] = _aligned_empty(s.dtype, int(np.prod(s.shape)) or 1).reshape(s.shape)
        meta = dict(wl.default_meta)
        meta["target"] = "sm_90"
        k_standin = wl.compile(wl.standin_arrays(params), params, dict(meta))
        k_real = wl.compile(real, params, dict(meta))
        assert k_standin.key == k_real.key, (name, params)
