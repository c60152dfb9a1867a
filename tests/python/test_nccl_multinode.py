"""Collectives across nodes (eidola.workload.nccl): rail-local rings, the double binary tree, the hierarchical
all-reduce, the proxy's cost per network step, and the tuner's node terms, checked against derivations.

The byte counts are worked out per NIC from the algorithm: a GPU's NIC link (the GPU's only link that
leaves the node: to its leaf switch) carries exactly the data of the steps whose receiver is in another
node, plus the 8-byte credits it returns for the units it received from another node. A Simple unit across
nodes is a put that carries its step-counter bump (NCCL's receiving proxy bumps the tail once the data is
in), so it adds no 8-byte counter store of its own, as it does inside a node.
"""

from __future__ import annotations

import numpy as np
import pytest

import eidola
from eidola.errors import ConfigError
from eidola.workload.nccl import Plan, build_collective, tuner
from eidola.workload.nccl.system import System, zigzag_path
from eidola.workload.nccl.tree import btree, dtree

FLAG = 8  # bytes of a Simple step-counter store, and of a credit


def _nodes(write_platform, nodes, per_node, collectives="", extra="", mem_bw="5.3TB/s"):
    """`nodes` nodes of `per_node` fully connected GPUs, a 50 GB/s NIC per GPU to its node's leaf, two spines."""
    return eidola.load_platform(write_platform(f"""
        eidola: 1
        name: nodes-{nodes}x{per_node}
        gpus: {{count: {nodes * per_node}, workgroups: 64, max_outstanding: 1024, max_payload: 256B,
               memory: {{latency: 300ns, bandwidth: {mem_bw}}}}}
        fabric:
          model: packet
          topology: hierarchical
          hierarchical: {{gpus_per_node: {per_node}, intra: fully_connected, spines: 2}}
          link: {{bandwidth: 64GB/s, latency: 250ns, header: 16B, ack: 16B}}
          nic: {{bandwidth: 50GB/s, latency: 1us}}
          network: {{bandwidth: 400GB/s, latency: 1us}}
          switch: {{latency: 100ns, buffer: 1MiB, vcs: 0}}
          routing: {{spread: true}}
        {collectives}
        {extra}
        """))


def _nic_out(res, k):
    """Bytes each GPU sent on its NIC link (its link into a switch: node ids k and up are switches)."""
    links = res.links
    out = np.zeros(k, dtype=np.int64)
    for g in range(k):
        sel = links[(links["src"] == g) & (links["dst"] >= k)]
        assert len(sel) == 1, f"GPU {g} has {len(sel)} links into a switch"
        out[g] = int(sel["bytes"][0])
    return out


# --- what the system knows about nodes ------------------------------------------------------------------------


def test_system_reads_nodes_nics_and_proxy(write_platform):
    plat = _nodes(write_platform, 2, 4, "collectives: {proxy_step: 3us}")
    sys = System.of(plat)
    assert (sys.gpus, sys.gpus_per_node, sys.nics_per_node) == (8, 4, 4)
    assert sys.nodes(8) == 2 and sys.nodes(4) == 1 and sys.node_size(2) == 2
    assert sys.nic_bw == 4 * 50e9  # a node's NICs together
    assert sys.gpu_bw == 3 * 64e9  # inside the node: 3 links per GPU
    assert sys.proxy_ns == pytest.approx(3000.0)
    with pytest.raises(ConfigError, match="whole nodes"):
        sys.nodes(6)


def test_zigzag_paths_use_every_directed_link_of_a_node_once():
    for g in (2, 4, 8):
        arcs = [(a, b) for i in range(g) for a, b in zip(zigzag_path(g, i), zigzag_path(g, i)[1:])]
        assert sorted(set(arcs)) == sorted(arcs) and len(arcs) == g * (g - 1)  # g paths x (g-1) arcs, none twice
        assert zigzag_path(g, 0)[::-1] == zigzag_path(g, g // 2)  # odd nodes run the path backwards


@pytest.mark.parametrize("nodes", [2, 4])
def test_rings_cross_between_nodes_on_one_rail(write_platform, nodes):
    sys = System.of(_nodes(write_platform, nodes, 4))
    k = 4 * nodes
    for ring in sys.rings(k, 8):
        assert sorted(ring) == list(range(k))
        crossings = [(a, b) for a, b in zip(ring, ring[1:] + ring[:1]) if a // 4 != b // 4]
        assert len(crossings) == nodes  # each node entered once and left once
        assert all(a % 4 == b % 4 for a, b in crossings)  # the same local rank: the same rail


def test_double_binary_tree_is_nccls():
    # trees.cc's illustration for 14 ranks: 0 -> 8; 8 -> 4, 12; 4 -> 2, 6; 12 -> 10, 13 (13's parent is 12)
    assert btree(14, 0) == (-1, -1, 8)
    assert btree(14, 8) == (0, 4, 12)
    assert btree(14, 12) == (8, 10, 13)
    assert btree(14, 13)[0] == 12 and btree(14, 1) == (2, -1, -1)
    # 4 nodes, tree 0: 0 -> 2 -> {1, 3}; tree 1 mirrors it (r -> 3 - r): 3 -> 1 -> {2, 0}
    assert [btree(4, r) for r in range(4)] == [(-1, -1, 2), (2, -1, -1), (0, 1, 3), (2, -1, -1)]
    assert dtree(4, 3, 1) == (-1, -1, 1) and dtree(4, 1, 1) == (3, 2, 0) and dtree(4, 0, 1) == (1, -1, -1)
    for n in (2, 3, 4, 5, 8):  # every node is a leaf in at most one of the two trees (n > 2)
        leaves = [sum(dtree(n, r, t)[1:] == (-1, -1) for t in (0, 1)) for r in range(n)]
        assert max(leaves) <= (2 if n <= 2 else 1)


# --- bytes each NIC carries ------------------------------------------------------------------------------------


def test_ring_allreduce_nic_bytes(write_platform):
    # n = 2 nodes of g = 4, k = 8, C = 4 channels (one zigzag path each), S = k x C x 4096: every block is
    # 4096 B, one Simple unit. Per channel the ring crosses twice (node 0 -> 1 and back) and each crossing
    # carries all 2(k-1) steps of the channel: 2(k-1) x 4096 B (each a put carrying its counter). Node 0 enters
    # channel c at local rank c and leaves at c + 2 (zigzag), node 1 the reverse, so every GPU is the exit of
    # exactly one channel and the entry of one (whose 2(k-1) credits go back over its NIC): per NIC
    # 2(k-1) x (4096 + 8) B,
    # and per node 2(k-1)/k x S of data, the ring's formula.
    n, g, C, block = 2, 4, 4, 4096
    k = n * g
    plat = _nodes(write_platform, n, g)
    S = k * C * block
    prof, plan = build_collective(plat, "all_reduce", S, algo="ring", proto="Simple", channels=C)
    assert plan == Plan("ring", "Simple", C)
    res = eidola.simulate(plat, prof)
    steps = 2 * (k - 1)
    assert (_nic_out(res, k) == steps * (block + FLAG)).all()
    assert g * steps * block == 2 * (k - 1) / k * S



def test_ll_units_cross_nodes_whole_and_move_pass_by_pass_inside(write_platform):
    # NCCL's proxy sends a network step once the GPU has written all of it, so across nodes an LL unit is one
    # put; inside a node the receiving threads forward it pass by pass (docs/collectives.md, "Passes"). LL's
    # pass: 512 threads x one 16-byte line = 8 KiB of lines, 4 KiB of data. n = 2 nodes of g = 4, C = 4, a
    # block of 16 KiB = 2,048 lines = 32 KiB of wire: 4 passes of 8 KiB. Channel c leaves node 0 at local rank
    # c + 2 (zigzag, test above), so GPU 2 sends channel 0's units to node 1: one 32 KiB put a step, while its
    # other channels' sends stay in the node: 4 puts of 8 KiB a step. Bytes per NIC as for Simple above, with
    # LL's wire (2 x data) and no step counter: 2(k-1) x (2 x 16 KiB + 8).
    n, g, C, block = 2, 4, 4, 16384
    k = n * g
    plat = _nodes(write_platform, n, g)
    prof, plan = build_collective(plat, "all_reduce", k * C * block, algo="ring", proto="LL", channels=C)
    assert plan == Plan("ring", "LL", C)
    steps, wire = 2 * (k - 1), 2 * block
    sys = System.of(plat)
    rings = sys.rings(k, C)
    for c in range(C):
        ring = rings[c]
        for pos, gpu in enumerate(ring):
            nxt = ring[(pos + 1) % k]
            puts = [op["nbytes"] for op in prof.program(gpu, c) if op.kind == "put" and op["buffer"].endswith("fifo")]
            crossing = gpu // g != nxt // g
            assert puts == ([wire] if crossing else [wire // 4] * 4) * steps, (c, gpu, nxt)
    res = eidola.simulate(plat, prof)
    assert (_nic_out(res, k) == steps * (wire + FLAG)).all()

def test_tree_allreduce_nic_bytes(write_platform):
    # n = 2 nodes of g = 4 with one NIC per GPU, C = 4 channels. NCCL's tree graph has one search channel per NIC
    # (S = 4), search channel s headed by NIC s's GPU, and duplicates them onto the mirror tree as channels 4-7
    # (System.tree_channels; test_nccl_tree_rail.py): so channels 0-3 are chains headed by local ranks 0-3, all on
    # tree 0 (node 0 the root), and the head alone talks to the other node. Each channel's part S/C goes up once
    # (node 1's head -> node 0's head) and down once. With parts of 64 KiB (one Simple unit of a 512 KiB step)
    # every GPU heads one channel and sends 65536 (a put carrying its counter) + 8 (the credit for the unit it
    # received). Per node: S, half the ring's 2(k-1)/k x S. (Until 2026-12-07 channels c and c + 2 shared a
    # chain on the two trees, so ranks 0 and 1 sent twice that and ranks 2 and 3 nothing.)
    n, g, C, part = 2, 4, 4, 65536
    k = n * g
    plat = _nodes(write_platform, n, g)
    prof, plan = build_collective(plat, "all_reduce", C * part, algo="tree", proto="Simple", channels=C)
    assert plan == Plan("tree", "Simple", C)
    res = eidola.simulate(plat, prof)
    assert _nic_out(res, k).tolist() == [part + FLAG] * k


def test_hierarchical_allreduce_nic_bytes(write_platform):
    # Phase 2 is a 2-rank ring all-reduce of S/g per GPU on every rail: 2(n-1) = 2 steps of S/(g C n) per
    # channel, every one across the network: per NIC 2(n-1)/n x S/g of data, C x 2 x block (puts carrying their
    # counters) with credits C x 2 x 8. Phases 1 and 3 stay in the node.
    n, g, C = 2, 4, 4
    k = n * g
    S = k * C * 4096
    block = S // g // C // n
    plat = _nodes(write_platform, n, g)
    prof, plan = build_collective(plat, "all_reduce", S, algo="hierarchical", proto="Simple", channels=C)
    assert plan == Plan("hierarchical", "Simple", C)
    res = eidola.simulate(plat, prof)
    assert (_nic_out(res, k) == C * 2 * (n - 1) * (block + FLAG)).all()
    assert C * 2 * (n - 1) * block == 2 * (n - 1) / n * S / g


# --- the time of an inter-node step ------------------------------------------------------------------------------


def test_each_network_step_pays_the_proxy_at_both_ends(write_platform):
    # Two nodes of one GPU: a 2-rank LL ring all-reduce is send, recvReduceCopySend, recv on each GPU. The
    # critical path is GPU 0's send (sender proxy X), GPU 1's receive (X) and send (X), GPU 0's receive (X):
    # two network steps, each paying X at both ends, so the time grows by exactly 4X. The proxy's start L
    # comes once, before each GPU's first op: + L. (Memory at 1000 TB/s: the reductions take no time, so
    # nothing else moves; within 1 ns, because with X = 0 the credits and the data of the two GPUs meet on
    # the NIC links at slightly different instants.)
    times = {}
    for x, launch in ((0, 0), (5, 0), (5, 30)):
        plat = _nodes(write_platform, 2, 1, f"collectives: {{proxy_step: {x}us, proxy_launch: {launch}us}}",
                      mem_bw="1000TB/s")
        prof, _ = build_collective(plat, "all_reduce", 1024, algo="ring", proto="LL", channels=1)
        times[x, launch] = eidola.simulate(plat, prof).kernel_time_ns
    assert times[5, 0] - times[0, 0] == pytest.approx(4 * 5000.0, abs=1.0)
    assert times[5, 30] - times[5, 0] == pytest.approx(30000.0, abs=1.0)


def test_sendrecv_and_alltoall_across_nodes(write_platform):
    # Bytes: 2 nodes of 2 GPUs, send/recv of S = 1 MiB on one Simple channel: GPU 1 -> 2 and 3 -> 0 cross
    # nodes, 0 -> 1 and 2 -> 3 do not. Each pair moves 2 units of the NVLink p2p chunk (512 KiB), across nodes
    # each a put carrying its counter; the receiver returns an 8-byte credit per unit. So GPUs 1 and 3 send S
    # bytes on their NIC links, GPUs 0 and 2 the 2 credits of what they received over the network.
    S = 1 << 20
    plat = _nodes(write_platform, 2, 2)
    prof, plan = build_collective(plat, "sendrecv", S, proto="Simple", channels=1)
    assert plan == Plan("p2p", "Simple", 1, split=True)
    res = eidola.simulate(plat, prof)
    assert _nic_out(res, 4).tolist() == [2 * FLAG, S, 2 * FLAG, S]
    # All-to-all of S = 2 MiB per rank, one channel per peer: each block is S/4, one unit; a GPU's NIC link
    # carries its 2 remote blocks (puts carrying their counters) and a credit for each of the 2 remote blocks it
    # receives.
    prof, plan = build_collective(plat, "alltoall", 2 * S, proto="Simple", channels=3)
    res = eidola.simulate(plat, prof)
    assert _nic_out(res, 4).tolist() == [2 * (2 * S // 4) + 2 * FLAG] * 4


def test_a_simple_network_step_waits_for_no_acknowledgement(write_platform):
    # Send/recv of 8 B, Simple, on 2 nodes of 2 GPUs: GPU 1 -> 2 crosses the network (NIC link up, 1 us, and the
    # leaf-spine-leaf hops, then the other NIC link down, 1 us: each NIC link pays fabric.nic.latency once a way).
    # NCCL's receiving proxy bumps the tail once the data is in: the unit is a put whose counter lands with it.
    # GPU 2 then finishes when its 8-byte credit back to GPU 1 is acknowledged: data there (2 NIC links), the
    # credit back (2) and its acknowledgement (2): 6 x nic.latency on its path, and GPU 1 finishes when its put
    # is acknowledged (4). As a write released once acknowledged (until 2026-12-07) GPU 2's path was data (2),
    # acknowledgement (2), counter (2), credit (2) and its acknowledgement (2): 10 x nic.latency.
    times = []
    for nic_us in (1, 2):
        plat = eidola.load_platform(_nodes(write_platform, 2, 2).source, {"fabric.nic.latency": f"{nic_us}us"})
        prof, plan = build_collective(plat, "sendrecv", 8, proto="Simple", channels=1)
        times.append(eidola.simulate(plat, prof).kernel_time_ns)
    assert times[1] - times[0] == pytest.approx(6 * 1000.0, abs=1.0)


@pytest.mark.parametrize("op", ["sendrecv", "alltoall", "broadcast", "reduce"])
def test_point_to_point_and_chain_network_steps_pay_the_proxy_at_both_ends(write_platform, op):
    # 2 nodes of one GPU, 1 KiB with LL on one channel: the one unit on the critical path goes out (the
    # sender's proxy, X) and comes in (the receiver's, X), so the time grows by 2X (send/recv and all-to-all:
    # both directions at once; broadcast 0 -> 1, reduce 1 -> 0); the proxy's start L comes once, before each
    # GPU's first op (as test_each_network_step_pays_the_proxy_at_both_ends for rings).
    times = {}
    for x, launch in ((0, 0), (5, 0), (5, 30)):
        plat = _nodes(write_platform, 2, 1, f"collectives: {{proxy_step: {x}us, proxy_launch: {launch}us}}",
                      mem_bw="1000TB/s")
        prof, _ = build_collective(plat, op, 1024, proto="LL", channels=1)
        times[x, launch] = eidola.simulate(plat, prof).kernel_time_ns
    assert times[5, 0] - times[0, 0] == pytest.approx(2 * 5000.0, abs=1.0)
    assert times[5, 30] - times[5, 0] == pytest.approx(30000.0, abs=1.0)


# --- the tuner across nodes ----------------------------------------------------------------------------------------


def test_tuner_node_terms_follow_tuning_cc(write_platform):
    # NCCL, 2 nodes x 4, Simple ring: 2(k-1) = 14 steps of which 2(n-1) = 2 cross the network: base 8.4 +
    # 12 x max(NVLink ring Simple 3.4, net overhead 1 x 3) + 2 x 14 (network ring Simple) = 77.2 us.
    # Tree Simple: 8.4 + 2 x ((4-1) x 4.0 + log2(2) x 14) = 60.4 us, bandwidth 0.92 x bus x 1/2.
    sys = System.of(_nodes(write_platform, 2, 4))
    ring = tuner.predict(sys, "all_reduce", 8, "ring", "Simple", 16)
    tree = tuner.predict(sys, "all_reduce", 8, "tree", "Simple", 16)
    assert ring.latency_us == pytest.approx(8.4 + 12 * 3.4 + 2 * 14.0)
    assert tree.latency_us == pytest.approx(8.4 + 2 * (3 * 4.0 + 1 * 14.0))
    bus = 16 * sys.gpu_bw / sys.channels / 1e9  # up to 2 nodes: the intra-node bandwidth
    assert ring.algbw_GBps == pytest.approx(bus * 8 / 14)
    assert tree.algbw_GBps == pytest.approx(bus * 0.92 / 2)
    # the ring's plateau: x1.4 latency once every rank's share of a channel reaches 64 B
    assert ring.time_us(64 * 16 * 8) == pytest.approx(1.4 * ring.latency_us + 64 * 16 * 8 / (ring.algbw_GBps * 1e3))
    # 4 nodes: the network's bandwidth per channel (4 NICs x 50 GB/s over 16 channels) and log2(4) tree hops
    sys4 = System.of(_nodes(write_platform, 4, 4))
    ring4 = tuner.predict(sys4, "all_reduce", 16, "ring", "Simple", 16)
    assert ring4.algbw_GBps == pytest.approx(16 * 200.0 / 16 * 16 / 30)
    assert tuner.predict(sys4, "all_reduce", 16, "tree", "LL", 16).latency_us == pytest.approx(
        6.8 + 2 * (3 * 0.6 + 2 * 5.0))


def test_hierarchical_is_named_only_and_checked(write_platform):
    plat = _nodes(write_platform, 2, 4)
    for size in (1024, 2**30):
        assert build_collective(plat, "all_reduce", size)[1].algo in ("ring", "tree")
    with pytest.raises(ConfigError, match="hierarchical runs all_reduce across nodes"):
        build_collective(plat, "all_reduce", 1024, gpus=4, algo="hierarchical")
    with pytest.raises(ConfigError, match="hierarchical runs all_reduce"):
        build_collective(plat, "all_gather", 1024, algo="hierarchical")
