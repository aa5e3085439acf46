"""A Triton-style kernel file that imports a Triton internal at module level (tests/farm/test_compilers.py): under
tilefarm it cannot load (the compatibility layer has nothing for `triton.experimental`), under Triton it runs."""
import numpy as np
import triton
import triton.language as tl
from triton.experimental import gluon  # noqa: F401  (a Triton internal)

from workloads.base import OutputSpec, Workload


@triton.jit
def copy_kernel(X, Y, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(Y + offs, tl.load(X + offs, mask=offs < N), mask=offs < N)


WORKLOAD = Workload(
    name="internal_triton", description="a copy in a file importing triton.experimental.gluon", kernel=copy_kernel,
    make_inputs=lambda p, rng: {"x": rng.standard_normal(p["N"]).astype(np.float32)},
    output_specs=lambda p: [OutputSpec("y", (p["N"],), "float32")],
    launch=lambda a, p, m: copy_kernel[(triton.cdiv(p["N"], m["BLOCK"]),)](a["x"], a["y"], p["N"], BLOCK=m["BLOCK"]),
    reference=lambda x, p: {"y": x["x"].astype(np.float64)},
    flops=lambda p: 0.0, bytes=lambda p: 8.0 * p["N"],
    default_sweep=[{"N": 1000, "dtype": "float32"}], default_meta={"BLOCK": 256})
