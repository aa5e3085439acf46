#!/usr/bin/env python3
"""Run a Triton-style test suite (a folder of pytest files written for `import triton`) against this project's
compiler and say what share of it passes.

    python scripts/external_suite.py --suite .gpu-node/triton-tests --out /tmp/ext [--device cpu|cuda]
        [--files test_core.py,test_standard.py] [-k EXPR] [-m MARK] [--sample N] [--shards K] [--jobs J]
        [--timeout S] [--file-timeout S]

Each file (or each shard of one) runs in its own pytest process with scripts/extsuite/plugin.py loaded first, so
`import triton` is compiler.triton_compat there and `triton._internal_testing` is ours
(scripts/extsuite/internal_testing.py). `--device cpu` (the default without a GPU) sets TRITON_INTERPRET=1, so
the tests take their interpreter paths, and runs them on CPU torch tensors through this project's interpreter;
`-m interpreter` is then the default selection (the tests the suite itself marks as runnable there).
`--gpu-paths` (with `--device cpu`) lets the tests take their GPU paths while launches still run in our
interpreter; `--codegen` also compiles every launch to PTX and a cubin (ptxas) first, so what the code generator
cannot build fails as it would on the GPU; `--as-gpu 9.0` makes the tests see an H200 (capability, device
properties, is_cuda()) so they take its branches, the launches still running in our interpreter. `--device cuda`
runs on the GPU. Writes OUT/external-suite.json (every test's outcome, per-file counts, causes)
and OUT/external-suite.md (the table). Exit code 0 when the run completed, whatever the share.
"""
from __future__ import annotations

import argparse
import collections
import concurrent.futures
import json
import os
import re
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _has_gpu() -> bool:
    try:
        import torch

        return bool(torch.cuda.is_available())
    except Exception:  # noqa: BLE001
        return False


def _triton_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("triton") is not None


def _suite_declares_device(suite: str) -> bool:
    """Whether the suite's own conftest.py declares `--device` (then it is passed, and the plugin does not)."""
    path = os.path.join(suite, "conftest.py")
    if not os.path.exists(path):
        return False
    with open(path, encoding="utf-8", errors="replace") as f:
        return re.search(r"addoption\(\s*['\"]--device['\"]", f.read()) is not None


def _run_one(job, args, out, reference=False):
    """One pytest process over one file (one shard of it); returns (job, records, note, seconds). With
    `reference`, only collects it under the installed Triton (how many tests a file we cannot collect holds)."""
    fname, shard = job
    tag = fname.replace("/", "_").replace(".py", "") + (f".{shard}" if shard is not None else "")
    if reference:
        tag += ".reference"
    rec_path = os.path.join(out, "records", f"{tag}.jsonl")
    log_path = os.path.join(out, "logs", f"{tag}.log")
    if os.path.exists(rec_path):
        os.remove(rec_path)
    ini = os.path.join(out, "pytest.ini")
    cmd = [sys.executable, "-m", "pytest", os.path.join(args.suite, fname), "-p", "extsuite.plugin",
           "-p", "no:cacheprovider", "-c", ini, "--rootdir", args.suite, "-q", "-rN", "--no-header",
           "--timeout", str(args.timeout), "--timeout-method", "signal"]
    if reference:
        cmd.append("--collect-only")
    if args.mark:
        cmd += ["-m", args.mark]
    if args.k:
        cmd += ["-k", args.k]
    if args.device_option:
        cmd += ["--device", args.device]
    env = dict(os.environ)
    # scripts/extsuite/site: its sitecustomize makes `triton` ours in Python processes the tests start, too
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(ROOT, "scripts", "extsuite", "site"),
                                         os.path.join(ROOT, "scripts"), ROOT] +
                                        ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env.update(TILEFARM_SUITE_RECORD=rec_path, TILEFARM_SUITE_DEVICE=args.device,
               TILEFARM_SUITE_SAMPLE=str(args.sample or 0),
               TILEFARM_SUITE_DEVICE_OPTION="0" if args.device_option else "1")
    if reference:
        env.update(TILEFARM_SUITE_COMPAT="0", TILEFARM_SUITE_COLLECT_ONLY="1")
    if shard is not None:
        env["TILEFARM_SUITE_SHARD"] = f"{shard}/{args.shards}"
    if args.device == "cpu":
        env["TILEFARM_INTERPRET"] = "1"  # every launch in our interpreter, even one with no array argument
        if args.codegen:
            env["TILEFARM_SUITE_CODEGEN"] = "1"
        if args.as_gpu:
            env["TILEFARM_SUITE_AS_GPU"] = args.as_gpu
        if args.gpu_paths:
            env.pop("TRITON_INTERPRET", None)
        else:
            env["TRITON_INTERPRET"] = "1"
    else:
        env.pop("TRITON_INTERPRET", None)
        env.pop("TILEFARM_INTERPRET", None)
    t0 = time.monotonic()
    note = None
    with open(log_path, "w", encoding="utf-8") as log:
        p = subprocess.Popen(cmd, cwd=args.suite, env=env, stdout=log, stderr=subprocess.STDOUT,
                             start_new_session=True)
        try:
            rc = p.wait(timeout=args.file_timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            rc = None
            note = f"stopped after {args.file_timeout} s (--file-timeout): tests not reached are not counted"
    if rc not in (None, 0, 1, 5) and note is None:
        note = f"pytest exited with code {rc} (see logs/{tag}.log)"
    records = []
    if os.path.exists(rec_path):
        with open(rec_path, encoding="utf-8") as f:
            records = [json.loads(line) for line in f if line.strip()]
    return job, records, note, round(time.monotonic() - t0, 1)


_RANK = {"error": 5, "failed": 4, "xpass": 3, "passed": 2, "xfail": 1, "skipped": 0}


def _outcomes(records):
    """nodeid -> (outcome, type, message): the worst report of each test (a pass whose teardown failed is an
    error); collection errors keep their own ids."""
    res = {}
    for r in records:
        o = r["outcome"]
        cur = res.get(r["nodeid"])
        if cur is None or _RANK[o] > _RANK[cur[0]]:
            res[r["nodeid"]] = (o, r.get("type", ""), r.get("message", ""))
    return res


def cause(etype: str, message: str) -> str:
    """A failure's group: its exception type and its message with locations, numbers and values blurred."""
    m = message.strip()
    m = re.sub(r"^(\S+\.py|<[^>]+>):\d+(:\d+)?:\s*", "", m)     # the kernel's file:line:col
    m = re.sub(r"(/[\w.+-]+)+\.py", "FILE", m)
    m = re.sub(r"0x[0-9a-fA-F]+", "0x?", m)
    m = re.sub(r"(?<![\w.])[-+]?\d+(\.\d+)?(e[-+]?\d+)?", "N", m)
    m = re.sub(r"\s+", " ", m)
    if etype in ("AssertionError", "Failed") and ("not close" in m or "Mismatched elements" in m
                                                   or "Not equal to tolerance" in m or "Arrays are not" in m):
        m = "values differ from the reference"
    return f"{etype}: {m[:140]}"


def summarize(results: dict, notes: dict, elapsed: dict):
    files = {}
    causes = collections.Counter()
    examples = {}
    for fname, res in sorted(results.items()):
        c = collections.Counter(o for o, _t, _m in res.values())
        run = c["passed"] + c["failed"] + c["error"] + c["xpass"]
        files[fname] = {"passed": c["passed"], "failed": c["failed"] + c["xpass"], "errors": c["error"],
                        "skipped": c["skipped"] + c["xfail"], "run": run,
                        "share": round(c["passed"] / run, 4) if run else None,
                        "seconds": elapsed.get(fname), "note": notes.get(fname)}
        for nodeid, (o, t, m) in res.items():
            if o in ("failed", "error", "xpass"):
                k = cause(t, m)
                causes[k] += 1
                examples.setdefault(k, nodeid)
    tot = {k: sum(f[k] for f in files.values()) for k in ("passed", "failed", "errors", "skipped", "run")}
    tot["share"] = round(tot["passed"] / tot["run"], 4) if tot["run"] else None
    top = [{"cause": k, "tests": n, "example": examples[k]} for k, n in causes.most_common(40)]
    return files, tot, top


def render_md(meta, files, tot, top) -> str:
    lines = [f"# External suite: {meta['suite']}", "",
             f"device `{meta['device']}`, selection `{meta['selection']}`, {meta['when']}, {meta['seconds']} s", "",
             "| file | passed | failed | errors | skipped | share passing (of run) |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for fname, f in files.items():
        share = "-" if f["share"] is None else f"{100 * f['share']:.1f}%"
        note = f" ({f['note']})" if f.get("note") else ""
        lines.append(f"| {fname}{note} | {f['passed']} | {f['failed']} | {f['errors']} | {f['skipped']} | {share} |")
    share = "-" if tot["share"] is None else f"{100 * tot['share']:.1f}%"
    lines.append(f"| **all** | {tot['passed']} | {tot['failed']} | {tot['errors']} | {tot['skipped']} | "
                 f"**{share}** |")
    lines += ["", "## Top failure causes", "", "| tests | cause | example |", "| ---: | --- | --- |"]
    for t in top[:25]:
        c = t["cause"].replace("|", "\\|")
        lines.append(f"| {t['tests']} | {c} | `{t['example']}` |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", required=True, help="folder of Triton-style test files")
    ap.add_argument("--out", required=True, help="folder for external-suite.json/.md, per-file logs and records")
    ap.add_argument("--device", choices=["cpu", "cuda"], default=None, help="default: cuda with a GPU, else cpu")
    ap.add_argument("--files", default=None, help="comma list of test files (default: every test_*.py)")
    ap.add_argument("-k", default=None, help="pytest -k expression")
    ap.add_argument("-m", dest="mark", default=None,
                    help="pytest -m expression (default on cpu: 'interpreter'; 'all' for no selection)")
    ap.add_argument("--sample", type=int, default=0, help="at most N tests per file (a fixed hash-chosen subset)")
    ap.add_argument("--shards", type=int, default=1, help="split each file over K processes")
    ap.add_argument("--jobs", type=int, default=1, help="processes at once")
    ap.add_argument("--timeout", type=float, default=60, help="seconds per test (pytest-timeout)")
    ap.add_argument("--file-timeout", type=float, default=1800, help="seconds per process")
    ap.add_argument("--gpu-paths", action="store_true",
                    help="with --device cpu: the tests take their GPU paths (TRITON_INTERPRET unset, so the suite's "
                         "is_interpreter() is false) while every launch still runs in our interpreter: an estimate, "
                         "without a GPU, of what the GPU run meets (tests needing CUDA itself fail)")
    ap.add_argument("--as-gpu", metavar="CC", default=None,
                    help="with --gpu-paths: the tests see a GPU of compute capability CC (e.g. 9.0: torch.cuda's "
                         "capability and properties, is_cuda()), so they take that GPU's branches; tensors and "
                         "launches stay on the CPU")
    ap.add_argument("--codegen", action="store_true",
                    help="with --device cpu: each launch is also compiled to PTX and assembled by ptxas for the GPU "
                         "before the interpreter runs it (a kernel the code generator cannot build fails)")
    args = ap.parse_args(argv)
    args.suite = os.path.abspath(args.suite)
    out = os.path.abspath(args.out)
    if not os.path.isdir(args.suite):
        ap.error(f"--suite {args.suite}: not a folder")
    if args.device is None:
        args.device = "cuda" if _has_gpu() else "cpu"
    if args.as_gpu and not args.gpu_paths:
        ap.error("--as-gpu goes with --gpu-paths")
    if args.as_gpu and not re.fullmatch(r"\d+\.\d+", args.as_gpu):
        ap.error(f"--as-gpu takes a compute capability such as 9.0, got {args.as_gpu!r}")
    if args.codegen and args.device != "cpu":
        ap.error("--codegen goes with --device cpu (on a GPU every launch is compiled anyway)")
    if args.gpu_paths and args.device != "cpu":
        ap.error("--gpu-paths goes with --device cpu")
    if args.mark is None and args.device == "cpu" and not args.gpu_paths:
        args.mark = "interpreter"
    if args.mark == "all":
        args.mark = None
    args.device_option = _suite_declares_device(args.suite)
    if args.files:
        names = [f.strip() for f in args.files.split(",") if f.strip()]
        missing = [f for f in names if not os.path.isfile(os.path.join(args.suite, f))]
        if missing:
            ap.error(f"--files: not in {args.suite}: {', '.join(missing)}")
    else:
        names = sorted(f for f in os.listdir(args.suite) if f.startswith("test_") and f.endswith(".py"))
    for d in ("records", "logs"):
        os.makedirs(os.path.join(out, d), exist_ok=True)
    with open(os.path.join(out, "pytest.ini"), "w") as f:
        f.write("[pytest]\naddopts =\n")
    jobs = [(n, s if args.shards > 1 else None) for n in names for s in range(args.shards)]
    t0 = time.monotonic()
    records = collections.defaultdict(list)
    notes, elapsed = {}, collections.Counter()
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for (fname, _s), recs, note, secs in pool.map(lambda j: _run_one(j, args, out), jobs):
            records[fname] += recs
            elapsed[fname] += secs
            if note:
                notes[fname] = note
            print(f"{fname}{'' if _s is None else f' [{_s}/{args.shards}]'}: {len(recs)} reports, {secs} s"
                  + (f" -- {note}" if note else ""), file=sys.stderr, flush=True)
    # a file (shard) we could not collect: its tests, as the installed Triton collects them, count as errors
    uncollected = sorted({j for j in jobs if any(r["when"] == "collect" and r["outcome"] == "error"
                                                 and r["nodeid"] == j[0] for r in records.get(j[0], []))})
    if uncollected and _triton_installed():
        for (fname, s) in uncollected:
            _j, recs, note, _secs = _run_one((fname, s), args, out, reference=True)
            err = next(r for r in records[fname] if r["when"] == "collect" and r["nodeid"] == fname)
            ids = [r["nodeid"] for r in recs if r["outcome"] == "collected"]
            records[fname] += [dict(err, nodeid=i) for i in ids]
            if note is not None:  # Triton cannot collect it on this machine either (e.g. it needs a CUDA torch)
                records[fname] = []
                notes[fname] = "not collected here under Triton either: not counted"
            elif not ids:  # no test of it is selected under Triton either: it counts for nothing
                records[fname] = []
                notes[fname] = "no test selected (as Triton collects it)"
            elif ids:
                records[fname] = [r for r in records[fname] if r["nodeid"] != fname]
                notes[fname] = f"not collected: its {len(ids)} tests (as Triton collects them) count as errors"
    results = {f: _outcomes(records.get(f, [])) for f in names}
    files, tot, top = summarize(results, notes, elapsed)
    meta = {"suite": args.suite, "device": args.device + (" (GPU paths, our interpreter)" if args.gpu_paths else ""),
            "selection": " ".join(x for x in [f"-m {args.mark}" if args.mark else "",
                                              f"-k {args.k}" if args.k else "",
                                              f"--sample {args.sample}" if args.sample else ""] if x) or "all",
            "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "seconds": round(time.monotonic() - t0),
            "timeout_s": args.timeout}
    commit = os.path.join(args.suite, "COMMIT")
    if os.path.exists(commit):
        meta["suite_commit"] = open(commit).read().strip()
    doc = {"meta": meta, "total": tot, "files": files, "causes": top,
           "tests": {f: {n: list(v) for n, v in r.items()} for f, r in results.items()}}
    with open(os.path.join(out, "external-suite.json"), "w") as f:
        json.dump(doc, f, indent=1)
    md = render_md(meta, files, tot, top)
    with open(os.path.join(out, "external-suite.md"), "w") as f:
        f.write(md)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
