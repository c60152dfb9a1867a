"""Ring all-reduce, all-gather, reduce-scatter and the broadcast and reduce chains, as NCCL's ``src/device/*.h`` run them.

Channel c is workgroup c of every GPU, with its own ring order (`System.rings`) and its own FIFO per
connection. The buffer of S bytes is split into C channel parts, each part into L loops, each loop
into k blocks (one per rank; broadcast and reduce: 1), each block into the protocol's units; at every level the
pieces are equal but the first (total mod parts) are a byte longer (`fifo.split`). L is the fewest
loops whose blocks fit one chunk: 4 Simple steps (2 MiB; broadcast and reduce 1 step) or one LL/LL128 step.
A Simple chunk is cut into slices of max(block / 2, 1 MiB / 32) (``prims_simple.h``), one FIFO
unit of 2 steps each; an LL or LL128 chunk is one unit of one step.

Per loop, ring position p (0..k-1 along the channel's ring) runs the primitives of `SCHEDULES`,
primitive i on block `block(p, i)`, receiving from p-1 and sending to p+1; consecutive loops follow
at once, so they pipeline through the 8 FIFO slots. All-reduce is send; k-2 recvReduceSend;
recvReduceCopySend; k-2 recvCopySend; recv: 2(k-1) sends per chunk.

Each primitive's local memory traffic costs the workgroup ``local x bytes / (memory bandwidth / C)``:
the C channels share the GPU's memory bandwidth, and local counts the bytes it moves in local memory
per byte of data: 1 per read of the received slot, 1 per read of the rank's own input, 1 per write
of its output (a reduce reads two and writes one: 3). The write into the peer goes over the fabric.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from .fifo import Conn, Ints, across, primitive, proxy_ns, proxy_start, split
from .protocols import CHUNK_STEPS, SIMPLE_SLICE_FLOOR_DIV, SLICE_STEPS, Protocol

if TYPE_CHECKING:
    from ..builder import ProfileBuilder

__all__ = ["SCHEDULES", "Prim", "Geometry", "geometry", "ring", "broadcast", "reduce", "local_ns", "pipeline_chunk",
           "shrunk_chunk", "chunk_loops"]

#: One primitive: (receives, sends, local bytes per data byte, block(p, i, k) -> the block it moves)
Prim = tuple[bool, bool, int, Callable[[Ints, int, int], Ints]]


def _behind(p: Ints, i: int, k: int) -> Ints:
    return (p - 1 - i) % k  # reduce-scatter blocks: send p-1, then p-2, ..., ending with the own block p


def _ag_after_rs(p: Ints, i: int, k: int) -> Ints:
    return (p - (i - k + 1)) % k  # all-reduce's all-gather half: forward p, then p-1, ...; receive p+1 last


def _gather(p: Ints, i: int, k: int) -> Ints:
    return (p - i) % k  # all-gather: send the own block p, then forward p-1, p-2, ...


def _ar(k: int) -> list[Prim]:
    return list[Prim]([(False, True, 1, _behind)] + [(True, True, 2, _behind)] * (k - 2) + [(True, True, 3, _behind)]
            + [(True, True, 2, _ag_after_rs)] * (k - 2) + [(True, False, 2, _ag_after_rs)])


def _ag(k: int) -> list[Prim]:
    return list[Prim]([(False, True, 2, _gather)] + [(True, True, 2, _gather)] * (k - 2) + [(True, False, 2, _gather)])


def _rs(k: int) -> list[Prim]:
    return list[Prim]([(False, True, 1, _behind)] + [(True, True, 2, _behind)] * (k - 2) + [(True, False, 3, _behind)])


#: op -> the primitives of one loop for k ranks
SCHEDULES: dict[str, Callable[[int], list[Prim]]] = {"all_reduce": _ar, "all_gather": _ag, "reduce_scatter": _rs}


class Geometry:
    """How a buffer of S bytes splits for one op and protocol on C channels: loops, blocks and units."""

    def __init__(self, op: str, proto: Protocol, S: int, C: int, blocks: int) -> None:
        simple = not proto.flag_in_data
        self.unit_steps = SLICE_STEPS[op] if simple else 1  #: FIFO steps per unit
        chunk = proto.step_data * (CHUNK_STEPS[op] if simple else 1)  # the largest block of a loop
        self.blocks = blocks  #: blocks per loop
        part = -(-S // C)  # the largest channel part
        self.loops = max(1, -(-part // (blocks * chunk)))  #: loops per channel
        loop = -(-part // self.loops)  # the largest loop
        block = -(-loop // blocks)  # the largest block
        if simple:
            full = proto.step_data * self.unit_steps
            slices = CHUNK_STEPS[op] // self.unit_steps
            size = max(-(-block // slices), full // SIMPLE_SLICE_FLOOR_DIV)
            self.units = max(1, -(-block // size))  #: units per block
        else:
            self.units = 1


def geometry(op: str, proto: Protocol, S: int, C: int, blocks: int) -> Geometry:
    """The split of S bytes for `op` on C channels in `blocks` blocks per loop."""
    return Geometry(op, proto, S, C, blocks)


def local_ns(local: int, data: Ints, ns_per_byte: float) -> NDArray[np.float64]:
    """The local memory time (ns) of moving `local` bytes per byte of `data` at the channel's share of bandwidth."""
    out: NDArray[np.float64] = (local * ns_per_byte) * data.astype(np.float64)
    return out


def ring(b: ProfileBuilder, op: str, S: int, rings: list[list[int]], proto: Protocol, mem_bw: float,
         prefix: str, group: int = 0, per_node: int = 0, proxy: float = 0.0, launch: float = 0.0) -> None:
    """Append ring `op` (all_reduce, all_gather, reduce_scatter) of S bytes on the GPUs of `rings` (one ring
    order per channel) to workgroup c of every GPU, c the channel.

    group: 0, or cut each channel's order into consecutive pieces of `group` GPUs, each its own ring
    (the hierarchical all-reduce's per-node and per-rail rings). per_node, proxy: GPUs per node and the
    proxy's ns per network step at each end: a step between nodes waits `proxy` at the sender and the
    receiver (`fifo.proxy_ns`); launch: the proxy's start, ns, before a program with a network peer begins
    (`fifo.proxy_start`).
    """
    C, n = len(rings), len(rings[0])
    k = group or n
    geo = geometry(op, proto, S, C, k)
    order = np.array(rings, dtype=np.int64)  # [channel, position] -> GPU
    pos = np.argsort(order, axis=1)  # [channel, GPU] -> position
    G, Ch = np.repeat(np.arange(n), C), np.tile(np.arange(C), n)
    ps = b.programs_at(G, Ch)
    P = pos[Ch, G]
    base, Q = P - P % k, P % k  # the piece's first position, the position inside it
    conn = Conn(b, f"{prefix}ring", proto, geo.unit_steps, C)
    nxt, prv = order[Ch, base + (Q + 1) % k], order[Ch, base + (Q - 1) % k]
    send = conn.side(ps, Ch, nxt, across(G, nxt, per_node))
    recv = conn.side(ps, Ch, prv, across(G, prv, per_node))
    proxy_start(b, G, Ch, [nxt, prv], per_node, launch)
    ns_per_byte = C / mem_bw * 1e9
    part = split(S, C, Ch)
    prims = SCHEDULES[op](k)
    pre = [proxy_ns(proxy, G, prv if r else None, nxt if s_ else None, per_node) if per_node else None
           for r, s_ in ((False, True), (True, True), (True, False))]
    for loop in range(geo.loops):
        loop_bytes = split(part, geo.loops, loop)
        for i, (r, s, local, block_of) in enumerate(prims):
            block = split(loop_bytes, k, block_of(Q, i, k))
            for u in range(geo.units):
                data = split(block, geo.units, u)
                primitive(ps, recv if r else None, send if s else None, data, local_ns(local, data, ns_per_byte),
                          pre[0 if not r else 1 if s else 2])


def broadcast(b: ProfileBuilder, S: int, rings: list[list[int]], root: int, proto: Protocol, mem_bw: float,
              prefix: str, per_node: int = 0, proxy: float = 0.0, launch: float = 0.0, library: str = "nccl") -> None:
    """Append a broadcast of S bytes from GPU `root`: per channel a chain along its ring from the root; the root
    sends, the others recvCopySend, the last receives (NCCL's ring broadcast, ``src/device/broadcast.h``).
    per_node, proxy, launch: GPUs per node (0: one node), for which hops cross nodes, and the proxy's ns per
    network step at each end and its start, as for `ring`; library: "rccl" for RCCL's Simple chunk
    (`pipeline_chunk`)."""
    order = [r[r.index(root):] + r[:r.index(root)] for r in rings]  # the root first
    _chain(b, "broadcast", S, order, proto, mem_bw, f"{prefix}bcast", per_node, proxy, launch, (1, 2, 2), library)


def reduce(b: ProfileBuilder, S: int, rings: list[list[int]], root: int, proto: Protocol, mem_bw: float,
           prefix: str, per_node: int = 0, proxy: float = 0.0, launch: float = 0.0, library: str = "nccl") -> None:
    """Append a reduce of S bytes to GPU `root`: per channel a chain along its ring that ends at the root; the
    root's successor sends its input, the others recvReduceSend (the received partial sum plus their own
    input), the root recvReduceCopy into its output (NCCL's ring reduce, ``src/device/reduce.h``: the rank whose
    ring predecessor is the root sends). per_node, proxy, launch, library: as `broadcast`."""
    order = [r[r.index(root) + 1:] + r[:r.index(root) + 1] for r in rings]  # the root last
    _chain(b, "reduce", S, order, proto, mem_bw, f"{prefix}reduce", per_node, proxy, launch, (1, 2, 3), library)


def shrunk_chunk(proto: Protocol, S: int, C: int, rounds: tuple[tuple[int, int], ...]) -> int:
    """RCCL's way of shrinking a Simple chunk for S bytes on C channels (``computeCollChunkInfo``): from one step,
    for each (chunks, floor) of `rounds` in turn halve while a channel holds fewer than `chunks` chunks and the chunk
    is above `floor`. LL and LL128 keep one step's data."""
    chunk = proto.step_data
    if proto.flag_in_data:
        return chunk
    for chunks, floor in rounds:
        while S // (C * chunk) < chunks and chunk > floor:
            chunk //= 2
    return chunk


def chunk_loops(S: int, C: int, chunk: int) -> int:
    """Loops of the largest of C channels' parts of S bytes in `chunk`-byte chunks, one unit each (at least one)."""
    largest = -(-S // C)
    return max(1, -(-largest // chunk))


def pipeline_chunk(proto: Protocol, S: int, C: int) -> int:
    """RCCL's Simple chunk for the ring broadcast and reduce (``computeCollChunkInfo`` in ``src/enqueue.cc``, patterns
    PipelineFrom and PipelineTo; NCCL had it up to 2.19): from one step (512 KiB) halve while the S bytes hold fewer
    than 64 chunks a channel (down to 256 KiB), then 32 (to 128 KiB), 16 (to 64 KiB) and 8 (to 32 KiB)."""
    return shrunk_chunk(proto, S, C, ((64, 262144), (32, 131072), (16, 65536), (8, 32768)))


def _chain(b: ProfileBuilder, op: str, S: int, orders: list[list[int]], proto: Protocol, mem_bw: float, name: str,
           per_node: int, proxy: float, launch: float, local: tuple[int, int, int], library: str) -> None:
    """Append a chain along each channel's `orders` (position 0 first): position 0 sends, the middle receives
    and sends, the last receives; local: the local bytes per data byte of the three (`local_ns`). The chain's
    unit is one step (``BROADCAST_*STEPS`` = ``REDUCE_*STEPS`` = 1), RCCL's Simple one its shrunk chunk
    (`pipeline_chunk`). A hop between nodes pays the proxy at each end and a program with such a hop first waits
    its start, as a ring's do (`fifo.proxy_ns`, `fifo.proxy_start`)."""
    C, k = len(orders), len(orders[0])
    geo = geometry(op, proto, S, C, 1)
    if library == "rccl" and not proto.flag_in_data:  # a loop is one chunk, one unit (SLICESTEPS 1)
        geo.loops = chunk_loops(S, C, pipeline_chunk(proto, S, C))
    order = np.array(orders, dtype=np.int64)
    conn = Conn(b, name, proto, geo.unit_steps, C)
    ns_per_byte = C / mem_bw * 1e9
    # (positions, receives, sends, local bytes per byte): the chain's start, its middle, its end
    for positions, r, s, lb in (([0], False, True, local[0]), (list(range(1, k - 1)), True, True, local[1]),
                                ([k - 1], True, False, local[2])):
        if not positions:
            continue
        Pp = np.repeat(np.array(positions, dtype=np.int64), C)
        Ch = np.tile(np.arange(C), len(positions))
        ps = b.programs_at(order[Ch, Pp], Ch)
        here, nxt, prv = order[Ch, Pp], order[Ch, (Pp + 1) % k], order[Ch, (Pp - 1) % k]
        send = conn.side(ps, Ch, nxt, across(here, nxt, per_node)) if s else None
        recv = conn.side(ps, Ch, prv, across(here, prv, per_node)) if r else None
        proxy_start(b, here, Ch, [peer for peer, on in ((nxt, s), (prv, r)) if on], per_node, launch)
        pre = proxy_ns(proxy, here, prv if r else None, nxt if s else None, per_node)
        part = split(S, C, Ch)
        for loop in range(geo.loops):
            block = split(part, geo.loops, loop)
            for u in range(geo.units):
                data = split(block, geo.units, u)
                primitive(ps, recv, send, data, local_ns(lb, data, ns_per_byte), pre)
