"""A feature the compiler does not support is a CompilationError at the kernel's line saying so."""
import os

import numpy as np
import pytest

import compiler

from . import unsupported_kernels as K

KFILE = os.path.abspath(K.__file__)


def _line(mark):
    with open(KFILE) as f:
        for i, line in enumerate(f, 1):
            if f"MARK {mark}" in line:
                return i
    raise AssertionError(mark)


@pytest.mark.parametrize("kern,mark,words", [
    (K.unknown_tl_name, "unknown_tl_name", "tl.not_a_real_op is not supported"),
    (K.unknown_kwarg, "unknown_kwarg", "tl.load: got an unexpected keyword argument 'not_a_real_kwarg'"),
    (K.unknown_libdevice, "unknown_libdevice", "tl.extra.libdevice.not_a_function is not supported"),
])
def test_unsupported_is_a_compilation_error(kern, mark, words):
    x = np.ones(4, np.float32)
    with pytest.raises(compiler.CompilationError) as ei:
        kern[(1,)](x)
    msg = str(ei.value)
    assert msg.startswith(f"{KFILE}:{_line(mark)}:"), msg
    assert words in msg, msg
    assert "^" in msg and "Traceback" not in msg and "compiler/frontend" not in msg
