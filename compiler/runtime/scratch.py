"""Per-launch global scratch memory (kernels whose metadata has `global_scratch_size`: the tensor maps of in-kernel
tensor descriptors, codegen/tensormap.py).

Such a kernel takes one hidden last parameter, a pointer to `global_scratch_size` bytes per program (aligned to
`global_scratch_align`); `CompiledKernel.launch` asks `scratch_pointer` for grid programs x that many bytes.

Where `triton.set_allocator(fn)` was called (compiler.triton_compat.runtime.set_allocator, stored here) the memory
comes from `fn(size, alignment, stream)`, as Triton's launcher takes it; the object it returns (anything with
`data_ptr()`, or an int) is kept until the next launch asks for scratch, and a stream-ordered allocator (torch's)
makes the reuse after that safe. Otherwise one device buffer per (device, stream) is kept and reused, grown (to a
power of two) when a launch needs more: launches on one stream run in order, so they may share it; launches on
different streams get different buffers. A buffer replaced by a larger one is freed by cuMemFree, which waits for
the work that may still use it."""
from __future__ import annotations

_ALLOCATOR = [None]
_BUFFERS: dict = {}  # (device, stream) -> DeviceArray
_LAST = [None]  # the allocator's last buffer (kept alive until the next launch asks)


def set_allocator(allocator) -> None:
    """The allocator later launches take their scratch memory from (None: this module's cached buffers)."""
    if allocator is not None and not callable(allocator):
        raise TypeError(f"set_allocator: an allocator is a callable (size, alignment, stream), got {allocator!r}")
    _ALLOCATOR[0] = allocator


def get_allocator():
    return _ALLOCATOR[0]


def _programs(grid) -> int:
    if isinstance(grid, int):
        return int(grid)
    n = 1
    for g in tuple(grid):
        n *= int(g)
    return n


def scratch_bytes(grid, per_program: int) -> int:
    """Bytes a launch on `grid` (int or 1-3 tuple) needs at `per_program` bytes a program."""
    return _programs(grid) * int(per_program)


def _stream_key(stream) -> int:
    if stream is None:
        return 0
    for attr in ("cuda_stream", "handle"):
        v = getattr(stream, attr, None)
        if isinstance(v, int):
            return v
    try:
        return int(stream)
    except (TypeError, ValueError):
        return id(stream)


def scratch_pointer(grid, per_program: int, align: int = 128, stream=None) -> int:
    """The device address of `programs x per_program` bytes of scratch for one launch (`align`-byte aligned)."""
    nbytes = scratch_bytes(grid, per_program)
    if nbytes <= 0:
        return 0
    alloc = _ALLOCATOR[0]
    if alloc is not None:
        buf = alloc(nbytes, align, stream)
        ptr = int(buf) if isinstance(buf, int) else int(buf.data_ptr())
        if ptr % align:
            raise RuntimeError(f"the allocator set by set_allocator returned an address {ptr:#x} that is not "
                               f"{align}-byte aligned")
        _LAST[0] = buf
        return ptr
    from .cuda import current_device
    from .memory import DeviceArray

    key = (current_device(), _stream_key(stream))
    buf = _BUFFERS.get(key)
    if buf is None or buf.nbytes < nbytes:
        size = 1 << max(12, (nbytes - 1).bit_length())  # cuMemAlloc gives 256-byte aligned memory
        _BUFFERS.pop(key, None)  # the old buffer's cuMemFree waits for the work that may still read it
        buf = _BUFFERS[key] = DeviceArray.empty(size, "uint8")
    return buf.data_ptr()


def clear() -> None:
    """Forget the cached buffers (tests; a process that wants the memory back)."""
    _BUFFERS.clear()
    _LAST[0] = None
