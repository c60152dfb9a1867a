"""The flow fabric's incast queues (`fabric.flow.incast`, docs/fabrics.md "Incast queues"), on
platforms/hierarchical-16gpu.yaml, whose leaves' 1 MiB buffers hold many round trips of their links,
with `routing.spread` off (one spine: the leaf's link into GPU 0 has one input to serve) and the
window lifted (`max_outstanding` 100,000), so that what the queue does is all there is to see.

GPU 8 writes 1 MiB to GPU 0 and 1 MiB to GPU 1 at once (two workgroups), and GPU 9 writes 1 MiB to
GPU 0 (a third), all blocking (a workgroup finishes when its write is acknowledged). Every path
crosses the senders' NIC links (50 GB/s), the network (400 GB/s) and the receivers' NIC links. A
1 MiB write is n = 4,096 packets of 256 B with an 85-byte header, N = 4,096 x 341 wire bytes,
X = N / 50 GB/s = 27.93 us of one NIC link. GPU 8's NIC sends its two writes in turns, 25 GB/s
each; GPU 9's sends its one at 50 GB/s. So GPU 0's leaf receives 75 GB/s and its link to GPU 0
drains 50 GB/s:

- with a queue at the leaf (the packet fabric's buffers, `flow.incast: queue`): the backlog grows
  at 25 GB/s until GPU 9's last byte is in at X, and that byte leaves behind it X / 2 later: GPU 9's
  write is through at 1.5 X;
- shared max-min (`flow.incast: share`), GPU 0's link gives each of its two flows 25 GB/s, and GPU 9
  slows to that at once: its write is through at 2 X, with GPU 8's.

Each then takes its last packet's trip, the memory and the acknowledgement's trip back (zero load).
The expectations are worked out from the platform file alone; the packet fabric is the outside
reference. Measured (ns, workgroups 0, 1, 2): flow 64,964 64,964 51,003; packet 64,971 64,971
51,003; `share` 64,964 for all three. Two settings part the fabrics, both left out here and written
up in docs/fabrics.md: with the window as shipped the packet fabric's GPU 9 waits for its answers
behind the backlog (53,007 ns; the flow fabric 51,003, -3.8%), and with spreading on, the packet
fabric's leaf alternates the two senders' packets over the spines so that each spine carries one
sender, and its link into GPU 0 serves its two inputs in turns: 25 GB/s each, as max-min (63,450 ns).

The last test runs the platform as shipped (its window and spreading on): a write beside an incast, whose GPU's
window fills with the incast's backlog on the packet fabric, a strict expected failure of the flow fabric.
"""

from __future__ import annotations

import pytest
from test_flow_validation import _writes  # one workgroup per write, all issued at time 0
from zero_load import zero_load_ns

import eidola
from eidola.platform import FLOW_COUNTERPART
from eidola.profile import ProfileBuilder

MIB = 1 << 20
P, H, ACK = 256, 85, 16                    # payload, header and acknowledgement bytes a packet
NIC, NET = (50e9, 1000.0), (400e9, 1000.0)  # (bytes/s, latency ns): a GPU's NIC link, a leaf-spine link
SW, FLIT = 100.0, 16                       # switch latency ns, flit bytes
M = 300.0 + P / 5.3e12 * 1e9               # the target's memory for one packet, ns
X = 4096 * (P + H) / NIC[0] * 1e9          # one write's wire time on a NIC link, ns


def _tail_ns() -> float:
    """The last packet from its sender's NIC link to the target, the memory, and the acknowledgement back."""
    def trip(wire: float) -> float:
        return zero_load_ns([(wire, *NIC), (wire, *NET), (wire, *NET), (wire, *NIC)], SW, FLIT)
    return trip(P + H) + M + trip(ACK)


def _incast():
    b = ProfileBuilder(gpus=16, workgroups=3, name="incast")
    b.buffer("data", nbytes=MIB)
    for wg, (src, dst) in enumerate([(8, 0), (8, 1), (9, 0)]):
        b.program(gpu=src, wg=wg).write(dst=dst, buffer="data", offset=0, nbytes=MIB, blocking=True)
    return b.build()


def _finishes(repo, model: str, incast: str = "queue") -> dict[int, float]:
    """Each workgroup's finish, ns."""
    plat = eidola.load_platform(repo / "platforms" / "hierarchical-16gpu.yaml", overrides={
        "gpus.launch": "0ns", "gpus.max_outstanding": 100_000, "fabric.model": model, "fabric.flow.incast": incast,
        "fabric.routing.spread": False})
    wgs = eidola.simulate(plat, _incast()).workgroups
    return {int(r["wg"]): float(r["finish_ns"]) for r in wgs if r["finish_ns"] > 0}


def test_the_sender_into_a_busy_nic_is_through_when_its_bytes_leave_the_leafs_queue(repo):
    flow = _finishes(repo, "flow")
    assert flow[2] == pytest.approx(1.5 * X + _tail_ns(), rel=0.01)
    # GPU 8's two writes: its NIC link's wire time for both, then the tail.
    assert flow[0] == pytest.approx(2 * X + _tail_ns(), rel=0.01)
    assert flow[1] == pytest.approx(2 * X + _tail_ns(), rel=0.01)


def test_shared_max_min_slows_every_sender_at_once(repo):
    flow = _finishes(repo, "flow", incast="share")
    assert flow[2] == pytest.approx(2 * X + _tail_ns(), rel=0.01)


def test_the_packet_fabric_holds_the_incast_in_its_leaf(repo):
    # The outside reference: its leaf's buffer takes what GPU 0's link cannot send yet, first in, first out.
    packet, flow = _finishes(repo, "packet"), _finishes(repo, "flow")
    assert packet[2] == pytest.approx(1.5 * X + _tail_ns(), rel=0.01)
    for wg in (0, 1, 2):
        assert flow[wg] == pytest.approx(packet[wg], rel=0.005), wg


@pytest.mark.xfail(strict=True, reason=(
    "measured 2026-12-07: GPU 0's write to GPU 4 ends at 406.8 us on the packet fabric and 146.0 us on the flow "
    "fabric (-64%; kernel times 456.06 / 456.04 us, the incast's). The flow fabric's issue gates count the backlog "
    "in the leaf's queue in GPU 0's window, but free room as fast as its writes' flows' max-min rates, the local "
    "write's 48 GB/s included, where the packet GPU's output to GPU 4 sends only what the round robin issues into "
    "it. Six rules and a prototype tried, none merged (docs/fabrics.md, \"Why the hierarchical 32-workgroup case stays "
    "out\"; experiments/backlog25)"))
def test_a_write_beside_an_incast_waits_for_its_gpus_window(repo):
    # As shipped (window 2,048 packets, spreading on). The four writes into GPU 8 share its NIC link, 50 GB/s x P /
    # (P + H) = 37.5 GB/s of payload: 9.4 GB/s each, 447 us for the incast. GPU 0's write to GPU 4 alone would take
    # 87 us over its 64 GB/s link. But the writes to GPU 8 wait in the leaf's 1 MiB buffers, and each sender's window
    # fills with them: the backlog grows at three NICs' rate beside one draining, so the four windows are full by
    # 4 W / (3 x 37.5 GB/s) = 18.6 us, and their answers are due a round trip later. From then the packet GPU's round
    # robin gives GPU 0's freed slots to its two writes in turns, and its slots free as the incast drains: the local
    # write goes at the incast's 9.4 GB/s. Before that it took at most its link's rate. That bounds its end from
    # below on either fabric (332.7 us), and the outcast row holds the two to 2% of each other.
    n, window = 4 * MIB, 2048 * P
    nic, link = NIC[0] * P / (P + H), 64e9 * P / (P + H)  # payload rates, B/s
    early_ns = 4 * window / (3 * nic) * 1e9 + _tail_ns()
    least_ns = early_ns + (n - link * early_ns * 1e-9) / (nic / 4) * 1e9
    ends = {}
    for model in ("packet", "flow"):
        plat = eidola.load_platform(repo / "platforms" / "hierarchical-16gpu.yaml",
                                    overrides={**FLOW_COUNTERPART, "fabric.model": model})
        # GPU 0 writes n to GPU 4 (its own node: a direct link) and to GPU 8; GPUs 1-3 write n to GPU 8 too
        wgs = eidola.simulate(plat, _writes(16, [(0, 4, n), (0, 8, n), (1, 8, n), (2, 8, n), (3, 8, n)])).workgroups
        ends[model] = float(wgs["finish_ns"][wgs["wg"] == 0][0])
    assert ends["packet"] >= least_ns, (ends, least_ns)
    assert ends["flow"] >= least_ns, (ends, least_ns)
    assert abs(ends["flow"] / ends["packet"] - 1) <= 0.02, ends
