"""An architect's figures of a platform, worked out from its own parameters, for ``eidola describe PLATFORM``.

Per GPU: its injection bandwidth (every link out of it, lanes x lane bandwidth) and the payload share of a full
packet. GPU to GPU: the zero-load latency of a full packet (gpus.max_payload + the link's header) for the nearest
and the farthest pair, with hop counts, and a write's round trip there (the packet, the target's memory, the
acknowledgement back). The bisection bandwidth where a topology has a well-defined one. Each kind of link's credit
round trip against the switch buffer (credits.py). The GPU window (gpus.max_outstanding) against the
bandwidth-delay product.

Routes are the C++ topology's own (eidola::Topology, first candidate at every node, as the fabric's b_transport
path takes them), so hop counts follow topology.cpp's rules for every kind, custom edges and rail included. Each hop
is timed as docs/router.md's "A hop" says: cut-through pays a packet's serialisation once and each later hop its
head flit, L/b + H (lat + sw) + (H - 1) F/b on a path of like links; store and forward H (L/b + lat + sw). A rail's
NIC and network links carry the NIC's header once for a one-packet message, and a write's acknowledgement is
`link.ack` bytes where that is set (else the link's header), as PacketFabric::zero_load_ps counts them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from .credits import FABRICS, LinkCredits, credit_checks

if TYPE_CHECKING:
    from .model import Component, Platform

__all__ = ["platform_figures", "figures_lines"]


@dataclass(frozen=True)
class _Link:
    """One unidirectional link of the C++ topology, in SI units."""

    src: int
    dst: int
    bandwidth: float  #: bytes per second of one lane
    latency: float    #: seconds
    header: int       #: bytes a packet carries on it (a framed link: per network packet)
    lanes: int
    framed: bool      #: a rail NIC or network link
    nic_out: bool     #: a rail NIC's link to its rail switch: the NIC's message processing is taken there
    where: str = ""   #: where its figures are written, as credits.py names it ("fabric.link", "fabric.nic.pcie")


def platform_figures(platform: Platform) -> dict[str, Any]:
    """The figures of `platform`'s fabric as a JSON-able dict: {"fabric": model, "kind": "packet" | "ideal" |
    "plugin" | "none", ...}; a packet or flow fabric's have every figure, an ideal fabric's its latency."""
    fabric = next((c for c in platform.components.values() if c.role == "fabric"), None)
    if fabric is None:
        return {"kind": "none"}
    gpu = _gpu_values(platform)
    if fabric.spec.plugin is not None:
        return {"kind": "plugin", "fabric": fabric.spec.name}
    if fabric.spec.name == "IdealFabric":
        one_way = float(fabric.resolved()["latency"])
        memory = gpu["memory_latency"] + gpu["payload"] / gpu["memory_bandwidth"]
        return {"kind": "ideal", "fabric": fabric.spec.name, "one_way_s": one_way, "memory_s": memory,
                "round_trip_s": 2 * one_way + memory}
    if fabric.spec.name not in FABRICS:
        return {"kind": "plugin", "fabric": fabric.spec.name}
    return _packet_figures(platform, fabric, gpu)


def _gpu_values(platform: Platform) -> dict[str, float]:
    """The GPUs' figures the fabric's depend on: the largest max_payload (as credits.py takes it), and the first
    eidolon's window and memory (a GPU plugin has none of these)."""
    gpus = platform.gpus()
    payload = max((int(g.resolved().get("max_payload", 0)) for g in gpus), default=0)
    first = next((g.resolved() for g in gpus if "memory.latency" in g.resolved()), {})
    return {"payload": payload, "window": int(first.get("max_outstanding", 0)),
            "memory_latency": float(first.get("memory.latency", 0.0)),
            "memory_bandwidth": float(first.get("memory.bandwidth", math.inf)) or math.inf}


def _packet_figures(platform: Platform, c: Component, gpu: dict[str, float]) -> dict[str, Any]:
    """`platform_figures` of a packet or flow fabric `c` (the two share topologies, timing and buffers)."""
    v = c.resolved()
    checks = [k for k in credit_checks(platform) if k.fabric == c.name]
    links, first = _topology(platform, c, v, checks)
    n = int(v["ports"])
    payload = int(gpu["payload"])
    out: dict[str, Any] = {"kind": "packet", "fabric": c.spec.name, "topology": str(v["topology"]), "gpus": n,
                           "payload_B": payload}

    # Injection: every link out of each GPU; the GPUs of a platform may differ (custom edges), so min and max.
    inject = [sum(lk.bandwidth * lk.lanes for lk in links if lk.src == g) for g in range(n)]
    # A custom edge may give its own header: the GPUs' widest is the payload share's.
    header = max((lk.header for lk in links if lk.src < n and not lk.framed), default=int(v["link.header"]))
    out["injection_Bps"] = [min(inject), max(inject)]
    out["gpu0_links"] = _link_summary([lk for lk in links if lk.src == 0])
    out["header_B"] = header
    out["payload_share"] = payload / (payload + header) if payload + header else 0.0

    ack = int(v["link.ack"])
    store = v.get("switch.flow_control") == "store_and_forward"
    timing = (float(v["switch.latency"]), int(v["link.flit"]), store, float(v.get("nic.message_overhead", 0.0)))
    memory = gpu["memory_latency"] + payload / gpu["memory_bandwidth"]
    # Every ordered pair, source by source: (one way, hops, src, dst, round trip, first link).
    pairs: list[tuple[float, int, int, int, float, int]] = []
    cache: dict[tuple[int, ...], float] = {}
    # Links of like figures time alike: paths are cached by their links' figures, so that a 512-GPU rail's
    # quarter million pairs cost a few distinct paths' arithmetic.
    figures: dict[tuple[Any, ...], int] = {}
    fid = [figures.setdefault((lk.bandwidth, lk.latency, lk.header, lk.framed, lk.nic_out), len(figures))
           for lk in links]

    def trip(path: list[int], nbytes: int, request: bool) -> float:
        key = (nbytes, *(fid[k] for k in path))
        if key not in cache:
            hops = [(_wire(links[k], nbytes, ack), links[k]) for k in path]
            cache[key] = _zero_load(hops, *timing, request=request)
        return cache[key]

    for src in range(n):
        for dst in range(n):
            if src != dst:
                path = _path(first, links, src, dst)
                there = trip(path, payload, True)
                back = trip(_path(first, links, dst, src), 0, False)
                pairs.append((there, len(path), src, dst, there + memory + back, path[0]))
    if pairs:
        # Rounded to the picosecond: pairs equal but for float noise take the first (gpu0 to gpu1).
        near = min(pairs, key=lambda p: (round(p[0] * 1e12), p[1]))
        far = max(pairs, key=lambda p: (round(p[0] * 1e12), p[1]))
        out["nearest"] = _pair(near, memory)
        out["farthest"] = _pair(far, memory)
    out["bisection"] = _bisection(v, n)
    out["buffers"] = [{"links": k.links, "given": k.credits, "needed": math.ceil(k.needed() - 1e-9),
                       "unit": "flits" if k.in_bytes else "packets", "round_trip_s": k.round_trip(),
                       "covered": not k.short} for k in checks]
    window = int(gpu["window"])
    if pairs and window:
        # A link out of a GPU stays busy at zero load if the GPU has a link's bandwidth x the round trip in flight
        # over it; to its farthest GPU through that link is the most it may need. The GPU needing most is shown.
        worst: dict[tuple[int, int], float] = {}
        for p in pairs:
            worst[(p[2], p[5])] = max(worst.get((p[2], p[5]), 0.0), p[4])
        need = [0.0] * n
        for (src, k), rtt in worst.items():
            need[src] += links[k].bandwidth * links[k].lanes * rtt / (payload + links[k].header)
        bdp = max(need)
        out["window"] = {"packets": window, "needed": math.ceil(bdp - 1e-9), "wire_B": payload + header,
                         "covered": window >= bdp * (1 - 1e-9)}
    return out


def _pair(p: tuple[float, int, int, int, float, int], memory: float) -> dict[str, Any]:
    return {"src": p[2], "dst": p[3], "hops": p[1], "one_way_s": p[0], "round_trip_s": p[4], "memory_s": memory}


def _link_summary(links: list[_Link]) -> list[dict[str, Any]]:
    """Links out of one GPU grouped by kind and figures: [{"links", "count", "lanes", "bandwidth_Bps"}]."""
    groups: dict[tuple[str, int, float], int] = {}
    for lk in links:
        key = (lk.where, lk.lanes, lk.bandwidth)
        groups[key] = groups.get(key, 0) + 1
    return [{"links": kind, "count": count, "lanes": lanes, "bandwidth_Bps": bw}
            for (kind, lanes, bw), count in groups.items()]


def _wire(lk: _Link, payload: int, ack: int) -> int:
    """Wire bytes of a one-packet message on `lk`: a write of `payload` bytes, or (payload 0) its acknowledgement."""
    if lk.framed:  # one network packet: the NIC's header once, the acknowledgement's too
        return payload + lk.header
    return payload + (ack if payload == 0 and ack else lk.header)


def _zero_load(hops: list[tuple[int, _Link]], sw: float, flit: int, store: bool, overhead: float,
               request: bool) -> float:
    """Seconds for one packet over `hops` [(wire bytes, link)] with nothing else in the fabric (docs/router.md)."""
    head = tail = 0.0
    for wire, lk in hops:
        if lk.nic_out and request:  # the NIC's processing of the message, before its first packet leaves
            head += overhead
            tail += overhead
        ser = wire / lk.bandwidth
        if store:
            head = tail = max(head, tail) + ser + lk.latency + sw
            continue
        flits = max(1, math.ceil(wire / flit))
        last = (wire - (flits - 1) * flit) / lk.bandwidth
        end = max(head + ser, tail + last)
        head += min(wire, flit) / lk.bandwidth + lk.latency + sw
        tail = end + lk.latency + sw
    return max(head, tail)


def _path(first: list[list[int]], links: list[_Link], src: int, dst: int) -> list[int]:
    """Link indices from GPU `src` to GPU `dst`, following the routing table's first candidate at every node."""
    path: list[int] = []
    node = src
    while node != dst:
        k = first[node][dst]
        if k < 0 or len(path) > len(first):
            raise ConfigError(f"topology: no route from gpu{src} to gpu{dst}")
        path.append(k)
        node = links[k].dst
    return path


def _topology(platform: Platform, c: Component, v: dict[str, Any],
              checks: list[LinkCredits]) -> tuple[list[_Link], list[list[int]]]:
    """The C++ topology of fabric `c` (canonical values `v`), as PacketFabricParams::topology_spec builds it: its
    links, each named by the kind of `checks` it is, and the first candidate link from every node towards every GPU
    (-1: none)."""
    import ctypes

    from ..run import sysc
    from .elaborate import topology_error

    topo, problem = sysc.build_topology(v)
    if topo is None:
        raise topology_error(platform, c.name, problem or "the topology cannot be built")
    names = [str(topo.node_name(i)) for i in range(int(topo.nodes()))]

    def written(src: int, dst: int) -> str:
        return next((k.links for k in checks if k.covers(names[src], names[dst])), "fabric.link")

    links = [_Link(int(t.src), int(t.dst), float(t.bytes_per_s), int(t.latency_ps) * 1e-12, int(t.header),
                   max(1, int(t.lanes)), bool(t.framed), bool(t.nic_out), written(int(t.src), int(t.dst)))
             for t in topo.links()]
    count = ctypes.c_uint32(0)
    first = []
    for node in range(int(topo.nodes())):
        row = []
        for dst in range(int(topo.gpus())):
            ptr = topo.next(node, dst, count)
            row.append(int(ptr[0]) if count.value else -1)
        first.append(row)
    return links, first


def _grid(v: dict[str, Any], n: int) -> tuple[int, int]:
    """A mesh's or torus's [x, y], as topology.cpp's squarest_x chooses them when dims is empty."""
    from ..run.sysc import fabric_dims

    dims = fabric_dims(v.get("dims"))
    if len(dims) == 2:
        return dims[0], dims[1]
    y = max(1, math.isqrt(n))
    while y > 1 and n % y:
        y -= 1
    return n // y, y


def _bisection(v: dict[str, Any], n: int) -> dict[str, Any]:
    """Bytes per second one way across the narrowest cut into two halves of the GPUs, and what crosses it; or
    {"why": ...} where this topology has no well-defined one here."""
    kind = str(v["topology"])
    lane = float(v["link.bandwidth"]) * int(v["link.count"])  # one GPU link, all lanes
    half = n // 2
    if n < 2 or n % 2:
        return {"why": f"{n} GPUs do not split in halves"}
    if kind == "switch":
        return {"Bps": half * lane, "what": f"{half} GPUs' links"}
    if kind == "fully_connected":
        return {"Bps": half * half * lane, "what": f"{half} x {half} links"}
    if kind == "ring":
        ways = 2 if bool(v["bidirectional"]) and n > 2 else 1
        return {"Bps": ways * lane, "what": f"{ways} link{'s' if ways > 1 else ''}"}
    if kind in ("mesh2d", "torus2d"):
        x, y = _grid(v, n)
        # Cut across an even dimension: the other dimension's rows cross it, twice on a torus (its wrap links),
        # once where the dimension is 2 (topology.cpp links a pair of 2 once).
        cuts = [other * (2 if kind == "torus2d" and size > 2 else 1)
                for size, other in ((x, y), (y, x)) if size % 2 == 0]
        if not cuts:
            return {"why": f"dims {x} x {y}: no even dimension to halve"}
        crossing = min(cuts)
        return {"Bps": crossing * lane, "what": f"{crossing} links"}
    if kind in ("hierarchical", "rail"):
        per = max(1, int(v[f"{kind}.gpus_per_node"]))
        nodes = n // per
        if nodes == 1:
            inner = dict(v, topology=v[f"{kind}.intra"])
            return _bisection(inner, n)
        if nodes % 2:
            return {"why": f"{nodes} nodes do not split in halves"}
        if kind == "hierarchical":
            # Half the nodes' leaves send either over their NIC links or over their spine links: the narrower.
            nic = per * float(v["nic.bandwidth"])
            spine = int(v["hierarchical.spines"]) * float(v["network.bandwidth"])
            what = "NICs" if nic <= spine else "leaf-spine links"
            return {"Bps": nodes // 2 * min(nic, spine), "what": f"{what} of {nodes // 2} node(s)"}
        nics = int(v["nic.count"]) or per
        nic = nics * float(v["nic.bandwidth"])
        return {"Bps": nodes // 2 * nic, "what": f"{nics} NICs of each of {nodes // 2} node(s)"}
    return {"why": "not computed for a custom topology"}


def figures_lines(fig: dict[str, Any]) -> list[str]:
    """`platform_figures`'s dict as aligned key/value lines for ``eidola describe``."""
    t = _time
    kind = fig["kind"]
    if kind == "none":
        return []
    if kind == "plugin":
        return [_row("figures", f"{fig['fabric']} is a plugin fabric: its figures are its own (not computed)")]
    if kind == "ideal":
        return [_row("latency", f"{t(fig['one_way_s'])} one way on every request and response (fabric.latency); "
                                "no links: no bandwidth limit, no contention"),
                _row("write round trip", f"{t(fig['round_trip_s'])}: 2 x {t(fig['one_way_s'])} and memory "
                                         f"{t(fig['memory_s'])}")]
    lo, hi = fig["injection_Bps"]
    links = " + ".join((f"{g['count']} x " if g["count"] > 1 else "") + f"{g['links']} "
                       + (f"{g['lanes']} lanes x " if g["lanes"] > 1 else "") + _bw(g["bandwidth_Bps"])
                       for g in fig["gpu0_links"])
    inject = _bw(hi) if lo == hi else f"{_bw(lo)} to {_bw(hi)}"
    payload, header, share = fig["payload_B"], fig["header_B"], fig["payload_share"]
    rows = [_row("injection", f"{inject} per GPU per direction (GPU 0: {links})"),
            _row("payload share", f"{100 * share:.1f}%, {payload} B of a {payload + header} B packet: "
                                  f"{_bw(hi * share)} of payload")]
    near, far = fig.get("nearest"), fig.get("farthest")
    if near and far:
        for name, p in (("nearest", near), ("farthest", far)):
            rows.append(_row(f"latency {name}", f"{t(p['one_way_s'])}, {p['hops']} hop{'s' if p['hops'] > 1 else ''}"
                                                f" (gpu{p['src']} to gpu{p['dst']}), a full packet at zero load"))
        rows.append(_row("write round trip", f"{t(near['round_trip_s'])} nearest, {t(far['round_trip_s'])} farthest "
                                             f"(there, memory {t(far['memory_s'])}, acknowledgement back)"))
    b = fig["bisection"]
    rows.append(_row("bisection", f"{_bw(b['Bps'])} per direction ({b['what']})" if "Bps" in b else b["why"]))
    groups: dict[tuple[Any, ...], list[str]] = {}  # kinds of link with the same figures share a line
    for k in fig["buffers"]:
        key = (k["given"], k["unit"], k["needed"], t(k["round_trip_s"]), k["covered"])
        groups.setdefault(key, []).append(k["links"])
    for (given, unit, needed, rtt, covered), names in groups.items():
        verdict = "covered" if covered else "SHORT: its lanes run below their rate"
        rows.append(_row("buffer", f"{_names(names)}: {given} {unit} per lane and channel; its credit round trip, "
                                   f"{rtt}, needs {needed}: {verdict}"))
    w = fig.get("window")
    if w:
        verdict = "covered" if w["covered"] else "NOT covered: a GPU cannot keep its links busy on its own"
        rows.append(_row("window", f"{w['packets']} packets per GPU; its links busy over their farthest round "
                                   f"trips need {w['needed']}: {verdict}"))
    return rows


def _names(names: list[str]) -> str:
    """``fabric.custom.edges[0-3]`` for a run of custom edges; the names joined otherwise."""
    stem = names[0].split("[")[0]
    if len(names) > 2 and all(n.startswith(stem + "[") for n in names):
        idx = [int(n[len(stem) + 1:-1]) for n in names]
        if idx == list(range(idx[0], idx[0] + len(idx))):
            return f"{stem}[{idx[0]}-{idx[-1]}]"
    return ", ".join(names)


def _row(key: str, value: str) -> str:
    return f"  {key:17s} {value}"


def _bw(bps: float) -> str:
    return f"{bps / 1e12:.4g} TB/s" if bps >= 1e12 else f"{bps / 1e9:.4g} GB/s"


def _time(seconds: float) -> str:
    ns = seconds * 1e9
    return f"{ns / 1000:.3f} us" if ns >= 10_000 else f"{ns:.1f} ns"
