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
hand-made rings do; elsewhere every channel follows GPU order (a switch gives every pair the same path).
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

__all__ = ["System", "hamiltonian_cycles", "stride_cycles"]


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
        if model in ("PacketFabric", "FlowFabric"):
            per_link = float(fab["link.bandwidth"]) * int(fab.get("link.count", 1))
            gpu_bw = per_link * (n - 1 if fully else 1)
        else:
            gpu_bw = math.inf  # ideal: no bandwidth limit; a plugin: unknown to us
        sec = platform.collectives
        library = sec.get("library", "nccl")
        link_type = sec.get("link_type") or ("xgmi" if library == "rccl" and fully else
                                            "network" if topology == "hierarchical" else "nvlink")
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
                      host_call_ns=units.parse(sec["host_call"], "time") * 1e9 if "host_call" in sec else 0.0)

    def rings(self, k: int, channels: int) -> list[list[int]]:
        """The ring order (GPUs 0..k-1) of each channel: spread over the links of a fully connected fabric
        (channel c takes cycle c mod (k-1) of a decomposition of its directed links), GPU order otherwise."""
        if not self.fully_connected or k < 3:
            return [list(range(k))] * channels
        cycles = hamiltonian_cycles(k) or stride_cycles(k)
        return [cycles[c % len(cycles)] for c in range(channels)]


def stride_cycles(k: int) -> list[list[int]]:
    """Rings r -> r + s for every stride s coprime with k: distinct link classes, though not all links."""
    return [[(i * s) % k for i in range(k)] for s in range(1, k) if math.gcd(s, k) == 1]


@functools.cache
def hamiltonian_cycles(k: int, budget: int = 200_000) -> list[list[int]] | None:
    """k-1 directed rings through all k GPUs that together use every directed link exactly once (a Hamiltonian
    decomposition of the complete digraph: it exists for every k but 4 and 6), found by a deterministic
    depth-first search; None if none is found within `budget` steps. With C channels on cycle c mod (k-1),
    every link carries C / (k-1) channels, so the rings load all k-1 links of each GPU alike."""
    used = [[i == j for j in range(k)] for i in range(k)]
    cycles: list[list[int]] = []
    steps = 0

    def extend(path: list[int], seen: list[bool]) -> bool:
        nonlocal steps
        steps += 1
        if steps > budget:
            return False
        u = path[-1]
        if len(path) == k:
            if used[u][path[0]]:
                return False
            used[u][path[0]] = True
            cycles.append(list(path))
            if len(cycles) == k - 1 or extend([0], [v == 0 for v in range(k)]):
                return True
            cycles.pop()
            used[u][path[0]] = False
            return False
        for v in range(k):
            if not seen[v] and not used[u][v]:
                used[u][v], seen[v] = True, True
                path.append(v)
                if extend(path, seen):
                    return True
                path.pop()
                used[u][v], seen[v] = False, False
        return False

    return cycles if extend([0], [v == 0 for v in range(k)]) else None
