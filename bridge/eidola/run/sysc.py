"""All cppyy and SystemC glue: the only module that touches C++ objects.

`load()` brings cppyy and the compiled models into the process once (the parent does it before
forking, so every child starts with them loaded and the entry points' wrappers generated).
`elaborate_and_run()` builds one platform through `eidola::Simulation` and runs it; it must be
called at most once per process, because a SystemC kernel elaborates once.
"""

from __future__ import annotations

import functools
import re
import signal
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ConfigError
from ..platform.credits import pcie_header
from ..platform.model import SocketRef
from ..platform.plugin import PluginSpec
from .encode import PROGRAM_DTYPE
from .native import native_library
from .plugin_build import PluginBuild, load_plugin

if TYPE_CHECKING:
    from .encode_traffic import EncodedTraffic
    from .simulate import NativeRun

__all__ = ["load", "elaborate_and_run", "topology_problem", "build_topology", "fabric_dims"]

_KEEP: list[Any] = []  # C++ objects kept alive for the life of the process (see load)


@functools.cache
def load() -> Any:
    """Loads cppyy, the models library and the Simulation header; returns the `eidola` C++ namespace."""
    lib = native_library()  # loads the sc_main shim first, so libsystemc resolves
    import cppyy

    cppyy.add_include_path(str(lib.include_dir))
    cppyy.include("eidola/simulation.h")  # free of SystemC headers: nothing else is parsed
    cppyy.load_library(str(lib.library))
    for extra in lib.extra:  # ctypes has loaded them already; cppyy should know them too
        cppyy.load_library(str(extra))
    ns = cppyy.gbl.eidola
    # set_flags() takes a std::vector<std::string>; cppyy builds that class's Python proxy on the
    # first conversion of a list and drops it again with the temporary, so every child rebuilt it
    # (~15 ms, a third of a small run). Holding one instance here keeps the proxy for good.
    _KEEP.append(cppyy.gbl.std.vector[cppyy.gbl.std.string](["f"]))
    _warm(ns)
    return ns


def _warm(ns: Any) -> None:
    # Generating the wrappers here, before fork(), spares every child simulation the JIT cost.
    # Nothing below creates a SystemC object, so the kernel stays untouched in the parent.
    params = ns.ParamSet()
    params.set("x", 1.0)
    params.set_choice("y", "z")
    sim = ns.Simulation("warm-up")
    sim.set_address_map(0, 1, 0)
    # add() and bind() are warmed by calls that throw before they build anything: without this,
    # their first call in every child costs ~9 ms of JIT (measured on the 4-GPU default, a third of
    # a small run). bind() looks its names up in the SystemC object registry, which creates the
    # (empty) simulation context here rather than in the child; no object or process is made.
    try:
        sim.add("", "", params)
    except Exception:  # the expected "no model named ''"
        pass
    try:
        sim.bind("", "")
    except Exception:  # the expected "no socket named ''"
        pass
    sim.set_flags(["f"])
    sim.set_multicast_groups([0, 1], [0, 2])
    sim.set_tracing(False)
    sim.set_time_limit(0)
    sim.report_time_on_signal(0, 0)
    sim.partial()
    sim.node_names()
    # run() too: its first call cost every child ~6 ms of JIT (40% of the 64-GPU ideal all-to-all).
    # A program for GPU 0, which this simulation lacks, makes it stop as bad input before the
    # kernel starts; load_programs() copies the entry.
    entry = np.zeros(1, dtype=PROGRAM_DTYPE)
    sim.load_programs(0, 0, entry.ctypes.data, 1)
    sim.run()
    sim.set_traffic(ns.TrafficSpec(), 0, 0, 0)
    table = sim.table("gpus")
    table.rows()
    list(table.columns)
    table.copy_to(0)
    sim.events()
    sim.end_ps()
    sim.failure()
    sim.failure_kind()


def fabric_dims(raw: object) -> list[int]:
    """fabric.dims as canonical values hold it ("4 4", [4, 4] or empty)."""
    if isinstance(raw, (list, tuple)):
        return [int(x) for x in raw]
    return [int(x) for x in str(raw or "").replace(",", " ").split()]


def build_topology(values: dict[str, Any]) -> tuple[Any, str | None]:
    """The C++ eidola::Topology of a packet or flow fabric (`values`: its canonical parameters, ports set), built from
    the figures PacketFabricParams::topology_spec takes, before any SystemC object exists: (the topology, None), or
    (None, its error message: ``topology: edge names switch 's5' but there are 2 switches``). The one builder of
    `topology_problem` and `eidola describe`'s figures, so both read the topology the fabric will build."""
    import cppyy

    ns = load()
    cppyy.include("eidola/topology.h")  # free of SystemC headers, as simulation.h
    spec = ns.TopologySpec()
    rail = values["topology"] == "rail"
    spec.kind = str(values["topology"])
    spec.gpus = int(values["ports"])
    for d in fabric_dims(values.get("dims")):
        spec.dims.push_back(d)
    spec.bidirectional = bool(values["bidirectional"])

    def link(params: Any, bandwidth: Any, latency: Any, header: Any, lanes: Any) -> None:
        params.bytes_per_s = float(bandwidth)
        params.latency_ps = round(float(latency) * 1e12)
        params.header = int(header)
        params.lanes = int(lanes)

    link(spec.link, values["link.bandwidth"], values["link.latency"], values["link.header"], values["link.count"])
    group = "rail" if rail else "hierarchical"
    spec.gpus_per_node = int(values[f"{group}.gpus_per_node"])
    spec.intra = str(values[f"{group}.intra"])
    spec.spines = int(values[f"{group}.spines"])
    spec.pxn = rail and bool(values["rail.pxn"])
    # A rail's NIC and network links carry the NIC's headers per network packet, hierarchical's the GPU's.
    network_header = int(values["nic.header"]) if rail else int(values["link.header"])
    link(spec.nic, values["nic.bandwidth"], values["nic.latency"], network_header, 1)
    link(spec.network, values["network.bandwidth"], values["network.latency"], network_header, 1)
    spec.nics = int(values["nic.count"])
    link(spec.pcie, values["nic.pcie.bandwidth"], values["nic.pcie.latency"], pcie_header(values), 1)
    spec.nic_mtu = int(values["nic.mtu"]) if rail else 0
    spec.switches = int(values["custom.switches"])
    spec.edges = str(values["custom.edges"])
    try:
        return ns.Topology(spec), None
    except Exception as e:  # std::invalid_argument, naming the problem
        return None, _cxx_message(e)


def topology_problem(values: dict[str, Any]) -> str | None:
    """What the C++ topology says of a packet or flow fabric's topology (see `build_topology`): its error message,
    or None when it builds, so validate and run refuse what the fabric would, and before a child runs."""
    return build_topology(values)[1]


def sc_cplusplus() -> str:
    """The C++ standard the loaded libsystemc was built for, read from its exported API-version symbol.

    Why: SystemC checks that its headers and library agree on SC_CPLUSPLUS; Cling defaults to a newer
    standard than Debian's build, so the value must be set before cppyy includes <systemc>.
    """
    maps = Path("/proc/self/maps").read_text()
    paths = sorted({line.split()[-1] for line in maps.splitlines() if "libsystemc" in line and "/" in line})
    for path in paths:
        found = re.search(rb"sc_api_version_\d+_\d+_\d+_cxx(\d+)L", Path(path).read_bytes())
        if found:
            return found.group(1).decode() + "L"
    raise ConfigError("cannot find libsystemc's API version symbol to set SC_CPLUSPLUS for third-party headers")


def _cxx_message(e: BaseException) -> str:
    """A C++ exception's own message, without the signature cppyy puts before it
    ("void eidola::Simulation::add(...) =>\n    invalid_argument: fabric: ...")."""
    text = str(e)
    if "=>" in text:
        text = text.split("=>", 1)[1]
    text = " ".join(text.split())
    kind, sep, rest = text.partition(": ")
    return rest if sep and kind.isidentifier() else text


def _condensed(*texts: object) -> str:
    """The first compiler error line of the diagnostics, else the first line of the message."""
    lines = [line.strip() for t in texts for line in str(t).splitlines() if line.strip()]
    for line in lines:
        if "error:" in line:
            return line[line.index("error:"):] if "fatal error:" not in line else line[line.index("fatal error:"):]
    return lines[0] if lines else "unknown error"


def _construct_plugin(name: str, spec: PluginSpec, build: PluginBuild) -> tuple[Any, Any, PluginSpec]:
    """Loads a compiled plugin, constructs its class and runs its setup statements."""
    lib = load_plugin(build)
    obj = lib.eidola_plugin_create(name.encode())
    if not obj:
        raise ConfigError(f"plugin {name!r}: constructing {spec.class_text}({', '.join(map(repr, (name, *spec.args)))})"
                          f" threw: {lib.eidola_plugin_error().decode(errors='replace')}")
    if lib.eidola_plugin_setup(obj) != 0:
        raise ConfigError(f"plugin {name!r}: a setup statement threw: {lib.eidola_plugin_error().decode(errors='replace')}")
    return lib, obj, spec


def _table(sim: Any, which: str) -> dict[str, Any]:
    t = sim.table(which)
    columns = [str(c) for c in t.columns]
    values = np.empty(t.rows() * len(columns), dtype=np.float64)
    if values.size:
        t.copy_to(values.ctypes.data)
    values = values.reshape(t.rows(), len(columns)) if columns else values.reshape(0, 0)
    return {c: values[:, i].copy() for i, c in enumerate(columns)}


def _set_traffic(ns: Any, sim: Any, t: EncodedTraffic) -> None:
    spec = ns.TrafficSpec()
    spec.probability = t.probability
    spec.cycle_ps = t.cycle_ps
    spec.packet_bytes = t.spec.packet
    spec.offset = t.offset
    spec.warmup_ps = t.warmup_ps
    spec.duration_ps = t.duration_ps
    spec.seed = t.spec.seed
    spec.uniform = t.uniform
    sim.set_traffic(spec, t.first.ctypes.data, t.destinations.ctypes.data if len(t.destinations) else 0,
                    t.spec.gpus)


def _has_nvls(plan: Any) -> bool:
    """Whether a fabric of `plan` has an NVLS switch (its "nvls" result table then has a row)."""
    return any(c.role == "fabric" and c.spec.name in ("PacketFabric", "FlowFabric")
               and float(c.value("switch.nvls.reduce_bandwidth")) > 0 for c in plan.components)


def elaborate_and_run(run: NativeRun, time_word: int = 0) -> dict[str, Any]:
    """Builds the plan of `run` through eidola::Simulation, runs it, returns the raw result tables.

    `time_word`: the address of four 64-bit words shared with the parent, where SIGUSR1 makes the
    simulation write how far it has got (Simulation::report_time_on_signal; 0: not asked).
    """
    ns = load()
    plan = run.plan
    clock = time.perf_counter()
    sim = ns.Simulation(plan.name)
    sim.set_address_map(plan.base, plan.stride, len(plan.gpus))
    plugins: dict[str, tuple[Any, Any, PluginSpec]] = {}
    for comp in plan.components:
        if comp.spec.plugin is not None:  # a third-party class, compiled beforehand (plugin_build)
            plugins[comp.name] = _construct_plugin(comp.name, comp.spec.plugin, run.plugins[comp.name])
            continue
        params = ns.ParamSet()
        for key, value in comp.values:
            if isinstance(value, str):
                params.set_choice(key, value)
            else:
                params.set(key, float(value))
        try:
            sim.add(comp.spec.name, comp.name, params)
        except Exception as e:  # the C++ check agrees with the Python one; this names what slipped through
            raise ConfigError(f"component {comp.name!r} ({comp.spec.name}): {_cxx_message(e)}") from None

    def socket_name(ref: SocketRef) -> str:
        if ref.component in plugins:
            lib, obj, spec = plugins[ref.component]
            which = list(spec.sockets).index(ref.socket)
            found = lib.eidola_plugin_socket(obj, which, -1 if ref.index is None else ref.index)
            if not found:
                raise ConfigError(f"plugin {ref.component!r}: socket pattern {ref.socket}: "
                                  f"{spec.sockets[ref.socket].text!r} names no SystemC object")
            return str(found.decode())
        return ref.path

    def pattern(ref: SocketRef) -> str:
        """The plugin's socket pattern `ref` was resolved from, as the declaration names it ("" if none)."""
        if ref.component not in plugins:
            return ""
        return f"plugin {ref.component!r}: socket pattern {ref.socket}: {plugins[ref.component][2].sockets[ref.socket].text!r}: "

    for binding in plan.bindings:
        i_name, t_name = socket_name(binding.initiator), socket_name(binding.target)
        try:
            sim.bind(i_name, t_name)
        except Exception as e:
            # Why name the pattern: with checkers and adapters inserted, the bound names are theirs, not the IP's.
            where = pattern(binding.target) or pattern(binding.initiator)
            raise ConfigError(f"{where}binding {i_name} -> {t_name}: {_cxx_message(e)}") from None
    encoded = run.encoded
    sim.set_flags(list(encoded.flags))
    if encoded.multicast_groups:
        members = [g for group in encoded.multicast_groups for g in group]
        first = np.cumsum([0, *map(len, encoded.multicast_groups)]).tolist()
        sim.set_multicast_groups(members, first)
    sim.set_tracing(run.trace)
    sim.report_time_on_signal(time_word, int(signal.SIGUSR1))
    sim.set_time_limit(round(run.sim_time_s * 1e12) if run.sim_time_s else 0)
    # The models read the op records in place: `encoded` (held by `run`) outlives the run and the tables below.
    sim.load_programs(encoded.ops.ctypes.data, len(encoded.ops), encoded.programs.ctypes.data, len(encoded.programs))
    if encoded.traffic is not None:
        _set_traffic(ns, sim, encoded.traffic)
    built = time.perf_counter()
    status = sim.run()
    ran = time.perf_counter()
    tables = {w: _table(sim, w) for w in ("gpus", "workgroups", "links", "link_bins", "pairs", "flags", "stuck")
              + (("ops", "syncmon_trace") if run.trace else ())
              + (("traffic", "traffic_summary") if encoded.traffic is not None else ())
              + (("nvls",) if _has_nvls(plan) else ())}
    return {
        "timings": {"elaborate_s": built - clock, "simulate_s": ran - built, "tables_s": time.perf_counter() - ran},
        "status": int(status),
        "partial": bool(sim.partial()),
        "failure": str(sim.failure()),
        "failure_kind": str(sim.failure_kind()),
        "end_ps": int(sim.end_ps()),
        "events": int(sim.events()),
        "node_names": str(sim.node_names()).splitlines(),
        "bin_widths": str(sim.bin_widths()).splitlines(),
        "tables": tables,
    }
