"""All-to-all and send/recv: point-to-point connections with the p2p chunk size (NCCL's ``sendrecv.h``).

Send/recv is nccl-tests' ``sendrecv_perf``: every rank r sends S bytes to r+1 and receives S from r-1 in one
group, over m channels of S/m each, a FIFO unit at a time as below.

Gather and scatter (``ncclGather``, ``ncclScatter``; nccl-tests' ``gather_perf``, ``scatter_perf``) are the
all-to-all's pairs with the root only, as NCCL enqueues them (``enqueue.cc``: a send of every rank's S/k to the
root and the root's receive from every rank, or the reverse): the root's workgroups of distance d receive from
(or send to) rank root -/+ d, that rank's workgroups of the same channels send (receive), and the root's own
block is a local copy.

NCCL runs an all-to-all as k-1 rounds of send to r+d and receive from r-d (d = 1..k-1), each peer
pair on its own channels. Here workgroup w of every GPU serves distance d = w mod (k-1) + 1 and slice
j = w div (k-1) of the m = workgroups / (k-1) channels per peer: it sends its block for GPU r+d
(S/k bytes, split over the m slices) and receives GPU r-d's block for it, one unit at a time through
a FIFO of 8 chunk-sized units (512 KiB of data over NVLink, 128 KiB over PCIe or the network;
``NCCL_P2P_*_CHUNKSIZE``; the chunk of the platform's link type for every pair: see `_exchange`). Its
receives run on workgroup w + W, apart from its sends, as NCCL gives them warps of their own (`nccl.Plan.split`;
on one workgroup, per unit, sends then receives, where the GPUs have too few workgroups). A step between nodes
pays the proxy at both ends, as a ring's does.
The rank's own block is a local copy: 2 bytes a byte (read and write), once at the start, shared by the
W workgroups, each copying a W-th of it at its W-th share of memory bandwidth.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .fifo import Conn, Ints, across, primitive, proxy_ns, proxy_start, split
from .protocols import Protocol
from .ring import local_ns

if TYPE_CHECKING:
    from ..builder import ProfileBuilder
    from ..bulk import ProgramSet

__all__ = ["alltoall", "sendrecv", "send", "gather", "scatter", "P2P_CHUNK", "P2P_LL_THRESHOLD", "per_peer_channels"]

#: p2p chunk, bytes of data per FIFO unit: link type -> size (NVLink 512 KiB, else 128 KiB)
P2P_CHUNK = {"nvlink": 512 * 1024, "xgmi": 512 * 1024, "pcie": 128 * 1024, "network": 128 * 1024}
#: per-peer size up to which p2p runs LL (``NCCL_P2P_LL_THRESHOLD``)
P2P_LL_THRESHOLD = 16384


def per_peer_channels(channels: int, k: int, per_peer: int, chunk: int) -> int:
    """Channels per peer: the library's channels shared over the k-1 peers (at least 1), no more than the
    per-peer block has chunks (a small block stays on one channel)."""
    return max(1, min(channels // (k - 1), -(-per_peer // chunk)))


def alltoall(b: ProfileBuilder, S: int, k: int, m: int, proto: Protocol, chunk: int, mem_bw: float,
             prefix: str, per_node: int = 0, proxy: float = 0.0, launch: float = 0.0, apart: bool = False) -> None:
    """Append an all-to-all of S bytes sent per rank on GPUs 0..k-1, m channels per peer. per_node: GPUs per
    node (0: one node), for which peers are across nodes; proxy, launch: the proxy's ns per network step at
    each end and its start; apart: each channel's receives on a workgroup of their own (`_exchange`)."""
    W = m * (k - 1)
    G, Wg = np.repeat(np.arange(k), W), np.tile(np.arange(W), k)
    d, j = Wg % (k - 1) + 1, Wg // (k - 1)
    ps = b.programs_at(G, Wg)
    _own_copy(ps, split(S, k, G), W, mem_bw)
    # Sent and received blocks: (S/k for the peer) / m; the block for GPU r+d is r+d's share of S.
    _exchange(b, ps, G, Wg, d, k, W, split(split(S, k, (G + d) % k), m, j), proto, chunk, prefix, per_node,
              proxy, launch, apart)


def sendrecv(b: ProfileBuilder, S: int, k: int, m: int, proto: Protocol, chunk: int, prefix: str,
             per_node: int = 0, proxy: float = 0.0, launch: float = 0.0, apart: bool = False) -> None:
    """Append nccl-tests' send/recv: every GPU r sends S bytes to r+1 and receives S from r-1 (mod k) in one
    group, on m channels each moving S/m. per_node, proxy, launch, apart: as `alltoall`."""
    G, Wg = np.repeat(np.arange(k), m), np.tile(np.arange(m), k)
    ps = b.programs_at(G, Wg)
    _exchange(b, ps, G, Wg, np.ones_like(G), k, m, split(S, m, Wg), proto, chunk, prefix, per_node, proxy, launch,
              apart)


def gather(b: ProfileBuilder, S: int, k: int, m: int, proto: Protocol, chunk: int, mem_bw: float, prefix: str,
           root: int = 0, per_node: int = 0, proxy: float = 0.0, launch: float = 0.0) -> None:
    """Append a gather of S bytes in all to GPU `root` of GPUs 0..k-1: rank r's S/k (its share of S) to the root,
    m workgroups per peer. per_node, proxy, launch: as `alltoall`."""
    _rooted(b, S, k, m, proto, chunk, mem_bw, prefix, root, True, per_node, proxy, launch)


def scatter(b: ProfileBuilder, S: int, k: int, m: int, proto: Protocol, chunk: int, mem_bw: float, prefix: str,
            root: int = 0, per_node: int = 0, proxy: float = 0.0, launch: float = 0.0) -> None:
    """Append a scatter of S bytes in all from GPU `root` of GPUs 0..k-1: rank r's share of S (S/k) from the
    root, m workgroups per peer. per_node, proxy, launch: as `alltoall`."""
    _rooted(b, S, k, m, proto, chunk, mem_bw, prefix, root, False, per_node, proxy, launch)


def _rooted(b: ProfileBuilder, S: int, k: int, m: int, proto: Protocol, chunk: int, mem_bw: float, prefix: str,
            root: int, to_root: bool, per_node: int, proxy: float, launch: float) -> None:
    """Gather (`to_root`) or scatter: the all-to-all's channel layout (workgroup w serves distance w mod (k-1) + 1,
    slice w div (k-1)) with the root's pairs only."""
    W = m * (k - 1)
    Wg = np.arange(W)
    d, j = Wg % (k - 1) + 1, Wg // (k - 1)
    peer = (root + (-d if to_root else d)) % k  # the root's peer on each of its workgroups
    at_root = np.full(W, root)
    ps_root, ps_peer = b.programs_at(at_root, Wg), b.programs_at(peer, Wg)
    _own_copy(ps_root, split(S, k, at_root), W, mem_bw)
    data = split(split(S, k, peer), m, j)  # the peer's share of S, on its m slices
    # Gather: the peers send and the root receives; scatter: the other way.
    sender, receiver, ps_send, ps_recv = (peer, at_root, ps_peer, ps_root) if to_root else (at_root, peer, ps_root, ps_peer)
    _one_way(b, sender, receiver, ps_send, ps_recv, Wg, data, proto, chunk, prefix, per_node, proxy, launch)


def send(b: ProfileBuilder, S: int, m: int, proto: Protocol, chunk: int, prefix: str, per_node: int = 0,
         proxy: float = 0.0, launch: float = 0.0) -> None:
    """Append one matched ncclSend / ncclRecv: rank 0 sends S bytes to rank 1 on m channels of S/m each (workgroups
    0..m-1 of both), a FIFO unit at a time as the all-to-all's pairs. per_node, proxy, launch: as `alltoall` (with
    two ranks: 1 when they are in different nodes, else 0)."""
    Wg = np.arange(m)
    sender, receiver = np.zeros(m, dtype=np.int64), np.ones(m, dtype=np.int64)
    _one_way(b, sender, receiver, b.programs_at(sender, Wg), b.programs_at(receiver, Wg), Wg, split(S, m, Wg), proto,
             chunk, prefix, per_node, proxy, launch)


def _one_way(b: ProfileBuilder, sender: Ints, receiver: Ints, ps_send: ProgramSet, ps_recv: ProgramSet, Wg: Ints,
             data: Ints, proto: Protocol, chunk: int, prefix: str, per_node: int, proxy: float, launch: float) -> None:
    """Workgroup Wg[i] of GPU sender[i] sends data[i] bytes to the same workgroup of GPU receiver[i] (programs
    `ps_send`, `ps_recv`), a FIFO unit at a time; the proxy as `_exchange`."""
    conn = Conn(b, f"{prefix}p2p", proto, 1, len(Wg))
    send = conn.side(ps_send, Wg, receiver, across(sender, receiver, per_node))
    recv = conn.side(ps_recv, Wg, sender, across(receiver, sender, per_node))
    proxy_start(b, np.concatenate([sender, receiver]), np.concatenate([Wg, Wg]),
                [np.concatenate([receiver, sender])], per_node, launch)
    pre_send = proxy_ns(proxy, sender, None, receiver, per_node)
    pre_recv = proxy_ns(proxy, receiver, sender, None, per_node)
    units = _units(data, proto, chunk)
    for u in range(units):
        primitive(ps_send, None, send, split(data, units, u), 0.0, pre_send)
        primitive(ps_recv, recv, None, split(data, units, u), 0.0, pre_recv)


def _units(data: Ints, proto: Protocol, chunk: int) -> int:
    """FIFO units of the largest of `data` (bytes per program): p2p chunks for Simple, one step each for LL and
    LL128, at least one."""
    cap = chunk if not proto.flag_in_data else proto.step_data
    return max(1, -(-int(data.max()) // cap))


def _own_copy(ps: ProgramSet, block: Ints, W: int, mem_bw: float) -> None:
    """The rank's own block (`block` bytes, per program) copied locally by its W workgroups (`ps`), 2 bytes a byte,
    each a W-th of it at a W-th of the memory bandwidth. Every workgroup takes the time of the largest piece (a byte
    more than some), so that all of them start their sends in the same picosecond: the flow fabric queues a write
    issued even a picosecond after another workgroup's on its link behind all of that one (docs/fabrics.md,
    "Injection"), which cost an MI300X all-to-all 37% when the pieces' times differed by their odd byte."""
    piece = -(-np.asarray(block, dtype=np.int64) // W)
    ns = local_ns(2, piece, W / mem_bw * 1e9)
    if float(ns.max()) > 0:
        ps.compute(ns=ns)


def _exchange(b: ProfileBuilder, ps: ProgramSet, G: Ints, Wg: Ints, d: Ints, k: int, W: int, out: Ints, proto: Protocol,
              chunk: int, prefix: str, per_node: int, proxy: float, launch: float, apart: bool) -> None:
    """Channel Wg of GPU G sends `out` bytes to GPU G+d and receives as many from G-d, a unit at a time
    through its FIFO (units of the p2p chunk; LL and LL128: one step). `apart`: its sends on workgroup Wg (`ps`)
    and its receives on workgroup Wg + W, as NCCL runs a channel's sends and receives on warps of their own
    (``sendrecv.h``: the block's warps split between ``runSend`` and ``runRecv``); else workgroup Wg, per unit,
    sends, then receives, so its sends wait on its receives (where the GPUs have too few workgroups). A
    step to or from a peer in another node pays the proxy (`proxy` ns) at that end, as a ring's network step
    does (`fifo.proxy_ns`), and a workgroup with a peer in another node first waits the proxy's start
    (`launch`, `fifo.proxy_start`).

    A pair across nodes moves units of the platform's link type's chunk too, not NCCL's 128 KiB network chunk
    (``NCCL_P2P_NET_CHUNKSIZE``): a unit is one transfer straight into the peer (since 2026-12-07 a put whose
    flag lands with its last byte, `fifo.Side.send_data`), where NCCL's proxy pipelines a network step's RDMA
    behind the GPU's local store, so smaller units would each pay a network round trip that NCCL does not.
    Measured with 128 KiB units when a unit was still a write released once acknowledged (2026-12-03,
    rail-16gpu, 8 MiB, proxy 0): all-to-all 114.5 -> 144.1 us on the packet fabric, 113.2 -> 189.8 on the flow
    fabric.

    Why apart: together, a channel's next send waited for its last receive, which waits on the peer's sends, so a
    slow pair held every pair of its workgroup. dgx-h100-rail, 16 GPUs, 16 MiB all-to-all over one spine without
    PXN (2026-12-07): packet fabric 353.1 us together, 334.5 apart; flow fabric 335.4 and 330.8. At 64 MiB the flow
    fabric reads 1,231.3 together and 1,222.6 apart against the spine link's 1,186.4 us."""
    conn = Conn(b, f"{prefix}p2p", proto, 1, W)
    to, frm = (G + d) % k, (G - d) % k
    rps, rWg = (b.programs_at(G, Wg + W), Wg + W) if apart else (ps, Wg)
    send = conn.side(ps, Wg, to, across(G, to, per_node))
    recv = conn.side(rps, Wg, frm, across(G, frm, per_node))
    if apart:
        proxy_start(b, G, Wg, [to], per_node, launch)
        proxy_start(b, G, rWg, [frm], per_node, launch)
    else:
        proxy_start(b, G, Wg, [to, frm], per_node, launch)
    pre_send, pre_recv = proxy_ns(proxy, G, None, to, per_node), proxy_ns(proxy, G, frm, None, per_node)
    units = _units(out, proto, chunk)
    for u in range(units):
        primitive(ps, None, send, split(out, units, u), 0.0, pre_send)
        primitive(rps, recv, None, split(out, units, u), 0.0, pre_recv)
