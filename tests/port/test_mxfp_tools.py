"""triton.tools.mxfp's host-side MX holders (compiler.triton_compat.mxfp), and their packed data through
tl.dot_scaled."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

from compiler.triton_compat.mxfp import MXFP4Tensor, MXScaleTensor  # noqa: E402

from .test_dot_scaled import mx_kernel  # noqa: E402


def test_e2m1_encoding():
    vals = torch.tensor([0.0, -0.0, 0.24, 0.26, 0.75, 1.25, 2.6, 5.0, 5.1, 100.0, -float("inf"), -1.5])
    t = MXFP4Tensor(vals)
    # nearest e2m1 value; a tie (0.75, 1.25, 5.0) goes to the even code; beyond 6: 6
    assert t.data.tolist() == [0, 8, 0, 1, 2, 2, 5, 6, 7, 7, 15, 11]
    assert t.to(torch.float32).tolist() == [0, 0, 0, 0.5, 1, 1, 3, 4, 6, 6, -6, -1.5]


@pytest.mark.parametrize("shape, dim", [((6, 10), 0), ((6, 10), 1), ((5, 7), 1), ((3, 4, 9), 2)])
def test_packing(shape, dim):
    torch.manual_seed(0)
    t = MXFP4Tensor(size=shape).random()
    p = t.to_packed_tensor(dim)
    assert p.shape[dim] == (shape[dim] + 1) // 2
    first = t.data.narrow(dim, 0, 1)
    assert torch.equal(p.narrow(dim, 0, 1) & 0xF, first)          # the first code in the low bits
    assert torch.equal(t.unpack_packed_tensor(p, dim, shape), t.data)
    with pytest.raises(AssertionError):
        t.to_packed_tensor(len(shape))


def test_e8m0():
    s = MXScaleTensor(torch.tensor([1.0, 0.25, 3.0, 2.0 ** -127, 0.0, -2.0, float("nan")]))
    assert s.data.tolist() == [127, 125, 129, 0, 255, 255, 255]   # 3.0 -> the nearest power of two (log2 1.58)
    f = s.to(torch.float32)
    assert f[:3].tolist() == [1.0, 0.25, 4.0] and torch.isnan(f[4:]).all()
    r = MXScaleTensor(size=(500,)).random(low=0.5, high=8.0).data
    assert int(r.min()) >= 126 and int(r.max()) <= 130


def test_packed_fp4_through_dot_scaled():
    torch.manual_seed(1)
    M, N, K = 16, 16, 64
    a = MXFP4Tensor(size=(M, K)).random()
    b = torch.randn(K, N).to(torch.bfloat16)
    sa = MXScaleTensor(size=(M, K // 32)).random(low=0.25, high=4.0)
    c = torch.full((M, N), float("nan"))
    mx_kernel[(1,)](a.to_packed_tensor(1).contiguous(), sa.data, b, None, c, M=M, N=N, K=K, FA="e2m1", FB="bf16")
    ref = (a.to(torch.float32).double() * sa.to(torch.float32).double().repeat_interleave(32, dim=1)) @ b.double()
    np.testing.assert_allclose(c.numpy(), ref.numpy(), rtol=1e-4, atol=1e-3)
