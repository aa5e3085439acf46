import numpy as np
import pytest

from workloads._common import np_dtype

OURS = ("vector_add", "softmax", "layernorm", "rmsnorm", "cross_entropy")


def poison(shape, dtype_name):
    """An output buffer filled with NaN (floats) or a sentinel (ints), so unwritten elements fail the check."""
    dt = np_dtype(dtype_name)
    if dt.kind in "iu":
        return np.full(shape, np.iinfo(dt).min if dt.kind == "i" else np.iinfo(dt).max, dt)
    return np.full(shape, np.nan, dt)


def assert_close(name, got, want, rtol, atol):
    """Relative + absolute tolerance in float64; NaN in the output never passes (even where want is NaN)."""
    got = np.asarray(got)
    if got.dtype.name == "bfloat16":
        got = got.astype(np.float32)
    g, w = got.astype(np.float64), np.asarray(want, dtype=np.float64)
    assert g.shape == w.shape, f"{name}: shape {g.shape}, want {w.shape}"
    nan = np.isnan(g)
    assert not nan.any(), f"{name}: {int(nan.sum())}/{g.size} elements NaN or unwritten, first at " \
                          f"{tuple(int(i) for i in np.argwhere(nan)[0])}"
    err = np.abs(g - w)
    bad = ~(err <= atol + rtol * np.abs(w))
    if bad.any():
        i = tuple(int(k) for k in np.argwhere(bad)[0])
        raise AssertionError(f"{name}: {int(bad.sum())}/{g.size} elements outside rtol={rtol:g} atol={atol:g}; "
                             f"first at {i}: got {g[i]!r}, want {w[i]!r}; max abs err {err.max():.3g}")


@pytest.fixture
def check():
    return assert_close
