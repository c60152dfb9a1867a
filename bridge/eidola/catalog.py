"""The registered C++ models, their parameters and sockets, read from the compiled library.

This is the single source of the YAML schema, of argument checking in Python and of
``eidola describe``: the declarations live in C++ next to each model (``param_specs()``).
"""

from __future__ import annotations

import ctypes
import functools
import json
import math
from dataclasses import dataclass

from . import units
from ._native import native_library

__all__ = ["ParamSpec", "SocketSpec", "ModelSpec", "models", "model"]

_UNIT_KINDS = {"time", "frequency", "bandwidth", "size"}


@dataclass(frozen=True)
class ParamSpec:
    """One declared parameter: canonical default and range, unit kind and doc."""

    name: str                  #: dotted name, e.g. "memory.latency"
    type: str                  #: time, frequency, bandwidth, size, int, float, bool or choice
    unit: str                  #: canonical unit ("s", "Hz", "B/s", "B", or "")
    default: object            #: default in canonical units (a string for a choice)
    min: float                 #: smallest accepted value
    max: float                 #: largest accepted value (inf when unbounded)
    choices: tuple             #: accepted values of a choice
    doc: str                   #: one-line description

    def default_text(self) -> str:
        """The default as a user writes it in YAML (``300ns``, ``64``, ``true``)."""
        return self.format(self.default)

    def format(self, value) -> str:
        """A canonical value as a user writes it."""
        if self.type in _UNIT_KINDS:
            return units.format_value(value, self.type)
        if self.type == "bool":
            return "true" if value else "false"
        if self.type == "int":
            return str(int(value))
        return str(value)

    def to_yaml(self, value):
        """A canonical value as it is written in YAML: a string with a unit, or a plain int/bool/float."""
        if self.type in _UNIT_KINDS or self.type == "choice":
            return self.format(value)
        if self.type == "int":
            return int(value)
        if self.type == "bool":
            return bool(value)
        return float(value)

    def convert(self, value):
        """Checks a user value (YAML or keyword) and returns it in canonical units; raises ValueError."""
        t = self.type
        if t in _UNIT_KINDS:
            result = units.parse(value, t)
        elif t == "int":
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"expected an integer, got {value!r}")
            result = value
        elif t == "float":
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"expected a number, got {value!r}")
            result = float(value)
        elif t == "bool":
            if not isinstance(value, bool):
                raise ValueError(f"expected true or false, got {value!r}")
            return value
        else:
            if value not in self.choices:
                raise ValueError(f"expected one of {', '.join(self.choices)}, got {value!r}")
            return value
        if t == "size" and result != int(result):
            raise ValueError(f"expected a whole number of bytes, got {value!r}")
        if not (self.min <= result <= self.max):
            lo, hi = self.format(self.min), ("unbounded" if math.isinf(self.max) else self.format(self.max))
            raise ValueError(f"{value!r} is out of range [{lo}, {hi}]")
        return int(result) if t in ("int", "size") else result


@dataclass(frozen=True)
class SocketSpec:
    """One declared socket."""

    name: str           #: "initiator", or "targets[i]" for one socket per port
    direction: str      #: "initiator" or "target"
    protocol: str       #: "at", "lt" or "at+lt"
    multiplicity: str   #: "1" or "ports"
    doc: str            #: one-line description

    @property
    def base_name(self) -> str:
        """The name without an index pattern ("targets" for "targets[i]")."""
        return self.name.split("[", 1)[0]


@dataclass(frozen=True)
class ModelSpec:
    """A registered model."""

    name: str
    doc: str
    params: tuple
    sockets: tuple

    def param(self, name: str) -> ParamSpec | None:
        """The parameter of that name, or None."""
        return next((p for p in self.params if p.name == name), None)

    def socket(self, name: str) -> SocketSpec | None:
        """The socket of that base name, or None."""
        return next((s for s in self.sockets if s.base_name == name), None)


def _number(x):
    return math.inf if x is None else x


@functools.lru_cache(maxsize=None)
def models() -> dict[str, ModelSpec]:
    """Every registered model, by name, read from the compiled library."""
    fn = native_library().handle.eidola_catalog_json
    fn.restype = ctypes.c_char_p
    data = json.loads(fn().decode())
    out = {}
    for m in data["models"]:
        params = tuple(
            ParamSpec(p["name"], p["type"], p["unit"], p["default"], _number(p["min"]), _number(p["max"]),
                      tuple(p["choices"]), p["doc"])
            for p in m["params"]
        )
        sockets = tuple(SocketSpec(**s) for s in m["sockets"])
        out[m["name"]] = ModelSpec(m["name"], m["doc"], params, sockets)
    return out


def model(name: str) -> ModelSpec:
    """The registered model of that name; KeyError lists the known ones."""
    known = models()
    if name not in known:
        raise KeyError(f"no model named {name!r}; registered: {', '.join(sorted(known))}")
    return known[name]
