"""What the collectives need to know about a platform: GPUs, bandwidths, and its ``collectives:`` section.

`System.of(platform)` reads the GPU count and workgroups, the memory bandwidth, the per-GPU link
bandwidth (for the tuner only: the simulated time comes from the fabric) and the section's library,
channels, link type, protocols and GPU generation, filling in what the section leaves out:

- library: nccl;
- channels: 16 for NCCL (the count observed on H800 nodes; HGX A100 runs 24), 28 for RCCL (its
  8-GPU fully connected model's hand-made rings), never more than the GPU's workgroups;
- link_type: xgmi for RCCL on a fully connected fabric, network for a hierarchical one, else nvlink;
- protocols: LL, LL128 and Simple for NCCL on NVLink, LL and Simple otherwise (NCCL enables LL128
  on NVLink paths only; RCCL had it off on MI300X);
- arch: hopper for NCCL, cdna3 for RCCL;
- nvls: whether the fabric is one switch with fabric.switch.nvls (the NVLS collectives need it);
- host_call: 0 (the host's cost per call, for `harness.back_to_back`).

Ring orders (`rings`): on a fully connected fabric each channel's ring takes other links, as RCCL's
hand-made rings do. On a fabric of direct links between neighbours (topology ``ring``, ``mesh2d``,
``torus2d``) the rings are directed Hamiltonian cycles of the GPUs' neighbour links that share no
directed link, as many as can be found up to a GPU's links out (`link_cycles`): NCCL's ring search
(``src/graph/search.cc``, ``followPath``) takes a ring's bandwidth from each link in its direction
only, so a bidirectional ring of links carries a ring each way, and a 4x4 torus up to four. Channel c
takes cycle c mod their number, as NCCL duplicates its rings over its channels. Where no such cycle
exists (a mesh with an odd number of GPUs each way, a unidirectional ring's subset) and on every other
fabric, every channel follows GPU order (a switch gives every pair the same path).

Nodes: a fabric of topology ``rail`` or ``hierarchical`` groups its GPUs in nodes of
``fabric.rail.gpus_per_node`` (``hierarchical.gpus_per_node``) GPUs; every other fabric is one node.
GPUs n x G .. n x G + G - 1 are node n. Across nodes `rings` and `chains` give every channel a path
through each node that enters and leaves it on NICs of the same rail (`node_path`), and the network
steps pay ``collectives.proxy_step`` at each end (docs/collectives.md, "Across nodes").
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...errors import ConfigError
from ...platform import units

if TYPE_CHECKING:
    from ...platform.model import Platform

__all__ = ["System", "hamiltonian_cycles", "link_cycles", "direct_rings", "neighbours", "stride_cycles", "zigzag_path",
           "PROXY_STEP_NS", "NET_OVERHEAD_US"]

#: Default proxy cost per network step at each end, ns: the time from a GPU's step-counter store to the
#: proxy thread posting the RDMA write (sender), or from the completion to the tail store the GPU polls
#: (receiver). 1 us at each end, 2 us a step: NCCL's own tuner charges a network step 1 us (Intel) or
#: 2 us (AMD hosts) of "net overhead" (``getNetOverhead`` in ``src/graph/tuning.cc``); a platform sets
#: its own with collectives.proxy_step.
PROXY_STEP_NS = 1000.0
#: NCCL's per-step network overhead in its tuning model, us (``getNetOverhead``: 1 on Intel hosts, 2 on
#: AMD; the default here 1); x3 for Simple.
NET_OVERHEAD_US = 1.0


@dataclass(frozen=True)
class System:
    """The platform as the collectives see it."""

    gpus: int  #: GPUs of the platform
    workgroups: int  #: resident workgroups per GPU: the most channels a kernel may use
    mem_bw: float  #: GPU memory bandwidth, B/s (the reduction's cost)
    gpu_bw: float  #: bandwidth from one GPU into the fabric, B/s (inf on the ideal fabric); the tuner's
    library: str  #: "nccl" or "rccl"
    channels: int  #: the library's channel count (maximum)
    link_type: str  #: "nvlink", "pcie", "network" or "xgmi"
    protocols: tuple[str, ...]  #: enabled protocols
    arch: str  #: GPU generation for the tuner's caps
    fully_connected: bool  #: one link per GPU pair: rings are spread over the links
    launch_ns: float  #: gpus.launch if the platform has it (reported; the GPU model applies it)
    nvls: bool = False  #: its switch reduces and multicasts (fabric.switch.nvls): NVLS collectives can run
    host_call_ns: float = 0.0  #: collectives.host_call: the host's cost per call issued back to back (harness)
    gpus_per_node: int = 0  #: GPUs in one node (0: all of them, one node)
    nic_bw: float = math.inf  #: network bandwidth of one node, B/s: its NICs together (inf: one node)
    nics_per_node: int = 0  #: NICs per node (0: one node, no network)
    proxy_ns: float = PROXY_STEP_NS  #: proxy cost per network step at each end, ns (collectives.proxy_step)
    proxy_launch_ns: float = 0.0  #: the proxy's start per collective, ns (collectives.proxy_launch)
    intra_fully_connected: bool = False  #: inside a node every GPU pair has its own link
    #: One node of direct links (ring, mesh2d, torus2d): each GPU's neighbours over its links out (`neighbours`),
    #: whose Hamiltonian cycles are the rings; None on every other fabric.
    neighbours: tuple[tuple[int, ...], ...] | None = None
    #: the platform has a ``collectives:`` section (False: every value here is the library's default)
    configured: bool = True

    @staticmethod
    def of(platform: Platform) -> System:
        """Read `platform` (a loaded Platform) and its collectives section, defaults filled in."""
        gpus = platform.eidolons()
        if not gpus:
            raise ConfigError(f"{platform.source or platform.name}: collectives need eidolon GPUs")
        g = gpus[0].resolved()
        fab: dict[str, Any] = {}
        for c in platform.components.values():
            if c.role == "fabric" and c.spec.plugin is None:
                fab = c.resolved()
                model = c.model
                break
        else:
            model = "Plugin"
        topology = str(fab.get("topology", ""))
        fully = model in ("PacketFabric", "FlowFabric") and topology == "fully_connected"
        n = len(gpus)
        multi = model in ("PacketFabric", "FlowFabric") and topology in ("rail", "hierarchical")
        per_node = int(fab.get(f"{topology}.gpus_per_node", n)) if multi else n
        intra_fc = fully or (multi and fab.get(f"{topology}.intra", "fully_connected") == "fully_connected")
        nics, nic_bw = 0, math.inf
        if multi and per_node < n:
            nics = (int(fab.get("nic.count", 0)) or per_node) if topology == "rail" else per_node  # 0: one a GPU
            nic_bw = float(fab.get("nic.bandwidth", 50e9)) * nics
        direct = None
        if model in ("PacketFabric", "FlowFabric"):
            per_link = float(fab["link.bandwidth"]) * int(fab.get("link.count", 1))
            gpu_bw = per_link * (per_node - 1 if intra_fc else 1)
            direct = neighbours(topology, n, fab)
            if direct is not None:  # the rings' links out of a GPU, one a cycle (NCCL's graph: channels x bw)
                gpu_bw = per_link * len(direct_rings(direct, n) or [[]])
            if per_node == 1 and nics:  # one GPU a node: its only way out is its NIC
                gpu_bw = nic_bw
        else:
            gpu_bw = math.inf  # ideal: no bandwidth limit; a plugin: unknown to us
        sec = platform.collectives
        library = sec.get("library", "nccl")
        link_type = sec.get("link_type") or ("xgmi" if library == "rccl" and intra_fc else "nvlink")
        default_protocols = ("LL", "LL128", "Simple") if library == "nccl" and link_type == "nvlink" else ("LL", "Simple")
        workgroups = int(g["workgroups"])
        channels = min(int(sec.get("channels", 16 if library == "nccl" else 28)), workgroups)
        nvls = model in ("PacketFabric", "FlowFabric") and topology == "switch" and \
            float(fab.get("switch.nvls.reduce_bandwidth") or 0) > 0
        return System(gpus=n, workgroups=workgroups, mem_bw=float(g["memory.bandwidth"]), gpu_bw=gpu_bw,
                      library=library, channels=channels, link_type=link_type,
                      protocols=tuple(sec.get("protocols", default_protocols)),
                      arch=sec.get("arch", "hopper" if library == "nccl" else "cdna3"), fully_connected=fully,
                      launch_ns=float(g.get("launch", 0.0)) * 1e9, nvls=nvls,
                      host_call_ns=units.parse(sec["host_call"], "time") * 1e9 if "host_call" in sec else 0.0,
                      gpus_per_node=per_node, nic_bw=nic_bw, nics_per_node=nics,
                      proxy_ns=units.parse(sec["proxy_step"], "time") * 1e9 if "proxy_step" in sec else PROXY_STEP_NS,
                      proxy_launch_ns=units.parse(sec.get("proxy_launch", "0s"), "time") * 1e9,
                      intra_fully_connected=intra_fc, neighbours=direct, configured=bool(sec))

    def node_size(self, k: int) -> int:
        """GPUs per node among the first k GPUs (k itself when they fit in one node)."""
        return min(self.gpus_per_node or k, k)

    def nodes(self, k: int) -> int:
        """Nodes the first k GPUs span; ConfigError if k does not fill whole nodes."""
        g = self.node_size(k)
        if k % g:
            raise ConfigError(f"gpus: {k} GPUs do not fill whole nodes of {g} GPUs; give a multiple of {g}")
        return k // g

    def same_channels(self, k: int) -> bool:
        """The ring graph's flag `sameChannels` on the first k GPUs (``search.cc``): NCCL's search first asks every
        channel to repeat channel 0's GPU order and keeps that unless different channels do strictly better, which
        one switch link per GPU never needs (logged as ``sameChannels 1`` on DGX A100) and links spread over
        several cycles do (fully connected nodes, both directions of a ring, a mesh's cycles). So: every channel's
        ring here the same. Across nodes the rings here enter each node at a GPU of their own (`multi_rings`), which
        NCCL's search builds only without the flag (two NVSwitch nodes with NICs logged ``sameChannels 0``,
        NVIDIA/nccl issue 1189). RCCL on its matched topology models (the MI300X nodes here) keeps the flag at the
        1 it set before reading the model's rings (its ``search.cc``), whatever the rings."""
        if self.library == "rccl":
            return True
        return len({tuple(r) for r in self.rings(k, self.channels)}) == 1

    def node_path(self, c: int, g: int) -> list[int]:
        """Channel c's path through a node of g GPUs (local ranks), entering at c mod g and leaving at its far
        end; nodes of odd index take it backwards (`rings`). Fully connected: the zigzag path, whose g paths
        use every directed link of the node once; otherwise GPU order from the entry."""
        i = c % g
        if self.intra_fully_connected and g % 2 == 0:
            return zigzag_path(g, i)
        return [(i + j) % g for j in range(g)]

    def tree_channels(self, k: int, channels: int) -> tuple[list[list[int]], list[int]]:
        """NCCL's multi-node tree on the first k GPUs: for each of `channels` collective channels its chain through a
        node (local ranks, head first: the GPU that talks to the other nodes) and its tree (0, or 1 for the mirror).

        The tree graph (``ncclTopoCompute``, ``src/graph/search.cc``) has S search channels, S = the ring graph's
        (``initTransportsRank``, ``src/init.cc``, gives the tree min = max = the ring's count). Search channel s
        starts at NIC s mod n of the node's n NICs (``ncclTopoSearchRecNet``: ``nets[(nChannels + i) % netCount]``,
        ``ncclTopoSelectNets`` listing each GPU's local NIC in GPU order) and first tries that NIC's local GPU as the
        head; on Hopper (``ccMin >= 90``) the search falls back from the balanced tree to the plain TREE pattern
        before it relaxes the path types, so with a NIC local to the head the head's NIC carries the channel both
        ways (``NCCL_TOPO_PATTERN_TREE``: parent and both children on the head, ``ncclTopoPreset``). With one
        400 Gb/s NIC per GPU the search's speeds allow one channel per NIC (a NIC's 50 GB/s holds one channel at
        the 45-48 GB/s it settles on, two only at 24 or below), so S = n. ``ncclTopoPreset`` duplicates the S
        channels into S..2S-1 (same chains, tree 1: ``connectTrees``) and channels past 2S are copies
        (``copyChannels``: channel c is channel c - 2S), so collective channel ch runs search channel ch mod S on
        tree (ch mod 2S) >= S. A collective with fewer channels takes the first ones (``scheduleCollTasksToPlan``,
        ``src/enqueue.cc``: channelLo 0). The chain's order inside the node is `node_path` from the head (on an
        NVSwitch, head, head + 1, ...: ``ncclTopoSearchNextGpuSort`` tries only the next GPU for TREE)."""
        g = self.node_size(k)
        nics = min(self.nics_per_node or g, g)
        S = nics  # one search channel per NIC: search channel s on NIC s
        chains, trees = [], []
        for ch in range(channels):
            nic = ch % S
            head = nic * g // nics  # the NIC's first local GPU (NIC floor(i x nics / g) serves GPU i)
            chains.append(self.node_path(head, g))
            trees.append(1 if ch % (2 * S) >= S else 0)
        return chains, trees

    def multi_rings(self, k: int, channels: int) -> list[list[int]]:
        """Channel rings through all nodes of the first k GPUs: node n runs the channel's `node_path` forwards
        (n even) or backwards (n odd), so every crossing joins the exit GPU of one node to the same local
        rank (the same rail) in the next, as NCCL's rail-local rings do; with an odd node count the
        last node's crossing back to node 0 changes rail once."""
        g = self.node_size(k)
        n = self.nodes(k)
        out = []
        for c in range(channels):
            path = self.node_path(c, g)
            ring: list[int] = []
            for node in range(n):
                ring += [node * g + x for x in (path if node % 2 == 0 else path[::-1])]
            out.append(ring)
        return out

    def rings(self, k: int, channels: int) -> list[list[int]]:
        """The ring order (GPUs 0..k-1) of each channel: spread over the links of a fully connected fabric
        (channel c takes cycle c mod (k-1) of a decomposition of its directed links), over the neighbour links
        of a ring, mesh or torus (`direct_rings`), GPU order otherwise; across nodes `multi_rings`."""
        if self.nodes(k) > 1:
            return self.multi_rings(k, channels)
        if self.neighbours is not None:
            cycles = direct_rings(self.neighbours, k)
            return [cycles[c % len(cycles)] for c in range(channels)] if cycles else [list(range(k))] * channels
        if not self.intra_fully_connected or k < 3:
            return [list(range(k))] * channels
        cycles = hamiltonian_cycles(k) or stride_cycles(k)
        return [cycles[c % len(cycles)] for c in range(channels)]


def zigzag_path(g: int, start: int) -> list[int]:
    """The zigzag Hamiltonian path of g (even) GPUs from `start`: start, +1, -1, +2, -2, ..., +g/2. The g paths
    (one per start) use every directed link of a fully connected node exactly once (path start + g/2 is path
    start backwards), so g channels load every link alike and enter and leave at g different GPUs."""
    steps = [0] + [s for j in range(1, g // 2) for s in (j, -j)] + [g // 2]
    return [(start + s) % g for s in steps]


def stride_cycles(k: int) -> list[list[int]]:
    """Rings r -> r + s for every stride s coprime with k: distinct link classes, though not all links."""
    return [[(i * s) % k for i in range(k)] for s in range(1, k) if math.gcd(s, k) == 1]


def neighbours(topology: str, n: int, fab: dict[str, Any]) -> tuple[tuple[int, ...], ...] | None:
    """Each GPU's neighbours over its links out, as topology.cpp builds a ``ring`` (``bidirectional``), ``mesh2d``
    or ``torus2d`` (``dims`` [x, y], else the squarest split with the larger factor along x; GPU j x + i at
    column i, row j); None for any other topology."""
    out: list[set[int]] = [set() for _ in range(n)]

    def link(a: int, b: int) -> None:
        if a != b:
            out[a].add(b)

    if topology == "ring":
        for a in range(n if n > 1 else 0):
            link(a, (a + 1) % n)
            if fab.get("bidirectional", True) and n > 2:
                link((a + 1) % n, a)
    elif topology in ("mesh2d", "torus2d"):
        dims = fab.get("dims") or []
        if len(dims) == 2:
            x, y = int(dims[0]), int(dims[1])
        else:
            x = max(1, math.isqrt(n))
            while x > 1 and n % x:
                x -= 1
            x = n // x
            y = n // x
        if x * y != n:
            return None  # the fabric refuses it, naming the dims
        torus = topology == "torus2d"
        for j in range(y):
            for i in range(x):
                here = j * x + i
                if i + 1 < x or (torus and x > 1):
                    link(here, j * x + (i + 1) % x)
                    link(j * x + (i + 1) % x, here)
                if j + 1 < y or (torus and y > 1):
                    link(here, ((j + 1) % y) * x + i)
                    link(((j + 1) % y) * x + i, here)
    else:
        return None
    return tuple(tuple(sorted(s)) for s in out)


@functools.cache
def direct_rings(neighbours: tuple[tuple[int, ...], ...], k: int) -> list[list[int]] | None:
    """The rings of the first k GPUs over their neighbour links: the most directed Hamiltonian cycles, up to the
    fewest links out of a GPU, that share no directed link (`link_cycles`); None if there is not even one."""
    local = tuple(tuple(v for v in neighbours[u] if v < k) for u in range(k))
    for want in range(min(len(vs) for vs in local), 0, -1):
        cycles = link_cycles(local, want)
        if cycles:
            return cycles
    return None


@functools.cache
def hamiltonian_cycles(k: int, budget: int = 200_000) -> list[list[int]] | None:
    """k-1 directed rings through all k GPUs that together use every directed link exactly once (a Hamiltonian
    decomposition of the complete digraph: it exists for every k but 4 and 6), found by a deterministic
    depth-first search; None if none is found within `budget` steps. With C channels on cycle c mod (k-1),
    every link carries C / (k-1) channels, so the rings load all k-1 links of each GPU alike."""
    return link_cycles(tuple(tuple(v for v in range(k) if v != u) for u in range(k)), k - 1, budget)


def link_cycles(neighbours: tuple[tuple[int, ...], ...], want: int, budget: int = 200_000) -> list[list[int]] | None:
    """`want` directed Hamiltonian cycles over the links u -> neighbours[u] that share no link, each from GPU 0,
    found by a deterministic depth-first search (neighbours in the order given, backtracking into earlier
    cycles); None if there are none within `budget` steps."""
    k = len(neighbours)
    if k < 2 or want < 1:
        return None
    used = [[False] * k for _ in range(k)]
    linked = [[False] * k for _ in range(k)]
    for u, vs in enumerate(neighbours):
        for v in vs:
            linked[u][v] = True
    cycles: list[list[int]] = []
    steps = 0

    def extend(path: list[int], seen: list[bool]) -> bool:
        nonlocal steps
        steps += 1
        if steps > budget:
            return False
        u = path[-1]
        if len(path) == k:
            if not linked[u][path[0]] or used[u][path[0]]:
                return False
            used[u][path[0]] = True
            cycles.append(list(path))
            if len(cycles) == want or extend([0], [v == 0 for v in range(k)]):
                return True
            cycles.pop()
            used[u][path[0]] = False
            return False
        for v in neighbours[u]:
            if not seen[v] and not used[u][v]:
                used[u][v], seen[v] = True, True
                path.append(v)
                if extend(path, seen):
                    return True
                path.pop()
                used[u][v], seen[v] = False, False
        return False

    return cycles if extend([0], [v == 0 for v in range(k)]) else None
