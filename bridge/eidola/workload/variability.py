"""Run-to-run variability of a workload: per-GPU skew, per-phase jitter, wake-up delays, and their sampling.

A profile's optional ``variability`` section (``Profile.variability``, a ``Variability``) says how
the compute phases of a real run stray from the nominal ones:

- skew: one factor per GPU, drawn once per GPU, multiplies every compute phase of that GPU;
- jitter: one factor per compute phase of every workgroup, multiplies that phase;
- delays: hold back the first communication op (write/read/signal) of a GPU's workgroups (or of
  one workgroup) by ``ns``: it issues ``ns`` later than it otherwise would (the wake-up delay).

Distributions, the same for skew and jitter: ``normal(mean, std)``, ``lognormal(mu, sigma)`` (the
factor is exp(N(mu, sigma))), ``uniform(low, high)`` and ``empirical(samples)`` (each draw picks
one of the samples uniformly). Every drawn factor is clipped at 0, so a phase never gets a
negative length.

Sampling (``compute_scales``) is deterministic for a seed: it uses
``numpy.random.Generator(numpy.random.PCG64(seed))`` and draws, in this fixed order, first one
vector of ``profile.gpus`` skew factors (GPU 0 first; only if skew is set), then one vector with a
jitter factor for every compute op, programs in ``profile.programs`` order and ops in program
order (only if jitter is set).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from numpy.typing import NDArray

from ..errors import ProfileError
from .checks import MAX_NS

if TYPE_CHECKING:
    from .profile import Profile

__all__ = ["DISTRIBUTIONS", "Distribution", "Delay", "Variability", "compute_scales", "hold_ns", "start_skews"]

# Per distribution, its parameter names in the order they are stored and written.
DISTRIBUTIONS: dict[str, tuple[str, ...]] = {"normal": ("mean", "std"), "lognormal": ("mu", "sigma"), "uniform": ("low", "high"),
                 "empirical": ("samples",)}
_SECTION_KEYS = ("skew", "jitter", "delays")
_DELAY_KEYS = ("gpu", "wg", "ns")


@dataclass(frozen=True)
class Distribution:
    """A distribution of factors: its name and ((parameter, value), ...) in DISTRIBUTIONS order."""

    dist: str
    params: tuple[tuple[str, Any], ...]

    def __getitem__(self, key: str) -> Any:
        """Return the value of parameter `key` (empirical samples are a tuple)."""
        return dict(self.params)[key]

    def to_dict(self) -> dict[str, Any]:
        """Return the plain form written to files: {dist: name, parameter: value, ...}."""
        return {"dist": self.dist, **{k: list(v) if type(v) is tuple else v for k, v in self.params}}

    def draw(self, rng: np.random.Generator, n: int) -> NDArray[np.float64]:
        """Return `n` factors drawn from `rng`, each clipped at 0."""
        p = dict(self.params)
        x: NDArray[np.float64]
        if self.dist == "normal":
            x = rng.normal(p["mean"], p["std"], n)
        elif self.dist == "lognormal":
            x = rng.lognormal(p["mu"], p["sigma"], n)
        elif self.dist == "uniform":
            x = rng.uniform(p["low"], p["high"], n)
        else:
            x = np.asarray(p["samples"], dtype=float)[rng.integers(0, len(p["samples"]), n)]
        return np.maximum(x, 0.0)


@dataclass(frozen=True)
class Delay:
    """Hold back the first communication op of GPU `gpu`'s workgroups (only workgroup `wg` if set) by `ns`."""

    gpu: int
    ns: float
    wg: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """Return the plain form written to files ({gpu, wg (if set), ns})."""
        return {"gpu": self.gpu, **({} if self.wg is None else {"wg": self.wg}), "ns": self.ns}


@dataclass(frozen=True)
class Variability:
    """A profile's variability: optional skew and jitter Distributions and a tuple of Delays; falsy if empty."""

    skew: Distribution | None = None
    jitter: Distribution | None = None
    delays: tuple[Delay, ...] = ()

    def __bool__(self) -> bool:
        return self.skew is not None or self.jitter is not None or bool(self.delays)

    def to_dict(self) -> dict[str, Any]:
        """Return the plain form written to files; only the parts that are set."""
        out: dict[str, Any] = {}
        if self.skew is not None:
            out["skew"] = self.skew.to_dict()
        if self.jitter is not None:
            out["jitter"] = self.jitter.to_dict()
        if self.delays:
            out["delays"] = [d.to_dict() for d in self.delays]
        return out


NO_VARIABILITY = Variability()


# ---------------------------------------------------------------- validation

def _number(where: str, v: object, lo: float | None = None, hi: float | None = None) -> int | float:
    # bool is a number to Python but True as a std is always a mistake; numpy scalars are fine.
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise ProfileError(f"{where} must be a number, got {type(v).__name__} {v!r}")
    v = int(v) if isinstance(v, numbers.Integral) else float(v)
    if not math.isfinite(v):
        raise ProfileError(f"{where} must be finite, got {v!r}")
    if lo is not None and v < lo:
        raise ProfileError(f"{where} must be >= {lo}, got {v!r}")
    if hi is not None and v > hi:
        raise ProfileError(f"{where} must be <= {hi:g}, got {v!r}")
    return v


def _index(where: str, v: object, count: int, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        raise ProfileError(f"{where} must be an int, got {type(v).__name__} {v!r}")
    if not 0 <= cast(int, v) < count:  # an Integral (numpy ints too) compares like an int
        raise ProfileError(f"{where} {v} is out of range (expected 0 <= {where.rsplit('.', 1)[-1]} < {count}, "
                           f"the number of {what})")
    return int(v)


def make_distribution(where: str, dist: Any, params: Mapping[str, Any]) -> Distribution:
    """Check `dist` and its `params` (a mapping) and return a Distribution; errors start with `where`."""
    if type(dist) is not str or dist not in DISTRIBUTIONS:
        raise ProfileError(f"{where}.dist {dist!r} is not one of {', '.join(DISTRIBUTIONS)}")
    expected = DISTRIBUTIONS[dist]
    for name in params:
        if name not in expected:
            raise ProfileError(f"{where}: unknown parameter {name!r} for dist {dist!r} "
                               f"(expected {', '.join(expected)})")
    for name in expected:
        if name not in params:
            raise ProfileError(f"{where}: missing parameter {name!r} for dist {dist!r} "
                               f"(expected {', '.join(expected)})")
    values: dict[str, Any] = {}
    if dist == "empirical":
        samples = params["samples"]
        if not isinstance(samples, (list, tuple, np.ndarray)) or len(samples) == 0:
            raise ProfileError(f"{where}.samples must be a non-empty list of numbers >= 0, got {samples!r}")
        values["samples"] = tuple(_number(f"{where}.samples[{i}]", s, lo=0) for i, s in enumerate(samples))
    else:
        for name in expected:
            values[name] = _number(f"{where}.{name}", params[name], lo=0 if name in ("std", "sigma") else None)
    if dist == "uniform" and values["low"] > values["high"]:
        raise ProfileError(f"{where}: low {values['low']!r} must be <= high {values['high']!r}")
    return Distribution(dist, tuple((name, values[name]) for name in expected))


def make_delay(where: str, gpu: Any, ns: Any, wg: Any, gpus: int, workgroups: int) -> Delay:
    """Check one delay against the profile's GPU and workgroup counts and return a Delay."""
    gpu = _index(f"{where}.gpu", gpu, gpus, "GPUs")
    if wg is not None:
        wg = _index(f"{where}.wg", wg, workgroups, "workgroups")
    return Delay(gpu, _number(f"{where}.ns", ns, lo=0, hi=MAX_NS), wg)


def check_new_delay(where: str, delay: Delay, delays: Sequence[Delay]) -> None:
    """Raise if `delays` already holds one for the same (gpu, wg) target as `delay`."""
    for i, d in enumerate(delays):
        if (d.gpu, d.wg) == (delay.gpu, delay.wg):
            target = "all workgroups" if d.wg is None else f"wg {d.wg}"
            raise ProfileError(f"{where}: a second delay for gpu {d.gpu} {target} (the first is delays[{i}])")


def parse_variability(raw: Any, gpus: int, workgroups: int, where: str) -> Variability:
    """Validate the plain form of a `variability` section (None means none) and return a Variability."""
    if raw is None:
        return NO_VARIABILITY
    if not isinstance(raw, dict):
        raise ProfileError(f"{where}: expected a mapping with keys {', '.join(_SECTION_KEYS)}, "
                           f"got {type(raw).__name__}")
    for key in raw:
        if key not in _SECTION_KEYS:
            raise ProfileError(f"{where}: unknown key {key!r} (allowed: {', '.join(_SECTION_KEYS)})")
    dists: dict[str, Distribution] = {}
    for key in ("skew", "jitter"):
        spec = raw.get(key)
        if spec is None:
            continue
        if not isinstance(spec, dict) or "dist" not in spec:
            raise ProfileError(f"{where}.{key}: expected a mapping {{dist: {'|'.join(DISTRIBUTIONS)}, "
                               f"parameters...}}, got {spec!r}")
        params = {k: v for k, v in spec.items() if k != "dist"}
        dists[key] = make_distribution(f"{where}.{key}", spec["dist"], params)
    raw_delays = raw.get("delays") or []
    if not isinstance(raw_delays, list):
        raise ProfileError(f"{where}.delays: expected a list of {{gpu, wg (optional), ns}}, "
                           f"got {type(raw_delays).__name__}")
    delays: list[Delay] = []
    for i, rd in enumerate(raw_delays):
        here = f"{where}.delays[{i}]"
        if not isinstance(rd, dict):
            raise ProfileError(f"{here}: expected a mapping {{gpu, wg (optional), ns}}, got {rd!r}")
        for key in rd:
            if key not in _DELAY_KEYS:
                raise ProfileError(f"{here}: unknown key {key!r} (allowed: {', '.join(_DELAY_KEYS)})")
        for key in ("gpu", "ns"):
            if key not in rd:
                raise ProfileError(f"{here}: missing key {key!r}")
        delay = make_delay(here, rd["gpu"], rd["ns"], rd.get("wg"), gpus, workgroups)
        check_new_delay(here, delay, delays)
        delays.append(delay)
    return Variability(dists.get("skew"), dists.get("jitter"), tuple(delays))


# ---------------------------------------------------------------- sampling

def compute_scales(profile: Profile, seed: int) -> dict[tuple[int, int], NDArray[np.float64]]:
    """Return {(gpu, wg): factors}, one float per op of every program (1.0 for non-compute ops).

    A compute op's factor is its GPU's skew factor times its own jitter factor. The dict has an
    entry for every program, in profile.programs order, even without variability (all ones then).
    """
    v = profile.variability or NO_VARIABILITY
    rng = np.random.Generator(np.random.PCG64(seed))
    skew = v.skew.draw(rng, profile.gpus) if v.skew is not None else None
    table = profile.table
    compute = table.kind_mask("compute")
    masks = [compute[table.starts[i]:table.starts[i + 1]] for i in range(len(table.keys))]
    jitter = v.jitter.draw(rng, sum(int(m.sum()) for m in masks)) if v.jitter is not None else None
    out: dict[tuple[int, int], NDArray[np.float64]] = {}
    used = 0
    for (gpu, wg), mask in zip(table.keys, masks):
        scale = np.ones(len(mask))
        if skew is not None:
            scale[mask] = skew[gpu]
        if jitter is not None:
            n = int(mask.sum())
            scale[mask] *= jitter[used:used + n]
            used += n
        out[gpu, wg] = scale
    return out


def hold_ns(profile: Profile) -> dict[tuple[int, int], float]:
    """Return {(gpu, wg): ns} for every program a delay applies to; a wg's own delay beats its GPU's."""
    v = profile.variability or NO_VARIABILITY
    if not v.delays:
        return {}
    per_gpu = {d.gpu: d.ns for d in v.delays if d.wg is None}
    per_wg = {(d.gpu, d.wg): d.ns for d in v.delays if d.wg is not None}
    out: dict[tuple[int, int], float] = {}
    for gpu, wg in profile.table.keys:
        ns = per_wg.get((gpu, wg), per_gpu.get(gpu))
        if ns is not None:
            out[gpu, wg] = float(ns)
    return out


def start_skews(profile: Profile, seed: int, max_ns: float = 8.0) -> Profile:
    """`profile` with every GPU's first communication held back a uniform 0..`max_ns` ns (PCG64 of `seed`; the
    least-held GPU 0 ns, rounded to the picosecond); seed 0 returns `profile` in step. A case whose in-step run sits
    on a knife edge of wake order is compared over a few such starts (experiments/skew, the flow validation tests)."""
    if seed == 0:
        return profile
    delays = np.random.default_rng(seed).uniform(0, max_ns, profile.gpus).round(3)
    delays -= delays.min()
    held = tuple(Delay(g, float(ns)) for g, ns in enumerate(delays) if ns > 0)
    return replace(profile, variability=Variability(delays=held))
