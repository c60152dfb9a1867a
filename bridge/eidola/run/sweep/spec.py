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

Every file (the spec, its platform and profile) is read through `eidola.inputs`, so a device, a
FIFO, non-UTF-8 text, deep nesting, duplicate keys or aliases that multiply or contain
themselves are refused with the file's name. A sweep has at most `max_points()` points.
"""

from __future__ import annotations

import hashlib
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import ConfigError
from ...inputs import decode_text, env_limit, load_yaml, read_input
from ...platform import units
from ...platform.yaml_io import MAX_PLATFORM_NODES, reject_unknown_keys
from .metrics import check_metrics

__all__ = ["DEFAULT_MAX_POINTS", "MAX_TIMEOUT_S", "SPEC_VERSION", "AxisGroup", "SweepSpec", "load_spec", "max_points",
           "spec_from_dict"]

SPEC_VERSION = 1
DEFAULT_MAX_POINTS = 1_000_000  #: the most points a sweep may have, unless EIDOLA_MAX_SWEEP_POINTS says otherwise
MAX_TIMEOUT_S = 86400.0         #: the longest per-point timeout (a day), as for `eidola run --timeout`
_SPEC_NODES = 200_000           #: most YAML values a spec may hold, aliases expanded (a spec is a page, not data)
_TOP_KEYS = ("sweep", "name", "platform", "profile", "generator", "set", "grid", "zip", "axes", "metrics",
             "timeout", "trace")


@dataclass(frozen=True)
class AxisGroup:
    """A group of axes: `grid` varies them as a product; `zip` varies them together, value i with value i."""

    kind: str                                 #: "grid" or "zip"
    axes: tuple[tuple[str, tuple[Any, ...]], ...]  #: (key, values) per axis, in the spec's order
    where: str = ""                           #: the group's place in the spec ("grid", "axes[1].zip"), for errors


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


def max_points() -> int:
    """The most points a sweep may have: EIDOLA_MAX_SWEEP_POINTS if set (a positive integer), else 1,000,000.

    Why a limit: a range such as {start: 0, stop: 1e12} or a grid of many long axes would
    otherwise expand until memory runs out before the first point runs.
    """
    return env_limit("EIDOLA_MAX_SWEEP_POINTS", DEFAULT_MAX_POINTS, "points")


def load_spec(path: str | os.PathLike[str]) -> SweepSpec:
    """Reads and checks a sweep spec file; ConfigError (naming the file and key) when it is malformed."""
    p = Path(path)
    name = os.fspath(path)
    doc = load_yaml(decode_text(read_input(p, "sweep spec"), name), name, max_nodes=_SPEC_NODES)
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
    platform_bytes = read_input(platform_path, "platform file", _named(f"{loc}platform"))
    platform_doc = _read_yaml(platform_bytes, platform_path, f"{loc}platform")
    if "profile" in doc and "generator" in doc:
        raise ConfigError(f"{loc}profile, generator: give one workload, not both")
    profile_path = _path(doc["profile"], base, f"{loc}profile") if "profile" in doc else None
    generator = _generator(doc.get("generator"), loc) if "generator" in doc else None
    fixed = doc.get("set") or {}
    if not isinstance(fixed, dict):
        raise ConfigError(f"{loc}set: expected a mapping of dotted keys to values, got {fixed!r}")
    for key in fixed:
        _check_key(key, f"{loc}set")
        if key.split(".")[0] == "generator":
            raise ConfigError(f"{loc}set.{key}: fixed generator parameters go in `generator:`; `set` holds "
                              "platform keys")
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
    return SweepSpec(**{**spec.__dict__, "base_digest": _digest(spec, platform_bytes, f"{loc}profile")})


def _check_key(key: object, where: str) -> str:
    """A dotted key as a spec writes it: a non-empty string with no empty part."""
    if not isinstance(key, str) or not key or "" in key.split("."):
        raise ConfigError(f"{where}: {key!r} is not a dotted key such as fabric.latency (keys are text)")
    return key


def _path(value: object, base: Path, where: str) -> Path:
    if not isinstance(value, str) or not value or "\0" in value:
        raise ConfigError(f"{where}: expected a file path, got {value!r}")
    p = Path(value)
    p = p if p.is_absolute() else base / p
    if not p.exists():
        raise ConfigError(f"{where}: no such file {str(p)!r}")
    return p.resolve()


def _named(where: str) -> type[ConfigError]:
    """A ConfigError class whose messages start with `where` (the spec file and key that named the file)."""

    class Named(ConfigError):
        def __init__(self, message: str) -> None:
            super().__init__(f"{where}: {message}")

    return Named


def _read_yaml(data: bytes, path: Path, where: str) -> dict[str, Any]:
    named = _named(where)
    doc = load_yaml(decode_text(data, str(path), named), str(path), named, max_nodes=MAX_PLATFORM_NODES)
    if not isinstance(doc, dict):
        raise ConfigError(f"{where}: {path} is not a platform (expected a mapping)")
    return doc


def known_generators() -> tuple[str, ...]:
    """The generators a spec may name: the textbook ones (eidola.workload.generators) and `nccl` (collective.py)."""
    from ...workload import generators
    from .collective import NAME

    return (*generators.__all__, NAME)


def _generator(raw: object, loc: str) -> dict[str, Any]:
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
        raise ConfigError(f"{loc}generator: expected a mapping with a name, e.g. {{name: ring_allreduce, gpus: 8}}")
    if raw["name"] not in known_generators():
        raise ConfigError(f"{loc}generator.name: unknown generator {raw['name']!r}; "
                          f"expected one of: {', '.join(known_generators())}")
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
            key = _check_key(key, where)
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
        out.append(AxisGroup(kind, tuple(pairs), where.removeprefix(loc)))
    total, limit = 1, max_points()
    for group in out:
        total *= len(group.axes[0][1]) if group.kind == "zip" else math.prod(len(v) for _, v in group.axes)
        if total > limit:
            raise ConfigError(f"{loc}{group.where}: the sweep would have more than {limit} points "
                              "(set EIDOLA_MAX_SWEEP_POINTS to raise the limit)")
    return tuple(out)


def _values(values: object, where: str) -> tuple[Any, ...]:
    limit = max_points()
    if isinstance(values, dict):
        if set(values) - {"start", "stop", "step"} or not {"start", "stop"} <= set(values):
            raise ConfigError(f"{where}: a range is {{start: A, stop: B, step: C}}; got {values!r}")
        start, stop, step = values["start"], values["stop"], values.get("step", 1)
        numbers = (start, stop, step)
        if (not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in numbers)
                or not all(math.isfinite(x) for x in numbers) or step <= 0):
            raise ConfigError(f"{where}: range bounds must be finite numbers and step > 0; got {values!r}")
        if all(isinstance(x, int) for x in numbers):
            count = (stop - start) // step + 1  # exact, whatever the integers' size
        else:
            span = (stop - start) / step  # finite bounds, but a tiny step can still overflow the quotient
            if not math.isfinite(span) or span >= limit:
                raise ConfigError(f"{where}: the range has more than {limit} values")
            count = int(span + 1e-9) + 1
        if count > limit:
            raise ConfigError(f"{where}: the range has {count} values, more than the limit of {limit} "
                              "(set EIDOLA_MAX_SWEEP_POINTS to raise it)")
        if count < 1:
            raise ConfigError(f"{where}: the range is empty (stop {stop!r} is below start {start!r})")
        return tuple(start + i * step for i in range(count))
    if not isinstance(values, list) or not values:
        raise ConfigError(f"{where}: expected a non-empty list of values, got {values!r}")
    if len(values) > limit:
        raise ConfigError(f"{where}: {len(values)} values, more than the limit of {limit} points")
    return tuple(values)


def _timeout(raw: object, loc: str) -> float | None:
    if raw is None:
        return None
    if isinstance(raw, bool) or not isinstance(raw, (str, int, float)):
        raise ConfigError(f"{loc}timeout: expected a time such as 60s, got {raw!r}")
    try:
        seconds = units.parse(raw, "time") if isinstance(raw, str) else float(raw)
    except (units.UnitError, OverflowError) as e:
        raise ConfigError(f"{loc}timeout: {e}") from None
    if not 0 < seconds <= MAX_TIMEOUT_S:  # also refuses nan
        raise ConfigError(f"{loc}timeout: expected a time in (0s, {MAX_TIMEOUT_S:g}s] such as 60s, got {raw!r}")
    return seconds


def _digest(spec: SweepSpec, platform_bytes: bytes, where: str) -> str:
    """Hashes the contents of the files every point reads, so an edited platform or profile invalidates results.

    Why contents and not paths: `--resume` must rerun a point whose inputs changed on disk, and must not
    rerun one whose folder moved. The profile is the one the points replay: the spec's, else (without a
    generator) the one the platform names, after `set` (a `profile` axis is refused, so it is the same
    for every point).
    """
    h = hashlib.sha256(platform_bytes)
    h.update(b"\0")
    profile = spec.profile_path
    declared = spec.fixed.get("profile", spec.platform_doc.get("profile"))
    if profile is None and spec.generator is None and isinstance(declared, str) and declared and "\0" not in declared:
        profile = str(Path(spec.platform_path).parent / declared)
    if profile is not None:
        h.update(read_input(profile, "profile file", _named(where)))
    h.update(b"\0")
    return h.hexdigest()
