"""Launch-option parameters, do_not_specialize and the autotuner's warmup (#20 bugs, #22 item 2)."""
import numpy as np
import pytest

import compiler
import compiler.language as tl

from .kernels import TARGETS, poison, run


@compiler.jit
def uses_num_warps(X, N, num_warps: tl.constexpr, num_stages: tl.constexpr = 2, BLOCK: tl.constexpr = 64):
    offs = tl.arange(0, BLOCK)
    tl.store(X + offs, tl.zeros((BLOCK,), tl.int32) + num_warps * 10 + num_stages, mask=offs < N)


@pytest.mark.parametrize("target", TARGETS)
def test_parameter_named_like_a_launch_option(target):
    x = poison(64, np.int32)
    run(target, uses_num_warps, (1,), x, 64, num_warps=8)
    assert (x == 82).all()
    x = poison(64, np.int32)
    run(target, uses_num_warps, (1,), x, 64, num_warps=2, num_stages=4)
    assert (x == 24).all()


def test_launch_option_parameter_is_also_the_option():
    x = np.zeros(64, np.int32)
    k = uses_num_warps.warmup(x, 64, num_warps=8, grid=(1,), target="sm_90a")
    assert ".reqntid 256" in k.asm["ptx"]
    k = uses_num_warps.warmup(x, 64, num_warps=2, num_stages=1, grid=(1,), target="sm_90a")
    assert ".reqntid 64" in k.asm["ptx"]


def test_launch_option_parameter_missing_is_an_error():
    with pytest.raises(TypeError, match="missing argument 'num_warps'"):
        uses_num_warps[(1,)](np.zeros(64, np.int32), 64)


@compiler.jit(do_not_specialize=["n"])
def copy_n(X, Y, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(Y + offs, tl.load(X + offs) * n, mask=offs < 8)


@pytest.mark.parametrize("target", TARGETS)
def test_do_not_specialize_argument_equal_to_one(target):
    """It used to be dropped in the interpreter ('takes 3 arguments, got 2')."""
    rng = np.random.default_rng(8)
    x = rng.integers(-100, 100, 16).astype(np.int32)
    for n in (1, 3):
        y = poison(16, np.int32)
        run(target, copy_n, (1,), x, y, n, BLOCK=16)
        np.testing.assert_array_equal(y[:8], x[:8] * n)


def test_do_not_specialize_one_is_a_parameter():
    x = np.zeros(16, np.int32)
    k1 = copy_n.warmup(x, x, 1, BLOCK=16, grid=(1,), target="sm_90a")
    k3 = copy_n.warmup(x, x, 3, BLOCK=16, grid=(1,), target="sm_90a")
    assert k1.asm["ptx"] == k3.asm["ptx"]


def test_autotuner_warmup_is_the_method():
    @compiler.autotune(configs=[compiler.Config({"BLOCK": 16}), compiler.Config({"BLOCK": 32})], key=["n"],
                       warmup=7, rep=11)
    @compiler.jit
    def k(X, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(X + offs, offs, mask=offs < n)

    assert callable(k.warmup) and k.num_warmups == 7 and k.num_reps == 11
    out = k.warmup(np.zeros(64, np.int32), 64, grid=(1,), target="sm_90a")
    assert len(out) == 2 and all(".entry" in c.asm["ptx"] for c in out)


def test_autotuned_kernel_with_a_launch_option_parameter():
    """As in Triton, the config's num_warps is the launch option and the parameter's value."""
    @compiler.autotune(configs=[compiler.Config({"BLOCK": 64}, num_warps=2),
                                compiler.Config({"BLOCK": 64}, num_warps=8)], key=["N"])
    @compiler.jit
    def k(X, N, num_warps: tl.constexpr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(X + offs, tl.zeros((BLOCK,), tl.int32) + num_warps, mask=offs < N)

    x = poison(64, np.int32)
    k[(1,)](x, 64)
    assert (x == k.best_config.num_warps).all() and k.best_config.num_warps in (2, 8)
    x = poison(64, np.int32)
    k[(1,)](x, 64)  # the generated launcher's path (key cached)
    assert (x == k.best_config.num_warps).all()
    ck = k.warmup(x, 64, grid=(1,), target="sm_90a")
    assert sorted(c.asm["ptx"].count(".reqntid 256") for c in ck) == [0, 1]


def test_repr_names_the_compiled_kernel():
    """Triton's `jit(repr=...)`: the kernel's name (PTX entry, CompiledKernel.name) from the specialization."""
    def name(spec):
        consts = "_".join(k for k, v in spec.constants.items() if v == 1)
        return f"scale_{spec.signature['X']}_{spec.signature['n']}_{consts}"

    @compiler.jit(repr=name)
    def scale(X, n, one):
        tl.store(X, tl.load(X) * n * one)

    k = scale.warmup(np.zeros(4, np.float32), 2**40, 1, grid=(1,), target="sm_90")
    assert k.name == "scale__fp32_i64_one"
    assert ".entry scale__fp32_i64_one(" in k.asm["ptx"]
    assert scale.warmup(np.zeros(4, np.float32), 7, 1, grid=(1,), target="sm_90").name == "scale__fp32_i32_one"


@pytest.mark.parametrize("value,ok", [(2**64 - 1, True), (2**64, False), (-2**63, True), (-2**63 - 1, False)])
def test_integer_arguments_must_fit_64_bits(value, ok):
    @compiler.jit
    def k(V, X):
        tl.store(X, V)

    x = np.zeros(1, np.float64)
    if ok:
        k[(1,)](value, x)
    else:
        with pytest.raises(OverflowError, match="does not fit in 64 bits"):
            k[(1,)](value, x)


def test_warmup_takes_dtypes_for_pointers():
    """As in Triton: `kernel.warmup(torch.float32, tl.float16, ...)`, a dtype for each pointer parameter (an aligned
    array of that dtype); the same kernel as with arrays of those dtypes. A dtype for a constexpr stays a dtype."""
    @compiler.jit
    def copy(X, Y, DT: tl.constexpr, BLOCK: tl.constexpr):
        tl.store(Y + tl.arange(0, BLOCK), tl.load(X + tl.arange(0, BLOCK)).to(DT))

    a = copy.warmup(tl.float32, tl.float16, tl.float16, BLOCK=1024, grid=(1,), target="sm_90")
    b = copy.warmup(np.zeros(1024, np.float32), np.zeros(1024, np.float16), tl.float16, BLOCK=1024, grid=(1,),
                    target="sm_90")
    assert a.asm["tile"] == b.asm["tile"] and "v4" in a.asm["ptx"]
    torch = pytest.importorskip("torch")
    c = copy.warmup(torch.float32, torch.float16, tl.float16, BLOCK=1024, grid=(1,), target="sm_90")
    assert c.asm["tile"] == b.asm["tile"]
