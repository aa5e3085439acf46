"""The ptxas target stops a test right after compiling and assembling its kernel: that counts as a pass."""
import pytest


class CompiledOnly(Exception):
    """Raised by tests.port.kernels.run for the ptxas target once the cubin exists."""


@pytest.hookimpl(hookwrapper=True)
def pytest_pyfunc_call(pyfuncitem):
    outcome = yield
    exc = outcome.excinfo
    if exc is not None and issubclass(exc[0], CompiledOnly):
        outcome.force_result(True)
