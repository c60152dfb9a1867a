"""NCCL's multi-node tree on rail nodes (eidola.workload.nccl: `System.tree_channels`) against
NCCL's rules worked out by hand, not against the model's output.

The rules (NVIDIA/nccl ``src/graph/search.cc``, ``connect.cc``, ``enqueue.cc``): the tree graph has one search
channel per NIC on a node of one 400 Gb/s NIC per GPU, search channel s on NIC s and headed by that NIC's GPU
(``ncclTopoSearchRecNet``; Hopper's plain TREE pattern: the head alone talks to the network); ``ncclTopoPreset``
duplicates the S search channels onto the mirror tree (channels S..2S-1) and ``copyChannels`` repeats channels
0..2S-1 past 2S. A collective uses the first of them.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

import eidola
from eidola.workload.nccl import Plan, build_collective
from eidola.workload.nccl.system import System

FLAG = 8  # bytes of a credit (a Simple unit across nodes carries its own tail: no counter store)


def test_dgx_h100_rail_tree_channels_spread_over_the_nics(repo):
    # 4 DGX H100 nodes, 24 channels, 8 NICs: S = 8 search channels; channel ch on NIC (and head) ch mod 8, tree 0 for
    # ch in 0-7 and 16-23 (search channels, then copies), tree 1 for 8-15 (the duplicates). So every local rank
    # heads 3 channels, 2 on tree 0 and 1 on tree 1 (the old pairing, channels c and c + 12 on one chain, had
    # ranks 0-3 heading 4 and ranks 4-7 two).
    sys = System.of(eidola.load_platform(repo / "platforms" / "dgx-h100-rail.yaml", {"gpus.count": 32}))
    chains, trees = sys.tree_channels(32, 24)
    heads = [c[0] for c in chains]
    assert heads == list(range(8)) * 3
    assert trees == [0] * 8 + [1] * 8 + [0] * 8
    assert Counter(heads) == {r: 3 for r in range(8)}
    assert Counter(zip(heads, trees)) == {**{(r, 0): 2 for r in range(8)}, **{(r, 1): 1 for r in range(8)}}
    assert chains[3] == [3, 4, 5, 6, 7, 0, 1, 2]  # NVSwitch: head, head + 1, ... (TREE tries only the next GPU)
    # A collective on fewer channels takes the first: 10 channels are search channels 0-7 on tree 0, then 0-1 on tree 1.
    chains, trees = sys.tree_channels(32, 10)
    assert [c[0] for c in chains] == list(range(8)) + [0, 1] and trees == [0] * 8 + [1] * 2


def test_fewer_nics_than_gpus_head_at_each_nics_first_gpu(repo):
    # nic.count 4 on 8 GPUs a node: NIC i serves GPUs 2i and 2i + 1; search channel s on NIC s mod 4, headed by its
    # first GPU 2 (s mod 4); S = 4, so channels 4-7 are tree 1 and 8-11 copies on tree 0.
    sys = System.of(eidola.load_platform(repo / "platforms" / "dgx-h100-rail.yaml",
                                         {"gpus.count": 16, "fabric.nic.count": 4}))
    chains, trees = sys.tree_channels(16, 12)
    assert [c[0] for c in chains] == [0, 2, 4, 6] * 3
    assert trees == [0] * 4 + [1] * 4 + [0] * 4


def test_tree_nic_bytes_follow_each_nodes_place_in_both_trees(write_platform):
    # 4 nodes of 2 GPUs on an NVSwitch, one NIC per GPU (NIC 12 + g of GPU g), C = 6 channels, Simple parts of
    # 64 KiB (one unit each). S = 2: channels 0, 1, 4, 5 on tree 0 (heads 0, 1, 0, 1), 2, 3 on tree 1 (heads 0, 1):
    # each GPU heads two tree-0 channels and one tree-1 channel. Tree 0 over 4 nodes (trees.cc): 0 <- 2 <- {1, 3};
    # tree 1 its mirror: 3 <- 1 <- {2, 0}. Per channel a node's head sends its part once to its parent (up) and
    # once to each child node (down), and returns a credit for each unit it receives (one from each child node
    # up, one from the parent down): units out = parents + children. Tree 0: node 0 1 (one child), node 2 3,
    # nodes 1 and 3 1; tree 1: node 1 3, the others 1. So per head GPU: node 0 2 x 1 + 1 = 3, node 1 2 x 1 + 3 = 5,
    # node 2 2 x 3 + 1 = 7, node 3 2 x 1 + 1 = 3 units of 65536 + 8 bytes on its PCIe link to its NIC.
    plat = eidola.load_platform(write_platform("""
        eidola: 1
        name: tree-rail
        gpus: {count: 8, workgroups: 16, max_outstanding: 1024, max_payload: 256B,
               memory: {latency: 300ns, bandwidth: 5.3TB/s}}
        fabric:
          model: packet
          topology: rail
          rail: {gpus_per_node: 2, intra: switch, spines: 2}
          link: {bandwidth: 64GB/s, latency: 100ns, header: 16B}
          nic: {bandwidth: 50GB/s, latency: 1us, count: 2}
          network: {bandwidth: 100GB/s, latency: 500ns}
          switch: {latency: 50ns, buffer: 1MiB, vcs: 0}
        collectives: {library: nccl, channels: 6}
        """))
    C, part, k, first_nic = 6, 65536, 8, 12
    prof, plan = build_collective(plat, "all_reduce", C * part, algo="tree", proto="Simple", channels=C)
    assert plan == Plan("tree", "Simple", C)
    res = eidola.simulate(plat, prof)
    links = res.links
    out = [int(links[(links["src"] == g) & (links["dst"] == first_nic + g)]["bytes"][0]) for g in range(k)]
    units = np.repeat([3, 5, 7, 3], 2)
    assert out == (units * (part + FLAG)).tolist()


def test_rccl_tree_simple_chunk_follows_compute_coll_chunk_info():
    # RCCL (src/enqueue.cc computeCollChunkInfo, tree Simple, pattern TreeUpDown): from one step (4 MiB / 8 =
    # 512 KiB) halve while nBytes / (nChannels x chunk) < depth x 8 (down to 128 KiB), then < depth x 4 (down to
    # 64 KiB), then < depth (down to 32 KiB); depth = nRanks / nNodes - 1 + log2(nNodes) = 7 + 1 = 8 on 2 nodes of 8.
    from eidola.workload.nccl.protocols import protocol
    from eidola.workload.nccl.tree import tree_simple_chunk

    simple = protocol("Simple", "rccl")
    # 16 MiB on 16 channels: 2, 4, 8 chunks of 512, 256, 128 KiB (< 64: halve; stops at 128 KiB); 8 < 32: 64 KiB
    # (16 < 32, but no further than 64 KiB); 16 >= 8.
    assert tree_simple_chunk(simple, 16 << 20, 16, 8, 2) == 64 << 10
    # 256 MiB on 16 channels: 32 of 512 KiB < 64 -> 256 KiB: 64, stops; 64 >= 32 and >= 8.
    assert tree_simple_chunk(simple, 256 << 20, 16, 8, 2) == 256 << 10
    # 16 MiB on 64 channels: 0.5 -> ... -> 128 KiB (2 < 64), 64 KiB (4 < 32), then 4 < 8 -> 32 KiB.
    assert tree_simple_chunk(simple, 16 << 20, 64, 8, 2) == 32 << 10
    # 4 nodes of 8: depth 7 + 2 = 9; 1 GiB on 16 channels: 128 of 512 KiB >= 72: one step.
    assert tree_simple_chunk(simple, 1 << 30, 16, 8, 4) == 512 << 10
    # LL keeps its step.
    ll = protocol("LL", "rccl")
    assert tree_simple_chunk(ll, 16 << 20, 16, 8, 2) == ll.step_data


def test_rccl_tree_moves_its_parts_in_those_chunks(repo):
    # mi300x-rail, 2 nodes, tree Simple, 16 channels, 16 MiB: a channel's part is 1 MiB, in 64 KiB chunks: 16 units.
    # Per channel one node's head sends each unit up to the other's and gets it back down: across the network,
    # 2 x 16 data puts a channel, 16 x 32 = 512 in all, each 64 KiB (one whole 512 KiB step, 2 units a channel, until
    # 2026-12-07); the receivers' credits cross as 8-byte puts, one a unit.
    plat = eidola.load_platform(repo / "platforms" / "mi300x-rail.yaml", {"gpus.count": 16})
    prof, plan = build_collective(plat, "all_reduce", 16 << 20, algo="tree", proto="Simple")
    assert (plan.algo, plan.proto, plan.channels) == ("tree", "Simple", 16)
    across = Counter(op["nbytes"] for (g, _), ops in prof.programs for op in ops
                     if op.kind == "put" and op["dst"] // 8 != g // 8)
    assert across == {64 << 10: 16 * 2 * 16, FLAG: 16 * 2 * 16}


def test_rccl_ring_broadcast_and_reduce_chunk_follows_compute_coll_chunk_info(repo):
    # RCCL's ring broadcast and reduce (patterns PipelineFrom / PipelineTo) in Simple: from one step (512 KiB) halve
    # while nBytes / (nChannels x chunk) < 64 (down to 256 KiB), < 32 (to 128 KiB), < 16 (to 64 KiB), < 8 (to 32 KiB).
    from eidola.workload.nccl.protocols import protocol
    from eidola.workload.nccl.ring import pipeline_chunk

    simple = protocol("Simple", "rccl")
    # 16 MiB on 28 channels (mi300x-8gpu): 16 MiB / (28 x 512 KiB) = 1 < 64 -> 256 KiB (2); < 32 -> 128 KiB (4);
    # < 16 -> 64 KiB (9); < 8? no: 64 KiB.
    assert pipeline_chunk(simple, 16 << 20, 28) == 64 << 10
    # 1 MiB: 0 chunks of 64 KiB < 8 -> 32 KiB.
    assert pipeline_chunk(simple, 1 << 20, 28) == 32 << 10
    # 1 GiB on 28 channels: 73 of 512 KiB >= 64: one step.
    assert pipeline_chunk(simple, 1 << 30, 28) == 512 << 10
    # The broadcast moves its parts in those chunks: 16 MiB from GPU 0 on mi300x-8gpu, 28 channels: a channel's part
    # (599,187 B at most) in 64 KiB loops is 10 units, so the root's first hop sends 10 writes a channel.
    plat = eidola.load_platform(repo / "platforms" / "mi300x-8gpu.yaml")
    prof, plan = build_collective(plat, "broadcast", 16 << 20, algo="ring", proto="Simple")
    assert (plan.algo, plan.proto, plan.channels) == ("ring", "Simple", 28)
    writes = Counter(w for (g, w), ops in prof.programs if g == 0 for op in ops if op.kind == "write")
    part = -(-(16 << 20) // 28)  # 599,187 B
    assert set(writes.values()) == {-(-part // (64 << 10))} == {10}
