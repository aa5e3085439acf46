#!/usr/bin/env python3
"""SHA-1 of every corpus kernel's PTX at its GPU specialization (sm_90a, caches off), the checkout's absolute path
replaced by a placeholder, so two checkouts or two sets of A/B switches compare kernel by kernel (no GPU needed).

    python3 scripts/corpus_ptx_sha1.py OUT.json                      # this checkout, TILEFARM_AB as set
    TILEFARM_AB=SWITCH python3 scripts/corpus_ptx_sha1.py B.json --against A.json
        also lists the kernels whose PTX differs from A.json's (the ones an A/B of SWITCH times)
    ... --select NAME_OR_GLOB ...                                   only those kernels

Each kernel is compiled as scripts/_bench_host_corpus.py does for the host benchmark (`case_files`, `cases_of`,
`prepare`, `compile_ours`).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for p in (ROOT, os.path.join(ROOT, "scripts")):
    if p not in sys.path:
        sys.path.insert(0, p)


def hashes(select=()) -> dict:
    import fnmatch

    os.environ["TILEFARM_CACHE"] = "0"
    import _bench_host_corpus as B

    out, loaded = {}, {}
    for name, path in sorted(B.case_files().items()):
        if select and not any(fnmatch.fnmatch(name, g) for g in select):
            continue
        if path not in loaded:
            loaded[path] = B.cases_of(path, "ours")
        case = loaded[path][name]
        args, kw = B.prepare(case)
        _, ptx, _ = B.compile_ours(case, args, kw)
        ptx = ptx if isinstance(ptx, str) else ptx.decode()
        out[name] = hashlib.sha1(ptx.replace(ROOT, "<ROOT>").encode()).hexdigest()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--against", help="an earlier OUT.json: list the kernels whose PTX differs from it")
    ap.add_argument("--select", nargs="*", default=(), help="only these kernels (names or globs)")
    args = ap.parse_args()
    got = hashes(args.select)
    with open(args.out, "w") as f:
        json.dump(got, f, indent=0, sort_keys=True)
    print(f"{len(got)} kernels, TILEFARM_AB={os.environ.get('TILEFARM_AB', '')!r}")
    if args.against:
        with open(args.against) as f:
            base = json.load(f)
        diff = sorted(n for n in set(got) | (set() if args.select else set(base)) if got.get(n) != base.get(n))
        print(f"PTX differs on {len(diff)}: {', '.join(diff) or '-'}")


if __name__ == "__main__":
    main()
