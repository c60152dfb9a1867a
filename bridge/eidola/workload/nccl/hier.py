"""The hierarchical all-reduce across nodes: an intra-node reduce-scatter, a ring all-reduce per rail, an
intra-node all-gather.

Not one of NCCL's algorithms by that name (its tuner never picks it; ``--algo hierarchical`` runs it),
but the textbook way to use a rail-optimised network, and what NCCL's tree and NVLS-tree approach:
every GPU's share of the network traffic is S / ppn, not the ring's S. Per channel c (workgroup c):

1. reduce-scatter of S bytes on the node's ring of channel c (`System.rings` on one node; every node
   runs the same local order), so the GPU at local ring position q holds block q of the channel's part
   summed over its node;
2. all-reduce of that block (S / ppn bytes) on a ring through the GPUs of the same local rank of every
   node: a rail, so every network step stays on one rail switch; its network steps pay the proxy;
3. all-gather of S bytes on the node's ring again, each GPU starting from its block.

The phases run one after the other in each workgroup (a channel's phase 2 starts when its own phase 1
has ended), each with its own FIFOs; the proxy's start (`System.proxy_launch_ns`) comes before phase 2,
so here it does not overlap phase 1 as the library's host-side enqueue would.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import ring
from .protocols import Protocol

if TYPE_CHECKING:
    from ..builder import ProfileBuilder
    from .system import System

__all__ = ["hierarchical_allreduce", "hier_rings"]


def hier_rings(sys: System, k: int, channels: int) -> tuple[list[list[int]], list[list[int]]]:
    """(intra, inter) orders per channel: intra, the node ring of every node one after the other (pieces of
    ppn); inter, for each local ring position q the GPUs of that local rank in node order (pieces of nodes)."""
    g, n = sys.node_size(k), sys.nodes(k)
    local = sys.rings(g, channels)
    intra = [[node * g + x for node in range(n) for x in local[c]] for c in range(channels)]
    inter = [[node * g + local[c][q] for q in range(g) for node in range(n)] for c in range(channels)]
    return intra, inter


def hierarchical_allreduce(b: ProfileBuilder, S: int, sys: System, k: int, channels: int, proto: Protocol,
                           prefix: str) -> None:
    """Append the hierarchical all-reduce of S bytes per rank on the first k GPUs (whole nodes) of `sys`."""
    g, n = sys.node_size(k), sys.nodes(k)
    intra, inter = hier_rings(sys, k, channels)
    ring.ring(b, "reduce_scatter", S, intra, proto, sys.mem_bw, f"{prefix}h1", group=g)
    ring.ring(b, "all_reduce", -(-S // g), inter, proto, sys.mem_bw, f"{prefix}h2", group=n, per_node=g,
              proxy=sys.proxy_ns, launch=sys.proxy_launch_ns)
    ring.ring(b, "all_gather", S, intra, proto, sys.mem_bw, f"{prefix}h3", group=g)
