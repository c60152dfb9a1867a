"""One packet's zero-load time over a route, cut-through: the arithmetic the NIC-path tests derive
their expected times from (docs/router.md). Each hop serialises the packet at its bandwidth; the
head moves on after one flit and the hop's latency plus the switch's; the tail leaves a hop no
sooner than the head's whole packet and the tail's last flit allow."""

from __future__ import annotations

import math


def zero_load_ns(hops: list[tuple[float, float, float]], sw_ns: float, flit: int = 16,
                 overhead_ns: float = 0.0, overhead_at: int = -1) -> float:
    """One packet over `hops` [(wire bytes, bandwidth B/s, latency ns)] at zero load, ns.

    sw_ns: a switch's latency per hop; flit: flit bytes; overhead_ns: a fixed cost (a NIC's message
    processing) paid before hop `overhead_at`.
    """
    head = tail = 0.0
    for k, (wire, bw, lat) in enumerate(hops):
        if k == overhead_at:
            head += overhead_ns
            tail += overhead_ns
        ser = wire / bw * 1e9
        flits = max(1, math.ceil(wire / flit))
        last_flit = (wire - (flits - 1) * flit) / bw * 1e9
        end = max(head + ser, tail + last_flit)
        head += min(wire, flit) / bw * 1e9 + lat + sw_ns
        tail = end + lat + sw_ns
    return max(head, tail)
