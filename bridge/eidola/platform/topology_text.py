"""One line that says what a multi-node topology is (nodes, NICs, rails, spines, oversubscription),
for ``eidola describe PLATFORM`` and ``eidola validate``. The counts follow topology.cpp's rules."""

from __future__ import annotations

from typing import Any

from .units import format_value

__all__ = ["topology_text", "gpus_per_node", "platform_gpus_per_node"]


def gpus_per_node(values: dict[str, Any]) -> int:
    """GPUs a node of a packet or flow fabric's multi-node topology (rail, hierarchical); 0 for one node."""
    kind = values.get("topology")
    return max(1, int(values.get(f"{kind}.gpus_per_node", 1))) if kind in ("rail", "hierarchical") else 0


def platform_gpus_per_node(platform: Any) -> int:
    """GPUs a node of `platform`'s packet or flow fabric (gpus_per_node); 0 for one node or another fabric."""
    for c in platform.components.values():
        if c.spec.name in ("PacketFabric", "FlowFabric"):
            return gpus_per_node(c.resolved())
    return 0


def topology_text(values: dict[str, Any], gpus: int) -> str:
    """`values`: a packet or flow fabric's canonical parameters; "" for single-node topologies."""
    kind = values.get("topology")
    if kind not in ("rail", "hierarchical"):
        return ""
    per = gpus_per_node(values)
    nodes, spines = gpus // per, int(values.get(f"{kind}.spines", 1))
    nic_bw, net_bw = float(values.get("nic.bandwidth", 0)), float(values.get("network.bandwidth", 0))
    intra = values.get(f"{kind}.intra", "fully_connected")
    head = f"{kind}: {nodes} node(s) x {per} GPUs ({intra})"
    if kind == "hierarchical":
        return (f"{head}, a {format_value(nic_bw, 'bandwidth')} NIC per GPU to its node's leaf, "
                f"{spines} spine(s) over {format_value(net_bw, 'bandwidth')} leaf-spine links")
    nics = int(values.get("nic.count", 0)) or per
    line = (f"{head}, {nics} NIC(s) per node at {format_value(nic_bw, 'bandwidth')} on {nics} rail switch(es), "
            f"{spines} spine(s)")
    if values.get("rail.pxn"):
        line += " (cross-rail traffic by PXN: through the GPU on the peer's rail and its NIC, never a spine)"
    elif spines:
        down, up = nodes * nic_bw, spines * net_bw  # what a rail switch's NICs bring against its spine links
        line += f"; a rail switch has {format_value(up, 'bandwidth')} up for {format_value(down, 'bandwidth')} of NICs"
        line += f" ({down / up:.2f}:1 oversubscribed)" if down > up else " (not oversubscribed)"
    else:
        line += " (rails only: cross-rail traffic crosses the source node first)"
    mtu, header = int(values.get("nic.mtu", 0)), int(values.get("nic.header", 0))
    return line + f"; network packets of {mtu} B + {header} B header"
