"""`triton.tools.mxfp`: host-side holders of OCP microscaling (MX) data as torch tensors, the inputs of
`tl.dot_scaled`.

- `MXFP4Tensor`: fp4 e2m1 values, one code (0..15: sign, 2 exponent bits, 1 mantissa bit) per element in
  `.data` (uint8); from floats by rounding to the nearest e2m1 value (ties to the even code, magnitudes above 6
  to 6); `to_packed_tensor(dim)` puts two codes in a byte along `dim`, the first in the low bits.
- `MXScaleTensor`: e8m0 scales, `.data` (uint8) is the exponent + 127, 255 is NaN; from floats by the nearest
  power of two (zero, negative and non-finite values are NaN).
torch is imported when one is made.
"""
from __future__ import annotations

_E2M1 = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)


def _torch():
    import torch

    return torch


class _Encoded:
    """Codes of an MX format held as uint8 in `data`: made from float values (`data`), or left empty for
    `random()` to fill (`size`)."""

    def __init__(self, data=None, size=None, device=None):
        torch = _torch()
        name = type(self).__name__
        self.device = device
        if data is not None:
            if not isinstance(data, torch.Tensor):
                raise TypeError(f"{name}: data must be a torch tensor of float values")
            self.device = data.device
            self.data = self._from_float(data)
            self.size = tuple(data.shape)
        elif size is not None:
            self.size = tuple(size) if isinstance(size, (tuple, list)) else (int(size),)
            self.data = None
        else:
            raise ValueError(f"{name} needs data or size")


class MXFP4Tensor(_Encoded):
    def random(self):
        torch = _torch()
        self.data = torch.randint(0, 16, self.size, dtype=torch.uint8, device=self.device)
        return self

    def to(self, dtype):
        torch = _torch()
        if dtype != torch.float32:
            raise ValueError("MXFP4Tensor.to: only torch.float32 is supported")
        codes = self.data.to(torch.int64)
        table = torch.tensor(_E2M1, dtype=torch.float32, device=codes.device)
        mag = table[codes & 7]
        return torch.where((codes & 8) != 0, -mag, mag)

    def _from_float(self, values):
        torch = _torch()
        v = values.to(torch.float32)
        sign = torch.signbit(v)
        mag = torch.nan_to_num(v.abs(), nan=0.0, posinf=6.0).clamp(max=6.0)
        table = torch.tensor(_E2M1, dtype=torch.float32, device=v.device)
        d = (mag.unsqueeze(-1) - table).abs()                      # [..., 8]
        best = d.min(dim=-1, keepdim=True).values
        tied = d == best
        even = torch.zeros(8, dtype=torch.bool, device=v.device)
        even[0::2] = True
        pick_even = (tied & even).any(dim=-1, keepdim=True)
        chosen = torch.where(pick_even, tied & even, tied)          # nearest; a tie goes to the even code
        idx = chosen.to(torch.uint8).argmax(dim=-1).to(torch.uint8)
        return idx | (sign.to(torch.uint8) << 3)

    def to_packed_tensor(self, dim):
        """Two codes per byte along `dim` (the first in the low 4 bits), padded with a zero code when odd."""
        torch = _torch()
        x = self.data
        assert -x.dim() <= dim < x.dim(), f"MXFP4Tensor.to_packed_tensor: dim {dim} out of range for {x.dim()}-D"
        dim = dim % x.dim()
        if x.shape[dim] % 2:
            pad = list(x.shape)
            pad[dim] = 1
            x = torch.cat([x, torch.zeros(pad, dtype=x.dtype, device=x.device)], dim=dim)
        lo = x.index_select(dim, torch.arange(0, x.shape[dim], 2, device=x.device))
        hi = x.index_select(dim, torch.arange(1, x.shape[dim], 2, device=x.device))
        return (lo | (hi << 4)).to(torch.uint8)

    def unpack_packed_tensor(self, packed_tensor, dim, original_shape):
        """The codes of `to_packed_tensor(dim)`'s result, trimmed to `original_shape`."""
        torch = _torch()
        p = packed_tensor
        dim = dim % p.dim()
        lo, hi = p & 0xF, (p >> 4) & 0xF
        both = torch.stack([lo, hi], dim=dim + 1)                  # [..., n, 2, ...]
        shape = list(p.shape)
        shape[dim] *= 2
        out = both.reshape(shape)
        return out.narrow(dim, 0, original_shape[dim]).to(torch.uint8)


class MXScaleTensor(_Encoded):
    def random(self, low=None, high=None):
        """Random scales (codes 0..254), or between the powers of two nearest `low` and `high`."""
        torch = _torch()
        lo = 0 if low is None else int(self._from_float(torch.tensor([float(low)]))[0])
        hi = 254 if high is None else int(self._from_float(torch.tensor([float(high)]))[0])
        if lo > hi or hi == 255:
            raise ValueError(f"MXScaleTensor.random: low {low} and high {high} must be positive, low <= high")
        self.data = torch.randint(lo, hi + 1, self.size, dtype=torch.uint8, device=self.device)
        return self

    def to(self, dtype):
        torch = _torch()
        if dtype != torch.float32:
            raise ValueError("MXScaleTensor.to: only torch.float32 is supported")
        e = self.data.to(torch.float32) - 127.0
        return torch.where(self.data == 255, torch.full_like(e, float("nan")), torch.exp2(e))

    def _from_float(self, values):
        torch = _torch()
        v = values.to(torch.float32)
        ok = torch.isfinite(v) & (v > 0)
        e = torch.round(torch.log2(torch.where(ok, v, torch.ones_like(v)))).clamp(-127, 127) + 127
        return torch.where(ok, e, torch.full_like(e, 255)).to(torch.uint8)
