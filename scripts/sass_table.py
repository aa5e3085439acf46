#!/usr/bin/env python3
"""Writes compiler/codegen/sass_sm90.json, the opcode table codegen/sass_bin.py reads sm_90 machine code with, from
cubins and nvdisasm's listing of them (CPU only; needs nvdisasm).

    python3 scripts/sass_table.py CUBIN_DIR [--out compiler/codegen/sass_sm90.json]

For each opcode (the low 12 bits of an instruction's first 64-bit word) it records the mnemonic nvdisasm prints and
which of the four register fields (d: bits 16-23, a: 24-31, b: 32-39 of the first word; c: bits 0-7 of the second)
hold a register in every instance seen: a field that sometimes holds an immediate or a constant's bits is left out.
Feed it the corpus's cubins (every kernel of workloads/corpus compiled for sm_90a), so the table covers what the code
generator emits; an opcode it lacks makes codegen/sass_bin.py count the instruction as a wait on every load."""
import argparse
import collections
import glob
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from compiler.codegen import sass as S  # noqa: E402
from compiler.codegen import sass_bin as SB  # noqa: E402
from compiler.codegen.ptx import find_nvdisasm  # noqa: E402

_ADDR = re.compile(r"/\*[0-9a-f]{4,}\*/")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cubins", help="a folder of .cubin files for sm_90 / sm_90a")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(SB.__file__), "sass_sm90.json"))
    a = ap.parse_args()
    tool = find_nvdisasm()
    if tool is None:
        sys.exit("needs nvdisasm (pip install nvidia-cuda-nvdisasm, the `sass` extra)")
    hits, count, names = collections.defaultdict(collections.Counter), collections.Counter(), {}
    for f in sorted(glob.glob(os.path.join(a.cubins, "*.cubin"))):
        blob = open(f, "rb").read()
        text = subprocess.run([tool, "-c", f], capture_output=True, text=True).stdout.splitlines()
        lines = [_ADDR.sub("", ln).strip() for ln in text if _ADDR.search(ln) and ln.strip().endswith(";")]
        words = [w for code in SB.text_sections(blob).values() for w in SB.instructions(code)]
        if len(words) != len(lines):
            print(f"skipped {f}: {len(words)} instructions, {len(lines)} lines", file=sys.stderr)
            continue
        for (lo, hi), ins in zip(words, lines):
            op = lo & 0xFFF
            name, reads, writes = S.reads_writes(ins)
            regs = reads | writes
            names.setdefault(op, collections.Counter())[name.split(".")[0]] += 1
            count[op] += 1
            for field, val in SB.fields(lo, hi).items():
                if val == SB.RZ or val in regs:
                    hits[op][field] += 1
    table = {f"{op:#05x}": [names[op].most_common(1)[0][0], "".join(f for f in "dabc" if hits[op][f] == count[op])]
             for op in sorted(count)}
    with open(a.out, "w") as fh:
        json.dump(table, fh, indent=0, sort_keys=True)
        fh.write("\n")
    print(f"wrote {len(table)} opcodes to {a.out}")


if __name__ == "__main__":
    main()
