import pytest
from typer.testing import CliRunner

from farm import config
from farm.cli.main import app


def test_shorthand_product_zip_points():
    cfg = config.parse_text("""
workloads:
  - workload: vector_add
    params: [{N: [1, 2], dtype: float32}, {points: [{N: 7, dtype: float16}]}]
    meta: {zip: {BLOCK: [64, 128], num_warps: [2, 4]}, product: {num_stages: [2, 3]}}
""")
    e = cfg.workloads[0]
    assert config.expand(e.params) == [{"N": 1, "dtype": "float32"}, {"N": 2, "dtype": "float32"},
                                       {"N": 7, "dtype": "float16"}]
    assert config.expand(e.meta) == [
        {"num_stages": 2, "BLOCK": 64, "num_warps": 2}, {"num_stages": 2, "BLOCK": 128, "num_warps": 4},
        {"num_stages": 3, "BLOCK": 64, "num_warps": 2}, {"num_stages": 3, "BLOCK": 128, "num_warps": 4}]
    assert e.constraints == [] and cfg.timing.flush_l2 and cfg.cluster.address is None


def test_toml(tmp_path):
    p = tmp_path / "c.toml"
    p.write_text('name = "t"\n[[workloads]]\nworkload = "vector_add"\n[workloads.params]\nN = [16]\n'
                 'dtype = "float32"\n[timing]\nrep_ms = 10\n')
    cfg, text = config.load(p)
    assert cfg.timing.rep_ms == 10 and config.expand(cfg.workloads[0].params) == [{"N": 16, "dtype": "float32"}]


def test_relative_paths_resolve_against_config_dir(tmp_path):
    (tmp_path / "sub").mkdir()
    p = tmp_path / "sub" / "c.yaml"
    p.write_text("workloads: [{workload: 'k.py::mine'}]\n")
    cfg, _ = config.load(p)
    assert cfg.workloads[0].workload == str(tmp_path / "sub" / "k.py") + "::mine"


BAD = [
    ("workloads: []\n", "workloads: List should have at least 1 item"),
    ("workloads: [{workload: a, paramz: 1}]\n", "workloads.0.paramz: unknown field"),
    ("workloads: [{workload: a}]\ntiming: {warmup_ms: -1}\n", "timing.warmup_ms: Input should be greater than 0"),
    ("workloads: [{workload: a, meta: {zip: {A: [1, 2], B: [1]}}}]\n", "workloads.0.meta.0.zip: zipped lists"),
    ("workloads: [{workload: a, constraints: ['A > 1', 'open(1)']}]\n", "workloads.0.constraints.1: call of open"),
    ("workloads: [{workload: a, params: {N: [{x: 1}]}}]\n", "workloads.0.params.0.product.N.0: expected a number"),
    ("workloads: [{workload: a}]\ncluster: {executor: slurm}\n", "cluster.executor: Input should be 'ray' or 'local'"),
    ("workloads: [{workload: a\n", "(file): not valid YAML"),
    ("- 1\n", "(top level): expected a mapping"),
]


@pytest.mark.parametrize("text,line", BAD)
def test_errors_name_the_field(text, line):
    with pytest.raises(config.ConfigError) as e:
        config.parse_text(text)
    assert any(ln.startswith(line) for ln in e.value.lines), e.value.lines


@pytest.mark.parametrize("text,line", BAD[:4])
def test_cli_config_error_exit_2_no_traceback(tmp_path, text, line):
    p = tmp_path / "bad.yaml"
    p.write_text(text)
    r = CliRunner().invoke(app, ["run", str(p), "--local", "--store", str(tmp_path / "x.db")])
    assert r.exit_code == 2, r.output
    assert line in r.output and "Traceback" not in r.output
    assert "config error in" in r.output


def test_missing_config_file_exit_2(tmp_path):
    r = CliRunner().invoke(app, ["run", str(tmp_path / "nope.yaml"), "--local"])
    assert r.exit_code == 2 and "no such config file" in r.output


def test_yaml_merge_keys_still_work_and_duplicates_are_refused():
    assert config.read_data("b: &b {warmup_ms: 5, rep_ms: 9}\ntiming: {<<: *b, rep_ms: 3}\n")["timing"] == \
        {"warmup_ms": 5, "rep_ms": 3}
    with pytest.raises(config.ConfigError, match="duplicate key 'seed'"):
        config.read_data("seed: 1\nseed: 2\n")
