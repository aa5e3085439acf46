"""Cross-entropy over a vocabulary: one pass (row in one block), looped online logsumexp for a 32000-word
vocabulary, and the backward kernel (softmax minus one-hot, scaled by the upstream gradient)."""
import numpy as np
import triton
import triton.language as tl

from workloads.corpus._case import Case, randn


@triton.jit
def ce_fwd_kernel(logits_ptr, targets_ptr, loss_ptr, stride, V, BLOCK_V: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_V)
    x = tl.load(logits_ptr + row * stride + cols, mask=cols < V, other=float("-inf")).to(tl.float32)
    t = tl.load(targets_ptr + row)
    m = tl.max(x, 0)
    lse = m + tl.log(tl.sum(tl.exp(x - m), 0))
    xt = tl.load(logits_ptr + row * stride + t).to(tl.float32)
    tl.store(loss_ptr + row, lse - xt)


@triton.jit
def ce_fwd_looped_kernel(logits_ptr, targets_ptr, loss_ptr, lse_ptr, stride, V, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    base = logits_ptr + row * stride
    m = float("-inf")
    d = 0.0
    for off in range(0, V, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(base + cols, mask=cols < V, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, 0))
        d = d * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), 0)
        m = m_new
    lse = m + tl.log(d)
    t = tl.load(targets_ptr + row)
    tl.store(lse_ptr + row, lse)
    tl.store(loss_ptr + row, lse - tl.load(base + t).to(tl.float32))


@triton.jit
def ce_bwd_kernel(dlogits_ptr, logits_ptr, targets_ptr, lse_ptr, dloss_ptr, stride, V, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    t = tl.load(targets_ptr + row)
    lse = tl.load(lse_ptr + row)
    g = tl.load(dloss_ptr + row)
    for off in range(0, V, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        mask = cols < V
        x = tl.load(logits_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
        p = tl.exp(x - lse)
        p = tl.where(cols == t, p - 1.0, p)
        tl.store(dlogits_ptr + row * stride + cols, (p * g).to(tl.float16), mask=mask)


def inputs(dt):
    def make(p, rng):
        M, V = p["M"], p["V"]
        return {"logits": randn(rng, (M, V), dt, 3.0), "targets": rng.integers(0, V, M).astype(np.int64)}
    return make


def lse(x):
    m = x.max(axis=1)
    return m + np.log(np.exp(x - m[:, None]).sum(axis=1))


def loss_ref(p, x):
    lz = lse(x["logits"])
    t = x["targets"].astype(np.int64)
    return {"loss": lz - x["logits"][np.arange(p["M"]), t], "lse": lz}


def bwd_inputs(p, rng):
    x = inputs("float16")(p, rng)
    from workloads.corpus._case import f64
    x["lse"] = lse(f64(x["logits"])).astype(np.float32)
    x["dloss"] = randn(rng, (p["M"],), "float32", 1.0, 0.5)
    return x


def bwd_ref(p, x):
    sm = np.exp(x["logits"] - x["lse"][:, None])
    sm[np.arange(p["M"]), x["targets"].astype(np.int64)] -= 1.0
    return {"dlogits": sm * x["dloss"][:, None]}


CASES = [
    Case("ce_fwd_onepass_f32", ce_fwd_kernel, inputs("float32"), lambda p: {"loss": ((p["M"],), "float32")},
         lambda p, x: {"loss": loss_ref(p, x)["loss"]},
         lambda p, a, m: ((p["M"],), [a["logits"], a["targets"], a["loss"], p["V"], p["V"]]),
         gpu={"M": 8192, "V": 8192}, ci={"M": 5, "V": 300}, meta={"BLOCK_V": 8192, "num_warps": 16},
         ci_meta={"BLOCK_V": 512, "num_warps": 4}, tol={"float32": (1e-4, 1e-5)},
         flops=lambda p: 4.0 * p["M"] * p["V"], bytes=lambda p: 4.0 * p["M"] * p["V"],
         idiom="row in one block, target logit gathered by a scalar index load"),
    Case("ce_fwd_looped_f16", ce_fwd_looped_kernel, inputs("float16"),
         lambda p: {"loss": ((p["M"],), "float32"), "lse": ((p["M"],), "float32")}, loss_ref,
         lambda p, a, m: ((p["M"],), [a["logits"], a["targets"], a["loss"], a["lse"], p["V"], p["V"]]),
         gpu={"M": 4096, "V": 32000}, ci={"M": 3, "V": 1000}, meta={"BLOCK": 4096, "num_warps": 8},
         ci_meta={"BLOCK": 256, "num_warps": 2}, tol={"float32": (1e-4, 1e-5)},
         flops=lambda p: 4.0 * p["M"] * p["V"], bytes=lambda p: 2.0 * p["M"] * p["V"],
         idiom="vocabulary 32000 in blocks: scalar online logsumexp carried by the loop"),
    Case("ce_bwd_f16", ce_bwd_kernel, bwd_inputs, lambda p: {"dlogits": ((p["M"], p["V"]), "float16")}, bwd_ref,
         lambda p, a, m: ((p["M"],), [a["dlogits"], a["logits"], a["targets"], a["lse"], a["dloss"], p["V"],
                                      p["V"]]),
         gpu={"M": 2048, "V": 32000}, ci={"M": 3, "V": 1000}, meta={"BLOCK": 4096, "num_warps": 8},
         ci_meta={"BLOCK": 256, "num_warps": 2}, tol={"float16": (1e-2, 1e-3)},
         flops=lambda p: 3.0 * p["M"] * p["V"], bytes=lambda p: 4.0 * p["M"] * p["V"],
         idiom="backward: softmax - one-hot via tl.where(cols == t), looped"),
]
