import pytest

from farm import exprs


@pytest.mark.parametrize("text,env,want", [
    ("BLOCK_N >= N", {"BLOCK_N": 128, "N": 64}, True),
    ("M % BLOCK_M == 0 and num_warps <= 8", {"M": 256, "BLOCK_M": 64, "num_warps": 16}, False),
    ("dtype in ('float16', 'bfloat16')", {"dtype": "float16"}, True),
    ("is_pow2(BLOCK) and cdiv(N, BLOCK) <= 4", {"BLOCK": 256, "N": 1000}, True),
    ("BLOCK * itemsize(dtype) <= 4096", {"BLOCK": 1024, "dtype": "float32"}, True),
    ("not (1 < x < 3)", {"x": 2}, False),
    ("a if a > b else b", {"a": 1, "b": 5}, 5),
])
def test_evaluates(text, env, want):
    assert exprs.evaluate(text, env) == want


@pytest.mark.parametrize("text", [
    "__import__('os').system('true')", "x.__class__", "open('/etc/passwd')", "(lambda: 1)()", "[i for i in x]",
    "x[0]", "eval('1')", "f'{x}'", "print(1)",
])
def test_refuses_code(text):
    with pytest.raises(exprs.ExprError):
        exprs.parse(text)


def test_unknown_name_and_huge_power():
    with pytest.raises(exprs.ExprError, match="unknown name 'BLOK'"):
        exprs.evaluate("BLOK > 1", {"BLOCK": 2})
    with pytest.raises(exprs.ExprError, match="too large"):
        exprs.evaluate("2 ** 100000", {})


def test_syntax_error_is_expr_error():
    with pytest.raises(exprs.ExprError, match="invalid syntax"):
        exprs.parse("N >=")


@pytest.mark.parametrize("text,msg", [
    ("2**2**2**2**2", "too large"),
    ("'a' * 10**10", "too long"),
    ("(1,) * 10**9", "too long"),
    ("1 << 10**9", "too large"),
    ("N*N*N*N*N*N*N*N*N*N*N*N*N*N*N*N*N*N*N*N", "product too large"),
    ("0.5 ** 10**9", "exponent"),
    ("-(" * 200 + "1" + ")" * 200, "nested too deeply"),
    ("-" * 5000 + "1", "too long"),
    ("1+" * 400 + "1", "nested too deeply"),
])
@pytest.mark.timeout(60)  # without the limits these never return (or exhaust memory)
def test_hostile_constraints_are_refused(text, msg):
    with pytest.raises(exprs.ExprError, match=msg):
        exprs.evaluate(text, {"N": 2**100})


def test_ordinary_big_arithmetic_still_works():
    assert exprs.evaluate("M * N * K * itemsize(dtype) <= 2**40", {"M": 8192, "N": 8192, "K": 8192, "dtype": "float16"})
    assert exprs.evaluate("2**1024 > 0", {}) and exprs.evaluate("(-1) ** 10**9", {}) == 1


def test_step_budget(monkeypatch):
    monkeypatch.setattr(exprs, "MAX_STEPS", 5)
    with pytest.raises(exprs.ExprError, match="took too long"):
        exprs.evaluate("1 + 2 + 3 + 4 + 5 + 6", {})
