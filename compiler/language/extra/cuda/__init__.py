"""`tl.extra.cuda`: NVIDIA-specific extras (libdevice)."""
from . import libdevice  # noqa: F401
