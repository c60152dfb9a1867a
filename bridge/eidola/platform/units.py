"""Values with units, as written in platform files: ``300ns``, ``2.1GHz``, ``64GB/s``, ``4KiB``.

Each kind converts to one canonical unit (seconds, hertz, bytes per second, bytes). Decimal
prefixes are powers of 10 and binary ones (KiB, MiB, ...) powers of 2, so ``GB`` is 10^9 bytes
and ``GiB`` is 2^30. A bare number for a time, frequency, bandwidth or size is refused: the unit
is part of the value.

A bandwidth may also be written in bits, as network rates often are: ``400Gb/s`` and ``400Gbps``
are 400 x 10^9 bits per second, 50 GB/s (a lower-case ``b`` is a bit, 1 B = 8 b).
"""

from __future__ import annotations

import math
import re
from decimal import Decimal

from ..errors import shown

__all__ = ["UnitError", "parse", "format_value", "KINDS"]


class UnitError(ValueError):
    """A value that is not a number with a unit of the expected kind."""


_DECIMAL = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_BINARY = {"Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40, "Pi": 2.0**50}
_TIME = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9, "ps": 1e-12, "fs": 1e-15}


def _size_units(suffix: str) -> dict[str, float]:
    units = {p + suffix: f for p, f in _DECIMAL.items()}
    units.update({p + suffix: f for p, f in _BINARY.items()})
    return units


def _bit_rates() -> dict[str, float]:
    """Network rates written in bits (``400Gb/s``, ``400Gbps``), in bytes per second: 1 B = 8 b."""
    units = {}
    for prefix, factor in _DECIMAL.items():
        units[prefix + "b/s"] = units[prefix + "bps"] = factor / 8
    return units


_UNITS = {
    "time": _TIME,
    "frequency": {p + "Hz": f for p, f in _DECIMAL.items() if p != "K"},
    "size": _size_units("B"),
    "bandwidth": {**_size_units("B/s"), **_bit_rates()},
}
KINDS = tuple(_UNITS)
_NUMBER = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([A-Za-zµ/]*)\s*$")


def parse(text: object, kind: str) -> float:
    """Converts ``text`` (e.g. ``"300ns"``) of the given kind to its canonical unit; raises UnitError."""
    units = _UNITS[kind]
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        raise UnitError(f"{shown(text)} has no unit; write a {kind} such as {_example(kind)}")
    if not isinstance(text, str):
        raise UnitError(f"expected a {kind} with a unit such as {_example(kind)}, got {shown(text)}")
    match = _NUMBER.match(text)
    if not match:
        raise UnitError(f"expected a {kind} such as {_example(kind)}, got {shown(text)}")
    number, unit = match.groups()
    if unit not in units:
        if not unit:
            raise UnitError(f"{shown(text)} has no unit; write a {kind} such as {_example(kind)}")
        raise UnitError(f"unknown {kind} unit {shown(unit)} in {shown(text)}; use one of {', '.join(sorted(units))}")
    # Decimal arithmetic, so "500ns" is exactly the float nearest 5e-7 and values written back by
    # format_value parse to the same float (effective configurations round-trip).
    value = float(Decimal(number) * Decimal(repr(units[unit])))
    if not math.isfinite(value):
        raise UnitError(f"{shown(text)} is not a finite {kind}")
    return value


def format_value(value: float, kind: str) -> str:
    """Writes a canonical value back with a readable unit (``3e-7`` time -> ``"300ns"``)."""
    if kind == "time":
        for unit in ("s", "ms", "us", "ns", "ps"):
            scaled = value / _TIME[unit]
            if abs(scaled) >= 1 or unit == "ps":
                return f"{_trim(scaled)}{unit}"
    if kind == "frequency":
        for prefix in ("T", "G", "M", "k", ""):
            if abs(value) >= _DECIMAL[prefix] or prefix == "":
                return f"{_trim(value / _DECIMAL[prefix])}{prefix}Hz"
    if kind in ("size", "bandwidth"):
        suffix = "B" if kind == "size" else "B/s"
        for prefix, factor in sorted(_BINARY.items(), key=lambda kv: -kv[1]):
            if value >= factor and value % factor == 0 and kind == "size":
                return f"{int(value // factor)}{prefix}{suffix}"
        for prefix in ("P", "T", "G", "M", "k", ""):
            if abs(value) >= _DECIMAL[prefix] or prefix == "":
                return f"{_trim(value / _DECIMAL[prefix])}{prefix}{suffix}"
    return repr(value)


def _trim(x: float) -> str:
    text = f"{x:.9g}"
    return text


def _example(kind: str) -> str:
    return {"time": "'300ns'", "frequency": "'2.1GHz'", "size": "'4KiB'", "bandwidth": "'64GB/s'"}[kind]

