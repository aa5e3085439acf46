"""workloads/matmul and workloads/attention: default sweeps through the interpreter against their float64
references, and every sweep point compiled for sm_90 (sm_90a with wgmma) and assembled with ptxas."""
from __future__ import annotations

import numpy as np
import pytest

from workloads import load_file  # noqa: F401  (the registry imports the workload modules)
from workloads.attention.workload import WORKLOAD as ATTN
from workloads.matmul.workload import WORKLOAD as MATMUL
from workloads.base import Workload

from ..ops.test_ops import poison

CASES = [pytest.param(wl, p, id=f"{wl.name}-" + "-".join(f"{k}{v}" for k, v in p.items()))
         for wl in (MATMUL, ATTN) for p in wl.default_sweep]


def _arrays(wl, params):
    inputs = wl.make_inputs(params, np.random.default_rng(0))
    arrays = dict(inputs)
    for spec in wl.output_specs(params):
        arrays[spec.name] = poison(spec.shape, spec.dtype)
    return inputs, arrays


@pytest.mark.parametrize("wl,params", CASES)
def test_interpreter_default_sweep(wl: Workload, params):
    inputs, arrays = _arrays(wl, params)
    wl.launch(arrays, params, dict(wl.default_meta))
    ref = wl.reference(inputs, params)
    for spec in wl.output_specs(params):
        got = arrays[spec.name]
        if spec.dtype.startswith("int"):
            np.testing.assert_array_equal(got, ref[spec.name])
            continue
        rtol, atol = wl.tol(spec.dtype)
        g = np.asarray(got).astype(np.float32).astype(np.float64)
        np.testing.assert_allclose(g, ref[spec.name], rtol=rtol, atol=atol)


@pytest.mark.parametrize("wl,params", CASES)
def test_compiles_for_sm90(wl: Workload, params):
    from compiler.codegen.ptx import find_ptxas

    _, arrays = _arrays(wl, params)
    ck = wl.compile(arrays, params, {**wl.default_meta, "target": "sm_90"})
    assert ".entry" in ck.asm["ptx"]
    if find_ptxas() is not None:
        assert ck.asm["cubin"]
