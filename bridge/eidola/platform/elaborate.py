"""Elaboration: a Platform checked and turned into a `Plan`, the single hand-over to the run layer.

The plan holds every component with its parameters in canonical units, every binding with the
AT-to-LT adapters and protocol checkers already inserted, the address map and the GPU placement.
After this step nothing is looked up by name again: the run layer encodes the profile against
the plan and builds exactly what it lists.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from . import catalog, memory
from .catalog import ModelSpec, SocketSpec
from .model import SocketRef

if TYPE_CHECKING:
    from .model import Component, Platform

__all__ = ["Plan", "PlannedComponent", "Binding", "GpuSlot", "elaborate", "topology_error"]


@dataclass(frozen=True)
class PlannedComponent:
    """One component to build: its model description and parameters in canonical units."""

    name: str                       #: instance name
    spec: ModelSpec                 #: the model (registered, or a plugin declaration)
    values: tuple[tuple[str, Any], ...]  #: (parameter, canonical value) pairs, every declared parameter
    inserted: bool = False          #: added by elaboration (an adapter or a checker), not by the user

    @property
    def role(self) -> str:
        """gpu, fabric, adapter or checker."""
        return self.spec.role

    def value(self, name: str) -> Any:
        """One parameter's canonical value."""
        return dict(self.values)[name]


@dataclass(frozen=True)
class Binding:
    """One initiator socket bound to one target socket."""

    initiator: SocketRef  #: the initiator side
    target: SocketRef     #: the target side


@dataclass(frozen=True)
class GpuSlot:
    """The GPU that owns one window of the address map."""

    window: int            #: its index: it owns [base + window*stride, base + (window+1)*stride)
    component: str         #: the component's name
    replays_profile: bool  #: an eidolon (runs programs), or a model with behaviour of its own
    workgroups: int        #: resident workgroups (0 when it does not replay profiles)
    clock_hz: float        #: its clock (0 when it declares none)


@dataclass(frozen=True)
class Plan:
    """A checked platform, ready to build: components, bindings, address map and GPU placement."""

    name: str                               #: names the simulation
    base: int                               #: first byte of window 0
    stride: int                             #: bytes per window
    components: tuple[PlannedComponent, ...]  #: in build order; inserted adapters and checkers last
    bindings: tuple[Binding, ...]           #: every socket binding, after insertion
    gpus: tuple[GpuSlot, ...]               #: by window

    def eidolons(self) -> tuple[GpuSlot, ...]:
        """The GPU slots that replay programs."""
        return tuple(g for g in self.gpus if g.replays_profile)

    @property
    def workgroups(self) -> int:
        """Workgroups a profile may use per GPU: the fewest any eidolon has."""
        return min(g.workgroups for g in self.eidolons())

    def fabric_description(self) -> str:
        """The fabric model(s), as the summary names them."""
        return ", ".join(c.spec.name for c in self.components if c.role == "fabric")


def elaborate(platform: Platform) -> Plan:
    """Checks `platform` and returns its Plan; ConfigError names the component, socket or key."""
    gpus = platform.gpus()
    for c in platform.components.values():
        if c.spec.param("ports") and "ports" not in c.params:
            c.params["ports"] = len(gpus)  # a fabric has one port per GPU unless told otherwise
    values = {c.name: c.resolved() for c in platform.components.values()}
    for c in platform.components.values():
        if "ports" in values[c.name] and int(values[c.name]["ports"]) != len(gpus):
            raise ConfigError(f"component {c.name!r} ({c.spec.name}) has {values[c.name]['ports']} ports but the "
                              f"platform has {len(gpus)} GPUs: one port per GPU")
    socket_specs = _check_bindings(platform, values)
    slots = _place_gpus(platform, gpus, values)
    payload = max((int(values[g.name].get("max_payload", 0)) for g in gpus), default=0)
    for c in platform.components.values():
        if c.spec.name == "PacketFabric":
            _check_packet_fabric(platform, c, values[c.name], payload)
        if c.spec.name in ("PacketFabric", "FlowFabric"):
            _check_topology(platform, c, values[c.name], len(gpus))
            _check_nvls(platform, c, values[c.name])
    _check_memory(platform, values, len(gpus))
    if not any(s.replays_profile for s in slots):
        raise ConfigError(f"platform {platform.name!r} has no eidolon GPU to run the profile")
    components = [PlannedComponent(c.name, c.spec, tuple(values[c.name].items()))
                  for c in platform.components.values()]
    bindings = _insert_adapters_and_checkers(platform, socket_specs, components,
                                             {s.component: s.window for s in slots})
    return Plan(platform.name, platform.base(), platform.stride(), tuple(components), tuple(bindings), tuple(slots))


def _key(platform: Platform, c: Component, param: str) -> str:
    """Where `param` of `c` was written, without the file name (the message names the file once)."""
    where = c.where(param)
    loc = f"{platform.source}: "
    return where[len(loc):] if platform.source and where.startswith(loc) else where


def _loc(platform: Platform) -> str:
    return f"{platform.source}: " if platform.source and platform.source != "<dict>" else ""


def _check_topology(platform: Platform, c: Component, v: dict[str, Any], gpus: int) -> None:
    """What the C++ topology (of a packet or flow fabric) would refuse only once built: the grid's
    dims, the hierarchical or rail node size and the rail's NIC count."""
    loc, kind = _loc(platform), v.get("topology")
    if kind in ("mesh2d", "torus2d") and v.get("dims"):
        dims = [int(x) for x in str(v["dims"]).split()]
        if len(dims) != 2:
            raise ConfigError(f"{loc}{_key(platform, c, 'dims')}: {kind} takes two sizes [x, y], got {dims}")
        if dims[0] * dims[1] != gpus:
            raise ConfigError(f"{loc}{_key(platform, c, 'dims')}: {dims[0]} x {dims[1]} = {dims[0] * dims[1]} "
                              f"routers, but the fabric has {gpus} GPUs (the product must equal gpus.count)")
    if kind in ("hierarchical", "rail"):
        per = int(v.get(f"{kind}.gpus_per_node", 1))
        if gpus % per:
            raise ConfigError(f"{loc}{_key(platform, c, f'{kind}.gpus_per_node')}: {gpus} GPUs do not fill "
                              f"nodes of {per} (gpus.count must be a multiple of {kind}.gpus_per_node)")
    if kind == "rail":
        per, nics = int(v.get("rail.gpus_per_node", 1)), int(v.get("nic.count", 0))
        if nics and (nics > per or per % nics):
            raise ConfigError(f"{loc}{_key(platform, c, 'nic.count')}: {nics} NICs per node do not divide "
                              f"rail.gpus_per_node {per} (expected a divisor of {per}, or 0 for one NIC per GPU)")


def topology_error(platform: Platform, fabric: str, message: str) -> ConfigError:
    """The C++ topology's refusal `message` of component `fabric`'s custom edges (run.sysc.topology_problem) as bad
    input naming the file, the key (the edge's index where one edge is at fault) and what was expected."""
    c = platform.components[fabric]
    v = c.resolved()
    loc, key = _loc(platform), _key(platform, c, "custom.edges")
    gpus, switches = len(platform.gpus()), int(v.get("custom.switches", 0))
    edges = c.params.get("custom.edges")
    edges = edges if isinstance(edges, list) else []
    nodes = f"a GPU 0 to {gpus - 1}" + (f" or a switch s0 to s{switches - 1}" if switches else " (there are no switches)")
    named = re.search(r"edge names (?:switch '(s\d+)'|GPU (\d+) )", message)
    if named:
        token = named.group(1) or named.group(2)
        for i, e in enumerate(edges):
            for end in ("src", "dst"):
                if isinstance(e, dict) and str(e.get(end)) == token:
                    what = (f"switch {token}, but {_key(platform, c, 'custom.switches')} is {switches}"
                            if token.startswith("s") else f"GPU {token}, but the platform has {gpus} GPUs")
                    return ConfigError(f"{loc}{key}[{i}]: {end} names {what}: expected {nodes}")
    path = re.search(r"no path from (gpu\d+) to (gpu\d+)", message)
    if path:
        named_gpus = {str(e.get(end)) for e in edges if isinstance(e, dict) for end in ("src", "dst")}
        alone = [g for g in range(gpus) if str(g) not in named_gpus]
        hint = f"; GPU {alone[0]} is in no edge" if alone else ""
        return ConfigError(f"{loc}{key}: the edges give no path from {path.group(1)} to {path.group(2)}{hint}: "
                           f"expected every GPU to reach every other ({len(edges)} edges given, each one-way unless "
                           "bidirectional: true)")
    return ConfigError(f"{loc}{key}: {message}")


def _check_packet_fabric(platform: Platform, c: Component, v: dict[str, Any], payload: int) -> None:
    """What the C++ routers would refuse only once built (an exit 3): a buffer that cannot hold one packet."""
    loc = _loc(platform)
    buffer = str(v.get("switch.buffer", ""))
    if buffer.endswith("B") and v.get("switch.flow_control") != "wormhole":
        headers = [int(v.get("link.header", 0))]
        for edge in filter(None, str(v.get("custom.edges", "")).split(";")):
            field = edge.split()[4]
            headers.append(int(field) if field != "-" else 0)
        flit = max(1, int(v.get("link.flit", 16)))
        packet = payload + max(headers)
        needed, room = -(-packet // flit), max(1, int(buffer[:-1]) // flit)
        if needed > room:
            raise ConfigError(
                f"{loc}{_key(platform, c, 'switch.buffer')}: a buffer of {buffer[:-1]} bytes holds {room} flit(s) of "
                f"{flit} B, but one packet (gpus.max_payload {payload} B + link.header {max(headers)} B) needs "
                f"{needed}; {v.get('switch.flow_control')} flow control moves whole packets (use a buffer of at "
                f"least {needed * flit}B, or switch.flow_control: wormhole)")


def _check_nvls(platform: Platform, c: Component, v: dict[str, Any]) -> None:
    """fabric.switch.nvls (NVLink SHARP) is modelled in a single crossbar only (packet and flow fabrics)."""
    if not float(v.get("switch.nvls.reduce_bandwidth") or 0) > 0:
        return
    key = f"{_loc(platform)}{_key(platform, c, 'switch.nvls.reduce_bandwidth')}"
    if v.get("topology") != "switch":
        raise ConfigError(f"{key}: fabric.switch.nvls needs topology: switch (one crossbar every GPU reaches in "
                          f"one link); this fabric's topology is {v.get('topology')}")


def _check_memory(platform: Platform, values: dict[str, dict[str, Any]], gpus: int) -> None:
    """Refuses a platform whose estimated simulation memory (`memory.estimate`) exceeds limits.memory."""
    limit = memory.limit_of(platform.limits)
    components = list(platform.components.values())
    if problem := memory.map_limit_problem(components, values):
        raise ConfigError(f"{_loc(platform)}fabric.plugin.workers: {problem}")
    need, what, key = memory.estimate(components, values, gpus)
    if need > limit:
        loc = f"{platform.source}: "
        key = key[len(loc):] if key.startswith(loc) else key
        given = "" if "memory" in platform.limits else " (the default: 80% of this machine's RAM)"
        # A smaller window or fewer channels change what is simulated, not only what it costs: say so, and name the
        # model that holds no packets (a user trial lowered gpus.max_outstanding and got another answer).
        fix = "make that smaller, or raise limits.memory"
        if key.endswith(("gpus.max_outstanding", "switch.vcs")):
            fix = (f"raise limits.memory, or run fabric.model: flow, which holds no packets (a smaller {key} would "
                   "change the results, not only their cost)")
        raise ConfigError(f"{_loc(platform)}this platform needs about {memory.format_bytes(need)} of memory to "
                          f"simulate, limits.memory is {memory.format_bytes(limit)}{given}; most of it is "
                          f"{what}" + (f" ({key})" if key else "") + f": {fix}")


def _socket_spec(platform: Platform, ref: SocketRef, ports: dict[str, int]) -> SocketSpec:
    comp = platform.components.get(ref.component)
    if comp is None:
        raise ConfigError(f"socket {ref}: no component named {ref.component!r}")
    spec = comp.spec.socket(ref.socket)
    if spec is None:
        raise ConfigError(f"socket {ref}: {comp.spec.name} has no socket {ref.socket!r}")
    if (spec.multiplicity == "1") != (ref.index is None):
        raise ConfigError(f"socket {ref}: {ref.socket} is {'not ' if spec.multiplicity == '1' else ''}indexed")
    if ref.index is not None and not 0 <= ref.index < ports[comp.name]:
        raise ConfigError(f"socket {ref}: index out of range (the component has {ports[comp.name]} ports)")
    return spec


def _check_bindings(platform: Platform, values: dict[str, dict[str, Any]]) -> list[tuple[SocketSpec, SocketSpec]]:
    """Each socket bound exactly once, initiators to targets; returns the (initiator, target) socket specs of
    each connection, in order."""
    ports = {name: int(v.get("ports", 1)) for name, v in values.items()}
    bound: dict[str, str] = {}
    specs: list[tuple[SocketSpec, SocketSpec]] = []
    for initiator, target in platform.connections:
        pair = []
        for ref, direction, other in ((initiator, "initiator", target), (target, "target", initiator)):
            spec = _socket_spec(platform, ref, ports)
            pair.append(spec)
            if spec.direction != direction:
                raise ConfigError(f"connection {initiator} -> {target}: {ref} is a {spec.direction} socket, "
                                  f"expected a {direction} socket here")
            if ref.path in bound:
                raise ConfigError(f"socket {ref} is bound twice (to {bound[ref.path]} and to {other})")
            bound[ref.path] = str(other)
        specs.append((pair[0], pair[1]))
    for c in platform.components.values():
        for s in c.spec.sockets:
            for i in ([None] if s.multiplicity == "1" else range(ports[c.name])):
                ref = SocketRef(c.name, s.base_name, i)
                if ref.path not in bound:
                    raise ConfigError(f"socket {ref} ({s.direction}, {s.doc}) is not bound")
    return specs


def _check_train(gpu: Component, values: dict[str, Any]) -> None:
    """A train of `train` packets of `max_payload` must fit the GPU's data area (else the model cannot allocate
    it), which holds one train: at most the largest max_payload the GPU's model declares. A GPU model without
    trains has nothing to check."""
    if "train" not in values:
        return
    train, payload = int(values["train"]), int(values.get("max_payload", 0))
    most = int(gpu.spec.declared("max_payload").max)
    if train * payload > most:
        raise ConfigError(f"GPU {gpu.name!r}: gpus.train ({train}) x gpus.max_payload ({payload} B) = "
                          f"{train * payload} bytes; a train may carry at most {most} bytes (lower gpus.train)")


def _place_gpus(platform: Platform, gpus: list[Component], values: dict[str, dict[str, Any]]) -> list[GpuSlot]:
    """Each GPU owns one window of the address map: ids unique and inside the map. Also checks each GPU's
    train size (_check_train), while its values are at hand."""
    owner: dict[int, str] = {}
    slots = []
    for g in gpus:
        v = values[g.name]
        i = int(v["id"])
        if i in owner:
            raise ConfigError(f"GPUs {owner[i]!r} and {g.name!r} both have id {i}: their address windows overlap")
        if i >= len(gpus):
            raise ConfigError(f"GPU {g.name!r} has id {i}, outside the address map's {len(gpus)} windows "
                              f"(ids 0..{len(gpus) - 1})")
        owner[i] = g.name
        _check_train(g, v)
        slots.append(GpuSlot(i, g.name, g.spec.replays_profile, int(v.get("workgroups", 0)),
                             float(v.get("clock", 0.0))))
    if gpus and platform.base() + len(gpus) * platform.stride() > 2 ** 64:
        raise ConfigError(f"platform {platform.name!r}: {len(gpus)} windows of {platform.stride()} bytes from "
                          f"{platform.base():#x} run past the 64-bit address space")
    return sorted(slots, key=lambda s: s.window)


def _inserted(components: list[PlannedComponent], model: str, name: str, **values: Any) -> str:
    spec = catalog.model(model)
    defaults = {p.name: p.default for p in spec.params}
    components.append(PlannedComponent(name, spec, tuple({**defaults, **values}.items()), inserted=True))
    return name


def _insert_adapters_and_checkers(platform: Platform, socket_specs: list[tuple[SocketSpec, SocketSpec]],
                                  components: list[PlannedComponent], gpu_windows: dict[str, int]) -> list[Binding]:
    """The connections as bindings, with an AT-to-LT adapter in front of every LT-only target driven by an
    AT initiator, and a protocol checker on every binding when the platform asks for one. A checker in
    front of a GPU knows that GPU's window, so it flags a request the interconnect misrouted."""
    out: list[Binding] = []
    for n, ((initiator, target), (i_spec, t_spec)) in enumerate(zip(platform.connections, socket_specs)):
        pairs = [Binding(initiator, target)]
        if t_spec.protocol == "lt" and i_spec.protocol != "lt":
            plugin = platform.components[target.component].spec.plugin if target.component in platform.components else None
            workers = {"workers": plugin.workers} if plugin is not None and plugin.workers else {}
            name = _inserted(components, "AtToLtAdapter", f"adapter{n}", **workers)
            pairs = [Binding(initiator, SocketRef(name, "target")), Binding(SocketRef(name, "initiator"), target)]
        elif i_spec.protocol == "lt" and "lt" not in t_spec.protocol:
            raise ConfigError(f"connection {initiator} -> {target}: an LT initiator cannot drive an AT-only target "
                              "(no adapter exists in that direction)")
        if platform.check_protocol:
            checked = []
            for k, b in enumerate(pairs):
                window = gpu_windows.get(b.target.component)
                extra = {"toward": "fabric"} if window is None else {"toward": "gpu", "window": window}
                name = _inserted(components, "ProtocolChecker", f"checker{n}_{k}", **extra)
                checked += [Binding(b.initiator, SocketRef(name, "target")),
                            Binding(SocketRef(name, "initiator"), b.target)]
            pairs = checked
        out += pairs
    return out
