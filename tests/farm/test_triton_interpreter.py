"""Triton's interpreter in the farm's interpreter workers: the scalar-index repair (farm.compilers).

Triton 3.6's interpreter converts a scalar (a one-element 1-D array) to an index with int(), which NumPy 2.4 made
a TypeError, so every `for` loop over a runtime bound failed there. The farm repairs it only in a process that
runs Triton's interpreter. Each case runs in a fresh process: Triton reads TRITON_INTERPRET when it is imported,
and this test process must not hold a Triton set up (or repaired) for one mode while other tests need another.
"""
import importlib.util
import os
import subprocess
import sys
import textwrap

import pytest

from farm_testing import REPO

HAVE_TRITON = importlib.util.find_spec("triton") is not None and importlib.util.find_spec("torch") is not None
pytestmark = pytest.mark.skipif(not HAVE_TRITON, reason="Triton and torch not installed (pip install -e '.[interpret]')")

LOOP = '''
import numpy as np, torch, triton, triton.language as tl

@triton.jit
def colsum(X, Y, N, BLOCK: tl.constexpr):
    acc = tl.zeros((BLOCK,), tl.float32)
    for i in range(0, N, BLOCK):          # N is a runtime scalar: range() asks for its __index__
        acc += tl.load(X + i + tl.arange(0, BLOCK))
    tl.store(Y + tl.arange(0, BLOCK), acc)

rng = np.random.default_rng(7)
x = rng.standard_normal(96).astype(np.float32)
y = np.full(16, np.nan, np.float32)
colsum[(1,)](torch.from_numpy(x), torch.from_numpy(y), 96, BLOCK=16)
want = x.astype(np.float64).reshape(6, 16).sum(0)
assert np.allclose(y, want, rtol=1e-5, atol=1e-5), (y, want)
'''


def _py(code: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p))
    env.pop("TRITON_INTERPRET", None)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env,
                          timeout=300, cwd=REPO)


def test_a_for_loop_over_a_runtime_bound_runs_in_the_farms_interpreter_worker():
    p = _py("from farm import compilers\ncompilers.prepare_process('triton', on_gpu=False)\n" + LOOP +
            "import triton.language as tl\n"
            "from farm.compilers import _scalar_index\n"
            # the repaired __index__ lives only for a launch: afterwards tl.tensor is Triton's own again
            "assert getattr(tl.core.tensor, '__index__', None) is not _scalar_index\n"
            "print('OK')\n")
    assert p.returncode == 0 and "OK" in p.stdout, p.stderr[-3000:]


def test_the_repair_is_there_only_where_the_defect_is_and_only_for_the_interpreter():
    p = _py("""
        import numpy as np
        from farm import compilers
        compilers.prepare_process('tilefarm', on_gpu=False)
        compilers.prepare_process('triton', on_gpu=True)   # Triton's compiler, not its interpreter
        from triton.runtime import interpreter as ti
        assert not hasattr(ti._patch_lang_tensor, compilers._INDEX_REPAIRED), 'repaired outside the interpreter'
        works = compilers.interpreter_index_works()
        try:
            int(np.array([3]))
            numpy_rejects = False
        except TypeError:
            numpy_rejects = True
        # the probe sees the defect exactly where NumPy rejects the conversion (Triton 3.6's own code)
        assert works is (not numpy_rejects), (works, np.__version__)
        assert compilers.repair_interpreter_index() is numpy_rejects
        assert hasattr(ti._patch_lang_tensor, compilers._INDEX_REPAIRED) is numpy_rejects
        assert compilers.interpreter_index_works() is True
        assert compilers.repair_interpreter_index() is numpy_rejects   # idempotent: one wrapper, not two
        print('OK', np.__version__, numpy_rejects)
        """)
    assert p.returncode == 0 and "OK" in p.stdout, p.stderr[-3000:]


def test_a_tensor_of_several_elements_is_still_no_index():
    p = _py("""
        import numpy as np
        from farm.compilers import _scalar_index
        class H:  # what _scalar_index reads: the tensor's handle's data
            def __init__(self, a): self.data = a
        class T:
            def __init__(self, a): self.handle = H(a)
        assert _scalar_index(T(np.array([5], np.int64))) == 5
        try:
            _scalar_index(T(np.arange(4)))
        except TypeError as e:
            assert '4 elements' in str(e)
        else:
            raise AssertionError('a 4-element tensor became an index')
        print('OK')
        """)
    assert p.returncode == 0 and "OK" in p.stdout, p.stderr[-3000:]


def test_without_the_repair_the_loop_fails_under_this_numpy_where_it_rejects_the_conversion():
    """The failure the repair is for, shown in this environment (skipped where NumPy still converts)."""
    import numpy as np
    try:
        int(np.array([3]))
        pytest.skip(f"NumPy {np.__version__} still converts a one-element array with int(): no defect to show")
    except TypeError:
        pass
    p = _py("import os\nos.environ['TRITON_INTERPRET'] = '1'\n" + LOOP)
    assert p.returncode != 0 and "only 0-dimensional arrays can be converted" in p.stderr, p.stderr[-3000:]
