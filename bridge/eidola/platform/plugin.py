"""Third-party TLM-2.0 models named in YAML: the declaration, checked before anything is built.

A plugin names header files, include directories, an optional shared library, a C++ class
(templates allowed: ``vendor::Bus<8,8>``), constructor arguments after the module name, its
protocol (``at`` or ``lt``) and its socket names as patterns (``target_socket[{i}]``). Nothing
else is taken from the file: the class name and patterns must fit a strict grammar, so no C++
code is ever built from free text (the bridge looks the class up, it does not compile text).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError, shown
from ..inputs import check_input
from .catalog import ModelSpec, ParamSpec, SocketSpec

__all__ = ["PluginSpec", "parse_plugin", "parse_class_name", "SocketPattern", "plugin_model"]

_IDENT = r"[A-Za-z_]\w*"
_QUALIFIED = rf"(?:::)?{_IDENT}(?:::{_IDENT})*"
_TEMPLATE_ARG = rf"(?:-?\d+|true|false|{_QUALIFIED})"
_CLASS = re.compile(rf"^\s*({_QUALIFIED})\s*(?:<\s*({_TEMPLATE_ARG}(?:\s*,\s*{_TEMPLATE_ARG})*)\s*>)?\s*$")
_SEGMENT = rf"{_IDENT}(?:\[(?:\{{i\}}|\d+)\])?"
_PATTERN = re.compile(rf"^{_SEGMENT}(?:\.{_SEGMENT})*$")
_KEYS = {"headers", "include_dirs", "library", "class", "args", "protocol", "targets", "initiators", "initiator",
         "target", "prelude", "defines", "setup", "setup_each", "workers"}
#: The most worker threads `workers` may ask of an AT-to-LT adapter (its parameter's own bound).
MAX_WORKERS = 1 << 20
_DEFINE = re.compile(rf"^{_IDENT}$")
#: Placeholders of setup statements; other braces pass through untouched.
SETUP_PLACEHOLDERS = ("{self}",)
SETUP_EACH_PLACEHOLDERS = ("{self}", "{i}", "{base}", "{size}", "{last}")


@dataclass(frozen=True)
class SocketPattern:
    """A socket path in the plugin object: dotted members, each optionally indexed by a number or {i}."""

    text: str

    def resolve(self, index: int | None) -> list[tuple[str, int | None]]:
        """The path for port `index`: [(member, index or None), ...]."""
        steps: list[tuple[str, int | None]] = []
        for segment in self.text.split("."):
            name, _, rest = segment.partition("[")
            if not rest:
                steps.append((name, None))
            else:
                token = rest.rstrip("]")
                steps.append((name, index if token == "{i}" else int(token)))
        return steps


@dataclass(frozen=True)
class PluginSpec:
    """A checked plugin declaration; paths are absolute."""

    headers: tuple[Any, ...]            #: header files cppyy parses
    include_dirs: tuple[Any, ...]       #: directories added to the include path
    library: str | None       #: shared library loaded before instantiation (None: header-only)
    class_path: tuple[Any, ...]         #: ("vendor", "Bus"): the class, by namespace path
    template_args: tuple[Any, ...]      #: template arguments: ints, bools, or type paths (tuples)
    class_text: str           #: the class as written, for messages
    args: tuple[Any, ...]               #: constructor arguments after the module name
    protocol: str             #: "at" or "lt": what its targets accept
    sockets: dict[str, Any]             #: role -> SocketPattern (targets/initiators, or initiator/target)
    prelude: tuple[str, ...] = ()       #: before `headers`: absolute header paths, or code lines (start with #)
    defines: tuple[tuple[str, str], ...] = ()  #: (macro, value) defined before anything is included
    setup: tuple[str, ...] = ()         #: C++ statements run once after construction ({self})
    setup_each: tuple[str, ...] = ()    #: statements run per GPU window ({self} {i} {base} {size} {last})
    #: an LT target's AT-to-LT adapters: most b_transport calls in progress at once each (0: one per request in
    #: flight); each is a thread with SystemC's default stack, which the run's memory limit counts
    workers: int = 0


def parse_class_name(text: str, where: str) -> tuple[tuple[str, ...], tuple[Any, ...]]:
    """Splits ``ns::Class<4, true, ns::T>`` into its path and template arguments; ConfigError if it is not one."""
    match = _CLASS.match(text) if isinstance(text, str) else None
    if not match:
        raise ConfigError(f"{where}: {text!r} is not a C++ class name (expected e.g. vendor::Bus or vendor::Bus<4,4>;"
                          " only names, integers and true/false are allowed as template arguments)")
    path = tuple(p for p in match.group(1).split("::") if p)
    args: list[Any] = []
    for token in (t.strip() for t in (match.group(2) or "").split(",") if t.strip()):
        if re.fullmatch(r"-?\d+", token):
            args.append(int(token))
        elif token in ("true", "false"):
            args.append(token == "true")
        else:
            args.append(tuple(p for p in token.split("::") if p))
    return path, tuple(args)


def parse_plugin(raw: object, where: str, base: Path, role: str) -> PluginSpec:
    """Checks a plugin mapping from YAML (`role` "fabric" or "gpu"); relative paths are taken from `base`."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: expected a mapping with headers, class, protocol and socket patterns")
    unknown = set(raw) - _KEYS
    if unknown:
        raise ConfigError(f"{where}.{sorted(unknown)[0]}: unknown key; expected {', '.join(sorted(_KEYS))}")

    def paths(key: str, must_exist: bool) -> tuple[str, ...]:
        value = raw.get(key, [])
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{where}.{key}: expected a list of paths, got {value!r}")
        out = [str((base / v).resolve()) if not Path(v).is_absolute() else v for v in value]
        for v, p in zip(value, out):
            if must_exist and not Path(p).exists():
                raise ConfigError(f"{where}.{key}: {shown(v)} does not exist (looked for {p})")
            if key != "include_dirs":  # the compiler or the loader reads these: regular files of sane size
                try:
                    check_input(p, key[:-1] if key.endswith("s") else key, sized=key == "headers")
                except ConfigError as e:
                    raise ConfigError(f"{where}.{key}: {e}") from None
        return tuple(out)

    include_dirs = paths("include_dirs", True)
    headers = _headers(raw.get("headers", []), where, base, include_dirs)
    if not headers:
        raise ConfigError(f"{where}.headers: at least one header is needed to declare the class")
    library = raw.get("library")
    if library is not None:
        library = paths("library", True)[0]
    if "class" not in raw:
        raise ConfigError(f"{where}.class: missing; name the C++ class, e.g. vendor::Bus<4,4>")
    class_path, template_args = parse_class_name(raw["class"], f"{where}.class")
    args = raw.get("args", [])
    if not isinstance(args, list) or not all(isinstance(a, (int, float, str, bool)) for a in args):
        raise ConfigError(f"{where}.args: expected a list of numbers, strings or booleans, got {args!r}")
    protocol = raw.get("protocol", "at")
    if protocol not in ("at", "lt"):
        raise ConfigError(f"{where}.protocol: expected at or lt, got {protocol!r}")
    roles = ("targets", "initiators") if role == "fabric" else ("initiator", "target")
    sockets = {}
    for key in roles:
        text = raw.get(key)
        if not isinstance(text, str) or not _PATTERN.match(text):
            raise ConfigError(f"{where}.{key}: expected a socket pattern such as "
                              f"{'target_socket[{i}]' if role == 'fabric' else 'initiator_socket'}, got {text!r}")
        if role == "gpu" and "{i}" in text:
            raise ConfigError(f"{where}.{key}: a GPU slot has one {key} socket; remove the {{i}}")
        sockets[key] = SocketPattern(text)
    for key in set(raw) & ({"targets", "initiators", "initiator", "target"} - set(roles)):
        raise ConfigError(f"{where}.{key}: not a socket of a {role} plugin (it has {' and '.join(roles)})")
    workers = raw.get("workers", 0)
    if isinstance(workers, bool) or not isinstance(workers, int) or not 0 <= workers <= MAX_WORKERS:
        raise ConfigError(f"{where}.workers: expected a whole number of worker threads from 0 (one per request in "
                          f"flight) to {MAX_WORKERS}, got {shown(workers)}")
    if workers and protocol != "lt":
        raise ConfigError(f"{where}.workers: only an LT plugin (protocol: lt) gets AT-to-LT adapters, whose workers "
                          f"these are; this one is {protocol}")
    return PluginSpec(headers, include_dirs, library, class_path, template_args, raw["class"], tuple(args), protocol,
                      sockets, _prelude(raw.get("prelude"), f"{where}.prelude", base),
                      _defines(raw.get("defines"), f"{where}.defines"),
                      _statements(raw.get("setup"), f"{where}.setup"),
                      _statements(raw.get("setup_each"), f"{where}.setup_each"), workers)


def _headers(value: object, where: str, base: Path, include_dirs: tuple[str, ...]) -> tuple[str, ...]:
    """The headers as absolute paths, each looked up as ``#include "h"`` is by a compiler given
    ``-I`` for every include_dirs entry: beside the platform file first, then along include_dirs in order."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}.headers: expected a list of paths, got {value!r}")
    out = []
    for v in value:
        if Path(v).is_absolute():
            places = [Path(v)]
        else:
            places = [(Path(d) / v).resolve() for d in (str(base), *include_dirs)]
        found = next((p for p in places if p.exists()), None)
        if found is None:
            raise ConfigError(f"{where}.headers: {shown(v)} does not exist (looked for {', '.join(map(str, places))})")
        try:  # the compiler reads it: a regular file of sane size (not /dev/zero, a FIFO or a folder)
            check_input(found, "header", sized=True)
        except ConfigError as e:
            raise ConfigError(f"{where}.headers: {e}") from None
        out.append(str(found))
    return tuple(out)


def _strings(value: object, where: str, what: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise ConfigError(f"{where}: expected a list of {what}, got {value!r}")
    if any("\n" in v for v in value):
        raise ConfigError(f"{where}: one {what[:-1]} per list item (no line breaks inside one)")
    return [v.strip() for v in value]


def _prelude(value: object, where: str, base: Path) -> tuple[str, ...]:
    """Header paths (made absolute, must exist) and code lines (anything starting with '#' or holding a space,
    a ';' or a brace), in order."""
    out = []
    for k, item in enumerate(_strings(value, where, "headers or code lines")):
        if item.startswith("#") or any(c in item for c in " ;{}()"):
            out.append(item)
            continue
        path = Path(item) if Path(item).is_absolute() else (base / item).resolve()
        if not path.exists():
            raise ConfigError(f"{where}[{k}]: {shown(item)} is neither a code line nor an existing header "
                              f"(looked for {path})")
        try:
            check_input(path, "header")
        except ConfigError as e:
            raise ConfigError(f"{where}[{k}]: {e}") from None
        out.append(str(path))
    return tuple(out)


def _defines(value: object, where: str) -> tuple[tuple[str, str], ...]:
    """`{NAME: value}` or `[NAME, NAME=value]`; a value is written as given (true/false become 1/0)."""
    pairs: list[tuple[str, object]] = []
    if isinstance(value, dict):
        pairs = list(value.items())
    elif isinstance(value, list):
        for item in value:
            if not isinstance(item, str):
                raise ConfigError(f"{where}: expected NAME or NAME=VALUE strings, got {item!r}")
            name, _, text = item.partition("=")
            pairs.append((name, text if "=" in item else ""))
    elif value is not None:
        raise ConfigError(f"{where}: expected a mapping of macro to value, or a list of NAME=VALUE, got {value!r}")
    out = []
    for name, v in pairs:
        if not isinstance(name, str) or not _DEFINE.match(name):
            raise ConfigError(f"{where}: {name!r} is not a macro name")
        if isinstance(v, bool):
            text = "1" if v else "0"
        elif v is None:
            text = ""
        elif isinstance(v, (int, float, str)):
            text = str(v)
        else:
            raise ConfigError(f"{where}.{name}: expected a number or a string, got {v!r}")
        if "\n" in text:
            raise ConfigError(f"{where}.{name}: a macro value is one line")
        out.append((name, text))
    return tuple(out)


def _statements(value: object, where: str) -> tuple[str, ...]:
    """C++ statements, one per item; a missing final ';' is added."""
    return tuple(v if v.endswith((";", "}")) else v + ";" for v in _strings(value, where, "C++ statements"))


def plugin_model(spec: PluginSpec, role: str) -> ModelSpec:
    """The model description of a plugin declaration: its sockets come from the patterns.

    A fabric plugin has one `targets[i]` and `initiators[i]` socket per port (parameter `ports`);
    a GPU plugin has one `initiator` and one `target` and owns the window of its `id`.
    """
    if role == "fabric":
        params: tuple[Any, ...] = (ParamSpec("ports", "int", "", 1, 1, math.inf, (), "ports, one per GPU"),)
        multiplicity, names = "ports", {"targets": "targets[i]", "initiators": "initiators[i]"}
    else:
        params = (ParamSpec("id", "int", "", 0, 0, math.inf, (), "GPU index: the address window it owns"),)
        multiplicity, names = "1", {"initiator": "initiator", "target": "target"}
    sockets = tuple(
        SocketSpec(names[key], "target" if key.startswith("target") else "initiator", spec.protocol, multiplicity,
                   f"plugin socket {pattern.text}")
        for key, pattern in spec.sockets.items())
    doc = f"third-party TLM-2.0 {role} model {spec.class_text} (from {', '.join(Path(h).name for h in spec.headers)})"
    return ModelSpec(spec.class_text, doc, params, sockets, role, plugin=spec)
