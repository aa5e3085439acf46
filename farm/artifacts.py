"""Compiled kernels that travel with their jobs: a compile worker exports the kernel's cache entry (PTX, cubin,
metadata) as bytes, the executor sends it to the GPU worker (on Ray: through the object store, once per kernel
key), and the GPU worker installs it into the compiler's caches, so it loads the kernel instead of compiling it.
The disk cache of each machine stays only a cache: nothing needs a shared disk.

A bundle is {"key": the compiler's cache key, "files": {artifact name: bytes}, "sha256": of the files}. The key
hashes everything the artifact is made from (sources, specialization, options, toolchain), so one key is one
content; the sha256 checks the bytes on arrival.
"""
from __future__ import annotations

import hashlib


class BundleError(Exception):
    """A bundle whose bytes do not match its sha256 (damaged on the way): the job is compiled again."""


def _digest(files: dict) -> str:
    h = hashlib.sha256()
    for name in sorted(files):
        h.update(name.encode() + b"\0" + str(len(files[name])).encode() + b"\0")
        h.update(files[name])
    return h.hexdigest()


def bundle_of(compiled) -> dict | None:
    """The bundle of a kernel the compiler returned (None for objects that are not the compiler's kernels, such
    as a workload's stand-in that compiles nothing)."""
    key = getattr(compiled, "key", None)
    if not isinstance(key, str) or not hasattr(compiled, "metadata"):
        return None
    try:
        from compiler.compile import export
    except ImportError:
        return None
    files = export(compiled)
    return {"key": key, "files": files, "sha256": _digest(files)}


def present(key: str) -> bool:
    """Whether this process can load kernel `key` without compiling it (its memory or this machine's disk cache)."""
    try:
        from compiler.compile import cached
    except ImportError:
        return False
    return cached(key)


def install(bundle: dict) -> None:
    """Put a bundle's kernel into this process's compiler caches (and this machine's disk cache)."""
    if _digest(bundle["files"]) != bundle["sha256"]:
        raise BundleError(f"kernel {bundle['key'][:12]}: its artifacts do not match their sha256")
    from compiler.compile import install as _install
    _install(bundle["key"], bundle["files"])


def counts() -> dict:
    """The compiler's counts for this process (compiled, assembled, disk_hits, installed); {} without it."""
    try:
        from compiler.compile import stats
    except ImportError:
        return {}
    return stats()
