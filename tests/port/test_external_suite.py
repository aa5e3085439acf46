"""scripts/external_suite.py on a tiny Triton-style suite: `import triton` is our compiler in its test processes,
`triton._internal_testing` is ours, kernels made by exec'd text compile, outcomes and causes are counted."""
import json
import os
import subprocess
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SUITE = {
    "test_small.py": '''
        import numpy as np
        import pytest
        import triton
        import triton.language as tl
        from triton._internal_testing import is_interpreter, numpy_random


        @triton.jit
        def template(X, Y, BLOCK: tl.constexpr):
            x = tl.load(X + tl.arange(0, BLOCK))
            tl.store(Y + tl.arange(0, BLOCK), GENERATE)


        def patched(expr):
            import inspect
            ns = {}
            exec(inspect.getsource(template.fn).replace("GENERATE", expr), globals(), ns)
            return ns["template"]


        @pytest.mark.interpreter
        @pytest.mark.parametrize("expr, ref", [("x * 2", lambda x: x * 2), ("x + 1", lambda x: x + 1)])
        def test_ok(expr, ref, device):
            assert device == "cpu" and is_interpreter() and triton.__tilefarm__
            x = numpy_random(64, "float32")
            y = np.full(64, np.nan, np.float32)
            patched(expr)[(1,)](x, y, BLOCK=64)
            np.testing.assert_allclose(y, ref(x))


        @pytest.mark.interpreter
        def test_wrong():
            assert 1 == 2


        @pytest.mark.interpreter
        def test_needs_a_gpu():
            @triton.jit
            def k(X):
                tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [tl.load(X)], dtype=tl.int32,
                                          is_pure=True, pack=1)
            k[(1,)](np.zeros(1, np.int32))


        def test_not_selected():
            pass
    ''',
    "test_broken.py": '''
        import triton.no_such_module
        import pytest

        @pytest.mark.interpreter
        def test_never():
            pass
    ''',
}


def test_external_suite_counts(tmp_path):
    suite = tmp_path / "suite"
    suite.mkdir()
    for name, text in SUITE.items():
        (suite / name).write_text(textwrap.dedent(text))
    out = tmp_path / "out"
    env = dict(os.environ, TILEFARM_CACHE_DIR=str(tmp_path / "cache"))
    p = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "external_suite.py"), "--suite", str(suite),
                        "--out", str(out), "--device", "cpu", "--timeout", "120"], env=env, capture_output=True,
                       text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    doc = json.loads((out / "external-suite.json").read_text())
    small = doc["files"]["test_small.py"]
    assert (small["passed"], small["failed"], small["errors"]) == (2, 2, 0), doc["tests"]["test_small.py"]
    assert small["share"] == 0.5
    causes = {c["cause"]: c["tests"] for c in doc["causes"]}
    # inline PTX needs a GPU: on the CPU the interpreter refuses it at the call, and the cause says so
    assert any("tl.inline_asm_elementwise runs PTX: it needs a GPU" in c for c in causes), causes
    assert any(c.startswith("AssertionError") for c in causes), causes
    # a file whose import fails: a collection error naming the missing module, unless an installed Triton cannot
    # collect it either (then it is not counted, and says so)
    broken = doc["files"]["test_broken.py"]
    assert broken["passed"] == 0
    if broken["errors"]:
        assert any("triton.no_such_module" in c for c in causes), causes
    else:
        assert "under Triton either" in broken["note"]
    assert "| test_small.py | 2 | 2 | 0 |" in (out / "external-suite.md").read_text()


CODEGEN_SUITE = '''
    import numpy as np
    import triton
    import triton.language as tl


    @triton.jit
    def double(X, Y, BLOCK: tl.constexpr):
        tl.store(Y + tl.arange(0, BLOCK), tl.load(X + tl.arange(0, BLOCK)) * 2)


    def test_built_for_the_gpu_too():
        from compiler import compile as C

        x = np.arange(64, dtype=np.float32)
        y = np.full(64, np.nan, np.float32)
        double[(1,)](x, y, BLOCK=64)
        np.testing.assert_array_equal(y, x * 2)  # the interpreter ran it
        assert C.stats()["compiled"] == 1, C.stats()  # and built by the code generator
'''


def test_external_suite_codegen_builds_every_launch(tmp_path):
    """--gpu-paths --codegen: each launch is compiled to PTX and a cubin before the interpreter runs it (without
    --codegen the same test fails: nothing was compiled)."""
    import shutil

    from compiler.codegen.ptx import find_ptxas

    if find_ptxas() is None:
        import pytest

        pytest.skip("ptxas not found")
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "test_cg.py").write_text(textwrap.dedent(CODEGEN_SUITE))
    for extra, passed in ((["--codegen"], 1), ([], 0)):
        out = tmp_path / f"out{len(extra)}"
        shutil.rmtree(tmp_path / "cache", ignore_errors=True)
        env = dict(os.environ, TILEFARM_CACHE_DIR=str(tmp_path / "cache"))
        p = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "external_suite.py"), "--suite",
                            str(suite), "--out", str(out), "--device", "cpu", "--gpu-paths", *extra, "--timeout", "120"],
                           env=env, capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, p.stderr[-3000:]
        doc = json.loads((out / "external-suite.json").read_text())
        assert doc["files"]["test_cg.py"]["passed"] == passed, doc["tests"]


AS_GPU_SUITE = '''
    import pytest
    import triton
    from triton._internal_testing import is_cuda, is_hopper


    def test_sees_an_h200(device):
        torch = pytest.importorskip("torch")
        assert is_cuda() and is_hopper() and torch.cuda.get_device_capability() == (9, 0)
        props = triton.runtime.driver.active.utils.get_device_properties(0)
        assert props["multiprocessor_count"] == 132 and props["max_shared_mem"] == 232448
        assert device == "cpu"  # tensors stay on the CPU
'''


def test_external_suite_as_gpu(tmp_path):
    """--gpu-paths --as-gpu 9.0: the tests see an H200 (capability, properties, is_cuda), launches stay on the CPU;
    without --as-gpu the same test fails (no GPU)."""
    import pytest

    pytest.importorskip("torch")
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "test_gpu.py").write_text(textwrap.dedent(AS_GPU_SUITE))
    for extra, passed in ((["--as-gpu", "9.0"], 1), ([], 0)):
        out = tmp_path / f"out{len(extra)}"
        p = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "external_suite.py"), "--suite",
                            str(suite), "--out", str(out), "--device", "cpu", "--gpu-paths", *extra, "--timeout", "120"],
                           capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, p.stderr[-3000:]
        doc = json.loads((out / "external-suite.json").read_text())
        assert doc["files"]["test_gpu.py"]["passed"] == passed, doc["tests"]


def test_compat_modules_have_specs():
    """Under the suite's `triton`, importlib.util.find_spec("triton") answers (torch asks it while CUDA initializes;
    a module without __spec__ made it raise, and every GPU test of the suite failed at its first CUDA tensor)."""
    code = textwrap.dedent("""
        import importlib.util, sys
        sys.path.insert(0, ROOT)
        from scripts.extsuite import boot
        boot.install()
        import triton, triton.language
        for name in ("triton", "triton.language", "triton.backends"):
            spec = importlib.util.find_spec(name)
            assert spec is not None and spec.name == name, (name, spec)
        assert getattr(triton, "__tilefarm__", False)
        print("ok")
    """).replace("ROOT", repr(ROOT))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]
