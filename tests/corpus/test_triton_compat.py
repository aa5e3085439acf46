"""compiler.triton_compat: a kernel file written for Triton loads and runs under our compiler, with `triton`
resolved for that file only; the same file loads against the real Triton when it is installed."""
import builtins
import importlib.util
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import compiler
from compiler.triton_compat import TritonCompatError, compat_module, load_kernel_file
from compiler.triton_compat.loader import TritonCompatImportError

HAVE_TRITON = importlib.util.find_spec("triton") is not None

KERNELS = '''\
import triton
import triton.language as tl
from triton import cdiv


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)


@triton.jit
def bad_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.no_such_op(offs))


@triton.jit
def shape_error_kernel(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, 100)
    tl.store(x_ptr + offs, offs)


def grid(n, block):
    return (cdiv(n, block),)


def late_import():
    import triton.language as tl2
    return tl2
'''


@pytest.fixture
def kfile(tmp_path):
    p = tmp_path / "user_kernels.py"
    p.write_text(KERNELS)
    return p


def test_runs_under_our_compiler(kfile):
    before = set(sys.modules)
    imp = builtins.__import__
    m = load_kernel_file(kfile)
    assert isinstance(m.add_kernel, compiler.JITFunction)
    x, y = np.random.default_rng(0).random((2, 1000), dtype=np.float32)
    z = np.full_like(x, np.nan)
    m.add_kernel[m.grid(1000, 256)](x, y, z, 1000, BLOCK=256)
    np.testing.assert_array_equal(z, x + y)
    # nothing named triton was registered, the process-wide import is untouched, late imports resolve the same
    assert not any(n == "triton" or n.startswith("triton.") for n in set(sys.modules) - before)
    assert builtins.__import__ is imp
    assert m.late_import() is compat_module("triton.language")
    assert m.triton.language is compat_module("triton.language")
    assert m.tl.load is compiler.language.load and m.triton.autotune is compiler.autotune
    assert load_kernel_file(kfile) is m  # unchanged file: the same module


def test_kernel_errors_point_at_the_users_file(kfile):
    m = load_kernel_file(kfile)
    x = np.zeros(128, np.float32)
    with pytest.raises(compiler.CompilationError) as e:
        m.bad_kernel[(1,)](x, 128, BLOCK=128)
    msg = str(e.value)
    assert msg.startswith(f"{kfile}:16:") and "tl.no_such_op is not supported by this compiler" in msg
    with pytest.raises(compiler.CompilationError) as e:
        m.shape_error_kernel[(1,)](x, BLOCK=128)
    assert str(e.value).startswith(f"{kfile}:21:") and "power of 2" in str(e.value)


@pytest.mark.parametrize("line, name", [
    ("import triton.runtime.driver", "triton.runtime.driver"),
    ("from triton.language import no_such_thing", "triton.language.no_such_thing"),
    ("from triton.compiler import make_backend", "triton.compiler.make_backend"),
])
def test_missing_names_raise_naming_them(tmp_path, line, name):
    p = tmp_path / "k.py"
    p.write_text(f"import numpy\n{line}\n")
    with pytest.raises(TritonCompatImportError) as e:
        load_kernel_file(p)
    msg = str(e.value)
    assert f"'{name}'" in msg and msg.startswith(f"{p}:2:"), msg
    assert line in msg  # the source line, with a caret under it


def test_missing_attribute_names_it(tmp_path):
    p = tmp_path / "k.py"
    p.write_text("import triton\nx = triton.no_such_name\n")
    with pytest.raises(TritonCompatError, match=r"'triton\.no_such_name'"):
        load_kernel_file(p)
    t = compat_module("triton")
    assert getattr(t, "no_such", None) is None and not hasattr(t, "no_such")


def test_testing_do_bench_is_there_and_relative_imports_pass_through(tmp_path):
    assert callable(compat_module("triton.testing").do_bench)
    p = tmp_path / "k.py"
    p.write_text("import os.path\nfrom collections import OrderedDict\nimport triton.testing\nB = triton.testing.do_bench\n")
    assert load_kernel_file(p).OrderedDict.__name__ == "OrderedDict"


def test_bad_compiler_name(kfile):
    with pytest.raises(ValueError, match="compiler must be one of"):
        load_kernel_file(kfile, compiler="cuda")


@pytest.mark.skipif(not HAVE_TRITON, reason="Triton is not installed here")
def test_real_triton_keeps_working_in_the_same_process(kfile):
    # a fresh process: both loads, then the real Triton imported normally
    code = textwrap.dedent(f"""
        import sys
        from compiler.triton_compat import load_kernel_file
        ours = load_kernel_file({str(kfile)!r})
        theirs = load_kernel_file({str(kfile)!r}, compiler="triton")
        import triton, triton.language as tl
        assert sys.modules["triton"] is triton and not getattr(triton, "__tilefarm__", False)
        assert type(theirs.add_kernel).__module__.startswith("triton."), type(theirs.add_kernel)
        assert type(ours.add_kernel).__module__.startswith("compiler."), type(ours.add_kernel)
        assert theirs.tl is tl and ours.tl is not tl
        print("ok")
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-2000:]
