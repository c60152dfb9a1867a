"""All-to-all and send/recv: point-to-point connections with the p2p chunk size (NCCL's ``sendrecv.h``).

Send/recv is nccl-tests' ``sendrecv_perf``: every rank r sends S bytes to r+1 and receives S from r-1 in one
group, over m channels of S/m each, a FIFO unit at a time as below.

NCCL runs an all-to-all as k-1 rounds of send to r+d and receive from r-d (d = 1..k-1), each peer
pair on its own channels. Here workgroup w of every GPU serves distance d = w mod (k-1) + 1 and slice
j = w div (k-1) of the m = workgroups / (k-1) channels per peer: it sends its block for GPU r+d
(S/k bytes, split over the m slices) and receives GPU r-d's block for it, one unit at a time through
a FIFO of 8 chunk-sized units (512 KiB of data over NVLink, 128 KiB over PCIe or the network;
``NCCL_P2P_*_CHUNKSIZE``). Per unit it sends, then receives, so a GPU's every pair moves at once.
The rank's own block is a local copy: 2 bytes a byte (read and write) at its workgroup's share of
memory bandwidth, once at the start.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .fifo import Conn, Ints, across, primitive, split
from .protocols import Protocol
from .ring import local_ns

if TYPE_CHECKING:
    from ..builder import ProfileBuilder
    from ..bulk import ProgramSet

__all__ = ["alltoall", "sendrecv", "P2P_CHUNK", "P2P_LL_THRESHOLD", "per_peer_channels"]

#: p2p chunk, bytes of data per FIFO unit: link type -> size (NVLink 512 KiB, else 128 KiB)
P2P_CHUNK = {"nvlink": 512 * 1024, "xgmi": 512 * 1024, "pcie": 128 * 1024, "network": 128 * 1024}
#: per-peer size up to which p2p runs LL (``NCCL_P2P_LL_THRESHOLD``)
P2P_LL_THRESHOLD = 16384


def per_peer_channels(channels: int, k: int, per_peer: int, chunk: int) -> int:
    """Channels per peer: the library's channels shared over the k-1 peers (at least 1), no more than the
    per-peer block has chunks (a small block stays on one channel)."""
    return max(1, min(channels // (k - 1), -(-per_peer // chunk)))


def alltoall(b: ProfileBuilder, S: int, k: int, m: int, proto: Protocol, chunk: int, mem_bw: float,
             prefix: str, per_node: int = 0) -> None:
    """Append an all-to-all of S bytes sent per rank on GPUs 0..k-1, m workgroups per peer. per_node: GPUs per
    node (0: one node), for which peers are across nodes."""
    W = m * (k - 1)
    G, Wg = np.repeat(np.arange(k), W), np.tile(np.arange(W), k)
    d, j = Wg % (k - 1) + 1, Wg // (k - 1)
    ps = b.programs_at(G, Wg)
    ns_per_byte = W / mem_bw * 1e9
    own = split(split(S, k, G), m, j)
    if float(own.max()) * ns_per_byte > 0:
        ps.compute(ns=local_ns(2, own, ns_per_byte))
    # Sent and received blocks: (S/k for the peer) / m; the block for GPU r+d is r+d's share of S.
    _exchange(b, ps, G, Wg, d, k, W, split(split(S, k, (G + d) % k), m, j), proto, chunk, prefix, per_node)


def sendrecv(b: ProfileBuilder, S: int, k: int, m: int, proto: Protocol, chunk: int, prefix: str,
             per_node: int = 0) -> None:
    """Append nccl-tests' send/recv: every GPU r sends S bytes to r+1 and receives S from r-1 (mod k) in one
    group, on m workgroups (channels) each moving S/m. per_node: GPUs per node (0: one node)."""
    G, Wg = np.repeat(np.arange(k), m), np.tile(np.arange(m), k)
    ps = b.programs_at(G, Wg)
    _exchange(b, ps, G, Wg, np.ones_like(G), k, m, split(S, m, Wg), proto, chunk, prefix, per_node)


def _exchange(b: ProfileBuilder, ps: ProgramSet, G: Ints, Wg: Ints, d: Ints, k: int, W: int, out: Ints, proto: Protocol,
              chunk: int, prefix: str, per_node: int) -> None:
    """Workgroup Wg of GPU G sends `out` bytes to GPU G+d and receives as many from G-d, a unit at a time
    through its FIFO (units of the p2p chunk; LL and LL128: one step): per unit it sends, then receives."""
    conn = Conn(b, f"{prefix}p2p", proto, 1, W)
    send = conn.side(ps, Wg, (G + d) % k, across(G, (G + d) % k, per_node))
    recv = conn.side(ps, Wg, (G - d) % k, across(G, (G - d) % k, per_node))
    cap = chunk if not proto.flag_in_data else proto.step_data
    units = max(1, -(-int(out.max()) // cap))
    for u in range(units):
        primitive(ps, None, send, split(out, units, u), 0.0)
        primitive(ps, recv, None, split(out, units, u), 0.0)
