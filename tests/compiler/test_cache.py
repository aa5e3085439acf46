"""The compile cache across processes: a hit skips every stage, and a cubin made later joins the entry."""
import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CHILD = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    import compiler
    from tests.frontend.kernels import add_kernel
    from compiler.codegen.ptx import find_ptxas
    x = np.zeros(64, np.float32)
    t0 = time.perf_counter()
    k = add_kernel.warmup(x, x, x, 4096, BLOCK=1024, grid=(4,), target="sm_90")
    t1 = time.perf_counter()
    had_cubin = k.asm.cached("cubin") is not None
    if sys.argv[1] == "make-cubin" and find_ptxas():
        k.asm["cubin"]
    print(json.dumps({"ms": (t1 - t0) * 1e3, "had_cubin": had_cubin, "key": k.key, "ptx": len(k.asm["ptx"])}))
""")


def _child(tmp_path, mode):
    env = dict(os.environ, TILEFARM_CACHE_DIR=str(tmp_path), PYTHONPATH=ROOT)
    p = subprocess.run([sys.executable, "-c", CHILD, mode], capture_output=True, text=True, env=env, cwd=ROOT,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    import json

    return json.loads(p.stdout.strip().splitlines()[-1])


def test_disk_hit_and_late_cubin(tmp_path):
    from compiler.codegen.ptx import find_ptxas

    cold = _child(tmp_path, "make-cubin")
    hit = _child(tmp_path, "read")
    assert hit["key"] == cold["key"] and hit["ptx"] == cold["ptx"]
    assert not cold["had_cubin"]
    if find_ptxas() is None:
        pytest.skip("no ptxas: the late-cubin half needs it")
    assert hit["had_cubin"], "the cubin made after the first compile was not added to the cache entry"


def test_named_assembler_is_part_of_the_key(tmp_path, monkeypatch):
    """TILEFARM_PTXAS names the assembler: a cubin that another ptxas made is not served for it."""
    import numpy as np

    from tests.frontend.kernels import add_kernel

    monkeypatch.setenv("TILEFARM_CACHE_DIR", str(tmp_path))
    x = np.zeros(64, np.float32)
    keys = []
    for ptxas in ("", "/opt/other/ptxas"):
        monkeypatch.setenv("TILEFARM_PTXAS", ptxas)
        keys.append(add_kernel.warmup(x, x, x, 4096, BLOCK=1024, grid=(4,), target="sm_90").key)
    assert keys[0] != keys[1]
