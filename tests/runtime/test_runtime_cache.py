"""KernelCache: keys, round trips, corrupt/partial entries, many writers in many processes, hit time."""

from __future__ import annotations

import dataclasses
import json
import multiprocessing as mp
import os
import time

import pytest

from compiler.runtime import KernelCache, cache_key
from compiler.runtime.cache import MANIFEST, canonical_json, default_cache_dir


def artifacts(i: int = 0) -> dict:
    return {"tile": f"func @k{i}() {{}}\n", "llir": "define void @k() {}\n" * 20, "ptx": ".entry k {}\n" * 50,
            "cubin": b"\x7fELF" + bytes(range(256)) * 40 + i.to_bytes(4, "little"),
            "metadata.json": json.dumps({"name": f"k{i}", "num_warps": 4})}


# --- keys --------------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Opts:
    num_warps: int = 4
    arch: str = "sm_90"


def test_key_is_canonical():
    a = {"src": "def k(): pass", "sig": ("ptr", "int32"), "opts": Opts(), "spec": {"b": 1, "a": 2}}
    b = {"spec": {"a": 2, "b": 1}, "opts": Opts(), "sig": ["ptr", "int32"], "src": "def k(): pass"}
    assert cache_key(a) == cache_key(b)
    assert len(cache_key(a)) == 64


def test_key_distinguishes_what_matters():
    base = {"src": "x", "n": 1, "opts": Opts()}
    keys = {cache_key(base), cache_key({**base, "n": 1.0}), cache_key({**base, "n": True}),
            cache_key({**base, "opts": Opts(num_warps=8)}), cache_key({**base, "src": "x "}),
            cache_key({**base, "blob": b"\x00"}), cache_key({**base, "blob": b"\x01"})}
    assert len(keys) == 7


def test_key_rejects_unknown_objects():
    with pytest.raises(TypeError, match="canonicalize"):
        canonical_json({"f": object()})


# --- round trip and layering -------------------------------------------------------------------------------

def test_put_get_round_trip(tmp_path):
    c = KernelCache(str(tmp_path))
    k = cache_key("kernel-1")
    assert c.get(k) is None
    c.put(k, artifacts())
    got = KernelCache(str(tmp_path)).get(k)  # a fresh instance: from disk
    assert got == artifacts()
    assert isinstance(got["ptx"], str) and isinstance(got["cubin"], bytes)
    assert c.get(k, names=["cubin", "metadata.json"]).keys() == {"cubin", "metadata.json"}
    assert c.get(k, names=["nope"]) is None
    assert k in c


def test_layout_and_env_default(tmp_path, monkeypatch):
    monkeypatch.setenv("TILEFARM_CACHE_DIR", str(tmp_path / "envdir"))
    assert default_cache_dir() == str(tmp_path / "envdir")
    c = KernelCache()
    k = cache_key("x")
    path = c.put(k, {"ptx": "p"})
    assert path == os.path.join(str(tmp_path / "envdir"), k[:2], k)
    assert sorted(os.listdir(path)) == [MANIFEST, "ptx"]


def test_bad_keys_and_reserved_names(tmp_path):
    c = KernelCache(str(tmp_path))
    with pytest.raises(ValueError):
        c.get("../etc/passwd")
    with pytest.raises(ValueError):
        c.put(cache_key("a"), {MANIFEST: "x"})


def test_odd_artifact_names_are_stored_safely(tmp_path):
    c = KernelCache(str(tmp_path))
    k = cache_key("odd")
    c.put(k, {"../evil": b"1", "a/b": "2", "": b"3"})
    got = KernelCache(str(tmp_path)).get(k)
    assert got == {"../evil": b"1", "a/b": "2", "": b"3"}
    assert all(os.path.dirname(os.path.join(c.path_of(k), f)) == c.path_of(k) for f in os.listdir(c.path_of(k)))


# --- corrupt and partial entries ---------------------------------------------------------------------------

def _corruptions():
    def truncate(path, m):
        f = os.path.join(path, "cubin")
        with open(f, "r+b") as fh:
            fh.truncate(10)

    def flip(path, m):
        f = os.path.join(path, "ptx")
        data = bytearray(open(f, "rb").read())
        data[5] ^= 1
        open(f, "wb").write(bytes(data))

    def no_manifest(path, m):
        os.remove(os.path.join(path, MANIFEST))

    def garbage_manifest(path, m):
        open(os.path.join(path, MANIFEST), "w").write("{not json")

    def missing_file(path, m):
        os.remove(os.path.join(path, "llir"))

    def wrong_key(path, m):
        m["key"] = "0" * 64
        open(os.path.join(path, MANIFEST), "w").write(json.dumps(m))

    def old_format(path, m):
        m["format"] = 0
        open(os.path.join(path, MANIFEST), "w").write(json.dumps(m))

    return [truncate, flip, no_manifest, garbage_manifest, missing_file, wrong_key, old_format]


@pytest.mark.parametrize("corrupt", _corruptions(), ids=lambda f: f.__name__)
def test_corrupt_entry_is_a_miss_and_put_repairs_it(tmp_path, corrupt):
    c = KernelCache(str(tmp_path))
    k = cache_key(corrupt.__name__)
    path = c.put(k, artifacts())
    manifest = json.load(open(os.path.join(path, MANIFEST)))
    corrupt(path, manifest)
    fresh = KernelCache(str(tmp_path))
    assert fresh.get(k) is None
    fresh.put(k, artifacts())
    assert KernelCache(str(tmp_path)).get(k) == artifacts()
    assert not [n for n in os.listdir(os.path.dirname(path)) if n.startswith((".tmp-", ".trash-"))]


def test_second_writer_keeps_the_valid_entry(tmp_path):
    c1, c2 = KernelCache(str(tmp_path)), KernelCache(str(tmp_path))
    k = cache_key("race")
    c1.put(k, artifacts(1))
    c2.put(k, artifacts(1))
    assert KernelCache(str(tmp_path)).get(k) == artifacts(1)


def test_remove_and_prune(tmp_path):
    c = KernelCache(str(tmp_path))
    k = cache_key("gone")
    c.put(k, artifacts())
    c.remove(k)
    assert KernelCache(str(tmp_path)).get(k) is None and c.get(k) is None
    stale = tmp_path / k[:2] / ".tmp-deadbeef-1-abc"
    stale.mkdir(parents=True)
    os.utime(stale, (time.time() - 7200, time.time() - 7200))
    assert c.prune_temp(max_age_s=3600) == 1 and not stale.exists()


# --- many processes ----------------------------------------------------------------------------------------

def _writer(dir_: str, worker: int, n_keys: int, rounds: int, q) -> None:
    try:
        c = KernelCache(dir_)
        bad = 0
        for r in range(rounds):
            for i in range(n_keys):
                k = cache_key(f"key-{i}")
                if (worker + r + i) % 2:
                    c.put(k, artifacts(i))
                c.evict_memory()  # always read the disk
                got = c.get(k)
                if got is not None and got != artifacts(i):
                    bad += 1
        q.put(("ok", worker, bad))
    except BaseException as e:  # pragma: no cover - reported to the parent
        q.put(("error", worker, repr(e)))


def test_concurrent_writers_and_readers(tmp_path):
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    n_procs, n_keys, rounds = 6, 12, 6
    procs = [ctx.Process(target=_writer, args=(str(tmp_path), w, n_keys, rounds, q)) for w in range(n_procs)]
    for p in procs:
        p.start()
    results = [q.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    assert all(r[0] == "ok" for r in results), results
    assert sum(r[2] for r in results) == 0, "a reader saw a partial or mixed entry"
    c = KernelCache(str(tmp_path))
    for i in range(n_keys):
        assert c.get(cache_key(f"key-{i}")) == artifacts(i)
    leftovers = [n for d in os.listdir(tmp_path) if (tmp_path / d).is_dir() for n in os.listdir(tmp_path / d)
                 if n.startswith(".")]
    assert leftovers == []


# --- speed -------------------------------------------------------------------------------------------------

def test_disk_hit_is_fast(tmp_path):
    """A disk hit (manifest + 5 files, sizes and sha256 checked) must cost well under 2 ms."""
    c = KernelCache(str(tmp_path))
    k = cache_key("fast")
    c.put(k, artifacts())
    times = []
    for _ in range(200):
        fresh = KernelCache(str(tmp_path))
        t0 = time.perf_counter()
        assert fresh.get(k) is not None
        times.append(time.perf_counter() - t0)
    times.sort()
    med = times[len(times) // 2] * 1e3
    t0 = time.perf_counter()
    for _ in range(1000):
        c.get(k)
    mem_us = (time.perf_counter() - t0) * 1e3
    print(f"\ndisk cache hit: median {med:.3f} ms; memory hit {mem_us:.2f} us")
    assert med < 2.0


def test_compile_cache_follows_the_cache_folder_set_in_the_process(tmp_path, monkeypatch):
    """A change of TILEFARM_CACHE_DIR (or TILEFARM_CACHE) within a process, as a test fixture's fresh folder makes,
    takes effect at the next compile: the kernel is compiled again into the new folder, not found in the old one."""
    import numpy as np

    import compiler
    import compiler.compile as C
    import compiler.language as tl

    @compiler.jit
    def twice(X, Y, B: tl.constexpr):
        r = tl.arange(0, B)
        tl.store(Y + r, tl.load(X + r) * 2.0)

    monkeypatch.setattr(C, "_disk", None)
    monkeypatch.setattr(C, "_mem_cache", {})
    monkeypatch.delenv("TILEFARM_CACHE", raising=False)
    x = np.zeros(64, np.float32)
    for d in ("a", "b"):
        monkeypatch.setenv("TILEFARM_CACHE_DIR", str(tmp_path / d))
        C._mem_cache.clear()
        before = C.stats()["compiled"]
        twice.warmup(x, x, grid=(1,), target="sm_90", B=64)
        assert C.stats()["compiled"] == before + 1  # compiled again: the other folder holds no entry yet
        assert any((tmp_path / d).rglob(MANIFEST)) or any((tmp_path / d).iterdir())
    monkeypatch.setenv("TILEFARM_CACHE", "0")
    assert C._disk_cache() is None


# --- the size bound ----------------------------------------------------------------------------------------

def _sizes(c: KernelCache) -> int:
    return sum(size for _, size, _ in c.entries())


def _age(c: KernelCache, key: str, seconds_ago: float) -> None:
    t = time.time() - seconds_ago
    os.utime(os.path.join(c.path_of(key), MANIFEST), (t, t))


@pytest.mark.parametrize("text,n", [("123", 123), ("4G", 4 << 30), ("500M", 500 << 20), ("1.5 GiB", 3 << 29),
                                    ("64kb", 64 << 10), ("0", 0)])
def test_parse_size(text, n):
    from compiler.runtime.cache import parse_size
    assert parse_size(text) == n


@pytest.mark.parametrize("text", ["", "4X", "G", "-1", "1e9"])
def test_parse_size_rejects(text):
    from compiler.runtime.cache import parse_size
    with pytest.raises(ValueError, match="not a size"):
        parse_size(text)


def test_bound_from_env(monkeypatch, tmp_path):
    from compiler.runtime.cache import DEFAULT_MAX_BYTES
    monkeypatch.delenv("TILEFARM_CACHE_MAX_SIZE", raising=False)
    assert KernelCache(str(tmp_path)).max_bytes == DEFAULT_MAX_BYTES
    monkeypatch.setenv("TILEFARM_CACHE_MAX_SIZE", "256M")
    assert KernelCache(str(tmp_path)).max_bytes == 256 << 20
    for off in ("0", "none", "unlimited"):
        monkeypatch.setenv("TILEFARM_CACHE_MAX_SIZE", off)
        assert KernelCache(str(tmp_path)).max_bytes is None
    monkeypatch.setenv("TILEFARM_CACHE_MAX_SIZE", "lots")
    with pytest.warns(RuntimeWarning, match="TILEFARM_CACHE_MAX_SIZE.*'lots'"):
        assert KernelCache(str(tmp_path)).max_bytes == DEFAULT_MAX_BYTES


def test_trim_removes_least_recently_used(tmp_path):
    c = KernelCache(str(tmp_path), max_bytes=None)
    keys = [cache_key(f"k{i}") for i in range(8)]
    for i, k in enumerate(keys):
        c.put(k, artifacts(i))
        _age(c, k, 1000 - 100 * i)  # k0 the oldest use, k7 the newest
    total = _sizes(c)
    one = total // 8
    # k1 is read (from disk, a fresh instance): its use becomes the newest, so it outlives k2..k5.
    assert KernelCache(str(tmp_path), max_bytes=None).get(keys[1]) == artifacts(1)
    rep = KernelCache(str(tmp_path), max_bytes=None).trim(max_bytes=5 * one)
    assert rep.ran and rep.entries == 8 and rep.bytes == total
    # 3/4 of five entries' bytes: 3 stay (k1, k6, k7), the 5 least recently used go, oldest first.
    left = {k for _, _, k in c.entries()}
    assert left == {keys[1], keys[6], keys[7]}
    assert rep.removed_entries == 5 and rep.kept_bytes == _sizes(c)
    fresh = KernelCache(str(tmp_path), max_bytes=None)
    assert fresh.get(keys[0]) is None and fresh.get(keys[7]) == artifacts(7)


def test_trim_under_the_bound_removes_nothing(tmp_path):
    c = KernelCache(str(tmp_path), max_bytes=None)
    for i in range(3):
        c.put(cache_key(i), artifacts(i))
    rep = c.trim(max_bytes=10 * _sizes(c))
    assert rep.ran and rep.removed_entries == 0 and rep.entries == 3


def test_trim_to_zero_empties(tmp_path):
    c = KernelCache(str(tmp_path), max_bytes=None)
    for i in range(3):
        c.put(cache_key(i), artifacts(i))
    assert c.trim(max_bytes=0).removed_entries == 3
    assert c.entries() == [] and KernelCache(str(tmp_path)).get(cache_key(0)) is None


def test_writes_keep_the_cache_bounded(tmp_path):
    probe = KernelCache(str(tmp_path / "probe"), max_bytes=None)
    probe.put(cache_key("probe"), artifacts())
    bound = 40 * _sizes(probe)  # forty entries' bytes
    c = KernelCache(str(tmp_path / "c"), max_bytes=bound)
    for i in range(200):
        c.put(cache_key(i), artifacts(i))
        # A trim runs once 1/16 of the bound was written since the last: never more than that over it.
        assert _sizes(c) <= bound * 17 // 16
    assert 0 < len(c.entries()) < 60
    assert c.get(cache_key(199)) == artifacts(199)  # the newest entries stay


def test_first_write_trims_a_cache_left_over_its_bound(tmp_path):
    """Many short processes (each writing little) still keep the cache bounded: a process's first write trims
    when no process has for TRIM_INTERVAL_S (the stamp)."""
    from compiler.runtime.cache import TRIM_STAMP
    big = KernelCache(str(tmp_path), max_bytes=None)
    for i in range(20):
        big.put(cache_key(i), artifacts(i))
    total = _sizes(big)
    assert not os.path.exists(tmp_path / TRIM_STAMP)  # unbounded: no trim ran
    small = KernelCache(str(tmp_path), max_bytes=total // 2)
    small.put(cache_key("new"), artifacts(99))
    assert _sizes(small) <= total // 2 * 3 // 4 + total // 20
    assert os.path.exists(tmp_path / TRIM_STAMP)
    # A recent stamp: the next process's first (small) write does not scan again; an old one: it does.
    from compiler.runtime.cache import TRIM_INTERVAL_S
    stamp = tmp_path / TRIM_STAMP
    recent = time.time() - TRIM_INTERVAL_S / 2
    os.utime(stamp, (recent, recent))
    before = os.stat(stamp).st_mtime
    KernelCache(str(tmp_path), max_bytes=total).put(cache_key("newer"), artifacts(98))
    assert os.stat(stamp).st_mtime == before
    old = time.time() - 2 * TRIM_INTERVAL_S
    os.utime(stamp, (old, old))
    KernelCache(str(tmp_path), max_bytes=total).put(cache_key("newest"), artifacts(97))
    assert time.time() - os.stat(stamp).st_mtime < 60


def test_trim_skips_while_another_process_trims(tmp_path):
    import fcntl

    from compiler.runtime.cache import TRIM_LOCK
    c = KernelCache(str(tmp_path), max_bytes=None)
    c.put(cache_key(0), artifacts())
    with open(tmp_path / TRIM_LOCK, "a") as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        assert c.trim(max_bytes=0).ran is False
    assert len(c.entries()) == 1
    assert c.trim(max_bytes=0).ran is True and c.entries() == []


def test_a_read_refreshes_the_use_but_not_the_creation_time(tmp_path):
    """The manifest's mtime is the last use (trim's order); the entry folder's mtime stays its creation, which
    the farm reads to tell a cold compile from a cached one."""
    c = KernelCache(str(tmp_path), max_bytes=None)
    k = cache_key("x")
    c.put(k, artifacts())
    _age(c, k, 3600)
    created = os.stat(c.path_of(k)).st_mtime
    assert KernelCache(str(tmp_path)).get(k) == artifacts()
    assert time.time() - os.stat(os.path.join(c.path_of(k), MANIFEST)).st_mtime < 60
    assert os.stat(c.path_of(k)).st_mtime == created
