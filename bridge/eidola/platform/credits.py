"""Whether a packet or flow fabric's switch buffers cover their links' credit round trips, from the platform alone.

A packet's credits come back one link latency after its tail leaves the next buffer, so a lane whose buffer holds
C credits carries at most C per credit round trip, serialisation of a full packet + 2 x link latency + switch
latency at zero load (docs/router.md, "Buffers and credits"). A lane then needs

    (L / b + 2 lat + sw) x b / L

credits to stay busy with packets of L wire bytes (payload + header), counted in packets for a bare-count buffer
(`fabric.switch.buffer: 64`) and in flits of `fabric.link.flit` bytes, ceil(L / flit) a packet, for one given as a
size (`17408B`). Every kind of link of the fabric is checked with its own figures (a custom edge's, a NIC's).

`eidola validate` prints a warning for a buffer short of it, and the run summary notes it (run.fabric_notes). The
figures are those the packet fabric uses (PacketFabric's credit round trip, FlowFabric::credit_seconds).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import units

if TYPE_CHECKING:
    from .model import Component, Platform

__all__ = ["LinkCredits", "credit_checks", "buffer_warnings", "FABRICS", "pcie_header"]

FABRICS = ("PacketFabric", "FlowFabric")  #: the models whose routers hold fabric.switch.buffer
DOC = 'docs/router.md, "Buffers and credits"'


@dataclass(frozen=True)
class LinkCredits:
    """One kind of link of a fabric (links with the same figures) against the fabric's switch buffer."""

    fabric: str          #: the fabric component's name
    model: str           #: PacketFabric or FlowFabric
    links: str           #: where these links' figures are written: "fabric.link", "fabric.custom.edges[4]"
    buffer_key: str      #: where the buffer is written, as a message names it ("FILE: fabric.switch.buffer")
    buffer: str          #: the buffer, canonical: "64" (packets) or "17408B" (bytes)
    bandwidth: float     #: bytes per second of one lane
    latency: float       #: seconds, the link's
    switch: float        #: seconds, the router's (fabric.switch.latency)
    wire: int            #: wire bytes of a full packet: gpus.max_payload + the link's header (a framed link's share)
    flit: int            #: bytes per flit credit (fabric.link.flit)
    #: the (src, dst) node kinds these links join ("gpu", "s0", "leaf", "nic", ...; see `node_kind`); None: all
    pairs: frozenset[tuple[str, str]] | None = None
    topology: str = ""   #: the fabric's topology kind
    #: hierarchical: (GPUs, GPUs per node, whether a node's GPUs meet at a switch), to tell its switches apart
    layout: tuple[int, int, bool] = (0, 1, False)

    def covers(self, src: str, dst: str) -> bool:
        """Whether the link from node `src` to node `dst` (names as in the links table's nodes) is of this kind."""
        return self.pairs is None or (node_kind(src, self.topology, self.layout),
                                      node_kind(dst, self.topology, self.layout)) in self.pairs

    @property
    def in_bytes(self) -> bool:
        """Whether the buffer is a size (flit credits) rather than a bare count of packets."""
        return self.buffer.endswith("B")

    @property
    def credits(self) -> int:
        """The buffer's credits per lane and channel: packets, or flits for a size (as PacketFabric's buffer_credits)."""
        amount = int(self.buffer[:-1] if self.in_bytes else self.buffer)
        return max(1, amount // self.flit if self.in_bytes else amount)

    def per_packet(self, wire: float) -> int:
        """Credits one packet of `wire` bytes takes: one, or its flits (at least one) for a buffer in bytes."""
        return max(1, math.ceil(wire / self.flit)) if self.in_bytes else 1

    def round_trip(self, wire: float | None = None) -> float:
        """Seconds of a credit round trip at zero load for a packet of `wire` bytes (default: a full one)."""
        w = self.wire if wire is None else wire
        return w / self.bandwidth + 2 * self.latency + self.switch

    def needed(self, wire: float | None = None) -> float:
        """Credits a lane needs to stay busy with packets of `wire` bytes (default: full ones), in the buffer's units."""
        w = self.wire if wire is None else wire
        return self.round_trip(w) * self.bandwidth / w * self.per_packet(w)

    @property
    def short(self) -> bool:
        """Whether the buffer is below a full packet's credit round trip."""
        return self.credits < self.needed() * (1 - 1e-9)

    def formula(self, wire: float | None = None) -> str:
        """``(272 B / 400 GB/s + 2 x 150 ns + 100 ns) x 400 GB/s / 272 B = 590 packets``: the needed credits, worked."""
        w = self.wire if wire is None else wire
        bw = units.format_value(self.bandwidth, "bandwidth")
        text = (f"({w:.4g} B / {bw} + 2 x {_ns(self.latency)} + {_ns(self.switch)}) x {bw} / {w:.4g} B "
                f"= {math.ceil(self.needed(w) / self.per_packet(w) - 1e-9)} packets")
        if self.in_bytes:
            text += f" of {self.per_packet(w)} flits = {math.ceil(self.needed(w) - 1e-9)} flits"
        return text

    def given(self) -> str:
        """The buffer as a message gives it: ``192 packets`` or ``17408B (1088 flits of 16 B)``, per lane and channel."""
        if self.in_bytes:
            shown = units.format_value(float(self.buffer[:-1]), "size")
            return f"{shown} ({self.credits} flits of {self.flit} B) per lane and channel"
        return f"{self.credits} packets per lane and channel"

    def advice(self) -> str:
        """The buffer that would cover the round trip, in its own units and (for a count) in bytes."""
        packets = math.ceil(self.needed() / self.per_packet(self.wire) - 1e-9)
        if self.in_bytes:
            return f"give at least {math.ceil(self.needed() - 1e-9) * self.flit}B"
        return f"give at least {packets}, or {packets * math.ceil(self.wire / self.flit) * self.flit}B in flits"

    def warning(self, others: int = 0) -> str:
        """The warning `eidola validate` prints and the run notes, naming the file, the key and the figures."""
        more = f" (the worst of {others + 1} kinds of link short of it)" if others else ""
        share = self.credits / self.needed()
        # Why say so on the flow fabric: it paces by these credits but has no credit stalls to count, so its run
        # summary would otherwise be silent about a buffer that held its links back.
        flow = (" The flow fabric paces each channel to these credits a round trip but does not count how long "
                "links waited for them; the packet fabric does (credit_stall_ns).") if self.model == "FlowFabric" else ""
        return (f"warning: {self.buffer_key}: {self.given()}, short of the credit round trip of {self.links}'s "
                f"lanes{more}: {self.formula()}, so a lane there carries at most {100 * share:.0f}% of its rate; "
                f"{self.advice()} ({DOC}).{flow}")


def pcie_header(values: dict[str, Any]) -> int:
    """Bytes a rail's GPU-to-NIC (PCIe) link adds per GPU packet: `nic.pcie.header`, or the GPU link's header when it
    is 0 (PacketFabricParams::topology_spec's rule)."""
    return int(values.get("nic.pcie.header", 0)) or int(values["link.header"])


def _ns(seconds: float) -> str:
    return f"{seconds * 1e9:.4g} ns"


def credit_checks(platform: Platform) -> list[LinkCredits]:
    """Every kind of link of every packet or flow fabric of `platform` with its buffer's figures (the file and keys
    named as in other messages). Assumes the platform elaborates; a fabric it cannot read is left out."""
    gpus = platform.gpus()
    payload = max((int(g.resolved().get("max_payload", 0)) for g in gpus), default=0)
    out: list[LinkCredits] = []
    for c in platform.components.values():
        if c.spec.name in FABRICS and payload > 0:
            out += _fabric_checks(platform, c, c.resolved(), payload, len(gpus))
    return out


def buffer_warnings(checks: list[LinkCredits]) -> list[str]:
    """One warning per fabric whose buffer is short of some kind of its links' credit round trip: the worst one."""
    lines = []
    for fabric in dict.fromkeys(c.fabric for c in checks):
        short = [c for c in checks if c.fabric == fabric and c.short]
        if short:
            worst = min(short, key=lambda c: c.credits / c.needed())
            lines.append(worst.warning(len({(c.links) for c in short}) - 1))
    return lines


def node_kind(name: str, topology: str, layout: tuple[int, int, bool] = (0, 1, False)) -> str:
    """The kind of node a links table's node name is, as `LinkCredits.pairs` names it: "gpu"; a custom topology's
    node's own name ("gpu0", "s1": its edges join nodes, not kinds); hierarchical "intra", "leaf" or "spine"
    (`layout`: GPUs, GPUs per node, whether a node's GPUs meet at a switch; Topology numbers its switches in that
    order); rail "intra" (a node's switch), "nic", "rail" or "spine"."""
    if topology == "custom":
        return name
    if name.startswith("gpu"):
        return "gpu"
    if topology == "hierarchical" and name[:1] == "s" and name[1:].isdigit():
        gpus, per, switched = layout
        nodes = gpus // max(1, per)
        k = int(name[1:]) - (nodes if switched else 0)
        return "intra" if k < 0 else "leaf" if k < nodes else "spine"
    if topology == "rail":
        for suffix, kind in ((".switch", "intra"), (".nic", "nic")):
            if suffix in name:
                return kind
        return "rail" if name.startswith("rail") else "spine"
    return name


def _both(*pairs: tuple[str, str]) -> frozenset[tuple[str, str]]:
    return frozenset(pairs) | frozenset((b, a) for a, b in pairs)


def _fabric_checks(platform: Platform, c: Component, v: dict[str, Any], payload: int, gpus: int) -> list[LinkCredits]:
    from .elaborate import _key, _loc  # the one place messages name keys

    topology = str(v.get("topology"))
    prefix = _key(platform, c, "topology")
    prefix = prefix[:-len("topology")] if prefix.endswith("topology") else f"{c.name}."

    per = int(v.get("hierarchical.gpus_per_node", 1))
    layout = (gpus, per, v.get("hierarchical.intra") == "switch")
    buffer_key = _key(platform, c, "switch.buffer") if c.origin.get("switch.buffer") else \
        f"{prefix}switch.buffer (not given: the default)"

    def kind(group: str, bandwidth: float, latency: float, header: float,
             pairs: frozenset[tuple[str, str]] | None = None, mtu: int = 0, key: str = "") -> LinkCredits:
        # A framed link (rail's NIC and network links) carries its header once per MTU of a message.
        share = math.ceil(header / max(1, mtu // payload)) if mtu else int(header)
        return LinkCredits(c.name, c.spec.name, key or prefix + group,
                           f"{_loc(platform)}{buffer_key}", str(v["switch.buffer"]),
                           float(bandwidth), float(latency), float(v["switch.latency"]), int(payload + share),
                           max(1, int(v.get("link.flit", 16))), pairs, topology, layout)

    link = (v["link.bandwidth"], v["link.latency"], v["link.header"])
    if topology == "hierarchical":
        return [kind("link", *link, _both(("gpu", "gpu"), ("gpu", "intra"))),
                kind("nic", v["nic.bandwidth"], v["nic.latency"], v["link.header"], _both(("gpu", "leaf"))),
                kind("network", v["network.bandwidth"], v["network.latency"], v["link.header"], _both(("leaf", "spine")))]
    if topology == "rail":
        mtu = int(v.get("nic.mtu", 0))
        return [kind("link", *link, _both(("gpu", "gpu"), ("gpu", "intra"))),
                kind("nic.pcie", v["nic.pcie.bandwidth"], v["nic.pcie.latency"], pcie_header(v), _both(("gpu", "nic"))),
                kind("nic", v["nic.bandwidth"], v["nic.latency"], v["nic.header"], _both(("nic", "rail")), mtu),
                kind("network", v["network.bandwidth"], v["network.latency"], v["nic.header"],
                     _both(("rail", "spine")), mtu)]
    if topology != "custom":
        return [kind("link", *link)]
    out: list[LinkCredits] = []
    edges, spec = c.params.get("custom.edges"), c.spec.param("custom.edges")
    if spec is None or not isinstance(edges, list):
        return out
    where = _key(platform, c, "custom.edges")
    for i, edge in enumerate(edges):
        # The edge as the C++ topology reads it (one converter for both): "src dst bandwidth latency header lanes".
        src, dst, bw, lat, header, _ = spec.convert([edge]).split(";")[0].split()
        a, b = (f"gpu{x}" if x.isdigit() else x for x in (src, dst))
        out.append(kind("", v["link.bandwidth"] if bw == "-" else float(bw),
                        v["link.latency"] if lat == "-" else float(lat),
                        v["link.header"] if header == "-" else float(header),
                        _both((a, b)) if edge.get("bidirectional") else frozenset({(a, b)}), key=f"{where}[{i}]"))
    return out
