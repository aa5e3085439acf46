"""Helpers shared by the farm tests (a module of its own: every test folder has a `conftest`, so importing
"conftest" by name would pick whichever folder's was loaded first)."""
import contextlib
import os
import pathlib
import shutil
import sys
import sysconfig
import tempfile

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


def ray_node_args(root: pathlib.Path, name: str, triton: bool = True, **kw) -> dict:
    """Arguments of `ray.cluster_utils.Cluster.add_node` for a node of a cluster on one machine: its own Ray and
    kernel-cache folders under root/name, no GPU of this machine seen by its workers, and (triton=False) no
    Triton either (the farm's test hook TILEFARM_NO_TRITON)."""
    (root / name).mkdir()
    env = {"TILEFARM_CACHE_DIR": str(root / name / "cache"), "FARM_FORCE_NO_GPU": "1"}
    if not triton:
        env["TILEFARM_NO_TRITON"] = "1"
    return dict(temp_dir=str(root / name / "ray"), env_vars=env, **kw)


@contextlib.contextmanager
def ray_cluster(prefix: str, head: dict, nodes: dict, system: dict | None = None):
    """A Ray cluster on this machine (ray.cluster_utils), the driver connected to it: `head` and each of `nodes`
    (name -> arguments) are ray_node_args' keywords. GPU kinds are only the ones declared (Ray would add the real
    GPU's kind to every node declaring a GPU); health checks fast, plus `system`. The session's local Ray
    (conftest.ray_session) is stopped first and started again after. Yields {"cluster", "root", "nodes"}."""
    import logging

    import pytest
    import ray
    from ray._private.accelerators.nvidia_gpu import NvidiaGPUAcceleratorManager
    from ray.cluster_utils import Cluster

    from farm.executor.ray import _init_local
    patch = pytest.MonkeyPatch()
    patch.setattr(NvidiaGPUAcceleratorManager, "get_current_node_accelerator_type", staticmethod(lambda: None))
    was_up = ray.is_initialized()
    if was_up:
        ray.shutdown()
    root = pathlib.Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))  # short: Ray's socket paths
    config = {"health_check_initial_delay_ms": 0, "health_check_period_ms": 500,
              "health_check_failure_threshold": 3, **(system or {})}
    # Ray's cluster helper records the head's address under its default folder whatever temp_dir the nodes
    # use; on a fresh machine that folder does not exist yet
    os.makedirs(os.path.join(tempfile.gettempdir(), "ray"), exist_ok=True)
    cluster = Cluster(initialize_head=True, head_node_args=ray_node_args(root, "head", _system_config=config, **head))
    added = {"head": cluster.head_node}
    added.update({name: cluster.add_node(**ray_node_args(root, name, **kw)) for name, kw in nodes.items()})
    ray.init(address=cluster.address, log_to_driver=False)
    try:
        yield {"cluster": cluster, "root": root, "nodes": added}
    finally:
        ray.shutdown()
        cluster.shutdown()
        shutil.rmtree(root, ignore_errors=True)
        patch.undo()
        if was_up:
            _init_local(num_cpus=2, num_gpus=0, include_dashboard=False, log_to_driver=False,
                        logging_level=logging.ERROR)
