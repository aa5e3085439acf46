"""The wgmma_loops pass (compiler/passes/wgmma_loops.py) on real kernels: the IR code generation receives says
which wgmma dots stay in flight across K-loop iterations and which loops wait for them."""
from __future__ import annotations


def _modules(P, key, monkeypatch):
    """The modules code generation receives while case `key` compiles."""
    from compiler.codegen import llvm

    got, orig = [], llvm.emit_llvm

    def record(module, options):
        got.append(module)
        return orig(module, options)
    monkeypatch.setattr(llvm, "emit_llvm", record)
    P.cases()[key]()
    assert got, f"{key} was not compiled (a cache?)"
    return got


def _loops_and_dots(module):
    loops = [op for op in module.function.walk() if op.kind == "for" and any(o.kind == "dot" for o in op.blocks[0].ops)]
    assert len(loops) == 1
    return loops[0], [o for o in loops[0].blocks[0].ops if o.kind == "dot"]


def test_matmul_k_loop_keeps_its_wgmma_in_flight(snapshot, monkeypatch):
    (m,) = _modules(snapshot, "matmul/float16/128x128x64-g8-w8-s3/sm_90a", monkeypatch)
    loop, (d,) = _loops_and_dots(m)
    assert d.attrs.get("_acc_carried") and "_defer_to" not in d.attrs
    assert loop.attrs.get("_wgmma_in_flight")


def test_attention_defers_pv_to_the_next_iterations_first_dot(snapshot, monkeypatch):
    (m,) = _modules(snapshot, "attention/D64/128x64-w4-s3/sm_90a", monkeypatch)
    loop, (qk, pv) = _loops_and_dots(m)
    assert pv.attrs.get("_defer_to") == loop.blocks[0].ops.index(qk)
    assert "_defer_to" not in qk.attrs and not qk.attrs.get("_acc_carried")
    assert loop.attrs.get("_wgmma_in_flight")


def test_mma_sync_leaves_nothing_in_flight(snapshot, monkeypatch):
    (m,) = _modules(snapshot, "matmul/float16/128x128x64-g8-w8-s3/sm_80", monkeypatch)
    loop, (d,) = _loops_and_dots(m)
    assert d.attrs.get("_acc_carried")  # structurally carried, but not a wgmma
    assert not loop.attrs.get("_wgmma_in_flight") and "_defer_to" not in d.attrs
