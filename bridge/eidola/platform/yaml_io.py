"""Platform YAML: the shorthand (gpus / fabric sections) and the general form (components and connections).

Both forms load into the same `Platform`. The general form is what `Platform.to_yaml()` writes;
the shorthand is written back with every default filled in (the effective configuration), so a
run can be repeated exactly.
"""

from __future__ import annotations

import copy
import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml

from ..errors import ConfigError, shown
from ..inputs import decode_text, load_yaml, read_input
from . import catalog, units
from .collectives import parse_collectives
from .model import Component, Platform, SocketRef
from .plugin import PluginSpec, parse_plugin, plugin_model

__all__ = ["load_platform", "platform_from_dict", "apply_overrides", "parse_socket", "plugin_component", "describe",
           "to_yaml", "effective_yaml", "parse_limits", "reject_unknown_keys", "SCHEMA_VERSION", "MAX_GPUS",
           "FLOW_COUNTERPART"]

SCHEMA_VERSION = 1
#: The shorthand's fabric.model values and the models they name.
_FABRIC_MODELS = {"ideal": "IdealFabric", "packet": "PacketFabric", "flow": "FlowFabric", "plugin": "Plugin"}
#: What a GPU issues as one flow on fabric.model: flow unless gpus.flow says otherwise (docs/fabrics.md).
DEFAULT_FLOW = "64MiB"
#: The GPUs' stall watchdog on fabric.model: flow unless gpus.watchdog says otherwise (the GPU allows it per window
#: of the packets its outstanding flows stand for: GpuInitiator::watchdog_allowance).
DEFAULT_FLOW_WATCHDOG = "1s"
#: Packet fabric keys that a flow fabric accepts and ignores (no buffers, channels or deadlocks in a fluid).
FLOW_IGNORED_KEYS = ("watchdog",)
#: Packet fabric choices a flow fabric has no counterpart for: key -> (the choice it behaves as, what it does
#: instead). Any other choice is accepted with one line of warning.
FLOW_IGNORED_CHOICES = {
    "switch.injection_order": ("arrival", "its writes through a link go first come, first served"),
    "switch.arbitration": ("bytes", "a link's writes and acknowledgements share it as fabric.flow.responses says"),
}
#: Topologies where one virtual channel a link (switch.vcs: 1) makes the packet fabric's routers block at the head of
#: their queues, which the flow fabric has no counterpart for
_ONE_VC_TOPOLOGIES = ("torus2d", "mesh2d")
#: Overrides that make the flow fabric the packet fabric's counterpart, whatever a platform file chose: the GPU's
#: issue gates modelled and acknowledgements served first (docs/fabrics.md, "Flow"). They are the defaults; the
#: real-system platforms set queue and fair for their calibration, and a comparison of flow against packet that
#: ran those would measure a different model. Every such comparison (tests, bench, experiments) takes them from here.
FLOW_COUNTERPART: Mapping[str, str] = MappingProxyType({"fabric.flow.issue": "gates", "fabric.flow.responses": "first"})
_TOP_KEYS = ("eidola", "name", "gpus", "address_map", "fabric", "check_protocol", "profile", "seed", "limits",
             "collectives")
#: The most GPUs a platform may have: validation takes time in proportion (about 0.3 ms a GPU).
MAX_GPUS = 16384
#: The longest wall-time limit a platform may set (a day).
MAX_WALL_S = 86400.0
#: The longest simulated time a platform may stop at (an hour of simulated time is far beyond any kernel).
MAX_SIM_TIME_S = 3600.0
#: The largest memory limit a platform may set (1 PB: far beyond any machine, so never a real cap).
MAX_MEMORY_B = 1e15
#: Platform files are small; a document larger than this with its aliases expanded is an attack or a mistake.
MAX_PLATFORM_NODES = 200_000


def plugin_component(name: str, raw: object, role: str, params: dict[str, Any], where: str, base: Path,
                     origin: dict[str, Any] | None = None) -> Component:
    """A component for a third-party class declared as in YAML (`raw`), in a `role` slot ("fabric" or "gpu")."""
    spec = parse_plugin(raw, where, base, role)
    return Component("Plugin", name, dict(params), origin or {}, spec=plugin_model(spec, role),
                     declared=dict(raw) if isinstance(raw, dict) else None)


def describe(platform: Platform) -> dict[str, Any]:
    """The platform as a plain document: every component with its parameters as given, every binding."""
    comps = []
    for c in platform.components.values():
        entry: dict[str, Any] = {"name": c.name, "model": c.model}
        if c.spec.plugin is not None:
            entry.update({"role": c.role, "plugin": _plugin_yaml(c.spec.plugin), **c.params})
        else:
            entry["params"] = dict(c.params)
        comps.append(entry)
    return {"eidola": SCHEMA_VERSION, "name": platform.name, "address_map": dict(platform.address_map),
            "components": comps, "connections": [[str(i), str(t)] for i, t in platform.connections],
            "check_protocol": platform.check_protocol, "profile": platform.profile, "seed": platform.seed,
            **({"limits": _limits_yaml(platform.limits)} if platform.limits else {}),
            **({"collectives": dict(platform.collectives)} if platform.collectives else {})}


def to_yaml(platform: Platform, path: str | Path | None = None) -> str:
    """Writes the platform as YAML (components and connections); `load_platform` reads it back."""
    text = yaml.safe_dump(describe(platform), sort_keys=False)
    if path is not None:
        Path(path).write_text(text)
    return text


_EFFECTIVE_CACHE: dict[str, str] = {}  # repr of the document -> its YAML text (see effective_yaml)
_EFFECTIVE_CACHE_SIZE = 64


def effective_yaml(platform: Platform, profile: str | None = None) -> str:
    """The platform as YAML with every default filled in, so a run can be repeated exactly; `profile` (a path)
    stands in for the platform's own where the run was given another ("": a profile not read from a file)."""
    # Why the profile is taken now rather than from the shorthand: the shorthand is made when the file is read,
    # and a run given `--profile` wrote `profile: null` (or the file's own) into what it says it simulated.
    used = platform.profile if profile is None else (profile or None)
    if platform.shorthand is not None:
        return _dump_cached({**platform.shorthand, "profile": used})
    doc = describe(platform)
    doc["profile"] = used
    for entry, c in zip(doc["components"], platform.components.values()):
        if "params" in entry:
            entry["params"] = {k: c.spec.declared(k).to_yaml(v) for k, v in c.resolved().items()}
    return _dump_cached(doc)


def _dump_cached(doc: Any) -> str:
    """yaml.safe_dump(doc), remembered by the document's repr.

    Why: every simulate() records the effective platform, and PyYAML's emitter takes ~3 ms for the
    4-GPU default, a tenth of a small run; a batch repeats the same platform. The repr of plain
    dicts, lists and scalars determines the dump, so equal reprs give the same text. The platform
    is mutable, so the cache is keyed by its content, never by the object.
    """
    key = repr(doc)
    text = _EFFECTIVE_CACHE.get(key)
    if text is None:
        text = yaml.safe_dump(doc, sort_keys=False)
        if len(_EFFECTIVE_CACHE) >= _EFFECTIVE_CACHE_SIZE:
            _EFFECTIVE_CACHE.pop(next(iter(_EFFECTIVE_CACHE)))
        _EFFECTIVE_CACHE[key] = text
    return text


def _limits_yaml(limits: dict[str, float]) -> dict[str, str]:
    return {k: units.format_value(v, "size" if k == "memory" else "time") for k, v in limits.items()}


def _plugin_yaml(spec: PluginSpec) -> dict[str, Any]:
    """A plugin declaration with absolute paths, so the effective configuration loads from anywhere."""
    out: dict[str, Any] = {"headers": list(spec.headers)}
    if spec.include_dirs:
        out["include_dirs"] = list(spec.include_dirs)
    if spec.library:
        out["library"] = spec.library
    out.update({"class": spec.class_text, "args": list(spec.args), "protocol": spec.protocol})
    out.update({role: pattern.text for role, pattern in spec.sockets.items()})
    if spec.workers:
        out["workers"] = spec.workers
    return out


def _declaration(c: Component) -> PluginSpec:
    """The plugin declaration behind a component (it must be a plugin)."""
    if c.spec.plugin is None:
        raise TypeError(f"component {c.name!r} is not a plugin")
    return c.spec.plugin


def _loc(source: object) -> str:
    return f"{source}: " if source else ""


def apply_overrides(doc: dict[str, Any], overrides: dict[str, Any] | None, source: object) -> dict[str, Any]:
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
                raise ConfigError(f"{_loc(source)}override {shown(key)}: {'.'.join(parts[:i + 1])} is not a mapping")
            node = child
        node[parts[-1]] = value
    return doc


def _flatten(mapping: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out = {}
    for k, v in mapping.items():
        name = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flatten(v, name + "."))
        else:
            out[name] = v
    return out


def _nest(flat: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in flat.items():
        node = out
        parts = key.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
    return out


def load_platform(path: str | os.PathLike[str], overrides: dict[str, Any] | None = None) -> Platform:
    """Loads a platform YAML file, applies dotted-key overrides, checks it and returns a Platform."""
    path = Path(path)
    doc = load_yaml(decode_text(read_input(path, "platform file"), str(path)), str(path), max_nodes=MAX_PLATFORM_NODES)
    if not isinstance(doc, dict):
        raise ConfigError(f"{path}: expected a mapping of platform keys at the top level")
    doc = apply_overrides(doc, overrides, path)
    return platform_from_dict(doc, source=str(path))


_NAME = re.compile(r"[A-Za-z_]\w*")
_SOCKET = re.compile(r"^([A-Za-z_][\w]*)\.([A-Za-z_]\w*)(?:\[(\d+)\])?$")


def parse_socket(text: object, where: str) -> SocketRef:
    """A socket reference as written in YAML: ``gpu0.initiator`` or ``fabric.targets[3]``."""
    m = _SOCKET.match(text) if isinstance(text, str) else None
    if not m:
        raise ConfigError(f"{where}: {shown(text)} is not a socket (expected component.socket or component.socket[i])")
    return SocketRef(m.group(1), m.group(2), None if m.group(3) is None else int(m.group(3)))


def _settings(doc: dict[str, Any], source: str) -> Platform:
    """An empty Platform with the settings both forms share (name, address map, profile, seed, checks,
    limits), each checked for its type, so no value of the wrong shape reaches a dict lookup or C++."""
    loc = _loc(source)
    if doc.get("eidola") != SCHEMA_VERSION:
        raise ConfigError(f"{loc}eidola: expected schema version {SCHEMA_VERSION}, got {shown(doc.get('eidola'))}")
    name = doc.get("name", Path(source).stem)
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{loc}name: expected a non-empty string, got {shown(name)}")
    amap = doc.get("address_map", {"base": 0, "stride": "1TiB"})
    if not isinstance(amap, dict) or set(amap) - {"base", "stride"}:
        raise ConfigError(f"{loc}address_map: expected a mapping with keys base and stride, got {shown(amap)}")
    seed = doc.get("seed", 1)
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**64:
        # numpy's generators take any non-negative integer; 64 bits keeps seeds portable.
        raise ConfigError(f"{loc}seed: expected an integer in [0, 2^64), got {shown(seed)}")
    check = doc.get("check_protocol", False)
    if not isinstance(check, bool):
        raise ConfigError(f"{loc}check_protocol: expected true or false, got {shown(check)}")
    profile = doc.get("profile")
    if profile is not None:
        if not isinstance(profile, str) or not profile or "\0" in profile:
            raise ConfigError(f"{loc}profile: expected a path, got {shown(profile)}")
        if source != "<dict>" and not Path(profile).is_absolute():
            profile = str(Path(source).parent / profile)
    return Platform(name, address_map=dict(amap), profile=profile, seed=seed, check_protocol=check, source=source,
                    limits=parse_limits(doc.get("limits"), f"{loc}limits"),
                    collectives=parse_collectives(doc.get("collectives"), f"{loc}collectives"))


def parse_limits(raw: object, where: str) -> dict[str, float]:
    """The `limits` section: {wall: 60s, memory: 8GB} -> {"wall": 60.0, "memory": 8e9} (seconds, bytes);
    ConfigError names the key."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: expected a mapping such as {{wall: 60s}}, got {shown(raw)}")
    out = {}
    for key, value in raw.items():
        if key not in ("wall", "sim_time", "memory"):
            raise ConfigError(f"{where}: unknown key {shown(key)}; expected wall, sim_time or memory")
        kind = "size" if key == "memory" else "time"
        try:
            amount = units.parse(value, kind)
        except units.UnitError as e:
            raise ConfigError(f"{where}.{key}: {e}") from None
        if key == "memory":
            if not 2**20 <= amount <= MAX_MEMORY_B:
                raise ConfigError(f"{where}.memory: expected a size from 1MiB to 1PB, got {shown(value)}")
        else:
            most = MAX_WALL_S if key == "wall" else MAX_SIM_TIME_S
            if not 0 < amount <= most:
                raise ConfigError(f"{where}.{key}: expected a duration in (0s, {most:g}s], got {shown(value)}")
        out[key] = amount
    return out


def reject_unknown_keys(doc: dict[str, Any], allowed: tuple[str, ...], loc: str) -> None:
    """ConfigError naming the first key of `doc` not in `allowed` (`loc` prefixes the message: "file: ")."""
    for key in doc:
        if key not in allowed:
            raise ConfigError(f"{loc}unknown key {shown(key)}; expected one of: {', '.join(allowed)}")


def _platform_from_components(doc: dict[str, Any], source: str) -> Platform:
    """Builds a Platform from the general form: a list of components and a list of connections."""
    loc = _loc(source)
    allowed = ("eidola", "name", "address_map", "components", "connections", "check_protocol", "profile", "seed",
               "limits", "collectives")
    reject_unknown_keys(doc, allowed, loc)
    base = Path(source).parent if source != "<dict>" else Path.cwd()
    plat = _settings(doc, source)
    for key in ("components", "connections"):
        if not isinstance(doc.get(key) or [], list):
            raise ConfigError(f"{loc}{key}: expected a list, got {shown(doc[key])}")
    for n, entry in enumerate(doc.get("components") or []):
        where = f"{loc}components[{n}]"
        if not isinstance(entry, dict) or "name" not in entry or "model" not in entry:
            raise ConfigError(f"{where}: expected a mapping with name and model")
        if not isinstance(entry["name"], str) or not _NAME.fullmatch(entry["name"]):
            raise ConfigError(f"{where}.name: expected a component name ([A-Za-z_][A-Za-z0-9_]*), got {shown(entry['name'])}")
        if not isinstance(entry["model"], str):
            raise ConfigError(f"{where}.model: expected a model name, got {shown(entry['model'])}")
        if entry["model"] == "Plugin":
            role = entry.get("role", "fabric")
            if role not in ("fabric", "gpu"):
                raise ConfigError(f"{where}.role: expected fabric or gpu, got {shown(role)}")
            key = "ports" if role == "fabric" else "id"
            params = {key: entry[key]} if key in entry else {}
            plat.add(plugin_component(entry["name"], entry.get("plugin"), role, params, f"{where}.plugin", base,
                                      {k: f"{where}.{k}" for k in params}))
            continue
        if entry["model"] not in catalog.models():
            raise ConfigError(f"{where}.model: no model named {shown(entry['model'])}; registered: "
                              f"{', '.join(catalog.models())}")
        params = entry.get("params") or {}
        if not isinstance(params, dict):
            raise ConfigError(f"{where}.params: expected a mapping of parameter values, got {shown(params)}")
        plat.add(Component(entry["model"], entry["name"], dict(params),
                           {k: f"{where}.params.{k}" for k in params}))
    for n, pair in enumerate(doc.get("connections") or []):
        where = f"{loc}connections[{n}]"
        if not isinstance(pair, list) or len(pair) != 2:
            raise ConfigError(f"{where}: expected [initiator socket, target socket]")
        refs = (parse_socket(pair[0], where), parse_socket(pair[1], where))
        for k, ref in enumerate(refs):
            if ref.component not in plat.components:
                raise ConfigError(f"{where}[{k}]: {shown(str(ref))} names no component {shown(ref.component)}; "
                                  f"the components are: {shown(', '.join(plat.components), 200)}")
        plat.connect(*refs)
    plat.validate()
    return plat


def _warn_rail_keys_elsewhere(loc: str, fabric_params: dict[str, Any]) -> None:
    """One warning line for rail-only keys (PacketFabric's parameters documented "rail: ...") on another topology:
    accepted, as every packet key is on every topology, but they change nothing there (a user trial set
    fabric.rail.pxn on a switch and saw no effect and no word)."""
    packet = catalog.model("PacketFabric")
    spec = packet.param("topology")
    topology = fabric_params.get("topology", spec.default if spec is not None else None)
    if topology == "rail":
        return
    rail_only = [k for k in fabric_params if (p := packet.param(k)) is not None and p.doc.startswith("rail:")]
    if rail_only:
        sys.stderr.write(f"warning: {loc}fabric: {', '.join(rail_only)} ignored by topology: {topology} (they are "
                         "the rail topology's)\n")


def _nonzero_size(value: object) -> bool:
    """Whether a size given in YAML is above zero (a bad one is reported where the parameter is checked)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value > 0
    try:
        return units.parse(value, "size") > 0
    except (ConfigError, ValueError, TypeError):
        return False


def platform_from_dict(doc: dict[str, Any], source: str = "<dict>") -> Platform:
    """Builds a Platform from YAML: the shorthand (gpus / fabric sections) or the general form (components)."""
    if "components" in doc:
        return _platform_from_components(doc, source)
    loc = _loc(source)
    reject_unknown_keys(doc, _TOP_KEYS, loc)
    for key in ("gpus", "fabric"):
        if not isinstance(doc.get(key), dict):
            raise ConfigError(f"{loc}{key}: expected a mapping, got {shown(doc.get(key))}")
    plat = _settings(doc, source)
    name, profile, seed, check = plat.name, plat.profile, plat.seed, plat.check_protocol
    gpus = dict(doc["gpus"])
    count = gpus.pop("count", None)
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_GPUS:
        raise ConfigError(f"{loc}gpus.count: expected an integer from 1 to {MAX_GPUS}, got {shown(count)}")
    base = Path(source).parent if source != "<dict>" else Path.cwd()
    gpu_plugins = gpus.pop("plugins", {}) or {}
    if not isinstance(gpu_plugins, dict) or not all(isinstance(k, int) and 0 <= k < count for k in gpu_plugins):
        raise ConfigError(f"{loc}gpus.plugins: expected a mapping from GPU index (0..{count - 1}) to a plugin")
    gpu_params = _flatten(gpus)
    if "id" in gpu_params:
        raise ConfigError(f"{loc}gpus.id: GPU ids are given by the platform (0..count-1); remove this key")
    fabric = dict(doc["fabric"])
    kind = fabric.pop("model", "ideal")
    if not isinstance(kind, str) or kind not in _FABRIC_MODELS:
        raise ConfigError(f"{loc}fabric.model: expected one of {', '.join(_FABRIC_MODELS)}, got {shown(kind)}")
    fabric_params = _flatten(fabric)
    if "ports" in fabric_params:
        raise ConfigError(f"{loc}fabric.ports: the fabric has one port per GPU (gpus.count); remove this key")
    if kind != "flow" and _nonzero_size(gpu_params.get("flow", 0)):
        raise ConfigError(f"{loc}gpus.flow: flows are for fabric.model: flow (this fabric is {kind!r}); remove this key")
    if kind == "ideal" and "topology" in fabric_params:
        # A packet or flow platform (it names a topology) runs on the ideal fabric as it is
        # (--set fabric.model=ideal): its topology, links, switches and NICs mean nothing to a fixed
        # latency and are left out. An ideal platform written with packet keys and no topology is
        # still refused: those keys are a mistake there.
        ideal, packet = catalog.model("IdealFabric"), catalog.model("PacketFabric")
        dropped = [k for k in fabric_params if ideal.param(k) is None and packet.param(k) is not None]
        for k in dropped:
            del fabric_params[k]
        if dropped:
            sys.stderr.write(f"warning: {loc}fabric: {len(dropped)} packet fabric key(s) ({', '.join(dropped[:4])}"
                             f"{', ...' if len(dropped) > 4 else ''}) ignored by fabric.model: ideal\n")
    if kind == "flow":
        gpu_params.setdefault("flow", DEFAULT_FLOW)
        # A flow is answered once, when all of it is in: a GPU waits far longer between responses.
        gpu_params.setdefault("watchdog", DEFAULT_FLOW_WATCHDOG)
        if str(gpu_params.get("train", 1)) not in ("0", "1"):
            # Accepted (a platform file made for the packet fabric runs as is), but it does nothing here: say so.
            sys.stderr.write(f"warning: {loc}gpus.train: {gpu_params['train']} ignored by fabric.model: flow (a write "
                             "already goes as one flow; gpus.flow sets how long)\n")
        ignored = [k for k in FLOW_IGNORED_KEYS if k in fabric_params]
        if ignored:
            # One line on stderr, not the logging module: its fork handlers swallow a Ctrl-C that
            # lands inside them, and sweeps fork a child per point.
            sys.stderr.write(f"warning: {loc}fabric: {', '.join(ignored)} ignored by fabric.model: flow "
                             "(flows always move: no deadlock to watch for)\n")
        for key, (same, instead) in FLOW_IGNORED_CHOICES.items():
            if fabric_params.get(key, same) != same:
                sys.stderr.write(f"warning: {loc}fabric.{key}: {fabric_params[key]} ignored by fabric.model: flow "
                                 f"({instead})\n")
        if fabric_params.get("topology") in _ONE_VC_TOPOLOGIES and str(fabric_params.get("switch.vcs", 0)) == "1":
            # Accepted (its credits count), but the case the docs name as the flow fabric's worst: say so at once.
            sys.stderr.write(f"warning: {loc}fabric.switch.vcs: 1 on a {fabric_params['topology']}: the flow fabric has "
                             "no routers' queues, so the head-of-line blocking one virtual channel causes there is "
                             "left out (direct all-reduces and all-to-alls ran 5-30% fast against the packet fabric; "
                             "docs/fabrics.md, \"When to trust which model\"); use fabric.model: packet for these\n")

    if kind in ("packet", "flow"):
        _warn_rail_keys_elsewhere(loc, fabric_params)

    if kind == "plugin":
        raw = fabric.get("plugin")
        extra = set(fabric) - {"plugin"}
        if extra:
            raise ConfigError(f"{loc}fabric.{sorted(extra)[0]}: a plugin fabric takes its settings under fabric.plugin")
        fab = plugin_component("fabric", raw, "fabric", {"ports": count}, f"{loc}fabric.plugin", base)
    else:
        fab = Component(_FABRIC_MODELS[kind], "fabric", {**fabric_params, "ports": count},
                        {k: f"{loc}fabric.{k}" for k in fabric_params})
    for i in range(count):
        if i in gpu_plugins:
            gpu = plat.add(plugin_component(f"gpu{i}", gpu_plugins[i], "gpu", {"id": i}, f"{loc}gpus.plugins.{i}",
                                            base))
        else:
            gpu = plat.add(Component("EidolonGpu", f"gpu{i}", {**gpu_params, "id": i},
                                     {k: f"{loc}gpus.{k}" for k in gpu_params}))
        plat.connect(gpu.initiator, fab.targets[i])
        plat.connect(fab.initiators[i], gpu.target)
    plat.add(fab)
    eidolons = plat.eidolons()
    if not eidolons:
        raise ConfigError(f"{loc}gpus.plugins: at least one GPU must be an eidolon (they run the profile)")
    plat.validate()

    # The effective configuration: the same shorthand with every default written out.
    gpu_resolved = eidolons[0].resolved()
    gspec = eidolons[0].spec
    gpus_out = {"count": count, **_nest({k: gspec.declared(k).to_yaml(v) for k, v in gpu_resolved.items() if k != "id"})}
    if gpu_plugins:
        gpus_out["plugins"] = {i: _plugin_yaml(_declaration(plat.components[f"gpu{i}"])) for i in gpu_plugins}
    if kind == "plugin":
        fabric_out = {"model": "plugin", "plugin": _plugin_yaml(_declaration(fab))}
    else:
        fspec = fab.spec
        fabric_out = {"model": kind, **_nest({k: fspec.declared(k).to_yaml(v) for k, v in fab.resolved().items()
                                              if k != "ports"})}
    plat.shorthand = {
        "eidola": SCHEMA_VERSION, "name": name, "gpus": gpus_out,
        "address_map": {"base": plat.base(), "stride": catalog.ParamSpec("", "size", "B", 0, 0, 0, (), "")
                        .format(plat.stride())},
        "fabric": fabric_out, "check_protocol": check, "profile": profile, "seed": seed,
        **({"limits": _limits_yaml(plat.limits)} if plat.limits else {}),
        **({"collectives": dict(plat.collectives)} if plat.collectives else {}),
    }
    return plat
