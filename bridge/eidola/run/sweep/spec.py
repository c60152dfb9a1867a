"""The sweep spec: a YAML file naming a base platform, a workload, the axes to vary and the metrics to record.

```yaml
sweep: 1
name: latency-sweep                    # optional; default: the file's stem
platform: platforms/gemv-allreduce-4gpu.yaml   # relative to the spec file, or absolute
profile: ../profiles/x.yaml            # optional; default: the platform's profile
generator: {name: ring_allreduce, gpus: 8, nbytes: 1MiB}   # instead of a profile
set: {fabric.model: packet}            # fixed overrides applied to every point
grid: {fabric.latency: [100ns, 500ns], seed: [1, 2]}       # every combination
zip: {generator.nbytes: [...], generator.chunks: [...]}    # in lockstep (a list of such groups also works)
axes: [{grid: {...}}, {zip: {...}}]    # the general form: groups combined as a product, in order
metrics: [kernel_time_ns, flag_reads]
timeout: 60s                           # per point; a point past it is killed and recorded as a timeout
```

An axis key is `seed`, `generator.<parameter>` (dots and list indices go deeper:
`generator.delays.0.ns`) or any dotted platform key. Axis values are a list, or a range mapping
`{start: 0, stop: 40000, step: 2000}` (stop included when reached).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ...errors import ConfigError
from ...platform import units
from ...platform.yaml_io import reject_unknown_keys
from .metrics import check_metrics

__all__ = ["SPEC_VERSION", "AxisGroup", "SweepSpec", "load_spec", "spec_from_dict"]

SPEC_VERSION = 1
_TOP_KEYS = ("sweep", "name", "platform", "profile", "generator", "set", "grid", "zip", "axes", "metrics",
             "timeout", "trace")


@dataclass(frozen=True)
class AxisGroup:
    """A group of axes: `grid` varies them as a product; `zip` varies them together, value i with value i."""

    kind: str                                 #: "grid" or "zip"
    axes: tuple[tuple[str, tuple[Any, ...]], ...]  #: (key, values) per axis, in the spec's order


@dataclass(frozen=True)
class SweepSpec:
    """A parsed, checked sweep spec; every path in it is absolute."""

    name: str                                 #: the sweep's name (the table's and figures' title)
    source: str                               #: the spec file (or "<dict>")
    platform_path: str                        #: the base platform YAML file
    platform_doc: dict[str, Any]              #: the base platform as read, before any override
    profile_path: str | None                  #: the profile file, when the spec names one
    generator: dict[str, Any] | None          #: generator name and parameters, when the spec names one
    fixed: dict[str, Any]                     #: overrides applied to every point (`set`)
    groups: tuple[AxisGroup, ...]             #: the axes, combined as a product of groups
    metrics: tuple[str, ...]                  #: the metrics recorded per point
    timeout_s: float | None                   #: wall-clock limit per point
    trace: bool                               #: record ops (needed by some metrics; set automatically)
    base_digest: str = field(default="")      #: sha256 of the base files' contents, part of every point's hash

    def axis_names(self) -> list[str]:
        """The axes' keys, in table column order."""
        return [key for g in self.groups for key, _ in g.axes]


def load_spec(path: str | os.PathLike[str]) -> SweepSpec:
    """Reads and checks a sweep spec file; ConfigError (naming the file and key) when it is malformed."""
    p = Path(path)
    try:
        doc = yaml.safe_load(p.read_text())
    except OSError as e:
        raise ConfigError(f"{p}: cannot read the sweep spec ({e.strerror})") from None
    except yaml.YAMLError as e:
        raise ConfigError(f"{p}: is not valid YAML ({e})") from None
    return spec_from_dict(doc, source=str(p.resolve()))


def spec_from_dict(doc: object, source: str = "<dict>", base_dir: str | Path | None = None) -> SweepSpec:
    """Checks a spec given as a dict; relative paths are taken from `base_dir` (default: the source's folder)."""
    loc = f"{source}: "
    if not isinstance(doc, dict):
        raise ConfigError(f"{loc}expected a mapping of sweep keys at the top level")
    reject_unknown_keys(doc, _TOP_KEYS, loc)
    if doc.get("sweep") != SPEC_VERSION:
        raise ConfigError(f"{loc}sweep: expected spec version {SPEC_VERSION}, got {doc.get('sweep')!r}")
    base = Path(base_dir) if base_dir is not None else (Path(source).parent if source != "<dict>" else Path.cwd())
    platform_path = _path(doc.get("platform"), base, f"{loc}platform")
    platform_doc = _read_yaml(platform_path, f"{loc}platform")
    if "profile" in doc and "generator" in doc:
        raise ConfigError(f"{loc}profile, generator: give one workload, not both")
    profile_path = _path(doc["profile"], base, f"{loc}profile") if "profile" in doc else None
    generator = _generator(doc.get("generator"), loc) if "generator" in doc else None
    fixed = doc.get("set") or {}
    if not isinstance(fixed, dict):
        raise ConfigError(f"{loc}set: expected a mapping of dotted keys to values, got {fixed!r}")
    groups = _groups(doc, loc, generator is not None)
    metrics = doc.get("metrics")
    if not isinstance(metrics, list) or not metrics or not all(isinstance(m, str) for m in metrics):
        raise ConfigError(f"{loc}metrics: expected a non-empty list of metric names, got {metrics!r}")
    needs_trace = check_metrics(metrics, f"{loc}metrics")
    trace = doc.get("trace", False)
    if not isinstance(trace, bool):
        raise ConfigError(f"{loc}trace: expected true or false, got {trace!r}")
    name = doc.get("name", Path(source).stem if source != "<dict>" else "sweep")
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{loc}name: expected a non-empty string, got {name!r}")
    spec = SweepSpec(name, source, str(platform_path), platform_doc, None if profile_path is None else str(profile_path),
                     generator, dict(fixed), groups, tuple(metrics), _timeout(doc.get("timeout"), loc),
                     trace or needs_trace)
    return SweepSpec(**{**spec.__dict__, "base_digest": _digest(spec)})


def _path(value: object, base: Path, where: str) -> Path:
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{where}: expected a file path, got {value!r}")
    p = Path(value)
    p = p if p.is_absolute() else base / p
    if not p.is_file():
        raise ConfigError(f"{where}: no such file {str(p)!r}")
    return p.resolve()


def _read_yaml(path: Path, where: str) -> dict[str, Any]:
    try:
        doc = yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        raise ConfigError(f"{where}: {path} is not valid YAML ({e})") from None
    if not isinstance(doc, dict):
        raise ConfigError(f"{where}: {path} is not a platform (expected a mapping)")
    return doc


def _generator(raw: object, loc: str) -> dict[str, Any]:
    from ...workload import generators

    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
        raise ConfigError(f"{loc}generator: expected a mapping with a name, e.g. {{name: ring_allreduce, gpus: 8}}")
    if raw["name"] not in generators.__all__:
        raise ConfigError(f"{loc}generator.name: unknown generator {raw['name']!r}; "
                          f"expected one of: {', '.join(generators.__all__)}")
    return dict(raw)


def _groups(doc: dict[str, Any], loc: str, has_generator: bool) -> tuple[AxisGroup, ...]:
    raw: list[tuple[str, object, str]] = []
    for kind in ("grid", "zip"):
        if kind in doc:
            items = doc[kind] if isinstance(doc[kind], list) else [doc[kind]]
            raw += [(kind, item, f"{loc}{kind}" + (f"[{i}]" if isinstance(doc[kind], list) else ""))
                    for i, item in enumerate(items)]
    axes = doc.get("axes") or []
    if not isinstance(axes, list):
        raise ConfigError(f"{loc}axes: expected a list of {{grid: ...}} or {{zip: ...}} groups")
    for i, group in enumerate(axes):
        if not isinstance(group, dict) or len(group) != 1 or next(iter(group)) not in ("grid", "zip"):
            raise ConfigError(f"{loc}axes[{i}]: expected {{grid: {{key: [values]}}}} or {{zip: {{...}}}}")
        kind = next(iter(group))
        raw.append((kind, group[kind], f"{loc}axes[{i}].{kind}"))
    out, seen = [], set()
    for kind, body, where in raw:
        if not isinstance(body, dict) or not body:
            raise ConfigError(f"{where}: expected a mapping of axis keys to lists of values")
        pairs = []
        for key, values in body.items():
            key = str(key)
            if key in seen:
                raise ConfigError(f"{where}.{key}: this axis is already varied by another group")
            seen.add(key)
            if key.startswith("generator.") and not has_generator:
                raise ConfigError(f"{where}.{key}: a generator axis needs a `generator:` in the spec")
            if key == "profile":
                raise ConfigError(f"{where}.{key}: vary the workload through generator parameters, not profile")
            pairs.append((key, _values(values, f"{where}.{key}")))
        if kind == "zip" and len({len(v) for _, v in pairs}) > 1:
            lengths = ", ".join(f"{k}: {len(v)}" for k, v in pairs)
            raise ConfigError(f"{where}: zipped axes must have equally many values ({lengths})")
        out.append(AxisGroup(kind, tuple(pairs)))
    return tuple(out)


def _values(values: object, where: str) -> tuple[Any, ...]:
    if isinstance(values, dict):
        if set(values) - {"start", "stop", "step"} or not {"start", "stop"} <= set(values):
            raise ConfigError(f"{where}: a range is {{start: A, stop: B, step: C}}; got {values!r}")
        start, stop, step = values["start"], values["stop"], values.get("step", 1)
        if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (start, stop, step)) or step <= 0:
            raise ConfigError(f"{where}: range bounds must be numbers and step > 0; got {values!r}")
        count = int((stop - start) / step + 1e-9) + 1
        return tuple(start + i * step for i in range(max(count, 0)))
    if not isinstance(values, list) or not values:
        raise ConfigError(f"{where}: expected a non-empty list of values, got {values!r}")
    return tuple(values)


def _timeout(raw: object, loc: str) -> float | None:
    if raw is None:
        return None
    try:
        seconds = units.parse(raw, "time") if isinstance(raw, str) else float(raw)  # type: ignore[arg-type]
    except (units.UnitError, TypeError, ValueError) as e:
        raise ConfigError(f"{loc}timeout: {e}") from None
    if seconds <= 0:
        raise ConfigError(f"{loc}timeout: expected a positive time such as 60s, got {raw!r}")
    return seconds


def _digest(spec: SweepSpec) -> str:
    """Hashes the contents of the files every point reads, so an edited platform or profile invalidates results.

    Why contents and not paths: `--resume` must rerun a point whose inputs changed on disk, and must not
    rerun one whose folder moved.
    """
    h = hashlib.sha256()
    files = [spec.platform_path]
    declared = spec.platform_doc.get("profile")
    if spec.profile_path:
        files.append(spec.profile_path)
    elif spec.generator is None and isinstance(declared, str):
        files.append(str(Path(spec.platform_path).parent / declared))
    for f in files:
        h.update(f.encode() if not Path(f).is_file() else Path(f).read_bytes())
        h.update(b"\0")
    return h.hexdigest()
