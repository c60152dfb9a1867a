"""Platforms as plain descriptions: components, their parameters as written, and their bindings.

A `Platform` is what YAML loads into and what Python scripts build; it holds no C++ objects.
Every component is an instance of a `ModelSpec`: a model registered in C++ (`catalog`) or a
third-party class declared as a plugin (`plugin.plugin_model`). Nothing here cares which: the
spec says the role, the parameters and the sockets. `Platform.elaborate()` checks everything
and returns the `Plan` the run layer hands to C++ (see `elaborate`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, shown
from . import catalog
from .catalog import ModelSpec

if TYPE_CHECKING:
    from .elaborate import Plan

__all__ = ["Platform", "Component", "SocketRef"]


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
    """An instance of a model: its name, model and parameters as given.

    `model` is the registry name ("EidolonGpu"), or "Plugin" for a third-party class, whose
    description then comes in `spec`. Parameters stay as written ("300ns") until `resolved()`.
    """

    model: str                                   #: registry name, e.g. "EidolonGpu", or "Plugin"
    name: str                                    #: instance name, unique in the platform
    params: dict[str, Any] = field(default_factory=dict)   #: parameter values as written ("300ns", 64, true)
    origin: dict[str, Any] = field(default_factory=dict, compare=False)  #: parameter -> where it was written (for errors)
    spec: ModelSpec = field(default=None, compare=False, repr=False)  # type: ignore[assignment]
    #: the declaration as the user wrote it (plugins), for the written-back YAML
    declared: dict[str, Any] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.spec is None:
            try:
                self.spec = catalog.model(self.model)
            except KeyError as e:
                raise ConfigError(f"component {self.name!r}: {e.args[0]}") from None

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Component) and (self.model, self.name, self.params, self.spec) ==
                (other.model, other.name, other.params, other.spec))

    def __getattr__(self, socket: str) -> Any:  # a SocketRef, or a _SocketVector of per-port sockets
        if socket.startswith("_") or socket in ("model", "name", "params", "origin", "spec", "declared"):
            raise AttributeError(socket)
        spec = self.spec.socket(socket)
        if spec is None:
            names = ", ".join(s.base_name for s in self.spec.sockets) or "none"
            raise AttributeError(f"component {self.name!r} ({self.spec.name}) has no socket {socket!r}; "
                                 f"it has: {names}")
        if spec.multiplicity == "1":
            return SocketRef(self.name, socket)
        return _SocketVector(self.name, socket)

    @property
    def role(self) -> str:
        """What the platform uses it as (gpu, fabric, adapter, checker), as its model declares."""
        return self.spec.role

    def port_count(self) -> int:
        """How many sockets each per-port socket vector has."""
        return int(self.resolved().get("ports", 1))

    def where(self, param: str) -> str:
        """Where a parameter was written: a YAML key path, or the component and parameter."""
        return str(self.origin.get(param) or f"component {self.name!r} ({self.spec.name}) parameter {param!r}")

    def resolved(self) -> dict[str, Any]:
        """Every declared parameter in canonical units, defaults filled in; ConfigError names the bad one."""
        values = {p.name: p.default for p in self.spec.params}
        for key, raw in self.params.items():
            p = self.spec.param(key)
            if p is None:
                allowed = ", ".join(q.name for q in self.spec.params)
                raise ConfigError(f"{self.where(key)}: {self.spec.name} has no parameter {shown(key)} (it has: {allowed})")
            try:
                values[key] = p.convert(raw)
            except ValueError as e:
                raise ConfigError(f"{self.where(key)}: {e} ({p.doc})") from None
        return values


@dataclass
class Platform:
    """A platform: components, bindings, the address map and run settings."""

    name: str                                                       #: names the simulation
    address_map: dict[str, Any] = field(default_factory=lambda: {"base": 0, "stride": "1TiB"})  #: GPU i owns base + i*stride
    components: dict[str, Component] = field(default_factory=dict)  #: name -> Component, in insertion order
    connections: list[tuple[SocketRef, SocketRef]] = field(default_factory=list)  #: (initiator, target) pairs
    profile: str | None = None                                      #: default profile path (absolute or relative to cwd)
    seed: int = 1                                                   #: seed of every random choice
    check_protocol: bool = False                                    #: insert the base-protocol checker on bindings
    limits: dict[str, float] = field(default_factory=dict)          #: run limits: "wall" (seconds) kills a run past it
    #: the ``collectives:`` section as given (library, channels, link_type, protocols, arch; see platform.collectives)
    collectives: dict[str, Any] = field(default_factory=dict)
    source: str | None = field(default=None, compare=False)         #: the YAML file it came from
    shorthand: dict[str, Any] | None = field(default=None, compare=False)     #: the effective YAML (gpus/fabric form)

    def add(self, component: Component) -> Component:
        """Adds a component; its name must be new. A GPU without an id gets the next window."""
        if component.name in self.components:
            raise ConfigError(f"platform {self.name!r}: a component named {component.name!r} already exists")
        if component.role == "gpu" and component.spec.param("id") and "id" not in component.params:
            # The next window, in the order GPUs are added. Counted, not via gpus(): that resolves and
            # sorts every GPU, which made adding n GPUs cost n^2 parameter conversions.
            component.params["id"] = sum(1 for c in self.components.values() if c.role == "gpu")
        self.components[component.name] = component
        return component

    def connect(self, initiator: SocketRef, target: SocketRef) -> None:
        """Binds an initiator socket to a target socket (one call per binding)."""
        self.connections.append((initiator, target))

    def gpus(self) -> list[Component]:
        """Every GPU slot (eidolons and GPU plugins), in address-map order (by their `id`)."""
        gpus = [c for c in self.components.values() if c.role == "gpu"]
        return sorted(gpus, key=lambda c: c.resolved()["id"])

    def eidolons(self) -> list[Component]:
        """The GPUs that replay the profile's programs."""
        return [g for g in self.gpus() if g.spec.replays_profile]

    def stride(self) -> int:
        """The window size in bytes."""
        return _address(self.address_map.get("stride", "1TiB"), "address_map.stride", self.source)

    def base(self) -> int:
        """The first byte of GPU 0's window."""
        return _address(self.address_map.get("base", 0), "address_map.base", self.source)

    def elaborate(self) -> Plan:
        """Checks parameters, bindings and windows; returns the Plan (ConfigError names what is wrong)."""
        from .elaborate import elaborate

        return elaborate(self)

    def validate(self) -> None:
        """Every check `elaborate` makes, for its errors only."""
        self.elaborate()

    def describe(self) -> dict[str, Any]:
        """The platform as a plain document: every component with its parameters as given, every binding."""
        from .yaml_io import describe

        return describe(self)

    def to_yaml(self, path: str | Path | None = None) -> str:
        """Writes the platform as YAML (components and connections); `load_platform` reads it back."""
        from .yaml_io import to_yaml

        return to_yaml(self, path)

    def effective_yaml(self, profile: str | None = None) -> str:
        """The platform as YAML with every default filled in, so a run can be repeated exactly.

        profile: the profile file the run used, where it was given apart from the platform (default: the
        platform's own `profile`; "": a profile not read from a file, written as null)."""
        from .yaml_io import effective_yaml

        return effective_yaml(self, profile)

    def graph(self, path: str | Path) -> Path:
        """Draws the elaborated platform (adapters and checkers included) as Graphviz DOT at `path`.

        SVG and PNG are written beside it when `dot` is installed.
        """
        from .graph import write_graph

        return write_graph(self.elaborate(), path)


def _address(value: object, key: str, source: str | None) -> int:
    loc = f"{source}: " if source else ""
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            raise ConfigError(f"{loc}{key}: expected a non-negative address, got {value}")
        return value
    try:
        return int(catalog.ParamSpec(key, "size", "B", 0, 0, 2.0**64, (), "").convert(value))
    except ValueError as e:
        raise ConfigError(f"{loc}{key}: {e}") from None
