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
from typing import TYPE_CHECKING, Any

from ..errors import shown
from ..run.native import native_library
from . import units

if TYPE_CHECKING:
    from .plugin import PluginSpec

__all__ = ["ParamSpec", "SocketSpec", "ModelSpec", "ROLES", "models", "model", "enum", "table_columns"]

#: The roles a model declares in its C++ registration.
ROLES = ("gpu", "fabric", "adapter", "checker", "test")

_UNIT_KINDS = {"time", "frequency", "bandwidth", "size"}
_LIST_KINDS = {"ints", "edges"}
_EDGE_KEYS = ("src", "dst", "bandwidth", "latency", "header", "count", "bidirectional")


#: The largest element of a list parameter (dims) and the largest node index of a custom edge; the
#: models declare 2^20 as their limit on ports and switches. Lists are not range-checked in C++.
MAX_LIST_ELEMENT = 2**20
MAX_EDGE_LANES = 1024  #: the most lanes a custom edge may have (PacketFabric's link.count limit)


def _node(value: object, where: str) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < MAX_LIST_ELEMENT:
        return str(value)
    if isinstance(value, str) and value[:1] == "s" and value[1:].isdigit() and len(value) <= 8 \
            and int(value[1:]) < MAX_LIST_ELEMENT:
        return value
    raise ValueError(f"{where}: expected a GPU index or a switch name s0, s1, ..., got {shown(value)}")


def _is_integer(text: str) -> bool:
    """Whether `text` spells a whole number (an optional sign, then digits)."""
    digits = text.strip().removeprefix("-").removeprefix("+")
    return digits.isdigit()


def _buffer_to_text(value: object) -> str:
    """A buffer depth as the C++ side reads it: "64" (packets) or "128B" (bytes)."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 1:
            raise ValueError(f"expected a positive number of packets, got {shown(value)}")
        return str(value)
    if isinstance(value, str) and value.strip().isdigit():
        raise ValueError(f"expected a bare integer (packets) or a size with a unit ('128B'), got {shown(value)}, a "
                         f"string: write {value.strip()} without quotes for packets, or '{value.strip()}B' for bytes")
    nbytes = units.parse(value, "size")
    if nbytes < 1 or nbytes != int(nbytes):
        raise ValueError(f"expected a positive whole number of bytes, got {shown(value)}")
    return f"{int(nbytes)}B"


def _edges_to_text(edges: object) -> str:
    """Custom-topology edges as the canonical text the C++ topology parses (numbers in SI units, '-' for default)."""
    if not isinstance(edges, list):
        raise ValueError(f"expected a list of edges {{src, dst, bandwidth, latency, ...}}, got {shown(edges)}")
    out = []
    for i, e in enumerate(edges):
        where = f"edge {i}"
        if not isinstance(e, dict) or "src" not in e or "dst" not in e:
            raise ValueError(f"{where}: expected a mapping with at least src and dst, got {shown(e)}")
        unknown = set(e) - set(_EDGE_KEYS)
        if unknown:
            raise ValueError(f"{where}: unknown key {shown(sorted(unknown)[0])}; expected {', '.join(_EDGE_KEYS)}")
        fields = [_node(e["src"], where), _node(e["dst"], where)]
        for key, kind in (("bandwidth", "bandwidth"), ("latency", "time"), ("header", "size")):
            if key in e:
                try:
                    fields.append(repr(units.parse(e[key], kind)) if kind != "size" else str(int(units.parse(e[key], kind))))
                except units.UnitError as err:
                    raise ValueError(f"{where} {key}: {err}") from None
            else:
                fields.append("-")
        count = e.get("count", "-")
        if count != "-" and (isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_EDGE_LANES):
            raise ValueError(f"{where} count: expected an integer from 1 to {MAX_EDGE_LANES}, got {shown(count)}")
        fields.append(str(count))
        both = e.get("bidirectional", False)
        if not isinstance(both, bool):
            raise ValueError(f"{where} bidirectional: expected true or false, got {shown(both)}")
        out.append(" ".join(fields))
        if both:
            out.append(" ".join([fields[1], fields[0]] + fields[2:]))
    return ";".join(out)


def _edges_to_yaml(text: str) -> list[Any]:
    """The inverse of _edges_to_text, for the effective configuration (each direction listed)."""
    edges = []
    for part in filter(None, text.split(";")):
        src, dst, bw, lat, header, count = part.split()
        edge = {"src": int(src) if src.isdigit() else src, "dst": int(dst) if dst.isdigit() else dst}
        if bw != "-":
            edge["bandwidth"] = units.format_value(float(bw), "bandwidth")
        if lat != "-":
            edge["latency"] = units.format_value(float(lat), "time")
        if header != "-":
            edge["header"] = units.format_value(float(header), "size")
        if count != "-":
            edge["count"] = int(count)
        edges.append(edge)
    return edges


@dataclass(frozen=True)
class ParamSpec:
    """One declared parameter: canonical default and range, unit kind and doc."""

    name: str                  #: dotted name, e.g. "memory.latency"
    type: str                  #: time, frequency, bandwidth, size, int, float, bool, choice, ints, edges or buffer
    unit: str                  #: canonical unit ("s", "Hz", "B/s", "B", or "")
    default: object            #: default in canonical units (a string for a choice)
    min: float                 #: smallest accepted value
    max: float                 #: largest accepted value (inf when unbounded)
    choices: tuple[Any, ...]             #: accepted values of a choice
    doc: str                   #: one-line description

    def default_text(self) -> str:
        """The default as a user writes it in YAML (``300ns``, ``64``, ``true``)."""
        return self.format(self.default)

    def format(self, value: Any) -> str:
        """A canonical value as a user writes it."""
        if self.type in _LIST_KINDS:
            return str(self.to_yaml(value))
        if self.type == "buffer":
            return str(self.to_yaml(value))
        if self.type in _UNIT_KINDS:
            return units.format_value(value, self.type)
        if self.type == "bool":
            return "true" if value else "false"
        if self.type == "int":
            return str(int(value))
        return str(value)

    def to_yaml(self, value: Any) -> Any:
        """A canonical value as it is written in YAML: a string with a unit, or a plain int/bool/float."""
        if self.type == "ints":
            return [int(x) for x in value.split()]
        if self.type == "edges":
            return _edges_to_yaml(value)
        if self.type == "buffer":
            text = str(value)
            return units.format_value(float(text[:-1]), "size") if text.endswith("B") else int(text)
        if self.type in _UNIT_KINDS or self.type == "choice":
            return self.format(value)
        if self.type == "int":
            return int(value)
        if self.type == "bool":
            return bool(value)
        return float(value)

    def convert(self, value: Any) -> Any:
        """Checks a user value (YAML or keyword) and returns it in canonical units; raises ValueError."""
        t = self.type
        if t == "ints":
            if not isinstance(value, list) or len(value) > 16 or not all(
                    isinstance(x, int) and not isinstance(x, bool) and 0 < x <= MAX_LIST_ELEMENT for x in value):
                raise ValueError(f"expected a list of at most 16 integers from 1 to {MAX_LIST_ELEMENT}, got {shown(value)}")
            return " ".join(str(x) for x in value)
        if t == "edges":
            return _edges_to_text(value)
        if t == "buffer":
            return _buffer_to_text(value)
        if t in _UNIT_KINDS:
            result = units.parse(value, t)
        elif t == "int":
            if isinstance(value, bool) or not isinstance(value, int):
                # A quoted number in YAML, or a str given to load_platform's overrides, is the commonest case.
                quoted = ", a string: write it without quotes" if isinstance(value, str) and _is_integer(value) else ""
                raise ValueError(f"expected an integer, got {shown(value)}{quoted}")
            result = value
        elif t == "float":
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"expected a number, got {shown(value)}")
            result = float(value)
        elif t == "bool":
            if not isinstance(value, bool):
                raise ValueError(f"expected true or false, got {shown(value)}")
            return value
        else:
            if value not in self.choices:
                raise ValueError(f"expected one of {', '.join(self.choices)}, got {shown(value)}")
            return value
        if t == "size" and result != int(result):
            raise ValueError(f"expected a whole number of bytes, got {shown(value)}")
        if not (self.min <= result <= self.max):
            lo, hi = self.format(self.min), ("unbounded" if math.isinf(self.max) else self.format(self.max))
            raise ValueError(f"{shown(value)} is out of range [{lo}, {hi}]")
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
    """A model a component can be: registered in C++, or declared as a third-party plugin."""

    name: str                     #: registry name ("EidolonGpu"), or a plugin's C++ class as written
    doc: str                      #: one-line description
    params: tuple[ParamSpec, ...]  #: every parameter
    sockets: tuple[SocketSpec, ...]  #: every socket
    role: str                     #: what the platform uses it as: one of ROLES
    plugin: PluginSpec | None = None  #: how to build a third-party model (None: by registry name)

    @property
    def replays_profile(self) -> bool:
        """Whether it runs profile programs: an eidolon GPU (it declares its workgroup count)."""
        return self.role == "gpu" and self.param("workgroups") is not None

    def param(self, name: str) -> ParamSpec | None:
        """The parameter of that name, or None."""
        return next((p for p in self.params if p.name == name), None)

    def declared(self, name: str) -> ParamSpec:
        """The parameter of that name; KeyError if it has none."""
        p = self.param(name)
        if p is None:
            raise KeyError(f"{self.name} has no parameter {name!r}")
        return p

    def socket(self, name: str) -> SocketSpec | None:
        """The socket of that base name, or None."""
        return next((s for s in self.sockets if s.base_name == name), None)


def _number(x: float | None) -> float:
    return math.inf if x is None else x


def _default(p: dict[str, Any]) -> Any:
    """The declared default as Python holds a converted value (bool for bool, int for counts)."""
    if p["type"] == "bool":
        return bool(p["default"])
    if p["type"] in ("int", "size"):
        return int(p["default"])
    return p["default"]


@functools.cache
def _catalog() -> dict[str, Any]:
    fn = native_library().handle.eidola_catalog_json
    fn.restype = ctypes.c_char_p
    data: dict[str, Any] = json.loads(fn().decode())
    return data


def enum(name: str) -> tuple[str, ...]:
    """The value names of an enum shared with C++ ("op_kind", "cond", "wait_mode", "atomic"), in code order."""
    return tuple(_catalog()["enums"][name])


def table_columns(name: str) -> tuple[str, ...]:
    """The columns of a result table ("gpus", "links", ...), as C++ declares them beside the statistics."""
    return tuple(_catalog()["tables"][name])


@functools.cache
def models() -> dict[str, ModelSpec]:
    """Every registered model, by name, read from the compiled library."""
    data = _catalog()
    out = {}
    for m in data["models"]:
        params = tuple(
            ParamSpec(p["name"], p["type"], p["unit"], _default(p), _number(p["min"]), _number(p["max"]),
                      tuple(p["choices"]), p["doc"])
            for p in m["params"]
        )
        sockets = tuple(SocketSpec(**s) for s in m["sockets"])
        out[m["name"]] = ModelSpec(m["name"], m["doc"], params, sockets, m["role"])
    return out


def model(name: str) -> ModelSpec:
    """The registered model of that name; KeyError lists the known ones."""
    known = models()
    if name not in known:
        raise KeyError(f"no model named {name!r}; registered: {', '.join(sorted(known))}")
    return known[name]
