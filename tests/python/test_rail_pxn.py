"""NCCL's PXN on a rail network (`fabric.rail.pxn`) against the NIC bound worked out by hand.

With PXN (NCCL's default: ``NCCL_PXN_DISABLE`` 0, ``NCCL_P2P_PXN_LEVEL`` 2, ``src/graph/paths.cc`` and
``search.cc``) a GPU sends to a peer on another rail through the local GPU on that rail and its NIC, so an
all-to-all's data reach the network on the rail they leave it on. NIC r of a node then carries what every one of
the node's G GPUs sends to the GPUs of rail r in the other nodes: G (N - 1) blocks of S/k for an all-to-all of S
bytes per rank on k = N G GPUs. That is the same as without PXN (each GPU's own NIC carries its (N - 1) G blocks),
so the NIC links bound the time alike; only the spines differ, and with PXN they carry nothing.
"""

from __future__ import annotations

import eidola
from eidola.workload.nccl import build_collective

N, G = 4, 8                  # dgx-h100-rail at 32 GPUs: 4 nodes of 8
K = N * G
S = 16 << 20                 # bytes each rank sends in all
NIC_BW, MTU, NIC_HDR = 50e9, 4096, 42  # dgx-h100-rail.yaml: ConnectX-7 NDR, InfiniBand framing
NET_BW = 50e9                # dgx-h100-rail.yaml: a rail switch's link to a spine


def _run(repo, spines: int, pxn: bool):
    plat = eidola.load_platform(repo / "platforms" / "dgx-h100-rail.yaml", {
        "gpus.count": K, "fabric.model": "flow", "fabric.rail.spines": spines, "fabric.rail.pxn": pxn})
    profile, plan = build_collective(plat, "alltoall", S)
    return plat, eidola.simulate(plat, profile), plan


def _nic_uplinks(res):
    """The NIC -> rail switch links (a NIC's node name is n<i>.nic<r>, a rail switch's rail<r>)."""
    names = res.node_names
    return res.links[[".nic" in names[int(s)] and names[int(d)].startswith("rail")
                      for s, d in zip(res.links["src"], res.links["dst"])]]


def _spine_bytes(res) -> int:
    names = res.node_names
    spine = [names[int(s)].startswith("spine") or names[int(d)].startswith("spine")
             for s, d in zip(res.links["src"], res.links["dst"])]
    return int(res.links[spine]["wire_bytes"].sum())


def test_pxn_all_to_all_keeps_off_the_spines_and_is_bound_by_the_nics(repo):
    plat, res, plan = _run(repo, 4, True)
    assert plan.algo == "p2p"
    assert _spine_bytes(res) == 0
    up = _nic_uplinks(res)
    assert len(up) == N * G
    per_nic = G * (N - 1) * S // K  # payload through each NIC: 24 blocks of 512 KiB, 12 MiB
    # A 512 KiB block is one p2p chunk on one channel (1 = 24 channels // 31 peers, at least one): one FIFO unit, and
    # the receiver's one 8-byte credit back (its head store) crosses the NIC of the sender's rail too.
    credits = G * (N - 1) * 8
    assert all(int(b) == per_nic + credits for b in up["bytes"]), up["bytes"]
    # At least the payload and one header per MTU at the NIC's rate; the bound is the NICs', so the run may take
    # the launch, the proxy steps and its ramp above it, but not a spine's share.
    bound_ns = per_nic * (1 + NIC_HDR / MTU) / NIC_BW * 1e9
    assert bound_ns <= res.kernel_time_ns <= 1.25 * bound_ns, (res.kernel_time_ns, bound_ns)


def test_pxn_makes_the_spine_count_irrelevant_and_without_it_one_spine_binds(repo):
    # Without PXN a GPU's 3 x 8 = 24 cross-node blocks of S/k go out of its own NIC, and the 21 of them on other rails
    # cross a spine: each rail switch sends its 4 NICs' 4 x 21 x 512 KiB = 42 MiB up through one 50 GB/s spine link
    # when there is one spine, a bound 3.5 times the NIC payload's 12 MiB at 50 GB/s.
    times = {spines: _run(repo, spines, True)[1].kernel_time_ns for spines in (1, 4)}
    assert times[1] == times[4]
    _, alone, _ = _run(repo, 1, False)
    spine_ns = N * (N - 1) * (G - 1) * (S // K) / NET_BW * 1e9
    assert _spine_bytes(alone) > 0
    assert alone.kernel_time_ns >= spine_ns > 2.5 * times[1], (alone.kernel_time_ns, spine_ns, times)
