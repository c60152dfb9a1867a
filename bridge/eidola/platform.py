"""Platforms: components, their parameters and their bindings, as a plain description.

A `Platform` is what YAML loads into and what Python scripts build; it holds no C++ objects.
Elaboration happens later, in the simulation's child process (see `_sysc`). Parameters are kept
as the user wrote them (``"300ns"``) and converted against the C++ declarations (`catalog`)
when checked, so errors can name the YAML key or the component that holds the bad value.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from . import catalog
from .errors import ConfigError
from .plugin import PluginSpec, parse_plugin

__all__ = ["Platform", "Component", "PluginComponent", "SocketRef", "load_platform", "apply_overrides", "parse_socket"]

SCHEMA_VERSION = 1
_FABRIC_MODELS = {"ideal": "IdealFabric", "packet": "PacketFabric", "plugin": "Plugin"}
_TOP_KEYS = ("eidola", "name", "gpus", "address_map", "fabric", "check_protocol", "profile", "seed")


@dataclass(frozen=True)
class SocketRef:
    """One socket of one component: ``gpu0.initiator`` or ``fabric.targets[3]``."""

    component: str   #: component name
    socket: str      #: socket base name
    index: int | None = None  #: index within a per-port socket vector

    @property
    def path(self) -> str:
        """The socket's name as the bridge and error messages write it."""
        suffix = "" if self.index is None else f"[{self.index}]"
        return f"{self.component}.{self.socket}{suffix}"

    def __str__(self) -> str:
        return self.path


class _SocketVector:
    """The per-port sockets of a component, indexable: ``fabric.targets[i]``."""

    def __init__(self, component: str, socket: str):
        self._component, self._socket = component, socket

    def __getitem__(self, index: int) -> SocketRef:
        return SocketRef(self._component, self._socket, int(index))


@dataclass
class Component:
    """An instance of a registered model: its name, model and parameters as given."""

    model: str                                   #: registry name, e.g. "EidolonGpu"
    name: str                                    #: instance name, unique in the platform
    params: dict = field(default_factory=dict)   #: parameter values as written ("300ns", 64, true)
    origin: dict = field(default_factory=dict, compare=False)  #: parameter -> where it was written (for errors)

    def __getattr__(self, socket: str):
        if socket.startswith("_") or socket in ("model", "name", "params", "origin"):
            raise AttributeError(socket)
        spec = next((s for s in self.socket_specs() if s.base_name == socket), None)
        if spec is None:
            names = ", ".join(s.base_name for s in self.socket_specs()) or "none"
            raise AttributeError(f"component {self.name!r} ({self.model}) has no socket {socket!r}; it has: {names}")
        if spec.multiplicity == "1":
            return SocketRef(self.name, socket)
        return _SocketVector(self.name, socket)

    def socket_specs(self) -> tuple:
        """The sockets this component has, as declared in C++."""
        return catalog.model(self.model).sockets

    def port_count(self) -> int:
        """How many sockets each per-port socket vector has."""
        return int(self.resolved().get("ports", 1))

    def where(self, param: str) -> str:
        """Where a parameter was written: a YAML key path, or the component and parameter."""
        return self.origin.get(param, f"component {self.name!r} ({self.model}) parameter {param!r}")

    def resolved(self) -> dict:
        """Every declared parameter in canonical units, defaults filled in; ConfigError names the bad one."""
        spec = catalog.model(self.model)
        values = {p.name: p.default for p in spec.params}
        for key, raw in self.params.items():
            p = spec.param(key)
            if p is None:
                allowed = ", ".join(q.name for q in spec.params)
                raise ConfigError(f"{self.where(key)}: {self.model} has no parameter {key!r} (it has: {allowed})")
            try:
                values[key] = p.convert(raw)
            except ValueError as e:
                raise ConfigError(f"{self.where(key)}: {e} ({p.doc})") from None
        return values


class PluginComponent(Component):
    """A third-party TLM-2.0 model in a fabric slot (role "fabric") or in one GPU's slot (role "gpu")."""

    def __init__(self, name: str, spec: PluginSpec, role: str, ports: int = 1, gpu_id: int | None = None,
                 raw: dict | None = None):
        super().__init__("Plugin", name, {}, {})
        self.spec, self.role, self.ports, self.gpu_id = spec, role, ports, gpu_id
        self.raw = raw or {}  # the declaration as written, for the effective configuration

    def __eq__(self, other):
        return isinstance(other, PluginComponent) and (self.name, self.spec, self.role, self.ports, self.gpu_id) == \
            (other.name, other.spec, other.role, other.ports, other.gpu_id)

    def resolved(self) -> dict:
        return {"ports": self.ports} if self.role == "fabric" else {"id": self.gpu_id}

    def port_count(self) -> int:
        return self.ports

    def socket_specs(self) -> tuple:
        p = self.spec.protocol
        if self.role == "fabric":
            return (catalog.SocketSpec("targets[i]", "target", p, "ports", f"plugin socket {self.spec.sockets['targets'].text}"),
                    catalog.SocketSpec("initiators[i]", "initiator", p, "ports",
                                       f"plugin socket {self.spec.sockets['initiators'].text}"))
        return (catalog.SocketSpec("initiator", "initiator", p, "1", f"plugin socket {self.spec.sockets['initiator'].text}"),
                catalog.SocketSpec("target", "target", p, "1", f"plugin socket {self.spec.sockets['target'].text}"))


@dataclass
class Platform:
    """A platform: components, bindings, the address map and run settings."""

    name: str                                                       #: names the simulation
    address_map: dict = field(default_factory=lambda: {"base": 0, "stride": "1TiB"})  #: GPU i owns base + i*stride
    components: dict = field(default_factory=dict)                  #: name -> Component, in insertion order
    connections: list = field(default_factory=list)                 #: (initiator SocketRef, target SocketRef)
    profile: str | None = None                                      #: default profile path (absolute or relative to cwd)
    seed: int = 1                                                   #: seed of every random choice
    check_protocol: bool = False                                    #: insert the base-protocol checker on bindings
    source: str | None = field(default=None, compare=False)         #: the YAML file it came from
    shorthand: dict | None = field(default=None, compare=False)     #: the effective YAML (gpus/fabric form)

    def add(self, component: Component) -> Component:
        """Adds a component; its name must be new."""
        if component.name in self.components:
            raise ConfigError(f"platform {self.name!r}: a component named {component.name!r} already exists")
        if not isinstance(component, PluginComponent):
            catalog.model(component.model)
            if component.model == "EidolonGpu" and "id" not in component.params:
                component.params["id"] = len(self.gpus())  # the next window, in the order GPUs are added
        self.components[component.name] = component
        return component

    def connect(self, initiator: SocketRef, target: SocketRef) -> None:
        """Binds an initiator socket to a target socket (one call per binding)."""
        self.connections.append((initiator, target))

    def gpus(self) -> list[Component]:
        """Every GPU slot (eidolons and GPU plugins), in address-map order (by their `id`)."""
        gpus = [c for c in self.components.values()
                if c.model == "EidolonGpu" or (isinstance(c, PluginComponent) and c.role == "gpu")]
        return sorted(gpus, key=lambda c: c.resolved()["id"])

    def eidolons(self) -> list[Component]:
        """The eidolon GPUs only."""
        return [g for g in self.gpus() if g.model == "EidolonGpu"]

    def stride(self) -> int:
        """The window size in bytes."""
        return _address(self.address_map.get("stride", "1TiB"), "address_map.stride", self.source)

    def base(self) -> int:
        """The first byte of GPU 0's window."""
        return _address(self.address_map.get("base", 0), "address_map.base", self.source)

    def validate(self) -> None:
        """Checks parameters and bindings before anything is built; ConfigError names component and socket."""
        for c in self.components.values():
            spec = None if isinstance(c, PluginComponent) else catalog.model(c.model)
            if spec is not None and spec.param("ports") and "ports" not in c.params:
                c.params["ports"] = len(self.gpus())  # a fabric has one port per GPU unless told otherwise
            c.resolved()
        for c in self.components.values():
            if "ports" in c.resolved() and c.port_count() != len(self.gpus()):
                raise ConfigError(f"component {c.name!r} ({c.model}) has {c.port_count()} ports but the platform has "
                                  f"{len(self.gpus())} GPUs: one port per GPU")
        bound: dict[str, str] = {}
        for initiator, target in self.connections:
            for ref, direction in ((initiator, "initiator"), (target, "target")):
                spec = self._socket_spec(ref)
                if spec.direction != direction:
                    raise ConfigError(f"connection {initiator} -> {target}: {ref} is a {spec.direction} socket, "
                                      f"expected a {direction} socket here")
                if ref.path in bound:
                    raise ConfigError(f"socket {ref} is bound twice (to {bound[ref.path]} and to "
                                      f"{target if ref is initiator else initiator})")
                bound[ref.path] = str(target if ref is initiator else initiator)
        for c in self.components.values():
            ports = c.port_count()
            for s in c.socket_specs():
                indices = [None] if s.multiplicity == "1" else range(int(ports))
                for i in indices:
                    ref = SocketRef(c.name, s.base_name, i)
                    if ref.path not in bound:
                        raise ConfigError(f"socket {ref} ({s.direction}, {s.doc}) is not bound")
        self._check_windows()

    def _check_windows(self) -> None:
        """Each GPU owns one window of the address map: ids unique and inside the map."""
        gpus = self.gpus()
        owner: dict[int, str] = {}
        for g in gpus:
            i = int(g.resolved()["id"])
            if i in owner:
                raise ConfigError(f"GPUs {owner[i]!r} and {g.name!r} both have id {i}: their address windows overlap")
            if i >= len(gpus):
                raise ConfigError(f"GPU {g.name!r} has id {i}, outside the address map's {len(gpus)} windows "
                                  f"(ids 0..{len(gpus) - 1})")
            owner[i] = g.name
        if gpus and self.base() + len(gpus) * self.stride() > 2 ** 64:
            raise ConfigError(f"platform {self.name!r}: {len(gpus)} windows of {self.stride()} bytes from "
                              f"{self.base():#x} run past the 64-bit address space")

    def _socket_spec(self, ref: SocketRef) -> catalog.SocketSpec:
        comp = self.components.get(ref.component)
        if comp is None:
            raise ConfigError(f"socket {ref}: no component named {ref.component!r}")
        spec = next((s for s in comp.socket_specs() if s.base_name == ref.socket), None)
        if spec is None:
            raise ConfigError(f"socket {ref}: {comp.model} has no socket {ref.socket!r}")
        if (spec.multiplicity == "1") != (ref.index is None):
            raise ConfigError(f"socket {ref}: {ref.socket} is {'not ' if spec.multiplicity == '1' else ''}indexed")
        if ref.index is not None and not 0 <= ref.index < comp.port_count():
            raise ConfigError(f"socket {ref}: index out of range (the component has {comp.port_count()} ports)")
        return spec

    def describe(self) -> dict:
        """The platform as a plain document: every component with its parameters as given, every binding."""
        comps = []
        for c in self.components.values():
            if isinstance(c, PluginComponent):
                entry = {"name": c.name, "model": "Plugin", "role": c.role, "plugin": _plugin_yaml(c.spec)}
                entry.update({"ports": c.ports} if c.role == "fabric" else {"id": c.gpu_id})
            else:
                entry = {"name": c.name, "model": c.model, "params": dict(c.params)}
            comps.append(entry)
        return {"eidola": SCHEMA_VERSION, "name": self.name, "address_map": dict(self.address_map),
                "components": comps, "connections": [[str(i), str(t)] for i, t in self.connections],
                "check_protocol": self.check_protocol, "profile": self.profile, "seed": self.seed}

    def to_yaml(self, path=None) -> str:
        """Writes the platform as YAML (components and connections); `load_platform` reads it back."""
        text = yaml.safe_dump(self.describe(), sort_keys=False)
        if path is not None:
            Path(path).write_text(text)
        return text

    def graph(self, path) -> Path:
        """Draws components and bindings as Graphviz DOT at `path`; also SVG and PNG when `dot` is installed."""
        import shutil
        import subprocess

        lines = [f'digraph "{self.name}" {{', "  rankdir=LR;", '  node [shape=box, fontname="Helvetica"];',
                 '  edge [fontname="Helvetica", fontsize=9];']
        for c in self.components.values():
            label = c.spec.class_text if isinstance(c, PluginComponent) else c.model
            lines.append(f'  "{c.name}" [label="{c.name}\\n{label}"];')
        for i, t in self.connections:
            lines.append(f'  "{i.component}" -> "{t.component}" '
                         f'[label="{i.socket}{"" if i.index is None else f"[{i.index}]"} -> '
                         f'{t.socket}{"" if t.index is None else f"[{t.index}]"}"];')
        lines.append("}")
        path = Path(path)
        path.write_text("\n".join(lines) + "\n")
        if shutil.which("dot"):
            for fmt in ("svg", "png"):
                subprocess.run(["dot", f"-T{fmt}", str(path), "-o", str(path.with_suffix(f".{fmt}"))], check=True)
        return path

    def effective_yaml(self) -> str:
        """The platform as YAML with every default filled in, so a run can be repeated exactly."""
        if self.shorthand is not None:
            return yaml.safe_dump(self.shorthand, sort_keys=False)
        doc = self.describe()
        for entry, c in zip(doc["components"], self.components.values()):
            if not isinstance(c, PluginComponent):
                entry["params"] = {k: catalog.model(c.model).param(k).to_yaml(v) for k, v in c.resolved().items()}
        return yaml.safe_dump(doc, sort_keys=False)


def _plugin_yaml(spec: PluginSpec) -> dict:
    """A plugin declaration with absolute paths, so the effective configuration loads from anywhere."""
    out = {"headers": list(spec.headers)}
    if spec.include_dirs:
        out["include_dirs"] = list(spec.include_dirs)
    if spec.library:
        out["library"] = spec.library
    out.update({"class": spec.class_text, "args": list(spec.args), "protocol": spec.protocol})
    out.update({role: pattern.text for role, pattern in spec.sockets.items()})
    return out


def _loc(source) -> str:
    return f"{source}: " if source else ""


def _address(value, key: str, source) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            raise ConfigError(f"{_loc(source)}{key}: expected a non-negative address, got {value}")
        return value
    try:
        return int(catalog.ParamSpec(key, "size", "B", 0, 0, 2.0**64, (), "").convert(value))
    except ValueError as e:
        raise ConfigError(f"{_loc(source)}{key}: {e}") from None


def apply_overrides(doc: dict, overrides: dict, source) -> dict:
    """Applies dotted-key overrides (``{"fabric.latency": "700ns"}``) to a YAML document; returns a copy."""
    doc = copy.deepcopy(doc)
    for key, value in (overrides or {}).items():
        parts = key.split(".")
        node = doc
        for i, part in enumerate(parts[:-1]):
            child = node.get(part)
            if child is None:
                child = node[part] = {}
            if not isinstance(child, dict):
                raise ConfigError(f"{_loc(source)}override {key!r}: {'.'.join(parts[:i + 1])} is not a mapping")
            node = child
        node[parts[-1]] = value
    return doc


def _flatten(mapping: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in mapping.items():
        name = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flatten(v, name + "."))
        else:
            out[name] = v
    return out


def _nest(flat: dict) -> dict:
    out: dict = {}
    for key, value in flat.items():
        node = out
        parts = key.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
    return out


def load_platform(path, overrides: dict | None = None) -> Platform:
    """Loads a platform YAML file, applies dotted-key overrides, checks it and returns a Platform."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise ConfigError(f"{path}: cannot read the platform file ({e.strerror})") from None
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark else ""
        raise ConfigError(f"{path}:{where} is not valid YAML ({getattr(e, 'problem', e)})") from None
    if not isinstance(doc, dict):
        raise ConfigError(f"{path}: expected a mapping of platform keys at the top level")
    doc = apply_overrides(doc, overrides, path)
    return platform_from_dict(doc, source=str(path))


_SOCKET = re.compile(r"^([A-Za-z_][\w]*)\.([A-Za-z_]\w*)(?:\[(\d+)\])?$")


def parse_socket(text, where: str) -> SocketRef:
    """A socket reference as written in YAML: ``gpu0.initiator`` or ``fabric.targets[3]``."""
    m = _SOCKET.match(text) if isinstance(text, str) else None
    if not m:
        raise ConfigError(f"{where}: {text!r} is not a socket (expected component.socket or component.socket[i])")
    return SocketRef(m.group(1), m.group(2), None if m.group(3) is None else int(m.group(3)))


def _platform_from_components(doc: dict, source: str) -> Platform:
    """Builds a Platform from the general form: a list of components and a list of connections."""
    loc = _loc(source)
    allowed = ("eidola", "name", "address_map", "components", "connections", "check_protocol", "profile", "seed")
    for key in doc:
        if key not in allowed:
            raise ConfigError(f"{loc}unknown key {key!r}; expected one of: {', '.join(allowed)}")
    if doc.get("eidola") != SCHEMA_VERSION:
        raise ConfigError(f"{loc}eidola: expected schema version {SCHEMA_VERSION}, got {doc.get('eidola')!r}")
    base = Path(source).parent if source != "<dict>" else Path.cwd()
    plat = Platform(doc.get("name", Path(source).stem), address_map=dict(doc.get("address_map") or
                    {"base": 0, "stride": "1TiB"}), profile=doc.get("profile"), seed=doc.get("seed", 1),
                    check_protocol=doc.get("check_protocol", False), source=source)
    if plat.profile and source != "<dict>" and not Path(plat.profile).is_absolute():
        plat.profile = str(base / plat.profile)
    for n, entry in enumerate(doc.get("components") or []):
        where = f"{loc}components[{n}]"
        if not isinstance(entry, dict) or "name" not in entry or "model" not in entry:
            raise ConfigError(f"{where}: expected a mapping with name and model")
        if entry["model"] == "Plugin":
            role = entry.get("role", "fabric")
            spec = parse_plugin(entry.get("plugin"), f"{where}.plugin", base, role)
            plat.add(PluginComponent(entry["name"], spec, role, entry.get("ports", 1), entry.get("id"),
                                     raw=entry.get("plugin")))
            continue
        if entry["model"] not in catalog.models():
            raise ConfigError(f"{where}.model: no model named {entry['model']!r}; registered: "
                              f"{', '.join(catalog.models())}")
        params = entry.get("params") or {}
        plat.add(Component(entry["model"], entry["name"], dict(params),
                           {k: f"{where}.params.{k}" for k in params}))
    for n, pair in enumerate(doc.get("connections") or []):
        where = f"{loc}connections[{n}]"
        if not isinstance(pair, list) or len(pair) != 2:
            raise ConfigError(f"{where}: expected [initiator socket, target socket]")
        plat.connect(parse_socket(pair[0], where), parse_socket(pair[1], where))
    plat.validate()
    return plat


def platform_from_dict(doc: dict, source: str = "<dict>") -> Platform:
    """Builds a Platform from YAML: the shorthand (gpus / fabric sections) or the general form (components)."""
    if "components" in doc:
        return _platform_from_components(doc, source)
    loc = _loc(source)
    for key in doc:
        if key not in _TOP_KEYS:
            raise ConfigError(f"{loc}unknown key {key!r}; expected one of: {', '.join(_TOP_KEYS)}")
    if doc.get("eidola") != SCHEMA_VERSION:
        raise ConfigError(f"{loc}eidola: expected schema version {SCHEMA_VERSION}, got {doc.get('eidola')!r}")
    name = doc.get("name", Path(source).stem)
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{loc}name: expected a non-empty string, got {name!r}")
    for key in ("gpus", "fabric"):
        if not isinstance(doc.get(key), dict):
            raise ConfigError(f"{loc}{key}: expected a mapping, got {doc.get(key)!r}")
    amap = doc.get("address_map", {"base": 0, "stride": "1TiB"})
    if not isinstance(amap, dict) or set(amap) - {"base", "stride"}:
        raise ConfigError(f"{loc}address_map: expected a mapping with keys base and stride, got {amap!r}")
    seed = doc.get("seed", 1)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ConfigError(f"{loc}seed: expected an integer, got {seed!r}")
    check = doc.get("check_protocol", False)
    if not isinstance(check, bool):
        raise ConfigError(f"{loc}check_protocol: expected true or false, got {check!r}")
    profile = doc.get("profile")
    if profile is not None:
        if not isinstance(profile, str):
            raise ConfigError(f"{loc}profile: expected a path, got {profile!r}")
        if source != "<dict>" and not Path(profile).is_absolute():
            profile = str(Path(source).parent / profile)

    plat = Platform(name, address_map=dict(amap), profile=profile, seed=seed, check_protocol=check, source=source)
    gpus = dict(doc["gpus"])
    count = gpus.pop("count", None)
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ConfigError(f"{loc}gpus.count: expected a positive integer, got {count!r}")
    base = Path(source).parent if source != "<dict>" else Path.cwd()
    gpu_plugins = gpus.pop("plugins", {}) or {}
    if not isinstance(gpu_plugins, dict) or not all(isinstance(k, int) and 0 <= k < count for k in gpu_plugins):
        raise ConfigError(f"{loc}gpus.plugins: expected a mapping from GPU index (0..{count - 1}) to a plugin")
    gpu_params = _flatten(gpus)
    if "id" in gpu_params:
        raise ConfigError(f"{loc}gpus.id: GPU ids are given by the platform (0..count-1); remove this key")
    fabric = dict(doc["fabric"])
    kind = fabric.pop("model", "ideal")
    if kind not in _FABRIC_MODELS:
        raise ConfigError(f"{loc}fabric.model: expected one of {', '.join(_FABRIC_MODELS)}, got {kind!r}")
    fabric_params = _flatten(fabric)
    if "ports" in fabric_params:
        raise ConfigError(f"{loc}fabric.ports: the fabric has one port per GPU (gpus.count); remove this key")

    if kind == "plugin":
        raw = fabric.get("plugin")
        extra = set(fabric) - {"plugin"}
        if extra:
            raise ConfigError(f"{loc}fabric.{sorted(extra)[0]}: a plugin fabric takes its settings under fabric.plugin")
        fab = PluginComponent("fabric", parse_plugin(raw, f"{loc}fabric.plugin", base, "fabric"), "fabric", count,
                              raw=raw)
    else:
        fab = Component(_FABRIC_MODELS[kind], "fabric", {**fabric_params, "ports": count},
                        {k: f"{loc}fabric.{k}" for k in fabric_params})
    for i in range(count):
        if i in gpu_plugins:
            gpu = plat.add(PluginComponent(f"gpu{i}", parse_plugin(gpu_plugins[i], f"{loc}gpus.plugins.{i}", base, "gpu"),
                                           "gpu", gpu_id=i, raw=gpu_plugins[i]))
        else:
            gpu = plat.add(Component("EidolonGpu", f"gpu{i}", {**gpu_params, "id": i},
                                     {k: f"{loc}gpus.{k}" for k in gpu_params}))
        plat.connect(gpu.initiator, fab.targets[i])
        plat.connect(fab.initiators[i], gpu.target)
    plat.add(fab)
    plat.validate()
    if not plat.eidolons():
        raise ConfigError(f"{loc}gpus.plugins: at least one GPU must be an eidolon (they run the profile)")

    # The effective configuration: the same shorthand with every default written out.
    gpu_resolved = plat.eidolons()[0].resolved()
    gspec = catalog.model("EidolonGpu")
    gpus_out = {"count": count, **_nest({k: gspec.param(k).to_yaml(v) for k, v in gpu_resolved.items() if k != "id"})}
    if gpu_plugins:
        gpus_out["plugins"] = {i: _plugin_yaml(plat.components[f"gpu{i}"].spec) for i in gpu_plugins}
    if kind == "plugin":
        fabric_out = {"model": "plugin", "plugin": _plugin_yaml(fab.spec)}
    else:
        fspec = catalog.model(fab.model)
        fabric_out = {"model": kind, **_nest({k: fspec.param(k).to_yaml(v) for k, v in fab.resolved().items()
                                              if k != "ports"})}
    plat.shorthand = {
        "eidola": SCHEMA_VERSION, "name": name, "gpus": gpus_out,
        "address_map": {"base": plat.base(), "stride": catalog.ParamSpec("", "size", "B", 0, 0, 0, (), "")
                        .format(plat.stride())},
        "fabric": fabric_out, "check_protocol": check, "profile": profile, "seed": seed,
    }
    return plat
