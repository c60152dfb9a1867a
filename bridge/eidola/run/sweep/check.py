"""Checking every point of a sweep before any runs, so a typo is one error (exit status 2), not N failed points.

What is checked, per point: its platform (the base with `set` and the point's axis values
applied: every key known to its model, every value of the right type and unit, the seed in
range); its generator (a known name; every parameter one the generator takes, none it needs
missing; sizes with units); and, for a profile workload, the profile file (read once). What is
left to the points: what only the generator or the simulation can tell (7 bytes cannot be split
over 8 GPUs, a profile that needs more GPUs than the platform has), recorded in the point's row.

Platforms and generators are checked once per distinct combination, not once per point: the
seed axis of a 1,000-point sweep does not build 1,000 identical platforms.
"""

from __future__ import annotations

import inspect
from typing import Any

from ...errors import ConfigError
from .execute import point_inputs
from .points import Point, canonical_json
from .spec import SweepSpec, known_generators

__all__ = ["check_points"]


def _origin(spec: SweepSpec, values: dict[str, Any], message: str, index: int) -> str:
    """Where in the spec an error comes from: the axis or `set` key the message names, else the point."""
    for group in spec.groups:
        for key, _ in group.axes:
            short = key.removeprefix("generator.")
            if key in values and (key in message or (short != key and short in message)):
                return f"{group.where}.{key} = {values[key]!r} (point {index})"
    for key in spec.fixed:
        if key in message:
            return f"set.{key}"
    if message.startswith("generator"):  # the spec's generator itself, not an axis of it: the message names it
        return ""
    if not values:
        return "set"
    return f"point {index} (" + ", ".join(f"{k}: {v!r}" for k, v in values.items()) + ")"


def _check_platform(spec: SweepSpec, overrides: dict[str, Any], seed: int | None) -> Any:
    from ...platform.yaml_io import apply_overrides, platform_from_dict

    # The seed axis is checked as the platform's own seed would be (an integer in [0, 2^64)).
    doc = apply_overrides(spec.platform_doc, {**overrides, **({} if seed is None else {"seed": seed})},
                          spec.platform_path)
    return platform_from_dict(doc, source=spec.platform_path)


def _check_generator(generator: dict[str, Any]) -> None:
    from ...workload import generators
    from . import collective

    name = generator.get("name")
    if name == collective.NAME:
        collective.check({k: v for k, v in generator.items() if k != "name"})
        return
    if not isinstance(name, str) or name not in generators.__all__:
        raise ConfigError(f"generator.name: unknown generator {name!r}; expected one of: "
                          f"{', '.join(known_generators())}")
    fn = getattr(generators, name)
    params = {k: v for k, v in generator.items() if k != "name"}
    accepted = inspect.signature(fn).parameters
    for key in params:
        if key not in accepted:
            raise ConfigError(f"generator.{key}: {name} has no parameter {key!r}; it takes: {', '.join(accepted)}")
    missing = [k for k, p in accepted.items() if p.default is inspect.Parameter.empty and k not in params]
    if missing:
        raise ConfigError(f"generator: {name} needs {', '.join(missing)}")


def _check_fits(spec: SweepSpec, overrides: dict[str, Any], seed: int | None, generator: dict[str, Any],
                counts: dict[str, int]) -> None:
    """A generator's `gpus` must not exceed the point's platform: checked here, before the profile is built.

    Why before: a profile for more GPUs than the platform has is bad input anyway, and building
    one for 2^20 GPUs would take the sweep's memory and minutes before the point could say so.
    """
    gpus = generator.get("gpus")
    if isinstance(gpus, bool) or not isinstance(gpus, int):
        return  # the generator's own check names a wrong type when the point runs
    key = canonical_json([overrides, seed])
    if key not in counts:
        counts[key] = len(_check_platform(spec, overrides, seed).gpus())
    if gpus > counts[key]:
        raise ConfigError(f"generator.gpus: {gpus} GPUs, but the platform has {counts[key]}")


def check_points(spec: SweepSpec, points: list[Point]) -> None:
    """Raises ConfigError, naming the spec file and the key, for the first point whose inputs are bad."""
    from ...workload.profile_yaml import load_profile

    counts: dict[str, int] = {}  # platform (by its overrides and seed) -> its GPU count, once built
    generators: set[str] = set()
    profile_path: str | None = None
    for point in points:
        try:
            overrides, generator, seed = point_inputs(spec, point.values)
            key = canonical_json([overrides, seed])
            if key not in counts:
                platform = _check_platform(spec, overrides, seed)
                counts[key] = len(platform.gpus())
                if generator is None and profile_path is None:
                    profile_path = spec.profile_path or platform.profile
                    if not profile_path:
                        raise ConfigError(f"{spec.platform_path}: the platform names no profile; give the spec a "
                                          "profile or a generator")
            if generator is not None and (key := canonical_json(generator)) not in generators:
                _check_generator(generator)
                generators.add(key)
            if generator is not None:
                _check_fits(spec, overrides, seed, generator, counts)
        except ConfigError as e:
            message = str(e).removeprefix(f"{spec.source}: ")
            origin = _origin(spec, point.values, message, point.index)
            raise ConfigError(f"{spec.source}: {origin + ': ' if origin else ''}{message}") from None
    if profile_path is not None:
        try:
            load_profile(profile_path)
        except ConfigError as e:
            raise ConfigError(f"{spec.source}: profile: {e}") from None
