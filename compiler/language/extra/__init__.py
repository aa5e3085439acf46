"""`tl.extra`: libdevice math, at the import paths Triton kernels use (`extra.libdevice`, `extra.cuda.libdevice`)."""
from . import cuda, libdevice  # noqa: F401
