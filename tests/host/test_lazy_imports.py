"""What a process pays for only importing: `import compiler` and `farm --help` load none of the heavy
dependencies (checked by sys.modules in a fresh interpreter, not by timing), and they still load when used."""
import json
import os
import subprocess
import sys

import pytest

HEAVY_FOR_COMPILER = ["numpy", "ml_dtypes", "llvmlite", "cuda", "cuda.bindings", "compiler.codegen",
                      "compiler.passes", "compiler.frontend", "compiler.runtime", "compiler.interpreter",
                      "ray", "typer", "rich", "farm", "workloads"]


def _loaded(code: str, names, **env_extra) -> dict:
    """Run `code` in a fresh interpreter and report which of `names` are in its sys.modules afterwards."""
    probe = code + f"\nimport sys, json\nprint(json.dumps({{n: n in sys.modules for n in {list(names)!r}}}))"
    env = dict(os.environ)
    env.pop("TILEFARM_INTERPRET", None)
    env.update(env_extra)
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_import_compiler_loads_nothing_heavy():
    loaded = _loaded("import compiler\nimport compiler.language as tl", HEAVY_FOR_COMPILER)
    assert [n for n, v in loaded.items() if v] == []


def test_submodules_still_reachable_as_attributes():
    code = ("import compiler\n"
            "assert compiler.runtime.DeviceArray.__name__ == 'DeviceArray'\n"
            "assert callable(compiler.compile.compile_kernel)\n")
    loaded = _loaded(code, ["compiler.runtime", "compiler.runtime.memory", "compiler.frontend"])
    assert loaded == {"compiler.runtime": True, "compiler.runtime.memory": True, "compiler.frontend": True}


def test_compiling_loads_codegen_but_not_bfloat16_or_cuda(tmp_path):
    """An fp32 kernel compiled to PTX needs the frontend, passes and llvmlite, not ml_dtypes nor the driver."""
    src = tmp_path / "k.py"
    src.write_text("import compiler\nimport compiler.language as tl\n\n\n@compiler.jit\n"
                   "def add(X, Y, N, BLOCK: tl.constexpr):\n"
                   "    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
                   "    tl.store(Y + o, tl.load(X + o, mask=o < N) * 2.0, mask=o < N)\n")
    code = (f"import sys; sys.path.insert(0, {str(tmp_path)!r})\n"
            "import k\nfrom compiler.compile import compile_kernel\nfrom compiler.ir import types as T\n"
            "p = ('arg', T.TensorType(T.pointer_type(T.float32)), {'divisibility': 16})\n"
            "ck = compile_kernel(k.add, [p, p, ('arg', T.TensorType(T.int32), {}), ('const', 128)], arch='sm_90')\n"
            "assert 'ld.global' in ck.asm['ptx']\n")
    loaded = _loaded(code, ["llvmlite", "compiler.codegen", "ml_dtypes", "cuda.bindings", "numpy"], TILEFARM_CACHE="0")
    assert loaded == {"llvmlite": True, "compiler.codegen": True, "ml_dtypes": False, "cuda.bindings": False,
                      "numpy": False}


def test_numpy_arguments_and_bfloat16_load_on_use():
    code = ("import numpy as np\nimport compiler\nfrom compiler.ir import types as T\n"
            "assert 'ml_dtypes' not in __import__('sys').modules\n"
            "assert T.from_numpy(np.dtype(np.float16)) is T.float16\n"
            "assert T.bfloat16.np.name == 'bfloat16' and T.has_numpy_bfloat16()\n"
            "import ml_dtypes\nassert T.from_numpy(np.dtype(ml_dtypes.bfloat16)) is T.bfloat16\n"
            "assert T.int1.np == np.dtype(np.bool_) and T.from_numpy(np.bool_) is T.int1\n")
    assert _loaded(code, ["ml_dtypes"]) == {"ml_dtypes": True}


def test_conversion_planning_does_not_load_numpy_ma(tmp_path):
    """A kernel whose layouts meet through shared memory plans the conversion with NumPy (codegen/reduce.py), but
    without np.unique, whose first call imports numpy.ma (about 15 ms of the compile in numpy 2.4)."""
    src = tmp_path / "t.py"
    src.write_text("import compiler\nimport compiler.language as tl\n\n\n@compiler.jit\n"
                   "def t(X, Y, B: tl.constexpr):\n"
                   "    r = tl.arange(0, B)\n"
                   "    x = tl.load(X + r[:, None] * B + r[None, :])\n"
                   "    tl.store(Y + r[:, None] * B + r[None, :], tl.trans(x))\n")
    code = (f"import sys; sys.path.insert(0, {str(tmp_path)!r})\n"
            "import numpy as np\nimport t\n"
            "x = np.zeros((64, 64), np.float32)\n"
            "ck = t.t.warmup(x, x, grid=(1,), target='sm_90a', B=64)\n"
            "assert 'st.shared' in ck.asm['ptx'] or 'stmatrix' in ck.asm['ptx']\n")
    loaded = _loaded(code, ["numpy", "numpy.ma"], TILEFARM_CACHE="0")
    assert loaded == {"numpy": True, "numpy.ma": False}
