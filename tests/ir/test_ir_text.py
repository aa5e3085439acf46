"""The IR's text form read back (compiler/ir/parser.py) and the verifier (compiler/ir/verify.py)."""
from __future__ import annotations

import glob
import os

import numpy as np
import pytest

from compiler.ir.core import Op
from compiler.ir.parser import IRParseError, parse_function, parse_module
from compiler.ir.printer import print_function
from compiler.ir.verify import IRVerifyError, verify

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# layouts are printed for reading only: the files of assign_layouts and of every pass after it carry them
_PASSES = [n for n, _ in __import__("compiler.passes", fromlist=["PIPELINE"]).PIPELINE]
_WITH_LAYOUTS = tuple(f".{n}.tile" for n in _PASSES[_PASSES.index("assign_layouts"):])
GOLDEN = sorted(p for p in glob.glob(os.path.join(ROOT, "tests", "frontend", "golden", "*.tile"))
                if not p.endswith(_WITH_LAYOUTS))


@pytest.mark.parametrize("path", GOLDEN, ids=os.path.basename)
def test_golden_ir_round_trips(path):
    """Every golden IR file (the frontend's and each target-independent pass's output) parses back to a function
    that prints as the same text and verifies."""
    with open(path) as f:
        text = f.read()
    fn = parse_function(text)
    verify(fn)
    assert print_function(fn) == text


@pytest.mark.parametrize("upto", ["dce", "pipeline_loads", "assign_layouts"])
@pytest.mark.parametrize("kernel", ["matmul", "attention"])
def test_pipeline_ir_round_trips(kernel, upto):
    """The matmul and attention kernels after each pass (copy rings included) print, parse and print the same."""
    from compiler.options import Options
    from compiler.passes import run_pipeline

    if kernel == "matmul":
        from workloads.matmul import kernel as MK

        a = np.zeros((256, 256), np.float16)
        mod = MK.matmul_kernel.lower(a, a, a, np.zeros(1, np.float32), 256, 256, 256, 256, 1, 256, 1, 256, 1,
                                     BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, EPILOGUE="none",
                                     PRECISION="ieee")
    else:
        from workloads.attention import kernel as A

        q = np.zeros((4096, 64), np.float16)
        mod = A.attention_fwd_kernel.lower(q, q, q, q, 0.125, 1024, 1024 * 64, 64, HEAD_DIM=64, BLOCK_M=128,
                                           BLOCK_N=64)
    mod = run_pipeline(mod, Options(num_warps=4, num_stages=3, arch="sm_90a"), upto=upto)
    text = print_function(mod.function)
    again = parse_function(text)
    verify(again)
    assert print_function(again) == text


GOOD = """func @k(%X: ptr<f32> {divisibility=16}, %N: i32) {
  %0 = const {value=1.5} : <4xf32>
  %1 = arange {end=4, start=0} : <4xi32>
  %2 = splat %X {shape=[4]} : <4xptr<f32>>
  %3 = addptr %2, %1 : <4xptr<f32>>
  store %3, %0 {cache="", eviction="", has_mask=false}
  return
}
"""


def test_parse_builds_values_types_and_attrs():
    fn = parse_function(GOOD)
    assert fn.name == "k" and fn.arg_names == ["X", "N"] and fn.arg_attrs == {0: {"divisibility": 16}}
    c, ar, sp, ad, st, ret = fn.body.ops
    assert c.attrs == {"value": 1.5} and str(c.result.type) == "<4xf32>"
    assert sp.attrs == {"shape": (4,)} and sp.operands == [fn.args[0]] and ad.operands == [sp.result, ar.result]
    assert st.operands == [ad.result, c.result] and not st.results and ret.kind == "return"
    assert all(op.block is fn.body for op in fn.body.ops)


@pytest.mark.parametrize("text,line,words", [
    (GOOD.replace("%3, %0", "%3, %9"), 6, "value %9 is not defined here"),
    (GOOD.replace("<4xptr<f32>>\n  %3", "<4xptr<f33>>\n  %3"), 4, "unknown element type 'f33'"),
    (GOOD.replace("%1 = arange", "%0 = arange"), 3, "defined twice"),
    (GOOD.replace("{value=1.5}", "{_layouts=1}"), 2, "belong to passes"),
    (GOOD.replace(" : <4xi32>\n", "\n"), 3, "1 results but 0 result types"),
    (GOOD.rstrip().rsplit("\n", 1)[0], 7, "missing '}'"),
    (GOOD.replace("{value=1.5}", "{value=1.5 :"), 2, "expected ','"),
])
def test_parse_errors_name_the_line(text, line, words):
    with pytest.raises(IRParseError) as e:
        parse_function(text)
    assert f"line {line}" in str(e.value) and words in str(e.value)


def _loop_fn():
    return parse_function("""func @k(%X: ptr<f32>, %N: i32) {
  %0 = const {value=0} : i32
  %1 = const {value=1} : i32
  %2 = const {value=0.0} : f32
  %3 = for %0, %N, %1, %2 : f32 {
  ^bb0(%4: i32, %5: f32):
    %6 = cast %4 {to=f32} : f32
    %7 = add %5, %6 : f32
    yield %7
  }
  store %X, %3 {cache="", eviction="", has_mask=false}
  return
}
""")


def test_verifier_accepts_and_rejects():
    fn = _loop_fn()
    verify(fn)
    loop = fn.body.ops[3]
    body = loop.blocks[0]
    # a use before its definition: the add moved above the cast it reads
    body.ops[0], body.ops[1] = body.ops[1], body.ops[0]
    with pytest.raises(IRVerifyError, match=r"op #\d+ 'add': operand 1 \(the result of 'cast'\) is not defined"):
        verify(fn, "after pass swap")
    body.ops[0], body.ops[1] = body.ops[1], body.ops[0]
    # the loop yields a value of another type than its result
    y = body.ops[-1]
    y.operands = [body.args[0]]
    with pytest.raises(IRVerifyError, match="yielded values against results: value 0 is i32, expected f32"):
        verify(fn)
    y.operands = [body.ops[1].result]
    verify(fn)
    # a terminator in the middle, a missing return, an add of mismatched operands
    extra = Op("yield", [body.ops[1].result])
    extra.block = body
    body.ops.insert(1, extra)
    with pytest.raises(IRVerifyError, match="a terminator in the middle of a block"):
        verify(fn)
    body.ops.pop(1)
    # the kernel body without its return
    ret = fn.body.ops.pop()
    with pytest.raises(IRVerifyError, match="does not end with 'return'"):
        verify(fn)
    fn.body.ops.append(ret)
    body.ops[1].operands = [body.args[1], body.args[0]]
    with pytest.raises(IRVerifyError, match="operands f32, i32 for a result f32"):
        verify(fn)


def test_run_pipeline_names_the_pass_that_broke_the_ir(monkeypatch):
    """With verification on (the test suite turns it on), a pass that leaves invalid IR is named."""
    import compiler.passes as P
    from compiler.options import Options

    def breaks(module, options):
        body = module.function.body
        body.ops.append(body.ops.pop(0))  # the first op after `return`: its users now read it too early
        return module

    monkeypatch.setattr(P, "VERIFY", True)
    monkeypatch.setattr(P, "PIPELINE", [("canonicalize", P.PIPELINE[0][1]), ("breaks", breaks)])
    with pytest.raises(IRVerifyError, match="after pass breaks"):
        P.run_pipeline(parse_module(GOOD), Options())
    assert P.run_pipeline(parse_module(GOOD), Options(), upto="canonicalize").meta["passes_done"] == "canonicalize"
