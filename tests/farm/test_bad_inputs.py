"""Bad and hostile inputs, each a clear error: the exit code (2: usage or config, nothing run), a message naming the
file or the field, and the results store left exactly as it was (or not created). No Ray, no GPU: every input is
refused before anything starts, which is also what makes the whole table cheap to run in CI."""
import hashlib
import pathlib
import shutil
import sqlite3

import pytest
from typer.testing import CliRunner

from farm.cli.main import app

from farm_testing import FAKES

runner = CliRunner()
OK_ENTRY = f"{{workload: '{FAKES}::fake_vec', params: {{N: [64], dtype: [float32]}}}}"


def cfg(body: str = "", entry: str = OK_ENTRY, store: str = "store/farm.db") -> str:
    return f"store: {store}\n{body}" + (f"workloads: [{entry}]\n" if entry else "")


def entry(**fields) -> str:
    parts = [f"workload: '{FAKES}::fake_vec'"] + [f"{k}: {v}" for k, v in fields.items()]
    return "{" + ", ".join(parts) + "}"


BAD_KERNELS = {
    "syntax.py": "import numpy\n\ndef f(:\n    pass\n",
    "nameerr.py": "import numpy\nWORKLOAD = undefined_name\n",
    "imports_bad.py": "import sys, pathlib\nsys.path.insert(0, str(pathlib.Path(__file__).parent))\nimport kern_bad\n",
    "kern_bad.py": "def kernel(x):\n    return x +\n",
    "empty_decl.py": "X = 1\n",
    "wrongtype.py": "WORKLOAD = 42\n",
    "exits.py": "import sys\nsys.exit(3)\n",
    "recursion.py": "def f():\n    return f()\nf()\n",
}

# (id, files {name: text|bytes} (c.yaml is the config), args ("CFG", "STORE", "DIR" replaced), code, must contain)
CASES = [
    # -- schema: every field path named
    ("empty-workloads", {"c.yaml": cfg(entry="").replace("store/farm.db\n", "store/farm.db\nworkloads: []\n")},
     ["run", "CFG", "--local"], 2, ["workloads: List should have at least 1 item"]),
    ("unknown-top-field", {"c.yaml": cfg("workload: x\n")}, ["run", "CFG", "--local"], 2, ["workload: unknown field"]),
    ("unknown-entry-field", {"c.yaml": cfg(entry=entry(paramz=1))}, ["run", "CFG", "--local"], 2,
     ["workloads.0.paramz: unknown field"]),
    ("warmup-negative", {"c.yaml": cfg("timing: {warmup_ms: -1}\n")}, ["run", "CFG", "--local"], 2,
     ["timing.warmup_ms: Input should be greater than 0"]),
    ("rep-zero", {"c.yaml": cfg("timing: {rep_ms: 0}\n")}, ["run", "CFG", "--local"], 2, ["timing.rep_ms"]),
    ("timeout-text", {"c.yaml": cfg("timing: {timeout_s: fast}\n")}, ["run", "CFG", "--local"], 2,
     ["timing.timeout_s"]),
    ("flush-maybe", {"c.yaml": cfg("timing: {flush_l2: maybe}\n")}, ["run", "CFG", "--local"], 2, ["timing.flush_l2"]),
    ("timing-scalar", {"c.yaml": cfg("timing: 5\n")}, ["run", "CFG", "--local"], 2, ["timing:"]),
    ("executor-slurm", {"c.yaml": cfg("cluster: {executor: slurm}\n")}, ["run", "CFG", "--local"], 2,
     ["cluster.executor: Input should be 'ray' or 'local'"]),
    ("num-cpus-zero", {"c.yaml": cfg("cluster: {num_cpus: 0}\n")}, ["run", "CFG", "--local"], 2, ["cluster.num_cpus"]),
    ("seed-text", {"c.yaml": cfg("seed: abc\n")}, ["run", "CFG", "--local"], 2, ["seed:"]),
    ("name-list", {"c.yaml": cfg("name: [1]\n")}, ["run", "CFG", "--local"], 2, ["name:"]),
    ("param-mapping-value", {"c.yaml": cfg(entry=entry(params="{N: [{x: 1}]}"))}, ["run", "CFG", "--local"], 2,
     ["workloads.0.params.0.product.N.0: expected a number"]),
    ("zip-unequal", {"c.yaml": cfg(entry=entry(meta="{zip: {A: [1, 2], B: [1]}}"))}, ["run", "CFG", "--local"], 2,
     ["workloads.0.meta.0.zip: zipped lists"]),
    ("empty-axis", {"c.yaml": cfg(entry=entry(params="{N: [], dtype: [float32]}"))}, ["run", "CFG", "--local"], 2,
     ["empty list"]),
    ("product-and-zip", {"c.yaml": cfg(entry=entry(meta="{product: {A: [1]}, zip: {A: [2]}}"))},
     ["run", "CFG", "--local"], 2, ["'A' appears in both product and zip"]),
    ("several-schema-errors", {"c.yaml": cfg("timing: {warmup_ms: -1, rep_ms: 0}\ncluster: {num_cpus: 0}\n")},
     ["run", "CFG", "--local"], 2, ["(3 problems)", "timing.warmup_ms", "timing.rep_ms", "cluster.num_cpus"]),
    # -- constraints
    ("constraint-call", {"c.yaml": cfg(entry=entry(constraints="['open(1)']"))}, ["run", "CFG", "--local"], 2,
     ["workloads.0.constraints.0: call of open"]),
    ("constraint-syntax", {"c.yaml": cfg(entry=entry(constraints="['N >=']"))}, ["run", "CFG", "--local"], 2,
     ["workloads.0.constraints.0: invalid syntax"]),
    ("constraint-attribute", {"c.yaml": cfg(entry=entry(constraints="['N.__class__']"))}, ["run", "CFG", "--local"],
     2, ["workloads.0.constraints.0: Attribute is not allowed"]),
    ("constraint-not-text", {"c.yaml": cfg(entry=entry(constraints="[1]"))}, ["run", "CFG", "--local"], 2,
     ["workloads.0.constraints.0"]),
    ("constraint-power-tower", {"c.yaml": cfg(entry=entry(constraints="['2**2**2**2**2 > N']"))},
     ["run", "CFG", "--local"], 2, ["workloads.0.constraints.0", "too large"]),
    ("constraint-string-bomb", {"c.yaml": cfg(entry=entry(constraints="[\"len('a' * 10**10) > 0\"]"))},
     ["run", "CFG", "--local"], 2, ["workloads.0.constraints.0"]),
    ("constraint-repeat-bomb", {"c.yaml": cfg(entry=entry(constraints="[\"'a' * 10**10 == 'a'\"]"))},
     ["run", "CFG", "--local"], 2, ["workloads.0.constraints.0", "too long"]),
    ("constraint-shift-bomb", {"c.yaml": cfg(entry=entry(constraints="['1 << 10**9 > N']"))},
     ["run", "CFG", "--local"], 2, ["workloads.0.constraints.0", "too large"]),
    ("constraint-deep", {"c.yaml": cfg(entry=entry(constraints="['" + "-(" * 100 + "N" + ")" * 100 + " > 0']"))},
     ["run", "CFG", "--local"], 2, ["workloads.0.constraints.0", "nested too deeply"]),
    ("constraint-long", {"c.yaml": cfg(entry=entry(constraints="['" + "N + " * 500 + "1 > 0']"))},
     ["run", "CFG", "--local"], 2, ["workloads.0.constraints.0", "too long"]),
    ("constraint-unknown-name", {"c.yaml": cfg(entry=entry(constraints="['BLOK > 1']"))}, ["run", "CFG", "--local"],
     2, ["workloads.0.constraints.0: unknown name 'BLOK'"]),
    ("constraint-zero-division", {"c.yaml": cfg(entry=entry(constraints="['N / 0 > 1']"))},
     ["run", "CFG", "--local"], 2, ["workloads.0.constraints.0", "ZeroDivisionError"]),
    # -- the file itself
    ("invalid-yaml", {"c.yaml": "workloads: [{workload: a\n"}, ["run", "CFG", "--local"], 2, ["(file): not valid YAML"]),
    ("top-level-list", {"c.yaml": "- 1\n"}, ["run", "CFG", "--local"], 2, ["(top level): expected a mapping"]),
    ("empty-file", {"c.yaml": ""}, ["run", "CFG", "--local"], 2, ["(top level): expected a mapping"]),
    ("billion-laughs", {"c.yaml": "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [{', '.join(['*' + p] * 10)}]\n" for p, c in zip("abcdefgh", "bcdefghi")) + cfg()},
     ["run", "CFG", "--local"], 2, ["YAML aliases"]),
    ("duplicate-key", {"c.yaml": cfg("seed: 1\nseed: 2\n")}, ["run", "CFG", "--local"], 2, ["duplicate key 'seed'"]),
    ("deep-yaml", {"c.yaml": "x: " + "[" * 300 + "]" * 300 + "\n" + cfg()}, ["run", "CFG", "--local"], 2,
     ["nested"]),
    ("too-big", {"c.yaml": cfg() + "#" + "x" * (5 * 2**20) + "\n"}, ["run", "CFG", "--local"], 2, ["too big"]),
    ("not-utf8", {"c.yaml": b"\xff\xfe\x00garbage"}, ["run", "CFG", "--local"], 2, ["not text (UTF-8)"]),
    ("invalid-toml", {"c.toml": "name = \n"}, ["run", "DIR/c.toml", "--local"], 2, ["(file): not valid TOML"]),
    ("missing-config", {}, ["run", "DIR/nope.yaml", "--local"], 2, ["no such config file", "nope.yaml"]),
    ("config-is-folder", {"sub/x": ""}, ["run", "DIR/sub", "--local"], 2, ["no such config file", "it is a folder"]),
    # -- workloads that cannot be loaded: file:line of the user's code, never a framework traceback
    ("unknown-workload", {"c.yaml": cfg(entry="{workload: not_a_workload}")}, ["run", "CFG", "--local"], 2,
     ["workloads.0.workload: unknown workload 'not_a_workload'"]),
    ("missing-kernel-file", {"c.yaml": cfg(entry="{workload: missing.py}")}, ["run", "CFG", "--local"], 2,
     ["workloads.0.workload: no such kernel file", "missing.py"]),
    ("undeclared-name", {"c.yaml": cfg(entry=f"{{workload: '{FAKES}::nope'}}")}, ["run", "CFG", "--local"], 2,
     ["workloads.0.workload", "declares no workload named 'nope'"]),
    ("several-without-name", {"c.yaml": cfg(entry=f"{{workload: '{FAKES}'}}")}, ["run", "CFG", "--local"], 2,
     ["workloads.0.workload", "pick one with"]),
    ("kernel-syntax-error", {**BAD_KERNELS, "c.yaml": cfg(entry="{workload: syntax.py}")}, ["run", "CFG", "--local"],
     2, ["workloads.0.workload", "syntax.py:3:", "SyntaxError", "def f(:"]),
    ("kernel-name-error", {**BAD_KERNELS, "c.yaml": cfg(entry="{workload: nameerr.py}")}, ["run", "CFG", "--local"],
     2, ["workloads.0.workload", "nameerr.py:2: NameError", "undefined_name"]),
    ("imported-kernel-syntax-error", {**BAD_KERNELS, "c.yaml": cfg(entry="{workload: imports_bad.py}")},
     ["run", "CFG", "--local"], 2, ["workloads.0.workload", "kern_bad.py:2:", "SyntaxError"]),
    ("declares-nothing", {**BAD_KERNELS, "c.yaml": cfg(entry="{workload: empty_decl.py}")},
     ["run", "CFG", "--local"], 2, ["workloads.0.workload", "declares no workload"]),
    ("declares-wrong-type", {**BAD_KERNELS, "c.yaml": cfg(entry="{workload: wrongtype.py}")},
     ["run", "CFG", "--local"], 2, ["workloads.0.workload", "must hold workloads.base.Workload"]),
    ("kernel-calls-exit", {**BAD_KERNELS, "c.yaml": cfg(entry="{workload: exits.py}")}, ["run", "CFG", "--local"], 2,
     ["workloads.0.workload", "exit(3)"]),
    ("kernel-recursion", {**BAD_KERNELS, "c.yaml": cfg(entry="{workload: recursion.py}")},
     ["run", "CFG", "--local"], 2, ["workloads.0.workload", "recursion.py:2: RecursionError"]),
    ("outside-config-folder", {"c.yaml": cfg(entry="{workload: ../../elsewhere.py}")}, ["run", "CFG", "--local"], 2,
     ["workloads.0.workload: ../../elsewhere.py leaves the config's folder", "--allow-outside"]),
    ("two-bad-workloads", {"c.yaml": cfg(entry="{workload: nope_a}, {workload: nope_b}")},
     ["run", "CFG", "--local"], 2, ["(2 problems)", "workloads.0.workload", "workloads.1.workload"]),
    # -- points and meta-parameters
    ("no-dtype", {"c.yaml": cfg(entry=entry(params="{N: [64]}"))}, ["run", "CFG", "--local"], 2,
     ["workloads.0.params", "has no dtype"]),
    ("unknown-dtype", {"c.yaml": cfg(entry=entry(params="{N: [64], dtype: f32}"))}, ["run", "CFG", "--local"], 2,
     ["workloads.0.params.dtype: unknown dtype 'f32'"]),
    ("num-warps-word", {"c.yaml": cfg(entry=entry(meta="{num_warps: [two]}"))}, ["run", "CFG", "--local"], 2,
     ["workloads.0.meta: num_warps: expected a power of two", "'two'"]),
    ("num-warps-three", {"c.yaml": cfg(entry=entry(meta="{num_warps: [3]}"))}, ["run", "CFG", "--local"], 2,
     ["num_warps: expected a power of two", "got 3"]),
    ("num-warps-64", {"c.yaml": cfg(entry=entry(meta="{num_warps: [64]}"))}, ["run", "CFG", "--local"], 2,
     ["num_warps", "got 64"]),
    ("num-warps-bool", {"c.yaml": cfg(entry=entry(meta="{num_warps: [true]}"))}, ["run", "CFG", "--local"], 2,
     ["num_warps", "got True"]),
    ("num-stages-zero", {"c.yaml": cfg(entry=entry(meta="{num_stages: [0]}"))}, ["run", "CFG", "--local"], 2,
     ["workloads.0.meta: num_stages"]),
    ("block-2-22", {"c.yaml": cfg(entry=entry(meta="{BLOCK: [4194304]}"))}, ["run", "CFG", "--local"], 2,
     ["workloads.0.meta: BLOCK: 4194304 is outside 1..1048576"]),
    ("block-zero", {"c.yaml": cfg(entry=entry(meta="{BLOCK: [0]}"))}, ["run", "CFG", "--local"], 2, ["BLOCK: 0"]),
    ("sweep-over-limit", {"c.yaml": cfg(entry=entry(params="{N: " + str(list(range(1, 401))) + ", dtype: [float32]}",
                                                      meta="{BLOCK: " + str(list(range(1, 301))) + "}"))},
     ["run", "CFG", "--local"], 2, ["workloads.0: the sweep has up to 120,000 points", "--max-jobs"]),
    ("sweep-10-9", {"c.yaml": cfg(entry=entry(params="{" + ", ".join(f"P{i}: {list(range(10))}" for i in range(9))
                                              + ", dtype: [float32]}"))},
     ["run", "CFG", "--local"], 2, ["1,000,000,000 points"]),
    ("max-jobs-flag", {"c.yaml": cfg(entry=entry(params="{N: [1, 2, 3], dtype: [float32]}"))},
     ["run", "CFG", "--local", "--max-jobs", "2"], 2, ["over the limit of 2 jobs"]),
    # -- the store
    ("store-is-folder", {"c.yaml": cfg(store="store"), "store/keep": ""}, ["run", "CFG", "--local"], 2,
     ["is a folder, not a results store"]),
    ("store-empty-string", {"c.yaml": cfg(store="''")}, ["run", "CFG", "--local"], 2, ["is a folder"]),
    ("store-zero-bytes", {"c.yaml": cfg(), "store/farm.db": b""}, ["run", "CFG", "--local"], 2,
     ["farm.db is empty (0 bytes)", "Remove it"]),
    ("store-not-sqlite", {"c.yaml": cfg(), "store/farm.db": b"PK\x03\x04 not a database" * 100},
     ["run", "CFG", "--local"], 2, ["farm.db is not a results store"]),
    ("store-damaged", {"c.yaml": cfg(), "store/farm.db": b"SQLite format 3\x00" + b"\xab" * 8192},
     ["run", "CFG", "--local"], 2, ["farm.db is not a usable results store", "nothing was written"]),
    ("store-folder-is-a-file", {"c.yaml": cfg(store="afile/farm.db"), "afile": "x"}, ["run", "CFG", "--local"], 2,
     ["cannot write the results store", "afile"]),
    ("store-under-proc", {"c.yaml": cfg(store="/proc/farm-test/farm.db")}, ["run", "CFG", "--local"], 2,
     ["cannot write the results store /proc/farm-test/farm.db"]),
    ("report-damaged-store", {"store/farm.db": b"SQLite format 3\x00" + b"\xab" * 8192},
     ["report", "latest", "--store", "STORE"], 2, ["not a usable results store"]),
    # -- the command line
    ("run-no-config", {}, ["run", "--local"], 2, ["give a CONFIG file", "--resume"]),
    ("run-bad-format", {"c.yaml": cfg()}, ["run", "CFG", "--local", "--format", "yaml"], 2, ["--format must be"]),
    ("resume-unknown-run", {}, ["run", "--resume", "99", "--store", "STORE", "--local"], 2, ["no run '99'"]),
    ("resume-missing-store", {}, ["run", "--resume", "1", "--store", "DIR/none.db", "--local"], 2,
     ["no results store", "none.db"]),
    ("report-unknown-run", {}, ["report", "99", "--store", "STORE"], 2, ["no run '99'"]),
    ("report-bad-format", {}, ["report", "latest", "--store", "STORE", "--format", "xml"], 2, ["--format must be"]),
    ("runs-bad-format", {}, ["runs", "--store", "STORE", "--format", "yaml"], 2, ["--format must be"]),
    ("gate-bad-threshold", {}, ["gate", "1", "--baseline", "1", "--store", "STORE", "--threshold", "abc"], 2,
     ["--threshold"]),
    ("gate-bad-config", {"g.yaml": "thresold: 5%\n"}, ["gate", "1", "--baseline", "1", "--store", "STORE", "--config",
                                                       "DIR/g.yaml"], 2, ["thresold: unknown field", "g.yaml"]),
    ("gate-config-bomb", {"g.yaml": "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [{', '.join(['*' + p] * 10)}]\n" for p, c in zip("abcdefgh", "bcdefghi"))},
     ["gate", "1", "--baseline", "1", "--store", "STORE", "--config", "DIR/g.yaml"], 2, ["YAML aliases", "g.yaml"]),
    ("tune-config-bomb", {"t.yaml": "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [{', '.join(['*' + p] * 10)}]\n" for p, c in zip("abcdefgh", "bcdefghi"))},
     ["tune", "DIR/t.yaml", "--local", "--store", "STORE"], 2, ["YAML aliases", "t.yaml"]),
    ("tune-budget-nan", {"c.yaml": cfg()}, ["tune", "CFG", "--local", "--budget", "nan"], 2,
     ["--budget must be a positive, finite time"]),
    ("tune-budget-inf", {"c.yaml": cfg()}, ["tune", "CFG", "--local", "--budget", "1e999s"], 2,
     ["--budget must be a positive, finite time"]),
    ("run-negative-timeout", {"c.yaml": cfg()}, ["run", "CFG", "--local", "--timeout", "-1"], 2,
     ["--timeout must be a positive number"]),
    ("run-nan-timeout", {"c.yaml": cfg()}, ["run", "CFG", "--local", "--timeout", "nan"], 2, ["--timeout"]),
    ("run-zero-cpus", {"c.yaml": cfg()}, ["run", "CFG", "--num-cpus", "0"], 2, ["--num-cpus must be at least 1"]),
    ("report-latest-tilde-text", {}, ["report", "latest~x", "--store", "STORE"], 2, ["`latest~N`"]),
    ("report-latest-garbage", {}, ["report", "latestish", "--store", "STORE"], 2, ["`latest~N`"]),
    ("runs-negative-limit", {}, ["runs", "--limit", "-5", "--store", "STORE"], 2, ["--limit must be at least 1"]),
    ("dashboard-unwritable", {}, ["dashboard", "--out", "/proc/farm-test-site", "--store", "STORE"], 2,
     ["cannot write the dashboard to /proc/farm-test-site"]),
    ("workloads-not-python", {"notes.txt": "hello"}, ["workloads", "DIR/notes.txt"], 2, ["is not a Python file"]),
    ("compile-no-target", {}, ["compile"], 2, ["farm compile vector_add", "FILE::NAME"]),
    ("compile-bad-stage", {}, ["compile", f"{FAKES}::fake_vec", "--emit", "sass"], 2, ["--emit must be one of"]),
    ("compile-bad-arg", {}, ["compile", f"{FAKES}::fake_vec", "--arg", "N4096"], 2, ["--arg 'N4096' should look like"]),
    ("compile-syntax-error", BAD_KERNELS, ["compile", "DIR/syntax.py::f"], 2, ["syntax.py:3:", "SyntaxError"]),
    ("workloads-missing-file", {}, ["workloads", "DIR/none.py"], 2, ["no such kernel file", "none.py"]),
    ("workloads-name-error", BAD_KERNELS, ["workloads", "DIR/nameerr.py"], 2, ["nameerr.py:2: NameError"]),
]


@pytest.fixture(scope="module")
def base_store(tmp_path_factory):
    """A store holding one finished run (what every case must leave untouched)."""
    from farm.jobs import VALIDATED, Job, Result
    from farm.store import Store
    path = tmp_path_factory.mktemp("base") / "farm.db"
    st = Store(path)
    rid = st.create_run(name="kept", label="main", config_text="x", config_path="c.yaml", options={},
                        target="interpreter", gpus=[], compiler_version="c", farm_version="f")
    job = Job(key="a" * 64, idx=0, workload="w", name="w", params={"N": 1, "dtype": "float32"}, meta={})
    st.add_jobs(rid, [job], {})
    st.add_result(rid, Result(key=job.key, status=VALIDATED))
    st.finish_run(rid, "done")
    st.close()
    return path


def _snapshot(folder):
    """Every file under the store's folder with its bytes' hash, plus the database's logical content."""
    files = {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
             for p in sorted(folder.rglob("*")) if p.is_file()}
    return files


def test_there_are_at_least_60_cases():
    assert len(CASES) >= 60 and len({c[0] for c in CASES}) == len(CASES)


@pytest.mark.parametrize("name,files,args,code,expect", CASES, ids=[c[0] for c in CASES])
def test_bad_input(name, files, args, code, expect, tmp_path, base_store):
    for rel, content in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(content) if isinstance(content, bytes) else p.write_text(content)
    store_dir = tmp_path / "store"
    if "store/farm.db" not in files and not (store_dir / "farm.db").exists() and not store_dir.is_file():
        if not any(k.startswith("store/") for k in files):
            store_dir.mkdir(exist_ok=True)
            shutil.copy(base_store, store_dir / "farm.db")
    before = _snapshot(tmp_path)
    dump = _dump(store_dir / "farm.db")
    sub = {"CFG": str(tmp_path / "c.yaml"), "STORE": str(store_dir / "farm.db")}
    argv = [sub.get(a, a.replace("DIR", str(tmp_path))) for a in args]
    r = runner.invoke(app, argv)
    out = r.output
    assert r.exit_code == code, out
    assert "Traceback" not in out and not (r.exception and not isinstance(r.exception, SystemExit)), out
    for piece in expect:
        assert piece in out, out
    if "config error" in out:
        assert f"config error in {tmp_path}{pathlib.os.sep}" in out, out  # the config's file is named
    assert _snapshot(tmp_path) == before, "the store (or anything beside it) was written"
    assert _dump(store_dir / "farm.db") == dump


def _dump(path):
    """The database's content as SQL, read from a copy (reading in place would add -wal/-shm files beside it)."""
    import tempfile
    if not path.is_file():
        return None
    with open(path, "rb") as f:
        if f.read(16) != b"SQLite format 3\x00":
            return None
    with tempfile.TemporaryDirectory() as d:
        for suffix in ("", "-wal"):
            if pathlib.Path(f"{path}{suffix}").exists():
                shutil.copy(f"{path}{suffix}", f"{d}/farm.db{suffix}")
        try:
            db = sqlite3.connect(f"{d}/farm.db")
            try:
                return "\n".join(db.iterdump())
            finally:
                db.close()
        except sqlite3.DatabaseError:
            return None
