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
