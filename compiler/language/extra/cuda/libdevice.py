"""`tl.extra.cuda.libdevice`: the same functions as `compiler.language.extra.libdevice`."""
from ..libdevice import *  # noqa: F401,F403
from ..libdevice import __all__  # noqa: F401
