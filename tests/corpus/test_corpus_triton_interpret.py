"""A few corpus kernels under Triton's own interpreter (TRITON_INTERPRET=1, torch on the CPU): the corpus is
valid Triton as written and both compilers agree with the float64 reference. Skipped where Triton or torch is
absent (CI does not depend on them). Loop-free kernels only: Triton 3.6's interpreter fails every `for` loop with
NumPy >= 2.4 ("only 0-dimensional arrays can be converted to Python scalars"); with NumPy 2.3 the whole corpus
passes there except bf16 tl.dot, which that interpreter does not support (triton-lang/triton#11584)."""
import importlib.util
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SELECT = "saxpy_2p26p3_f32,softmax_onepass_f32,transpose32_f32,argmax_rows_f32,layernorm_fwd_f16,embedding_f16," \
         "histogram_i32,rmsnorm_fwd_bf16,cumsum_rows_f32,permute021_f32"


@pytest.mark.skipif(importlib.util.find_spec("triton") is None or importlib.util.find_spec("torch") is None,
                    reason="Triton and torch are not installed here")
def test_corpus_under_both_interpreters(tmp_path):
    r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "bench_corpus.py"), "--interpret",
                        "--select", SELECT, "--out", str(tmp_path)], capture_output=True, text=True, timeout=300,
                       cwd=ROOT)
    assert r.returncode == 0, r.stderr[-3000:]
    (path,) = tmp_path.glob("corpus-interpret-*.json")
    rows = json.loads(path.read_text())["rows"]
    assert len(rows) == len(SELECT.split(","))
    for row in rows:
        for side in ("tilefarm", "triton"):
            assert row[side].get("ok"), (row["name"], side, row[side])
