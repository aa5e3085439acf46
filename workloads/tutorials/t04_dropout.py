"""Tutorial 04: low-memory dropout: the keep mask is regenerated from (seed, offset) with Philox instead of being
stored; the same seed gives the same mask."""
import triton
import triton.language as tl


@triton.jit
def _seeded_dropout(x_ptr, output_ptr, n_elements, p, seed, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    random = tl.rand(seed, offsets)
    x_keep = random > p
    output = tl.where(x_keep, x / (1 - p), 0.0)
    tl.store(output_ptr + offsets, output, mask=mask)


def seeded_dropout(x, out, p, seed, BLOCK_SIZE=1024):
    n = x.shape[0]
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)  # noqa: E731
    _seeded_dropout[grid](x, out, n, p, seed, BLOCK_SIZE=BLOCK_SIZE)
    return out
