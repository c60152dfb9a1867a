"""Synthetic traffic: the classic network-on-chip patterns as an open-loop Bernoulli process.

`synthetic()` returns a Profile whose `traffic` section asks every GPU for a Bernoulli injection
process run in C++ (`eidola::TrafficGenerator`): in each cycle a GPU creates a write of `packet`
bytes with probability rate x cycle, queues it at the source, and its initiator issues it
alongside any workgroup traffic. No Python runs per packet: this module only resolves the pattern
into each GPU's destination list, once.

Patterns (Dally and Towles, *Principles and Practices of Interconnection Networks*, ch. 3), on N
GPUs laid out on `dims` (x fastest: GPU = x + dims[0] * y, as `topology: mesh2d` numbers them):

- ``uniform``: any other GPU, alike;
- ``transpose``: (x, y) -> (y, x), on a square 2-D layout;
- ``bit_complement``, ``bit_reverse``, ``shuffle`` (rotate left by one bit): on the b bits of the
  GPU index, N = 2^b;
- ``tornado``: x_i -> x_i + ceil(k_i / 2) - 1 (mod k_i) in every dimension;
- ``neighbor``: x_i -> x_i + 1 (mod k_i) in every dimension;
- ``hotspot``: any of `hotspots` other than the source, alike.

A GPU that a pattern maps to itself (the transpose's diagonal, a hotspot with no other hotspot)
creates nothing; offered and accepted load are averaged over the GPUs that do.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import ProfileError
from ..platform import units
from .profile import Profile
from .table import OpTable

__all__ = ["PATTERNS", "TrafficSpec", "synthetic", "destinations"]

PATTERNS = ("uniform", "transpose", "bit_complement", "bit_reverse", "shuffle", "tornado", "neighbor", "hotspot")
_MIN_CYCLE_NS = 1e-3  # the shortest injection cycle: 1 ps, the time step cycles are counted in
_MAX_NS = 1e14  # the longest duration or warm-up, in ns (as for profile times: far inside 64-bit ps)


@dataclass(frozen=True)
class TrafficSpec:
    """A synthetic traffic section of a profile (canonical units: ns, bytes, packets per GPU per ns)."""

    gpus: int                          #: GPUs 0 .. gpus-1 generate and receive
    pattern: str                       #: one of PATTERNS
    rate: float                        #: offered load: packets per GPU per ns
    packet: int = 256                  #: payload bytes of each write
    duration_ns: float = 10_000.0      #: the measurement window, after the warm-up
    warmup_ns: float = 1_000.0         #: packets created before this are not measured
    cycle_ns: float = 1.0              #: one Bernoulli trial per GPU per cycle
    reply: bool = True                 #: report the round trip (creation to the write's acknowledgement)
    seed: int = 1                      #: the random streams (with each GPU's index)
    hotspots: tuple[int, ...] = ()     #: destinations of the hotspot pattern
    dims: tuple[int, ...] = field(default=())  #: the layout the pattern is defined on (empty: the default)

    def to_dict(self) -> dict[str, Any]:
        """The plain form written to profile files (times with units)."""
        d: dict[str, Any] = {"gpus": self.gpus, "pattern": self.pattern, "rate": self.rate, "packet": self.packet,
                             "duration": f"{self.duration_ns:g}ns", "warmup": f"{self.warmup_ns:g}ns",
                             "cycle": f"{self.cycle_ns:g}ns", "reply": self.reply, "seed": self.seed}
        if self.hotspots:
            d["hotspots"] = list(self.hotspots)
        if self.dims:
            d["dims"] = list(self.dims)
        return d

    @classmethod
    def from_dict(cls, d: Any, source: str = "traffic") -> TrafficSpec:
        """Validates the plain form (as read from a profile file); errors name `source` and the key."""
        if not isinstance(d, dict):
            raise ProfileError(f"{source}: expected a mapping of synthetic() arguments, got {type(d).__name__}")
        allowed = ("gpus", "pattern", "rate", "packet", "duration", "warmup", "cycle", "reply", "seed", "hotspots",
                   "dims")
        for key in d:
            if key not in allowed:
                raise ProfileError(f"{source}: unknown key {key!r} (allowed: {', '.join(allowed)})")
        for key in ("gpus", "pattern", "rate"):
            if key not in d:
                raise ProfileError(f"{source}: missing key {key!r}")
        return _spec(where=source, **d)


def _time_ns(name: str, v: object, where: str, positive: bool) -> float:
    """A time given as a string with a unit ("10us") or a number of ns."""
    if isinstance(v, str):
        try:
            ns = units.parse(v, "time") * 1e9
        except units.UnitError as e:
            raise ProfileError(f"{where}: {name}: {e}") from None
    elif isinstance(v, numbers.Real) and not isinstance(v, bool):
        ns = float(v)
    else:
        raise ProfileError(f"{where}: {name} must be a time such as '10us' or a number of ns, got {v!r}")
    if not math.isfinite(ns) or ns < 0 or (positive and ns == 0) or ns > _MAX_NS:
        raise ProfileError(f"{where}: {name} must be {'> 0' if positive else '>= 0'} and at most {_MAX_NS:g} ns, "
                           f"got {v!r}")
    return ns


def _int(name: str, v: object, where: str, lo: int, hi: int = 2**62) -> int:
    if isinstance(v, bool) or not isinstance(v, numbers.Integral) or not lo <= int(v) <= hi:
        raise ProfileError(f"{where}: {name} must be an int in [{lo}, {hi}], got {v!r}")
    return int(v)


def _spec(gpus: object, pattern: object, rate: object, packet: object = 256, duration: object = "10us",
          warmup: object = "1us", cycle: object = "1ns", reply: object = True, seed: object = 1,
          hotspots: object = (), dims: object = None, where: str = "synthetic") -> TrafficSpec:
    n = _int("gpus", gpus, where, 2, 2**20)
    if not isinstance(pattern, str) or pattern not in PATTERNS:
        raise ProfileError(f"{where}: pattern {pattern!r} is not one of {', '.join(PATTERNS)}")
    if isinstance(packet, str):
        try:
            packet = units.parse(packet, "size")
        except units.UnitError as e:
            raise ProfileError(f"{where}: packet: {e}") from None
        if not float(packet).is_integer():
            raise ProfileError(f"{where}: packet must be a whole number of bytes, got {packet!r}")
        packet = int(packet)
    size = _int("packet", packet, where, 1, 1 << 30)
    cycle_ns = _time_ns("cycle", cycle, where, positive=True)
    if cycle_ns < _MIN_CYCLE_NS:  # C++ counts time in ps: a shorter cycle is 0 ps, and time would never advance
        raise ProfileError(f"{where}: cycle must be at least 1ps (the simulation's time step), got {cycle!r}")
    if isinstance(rate, bool) or not isinstance(rate, numbers.Real) or not 0 < float(rate) <= 1 / cycle_ns:
        raise ProfileError(f"{where}: rate (packets per GPU per ns) must be in (0, 1/cycle = {1 / cycle_ns:g}], "
                           f"got {rate!r}")
    if not isinstance(reply, bool):
        raise ProfileError(f"{where}: reply must be true or false, got {reply!r}")
    shape = _dims(n, dims, where)
    spots: tuple[int, ...] = ()
    if pattern == "hotspot":
        if not isinstance(hotspots, (list, tuple)) or not hotspots:
            raise ProfileError(f"{where}: hotspots must be a non-empty list of GPUs for the hotspot pattern, "
                               f"got {hotspots!r}")
        spots = tuple(_int("hotspots", h, where, 0, n - 1) for h in hotspots)
        if len(set(spots)) != len(spots):
            raise ProfileError(f"{where}: hotspots lists a GPU twice: {list(spots)}")
    elif hotspots not in ((), [], None):
        raise ProfileError(f"{where}: hotspots is only for the hotspot pattern (pattern is {pattern!r})")
    spec = TrafficSpec(n, pattern, float(rate), size, _time_ns("duration", duration, where, positive=True),
                       _time_ns("warmup", warmup, where, positive=False), cycle_ns, reply,
                       _int("seed", seed, where, 0, 2**63 - 1), spots, shape if dims is not None else ())
    destinations(spec)  # a pattern the GPU count does not suit fails here, naming it
    return spec


def _dims(n: int, dims: object, where: str) -> tuple[int, ...]:
    """The layout: `dims` if given (their product must be n), else k x k when n = k^2, else [n]."""
    if dims is None:
        k = math.isqrt(n)
        return (k, k) if k * k == n else (n,)
    if not isinstance(dims, (list, tuple)) or not dims:
        raise ProfileError(f"{where}: dims must be a list of sizes such as [4, 4], got {dims!r}")
    shape = tuple(_int("dims", d, where, 1, n) for d in dims)
    if math.prod(shape) != n:
        raise ProfileError(f"{where}: dims {list(shape)} hold {math.prod(shape)} GPUs, not gpus = {n}")
    return shape


def _coords(g: int, shape: tuple[int, ...]) -> list[int]:
    out = []
    for k in shape:
        out.append(g % k)
        g //= k
    return out


def _index(coords: list[int], shape: tuple[int, ...]) -> int:
    g, scale = 0, 1
    for c, k in zip(coords, shape):
        g += c * scale
        scale *= k
    return g


def destinations(spec: TrafficSpec) -> list[list[int]] | None:
    """Each GPU's destinations (a GPU mapped to itself gets none), or None for uniform (any other GPU).

    Raises ProfileError, naming the pattern, when the GPU count or layout does not suit it.
    """
    n, p = spec.gpus, spec.pattern
    if p == "uniform":
        return None
    if p == "hotspot":
        return [[h for h in spec.hotspots if h != g] for g in range(n)]
    shape = spec.dims or _dims(n, None, "synthetic")
    bits = n.bit_length() - 1
    if p in ("bit_complement", "bit_reverse", "shuffle") and n != 1 << bits:
        raise ProfileError(f"synthetic: pattern {p!r} needs a power-of-two number of GPUs, got gpus = {n}")
    if p == "transpose" and (len(shape) != 2 or shape[0] != shape[1]):
        raise ProfileError(f"synthetic: pattern 'transpose' needs a square 2-D layout (dims [k, k]), got "
                           f"{list(shape)}")

    def dst(g: int) -> int:
        if p == "bit_complement":
            return ~g & (n - 1)
        if p == "bit_reverse":
            return int(format(g, f"0{bits}b")[::-1], 2) if bits else g
        if p == "shuffle":
            return ((g << 1) | (g >> (bits - 1))) & (n - 1) if bits else g
        c = _coords(g, shape)
        if p == "transpose":
            return _index([c[1], c[0]], shape)
        if p == "tornado":
            return _index([(x + -(-k // 2) - 1) % k for x, k in zip(c, shape)], shape)
        return _index([(x + 1) % k for x, k in zip(c, shape)], shape)  # neighbor

    return [[d] if (d := dst(g)) != g else [] for g in range(n)]


def synthetic(gpus: int, pattern: str = "uniform", rate: float = 0.01, packet: int | str = 256,
              duration: float | str = "10us", warmup: float | str = "1us", reply: bool = True, seed: int = 1,
              hotspots: list[int] | tuple[int, ...] = (), cycle: float | str = "1ns",
              dims: list[int] | tuple[int, ...] | None = None, profile: Profile | None = None) -> Profile:
    """A profile that runs synthetic traffic on GPUs 0 .. gpus-1 (see the module doc).

    gpus: GPUs that generate and receive. pattern: one of PATTERNS. rate: packets per GPU per ns
    (at most 1/cycle). packet: payload bytes of each write (an int or a size such as "256B"; at
    most the platform's gpus.max_payload). duration: the measurement window and warmup the time
    before it (a time such as "10us", or a number of ns); creation stops when the window ends and
    the packets in flight drain. reply: report the round trip too. seed: the random streams.
    hotspots: the destinations of the hotspot pattern. cycle: the injection process's cycle.
    dims: the layout the pattern is defined on (default k x k for k^2 GPUs, else one row).
    profile: programs to mix the traffic with (default: none); its GPU count must cover `gpus`.

    Raises ProfileError (exit status 2) naming the argument that is wrong.
    """
    spec = _spec(gpus, pattern, rate, packet, duration, warmup, cycle, reply, seed, hotspots, dims)
    if profile is not None:
        if not isinstance(profile, Profile):
            raise ProfileError(f"synthetic: profile must be a Profile, got {type(profile).__name__}")
        if profile.gpus < spec.gpus:
            raise ProfileError(f"synthetic: gpus = {spec.gpus} but the profile {profile.name!r} has {profile.gpus}")
        return replace(profile, traffic=spec)
    return Profile(f"synthetic-{pattern}", spec.gpus, 1, (), (), OpTable.from_ops(()), traffic=spec)
