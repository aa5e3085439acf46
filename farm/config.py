"""What `farm run` reads: the pydantic models of a sweep config (YAML or TOML) and their loader.

```yaml
name: quick                       # shown in `farm runs`
store: .tilefarm/farm.db          # SQLite file, relative to this config's folder (left out: FARM_STORE, else
                                  # ./.tilefarm/farm.db, the default of every other command), or a fleet's
                                  # PostgreSQL: postgresql://user@host:5432/farm (password: PGPASSWORD/.pgpass)
seed: 0                           # inputs are seeded from this and the job's key
timing: {warmup_ms: 25, rep_ms: 100, flush_l2: true, cuda_graphs: false, timeout_s: 120}
cluster: {address: null, num_cpus: 2}   # null: a local Ray started for this run; "auto" or "HOST:6379": join
compilers: [tilefarm]             # tilefarm (this project's) and/or triton: one job per compiler per point
workloads:
  - workload: vector_add          # a registry name (`farm workloads`), or my_kernels.py, or my_kernels.py::NAME
    params:                       # shape parameters and dtype; a mapping is a product of its lists
      N: [4096, 65536]
      dtype: [float32, float16]
    meta:                         # meta-parameters: BLOCK sizes, num_warps, num_stages
      zip: {BLOCK: [256, 1024], num_warps: [2, 4]}    # zip: lists walked together
    constraints: ["BLOCK <= N"]   # points where any constraint is false are skipped
    sizes: default                # without params: the workload's default sweep, or `gpu` (its gpu sweep and meta)
```
A sweep (`params` or `meta`) is a mapping (product of its lists; a scalar is a one-element list), or
`{product: {...}, zip: {...}, points: [{...}, ...]}` (the product of all three), or a list of those (concatenated).
Leaving `params` out uses the workload's default sweep; leaving `meta` out uses its default meta.

Every relative path in a config (store, workload files) is resolved against the config's folder, never the
current directory. A workload path that leaves that folder (`../elsewhere.py`) is refused unless the caller
allows it (`farm run --allow-outside`); an absolute path is taken as written.
"""
from __future__ import annotations

import math
import os
import pathlib
import hashlib
import itertools
import tomllib
from typing import Annotated, Any, Literal

import yaml
from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, field_validator, model_validator

from farm import FarmError, exprs
from farm.timing import AB, Timing



def _scalar(v):
    if isinstance(v, (bool, int, float, str)):
        return v
    raise ValueError(f"expected a number, string or boolean, got {type(v).__name__} {v!r}")


def _constraint(text: str) -> str:
    exprs.parse(text)  # ExprError is a ValueError: pydantic reports it with the list index
    return text


def _as_list(v):
    return [v] if isinstance(v, dict) else v


def _distinct(v):
    if len(set(v)) != len(v):
        raise ValueError(f"names a compiler twice: {v}")
    return v


Scalar = Annotated[Any, AfterValidator(_scalar)]
Constraint = Annotated[str, AfterValidator(_constraint)]
# `compilers:` of a run or a tune config: who compiles each kernel (farm.compilers), each named once
Compilers = Annotated[list[Literal["tilefarm", "triton"]], AfterValidator(_distinct)]


class ConfigError(FarmError):
    """A config that cannot be used; `.lines` holds one "field.path: problem" line per problem (exit code 2)."""

    def __init__(self, lines: list[str], source: str = ""):
        self.lines, self.source = lines, source
        super().__init__("\n".join(lines))


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


Model = _Model  # public: the base of every farm config model (farm.tune's too); an unknown field is an error


class Sweep(_Model):
    """One block of a sweep: product of `product`'s lists x rows of `zip` x `points`."""

    product: dict[str, list[Scalar]] = Field(default_factory=dict)
    zip: dict[str, list[Scalar]] = Field(default_factory=dict)
    points: list[dict[str, Scalar]] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data):
        # {N: [1, 2], dtype: float32} is shorthand for {product: {N: [1, 2], dtype: [float32]}}.
        if isinstance(data, dict) and not set(data) & {"product", "zip", "points"}:
            data = {"product": data}
        if isinstance(data, dict):
            data = dict(data)
            for key in ("product", "zip"):
                if isinstance(data.get(key), dict):
                    data[key] = {k: v if isinstance(v, list) else [v] for k, v in data[key].items()}
        return data

    @field_validator("product")
    @classmethod
    def _nonempty(cls, v):
        for k, vals in v.items():
            if not vals:
                raise ValueError(f"{k}: empty list (a product with an empty axis has no points)")
        return v

    @field_validator("zip")
    @classmethod
    def _same_length(cls, v):
        lengths = {k: len(vals) for k, vals in v.items()}
        if len(set(lengths.values())) > 1:
            raise ValueError(f"zipped lists must have the same length, got {lengths}")
        return v

    @model_validator(mode="after")
    def _disjoint(self):
        seen: dict[str, str] = {}
        for part, keys in (("product", self.product), ("zip", self.zip)):
            for k in keys:
                if k in seen:
                    raise ValueError(f"{k!r} appears in both {seen[k]} and {part}")
                seen[k] = part
        return self

    def count(self) -> int:
        """How many points `expand` yields, without expanding (a sweep of 10^9 points is refused by its count)."""
        n = math.prod(len(v) for v in self.product.values())
        if self.zip:
            n *= len(next(iter(self.zip.values())))
        return n * (len(self.points) or 1)

    def expand(self):
        """The points of this block, lazily, in a deterministic order (last product axis varies fastest)."""
        keys = list(self.product)
        rows = [{}]
        if self.zip:
            n = len(next(iter(self.zip.values())))
            rows = [{k: vals[i] for k, vals in self.zip.items()} for i in range(n)]
        for combo in itertools.product(*self.product.values()):
            base = dict(zip(keys, combo))
            for r in rows:
                for q in self.points or [{}]:
                    yield {**base, **r, **q}


SweepSpec = Annotated[list[Sweep], BeforeValidator(_as_list)]


def count(blocks: "list[Sweep] | None") -> int | None:
    """Points in a sweep before duplicates are dropped (an upper bound of `expand`'s), or None when absent."""
    return None if blocks is None else sum(b.count() for b in blocks)


def expand(blocks: "list[Sweep] | None") -> list[dict] | None:
    """All points of a sweep as a list (see `iter_points`), or None when absent."""
    return None if blocks is None else list(iter_points(blocks))


def iter_points(blocks: "list[Sweep] | None"):
    """All points of a sweep, lazily (blocks concatenated, duplicates dropped keeping the first), or None."""
    if blocks is None:
        return None

    def points():
        seen = set()  # 16-byte digests of the points, not the points: a million of them is ~80 MB
        for block in blocks:
            for p in block.expand():
                key = hashlib.blake2b(repr(sorted((k, repr(v)) for k, v in p.items())).encode(),
                                      digest_size=16).digest()
                if key not in seen:
                    seen.add(key)
                    yield p
    return points()


class WorkloadEntry(_Model):
    """A workload and the sweep to run it over."""

    workload: str = Field(description="registry name, or path to a kernel file, optionally path::NAME")
    params: SweepSpec | None = None
    meta: SweepSpec | None = None
    constraints: list[Constraint] = Field(default_factory=list)
    sizes: Literal["default", "gpu"] = Field("default", description="without `params`: the workload's default "
                                             "sweep (small, CI sizes) or its gpu sweep (and gpu meta)")


class Cluster(_Model):
    """Where jobs run."""

    executor: Literal["ray", "local"] = Field("ray", description="local: in this process, one job at a time")
    address: str | None = Field(None, description="Ray address to join; none starts a local Ray for the run")
    num_cpus: int | None = Field(None, ge=1, description="CPUs of the local Ray (default: all)")
    num_gpus: int | None = Field(None, ge=0, description="GPUs of the local Ray (default: all it finds)")
    max_in_flight: int | None = Field(None, ge=1, description="compile tasks in flight (default: CPU slots)")
    gpu_kind: str | list[str] | None = Field(
        None, description="GPU kind(s) to time on (Ray's accelerator_type: H200, H100, ...): one kind, a list (each "
                          "job timed once on each), or `each` (every kind present); none: the only kind present")
    wait_s: float = Field(600.0, gt=0, description="seconds jobs wait for a node with the resources they need "
                                                   "(a GPU kind no node has) before they are recorded as timed out")
    retries: int = Field(2, ge=0, description="times a job whose node left the cluster under it is run again")


class Config(_Model):
    """A whole `farm run` config."""

    name: str = "sweep"
    label: str | None = None
    workloads: list[WorkloadEntry] = Field(min_length=1)
    seed: int = 0
    compile_only: bool = Field(False, description="compile every job to PTX, do not validate or time")
    timing: Timing = Field(default_factory=Timing)
    cluster: Cluster = Field(default_factory=Cluster)
    store: str | None = Field(None, description="results file, relative to this config's folder, or a "
                               "postgresql://user@host/db URL")
    compilers: Compilers = Field(
        default_factory=lambda: ["tilefarm"], min_length=1,
        description="who compiles each kernel: every sweep point is one job per compiler (farm.compilers)")


def _format(e: ValidationError) -> list[str]:
    lines = []
    for err in e.errors():
        # Drop pydantic's union/validator tags ("function-after[...]") so the path is only field names and indexes.
        path = ".".join(str(p) for p in err["loc"] if not (isinstance(p, str) and "[" in p)) or "(top level)"
        msg = err["msg"].removeprefix("Value error, ").removeprefix("Assertion failed, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown field (check the spelling; see the config reference in farm/config.py)"
        lines.append(f"{path}: {msg}")
    return lines


format_errors = _format  # public: pydantic's errors as the farm prints them (field path: problem)


MAX_FILE_BYTES = 4 * 2**20  # a sweep config is a page of text; this is far above any real one
MAX_NODES = 200_000  # values in the config once YAML aliases are expanded ("billion laughs" stops here)


class _Loader(yaml.SafeLoader):
    """yaml.safe_load, minus what only a hostile file does: duplicate keys are errors (the last one silently
    winning hides mistakes), and the expanded size of aliases is bounded in `_size`."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:  # the mapping's own keys (a `<<: *alias` merge may be overridden)
            if isinstance(key_node, yaml.ScalarNode) and key_node.tag != "tag:yaml.org,2002:merge":
                if (key_node.tag, key_node.value) in seen:
                    raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key_node.value!r}",
                                                            key_node.start_mark)
                seen.add((key_node.tag, key_node.value))
        return super().construct_mapping(node, deep=deep)


def _size(data, limit: int) -> int:
    """Values in `data` counted as if every shared (aliased) part were copied, stopping past `limit`."""
    memo: dict[int, int] = {}

    def walk(x, depth):
        if depth > 100:
            raise ConfigError(["(file): nested more than 100 levels deep"])
        if isinstance(x, (list, dict)):
            if id(x) in memo:
                return memo[id(x)]
            items = list(x.items()) if isinstance(x, dict) else [(None, v) for v in x]
            n = 1
            for k, v in items:
                n += walk(v, depth + 1) + (k is not None)
                if n > limit:
                    break
            memo[id(x)] = n
            return n
        return 1

    return walk(data, 0)


def read_data(text: str, fmt: str = "yaml"):
    """The data of a YAML or TOML config file, refused (ConfigError) when it is too big, not valid, nested too
    deeply, or grows past MAX_NODES values once YAML aliases are expanded. Every farm config goes through here."""
    if len(text) > MAX_FILE_BYTES:
        raise ConfigError([f"(file): {len(text)} bytes is too big for a config (limit {MAX_FILE_BYTES})"])
    try:
        data = tomllib.loads(text) if fmt == "toml" else yaml.load(text, Loader=_Loader)
    except (yaml.YAMLError, tomllib.TOMLDecodeError) as e:
        raise ConfigError([f"(file): not valid {fmt.upper()}: {' '.join(str(e).split())}"]) from None
    except RecursionError:
        raise ConfigError(["(file): nested too deeply"]) from None
    if _size(data, MAX_NODES) > MAX_NODES:
        raise ConfigError([f"(file): more than {MAX_NODES} values once YAML aliases are expanded "
                           "(a config is a page of text; see `*alias` uses)"])
    return data


def parse_text(text: str, fmt: str = "yaml", base_dir: str | pathlib.Path = ".", *,
               allow_outside: bool = False) -> Config:
    """Parse config text ("yaml" or "toml"); every relative path (store, workload files) is resolved against
    `base_dir`, and a workload path leaving it is a ConfigError unless `allow_outside`."""
    data = read_data(text, fmt)
    if not isinstance(data, dict):
        raise ConfigError(["(top level): expected a mapping with at least `workloads:`"])
    try:
        cfg = Config.model_validate(data)
    except ValidationError as e:
        raise ConfigError(_format(e)) from None
    base = pathlib.Path(base_dir).resolve()
    problems = []
    if cfg.store is not None and "://" not in cfg.store:  # a URL (postgresql://...) is not a path
        cfg.store = os.path.normpath(base / os.path.expanduser(cfg.store))
    for i, entry in enumerate(cfg.workloads):
        path_part = entry.workload.split("::")[0]
        if path_part.endswith(".py") and not pathlib.Path(path_part).is_absolute():
            rest = entry.workload[len(path_part):]
            full = (base / path_part).resolve()
            if not allow_outside and not full.is_relative_to(base):
                problems.append(f"workloads.{i}.workload: {path_part} leaves the config's folder ({base}); "
                                "move it beside the config, give an absolute path, or pass --allow-outside")
            entry.workload = str(full) + rest
    if problems:
        raise ConfigError(problems)
    return cfg


def load(path: str | pathlib.Path, *, allow_outside: bool = False) -> tuple[Config, str]:
    """Read and validate a config file; returns the model and the file's text (stored with the run)."""
    p = pathlib.Path(path)
    if not p.is_file():
        raise ConfigError([f"(file): no such config file" + (" (it is a folder)" if p.is_dir() else "")], str(p))
    try:
        text = p.read_text()
    except UnicodeDecodeError as e:
        raise ConfigError([f"(file): not text (UTF-8): byte {e.start} cannot be decoded"], str(p)) from None
    except OSError as e:
        raise ConfigError([f"(file): cannot read: {e.strerror}"], str(p)) from None
    fmt = "toml" if p.suffix == ".toml" else "yaml"
    try:
        return parse_text(text, fmt, p.parent, allow_outside=allow_outside), text
    except ConfigError as e:
        raise ConfigError(e.lines, str(p)) from None


# ---------------------------------------------------------------- gate thresholds (`farm gate --config`)


def _percent(v):
    """5, 0.05, "5%" -> 0.05 (a bare number above 1 is taken as percent)."""
    if isinstance(v, str):
        s = v.strip()
        try:
            f = float(s.rstrip("%")) / 100 if s.endswith("%") else float(s)
        except ValueError:
            raise ValueError(f"expected a percentage like 5% or 0.05, got {v!r}") from None
    elif isinstance(v, (int, float)) and not isinstance(v, bool):
        f = float(v)
    else:
        raise ValueError(f"expected a percentage like 5% or 0.05, got {v!r}")
    if f > 1 and not (isinstance(v, str) and v.strip().endswith("%")):
        f /= 100
    if not 0 <= f < 10:
        raise ValueError(f"percentage out of range: {v!r}")
    return f


percent = _percent  # public: '5%' or 0.05 -> 0.05 (the CLI's --threshold reads it too)


Percent = Annotated[float, BeforeValidator(_percent)]


class GateLimits(_Model):
    """How much slower is too slow (each field may be overridden per workload)."""

    threshold: Percent | None = Field(None, description="kernel time: fail above this slowdown (5% or 0.05)")
    compile_threshold: Percent | None = Field(None, description="compile time: fail above this slowdown")
    launch_threshold: Percent | None = Field(None, description="host launch cost: fail above this slowdown")


class GateConfig(GateLimits):
    """configs/gates.yaml: global limits, statistics settings and per-workload overrides."""

    threshold: Percent = 0.05
    compile_threshold: Percent = 0.5
    launch_threshold: Percent = 0.15
    compile_floor_s: float = Field(0.1, ge=0, description="compile-time changes smaller than this never fail")
    compile_min_s: float = Field(0.05, ge=0, description="compile times below this are disk-cache hits: not compared")
    launch_floor_us: float = Field(1.0, ge=0, description="launch-cost changes smaller than this never fail")
    alpha: float = Field(0.01, gt=0, lt=0.5, description="two-sided error rate of the bootstrap interval")
    n_boot: int = Field(2000, ge=200, description="bootstrap resamples")
    remeasure: bool = Field(True, description="re-measure suspects A/B on the GPU before failing them")
    max_remeasure: int = Field(20, ge=0, description="at most this many suspects are re-measured per gate")
    ab_rounds: int = Field(10, ge=2, description="A/B rounds (A then B, alternating) per re-measured job")
    ab_rep_ms: float = Field(AB.rep_ms, gt=0, description="time per side per A/B round")
    workloads: dict[str, GateLimits] = Field(default_factory=dict)

    def limits(self, workload: str) -> dict:
        """The thresholds that apply to `workload` (its overrides over the global ones)."""
        out = {"threshold": self.threshold, "compile_threshold": self.compile_threshold,
               "launch_threshold": self.launch_threshold}
        over = self.workloads.get(workload)
        if over is not None:
            out.update({k: v for k, v in over.model_dump().items() if v is not None})
        return out


def load_gate(path: str | pathlib.Path | None) -> GateConfig:
    """configs/gates.yaml (YAML or TOML) as a GateConfig; defaults when `path` is None."""
    if path is None:
        return GateConfig()
    p = pathlib.Path(path)
    if not p.is_file():
        raise ConfigError([f"(file): no such gate config: {p}"])
    text = p.read_text()
    try:
        data = read_data(text, "toml" if p.suffix == ".toml" else "yaml")
    except ConfigError as e:
        raise ConfigError(e.lines, str(p)) from None
    try:
        return GateConfig.model_validate(data or {})
    except ValidationError as e:
        raise ConfigError(_format(e), str(p)) from None
