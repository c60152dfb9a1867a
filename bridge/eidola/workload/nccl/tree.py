"""Tree all-reduce inside one node: a chain, reduce up then broadcast down (NCCL's ``runTreeUpDown``).

Inside a node NCCL's tree is a chain; channel c's chain follows its ring order from position 0 (the
root). Each channel's part is cut into loops of one chunk (`ring.Geometry` with one block). First every
chunk goes up: the leaf sends, the middle ranks recvReduceSend, the root recvReduceCopy; then every
chunk comes down: the root sends from its output, the middle ranks recvCopySend, the leaf receives.
Up and down are separate connections (FIFOs ``tree_up`` and ``tree_down``), so the root starts
sending down as soon as its last chunk has come up, while the leaf still receives from the up pipe's
tail. Local memory traffic as in `ring` (a reduce 3 bytes a byte, a copy 2, a plain send 1).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .fifo import Conn, across, multi_primitive, primitive, proxy_start, split, unit_passes
from .protocols import Protocol
from .ring import chunk_loops, geometry, local_ns, shrunk_chunk

if TYPE_CHECKING:
    from ..builder import ProfileBuilder

__all__ = ["tree_allreduce", "btree", "dtree", "dtree_links", "dtree_allreduce", "tree_simple_chunk"]


def tree_simple_chunk(proto: Protocol, S: int, C: int, per_node: int, nodes: int) -> int:
    """RCCL's tree Simple chunk (``computeCollChunkInfo`` in ``src/enqueue.cc``; NCCL's ``computeColl`` up to 2.19,
    dropped from 2.20): from one step, halve while the buffer holds fewer than depth x 8 chunks per channel (down
    to 128 KiB), then fewer than depth x 4 (down to 64 KiB), then fewer than depth (down to 32 KiB); depth is
    ``connect.cc``'s nRanks / nNodes - 1 + log2i(nNodes). So the chain pipelines several chunks per channel where
    a whole step would leave one (2 nodes of 8, 64 channels: 32 MiB in 64 KiB chunks, not one of 512 KiB)."""
    depth = per_node - 1 + (max(nodes, 1).bit_length() - 1)
    return shrunk_chunk(proto, S, C, ((depth * 8, 131072), (depth * 4, 65536), (depth, 32768)))


def tree_allreduce(b: ProfileBuilder, S: int, rings: list[list[int]], proto: Protocol, mem_bw: float,
                   prefix: str) -> None:
    """Append a chain all-reduce of S bytes per rank, channel c on the chain rings[c] (root first)."""
    C, k = len(rings), len(rings[0])
    geo = geometry("all_reduce", proto, S, C, 1)
    order = np.array(rings, dtype=np.int64)
    up = Conn(b, f"{prefix}tree_up", proto, geo.unit_steps, C)
    down = Conn(b, f"{prefix}tree_down", proto, geo.unit_steps, C)
    ns_per_byte = C / mem_bw * 1e9
    # (positions, (receives, sends, local) going up, the same coming down)
    roles = (([0], (True, False, 3), (False, True, 1)),
             (list(range(1, k - 1)), (True, True, 2), (True, True, 2)),
             ([k - 1], (False, True, 1), (True, False, 2)))
    for positions, go_up, go_down in roles:
        if not positions:
            continue
        Pp = np.repeat(np.array(positions, dtype=np.int64), C)
        Ch = np.tile(np.arange(C), len(positions))
        ps = b.programs_at(order[Ch, Pp], Ch)
        above, below = order[Ch, (Pp - 1) % k], order[Ch, (Pp + 1) % k]
        part = split(S, C, Ch)
        # up: receive from below, send above; down: receive from above, send below
        for conn, (r, s, local), src, dst in ((up, go_up, below, above), (down, go_down, above, below)):
            recv = conn.side(ps, Ch, src) if r else None
            send = conn.side(ps, Ch, dst) if s else None
            for loop in range(geo.loops):
                block = split(part, geo.loops, loop)
                for u in range(geo.units):
                    data = split(block, geo.units, u)
                    primitive(ps, recv, send, data, local_ns(local, data, ns_per_byte))


def btree(nranks: int, rank: int) -> tuple[int, int, int]:
    """NCCL's binary tree over `nranks` nodes (``ncclGetBtree``, ``src/graph/trees.cc``): (parent, child0,
    child1) of node `rank`, -1 where there is none; node 0 is the root, whose one child is the top bit."""
    bit = 1
    while bit < nranks and not bit & rank:
        bit <<= 1
    if rank == 0:
        return -1, -1, (bit >> 1) if nranks > 1 else -1
    up = (rank ^ bit) | (bit << 1)
    if up >= nranks:
        up = rank ^ bit
    low = bit >> 1
    d0 = -1 if low == 0 else rank - low
    d1 = -1 if low == 0 else rank + low
    while d1 >= nranks:
        d1 = -1 if low == 0 else rank + low
        low >>= 1
    return up, d0, d1


def dtree(nranks: int, rank: int, which: int) -> tuple[int, int, int]:
    """Tree 0 or 1 of NCCL's double binary tree (``ncclGetDtree``): tree 1 is tree 0 mirrored (even node
    counts) or shifted by one node (odd), so a node that is a leaf in one tree is inner in the other."""
    if which == 0:
        return btree(nranks, rank)
    if nranks % 2:
        u, d0, d1 = btree(nranks, (rank - 1 + nranks) % nranks)
        return tuple(-1 if x == -1 else (x + 1) % nranks for x in (u, d0, d1))  # type: ignore[return-value]
    u, d0, d1 = btree(nranks, nranks - 1 - rank)
    return tuple(-1 if x == -1 else nranks - 1 - x for x in (u, d0, d1))  # type: ignore[return-value]


def dtree_links(chains: list[list[int]], nodes: int,
                trees: list[int]) -> tuple[list[dict[int, int]], list[dict[int, list[int]]]]:
    """Per channel: every GPU's parent (-1 at the root) and its children, in NCCL's order: the intra-node chain
    child first, then the child nodes' heads. Channel c's chain (local ranks, head first) is the same in
    every node; the heads join the double binary tree over the nodes, channel c on tree trees[c] (0, or 1 the
    mirror: ``connectTrees``, ``src/graph/connect.cc``; `System.tree_channels` has NCCL's assignment)."""
    g = len(chains[0])
    parents: list[dict[int, int]] = []
    children: list[dict[int, list[int]]] = []
    for c, chain in enumerate(chains):
        which = trees[c]
        par: dict[int, int] = {}
        kids: dict[int, list[int]] = {}
        for node in range(nodes):
            up, d0, d1 = dtree(nodes, node, which)
            for q, local in enumerate(chain):
                gpu = node * g + local
                par[gpu] = node * g + chain[q - 1] if q else (up * g + chain[0] if up >= 0 else -1)
                kids[gpu] = [node * g + chain[q + 1]] if q + 1 < g else []
                if q == 0:
                    kids[gpu] += [d * g + chain[0] for d in (d0, d1) if d >= 0]
        parents.append(par)
        children.append(kids)
    return parents, children


def dtree_allreduce(b: ProfileBuilder, S: int, chains: list[list[int]], nodes: int, proto: Protocol, mem_bw: float,
                    prefix: str, proxy: float, launch: float, trees: list[int], library: str) -> None:
    """Append NCCL's multi-node tree all-reduce of S bytes per rank: in every node channel c runs the chain
    chains[c] (local ranks, head first); the heads form a double binary tree over the nodes, channel c on tree
    trees[c] (`dtree_links`).
    Up: every GPU receives each child's unit, reduces it with its own and sends the sum to its parent; the
    root keeps it. Down: the root sends the result, every GPU receives it from its parent and sends it on to
    each child. Units are one FIFO step (NCCL's tree chunk: ``chunkSteps`` is 1 but for ring Simple; RCCL's Simple
    chunk shrinks with the tree's depth, `tree_simple_chunk`); a child
    sends into slot `tree_up<j>` of its parent, j its place among the parent's children. A step between
    nodes waits `proxy` ns at each end. Local memory per byte: a reduce reads each child's slot and its own
    input (the root also writes the output), a copy reads the slot and writes the output. `library`: the
    collectives' library (System.library), "rccl" for RCCL's Simple chunk."""
    C, g = len(chains), len(chains[0])
    parents, children = dtree_links(chains, nodes, trees)
    geo = geometry("broadcast", proto, S, C, 1)
    if library == "rccl" and not proto.flag_in_data:  # a loop is one chunk, one unit (SLICESTEPS 1)
        geo.loops = chunk_loops(S, C, tree_simple_chunk(proto, S, C, g, nodes))
    up = [Conn(b, f"{prefix}tree_up{j}", proto, geo.unit_steps, C) for j in range(3)]
    down = [Conn(b, f"{prefix}tree_down{j}", proto, geo.unit_steps, C) for j in range(3)]
    ns_per_byte = C / mem_bw * 1e9
    groups: dict[tuple[int, int], list[tuple[int, int]]] = {}  # (children, slot at the parent) -> (GPU, channel)
    for c in range(C):
        for gpu in range(nodes * g):
            p = parents[c][gpu]
            slot = children[c][p].index(gpu) if p >= 0 else -1
            groups.setdefault((len(children[c][gpu]), slot), []).append((gpu, c))
    for (nk, slot), members in sorted(groups.items()):
        G = np.array([m[0] for m in members], dtype=np.int64)
        Ch = np.array([m[1] for m in members], dtype=np.int64)
        par = np.array([parents[c][gpu] for gpu, c in members], dtype=np.int64)
        kids = [np.array([children[c][gpu][j] for gpu, c in members], dtype=np.int64) for j in range(nk)]
        proxy_start(b, G, Ch, [par, *kids], g, launch)
        ps = b.programs_at(G, Ch)
        net_kids = sum(across(G, kk, g).astype(np.float64) for kk in kids) if kids else np.zeros(len(G))
        net_par = (across(G, par, g) & (par >= 0)).astype(np.float64)
        pre = np.asarray(proxy * (net_kids + net_par), dtype=np.float64)
        pre_or_none = pre if proxy > 0 and bool(pre.any()) else None
        part = split(S, C, Ch)
        root = slot < 0
        # up: receive from each child, send to the parent
        recvs = [up[j].side(ps, Ch, kids[j], across(G, kids[j], g)) for j in range(nk)]
        send = None if root else up[slot].side(ps, Ch, par, across(G, par, g))
        up_local = nk + 1 + (1 if root else 0)
        # down: receive from the parent, send to each child
        drecv = None if root else down[slot].side(ps, Ch, par, across(G, par, g))
        dsends = [down[j].side(ps, Ch, kids[j], across(G, kids[j], g)) for j in range(nk)]
        down_local = 1 if root else 2
        for phase in ("up", "down"):
            rs = recvs if phase == "up" else ([drecv] if drecv is not None else [])
            ss = ([send] if send is not None else []) if phase == "up" else dsends
            local = up_local if phase == "up" else down_local
            for loop in range(geo.loops):
                block = split(part, geo.loops, loop)
                widest = split(split(S, C, 0), geo.loops, loop)  # channel 0's, the largest: the same in every group
                for u in range(geo.units):
                    data = split(block, geo.units, u)
                    # A unit's passes from a figure every group shares: a child and its parent are in different
                    # groups, and each group holds only some channels.
                    p = unit_passes(proto, split(widest, geo.units, u))
                    multi_primitive(ps, rs, ss, data, local_ns(local, data, ns_per_byte), pre_or_none, p)
