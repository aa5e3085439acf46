"""`run` of tests.ops.test_ops, assembling for sm_90a (wgmma and the other Hopper-only instructions) on the
ptxas target: the language-surface tests check the code the H200 runs."""
from . import test_ops as _T
from .conftest import CompiledOnly
from .test_ops import TARGETS, assert_close, poison  # noqa: F401


def run(target, kernel, grid, arrays, scalars=(), **meta):
    if target == "ptxas":
        ck = kernel.warmup(*arrays, *scalars, grid=grid, target="sm_90a", **meta)
        assert ".target sm_90a" in ck.asm["ptx"]
        assert isinstance(ck.asm["cubin"], bytes) and len(ck.asm["cubin"]) > 0
        raise CompiledOnly()
    return _T.run(target, kernel, grid, arrays, scalars, **meta)
