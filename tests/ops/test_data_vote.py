"""A/B `data_vote` (passes/assign_layouts.py, the elementwise rule): an elementwise op takes its layout from its
computed operands where one has a layout and none has the layout its users want, not from operands built from
constants, aranges and splats. tl.split selects each half by a lane mask [1, .., 1, 2] (an arange compared with 0 or 1)
and or-reduces the pair dim: the mask's own default layout put the lanes on dim 0, and the split's data was converted
through shared memory into a layout that replicated it across those lanes (a radix-2 FFT's butterflies: SASS 81768
instructions and 113 KB of spills against Triton's 3680). Results in the interpreter, through ptxas and on the GPU
under both; the butterfly's shared memory and shuffles in the PTX."""
import numpy as np
import pytest

import compiler
import compiler.language as tl

from .test_ops import TARGETS, assert_exact, poison, run


@compiler.jit
def butterfly_kernel(X, Y, BLOCK_R: tl.constexpr, N: tl.constexpr, H: tl.constexpr):
    # one radix-2 stage of span 2H over rows read at a stride of 2 (the real parts of complex pairs)
    G: tl.constexpr = N // (2 * H)
    offs = tl.arange(0, BLOCK_R)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(X + 2 * offs)
    a, b = tl.split(tl.permute(tl.reshape(x, [BLOCK_R, G, 2, H]), (0, 1, 3, 2)))
    y = tl.reshape(tl.permute(tl.join(a + b, a - b), (0, 1, 3, 2)), [BLOCK_R, N])
    tl.store(Y + offs, y)


def _reference(x, R, N, H):
    v = x[::2].reshape(R, N // (2 * H), 2, H)
    a, b = v[:, :, 0, :], v[:, :, 1, :]
    return np.stack([a + b, a - b], axis=2).reshape(R * N)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("ab", ["", "data_vote"])
@pytest.mark.parametrize("H", [1, 4, 32])
def test_butterfly_results(target, ab, H, monkeypatch):
    monkeypatch.setenv("TILEFARM_AB", ab)
    R, N = 8, 256
    # small integers: the sums and differences are exact, so any misplaced element shows
    x = np.random.default_rng(H).integers(-64, 64, 2 * R * N).astype(np.float32)
    y = poison(R * N, "float32")
    run(target, butterfly_kernel, (1,), [x, y], [], BLOCK_R=R, N=N, H=H, num_warps=4)
    if target != "ptxas":
        assert_exact(y, _reference(x, R, N, H))


@pytest.mark.parametrize("H", [1, 4, 32])
def test_split_keeps_its_data_in_place(H, monkeypatch, tmp_path):
    """Under data_vote the stage moves its data through shared memory once (16 stores a thread: the reshape back), with
    one barrier and one shuffle per element pair; by default the split's data went through shared memory into the
    mask's layout first (3 or more times the stores, 5 to 7 barriers, 8 times the shuffles)."""
    monkeypatch.setenv("TILEFARM_CACHE_DIR", str(tmp_path))
    ptx = {}
    for ab in ("", "data_vote"):
        monkeypatch.setenv("TILEFARM_AB", ab)
        ptx[ab] = butterfly_kernel.warmup(np.zeros(2 * 8 * 256, np.float32), np.zeros(8 * 256, np.float32),
                                          grid=(1,), target="sm_90a", BLOCK_R=8, N=256, H=H,
                                          num_warps=4).asm["ptx"]
    n = {ab: (p.count("st.shared"), p.count("bar.sync") + p.count("barrier.sync"), p.count("shfl.sync"))
         for ab, p in ptx.items()}
    assert n["data_vote"][0] * 3 <= n[""][0] and n["data_vote"][1] < n[""][1] and n["data_vote"][2] * 4 < n[""][2], n
