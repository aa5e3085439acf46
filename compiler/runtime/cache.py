"""A content-addressed kernel cache, in memory and on disk, safe for many processes sharing one directory.

Key: sha256 over a canonical JSON rendering of a description the caller supplies (kernel source and the
jit functions it calls, signature, specialization, options, target, compiler version...): whatever
changes the output must be in it, and nothing else.

Layout: ``<dir>/<key[:2]>/<key>/`` holds one file per artifact (``tile``, ``llir``, ``ptx``, ``cubin``,
``metadata.json``...) and ``manifest.json`` listing each artifact's file, size, sha256 and whether it is
text. Atomicity: a writer builds the whole entry in a private temp directory next to the final one (the
manifest written last) and renames the directory into place. A rename is atomic, so a reader sees either
no entry or a complete one; when two writers race on one key the first rename wins and the second writer
discards its copy (same key = same content) -- both succeed. ``get`` verifies sizes and hashes and treats a
corrupt or partial entry as a miss; the next ``put`` replaces it.

Size: the directory is bounded (``TILEFARM_CACHE_MAX_SIZE``, default 4 GiB; "0" = unbounded). Every entry of an
older compiler is dead weight once the sources change (they are in the key), so without a bound a cache shared by
many trees only grows. A disk hit refreshes the entry's manifest mtime (at most once a minute), so the mtime is
its last use; ``trim`` removes the least recently used entries until the total is under 3/4 of the bound. A
process trims after writing 1/16 of the bound, and on its first write when no process has trimmed for ten minutes
(a stamp file), so many short processes keep it bounded too. One process trims at a time (a lock file; the
others skip). A reader racing an eviction sees a complete entry or a miss, never a part: entries are renamed
away before they are removed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import shutil
import threading
import time
import uuid
import warnings
from collections import OrderedDict
from typing import Any, Iterable, Mapping

__all__ = ["KernelCache", "TrimReport", "UnsafeCacheDir", "cache_key", "canonical_json", "default_cache_dir",
           "default_max_bytes", "parse_size", "private_dir", "check_private_file"]

MANIFEST = "manifest.json"
FORMAT_VERSION = 1
DEFAULT_MAX_BYTES = 4 << 30
TRIM_STAMP = ".trimmed"
TRIM_LOCK = ".trim.lock"
TRIM_INTERVAL_S = 600.0
TOUCH_INTERVAL_S = 60.0
_SIZE_UNITS = {"": 1, "B": 1, "K": 1 << 10, "KB": 1 << 10, "KIB": 1 << 10, "M": 1 << 20, "MB": 1 << 20,
               "MIB": 1 << 20, "G": 1 << 30, "GB": 1 << 30, "GIB": 1 << 30, "T": 1 << 40, "TB": 1 << 40,
               "TIB": 1 << 40}


def default_cache_dir() -> str:
    """$TILEFARM_CACHE_DIR, else ~/.cache/tilefarm."""
    return os.environ.get("TILEFARM_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "tilefarm")


def parse_size(text: str) -> int:
    """Bytes in a size such as "4G", "500MiB", "1.5 GB", "123456" (binary units: K = 1024). Raises ValueError
    naming the text otherwise."""
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]*)?)\s*([A-Za-z]*)\s*", str(text))
    unit = m.group(2).upper() if m else None
    if m is None or unit not in _SIZE_UNITS:
        raise ValueError(f"not a size: {text!r} (a number of bytes, or one with K, M, G or T, such as 4G or 500M)")
    return int(float(m.group(1)) * _SIZE_UNITS[unit])


def default_max_bytes() -> int | None:
    """The disk cache's bound from $TILEFARM_CACHE_MAX_SIZE (None = unbounded: "0", "none", "unlimited"), else
    4 GiB. A value that is not a size is an error naming the variable."""
    text = os.environ.get("TILEFARM_CACHE_MAX_SIZE", "").strip()
    if not text:
        return DEFAULT_MAX_BYTES
    if text.lower() in ("none", "unlimited", "off"):
        return None
    try:
        n = parse_size(text)
    except ValueError as e:
        raise ValueError(f"TILEFARM_CACHE_MAX_SIZE: {e}") from None
    return n or None


@dataclasses.dataclass
class TrimReport:
    """What ``KernelCache.trim`` found and did: entries and bytes before, those it removed, and whether it ran
    (False when another process held the trim lock)."""
    ran: bool
    entries: int = 0
    bytes: int = 0
    removed_entries: int = 0
    removed_bytes: int = 0

    @property
    def kept_bytes(self) -> int:
        return self.bytes - self.removed_bytes


class UnsafeCacheDir(OSError):
    """A cache folder (or file in it) that another user could write: what it holds could have been planted, so it
    is not used (the entry's hashes are in the same folder and prove nothing against a writer there)."""


def _unsafe(st: os.stat_result) -> str:
    """Why a folder or file with this stat is not private to this user ("" when it is)."""
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        return f"owned by uid {st.st_uid}, not this user ({os.getuid()})"
    if st.st_mode & 0o022:
        return f"writable by {'group and others' if st.st_mode & 0o022 == 0o022 else 'group' if st.st_mode & 0o020 else 'others'} (mode {st.st_mode & 0o777:o})"
    return ""


def private_dir(path: str) -> str:
    """Create ``path`` (and missing parents) as 0700, as pip and Triton create their caches; raise
    UnsafeCacheDir when it exists but another user could write it. Returns the absolute path."""
    path = os.path.abspath(path)
    os.makedirs(path, mode=0o700, exist_ok=True)
    st = os.stat(path)
    why = _unsafe(st)
    if why:
        raise UnsafeCacheDir(f"refusing the cache folder {path}: it is {why}, so anyone with that access could plant "
                             f"a kernel or launcher in it; `chmod 700 {path}` or point TILEFARM_CACHE_DIR elsewhere")
    return path


def check_private_file(path: str) -> None:
    """Raise UnsafeCacheDir unless ``path`` is a regular file owned by this user and writable by no one else."""
    st = os.lstat(path)
    import stat
    why = "not a regular file" if not stat.S_ISREG(st.st_mode) else _unsafe(st)
    if why:
        raise UnsafeCacheDir(f"refusing {path}: it is {why}")


def _canon(obj: Any) -> Any:
    """A JSON-able rendering with one spelling per value (tuples = lists, sets sorted, bytes tagged)."""
    if obj is None or isinstance(obj, (bool, int, str)):
        return obj
    if isinstance(obj, float):
        return {"__float__": obj.hex()}  # exact, and distinct from ints
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return {"__bytes__": hashlib.sha256(bytes(obj)).hexdigest()}
    if isinstance(obj, Mapping):
        return {str(k): _canon(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_canon(v) for v in obj]
    if isinstance(obj, (set, frozenset)):
        return sorted((_canon(v) for v in obj), key=lambda v: json.dumps(v, sort_keys=True))
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {"__dataclass__": type(obj).__qualname__,
                **{f.name: _canon(getattr(obj, f.name)) for f in dataclasses.fields(obj)}}
    if hasattr(obj, "item") and callable(obj.item):  # NumPy scalars
        return _canon(obj.item())
    if hasattr(obj, "name") and isinstance(getattr(obj, "name"), str):  # dtypes, enums
        return {"__named__": type(obj).__qualname__, "name": obj.name}
    raise TypeError(f"cache key: cannot canonicalize {type(obj).__qualname__} (give str/int/float/bytes/"
                    "list/dict/dataclass)")


def canonical_json(description: Any) -> str:
    """The canonical text that is hashed for ``description``."""
    return json.dumps(_canon(description), sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def cache_key(description: Any) -> str:
    """sha256 hex digest of ``canonical_json(description)`` (a str description is hashed as given)."""
    text = description if isinstance(description, str) else canonical_json(description)
    return hashlib.sha256(text.encode()).hexdigest()


def _is_key(key: str) -> bool:
    return len(key) == 64 and all(c in "0123456789abcdef" for c in key)


class KernelCache:
    """Content-addressed store of named compile artifacts, with an in-memory layer over a shared directory.

    ``put(key, {"ptx": str, "cubin": bytes, "metadata.json": str, ...})``, ``get(key) -> dict | None``.
    Text artifacts come back as str, binary ones as bytes. Keys come from ``cache_key(description)``.
    """

    def __init__(self, dir: str | None = None, memory_entries: int = 1024, fsync: bool = False,
                 max_bytes: int | None | str = "env"):
        self.dir = os.path.abspath(dir or default_cache_dir())
        self.fsync = fsync
        # The disk bound (None = unbounded); "env" reads TILEFARM_CACHE_MAX_SIZE (default 4 GiB).
        if max_bytes == "env":
            try:
                max_bytes = default_max_bytes()
            except ValueError as e:  # a typo must not cost the cache, nor pass unseen
                warnings.warn(f"{e}; using the default bound, {DEFAULT_MAX_BYTES >> 30} GiB", RuntimeWarning,
                              stacklevel=2)
                max_bytes = DEFAULT_MAX_BYTES
        self.max_bytes = max_bytes
        self._written = 0  # bytes this instance wrote since it last trimmed (or decided not to)
        self._stamp_checked = False
        self._mem: OrderedDict[str, dict] = OrderedDict()
        self._mem_max = memory_entries
        self._lock = threading.Lock()
        try:
            private_dir(self.dir)  # created 0700; refused (UnsafeCacheDir) when another user could write it
        except UnsafeCacheDir as e:
            # The compiler goes on without a disk cache; say so once, or every process would compile from scratch
            # without anyone knowing why.
            warnings.warn(f"{e}; the disk cache is off", RuntimeWarning, stacklevel=2)
            raise

    # --- keys and paths --------------------------------------------------------------------------------

    @staticmethod
    def key(description: Any) -> str:
        """Same as ``cache_key``."""
        return cache_key(description)

    def path_of(self, key: str) -> str:
        """Directory of ``key``'s entry (it may not exist)."""
        if not _is_key(key):
            raise ValueError(f"not a cache key (64 lowercase hex digits): {key!r}")
        return os.path.join(self.dir, key[:2], key)

    # --- reads -----------------------------------------------------------------------------------------

    def get(self, key: str, names: Iterable[str] | None = None) -> dict | None:
        """The artifacts stored under ``key`` (only ``names`` if given), or None on a miss or a bad entry."""
        with self._lock:
            hit = self._mem.get(key)
            if hit is not None:
                self._mem.move_to_end(key)
        if hit is None:
            hit = self._read_disk(key)
            if hit is None:
                return None
            self._touch(key)
            self._remember(key, hit)
        if names is None:
            return dict(hit)
        try:
            return {n: hit[n] for n in names}
        except KeyError:
            return None

    def __contains__(self, key: str) -> bool:
        return self.get(key) is not None

    def _read_disk(self, key: str) -> dict | None:
        path = self.path_of(key)
        try:
            with open(os.path.join(path, MANIFEST), "rb") as f:
                manifest = json.loads(f.read())
            if manifest.get("format") != FORMAT_VERSION or manifest.get("key") != key:
                return None
            if _unsafe(os.stat(path)):  # an entry another user could have written or swapped: a miss
                return None
            out = {}
            for name, info in manifest["artifacts"].items():
                with open(os.path.join(path, info["file"]), "rb") as f:
                    data = f.read()
                if len(data) != info["size"] or hashlib.sha256(data).hexdigest() != info["sha256"]:
                    return None
                out[name] = data.decode() if info["text"] else data
            return out
        except (OSError, ValueError, KeyError, TypeError, UnicodeDecodeError):
            return None  # missing, partial, corrupt, or written by an incompatible version: a miss

    def _touch(self, key: str) -> None:
        """Mark ``key``'s entry as just used (its manifest's mtime; the directory's mtime stays its creation time),
        at most once a TOUCH_INTERVAL_S: what ``trim`` orders by."""
        path = os.path.join(self.path_of(key), MANIFEST)
        try:
            now = time.time()
            if now - os.stat(path).st_mtime > TOUCH_INTERVAL_S:
                os.utime(path, (now, now))
        except OSError:
            pass  # a read-only cache, or the entry was just evicted: recency is a hint

    def _remember(self, key: str, artifacts: dict) -> None:
        with self._lock:
            self._mem[key] = artifacts
            self._mem.move_to_end(key)
            while len(self._mem) > self._mem_max:
                self._mem.popitem(last=False)

    # --- writes ----------------------------------------------------------------------------------------

    def put(self, key: str, artifacts: Mapping[str, str | bytes], meta: Mapping[str, Any] | None = None,
            replace: bool = False) -> str:
        """Store ``artifacts`` under ``key`` atomically; returns the entry's directory.

        Safe against concurrent writers of the same key (the first complete entry wins; its content is the
        same by construction) and against readers (they never see a partial entry). ``replace`` swaps in this
        entry even over a valid one: used to add an artifact made later (a cubin) to an existing entry; a reader
        racing the swap sees the old entry, the new one, or a miss, never a mix.
        """
        final = self.path_of(key)
        files: dict[str, tuple[str, bytes, bool]] = {}
        for i, (name, data) in enumerate(artifacts.items()):
            if name == MANIFEST:
                raise ValueError(f"{MANIFEST!r} is reserved")
            text = isinstance(data, str)
            raw = data.encode() if text else bytes(data)
            files[name] = (_file_name(name, i), raw, text)

        parent = os.path.dirname(final)
        os.makedirs(parent, mode=0o700, exist_ok=True)
        tmp = os.path.join(parent, f".tmp-{key[:16]}-{os.getpid()}-{uuid.uuid4().hex[:8]}")
        os.mkdir(tmp, mode=0o700)
        try:
            manifest = {"format": FORMAT_VERSION, "key": key, "created": time.time(),
                        "meta": dict(meta or {}), "artifacts": {}}
            for name, (fname, raw, text) in files.items():
                self._write(os.path.join(tmp, fname), raw)
                manifest["artifacts"][name] = {"file": fname, "size": len(raw),
                                               "sha256": hashlib.sha256(raw).hexdigest(), "text": text}
            # The manifest goes last: even inside the private directory, "manifest exists" = "entry complete".
            self._write(os.path.join(tmp, MANIFEST), json.dumps(manifest, indent=1, sort_keys=True).encode())
            if replace and os.path.isdir(final):
                trash = os.path.join(parent, f".trash-{key[:16]}-{uuid.uuid4().hex[:8]}")
                try:
                    os.rename(final, trash)
                    shutil.rmtree(trash, ignore_errors=True)
                except OSError:
                    pass  # another writer moved it first: the install below copes
            self._install(tmp, final, key)
        finally:
            if os.path.exists(tmp):
                shutil.rmtree(tmp, ignore_errors=True)
        self._remember(key, {n: (raw.decode() if text else raw) for n, (_, raw, text) in files.items()})
        self._after_write(sum(len(raw) for _, raw, _ in files.values()))
        return final

    def _after_write(self, nbytes: int) -> None:
        """Trim when this instance has written 1/16 of the bound since its last trim, or on its first write when
        the stamp says no process has trimmed for TRIM_INTERVAL_S."""
        if self.max_bytes is None:
            return
        self._written += nbytes
        due = self._written * 16 >= self.max_bytes
        if not due and not self._stamp_checked:
            self._stamp_checked = True
            try:
                due = time.time() - os.stat(os.path.join(self.dir, TRIM_STAMP)).st_mtime > TRIM_INTERVAL_S
            except OSError:
                due = True  # never trimmed
        if due:
            self._written = 0
            try:
                self.trim()
            except OSError:
                pass  # a full or read-only disk: the write itself succeeded, the next one tries again

    def _write(self, path: str, raw: bytes) -> None:
        with open(path, "wb") as f:
            f.write(raw)
            if self.fsync:
                f.flush()
                os.fsync(f.fileno())

    def _install(self, tmp: str, final: str, key: str) -> None:
        """Rename ``tmp`` to ``final``; if an entry is already there keep it when valid, else replace it."""
        for _ in range(5):
            try:
                os.rename(tmp, final)  # atomic; fails if final is a non-empty directory
                return
            except OSError:
                if not os.path.isdir(final):
                    continue  # it vanished between our attempts (another writer replacing it): retry
            if self._read_disk(key) is not None:
                return  # another writer won with a complete entry: done
            # A bad entry (corrupt, or from an old format): move it aside, then retry the rename.
            trash = os.path.join(os.path.dirname(final), f".trash-{key[:16]}-{uuid.uuid4().hex[:8]}")
            try:
                os.rename(final, trash)
                shutil.rmtree(trash, ignore_errors=True)
            except OSError:
                pass  # someone else moved it first
        raise OSError(f"could not install cache entry {key} at {final}")

    # --- maintenance -----------------------------------------------------------------------------------

    def evict_memory(self) -> None:
        """Drop the in-memory layer (the disk entries stay)."""
        with self._lock:
            self._mem.clear()

    def remove(self, key: str) -> None:
        """Delete ``key``'s entry from memory and disk (atomically: renamed away, then removed)."""
        with self._lock:
            self._mem.pop(key, None)
        final = self.path_of(key)
        trash = os.path.join(os.path.dirname(final), f".trash-{key[:16]}-{uuid.uuid4().hex[:8]}")
        try:
            os.rename(final, trash)
        except OSError:
            return
        shutil.rmtree(trash, ignore_errors=True)

    def entries(self) -> list[tuple[float, int, str]]:
        """[(last use, bytes, key)] of every complete entry on disk (last use = the manifest's mtime)."""
        out = []
        try:
            subs = os.scandir(self.dir)
        except OSError:
            return out
        with subs:
            for sub in subs:
                if len(sub.name) != 2 or not sub.is_dir(follow_symlinks=False):
                    continue
                try:
                    names = os.listdir(sub.path)
                except OSError:
                    continue
                for name in names:
                    if not _is_key(name):
                        continue
                    path = os.path.join(sub.path, name)
                    try:
                        used = os.stat(os.path.join(path, MANIFEST)).st_mtime
                        size = 0
                        with os.scandir(path) as files:
                            for f in files:
                                size += f.stat(follow_symlinks=False).st_size
                    except OSError:
                        continue  # incomplete (no manifest yet) or removed meanwhile
                    out.append((used, size, name))
        return out

    def trim(self, max_bytes: int | None = None, low_water: float = 0.75) -> TrimReport:
        """Remove the least recently used entries until the cache holds at most ``low_water`` of ``max_bytes``
        (default: this cache's bound), when it holds more than ``max_bytes``; also crashed writers' leftovers.
        ``max_bytes=0`` empties the cache. One process at a time: returns ``TrimReport(ran=False)`` when another
        holds the lock."""
        limit = self.max_bytes if max_bytes is None else max_bytes
        lock_path = os.path.join(self.dir, TRIM_LOCK)
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            try:
                import fcntl

                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except ImportError:  # pragma: no cover - not POSIX: no cross-process lock, trims may overlap (safe)
                pass
            except OSError:
                return TrimReport(ran=False)
            self.prune_temp()
            found = self.entries()
            report = TrimReport(ran=True, entries=len(found), bytes=sum(size for _, size, _ in found))
            if limit is not None and report.bytes > limit:
                target = int(limit * low_water)
                held = report.bytes
                for _, size, key in sorted(found):
                    if held <= target:
                        break
                    self.remove(key)
                    held -= size
                    report.removed_entries += 1
                    report.removed_bytes += size
            stamp = os.path.join(self.dir, TRIM_STAMP)
            with open(stamp, "a"):
                pass
            os.utime(stamp, None)
            return report
        finally:
            os.close(fd)  # releases the lock

    def prune_temp(self, max_age_s: float = 3600) -> int:
        """Remove temp/trash directories older than ``max_age_s`` left by crashed writers; returns the count."""
        n, now = 0, time.time()
        for sub in os.listdir(self.dir):
            p = os.path.join(self.dir, sub)
            if not os.path.isdir(p):
                continue
            for name in os.listdir(p):
                if name.startswith((".tmp-", ".trash-")):
                    q = os.path.join(p, name)
                    try:
                        if now - os.path.getmtime(q) > max_age_s:
                            shutil.rmtree(q, ignore_errors=True)
                            n += 1
                    except OSError:
                        pass
        return n


def _file_name(name: str, index: int) -> str:
    """A safe file name for an artifact name (names are usually already safe: 'ptx', 'metadata.json')."""
    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in name)
    if not safe or safe.startswith(".") or safe == MANIFEST:
        safe = f"artifact{index}"
    return safe if safe == name else f"{index}-{safe}"
