"""Helpers shared by the farm tests (a module of its own: every test folder has a `conftest`, so importing
"conftest" by name would pick whichever folder's was loaded first)."""
import os
import pathlib
import sys
import sysconfig

REPO = pathlib.Path(__file__).resolve().parents[2]
FAKES = pathlib.Path(__file__).resolve().parent / "fake_workloads.py"
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def child_pythonpath() -> str:
    """PYTHONPATH for a child Python that must import what this process imports: the checkout first, then
    every folder on this process's sys.path that the same interpreter would not find by itself (packages
    unpacked somewhere and put on the path in this process only, as on the GPU node), then PYTHONPATH as it was.
    The interpreter's own folders (standard library, site-packages) stay out: the child finds them anyway, in
    their usual order."""
    own = {os.path.realpath(p) for p in sysconfig.get_paths().values() if p}
    own |= {os.path.realpath(p) for p in sys.path if p and p.startswith((sys.base_prefix, sys.prefix))
            and ("site-packages" in p or "dist-packages" in p or p.rstrip(os.sep).endswith(".zip")
                 or os.path.isfile(os.path.join(p, "os.py")) or "lib-dynload" in p)}
    out = [str(REPO)]
    for p in [*sys.path, *os.environ.get("PYTHONPATH", "").split(os.pathsep)]:
        if p and os.path.isdir(p) and os.path.realpath(p) not in own and p not in out:
            out.append(p)
    return os.pathsep.join(out)


def child_env(**extra) -> dict:
    """os.environ for a child `farm` (or probe) process: PYTHONPATH from child_pythonpath(), plus `extra`."""
    return {**os.environ, "PYTHONPATH": child_pythonpath(), **extra}


def fake_config(tmp_path, modes=("ok",), ns=(100,), dtypes=("float32",), extra="", name="fakes", **meta):
    """Write a config sweeping the fake workload over modes x N x dtype; returns its path."""
    meta_lines = "".join(f"      {k}: {v!r}\n" for k, v in meta.items())
    text = f"""name: {name}
store: {tmp_path / 'farm.db'}
timing: {{timeout_s: 5}}
cluster: {{num_cpus: 2}}
{extra}
workloads:
  - workload: {FAKES}::fake_vec
    params:
      N: {list(ns)}
      dtype: {list(dtypes)}
    meta:
      mode: {list(modes)}
{meta_lines}"""
    p = tmp_path / f"{name}.yaml"
    p.write_text(text)
    return p


def ray_node_args(root: pathlib.Path, name: str, **kw) -> dict:
    """Arguments of `ray.cluster_utils.Cluster.add_node` for a node of a cluster on one machine: its own Ray and
    kernel-cache folders under root/name, and no GPU of this machine seen by its workers."""
    (root / name).mkdir()
    return dict(temp_dir=str(root / name / "ray"), env_vars={
        "TILEFARM_CACHE_DIR": str(root / name / "cache"), "FARM_FORCE_NO_GPU": "1"}, **kw)
