"""The bundled workloads on the GPU (gpu-marked; skipped with the reason where there is none): our compiled
kernel with compiler.runtime.DeviceArray arguments and with torch tensors, and the same source under Triton,
each checked against the float64 reference with the workload's tolerance (outputs poisoned with NaN first)."""
from __future__ import annotations

import numpy as np
import pytest

from workloads import registry

from .conftest import OURS, assert_close
from .test_workloads import CHUNKED

pytestmark = pytest.mark.gpu

MEDIUM = [
    ("vector_add", {"N": (1 << 20) + 3, "dtype": "float32"}, {}),
    ("softmax", {"M": 64, "N": 8192, "dtype": "float32"}, {}),
    ("softmax", {"M": 64, "N": 4096, "dtype": "bfloat16"}, {}),
    ("softmax", {"M": 128, "N": 1024, "dtype": "float32"}, {"num_warps": 4}),
    ("layernorm", {"M": 32, "N": 8192, "dtype": "float16"}, {}),
    ("rmsnorm", {"M": 32, "N": 8192, "dtype": "float16"}, {}),
    ("cross_entropy", {"M": 16, "V": 32000, "dtype": "bfloat16"}, {}),
]


def _cases():
    out = []
    for name in OURS:
        for p in registry()[name].default_sweep:
            out.append(pytest.param(name, p, {}, id=f"{name}-{p}"))
    out += [pytest.param(*c, id=f"{c[0]}-{c[1]}-{c[2]}") for c in CHUNKED + MEDIUM]
    return out


def _host_inputs(wl, params):
    if params["dtype"] == "bfloat16":
        pytest.importorskip("ml_dtypes", reason="bfloat16 NumPy inputs need ml_dtypes")
    return wl.make_inputs(params, np.random.default_rng(0))


def _check(name, wl, params, outputs_host, ref):
    for spec in wl.output_specs(params):
        rtol, atol = wl.tol(spec.dtype)
        assert_close(f"{name}.{spec.name}", outputs_host[spec.name], ref[spec.name], rtol, atol)


@pytest.mark.parametrize("name,params,meta", _cases())
def test_gpu_device_arrays(name, params, meta):
    from compiler.runtime import DeviceArray, synchronize

    wl = registry()[name]
    inputs = _host_inputs(wl, params)
    arrays = {k: DeviceArray.from_numpy(v) for k, v in inputs.items()}
    for spec in wl.output_specs(params):
        arrays[spec.name] = arrays[spec.inplace] if spec.inplace else DeviceArray.empty(spec.shape, spec.dtype).poison()
    wl.launch(arrays, params, {**wl.default_meta, **meta})
    synchronize()
    ref = wl.reference(inputs, params)
    _check(name, wl, params, {s.name: arrays[s.name].numpy() for s in wl.output_specs(params)}, ref)
    for k, v in inputs.items():
        assert arrays[k].numpy().tobytes() == v.tobytes(), f"{name}: input {k} was modified"


def _torch_arrays(torch, wl, params, inputs):
    dev = {}
    for k, v in inputs.items():
        if v.dtype.name == "bfloat16":
            dev[k] = torch.from_numpy(v.view(np.int16)).cuda().view(torch.bfloat16)
        else:
            dev[k] = torch.from_numpy(v).cuda()
    for s in wl.output_specs(params):
        dev[s.name] = torch.full(s.shape, float("nan"), dtype=getattr(torch, s.dtype), device="cuda")
    return dev


def _to_host(torch, t):
    return (t.float() if t.dtype == torch.bfloat16 else t).cpu().numpy()


@pytest.mark.parametrize("impl", ["ours", "triton"])
@pytest.mark.parametrize("name,params,meta", [pytest.param(*c, id=f"{c[0]}-{c[1]}") for c in MEDIUM])
def test_gpu_torch_tensors(impl, name, params, meta):
    """Our kernel with torch tensors, and the identical source compiled by Triton (what bench_memory times)."""
    torch = pytest.importorskip("torch")
    if impl == "triton":
        pytest.importorskip("triton")
    wl = registry()[name]
    inputs = _host_inputs(wl, params)
    dev = _torch_arrays(torch, wl, params, inputs)
    run = wl.launch if impl == "ours" else wl.triton_launch
    run(dev, params, {**wl.default_meta, **meta})
    torch.cuda.synchronize()
    ref = wl.reference(inputs, params)
    _check(f"{name}[{impl}]", wl, params, {s.name: _to_host(torch, dev[s.name]) for s in wl.output_specs(params)}, ref)
